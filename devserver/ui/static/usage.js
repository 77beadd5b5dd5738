// Usage: model calls and tokens by model record, per agent and per job. Read again when a job's
// record changes (the feed says so), one read at a time.
import {usageChart} from './charts.js';
import {fmtCount, h, setText, syncList} from './dom.js';
import {quotaSection} from './quotas.js';

export function mount(root, app) {
  const chart = usageChart(app);
  const byAgent = usageTable('usage-agents', 'Per agent', ['Agent']);
  const byJob = usageTable('usage-jobs', 'Per job', ['Job', 'Agent']);
  const quotas = quotaSection(app);
  root.append(
    h('h1', null, 'Usage'),
    h('p', {class: 'lede'}, 'Model calls through the gateway and their tokens, by model record. Refused calls are not counted as calls.'),
    quotas.el,
    chart.el,
    h('h2', {id: 'usage-agents-title'}, 'Per agent'), byAgent.table,
    h('h2', {id: 'usage-jobs-title'}, 'Per job'), byJob.table);
  const load = reloader(async () => {
    const [agents, jobs] = await Promise.all([app.call('GET', 'usage'), app.call('GET', 'usage?by=job'), quotas.load()]);
    byAgent.fill(agents.usage, (r) => [r.agent]);
    byJob.fill(jobs.usage, (r) => [h('a', {href: `#/jobs/${r.job}`, class: 'mono'}, r.job), r.agent]);
    await chart.load();
  }, app);
  load();
  return {snapshot: load, job: load};
}

// reloader runs load now, or once more after the run in progress when asked meanwhile; a failure
// is said as not reading what (the usage, by default).
export function reloader(load, app, what = 'the usage') {
  let running = false;
  let again = false;
  const run = async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await load();
      } while (again);
    } catch (err) {
      app.alert(`Could not read ${what}: ${err.message}`);
    } finally {
      running = false;
    }
  };
  return run;
}

// usageTable is a table of usage rows with leading columns of its own.
export function usageTable(id, caption, lead) {
  const tbody = h('tbody');
  const empty = h('tr', {class: 'empty-row'}, h('td', {colspan: lead.length + 7}, 'No model calls yet.'));
  const table = h('table', {class: 'usage', id},
    h('caption', {class: 'sr-only'}, caption),
    h('thead', null, h('tr', null,
      lead.map((c) => h('th', {scope: 'col'}, c)),
      h('th', {scope: 'col'}, 'Model record'), h('th', {scope: 'col'}, 'Model'),
      h('th', {scope: 'col', class: 'num'}, 'Calls'), h('th', {scope: 'col', class: 'num'}, 'Input tokens'),
      h('th', {scope: 'col', class: 'num'}, 'Output tokens'), h('th', {scope: 'col', class: 'num'}, 'Cache read / written'),
      h('th', {scope: 'col', class: 'num'}, 'Cost (USD)'))),
    tbody);
  const fill = (rows, leadCells) => {
    const keyed = rows.map((r) => ({r, key: [r.agent, r.job || '', r.record, r.model].join('|')}));
    syncList(tbody, keyed, (x) => x.key, (x) => h('tr', null, leadCells(x.r).map((c) => h('td', null, c)),
      h('td'), h('td'), h('td', {class: 'num'}), h('td', {class: 'num'}), h('td', {class: 'num'}), h('td', {class: 'num'}), h('td', {class: 'num'})),
    (tr, {r}) => {
      const c = tr.cells;
      const at = lead.length;
      setText(c[at], r.record);
      setText(c[at + 1], r.model);
      setText(c[at + 2], fmtCount(r.model_calls));
      setText(c[at + 3], fmtCount(r.input_tokens));
      setText(c[at + 4], fmtCount(r.output_tokens));
      setText(c[at + 5], `${fmtCount(r.cache_read_input_tokens)} / ${fmtCount(r.cache_creation_input_tokens)}`);
      setText(c[at + 6], r.cost_usd ? r.cost_usd.toFixed(4) : '—');
    });
    if (!rows.length) tbody.append(empty);
  };
  return {table, fill};
}
