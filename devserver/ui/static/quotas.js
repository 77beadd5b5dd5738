// The tenant's quotas on the Usage page: each quota's use against its limit as a bar (a <meter>,
// which needs no style of its own: the CSP allows none inline), and the kill switches thrown.
// Read with the usage (GET api/v1/tenant); set with `oz0 tenant quota set`.
import {fmtCount, h, setText, syncList} from './dom.js';

export function quotaSection(app) {
  const kills = h('ul', {id: 'tenant-kills', class: 'alert-list'});
  const list = h('ul', {id: 'quotas', class: 'quotas'});
  const empty = h('p', {class: 'empty', id: 'quotas-empty'}, 'No quotas: oz0 tenant quota set NAME LIMIT sets one.');
  const el = h('section', {'aria-labelledby': 'quotas-title'},
    h('h2', {id: 'quotas-title'}, 'Quotas'), kills, list, empty);
  const load = async () => {
    const t = await app.call('GET', 'tenant');
    syncList(kills, t.kills, (k) => k.record || '', (k) => h('li', {class: 'alert'}), (li, k) => {
      const whose = k.record ? `record ${k.record}` : 'the tenant';
      const flag = k.record ? ` --record ${k.record}` : '';
      setText(li, `Every model call of ${whose} is stopped since ${new Date(k.at).toLocaleString()} (oz0 tenant kill${flag}); oz0 tenant resume${flag} lets them through.`);
    });
    syncList(list, t.quotas, label, (q) => h('li', {class: 'quota'},
      h('span', {class: 'quota-name mono', id: `quota-${label(q)}`}),
      h('meter', {min: '0', 'aria-labelledby': `quota-${label(q)}`}),
      h('span', {class: 'quota-use'}), h('span', {class: 'quota-resets'})), (li, q) => {
      const [name, bar, use, resets] = li.children;
      setText(name, label(q));
      // A bar past its limit shows full; the text says by how much.
      bar.max = q.limit;
      bar.value = Math.min(q.used, q.limit);
      bar.high = q.limit * 0.8;
      bar.optimum = 0;
      li.classList.toggle('reached', q.used + (q.in_flight || 0) >= q.limit);
      const flight = q.in_flight ? ` (+${amount(q, q.in_flight)} in flight)` : '';
      setText(use, `${amount(q, q.used)} of ${amount(q, q.limit)}${flight}`);
      setText(resets, q.resets ? `resets ${new Date(q.resets).toLocaleString()}` : '');
    });
    empty.hidden = t.quotas.length > 0;
  };
  return {el, load};
}

// label names a quota as oz0 does: tenant.tokens_per_day, record.anthropic.tokens_per_day.
const label = (q) => (q.record ? `record.${q.record}.` : 'tenant.') + q.name;

// Dollars to a hundredth of a cent, without trailing zeros: $0.0126, $20.
const amount = (q, v) => (q.name.startsWith('cost_usd') ? `$${Number(v.toFixed(4))}` : fmtCount(Math.ceil(v)));
