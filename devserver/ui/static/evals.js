// Evals: the plugins' eval files and cases, run as oz0 eval runs them (the server calls oz0
// eval's engine, as oz0 eval --dev does): every case, a file's, or one; offline from their
// recordings, or on the live model when asked. A run's progress as its cases end; each case's
// assertions that failed at their lines, with the diff of a replay that departed from its
// recording, as the CLI prints them; tokens and time; and the deltas from the run before (oz0
// eval --baseline's). The runs are kept by oz0 dev (the newest 50); the feed says when one
// changes.
import {fmtCount, fmtDuration, fmtTime, h} from './dom.js';
import {reloader} from './usage.js';

export function mount(root, app, {query}) {
  const live = h('input', {type: 'checkbox', id: 'evals-live'});
  const runAll = h('button', {type: 'button', id: 'evals-run-all', onclick: () => start({})}, 'Run all');
  const filesBox = h('div', {id: 'eval-files'}, h('p', {class: 'hint'}, 'Reading the eval files…'));
  const runBox = h('section', {id: 'eval-run', class: 'eval-run', 'aria-live': 'polite'});
  const history = h('div', {id: 'eval-runs'});
  root.append(
    h('h1', null, 'Evals'),
    h('p', {class: 'lede'}, 'The plugin\'s eval files (evals/*.yaml) and their cases, run as oz0 eval runs them: the same engine, on this oz0 dev, so their jobs show on the Jobs page. Offline, each case is answered from its recording; on the live model, from the model records.'),
    h('div', {class: 'filters'}, runAll, live, h('label', {for: 'evals-live'}, 'On the live model (needs a provider key)')),
    filesBox, runBox,
    h('h2', null, 'Runs'), history);

  let files = [];
  let lastByCase = new Map(); // "file case" → the latest run's result
  let shownRun = Number(query.get('run')) || 0;

  const start = async (req) => {
    app.clearAlert();
    try {
      const run = await app.call('POST', 'eval-runs', {...req, live: live.checked});
      shownRun = run.id;
      readRun();
    } catch (err) {
      app.alert(`Not run: ${err.message}`);
    }
  };

  const loadFiles = async () => {
    const r = await app.call('GET', 'evals');
    files = r.files;
    drawFiles();
  };

  const drawFiles = () => {
    if (!files.length) {
      filesBox.replaceChildren(h('p', {class: 'empty', id: 'evals-empty'}, 'No eval files yet: write cases in evals/*.yaml (docs/eval.md), or save a job as one from its page.'));
      return;
    }
    filesBox.replaceChildren(...files.map((f) => {
      const problems = (f.problems || []).length;
      const rows = f.cases.map((c) => {
        const last = lastByCase.get(`${f.name} ${c.name}`);
        return h('tr', {dataset: {case: c.name}},
          h('td', {class: 'mono'}, c.name), h('td', null, c.source),
          h('td', null, last ? h('span', {class: `status e-${last.status}`}, last.status) : '—'),
          h('td', {class: 'num'}, last ? fmtCount(last.tokens) : ''),
          h('td', {class: 'num'}, last ? fmtDuration(last.duration_ms) : ''),
          h('td', null, h('button', {type: 'button', class: 'quiet run-case', disabled: problems > 0, 'aria-label': `Run ${c.name} of ${f.path}`,
            onclick: () => start({plugin: f.plugin, file: f.path, case: c.name})}, 'Run')));
      });
      return h('section', {class: 'eval-file', dataset: {file: f.name}},
        h('h2', null, h('span', {class: 'mono'}, f.name), f.agent ? h('span', {class: 'muted'}, ` · agent ${f.agent}`) : null,
          h('button', {type: 'button', class: 'quiet run-file', disabled: problems > 0, 'aria-label': `Run the cases of ${f.path}`,
            onclick: () => start({plugin: f.plugin, file: f.path})}, 'Run file')),
        problems ? h('ul', {class: 'problems'}, f.problems.map((p) => h('li', {class: 'mono'}, p))) : null,
        h('table', {class: 'cases'},
          h('caption', {class: 'sr-only'}, `The cases of ${f.path}`),
          h('thead', null, h('tr', null, ['Case', 'Answers from', 'Last run', 'Tokens', 'Time', ''].map((t, i) => h('th', {scope: 'col', class: i === 3 || i === 4 ? 'num' : null}, t)))),
          h('tbody', null, rows)));
    }));
  };

  // asserts lists a case's assertions, as its eval file has them, each passed or failed in this
  // run (a failure is at its assertion's line and column); the job's own failure, a timeout or an
  // unanswered approval first.
  const asserts = (c) => {
    const file = files.find((f) => f.name === c.file);
    const info = file?.cases.find((x) => x.name === c.case);
    const failed = (a) => (c.failures || []).find((f) => f.line === a.line && f.col === a.col && f.kind === a.kind);
    const ran = c.status === 'passed' || c.status === 'failed';
    const items = [];
    for (const f of c.failures || []) {
      if (!info?.asserts.some((a) => failed(a) === f)) items.push(h('li', {class: 'a-failed', dataset: {kind: f.kind}, title: f.message}, `✗ ${f.kind}`));
    }
    for (const a of info?.asserts || []) {
      const f = failed(a);
      const state = f ? 'failed' : ran ? 'passed' : 'skipped';
      items.push(h('li', {class: `a-${state}`, dataset: {kind: a.kind}, title: `${a.kind}: ${a.value}${f ? `\n${f.message}` : ''}`},
        `${{failed: '✗', passed: '✓', skipped: '–'}[state]} ${a.kind}`));
    }
    if (!items.length) return c.notes?.[0] || '—';
    return h('ul', {class: 'asserts', 'aria-label': `The assertions of ${c.case}`}, items);
  };

  // showRun draws a run: its progress, each case's result (failures as the CLI prints them), the
  // totals and the deltas from the run before.
  const showRun = (run) => {
    const report = run.report ? JSON.parse(typeof run.report === 'string' ? run.report : JSON.stringify(run.report)) : {cases: []};
    const cases = report.cases || [];
    const base = report.baseline;
    const delta = new Map((base?.cases || []).map((d) => [`${d.file} ${d.case}`, d]));
    const what = run.request.file ? `${run.request.file}${run.request.case ? ` · ${run.request.case}` : ''}` : 'every case';
    const head = h('h2', null, `Run ${run.id}: ${what}${run.request.live ? ' (live)' : ''} `, h('span', {class: `status e-${run.status}`, id: 'eval-run-status'}, run.status));
    const progress = h('p', {class: 'progress-line'},
      h('progress', {id: 'eval-progress', max: run.cases || 1, value: run.done || 0, 'aria-label': 'Cases ended'}),
      ` ${run.done} of ${run.cases} cases ended`, run.started_at ? ` · started ${fmtTime(run.started_at)}` : '',
      run.status === 'running' ? h('button', {type: 'button', class: 'quiet', id: 'eval-stop', onclick: () => app.call('POST', `eval-runs/${run.id}/stop`).catch((e) => app.alert(e.message))}, 'Stop') : null);
    const out = [head, progress];
    if (run.error) out.push(h('p', {class: 'failed-run', id: 'eval-run-error'}, run.error));
    for (const n of run.notes || []) out.push(h('p', {class: 'note'}, n));
    if (report.totals && run.status !== 'running') {
      const t = report.totals;
      out.push(h('p', {id: 'eval-totals', class: 'totals'}, `${t.passed} passed, ${t.failed} failed${t.skipped ? `, ${t.skipped} skipped` : ''} · ${fmtCount(t.tokens)} tokens · $${t.cost_usd.toFixed(4)} · ${fmtDuration(t.duration_ms)}`));
    }
    if (base) {
      out.push(h('p', {id: 'eval-baseline', class: base.now_failing?.length ? 'failed-run' : 'hint'},
        base.now_failing?.length ? `Now failing, since the run before: ${base.now_failing.join(', ')}.` : 'Nothing fails now that passed in the run before.',
        ` Against the run before: ${signed(base.total.tokens)} tokens, ${signed(base.total.duration_ms, fmtDuration)}.`));
    }
    const body = h('tbody');
    for (const c of cases) {
      const d = delta.get(`${c.file} ${c.case}`);
      body.append(h('tr', {dataset: {case: c.case, file: c.file}},
        h('td', {class: 'mono'}, `${c.file} ${c.case}`),
        h('td', null, h('span', {class: `status e-${c.status}`}, c.status)),
        h('td', null, asserts(c)),
        h('td', {class: 'num'}, fmtCount(c.tokens), d && d.was ? h('span', {class: 'delta'}, ` ${signed(d.tokens)}`) : null),
        h('td', {class: 'num'}, c.cost_usd ? `$${c.cost_usd.toFixed(4)}` : '$0'),
        h('td', {class: 'num'}, fmtDuration(c.duration_ms), d && d.was ? h('span', {class: 'delta'}, ` ${signed(d.duration_ms, fmtDuration)}`) : null),
        h('td', null, c.job ? h('a', {href: `#/jobs/${c.job}`, class: 'mono'}, 'job') : '')));
    }
    out.push(h('table', {class: 'cases', id: 'eval-results'}, h('caption', {class: 'sr-only'}, 'The cases\' results'),
      h('thead', null, h('tr', null, ['Case', 'Status', 'Assertions', 'Tokens', 'Cost', 'Time', ''].map((t, i) => h('th', {scope: 'col', class: i >= 3 && i <= 5 ? 'num' : null}, t)))),
      body));
    // Each failure at its place in the eval file, its message whole (a replay's diff), as the CLI prints it.
    for (const c of cases) {
      for (const f of c.failures || []) {
        const [first, ...rest] = f.message.split('\n');
        out.push(h('div', {class: 'failure', dataset: {case: c.case}},
          h('p', {class: 'mono where'}, `${c.file}:${f.line}:${f.col}: ${c.case}: ${f.kind}: ${first}`),
          rest.length ? h('pre', {class: 'code diff'}, ...rest.map((l) => {
            const t = l.trimStart();
            const cls = t.startsWith('- ') ? 'del' : t.startsWith('+ ') ? 'add' : 'ctx';
            return h('span', {class: `line ${cls}`}, `${l}\n`);
          })) : null));
      }
    }
    runBox.replaceChildren(...out);
    // The files' last-run column, from a finished run.
    if (run.status !== 'running') {
      for (const c of cases) lastByCase.set(`${c.file} ${c.case}`, c);
      drawFiles();
    }
  };

  // readRun reads the run shown, whole, and draws it: when it starts, and each time the feed
  // says it changed (a case ended, it ended), one read at a time.
  const readRun = reloader(async () => {
    if (!shownRun) return;
    const id = shownRun;
    const run = await app.call('GET', `eval-runs/${id}`);
    if (id !== shownRun) return;
    if (run.status !== 'running') {
      // The files as they are now (a run reads them as it starts): their cases and assertions.
      await loadFiles();
      await loadRuns();
    }
    showRun(run);
  }, app, 'the eval run');

  const loadRuns = async () => {
    const r = await app.call('GET', 'eval-runs');
    history.replaceChildren(r.runs.length ? h('table', {class: 'runs'},
      h('caption', {class: 'sr-only'}, 'The runs kept'),
      h('thead', null, h('tr', null, ['Run', 'Started', 'What', 'Status', 'Passed', 'Failed', 'Tokens'].map((t) => h('th', {scope: 'col'}, t)))),
      h('tbody', null, r.runs.map((run) => h('tr', {dataset: {run: run.id}},
        h('td', null, h('a', {href: `#/evals?run=${run.id}`}, `Run ${run.id}`)),
        h('td', null, fmtTime(run.started_at)),
        h('td', {class: 'mono'}, run.request.file ? `${run.request.file}${run.request.case ? ` · ${run.request.case}` : ''}` : 'every case'),
        h('td', null, h('span', {class: `status e-${run.status}`}, run.status)),
        h('td', null, run.totals ? String(run.totals.passed) : ''), h('td', null, run.totals ? String(run.totals.failed) : ''),
        h('td', null, run.totals ? fmtCount(run.totals.tokens) : ''))))) : h('p', {class: 'empty'}, 'No run yet.'));
    return r.runs;
  };

  (async () => {
    try {
      await loadFiles();
      const runs = await loadRuns();
      if (!shownRun && runs.length) shownRun = runs[0].id;
      readRun();
    } catch (err) {
      app.alert(`Could not read the evals: ${err.message}`);
    }
  })();
  return {
    // The feed says a run changed: the one shown, read again; a newer one (started in another
    // tab), shown.
    evalRun(r) {
      if (r.id > shownRun && r.status === 'running') shownRun = r.id;
      if (r.id === shownRun) readRun();
      else if (r.status !== 'running') loadRuns().catch(() => {});
    },
  };
}

function signed(n, fmt = fmtCount) {
  if (!n) return '±0';
  return `${n > 0 ? '+' : '−'}${fmt(Math.abs(n))}`;
}

