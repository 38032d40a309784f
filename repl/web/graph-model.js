// The nodes, ops and edges a provenance graph has loaded so far.

import { asList } from './dom.js';

function edgeKey(e) {
  return e.id != null ? String(e.id) : `${e.source}|${e.op || ''}|${e.target}`;
}

export class GraphModel {
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
