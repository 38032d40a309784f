// Where each vertex of a drawn graph goes: a layered layout, left to right in the direction
// data flows, with few crossings.

export const VAR_W = 190, VAR_H = 46, OP_R = 13, OP_COL_W = 128, GROUP_W = 150, GROUP_H = 38, DUMMY_W = 24;
export const COL_GAP = 40, ROW_GAP = 14, OP_LABEL_H = 16;

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

// The key of the arc from a to b.
function arcKey(a, b) {
  return a + '\u0000' + b;
}

// An op that writes a variable and reads it again (a decision it then
// applies) is a cycle of two: the read is drawn as a short loop back
// into the op and left out of the layout.
function splitLoops(arcs, kind) {
  const arcSet = new Set(arcs.map(([a, b]) => arcKey(a, b)));
  const loops = [];
  const rest = [];
  for (const [a, b] of arcs) {
    const ka = kind.get(a), kb = kind.get(b);
    if (arcSet.has(arcKey(b, a)) && ((ka === 'node' && kb === 'op') || (ka === kb && a > b))) loops.push([a, b]);
    else rest.push([a, b]);
  }
  return { loops, rest };
}

// Longer cycles: a depth-first walk from the sources reverses the arcs
// that lead back to a vertex on its stack.
function reversedArcs(V, rest) {
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
        if (st === 1) reversed.add(arcKey(top[0], w));
        else if (!st) { state.set(w, 1); stack.push([w, 0]); }
      } else {
        state.set(top[0], 2);
        stack.pop();
      }
    }
  }
  return reversed;
}

// Layers: longest path from the sources; a source then moves right next
// to its nearest consumer.
function assignLayers(V, S, P) {
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
  return { topo, layer };
}

// Dummies: one per layer crossed by a longer arc.
function addDummies(topo, larcs, layer, kind) {
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
    chains.set(arcKey(u, v), chain);
  }
  return { up, down, chains, all };
}

// The median position of a vertex's neighbours in the fixed layer; with
// an even count, the two middle ones weighted toward the denser side.
function median(ps) {
  const n = ps.length;
  if (!n) return -1;
  ps.sort((a, b) => a - b);
  const m = n >> 1;
  if (n % 2) return ps[m];
  if (n === 2) return (ps[0] + ps[1]) / 2;
  const l = ps[m - 1] - ps[0], r = ps[n - 1] - ps[m];
  return l + r === 0 ? (ps[m - 1] + ps[m]) / 2 : (ps[m - 1] * r + ps[m] * l) / (l + r);
}

// The order within each layer: first depth first from the sources, so what
// hangs together starts together, then sweeps that sort each layer by the
// median of its neighbours and swap neighbours that cross less the other way,
// keeping the order with the fewest crossings.
function orderLayers(all, layer, up, down) {
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
  return { layers, pos, crossings: bestC };
}

// Vertical places: each layer keeps its order and its spacing, and its
// vertices move toward the mean of their neighbours (a dummy pulls harder,
// so long arcs run straight); repeated over the layers until it settles.
// An op with a loop may carry its label above the diamond (see draw).
function placeVertically(layers, up, down, kind, loops, size) {
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
  return y;
}

// Columns as wide as their widest vertex; a gap widens with the steepest
// arc across it so that arc still reads. Each vertex's place goes into `pos`.
function placeColumns(layers, y, down, kind, pos) {
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
}

// Layered layout, left to right in the direction data flows (Sugiyama's
// scheme): cycles broken, vertices put in layers, arcs longer than one layer
// cut by dummy vertices, the order within layers chosen to cross few arcs,
// then each vertex placed as near as its order allows to its neighbours.
export function layoutGraph(dg) {
  const kind = new Map(dg.kind);
  const V = dg.V;
  const { loops, rest } = splitLoops(dg.arcs, kind);
  const reversed = reversedArcs(V, rest);
  // Arcs of the layout: [from, to, the drawn arc it stands for].
  const larcs = [];
  const lset = new Set();
  for (const [a, b] of rest) {
    const [u, v] = reversed.has(arcKey(a, b)) ? [b, a] : [a, b];
    if (lset.has(arcKey(u, v))) continue;
    lset.add(arcKey(u, v));
    larcs.push([u, v]);
  }
  const S = new Map(V.map((v) => [v, []]));
  const P = new Map(V.map((v) => [v, []]));
  for (const [u, v] of larcs) { S.get(u).push(v); P.get(v).push(u); }

  const { topo, layer } = assignLayers(V, S, P);
  const { up, down, chains, all } = addDummies(topo, larcs, layer, kind);
  const { layers, pos, crossings } = orderLayers(all, layer, up, down);
  const y = placeVertically(layers, up, down, kind, loops, all.length);
  placeColumns(layers, y, down, kind, pos);
  return { pos, chains, reversed, loops, arcs: rest, crossings };
}
