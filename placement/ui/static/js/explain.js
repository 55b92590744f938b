// Why no candidates: a request's form, explain's funnel per group
// (GET /allocation_candidates/explain) and how many copies fit
// (GET /allocation_candidates/capacity).  The URL carries the request in
// the very query string both endpoints take.

import { api } from './api.js';
import { h, bar, num, fmt, errorBox, field, input, providerLink, section, table, loading } from './dom.js';

const GROUP_KEY = /^(resources|required|member_of)([A-Za-z0-9_-]*)$/;
const WORDS = {
  resource_class: 'has inventory of each class',
  capacity: 'has room for each amount',
  required_traits: 'has the required traits',
  any_of_traits: 'has one of the traits',
  forbidden_traits: 'lacks the forbidden traits',
  member_of: 'is in the aggregates',
  forbidden_aggregates: 'is in no forbidden aggregate',
  in_tree: 'is in the tree',
  sharing: 'sharing providers join trees',
  root_required: 'the root has the root traits',
  together: 'the groups fit together',
  group_policy_isolate: 'groups on different providers (isolate)',
  same_subtree: 'groups in one subtree',
  single_provider_per_tree: 'one provider per tree',
  limit: 'the answer’s limit',
};

// {suffix: {resources, required, forbidden, member_of}} of the query.
// A Map: kept in the URL's order (an object would put "1" before "").
function groupsOf(params) {
  const empty = () => ({ resources: '', required: '', forbidden: '', member_of: '' });
  const groups = new Map([['', empty()]]);
  for (const [name, value] of params) {
    const match = GROUP_KEY.exec(name);
    if (!match) continue;
    if (!groups.has(match[2])) groups.set(match[2], empty());
    const group = groups.get(match[2]);
    if (match[1] === 'required') {
      if (value.startsWith('in:')) group.required = value;
      else {
        const names = value.split(',').map((item) => item.trim()).filter(Boolean);
        const join = (before, more) => [before, ...more].filter(Boolean).join(',');
        group.required = join(group.required, names.filter((item) => !item.startsWith('!')));
        group.forbidden = join(group.forbidden, names.filter((item) => item.startsWith('!')).map((item) => item.replace(/^!+/, '')));
      }
    } else group[match[1]] = value;
  }
  return groups;
}

let counter = 0;

function groupFieldset(suffix, values, removable) {
  const id = `g${++counter}`;
  const controls = {
    suffix: input('suffix', suffix, { pattern: '[A-Za-z0-9_\\-]{1,64}', placeholder: '1, _NET …', required: removable }),
    resources: input('resources', values.resources, { placeholder: 'VCPU:4,MEMORY_MB:8192' }),
    required: input('required', values.required, { placeholder: 'HW_CPU_X86_AVX2 or in:A,B' }),
    forbidden: input('forbidden', values.forbidden, { placeholder: 'CUSTOM_MAINTENANCE' }),
    member_of: input('member_of', values.member_of, { placeholder: 'aggregate uuid or in:uuid1,uuid2' }),
  };
  const fieldset = h('fieldset', { class: 'group' },
    h('legend', {}, removable ? 'Granular group' : 'Unsuffixed group'),
    removable ? field(`${id}-suffix`, 'Suffix', controls.suffix) : null,
    field(`${id}-resources`, 'Resources', controls.resources),
    field(`${id}-required`, 'Required traits', controls.required),
    field(`${id}-forbidden`, 'Forbidden traits', controls.forbidden),
    field(`${id}-member_of`, 'Member of', controls.member_of));
  if (removable) {
    fieldset.append(h('button', { type: 'button', class: 'secondary', onclick: () => fieldset.remove() }, 'Remove this group'));
  }
  fieldset.controls = controls;
  return fieldset;
}

function requestForm(params, go) {
  const groups = groupsOf(params);
  const holder = h('div', { class: 'groups' },
    [...groups].map(([suffix, values]) => groupFieldset(suffix, values, suffix !== '')));
  const policy = h('select', { name: 'group_policy' },
    [['', '(not given)'], ['none', 'none'], ['isolate', 'isolate']].map(([value, words]) => h('option', { value, selected: (params.get('group_policy') || '') === value }, words)));
  const form = h('form', { class: 'request', 'aria-label': 'Allocation candidates request' },
    holder,
    h('button', { type: 'button', class: 'secondary', onclick: () => {
      const added = groupFieldset('', {}, true);
      holder.append(added);
      added.controls.suffix.focus();
    } }, 'Add a granular group'),
    field('group-policy', 'Group policy', policy, 'Needed with two or more granular groups.'),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Explain')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const fieldset of holder.children) {
      const c = fieldset.controls;
      const suffix = c.suffix.value.trim();
      const required = c.required.value.trim();
      const forbidden = c.forbidden.value.split(',').map((item) => item.trim()).filter(Boolean).map((item) => `!${item.replace(/^!+/, '')}`);
      if (c.resources.value.trim()) next.append(`resources${suffix}`, c.resources.value.trim());
      // in:A,B takes no forbidden trait: those go in a second required.
      if (required.startsWith('in:')) {
        next.append(`required${suffix}`, required);
        if (forbidden.length) next.append(`required${suffix}`, forbidden.join(','));
      } else if (required || forbidden.length) {
        next.append(`required${suffix}`, [required, ...forbidden].filter(Boolean).join(','));
      }
      if (c.member_of.value.trim()) next.append(`member_of${suffix}`, c.member_of.value.trim());
    }
    if (policy.value) next.append('group_policy', policy.value);
    go('explain', [], next);
  });
  return form;
}

function examples(items) {
  if (!items.length) return '—';
  return h('ul', { class: 'plain examples' }, items.map((item) => h('li', {},
    providerLink(item.uuid, item.name), `: ${item.reason}`)));
}

function funnel(steps, key, caption) {
  const rows = steps.map((step) => {
    const name = step[key];
    const cells = [h('th', { scope: 'row' }, h('code', {}, name), h('br'), h('small', {}, WORDS[name] || ''))];
    if (step.providers) {
      const all = step.providers.kept + step.providers.removed;
      cells.push(h('td', { 'data-field': 'providers' }, bar(step.providers.kept, all, `providers kept by ${name}`)),
        h('td', { 'data-field': 'providers_removed' }, num(step.providers.removed)));
    }
    const trees = step.trees.kept + step.trees.removed;
    cells.push(h('td', { 'data-field': 'trees' }, bar(step.trees.kept, trees, `trees kept by ${name}`)),
      h('td', { 'data-field': 'trees_removed' }, num(step.trees.removed)),
      h('td', {}, examples(step.examples)));
    return h('tr', { 'data-step': name }, cells);
  });
  const headings = key === 'constraint'
    ? ['Constraint', 'Providers kept', 'Removed', 'Trees kept', 'Removed', 'Examples removed']
    : ['Step', 'Trees kept', 'Removed', 'Examples removed'];
  return table(caption, headings, rows, { class: 'funnel' });
}

function answer(body) {
  return h('div', { 'data-part': 'explain', 'data-state': 'ready' },
    h('p', { class: 'status', 'data-field': 'summary' }, body.summary),
    h('dl', { class: 'facts' },
      h('div', { 'data-field': 'allocation_requests' }, h('dt', {}, 'Allocation requests'), h('dd', {}, num(body.allocation_requests))),
      h('div', { 'data-field': 'trees_satisfying' }, h('dt', {}, 'Trees that satisfy it'), h('dd', {}, num(body.trees_satisfying), ' of ', num(body.trees)))),
    body.reasons.length ? h('ul', { class: 'reasons' }, body.reasons.map((item) => h('li', {}, num(item.trees), ` trees ${item.reason}`))) : null,
    body.groups.map((group) => section(group.suffix ? `Group ${group.suffix}` : 'Unsuffixed group', { 'data-group': group.suffix },
      funnel(group.constraints, 'constraint', `Each constraint of group “${group.suffix || '(unsuffixed)'}” in turn, and what it kept`))),
    body.combination.length ? section('Combining the groups', { 'data-part': 'combination' },
      funnel(body.combination, 'step', 'The steps after each group’s own constraints')) : null);
}

export async function render(root, route, { go }) {
  const params = route.params;
  root.append(h('h1', {}, 'Why no candidates?'),
    h('p', {}, 'Ask for what a scheduler would ask for; each constraint is shown with what it kept and what it removed.'),
    requestForm(params, go));
  const asked = [...params].some(([name]) => GROUP_KEY.test(name));
  if (!asked) {
    root.append(h('p', { class: 'hint' }, 'Fill in at least one group’s resources, then Explain.'));
    return;
  }
  const text = params.toString();
  const results = h('div', { class: 'results' }, loading());
  const fits = h('div', { 'data-part': 'capacity', 'data-state': 'loading' }, loading());
  root.append(section('Answer', {}, results), section('How many more copies fit', {}, fits));
  const explain = api(`/allocation_candidates/explain?${text}`).then((body) => results.replaceChildren(answer(body)),
    (error) => results.replaceChildren(h('div', { 'data-part': 'explain', 'data-state': 'error' }, errorBox(error))));
  const capacity = api(`/allocation_candidates/capacity?${text}`).then((body) => {
    fits.dataset.state = 'ready';
    const trees = Object.values(body.roots).filter((count) => count > 0).length;
    fits.replaceChildren(h('p', {}, h('strong', {}, num(body.total, { 'data-field': 'total' })), ' more copies fit now, in ',
      num(trees, { 'data-field': 'trees' }), ` of ${fmt(Object.keys(body.roots).length)} trees`,
      body.limited_by_sharing ? ' (fewer at once: sharing providers cannot serve every tree together)' : '', '.'));
  }, (error) => {
    fits.dataset.state = 'error';
    fits.replaceChildren(errorBox(error));
  });
  await Promise.all([explain, capacity]);
}
