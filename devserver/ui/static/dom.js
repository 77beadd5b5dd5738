// Small DOM and formatting helpers. No framework: elements are made with h() and lists are kept
// in place by key (syncList), so that an update never takes the focus or an input's text away.

// h makes an element: h('a', {href: '#/jobs', class: 'x', onclick: fn}, 'text', child, …).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

// The SVG namespace: a name of the XML element kind, never fetched.
const SVG = 'http://www.w3.org/2000/svg';

// svg makes an SVG element as h() makes an HTML one (attributes, children, text as text).
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined && v !== false) el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(visible(String(c))));
  }
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(visible(String(c))));
  }
}

// setText replaces an element's children with text, touching the DOM only when it differs.
export function setText(el, text) {
  text = visible(String(text));
  if (el.textContent !== text) el.textContent = text;
}

// visible writes out the format characters (Unicode's Cf: the bidirectional controls, which make
// text show in another order than it is, as U+202E, and the invisible ones, zero-width spaces,
// tags; not the joiners) as oz0 does on a terminal: \u202e, \U000e0041. Text is made of them by h() and
// setText, so what a harness or a model wrote (a tool call's arguments in the inbox) reads as it
// is: CSS cannot do it (unicode-bidi: plaintext still obeys an override inside the text).
export function visible(s) {
  // The joiners (U+200C, U+200D) stay, as on a terminal: other scripts' words and emoji use them.
  return s.replace(/(?![\u200c\u200d])\p{Cf}/gu, (c) => {
    const cp = c.codePointAt(0);
    return cp > 0xffff ? `\\U${cp.toString(16).padStart(8, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  });
}

// syncList makes container's children the elements of items, in order, by key: an existing
// element is updated and kept (moved only when out of place), a new one is made, a gone one is
// removed. Before removing an element that holds the focus, the focus moves to a neighbour.
export function syncList(container, items, key, make, update) {
  const have = new Map();
  for (const el of container.children) have.set(el.dataset.key, el);
  const keep = new Set();
  let prev = null;
  for (const item of items) {
    const k = key(item);
    keep.add(k);
    let el = have.get(k);
    if (!el) {
      el = make(item);
      el.dataset.key = k;
    }
    update(el, item);
    const want = prev ? prev.nextElementSibling : container.firstElementChild;
    if (want !== el) container.insertBefore(el, want);
    prev = el;
  }
  for (const [k, el] of have) {
    if (keep.has(k)) continue;
    if (el.contains(document.activeElement)) {
      const next = el.nextElementSibling || el.previousElementSibling;
      const target = next && next.querySelector('button, a, input, select, textarea, summary');
      (target || document.getElementById('main')).focus();
    }
    el.remove();
  }
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// fmtTime shows a time: hh:mm:ss today, else the date too.
export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const now = new Date();
  const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (d.toDateString() === now.toDateString()) return hms;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${hms}`;
}

// fmtDuration shows milliseconds as a person reads them.
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
  if (ms < 10) return `${Number(ms.toFixed(1))} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60000);
  if (m < 60) return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

// fmtCount groups the digits of a count: 12345 → 12,345.
export function fmtCount(n) {
  return Number(n || 0).toLocaleString('en-US');
}

// sortedJSON is compact JSON with object keys sorted, as oz0 run shows tool arguments.
export function sortedJSON(v) {
  return JSON.stringify(sortKeys(v));
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    const out = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
    return out;
  }
  return v;
}

// text shows a JSON value as a person reads it: a string as itself, anything else as JSON.
export function text(v) {
  return typeof v === 'string' ? v : sortedJSON(v);
}

// jobDuration is how long a job has run: to its end, or to now while it is live.
export function jobDuration(job, now = Date.now()) {
  const start = job.started_at || job.created_at;
  if (!start) return null;
  const end = job.ended_at ? Date.parse(job.ended_at) : now;
  return Math.max(0, end - Date.parse(start));
}

export const LIVE = ['queued', 'running', 'waiting_for_approval'];

export function statusBadge(status) {
  return h('span', {class: `status s-${status}`}, status.replaceAll('_', ' '));
}

export function updateBadge(el, status) {
  el.className = `status s-${status}`;
  setText(el, status.replaceAll('_', ' '));
}
