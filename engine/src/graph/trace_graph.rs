//! A trace's dependency graph in memory: compact arrays of local ids (CSR),
//! read with one get of the adjacency value stored at import, and the
//! breadth-first walk that traversals run on.
//!
//! Variables, ops and edges of a trace have dense local ids (`0..count`, in
//! recorded order), so every array is indexed by local id directly.

use std::sync::OnceLock;

use memtrace_query::ast::Direction;
use memtrace_storage::records::Counts;
use memtrace_storage::{Adjacency, ReadView, StorageError, TraceId};

use super::levels::{
    levels, node_levels, seed, sort_distinct, Count, CsrRows, Gather, Levels, WINDOW,
};
use super::op_graph::{op_levels, OpGraph};
use crate::error::{EngineError, Result};
use crate::exec::cancel::Cancel;

/// How many edges a walk examines between two looks at its [`Cancel`] token.
pub(super) const CANCEL_CHECK_STEPS: u32 = 4096;

/// What a walk does with a node offered through an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Admit {
    /// Do not cross this edge (the node may still be reached through another).
    Skip,
    /// Report the node but do not go on from it.
    Reach,
    /// Report the node and go on from it.
    Expand,
}

/// A node reached by a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Visit {
    /// Local id of the variable reached.
    pub node: u32,
    /// Its depth: the start depth plus the number of edges crossed.
    pub depth: u32,
    /// The edge that first reached it.
    pub edge: u32,
    /// The node it was reached from (the other end of `edge`).
    pub parent: u32,
}

/// One trace's adjacency as compact arrays of local ids.
///
/// Per edge: `source`, `target` and `op`. Per variable, the edges leaving
/// and entering it, and per op the edges it induced, each list in recorded
/// edge order (compressed sparse rows, see [`Adjacency`]). Built once, at
/// import, and stored as one value; loading it is one get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceGraph {
    pub(super) adj: Adjacency,
    /// The other end of each edge of `in_edges` (its source), in the same
    /// order: a backward step reads one array instead of two.
    in_far: Vec<u32>,
    /// The other end of each edge of `out_edges` (its target).
    out_far: Vec<u32>,
    /// The ops going backward as a graph of their own (see [`OpGraph`]),
    /// for a walk that gathers ops. Made by the first such walk (a graph
    /// only counted or walked for nodes never holds it); `None` when its
    /// ids would outgrow 32 bits, and such a walk goes through the
    /// variables.
    in_ops: OnceLock<Option<OpGraph>>,
    /// The ops going forward as a graph of their own (see `in_ops`).
    out_ops: OnceLock<Option<OpGraph>>,
}

fn corrupt(trace: Option<TraceId>, reason: String) -> EngineError {
    let reason = match trace {
        Some(t) => format!("trace #{t}: {reason}"),
        None => reason,
    };
    EngineError::Storage(StorageError::Decode {
        what: "adjacency",
        reason,
    })
}

impl TraceGraph {
    /// Loads a trace's graph: its stored adjacency value (one get), or, for
    /// a trace stored under schema version 1, one prefix scan of its
    /// outgoing adjacency index.
    ///
    /// `counts` are the trace record's. A value or index entries that
    /// disagree with them, name ids outside them, list an edge twice or
    /// miss one are reported as damaged data.
    pub fn load(view: &ReadView, trace: TraceId, counts: &Counts) -> Result<TraceGraph> {
        match view.adjacency(trace)? {
            Some(adj) => Self::from_stored(trace, counts, adj),
            None => Self::load_index(view, trace, counts),
        }
    }

    /// The graph of a trace's stored adjacency, checked against its counts.
    pub fn from_stored(trace: TraceId, counts: &Counts, adj: Adjacency) -> Result<TraceGraph> {
        if (adj.vars, adj.ops, adj.edges()) != (counts.variables, counts.ops, counts.edges) {
            return Err(corrupt(
                Some(trace),
                format!(
                    "the stored adjacency has {} variables, {} ops and {} edges; the trace {}, {} and {}",
                    adj.vars,
                    adj.ops,
                    adj.edges(),
                    counts.variables,
                    counts.ops,
                    counts.edges
                ),
            ));
        }
        Ok(TraceGraph::new(adj))
    }

    /// Builds the graph from the version-1 adjacency index (one prefix scan).
    fn load_index(view: &ReadView, trace: TraceId, counts: &Counts) -> Result<TraceGraph> {
        let edges = counts.edges as usize;
        let mut source = vec![u32::MAX; edges];
        let mut target = vec![0u32; edges];
        let mut op = vec![0u32; edges];
        for item in view.adjacency_out(trace) {
            let (var, edge, other, o) = item?;
            if var >= counts.variables || other >= counts.variables {
                return Err(corrupt(
                    Some(trace),
                    format!(
                        "edge {edge} joins variables {var} and {other}, but there are {}",
                        counts.variables
                    ),
                ));
            }
            if o >= counts.ops {
                return Err(corrupt(
                    Some(trace),
                    format!("edge {edge} names op {o}, but there are {}", counts.ops),
                ));
            }
            let Some(slot) = source.get_mut(edge as usize) else {
                return Err(corrupt(
                    Some(trace),
                    format!("edge {edge} listed, but there are {edges}"),
                ));
            };
            if *slot != u32::MAX {
                return Err(corrupt(Some(trace), format!("edge {edge} listed twice")));
            }
            *slot = var;
            target[edge as usize] = other;
            op[edge as usize] = o;
        }
        if let Some(missing) = source.iter().position(|&s| s == u32::MAX) {
            return Err(corrupt(
                Some(trace),
                format!("edge {missing} has no adjacency entry"),
            ));
        }
        let adj = Adjacency::from_edges(counts.variables, counts.ops, source, target, op)?;
        Ok(TraceGraph::new(adj))
    }

    /// The graph over a checked adjacency, with the other end of every CSR
    /// entry laid out beside it.
    fn new(adj: Adjacency) -> TraceGraph {
        // Padded so that every row's window of `WINDOW` entries lies
        // inside (see `keep_row`); the padding is no row's.
        let beside = |edges: &[u32], of: &[u32]| -> Vec<u32> {
            let mut far = Vec::with_capacity(edges.len() + WINDOW);
            far.extend(edges.iter().map(|&e| of[e as usize]));
            far.extend([0; WINDOW]);
            far
        };
        TraceGraph {
            in_far: beside(&adj.in_edges, &adj.source),
            out_far: beside(&adj.out_edges, &adj.target),
            in_ops: OnceLock::new(),
            out_ops: OnceLock::new(),
            adj,
        }
    }

    /// The ops in `dir` as a graph of their own, made on first use; `None`
    /// when its ids would outgrow 32 bits.
    pub(super) fn op_graph(&self, dir: Direction) -> Option<&OpGraph> {
        let cell = match dir {
            Direction::Backward => &self.in_ops,
            Direction::Forward => &self.out_ops,
        };
        cell.get_or_init(|| OpGraph::new(&self.adj, dir)).as_ref()
    }

    /// Builds a graph from `(source, target, op)` per edge, edge `i` being
    /// the `i`-th; ids out of range are an error.
    pub fn from_edges(vars: u32, ops: u32, edges: &[(u32, u32, u32)]) -> Result<TraceGraph> {
        if u32::try_from(edges.len()).is_err() {
            return Err(EngineError::TooManyEdges { edges: edges.len() });
        }
        let source = edges.iter().map(|e| e.0).collect();
        let target = edges.iter().map(|e| e.1).collect();
        let op = edges.iter().map(|e| e.2).collect();
        Ok(TraceGraph::new(Adjacency::from_edges(
            vars, ops, source, target, op,
        )?))
    }

    /// Number of variables (nodes are `0..vars()`).
    pub fn vars(&self) -> u32 {
        self.adj.vars
    }

    /// Number of edges (edges are `0..edge_count()`).
    pub fn edge_count(&self) -> u32 {
        self.adj.edges()
    }

    /// Number of ops (ops are `0..op_count()`).
    pub fn op_count(&self) -> u32 {
        self.adj.ops
    }

    fn slice<'g>(off: &[u32], edges: &'g [u32], i: u32) -> &'g [u32] {
        match (off.get(i as usize), off.get(i as usize + 1)) {
            (Some(&a), Some(&b)) => &edges[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Edges leaving variable `v`, in recorded order (empty for an unknown `v`).
    pub fn outgoing(&self, v: u32) -> &[u32] {
        Self::slice(&self.adj.out_off, &self.adj.out_edges, v)
    }

    /// Edges entering variable `v`, in recorded order (empty for an unknown `v`).
    pub fn incoming(&self, v: u32) -> &[u32] {
        Self::slice(&self.adj.in_off, &self.adj.in_edges, v)
    }

    /// Edges induced by op `op`, in recorded order (empty for an unknown op).
    pub fn op_edges(&self, op: u32) -> &[u32] {
        Self::slice(&self.adj.op_off, &self.adj.op_edges, op)
    }

    /// The source variable of edge `e`, `None` for an unknown edge.
    pub fn source(&self, e: u32) -> Option<u32> {
        self.adj.source.get(e as usize).copied()
    }

    /// The target variable of edge `e`, `None` for an unknown edge.
    pub fn target(&self, e: u32) -> Option<u32> {
        self.adj.target.get(e as usize).copied()
    }

    /// The op that induced edge `e`, `None` for an unknown edge.
    pub fn op(&self, e: u32) -> Option<u32> {
        self.adj.op.get(e as usize).copied()
    }

    /// Bytes the graph holds on the heap (plus its own size); the rows
    /// with ops, made on first use, count once made.
    pub fn bytes(&self) -> usize {
        let beside = [&self.in_far, &self.out_far];
        let row_ops = [&self.in_ops, &self.out_ops]
            .iter()
            .filter_map(|r| r.get().and_then(Option::as_ref))
            .map(OpGraph::bytes)
            .sum::<usize>();
        self.adj.bytes() + beside.iter().map(|v| v.capacity() * 4).sum::<usize>() + row_ops
    }

    /// The offsets, edge ids and other ends of the CSR that `dir` follows.
    fn csr(&self, dir: Direction) -> (&[u32], &[u32], &[u32]) {
        match dir {
            Direction::Backward => (&self.adj.in_off, &self.adj.in_edges, &self.in_far),
            Direction::Forward => (&self.adj.out_off, &self.adj.out_edges, &self.out_far),
        }
    }

    /// The visited-set bitmap of a walk, with `starts` marked; the starts
    /// once each, in order. A start that is not a variable is an error.
    fn seed(&self, starts: &[u32]) -> Result<(Vec<u64>, Vec<u32>)> {
        seed(self.adj.vars, starts)
    }

    /// How many nodes a [`walk`](Self::walk) that expands every node
    /// reports at a depth of at least `min_depth` (and below `max_depth`'s
    /// bound, as the walk has it): the size of a closure, counted level by
    /// level over the other ends alone, with no visit built.
    pub fn reach_count(
        &self,
        starts: &[u32],
        dir: Direction,
        min_depth: u32,
        max_depth: Option<u32>,
        cancel: &Cancel,
    ) -> Result<u64> {
        let mut count = Count {
            min_depth,
            count: 0,
        };
        self.walk_rows(dir, starts, max_depth, cancel, &mut count)?;
        Ok(count.count)
    }

    /// Level by level from `starts` (depth 0), each node at its least
    /// depth: for each level below `max_depth`, every edge in `dir` of the
    /// level's nodes is walked, and `level(depth, edges)` gets them (in
    /// node order, then recorded order) at one hop more than their level.
    /// The walk stops when `level` answers false. These are the edges a
    /// plain [`walk`](Self::walk) crosses or finds already crossed.
    pub fn walk_levels(
        &self,
        starts: &[u32],
        dir: Direction,
        max_depth: Option<u32>,
        cancel: &Cancel,
        level: impl FnMut(u32, &[u32]) -> Result<bool>,
    ) -> Result<()> {
        let mut gather = Gather {
            walked: Vec::new(),
            level,
        };
        self.walk_rows(dir, starts, max_depth, cancel, &mut gather)
    }

    /// The ops a [`walk_levels`](Self::walk_levels) crosses, each once, at
    /// the level that first crosses one of its edges: `level(depth, ops)`
    /// gets that level's new ops in id order (it may reorder or empty
    /// `ops`; the next level does not read them). The ops are walked as a
    /// graph of their own ([`OpGraph`], made by the first such walk), not
    /// through the variables (unless its ids would outgrow 32 bits). Stops
    /// when `level` answers false.
    pub fn walk_new_ops(
        &self,
        starts: &[u32],
        dir: Direction,
        max_depth: Option<u32>,
        cancel: &Cancel,
        level: impl FnMut(u32, &mut Vec<u32>) -> Result<bool>,
    ) -> Result<()> {
        match self.op_graph(dir) {
            Some(ops) => op_levels(ops, self.adj.vars, starts, max_depth, cancel, level),
            None => self.new_ops_by_variables(starts, dir, max_depth, cancel, level),
        }
    }

    /// [`walk_new_ops`](Self::walk_new_ops) through the variables: each
    /// level's edges, and their ops not seen before.
    pub(super) fn new_ops_by_variables(
        &self,
        starts: &[u32],
        dir: Direction,
        max_depth: Option<u32>,
        cancel: &Cancel,
        mut level: impl FnMut(u32, &mut Vec<u32>) -> Result<bool>,
    ) -> Result<()> {
        let mut seen = vec![0u64; (self.adj.ops as usize).div_ceil(64)];
        let mut order = seen.clone();
        let mut fresh = Vec::new();
        self.walk_levels(starts, dir, max_depth, cancel, |depth, edges| {
            fresh.clear();
            for o in edges.iter().filter_map(|&e| self.op(e)) {
                let (w, bit) = (o as usize / 64, 1u64 << (o % 64));
                if let Some(word) = seen.get_mut(w) {
                    if *word & bit == 0 {
                        *word |= bit;
                        fresh.push(o);
                    }
                }
            }
            sort_distinct(&mut fresh, &mut order);
            level(depth, &mut fresh)
        })
    }

    /// The nodes a [`walk`](Self::walk) that expands every node reports,
    /// a level at a time: `level(depth, nodes, edges)` gets each level's
    /// new nodes in the order the walk reports them and, beside each, the
    /// edge that first reached it (the walk's [`Visit`]s, without their
    /// parents). The walk's order is a level after the other, so these are
    /// its visits in order. Stops when `level` answers false.
    pub fn walk_new_nodes(
        &self,
        starts: &[u32],
        dir: Direction,
        max_depth: Option<u32>,
        cancel: &Cancel,
        level: impl FnMut(u32, &[u32], &[u32]) -> Result<bool>,
    ) -> Result<()> {
        let (off, edges, far) = self.csr(dir);
        node_levels(
            off,
            edges,
            far,
            self.adj.vars,
            starts,
            max_depth,
            cancel,
            level,
        )
    }

    /// The level loop over this graph's rows in `dir`, their entries being
    /// the edges.
    fn walk_rows<L: Levels>(
        &self,
        dir: Direction,
        starts: &[u32],
        max_depth: Option<u32>,
        cancel: &Cancel,
        visit: &mut L,
    ) -> Result<()> {
        let (off, edges, far) = self.csr(dir);
        let mut rows = CsrRows { off, edges, far };
        levels(&mut rows, self.adj.vars, starts, max_depth, cancel, visit)
    }

    /// Breadth-first walk from `starts` (at depth `start_depth`; they are
    /// marked visited but not reported).
    ///
    /// For each node at depth `d` (only while `d < max_depth`, when given),
    /// each of its edges in `dir`, in recorded order, whose other end is not
    /// yet visited is offered to `admit(edge, other, d + 1)`; what it
    /// answers decides (see [`Admit`]). Every reported node goes to `visit`
    /// once, with the edge that first reached it. Cycles, self-loops and
    /// parallel edges terminate.
    ///
    /// Fails with [`EngineError::StartOutOfRange`] for a start that is not a
    /// variable, and with [`EngineError::Cancelled`] once `cancel` is
    /// cancelled (looked at before starting and every few thousand edges).
    #[allow(clippy::too_many_arguments)]
    pub fn walk(
        &self,
        starts: &[u32],
        start_depth: u32,
        dir: Direction,
        max_depth: Option<u32>,
        cancel: &Cancel,
        admit: impl FnMut(u32, u32, u32) -> Admit,
        mut visit: impl FnMut(Visit),
    ) -> Result<()> {
        self.walk_while(starts, start_depth, dir, max_depth, cancel, admit, |v| {
            visit(v);
            true
        })
    }

    /// [`walk`](Self::walk), stopped as soon as `visit` answers false (the
    /// rest of the graph is not walked: a query that wants a few rows of a
    /// large closure pays for those rows only).
    #[allow(clippy::too_many_arguments)]
    pub fn walk_while(
        &self,
        starts: &[u32],
        start_depth: u32,
        dir: Direction,
        max_depth: Option<u32>,
        cancel: &Cancel,
        mut admit: impl FnMut(u32, u32, u32) -> Admit,
        mut visit: impl FnMut(Visit) -> bool,
    ) -> Result<()> {
        cancel.check()?;
        let (off, edges, fars) = self.csr(dir);
        let (mut seen, first) = self.seed(starts)?;
        let mark = |seen: &mut Vec<u64>, v: u32| {
            let (w, b) = (v as usize / 64, 1u64 << (v % 64));
            seen[w] |= b;
        };
        let mut queue: Vec<(u32, u32)> = first.into_iter().map(|s| (s, start_depth)).collect();
        let mut steps = 0u32;
        let mut head = 0;
        while let Some(&(node, depth)) = queue.get(head) {
            head += 1;
            if max_depth.is_some_and(|m| depth >= m) {
                continue;
            }
            let Some(next_depth) = depth.checked_add(1) else {
                continue;
            };
            let (a, b) = (off[node as usize] as usize, off[node as usize + 1] as usize);
            for (&e, &other) in edges[a..b].iter().zip(&fars[a..b]) {
                steps += 1;
                if steps == CANCEL_CHECK_STEPS {
                    steps = 0;
                    cancel.check()?;
                }
                if seen[other as usize / 64] & (1u64 << (other % 64)) != 0 {
                    continue;
                }
                let expand = match admit(e, other, next_depth) {
                    Admit::Skip => continue,
                    Admit::Reach => false,
                    Admit::Expand => true,
                };
                mark(&mut seen, other);
                let go_on = visit(Visit {
                    node: other,
                    depth: next_depth,
                    edge: e,
                    parent: node,
                });
                if !go_on {
                    return Ok(());
                }
                if expand {
                    queue.push((other, next_depth));
                }
            }
        }
        Ok(())
    }
}
