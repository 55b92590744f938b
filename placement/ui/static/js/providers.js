// Providers: a filtered list, a page at a time (GET /overview/providers),
// never every provider in one answer.

import { api, query } from './api.js';
import { h, bar, num, fmt, field, input, href, providerLink, table } from './dom.js';

const FILTERS = ['prefix', 'required', 'member_of', 'in_tree', 'free'];
const SIZES = ['25', '50', '100', '250'];

export function resourceBars(resources) {
  return h('ul', { class: 'resources' }, Object.entries(resources).map(([name, record]) => h('li', { 'data-class': name },
    h('span', { class: 'class-name' }, name), ' ',
    bar(record.used, record.capacity, `${name} used`))));
}

function filterForm(params, go) {
  const controls = {
    prefix: input('prefix', params.get('prefix'), { placeholder: 'cn1 or 3f2a…' }),
    required: input('required', params.get('required'), { placeholder: 'HW_CPU_X86_AVX2,!CUSTOM_MAINT' }),
    member_of: input('member_of', params.get('member_of'), { placeholder: 'aggregate uuid, or in:uuid1,uuid2' }),
    in_tree: input('in_tree', params.get('in_tree'), { placeholder: 'a provider uuid' }),
    free: input('free', params.get('free'), { placeholder: 'VCPU:4,MEMORY_MB:8192' }),
  };
  const limit = h('select', { name: 'limit' }, SIZES.map((size) => h('option', { value: size, selected: (params.get('limit') || '50') === size }, size)));
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter providers' },
    field('f-prefix', 'Name or uuid starts with', controls.prefix),
    field('f-required', 'Traits', controls.required, 'Required traits, comma-separated; !TRAIT forbids one, in:A,B wants either.'),
    field('f-member_of', 'Aggregate', controls.member_of),
    field('f-in_tree', 'In the tree of', controls.in_tree),
    field('f-free', 'At least free', controls.free, 'CLASS:N, comma-separated: at least N units free (capacity less usage).'),
    field('f-limit', 'Per page', limit),
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, 'Filter'),
      h('a', { href: href('providers') }, 'Clear')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = {};
    for (const name of FILTERS) next[name] = controls[name].value.trim();
    next.limit = limit.value === '50' ? '' : limit.value;
    go('providers', [], next);
  });
  return form;
}

function row(provider) {
  const isRoot = provider.root_provider_uuid === provider.uuid;
  return h('tr', { 'data-uuid': provider.uuid },
    h('th', { scope: 'row' }, providerLink(provider.uuid, provider.name)),
    h('td', {}, h('code', {}, provider.uuid)),
    h('td', {}, isRoot ? 'root' : providerLink(provider.root_provider_uuid, 'its tree')),
    h('td', { 'data-field': 'resources' }, resourceBars(provider.resources)),
    h('td', {}, [provider.sharing ? h('span', { class: 'badge' }, 'sharing') : null,
      provider.over_capacity.length ? h('span', { class: 'badge over' }, `over capacity: ${provider.over_capacity.join(', ')}`) : null]));
}

export async function render(root, route, { go }) {
  const params = route.params;
  root.append(h('h1', {}, 'Providers'), filterForm(params, go));
  const asked = {};
  for (const name of [...FILTERS, 'limit', 'marker']) asked[name] = params.get(name);
  const body = await api(`/overview/providers${query(asked)}`);
  const shown = body.resource_providers.length;
  const paging = h('nav', { class: 'paging', 'aria-label': 'Pages' },
    params.get('marker') ? h('a', { href: href('providers', [], Object.fromEntries([...params].filter(([name]) => name !== 'marker'))) }, 'First page') : null,
    body.next_marker ? h('a', { href: href('providers', [], { ...Object.fromEntries(params), marker: body.next_marker }), rel: 'next' }, 'Next page') : null);
  root.append(
    h('p', { class: 'status', 'data-part': 'count' }, 'Showing ', num(shown, { 'data-field': 'shown' }), ' of ',
      num(body.total, { 'data-field': 'total' }), ` matching providers${params.get('marker') ? ' (a later page)' : ''}.`),
    shown ? table(`Providers, by name (${fmt(shown)} on this page)`, ['Name', 'UUID', 'Tree', 'Used of capacity', 'Notes'],
      body.resource_providers.map(row), { class: 'providers' }) : h('p', {}, 'No provider matches.'),
    paging);
}
