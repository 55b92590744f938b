// What if: a changed allocation ratio, total or reserved for one
// provider, every provider of an aggregate or every provider with a
// trait (POST /audit/what_if, which writes nothing): capacity and
// over-capacity before and after, side by side.

import { api } from './api.js';
import { h, bar, num, fmt, errorBox, field, input, providerLink, consumerLink, section, table, loading } from './dom.js';

const TARGETS = {
  provider: ['One provider', 'Provider uuid', 'inventories'],
  aggregate: ['Every provider of an aggregate', 'Aggregate uuid', 'by_aggregate'],
  trait: ['Every provider with a trait', 'Trait', 'by_trait'],
};
const FIELDS = ['allocation_ratio', 'total', 'reserved'];

function requestForm(params, go) {
  const target = h('select', { name: 'target' }, Object.entries(TARGETS).map(([value, [words]]) => h('option', { value, selected: (params.get('target') || 'provider') === value }, words)));
  const key = input('key', params.get('key'), { required: true });
  const keyLabel = h('label', { for: 'wi-key' }, TARGETS[params.get('target') || 'provider'] ? TARGETS[params.get('target') || 'provider'][1] : 'Provider uuid');
  key.id = 'wi-key';
  target.addEventListener('change', () => { keyLabel.textContent = TARGETS[target.value][1]; });
  const resourceClass = input('resource_class', params.get('resource_class') || 'VCPU', { required: true });
  const values = {
    allocation_ratio: input('allocation_ratio', params.get('allocation_ratio'), { inputmode: 'decimal', placeholder: 'unchanged' }),
    total: input('total', params.get('total'), { inputmode: 'numeric', placeholder: 'unchanged' }),
    reserved: input('reserved', params.get('reserved'), { inputmode: 'numeric', placeholder: 'unchanged' }),
  };
  const resources = input('resources', params.get('resources'), { placeholder: 'VCPU:4,MEMORY_MB:8192' });
  const form = h('form', { class: 'filters', 'aria-label': 'Change to try' },
    field('wi-target', 'Change', target),
    h('div', { class: 'field' }, keyLabel, key),
    field('wi-class', 'Resource class', resourceClass),
    field('wi-ratio', 'Allocation ratio', values.allocation_ratio),
    field('wi-total', 'Total', values.total),
    field('wi-reserved', 'Reserved', values.reserved),
    field('wi-resources', 'Count copies of', resources, 'Optional: a request, to count how many copies fit before and after.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Try it (writes nothing)')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = { target: target.value, key: key.value.trim(), resource_class: resourceClass.value.trim() };
    for (const name of FIELDS) next[name] = values[name].value.trim();
    next.resources = resources.value.trim();
    go('what-if', [], next);
  });
  return form;
}

// The body POST /audit/what_if takes, from the URL's parameters.
function body(params) {
  const change = {};
  for (const name of FIELDS) {
    const value = params.get(name);
    if (value) change[name] = name === 'allocation_ratio' ? Number(value) : Number.parseInt(value, 10);
  }
  const [, , member] = TARGETS[params.get('target') || 'provider'] || TARGETS.provider;
  const request = { [member]: { [params.get('key')]: { [params.get('resource_class')]: change } } };
  if (params.get('resources')) request.resources = params.get('resources');
  return request;
}

function rows(answer) {
  return answer.providers.map((row) => h('tr', { 'data-uuid': row.resource_provider.uuid, 'data-class': row.resource_class },
    h('th', { scope: 'row' }, providerLink(row.resource_provider.uuid, row.resource_provider.name)),
    h('td', {}, row.resource_class),
    h('td', { 'data-field': 'before' }, bar(row.used, row.capacity_before, `${row.resource_class} used before`)),
    h('td', { 'data-field': 'after' }, bar(row.used, row.capacity_after, `${row.resource_class} used after`)),
    h('td', { 'data-field': 'over_before' }, num(row.over_before)),
    h('td', { 'data-field': 'over_after' }, num(row.over_after)),
    h('td', {}, row.refused ? h('strong', {}, row.refused) : row.reason,
      row.consumers.length ? h('ul', { class: 'plain' }, row.consumers.map((consumer) => h('li', {}, consumerLink(consumer)))) : null)));
}

export async function render(root, route, { go }) {
  const params = route.params;
  root.append(h('h1', {}, 'What if'),
    h('p', {}, 'Try an inventory change before making it: capacity and over-capacity before and after, side by side. Nothing is written. Admin-only by default (policy rule placement:audit:what_if).'),
    requestForm(params, go));
  if (!params.get('key') || !params.get('resource_class')) return;
  const results = h('div', { 'data-part': 'what-if', 'data-state': 'loading' }, loading());
  root.append(section('Before and after', {}, results));
  let answer;
  try {
    answer = await api('/audit/what_if', { method: 'POST', body: body(params) });
  } catch (error) {
    results.dataset.state = 'error';
    results.replaceChildren(errorBox(error, error.status === 403
      ? 'Refused: the what-if is admin-only unless policy says otherwise.' : ''));
    return;
  }
  const before = answer.providers.reduce((sum, row) => sum + row.capacity_before, 0);
  const after = answer.providers.reduce((sum, row) => sum + row.capacity_after, 0);
  const used = answer.providers.reduce((sum, row) => sum + row.used, 0);
  const overBefore = answer.providers.filter((row) => row.over_before > 0).length;
  const overAfter = answer.providers.filter((row) => row.over_after > 0).length;
  results.dataset.state = 'ready';
  results.replaceChildren(
    h('div', { class: 'side-by-side' },
      h('figure', { 'data-field': 'total-before' }, h('figcaption', {}, 'Before'), bar(used, before, 'used of capacity before'),
        h('p', {}, num(overBefore, { 'data-field': 'over-before' }), ' provider classes over capacity')),
      h('figure', { 'data-field': 'total-after' }, h('figcaption', {}, 'After'), bar(used, after, 'used of capacity after'),
        h('p', {}, num(overAfter, { 'data-field': 'over-after' }), ' provider classes over capacity'))),
    answer.capacity ? h('p', { 'data-field': 'copies' }, `Copies of ${params.get('resources')} that fit: `,
      num(answer.capacity.before, { 'data-field': 'copies-before' }), ' before, ',
      num(answer.capacity.after, { 'data-field': 'copies-after' }), ' after.') : null,
    answer.providers.length ? table(`Each provider and class changed (${fmt(answer.providers.length)}), most over first`,
      ['Provider', 'Class', 'Before: used of capacity', 'After: used of capacity', 'Over before', 'Over after', 'Why; who holds the excess'],
      rows(answer), { class: 'what-if' }) : h('p', {}, 'The change touches no provider.'));
}
