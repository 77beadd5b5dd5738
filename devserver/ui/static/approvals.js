// The approvals inbox: the tool calls waiting for a person, each approved once, for the rest of
// its job or always, or denied with a reason. The list follows the feed: a call appears when it
// is asked and goes when it is answered (here, in a terminal, or by its job's end).
import {fmtCount, fmtTime, h, setText, sortedJSON, syncList} from './dom.js';

export function mount(root, app) {
  const list = h('div', {class: 'approvals', id: 'approvals'});
  const empty = h('p', {class: 'empty', id: 'approvals-empty'}, 'No tool call waits for a person.');
  root.append(
    h('h1', null, 'Approvals'),
    h('p', {class: 'lede'}, 'Tool calls that wait for a person. The job goes on as soon as one is answered.'),
    list, empty);
  const render = () => {
    const pending = [...app.approvals.values()].sort((a, b) => (a.created_at < b.created_at ? -1 : 1));
    syncPending(list, pending, app);
    empty.hidden = pending.length > 0;
  };
  render();
  return {snapshot: render, approval: render};
}

// syncPending keeps a list of approval cards in step with the pending approvals given.
export function syncPending(container, pending, app) {
  syncList(container, pending, (a) => a.id, (a) => approvalCard(a, app), () => {});
}

let serial = 0;

// approvalCard shows one pending call with its answers.
export function approvalCard(a, app) {
  const n = ++serial;
  const outcome = h('p', {class: 'outcome', role: 'status'});
  const buttons = [];
  const answer = async (path, body, done) => {
    for (const b of buttons) b.disabled = true;
    app.clearAlert();
    try {
      await app.call('POST', `approvals/${a.id}/${path}`, body);
      outcome.textContent = done;
    } catch (err) {
      app.alert(`Could not answer ${a.id}: ${err.message}`);
      for (const b of buttons) b.disabled = false;
    }
  };
  const approve = (scope, label) => {
    const b = h('button', {type: 'button', class: 'approve', dataset: {scope},
      onclick: () => answer('approve', {scope}, `Approved ${{once: 'once', job: 'for the rest of the job', always: 'always'}[scope]}.`)}, label);
    buttons.push(b);
    return b;
  };
  const reason = h('input', {id: `deny-reason-${n}`, name: 'reason', required: true, autocomplete: 'off',
    placeholder: 'why not: the model reads it'});
  const deny = h('button', {type: 'submit', class: 'deny'}, 'Deny');
  buttons.push(deny, reason);
  const target = `${a.harness}.${a.tool}`;
  return h('article', {class: 'approval', dataset: {approval: a.id}, 'aria-labelledby': `approval-title-${n}`},
    h('h2', {id: `approval-title-${n}`}, h('code', null, target)),
    h('p', {class: 'meta'},
      'job ', h('a', {href: `#/jobs/${a.job}`, class: 'mono'}, a.job), ` · ${a.agent} · waiting since ${fmtTime(a.created_at)} · `,
      h('span', {class: 'why'}, a.why)),
    argumentsOf(a, app),
    h('div', {class: 'answers'},
      h('div', {role: 'group', 'aria-label': `Approve ${target}`, class: 'approve-group'},
        approve('once', 'Approve once'), approve('job', 'Approve for this job'), approve('always', 'Approve always')),
      h('form', {class: 'deny-form', onsubmit: (e) => {
        e.preventDefault();
        const why = reason.value.trim();
        if (!why) {
          app.alert('A denial needs a reason: the model reads it.');
          reason.focus();
          return;
        }
        answer('deny', {reason: why}, `Denied: ${why}`);
      }},
      h('label', {for: `deny-reason-${n}`}, 'Reason to deny'), reason, deny)),
    outcome);
}

// argumentsOf shows a call's arguments. The feed clips arguments over 4 KiB (a string of their
// start, arguments_clipped): then a button fetches the approval and shows them whole.
function argumentsOf(a, app) {
  if (!a.arguments_clipped) return h('pre', {class: 'args', 'aria-label': 'Arguments'}, sortedJSON(a.arguments));
  const pre = h('pre', {class: 'args', 'aria-label': 'Arguments'}, a.arguments);
  const button = h('button', {type: 'button', class: 'quiet unfold'}, `Show all (${fmtCount(a.arguments_bytes)} bytes)`);
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      const whole = await app.call('GET', `approvals/${a.id}`);
      setText(pre, sortedJSON(whole.arguments));
      button.remove();
    } catch (err) {
      app.alert(`Could not read ${a.id}: ${err.message}`);
      button.disabled = false;
    }
  });
  return h('div', {class: 'folded'}, pre, button);
}
