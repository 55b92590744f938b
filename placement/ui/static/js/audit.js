// The audit (GET /audit): findings by kind, linked to their providers and
// consumers.  Admin-only by default, and said so.

import { api, query } from './api.js';
import { h, num, fmt, errorBox, field, href, providerLink, consumerLink, section, table } from './dom.js';
import { KINDS } from './summary.js';

const LIMIT = 200;

function providers(uuids) {
  return uuids.map((uuid, index) => [index ? ', ' : '', providerLink(uuid)]);
}

function holders(finding) {
  return h('ul', { class: 'plain' }, finding.consumers.map((consumer) => h('li', {},
    consumerLink(consumer), ' ', num(finding.used_by_consumer[consumer]))));
}

const TABLES = {
  over_capacity: (items) => table('Allocations over capacity, largest excess first',
    ['Provider', 'Class', 'Capacity', 'Used', 'Over', 'Held by (largest first)', 'Why'],
    items.map((item) => h('tr', { 'data-uuid': item.resource_provider.uuid, 'data-class': item.resource_class },
      h('th', { scope: 'row' }, providerLink(item.resource_provider.uuid, item.resource_provider.name)),
      h('td', {}, item.resource_class),
      h('td', { 'data-field': 'capacity' }, num(item.capacity)),
      h('td', { 'data-field': 'used' }, num(item.used)),
      h('td', { 'data-field': 'over' }, num(item.over)),
      h('td', {}, holders(item)),
      h('td', {}, item.reason)))),
  split_consumers: (items) => table('Consumers holding in trees no sharing relation explains',
    ['Consumer', 'Type', 'Project', 'User', 'Trees (roots)', 'Why'],
    items.map((item) => h('tr', { 'data-consumer': item.consumer },
      h('th', { scope: 'row' }, consumerLink(item.consumer)),
      h('td', {}, item.consumer_type || '—'),
      h('td', {}, h('code', {}, item.project_id || '—')),
      h('td', {}, h('code', {}, item.user_id || '—')),
      h('td', { 'data-field': 'roots' }, providers(item.roots)),
      h('td', {}, item.reason)))),
  stale_migrations: (items) => table('Migrations whose allocations are old, oldest first',
    ['Consumer', 'Project', 'Written', 'Age', 'Providers', 'Why'],
    items.map((item) => h('tr', { 'data-consumer': item.consumer },
      h('th', { scope: 'row' }, consumerLink(item.consumer)),
      h('td', {}, h('code', {}, item.project_id || '—')),
      h('td', {}, item.written_at),
      h('td', { 'data-field': 'age_seconds' }, num(item.age_seconds), ' s'),
      h('td', {}, providers(item.resource_providers)),
      h('td', {}, item.reason)))),
  unusable_inventory: (items) => table('Inventories nothing can be allocated from',
    ['Provider', 'Class', 'Why'],
    items.map((item) => h('tr', { 'data-uuid': item.resource_provider.uuid, 'data-class': item.resource_class },
      h('th', { scope: 'row' }, providerLink(item.resource_provider.uuid, item.resource_provider.name)),
      h('td', {}, item.resource_class),
      h('td', {}, item.reason)))),
};

export async function render(root, route, { go }) {
  const kind = route.params.get('kind') || '';
  const choice = h('select', { name: 'kind' }, h('option', { value: '' }, 'every kind'),
    Object.entries(KINDS).map(([value, words]) => h('option', { value, selected: value === kind }, words)));
  const form = h('form', { class: 'inline' }, field('audit-kind', 'Show', choice), h('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    go('audit', [], { kind: choice.value });
  });
  root.append(h('h1', {}, 'Audit'),
    h('p', { class: 'note' }, 'The audit is admin-only by default: it describes every project’s consumers. ',
      'Policy rules placement:audit and placement:audit:what_if (rule:admin_api) decide who may read it. ',
      h('a', { href: href('what-if') }, 'Try a what-if'), '.'),
    form);
  let body;
  try {
    body = await api(`/audit${query({ kind, limit: LIMIT })}`);
  } catch (error) {
    root.append(h('div', { 'data-part': 'audit', 'data-state': 'error' }, errorBox(error, error.status === 403
      ? 'Refused: the audit is admin-only unless policy says otherwise, and this token may not read it.' : '')));
    return;
  }
  const kinds = Object.keys(KINDS).filter((name) => name in body.counts);
  root.append(h('div', { 'data-part': 'audit', 'data-state': 'ready' },
    h('ul', { class: 'counts' }, kinds.map((name) => h('li', { 'data-kind': name },
      h('a', { href: href('audit', [], { kind: name }) }, KINDS[name]), ': ', num(body.counts[name])))),
    kinds.map((name) => section(`${KINDS[name]} (${fmt(body.counts[name])})`, { 'data-kind': name },
      body[name].length ? TABLES[name](body[name]) : h('p', {}, 'None.'),
      body.counts[name] > body[name].length ? h('p', { class: 'hint' }, `The first ${fmt(body[name].length)} are shown.`) : null))));
}
