// The Placement API, called with the token the user entered.  The token
// (and, for noauth2, the roles) live in this tab's sessionStorage only:
// never in the URL, a cookie or the persistent local storage.

const VERSION = 'placement 1.39';
const TOKEN = 'placement-dashboard.token';
const ROLES = 'placement-dashboard.roles';

export const session = {
  get token() { return sessionStorage.getItem(TOKEN); },
  get roles() { return sessionStorage.getItem(ROLES) || ''; },
  start(token, roles) {
    sessionStorage.setItem(TOKEN, token);
    if (roles) sessionStorage.setItem(ROLES, roles);
    else sessionStorage.removeItem(ROLES);
  },
  end() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(ROLES);
  },
};

// The API's root: where /ui/ is mounted, less /ui/.
export function apiRoot() {
  const path = location.pathname;
  const at = path.lastIndexOf('/ui/');
  return at >= 0 ? path.slice(0, at) : '';
}

export class ApiError extends Error {
  constructor(status, title, detail, path) {
    super(`${status} ${title}: ${detail}`);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.path = path;
  }
}

// Upstream's details read "<generic sentence>\n\n <reason>  ": the reason
// is what a person wants.
function reason(detail) {
  if (!detail) return '';
  const parts = detail.split('\n\n');
  return parts[parts.length - 1].trim();
}

export async function api(path, { method = 'GET', body } = {}) {
  const headers = {
    'Accept': 'application/json',
    'OpenStack-API-Version': VERSION,
    'X-Auth-Token': session.token || '',
  };
  if (session.roles) headers['X-Roles'] = session.roles;
  const init = { method, headers, credentials: 'omit', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(apiRoot() + path, init);
  } catch (error) {
    throw new ApiError(0, 'Unreachable', `the API did not answer (${error.message})`, path);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (error) {
    data = null;
  }
  if (!response.ok) {
    const first = data && Array.isArray(data.errors) ? data.errors[0] : null;
    throw new ApiError(response.status,
      (first && first.title) || response.statusText,
      reason(first && first.detail) || text.trim() || response.statusText,
      path);
  }
  return data;
}

// A query string from {name: value} (empty values left out).
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.append(name, value);
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
