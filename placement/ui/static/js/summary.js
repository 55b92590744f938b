// Cloud summary: per resource class capacity, used and free (GET
// /overview), how fragmented the free capacity is, how many copies of a
// request still fit (GET /allocation_candidates/capacity), and what is
// wrong (GET /audit's counts).

import { api, query } from './api.js';
import { h, bar, countBar, num, fmt, errorBox, field, input, href, section, table, definitions, loading } from './dom.js';

const KINDS = {
  over_capacity: 'Over capacity',
  split_consumers: 'Consumers split across trees',
  stale_migrations: 'Stale migrations',
  unusable_inventory: 'Unusable inventory',
};
export { KINDS };

function classRow(name, sums) {
  const cell = (key, value) => h('td', { 'data-field': key }, num(value));
  return h('tr', { 'data-class': name },
    h('th', { scope: 'row' }, h('a', { href: href('providers', [], { free: `${name}:1` }) }, name)),
    h('td', { 'data-field': 'usage' }, bar(sums.used, sums.capacity, `${name} used`)),
    cell('capacity', sums.capacity), cell('used', sums.used), cell('free', sums.free),
    cell('over', sums.over), cell('providers', sums.providers),
    cell('providers_with_free', sums.providers_with_free),
    cell('providers_over_capacity', sums.providers_over_capacity),
    cell('max_free', sums.max_free),
    cell('total', sums.total), cell('reserved', sums.reserved));
}

function binLabel(bin) {
  if (bin.max === 0) return 'none';
  return bin.min === bin.max ? fmt(bin.min) : `${fmt(bin.min)}–${fmt(bin.max)}`;
}

// The "none" bin, then every bin from the first with providers on (the
// empty ranges below it would only push the chart down the page).
function shownBins(histogram) {
  const first = histogram.findIndex((bin, index) => index > 0 && bin.providers > 0);
  return first < 0 ? histogram.slice(0, 1) : [histogram[0], ...histogram.slice(first)];
}

function histogram(name, sums) {
  const bins = shownBins(sums.histogram);
  const largest = Math.max(0, ...bins.map((bin) => bin.providers));
  return h('figure', { class: 'histogram', 'data-class': name },
    h('figcaption', {}, `Free ${name} per provider (providers in each range)`),
    h('table', {},
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, `Free ${name}`), h('th', { scope: 'col' }, 'Providers'))),
      h('tbody', {}, bins.map((bin) => h('tr', { 'data-min': bin.min, 'data-max': bin.max },
        h('th', { scope: 'row' }, binLabel(bin)),
        h('td', {}, countBar(bin.providers, largest, `providers with ${binLabel(bin)} free ${name}`)))))));
}

async function auditCounts(box) {
  try {
    const body = await api('/audit?limit=1');
    box.dataset.state = 'ready';
    box.replaceChildren(h('ul', { class: 'counts' }, Object.entries(KINDS).map(([kind, words]) => h('li', { 'data-kind': kind },
      h('a', { href: href('audit', [], { kind }) }, words), ': ', num(body.counts[kind] || 0)))));
  } catch (error) {
    box.dataset.state = 'error';
    box.replaceChildren(errorBox(error, error.status === 403
      ? 'The audit is admin-only by default (policy rule placement:audit); this token may not read it.' : ''));
  }
}

async function copies(box, resources) {
  try {
    const body = await api(`/allocation_candidates/capacity${query({ resources })}`);
    const trees = Object.values(body.roots).filter((count) => count > 0).length;
    box.dataset.state = 'ready';
    box.replaceChildren(h('p', { class: 'copies' },
      h('strong', {}, num(body.total, { 'data-field': 'total' })), ` more copies of ${resources} fit now, in `,
      num(trees, { 'data-field': 'trees' }), ` of ${fmt(Object.keys(body.roots).length)} trees`,
      body.limited_by_sharing ? ' (fewer at once: sharing providers cannot serve every tree’s copies together)' : '', '.'),
      body.bounded.length ? h('p', {}, `Bounded by: ${body.bounded.join(', ')}.`) : null);
  } catch (error) {
    box.dataset.state = 'error';
    box.replaceChildren(errorBox(error));
  }
}

export async function render(root, route, { go }) {
  const flavor = route.params.get('resources') || '';
  root.append(h('h1', {}, 'Cloud summary'));
  // Everything is asked for at once; the summary is drawn as soon as its
  // own answer is in.
  const overview = api('/overview');
  const auditBox = h('div', { 'data-part': 'audit', 'data-state': 'loading' }, loading());
  const copiesBox = h('div', { 'data-part': 'copies', 'data-state': flavor ? 'loading' : 'idle' }, flavor ? loading() : null);
  const pending = [auditCounts(auditBox)];
  if (flavor) pending.push(copies(copiesBox, flavor));
  let body;
  try {
    body = await overview;
  } catch (error) {
    root.append(h('div', { 'data-part': 'summary', 'data-state': 'error' }, errorBox(error)));
  }
  if (body) {
    const classes = Object.entries(body.resource_classes);
    root.append(h('div', { 'data-part': 'summary', 'data-state': 'ready' },
      definitions([
        ['Providers', num(body.providers), 'providers'],
        ['Trees', num(body.trees), 'trees'],
        ['Sharing providers', num(body.sharing_providers), 'sharing_providers'],
        ['Providers over capacity', h('a', { href: href('audit', [], { kind: 'over_capacity' }) }, num(body.providers_over_capacity)), 'providers_over_capacity'],
      ]),
      classes.length ? table('Capacity per resource class: capacity is (total − reserved) × allocation ratio; free never counts below zero, so capacity − used = free − over.',
        ['Class', 'Used of capacity', 'Capacity', 'Used', 'Free', 'Over', 'Providers', 'With free', 'Over capacity', 'Largest free', 'Total', 'Reserved'],
        classes.map(([name, sums]) => classRow(name, sums)), { class: 'classes' })
        : h('p', {}, 'No provider has any inventory yet.'),
      classes.length ? section('How fragmented the free capacity is', { class: 'fragmentation' },
        h('p', {}, 'Providers by how many units of each class they have free, in ranges that double. Many providers with a little free each fit fewer large requests than the free total suggests.'),
        h('div', { class: 'histograms' }, classes.map(([name, sums]) => histogram(name, sums)))) : null));
    performance.mark('summary-drawn');
    document.body.dataset.summaryDrawn = String(performance.now());
  }
  const flavorInput = input('resources', flavor, { placeholder: 'VCPU:4,MEMORY_MB:8192,DISK_GB:80' });
  const form = h('form', { class: 'inline' },
    field('copies-resources', 'Request (resources)', flavorInput, 'A flavour-like request, as GET /allocation_candidates takes it.'),
    h('button', { type: 'submit' }, 'Count copies'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    go('summary', [], { resources: flavorInput.value.trim() });
  });
  root.append(section('How many more fit', { class: 'fit' }, form, copiesBox),
    section('Audit findings', { class: 'findings' }, auditBox));
  await Promise.all(pending);
}
