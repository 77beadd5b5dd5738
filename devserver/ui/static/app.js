// The dev UI: a router over the views, the state the feed keeps live (the jobs, the pending
// approvals), and the one feed of the page, opened anew for each view with what it follows.
import {APIError, call, loadSession, logout, openFeed} from './api.js';
import {setText} from './dom.js';
import * as agents from './agents.js';
import * as approvals from './approvals.js';
import * as evals from './evals.js';
import * as job from './job.js';
import * as jobs from './jobs.js';
import * as run from './run.js';
import * as usage from './usage.js';

const main = document.getElementById('main');

// app is what every view gets: the state, and ways to call the API and say what happened.
const app = {
  info: {agents: []},
  jobs: new Map(), // by id, as the feed last sent them
  approvals: new Map(), // pending ones, by id
  call: async (method, path, body) => {
    try {
      return await call(method, path, body);
    } catch (err) {
      if (err instanceof APIError && err.status === 401) loggedOut();
      throw err;
    }
  },
  alert,
  clearAlert,
};

let view = null; // the mounted view: {feed, snapshot, job, approval, event, unmount}
let feed = null;

function alert(message) {
  const box = document.getElementById('alert');
  setText(document.getElementById('alert-text'), message);
  box.hidden = false;
}

function clearAlert() {
  document.getElementById('alert').hidden = true;
}

function setConn(state) {
  const el = document.getElementById('conn');
  el.className = `conn c-${state}`;
  setText(el, {live: 'live', reconnecting: 'reconnecting…', closed: 'disconnected', 'logged-out': 'logged out'}[state] || state);
}

function updateCount() {
  const el = document.getElementById('approval-count');
  const n = app.approvals.size;
  el.hidden = n === 0;
  setText(el, n);
  el.setAttribute('aria-label', `${n} waiting`);
}

const handlers = {
  snapshot(s) {
    app.jobs = new Map(s.jobs.map((j) => [j.id, j]));
    app.approvals = new Map(s.approvals.map((a) => [a.id, a]));
    updateCount();
    view?.snapshot?.();
  },
  job(j) {
    app.jobs.set(j.id, j);
    view?.job?.(j);
  },
  approval(a) {
    if (a.status === 'pending') app.approvals.set(a.id, a);
    else app.approvals.delete(a.id);
    updateCount();
    view?.approval?.(a);
  },
  event(d) {
    view?.event?.(d);
  },
  eval_run(r) {
    view?.evalRun?.(r);
  },
  async state(s) {
    if (s !== 'closed') return setConn(s);
    // The server refused the stream: logged out (a restarted oz0 dev), or gone.
    try {
      await loadSession();
      setConn('closed');
    } catch (err) {
      if (err instanceof APIError && err.status === 401) loggedOut();
      else setConn('closed');
    }
  },
};

function follow(params) {
  feed?.close();
  feed = openFeed(params, handlers);
}

const views = {jobs, job, approvals, run, agents, evals, usage};

function route() {
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter(Boolean);
  let name = parts[0] || 'jobs';
  if (!(name in views)) name = 'jobs';
  if (name === 'jobs' && parts[1]) name = 'job';
  for (const a of document.querySelectorAll('nav a')) {
    const here = a.dataset.nav === (name === 'job' ? 'jobs' : name);
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  view?.unmount?.();
  main.replaceChildren();
  clearAlert();
  view = views[name].mount(main, app, {id: parts[1], query: new URLSearchParams(query || '')});
  follow(view.feed || {});
  const heading = main.querySelector('h1');
  document.title = heading ? `${heading.textContent} · oz0 dev` : 'oz0 dev';
}

function loggedOut() {
  feed?.close();
  feed = null;
  setConn('logged-out');
  view?.unmount?.();
  view = null;
  const p = document.createElement('p');
  p.textContent = 'You are logged out. Open the ui link oz0 dev printed in its terminal: each link logs in one browser once, and oz0 dev prints the next one after it is used.';
  const h1 = document.createElement('h1');
  h1.textContent = 'Logged out';
  main.replaceChildren(h1, p);
}

async function start() {
  document.getElementById('alert-close').addEventListener('click', clearAlert);
  document.getElementById('logout').addEventListener('click', async () => {
    await logout();
    loggedOut();
  });
  try {
    await loadSession();
    app.info = await app.call('GET', 'info');
  } catch (err) {
    if (!(err instanceof APIError && err.status === 401)) alert(err.message);
    if (err instanceof APIError && err.status === 401) loggedOut();
    return;
  }
  window.addEventListener('hashchange', route);
  route();
}

start();
