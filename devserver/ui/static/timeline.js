// The trace as a timeline (a waterfall): each model call and tool call a bar on the job's time
// axis, each span the session sent (its framework's own) a bar nested under its parent, the rest (says, logs, stray output, status changes, the result) marks on it, in the order
// they began. Every row opens to the JSON of its events; a model call's row opens to the call
// itself (call.js: its conversation, raw request and answer, and a comparison with another call).
import {fmtCount, fmtDuration, h, setText, sortedJSON, syncList, text} from './dom.js';

// spans turns a job's events into the timeline's rows.
export function spans(events) {
  const rows = [];
  const tools = new Map(); // permission request id → its row
  let say = null; // the row of the says in a row, until another event
  let wait = null; // the row of a wait for approval, until the job runs again
  let log = null; // the row of a long log line read in pieces (more: true), until its last piece
  let stderr = null; // the row of the lines of stderr in a row (a traceback is one), until another event
  for (const ev of events) {
    const t = Date.parse(ev.time);
    const d = ev.data || {};
    if (ev.type !== 'say') say = null;
    if (ev.type !== 'stderr' || typeof d.line !== 'string') stderr = null;
    switch (ev.type) {
      case 'status':
        if (wait) {
          wait.end = t;
          wait.events.push(ev);
          wait.open = false;
          wait = null;
        }
        if (d.status === 'waiting_for_approval') {
          wait = row(rows, ev, 'wait', t, t, 'waiting for approval', d.reason || '');
          wait.open = true;
        } else {
          row(rows, ev, 'status', t, t, d.status.replaceAll('_', ' '), d.reason || '');
        }
        break;
      case 'say':
        if (say) {
          say.end = t;
          say.events.push(ev);
          say.detail += d.text || '';
        } else {
          say = row(rows, ev, 'say', t, t, 'say', d.text || '');
        }
        break;
      case 'permission_request': {
        const r = row(rows, ev, 'tool', t, t, d.tool, sortedJSON(d.arguments ?? {}));
        r.asked = t;
        r.open = true; // until its result, or a refusal
        tools.set(d.id, r);
        break;
      }
      case 'permission_decision': {
        const r = tools.get(d.id) || row(rows, ev, 'tool', t, t, d.tool, '');
        if (r.events[r.events.length - 1] !== ev) r.events.push(ev);
        r.end = Math.max(r.end, t);
        r.decided = t;
        r.decision = d.decision === 'deny'
          ? `denied${saysWho(d.by, d.reason) ? '' : by(d.by)}: ${d.reason || ''}`
          : `allowed${by(d.by)}${d.changed ? ' (arguments changed)' : ''}`;
        if (d.decision === 'deny') {
          r.failed = true;
          r.open = false;
        }
        break;
      }
      case 'tool_result': {
        const r = tools.get(d.id) || row(rows, ev, 'tool', t, t, d.tool, '');
        if (r.events[r.events.length - 1] !== ev) r.events.push(ev);
        r.end = Math.max(r.end, t);
        r.result = d.error ? `failed: ${d.error}` : text(d.result);
        r.open = false;
        if (d.error) r.failed = true;
        break;
      }
      case 'model_call': {
        // The event is written when the call is metered, after its answer: the bar starts when
        // the call began (started_at; before it was recorded, the event's time less the latency).
        const latency = Number(d.latency_ms) || 0;
        const began = Date.parse(d.started_at);
        const start = Number.isNaN(began) ? t - latency : began;
        const r = row(rows, ev, 'model', start, start + latency, `${d.record || 'model call'}${d.model ? ` · ${d.model}` : ''}`, '');
        const parts = [`${fmtCount(d.input_tokens)} in`, `${fmtCount(d.output_tokens)} out`];
        if (d.cache_read_input_tokens) parts.push(`${fmtCount(d.cache_read_input_tokens)} cache read`);
        if (d.cache_creation_input_tokens) parts.push(`${fmtCount(d.cache_creation_input_tokens)} cache written`);
        parts.push(fmtDuration(latency), `status ${d.status}`);
        if (d.refused) parts.push(`refused: ${d.refused}`);
        if (d.aborted) parts.push(`aborted: ${d.aborted}`);
        if (d.error) parts.push(`error: ${d.error}`);
        r.detail = parts.join(' · ');
        r.failed = Boolean(d.refused || d.aborted || d.error || d.status >= 400);
        break;
      }
      case 'span': {
        // A span the session sent (its framework's own), on its real times, nested by its parent:
        // the job's span is the root, so a span whose parent is not among them is at depth 1.
        const start = Date.parse(d.start);
        const end = Date.parse(d.end);
        const r = row(rows, ev, 'span', Number.isNaN(start) ? t : start, Number.isNaN(end) ? t : end, d.name || 'span',
          [d.service, d.scope].filter(Boolean).join(' · '));
        r.spanID = d.span_id;
        r.parentID = d.parent_span_id || '';
        r.failed = d.status === 'error';
        if (d.status_message) r.detail += ` · ${d.status_message}`;
        break;
      }
      case 'log':
        if (log) {
          log.end = t;
          log.events.push(ev);
          log.detail += d.message || '';
        } else {
          log = row(rows, ev, 'log', t, t, `log ${d.level || ''}`.trim(), d.message || '');
        }
        if (!d.more) log = null;
        break;
      case 'stderr':
        // Lines in a row are one row, opened to them as the harness wrote them: a traceback is
        // one block, its last line (the exception) the row's detail.
        if (typeof d.line !== 'string') {
          row(rows, ev, 'stderr', t, t, 'stderr', d.tail || d.note || '');
        } else if (stderr) {
          stderr.end = t;
          stderr.events.push(ev);
          stderr.lines.push(d.line);
          stderr.label = `stderr · ${stderr.lines.length} lines`;
          stderr.detail = d.line;
        } else {
          stderr = row(rows, ev, 'stderr', t, t, 'stderr', d.line);
          stderr.lines = [d.line];
        }
        break;
      case 'stray_output':
        row(rows, ev, 'stray', t, t, 'stray output', d.line || '').failed = true;
        break;
      case 'session': {
        // How the session was made: ahead of the job (its dependencies loaded then, its own start
        // time before the job's), or at the job (a cold start: its loading is the gap after this).
        const bound = Date.parse(d.bound_at);
        const at = Number.isNaN(bound) ? t : bound;
        const parts = [];
        if (d.start === 'made ahead' || d.start === 'forked' || d.start === 'forked ahead') {
          const made = Date.parse(d.made_at);
          if (d.start === 'forked') parts.push('forked at the job from its harness\'s fork server');
          if (d.start === 'forked ahead') parts.push('forked ahead of the job from its harness\'s fork server');
          if (!Number.isNaN(made)) parts.push(`${d.start === 'forked' ? 'the server' : ''} made ${fmtDuration(at - made)} before the job`.trim());
          const l = d.loaded || {};
          if (l.modules) parts.push(`${fmtCount(l.modules)} modules loaded in ${fmtDuration((Number(l.seconds) || 0) * 1000)}`);
          if (l.warmed && l.warmed.length) parts.push(`${l.warmed.join(', ')} warmed up`);
          if (d.why) parts.push(d.why);
        } else {
          parts.push('made at its job');
          if (d.why) parts.push(d.why);
        }
        row(rows, ev, 'session', at, at, `session ${d.start || ''}`.trim(), parts.join(' · '));
        break;
      }
      case 'violation':
        row(rows, ev, 'violation', t, t, 'protocol violation', d.message || '').failed = true;
        break;
      case 'result':
        row(rows, ev, 'result', t, t, 'result', text(d.output));
        break;
      case 'error': {
        const r = row(rows, ev, 'error', t, t, 'error', d.message || '');
        r.failed = true;
        if (Array.isArray(d.traceback)) r.lines = d.traceback; // the traceback the harness failed with
        break;
      }
      default:
        row(rows, ev, 'other', t, t, ev.type, sortedJSON(d));
    }
  }
  nest(rows);
  for (const r of rows) {
    if (r.kind === 'tool') {
      r.detail = [r.detail, r.decision, r.result && `→ ${r.result}`].filter(Boolean).join(' · ');
    }
  }
  return rows.sort((a, b) => a.start - b.start || a.seq - b.seq);
}

// nest gives each span row its depth under the job (1: a child of the job's span) and its
// parent's name.
function nest(rows) {
  const byID = new Map(rows.filter((r) => r.kind === 'span').map((r) => [r.spanID, r]));
  const depth = (r, seen) => {
    const p = byID.get(r.parentID);
    if (!p || seen.has(p)) return 1;
    seen.add(p);
    return 1 + depth(p, seen);
  };
  for (const r of byID.values()) {
    r.depth = depth(r, new Set([r]));
    r.parentName = byID.get(r.parentID)?.label || 'job';
  }
}

// by says who decided a call, as oz0 run says it, from the trace's word for it: person, node,
// hook:NAME, rule:ID, policy.
// A failed hook's reason names it ("hook NAME failed: …"): no need to say it twice.
function saysWho(who, reason) {
  return Boolean(who && who.startsWith('hook:') && (reason || '').startsWith(`hook ${who.slice(5)} `));
}

function by(who) {
  if (!who) return '';
  if (who === 'person') return ' by a person';
  if (who === 'node') return ' by the node';
  if (who.startsWith('hook:')) return ` by hook ${who.slice(5)}`;
  return ` by ${who}`;
}

function row(rows, ev, kind, start, end, label, detail) {
  const r = {key: `${kind}:${ev.seq}`, seq: ev.seq, kind, start, end, label, detail, events: [ev]};
  rows.push(r);
  return r;
}

// render draws the rows into container, keeping the rows already there (and whether each is
// expanded) by key. While the job is live, what has not ended yet (a tool call, a wait for a
// person) reaches to now. openCall(el, seq, calls) fills a model call's panel when it is first
// opened; calls are the job's model calls as {seq, n}, n counting them in the order of their events.
export function render(container, rows, live, openCall) {
  if (!rows.length) return;
  const now = Date.now();
  if (live) {
    for (const r of rows) if (r.open) r.end = Math.max(r.end, now);
  }
  const t0 = Math.min(...rows.map((r) => r.start));
  const t1 = Math.max(...rows.map((r) => r.end));
  const span = Math.max(t1 - t0, 1);
  const pct = (t) => `${((t - t0) / span) * 100}%`;

  let axis = container.querySelector('.axis');
  if (!axis) {
    axis = h('div', {class: 'axis', 'aria-hidden': 'true'}, h('span', {class: 'what'}), h('span', {class: 'track'}));
    container.append(axis);
  }
  const ticks = niceTicks(span);
  axis.lastChild.replaceChildren(...ticks.map((v) => {
    const tick = h('span', {class: 'tick'}, v < 1000 ? `${v} ms` : `${Number((v / 1000).toFixed(2))} s`);
    tick.style.left = pct(t0 + v);
    return tick;
  }));

  let list = container.querySelector('.rows');
  if (!list) {
    list = h('div', {class: 'rows', role: 'list', 'aria-label': 'Trace events, in the order they began'});
    container.append(list);
  }
  const calls = rows.filter((r) => r.kind === 'model').map((r) => r.seq).sort((a, b) => a - b).map((seq, i) => ({seq, n: i + 1}));
  syncList(list, rows, (r) => r.key, makeRow, (el, r) => {
    if (r.kind === 'model' && openCall && !el.querySelector('.call')) {
      const panel = h('div', {class: 'call'});
      el.querySelector('pre.json').before(panel);
      el.addEventListener('toggle', () => {
        if (el.open && !panel.dataset.loaded) {
          panel.dataset.loaded = 'yes';
          openCall(panel, r.seq, calls);
        }
      });
    }
    el.className = `span k-${r.kind}${r.failed ? ' failed' : ''}`;
    el.dataset.kind = r.kind;
    if (r.kind === 'span') {
      el.dataset.depth = String(r.depth);
      el.dataset.parent = r.parentName;
      el.style.setProperty('--depth', String(r.depth));
    }
    const [at, kind, label, detail] = el.querySelectorAll('summary .what > span');
    setText(at, `+${fmtDuration(r.start - t0)}`);
    setText(kind, r.kind === 'stray' ? 'stray' : r.kind);
    setText(label, r.label);
    setText(detail, r.detail);
    const bar = el.querySelector('.bar');
    bar.style.left = pct(r.start);
    bar.style.width = r.end > r.start ? `max(${((r.end - r.start) / span) * 100}%, 2px)` : '';
    bar.classList.toggle('point', r.end <= r.start);
    bar.title = r.end > r.start ? fmtDuration(r.end - r.start) : '';
    const waited = el.querySelector('.waited');
    if (r.kind === 'tool' && r.decided > r.asked) {
      waited.hidden = false;
      waited.style.width = `${((r.decided - r.asked) / Math.max(r.end - r.start, 1)) * 100}%`;
    } else {
      waited.hidden = true;
    }
    const lines = el.querySelector('pre.lines');
    lines.hidden = !r.lines;
    setText(lines, r.lines ? r.lines.join('\n') : '');
    setText(el.querySelector('pre.json'), r.events.map((ev) => JSON.stringify(ev, null, 2)).join('\n'));
  });
}

function makeRow() {
  return h('details', {role: 'listitem'},
    h('summary', null,
      h('span', {class: 'what'}, h('span', {class: 'at'}), h('span', {class: 'kind'}), h('span', {class: 'label'}), h('span', {class: 'detail'})),
      h('span', {class: 'track'}, h('span', {class: 'bar'}, h('span', {class: 'waited', title: 'waiting for the decision'})))),
    h('pre', {class: 'lines', hidden: true}),
    h('pre', {class: 'json'}));
}

// niceTicks are 4 to 8 round marks from 0 to span milliseconds.
function niceTicks(span) {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000];
  const step = steps.find((s) => span / s <= 8) || span / 4;
  const out = [];
  for (let v = 0; v <= span; v += step) out.push(v);
  return out;
}
