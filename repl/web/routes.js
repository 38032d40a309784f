// The viewer's addresses after `#`: building them and reading the current one.

import { enc } from './dom.js';

export const routes = {
  traces: (q) => '#/' + qs(q),
  trace: (gid, q) => '#/trace/' + enc(gid) + qs(q),
  case: (gid, c) => '#/case/' + enc(gid) + '/' + enc(c),
  graph: (gid, start, dir, depth, mark) =>
    '#/graph/' + enc(gid) + qs({ start, dir: dir || 'backward', depth: depth == null ? 2 : depth,
      mark: mark && mark.length ? mark : null }),
  query: (stmt) => '#/query' + qs({ q: stmt || null }),
};

// A query string; a list becomes the parameter repeated, so that ids
// holding commas, spaces or slashes come back whole (getAll).
export function qs(obj) {
  if (!obj) return '';
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    if (Array.isArray(v)) {
      for (const x of v) p.append(k, String(x));
    } else {
      p.set(k, String(v));
    }
  }
  const t = p.toString();
  return t ? '?' + t : '';
}

export function parseHash() {
  let raw = location.hash.replace(/^#/, '');
  if (raw === '') raw = '/';
  const qi = raw.indexOf('?');
  const path = qi >= 0 ? raw.slice(0, qi) : raw;
  const query = new URLSearchParams(qi >= 0 ? raw.slice(qi + 1) : '');
  let segs;
  try {
    segs = path.split('/').filter((x, i) => i > 0 || x !== '').map(decodeURIComponent);
  } catch (_) {
    segs = ['?bad'];
  }
  if (segs[0] === '') segs.shift();
  return { segs, query, raw };
}
