//! MATCH: binds the pattern's variables by backtracking over the cached
//! adjacency ([`Matcher`]), a row per binding.

use std::collections::HashMap;

use memtrace_query::ast::Direction;
use memtrace_query::plan::{Constraint, MatchPlan, MatchStep, VarKind};
use memtrace_query::{Collector, Field, Value};

use super::ctx::TraceCtx;
use super::row::{MatchRow, UNBOUND};
use super::run::{qerr, Exec};
use super::value::Sink;
use crate::error::Result;
use crate::graph::TraceGraph;

impl<'a> Exec<'a> {
    pub(super) fn match_(&self, p: &MatchPlan, sink: &mut Sink<'_>) -> Result<()> {
        let mut col = Collector::new(&p.projection);
        for (tid, record) in self.traces(&p.scope)? {
            self.cancel.check()?;
            let t = TraceCtx::new(self.db, self.view, tid, record).until(self.cancel);
            let mut binding = vec![UNBOUND; p.vars.len()];
            let mut m = Matcher {
                exec: self,
                t: &t,
                plan: p,
                col: &mut col,
                sink,
                steps: 0,
                stop: false,
                hops: Vec::new(),
            };
            m.step(0, &mut binding)?;
            if m.stop {
                break;
            }
        }
        for row in col.finish().map_err(qerr)? {
            if !sink(row)? {
                break;
            }
        }
        Ok(())
    }
}

/// The search for one trace's bindings: it hands each complete binding to
/// the collector and stops when the sink or the collector wants no more.
struct Matcher<'m, 'a, 's, 'p> {
    exec: &'m Exec<'a>,
    t: &'m TraceCtx<'a>,
    plan: &'m MatchPlan,
    col: &'m mut Collector<'p>,
    sink: &'m mut Sink<'s>,
    steps: u64,
    stop: bool,
    /// When capturing a graph: the edges crossed by the steps bound so far
    /// (each single hop's edge, each variable-length step's path).
    hops: Vec<u32>,
}

/// An Expand step of a MATCH as its walks read it.
struct Expansion<'s> {
    /// The step after this one.
    next_step: usize,
    /// The pattern variable the step binds a node to.
    to: usize,
    /// The pattern variable it binds the edge to, for a single hop.
    rel: Option<usize>,
    /// Whether it follows edges from source to target.
    forward: bool,
    edge_constraints: &'s [Constraint],
    min_hops: u32,
    max_hops: Option<u32>,
    constraints: &'s [Constraint],
    /// Whether `to` is bound already, and only that node fits.
    check: bool,
}

impl Expansion<'_> {
    /// The node edge `e` leads to.
    fn next(&self, g: &TraceGraph, e: u32) -> Option<u32> {
        if self.forward {
            g.target(e)
        } else {
            g.source(e)
        }
    }

    /// The node edge `e` was walked from.
    fn back(&self, g: &TraceGraph, e: u32) -> Option<u32> {
        if self.forward {
            g.source(e)
        } else {
            g.target(e)
        }
    }

    /// The edges the step follows from node `n`.
    fn edges<'g>(&self, g: &'g TraceGraph, n: u32) -> &'g [u32] {
        if self.forward {
            g.outgoing(n)
        } else {
            g.incoming(n)
        }
    }
}

impl Matcher<'_, '_, '_, '_> {
    fn fits_node(&self, v: u32, cs: &[Constraint]) -> Result<bool> {
        for c in cs {
            // Text fields compare in place, without building a value.
            if let (Value::Str(want), Some(got)) = (&c.value, self.t.var_str(v, &c.field)?) {
                if got != Some(want.as_str()) {
                    return Ok(false);
                }
                continue;
            }
            let got = self.t.var_field(v, &c.field)?;
            if got.compare(&c.value) != Some(std::cmp::Ordering::Equal) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn fits_edge(&self, e: u32, cs: &[Constraint]) -> Result<bool> {
        for c in cs {
            if let (Value::Str(want), Field::Kind) = (&c.value, &c.field) {
                let kind = match self.t.graph()?.op(e) {
                    Some(o) => self.t.op_texts(o)?[2],
                    None => None,
                };
                if kind != Some(want.as_str()) {
                    return Ok(false);
                }
                continue;
            }
            let got = self.t.edge_field(e, &c.field)?;
            if got.compare(&c.value) != Some(std::cmp::Ordering::Equal) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn tick(&mut self) -> Result<()> {
        self.steps += 1;
        if self.steps.is_multiple_of(4096) {
            self.exec.cancel.check()?;
        }
        Ok(())
    }

    fn step(&mut self, i: usize, binding: &mut Vec<u32>) -> Result<()> {
        if self.stop {
            return Ok(());
        }
        self.tick()?;
        let Some(step) = self.plan.steps.get(i) else {
            if let Some(c) = self.exec.capture {
                let vars = &self.plan.vars;
                c.add(self.t.id(), |r| {
                    for (v, &b) in vars.iter().zip(binding.iter()) {
                        if b != UNBOUND && v.kind == VarKind::Node {
                            r.nodes.insert(b);
                        }
                    }
                    r.edges.extend(self.hops.iter().copied());
                });
                return Ok(());
            }
            let row = MatchRow {
                t: self.t,
                vars: &self.plan.vars,
                binding,
            };
            if let Some(out) = self.col.push(&row).map_err(qerr)? {
                if !(self.sink)(out)? {
                    self.stop = true;
                }
            }
            if self.col.done() {
                self.stop = true;
            }
            return Ok(());
        };
        match step {
            MatchStep::Filter(p) => {
                let row = MatchRow {
                    t: self.t,
                    vars: &self.plan.vars,
                    binding,
                };
                if p.expr.test(&row).map_err(qerr)? {
                    self.step(i + 1, binding)?;
                }
            }
            MatchStep::Scan { var, constraints } => {
                let n = self.t.var_count();
                for v in 0..n {
                    if self.stop {
                        break;
                    }
                    if self.fits_node(v, constraints)? {
                        binding[*var] = v;
                        self.step(i + 1, binding)?;
                    }
                }
                binding[*var] = UNBOUND;
            }
            MatchStep::Expand {
                from,
                to,
                rel,
                direction,
                edge_constraints,
                min_hops,
                max_hops,
                constraints,
                check,
            } => {
                let x = Expansion {
                    next_step: i + 1,
                    to: *to,
                    rel: *rel,
                    forward: *direction == Direction::Forward,
                    edge_constraints,
                    min_hops: *min_hops,
                    max_hops: *max_hops,
                    constraints,
                    check: *check,
                };
                let start = binding[*from];
                let saved = binding[*to];
                if x.min_hops == 1 && x.max_hops == Some(1) {
                    self.one_hop(&x, start, saved, binding)?;
                } else {
                    self.hops_within(&x, start, saved, binding)?;
                }
                binding[*to] = saved;
            }
        }
        Ok(())
    }

    /// An Expand of one hop: each fitting edge from `start` to a fitting
    /// node (the bound one, when `check`) binds it, and the next step runs.
    fn one_hop(
        &mut self,
        x: &Expansion<'_>,
        start: u32,
        saved: u32,
        binding: &mut Vec<u32>,
    ) -> Result<()> {
        let g = self.t.graph()?;
        for &e in x.edges(g, start) {
            if self.stop {
                break;
            }
            let Some(n) = x.next(g, e) else { continue };
            if x.check && n != saved {
                continue;
            }
            if !self.fits_edge(e, x.edge_constraints)? || !self.fits_node(n, x.constraints)? {
                continue;
            }
            binding[x.to] = n;
            if let Some(r) = x.rel {
                binding[r] = e;
            }
            let capturing = self.exec.capture.is_some();
            if capturing {
                self.hops.push(e);
            }
            self.step(x.next_step, binding)?;
            if capturing {
                self.hops.pop();
            }
        }
        if let Some(r) = x.rel {
            binding[r] = UNBOUND;
        }
        Ok(())
    }

    /// A variable-length Expand: every node within its range of hops from
    /// `start` (breadth-first, each node once), crossing only fitting
    /// edges, binds it when it fits, and the next step runs.
    fn hops_within(
        &mut self,
        x: &Expansion<'_>,
        start: u32,
        saved: u32,
        binding: &mut Vec<u32>,
    ) -> Result<()> {
        let g = self.t.graph()?;
        let mut dist: HashMap<u32, u32> = HashMap::from([(start, 0)]);
        // When capturing a graph: the edge each node was reached by.
        let capturing = self.exec.capture.is_some();
        let mut via: HashMap<u32, u32> = HashMap::new();
        let mut frontier = vec![start];
        let mut reached: Vec<u32> = Vec::new();
        if x.min_hops == 0 {
            reached.push(start);
        }
        let mut d = 0;
        while !frontier.is_empty() && x.max_hops.is_none_or(|m| d < m) {
            d += 1;
            let mut nextf = Vec::new();
            for &u in &frontier {
                for &e in x.edges(g, u) {
                    self.tick()?;
                    let Some(n) = x.next(g, e) else { continue };
                    if dist.contains_key(&n) || !self.fits_edge(e, x.edge_constraints)? {
                        continue;
                    }
                    dist.insert(n, d);
                    if capturing {
                        via.insert(n, e);
                    }
                    nextf.push(n);
                    if d >= x.min_hops {
                        reached.push(n);
                    }
                }
            }
            frontier = nextf;
        }
        for n in reached {
            if self.stop {
                break;
            }
            if x.check && n != saved {
                continue;
            }
            if !self.fits_node(n, x.constraints)? {
                continue;
            }
            binding[x.to] = n;
            let depth = self.hops.len();
            if capturing {
                // The path back to the start, by the edges that reached each node.
                let mut cur = n;
                while let Some(&e) = via.get(&cur) {
                    self.hops.push(e);
                    match x.back(g, e) {
                        Some(p) if p != start => cur = p,
                        _ => break,
                    }
                }
            }
            self.step(x.next_step, binding)?;
            self.hops.truncate(depth);
        }
        Ok(())
    }
}
