// Run: start a job of an agent with an input, then follow it on its page.
import {h} from './dom.js';

export function mount(root, app) {
  const agents = app.info.agents;
  const hint = h('p', {class: 'hint', id: 'run-agent-hint'});
  const select = h('select', {id: 'run-agent', name: 'agent', required: true, 'aria-describedby': 'run-agent-hint'},
    agents.map((a) => h('option', {value: a.name}, a.plugin && a.plugin !== a.name ? `${a.name} (${a.plugin})` : a.name)));
  const input = h('textarea', {id: 'run-input', name: 'input', rows: 6, required: true, 'aria-describedby': 'run-input-hint'});
  const inputHint = h('p', {class: 'hint', id: 'run-input-hint'});
  const start = h('button', {type: 'submit', id: 'run-start'}, 'Start');
  const describe = () => {
    const a = agents.find((x) => x.name === select.value);
    if (!a) return;
    hint.textContent = `harness ${a.harness} · model record ${a.record}${a.model ? ` (${a.model})` : ''}`;
    inputHint.textContent = a.input === 'json' ? 'The agent takes JSON: the input must be a JSON value that fits its input schema.' : 'The agent takes text.';
  };
  select.addEventListener('change', describe);
  describe();
  const form = h('form', {class: 'run', id: 'run-form', onsubmit: async (e) => {
    e.preventDefault();
    start.disabled = true;
    app.clearAlert();
    try {
      const job = await app.call('POST', 'jobs', {agent: select.value, input: input.value});
      location.hash = `#/jobs/${job.id}`;
    } catch (err) {
      app.alert(`The job was not started: ${err.message}`);
      start.disabled = false;
    }
  }},
  h('label', {for: 'run-agent'}, 'Agent'), select, hint,
  h('label', {for: 'run-input'}, 'Input'), input, inputHint,
  h('div', {class: 'actions'}, start));
  root.append(h('h1', null, 'Run a job'), agents.length ? form : h('p', {class: 'empty'}, 'oz0 dev serves no agent.'));
  return {};
}
