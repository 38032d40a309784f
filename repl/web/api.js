// Calls to the server's JSON API; an error answer becomes an ApiError.

import { enc } from './dom.js';
import { qs } from './routes.js';

export class ApiError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

// Every request goes through here: JSON in, JSON out, and an error body
// `{"error": kind, "message": text}` becomes an ApiError carrying the message.
async function api(path, opts = {}) {
  const init = { method: opts.method || 'GET', headers: { Accept: 'application/json' } };
  if (opts.body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'network', 'Cannot reach the memtrace server (' + (e && e.message ? e.message : e) + ')');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch (_) { data = null; }
  }
  if (!res.ok) {
    const kind = data && data.error ? String(data.error) : 'http_' + res.status;
    const msg = data && data.message ? String(data.message)
      : (text && !data ? text.slice(0, 500) : res.status + ' ' + res.statusText);
    throw new ApiError(res.status, kind, msg);
  }
  if (data === null && text) throw new ApiError(res.status, 'bad_response', 'The server sent something that is not JSON');
  return data;
}

export const API = {
  health: () => api('/api/health'),
  traces: (q) => api('/api/traces' + qs(q)),
  trace: (gid, q) => api('/api/traces/' + enc(gid) + qs(q)),
  case: (gid, c) => api('/api/traces/' + enc(gid) + '/cases/' + enc(c)),
  addLabel: (gid, c, body) => api('/api/traces/' + enc(gid) + '/cases/' + enc(c) + '/labels', { method: 'POST', body }),
  annotationsUrl: (gid) => '/api/traces/' + enc(gid) + '/annotations',
  graph: (gid, q) => api('/api/traces/' + enc(gid) + '/graph' + qs(q)),
  expand: (gid, node, dir) => api('/api/traces/' + enc(gid) + '/expand' + qs({ node, dir })),
  node: (gid, id) => api('/api/traces/' + enc(gid) + '/nodes/' + enc(id)),
  query: (statement) => api('/api/query', { method: 'POST', body: { statement } }),
};
