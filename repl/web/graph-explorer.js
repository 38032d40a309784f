// The graph with its counts and node panel, expanded through the API; shared by the graph and query pages.

import { asList, clear, fmtNum, h } from './dom.js';
import { routes } from './routes.js';
import { API } from './api.js';
import { chip } from './categories.js';
import { loadingView } from './shell.js';
import { idList } from './node-links.js';
import { GraphModel } from './graph-model.js';
import { GraphView } from './graph-view.js';

// The graph component shared by the graph page and the query page: the SVG,
// counts, a node panel, and expansion through the API.
export function graphExplorer(gid, graph, marked) {
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
