// Run again and Replay, on a job's page: the same agent on the input (editable) on the live
// model, or the job's model calls answered from its recording, offline; the new job names the one
// it came from. And, on a job made from another, its model calls compared with that job's.
import {h} from './dom.js';
import {diffBlock} from './call.js';

export function mount(root, app, id) {
  const input = h('textarea', {id: 'again-input', name: 'input', rows: 3, 'aria-describedby': 'again-hint'});
  const start = h('button', {type: 'submit', id: 'again-start'}, 'Run again');
  const replay = h('button', {type: 'button', id: 'replay', class: 'quiet', onclick: async () => {
    replay.disabled = true;
    app.clearAlert();
    try {
      const j = await app.call('POST', `jobs/${encodeURIComponent(id)}/replay`, {});
      location.hash = `#/jobs/${j.id}`;
    } catch (err) {
      app.alert(`Not replayed: ${err.message}`);
      replay.disabled = false;
    }
  }}, 'Replay from its recording');
  const form = h('form', {class: 'again', id: 'again-form', onsubmit: async (e) => {
    e.preventDefault();
    start.disabled = true;
    app.clearAlert();
    const job = app.jobs.get(id);
    try {
      const j = await app.call('POST', 'jobs', {agent: job?.agent || '', input: input.value, from: id});
      location.hash = `#/jobs/${j.id}`;
    } catch (err) {
      app.alert(`The job was not started: ${err.message}`);
      start.disabled = false;
    }
  }},
  h('label', {for: 'again-input'}, 'Input'), input,
  h('p', {class: 'hint', id: 'again-hint'}, 'Run again: the same agent on this input (edit it first if you like), on its model as it is now. Replay: the same input, each model call answered from this job\'s recording, offline, then compared with this job (oz0 job replay).'),
  h('div', {class: 'actions'}, start, replay));
  const panel = h('details', {class: 'panel', id: 'run-again'}, h('summary', null, 'Run again or replay'), form);
  let filled = false;
  root.append(panel);
  return {
    // show fills the input once the job is known, and offers Replay for an ended job only.
    show(job) {
      if (!filled && job) {
        input.value = job.input_text;
        filled = true;
      }
      replay.hidden = !job || ['queued', 'running', 'waiting_for_approval'].includes(job.status);
    },
  };
}

// origin shows what a job made from another changed: each model call's request against the
// same call of that job, as the Compare tab does. Drawn again when asked (the job's calls grow).
export function origin(el, app, id) {
  let shown = '';
  return async (job) => {
    if (!job?.from) {
      el.hidden = true;
      return;
    }
    el.hidden = false;
    const key = `${job.status}|${job.usage.model_calls}`;
    if (key === shown) return;
    shown = key;
    const from = job.from.job;
    const head = h('p', null, job.from.how === 'replay' ? 'Replayed from ' : 'Run again from ', h('a', {href: `#/jobs/${from}`, class: 'mono', id: 'origin-link'}, from),
      job.from.how === 'replay' ? ': its model calls answered from that job\'s recording.' : '.');
    el.replaceChildren(h('h2', null, 'Compared with ', h('span', {class: 'mono'}, from)), head);
    try {
      const calls = await app.call('GET', `jobs/${encodeURIComponent(id)}/calls`);
      if (!calls.calls.length) {
        el.append(h('p', {class: 'empty'}, 'No model call yet.'));
        return;
      }
      for (const c of calls.calls) {
        const box = h('div', {class: 'origin-call', dataset: {n: c.n}}, h('h3', null, `Model call ${c.n}`));
        el.append(box);
        try {
          const d = await app.call('GET', `jobs/${encodeURIComponent(id)}/calls/${c.seq}/diff?${new URLSearchParams({job: from, n: c.n})}`);
          box.append(d.same ? h('p', {class: 'same'}, `The same request as call ${c.n} of ${from}.`) : diffBlock(d.lines));
        } catch (err) {
          box.append(h('p', {class: 'empty'}, err.message));
        }
      }
    } catch (err) {
      el.append(h('p', {class: 'empty'}, `Could not read the calls: ${err.message}`));
    }
  };
}

