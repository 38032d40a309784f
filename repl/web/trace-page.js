// One trace: its facts, its failed cases and its timeline of ops.

import { asList, clear, fmtNum, h, s, truncate } from './dom.js';
import { routes } from './routes.js';
import { API } from './api.js';
import { chip, errorBadge } from './categories.js';
import { appEl, loadingView, setTitle, showError } from './shell.js';
import { idList, nodeLink } from './node-links.js';

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

export function tracePage(ctx, gid) {
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
