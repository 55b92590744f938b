// One provider: its whole tree, the sharing providers it reaches, and the
// consumers holding there (GET /overview/providers/{uuid}).

import { api } from './api.js';
import { h, bar, num, fmt, href, providerLink, consumerLink, section, table } from './dom.js';

function inventoryTable(provider) {
  const rows = Object.entries(provider.resources).map(([name, record]) => h('tr', { 'data-class': name },
    h('th', { scope: 'row' }, name),
    h('td', { 'data-field': 'usage' }, bar(record.used, record.capacity, `${name} used`)),
    h('td', { 'data-field': 'total' }, num(record.total)),
    h('td', { 'data-field': 'reserved' }, num(record.reserved)),
    h('td', { 'data-field': 'allocation_ratio' }, num(record.allocation_ratio)),
    h('td', { 'data-field': 'capacity' }, num(record.capacity)),
    h('td', {}, `${fmt(record.min_unit)} / ${fmt(record.max_unit)} / ${fmt(record.step_size)}`)));
  if (!rows.length) return h('p', {}, 'No inventory.');
  return table(`Inventory of ${provider.name}: capacity = (total − reserved) × ratio`,
    ['Class', 'Used of capacity', 'Total', 'Reserved', 'Ratio', 'Capacity', 'Min / max / step'], rows, { class: 'inventory' });
}

function card(provider, current, extra) {
  const titleId = `p-${provider.uuid}`;
  const title = provider.uuid === current
    ? h('span', { 'aria-current': 'true' }, provider.name, ' ', h('span', { class: 'badge' }, 'this provider'))
    : providerLink(provider.uuid, provider.name);
  return h('article', { class: provider.uuid === current ? 'provider current' : 'provider', 'aria-labelledby': titleId, 'data-uuid': provider.uuid },
    h('h3', { id: titleId }, title),
    h('p', { class: 'meta' }, h('code', {}, provider.uuid), ` · generation ${fmt(provider.generation)}`,
      provider.sharing ? h('span', { class: 'badge' }, 'sharing') : null,
      provider.shares_with_trees !== undefined ? ` · shares with ${fmt(provider.shares_with_trees)} trees` : '',
      provider.over_capacity.length ? h('span', { class: 'badge over' }, `over capacity: ${provider.over_capacity.join(', ')}`) : null),
    extra || null,
    inventoryTable(provider),
    h('div', { class: 'columns' },
      h('div', { 'data-field': 'traits' }, h('h4', {}, `Traits (${provider.traits.length})`),
        provider.traits.length ? h('ul', { class: 'tags' }, provider.traits.map((trait) => h('li', {},
          h('a', { href: href('providers', [], { required: trait }) }, trait)))) : h('p', {}, 'None.')),
      h('div', { 'data-field': 'aggregates' }, h('h4', {}, `Aggregates (${provider.aggregates.length})`),
        provider.aggregates.length ? h('ul', { class: 'tags' }, provider.aggregates.map((aggregate) => h('li', {},
          h('a', { href: href('providers', [], { member_of: aggregate }) }, h('code', {}, aggregate))))) : h('p', {}, 'None.'))));
}

// The depth-first list as nested lists.
function tree(providers, current) {
  const top = h('ul', { class: 'tree' });
  const stack = [{ depth: -1, list: top }];
  for (const provider of providers) {
    while (stack[stack.length - 1].depth >= provider.depth) stack.pop();
    const item = h('li', { 'data-depth': provider.depth }, card(provider, current));
    stack[stack.length - 1].list.append(item);
    const children = h('ul', {});
    item.append(children);
    stack.push({ depth: provider.depth, list: children });
  }
  for (const list of top.querySelectorAll('ul')) if (!list.children.length) list.remove();
  return top;
}

function consumersTable(body, names) {
  const rows = body.consumers.map((consumer) => h('tr', { 'data-consumer': consumer.consumer },
    h('th', { scope: 'row' }, consumerLink(consumer.consumer)),
    h('td', { 'data-field': 'consumer_type' }, consumer.consumer_type || '—'),
    h('td', { 'data-field': 'project_id' }, h('code', {}, consumer.project_id || '—')),
    h('td', { 'data-field': 'user_id' }, h('code', {}, consumer.user_id || '—')),
    h('td', { 'data-field': 'resources' }, h('ul', { class: 'plain' }, Object.entries(consumer.resources).map(([uuid, amounts]) => h('li', { 'data-uuid': uuid },
      providerLink(uuid, names[uuid]), ': ',
      Object.entries(amounts).map(([name, amount], index) => [index ? ', ' : '', `${name} `, num(amount, { 'data-class': name })])))))));
  return table(`Consumers holding in this tree: ${fmt(body.consumers.length)} of ${fmt(body.consumer_count)}, largest first`,
    ['Consumer', 'Type', 'Project', 'User', 'Holds'], rows, { class: 'consumers' });
}

export async function render(root, route) {
  const uuid = route.args[0] || '';
  const body = await api(`/overview/providers/${encodeURIComponent(uuid)}`);
  const me = body.providers.find((provider) => provider.uuid === uuid);
  const names = {};
  for (const provider of [...body.providers, ...body.sharing_providers]) names[provider.uuid] = provider.name;
  root.append(
    h('h1', {}, `Provider ${me ? me.name : uuid}`),
    h('p', {}, 'Its whole tree, from the root: ', providerLink(body.root_provider_uuid, names[body.root_provider_uuid]),
      '. ', h('a', { href: href('providers', [], { in_tree: uuid }) }, 'List the tree as providers')),
    section(`Tree (${fmt(body.providers.length)} providers)`, { 'data-part': 'tree' }, tree(body.providers, uuid)),
    section(`Sharing providers it reaches (${fmt(body.sharing_providers.length)})`, { 'data-part': 'sharing' },
      body.sharing_providers.length ? body.sharing_providers.map((provider) => card(provider, uuid,
        h('p', {}, 'Reached through ', provider.via_aggregates.map((aggregate, index) => [index ? ', ' : '',
          h('a', { href: href('providers', [], { member_of: aggregate }) }, h('code', {}, aggregate))])))) : h('p', {}, 'None: no provider with MISC_SHARES_VIA_AGGREGATE shares an aggregate with this tree.')),
    section(`Consumers (${fmt(body.consumer_count)})`, { 'data-part': 'consumers' },
      body.consumer_count ? consumersTable(body, names) : h('p', {}, 'Nobody holds anything in this tree.')));
}
