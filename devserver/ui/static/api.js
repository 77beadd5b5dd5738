// The control API, as the dev UI reaches it: under /ui/api/ with the session cookie, and the
// session's CSRF token on every request that changes anything.

let csrf = '';

export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// loadSession reads the session's CSRF token; an APIError with status 401 when logged out.
export async function loadSession() {
  const r = await fetch('session', {cache: 'no-store'});
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new APIError(r.status, body?.error?.code, body?.error?.message || r.statusText);
  csrf = body.csrf;
}

// call makes one API call (path under api/v1/) and returns its JSON answer (null for none).
export async function call(method, path, body) {
  const init = {method, headers: {}, cache: 'no-store'};
  if (method !== 'GET' && method !== 'HEAD') init.headers['X-Oz0-CSRF'] = csrf;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch('api/v1/' + path, init);
  if (r.status === 204) return null;
  const data = await r.json().catch(() => null);
  if (!r.ok) throw new APIError(r.status, data?.error?.code, data?.error?.message || `${r.status} ${r.statusText}`);
  return data;
}

export async function logout() {
  await fetch('logout', {method: 'POST', headers: {'X-Oz0-CSRF': csrf}});
}

// openFeed follows the feed (GET api/v1/feed) with params; on calls handlers.snapshot, .job,
// .approval, .event, .eval_run with each message's data, and .state with 'live', 'reconnecting' or 'closed'.
// The browser reconnects by itself after a break, resuming the job's events after the last id.
export function openFeed(params, handlers) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const es = new EventSource('api/v1/feed?' + q);
  for (const kind of ['snapshot', 'job', 'approval', 'event', 'eval_run']) {
    es.addEventListener(kind, (e) => handlers[kind](JSON.parse(e.data)));
  }
  es.onopen = () => handlers.state('live');
  es.onerror = () => handlers.state(es.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
  return es;
}
