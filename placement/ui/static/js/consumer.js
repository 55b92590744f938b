// One consumer's allocations (GET /allocations/{uuid}).

import { api } from './api.js';
import { h, num, fmt, providerLink, definitions, table } from './dom.js';

export async function render(root, route) {
  const uuid = route.args[0] || '';
  const body = await api(`/allocations/${encodeURIComponent(uuid)}`);
  const entries = Object.entries(body.allocations || {});
  root.append(h('h1', {}, 'Consumer ', h('code', {}, uuid)));
  if (!entries.length) {
    root.append(h('p', {}, 'This consumer holds nothing.'));
    return;
  }
  root.append(
    definitions([
      ['Type', body.consumer_type || '—', 'consumer_type'],
      ['Project', h('code', {}, body.project_id || '—'), 'project_id'],
      ['User', h('code', {}, body.user_id || '—'), 'user_id'],
      ['Generation', fmt(body.consumer_generation), 'consumer_generation'],
      ['Providers', fmt(entries.length), 'providers'],
    ]),
    table('What it holds, by provider', ['Provider', 'Resources'],
      entries.map(([provider, held]) => h('tr', { 'data-uuid': provider },
        h('th', { scope: 'row' }, providerLink(provider)),
        h('td', {}, Object.entries(held.resources).map(([name, amount], index) => [index ? ', ' : '', `${name} `, num(amount, { 'data-class': name })])))),
      { class: 'allocations' }));
}
