// The dashboard's router: the view and its filters live in the URL's
// hash (#/providers?required=...), so every view can be shared as a link
// and the browser's back and forward buttons work.  The token never goes
// in the URL.

import { session } from './api.js';
import { h, errorBox, field, input } from './dom.js';
import * as summary from './summary.js';
import * as providers from './providers.js';
import * as provider from './provider.js';
import * as consumer from './consumer.js';
import * as explain from './explain.js';
import * as audit from './audit.js';
import * as whatIf from './what_if.js';

const VIEWS = {
  summary, providers, provider, consumer, explain, audit, 'what-if': whatIf,
};
// The navigation entry each view is under.
const UNDER = { provider: 'providers', consumer: 'audit' };

const main = document.getElementById('main');
let rendering = 0;
// The first view of a page load leaves the focus where the browser put
// it (the document's start: Tab reaches "Skip to content" first); each
// later one moves it to the new view's heading.
let loaded = false;

export function route() {
  const raw = location.hash.replace(/^#\/?/, '');
  const at = raw.indexOf('?');
  const path = at >= 0 ? raw.slice(0, at) : raw;
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return {
    name: parts[0] || 'summary',
    args: parts.slice(1),
    params: new URLSearchParams(at >= 0 ? raw.slice(at + 1) : ''),
    hash: location.hash || '#/summary',
  };
}

// Go to ``view`` with ``params`` (a URLSearchParams or an object): a new
// history entry, rendered by the hashchange handler.
export function go(view, args = [], params = {}) {
  const search = new URLSearchParams();
  for (const [name, value] of (params instanceof URLSearchParams ? params : Object.entries(params))) {
    if (value !== undefined && value !== null && value !== '') search.append(name, value);
  }
  const path = [view, ...args].map(encodeURIComponent).join('/');
  const text = search.toString();
  const target = `#/${path}${text ? `?${text}` : ''}`;
  if (location.hash === target) render();
  else location.hash = target;
}

function showSession() {
  const box = document.getElementById('session');
  box.hidden = !session.token;
  document.getElementById('who').textContent = session.token
    ? `Signed in${session.roles ? ` (roles: ${session.roles})` : ''}` : '';
}

function markNavigation(name) {
  const current = UNDER[name] || name;
  for (const anchor of document.querySelectorAll('nav a[data-view]')) {
    if (anchor.dataset.view === current) anchor.setAttribute('aria-current', 'page');
    else anchor.removeAttribute('aria-current');
  }
}

function signIn(root) {
  const token = input('token', '', { type: 'password', required: true });
  const roles = input('roles', '');
  const form = h('form', { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title', tabindex: '-1' }, 'Sign in'),
    h('p', {}, 'The dashboard reads the Placement API with your token, ',
      'and shows what policy lets that token see. The token is kept in this ',
      'browser tab only (session storage) and sent to this service only.'),
    field('token', 'Token', token,
      'A keystone token (openstack token issue), or with noauth2 the user name: "admin" has the admin role.'),
    field('roles', 'Roles (noauth2 only)', roles,
      'Sent as X-Roles, e.g. "reader"; keystone ignores it and reads the roles from the token.'),
    h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    session.start(token.value.trim(), roles.value.trim());
    render();
  });
  root.append(form);
}

export async function render() {
  const current = ++rendering;
  const where = route();
  markNavigation(where.name);
  showSession();
  const root = h('div', { class: 'view', 'data-view': where.name });
  main.replaceChildren(root);
  main.dataset.state = 'loading';
  main.dataset.route = where.hash;
  main.setAttribute('aria-busy', 'true');
  const view = VIEWS[where.name];
  try {
    if (!session.token) {
      signIn(root);
      document.title = 'Sign in · Placement dashboard';
    } else if (!view) {
      root.append(h('h1', { tabindex: '-1' }, 'No such view'),
        h('p', {}, `Nothing is at ${where.hash}. Choose a view above.`));
    } else {
      await view.render(root, where, { go, isCurrent: () => current === rendering });
    }
  } catch (error) {
    if (current === rendering) root.append(errorBox(error));
  }
  if (current !== rendering) return;
  main.removeAttribute('aria-busy');
  main.dataset.state = 'ready';
  performance.mark(`view-ready:${where.name}`);
  const heading = root.querySelector('h1');
  if (heading) {
    document.title = `${heading.textContent} · Placement dashboard`;
    if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
    if (loaded && (document.activeElement === document.body || document.activeElement === main
        || !root.contains(document.activeElement))) {
      heading.focus({ preventScroll: false });
    }
  }
  loaded = true;
}

document.getElementById('sign-out').addEventListener('click', () => {
  session.end();
  render();
});
document.getElementById('skip').addEventListener('click', (event) => {
  event.preventDefault();
  const heading = main.querySelector('h1') || main;
  heading.focus();
});
window.addEventListener('hashchange', render);
render();
