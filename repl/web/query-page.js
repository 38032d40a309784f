// The query box, its examples, and the rows and graph a statement returns.

import { asList, clear, fmtNum, h } from './dom.js';
import { routes } from './routes.js';
import { API } from './api.js';
import { appEl, loadingView, setTitle } from './shell.js';
import { graphExplorer } from './graph-explorer.js';

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

export function queryPage(ctx) {
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
