// Save as eval case: a job of the page made into a case of its plugin's eval files, shown as the
// YAML that will be written (the server proposes it through oz0 eval's engine, as oz0 eval add
// does), then written on Save.
import {h, setText} from './dom.js';

// mount puts the panel in root for job id; it proposes when opened.
export function mount(root, app, id) {
  const NEW = '+new'; // no eval file's name: they begin with a letter or digit
  const file = h('select', {id: 'case-file', name: 'file'});
  const newFile = h('input', {id: 'case-new-file', name: 'new-file', class: 'mono', placeholder: 'cases.yaml', hidden: true, 'aria-label': 'The new eval file\'s name, in evals/'});
  const name = h('input', {id: 'case-name', name: 'name', class: 'mono', 'aria-describedby': 'case-name-hint'});
  const where = h('p', {class: 'hint', id: 'case-where', role: 'status'});
  const yaml = h('pre', {class: 'yaml', id: 'case-yaml', 'aria-label': 'The eval file as it will be written', tabindex: '0'});
  const notes = h('ul', {class: 'notes', id: 'case-notes'});
  const save = h('button', {type: 'submit', id: 'case-save', disabled: true}, 'Save');
  const done = h('p', {class: 'done', id: 'case-done', role: 'status'});
  let proposed = null;
  let loaded = false;

  const fileName = () => (file.value === NEW ? newFile.value.trim() : file.value);

  const propose = async (write) => {
    save.disabled = true;
    app.clearAlert();
    try {
      const c = await app.call('POST', `jobs/${encodeURIComponent(id)}/eval-case`, {file: fileName(), name: name.value.trim(), write});
      proposed = c;
      if (!name.value.trim()) name.value = c.name;
      if (file.value !== NEW && !file.value) file.value = c.file;
      showYAML(c);
      // The case's lines in view, in the file's box (the page stays where it is).
      const mark = yaml.querySelector('mark');
      if (mark) yaml.scrollTop = Math.max(0, mark.offsetTop - 60);
      setText(where, `${c.existing ? 'Added at the end of' : 'A new file:'} ${c.plugin}/${c.path}, its recording ${c.recording}.`);
      notes.replaceChildren(...(c.notes || []).map((n) => h('li', null, n)));
      if (write) {
        done.replaceChildren(`Written: ${c.path} has case ${c.name}. `, h('code', null, `oz0 eval ${c.path}`), ' runs it; ',
          h('a', {href: `#/evals?file=${encodeURIComponent(c.file)}`}, 'see it on the Evals page'), '.');
        await loadFiles(c.file);
      } else {
        save.disabled = false;
        done.replaceChildren();
      }
    } catch (err) {
      proposed = null;
      yaml.replaceChildren();
      setText(where, '');
      app.alert(`${write ? 'The case was not written' : 'No case'}: ${err.message}`);
    }
  };

  // The YAML whole, the case's own lines marked.
  const showYAML = (c) => {
    const at = c.yaml.lastIndexOf(c.case_yaml);
    if (at < 0) {
      yaml.replaceChildren(c.yaml);
      return;
    }
    yaml.replaceChildren(c.yaml.slice(0, at), h('mark', {class: 'added'}, c.case_yaml), c.yaml.slice(at + c.case_yaml.length));
  };

  const loadFiles = async (keep) => {
    const r = await app.call('GET', 'evals');
    const job = app.jobs.get(id);
    const mine = r.files.filter((f) => !job || (f.agent === job.agent && (!job.plugin || f.plugin === job.plugin)));
    file.replaceChildren(
      h('option', {value: ''}, 'The agent\'s eval file (or a new one)'),
      ...mine.map((f) => h('option', {value: f.file}, `${f.path} (${f.cases.length} cases)`)),
      h('option', {value: NEW}, 'A new file…'));
    if (keep && mine.some((f) => f.file === keep)) file.value = keep;
  };

  file.addEventListener('change', () => {
    newFile.hidden = file.value !== NEW;
    if (!newFile.hidden) newFile.focus();
    else propose(false);
  });
  newFile.addEventListener('change', () => propose(false));
  name.addEventListener('change', () => propose(false));

  const form = h('form', {class: 'eval-case', id: 'case-form', onsubmit: (e) => {
    e.preventDefault();
    if (proposed) propose(true);
  }},
  h('div', {class: 'row'},
    h('label', {for: 'case-file'}, 'Eval file'), file, newFile,
    h('label', {for: 'case-name'}, 'Case'), name,
    h('button', {type: 'button', class: 'quiet', id: 'case-preview', onclick: () => propose(false)}, 'Preview'), save),
  h('p', {class: 'hint', id: 'case-name-hint'}, 'The case replays this job\'s model calls offline (oz0 eval), and asserts the tools it called with their arguments and its result. Edit the file after, as any eval file.'),
  where, yaml, notes, done);

  const panel = h('details', {class: 'panel', id: 'eval-case'}, h('summary', null, 'Save as eval case'), form);
  panel.addEventListener('toggle', async () => {
    if (!panel.open || loaded) return;
    loaded = true;
    try {
      await loadFiles();
    } catch (err) {
      app.alert(`Could not read the eval files: ${err.message}`);
    }
    propose(false);
  });
  root.append(panel);
}
