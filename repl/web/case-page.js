// One failed case: evidence, the verdicts side by side, its graph and its labels.

import { asList, clear, h, shortOp } from './dom.js';
import { routes } from './routes.js';
import { API } from './api.js';
import { ERROR_TYPES, errorBadge } from './categories.js';
import { appEl, loadingView, setTitle, showError } from './shell.js';
import { nodeLink } from './node-links.js';

const METHOD_ORDER = ['evidence', 'llm', 'hybrid', 'human'];
const METHOD_LABELS = { evidence: 'Evidence flow', llm: 'LLM', hybrid: 'Hybrid', human: 'Human' };

export function casePage(ctx, gid, caseId) {
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
