// Usage as charts, drawn in SVG by the page: the jobs' tokens or cost per hour or day, by agent or
// by model record, stacked (the Usage page, above its tables); a job's model calls, a bar each
// (its page). Hovering or focusing a bar shows its figures. The figures are the jobs' own
// (GET jobs: what oz0 job list --json prints), summed in the page.
import {fmtCount, fmtDuration, h, setText, svg as s} from './dom.js';

const COLORS = 8; // .c0 … .c7 in style.css


const pad = (n) => String(n).padStart(2, '0');

// bucketOf is the start of the hour or day (local time) of an ISO time, in ms.
export function bucketOf(iso, per) {
  const d = new Date(iso);
  if (per === 'day') d.setHours(0, 0, 0, 0);
  else d.setMinutes(0, 0, 0);
  return d.getTime();
}

function bucketLabel(t, per) {
  const d = new Date(t);
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  return per === 'day' ? day : `${day} ${pad(d.getHours())}:00`;
}

function prevBucket(t, per) {
  const d = new Date(t);
  if (per === 'day') d.setDate(d.getDate() - 1);
  else d.setHours(d.getHours() - 1);
  return d.getTime();
}

// sums adds up jobs by bucket and by group (agent or model record): tokens (input and output),
// input, output, cost, jobs, model calls.
export function sums(jobs, per, by) {
  const out = new Map(); // bucket → Map(group → sum)
  for (const j of jobs) {
    if (!j.usage?.model_calls && !j.usage?.input_tokens) continue;
    const b = bucketOf(j.created_at, per);
    const g = (by === 'record' ? j.model_record : j.agent) || '—';
    if (!out.has(b)) out.set(b, new Map());
    const m = out.get(b);
    const x = m.get(g) || {tokens: 0, input: 0, output: 0, cost: 0, jobs: 0, calls: 0};
    x.input += j.usage.input_tokens;
    x.output += j.usage.output_tokens;
    x.tokens += j.usage.input_tokens + j.usage.output_tokens;
    x.cost += j.usage.cost_usd;
    x.calls += j.usage.model_calls;
    x.jobs++;
    m.set(g, x);
  }
  return out;
}

const money = (v) => `$${v.toFixed(v && v < 0.01 ? 6 : 4)}`;

// readout shows one bar's figures in el.
function hover(el, target, text) {
  const show = () => {
    setText(el, text);
    el.hidden = false;
  };
  target.addEventListener('mouseenter', show);
  target.addEventListener('focus', show);
}

// The Usage page's chart: controls, the SVG, its legend and the figures of the bar under the
// pointer. load reads the jobs again.
export function usageChart(app) {
  const by = h('select', {id: 'chart-by'}, h('option', {value: 'agent'}, 'agent'), h('option', {value: 'record'}, 'model record'));
  const metric = h('select', {id: 'chart-metric'}, h('option', {value: 'tokens'}, 'tokens'), h('option', {value: 'cost'}, 'cost (USD)'));
  const per = h('select', {id: 'chart-per'}, h('option', {value: 'hour'}, 'hour'), h('option', {value: 'day'}, 'day'));
  const readout = h('p', {class: 'readout', id: 'chart-readout', role: 'status', hidden: true});
  const holder = h('div', {class: 'chart', id: 'usage-chart'});
  const legend = h('ul', {class: 'chart-legend', id: 'chart-legend'});
  const el = h('section', {class: 'charts', 'aria-labelledby': 'chart-title'},
    h('h2', {id: 'chart-title'}, 'Over time'),
    h('div', {class: 'filters'},
      h('label', {for: 'chart-metric'}, 'Show'), metric, h('label', {for: 'chart-per'}, 'per'), per, h('label', {for: 'chart-by'}, 'by'), by),
    holder, legend, readout);
  let jobs = [];
  let perChosen = false;

  const render = () => {
    const p = per.value;
    const data = sums(jobs, p, by.value);
    const buckets = [...data.keys()].sort((a, b) => a - b);
    holder.replaceChildren();
    legend.replaceChildren();
    if (!buckets.length) {
      holder.append(h('p', {class: 'empty'}, 'No model calls yet.'));
      return;
    }
    // Every bucket to now (the last 12 at least, at most 60), the empty ones too: time reads evenly.
    const end = Math.max(buckets[buckets.length - 1], bucketOf(new Date().toISOString(), p));
    const all = [];
    for (let t = end, i = 0; i < 60 && (t >= buckets[0] || i < 12); t = prevBucket(t, p), i++) all.unshift(t);
    const shown = all;
    const groups = [...new Set(buckets.flatMap((b) => [...data.get(b).keys()]))].sort();
    const value = (x) => (metric.value === 'cost' ? x.cost : x.tokens);
    const max = Math.max(...shown.map((b) => [...(data.get(b)?.values() || [])].reduce((n, x) => n + value(x), 0)), metric.value === 'cost' ? 0.0001 : 1);
    const W = 900;
    const H = 220;
    const left = 64;
    const top = 10;
    const plotW = W - left - 10;
    const plotH = H - top - 34;
    const slot = plotW / shown.length;
    const bw = Math.max(Math.min(slot * 0.7, 48), 2);
    const svg = s('svg', {class: 'bars', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img',
      'aria-label': `${metric.value === 'cost' ? 'Cost' : 'Tokens'} per ${p} by ${by.value === 'record' ? 'model record' : 'agent'}`});
    // Three gridlines with their values.
    for (const f of [0, 0.5, 1]) {
      const y = top + plotH - f * plotH;
      svg.append(s('line', {class: 'grid', x1: left, x2: W - 10, y1: y, y2: y}),
        s('text', {class: 'axis', x: left - 6, y: y + 4, 'text-anchor': 'end'}, metric.value === 'cost' ? money(max * f) : fmtCount(Math.round(max * f))));
    }
    const every = Math.ceil(shown.length / 8);
    shown.forEach((b, i) => {
      const x = left + i * slot + (slot - bw) / 2;
      let y = top + plotH;
      const m = data.get(b);
      for (const [gi, g] of groups.entries()) {
        const v = m?.get(g);
        if (!v || !value(v)) continue;
        const bh = Math.max((value(v) / max) * plotH, 1);
        y -= bh;
        const text = `${bucketLabel(b, p)} · ${g}: ${fmtCount(v.tokens)} tokens (${fmtCount(v.input)} in, ${fmtCount(v.output)} out) · ${money(v.cost)} · ${v.jobs} job${v.jobs === 1 ? '' : 's'}, ${v.calls} model call${v.calls === 1 ? '' : 's'}`;
        const rect = s('rect', {class: `seg c${gi % COLORS}`, x, y, width: bw, height: bh, tabindex: 0, role: 'img', 'aria-label': text,
          'data-bucket': b, 'data-group': g, 'data-tokens': v.tokens, 'data-cost': v.cost, 'data-jobs': v.jobs}, s('title', null, text));
        hover(readout, rect, text);
        svg.append(rect);
      }
      if ((shown.length - 1 - i) % every === 0) { // counted from the last: now is labelled
        svg.append(s('text', {class: 'axis', x: left + i * slot + slot / 2, y: H - 12, 'text-anchor': 'middle'}, bucketLabel(b, p).slice(p === 'day' ? 5 : 11)));
      }
    });
    holder.append(svg);
    legend.append(...groups.map((g, gi) => h('li', null, h('span', {class: `swatch c${gi % COLORS}`, 'aria-hidden': 'true'}), g)));
  };

  for (const c of [by, metric]) c.addEventListener('change', render);
  per.addEventListener('change', () => {
    perChosen = true;
    render();
  });

  const load = async () => {
    // Every job, newest first, a page at a time (at most 20,000).
    const all = [];
    let before = '';
    for (let i = 0; i < 20; i++) {
      const r = await app.call('GET', `jobs?limit=1000${before ? `&before=${encodeURIComponent(before)}` : ''}`);
      all.push(...r.jobs);
      if (r.jobs.length < 1000) break;
      before = r.jobs[r.jobs.length - 1].id;
    }
    jobs = all;
    // Per hour while the jobs span less than two days, else per day, until a person chooses.
    if (!perChosen && jobs.length) {
      const times = jobs.map((j) => Date.parse(j.created_at));
      per.value = Math.max(...times) - Math.min(...times) > 2 * 86400e3 ? 'day' : 'hour';
    }
    render();
  };
  return {el, load};
}

// callsChart is a job's model calls, a bar each: input and output tokens stacked, hover for the
// figures. fill draws it from the calls' meters ({n, meter}: a model_call event's data).
export function callsChart() {
  const readout = h('p', {class: 'readout', id: 'calls-readout', role: 'status', hidden: true});
  const holder = h('div', {class: 'chart', id: 'calls-chart'});
  const el = h('div', {class: 'calls-chart'}, holder,
    h('ul', {class: 'chart-legend'}, h('li', null, h('span', {class: 'swatch in', 'aria-hidden': 'true'}), 'input tokens'),
      h('li', null, h('span', {class: 'swatch out', 'aria-hidden': 'true'}), 'output tokens')), readout);
  const fill = (calls) => {
    holder.replaceChildren();
    if (!calls.length) {
      holder.append(h('p', {class: 'empty'}, 'No model calls yet.'));
      return;
    }
    const W = 900;
    const H = 160;
    const left = 64;
    const top = 10;
    const plotH = H - top - 30;
    const slot = (W - left - 10) / calls.length;
    const bw = Math.max(Math.min(slot * 0.6, 56), 3);
    const num = (v) => Number(v) || 0;
    const max = Math.max(...calls.map((c) => num(c.meter?.input_tokens) + num(c.meter?.output_tokens)), 1);
    const svg = s('svg', {class: 'bars', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': `The job's ${calls.length} model calls: tokens each`});
    for (const f of [0, 0.5, 1]) {
      const y = top + plotH - f * plotH;
      svg.append(s('line', {class: 'grid', x1: left, x2: W - 10, y1: y, y2: y}),
        s('text', {class: 'axis', x: left - 6, y: y + 4, 'text-anchor': 'end'}, fmtCount(Math.round(max * f))));
    }
    calls.forEach((c, i) => {
      const m = c.meter || {};
      const x = left + i * slot + (slot - bw) / 2;
      const inH = (num(m.input_tokens) / max) * plotH;
      const outH = (num(m.output_tokens) / max) * plotH;
      const text = `call ${c.n} · ${m.record || ''}${m.model ? ` (${m.model})` : ''} · ${fmtCount(m.input_tokens)} in · ${fmtCount(m.output_tokens)} out · ${fmtDuration(num(m.latency_ms))}${m.cost_usd === undefined ? '' : ` · ${money(num(m.cost_usd))}`}${m.refused ? ` · refused: ${m.refused}` : ''}`;
      const g = s('g', {class: `call-bar${m.refused || m.error ? ' failed' : ''}`, tabindex: 0, role: 'img', 'aria-label': text,
        'data-n': c.n, 'data-input': num(m.input_tokens), 'data-output': num(m.output_tokens)},
      s('title', null, text),
      s('rect', {class: 'seg in', x, y: top + plotH - inH, width: bw, height: Math.max(inH, 0.5)}),
      s('rect', {class: 'seg out', x, y: top + plotH - inH - outH, width: bw, height: outH}),
      s('text', {class: 'axis', x: x + bw / 2, y: H - 10, 'text-anchor': 'middle'}, String(c.n)));
      hover(readout, g, text);
      svg.append(g);
    });
    holder.append(svg);
  };
  return {el, fill};
}
