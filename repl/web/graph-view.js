// The graph drawn as SVG, with panning, zooming, selection and keyboard moves.

import { clear, fmtNum, h, s, shortOp, truncate } from './dom.js';
import { catColors } from './categories.js';
import { drawnGraph } from './graph-fold.js';
import {
  GROUP_H, GROUP_W, layoutGraph, OP_COL_W, OP_LABEL_H, OP_R, VAR_H, VAR_W,
} from './graph-layout.js';

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

export class GraphView {
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
