// Which vertices a graph draws: fans too big to read fold into one "+N more" group.

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
export function drawnGraph(model, pinned, open) {
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
