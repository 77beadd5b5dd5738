// A job: its live stream as it happens (the lines oz0 run shows, as the server renders them), the
// calls waiting for a person, its outcome, the trace as a timeline and its usage by model record.
// The feed follows the job from its first event; after a break it resumes after the last one.
import {syncPending} from './approvals.js';
import {LIVE, fmtDuration, fmtTime, h, jobDuration, setText, statusBadge, text, updateBadge} from './dom.js';
import * as call from './call.js';
import * as again from './again.js';
import * as agents from './agents.js';
import * as evalcase from './evalcase.js';
import * as timeline from './timeline.js';
import {reloader, usageTable} from './usage.js';
import {callsChart} from './charts.js';

export function mount(root, app, {id}) {
  const badge = statusBadge('queued');
  const title = h('h1', null, h('span', {class: 'agent'}, 'Job'), ' ', badge);
  const facts = h('dl', {class: 'facts'});
  const command = `oz0 job trace ${id}`;
  const copyNote = h('span', {class: 'copied', role: 'status'});
  const commandField = h('input', {id: 'trace-command', class: 'mono', readonly: true, value: command, size: command.length, 'aria-label': 'The command that prints the trace'});
  const copy = h('button', {type: 'button', id: 'copy-trace', onclick: async () => {
    try {
      await navigator.clipboard.writeText(command);
      copyNote.textContent = 'Copied.';
    } catch {
      commandField.select(); // no clipboard: selected, for Ctrl-C
      copyNote.textContent = 'Selected: press Ctrl-C to copy.';
    }
  }}, 'Copy');
  const cancel = h('button', {type: 'button', id: 'cancel-job', class: 'danger', hidden: true, onclick: async () => {
    cancel.disabled = true;
    try {
      await app.call('POST', `jobs/${id}/cancel`);
    } catch (err) {
      app.alert(`Could not cancel ${id}: ${err.message}`);
      cancel.disabled = false;
    }
  }}, 'Cancel the job');
  const waiting = h('p', {class: 'waiting', id: 'waiting', role: 'status'});
  const pending = h('div', {class: 'approvals', id: 'job-approvals'});
  const stream = h('pre', {class: 'stream', id: 'stream', role: 'log', 'aria-label': 'Live stream', tabindex: '0'});
  const outcome = h('div', {class: 'outcome', id: 'outcome', role: 'status'});
  const trace = h('div', {class: 'timeline', id: 'timeline'});
  const actions = h('div', {class: 'job-actions', id: 'job-actions'});
  const runAgain = again.mount(actions, app, id);
  evalcase.mount(actions, app, id);
  const picture = h('div', {class: 'drawing', id: 'job-drawing'});
  const originBox = h('section', {class: 'origin', id: 'origin', hidden: true});
  const showOrigin = again.origin(originBox, app, id);
  const calls = callsChart();
  const usage = usageTable('job-usage', 'Model calls of this job by model record', []);

  root.append(
    h('p', {class: 'crumbs'}, h('a', {href: '#/jobs'}, 'Jobs'), ' / ', h('span', {class: 'mono'}, id)),
    title, facts,
    h('div', {class: 'actions'}, h('label', {for: 'trace-command'}, 'Trace'), commandField, copy, copyNote, cancel),
    waiting, pending,
    h('h2', null, 'Live stream'), stream, outcome,
    actions,
    originBox,
    h('h2', null, 'Timeline'), trace,
    h('h2', null, 'What it called'), picture,
    h('h2', null, 'Usage'), calls.el, usage.table);

  let job = app.jobs.get(id) || null;
  const events = [];
  let lastSeq = 0;
  let drawing = false;

  const showJob = () => {
    if (!job) return;
    setText(title.firstChild, job.agent);
    updateBadge(badge, job.status);
    const live = LIVE.includes(job.status);
    cancel.hidden = !live;
    facts.replaceChildren(
      h('dt', null, 'Job'), h('dd', {class: 'mono'}, job.id),
      h('dt', null, 'Model'), h('dd', null, `${job.model_record || '—'}${job.model_name ? ` (${job.model_name})` : ''}`),
      h('dt', null, 'Started'), h('dd', null, fmtTime(job.started_at || job.created_at)),
      h('dt', null, 'Duration'), h('dd', {id: 'job-duration'}, fmtDuration(jobDuration(job))),
      h('dt', null, 'Input'), h('dd', {class: 'input'}, job.input_text),
      ...(job.from ? [h('dt', null, 'From'), h('dd', {id: 'job-from'}, h('a', {href: `#/jobs/${job.from.job}`, class: 'mono'}, job.from.job), ` (${job.from.how})`)] : []));
    runAgain.show(job);
    if (!live) showOrigin(job);
    if (job.status === 'succeeded') {
      outcome.className = 'outcome ok';
      outcome.replaceChildren(h('strong', null, 'Result'), h('pre', {id: 'result'}, text(job.output)));
    } else if (!live) {
      outcome.className = 'outcome failed';
      outcome.replaceChildren(h('strong', null, `Job ${job.status.replaceAll('_', ' ')}`),
        h('pre', {id: 'failure'}, job.reason || job.status));
      // The traceback its harness failed with, whole, as it printed it: one block.
      if (job.traceback?.length) {
        outcome.append(h('pre', {id: 'traceback', class: 'traceback', 'aria-label': 'Traceback'}, job.traceback.join('\n')));
      }
    } else {
      outcome.className = 'outcome';
      outcome.replaceChildren();
    }
    // What oz0 run says on stderr while the job waits (not in the stream: it is not the job's output).
    setText(waiting, job.status === 'waiting_for_approval' ? `Waiting for approval: ${job.reason}` : '');
    const mine = [...app.approvals.values()].filter((a) => a.job === id).sort((a, b) => (a.created_at < b.created_at ? -1 : 1));
    syncPending(pending, mine, app);
  };

  const showDuration = () => {
    const el = document.getElementById('job-duration');
    if (el) setText(el, fmtDuration(jobDuration(job)));
  };

  const draw = () => {
    if (drawing) return;
    drawing = true;
    requestAnimationFrame(() => {
      drawing = false;
      const agent = job && app.info.agents.find((a) => a.name === job.agent);
      if (agent) picture.replaceChildren(agents.draw(agent, agents.litOf(events, agent.name)));
      // A bar a model call, from their model_call events (the meter), numbered as GET …/calls does.
      calls.fill(events.filter((e) => e.type === 'model_call').map((e, i) => ({n: i + 1, meter: e.data})));
      timeline.render(trace, timeline.spans(events), job && LIVE.includes(job.status),
        (el, seq, calls) => call.mount(el, app, id, seq, calls, job?.from?.job));
    });
  };

  const loadUsage = reloader(async () => {
    const r = await app.call('GET', `usage?by=job&job=${encodeURIComponent(id)}`);
    usage.fill(r.usage, () => []);
  }, app);

  // The record, when the feed's snapshot does not have it (an older job).
  if (!job) {
    app.call('GET', `jobs/${encodeURIComponent(id)}`).then((j) => {
      job = app.jobs.get(id) || j;
      showJob();
      draw();
    }).catch((err) => {
      root.replaceChildren(h('h1', null, 'No such job'), h('p', null, err.message), h('p', null, h('a', {href: '#/jobs'}, 'All jobs')));
    });
  }
  showJob();
  loadUsage();
  // While the job is live its duration and its open bars grow: redrawn each second from what is
  // held (no request).
  const tick = setInterval(() => {
    if (job && LIVE.includes(job.status)) {
      showDuration();
      draw();
    }
  }, 1000);

  return {
    unmount: () => clearInterval(tick),
    feed: {job: id},
    snapshot() {
      job = app.jobs.get(id) || job;
      showJob();
      draw(); // the drawing needs the job's agent, which the snapshot may be first to give
    },
    job(j) {
      if (j.id !== id) return;
      const calls = job?.usage.model_calls;
      job = j;
      showJob();
      if (j.usage.model_calls !== calls || !LIVE.includes(j.status)) loadUsage();
      draw();
    },
    approval: showJob,
    event(d) {
      const ev = d.event;
      if (ev.seq <= lastSeq) return; // sent again after a reconnection
      lastSeq = ev.seq;
      events.push(ev);
      if (d.text) stream.append(d.text);
      draw();
    },
  };
}
