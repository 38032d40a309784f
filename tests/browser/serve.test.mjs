// End-to-end tests of `memtrace serve`'s web viewer: node's built-in test
// runner, playwright-core driving Debian's Chromium.
//
//   MEMTRACE_URL=http://127.0.0.1:PORT node --test tests/browser/
//
// MEMTRACE_URL (required) is a running `memtrace serve` over a database with
// at least one trace that has failed cases; CHROMIUM names the browser
// (default /usr/bin/chromium); SCREENSHOTS names a folder for full-page PNGs.
// scripts/browser-tests.sh sets all of this up.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';

const BASE = (process.env.MEMTRACE_URL || '').replace(/\/+$/, '');
if (!BASE) {
  throw new Error('MEMTRACE_URL is not set: start `memtrace serve` and set MEMTRACE_URL to its address '
    + '(e.g. MEMTRACE_URL=http://127.0.0.1:8080), or run scripts/browser-tests.sh');
}
const SHOTS = process.env.SCREENSHOTS || '';
const EXECUTABLE = process.env.CHROMIUM || '/usr/bin/chromium';
const TEST_TIMEOUT = 90_000;

let browser;
// A trace with failed cases, one of its cases, and that case as the API gives it.
const fx = {};

async function apiGet(p) {
  const res = await fetch(BASE + p, { headers: { Accept: 'application/json' } });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

const enc = encodeURIComponent;
const caseHash = () => `#/case/${enc(fx.gid)}/${enc(fx.caseId)}`;

before(async () => {
  const list = await apiGet('/api/traces?failed=1');
  assert.ok(Array.isArray(list.traces) && list.traces.length > 0,
    'the database needs at least one trace with failed cases (GET /api/traces?failed=1 returned none)');
  const t = list.traces[0];
  fx.trace = t;
  fx.gid = t.graph_id != null ? t.graph_id : '#' + t.id;
  const detail = await apiGet(`/api/traces/${enc(fx.gid)}?limit=50`);
  assert.ok(detail.cases && detail.cases.length > 0, `trace ${fx.gid} lists no failed case`);
  fx.caseId = detail.cases[0].case;
  fx.case = await apiGet(`/api/traces/${enc(fx.gid)}/cases/${enc(fx.caseId)}`);
  fx.start = fx.case.prediction_node || fx.case.query_node;
  assert.ok(fx.start, `case ${fx.caseId} has neither a prediction node nor a query node`);

  if (SHOTS) fs.mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: EXECUTABLE,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  if (browser) await browser.close();
});

// A fresh page; uncaught exceptions in the page fail the test at `done()`.
async function openPage() {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e && e.stack ? e.stack : e)));
  return {
    page,
    async done() {
      await context.close();
      assert.deepEqual(errors, [], 'uncaught errors in the page');
    },
  };
}

// Waits until the app has finished loading the page the hash names.
async function ready(page) {
  await page.waitForFunction(() => {
    const a = document.getElementById('app');
    return a && a.getAttribute('aria-busy') === 'false' && a.dataset.loaded === (location.hash || '#/');
  });
}

async function go(page, hash) {
  await page.goto(BASE + '/' + hash);
  await ready(page);
}

async function shot(page, name) {
  if (!SHOTS) return;
  await page.screenshot({ path: path.join(SHOTS, name), fullPage: true });
}

const num = (t) => Number(String(t).replace(/[^0-9.-]/g, ''));

test('traces page: table, failed filter, system filter', { timeout: TEST_TIMEOUT }, async () => {
  const { page, done } = await openPage();
  await go(page, '');
  const rows = page.locator('[data-testid="trace-row"]');
  assert.ok(await rows.count() >= 1, 'the traces table has no row');
  assert.match(await page.locator('[data-testid="traces-count"]').innerText(), /^\d[\d,]* of \d[\d,]* traces$/);
  const health = await apiGet('/api/health');
  if (health.db) assert.equal((await page.locator('[data-testid="db-name"]').innerText()).trim(), String(health.db));
  await shot(page, 'traces.png');

  await page.locator('[data-testid="filter-failed"]').check();
  await page.waitForFunction(() => /[?&]failed=1(&|$)/.test(location.hash));
  await ready(page);
  assert.match(await page.evaluate(() => location.hash), /failed=1/);
  const failedCells = await page.locator('[data-testid="trace-row"] [data-col="failed"]').allInnerTexts();
  assert.ok(failedCells.length >= 1, 'no trace shown with the failed filter');
  for (const c of failedCells) assert.ok(num(c) > 0, `a trace with ${c} failed cases is shown under the failed filter`);

  // Choose the system of a trace known to have failed cases, so rows remain.
  const sys = fx.trace.system;
  const options = await page.locator('[data-testid="filter-system"] option').evaluateAll((os) => os.map((o) => o.value));
  assert.ok(options.includes(''), 'the system filter has an "All" option');
  const system = sys != null ? sys : options.find((o) => o !== '');
  assert.ok(system, 'no system to choose');
  await page.locator('[data-testid="filter-system"]').selectOption(system);
  await page.waitForFunction((s) => new URLSearchParams(location.hash.split('?')[1] || '').get('system') === s, system);
  await ready(page);
  const systems = await page.locator('[data-testid="trace-row"] [data-col="system"]').allInnerTexts();
  assert.ok(systems.length >= 1, `no trace shown for system ${system}`);
  for (const s of systems) assert.equal(s.trim(), system);
  // The failed filter is still on.
  assert.match(await page.evaluate(() => location.hash), /failed=1/);

  // Sorting by failed cases, most first, and back; the order is in the address.
  await go(page, '');
  await page.locator('[data-testid="sort-failed_cases"]').click();
  await page.waitForFunction(() => /[?&]sort=failed_cases(&|$)/.test(location.hash));
  await ready(page);
  const counts = (await page.locator('[data-testid="trace-row"] [data-col="failed"]').allInnerTexts()).map(num);
  assert.ok(counts.length >= 2, 'too few traces to sort');
  for (let i = 1; i < counts.length; i++) assert.ok(counts[i - 1] >= counts[i], `most failed first: ${counts}`);
  assert.match(await page.evaluate(() => location.hash), /desc=1/);
  await page.locator('[data-testid="sort-failed_cases"]').click();
  await page.waitForFunction(() => /sort=failed_cases/.test(location.hash) && !/desc=1/.test(location.hash));
  await ready(page);
  const up = (await page.locator('[data-testid="trace-row"] [data-col="failed"]').allInnerTexts()).map(num);
  for (let i = 1; i < up.length; i++) assert.ok(up[i - 1] <= up[i], `fewest failed first: ${up}`);

  // Searching by part of a graph id keeps the matching rows only.
  const part = String(fx.gid).slice(0, Math.max(3, Math.floor(String(fx.gid).length / 2)));
  await page.locator('[data-testid="filter-search"]').fill(part);
  await page.waitForFunction((p) => new URLSearchParams(location.hash.split('?')[1] || '').get('search') === p, part);
  await ready(page);
  const ids = await page.locator('[data-testid="trace-row"]').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-graph-id')));
  assert.ok(ids.includes(fx.gid), `the searched trace ${fx.gid} is shown`);
  for (const id of ids) assert.ok(id.toLowerCase().includes(part.toLowerCase()), `${id} does not hold ${part}`);
  await done();
});

test('trace page timeline and case page verdicts', { timeout: TEST_TIMEOUT }, async () => {
  const { page, done } = await openPage();
  await go(page, `#/trace/${enc(fx.gid)}`);
  const ops = page.locator('[data-testid="timeline"] [data-testid="timeline-op"]');
  assert.ok(await ops.count() >= 1, 'the timeline shows no op');
  assert.ok(await page.locator('[data-testid="timeline"] [data-testid="session"]').count() >= 1, 'the timeline shows no session');
  // Each op's time to the next op of its session, when both have a time.
  const took = await page.locator('[data-testid="op-duration"]').evaluateAll((es) => es.map((e) => Number(e.dataset.ms)));
  assert.ok(took.length >= 1, 'no op shows a duration');
  for (const ms of took) assert.ok(Number.isFinite(ms) && ms >= 0, `a duration of ${ms} ms`);
  assert.ok(await page.locator('[data-testid="session-span"]').count() >= 1, 'no session shows the span of its ops');
  assert.ok(await page.locator('[data-testid="case-link"]').count() >= 1, 'no failed case is listed');
  await shot(page, 'trace.png');

  await page.locator(`[data-testid="case-link"][href=${JSON.stringify(caseHash())}]`).first().click();
  await page.waitForFunction((h) => location.hash === h, caseHash());
  await ready(page);
  const queryText = String(fx.case.query || '');
  assert.ok(queryText.length > 0, 'the case has no query text');
  const shownQuery = await page.locator('[data-testid="case-query"]').innerText();
  assert.equal(shownQuery.trim(), queryText.trim());
  const methods = fx.case.methods || [];
  assert.ok(methods.length >= 1, 'the case lists no method');
  const columns = page.locator('[data-testid="verdicts"] [data-testid="verdict"]');
  assert.equal(await columns.count(), methods.length, 'one verdict column per method');
  for (const m of methods) {
    const col = page.locator(`[data-testid="verdicts"] [data-testid="verdict"][data-method=${JSON.stringify(m)}]`);
    assert.equal(await col.count(), 1, `a column for method ${m}`);
    const v = fx.case.verdicts && fx.case.verdicts[m];
    const text = await col.innerText();
    if (v) assert.ok(text.includes(v.error_type), `the ${m} column shows its error type ${v.error_type}`);
    else assert.match(text, /no verdict/);
    if (v && v.op_id) {
      const href = await col.locator('[data-testid="op-link"]').first().getAttribute('href');
      assert.ok(href && href.startsWith('#/graph/') && href.includes(enc(v.op_id)), `the ${m} column links its op to a graph: ${href}`);
    }
    if (v && fx.case.file_label) {
      const agrees = fx.case.file_label.error_type === v.error_type && fx.case.file_label.op_id === v.op_id;
      const shown = await col.locator('[data-testid="agreement"]').getAttribute('data-agrees');
      assert.equal(shown, agrees ? 'yes' : 'no', `the ${m} column says whether it agrees with the file's label`);
    }
  }
  // The file's own label stands beside the verdicts.
  if (fx.case.file_label) {
    const label = page.locator('[data-testid="file-label"]');
    assert.equal(await label.count(), 1, 'the file label has a column');
    assert.ok((await label.innerText()).includes(fx.case.file_label.error_type), 'the file label shows its error type');
  }
  await shot(page, 'case.png');
  await done();
});

test('provenance graph: draw, expand a frontier node, node panel', { timeout: TEST_TIMEOUT }, async () => {
  const { page, done } = await openPage();
  await go(page, caseHash());
  await page.locator('[data-testid="open-graph"]').click();
  await page.waitForFunction(() => location.hash.startsWith('#/graph/'));
  await ready(page);
  const hash = await page.evaluate(() => location.hash);
  const params = new URLSearchParams(hash.split('?')[1]);
  assert.equal(params.get('start'), fx.start);
  assert.equal(params.get('dir'), 'backward');

  const nodes = page.locator('svg[data-testid="graph"] [data-testid="graph-node"]');
  assert.ok(await nodes.count() >= 1, 'the graph has no node');
  assert.match(await page.locator('[data-testid="graph-counts"]').innerText(), /^\d[\d,]* nodes, \d[\d,]* ops, \d[\d,]* edges$/);
  assert.equal(await page.locator(`[data-testid="graph-node"][data-id=${JSON.stringify(fx.start)}]`).count(), 1, 'the start node is drawn');
  // The blamed op and the evidence's path are marked, where drawn.
  const mark = params.getAll('mark');
  const ev = fx.case.verdicts && fx.case.verdicts.evidence;
  if (ev && ev.op_id) assert.ok(mark.includes(ev.op_id), `the graph marks the blamed op ${ev.op_id}: ${mark}`);
  const markedIds = await page.locator('svg[data-testid="graph"] [data-marked="1"]').evaluateAll((es) => es.map((e) => e.getAttribute('data-id')));
  for (const id of markedIds) assert.ok(mark.includes(id), `${id} is marked but not asked for`);
  const drawnIds = await page.locator('svg[data-testid="graph"] [data-id]').evaluateAll((es) => es.map((e) => e.getAttribute('data-id')));
  for (const id of mark) if (drawnIds.includes(id)) assert.ok(markedIds.includes(id), `${id} is drawn but not marked`);
  await shot(page, 'graph.png');

  // Expand frontier nodes until one adds nodes (a node's missing edges may all
  // lead to nodes already drawn).
  const badges = page.locator('[data-testid="expand"]');
  assert.ok(await badges.count() >= 1, 'no frontier node with an expand badge');
  let grew = false;
  const tried = new Set();
  for (let attempt = 0; attempt < 6 && !grew; attempt++) {
    const ids = await badges.evaluateAll((bs) => bs.map((b) => b.getAttribute('data-id')));
    const id = ids.find((x) => !tried.has(x));
    if (!id) break;
    tried.add(id);
    const before = await nodes.count();
    const expansions = Number(await page.locator('svg[data-testid="graph"]').getAttribute('data-expansions'));
    await page.locator('[data-testid="zoom-fit"]').click();
    await page.locator(`[data-testid="expand"][data-id=${JSON.stringify(id)}]`).click();
    await page.waitForFunction((n) => Number(document.querySelector('svg[data-testid="graph"]').getAttribute('data-expansions')) > n, expansions);
    grew = (await nodes.count()) > before;
  }
  assert.ok(grew, 'expanding a frontier node added no node');

  // Click the start node: the panel shows its value as the API gives it.
  await page.locator('[data-testid="zoom-fit"]').click();
  await page.locator(`[data-testid="graph-node"][data-id=${JSON.stringify(fx.start)}]`).click();
  const panel = page.locator('[data-testid="node-panel"]');
  await panel.waitFor({ state: 'visible' });
  await page.locator('[data-testid="node-panel"] [data-testid="node-value"]').waitFor();
  assert.equal((await page.locator('[data-testid="panel-id"]').innerText()).trim(), fx.start);
  const node = await apiGet(`/api/traces/${enc(fx.gid)}/nodes/${enc(fx.start)}`);
  const expected = typeof node.value === 'string' ? node.value : JSON.stringify(node.value, null, 2);
  const shown = await page.locator('[data-testid="node-value"]').evaluate((e) => e.textContent);
  assert.equal(shown, expected === '' ? '(empty)' : expected);
  await shot(page, 'graph-panel.png');
  await done();
});

// ---------------------------------------------------------------- depth-6 graphs stay readable

// What the case page marks in its graph (the app's blamedPath): the op the
// evidence verdict (else another) blames, its chain, the file label's op.
function blamedPath(c) {
  const vs = c.verdicts || {};
  const v = vs.evidence || vs.hybrid || vs.llm || vs.human || null;
  const ids = [];
  const add = (x) => { if (x && !ids.includes(x)) ids.push(x); };
  if (v) {
    add(v.op_id);
    for (const st of v.chain || []) { add(st.var); add(st.op_id); }
  }
  if (c.file_label) add(c.file_label.op_id);
  return ids;
}

const graphHash = (gid, start, dir, mark) => `#/graph/${enc(gid)}?start=${enc(start)}&dir=${dir}&depth=6`
  + (mark || []).map((m) => `&mark=${enc(m)}`).join('');

// Two depth-6 graphs of the database, chosen through the API:
// - the provenance of a failed case's prediction, from the trace whose
//   first failed case has the densest such graph (most edges per node);
// - forward from the node of that graph that an op wrote and that the most
//   ops read (a memory read by many retrievals, say): a wide fan-out.
async function depth6Graphs() {
  const list = await apiGet('/api/traces?failed=1');
  let best = null;
  for (const t of list.traces) {
    const gid = t.graph_id != null ? t.graph_id : '#' + t.id;
    const detail = await apiGet(`/api/traces/${enc(gid)}?limit=50`);
    if (!detail.cases || !detail.cases.length) continue;
    const c = await apiGet(`/api/traces/${enc(gid)}/cases/${enc(detail.cases[0].case)}`);
    const start = c.prediction_node || c.query_node;
    if (!start) continue;
    const g = await apiGet(`/api/traces/${enc(gid)}/graph?start=${enc(start)}&dir=backward&depth=6`);
    const density = g.edges.length / Math.max(1, g.nodes.length);
    if (!best || density > best.density) best = { gid, start, density, graph: g, mark: blamedPath(c) };
  }
  assert.ok(best, 'no failed case with a prediction to start a graph from');
  const written = best.graph.nodes.filter((n) => (n.in_degree || 0) > 0 && !n.start);
  written.sort((a, b) => (b.out_degree || 0) - (a.out_degree || 0));
  assert.ok(written.length, `the graph of ${best.start} has no node written by an op`);
  return {
    caseGraph: { gid: best.gid, start: best.start, dir: 'backward', mark: best.mark },
    fanOut: { gid: best.gid, start: written[0].id, dir: 'forward', mark: [] },
  };
}

// Measures the drawn graph, in the graph's own coordinates: node boxes, op
// diamonds and "+N more" groups; edge crossings (two edges meeting outside
// every box, edges that share an end not counted); edges running through a
// box that is not one of their ends; labels that overflow their box or
// overlap, or are cut without a title holding the full text; boxes outside
// the view.
function measureGraph() {
  const svg = document.querySelector('svg[data-testid="graph"]');
  const vp = svg.querySelector('.viewport');
  const inv = vp.getScreenCTM().inverse();
  const local = (r) => {
    const a = new DOMPoint(r.left, r.top).matrixTransform(inv);
    const b = new DOMPoint(r.right, r.bottom).matrixTransform(inv);
    return { x0: a.x, y0: a.y, x1: b.x, y1: b.y };
  };
  const owners = '[data-testid="graph-node"], [data-testid="graph-op"], [data-testid="graph-group"]';
  const boxes = [];
  for (const g of svg.querySelectorAll(owners)) {
    const shape = g.querySelector(':scope > rect.box, :scope > path');
    boxes.push({ g, name: g.getAttribute('data-id') || ('group of ' + g.getAttribute('data-hub')), screen: shape.getBoundingClientRect(), ...local(shape.getBoundingClientRect()) });
  }
  const meet = (a, b, m = 0) => a.x0 < b.x1 + m && b.x0 < a.x1 + m && a.y0 < b.y1 + m && b.y0 < a.y1 + m;
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) if (meet(boxes[i], boxes[j])) overlaps.push(`${boxes[i].name} / ${boxes[j].name}`);
  }

  const labelProblems = [];
  const labels = [];
  const norm = (t) => String(t).replace(/\s+/g, ' ').trim();
  for (const t of svg.querySelectorAll('.nodes text')) {
    if (!t.getClientRects().length) continue;
    const g = t.closest(owners);
    const own = boxes.find((b) => b.g === g);
    const r = local(t.getBoundingClientRect());
    const text = t.textContent;
    labels.push({ r, own, text });
    if (g.getAttribute('data-testid') !== 'graph-op') {
      if (r.x0 < own.x0 - 1 || r.x1 > own.x1 + 1 || r.y0 < own.y0 - 1 || r.y1 > own.y1 + 1) labelProblems.push(`"${text}" overflows the box of ${own.name}`);
    }
    if (text.endsWith('\u2026')) {
      const title = g.querySelector(':scope > title');
      if (!title || !norm(title.textContent).includes(norm(text.slice(0, -1)))) labelProblems.push(`"${text}" is cut and no title holds it whole`);
    }
  }
  for (let i = 0; i < labels.length; i++) {
    for (const b of boxes) if (b !== labels[i].own && meet(labels[i].r, b)) labelProblems.push(`"${labels[i].text}" overlaps ${b.name}`);
    for (let j = i + 1; j < labels.length; j++) if (meet(labels[i].r, labels[j].r)) labelProblems.push(`"${labels[i].text}" overlaps "${labels[j].text}"`);
  }

  const polys = [];
  for (const p of svg.querySelectorAll('path.edge')) {
    const len = p.getTotalLength();
    const n = Math.max(8, Math.ceil(len / 5));
    const pts = [];
    for (let i = 0; i <= n; i++) { const q = p.getPointAtLength((len * i) / n); pts.push([q.x, q.y]); }
    polys.push(pts);
  }
  const inside = (b, x, y, m) => x > b.x0 - m && x < b.x1 + m && y > b.y0 - m && y < b.y1 + m;
  const cross = (a, b, c, d) => {
    const o = (p, q, r) => (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]);
    const d1 = o(a, b, c), d2 = o(a, b, d), d3 = o(c, d, a), d4 = o(c, d, b);
    if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0))) {
      const t = d3 / (d3 - d4);
      return [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t];
    }
    return null;
  };
  const same = (p, q) => Math.abs(p[0] - q[0]) < 2 && Math.abs(p[1] - q[1]) < 2;
  let crossings = 0;
  for (let i = 0; i < polys.length; i++) {
    for (let j = i + 1; j < polys.length; j++) {
      const A = polys[i], B = polys[j];
      if (same(A[0], B[0]) || same(A[A.length - 1], B[B.length - 1])) continue;
      for (let a = 1; a < A.length; a++) {
        for (let b = 1; b < B.length; b++) {
          const x = cross(A[a - 1], A[a], B[b - 1], B[b]);
          if (x && !boxes.some((bx) => inside(bx, x[0], x[1], 3))) crossings++;
        }
      }
    }
  }
  const through = [];
  for (const P of polys) {
    const ends = boxes.filter((b) => inside(b, P[0][0], P[0][1], 3) || inside(b, P[P.length - 1][0], P[P.length - 1][1], 3));
    for (const b of boxes) {
      if (ends.includes(b)) continue;
      if (P.some(([x, y]) => inside(b, x, y, -2))) through.push(b.name);
    }
  }
  const view = svg.getBoundingClientRect();
  const outOfView = boxes.filter((b) => b.screen.left < view.left - 1 || b.screen.right > view.right + 1
    || b.screen.top < view.top - 1 || b.screen.bottom > view.bottom + 1).map((b) => b.name);
  return {
    nodes: svg.querySelectorAll('[data-testid="graph-node"]').length,
    boxes: boxes.length,
    edges: polys.length,
    groups: Array.from(svg.querySelectorAll('[data-testid="graph-group"]')).map((g) => ({ hub: g.getAttribute('data-hub'), count: Number(g.getAttribute('data-count')) })),
    overlaps, labelProblems, crossings, through, outOfView,
    marked: Array.from(svg.querySelectorAll('[data-marked="1"]')).map((e) => e.getAttribute('data-id')),
    drawn: Array.from(svg.querySelectorAll('[data-id]')).map((e) => e.getAttribute('data-id')),
  };
}

// The figures, in the test's report, then the checks.
function assertReadable(t, m, what, maxCrossings) {
  t.diagnostic(`${what}: ${m.nodes} nodes drawn, ${m.edges} edges, ${m.crossings} crossings (at most ${maxCrossings}), `
    + `${m.overlaps.length} overlapping boxes, ${m.through.length} edges through boxes, ${m.labelProblems.length} label problems, `
    + `${m.outOfView.length} boxes out of view, ${m.groups.length} groups`);
  assert.deepEqual(m.overlaps, [], `${what}: node boxes overlap`);
  assert.deepEqual(m.labelProblems, [], `${what}: labels`);
  assert.deepEqual(m.through, [], `${what}: edges run through boxes that are not their ends`);
  assert.ok(m.crossings <= maxCrossings, `${what}: ${m.crossings} edge crossings among ${m.edges} edges (at most ${maxCrossings})`);
}

test('depth-6 graphs: no overlaps, few crossings, labels fit, fitted on open, fan-out folded', { timeout: 3 * TEST_TIMEOUT }, async (t) => {
  const { caseGraph, fanOut } = await depth6Graphs();
  const { page, done } = await openPage();

  // The case's provenance at depth 6, its blamed op and chain marked.
  await go(page, graphHash(caseGraph.gid, caseGraph.start, caseGraph.dir, caseGraph.mark));
  let m = await page.evaluate(measureGraph);
  assert.ok(m.nodes >= 10, `the depth-6 graph of ${caseGraph.start} draws ${m.nodes} nodes`);
  assertReadable(t, m, `backward from ${caseGraph.start}`, Math.floor(m.edges / 3));
  assert.deepEqual(m.outOfView, [], 'the graph is fitted in the view when it opens');
  for (const id of m.marked) assert.ok(caseGraph.mark.includes(id), `${id} is marked but not asked for`);
  for (const id of caseGraph.mark) if (m.drawn.includes(id)) assert.ok(m.marked.includes(id), `${id} is drawn but not marked`);
  await shot(page, 'graph-depth6.png');

  // Forward from a node many ops read: siblings past the limit fold into
  // "+N more" groups, and the rest is laid out with hardly a crossing.
  await go(page, graphHash(fanOut.gid, fanOut.start, fanOut.dir));
  m = await page.evaluate(measureGraph);
  assertReadable(t, m, `forward from ${fanOut.start}`, Math.floor(m.edges / 10));
  assert.deepEqual(m.outOfView, [], 'the graph is fitted in the view when it opens');
  assert.ok(m.groups.length >= 1, `forward from ${fanOut.start}: no "+N more" group`);
  assert.match(await page.locator('[data-testid="graph-grouped"]').innerText(), /folded into \d+ .+N more. groups?/);
  await shot(page, 'graph-depth6-forward.png');

  // Opening the biggest group draws its members, and the graph stays readable.
  const group = m.groups.reduce((a, b) => (b.count > a.count ? b : a));
  const expansions = Number(await page.locator('svg[data-testid="graph"]').getAttribute('data-expansions'));
  await page.locator(`[data-testid="graph-group"][data-hub=${JSON.stringify(group.hub)}]`).click();
  await page.waitForFunction((n) => Number(document.querySelector('svg[data-testid="graph"]').getAttribute('data-expansions')) > n, expansions);
  const opened = await page.evaluate(measureGraph);
  assert.ok(opened.boxes >= m.boxes + group.count - 1, `opening a group of ${group.count} drew ${opened.boxes - m.boxes + 1} more`);
  assert.ok(!opened.groups.some((g) => g.hub === group.hub), 'the opened group is still drawn');
  assertReadable(t, opened, `forward from ${fanOut.start}, a group opened`, Math.floor(opened.edges / 10));
  await page.locator('[data-testid="zoom-fit"]').click();
  assert.deepEqual((await page.evaluate(measureGraph)).outOfView, [], '"fit" shows the whole graph');
  await done();
});

test('labels: append two, both kept after reload, annotations export', { timeout: TEST_TIMEOUT }, async () => {
  const { page, done } = await openPage();
  await go(page, caseHash());
  const items = page.locator('[data-testid="labels"] [data-testid="label-item"]');
  const initial = await items.count();
  const stamp = `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const reason1 = `e2e first label ${stamp}`;
  const reason2 = `e2e second label ${stamp}`;
  const author = 'e2e-tester';
  const form = page.locator('[data-testid="label-form"]');
  const opId = await form.locator('select[name="op_id"] option').first().getAttribute('value');
  assert.ok(opId, 'the op select has no op');

  // A label without an author is refused, and the message is shown.
  await form.locator('select[name="error_type"]').selectOption('UpdateError');
  await form.locator('select[name="op_id"]').selectOption(opId);
  await form.locator('textarea[name="reason"]').fill('should be refused ' + stamp);
  await form.locator('input[name="author"]').fill('');
  await page.locator('[data-testid="label-submit"]').click();
  await page.locator('[data-testid="label-error"]').waitFor({ state: 'visible' });
  assert.ok((await page.locator('[data-testid="label-error"]').innerText()).trim().length > 0, 'the error message is empty');
  assert.equal(await items.count(), initial, 'a refused label was listed');

  await form.locator('textarea[name="reason"]').fill(reason1);
  await form.locator('input[name="author"]').fill(author);
  await page.locator('[data-testid="label-submit"]').click();
  await page.waitForFunction((r) => {
    const first = document.querySelector('[data-testid="labels"] [data-testid="label-item"]');
    return first && first.textContent.includes(r);
  }, reason1);
  assert.equal(await items.count(), initial + 1);
  assert.ok(await page.locator('[data-testid="label-error"]').isHidden(), 'the error is cleared after a good label');

  await form.locator('select[name="error_type"]').selectOption('RetrievalError');
  await form.locator('select[name="op_id"]').selectOption(opId);
  await form.locator('textarea[name="reason"]').fill(reason2);
  await page.locator('[data-testid="label-submit"]').click();
  await page.waitForFunction((r) => {
    const first = document.querySelector('[data-testid="labels"] [data-testid="label-item"]');
    return first && first.textContent.includes(r);
  }, reason2);
  assert.equal(await items.count(), initial + 2, 'the second label is appended, not overwriting the first');
  assert.equal(await items.filter({ hasText: reason1 }).count(), 1, 'the first label is still listed');
  assert.match(await items.first().innerText(), /RetrievalError/);
  await shot(page, 'case.png');

  await page.reload();
  await ready(page);
  assert.equal(await items.count(), initial + 2, 'both labels are listed after a reload');
  assert.ok((await items.nth(0).innerText()).includes(reason2), 'newest first after a reload');
  assert.ok((await items.nth(1).innerText()).includes(reason1), 'the first label follows');
  assert.equal(await form.locator('input[name="author"]').inputValue(), author, 'the author is remembered');

  const href = await page.locator('[data-testid="annotations-link"]').getAttribute('href');
  assert.equal(href, `/api/traces/${enc(fx.gid)}/annotations`);
  const ann = await page.evaluate(async (u) => {
    const r = await fetch(u);
    return { status: r.status, body: await r.json() };
  }, href);
  assert.equal(ann.status, 200);
  const list = ann.body && ann.body.data && ann.body.data.annotations;
  assert.ok(Array.isArray(list), 'annotations has data.annotations');
  const mine = list.find((a) => a.reason === reason2);
  assert.ok(mine, 'an annotation carries the latest label of the case');
  assert.equal(mine.final_error_type, 'RetrievalError');
  assert.equal(mine.final_op_id, opId);
  assert.equal(mine.annotator, author);
  assert.ok(!list.some((a) => a.reason === reason1), 'only the latest label of a case is exported');
  await done();
});

test('query page: table, graph toggle, syntax error with caret', { timeout: TEST_TIMEOUT }, async () => {
  const { page, done } = await openPage();
  await go(page, '#/query');
  const input = page.locator('[data-testid="query-input"]');
  const result = page.locator('[data-testid="query-result"]');
  let runs = 0;
  const waitRun = async () => {
    runs++;
    await page.locator(`[data-testid="query-result"][aria-busy="false"][data-runs="${runs}"]`).waitFor({ state: 'attached' });
  };

  await input.fill('SHOW TRACES');
  await page.locator('[data-testid="query-run"]').click();
  await waitRun();
  const rows = page.locator('[data-testid="query-table"] tbody tr');
  assert.ok(await rows.count() >= 1, 'SHOW TRACES shows no row');
  assert.match(await page.locator('[data-testid="query-count"]').innerText(), /^\d[\d,]* rows?$/);
  assert.equal(await page.locator('[data-testid="view-graph"]').count(), 0, 'no graph toggle for SHOW TRACES');

  const quote = (x) => `'${String(x).replace(/'/g, "''")}'`;
  await input.fill(`TRACE ${quote(fx.start)} IN TRACE ${quote(fx.gid)} DEPTH 2`);
  await input.press('Control+Enter');
  await waitRun();
  assert.equal(await page.locator('[data-testid="query-error"]').count(), 0, 'the TRACE statement failed');
  await page.locator('[data-testid="view-graph"]').click();
  const gnodes = result.locator('svg[data-testid="graph"] [data-testid="graph-node"]');
  await gnodes.first().waitFor();
  assert.ok(await gnodes.count() >= 1, 'the query graph has no node');
  assert.ok(await page.locator('[data-testid="query-table"]').isHidden(), 'the table is hidden in graph view');
  await shot(page, 'query.png');
  await page.locator('[data-testid="view-table"]').click();
  assert.ok(await page.locator('[data-testid="query-table"]').isVisible(), 'the table is back');
  // Node cells open the provenance graph of their node in the row's trace.
  const nodeLink = await page.locator('[data-testid="query-node-link"]').first().getAttribute('href');
  assert.ok(nodeLink && nodeLink.startsWith('#/graph/' + enc(fx.gid) + '?'), `a node cell links to its graph: ${nodeLink}`);
  // The statement is kept in the address: opened again, it runs at once.
  const address = await page.evaluate(() => location.hash);
  assert.ok(address.startsWith('#/query?q='), `the statement is in the address: ${address}`);
  const again = await openPage();
  await go(again.page, address);
  await again.page.locator('[data-testid="query-result"][aria-busy="false"][data-runs="1"]').waitFor({ state: 'attached' });
  assert.ok(await again.page.locator('[data-testid="query-table"] tbody tr').count() >= 1, 'the bookmarked statement ran');
  assert.equal(await again.page.locator('[data-testid="query-input"]').inputValue(), `TRACE ${quote(fx.start)} IN TRACE ${quote(fx.gid)} DEPTH 2`);
  await again.done();

  await input.fill('FIND ops WHERE');
  await page.locator('[data-testid="query-run"]').click();
  await waitRun();
  const err = page.locator('pre[data-testid="query-error"]');
  await err.waitFor();
  const text = await err.evaluate((e) => e.textContent);
  assert.ok(text.split('\n').some((l) => /^\s*\^/.test(l)), `the error has no caret line:\n${text}`);
  const font = await err.evaluate((e) => getComputedStyle(e).fontFamily);
  assert.match(font, /mono|courier|consolas|menlo/i, 'the error is shown in a monospace font');
  await shot(page, 'query-error.png');
  await done();
});

test('unknown trace and unknown page show not found', { timeout: TEST_TIMEOUT }, async () => {
  const { page, done } = await openPage();
  await go(page, '#/trace/no-such-trace');
  const nf = page.locator('[data-testid="not-found"]');
  await nf.waitFor();
  assert.match(await nf.innerText(), /not found/i);
  assert.equal(await page.locator('[data-testid="timeline"]').count(), 0);

  await go(page, '#/no/such/page');
  await nf.waitFor();
  assert.match(await nf.innerText(), /not found/i);
  await done();
});

test('ids with spaces and slashes open in the graph, the panel, expand and query links', { timeout: TEST_TIMEOUT }, async () => {
  // OTLP spans named after their HTTP route give ids such as `input:POST /chat@1`.
  const fixture = fs.readFileSync(new URL('../fixtures/otlp/collector.jsonl', import.meta.url));
  const res = await fetch(BASE + '/api/import?source=collector&format=jsonl', {
    method: 'POST', headers: { 'Content-Type': 'application/x-ndjson' }, body: fixture,
  });
  assert.ok(res.status === 201 || res.status === 200, `import: ${res.status} ${await res.text()}`);
  const id = 'input:POST /chat@1';
  const found = await fetch(BASE + '/api/query', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ statement: `FIND vars WHERE var.full_node_id = 'input:POST /chat@1' RETURN trace` }),
  }).then((r) => r.json());
  assert.equal(found.rows.length, 1, `one trace holds ${id}: ${JSON.stringify(found)}`);
  const gid = found.rows[0][0];
  const written = await apiGet(`/api/traces/${enc(gid)}/nodes/${enc(id)}`);
  assert.equal(written.id, id);

  const { page, done } = await openPage();
  // The graph from it, with it marked: drawn, marked, and its panel opens.
  await go(page, `#/graph/${enc(gid)}?start=${enc(id)}&dir=forward&depth=2&mark=${enc(id)}`);
  const node = page.locator(`svg[data-testid="graph"] [data-testid="graph-node"][data-id=${JSON.stringify(id)}]`);
  assert.equal(await node.count(), 1, 'the start node is drawn');
  assert.equal(await node.getAttribute('data-marked'), '1', 'the start node is marked');
  assert.ok(await page.locator('svg[data-testid="graph"] [data-testid="graph-node"]').count() >= 2, 'its outputs are drawn');
  await node.click();
  await page.locator('[data-testid="node-panel"] [data-testid="node-value"]').waitFor();
  assert.equal((await page.locator('[data-testid="panel-id"]').innerText()).trim(), id);
  assert.equal(await page.locator('[data-testid="node-value"]').evaluate((e) => e.textContent), written.value);
  // One hop from it, as the graph's expand asks for it.
  const hop = await apiGet(`/api/traces/${enc(gid)}/expand?node=${enc(id)}&dir=forward`);
  assert.ok(hop.nodes.some((n) => n.id === id) && hop.edges.length >= 1, JSON.stringify(hop));

  // A query's node cell links to the node's graph, which opens.
  // (The app writes the statement back into the address in its own encoding.)
  await page.goto(BASE + '/#/query?q=' + enc(`FIND vars IN TRACE '${gid}' WHERE var.full_node_id = '${id}' RETURN trace, var.full_node_id`));
  await page.locator('[data-testid="query-result"][aria-busy="false"][data-runs="1"]').waitFor({ state: 'attached' });
  await page.locator('[data-testid="query-node-link"]').first().click();
  await page.waitForFunction(() => location.hash.startsWith('#/graph/'));
  await ready(page);
  const params = new URLSearchParams((await page.evaluate(() => location.hash)).split('?')[1]);
  assert.equal(params.get('start'), id);
  assert.equal(await page.locator(`svg[data-testid="graph"] [data-testid="graph-node"][data-id=${JSON.stringify(id)}]`).count(), 1,
    'the node opened from the query is drawn');
  assert.equal(await page.locator('[data-testid="error"]').count(), 0, 'no error is shown');
  await done();
});

test('control characters in ids and values are shown escaped, never raw', { timeout: TEST_TIMEOUT }, async () => {
  // A trace whose ids and values hold OSC, SGR, NUL, C1 and bidi controls.
  const fixture = fs.readFileSync(new URL('../../repl/tests/fixtures/control_chars.json', import.meta.url));
  const res = await fetch(BASE + '/api/import?source=control-chars', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: fixture,
  });
  assert.ok(res.status === 201 || res.status === 200, `import: ${res.status} ${await res.text()}`);
  const gid = JSON.parse(fixture.toString()).graph_id;
  const { page, done } = await openPage();
  // What the page shows: its text and every attribute a person may see (not
  // links, data for the app, or form values, which must stay exact).
  const shown = () => page.evaluate(() => {
    const out = [document.body.innerText];
    for (const el of document.querySelectorAll('*')) {
      for (const a of el.attributes) {
        if (a.name !== 'href' && a.name !== 'value' && !a.name.startsWith('data-')) out.push(a.value);
      }
    }
    return out.join('\n');
  });
  const hidden = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;
  for (const hash of [`#/trace/${enc(gid)}`, `#/?q=${enc('ctl-')}`]) {
    await go(page, hash);
    if (hash.startsWith('#/trace')) await page.locator('[data-testid="timeline-op"]').first().waitFor();
    const text = await shown();
    const raw = text.match(new RegExp('.{0,40}' + hidden.source + '.{0,40}'));
    assert.ok(!raw, `${hash}: a control character is shown raw: ${JSON.stringify(raw && raw[0])}`);
    assert.ok(text.includes('\\u{1b}'), `${hash}: ESC is shown as \\u{1b}`);
  }
  await done();
});
