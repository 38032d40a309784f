//! A trace's dependency graph in memory: compact arrays of local ids (CSR),
//! read with one get of the adjacency value stored at import, and the
//! breadth-first walk that traversals run on.
//!
//! Variables, ops and edges of a trace have dense local ids (`0..count`, in
//! recorded order), so every array is indexed by local id directly.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use memtrace_storage::adjacency::group;
use memtrace_storage::records::Counts;
use memtrace_storage::{
    Adjacency, AdjacencyBlock, ReadView, StorageError, StoredAdjacency, TraceId, BLOCK_VARS,
};

use crate::error::{EngineError, Result};

/// How many edges a walk examines between two looks at its [`Cancel`] token.
const CANCEL_CHECK_STEPS: u32 = 4096;

/// A cheap, cloneable cancellation token: clones share one flag, so one
/// thread can cancel a long query that another runs.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels the work that holds this token (or any clone of it).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](Self::cancel) was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(EngineError::Cancelled)` once cancelled, `Ok(())` before.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(EngineError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Which way a walk follows edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Along incoming edges to their sources: what a variable depends on.
    Backward,
    /// Along outgoing edges to their targets: what depends on a variable.
    Forward,
}

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
    adj: Adjacency,
    /// The far end of each edge of `in_edges` (its source), in the same
    /// order: a backward step reads one array instead of two.
    in_far: Vec<u32>,
    /// The far end of each edge of `out_edges` (its target).
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

/// The ops of one direction as a graph of their own, for a walk that
/// gathers ops ([`TraceGraph::walk_new_ops`]). Each op's edges are cut
/// into groups: the near ends (where a walk in this direction arrives at
/// the op: the targets going backward, the sources going forward) whose
/// far ends are the same make one group, and a walk that reaches any near
/// end of a group crosses the op to all the group's far ends. Most ops are
/// one group (each input feeds each output), whose id is the op's own; the
/// groups of an op cut in several are numbered from the trace's op count
/// up. A group's row lists the groups that hold its far ends as near ends,
/// or, for a far end written by several groups and read by several, the
/// hub that stands for them (see `hubs`): rows then hold at most three
/// entries per edge of the trace.
///
/// Walked level by level, the groups are reached at the depths at which a
/// walk over variables first crosses their edges, so each op at the least
/// depth of its groups. The walk reads no variable that no op wrote (the
/// inputs of a recorded trace: four in ten of its variables), and an op
/// with several outputs once, not once per output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OpGraph {
    /// The trace's ops: a group below this is the op of its id, whole.
    ops: u32,
    /// Per group, and one past the last: where its row starts in `far`.
    off: Vec<u32>,
    /// The rows, each group at most once in a row; padded so that each
    /// row's window lies inside (see [`keep_row`]).
    far: Vec<u32>,
    /// Per variable, and one past the last: where the groups that hold it
    /// as a near end start in `near`.
    var_off: Vec<u32>,
    /// The groups that hold each variable as a near end.
    near: Vec<u32>,
    /// The op of each group numbered from `ops` up, in order.
    split: Vec<u32>,
    /// The variable of each hub, the nodes numbered after the groups: a
    /// variable written by several groups and read by several, which a
    /// row names once instead of naming each of its writers (a variable
    /// updated in place by many ops, read by many, would otherwise give
    /// rows as many entries as writers times readers). A hub reached in a
    /// level adds its writers' groups to that level; its own row is empty.
    hubs: Vec<u32>,
}

impl OpGraph {
    /// The groups of `adj`'s ops in `dir`, their hubs and their rows: at
    /// most three entries per edge. `None` when they outgrow 32-bit ids.
    fn new(adj: &Adjacency, dir: Direction) -> Option<OpGraph> {
        let (near_of, far_of) = match dir {
            Direction::Backward => (&adj.target, &adj.source),
            Direction::Forward => (&adj.source, &adj.target),
        };
        let ops = adj.ops as usize;
        // Each group's far ends, `spans[g]` delimiting them in `fars`; the
        // near ends as (variable, group).
        let (mut spans, mut fars) = (vec![[0u32; 2]; ops], Vec::with_capacity(near_of.len()));
        // The near ends as (variable, group), a list each.
        let mut split = Vec::new();
        let (mut near_vars, mut near_groups) = (Vec::new(), Vec::new());
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        // Every edge's ends, grouped by op: read in edge order and written
        // to each op's place. Reading them through `op_edges`, op by op,
        // reads the ends out of order when an op's edges were not recorded
        // together: the graph of the 150,001-variable growth trace took 1.5
        // to 2 ms longer to make (13.7 to 13.9 ms against 12.0 to 12.8).
        let mut by_op = vec![(0u32, 0u32); near_of.len()];
        let mut fill = adj.op_off.clone();
        for ((&o, &n), &f) in adj.op.iter().zip(near_of).zip(far_of) {
            let slot = fill.get_mut(o as usize)?;
            *by_op.get_mut(*slot as usize)? = (n, f);
            *slot += 1;
        }
        for (o, w) in (0u32..).zip(adj.op_off.windows(2)) {
            let edges = by_op.get(w[0] as usize..w[1] as usize)?;
            if let Some(&(v, _)) = edges.first() {
                if edges.iter().all(|p| p.0 == v) {
                    // One near end (most ops write one variable): whole.
                    let start = u32::try_from(fars.len()).ok()?;
                    fars.extend(edges.iter().map(|p| p.1));
                    let kept = sort_dedup(fars.get_mut(start as usize..)?);
                    fars.truncate(start as usize + kept);
                    spans[o as usize] = [start, u32::try_from(fars.len()).ok()?];
                    near_vars.push(v);
                    near_groups.push(o);
                    continue;
                }
            }
            pairs.clear();
            pairs.extend_from_slice(edges);
            pairs.sort_unstable();
            pairs.dedup();
            // Runs of one near end each, its far ends in order.
            runs.clear();
            let mut at = 0;
            while at < pairs.len() {
                let v = pairs[at].0;
                let end = at + pairs[at..].iter().take_while(|p| p.0 == v).count();
                runs.push((at, end));
                at = end;
            }
            let far_ends = |&(a, b): &(usize, usize)| pairs[a..b].iter().map(|p| p.1);
            let whole = runs.windows(2).all(|r| far_ends(&r[0]).eq(far_ends(&r[1])));
            if whole {
                if let Some(first) = runs.first() {
                    let start = u32::try_from(fars.len()).ok()?;
                    fars.extend(far_ends(first));
                    spans[o as usize] = [start, u32::try_from(fars.len()).ok()?];
                    near_vars.extend(runs.iter().map(|&(a, _)| pairs[a].0));
                    near_groups.extend(runs.iter().map(|_| o));
                }
                continue;
            }
            // Near ends with the same far ends, one group each.
            runs.sort_unstable_by(|x, y| far_ends(x).cmp(far_ends(y)));
            let mut i = 0;
            while i < runs.len() {
                let same = runs[i..]
                    .iter()
                    .take_while(|r| far_ends(r).eq(far_ends(&runs[i])))
                    .count();
                let g = u32::try_from(ops + split.len()).ok()?;
                split.push(o);
                let start = u32::try_from(fars.len()).ok()?;
                fars.extend(far_ends(&runs[i]));
                spans.push([start, u32::try_from(fars.len()).ok()?]);
                near_vars.extend(runs[i..i + same].iter().map(|&(a, _)| pairs[a].0));
                near_groups.extend(runs[i..i + same].iter().map(|_| g));
                i += same;
            }
        }
        // The groups that hold each variable as a near end.
        let vars = adj.vars as usize;
        let (var_off, by_var) = group(adj.vars, &near_vars);
        let near = by_var
            .iter()
            .map(|&i| near_groups.get(i as usize).copied())
            .collect::<Option<Vec<u32>>>()?;
        let mut readers = vec![0u32; vars];
        for &x in &fars {
            let r = readers.get_mut(x as usize)?;
            *r = r.saturating_add(1);
        }
        let first_hub = u32::try_from(spans.len()).ok()?;
        let (mut hub_of, mut hubs) = (vec![u32::MAX; vars], Vec::new());
        for (x, (&r, w)) in (0u32..).zip(readers.iter().zip(var_off.windows(2))) {
            let writers = w[1] - w[0];
            if u64::from(writers) * u64::from(r) > u64::from(writers) + u64::from(r) {
                *hub_of.get_mut(x as usize)? =
                    first_hub.checked_add(u32::try_from(hubs.len()).ok()?)?;
                hubs.push(x);
            }
        }
        drop(readers);
        // Each group's row: the groups of its far ends, or their hubs, each
        // once.
        let mut off = Vec::with_capacity(spans.len() + hubs.len() + 1);
        let mut far: Vec<u32> = Vec::new();
        for &[a, b] in &spans {
            let start = far.len();
            off.push(u32::try_from(start).ok()?);
            for &x in fars.get(a as usize..b as usize)? {
                let x = x as usize;
                match *hub_of.get(x)? {
                    u32::MAX => {
                        let (&from, &to) = (var_off.get(x)?, var_off.get(x + 1)?);
                        for &h in near.get(from as usize..to as usize)? {
                            far.push(h);
                        }
                    }
                    hub => far.push(hub),
                }
            }
            // Each group once, in order (most rows hold one or two).
            if let Some(row) = far.get_mut(start..).filter(|r| r.len() > 1) {
                let kept = sort_dedup(row);
                far.truncate(start + kept);
            }
        }
        // The hubs' rows, empty, then the end.
        let end = u32::try_from(far.len()).ok()?;
        off.extend(std::iter::repeat_n(end, hubs.len() + 1));
        far.extend([0; WINDOW]);
        Some(OpGraph {
            ops: adj.ops,
            off,
            far,
            var_off,
            near,
            split,
            hubs,
        })
    }

    /// How many groups the graph has (its nodes before the hubs).
    fn groups(&self) -> usize {
        self.off.len().saturating_sub(1 + self.hubs.len())
    }

    /// How many nodes the graph has: its groups and its hubs.
    fn nodes(&self) -> usize {
        self.off.len().saturating_sub(1)
    }

    /// The groups that hold variable `v` as a near end.
    fn of_var(&self, v: u32) -> &[u32] {
        let v = v as usize;
        match (self.var_off.get(v), self.var_off.get(v + 1)) {
            (Some(&a), Some(&b)) => self.near.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    fn bytes(&self) -> usize {
        4 * (self.off.capacity()
            + self.far.capacity()
            + self.var_off.capacity()
            + self.near.capacity()
            + self.split.capacity()
            + self.hubs.capacity())
    }
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

    /// The graph over a checked adjacency, with the far end of every CSR
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
    fn op_graph(&self, dir: Direction) -> Option<&OpGraph> {
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
            return Err(EngineError::BadRequest(format!(
                "{} edges: more than a trace can hold",
                edges.len()
            )));
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

    /// The offsets, edge ids and far ends of the CSR that `dir` follows.
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
    /// level over the far ends alone, with no visit built.
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
    fn new_ops_by_variables(
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
    /// Fails with [`EngineError::BadRequest`] for a start that is not a
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

/// The visited-set bitmap of a walk over `vars` variables, with `starts`
/// marked; the starts once each, in order. A start that is not a variable
/// is an error.
fn seed(vars: u32, starts: &[u32]) -> Result<(Vec<u64>, Vec<u32>)> {
    // Room for one word more: the level loops add a sink (see `keep_row`).
    let words = (vars as usize).div_ceil(64);
    let mut seen = Vec::with_capacity(words + 1);
    seen.resize(words, 0u64);
    let mut first = Vec::with_capacity(starts.len());
    for &s in starts {
        if s >= vars {
            return Err(EngineError::BadRequest(format!(
                "walk from variable {s}, but the trace has {vars}"
            )));
        }
        let (w, b) = (s as usize / 64, 1u64 << (s % 64));
        if seen[w] & b == 0 {
            seen[w] |= b;
            first.push(s);
        }
    }
    Ok((seen, first))
}

/// Where a level walk reads each variable's row in one direction: its
/// edges and their far ends.
trait Rows {
    /// Makes the rows of `nodes` readable (reads what is not yet held).
    fn prepare(&mut self, nodes: &[u32]) -> Result<()>;
    /// The row of `v`, prepared before.
    fn row(&self, v: u32) -> (&[u32], &[u32]);
    /// Keeps the far ends of `v`'s row (prepared before) not yet `seen`,
    /// as [`keep_unseen`] does; `out` has room as [`keep_row`] wants it
    /// for `rows` rows.
    #[inline(always)]
    fn keep_far(
        &self,
        v: u32,
        seen: &mut [u64],
        out: &mut Vec<u32>,
        held: usize,
        _rows: usize,
    ) -> usize {
        keep_unseen(seen, self.row(v).1, out, held)
    }
}

/// The rows of a whole graph in memory, their entries being the edges.
struct CsrRows<'g> {
    off: &'g [u32],
    edges: &'g [u32],
    far: &'g [u32],
}

impl Rows for CsrRows<'_> {
    fn prepare(&mut self, _: &[u32]) -> Result<()> {
        Ok(())
    }

    #[inline]
    fn row(&self, v: u32) -> (&[u32], &[u32]) {
        let (a, b) = (
            self.off[v as usize] as usize,
            self.off[v as usize + 1] as usize,
        );
        (&self.edges[a..b], &self.far[a..b])
    }

    #[inline(always)]
    fn keep_far(
        &self,
        v: u32,
        seen: &mut [u64],
        out: &mut Vec<u32>,
        held: usize,
        rows: usize,
    ) -> usize {
        let v = v as usize;
        let (Some(&a), Some(&b)) = (self.off.get(v), self.off.get(v + 1)) else {
            return held;
        };
        keep_row(seen, self.far, a as usize, b as usize, out, held, rows)
    }
}

/// What a level walk does with the rows it expands and at the end of each
/// level.
trait Levels {
    /// Whether [`row`](Self::row) wants the rows' entries.
    const ROWS: bool;
    /// The entries (edges, or their ops) of one expanded node's row.
    fn row(&mut self, entries: &[u32]);
    /// Level `depth` is walked and newly reached `reached` nodes; false
    /// stops the walk.
    fn level(&mut self, depth: u32, reached: usize) -> Result<bool>;
}

/// Counts the nodes reached at a depth of at least `min_depth`.
struct Count {
    min_depth: u32,
    count: u64,
}

impl Levels for Count {
    const ROWS: bool = false;

    fn row(&mut self, _: &[u32]) {}

    fn level(&mut self, depth: u32, reached: usize) -> Result<bool> {
        if depth >= self.min_depth {
            self.count += reached as u64;
        }
        Ok(true)
    }
}

/// Gathers each level's edges for a callback.
struct Gather<F> {
    walked: Vec<u32>,
    level: F,
}

impl<F: FnMut(u32, &[u32]) -> Result<bool>> Levels for Gather<F> {
    const ROWS: bool = true;

    fn row(&mut self, entries: &[u32]) {
        self.walked.extend_from_slice(entries);
    }

    fn level(&mut self, depth: u32, _: usize) -> Result<bool> {
        let go_on = (self.level)(depth, &self.walked)?;
        self.walked.clear();
        Ok(go_on)
    }
}

/// Sorts distinct ids, all below `64 * bits.len()`. Ids as many as their
/// span are every id of it (a level's ops often are: recorded one after
/// the other) and are written out in order. When they lie close together
/// they are set in the bitmap `bits` and read back in order, which is
/// linear; otherwise they are sorted. `bits` is all clear before and after.
fn sort_distinct(ids: &mut Vec<u32>, bits: &mut [u64]) {
    if ids.is_empty() {
        return;
    }
    // Both bounds in one pass.
    let (lo, hi) = ids
        .iter()
        .fold((u32::MAX, 0), |(lo, hi), &i| (lo.min(i), hi.max(i)));
    if (hi - lo) as usize + 1 == ids.len() {
        // Distinct ids as many as their span: every id of it, once.
        ids.clear();
        ids.extend(lo..=hi);
        return;
    }
    let (lo, hi) = (lo as usize / 64, hi as usize / 64);
    if ids.len() < 8 || hi - lo >= 2 * ids.len() || hi >= bits.len() {
        ids.sort_unstable();
        return;
    }
    for &i in ids.iter() {
        bits[i as usize / 64] |= 1 << (i % 64);
    }
    ids.clear();
    for (w, word) in (lo..).zip(&mut bits[lo..=hi]) {
        let mut rest = std::mem::take(word);
        while rest != 0 {
            ids.push((w * 64) as u32 + rest.trailing_zeros());
            rest &= rest - 1;
        }
    }
}

/// Makes `slots` at least `len` long (doubling, so that growing it costs
/// linear time over a walk); what it holds past what a caller kept is of
/// no meaning.
#[inline]
fn room(slots: &mut Vec<u32>, len: usize) {
    if slots.len() < len {
        slots.resize(len.max(2 * slots.len()), 0);
    }
}

/// The level loop: from `starts` (depth 0), each node at its least depth,
/// for each level below `max_depth` every edge of the level's nodes is
/// walked: `visit` gets each expanded node's row entries (when it wants
/// them), and the depth and number of nodes newly reached after each
/// level; it answers false to stop.
fn levels<R: Rows, L: Levels>(
    rows: &mut R,
    vars: u32,
    starts: &[u32],
    max_depth: Option<u32>,
    cancel: &Cancel,
    visit: &mut L,
) -> Result<()> {
    cancel.check()?;
    let (mut seen, mut nodes) = seed(vars, starts)?;
    // The sink word of `keep_row`.
    seen.push(u64::MAX);
    // The next level's nodes are `next[..held]`. Every far end is written
    // to `next[held]` and kept by moving `held` past it when not yet seen:
    // whether a far end is new follows no pattern a processor predicts, and
    // a mispredicted branch per far end made a walk wait on each row's
    // read in turn instead of several at once (BENCHMARKS.md, "A walk
    // without a branch per far end").
    let mut next: Vec<u32> = Vec::new();
    let mut depth = 0u32;
    while !nodes.is_empty() && max_depth.is_none_or(|m| depth < m) {
        cancel.check()?;
        rows.prepare(&nodes)?;
        let mut held = 0usize;
        // Room for a window per row (see `keep_row`).
        room(&mut next, WINDOW * nodes.len());
        for &node in &nodes {
            if L::ROWS {
                visit.row(rows.row(node).0);
            }
            held = rows.keep_far(node, &mut seen, &mut next, held, nodes.len());
        }
        depth += 1;
        if !visit.level(depth, held)? {
            return Ok(());
        }
        nodes.clear();
        nodes.extend_from_slice(next.get(..held).unwrap_or(&[]));
    }
    Ok(())
}

/// Keeps those of `ids` not yet `seen`, marking them: each is written to
/// `out[held]` and kept by moving `held` past it when new, without a
/// branch (see [`levels`]). Returns the new `held`. Ids past `seen` are
/// left out.
#[inline(always)]
fn keep_unseen(seen: &mut [u64], ids: &[u32], out: &mut Vec<u32>, held: usize) -> usize {
    keep_unseen_at(seen, ids, 0, out, &mut (), held)
}

/// Where a level walk notes, beside each far end it keeps, the position in
/// the far ends it was read at: nowhere (`()`, a walk that wants only the
/// nodes), or a list as long as the kept far ends (a walk whose rows name
/// the edge that reached each node).
trait Spots {
    /// Makes room for `len` positions.
    fn room(&mut self, len: usize);
    /// Notes `at` as the position of the far end written at `held`.
    fn put(&mut self, held: usize, at: usize);
}

impl Spots for () {
    #[inline(always)]
    fn room(&mut self, _: usize) {}

    #[inline(always)]
    fn put(&mut self, _: usize, _: usize) {}
}

impl Spots for Vec<u32> {
    #[inline(always)]
    fn room(&mut self, len: usize) {
        room(self, len);
    }

    #[inline(always)]
    fn put(&mut self, held: usize, at: usize) {
        if let Some(slot) = self.get_mut(held) {
            *slot = at as u32;
        }
    }
}

/// [`keep_unseen`], noting in `spots` where each id was read: `ids` being
/// the far ends from position `base`, the `k`th at `base + k`.
#[inline(always)]
fn keep_unseen_at<P: Spots>(
    seen: &mut [u64],
    ids: &[u32],
    base: usize,
    out: &mut Vec<u32>,
    spots: &mut P,
    mut held: usize,
) -> usize {
    room(out, held + ids.len());
    spots.room(held + ids.len());
    for (k, &id) in ids.iter().enumerate() {
        let (w, bit) = (id as usize / 64, 1u64 << (id % 64));
        if let (Some(word), Some(slot)) = (seen.get_mut(w), out.get_mut(held)) {
            *slot = id;
            spots.put(held, base + k);
            held += usize::from(*word & bit == 0);
            *word |= bit;
        }
    }
    held
}

/// How many far ends a short row's window holds: rows of one up to this
/// many are read as a window of this many entries of the far ends, those
/// past the row's end masked, so that the loop over a row runs the same
/// number of times for every short row and its end is not a branch that
/// a processor mispredicts; padding keeps every window inside the array.
/// An empty row (a variable no op wrote: four in ten of a recorded
/// trace's) is passed over before it. Three measured fastest of two to
/// eight (BENCHMARKS.md, "Short rows read as windows").
const WINDOW: usize = 3;

/// [`keep_unseen`] of the far ends `far[a..b]` of one row: a short row
/// (see [`WINDOW`]) whose window lies inside `far` is read as that window,
/// with its entries past `b` masked (written to `out` but not kept); a
/// longer row as a slice.
///
/// The last word of `seen` is a sink, all ones, past every far end's: a
/// masked entry reads and marks it instead of its own word, so it is never
/// new and never makes a far end's test wait on its write (marking words
/// of other rows' far ends made leaf-heavy traces a tenth slower).
///
/// `out` must have room for a window past `held` for each of `rows` rows
/// (`out.len() >= held + WINDOW * rows`), `rows` being at least the rows
/// of the level not yet kept, this one among them: a short row then needs
/// no check of its room (the walk takes about a tenth less time without),
/// and a longer one makes room to keep that true.
#[inline(always)]
fn keep_row(
    seen: &mut [u64],
    far: &[u32],
    a: usize,
    b: usize,
    out: &mut Vec<u32>,
    held: usize,
    rows: usize,
) -> usize {
    keep_row_at(seen, far, a, b, out, &mut (), held, rows)
}

/// [`keep_row`], noting in `spots` where in `far` each far end was read;
/// `spots` must have room as `out` does.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn keep_row_at<P: Spots>(
    seen: &mut [u64],
    far: &[u32],
    a: usize,
    b: usize,
    out: &mut Vec<u32>,
    spots: &mut P,
    mut held: usize,
    rows: usize,
) -> usize {
    let len = b.wrapping_sub(a);
    if len == 0 {
        return held;
    }
    if len <= WINDOW {
        if let Some(window) = far.get(a..a + WINDOW) {
            let sink = seen.len().wrapping_sub(1);
            for (k, &id) in window.iter().enumerate() {
                let w = if k < len { id as usize / 64 } else { sink };
                let bit = 1u64 << (id % 64);
                if let (Some(word), Some(slot)) = (seen.get_mut(w), out.get_mut(held)) {
                    *slot = id;
                    spots.put(held, a + k);
                    held += usize::from(*word & bit == 0);
                    *word |= bit;
                }
            }
            return held;
        }
    }
    keep_long(
        seen,
        far.get(a..b).unwrap_or(&[]),
        a,
        out,
        spots,
        held,
        rows,
    )
}

/// The part of [`keep_row`] for a row longer than its window: kept as
/// [`keep_unseen`] keeps it, with room made for windows of `rows` rows
/// after it. Not inlined into the loop over rows, whose short rows run
/// faster without it (BENCHMARKS.md, "Short rows read as windows").
#[inline(never)]
fn keep_long<P: Spots>(
    seen: &mut [u64],
    ids: &[u32],
    base: usize,
    out: &mut Vec<u32>,
    spots: &mut P,
    held: usize,
    rows: usize,
) -> usize {
    let len = held + ids.len() + WINDOW * rows;
    room(out, len);
    spots.room(len);
    keep_unseen_at(seen, ids, base, out, spots, held)
}

/// The level loop over `graph`'s groups of ops (see [`OpGraph`]), from
/// variables `starts` of a trace of `vars` variables: level 1 is the groups
/// that hold a start as a near end, and each level after it the groups
/// that the rows of the level before reach and no level before held, as
/// the level loop of [`levels`] keeps its nodes. After each level,
/// `level(depth, new_ops)` gets the ops of its groups that no level before
/// had, in id order (it may reorder or empty them); it answers false to
/// stop. A group numbered below the op count is a whole op, new when the
/// group is; only the ops cut in several groups are looked up in a set of
/// ops seen.
fn op_levels(
    graph: &OpGraph,
    vars: u32,
    starts: &[u32],
    max_depth: Option<u32>,
    cancel: &Cancel,
    mut level: impl FnMut(u32, &mut Vec<u32>) -> Result<bool>,
) -> Result<()> {
    cancel.check()?;
    let (_, starts) = seed(vars, starts)?;
    if max_depth == Some(0) {
        return Ok(());
    }
    let ops = graph.ops;
    let mut seen = vec![0u64; graph.nodes().div_ceil(64)];
    // The sink word of `keep_row`.
    seen.push(u64::MAX);
    // Ops seen, of those cut in several groups; `order` is scratch for
    // ordering a level's new ops, all clear between levels.
    let words = (ops as usize).div_ceil(64);
    let mut ops_seen = vec![0u64; if graph.split.is_empty() { 0 } else { words }];
    let mut order = vec![0u64; words];
    // A level's groups are `nodes`, the next's `next[..held]`.
    let (mut nodes, mut next, mut fresh) = (Vec::new(), Vec::new(), Vec::new());
    let mut held = 0;
    for &s in &starts {
        held = keep_unseen(&mut seen, graph.of_var(s), &mut nodes, held);
    }
    nodes.truncate(held);
    let mut depth = 1u32;
    while !nodes.is_empty() {
        if !graph.hubs.is_empty() {
            reach_through_hubs(graph, &mut seen, &mut nodes);
        }
        fresh.clear();
        for &g in &nodes {
            if g < ops {
                fresh.push(g);
            } else if let Some(&o) = graph.split.get((g - ops) as usize) {
                let (w, bit) = (o as usize / 64, 1u64 << (o % 64));
                if let Some(word) = ops_seen.get_mut(w) {
                    if *word & bit == 0 {
                        *word |= bit;
                        fresh.push(o);
                    }
                }
            }
        }
        sort_distinct(&mut fresh, &mut order);
        if !level(depth, &mut fresh)? || max_depth.is_some_and(|m| depth >= m) {
            return Ok(());
        }
        cancel.check()?;
        held = 0;
        // Room for a window of far ends per row (see `keep_row`).
        room(&mut next, WINDOW * nodes.len());
        for &g in &nodes {
            let g = g as usize;
            let (Some(&a), Some(&b)) = (graph.off.get(g), graph.off.get(g + 1)) else {
                continue;
            };
            held = keep_row(
                &mut seen,
                &graph.far,
                a as usize,
                b as usize,
                &mut next,
                held,
                nodes.len(),
            );
        }
        depth += 1;
        nodes.clear();
        nodes.extend_from_slice(next.get(..held).unwrap_or(&[]));
    }
    Ok(())
}

/// Adds to a level of `graph`'s `nodes` the groups, not yet `seen`, of
/// each hub among them (a hub reached in a level stands for its writers'
/// groups in that level; see [`OpGraph::hubs`]).
fn reach_through_hubs(graph: &OpGraph, seen: &mut [u64], nodes: &mut Vec<u32>) {
    let first_hub = graph.groups();
    let mut i = 0;
    while let Some(&h) = nodes.get(i) {
        if let Some(&x) = (h as usize)
            .checked_sub(first_hub)
            .and_then(|k| graph.hubs.get(k))
        {
            let held = keep_unseen(seen, graph.of_var(x), nodes, nodes.len());
            nodes.truncate(held);
        }
        i += 1;
    }
}

/// Sorts `ids` and moves its distinct values to its front, in order;
/// returns how many there are. A few ids (most rows of a trace's ops hold
/// one to three) are sorted in place by insertion, without a call.
fn sort_dedup(ids: &mut [u32]) -> usize {
    if ids.len() <= 8 {
        for i in 1..ids.len() {
            let mut j = i;
            while j > 0 && ids[j - 1] > ids[j] {
                ids.swap(j - 1, j);
                j -= 1;
            }
        }
    } else {
        ids.sort_unstable();
    }
    let mut kept = 0;
    for i in 0..ids.len() {
        if kept == 0 || ids[i] != ids[kept - 1] {
            ids[kept] = ids[i];
            kept += 1;
        }
    }
    kept
}

/// How many nodes a level walk makes room for at its start, at most (as
/// many as the trace's variables when fewer).
const FIRST_ROOM: usize = 1024;

/// The level loop of [`levels`] over a graph's rows in memory (`off`,
/// `edges`, `far` as [`CsrRows`] has them), noting the edge that first
/// reached each new node: after each level, `level(depth, nodes, edges)`
/// gets the level's new nodes in the order a breadth-first walk reaches
/// them and, beside each, that edge; it answers false to stop.
#[allow(clippy::too_many_arguments)]
fn node_levels(
    off: &[u32],
    edges: &[u32],
    far: &[u32],
    vars: u32,
    starts: &[u32],
    max_depth: Option<u32>,
    cancel: &Cancel,
    mut level: impl FnMut(u32, &[u32], &[u32]) -> Result<bool>,
) -> Result<()> {
    cancel.check()?;
    let (mut seen, mut nodes) = seed(vars, starts)?;
    // The sink word of `keep_row`.
    seen.push(u64::MAX);
    // A level's new nodes are `next[..held]`, `spots[..held]` where each
    // was read in `far`, and `via` the edges at those places.
    // Room made once for the levels of a small trace (a walk's lists grow
    // by doubling otherwise: a few reallocations each on every walk).
    let first_room = (vars as usize).min(FIRST_ROOM);
    let mut next = Vec::with_capacity(WINDOW * first_room);
    let mut spots = Vec::with_capacity(WINDOW * first_room);
    let mut via = Vec::with_capacity(first_room);
    nodes.reserve(first_room);
    let mut depth = 0u32;
    while !nodes.is_empty() && max_depth.is_none_or(|m| depth < m) {
        cancel.check()?;
        let mut held = 0usize;
        // Room for a window per row (see `keep_row`), in both lists.
        room(&mut next, WINDOW * nodes.len());
        room(&mut spots, WINDOW * nodes.len());
        for &node in &nodes {
            let v = node as usize;
            let (Some(&a), Some(&b)) = (off.get(v), off.get(v + 1)) else {
                continue;
            };
            let rows = nodes.len();
            held = keep_row_at(
                &mut seen, far, a as usize, b as usize, &mut next, &mut spots, held, rows,
            );
        }
        depth += 1;
        via.clear();
        via.extend(
            spots
                .get(..held)
                .unwrap_or(&[])
                .iter()
                .map(|&at| edges.get(at as usize).copied().unwrap_or(u32::MAX)),
        );
        let reached = next.get(..held).unwrap_or(&[]);
        if !level(depth, reached, &via)? {
            return Ok(());
        }
        nodes.clear();
        nodes.extend_from_slice(reached);
    }
    Ok(())
}

/// The size, in bytes, up to which a walk of more than one level on a cold
/// trace reads every block of its direction at once: one read of this size
/// costs about what a second small read does.
const WHOLE_DIRECTION_BYTES: u64 = 64 << 10;

/// About how many bytes one direction's blocks of a trace take: each edge
/// is a row entry (its id and its far end), each variable an offset.
fn direction_bytes(vars: u32, edges: u32) -> u64 {
    8 * u64::from(edges) + 4 * u64::from(vars)
}

/// A trace's rows in one direction, read block by block from the store as
/// a walk reaches them: a walk of a few hops on a cold trace reads a few
/// blocks instead of the whole adjacency value.
struct BlockRows<'v> {
    view: &'v ReadView<'v>,
    trace: TraceId,
    backward: bool,
    vars: u32,
    edges: u32,
    /// Blocks read so far, by number.
    blocks: HashMap<u32, AdjacencyBlock>,
    /// Set when a block is not stored (a trace stored before blocks were).
    missing: bool,
    /// Read every block of the direction on the first level.
    whole: bool,
}

impl Rows for BlockRows<'_> {
    fn prepare(&mut self, nodes: &[u32]) -> Result<()> {
        let mut want: Vec<u32> = if self.blocks.is_empty() && self.whole {
            // Every block of the direction at once: they are stored side by
            // side, so one read fetches them all, where a level at a time
            // would read once per level.
            (0..self.vars.div_ceil(BLOCK_VARS)).collect()
        } else {
            nodes
                .iter()
                .map(|&v| AdjacencyBlock::of(v))
                .filter(|b| !self.blocks.contains_key(b))
                .collect()
        };
        want.sort_unstable();
        want.dedup();
        if want.is_empty() {
            return Ok(());
        }
        let got =
            self.view
                .adjacency_blocks(self.trace, self.backward, &want, self.vars, self.edges)?;
        for (b, block) in want.into_iter().zip(got) {
            match block {
                Some(block) => {
                    self.blocks.insert(b, block);
                }
                None => {
                    self.missing = true;
                    self.blocks.insert(b, AdjacencyBlock::default());
                }
            }
        }
        Ok(())
    }

    fn row(&self, v: u32) -> (&[u32], &[u32]) {
        self.blocks
            .get(&AdjacencyBlock::of(v))
            .and_then(|b| b.row(v))
            .unwrap_or((&[], &[]))
    }
}

/// The most levels a bounded walk on a cold small trace scans its head's
/// edges for ([`reach_count_scanned`]) before building the trace's rows
/// is cheaper: building them passes over the edges about this many times
/// (three groupings of two passes each, the far ends beside two of them,
/// and the memory all of that is written to).
pub const SCAN_LEVELS: u32 = 8;

/// A trace's rows in one direction found by scanning the edges of its
/// head as stored, once per level, for those whose near end is one of the
/// level's nodes: a walk of a few hops on a cold small trace builds no
/// row of the variables it never reaches.
struct ScannedRows<'a> {
    adj: &'a StoredAdjacency,
    backward: bool,
    /// The level's nodes, a bit each; all clear between levels.
    marked: Vec<u64>,
    /// (near end, edge, far end) of each edge found, by near end then edge.
    found: Vec<(u32, u32, u32)>,
    /// The level's rows: the near ends, edges and far ends of `found`.
    near: Vec<u32>,
    edges: Vec<u32>,
    far: Vec<u32>,
}

impl Rows for ScannedRows<'_> {
    fn prepare(&mut self, nodes: &[u32]) -> Result<()> {
        for &v in nodes {
            if let Some(w) = self.marked.get_mut(v as usize / 64) {
                *w |= 1 << (v % 64);
            }
        }
        self.found.clear();
        let found = &mut self.found;
        let scanned = self
            .adj
            .scan(self.backward, &self.marked, |n, e, f| found.push((n, e, f)));
        for &v in nodes {
            if let Some(w) = self.marked.get_mut(v as usize / 64) {
                *w &= !(1 << (v % 64));
            }
        }
        scanned?;
        // By near end, each row in edge order (the scan found them so).
        self.found.sort_by_key(|&(n, _, _)| n);
        self.near.clear();
        self.edges.clear();
        self.far.clear();
        for &(n, e, f) in &self.found {
            self.near.push(n);
            self.edges.push(e);
            self.far.push(f);
        }
        Ok(())
    }

    fn row(&self, v: u32) -> (&[u32], &[u32]) {
        let a = self.near.partition_point(|&n| n < v);
        let b = a + self.near[a..].partition_point(|&n| n == v);
        (&self.edges[a..b], &self.far[a..b])
    }
}

/// [`TraceGraph::reach_count`] over the edges of a small trace's head as
/// stored (see [`ScannedRows`]), bounded at `max_depth` levels.
pub fn reach_count_scanned(
    adj: &StoredAdjacency,
    starts: &[u32],
    dir: Direction,
    min_depth: u32,
    max_depth: u32,
    cancel: &Cancel,
) -> Result<u64> {
    let (vars, _, _) = adj.counts();
    let mut rows = ScannedRows {
        adj,
        backward: dir == Direction::Backward,
        marked: vec![0; (vars as usize).div_ceil(64)],
        found: Vec::new(),
        near: Vec::new(),
        edges: Vec::new(),
        far: Vec::new(),
    };
    count_levels(&mut rows, vars, starts, min_depth, Some(max_depth), cancel)
}

/// [`TraceGraph::reach_count`] read from the stored blocks of a trace's
/// rows instead of a loaded graph: for a bounded walk on a trace that is
/// not in memory. `None` when the trace has no blocks stored (then load
/// the graph). `counts` are the trace record's.
#[allow(clippy::too_many_arguments)]
pub fn reach_count_stored(
    view: &ReadView,
    trace: TraceId,
    counts: &Counts,
    starts: &[u32],
    dir: Direction,
    min_depth: u32,
    max_depth: Option<u32>,
    cancel: &Cancel,
) -> Result<Option<u64>> {
    let mut rows = BlockRows {
        view,
        trace,
        backward: dir == Direction::Backward,
        vars: counts.variables,
        edges: counts.edges,
        blocks: HashMap::new(),
        missing: false,
        whole: max_depth.is_some_and(|d| d >= 2)
            && direction_bytes(counts.variables, counts.edges) <= WHOLE_DIRECTION_BYTES,
    };
    let count = count_levels(
        &mut rows,
        counts.variables,
        starts,
        min_depth,
        max_depth,
        cancel,
    )?;
    Ok((!rows.missing).then_some(count))
}

/// The nodes a level walk over `rows` reaches at a depth of at least
/// `min_depth`.
fn count_levels<R: Rows>(
    rows: &mut R,
    vars: u32,
    starts: &[u32],
    min_depth: u32,
    max_depth: Option<u32>,
    cancel: &Cancel,
) -> Result<u64> {
    let mut count = Count {
        min_depth,
        count: 0,
    };
    levels(rows, vars, starts, max_depth, cancel, &mut count)?;
    Ok(count.count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, ImportOptions};
    use proptest::prelude::*;
    use std::collections::VecDeque;

    fn expand_all(_: u32, _: u32, _: u32) -> Admit {
        Admit::Expand
    }

    /// (node, depth, edge, parent) of every visit.
    fn run(
        g: &TraceGraph,
        starts: &[u32],
        dir: Direction,
        max_depth: Option<u32>,
        admit: impl FnMut(u32, u32, u32) -> Admit,
    ) -> Vec<(u32, u32, u32, u32)> {
        let mut out = Vec::new();
        g.walk(starts, 0, dir, max_depth, &Cancel::new(), admit, |v| {
            out.push((v.node, v.depth, v.edge, v.parent))
        })
        .unwrap();
        out
    }

    /// 0 -> 1 -> 2 -> 0 (a cycle), 1 -> 1 (a self-loop), 2 => 3 twice
    /// (parallel edges), 3 -> 4, and 5 alone.
    fn sample() -> TraceGraph {
        TraceGraph::from_edges(
            6,
            3,
            &[
                (0, 1, 0),
                (1, 2, 0),
                (2, 0, 1),
                (1, 1, 1),
                (2, 3, 2),
                (2, 3, 2),
                (3, 4, 2),
            ],
        )
        .unwrap()
    }

    #[test]
    fn rows_with_ops_are_made_by_the_first_ops_walk_and_counted_since() {
        let g = sample();
        let before = g.bytes();
        g.reach_count(&[0], Direction::Forward, 0, None, &Cancel::new())
            .unwrap();
        assert_eq!(g.bytes(), before, "a count makes no rows with ops");
        let walk = |dir| {
            let mut got = Vec::new();
            g.walk_new_ops(&[0], dir, None, &Cancel::new(), |d, ops| {
                got.extend(ops.iter().map(|&o| (d, o)));
                Ok(true)
            })
            .unwrap();
            got
        };
        let first = walk(Direction::Forward);
        let made = g.bytes();
        assert!(made > before);
        // Made once: a second walk reads them again.
        assert_eq!(walk(Direction::Forward), first);
        assert_eq!(g.bytes(), made);
        walk(Direction::Backward);
        assert!(g.bytes() > made);
    }

    #[test]
    fn an_op_is_cut_into_groups_of_near_ends_with_the_same_far_ends() {
        // Op 0 feeds both its inputs (0, 1) to both its outputs (2, 3): one
        // group, numbered 0. Op 1 feeds 2 to 4 and 3 to 5: going backward,
        // two groups (4 and 5 have different far ends), numbered from the op
        // count up; going forward, 2 and 3 differ too. Op 2 writes 6 from 4
        // and 5 (twice over): one group. Variables 0 and 1 are no op's
        // output.
        let edges = [
            (0, 2, 0),
            (1, 2, 0),
            (0, 3, 0),
            (1, 3, 0),
            (2, 4, 1),
            (3, 5, 1),
            (4, 6, 2),
            (5, 6, 2),
            (5, 6, 2),
        ];
        let g = TraceGraph::from_edges(7, 3, &edges).unwrap();
        let back = g.op_graph(Direction::Backward).unwrap();
        assert_eq!((back.groups(), &back.split[..]), (5, &[1, 1][..]));
        let row = |o: &OpGraph, g: usize| {
            let mut r = o.far[o.off[g] as usize..o.off[g + 1] as usize].to_vec();
            r.sort_unstable();
            r
        };
        assert_eq!(back.of_var(0), &[] as &[u32]);
        assert_eq!(back.of_var(2), &[0]);
        assert_eq!(back.of_var(3), &[0]);
        assert_eq!((back.of_var(4), back.of_var(5)), (&[3][..], &[4][..]));
        assert_eq!(back.of_var(6), &[2]);
        // Group 0 reaches the inputs, which no op wrote; op 2 reaches both
        // groups of op 1, and each of those reaches op 0.
        assert_eq!(row(back, 0), Vec::<u32>::new());
        assert_eq!(row(back, 2), vec![3, 4]);
        assert_eq!((row(back, 3), row(back, 4)), (vec![0], vec![0]));
        assert_eq!(row(back, 1), Vec::<u32>::new());
        let fwd = g.op_graph(Direction::Forward).unwrap();
        assert_eq!((fwd.groups(), &fwd.split[..]), (5, &[1, 1][..]));
        assert_eq!(fwd.of_var(0), &[0]);
        assert_eq!(fwd.of_var(6), &[] as &[u32]);
        assert_eq!(row(fwd, 0), vec![3, 4]);
        // An unknown variable is in no group.
        assert_eq!(back.of_var(99), &[] as &[u32]);
    }

    #[test]
    fn a_variable_of_many_writers_and_readers_is_a_hub_named_once_per_row() {
        // Variable 0 is written by five ops (each from an input of its own)
        // and read by five (each to an output of its own). Going backward,
        // each reader's row would name all five writers (25 entries for 10
        // edges); it names the hub instead, which reaches them in the same
        // level.
        let mut edges = Vec::new();
        for k in 0..5u32 {
            edges.push((1 + k, 0, k));
            edges.push((0, 6 + k, 5 + k));
        }
        let g = TraceGraph::from_edges(11, 10, &edges).unwrap();
        let back = g.op_graph(Direction::Backward).unwrap();
        assert_eq!((back.groups(), &back.hubs[..]), (10, &[0][..]));
        for reader in 5..10 {
            assert_eq!(
                &back.far[back.off[reader] as usize..back.off[reader + 1] as usize],
                &[10]
            );
        }
        let walk = |starts: &[u32], max_depth| {
            let mut got = Vec::new();
            g.walk_new_ops(
                starts,
                Direction::Backward,
                max_depth,
                &Cancel::new(),
                |d, ops| {
                    got.extend(ops.iter().map(|&o| (d, o)));
                    Ok(true)
                },
            )
            .unwrap();
            got
        };
        let all = vec![(1, 5), (1, 6), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4)];
        assert_eq!(walk(&[6, 7], None), all);
        assert_eq!(walk(&[6, 7], Some(1)), all[..2].to_vec());
        // From the hub itself: its writers at depth 1, once.
        assert_eq!(
            walk(&[0, 8], None),
            vec![(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 7)]
        );
    }

    #[test]
    fn csr_lists_edges_in_recorded_order() {
        let g = sample();
        assert_eq!((g.vars(), g.edge_count(), g.op_count()), (6, 7, 3));
        assert_eq!(g.outgoing(1), &[1, 3]);
        assert_eq!(g.outgoing(2), &[2, 4, 5]);
        assert_eq!(g.incoming(1), &[0, 3]);
        assert_eq!(g.incoming(3), &[4, 5]);
        assert_eq!(g.outgoing(5), &[] as &[u32]);
        assert_eq!(g.outgoing(99), &[] as &[u32]);
        assert_eq!(g.op_edges(2), &[4, 5, 6]);
        assert_eq!(g.op_edges(3), &[] as &[u32]);
        assert_eq!(
            (g.source(6), g.target(6), g.op(6)),
            (Some(3), Some(4), Some(2))
        );
        assert_eq!(g.source(7), None);
        assert!(g.bytes() >= 9 * 4);
        assert!(TraceGraph::from_edges(2, 1, &[(0, 2, 0)]).is_err());
        assert!(TraceGraph::from_edges(2, 1, &[(0, 1, 1)]).is_err());
    }

    #[test]
    fn walks_terminate_on_cycles_self_loops_and_parallel_edges() {
        let g = sample();
        assert_eq!(
            run(&g, &[0], Direction::Forward, None, expand_all),
            vec![(1, 1, 0, 0), (2, 2, 1, 1), (3, 3, 4, 2), (4, 4, 6, 3)]
        );
        assert_eq!(
            run(&g, &[4], Direction::Backward, None, expand_all),
            vec![(3, 1, 6, 4), (2, 2, 4, 3), (1, 3, 1, 2), (0, 4, 0, 1)]
        );
        assert_eq!(
            run(&g, &[1], Direction::Backward, None, expand_all),
            vec![(0, 1, 0, 1), (2, 2, 2, 0)],
            "the self-loop is not offered: 1 is visited"
        );
        assert!(run(&g, &[5], Direction::Forward, None, expand_all).is_empty());
        // Duplicate starts are one start.
        assert_eq!(
            run(&g, &[3, 3], Direction::Forward, None, expand_all).len(),
            1
        );
    }

    #[test]
    fn depth_limits_and_start_depth() {
        let g = sample();
        assert!(run(&g, &[0], Direction::Forward, Some(0), expand_all).is_empty());
        assert_eq!(
            run(&g, &[0], Direction::Forward, Some(2), expand_all),
            vec![(1, 1, 0, 0), (2, 2, 1, 1)]
        );
        let mut out = Vec::new();
        g.walk(
            &[0],
            5,
            Direction::Forward,
            Some(7),
            &Cancel::new(),
            expand_all,
            |v| out.push((v.node, v.depth)),
        )
        .unwrap();
        assert_eq!(out, vec![(1, 6), (2, 7)]);
        // Depths never overflow.
        let mut out = Vec::new();
        g.walk(
            &[0],
            u32::MAX - 1,
            Direction::Forward,
            None,
            &Cancel::new(),
            expand_all,
            |v| out.push(v.node),
        )
        .unwrap();
        assert_eq!(out, vec![1]);
    }

    #[test]
    fn skip_reach_and_expand() {
        let g = sample();
        // Reach stops at 2: neither 3 nor 4 is reported.
        let reach_2 = |_: u32, other: u32, _: u32| {
            if other == 2 {
                Admit::Reach
            } else {
                Admit::Expand
            }
        };
        assert_eq!(
            run(&g, &[0], Direction::Forward, None, reach_2),
            vec![(1, 1, 0, 0), (2, 2, 1, 1)]
        );
        // Skipping the first of two parallel edges: the node comes through the second.
        let skip_4 = |e: u32, _: u32, _: u32| if e == 4 { Admit::Skip } else { Admit::Expand };
        assert_eq!(
            run(&g, &[2], Direction::Forward, None, skip_4),
            vec![(0, 1, 2, 2), (3, 1, 5, 2), (1, 2, 0, 0), (4, 2, 6, 3)]
        );
        // A node skipped through one edge is reached later through another.
        let g = TraceGraph::from_edges(3, 1, &[(0, 2, 0), (0, 1, 0), (1, 2, 0)]).unwrap();
        let skip_0 = |e: u32, _: u32, _: u32| if e == 0 { Admit::Skip } else { Admit::Expand };
        assert_eq!(
            run(&g, &[0], Direction::Forward, None, skip_0),
            vec![(1, 1, 1, 0), (2, 2, 2, 1)]
        );
        let mut offered = Vec::new();
        run(&g, &[0], Direction::Forward, None, |e, o, d| {
            offered.push((e, o, d));
            Admit::Skip
        });
        assert_eq!(offered, vec![(0, 2, 1), (1, 1, 1)]);
    }

    #[test]
    fn cancellation_and_bad_starts_are_errors() {
        let g = sample();
        let cancel = Cancel::new();
        let other = cancel.clone();
        other.cancel();
        assert!(cancel.is_cancelled());
        let r = g.walk(
            &[0],
            0,
            Direction::Forward,
            None,
            &cancel,
            expand_all,
            |_| {},
        );
        assert!(matches!(r, Err(EngineError::Cancelled)));
        let r = g.walk(
            &[6],
            0,
            Direction::Forward,
            None,
            &Cancel::new(),
            expand_all,
            |_| {},
        );
        assert!(matches!(r, Err(EngineError::BadRequest(_))));
    }

    #[test]
    fn a_long_walk_sees_a_cancel_made_while_it_runs() {
        // A chain of 20,000 variables; cancel after the first thousand visits.
        let n = 20_000u32;
        let edges: Vec<_> = (0..n - 1).map(|i| (i, i + 1, 0)).collect();
        let g = TraceGraph::from_edges(n, 1, &edges).unwrap();
        let cancel = Cancel::new();
        let mut visits = 0;
        let r = g.walk(
            &[0],
            0,
            Direction::Forward,
            None,
            &cancel,
            expand_all,
            |_| {
                visits += 1;
                if visits == 1000 {
                    cancel.cancel();
                }
            },
        );
        assert!(matches!(r, Err(EngineError::Cancelled)));
        assert!(visits < 1000 + CANCEL_CHECK_STEPS as usize + 1, "{visits}");
    }

    fn import_sample(dir: &std::path::Path) -> (Database, TraceId, Counts) {
        let db = Database::open(dir.join("db")).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/sample_export.json");
        let reports = db.import_paths(&[path], &ImportOptions::default(), &mut |_| {});
        let imported = reports.into_iter().next().unwrap().result.unwrap();
        let t = &imported[0];
        (db, t.trace, t.counts)
    }

    #[test]
    fn the_loaded_graph_equals_the_adjacency_index() {
        let dir = tempfile::tempdir().unwrap();
        let (db, t, counts) = import_sample(dir.path());
        let tv = db.trace_by_id(t).unwrap();
        let view = tv.store();
        let g = TraceGraph::load(view, t, &counts).unwrap();
        assert_eq!(
            (g.vars(), g.edge_count(), g.op_count()),
            (counts.variables, counts.edges, counts.ops)
        );
        assert!(counts.edges > 0);
        for v in 0..g.vars() {
            let out: Vec<_> = g
                .outgoing(v)
                .iter()
                .map(|&e| (e, g.target(e).unwrap(), g.op(e).unwrap()))
                .collect();
            assert_eq!(out, view.adjacent(t, v, true).unwrap(), "out of {v}");
            let inc: Vec<_> = g
                .incoming(v)
                .iter()
                .map(|&e| (e, g.source(e).unwrap(), g.op(e).unwrap()))
                .collect();
            assert_eq!(inc, view.adjacent(t, v, false).unwrap(), "into {v}");
        }
        for item in view.edges(t) {
            let (e, rec) = item.unwrap();
            assert_eq!(
                (g.source(e), g.target(e), g.op(e)),
                (Some(rec.source), Some(rec.target), Some(rec.op))
            );
            assert!(g.op_edges(rec.op).contains(&e));
        }
        for v in 0..g.vars() {
            let mut ancestors = Vec::new();
            g.walk(
                &[v],
                0,
                Direction::Backward,
                None,
                &Cancel::new(),
                expand_all,
                |visit| ancestors.push(visit.node),
            )
            .unwrap();
            assert_eq!(ancestors, tv.ancestors(v).unwrap(), "ancestors of {v}");
        }
    }

    #[test]
    fn counts_that_disagree_with_the_index_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (db, t, counts) = import_sample(dir.path());
        let tv = db.trace_by_id(t).unwrap();
        for bad in [
            Counts {
                variables: 1,
                ..counts
            },
            Counts { ops: 1, ..counts },
            Counts {
                edges: counts.edges - 1,
                ..counts
            },
            Counts {
                edges: counts.edges + 1,
                ..counts
            },
        ] {
            let err = TraceGraph::load(tv.store(), t, &bad).unwrap_err();
            assert!(
                matches!(err, EngineError::Storage(StorageError::Decode { .. })),
                "{err}"
            );
        }
    }

    /// The reference: a plain breadth-first search with a visited set.
    fn naive_bfs(
        edges: &[(u32, u32, u32)],
        start: u32,
        dir: Direction,
        max_depth: Option<u32>,
    ) -> Vec<(u32, u32, u32, u32)> {
        let mut seen = std::collections::HashSet::from([start]);
        let mut queue = VecDeque::from([(start, 0u32)]);
        let mut out = Vec::new();
        while let Some((node, depth)) = queue.pop_front() {
            if max_depth.is_some_and(|m| depth >= m) {
                continue;
            }
            for (e, &(s, t, _)) in edges.iter().enumerate() {
                let (from, to) = match dir {
                    Direction::Forward => (s, t),
                    Direction::Backward => (t, s),
                };
                if from == node && seen.insert(to) {
                    out.push((to, depth + 1, e as u32, node));
                    queue.push_back((to, depth + 1));
                }
            }
        }
        out
    }

    fn multigraph() -> impl Strategy<Value = (u32, Vec<(u32, u32, u32)>)> {
        (1u32..12).prop_flat_map(|vars| {
            (
                Just(vars),
                proptest::collection::vec((0..vars, 0..vars, 0u32..3), 0..40),
            )
        })
    }

    /// Traces of ops that each feed every input to every output, then a
    /// few edges dropped and a few added at random.
    fn op_traces() -> impl Strategy<Value = (u32, Vec<(u32, u32, u32)>)> {
        (2u32..16).prop_flat_map(|vars| {
            let op = (
                proptest::collection::vec(0..vars, 1..4),
                proptest::collection::vec(0..vars, 1..4),
            );
            (
                Just(vars),
                proptest::collection::vec(op, 1..10),
                proptest::collection::vec(any::<u16>(), 0..3),
                proptest::collection::vec((0..vars, 0..vars, 0u32..10), 0..3),
            )
                .prop_map(|(vars, ops, drop, add)| {
                    let mut edges = Vec::new();
                    for (o, (ins, outs)) in (0u32..).zip(&ops) {
                        for &i in ins {
                            edges.extend(outs.iter().map(|&t| (i, t, o)));
                        }
                    }
                    for d in drop {
                        if !edges.is_empty() {
                            edges.remove(d as usize % edges.len());
                        }
                    }
                    let ops = ops.len() as u32;
                    edges.extend(add.into_iter().map(|(s, t, o)| (s, t, o % ops)));
                    (vars, edges)
                })
        })
    }

    proptest! {
        #[test]
        fn sort_dedup_keeps_each_id_once_in_order(
            ids in proptest::collection::vec(0u32..20, 0..24)) {
            let mut want = ids.clone();
            want.sort_unstable();
            want.dedup();
            let mut got = ids;
            let kept = sort_dedup(&mut got);
            prop_assert_eq!(&got[..kept], &want[..]);
        }

        #[test]
        fn sort_distinct_sorts_near_and_far_ids_and_leaves_the_bitmap_clear(
            ids in proptest::collection::hash_set(0u32..4096, 0..200),
            spread in 1u32..64) {
            // Spread 1 keeps ids within a few words (the bitmap path);
            // larger spreads scatter them (the sort path).
            let mut ids: Vec<u32> = ids.into_iter().map(|i| i * spread % 4096).collect();
            ids.sort_unstable();
            ids.dedup();
            let want = ids.clone();
            ids.reverse();
            let mut bits = vec![0u64; 64];
            sort_distinct(&mut ids, &mut bits);
            prop_assert_eq!(ids, want);
            prop_assert!(bits.iter().all(|&w| w == 0));
        }

        #[test]
        fn a_row_read_as_a_window_keeps_what_its_slice_keeps(
            far in proptest::collection::vec(0u32..200, 0..12),
            bounds in (0usize..14, 0usize..14),
            marked in proptest::collection::vec(0u32..200, 0..20),
            held in 0usize..3,
        ) {
            // Rows anywhere in `far`, short and long, with and without room
            // for their window before the end, over a partly seen bitmap.
            let (a, b) = (bounds.0.min(bounds.1), bounds.0.max(bounds.1));
            // Four words for ids below 256, and the sink.
            let mut seen = vec![0u64, 0, 0, 0, u64::MAX];
            for &m in &marked {
                seen[m as usize / 64] |= 1 << (m % 64);
            }
            let (mut seen_w, mut out_w) = (seen.clone(), vec![7u32; held]);
            out_w.resize(held + WINDOW, 7);
            let kept_w = keep_row(&mut seen_w, &far, a, b, &mut out_w, held, 1);
            let (mut seen_s, mut out_s) = (seen, vec![7u32; held]);
            let kept_s = keep_unseen(&mut seen_s, far.get(a..b).unwrap_or(&[]), &mut out_s, held);
            prop_assert_eq!(kept_w, kept_s);
            prop_assert_eq!(&out_w[..kept_w], &out_s[..kept_s]);
            prop_assert_eq!(seen_w, seen_s);
        }

        #[test]
        fn sort_distinct_gives_a_shuffled_run_of_ids_back_in_order(
            lo in 0u32..4000, len in 1u32..96, gap in proptest::option::of(1u32..95),
            seed: u64) {
            // A run with no gap is every id of its span (answered without
            // sorting); one id missing is not, and is sorted.
            let mut want: Vec<u32> = (lo..lo + len).collect();
            if let Some(g) = gap.filter(|&g| g < len - 1) {
                want.remove(g as usize);
            }
            let mut ids = want.clone();
            let mut x = seed | 1;
            for i in (1..ids.len()).rev() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ids.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let mut bits = vec![0u64; 64];
            sort_distinct(&mut ids, &mut bits);
            prop_assert_eq!(ids, want);
            prop_assert!(bits.iter().all(|&w| w == 0));
        }

        #[test]
        fn a_walk_stopped_early_is_a_prefix_of_the_full_walk((vars, edges) in multigraph(),
                                                             start_pick: u32, stop in 0usize..12) {
            let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
            let start = start_pick % vars;
            let full = run(&g, &[start], Direction::Backward, None, expand_all);
            let mut some = Vec::new();
            g.walk_while(&[start], 0, Direction::Backward, None, &Cancel::new(), expand_all, |v| {
                some.push((v.node, v.depth, v.edge, v.parent));
                some.len() < stop
            })
            .unwrap();
            prop_assert_eq!(&some[..], &full[..stop.max(1).min(full.len())]);
        }

        #[test]
        fn reach_count_counts_what_the_walk_reports((vars, edges) in multigraph(), picks in proptest::collection::vec(any::<u32>(), 1..4),
                                                     forward: bool, min_depth in 0u32..4,
                                                     max_depth in proptest::option::of(0u32..6)) {
            let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
            let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
            let dir = if forward { Direction::Forward } else { Direction::Backward };
            let walked = run(&g, &starts, dir, max_depth, expand_all)
                .iter()
                .filter(|v| v.1 >= min_depth)
                .count() as u64;
            prop_assert_eq!(
                g.reach_count(&starts, dir, min_depth, max_depth, &Cancel::new()).unwrap(),
                walked
            );
        }

        #[test]
        fn a_count_over_the_stored_edges_equals_the_graph_s((vars, edges) in multigraph(), picks in proptest::collection::vec(any::<u32>(), 1..4),
                                                            forward: bool, narrow: bool, min_depth in 0u32..4,
                                                            max_depth in 0u32..6) {
            let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
            let stored = if narrow { g.adj.encode_narrow() } else { g.adj.encode() };
            let stored = StoredAdjacency::new(&stored).unwrap();
            let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
            let dir = if forward { Direction::Forward } else { Direction::Backward };
            let cancel = Cancel::new();
            prop_assert_eq!(
                reach_count_scanned(&stored, &starts, dir, min_depth, max_depth, &cancel).unwrap(),
                g.reach_count(&starts, dir, min_depth, Some(max_depth), &cancel).unwrap()
            );
        }

        #[test]
        fn walk_levels_crosses_every_edge_of_each_expanded_node_at_one_hop_more(
            (vars, edges) in multigraph(), start_pick: u32, forward: bool,
            max_depth in proptest::option::of(0u32..6)) {
            let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
            let start = start_pick % vars;
            let dir = if forward { Direction::Forward } else { Direction::Backward };
            // Expected: the start at 0 and each visit at its depth; every
            // node below max_depth gives all its edges at its depth + 1.
            let mut at = vec![(start, 0u32)];
            at.extend(run(&g, &[start], dir, max_depth, expand_all).iter().map(|v| (v.0, v.1)));
            let mut want: Vec<(u32, u32)> = Vec::new();
            for (n, d) in at {
                if max_depth.is_some_and(|m| d >= m) {
                    continue;
                }
                let list = if forward { g.outgoing(n) } else { g.incoming(n) };
                want.extend(list.iter().map(|&e| (d + 1, e)));
            }
            let mut got: Vec<(u32, u32)> = Vec::new();
            g.walk_levels(&[start], dir, max_depth, &Cancel::new(), |d, es| {
                got.extend(es.iter().map(|&e| (d, e)));
                Ok(true)
            })
            .unwrap();
            want.sort_unstable();
            got.sort_unstable();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn walk_new_ops_hands_each_op_once_at_the_level_that_first_crosses_it(
            (vars, edges) in multigraph(), start_pick: u32, forward: bool,
            max_depth in proptest::option::of(0u32..6)) {
            let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
            let start = start_pick % vars;
            let dir = if forward { Direction::Forward } else { Direction::Backward };
            let mut want: Vec<(u32, u32)> = Vec::new();
            g.walk_levels(&[start], dir, max_depth, &Cancel::new(), |d, es| {
                for &e in es {
                    let o = g.op(e).unwrap();
                    if !want.iter().any(|w| w.1 == o) {
                        want.push((d, o));
                    }
                }
                Ok(true)
            })
            .unwrap();
            // Same order too: level by level, by id within a level.
            want.sort_unstable();
            let mut got: Vec<(u32, u32)> = Vec::new();
            g.walk_new_ops(&[start], dir, max_depth, &Cancel::new(), |d, ops| {
                got.extend(ops.iter().map(|&o| (d, o)));
                Ok(true)
            })
            .unwrap();
            prop_assert_eq!(&got, &want);
            let mut by_vars: Vec<(u32, u32)> = Vec::new();
            g.new_ops_by_variables(&[start], dir, max_depth, &Cancel::new(), |d, ops| {
                by_vars.extend(ops.iter().map(|&o| (d, o)));
                Ok(true)
            })
            .unwrap();
            prop_assert_eq!(&by_vars, &want);
        }

        #[test]
        fn walk_new_ops_of_whole_and_cut_ops_matches_the_walk_of_variables(
            (vars, edges) in op_traces(), picks in proptest::collection::vec(any::<u32>(), 1..3),
            forward: bool, max_depth in proptest::option::of(0u32..6), stop_after in 1usize..5) {
            // Ops that feed each input to each output, with a few edges
            // dropped (ops cut into groups) or added: a graph of groups is
            // made for most, and its walk is the walk of the variables.
            let ops = edges.iter().map(|e| e.2 + 1).max().unwrap_or(0);
            let g = TraceGraph::from_edges(vars, ops, &edges).unwrap();
            let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
            let dir = if forward { Direction::Forward } else { Direction::Backward };
            prop_assume!(g.op_graph(dir).is_some());
            let walk = |by_vars: bool| {
                let (mut got, mut levels) = (Vec::new(), 0);
                let level = |d: u32, ops: &mut Vec<u32>| {
                    got.extend(ops.iter().map(|&o| (d, o)));
                    levels += usize::from(!ops.is_empty());
                    Ok(levels < stop_after)
                };
                if by_vars {
                    g.new_ops_by_variables(&starts, dir, max_depth, &Cancel::new(), level)
                } else {
                    g.walk_new_ops(&starts, dir, max_depth, &Cancel::new(), level)
                }
                .unwrap();
                got
            };
            prop_assert_eq!(walk(false), walk(true));
        }

        #[test]
        fn walk_new_nodes_hands_the_walks_visits_in_its_order_a_level_at_a_time(
            (vars, edges) in multigraph(), picks in proptest::collection::vec(any::<u32>(), 1..3),
            forward: bool, max_depth in proptest::option::of(0u32..6), stop_after in 0usize..4) {
            let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
            let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
            let dir = if forward { Direction::Forward } else { Direction::Backward };
            let want: Vec<(u32, u32, u32)> = run(&g, &starts, dir, max_depth, expand_all)
                .into_iter()
                .map(|(node, depth, edge, _)| (node, depth, edge))
                .collect();
            let mut got: Vec<(u32, u32, u32)> = Vec::new();
            g.walk_new_nodes(&starts, dir, max_depth, &Cancel::new(), |d, nodes, via| {
                assert_eq!(nodes.len(), via.len());
                got.extend(nodes.iter().zip(via).map(|(&n, &e)| (n, d, e)));
                Ok(true)
            })
            .unwrap();
            prop_assert_eq!(&got, &want);
            // A level answered false is the last handed out.
            let (mut levels, mut handed) = (0, Vec::new());
            g.walk_new_nodes(&starts, dir, max_depth, &Cancel::new(), |d, nodes, _| {
                levels += 1;
                handed.extend(nodes.iter().map(|&n| (n, d)));
                Ok(levels <= stop_after)
            })
            .unwrap();
            let upto: Vec<(u32, u32)> = want
                .iter()
                .filter(|w| w.1 as usize <= stop_after + 1)
                .map(|w| (w.0, w.1))
                .collect();
            prop_assert_eq!(handed, upto);
        }

        #[test]
        fn walk_equals_a_naive_bfs((vars, edges) in multigraph(), start_pick: u32,
                                   forward: bool, max_depth in proptest::option::of(0u32..6)) {
            let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
            let start = start_pick % vars;
            let dir = if forward { Direction::Forward } else { Direction::Backward };
            prop_assert_eq!(
                run(&g, &[start], dir, max_depth, expand_all),
                naive_bfs(&edges, start, dir, max_depth)
            );
        }
    }
}
