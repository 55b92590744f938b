// Building the page: elements, numbers, bars.  No markup strings and no
// inline styles (the Content-Security-Policy allows neither): elements
// are made one by one, bars are SVG whose sizes are attributes.

const SVG = 'http://www.w3.org/2000/svg';

function fill(node, attributes, children) {
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = value;
    else if (name.startsWith('on') && typeof value === 'function') {
      node.addEventListener(name.slice(2), value);
    } else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function h(tag, attributes, ...children) {
  return fill(document.createElement(tag), attributes, children);
}

export function s(tag, attributes, ...children) {
  return fill(document.createElementNS(SVG, tag), attributes, children);
}

const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 4 });

export function fmt(value) {
  if (value === null || value === undefined) return '—';
  return Number.isInteger(value) ? integer.format(value) : decimal.format(value);
}

// A number as text, its exact value in data-value for whoever reads it.
export function num(value, attributes = {}) {
  return h('span', { class: 'n', 'data-value': value, ...attributes }, fmt(value));
}

// A horizontal bar of ``value`` out of ``max`` with the numbers beside it
// as text.  Over ``max`` it is full, marked "over" in words and colour.
export function bar(value, max, label, { suffix = '' } = {}) {
  const over = value > max;
  const share = max > 0 ? Math.min(value / max, 1) : (value > 0 ? 1 : 0);
  const words = `${label}: ${fmt(value)} of ${fmt(max)}${over ? ', over capacity' : ''}`;
  return h('span', { class: over ? 'meter over' : 'meter', 'data-value': value, 'data-max': max },
    s('svg', { class: 'bar', viewBox: '0 0 100 10', preserveAspectRatio: 'none', role: 'img', 'aria-label': words },
      s('rect', { class: 'track', x: 0, y: 0, width: 100, height: 10 }),
      s('rect', { class: 'fill', x: 0, y: 0, width: (share * 100).toFixed(2), height: 10 })),
    h('span', { class: 'meter-text' }, `${fmt(value)} / ${fmt(max)}${suffix}`,
      over ? h('strong', { class: 'flag' }, ` over by ${fmt(value - max)}`) : null));
}

// A bar of a count against the largest count of its chart.
export function countBar(value, largest, label) {
  const share = largest > 0 ? value / largest : 0;
  return h('span', { class: 'meter count', 'data-value': value },
    s('svg', { class: 'bar', viewBox: '0 0 100 10', preserveAspectRatio: 'none', role: 'img', 'aria-label': `${label}: ${fmt(value)}` },
      s('rect', { class: 'track', x: 0, y: 0, width: 100, height: 10 }),
      s('rect', { class: 'fill', x: 0, y: 0, width: (share * 100).toFixed(2), height: 10 })),
    h('span', { class: 'meter-text' }, fmt(value)));
}

// An API error, plainly: status, title, the API's own reason, and what
// it means here.
export function errorBox(error, hint) {
  const status = error && error.status !== undefined ? error.status : '';
  const title = error && error.title ? error.title : 'Error';
  const detail = error && error.detail !== undefined ? error.detail : String(error);
  let meaning = hint || '';
  if (!meaning && status === 401) meaning = 'The API did not accept the token: sign out and sign in again.';
  if (!meaning && status === 403) meaning = 'Policy refuses this token this view.';
  return h('div', { class: 'error', role: 'alert', 'data-status': status },
    h('p', {}, h('strong', {}, `${status} ${title}`.trim()), `: ${detail}`),
    meaning ? h('p', { class: 'hint' }, meaning) : null);
}

export function link(view, args, params, ...children) {
  return h('a', { href: href(view, args, params) }, ...children);
}

export function href(view, args = [], params = null) {
  const path = [view, ...args].map(encodeURIComponent).join('/');
  const search = params ? new URLSearchParams(params).toString() : '';
  return `#/${path}${search ? `?${search}` : ''}`;
}

export function providerLink(uuid, name) {
  return h('a', { href: href('provider', [uuid]), class: 'provider', 'data-uuid': uuid }, name || uuid);
}

export function consumerLink(uuid) {
  return h('a', { href: href('consumer', [uuid]), class: 'consumer', 'data-uuid': uuid }, h('code', {}, uuid));
}

// A <label> and its control, side by side.
export function field(id, label, control, help) {
  control.id = id;
  const parts = [h('label', { for: id }, label), control];
  if (help) {
    const helpId = `${id}-help`;
    control.setAttribute('aria-describedby', helpId);
    parts.push(h('small', { id: helpId }, help));
  }
  return h('div', { class: 'field' }, ...parts);
}

export function input(name, value, attributes = {}) {
  return h('input', { name, type: 'text', value: value || '', autocomplete: 'off', spellcheck: 'false', ...attributes });
}

export function section(title, attributes = {}, ...children) {
  const id = `s-${Math.random().toString(36).slice(2, 9)}`;
  return h('section', { 'aria-labelledby': id, ...attributes }, h('h2', { id }, title), ...children);
}

export function table(caption, headings, rows, attributes = {}) {
  return h('table', attributes,
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, headings.map((text) => h('th', { scope: 'col' }, text)))),
    h('tbody', {}, rows));
}

export function definitions(pairs, attributes = {}) {
  return h('dl', { class: 'facts', ...attributes },
    pairs.map(([term, value, key]) => h('div', { 'data-field': key },
      h('dt', {}, term), h('dd', {}, value))));
}

export function loading(text = 'Loading…') {
  return h('p', { class: 'loading' }, text);
}
