// A model call opened from the timeline, as a provider's console shows one: the system prompt,
// each message by role (tool calls and tool results as blocks), the tools offered, and the answer
// (a streamed one assembled by the server), with its usage and cost; a Raw tab with the request
// and the answer as the gateway kept them; a Compare tab with what changed in the prompt against
// another call, of this job or another (the diff oz0 job replay prints). The conversation is the
// server's reading of the call (GET api/v1/jobs/{id}/calls/{seq}), the one oz0 job show --calls
// prints. Every text goes in as text (never HTML); a long one is folded, and says how much.
import {fmtCount, fmtDuration, h, setText} from './dom.js';

// How much of a text shows before it is folded.
const FOLD_LINES = 24;
const FOLD_CHARS = 3000;

// mount fills el with the call seq of job, loaded when first shown; calls lists the job's model
// calls ({seq, n}) for the Compare tab, which compares with the same call of from (the job this one
// was run again or replayed from) when there is one.
export function mount(el, app, job, seq, calls, from) {
  el.replaceChildren(h('p', {class: 'hint'}, 'Loading the call…'));
  app.call('GET', `jobs/${encodeURIComponent(job)}/calls/${seq}`).then((c) => {
    el.replaceChildren(...view(app, job, c, calls, from));
  }).catch((err) => {
    el.replaceChildren(h('p', {class: 'empty'}, `Could not load the call: ${err.message}`));
  });
}

function view(app, job, c, calls, from) {
  const m = c.meter || {};
  const tabs = [
    ['conversation', 'Conversation', () => conversation(c, m)],
    ['raw', 'Raw', () => raw(c)],
    ['compare', 'Compare', () => compare(app, job, c, calls, from)],
  ];
  const list = h('div', {class: 'tabs', role: 'tablist', 'aria-label': `Model call ${c.n}`});
  const panels = [];
  const buttons = tabs.map(([key, label, make], i) => {
    const panel = h('div', {class: `tab-panel p-${key}`, role: 'tabpanel', hidden: i !== 0});
    panel.dataset.tab = key;
    let made = false;
    const show = () => {
      if (!made) {
        panel.append(...make());
        made = true;
      }
      for (const [j, b] of buttons.entries()) {
        b.setAttribute('aria-selected', String(b === button));
        b.tabIndex = b === button ? 0 : -1;
        panels[j].hidden = b !== button;
      }
    };
    const button = h('button', {type: 'button', role: 'tab', class: `tab t-${key}`, 'aria-selected': String(i === 0), tabindex: i === 0 ? '0' : '-1', onclick: show},
      label);
    button.addEventListener('keydown', (e) => {
      const k = {ArrowRight: 1, ArrowLeft: -1}[e.key];
      if (!k) return;
      const next = buttons[(buttons.indexOf(button) + k + buttons.length) % buttons.length];
      next.focus();
      next.click();
    });
    panels.push(panel);
    if (i === 0) {
      panel.append(...make());
      made = true;
    }
    return button;
  });
  list.append(...buttons);
  return [list, ...panels];
}

function conversation(c, m) {
  const conv = c.conversation;
  const out = [facts(c, m)];
  if (!conv) {
    out.push(h('p', {class: 'empty'}, c.exchange
      ? 'This call is not a conversation (a models list): the Raw tab shows it.'
      : 'Not kept: oz0 dev ran with --no-record, or the job with oz0 run --no-record. Only the meter above was recorded.'));
    return out;
  }
  for (const n of conv.notes || []) out.push(h('p', {class: 'note cut'}, n));
  if (conv.system) out.push(message('system', 'System prompt', [{kind: 'text', text: conv.system}]));
  if (conv.tools?.length) {
    out.push(h('div', {class: 'msg tools'},
      h('h4', null, `Tools offered (${conv.tools.length})`),
      ...conv.tools.map((t) => h('details', {class: 'tool-def'},
        h('summary', null, h('span', {class: 'mono'}, t.name), t.description ? ` — ${firstLine(t.description)}` : ''),
        t.description ? fold(t.description) : null,
        t.schema ? h('pre', {class: 'code'}, pretty(t.schema)) : null))));
  }
  for (const msg of conv.messages) out.push(message(msg.role, msg.role, msg.blocks));
  const a = conv.answer;
  if (a) {
    const head = [a.gateway ? 'The gateway\'s answer (not the model\'s)' : 'Answer'];
    if (a.streamed) head.push(`streamed, ${a.events} events`);
    if (a.stop_reason) head.push(`stop reason ${a.stop_reason}`);
    const blocks = [...(a.blocks || [])];
    const el = message('answer', head.join(' · '), blocks);
    if (a.error) el.append(h('pre', {class: 'error'}, a.error));
    if (!blocks.length && !a.error) el.append(h('p', {class: 'empty'}, 'No content.'));
    out.push(el);
  }
  if (conv.settings) out.push(h('p', {class: 'hint'}, 'Other request fields: ', h('span', {class: 'mono'}, conv.settings)));
  return out;
}

function facts(c, m) {
  const conv = c.conversation;
  const usage = [`${fmtCount(m.input_tokens)} in`, `${fmtCount(m.output_tokens)} out`];
  if (m.cache_read_input_tokens) usage.push(`${fmtCount(m.cache_read_input_tokens)} cache read`);
  if (m.cache_creation_input_tokens) usage.push(`${fmtCount(m.cache_creation_input_tokens)} cache written`);
  const rows = [
    ['Call', `${c.n}${m.step ? ` (step ${m.step})` : ''}`],
    ['Model', `${m.model || conv?.model || '—'} on record ${m.record || '—'}`],
    ['Format', `${m.format || conv?.format || '—'}${m.streamed ? ', streamed' : ''}${m.replayed ? ', replayed from a recording' : ''}`],
    ['Status', `${m.status}${m.refused ? ` · refused: ${m.refused}` : ''}${m.aborted ? ` · aborted: ${m.aborted}` : ''}`],
    ['Tokens', usage.join(' · ')],
    ['Cost', m.cost_usd === undefined ? 'not priced (the record has no prices)' : `$${m.cost_usd}`],
    ['Latency', `${fmtDuration(Number(m.latency_ms) || 0)}${m.ttfb_ms ? ` (first byte ${fmtDuration(m.ttfb_ms)})` : ''}`],
  ];
  if (m.error) rows.push(['Error', m.error]);
  return h('dl', {class: 'facts call-facts'}, ...rows.flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

function message(role, title, blocks) {
  const el = h('div', {class: `msg role-${role.replace(/[^a-z_]/g, '')}`}, h('h4', null, title));
  el.dataset.role = role;
  for (const b of blocks || []) el.append(block(b));
  return el;
}

function block(b) {
  switch (b.kind) {
    case 'text':
      return h('div', {class: 'block text'}, fold(b.text));
    case 'thinking':
      return h('details', {class: 'block thinking'}, h('summary', null, 'Thinking'), fold(b.text));
    case 'tool_call':
      return h('div', {class: 'block tool-call'},
        h('div', {class: 'block-head'}, '→ ', h('span', {class: 'mono name'}, b.name), b.id ? h('span', {class: 'id'}, b.id) : null),
        h('pre', {class: 'code'}, pretty(b.input)));
    case 'tool_result':
      return h('div', {class: `block tool-result${b.is_error ? ' failed' : ''}`},
        h('div', {class: 'block-head'}, b.is_error ? '← error' : '← result', b.id ? h('span', {class: 'id'}, b.id) : null),
        fold(b.text));
    case 'image':
      return h('div', {class: 'block image'}, `(image: ${b.text})`);
  }
  return h('div', {class: 'block other'}, h('div', {class: 'block-head'}, b.kind), h('pre', {class: 'code'}, b.text));
}

// fold shows a text whole when short; a long one shows its start and a button that says how much
// more there is and shows it all.
export function fold(text) {
  text = text ?? '';
  const lines = text.split('\n');
  const pre = h('pre', {class: 'text'});
  if (lines.length <= FOLD_LINES + 4 && text.length <= FOLD_CHARS + 500) {
    setText(pre, text);
    return pre;
  }
  let head = lines.slice(0, FOLD_LINES).join('\n');
  if (head.length > FOLD_CHARS) head = head.slice(0, FOLD_CHARS);
  const restLines = text.slice(head.length).split('\n').length - 1;
  setText(pre, head);
  const more = `${fmtCount(text.length - head.length)} more characters${restLines ? `, ${fmtCount(restLines)} more lines` : ''}`;
  const button = h('button', {type: 'button', class: 'quiet unfold', 'aria-expanded': 'false'}, `Show all (${more})`);
  button.addEventListener('click', () => {
    const open = button.getAttribute('aria-expanded') === 'true';
    setText(pre, open ? head : text);
    button.setAttribute('aria-expanded', String(!open));
    setText(button, open ? `Show all (${more})` : 'Fold');
  });
  return h('div', {class: 'folded'}, pre, button);
}

function firstLine(s) {
  const l = s.split('\n')[0];
  return l.length > 120 ? `${l.slice(0, 120)}…` : l;
}

// pretty indents JSON text (or a value) for reading; what is not JSON comes as it is.
function pretty(v) {
  if (typeof v !== 'string') return JSON.stringify(v, null, 2);
  try {
    return JSON.stringify(JSON.parse(v), null, 2);
  } catch {
    return v;
  }
}

function raw(c) {
  const ex = c.exchange ? JSON.parse(JSON.stringify(c.exchange)) : null;
  if (!ex) return [h('p', {class: 'empty'}, 'Not kept: only the meter was recorded.'), h('h4', null, 'The meter (model_call event)'), h('pre', {class: 'code raw'}, pretty(c.meter))];
  const out = [];
  if (ex.cut) out.push(h('p', {class: 'note cut'}, `Not kept whole: ${ex.cut}.`));
  out.push(h('h4', null, `Request: ${ex.method} ${ex.path}${ex.query ? `?${ex.query}` : ''}`),
    h('p', {class: 'hint'}, 'The body the harness sent, indented for reading (headers are not kept: the session key travels in one).'),
    h('pre', {class: 'code raw raw-request'}, pretty(ex.request)));
  out.push(h('h4', null, `Answer: status ${ex.status}${ex.content_type ? `, ${ex.content_type}` : ''}`));
  if (ex.streamed) {
    out.push(h('p', {class: 'hint'}, `The stream as the harness got it, ${ex.chunks?.length || 0} writes; each write's time since the call began.`),
      h('pre', {class: 'code raw raw-answer'}, (ex.chunks || []).map((ch) => `# +${ch.at_ms} ms\n${ch.data}`).join('')));
  } else {
    out.push(h('pre', {class: 'code raw raw-answer'}, pretty(ex.body || '')));
  }
  out.push(h('h4', null, 'The meter (model_call event)'), h('pre', {class: 'code raw'}, pretty(c.meter)));
  return out;
}

function compare(app, job, c, calls, from) {
  const others = calls.filter((o) => o.seq !== c.seq);
  const prev = [...others].reverse().find((o) => o.seq < c.seq) || others[0];
  // A job made from another compares with that job's same call first.
  const jobField = h('input', {id: `cmp-job-${c.seq}`, class: 'mono cmp-job', value: from || job, size: 26});
  const callField = h('input', {id: `cmp-n-${c.seq}`, class: 'cmp-n', type: 'number', min: '1', value: String(from ? c.n : prev ? prev.n : 1), size: 4});
  const result = h('div', {class: 'diff-result', role: 'status'});
  const run = async (e) => {
    e?.preventDefault();
    result.replaceChildren(h('p', {class: 'hint'}, 'Comparing…'));
    const q = new URLSearchParams({job: jobField.value.trim(), n: callField.value});
    try {
      const d = await app.call('GET', `jobs/${encodeURIComponent(job)}/calls/${c.seq}/diff?${q}`);
      const title = h('p', null, `What changed from call ${d.from.n} of ${d.from.job === job ? 'this job' : d.from.job} (−) to this call (+):`);
      if (d.same) {
        result.replaceChildren(title, h('p', {class: 'empty'}, 'The requests are the same.'));
        return;
      }
      result.replaceChildren(title, diffBlock(d.lines));
    } catch (err) {
      result.replaceChildren(h('p', {class: 'empty'}, err.message));
    }
  };
  const form = h('form', {class: 'compare-form', onsubmit: run},
    h('label', {for: jobField.id}, 'Against job'), jobField,
    h('label', {for: callField.id}, 'call'), callField,
    h('button', {type: 'submit', class: 'compare'}, 'Compare'));
  const out = [h('p', {class: 'hint'}, 'What changed in the request (the prompt, the messages, the tools), as oz0 job replay prints it: each place by its JSON path.'), form, result];
  if (prev || from) run();
  else result.append(h('p', {class: 'hint'}, 'This job has one model call: give another job\'s ID to compare with one of its calls.'));
  return out;
}

// diffBlock shows the lines of a diff as oz0 job replay prints them, the removed and added marked.
export function diffBlock(lines) {
  return h('pre', {class: 'code diff'}, ...lines.map((l) => {
    // "    - old", "    + new", "  path: - old (not sent now)", "  path[1]: + new (not in …)"
    const t = l.trimStart().replace(/^[^\s]+: (?=[-+] )/, '');
    const cls = t.startsWith('- ') ? 'del' : t.startsWith('+ ') ? 'add' : 'ctx';
    return h('span', {class: `line ${cls}`}, `${l}\n`);
  }));
}
