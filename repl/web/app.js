// memtrace serve: the browser viewer of a memtrace database.
// Plain ES2020, no dependencies, no build step. Every piece of data reaches the
// DOM through textContent or attributes (never innerHTML), so it is escaped.
'use strict';

(function () {
  // ------------------------------------------------------------------ DOM helpers

  const SVG_NS = 'http://www.w3.org/2000/svg';

  // Control characters (C0 but line breaks and tabs, DEL, C1), bidirectional
  // controls and the line and paragraph separators are shown escaped, as
  // \u{1b}, the way the command line shows them: a value cannot hide or
  // reorder what is shown. Every text and attribute the helpers set goes
  // through this; form values stay exact.
  const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
  function visible(v) {
    return String(v).replace(HIDDEN, (c) => '\\u{' + c.codePointAt(0).toString(16) + '}');
  }

  // Sets attributes and properties on an element. `on*` keys that hold functions
  // become event listeners, `text` sets textContent, `style` takes an object.
  function applyAttrs(el, attrs) {
    if (!attrs) return;
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') {
        el.addEventListener(k.slice(2).toLowerCase(), v);
      } else if (k === 'text') {
        el.textContent = visible(v);
      } else if (k === 'style' && typeof v === 'object') {
        for (const [p, pv] of Object.entries(v)) el.style.setProperty(p, pv);
      } else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled') {
        el[k] = v;
      } else {
        el.setAttribute(k, v === true ? '' : (k === 'href' || k.startsWith('data-') ? String(v) : visible(v)));
      }
    }
  }

  function appendKids(el, kids) {
    for (const c of kids) {
      if (c === undefined || c === null || c === false) continue;
      if (Array.isArray(c)) appendKids(el, c);
      else if (c instanceof Node) el.appendChild(c);
      else el.appendChild(document.createTextNode(visible(c)));
    }
  }

  // h('div', {class: 'x'}, 'text', child, [more children])
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    applyAttrs(el, attrs);
    appendKids(el, kids);
    return el;
  }

  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(SVG_NS, tag);
    applyAttrs(el, attrs);
    appendKids(el, kids);
    return el;
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  const enc = encodeURIComponent;

  function truncate(text, n) {
    const t = String(text == null ? '' : text).replace(/\s+/g, ' ').trim();
    return t.length > n ? t.slice(0, Math.max(1, n - 1)) + '\u2026' : t;
  }

  function fmtNum(n) {
    return typeof n === 'number' ? n.toLocaleString('en-US') : (n == null ? '' : String(n));
  }

  function asList(v) {
    if (v == null) return [];
    return Array.isArray(v) ? v : [v];
  }

  function shortOp(id) {
    const t = String(id || '');
    return t.length > 16 ? t.slice(0, 12) + '\u2026' + t.slice(-4) : t;
  }

  // ------------------------------------------------------------------ routes (hash)

  const routes = {
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
  function qs(obj) {
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

  function parseHash() {
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

  // ------------------------------------------------------------------ API

  class ApiError extends Error {
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

  const API = {
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

  // ------------------------------------------------------------------ categories and colors

  const KNOWN_HUES = {
    // variable categories
    message: 210, user_input: 210, query: 265, question: 265, prompt: 190,
    memory_entry: 140, memory_store: 140, memory: 140, memory_context: 170, buffer: 45,
    extracted_facts: 95, memory_decision: 30, boundary_decision: 55, prediction: 330,
    answer: 330, golden_answers: 300, judge_response: 0, judge_score: 0, variable: 220,
    sentinel: 0, retrieved_memories: 170,
    // op categories
    extraction: 95, update: 30, mutation: 30, deletion: 0, retrieval: 170, evaluation: 300,
    generation: 330, llm_call: 250, boundary_detection: 55, ingest: 210, link: 190, qa: 330,
    memory_construction: 140, session: 220,
  };

  function hueOf(cat) {
    const c = String(cat || '').toLowerCase();
    if (c in KNOWN_HUES) return KNOWN_HUES[c];
    let x = 0;
    for (let i = 0; i < c.length; i++) x = (x * 31 + c.charCodeAt(i)) >>> 0;
    return x % 360;
  }

  function catColors(cat) {
    if (!cat) return { fill: 'hsl(220 10% 95%)', stroke: 'hsl(220 8% 55%)', text: 'hsl(220 10% 25%)' };
    const hue = hueOf(cat);
    return { fill: `hsl(${hue} 70% 93%)`, stroke: `hsl(${hue} 45% 42%)`, text: `hsl(${hue} 55% 24%)` };
  }

  function chip(cat, extra) {
    const c = catColors(cat);
    return h('span', {
      class: 'chip' + (extra ? ' ' + extra : ''),
      style: { '--chip-bg': c.fill, '--chip-fg': c.text, '--chip-bd': c.stroke },
      title: cat ? 'category: ' + cat : 'no category',
    }, cat || '—');
  }

  const ERROR_TYPES = ['ExtractionError', 'UpdateError', 'DeletionError', 'RetrievalError', 'ResponseError'];

  function errorBadge(t) {
    if (!t) return h('span', { class: 'muted' }, '—');
    return h('span', { class: 'etype etype-' + String(t).replace(/[^A-Za-z]/g, '') }, t);
  }

  // ------------------------------------------------------------------ app shell

  const appEl = document.getElementById('app');
  let navToken = 0;
  let current = null; // { name, key, update? }

  // A render context: `alive()` is false once the user has navigated elsewhere,
  // so late answers of old requests are dropped.
  function makeCtx(name, parsed) {
    const token = ++navToken;
    return {
      name,
      parsed,
      alive: () => token === navToken,
      ready() {
        if (token !== navToken) return;
        appEl.setAttribute('aria-busy', 'false');
        appEl.dataset.loaded = location.hash || '#/';
      },
    };
  }

  function setTitle(t) {
    document.title = t ? t + ' \u2014 memtrace' : 'memtrace';
  }

  function setNav(which) {
    for (const a of document.querySelectorAll('[data-nav]')) {
      if (a.dataset.nav === which) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
  }

  function loadingView(text) {
    return h('p', { class: 'loading', role: 'status' }, text || 'Loading\u2026');
  }

  function notFoundView(message) {
    setTitle('Not found');
    return h('section', { class: 'notfound', 'data-testid': 'not-found' },
      h('h1', null, 'Not found'),
      h('p', null, message || 'There is nothing at this address.'),
      h('p', null, h('a', { href: '#/' }, 'Back to the traces')));
  }

  function errorView(err) {
    if (err instanceof ApiError && err.status === 404) return notFoundView(err.message);
    return h('section', { class: 'errorbox', 'data-testid': 'error', role: 'alert' },
      h('h1', null, 'Something went wrong'),
      h('pre', { class: 'errmsg' }, err && err.message ? err.message : String(err)));
  }

  // Shows an error in place of the page (for the page's main request).
  function showError(ctx, err) {
    if (!ctx.alive()) return;
    clear(appEl).appendChild(errorView(err));
    ctx.ready();
  }

  function route() {
    const parsed = parseHash();
    const [head, ...rest] = parsed.segs;
    let name;
    if (head === undefined || head === '') name = 'traces';
    else if (head === 'trace' && rest.length === 1) name = 'trace';
    else if (head === 'case' && rest.length === 2) name = 'case';
    else if (head === 'graph' && rest.length === 1) name = 'graph';
    else if (head === 'query' && rest.length === 0) name = 'query';
    else name = 'unknown';

    // Same page, only the query changed: let the page update itself in place
    // (keeps focus in the filter controls).
    if (current && current.name === name && current.update && current.path === parsed.segs.join('/')) {
      const ctx = makeCtx(name, parsed);
      appEl.setAttribute('aria-busy', 'true');
      current.update(ctx);
      return;
    }
    const ctx = makeCtx(name, parsed);
    appEl.setAttribute('aria-busy', 'true');
    clear(appEl);
    current = { name, path: parsed.segs.join('/') };
    setNav(name === 'query' ? 'query' : (name === 'unknown' ? '' : 'traces'));
    try {
      switch (name) {
        case 'traces': tracesPage(ctx); break;
        case 'trace': tracePage(ctx, rest[0]); break;
        case 'case': casePage(ctx, rest[0], rest[1]); break;
        case 'graph': graphPage(ctx, rest[0]); break;
        case 'query': queryPage(ctx); break;
        default:
          appEl.appendChild(notFoundView('No page at ' + (location.hash || '#/') + '.'));
          ctx.ready();
      }
    } catch (e) {
      showError(ctx, e);
    }
  }

  // ------------------------------------------------------------------ traces page

  function tracesPage(ctx) {
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

  // ------------------------------------------------------------------ trace page

  function traceInfo(t, withLink) {
    const gid = t.graph_id != null ? t.graph_id : '#' + t.id;
    const dl = h('dl', { class: 'facts', 'data-testid': 'trace-info' });
    const add = (k, v) => { if (v !== undefined && v !== null && v !== '') dl.append(h('dt', null, k), h('dd', null, v)); };
    add('Trace', withLink ? h('a', { href: routes.trace(gid), class: 'mono' }, gid) : h('span', { class: 'mono' }, gid));
    add('Number', t.id != null ? '#' + t.id : null);
    add('System', t.system);
    add('User', t.user);
    add('Created', t.created_at);
    add('Source', t.source);
    const counts = [];
    if (t.sessions != null) counts.push(fmtNum(t.sessions) + ' sessions');
    if (t.variables != null) counts.push(fmtNum(t.variables) + ' variables');
    if (t.ops != null) counts.push(fmtNum(t.ops) + ' ops');
    if (t.edges != null) counts.push(fmtNum(t.edges) + ' edges');
    if (t.failed_cases != null) counts.push(fmtNum(t.failed_cases) + ' failed cases');
    add('Size', counts.join(', '));
    return dl;
  }

  function nodeLink(gid, id, dir) {
    return h('a', {
      class: 'nodeid mono', href: routes.graph(gid, id, dir || 'backward', 2),
      title: 'Open the provenance graph from ' + id, 'data-testid': 'node-link',
    }, id);
  }

  // A list of node ids, at most `max` shown, the rest behind a button.
  function idList(ids, make, max = 6) {
    const list = asList(ids);
    const span = h('span', { class: 'idlist' });
    const shown = list.slice(0, max);
    shown.forEach((id, i) => { if (i) span.append(', '); span.append(make(id)); });
    if (!list.length) span.append(h('span', { class: 'muted' }, 'none'));
    if (list.length > max) {
      const more = h('button', { type: 'button', class: 'linkbtn' }, `+${list.length - max} more`);
      more.addEventListener('click', () => {
        more.remove();
        list.slice(max).forEach((id) => span.append(', ', make(id)));
      });
      span.append(' ', more);
    }
    return span;
  }

  function tracePage(ctx, gid) {
    setTitle('Trace ' + gid);
    const q = ctx.parsed.query;
    const offset = Math.max(0, parseInt(q.get('offset') || '0', 10) || 0);
    const limit = q.get('limit') ? Math.max(1, parseInt(q.get('limit'), 10) || 500) : null;
    appEl.appendChild(loadingView('Loading trace ' + gid + '\u2026'));
    API.trace(gid, { offset: offset || null, limit }).then((data) => {
      if (!ctx.alive()) return;
      clear(appEl);
      const t = data.trace || {};
      const tgid = t.graph_id || gid;
      appEl.append(
        h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Traces'), ' / ', h('span', { class: 'mono' }, tgid)),
        h('h1', null, 'Trace ', h('span', { class: 'mono' }, tgid)),
        h('section', { class: 'card' }, traceInfo(t, false)),
        casesSection(tgid, asList(data.cases)),
        timelineSection(tgid, data, offset));
      ctx.ready();
    }).catch((e) => showError(ctx, e));
  }

  function casesSection(gid, cases) {
    const sec = h('section', { class: 'card', 'aria-labelledby': 'cases-h' },
      h('h2', { id: 'cases-h' }, `Failed cases (${fmtNum(cases.length)})`));
    if (!cases.length) {
      sec.appendChild(h('p', { class: 'muted' }, 'This trace has no failed case.'));
      return sec;
    }
    const table = h('table', { class: 'grid cases', 'data-testid': 'cases' },
      h('thead', null, h('tr', null,
        ['Case', 'Query', 'Gold', 'Prediction', 'Latest verdict', 'Labels'].map((c) => h('th', { scope: 'col' }, c)))));
    const tb = h('tbody');
    for (const c of cases) {
      const v = c.verdict;
      tb.appendChild(h('tr', { 'data-testid': 'case-row' },
        h('td', { class: 'mono' }, h('a', { href: routes.case(gid, c.case), 'data-testid': 'case-link' }, c.case)),
        h('td', { class: 'text' }, c.query || ''),
        h('td', { class: 'text' }, asList(c.gold).join(' | ')),
        h('td', { class: 'text' }, c.prediction || ''),
        h('td', null, v ? [errorBadge(v.error_type), v.method ? h('span', { class: 'muted small' }, ' ' + v.method) : null]
          : h('span', { class: 'muted' }, 'no verdict')),
        h('td', { class: 'num' }, fmtNum(c.labels || 0))));
    }
    table.appendChild(tb);
    sec.appendChild(h('div', { class: 'tablewrap' }, table));
    return sec;
  }

  // Milliseconds since the epoch of a recorded time (ISO 8601, with or
  // without a zone: without one it is read as UTC), or null.
  function timeOf(text) {
    if (!text) return null;
    let t = String(text).trim().replace(' ', 'T');
    if (/^\d{4}-\d{2}-\d{2}T[\d:.]+$/.test(t)) t += 'Z';
    // JavaScript reads at most milliseconds.
    t = t.replace(/(\.\d{3})\d+/, '$1');
    const ms = Date.parse(t);
    return Number.isNaN(ms) ? null : ms;
  }

  function fmtDuration(ms) {
    if (ms < 1) return '<1 ms';
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
    const m = Math.floor(ms / 60000);
    return `${m} min ${Math.round((ms - m * 60000) / 1000)} s`;
  }

  function timelineSection(gid, data, offset) {
    const sessions = asList(data.sessions);
    const total = data.ops_total != null ? data.ops_total : null;
    const limit = data.limit || 500;
    const off = data.offset != null ? data.offset : offset;
    let shown = 0;
    for (const se of sessions) shown += asList(se.ops).length;

    const sec = h('section', { class: 'card', 'aria-labelledby': 'tl-h' },
      h('h2', { id: 'tl-h' }, 'Timeline'));
    const pager = () => {
      const nav = h('div', { class: 'pager', 'data-testid': 'pager' });
      nav.append(h('span', null, total == null ? `${fmtNum(shown)} ops`
        : `ops ${fmtNum(shown ? off + 1 : 0)}\u2013${fmtNum(off + shown)} of ${fmtNum(total)}`));
      if (total != null && total > limit) {
        const prev = h('button', { type: 'button', 'data-testid': 'page-prev', disabled: off <= 0 }, '\u2190 Previous');
        const next = h('button', { type: 'button', 'data-testid': 'page-next', disabled: off + limit >= total }, 'Next \u2192');
        prev.addEventListener('click', () => { location.hash = routes.trace(gid, { offset: Math.max(0, off - limit) || null }); });
        next.addEventListener('click', () => { location.hash = routes.trace(gid, { offset: off + limit }); });
        nav.append(prev, next);
      }
      return nav;
    };
    sec.appendChild(pager());
    const tl = h('div', { class: 'timeline', 'data-testid': 'timeline' });
    if (!sessions.length) tl.appendChild(h('p', { class: 'muted' }, 'No ops in this range.'));
    for (const se of sessions) {
      const ops = asList(se.ops);
      const ol = h('ol', { class: 'ops' });
      // Traces record when each op started, not when it ended: an op's
      // duration is shown as the time to the next op of its session.
      const starts = ops.map((op) => timeOf(op.created_at));
      ops.forEach((op, i) => {
        const next = starts[i + 1];
        const took = starts[i] != null && next != null && next >= starts[i] ? next - starts[i] : null;
        ol.appendChild(h('li', { class: 'op', 'data-testid': 'timeline-op', 'data-op-id': op.op_id },
          h('div', { class: 'ophead' },
            chip(op.category),
            h('span', { class: 'opname' }, op.name || '(unnamed op)'),
            h('span', { class: 'mono muted small', title: op.op_id }, op.op_id),
            op.created_at ? h('span', { class: 'muted small time' }, op.created_at) : null,
            took != null ? h('span', { class: 'duration small', 'data-testid': 'op-duration', 'data-ms': String(took),
              title: 'time from this op to the next op of the session' }, fmtDuration(took)) : null),
          h('div', { class: 'io' },
            idList(op.inputs, (id) => nodeLink(gid, id, 'backward')),
            h('span', { class: 'arrow', 'aria-label': 'to' }, ' \u2192 '),
            idList(op.outputs, (id) => nodeLink(gid, id, 'backward'))),
          op.comment ? h('div', { class: 'comment small muted' }, truncate(op.comment, 300)) : null));
      });
      const known = starts.filter((x) => x != null);
      const span = known.length >= 2 ? Math.max(...known) - Math.min(...known) : null;
      tl.appendChild(h('section', { class: 'session', 'data-testid': 'session', 'data-session-id': se.session_id },
        h('h3', null,
          h('span', null, se.name || se.session_id || 'session'),
          ' ', se.category ? chip(se.category) : null,
          se.created_at ? h('span', { class: 'muted small time' }, ' ' + se.created_at) : null,
          span != null ? h('span', { class: 'muted small', 'data-testid': 'session-span' }, ` \u00b7 ops span ${fmtDuration(span)}`) : null,
          h('span', { class: 'muted small' }, ` \u00b7 ${fmtNum(ops.length)} ${ops.length === 1 ? 'op' : 'ops'}`)),
        ol));
    }
    sec.appendChild(tl);
    if (total != null && total > limit) sec.appendChild(pager());
    return sec;
  }

  // ------------------------------------------------------------------ case page

  const METHOD_ORDER = ['evidence', 'llm', 'hybrid', 'human'];
  const METHOD_LABELS = { evidence: 'Evidence flow', llm: 'LLM', hybrid: 'Hybrid', human: 'Human' };

  function casePage(ctx, gid, caseId) {
    setTitle('Case ' + caseId);
    appEl.appendChild(loadingView('Loading case ' + caseId + '\u2026'));
    API.case(gid, caseId).then((data) => {
      if (!ctx.alive()) return;
      clear(appEl);
      renderCase(ctx, gid, caseId, data);
      ctx.ready();
    }).catch((e) => showError(ctx, e));
  }

  function renderCase(ctx, gidIn, caseId, data) {
    const t = data.trace || {};
    const gid = t.graph_id || gidIn;
    const cid = data.case || caseId;
    const start = data.prediction_node || data.query_node;

    const verdictsHolder = h('div');
    const labelsHolder = h('div');

    appEl.append(
      h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
        h('a', { href: '#/' }, 'Traces'), ' / ', h('a', { href: routes.trace(gid), class: 'mono' }, gid), ' / ', h('span', { class: 'mono' }, cid)),
      h('h1', null, 'Failed case ', h('span', { class: 'mono' }, cid)),
      h('div', { class: 'actions' },
        start ? h('a', { class: 'button primary', href: routes.graph(gid, start, 'backward', markDepth(data), blamedPath(data)), 'data-testid': 'open-graph',
          title: 'The prediction\u2019s provenance, the blamed op and the evidence\u2019s path to it marked' }, 'Provenance graph')
          : h('span', { class: 'muted' }, 'No prediction or query node to start a graph from.'),
        h('a', { class: 'button', href: API.annotationsUrl(gid), download: `${String(gid).replace(/[^A-Za-z0-9._-]/g, '_')}-annotations.json`, 'data-testid': 'annotations-link' },
          'Download the trace\u2019s annotations (JSON)')),
      caseFacts(gid, data),
      evidenceSection(gid, asList(data.evidence)),
      h('section', { class: 'card', 'aria-labelledby': 'verdicts-h' },
        h('h2', { id: 'verdicts-h' }, 'Verdicts'),
        h('p', { class: 'muted small' }, 'The latest verdict of each attribution method, side by side.'),
        verdictsHolder),
      labelSection(ctx, gid, cid, data, () => refresh()),
      h('section', { class: 'card', 'aria-labelledby': 'labels-h' },
        h('h2', { id: 'labels-h' }, 'Human labels'),
        h('p', { class: 'muted small' }, 'Labels are appended, never overwritten: every label stays in the history, newest first. The latest one is the human verdict.'),
        labelsHolder));

    function paint(d) {
      clear(verdictsHolder).appendChild(verdictsGrid(gid, d));
      clear(labelsHolder).appendChild(labelsList(asList(d.labels)));
    }
    paint(data);

    async function refresh() {
      const d = await API.case(gid, cid);
      if (ctx.alive()) paint(d);
    }
  }

  // What the case's graph marks: the op the evidence verdict (else another
  // verdict, else the file's label) blames, and the variables and ops of
  // the evidence's chain to it.
  function blamedPath(d) {
    const vs = d.verdicts || {};
    const v = vs.evidence || vs.hybrid || vs.llm || vs.human || null;
    const ids = [];
    const add = (x) => { if (x && !ids.includes(x)) ids.push(x); };
    if (v) {
      add(v.op_id);
      for (const st of asList(v.chain)) { add(st.var); add(st.op_id); }
    }
    if (d.file_label) add(d.file_label.op_id);
    return ids;
  }

  // Deep enough to reach the evidence's chain from the prediction, within
  // reason (the graph page allows 20).
  function markDepth(d) {
    const vs = d.verdicts || {};
    const v = vs.evidence || vs.hybrid || vs.llm || vs.human || null;
    const steps = v ? asList(v.chain).length : 0;
    return Math.min(6, Math.max(2, steps + 1));
  }

  function caseFacts(gid, d) {
    const dl = h('dl', { class: 'facts case-facts', 'data-testid': 'case-facts' });
    const add = (k, v, tid) => dl.append(h('dt', null, k), h('dd', tid ? { 'data-testid': tid } : null, v));
    add('Query', h('span', { class: 'text' }, d.query || ''), 'case-query');
    add('Gold', asList(d.gold).length ? h('span', { class: 'text' }, asList(d.gold).join(' | ')) : h('span', { class: 'muted' }, 'none'), 'case-gold');
    add('Prediction', h('span', { class: 'text' }, d.prediction || ''), 'case-prediction');
    add('Judge', d.judge ? h('span', { class: 'text' }, d.judge) : h('span', { class: 'muted' }, 'none'));
    if (d.query_node) add('Query node', nodeLink(gid, d.query_node, 'forward'));
    if (d.prediction_node) add('Prediction node', nodeLink(gid, d.prediction_node, 'backward'));
    if (d.answer_op) add('Answer op', h('span', { class: 'mono' }, d.answer_op));
    return h('section', { class: 'card' }, dl);
  }

  function evidenceSection(gid, ev) {
    const sec = h('section', { class: 'card', 'aria-labelledby': 'ev-h' }, h('h2', { id: 'ev-h' }, `Evidence (${ev.length})`));
    if (!ev.length) {
      sec.appendChild(h('p', { class: 'muted' }, 'No evidence node is known for this case.'));
      return sec;
    }
    const ul = h('ul', { class: 'evidence', 'data-testid': 'evidence' });
    for (const e of ev) {
      ul.appendChild(h('li', { 'data-testid': 'evidence-item' },
        nodeLink(gid, e.node, 'forward'),
        e.origin ? h('span', { class: 'tag' }, e.origin) : null,
        e.preview ? h('div', { class: 'preview' }, e.preview) : null));
    }
    sec.appendChild(ul);
    return sec;
  }

  // An op id that opens the provenance graph of that op.
  function opLink(gid, opId) {
    return h('a', { class: 'mono small', href: routes.graph(gid, opId, 'backward', 2), title: 'Provenance graph of ' + opId, 'data-testid': 'op-link' }, opId);
  }

  // Whether a verdict says what the file's own label says.
  function agreement(v, label) {
    if (!label || !v) return null;
    const typeOk = !label.error_type || label.error_type === v.error_type;
    const opOk = !label.op_id || label.op_id === v.op_id;
    const ok = typeOk && opOk;
    const what = ok ? 'agrees with the file\u2019s label'
      : !typeOk && !opOk ? 'differs from the file\u2019s label: error type and op'
      : !typeOk ? 'differs from the file\u2019s label: error type' : 'differs from the file\u2019s label: op';
    return h('p', { class: 'agreement ' + (ok ? 'agrees' : 'differs'), 'data-testid': 'agreement', 'data-agrees': ok ? 'yes' : 'no' }, what);
  }

  function fileLabelColumn(gid, label) {
    const col = h('article', { class: 'verdict file-label', 'data-testid': 'file-label', 'aria-label': 'The label in the trace file' },
      h('h3', null, 'Label in the file'));
    const dl = h('dl', { class: 'facts compact' });
    if (label.error_type) dl.append(h('dt', null, 'Error type'), h('dd', { 'data-testid': 'file-label-type' }, errorBadge(label.error_type)));
    if (label.op_id) dl.append(h('dt', null, 'Op'), h('dd', null, opLink(gid, label.op_id), label.op_name ? h('div', null, label.op_name) : null));
    col.appendChild(dl);
    col.appendChild(h('p', { class: 'muted small' }, 'final_error_type and final_op_id, as the file records them'));
    return col;
  }

  function verdictsGrid(gid, d) {
    const verdicts = d.verdicts || {};
    const label = d.file_label || null;
    let methods = asList(d.methods).slice();
    if (!methods.length) methods = METHOD_ORDER.slice();
    for (const m of Object.keys(verdicts)) if (!methods.includes(m)) methods.push(m);
    const cols = methods.length + (label ? 1 : 0);
    const grid = h('div', { class: 'verdicts', 'data-testid': 'verdicts', style: { '--cols': String(cols) } });
    if (label) grid.appendChild(fileLabelColumn(gid, label));
    for (const m of methods) {
      const v = verdicts[m];
      const col = h('article', { class: 'verdict' + (v ? '' : ' none'), 'data-testid': 'verdict', 'data-method': m, 'aria-label': 'Verdict of method ' + m },
        h('h3', null, METHOD_LABELS[m] || m));
      if (!v) {
        col.appendChild(h('p', { class: 'muted' }, 'no verdict'));
      } else {
        const dl = h('dl', { class: 'facts compact' });
        const add = (k, val) => { if (val !== undefined && val !== null && val !== '') dl.append(h('dt', null, k), h('dd', null, val)); };
        add('Error type', errorBadge(v.error_type));
        add('Op', v.op_id ? h('span', null, opLink(gid, v.op_id), v.op_name ? h('div', null, v.op_name) : null) : null);
        add('Confidence', typeof v.confidence === 'number' ? v.confidence.toFixed(2) : v.confidence);
        add('Reason', v.reason ? h('span', { class: 'text' }, v.reason) : null);
        add('Author', v.author);
        add('At', v.at);
        col.appendChild(dl);
        const agrees = agreement(v, label);
        if (agrees) col.appendChild(agrees);
        const chain = asList(v.chain);
        if (chain.length) {
          const ol = h('ol', { class: 'chain' });
          for (const st of chain) {
            ol.appendChild(h('li', null,
              st.what ? h('span', { class: 'tag' }, st.what) : null, ' ',
              st.var ? nodeLink(gid, st.var, 'backward') : null,
              st.op_name || st.op_id ? h('span', { class: 'small' }, ' at ', st.op_name || '', ' ', h('span', { class: 'mono muted', title: st.op_id || '' }, shortOp(st.op_id))) : null));
          }
          col.appendChild(h('details', { class: 'chainbox' }, h('summary', null, `Chain (${chain.length} steps)`), ol));
        }
      }
      grid.appendChild(col);
    }
    return grid;
  }

  function labelsList(labels) {
    const sorted = labels.slice().sort((a, b) => (b.seq != null && a.seq != null ? b.seq - a.seq : 0));
    const ol = h('ol', { class: 'labels', 'data-testid': 'labels' });
    if (!sorted.length) {
      return h('div', { 'data-testid': 'labels', class: 'labels empty' }, h('p', { class: 'muted' }, 'No human label yet.'));
    }
    for (const l of sorted) {
      ol.appendChild(h('li', { class: 'label-item', 'data-testid': 'label-item', 'data-seq': l.seq != null ? l.seq : '' },
        h('div', { class: 'labelhead' },
          errorBadge(l.error_type),
          h('span', null, ' at ', l.op_name ? l.op_name + ' ' : '', h('span', { class: 'mono small', title: l.op_id || '' }, l.op_id || '')),
          h('span', { class: 'muted small' }, ` \u2014 ${l.author || 'anonymous'}, ${l.at || ''}`),
          l.seq != null ? h('span', { class: 'muted small' }, ` (#${l.seq})`) : null),
        l.reason ? h('div', { class: 'text reason' }, l.reason) : h('div', { class: 'muted small' }, 'no reason given')));
    }
    return ol;
  }

  const AUTHOR_KEY = 'memtrace.author';

  function labelSection(ctx, gid, cid, data, refresh) {
    const ops = asList(data.ops);
    const verdicts = data.verdicts || {};
    const prefill = verdicts.human || verdicts.evidence || verdicts.hybrid || verdicts.llm || null;

    const etSel = h('select', { name: 'error_type', id: 'lf-et', required: true },
      ERROR_TYPES.map((t) => h('option', { value: t }, t)));
    if (prefill && ERROR_TYPES.includes(prefill.error_type)) etSel.value = prefill.error_type;

    const opSel = h('select', { name: 'op_id', id: 'lf-op', required: true });
    for (const op of ops) {
      opSel.appendChild(h('option', { value: op.op_id }, `${op.name || '(unnamed)'} \u2014 ${op.op_id}`));
    }
    if (!ops.length) opSel.appendChild(h('option', { value: '', disabled: true }, 'no op on this case\u2019s provenance'));
    if (prefill && prefill.op_id && ops.some((o) => o.op_id === prefill.op_id)) opSel.value = prefill.op_id;

    const reason = h('textarea', { name: 'reason', id: 'lf-reason', rows: 3, placeholder: 'Why this op caused the failure (optional)' });
    let savedAuthor = '';
    try { savedAuthor = localStorage.getItem(AUTHOR_KEY) || ''; } catch (_) { /* storage off */ }
    const author = h('input', { name: 'author', id: 'lf-author', type: 'text', maxlength: 100, required: true, autocomplete: 'name', value: savedAuthor });
    const err = h('div', { class: 'formerror', 'data-testid': 'label-error', role: 'alert', hidden: true });
    const ok = h('span', { class: 'formok', role: 'status', 'data-testid': 'label-status' });
    const submit = h('button', { type: 'submit', class: 'primary', 'data-testid': 'label-submit' }, 'Add label');

    const form = h('form', { class: 'labelform', 'data-testid': 'label-form', 'aria-labelledby': 'lf-h', novalidate: true },
      h('div', { class: 'field' }, h('label', { for: 'lf-et' }, 'Error type'), etSel),
      h('div', { class: 'field' }, h('label', { for: 'lf-op' }, 'Op (on the case\u2019s backward provenance)'), opSel),
      h('div', { class: 'field wide' }, h('label', { for: 'lf-reason' }, 'Reason'), reason),
      h('div', { class: 'field' }, h('label', { for: 'lf-author' }, 'Author'), author),
      h('div', { class: 'field formactions' }, submit, ok),
      err);

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      err.hidden = true;
      err.textContent = '';
      ok.textContent = '';
      const body = { error_type: etSel.value, op_id: opSel.value, reason: reason.value, author: author.value.trim() };
      try { localStorage.setItem(AUTHOR_KEY, body.author); } catch (_) { /* storage off */ }
      submit.disabled = true;
      try {
        await API.addLabel(gid, cid, body);
        if (!ctx.alive()) return;
        reason.value = '';
        ok.textContent = 'Label added.';
        await refresh();
      } catch (ex) {
        if (!ctx.alive()) return;
        err.textContent = ex && ex.message ? ex.message : String(ex);
        err.hidden = false;
      } finally {
        submit.disabled = false;
      }
    });

    return h('section', { class: 'card', 'aria-labelledby': 'lf-h' },
      h('h2', { id: 'lf-h' }, 'Add a human label'),
      h('p', { class: 'muted small' }, 'A new label is appended to the case\u2019s history; earlier labels are kept, never overwritten.'),
      form);
  }

  // ------------------------------------------------------------------ graph model and layout

  function edgeKey(e) {
    return e.id != null ? String(e.id) : `${e.source}|${e.op || ''}|${e.target}`;
  }

  class GraphModel {
    constructor(direction) {
      this.direction = direction === 'forward' ? 'forward' : 'backward';
      this.nodes = new Map();
      this.ops = new Map();
      this.edges = new Map();
    }

    merge(g) {
      for (const n of asList(g && g.nodes)) {
        if (n == null || n.id == null) continue;
        const old = this.nodes.get(n.id);
        this.nodes.set(n.id, old ? Object.assign({}, old, n, { start: !!(old.start || n.start) }) : Object.assign({}, n));
      }
      for (const o of asList(g && g.ops)) {
        if (o == null || o.id == null) continue;
        this.ops.set(o.id, Object.assign({}, this.ops.get(o.id) || {}, o));
      }
      for (const e of asList(g && g.edges)) {
        if (e == null || e.source == null || e.target == null) continue;
        this.edges.set(edgeKey(e), e);
        // Tolerate edges whose ends or op the answer did not list.
        if (!this.nodes.has(e.source)) this.nodes.set(e.source, { id: e.source, placeholder: true });
        if (!this.nodes.has(e.target)) this.nodes.set(e.target, { id: e.target, placeholder: true });
        if (e.op != null && !this.ops.has(e.op)) this.ops.set(e.op, { id: e.op, name: e.op });
      }
    }

    // Drawn edges per node in the model's direction (incoming for backward,
    // outgoing for forward), counted once per change of the edges.
    drawnCounts() {
      if (this._counts && this._countsFor === this.edges.size) return this._counts;
      const c = new Map();
      for (const e of this.edges.values()) {
        const k = this.direction === 'backward' ? e.target : e.source;
        c.set(k, (c.get(k) || 0) + 1);
      }
      this._counts = c;
      this._countsFor = this.edges.size;
      return c;
    }

    // More edges in the graph's direction than drawn: the spec's frontier rule.
    isFrontier(n) {
      const deg = this.direction === 'backward' ? n.in_degree : n.out_degree;
      if (typeof deg !== 'number') return false;
      return (this.drawnCounts().get(n.id) || 0) < deg;
    }

    counts() {
      return { nodes: this.nodes.size, ops: this.ops.size, edges: this.edges.size };
    }
  }

  const VAR_W = 190, VAR_H = 46, OP_R = 13, OP_COL_W = 128, GROUP_W = 150, GROUP_H = 38, DUMMY_W = 24;
  const COL_GAP = 40, ROW_GAP = 14, OP_LABEL_H = 16;
  // A vertex that would bring more than FAN_LIMIT new neighbours into the
  // drawing keeps FAN_KEEP of them; the others become one "+N more" group.
  const FAN_LIMIT = 8, FAN_KEEP = 4;

  // The model as arcs in the direction data flows (variable -> op -> variable,
  // or variable -> variable for an edge without op) between vertices named
  // 'n:' + variable id and 'o:' + op id.
  function flowOf(model) {
    const V = [];
    for (const id of model.nodes.keys()) V.push('n:' + id);
    for (const id of model.ops.keys()) V.push('o:' + id);
    const succ = new Map(V.map((v) => [v, new Set()]));
    const pred = new Map(V.map((v) => [v, new Set()]));
    const add = (a, b) => {
      if (a === b || !succ.has(a) || !succ.has(b)) return;
      succ.get(a).add(b);
      pred.get(b).add(a);
    };
    for (const e of model.edges.values()) {
      if (e.op != null) {
        add('n:' + e.source, 'o:' + e.op);
        add('o:' + e.op, 'n:' + e.target);
      } else {
        add('n:' + e.source, 'n:' + e.target);
      }
    }
    return { V, succ, pred };
  }

  // Everything reached from `from` along `away` without entering `stop`.
  function reachOutside(from, away, stop) {
    const seen = new Set();
    const todo = [];
    for (const v of from) if (!stop.has(v) && !seen.has(v)) { seen.add(v); todo.push(v); }
    while (todo.length) {
      const v = todo.pop();
      for (const w of away.get(v)) if (!stop.has(w) && !seen.has(w)) { seen.add(w); todo.push(w); }
    }
    return seen;
  }

  // Which vertices are drawn. The walk goes out from the start node (against
  // the data flow in a backward graph); where a vertex would bring in more
  // than FAN_LIMIT new neighbours, FAN_KEEP of them are drawn and the rest,
  // with whatever is reached only through them, fold into one group hanging
  // off that vertex (the hub). Pinned ids (marked, selected, asked for) and
  // every way from the start to them stay drawn; `open` names hubs whose
  // group the user opened.
  function collapseGraph(model, flow, pinned, open) {
    const backward = model.direction === 'backward';
    const away = backward ? flow.pred : flow.succ;
    const toward = backward ? flow.succ : flow.pred;
    let roots = [];
    for (const n of model.nodes.values()) if (n.start && away.has('n:' + n.id)) roots.push('n:' + n.id);
    if (!roots.length) roots = flow.V.filter((v) => toward.get(v).size === 0);

    const needed = new Set();
    const todo = [];
    for (const id of pinned) {
      for (const k of ['n:' + id, 'o:' + id]) if (away.has(k) && !needed.has(k)) { needed.add(k); todo.push(k); }
    }
    while (todo.length) {
      const v = todo.pop();
      for (const u of toward.get(v)) if (!needed.has(u)) { needed.add(u); todo.push(u); }
    }

    const forced = new Set(open);
    for (let round = 0; ; round++) {
      const visible = new Set();
      const order = [];
      const groups = new Map();
      const visit = (v) => { if (!visible.has(v)) { visible.add(v); order.push(v); } };
      let pending = roots;
      let i = 0;
      for (;;) {
        pending.forEach(visit);
        for (; i < order.length; i++) {
          const hub = order[i];
          const fresh = [];
          let shown = 0;
          for (const c of away.get(hub)) {
            if (visible.has(c)) shown++; else fresh.push(c);
          }
          let take = fresh;
          if (!forced.has(hub) && shown + fresh.length > FAN_LIMIT) {
            const must = fresh.filter((c) => needed.has(c));
            const rest = fresh.filter((c) => !needed.has(c));
            const room = Math.max(0, FAN_KEEP - shown - must.length);
            if (rest.length - room >= 2) {
              take = must.concat(rest.slice(0, room));
              groups.set(hub, rest.slice(room));
            }
          }
          take.forEach(visit);
        }
        // What neither the walk reached nor a group hides (nodes an expansion
        // the other way brought in) is drawn as well, walking on from there.
        const hidden = reachOutside([].concat(...groups.values()), away, visible);
        pending = flow.V.filter((v) => !visible.has(v) && !hidden.has(v));
        if (!pending.length) break;
      }
      // A group's members may have been drawn through another vertex since.
      let again = false;
      for (const [hub, members] of groups) {
        const left = members.filter((m) => !visible.has(m));
        if (left.length < 2) {
          groups.delete(hub);
          if (left.length) { forced.add(hub); again = true; }
        } else {
          groups.set(hub, left);
        }
      }
      if (again && round < 4) continue;
      const out = [];
      for (const [hub, members] of groups) {
        const behind = reachOutside(members, away, visible);
        out.push({ key: 'g:' + hub, hub, members, hidden: behind.size });
      }
      return { visible, groups: out, hidden: flow.V.length - visible.size, backward };
    }
  }

  // What is drawn: the visible vertices, the groups, and arcs between them in
  // the direction data flows.
  function drawnGraph(model, pinned, open) {
    const flow = flowOf(model);
    const c = collapseGraph(model, flow, pinned, open);
    const V = flow.V.filter((v) => c.visible.has(v));
    const kind = new Map(V.map((v) => [v, v[0] === 'n' ? 'node' : 'op']));
    const arcs = [];
    for (const a of V) for (const b of flow.succ.get(a)) if (c.visible.has(b)) arcs.push([a, b]);
    for (const g of c.groups) {
      V.push(g.key);
      kind.set(g.key, 'group');
      arcs.push(c.backward ? [g.key, g.hub] : [g.hub, g.key]);
    }
    return { V, kind, arcs, groups: c.groups, hidden: c.hidden };
  }

  // Crossings between two neighbouring layers: `pairs` holds, per arc, the
  // positions of its two ends; counted as inversions with a Fenwick tree.
  function countInversions(pairs, width) {
    pairs.sort((p, q) => p[0] - q[0] || p[1] - q[1]);
    const tree = new Array(width + 1).fill(0);
    let crossings = 0, seen = 0;
    for (const [, b] of pairs) {
      let le = 0;
      for (let i = b + 1; i > 0; i -= i & -i) le += tree[i];
      crossings += seen - le;
      for (let i = b + 1; i <= width; i += i & -i) tree[i]++;
      seen++;
    }
    return crossings;
  }

  // Least squares under order: the values closest to `target` (weighted) that
  // never decrease, by pooling adjacent violators.
  function isotonic(target, weight) {
    const blocks = [];
    for (let i = 0; i < target.length; i++) {
      let b = { w: weight[i], s: weight[i] * target[i], n: 1 };
      while (blocks.length && blocks[blocks.length - 1].s / blocks[blocks.length - 1].w >= b.s / b.w) {
        const p = blocks.pop();
        b = { w: p.w + b.w, s: p.s + b.s, n: p.n + b.n };
      }
      blocks.push(b);
    }
    const out = [];
    for (const b of blocks) for (let k = 0; k < b.n; k++) out.push(b.s / b.w);
    return out;
  }

  // Layered layout, left to right in the direction data flows (Sugiyama's
  // scheme): cycles broken, vertices put in layers, arcs longer than one layer
  // cut by dummy vertices, the order within layers chosen to cross few arcs,
  // then each vertex placed as near as its order allows to its neighbours.
  function layoutGraph(dg) {
    const kind = new Map(dg.kind);
    const V = dg.V;
    const key = (a, b) => a + '\u0000' + b;
    const arcSet = new Set(dg.arcs.map(([a, b]) => key(a, b)));

    // An op that writes a variable and reads it again (a decision it then
    // applies) is a cycle of two: the read is drawn as a short loop back
    // into the op and left out of the layout.
    const loops = [];
    const rest = [];
    for (const [a, b] of dg.arcs) {
      const ka = kind.get(a), kb = kind.get(b);
      if (arcSet.has(key(b, a)) && ((ka === 'node' && kb === 'op') || (ka === kb && a > b))) loops.push([a, b]);
      else rest.push([a, b]);
    }

    // Longer cycles: a depth-first walk from the sources reverses the arcs
    // that lead back to a vertex on its stack.
    const S0 = new Map(V.map((v) => [v, []]));
    const indeg0 = new Map(V.map((v) => [v, 0]));
    for (const [a, b] of rest) { S0.get(a).push(b); indeg0.set(b, indeg0.get(b) + 1); }
    const state = new Map();
    const reversed = new Set();
    for (const r of V.filter((v) => indeg0.get(v) === 0).concat(V)) {
      if (state.has(r)) continue;
      state.set(r, 1);
      const stack = [[r, 0]];
      while (stack.length) {
        const top = stack[stack.length - 1];
        const next = S0.get(top[0]);
        if (top[1] < next.length) {
          const w = next[top[1]++];
          const st = state.get(w);
          if (st === 1) reversed.add(key(top[0], w));
          else if (!st) { state.set(w, 1); stack.push([w, 0]); }
        } else {
          state.set(top[0], 2);
          stack.pop();
        }
      }
    }
    // Arcs of the layout: [from, to, the drawn arc it stands for].
    const larcs = [];
    const lset = new Set();
    for (const [a, b] of rest) {
      const [u, v] = reversed.has(key(a, b)) ? [b, a] : [a, b];
      if (lset.has(key(u, v))) continue;
      lset.add(key(u, v));
      larcs.push([u, v]);
    }
    const S = new Map(V.map((v) => [v, []]));
    const P = new Map(V.map((v) => [v, []]));
    for (const [u, v] of larcs) { S.get(u).push(v); P.get(v).push(u); }

    // Layers: longest path from the sources; a source then moves right next
    // to its nearest consumer.
    const indeg = new Map(V.map((v) => [v, P.get(v).length]));
    const queue = V.filter((v) => indeg.get(v) === 0);
    const topo = [];
    for (let qi = 0; qi < queue.length; qi++) {
      const v = queue[qi];
      topo.push(v);
      for (const w of S.get(v)) {
        indeg.set(w, indeg.get(w) - 1);
        if (indeg.get(w) === 0) queue.push(w);
      }
    }
    const layer = new Map();
    for (const v of topo) {
      let l = 0;
      for (const u of P.get(v)) l = Math.max(l, layer.get(u) + 1);
      layer.set(v, l);
    }
    for (let i = topo.length - 1; i >= 0; i--) {
      const v = topo[i];
      if (P.get(v).length === 0 && S.get(v).length) {
        let m = Infinity;
        for (const w of S.get(v)) m = Math.min(m, layer.get(w));
        layer.set(v, m - 1);
      }
    }
    let minL = Infinity;
    for (const l of layer.values()) minL = Math.min(minL, l);
    for (const v of topo) layer.set(v, layer.get(v) - (minL === Infinity ? 0 : minL));

    // Dummies: one per layer crossed by a longer arc.
    const up = new Map(topo.map((v) => [v, []]));
    const down = new Map(topo.map((v) => [v, []]));
    const chains = new Map();
    let dummies = 0;
    const all = topo.slice();
    for (const [u, v] of larcs) {
      let prev = u;
      const chain = [];
      for (let l = layer.get(u) + 1; l < layer.get(v); l++) {
        const d = 'd:' + (dummies++);
        kind.set(d, 'dummy');
        layer.set(d, l);
        up.set(d, []); down.set(d, []);
        down.get(prev).push(d); up.get(d).push(prev);
        all.push(d);
        chain.push(d);
        prev = d;
      }
      down.get(prev).push(v); up.get(v).push(prev);
      chains.set(key(u, v), chain);
    }

    // First order: depth first from the sources, so what hangs together
    // starts together.
    const rank = new Map();
    const dfs = (r) => {
      const stack = [r];
      while (stack.length) {
        const v = stack.pop();
        if (rank.has(v)) continue;
        rank.set(v, rank.size);
        const next = down.get(v).concat(up.get(v));
        for (let i = next.length - 1; i >= 0; i--) if (!rank.has(next[i])) stack.push(next[i]);
      }
    };
    for (const v of all) if (up.get(v).length === 0) dfs(v);
    for (const v of all) dfs(v);
    let layers = [];
    for (const v of all) (layers[layer.get(v)] = layers[layer.get(v)] || []).push(v);
    for (let i = 0; i < layers.length; i++) layers[i] = (layers[i] || []).sort((a, b) => rank.get(a) - rank.get(b));

    const pos = new Map();
    const index = () => { for (const L of layers) L.forEach((v, i) => pos.set(v, i)); };
    index();
    const crossingsAt = (i) => {
      const pairs = [];
      for (const v of layers[i]) for (const w of down.get(v)) pairs.push([pos.get(v), pos.get(w)]);
      return countInversions(pairs, layers[i + 1].length);
    };
    const crossings = () => {
      let c = 0;
      for (let i = 0; i + 1 < layers.length; i++) c += crossingsAt(i);
      return c;
    };
    // The median position of a vertex's neighbours in the fixed layer; with
    // an even count, the two middle ones weighted toward the denser side.
    const median = (ps) => {
      const n = ps.length;
      if (!n) return -1;
      ps.sort((a, b) => a - b);
      const m = n >> 1;
      if (n % 2) return ps[m];
      if (n === 2) return (ps[0] + ps[1]) / 2;
      const l = ps[m - 1] - ps[0], r = ps[n - 1] - ps[m];
      return l + r === 0 ? (ps[m - 1] + ps[m]) / 2 : (ps[m - 1] * r + ps[m] * l) / (l + r);
    };
    const sortByMedian = (L, nbrs) => {
      const med = new Map(L.map((v) => [v, median(nbrs.get(v).map((u) => pos.get(u)))]));
      const movable = L.filter((v) => med.get(v) >= 0).sort((a, b) => med.get(a) - med.get(b) || pos.get(a) - pos.get(b));
      let k = 0;
      for (let i = 0; i < L.length; i++) if (med.get(L[i]) >= 0) L[i] = movable[k++];
      L.forEach((v, i) => pos.set(v, i));
    };
    // Crossings among the arcs of v and w when v comes first.
    const pairCross = (v, w) => {
      let c = 0;
      for (const nb of [up, down]) {
        for (const x of nb.get(v)) for (const y of nb.get(w)) if (pos.get(x) > pos.get(y)) c++;
      }
      return c;
    };
    const transpose = () => {
      for (let pass = 0, better = true; better && pass < 6; pass++) {
        better = false;
        for (const L of layers) {
          for (let j = 0; j + 1 < L.length; j++) {
            const v = L[j], w = L[j + 1];
            if (pairCross(w, v) < pairCross(v, w)) {
              L[j] = w; L[j + 1] = v;
              pos.set(w, j); pos.set(v, j + 1);
              better = true;
            }
          }
        }
      }
    };
    const size = all.length;
    let best = layers.map((L) => L.slice());
    let bestC = crossings();
    for (let it = 0, stale = 0; it < 24 && stale < 4 && bestC > 0; it++) {
      if (it % 2 === 0) for (let i = 1; i < layers.length; i++) sortByMedian(layers[i], up);
      else for (let i = layers.length - 2; i >= 0; i--) sortByMedian(layers[i], down);
      if (size <= 1500) transpose();
      const c = crossings();
      if (c < bestC) { bestC = c; best = layers.map((L) => L.slice()); stale = 0; } else stale++;
    }
    layers = best;
    index();

    // Vertical places: each layer keeps its order and its spacing, and its
    // vertices move toward the mean of their neighbours (a dummy pulls harder,
    // so long arcs run straight); repeated over the layers until it settles.
    // An op with a loop may carry its label above the diamond (see draw).
    const looped = new Set(loops.map(([, b]) => b));
    const ext = (v) => {
      const k = kind.get(v);
      if (k === 'node') return [VAR_H / 2, VAR_H / 2];
      if (k === 'op') return [OP_R + (looped.has(v) ? OP_LABEL_H : 0), OP_R + OP_LABEL_H];
      if (k === 'group') return [GROUP_H / 2, GROUP_H / 2];
      return [3, 3];
    };
    const sep = (a, b) => ext(a)[1] + ext(b)[0] + (kind.get(a) === 'dummy' || kind.get(b) === 'dummy' ? 8 : ROW_GAP);
    const weightOf = (a, b) => {
      const da = kind.get(a) === 'dummy', db = kind.get(b) === 'dummy';
      return da && db ? 8 : (da || db ? 2 : 1);
    };
    const y = new Map();
    for (const L of layers) {
      let t = 0;
      L.forEach((v, i) => { if (i) t += sep(L[i - 1], v); y.set(v, t); });
      L.forEach((v) => y.set(v, y.get(v) - t / 2));
    }
    const place = (L) => {
      if (!L.length) return;
      const target = [], weight = [], offset = [];
      let o = 0;
      L.forEach((v, i) => {
        if (i) o += sep(L[i - 1], v);
        offset.push(o);
        let sw = 0, s = 0;
        for (const u of up.get(v).concat(down.get(v))) { const w = weightOf(u, v); sw += w; s += w * y.get(u); }
        if (sw === 0) { sw = 0.01; s = 0.01 * y.get(v); }
        target.push(s / sw - o);
        weight.push(sw);
      });
      isotonic(target, weight).forEach((z, i) => y.set(L[i], z + offset[i]));
    };
    const sweeps = size > 1500 ? 8 : 40;
    for (let it = 0; it < sweeps; it++) {
      if (it % 2 === 0) for (let i = 0; i < layers.length; i++) place(layers[i]);
      else for (let i = layers.length - 1; i >= 0; i--) place(layers[i]);
    }

    // Columns as wide as their widest vertex; a gap widens with the steepest
    // arc across it so that arc still reads.
    const widthOf = (v) => ({ node: VAR_W, op: OP_COL_W, group: GROUP_W }[kind.get(v)] || DUMMY_W);
    const cols = [];
    let x = 0;
    for (let i = 0; i < layers.length; i++) {
      const L = layers[i];
      const w = L.reduce((m, v) => Math.max(m, widthOf(v)), DUMMY_W);
      cols.push({ x0: x, x1: x + w });
      let steep = 0;
      if (i + 1 < layers.length) for (const v of L) for (const u of down.get(v)) steep = Math.max(steep, Math.abs(y.get(u) - y.get(v)));
      x += w + COL_GAP + Math.min(90, steep * 0.08);
    }
    for (let i = 0; i < layers.length; i++) {
      const { x0, x1 } = cols[i];
      const cx = (x0 + x1) / 2;
      for (const v of layers[i]) {
        const cy = y.get(v);
        const k = kind.get(v);
        const col = { cx, cy, x0, x1 };
        if (k === 'node') pos.set(v, Object.assign(col, { x: cx - VAR_W / 2, y: cy - VAR_H / 2, w: VAR_W, h: VAR_H }));
        else if (k === 'op') pos.set(v, Object.assign(col, { x: cx - OP_R, y: cy - OP_R, w: OP_R * 2, h: OP_R * 2 }));
        else if (k === 'group') pos.set(v, Object.assign(col, { x: cx - GROUP_W / 2, y: cy - GROUP_H / 2, w: GROUP_W, h: GROUP_H }));
        else pos.set(v, Object.assign(col, { x: cx, y: cy, w: 0, h: 0, dummy: true }));
      }
    }
    return { pos, chains, reversed, loops, arcs: rest, crossings: bestC };
  }

  // ------------------------------------------------------------------ graph view (SVG)

  let markerSeq = 0;

  // Shortens an SVG text until it is at most maxW wide (binary search on the
  // length); does nothing when the text is not rendered (length 0).
  function fitText(el, maxW) {
    const full = el.textContent;
    let w;
    try { w = el.getComputedTextLength(); } catch (_) { return; }
    if (!w || w <= maxW) return;
    const base = full.endsWith('\u2026') ? full.slice(0, -1) : full;
    let lo = 1, hi = base.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      el.textContent = base.slice(0, mid) + '\u2026';
      if (el.getComputedTextLength() <= maxW) lo = mid; else hi = mid - 1;
    }
    el.textContent = base.slice(0, lo) + '\u2026';
  }

  class GraphView {
    constructor(model, handlers) {
      this.model = model;
      this.handlers = handlers || {};
      this.t = { x: 0, y: 0, k: 1 };
      this.selected = null;
      // Ids drawn marked: a verdict's blamed op and the evidence's path to it.
      this.marked = new Set(this.handlers.marked || []);
      this.layout = null;
      this.drawn = null;
      // Hubs whose "+N more" group the user opened, and ids asked to be drawn.
      this.open = new Set();
      this.pins = new Set();
      this.expansions = 0;
      this.markerId = 'mt-arrow-' + (++markerSeq);

      this.svg = s('svg', {
        class: 'graph', 'data-testid': 'graph', role: 'group', 'aria-label': 'Provenance graph',
        'data-expansions': '0',
      });
      const defs = s('defs', null,
        s('marker', { id: this.markerId, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
          s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' })));
      this.bg = s('rect', { class: 'bg', x: -1e5, y: -1e5, width: 2e5, height: 2e5 });
      this.viewport = s('g', { class: 'viewport' });
      this.edgeLayer = s('g', { class: 'edges' });
      this.nodeLayer = s('g', { class: 'nodes' });
      this.viewport.append(this.edgeLayer, this.nodeLayer);
      this.svg.append(defs, this.bg, this.viewport);

      const zin = h('button', { type: 'button', title: 'Zoom in', 'aria-label': 'Zoom in', 'data-testid': 'zoom-in' }, '+');
      const zout = h('button', { type: 'button', title: 'Zoom out', 'aria-label': 'Zoom out', 'data-testid': 'zoom-out' }, '\u2212');
      const fit = h('button', { type: 'button', title: 'Fit the graph in the view', 'data-testid': 'zoom-fit' }, 'fit');
      zin.addEventListener('click', () => this.zoomCenter(1.25));
      zout.addEventListener('click', () => this.zoomCenter(0.8));
      fit.addEventListener('click', () => this.fit());
      this.el = h('div', { class: 'graphbox' }, this.svg, h('div', { class: 'zoomctl' }, zin, zout, fit));

      this.installPanZoom();
    }

    installPanZoom() {
      let drag = null;
      this.svg.addEventListener('pointerdown', (e) => {
        if (e.button !== 0) return;
        if (e.target.closest && e.target.closest('.gnode, .gop, .ggroup, .badge')) return;
        drag = { id: e.pointerId, x: e.clientX, y: e.clientY, tx: this.t.x, ty: this.t.y };
        this.svg.setPointerCapture(e.pointerId);
        this.svg.classList.add('panning');
      });
      this.svg.addEventListener('pointermove', (e) => {
        if (!drag || e.pointerId !== drag.id) return;
        this.t.x = drag.tx + (e.clientX - drag.x);
        this.t.y = drag.ty + (e.clientY - drag.y);
        this.applyTransform();
      });
      const end = (e) => {
        if (!drag || e.pointerId !== drag.id) return;
        drag = null;
        this.svg.classList.remove('panning');
      };
      this.svg.addEventListener('pointerup', end);
      this.svg.addEventListener('pointercancel', end);
      this.svg.addEventListener('wheel', (e) => {
        e.preventDefault();
        const r = this.svg.getBoundingClientRect();
        const dy = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
        this.zoomAt(e.clientX - r.left, e.clientY - r.top, Math.exp(-dy * 0.0015));
      }, { passive: false });
    }

    size() {
      const r = this.svg.getBoundingClientRect();
      return { w: r.width || 800, h: r.height || 500 };
    }

    applyTransform() {
      this.viewport.setAttribute('transform', `translate(${this.t.x.toFixed(2)},${this.t.y.toFixed(2)}) scale(${this.t.k.toFixed(4)})`);
    }

    zoomAt(px, py, factor) {
      const k = Math.min(4, Math.max(0.05, this.t.k * factor));
      const f = k / this.t.k;
      this.t.x = px - (px - this.t.x) * f;
      this.t.y = py - (py - this.t.y) * f;
      this.t.k = k;
      this.applyTransform();
    }

    zoomCenter(factor) {
      const { w, h: hh } = this.size();
      this.zoomAt(w / 2, hh / 2, factor);
    }

    bounds() {
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      // Boxes, op labels under their diamonds, and the expand badges.
      for (const p of this.layout.pos.values()) {
        x0 = Math.min(x0, p.x0 - 12); y0 = Math.min(y0, p.y - 4);
        x1 = Math.max(x1, p.x1 + 12); y1 = Math.max(y1, p.y + p.h + OP_LABEL_H);
      }
      if (x0 === Infinity) return { x0: 0, y0: 0, x1: 1, y1: 1 };
      return { x0, y0, x1, y1 };
    }

    fit() {
      if (!this.layout) return;
      const b = this.bounds();
      const { w, h: hh } = this.size();
      const pad = 30;
      const k = Math.min(1.2, Math.max(0.05, Math.min((w - 2 * pad) / (b.x1 - b.x0 + 1), (hh - 2 * pad) / (b.y1 - b.y0 + 1))));
      this.t.k = k;
      this.t.x = (w - (b.x1 - b.x0) * k) / 2 - b.x0 * k;
      this.t.y = (hh - (b.y1 - b.y0) * k) / 2 - b.y0 * k;
      this.applyTransform();
    }

    // Re-lays out the model; with `anchor` (a node or op id) the view keeps
    // it where it was on the screen, otherwise the graph is fitted.
    refresh(anchor) {
      let before = null;
      const at = (id) => this.layout && (this.layout.pos.get('n:' + id) || this.layout.pos.get('o:' + id));
      if (anchor && this.layout) {
        const p = at(anchor);
        if (p) before = { x: p.cx * this.t.k + this.t.x, y: p.cy * this.t.k + this.t.y };
      }
      const pinned = new Set([...this.marked, ...this.pins]);
      if (this.selected) pinned.add(this.selected);
      if (anchor) pinned.add(anchor);
      this.drawn = drawnGraph(this.model, pinned, this.open);
      this.layout = layoutGraph(this.drawn);
      this.draw();
      if (before) {
        const p = at(anchor);
        if (p) {
          this.t.x = before.x - p.cx * this.t.k;
          this.t.y = before.y - p.cy * this.t.k;
        }
        this.applyTransform();
      } else if (anchor && this.layout && this.hasView) {
        this.applyTransform();
      } else {
        this.fit();
        this.hasView = true;
        // A graph too big to read even when fitted opens around its start
        // node at a readable scale instead ("fit" shows it all).
        if (this.t.k < 0.3) {
          const startId = Array.from(this.model.nodes.values()).filter((n) => n.start).map((n) => n.id)[0];
          if (startId) {
            this.t.k = 0.75;
            // Backward graphs grow to the left of the start, forward ones to the right.
            this.centerOn(startId, this.model.direction === 'backward' ? 0.75 : 0.25);
          }
        }
      }
      if (this.handlers.onLayout) this.handlers.onLayout(this.drawn);
    }

    // Opens the "+N more" group hanging off vertex `hub`.
    openGroup(hub) {
      this.open.add(hub);
      this.expansions++;
      this.refresh(hub.slice(2));
      this.svg.setAttribute('data-expansions', String(this.expansions));
    }

    // Makes sure a node of the model is drawn (it may sit in a group).
    reveal(id) {
      if (!this.layout || this.layout.pos.has('n:' + id) || !this.model.nodes.has(id)) return;
      this.pins.add(id);
      this.refresh(id);
    }

    draw() {
      clear(this.edgeLayer);
      clear(this.nodeLayer);
      const pos = this.layout.pos;
      const model = this.model;
      const marker = `url(#${this.markerId})`;
      const key = (a, b) => a + '\u0000' + b;

      // An arc is a run of horizontal stretches (through the column of each
      // vertex it passes) joined by curves across the gaps between columns.
      const path = (runs) => {
        let d = `M${runs[0][0]},${runs[0][2]} H${runs[0][1]}`;
        for (let i = 1; i < runs.length; i++) {
          const [, xa, ya] = runs[i - 1];
          const [xb, xe, yb] = runs[i];
          const dx = (xb - xa) / 2;
          d += ` C${xa + dx},${ya} ${xb - dx},${yb} ${xb},${yb}`;
          if (xe !== xb) d += ` H${xe}`;
        }
        return d;
      };
      const runsOf = (u, v) => {
        const pu = pos.get(u), pv = pos.get(v);
        const runs = [[pu.x + pu.w, pu.x1, pu.cy]];
        for (const d of this.layout.chains.get(key(u, v)) || []) {
          const pd = pos.get(d);
          runs.push([pd.x0, pd.x1, pd.cy]);
        }
        runs.push([pv.x0, pv.x - 1, pv.cy]);
        return runs;
      };
      const cls = (a, b) => {
        if (a[0] === 'g' || b[0] === 'g') return 'group';
        return a[0] === 'o' ? 'out' : (b[0] === 'o' ? 'in' : 'direct');
      };
      for (const [a, b] of this.layout.arcs) {
        if (!pos.has(a) || !pos.has(b)) continue;
        let runs;
        const back = this.layout.reversed.has(key(a, b));
        if (back) {
          // Laid out from b to a; drawn from a, leftwards, into b.
          runs = runsOf(b, a).reverse().map(([x0, x1, yy]) => [x1, x0, yy]);
          const pa = pos.get(a), pb = pos.get(b);
          runs[0][0] = pa.x; runs[runs.length - 1][1] = pb.x + pb.w + 1;
        } else {
          runs = runsOf(a, b);
        }
        this.edgeLayer.appendChild(s('path', { d: path(runs), class: 'edge ' + cls(a, b) + (back ? ' back' : ''), 'marker-end': marker }));
      }
      // A variable an op wrote and reads again: a short loop from the
      // variable's left side into the tip of the op on its side (the op's
      // label then moves above the diamond when that is the bottom tip).
      const labelAbove = new Set();
      for (const [a, b] of this.layout.loops) {
        const pa = pos.get(a), pb = pos.get(b);
        if (!pa || !pb) continue;
        const below = pa.cy > pb.cy;
        if (below) labelAbove.add(b);
        const x1 = pa.x, y1 = pa.cy + (below ? 8 : -8), x2 = pb.cx, y2 = below ? pb.y + pb.h + 1 : pb.y - 1;
        const bend = (below ? 1 : -1) * Math.max(18, Math.abs(y2 - y1) * 0.4);
        const d = `M${x1},${y1} C${x1 - 28},${y1} ${x2},${y2 + bend} ${x2},${y2}`;
        this.edgeLayer.appendChild(s('path', { d, class: 'edge readback', 'marker-end': marker },
          s('title', null, `${a.slice(2)} is read back by the op that wrote it`)));
      }

      for (const [id, op] of model.ops) {
        const p = pos.get('o:' + id);
        if (!p) continue;
        const c = catColors(op.category);
        const r = OP_R;
        const name = op.name || shortOp(id);
        const short = op.name && /\.[^.]/.test(op.name) ? op.name.slice(op.name.lastIndexOf('.') + 1) : name;
        const g = s('g', {
          class: 'gop' + (this.marked.has(id) ? ' marked' : ''), 'data-testid': 'graph-op', 'data-id': id,
          'data-marked': this.marked.has(id) ? '1' : '0', transform: `translate(${p.cx},${p.cy})`,
          tabindex: 0, role: 'button', 'aria-label': `op ${op.name || id}`,
        },
          s('title', null, `${op.name || ''}\n${id}${op.category ? '\ncategory: ' + op.category : ''}`),
          s('path', { d: `M0,${-r} L${r},0 L0,${r} L${-r},0 Z`, style: { fill: c.fill, stroke: c.stroke } }),
          s('text', { class: 'oplabel', x: 0, y: labelAbove.has('o:' + id) ? -r - 6 : r + 12, 'text-anchor': 'middle' }, truncate(short, 30)));
        const act = () => this.handlers.onOp && this.handlers.onOp(id, op);
        g.addEventListener('click', act);
        g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); act(); } });
        this.nodeLayer.appendChild(g);
      }

      for (const [id, n] of model.nodes) {
        const p = pos.get('n:' + id);
        if (!p) continue;
        const c = catColors(n.category);
        const frontier = model.isFrontier(n);
        const cls = ['gnode'];
        if (frontier) cls.push('frontier');
        if (n.start) cls.push('start');
        if (this.selected === id) cls.push('selected');
        if (this.marked.has(id)) cls.push('marked');
        const g = s('g', {
          class: cls.join(' '), 'data-testid': 'graph-node', 'data-id': id, 'data-marked': this.marked.has(id) ? '1' : '0',
          transform: `translate(${p.x},${p.y})`,
          tabindex: 0, role: 'button', 'aria-label': `variable ${id}${frontier ? ', has more edges' : ''}`,
          'data-frontier': frontier ? '1' : '0',
        },
          s('title', null, `${id}${n.category ? '\ncategory: ' + n.category : ''}${n.preview ? '\n' + truncate(n.preview, 300) : ''}`),
          s('rect', { class: 'box', width: VAR_W, height: VAR_H, rx: 9, ry: 9, style: { fill: c.fill, stroke: c.stroke } }),
          s('text', { class: 'nid', x: 10, y: 18 }, truncate(id, 27)),
          s('text', { class: 'npreview', x: 10, y: 35 }, truncate(n.preview || (n.placeholder ? '' : '(empty)'), 34)));
        const select = () => this.handlers.onSelect && this.handlers.onSelect(id);
        g.addEventListener('click', select);
        g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); select(); } });
        if (frontier) {
          const bx = model.direction === 'backward' ? -2 : VAR_W + 2;
          const badge = s('g', {
            class: 'badge', 'data-testid': 'expand', 'data-id': id, transform: `translate(${bx},${VAR_H / 2})`,
            tabindex: 0, role: 'button', 'aria-label': `Expand ${id} ${model.direction}`,
          },
            s('title', null, `Expand ${model.direction}: show more of ${id}`),
            s('circle', { r: 9 }),
            s('path', { d: 'M-4.5,0 H4.5 M0,-4.5 V4.5', class: 'plus' }));
          const ex = (e) => { e.stopPropagation(); this.handlers.onExpand && this.handlers.onExpand(id); };
          badge.addEventListener('click', ex);
          badge.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); ex(e); } });
          g.appendChild(badge);
        }
        this.nodeLayer.appendChild(g);
      }

      for (const grp of this.drawn.groups) {
        const p = pos.get(grp.key);
        if (!p) continue;
        const names = new Set(grp.members.map((m) => (m[0] === 'o'
          ? (model.ops.get(m.slice(2)) || {}).name || 'op'
          : String(m.slice(2)).split(/[:@]/)[0])));
        const ops = grp.members.every((m) => m[0] === 'o');
        const what = names.size === 1 ? Array.from(names)[0] : (ops ? 'ops' : 'variables');
        const whatShort = /\.[^.]/.test(what) ? what.slice(what.lastIndexOf('.') + 1) : what;
        const more = `+${fmtNum(grp.members.length)} more`;
        const behind = grp.hidden - grp.members.length;
        const hub = grp.hub.slice(2);
        const list = grp.members.slice(0, 40).map((m) => m.slice(2)).join('\n') + (grp.members.length > 40 ? '\n\u2026' : '');
        const g = s('g', {
          class: 'ggroup', 'data-testid': 'graph-group', 'data-hub': hub, 'data-count': String(grp.members.length),
          'data-hidden': String(grp.hidden), transform: `translate(${p.x},${p.y})`, tabindex: 0, role: 'button',
          'aria-label': `${more} ${what} of ${hub}; open the group`,
        },
          s('title', null, `${more} ${what} of ${hub}${behind > 0 ? `, and ${fmtNum(behind)} more behind them` : ''} (click to show them)\n${list}`),
          s('rect', { class: 'box', width: GROUP_W, height: GROUP_H, rx: GROUP_H / 2, ry: GROUP_H / 2 }),
          s('text', { class: 'gmore', x: GROUP_W / 2, y: 16, 'text-anchor': 'middle' }, more),
          s('text', { class: 'gwhat', x: GROUP_W / 2, y: 30, 'text-anchor': 'middle' }, truncate(whatShort, 26)));
        const act = () => this.openGroup(grp.hub);
        g.addEventListener('click', act);
        g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); act(); } });
        this.nodeLayer.appendChild(g);
      }

      // Trim labels to the box by measuring them (skipped on big graphs, where
      // the character cut above is the only cut).
      if (pos.size <= 1200) {
        for (const t of this.nodeLayer.querySelectorAll('.gnode text')) fitText(t, VAR_W - 18);
        for (const t of this.nodeLayer.querySelectorAll('.gop text')) fitText(t, OP_COL_W + 8);
        for (const t of this.nodeLayer.querySelectorAll('.ggroup text')) fitText(t, GROUP_W - 20);
      }
      this.applyTransform();
    }

    select(id) {
      this.selected = id;
      for (const g of this.nodeLayer.querySelectorAll('.gnode')) {
        g.classList.toggle('selected', g.getAttribute('data-id') === id);
      }
    }

    // Pans the least needed to bring a drawn node into the view.
    ensureVisible(id) {
      this.reveal(id);
      const p = this.layout && this.layout.pos.get('n:' + id);
      if (!p) return;
      const { w, h: hh } = this.size();
      const x0 = p.x * this.t.k + this.t.x, x1 = (p.x + p.w) * this.t.k + this.t.x;
      const y0 = p.y * this.t.k + this.t.y, y1 = (p.y + p.h) * this.t.k + this.t.y;
      if (x0 >= 0 && y0 >= 0 && x1 <= w && y1 <= hh) return;
      this.centerOn(id);
    }

    // Pans so the node sits at `fx` of the view's width (default the middle).
    centerOn(id, fx) {
      const p = this.layout && this.layout.pos.get('n:' + id);
      if (!p) return;
      const { w, h: hh } = this.size();
      this.t.x = w * (fx == null ? 0.5 : fx) - p.cx * this.t.k;
      this.t.y = hh / 2 - p.cy * this.t.k;
      this.applyTransform();
    }
  }

  // ------------------------------------------------------------------ graph explorer (view + panel)

  // The graph component shared by the graph page and the query page: the SVG,
  // counts, a node panel, and expansion through the API.
  function graphExplorer(gid, graph, marked) {
    const model = new GraphModel(graph && graph.direction);
    model.merge(graph);
    const counts = h('span', { class: 'counts', 'data-testid': 'graph-counts', role: 'status' });
    const status = h('span', { class: 'muted small', role: 'status', 'data-testid': 'graph-status' });
    const grouped = h('span', { class: 'muted small', 'data-testid': 'graph-grouped' });
    const panel = h('aside', { class: 'nodepanel', 'data-testid': 'node-panel', 'aria-label': 'Node details', hidden: true });
    let panelToken = 0;

    const view = new GraphView(model, {
      marked: marked || [],
      onSelect: (id) => selectNode(id),
      onExpand: (id) => expand(id),
      onOp: (id, op) => showOp(id, op),
      onLayout: (dg) => {
        const n = dg.groups.length;
        grouped.textContent = n ? `${fmtNum(dg.hidden)} nodes and ops folded into ${n} \u201c+N more\u201d ${n === 1 ? 'group' : 'groups'} (click one to open it)` : '';
      },
    });

    const legend = h('div', { class: 'legend small muted' },
      h('span', null, h('span', { class: 'lg-var' }), ' variable'),
      h('span', null, h('span', { class: 'lg-op' }), ' op'),
      h('span', null, h('span', { class: 'lg-frontier' }), ' more edges (click + to expand)'),
      h('span', null, h('span', { class: 'lg-group' }), ' folded siblings (click to open)'),
      h('span', null, `direction: ${model.direction}`));

    const el = h('div', { class: 'explorer' },
      h('div', { class: 'graphcol' }, h('div', { class: 'graphinfo' }, counts, grouped, status), legend, view.el),
      panel);

    function updateCounts() {
      const c = model.counts();
      counts.textContent = `${fmtNum(c.nodes)} nodes, ${fmtNum(c.ops)} ops, ${fmtNum(c.edges)} edges`;
    }

    // Runs expansions ([node, dir] pairs) one after the other, merges what
    // they return, and re-lays out once, keeping `anchor` where it was.
    async function expandAll(steps, anchor) {
      status.textContent = `Expanding ${steps.map((x) => x[0]).join(', ')}\u2026`;
      view.svg.setAttribute('aria-busy', 'true');
      let failed = null;
      for (const [node, dir] of steps) {
        try {
          model.merge(await API.expand(gid, node, dir));
        } catch (e) {
          failed = e;
          break;
        }
      }
      view.expansions++;
      view.refresh(model.nodes.has(anchor) ? anchor : undefined);
      view.svg.setAttribute('data-expansions', String(view.expansions));
      view.svg.setAttribute('aria-busy', 'false');
      updateCounts();
      status.textContent = failed ? 'Expand failed: ' + failed.message : '';
    }

    async function expand(id, dir) {
      await expandAll([[id, dir || model.direction]], id);
      if (view.selected === id) renderPanelExpand(id);
    }

    // How to add a node that is not drawn: for the panel of node `sel`, a
    // node named by one of its op subgraphs is reached by expanding `sel`
    // (and, for a fellow input or output of the op, that node too), so it
    // arrives connected; anything else is expanded on its own.
    const addPlans = new Map();

    function pickable(id, plan) {
      const drawn = model.nodes.has(id);
      const b = h('button', { type: 'button', class: 'linkbtn mono' + (drawn ? '' : ' notdrawn'),
        title: drawn ? 'Select ' + id : 'Show ' + id + ' (not drawn yet)', 'data-testid': 'panel-node' }, id);
      b.addEventListener('click', () => {
        if (plan) addPlans.set(id, plan);
        selectNode(id);
      });
      return b;
    }

    let expandSlot = null;
    function renderPanelExpand(id) {
      if (!expandSlot) return;
      clear(expandSlot);
      const n = model.nodes.get(id);
      if (!n) {
        const add = h('button', { type: 'button', class: 'primary', 'data-testid': 'panel-add' }, 'Add to the graph');
        add.addEventListener('click', async () => {
          const plan = addPlans.get(id) || [[id, model.direction]];
          const anchor = plan.map((x) => x[0]).find((x) => model.nodes.has(x)) || id;
          await expandAll(plan, anchor);
          if (!model.nodes.has(id)) await expandAll([[id, model.direction]], anchor);
          if (view.selected === id) {
            view.select(id);
            view.ensureVisible(id);
            renderPanelExpand(id);
          }
        });
        expandSlot.append(add, h('span', { class: 'muted small' }, ' this node is not drawn yet'));
        return;
      }
      if (model.isFrontier(n)) {
        const b = h('button', { type: 'button', class: 'primary', 'data-testid': 'panel-expand' }, `Expand (${model.direction})`);
        b.addEventListener('click', () => expand(id));
        expandSlot.appendChild(b);
      } else {
        expandSlot.appendChild(h('span', { class: 'muted small' }, `All ${model.direction} edges are drawn.`));
      }
      const other = model.direction === 'backward' ? 'forward' : 'backward';
      const deg = other === 'backward' ? n.in_degree : n.out_degree;
      if (typeof deg === 'number' && deg > 0) {
        const b2 = h('button', { type: 'button', 'data-testid': 'panel-expand-other' }, `Expand ${other}`);
        b2.addEventListener('click', () => expand(id, other));
        expandSlot.append(' ', b2);
      }
    }

    // One op subgraph of node `sel`: `role` is 'written' (the op wrote sel)
    // or 'read' (the op read sel).
    function opBlock(sel, role, op) {
      const back = role === 'written';
      const dir = back ? 'backward' : 'forward';
      // A neighbour of sel through the op comes with sel's expansion; a fellow
      // input (or output) needs its own expansion towards the op too.
      const near = () => [[sel, dir]];
      const fellow = (x) => [[sel, dir], [x, dir]];
      const inPlan = (x) => (back ? near() : fellow(x));
      const outPlan = (x) => (back ? fellow(x) : near());
      return h('li', { class: 'opblock' },
        h('div', null, chip(op.category), ' ', h('strong', null, op.name || '(unnamed op)')),
        h('div', { class: 'mono small muted' }, op.op_id || op.id || ''),
        h('div', { class: 'small' }, h('span', { class: 'muted' }, 'inputs: '), idList(op.inputs, (x) => pickable(x, inPlan(x)), 8)),
        h('div', { class: 'small' }, h('span', { class: 'muted' }, 'outputs: '), idList(op.outputs, (x) => pickable(x, outPlan(x)), 8)));
    }

    function showOp(id, op) {
      panel.hidden = false;
      ++panelToken;
      view.select(null);
      clear(panel).append(
        panelHead('Op', id),
        h('p', null, chip(op.category), ' ', h('strong', null, op.name || '(unnamed op)')),
        h('p', { class: 'muted small' }, 'Its inputs and outputs show on the variables it connects; click a variable for its value and op subgraphs.'));
    }

    function panelHead(kindText, id) {
      const close = h('button', { type: 'button', class: 'close', 'aria-label': 'Close the panel', 'data-testid': 'panel-close' }, '\u00d7');
      close.addEventListener('click', () => { panel.hidden = true; view.select(null); });
      return h('div', { class: 'panelhead' }, h('h2', null, kindText, ' ', h('span', { class: 'mono', 'data-testid': 'panel-id' }, id)), close);
    }

    async function selectNode(id) {
      const token = ++panelToken;
      view.select(id);
      panel.hidden = false;
      view.ensureVisible(id);
      expandSlot = h('div', { class: 'expandslot' });
      clear(panel).append(panelHead('Variable', id), expandSlot, loadingView('Loading ' + id + '\u2026'));
      renderPanelExpand(id);
      let d;
      try {
        d = await API.node(gid, id);
      } catch (e) {
        if (token !== panelToken) return;
        panel.lastChild.remove();
        panel.appendChild(h('p', { class: 'formerror', role: 'alert' }, e.message));
        return;
      }
      if (token !== panelToken) return;
      panel.lastChild.remove();
      const dl = h('dl', { class: 'facts compact' });
      const add = (k, v) => { if (v !== undefined && v !== null && v !== '') dl.append(h('dt', null, k), h('dd', null, v)); };
      add('Class', d.class);
      add('Name', d.name);
      add('Version', d.version);
      add('Category', d.category ? chip(d.category) : null);
      add('Session', d.session_id ? h('span', { class: 'mono small' }, d.session_id) : null);
      add('Created', d.created_at);
      add('Comment', d.comment ? h('span', { class: 'text' }, d.comment) : null);
      panel.appendChild(dl);

      const value = d.value == null ? '' : (typeof d.value === 'string' ? d.value : JSON.stringify(d.value, null, 2));
      panel.append(
        h('h3', null, 'Value ', h('span', { class: 'muted small' }, d.value_chars != null ? `(${fmtNum(d.value_chars)} chars${d.truncated ? ', cut' : ''})` : '')),
        h('pre', { class: 'value', 'data-testid': 'node-value', tabindex: 0 }, value === '' ? '(empty)' : value));
      if (d.truncated) panel.appendChild(h('p', { class: 'muted small' }, 'The value is cut; the full text is in the database.'));
      if (d.metadata && typeof d.metadata === 'object' && Object.keys(d.metadata).length) {
        panel.appendChild(h('details', null, h('summary', null, 'Metadata'), h('pre', { class: 'value small' }, JSON.stringify(d.metadata, null, 2))));
      }
      const versions = asList(d.versions);
      if (versions.length) {
        const ul = h('ul', { class: 'versions', 'data-testid': 'node-versions' });
        for (const v of versions) ul.appendChild(h('li', null, v === id ? h('strong', { class: 'mono' }, v) : pickable(v)));
        panel.append(h('h3', null, `Versions (${versions.length})`), ul);
      }
      const wb = asList(d.written_by), rb = asList(d.read_by);
      panel.append(h('h3', null, `Written by (${wb.length})`),
        wb.length ? h('ul', { class: 'opblocks', 'data-testid': 'written-by' }, wb.map((op) => opBlock(id, 'written', op))) : h('p', { class: 'muted small' }, 'No op wrote it (a source).'));
      panel.append(h('h3', null, `Read by (${rb.length})`),
        rb.length ? h('ul', { class: 'opblocks', 'data-testid': 'read-by' }, rb.map((op) => opBlock(id, 'read', op))) : h('p', { class: 'muted small' }, 'No op read it.'));
      panel.appendChild(h('p', null, h('a', { href: routes.graph(gid, id, model.direction, 2) }, 'New graph from this node')));
    }

    updateCounts();
    return {
      el,
      view,
      // Call once the element is in the document (the view needs its size).
      start() { view.refresh(); },
    };
  }

  // ------------------------------------------------------------------ graph page

  function graphPage(ctx, gid) {
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

  // ------------------------------------------------------------------ query page

  const EXAMPLES = [
    'SHOW TRACES',
    'FIND cases GROUP BY trace.project_id RETURN trace.project_id AS system, count(*) AS failed',
    'FIND attributions RETURN trace, case, error_type, op_name LIMIT 20',
    'FIND ops WHERE op.category = \'retrieval\' RETURN trace, op_id, name LIMIT 20',
  ];
  const QUERY_KEY = 'memtrace.lastQuery';

  function cellText(v) {
    if (v === null || v === undefined) return null;
    if (Array.isArray(v)) return v.map((x) => (x !== null && typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ');
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }

  function queryPage(ctx) {
    setTitle('Query');
    // A statement in the address (#/query?q=...) is run at once: results can
    // be bookmarked and shared. Else the last statement of this tab is shown.
    const linked = ctx.parsed.query.get('q');
    let last = '';
    try { last = sessionStorage.getItem(QUERY_KEY) || ''; } catch (_) { /* storage off */ }
    if (linked) last = linked;
    const input = h('textarea', {
      id: 'q-input', 'data-testid': 'query-input', rows: 4, spellcheck: 'false', class: 'mono',
      placeholder: 'SHOW TRACES', value: last,
    });
    const run = h('button', { type: 'submit', class: 'primary', 'data-testid': 'query-run' }, 'Run');
    const result = h('div', { class: 'queryresult', 'data-testid': 'query-result' });
    const chips = h('div', { class: 'examples', 'aria-label': 'Example statements' },
      h('span', { class: 'muted small' }, 'Examples: '),
      EXAMPLES.map((ex) => {
        const b = h('button', { type: 'button', class: 'example mono', 'data-testid': 'query-example' }, ex);
        b.addEventListener('click', () => { input.value = ex; input.focus(); });
        return b;
      }));
    const form = h('form', { class: 'queryform', 'aria-label': 'Query' },
      h('label', { for: 'q-input' }, 'Statement ', h('span', { class: 'muted small' }, '(Ctrl+Enter runs)')),
      input, h('div', { class: 'formactions' }, run), chips);

    let runSeq = 0;
    async function exec() {
      const stmt = input.value.trim();
      if (!stmt) return;
      try { sessionStorage.setItem(QUERY_KEY, input.value); } catch (_) { /* storage off */ }
      // Keep the statement in the address without reloading the page.
      const here = routes.query(stmt);
      if (location.hash !== here) history.replaceState(null, '', here);
      const my = ++runSeq;
      run.disabled = true;
      result.setAttribute('aria-busy', 'true');
      clear(result).appendChild(loadingView('Running\u2026'));
      try {
        const data = await API.query(stmt);
        if (my !== runSeq || !ctx.alive()) return;
        renderResult(data);
      } catch (e) {
        if (my !== runSeq || !ctx.alive()) return;
        clear(result).append(
          h('p', { class: 'errhead' }, e.kind === 'query_error' ? 'The statement has an error:' : 'The query failed:'),
          h('pre', { class: 'queryerror', 'data-testid': 'query-error', role: 'alert' }, e.message));
      } finally {
        if (my === runSeq) {
          run.disabled = false;
          result.setAttribute('aria-busy', 'false');
          result.dataset.runs = String(my);
        }
      }
    }

    function renderResult(data) {
      const cols = asList(data.columns);
      const rows = asList(data.rows);
      const table = h('table', { class: 'grid', 'data-testid': 'query-table' },
        h('thead', null, h('tr', null, cols.map((c) => h('th', { scope: 'col' }, c)))));
      const tb = h('tbody');
      const traceCol = cols.indexOf('trace');
      // Columns that hold a variable's full node id or an op id open the
      // provenance graph of that node in the row's trace.
      const NODE_COLS = ['node', 'var', 'var.node_id', 'var.full_node_id', 'source', 'target', 'edge.source', 'edge.target'];
      const OP_COLS = ['op_id', 'op', 'op.id', 'via_op'];
      const isNodeCol = (c) => NODE_COLS.includes(c) || OP_COLS.includes(c);
      for (const r of rows) {
        const tr = h('tr', { 'data-testid': 'query-row' });
        const row = asList(r);
        const rowTrace = traceCol >= 0 && typeof row[traceCol] === 'string' ? row[traceCol] : null;
        row.forEach((v, i) => {
          const t = cellText(v);
          if (t === null) tr.appendChild(h('td', { class: 'muted' }, 'null'));
          else if (i === traceCol && typeof v === 'string') tr.appendChild(h('td', { class: 'mono' }, h('a', { href: routes.trace(v) }, t)));
          else if (rowTrace && typeof v === 'string' && isNodeCol(cols[i])) {
            tr.appendChild(h('td', { class: 'mono' }, h('a', { href: routes.graph(rowTrace, v, 'backward', 2), 'data-testid': 'query-node-link' }, t)));
          } else tr.appendChild(h('td', { class: typeof v === 'number' ? 'num' : '' }, t));
        });
        tb.appendChild(tr);
      }
      table.appendChild(tb);
      const info = h('p', { class: 'summary', 'data-testid': 'query-count' }, `${fmtNum(rows.length)} ${rows.length === 1 ? 'row' : 'rows'}`);
      clear(result).appendChild(info);
      if (data.truncated) {
        result.appendChild(h('p', { class: 'warn', 'data-testid': 'query-truncated', role: 'status' },
          `The result was cut at ${fmtNum(rows.length)} rows; add a LIMIT or a narrower WHERE.`));
      }
      const tableBox = h('div', { class: 'tablewrap' }, table);
      if (data.graph) {
        const gid = data.graph.trace;
        const tbBtn = h('button', { type: 'button', role: 'tab', 'data-testid': 'view-table', 'aria-selected': 'true' }, 'Table');
        const grBtn = h('button', { type: 'button', role: 'tab', 'data-testid': 'view-graph', 'aria-selected': 'false' }, 'Graph');
        const graphBox = h('div', { hidden: true });
        let ex = null;
        const show = (which) => {
          tbBtn.setAttribute('aria-selected', String(which === 'table'));
          grBtn.setAttribute('aria-selected', String(which === 'graph'));
          tableBox.hidden = which !== 'table';
          graphBox.hidden = which !== 'graph';
          if (which === 'graph' && !ex) {
            ex = graphExplorer(gid, data.graph);
            graphBox.appendChild(ex.el);
            ex.start();
          }
        };
        tbBtn.addEventListener('click', () => show('table'));
        grBtn.addEventListener('click', () => show('graph'));
        result.append(h('div', { class: 'toggle', role: 'tablist', 'aria-label': 'Result view', 'data-testid': 'view-toggle' }, tbBtn, grBtn), tableBox, graphBox);
      } else {
        result.appendChild(tableBox);
      }
    }

    form.addEventListener('submit', (e) => { e.preventDefault(); exec(); });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); exec(); }
    });

    appEl.append(h('h1', null, 'Query'), form, result);
    ctx.ready();
    if (linked) exec();
  }

  // ------------------------------------------------------------------ start

  async function loadHealth() {
    const el = document.querySelector('[data-testid="db-name"]');
    try {
      const hh = await API.health();
      el.textContent = hh.db ? hh.db : '';
      el.title = `database ${hh.db || ''}${hh.version ? ', memtrace ' + hh.version : ''}${hh.traces != null ? ', ' + hh.traces + ' traces' : ''}`;
    } catch (e) {
      el.textContent = 'server unreachable';
      el.classList.add('bad');
    }
  }

  window.addEventListener('hashchange', route);
  loadHealth();
  route();
})();
