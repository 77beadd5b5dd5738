// The agents, drawn: each agent → its harness → the tools it may call, a tool marked when a
// person must approve its calls (requires_approval) or a rule of the tenant's hooks denies or asks
// for them. On a job's page the same drawing is lit with what the job did: the tools it called
// (how often, and which calls were refused), and the sub-agents its framework's spans name, with
// their tools. SVG made in the page: nothing loaded from elsewhere, no font but the system's.
import {h, svg as s} from './dom.js';



// The drawing's measures, in its own units (1 = 1 CSS pixel at full width).
const COL = {agent: 10, harness: 270, tool: 520, sub: 820};
const W = {agent: 220, harness: 200, tool: 250, sub: 250};
const ROW = 54; // a tool's row
const BOX = 44; // a box's height
const CHAR = 7.4; // about a character's width at 13px

function fit(text, width) {
  const n = Math.floor((width - 20) / CHAR);
  return text.length > n ? `${text.slice(0, Math.max(n - 1, 1))}…` : text;
}

// box is a node of the drawing: a rectangle, its name and a line under it, and pills.
function box(kind, x, y, w, name, sub, pills, extra) {
  const g = s('g', {class: `node n-${kind}${extra?.cls ? ` ${extra.cls}` : ''}`, transform: `translate(${x} ${y})`, 'data-name': name},
    s('title', null, [name, sub, ...pills.map((p) => p.title)].filter(Boolean).join(' · ')),
    s('rect', {width: w, height: BOX, rx: 8}),
    s('text', {x: 10, y: 18, class: 'name'}, fit(name, w)),
    sub ? s('text', {x: 10, y: 35, class: 'sub'}, fit(sub, w)) : null);
  // Pills right-aligned on the box's top edge.
  let px = w - 6;
  for (const p of pills) {
    const pw = p.text.length * 7 + 14;
    px -= pw;
    g.append(s('g', {class: `pill p-${p.kind}`, transform: `translate(${px} -9)`},
      s('rect', {width: pw, height: 17, rx: 8.5}), s('text', {x: pw / 2, y: 12.5, 'text-anchor': 'middle'}, p.text)));
    px -= 4;
  }
  return g;
}

function edge(x1, y1, x2, y2, lit) {
  const mx = (x1 + x2) / 2;
  return s('path', {class: `edge${lit ? ' lit' : ''}`, d: `M${x1} ${y1} C${mx} ${y1} ${mx} ${y2} ${x2} ${y2}`});
}

// toolPills are a tool's marks: approval, the rules that deny or ask; lit, what the job did.
function toolPills(t, used) {
  const out = [];
  if (t.requires_approval) out.push({kind: 'approval', text: 'approval', title: 'a person approves each call (requires_approval)'});
  for (const r of t.rules || []) {
    const verb = r.decision === 'deny' ? 'refused' : 'asks';
    out.push({kind: r.decision === 'deny' ? 'deny' : 'ask', text: `${r.conditional ? 'may be ' : ''}${r.decision === 'deny' ? 'refused' : 'asked'}`,
      title: `rule ${r.hook} ${r.conditional ? 'sometimes ' : ''}${verb}${r.reason ? `: ${r.reason}` : ''}`});
  }
  if (used?.refused) out.push({kind: 'refused-now', text: `${used.refused}× refused`, title: `${used.refused} of its calls in this job were refused`});
  return out;
}

// draw is the SVG of agent (an info.agents entry); lit, when given, is what a job did (litOf).
export function draw(agent, lit) {
  const tools = [...(agent.tools || [])];
  // A tool the job asked for that the agent does not list (refused by the node) is drawn too.
  for (const name of lit ? Object.keys(lit.tools) : []) {
    if (!tools.some((t) => t.name === name)) tools.push({name, unlisted: true});
  }
  const subs = lit ? lit.subAgents : [];
  const rows = Math.max(tools.length + subs.reduce((n, a) => n + Math.max(a.tools.length, 1), 0), 1);
  const height = rows * ROW + 24;
  const mid = 12 + (rows * ROW) / 2 - BOX / 2;
  const width = subs.length ? COL.sub + W.sub + 10 : COL.tool + W.tool + 10;
  const svg = s('svg', {class: `agent-drawing${lit ? ' lit-drawing' : ''}`, viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
    'aria-label': `${agent.name} → ${agent.harness} → ${tools.map((t) => t.name).join(', ') || 'no tools'}`, 'data-agent': agent.name});
  const edges = s('g', {class: 'edges'});
  const nodes = s('g', {class: 'nodes'});
  svg.append(edges, nodes);
  nodes.append(box('agent', COL.agent, mid, W.agent, agent.name, `model ${agent.record}${agent.model ? ` (${agent.model})` : ''}`, [],
    {cls: lit ? 'lit' : ''}));
  nodes.append(box('harness', COL.harness, mid, W.harness, agent.harness, lit ? `${lit.modelCalls} model call${lit.modelCalls === 1 ? '' : 's'}` : 'harness', [],
    {cls: lit ? 'lit' : ''}));
  edges.append(edge(COL.agent + W.agent, mid + BOX / 2, COL.harness, mid + BOX / 2, !!lit));
  let y = 12 + (ROW - BOX) / 2; // each row's box in its middle, as the agent's is in theirs
  for (const t of tools) {
    const used = lit?.tools[t.name];
    const sub = t.unlisted ? 'not in the agent\'s tools' : used ? `called ${used.calls}×` : lit ? 'not called' : 'tool';
    const cls = [used ? 'lit' : lit ? 'dim' : '', t.unlisted ? 'unlisted' : ''].filter(Boolean).join(' ');
    nodes.append(box('tool', COL.tool, y, W.tool, t.name, sub, toolPills(t, used), {cls}));
    edges.append(edge(COL.harness + W.harness, mid + BOX / 2, COL.tool, y + BOX / 2, !!used));
    y += ROW;
  }
  for (const a of subs) {
    const ay = y;
    nodes.append(box('subagent', COL.tool, ay, W.tool, a.name, 'sub-agent (from its spans)', [], {cls: 'lit'}));
    edges.append(edge(COL.harness + W.harness, mid + BOX / 2, COL.tool, ay + BOX / 2, true));
    for (const [name, n] of a.tools) {
      nodes.append(box('tool', COL.sub, y, W.sub, name, `called ${n}×`, [], {cls: 'lit'}));
      edges.append(edge(COL.tool + W.tool, ay + BOX / 2, COL.sub, y + BOX / 2, true));
      y += ROW;
    }
    if (!a.tools.length) y += ROW;
  }
  return svg;
}

// litOf reads a job's events: the tools it asked for (calls, refused) and its model calls; the
// sub-agents its framework's spans name (gen_ai.agent.name, or an invoke_agent span's name), each
// with the tools its spans under it ran (gen_ai.tool.name, or an execute_tool span's name). An
// agent span with no agent span above it is the job's agent itself, whatever the framework calls
// it (Strands' "invoke_agent triage" of acme-triage): a sub-agent is one nested under another.
export function litOf(events, agentName) {
  const lit = {tools: {}, modelCalls: 0, subAgents: []};
  const names = new Map(); // permission id → tool
  const spans = new Map(); // span id → {parent, agent, tool}
  for (const ev of events) {
    const d = ev.data || {};
    if (ev.type === 'permission_request') {
      names.set(d.id, d.tool);
      lit.tools[d.tool] ||= {calls: 0, refused: 0};
      lit.tools[d.tool].calls++;
    } else if (ev.type === 'permission_decision' && d.decision === 'deny') {
      const t = names.get(d.id) || d.tool;
      if (lit.tools[t]) lit.tools[t].refused++;
    } else if (ev.type === 'model_call') {
      lit.modelCalls++;
    } else if (ev.type === 'span') {
      const a = d.attributes || {};
      let agent = a['gen_ai.agent.name'];
      if (!agent && /^invoke_agent /.test(d.name || '')) agent = d.name.slice('invoke_agent '.length);
      let tool = a['gen_ai.tool.name'];
      if (!tool && /^execute_tool /.test(d.name || '')) tool = d.name.slice('execute_tool '.length);
      spans.set(d.span_id, {parent: d.parent_span_id, agent: agent && !tool ? agent : '', tool: tool || ''});
    }
  }
  // The nearest agent span above a span ('' none); a bounded walk, as spans come from the session.
  const above = (id) => {
    for (let sp = spans.get(id), hops = 0; sp && hops < 64; sp = spans.get(sp.parent), hops++) {
      if (sp.agent) return sp;
    }
    return null;
  };
  const sub = (sp) => sp && above(sp.parent) !== null; // nested under another agent's span
  const subs = new Map();
  for (const sp of spans.values()) {
    if (sp.agent && sub(sp) && sp.agent !== agentName && !subs.has(sp.agent)) subs.set(sp.agent, new Map());
  }
  for (const sp of spans.values()) {
    if (!sp.tool) continue;
    const a = above(sp.parent);
    if (sub(a) && a.agent !== agentName) {
      subs.get(a.agent).set(sp.tool, (subs.get(a.agent).get(sp.tool) || 0) + 1);
    }
  }
  lit.subAgents = [...subs].map(([name, tools]) => ({name, tools: [...tools]}));
  return lit;
}

// The Agents page: every agent the dev server runs, drawn.
export function mount(root, app) {
  const agents = app.info.agents;
  root.append(h('h1', null, 'Agents'),
    h('p', {class: 'lede'}, 'Each agent → its harness → the tools it may call. A tool is marked when a person approves each call (requires_approval), or when a rule of the tenant\'s hooks refuses or asks for its calls ("may be" when the rule reads the arguments). A job\'s page shows the same drawing, lit with what the job called.'),
    h('div', {class: 'legend', 'aria-hidden': 'true'},
      h('span', {class: 'pill-key p-approval'}, 'approval'), ' a person approves each call ',
      h('span', {class: 'pill-key p-deny'}, 'refused'), ' a rule refuses its calls ',
      h('span', {class: 'pill-key p-ask'}, 'asked'), ' a rule asks a person'));
  if (!agents.length) root.append(h('p', {class: 'empty'}, 'oz0 dev serves no agent.'));
  for (const a of agents) {
    root.append(h('section', {class: 'agent-card', id: `agent-${a.name}`},
      h('h2', null, a.name, a.plugin && a.plugin !== a.name ? h('span', {class: 'muted'}, ` (${a.plugin})`) : null),
      h('div', {class: 'drawing'}, draw(a)),
      h('p', {class: 'hint'}, h('a', {href: `#/jobs?agent=${encodeURIComponent(a.name)}`}, 'Its jobs'), ' · ', h('a', {href: '#/run'}, 'Run it'))));
  }
  return {};
}
