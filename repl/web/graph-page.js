// The provenance graph of one node.

import { clear, h } from './dom.js';
import { routes } from './routes.js';
import { API, ApiError } from './api.js';
import { appEl, errorView, loadingView, notFoundView, setTitle } from './shell.js';
import { graphExplorer } from './graph-explorer.js';

export function graphPage(ctx, gid) {
  const q = ctx.parsed.query;
  const start = q.get('start') || '';
  const dir = q.get('dir') === 'forward' ? 'forward' : 'backward';
  const depth = Math.min(20, Math.max(1, parseInt(q.get('depth') || '2', 10) || 2));
  const mark = q.getAll('mark').filter(Boolean);
  setTitle('Graph ' + (start || gid));

  const startIn = h('input', { id: 'g-start', type: 'text', value: start, class: 'mono', size: 32, required: true });
  const dirSel = h('select', { id: 'g-dir', 'data-testid': 'graph-dir' },
    h('option', { value: 'backward' }, 'backward (where it came from)'),
    h('option', { value: 'forward' }, 'forward (where it went)'));
  dirSel.value = dir;
  const depthIn = h('input', { id: 'g-depth', type: 'number', min: 1, max: 20, value: String(depth), 'data-testid': 'graph-depth' });
  const form = h('form', { class: 'filters', 'aria-label': 'Graph parameters' },
    h('label', { for: 'g-start' }, 'Start'), startIn,
    h('label', { for: 'g-dir' }, 'Direction'), dirSel,
    h('label', { for: 'g-depth' }, 'Depth'), depthIn,
    h('button', { type: 'submit', 'data-testid': 'graph-load' }, 'Show'));
  const go = (e) => {
    if (e) e.preventDefault();
    const target = routes.graph(gid, startIn.value.trim(), dirSel.value, depthIn.value || 2);
    if (target !== location.hash) location.hash = target;
  };
  form.addEventListener('submit', go);
  dirSel.addEventListener('change', () => go());

  const body = h('div', null, start ? loadingView('Loading the graph\u2026') : h('p', { class: 'muted' }, 'Name a start node.'));
  appEl.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
      h('a', { href: '#/' }, 'Traces'), ' / ', h('a', { href: routes.trace(gid), class: 'mono' }, gid), ' / provenance graph'),
    h('h1', null, 'Provenance of ', h('span', { class: 'mono' }, start || '\u2026')),
    form, body);
  if (!start) { ctx.ready(); return; }

  API.graph(gid, { start, dir, depth }).then((g) => {
    if (!ctx.alive()) return;
    const ex = graphExplorer(g.trace || gid, Object.assign({ direction: dir }, g), mark);
    clear(body).appendChild(ex.el);
    ex.start();
    ctx.ready();
  }).catch((e) => {
    if (!ctx.alive()) return;
    if (e instanceof ApiError && e.status === 404) {
      clear(appEl).appendChild(notFoundView(e.message));
    } else {
      clear(body).appendChild(errorView(e));
    }
    ctx.ready();
  });
}
