// The jobs: a live list, filtered by agent and status. The filters are in the address
// (#/jobs?agent=…&status=…), so that the feed's snapshot is of the filtered list and a reload
// keeps them.
import {LIVE, fmtCount, fmtDuration, fmtTime, h, jobDuration, setText, statusBadge, syncList, updateBadge} from './dom.js';

const STATUSES = ['queued', 'running', 'waiting_for_approval', 'succeeded', 'failed', 'cancelled', 'timed_out', 'interrupted'];
const LIMIT = 200;

export function mount(root, app, {query}) {
  const agent = query.get('agent') || '';
  const status = query.get('status') || '';
  const wanted = status ? status.split(',') : null;
  const matches = (j) => (!agent || j.agent === agent) && (!wanted || wanted.includes(j.status));

  const setFilter = () => {
    const q = new URLSearchParams();
    if (agentSel.value) q.set('agent', agentSel.value);
    if (statusSel.value) q.set('status', statusSel.value);
    const s = q.toString();
    location.hash = '#/jobs' + (s ? '?' + s : '');
  };
  const agentSel = h('select', {id: 'filter-agent', onchange: setFilter},
    h('option', {value: ''}, 'all agents'),
    app.info.agents.map((a) => h('option', {value: a.name, selected: a.name === agent}, a.name)));
  const statusSel = h('select', {id: 'filter-status', onchange: setFilter},
    h('option', {value: ''}, 'all statuses'),
    h('option', {value: LIVE.join(','), selected: status === LIVE.join(',')}, 'live'),
    STATUSES.map((s) => h('option', {value: s, selected: s === status}, s.replaceAll('_', ' '))));
  const tbody = h('tbody', {id: 'jobs-body'});
  // Until the feed's first snapshot the list is not known: "connecting…", not "No jobs yet".
  let heard = false;
  const empty = h('p', {class: 'empty', id: 'jobs-empty', role: 'status'});

  root.append(
    h('h1', null, 'Jobs'),
    h('form', {class: 'filters', role: 'search', 'aria-label': 'Filter the jobs', onsubmit: (e) => e.preventDefault()},
      h('label', {for: 'filter-agent'}, 'Agent'), agentSel,
      h('label', {for: 'filter-status'}, 'Status'), statusSel),
    h('table', {class: 'jobs', id: 'jobs'},
      h('caption', {class: 'sr-only'}, 'Jobs, newest first, updated as they run'),
      h('thead', null, h('tr', null,
        h('th', {scope: 'col'}, 'Job'), h('th', {scope: 'col'}, 'Agent'), h('th', {scope: 'col'}, 'Status'),
        h('th', {scope: 'col'}, 'Started'), h('th', {scope: 'col', class: 'num'}, 'Duration'),
        h('th', {scope: 'col', class: 'num'}, 'Model calls'), h('th', {scope: 'col', class: 'num'}, 'Tokens in / out'))),
      tbody),
    empty);

  const render = () => {
    const list = [...app.jobs.values()].filter(matches)
      .sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0))
      .slice(0, LIMIT);
    syncList(tbody, list, (j) => j.id, makeRow, updateRow);
    empty.hidden = list.length > 0;
    setText(empty, !heard ? 'connecting…'
      : agent || status ? 'No job matches the filters.' : 'No jobs yet. Start one on the Run page, or with oz0 run.');
  };
  render();
  // The durations of live jobs grow: redrawn each second from the records held (no request).
  const tick = setInterval(() => {
    for (const tr of tbody.children) {
      const j = app.jobs.get(tr.dataset.key);
      if (j && LIVE.includes(j.status)) setText(tr.cells[4], fmtDuration(jobDuration(j)));
    }
  }, 1000);

  return {
    feed: {agent, status, limit: LIMIT},
    snapshot: () => {
      heard = true;
      render();
    },
    job: render,
    unmount: () => clearInterval(tick),
  };
}

function makeRow(j) {
  return h('tr', {dataset: {job: j.id}},
    h('td', null, h('a', {href: `#/jobs/${j.id}`, class: 'mono'}, j.id)),
    h('td'), h('td', null, statusBadge(j.status)), h('td'), h('td', {class: 'num'}), h('td', {class: 'num'}), h('td', {class: 'num'}));
}

function updateRow(tr, j) {
  const c = tr.cells;
  setText(c[1], j.agent);
  updateBadge(c[2].firstChild, j.status);
  if (j.reason) c[2].title = j.reason;
  setText(c[3], fmtTime(j.started_at || j.created_at));
  setText(c[4], fmtDuration(jobDuration(j)));
  setText(c[5], fmtCount(j.usage.model_calls));
  setText(c[6], `${fmtCount(j.usage.input_tokens)} / ${fmtCount(j.usage.output_tokens)}`);
}
