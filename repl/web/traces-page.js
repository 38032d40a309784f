// The list of traces, with its filters and sorting.

import { asList, clear, fmtNum, h } from './dom.js';
import { parseHash, routes } from './routes.js';
import { API } from './api.js';
import { appEl, current, errorView, setTitle } from './shell.js';

export function tracesPage(ctx) {
  setTitle('Traces');
  const sysSel = h('select', { id: 'f-system', 'data-testid': 'filter-system' });
  const userSel = h('select', { id: 'f-user', 'data-testid': 'filter-user' });
  const failedCb = h('input', { type: 'checkbox', id: 'f-failed', 'data-testid': 'filter-failed' });
  const searchIn = h('input', { type: 'search', id: 'f-search', 'data-testid': 'filter-search', placeholder: 'part of a graph id', autocomplete: 'off' });
  const summary = h('p', { class: 'summary', 'data-testid': 'traces-count', role: 'status' });
  const tableWrap = h('div', { class: 'tablewrap' });

  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter traces', onsubmit: (e) => e.preventDefault() },
    h('label', { for: 'f-system' }, 'System'), sysSel,
    h('label', { for: 'f-user' }, 'User'), userSel,
    h('label', { for: 'f-search' }, 'Search'), searchIn,
    h('span', { class: 'check' }, failedCb, h('label', { for: 'f-failed' }, 'only traces with failed cases')));

  appEl.append(h('h1', null, 'Traces'), filters, summary, tableWrap);

  function readFilters() {
    const q = parseHash().query;
    return {
      system: q.get('system') || '', user: q.get('user') || '', failed: q.get('failed') === '1' ? '1' : '',
      search: q.get('search') || '', sort: q.get('sort') || '', desc: q.get('desc') === '1' ? '1' : '',
    };
  }
  // Filters, the search and the order live in the address, so a view can
  // be bookmarked; the server filters by system, user and failures, the
  // page searches and sorts what it returned.
  function go(extra) {
    const now = readFilters();
    const f = {
      system: sysSel.value || null, user: userSel.value || null, failed: failedCb.checked ? '1' : null,
      search: searchIn.value.trim() || null, sort: now.sort || null, desc: now.desc || null, ...(extra || {}),
    };
    const target = routes.traces(f);
    if (target !== location.hash) location.hash = target;
  }
  sysSel.addEventListener('change', () => go());
  userSel.addEventListener('change', () => go());
  failedCb.addEventListener('change', () => go());
  searchIn.addEventListener('input', () => go());
  const sortBy = (key) => {
    const now = readFilters();
    const desc = now.sort === key ? (now.desc === '1' ? null : '1') : (key === 'graph_id' || key === 'system' || key === 'user' ? null : '1');
    go({ sort: key, desc });
  };

  function fillSelect(sel, values, chosen, allText) {
    clear(sel);
    sel.appendChild(h('option', { value: '' }, allText));
    const vals = values.slice();
    if (chosen && !vals.includes(chosen)) vals.push(chosen);
    for (const v of vals) sel.appendChild(h('option', { value: v }, v));
    sel.value = chosen || '';
  }

  async function load(c) {
    const f = readFilters();
    failedCb.checked = f.failed === '1';
    summary.textContent = 'Loading\u2026';
    let data;
    try {
      data = await API.traces(f);
    } catch (e) {
      if (!c.alive()) return;
      clear(tableWrap).appendChild(errorView(e));
      summary.textContent = '';
      c.ready();
      return;
    }
    if (!c.alive()) return;
    let traces = asList(data.traces);
    fillSelect(sysSel, asList(data.systems).filter((x) => x != null), f.system, 'All systems');
    fillSelect(userSel, asList(data.users).filter((x) => x != null), f.user, 'All users');
    if (document.activeElement !== searchIn) searchIn.value = f.search;
    const needle = f.search.toLowerCase();
    if (needle) traces = traces.filter((t) => String(t.graph_id != null ? t.graph_id : '#' + t.id).toLowerCase().includes(needle));
    if (f.sort) traces = sortTraces(traces, f.sort, f.desc === '1');
    const total = data.total != null ? data.total : traces.length;
    summary.textContent = `${fmtNum(traces.length)} of ${fmtNum(total)} traces`;
    clear(tableWrap).appendChild(tracesTable(traces, { sort: f.sort, desc: f.desc === '1', onSort: sortBy }));
    c.ready();
  }

  load(ctx);
  // Filter changes re-query without rebuilding the controls.
  current.update = load;
}

// The traces ordered by one field (text fields by text, counts by number;
// missing values last), ties kept in the server's order.
function sortTraces(traces, key, desc) {
  const val = (t) => (key === 'graph_id' ? (t.graph_id != null ? t.graph_id : '#' + t.id) : t[key]);
  const list = traces.map((t, i) => [t, i]);
  list.sort(([a, ia], [b, ib]) => {
    const x = val(a), y = val(b);
    if (x == null && y == null) return ia - ib;
    if (x == null) return 1;
    if (y == null) return -1;
    const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    return (desc ? -c : c) || ia - ib;
  });
  return list.map(([t]) => t);
}

function tracesTable(traces, order) {
  const cols = [
    ['Graph id', 'l', 'graph_id'], ['System', 'l', 'system'], ['User', 'l', 'user'], ['Created', 'l', 'created_at'],
    ['Sessions', 'r', 'sessions'], ['Variables', 'r', 'variables'], ['Ops', 'r', 'ops'], ['Edges', 'r', 'edges'],
    ['Failed cases', 'r', 'failed_cases'],
  ];
  const head = ([c, a, key]) => {
    const on = order && order.sort === key;
    const b = h('button', { type: 'button', class: 'sortbtn', 'data-testid': 'sort-' + key,
      title: 'Sort by ' + c.toLowerCase() }, c, on ? (order.desc ? ' \u25bc' : ' \u25b2') : '');
    if (order && order.onSort) b.addEventListener('click', () => order.onSort(key));
    return h('th', { scope: 'col', class: a === 'r' ? 'num' : '', 'aria-sort': on ? (order.desc ? 'descending' : 'ascending') : 'none' }, b);
  };
  const table = h('table', { class: 'grid', 'data-testid': 'traces-table' },
    h('thead', null, h('tr', null, cols.map(head))));
  const tb = h('tbody');
  for (const t of traces) {
    const gid = t.graph_id != null ? t.graph_id : '#' + t.id;
    tb.appendChild(h('tr', { 'data-testid': 'trace-row', 'data-graph-id': gid },
      h('td', { class: 'mono' }, h('a', { href: routes.trace(gid), 'data-testid': 'trace-link' }, gid)),
      h('td', { 'data-col': 'system' }, t.system == null ? h('span', { class: 'muted' }, '—') : t.system),
      h('td', { 'data-col': 'user' }, t.user == null ? h('span', { class: 'muted' }, '—') : t.user),
      h('td', { class: 'nowrap' }, t.created_at || ''),
      h('td', { class: 'num' }, fmtNum(t.sessions)),
      h('td', { class: 'num' }, fmtNum(t.variables)),
      h('td', { class: 'num' }, fmtNum(t.ops)),
      h('td', { class: 'num' }, fmtNum(t.edges)),
      h('td', { class: 'num' + (t.failed_cases > 0 ? ' bad' : ''), 'data-col': 'failed' }, fmtNum(t.failed_cases))));
  }
  if (!traces.length) {
    tb.appendChild(h('tr', null, h('td', { colspan: cols.length, class: 'empty' }, 'No trace matches these filters.')));
  }
  table.appendChild(tb);
  return table;
}
