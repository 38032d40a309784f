//! TRACE and FORWARD: walks from the start nodes along the cached
//! adjacency, and the rows of each output (nodes, paths, a count, the ops,
//! edges or subgraph walked).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use memtrace_query::ast::{Direction as QDir, Output};
use memtrace_query::plan::TraversePlan;
use memtrace_query::{Field, QueryError, Row, Value};
use memtrace_storage::{TextTable, TraceId, TraceTexts as TraceLabels};

use super::batch::{ops_run, Batch, BatchOut, Gather, NO_RECORD};
use super::ctx::{OpTexts, TraceCtx};
use super::row::RecRow;
use super::run::{qerr, Exec, StartNode};
use super::value::{give, Cell, CellFn, CellSink};
use crate::error::{EngineError, Result};
use crate::graph::{Admit, Direction, TraceGraph, Visit};

/// The parent of a [`Visit`] made from a level walk's nodes, which do not
/// say it: no row of a plain walk reads it.
const NO_PARENT: u32 = u32::MAX;

/// What WHERE sees of a visited node: the node, and the edge and op that
/// reached it.
fn visit_rec<'r, 'a>(t: &'r TraceCtx<'a>, g: &TraceGraph, v: &Visit) -> RecRow<'r, 'a> {
    RecRow {
        var: Some(v.node),
        op: g.op(v.edge),
        edge: Some(v.edge),
        ..RecRow::new(t)
    }
}

/// Where a walk's rows read their texts, looked up once per walk: the
/// trace's labels ([`TraceCtx::labels`]) and its ops' texts.
#[derive(Clone, Copy)]
struct RowTexts<'t, 'a> {
    labels: Option<&'t TraceLabels>,
    ops: OpTexts<'t, 'a>,
}

impl<'t, 'a> RowTexts<'t, 'a> {
    fn of(t: &'t TraceCtx<'a>) -> Result<Self> {
        Ok(RowTexts {
            labels: t.labels()?,
            ops: t.op_reader()?,
        })
    }
}

/// The `RETURN nodes` row of a visited node: trace, node id, category,
/// depth and the op that reached it (text lent from the trace's labels,
/// or from its records when it has none stored).
fn node_row<'t>(
    t: &'t TraceCtx<'_>,
    texts: RowTexts<'t, '_>,
    g: &TraceGraph,
    v: &Visit,
) -> Result<[Cell<'t>; 5]> {
    let mut row = std::array::from_fn(|_| Cell::Value(Value::Null));
    refill_node_row(&mut row, t, texts, g, v)?;
    Ok(row)
}

/// Refills `row`, a node row that a sink has had, in place with
/// [`node_row`]'s cells, as [`refill_op_row`] does an op row.
#[inline]
fn refill_node_row<'t>(
    row: &mut [Cell<'t>; 5],
    t: &'t TraceCtx<'_>,
    texts: RowTexts<'t, '_>,
    g: &TraceGraph,
    v: &Visit,
) -> Result<()> {
    let [gid_cell, id_cell, category_cell, depth_cell, via_cell] = row;
    let via = match g.op(v.edge) {
        Some(o) => Some(texts.ops.get(o)?[0].unwrap_or("")),
        None => None,
    };
    put_text(via_cell, via);
    match texts.labels {
        Some(l) => {
            let [id, category] = l.vars.get(v.node).unwrap_or([None; 2]);
            put_text(id_cell, Some(id.unwrap_or("")));
            put_text(category_cell, category);
        }
        None => match t.catalog()?.label(v.node) {
            Some(l) => {
                match l.node_id {
                    Cow::Borrowed(s) => put_text(id_cell, Some(s)),
                    Cow::Owned(s) => *id_cell = Cell::Value(Value::Str(s)),
                }
                put_text(category_cell, l.category);
            }
            None => {
                put_text(id_cell, Some(""));
                put_text(category_cell, None);
            }
        },
    }
    put_text(gid_cell, Some(t.graph_id()));
    put_int(depth_cell, v.depth);
    Ok(())
}

/// The fewest ops of a level, recorded one after the other, that go out as
/// a batch of their own (see [`Exec::ops_plain`]): below it, a batch's own
/// cost is more than looking each op up.
const RUN_ROWS: usize = 16;

/// How many ops a `RETURN ops` walk that hands out batches finds before it
/// hands them out. Handing each level out as soon as it is walked made the
/// reader copy its rows between two levels of the walk, and each evicted
/// what the other had in the processor's cache; holding the levels (a
/// few numbers each) and handing them out together keeps the two apart,
/// while a sink that stops early still stops the walk within this many
/// ops.
const HAND_OUT_OPS: usize = 1 << 14;

/// One level of a `RETURN ops` walk held before it is handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// The `n` ops from `first`, a run of the labels' records.
    Run { depth: u32, first: u32, n: u32 },
    /// The next `n` ops of [`HeldLevels::lone`].
    Lone { depth: u32, n: usize },
}

/// The levels of a `RETURN ops` walk found and not yet handed out, and the
/// scratch of handing them out.
#[derive(Debug, Default)]
struct HeldLevels {
    /// Each level, in the order walked.
    levels: Vec<Held>,
    /// The ops of the levels that are no run, one level after the other.
    lone: Vec<u32>,
    /// How many ops the levels hold.
    ops: usize,
    /// Ops gathered for a batch looked up one by one, and their depths.
    kept: Vec<u32>,
    depths: Vec<u32>,
}

impl HeldLevels {
    /// Holds level `depth`'s new ops `fresh` (distinct, in order): as a
    /// run when there are at least [`RUN_ROWS`] of them, one after the
    /// other.
    fn push(&mut self, depth: u32, fresh: &[u32]) {
        match ops_run(fresh) {
            Some((first, n)) if fresh.len() >= RUN_ROWS => {
                self.levels.push(Held::Run { depth, first, n });
            }
            _ => {
                self.lone.extend_from_slice(fresh);
                self.levels.push(Held::Lone {
                    depth,
                    n: fresh.len(),
                });
            }
        }
        self.ops += fresh.len();
    }

    /// Hands the levels held to `out`, in the order walked, and forgets
    /// them: a run the labels hold as `run`, a batch of its own; other ops
    /// gathered in `rest`, several levels to a batch, each op looked up.
    /// False once `out` wants no more.
    fn hand_out(
        &mut self,
        run: &mut Batch<'_>,
        rest: &mut Batch<'_>,
        out: &RefCell<dyn BatchOut + '_>,
    ) -> Result<bool> {
        let HeldLevels {
            levels,
            lone,
            ops,
            kept,
            depths,
        } = self;
        let mut send_kept = |kept: &mut Vec<u32>, depths: &mut Vec<u32>| {
            if kept.is_empty() {
                return Ok(true);
            }
            rest.set_ops(kept, depths);
            kept.clear();
            depths.clear();
            out.borrow_mut().batch(rest)
        };
        let mut lone_ops = lone.iter().copied();
        let mut wanted = true;
        for level in levels.iter() {
            wanted = match *level {
                Held::Run { depth, first, n } if run.set_ops_run(first, n, depth) => {
                    send_kept(kept, depths)? && out.borrow_mut().batch(run)?
                }
                Held::Run { depth, first, n } => {
                    kept.extend(first..first.saturating_add(n));
                    depths.resize(kept.len(), depth);
                    kept.len() < Gather::ROWS || send_kept(kept, depths)?
                }
                Held::Lone { depth, n } => {
                    kept.extend(lone_ops.by_ref().take(n));
                    depths.resize(kept.len(), depth);
                    kept.len() < Gather::ROWS || send_kept(kept, depths)?
                }
            };
            if !wanted {
                break;
            }
        }
        if wanted {
            wanted = send_kept(kept, depths)?;
        }
        levels.clear();
        lone.clear();
        *ops = 0;
        Ok(wanted)
    }
}

/// Sets `cell` to lent `text`, or `NULL` when there is none, without
/// dropping it when it is lent text already (see [`refill_op_row`]).
#[inline]
fn put_text<'t>(cell: &mut Cell<'t>, text: Option<&'t str>) {
    match (cell, text) {
        (Cell::Text(slot), Some(text)) => *slot = text,
        (cell, text) => *cell = Cell::text(text),
    }
}

/// Sets `cell` to the integer `n`, without dropping it when it holds one.
#[inline]
fn put_int(cell: &mut Cell<'_>, n: u32) {
    match cell {
        Cell::Value(Value::Int(slot)) => *slot = i64::from(n),
        cell => *cell = Cell::Value(Value::from(n)),
    }
}

/// Refills `row`, an op row that a sink has had, in place with `op_row`'s
/// cells: a cell still of the kind it is refilled with is overwritten
/// without being dropped (a sink may have taken an owned cell, which left
/// it `Null`). A walk that hands out one op row after another then pays no
/// drop per row. Always inlined: in its own function, called once a row,
/// it took about a tenth of the rows' time.
#[inline(always)]
fn refill_op_row<'t>(
    row: &mut [Cell<'t>; 5],
    gid: &'t str,
    texts: [Option<&'t str>; 3],
    depth: u32,
) {
    let [gid_cell, id_cell, name_cell, kind_cell, depth_cell] = row;
    let [id, name, kind] = texts;
    put_text(gid_cell, Some(gid));
    put_text(id_cell, Some(id.unwrap_or("")));
    put_text(name_cell, name);
    put_text(kind_cell, kind);
    put_int(depth_cell, depth);
}

/// Hands the rows of one level of a `RETURN ops` walk (its new ops
/// `fresh`, in order, at `depth`) to `emit`, refilling `row`, their texts
/// read from the labels' `table`; false once `emit` wants no more. A level
/// whose ops were recorded one after the other (most are) reads their texts
/// record after record, each where the one before ended, and, when no op of
/// the trace lacks an id, a name or a kind, without looking at presence.
/// Kept out of the walk's loop, so that the loop over rows is compiled on
/// its own, with the sink's closure inside it, rather than beside the
/// walk's state: rows took about a tenth less time so (BENCHMARKS.md,
/// "Rows compiled with their reader, and nodes walked a level at a time").
#[inline(never)]
fn level_rows<'t, S>(
    table: &'t TextTable<3>,
    gid: &'t str,
    fresh: &[u32],
    depth: u32,
    row: &mut [Cell<'t>; 5],
    emit: &mut S,
) -> Result<bool>
where
    S: ?Sized + CellFn,
{
    let run = ops_run(fresh).filter(|&(first, n)| first as usize + n as usize <= table.len());
    if let Some((first, n)) = run {
        if let Some(records) = table.complete_records(first, first.saturating_add(n)) {
            for [id, name, kind] in records {
                refill_op_row(row, gid, [Some(id), Some(name), Some(kind)], depth);
                if !emit(row)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        for texts in table.records(first, first.saturating_add(n)) {
            refill_op_row(row, gid, texts, depth);
            if !emit(row)? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    for &o in fresh {
        refill_op_row(row, gid, table.get(o).unwrap_or([None; 3]), depth);
        if !emit(row)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One level of a walk's new nodes: each with the edge that first reached
/// it, all at `depth`.
#[derive(Clone, Copy)]
struct NodeLevel<'l> {
    nodes: &'l [u32],
    via: &'l [u32],
    depth: u32,
}

/// Hands the `RETURN nodes` rows of one level of a walk to `emit`, as
/// [`level_rows`] does the ops', refilling `row`: each node's id and
/// category read from the trace's `labels`, and the id of the op of the
/// edge that reached it; false once `emit` wants no more.
#[inline(never)]
fn level_node_rows<'t, S>(
    labels: &'t TraceLabels,
    g: &TraceGraph,
    gid: &'t str,
    level: NodeLevel<'_>,
    row: &mut [Cell<'t>; 5],
    emit: &mut S,
) -> Result<bool>
where
    S: ?Sized + CellFn,
{
    for (&node, &edge) in level.nodes.iter().zip(level.via) {
        let via = g
            .op(edge)
            .map(|o| labels.ops.get(o).and_then(|[id, _, _]| id).unwrap_or(""));
        let [id, category] = labels.vars.get(node).unwrap_or([None; 2]);
        let [gid_cell, id_cell, category_cell, depth_cell, via_cell] = &mut *row;
        put_text(gid_cell, Some(gid));
        put_text(id_cell, Some(id.unwrap_or("")));
        put_text(category_cell, category);
        put_int(depth_cell, level.depth);
        put_text(via_cell, via);
        if !emit(row)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The `RETURN ops` row of an op at its least depth: trace, op id, name,
/// kind and depth (`texts` are the op's id, name and kind, lent from the
/// trace; `gid` is its graph id).
#[inline]
fn op_row<'t>(gid: &'t str, texts: [Option<&'t str>; 3], depth: u32) -> [Cell<'t>; 5] {
    let [id, name, kind] = texts;
    [
        Cell::Text(gid),
        Cell::Text(id.unwrap_or("")),
        Cell::text(name),
        Cell::text(kind),
        Cell::Value(Value::from(depth)),
    ]
}

impl<'a> Exec<'a> {
    pub(super) fn traverse<S>(&self, p: &TraversePlan, sink: &mut S) -> Result<()>
    where
        S: ?Sized + CellFn,
    {
        // A scoped trace is found by its head when it has one: a query of
        // a small trace then reads that one value before it walks.
        let scoped = match &p.scope {
            Some(s) => Some(self.db.scoped_trace(self.view, s)?),
            None => None,
        };
        let head = scoped.as_ref().and_then(|(_, h)| h.as_deref());
        let only = scoped.as_ref().map(|(t, _)| (*t, head));
        // Each start, in each trace that holds it.
        let mut per_trace: Vec<(TraceId, Vec<StartNode>)> = Vec::new();
        for r in &p.starts {
            let found = self.resolve_in(r, only)?;
            if found.is_empty() {
                return Err(match &p.scope {
                    Some(s) => EngineError::UnknownNode {
                        trace: s.clone(),
                        reference: r.to_string(),
                    },
                    None => EngineError::BadRequest(format!(
                        "no trace holds a variable or op {r} (see FIND vars WHERE var.full_name CONTAINS '...')"
                    )),
                });
            }
            for (t, s) in found {
                match per_trace.iter_mut().find(|(x, _)| *x == t) {
                    Some((_, v)) => {
                        if !v.contains(&s) {
                            v.push(s)
                        }
                    }
                    None => per_trace.push((t, vec![s])),
                }
            }
        }
        per_trace.sort_by_key(|(t, _)| *t);
        let mut left = p.limit.unwrap_or(u64::MAX);
        for (tid, starts) in per_trace {
            if left == 0 {
                break;
            }
            self.cancel.check()?;
            let record = match head {
                Some(h) if only.is_some_and(|(t, _)| t == tid) => h.record.clone(),
                _ => self
                    .view
                    .trace(tid)?
                    .ok_or_else(|| EngineError::UnknownTrace(format!("#{tid}")))?,
            };
            let t = TraceCtx::new(self.db, self.view, tid, record).until(self.cancel);
            if p.limit.is_none() {
                // No count to keep: the rows go straight to the sink.
                if !self.traverse_trace(p, &t, &starts, sink)? {
                    break;
                }
                continue;
            }
            let mut emit = |row: &mut [Cell<'_>]| -> Result<bool> {
                if left == 0 {
                    return Ok(false);
                }
                left -= 1;
                Ok(sink(row)? && left > 0)
            };
            if !self.traverse_trace(p, &t, &starts, &mut emit)? {
                break;
            }
        }
        Ok(())
    }

    /// The common case, done while walking: variable starts, no WHILE or
    /// UNTIL, and a count (without WHERE), the nodes or the ops. A count
    /// keeps no rows and builds no visits; nodes and ops are handed to the
    /// sink a level at a time, as the walk finishes each level, and the
    /// walk stops when the sink wants no more (a LIMIT costs the levels
    /// walked up to its last row). `None` when the traversal is not of this
    /// kind.
    fn walk_plain<S>(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        starts: &[StartNode],
        emit: &mut S,
    ) -> Result<Option<bool>>
    where
        S: ?Sized + CellFn,
    {
        let unbounded = p.while_.is_none() && p.until.is_none();
        let plain = unbounded
            && (p.output == Output::Nodes
                || p.output == Output::Ops
                || (p.output == Output::Count && p.filter.is_none()));
        let mut var_starts = Vec::with_capacity(starts.len());
        for s in starts {
            match *s {
                StartNode::Var(v) => var_starts.push(v),
                StartNode::Op(_) => return Ok(None),
            }
        }
        if !plain {
            return Ok(None);
        }
        let dir = match p.direction {
            QDir::Backward => Direction::Backward,
            QDir::Forward => Direction::Forward,
        };
        if p.output == Output::Count {
            let stored =
                t.reach_count_stored(&var_starts, dir, p.min_depth, p.max_depth, self.cancel)?;
            if let Some(n) = stored {
                let n = i64::try_from(n).unwrap_or(i64::MAX);
                return Ok(Some(give(emit, vec![t.gid(), Value::Int(n)])?));
            }
        }
        let g = t.graph()?;
        match p.output {
            Output::Count => {
                let n = g.reach_count(&var_starts, dir, p.min_depth, p.max_depth, self.cancel)?;
                let n = i64::try_from(n).unwrap_or(i64::MAX);
                return Ok(Some(give(emit, vec![t.gid(), Value::Int(n)])?));
            }
            Output::Ops => return self.ops_plain(p, t, g, dir, &var_starts, emit).map(Some),
            _ => {}
        }
        let texts = RowTexts::of(t)?;
        if let (Some(out), Some(labels), None, None) =
            (self.batches, texts.labels, &p.filter, p.limit)
        {
            return self
                .nodes_batches(p, t, g, dir, &var_starts, labels, out)
                .map(Some);
        }
        let mut wanted = true;
        let mut row: [Cell<'_>; 5] = std::array::from_fn(|_| Cell::Value(Value::Null));
        let gid = t.graph_id();
        g.walk_new_nodes(
            &var_starts,
            dir,
            p.max_depth,
            self.cancel,
            |depth, nodes, via| {
                if depth < p.min_depth {
                    return Ok(true);
                }
                if let (Some(labels), None) = (texts.labels, &p.filter) {
                    // Every node of the level is a row: a level at a time.
                    let level = NodeLevel { nodes, via, depth };
                    wanted = level_node_rows(labels, g, gid, level, &mut row, emit)?;
                    return Ok(wanted);
                }
                for (&node, &edge) in nodes.iter().zip(via) {
                    let v = Visit {
                        node,
                        depth,
                        edge,
                        parent: NO_PARENT,
                    };
                    if let Some(f) = &p.filter {
                        if !f.expr.test(&visit_rec(t, g, &v)).map_err(qerr)? {
                            continue;
                        }
                    }
                    refill_node_row(&mut row, t, texts, g, &v)?;
                    if !emit(&mut row)? {
                        wanted = false;
                        return Ok(false);
                    }
                }
                Ok(true)
            },
        )?;
        Ok(Some(wanted))
    }

    /// `RETURN nodes` of a plain walk, in batches: each level's new nodes
    /// are kept (the node, its depth, the op that reached it) and go out a
    /// thousand and more at a time, their texts lent from the trace's
    /// labels. Returns false when the sink wants no more rows.
    #[allow(clippy::too_many_arguments)]
    fn nodes_batches(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        g: &TraceGraph,
        dir: Direction,
        var_starts: &[u32],
        labels: &TraceLabels,
        out: &RefCell<dyn BatchOut + '_>,
    ) -> Result<bool> {
        let mut batch = Batch::nodes(t.graph_id(), labels);
        let (mut nodes, mut depths, mut via) = (Vec::new(), Vec::new(), Vec::new());
        let mut send = |nodes: &mut Vec<u32>, depths: &mut Vec<u32>, via: &mut Vec<u32>| {
            batch.set_nodes(nodes, depths, via);
            nodes.clear();
            depths.clear();
            via.clear();
            out.borrow_mut().batch(&batch)
        };
        let mut wanted = true;
        g.walk_new_nodes(
            var_starts,
            dir,
            p.max_depth,
            self.cancel,
            |depth, reached, edges| {
                if depth < p.min_depth {
                    return Ok(true);
                }
                // The level's nodes in pieces that fill each batch.
                let (mut reached, mut edges) = (reached, edges);
                while !reached.is_empty() {
                    let take = Gather::ROWS.saturating_sub(nodes.len()).min(reached.len());
                    let (piece, rest) = reached.split_at(take);
                    let (piece_edges, rest_edges) = edges.split_at(take.min(edges.len()));
                    nodes.extend_from_slice(piece);
                    depths.resize(nodes.len(), depth);
                    via.extend(piece_edges.iter().map(|&e| g.op(e).unwrap_or(NO_RECORD)));
                    (reached, edges) = (rest, rest_edges);
                    if nodes.len() >= Gather::ROWS {
                        wanted = send(&mut nodes, &mut depths, &mut via)?;
                        if !wanted {
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            },
        )?;
        if wanted && !nodes.is_empty() {
            wanted = send(&mut nodes, &mut depths, &mut via)?;
        }
        Ok(wanted)
    }

    /// `RETURN ops` of a plain walk, level by level: an op's least depth is
    /// the level at which the walk first crosses one of its edges, so each
    /// level's new ops are final once the level is walked, and go to the
    /// sink then (by op id within a level, as the general path orders
    /// them). A LIMIT stops the walk. Returns false when the sink wants no
    /// more rows.
    #[allow(clippy::too_many_arguments)]
    fn ops_plain<S>(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        g: &TraceGraph,
        dir: Direction,
        var_starts: &[u32],
        emit: &mut S,
    ) -> Result<bool>
    where
        S: ?Sized + CellFn,
    {
        let gid = t.graph_id();
        let mut wanted = true;
        let texts = t.op_reader()?;
        if let (Some(out), OpTexts::Labels(table), None, None) =
            (self.batches, texts, &p.filter, p.limit)
        {
            // Batches wanted, and every op of each level is a row. A wide
            // level of ops recorded one after the other is a batch of its
            // own, lending a run of the labels at no cost per row. The
            // other levels' ops are kept with their depths and go out
            // several levels to a batch, each looked up then (a trace
            // walked one op a level would otherwise pay a batch per row).
            // Levels are held and handed out [`HAND_OUT_OPS`] ops at a
            // time, not each as it is walked.
            let mut run = Batch::ops(gid, table);
            let mut rest = Batch::ops(gid, table);
            let mut held = HeldLevels::default();
            g.walk_new_ops(var_starts, dir, p.max_depth, self.cancel, |depth, fresh| {
                held.push(depth, fresh);
                if held.ops >= HAND_OUT_OPS {
                    wanted = held.hand_out(&mut run, &mut rest, out)?;
                }
                Ok(wanted)
            })?;
            if wanted {
                wanted = held.hand_out(&mut run, &mut rest, out)?;
            }
            return Ok(wanted);
        }
        let mut row = op_row(gid, [None; 3], 0);
        if let (OpTexts::Labels(table), None) = (texts, &p.filter) {
            // Every op of each level is a row: a level at a time.
            g.walk_new_ops(var_starts, dir, p.max_depth, self.cancel, |depth, fresh| {
                wanted = level_rows(table, gid, fresh, depth, &mut row, emit)?;
                Ok(wanted)
            })?;
            return Ok(wanted);
        }
        g.walk_new_ops(var_starts, dir, p.max_depth, self.cancel, |depth, fresh| {
            for &o in fresh.iter() {
                if let Some(f) = &p.filter {
                    let row = RecRow {
                        op: Some(o),
                        ..RecRow::new(t)
                    };
                    if !f.expr.test(&row).map_err(qerr)? {
                        continue;
                    }
                }
                refill_op_row(&mut row, gid, texts.get(o)?, depth);
                if !emit(&mut row)? {
                    wanted = false;
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        Ok(wanted)
    }

    /// Walks one trace; returns false when the sink wants no more rows.
    fn traverse_trace<S>(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        starts: &[StartNode],
        emit: &mut S,
    ) -> Result<bool>
    where
        S: ?Sized + CellFn,
    {
        if let Some(done) = self.walk_plain(p, t, starts, emit)? {
            return Ok(done);
        }
        self.traverse_general(p, t, starts, &mut |row| emit(row))
    }

    /// [`traverse_trace`](Self::traverse_trace) of a walk that is not
    /// plain: the visits gathered, then the rows of its output.
    fn traverse_general(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        starts: &[StartNode],
        emit: &mut CellSink<'_>,
    ) -> Result<bool> {
        let g = t.graph()?;
        let dir = match p.direction {
            QDir::Backward => Direction::Backward,
            QDir::Forward => Direction::Forward,
        };
        let far = |e: u32| match dir {
            Direction::Backward => g.source(e),
            Direction::Forward => g.target(e),
        };
        let failure: RefCell<Option<EngineError>> = RefCell::new(None);
        let fail = |e: QueryError| {
            failure.borrow_mut().get_or_insert(EngineError::Query(e));
        };
        // Whether the last node admitted is expanded (not an UNTIL stop): the
        // walk reports a node right after admitting it.
        let expanding = std::cell::Cell::new(false);
        // Decide for one edge: skip it, reach its far node, or expand it.
        let admit_edge = |edge: u32, other: u32| -> Admit {
            if failure.borrow().is_some() {
                return Admit::Skip;
            }
            let row = RecRow {
                var: Some(other),
                op: g.op(edge),
                edge: Some(edge),
                ..RecRow::new(t)
            };
            if let Some(w) = &p.while_ {
                match w.expr.test(&row) {
                    Ok(true) => {}
                    Ok(false) => return Admit::Skip,
                    Err(e) => {
                        fail(e);
                        return Admit::Skip;
                    }
                }
            }
            if let Some(u) = &p.until {
                match u.expr.test(&row) {
                    Ok(true) => return Admit::Reach,
                    Ok(false) => {}
                    Err(e) => {
                        fail(e);
                        return Admit::Skip;
                    }
                }
            }
            Admit::Expand
        };
        let admit = |edge: u32, other: u32, _depth: u32| -> Admit {
            let verdict = admit_edge(edge, other);
            expanding.set(verdict == Admit::Expand);
            verdict
        };
        let mut visits: Vec<Visit> = Vec::new();
        // Visited nodes that the walk expanded (not UNTIL stops).
        let mut expanded: std::collections::HashSet<u32> = std::collections::HashSet::new();
        let mut var_starts: Vec<u32> = Vec::new();
        let mut start_nodes: Vec<u32> = Vec::new();
        // The nodes in `visits`, so that op starts add each node once.
        let mut in_visits: std::collections::HashSet<u32> = std::collections::HashSet::new();
        for s in starts {
            match *s {
                StartNode::Var(v) => {
                    var_starts.push(v);
                    start_nodes.push(v);
                }
                StartNode::Op(o) => {
                    // An op start: its inputs (backward) or outputs (forward) are
                    // one hop away, then the walk goes on from them.
                    let mut seeds = Vec::new();
                    for &e in g.op_edges(o) {
                        let Some(n) = far(e) else { continue };
                        if in_visits.contains(&n) || seeds.contains(&n) {
                            continue;
                        }
                        match admit(e, n, 1) {
                            Admit::Skip => continue,
                            a => {
                                in_visits.insert(n);
                                visits.push(Visit {
                                    node: n,
                                    depth: 1,
                                    edge: e,
                                    parent: u32::MAX,
                                });
                                if a == Admit::Expand {
                                    seeds.push(n);
                                    expanded.insert(n);
                                }
                            }
                        }
                    }
                    let mut more = Vec::new();
                    g.walk(&seeds, 1, dir, p.max_depth, self.cancel, admit, |v| {
                        more.push((v, expanding.get()))
                    })?;
                    for (v, x) in more {
                        if in_visits.insert(v.node) {
                            if x {
                                expanded.insert(v.node);
                            }
                            visits.push(v);
                        }
                    }
                }
            }
        }
        // Only the subgraph outputs need to know which nodes were expanded.
        let need_expanded = matches!(p.output, Output::Ops | Output::Edges | Output::Subgraph);
        if !var_starts.is_empty() {
            let mut found = Vec::new();
            g.walk(&var_starts, 0, dir, p.max_depth, self.cancel, admit, |v| {
                found.push((v, expanding.get()))
            })?;
            // With op starts too, a node may already be a visit.
            let only_walk = visits.is_empty();
            visits.reserve(found.len());
            for (v, x) in found {
                if only_walk || in_visits.insert(v.node) {
                    if x && need_expanded {
                        expanded.insert(v.node);
                    }
                    visits.push(v);
                }
            }
        }
        if let Some(e) = failure.into_inner() {
            return Err(e);
        }
        // Starts are never rows of their own trace's result.
        let start_set: std::collections::HashSet<u32> = start_nodes.iter().copied().collect();
        visits.retain(|v| !start_set.contains(&v.node));
        let visit_row = |v: &Visit| visit_rec(t, g, v);
        let passes = |row: &dyn Row| -> Result<bool> {
            match &p.filter {
                Some(f) => f.expr.test(row).map_err(qerr),
                None => Ok(true),
            }
        };
        let returned: Vec<&Visit> = visits.iter().filter(|v| v.depth >= p.min_depth).collect();
        match p.output {
            Output::Count => {
                let n = match &p.filter {
                    None => returned.len() as i64,
                    Some(_) => {
                        let mut n = 0i64;
                        for v in &returned {
                            if passes(&visit_row(v))? {
                                n += 1;
                            }
                        }
                        n
                    }
                };
                give(emit, vec![t.gid(), Value::Int(n)])
            }
            Output::Nodes => {
                let texts = RowTexts::of(t)?;
                for (i, v) in returned.iter().enumerate() {
                    if i.is_multiple_of(4096) {
                        self.cancel.check()?;
                    }
                    if !passes(&visit_row(v))? {
                        continue;
                    }
                    if !emit(&mut node_row(t, texts, g, v)?)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Output::Paths if self.steps => {
                // Every visit, each with the node it was reached from: the
                // walk's tree, in rows of constant size.
                for (i, v) in visits.iter().enumerate() {
                    if i.is_multiple_of(4096) {
                        self.cancel.check()?;
                    }
                    let shown = v.depth >= p.min_depth && passes(&visit_row(v))?;
                    let parent = if v.parent == u32::MAX {
                        Value::Null
                    } else {
                        Value::Str(t.node_id(v.parent)?)
                    };
                    let via = match g.op(v.edge) {
                        Some(o) => Value::Str(t.op_id(o)?),
                        None => Value::Null,
                    };
                    let row = vec![
                        t.gid(),
                        Value::Str(t.node_id(v.node)?),
                        Value::from(v.depth),
                        parent,
                        via,
                        Value::Bool(shown),
                    ];
                    if !give(emit, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Output::Paths => {
                let by_node: HashMap<u32, &Visit> = visits.iter().map(|v| (v.node, v)).collect();
                // A path is as long as its depth: the token is looked at by
                // the steps written, not by the rows.
                let mut steps = 0usize;
                for v in &returned {
                    if steps >= 4096 {
                        self.cancel.check()?;
                        steps = 0;
                    }
                    steps += v.depth as usize + 1;
                    if !passes(&visit_row(v))? {
                        continue;
                    }
                    let mut path = vec![Value::Str(t.node_id(v.node)?)];
                    let mut cur = *v;
                    loop {
                        if let Some(o) = g.op(cur.edge) {
                            path.push(Value::Str(t.op_id(o)?));
                        }
                        if cur.parent == u32::MAX {
                            // An op start: the op is the path's first element.
                            break;
                        }
                        path.push(Value::Str(t.node_id(cur.parent)?));
                        match by_node.get(&cur.parent) {
                            Some(next) if !start_set.contains(&cur.parent) => cur = next,
                            _ => break,
                        }
                    }
                    path.reverse();
                    let row = vec![
                        t.gid(),
                        Value::Str(t.node_id(v.node)?),
                        Value::from(v.depth),
                        Value::List(path),
                    ];
                    if !give(emit, row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Output::Ops | Output::Edges | Output::Subgraph => {
                // The result subgraph: starts and the nodes that pass WHERE,
                // with the walked edges between them: the edges of the nodes
                // the walk expanded (starts, and visited nodes that are
                // neither UNTIL stops nor at the DEPTH limit), each at one
                // hop more than the node it was walked from.
                let mut keep: HashMap<u32, u32> = HashMap::new();
                for s in &start_nodes {
                    keep.insert(*s, 0);
                }
                let mut node_rows = Vec::new();
                for v in &returned {
                    if p.output == Output::Subgraph && !passes(&visit_row(v))? {
                        continue;
                    }
                    keep.insert(v.node, v.depth);
                    node_rows.push(v.node);
                }
                if p.output != Output::Subgraph {
                    for v in &visits {
                        keep.entry(v.node).or_insert(v.depth);
                    }
                }
                let mut edge_depth: HashMap<u32, u32> = HashMap::new();
                let mut walked = |e: u32, d: u32| {
                    let x = edge_depth.entry(e).or_insert(d);
                    *x = (*x).min(d);
                };
                for s in starts {
                    if let StartNode::Op(o) = s {
                        for &e in g.op_edges(*o) {
                            if far(e).is_some_and(|n| keep.contains_key(&n)) {
                                walked(e, 1);
                            }
                        }
                    }
                }
                for (&n, &d) in keep.iter() {
                    let expands = (start_set.contains(&n) || expanded.contains(&n))
                        && p.max_depth.is_none_or(|m| d < m);
                    if !expands {
                        continue;
                    }
                    let list = match dir {
                        Direction::Backward => g.incoming(n),
                        Direction::Forward => g.outgoing(n),
                    };
                    for &e in list {
                        if far(e).is_some_and(|o| keep.contains_key(&o)) {
                            walked(e, d + 1);
                        }
                    }
                }
                let mut edge_ids: Vec<u32> = edge_depth.keys().copied().collect();
                edge_ids.sort_unstable();
                if let Some(w) = &p.while_ {
                    let mut kept = Vec::new();
                    for e in edge_ids {
                        let row = RecRow {
                            var: far(e),
                            op: g.op(e),
                            edge: Some(e),
                            ..RecRow::new(t)
                        };
                        if w.expr.test(&row).map_err(qerr)? {
                            kept.push(e);
                        }
                    }
                    edge_ids = kept;
                }
                let depth_of = |e: u32| edge_depth.get(&e).copied().unwrap_or(0);
                match p.output {
                    Output::Ops => {
                        // Each op at the least depth of its walked edges.
                        let mut least: HashMap<u32, u32> = HashMap::new();
                        for &e in &edge_ids {
                            if let Some(o) = g.op(e) {
                                let d = depth_of(e);
                                least
                                    .entry(o)
                                    .and_modify(|md| *md = (*md).min(d))
                                    .or_insert(d);
                            }
                        }
                        let mut ops: Vec<(u32, u32)> = least.into_iter().collect();
                        ops.sort_by_key(|(o, d)| (*d, *o));
                        for (o, d) in ops {
                            let row = RecRow {
                                op: Some(o),
                                ..RecRow::new(t)
                            };
                            if !passes(&row)? {
                                continue;
                            }
                            if !emit(&mut op_row(t.graph_id(), t.op_texts(o)?, d))? {
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    }
                    Output::Edges => {
                        for e in edge_ids {
                            let row = RecRow {
                                var: far(e),
                                op: g.op(e),
                                edge: Some(e),
                                ..RecRow::new(t)
                            };
                            if !passes(&row)? {
                                continue;
                            }
                            let out = vec![
                                t.gid(),
                                t.edge_field(e, &Field::Id)?,
                                t.edge_field(e, &Field::Source)?,
                                t.edge_field(e, &Field::Target)?,
                                t.edge_field(e, &Field::Op)?,
                                t.edge_field(e, &Field::Category)?,
                            ];
                            if !give(emit, out)? {
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    }
                    _ => {
                        if let Some(c) = self.capture {
                            c.add(t.id(), |r| {
                                r.starts.extend(start_nodes.iter().copied());
                                r.nodes.extend(node_rows.iter().copied());
                                r.edges.extend(edge_ids.iter().copied());
                            });
                            return Ok(true);
                        }
                        let mut nodes: Vec<u32> = start_nodes.clone();
                        nodes.extend(node_rows);
                        for n in nodes {
                            let out = vec![
                                t.gid(),
                                Value::Str("node".into()),
                                Value::Str(t.node_id(n)?),
                                Value::Null,
                                Value::Null,
                                Value::Null,
                            ];
                            if !give(emit, out)? {
                                return Ok(false);
                            }
                        }
                        for e in edge_ids {
                            let out = vec![
                                t.gid(),
                                Value::Str("edge".into()),
                                t.edge_field(e, &Field::Id)?,
                                t.edge_field(e, &Field::Source)?,
                                t.edge_field(e, &Field::Target)?,
                                t.edge_field(e, &Field::Op)?,
                            ];
                            if !give(emit, out)? {
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use memtrace_query::Value;
    use memtrace_storage::TextTable;

    use super::HeldLevels;
    use crate::exec::batch::{Batch, Gather};
    use crate::Database;

    /// Hands out what `held` holds over a table of ops `op0`, `op1`, ...
    /// (`ops` of them) to a sink that wants `wanted` batches: the batches
    /// it got, each as its rows' ids and depths, and what the hand-out
    /// answered.
    fn handed_out(
        held: &mut HeldLevels,
        ops: usize,
        wanted: usize,
    ) -> (Vec<Vec<(String, Value)>>, bool) {
        let mut table = TextTable::<3>::default();
        for i in 0..ops {
            assert!(table.push([Some(&format!("op{i}")), Some("n"), Some("k")]));
        }
        let mut got = Vec::new();
        let mut sink = |b: &Batch<'_>| {
            got.push(
                (0..b.len())
                    .map(|i| {
                        let row = b.row(i).unwrap();
                        (b.str(i, 1).unwrap_or("").to_string(), row[4].clone())
                    })
                    .collect::<Vec<_>>(),
            );
            Ok(got.len() < wanted)
        };
        let out = RefCell::new(Gather::new(5, &mut sink));
        let (mut run, mut rest) = (Batch::ops("g", &table), Batch::ops("g", &table));
        let answer = held.hand_out(&mut run, &mut rest, &out).unwrap();
        drop(out);
        (got, answer)
    }

    #[test]
    fn a_levels_rows_are_its_ops_texts_run_or_not_whatever_the_sink_left() {
        // Ops 0..30: with absent texts (every third without a name, op 7
        // without a kind), and with every text.
        for complete in [false, true] {
            let mut table = TextTable::<3>::default();
            for i in 0..30 {
                let name = (complete || i % 3 != 0).then(|| format!("name{i}"));
                let kind = (complete || i != 7).then_some("kind");
                assert!(table.push([Some(&format!("op{i}")), name.as_deref(), kind]));
            }
            rows_of_levels(&table);
        }
    }

    /// The rows [`super::level_rows`] makes of several kinds of levels of
    /// `table`'s ops are the ops' texts.
    fn rows_of_levels(table: &TextTable<3>) {
        let expected = |o: u32, depth: u32| {
            let [id, name, kind] = table.get(o).unwrap_or([None; 3]);
            vec![
                Value::Str("g".into()),
                Value::Str(id.unwrap_or("").into()),
                name.map_or(Value::Null, |n| Value::Str(n.into())),
                kind.map_or(Value::Null, |k| Value::Str(k.into())),
                Value::Int(i64::from(depth)),
            ]
        };
        let levels: [Vec<u32>; 5] = [
            (0..20).collect(),  // a run
            vec![20, 22, 23],   // not a run
            vec![24],           // a run of one
            (28..33).collect(), // a run past the table: looked up one by one
            vec![5, 7, 40],     // not a run, one past the table
        ];
        let mut row = super::op_row("g", [None; 3], 0);
        let mut got = Vec::new();
        for (depth, fresh) in (1..).zip(&levels) {
            // The sink takes every cell, leaving owned values and nulls
            // behind: the next row must not show them.
            let mut sink = |cells: &mut [super::Cell<'_>]| {
                got.push(cells.iter_mut().map(|c| c.take()).collect::<Vec<_>>());
                cells[1] = super::Cell::Value(Value::Str("left behind".into()));
                cells[2] = super::Cell::Value(Value::Int(7));
                Ok(true)
            };
            assert!(super::level_rows(table, "g", fresh, depth, &mut row, &mut sink).unwrap());
        }
        let want: Vec<Vec<Value>> = (1..)
            .zip(&levels)
            .flat_map(|(d, fresh)| fresh.iter().map(move |&o| (o, d)))
            .map(|(o, d)| expected(o, d))
            .collect();
        assert_eq!(got, want);
        // A sink that wants no more stops the level there.
        let mut seen = 0;
        let mut stop = |_: &mut [super::Cell<'_>]| {
            seen += 1;
            Ok(seen < 3)
        };
        let all: Vec<u32> = (0..20).collect();
        assert!(!super::level_rows(table, "g", &all, 1, &mut row, &mut stop).unwrap());
        assert_eq!(seen, 3);
    }

    fn ids(batch: &[(String, Value)]) -> Vec<&str> {
        batch.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[test]
    fn held_levels_go_out_in_the_order_walked_runs_as_batches_of_their_own() {
        let mut held = HeldLevels::default();
        held.push(1, &[40]);
        held.push(2, &(0..20).collect::<Vec<u32>>());
        // Too few for a run, and a gap: looked up one by one, gathered.
        held.push(3, &[20, 21]);
        held.push(4, &[22, 30, 31]);
        // A run past the labels (30 ops): looked up, ids empty.
        held.push(5, &(25..45).collect::<Vec<u32>>());
        assert_eq!(held.ops, 1 + 20 + 2 + 3 + 20);
        let (got, answer) = handed_out(&mut held, 30, usize::MAX);
        assert!(answer);
        assert_eq!(got.len(), 3, "{got:?}");
        // Op 40 is past the labels: its id is empty.
        assert_eq!(ids(&got[0]), [""]);
        assert_eq!(got[0][0].1, Value::Int(1));
        let run: Vec<String> = (0..20).map(|i| format!("op{i}")).collect();
        assert_eq!(ids(&got[1]), run);
        assert!(got[1].iter().all(|(_, d)| *d == Value::Int(2)));
        let rest = &got[2];
        assert_eq!(ids(&rest[..5]), ["op20", "op21", "op22", "", ""]);
        let depths: Vec<&Value> = rest.iter().map(|(_, d)| d).collect();
        assert_eq!(
            depths[..6],
            [
                &Value::Int(3),
                &Value::Int(3),
                &Value::Int(4),
                &Value::Int(4),
                &Value::Int(4),
                &Value::Int(5)
            ]
        );
        assert_eq!(rest.len(), 2 + 3 + 20);
        assert_eq!(ids(&rest[5..10]), ["op25", "op26", "op27", "op28", "op29"]);
        assert!(rest[10..].iter().all(|(id, _)| id.is_empty()));
        // Handed out, the levels are forgotten.
        assert_eq!((held.levels.len(), held.lone.len(), held.ops), (0, 0, 0));
        assert_eq!(handed_out(&mut held, 30, usize::MAX), (Vec::new(), true));
    }

    #[test]
    fn a_sink_that_wants_no_more_stops_the_hand_out() {
        let mut held = HeldLevels::default();
        held.push(1, &(0..16).collect::<Vec<u32>>());
        held.push(2, &(16..32).collect::<Vec<u32>>());
        held.push(3, &[40]);
        let (got, answer) = handed_out(&mut held, 50, 1);
        assert!(!answer);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), 16);
    }

    /// A database of one trace: variables `v:<name>` at their versions,
    /// ops of kind `k`, and edges (id, op, source, target), whose ends are
    /// `<name>@<version>`.
    fn trace_of(
        nodes: &[(&str, u32)],
        ops: &[&str],
        edges: &[(&str, &str, &str, &str)],
    ) -> (tempfile::TempDir, Database) {
        let node = |(n, v): &(&str, u32)| {
            format!(
                r#"{{"name": "{n}", "class_name": "v", "version": {v}, "value": "'{n}'", "session_id": "s"}}"#
            )
        };
        let op = |o: &&str| {
            format!(r#"{{"op_id": "{o}", "op_name": "{o}", "category": "k", "session_id": "s"}}"#)
        };
        let edge = |(id, o, a, b): &(&str, &str, &str, &str)| {
            format!(
                r#"{{"edge_id": "{id}", "op_id": "{o}", "session_id": "s",
                    "source_full_node_id": "v:{a}", "target_full_node_id": "v:{b}"}}"#
            )
        };
        let list = |items: Vec<String>| items.join(",");
        let text = format!(
            r#"{{"graph_id": "g", "user_id": "u", "project_id": "p", "data": {{
                "sessions": [{{"session_id": "s", "session_name": "s"}}],
                "operations": [{}],
                "nodes": [{}],
                "edges": [{}]}}}}"#,
            list(ops.iter().map(op).collect()),
            list(nodes.iter().map(node).collect()),
            list(edges.iter().map(edge).collect()),
        );
        crate::exec::test_db(&text)
    }

    /// a -> b -> c -> a (ops ab, bc, ca), and x -> a (op xa).
    fn cycle() -> (tempfile::TempDir, Database) {
        trace_of(
            &[("a", 1), ("b", 1), ("c", 1), ("x", 1)],
            &["ab", "bc", "ca", "xa"],
            &[
                ("e1", "ab", "a@1", "b@1"),
                ("e2", "bc", "b@1", "c@1"),
                ("e3", "ca", "c@1", "a@1"),
                ("e4", "xa", "x@1", "a@1"),
            ],
        )
    }

    /// v:a at versions 1, 2 and 10, v:a@x (a name with `@`) at 3, and v:b:
    /// a@1 -> a@2 -> a@10 -> b, a@x@3 -> b.
    fn versions() -> (tempfile::TempDir, Database) {
        trace_of(
            &[("a", 1), ("a", 2), ("a", 10), ("a@x", 3), ("b", 1)],
            &["o1", "o2", "o3", "o4"],
            &[
                ("e1", "o1", "a@1", "a@2"),
                ("e2", "o2", "a@2", "a@10"),
                ("e3", "o3", "a@10", "b@1"),
                ("e4", "o4", "a@x@3", "b@1"),
            ],
        )
    }

    #[test]
    fn a_trace_s_head_finds_starts_as_the_name_index_does() {
        let (dir, db) = versions();
        drop(db);
        let path = dir.path().join("t.db");
        let refs = [
            "'v:a@1'",
            "'v:a@2'",
            "'v:a@10'",
            "'v:a@01'",
            "'v:a'",
            "'v:a@x'",
            "'v:a@x@3'",
            "'v:b'",
            "'v:b@2'",
            "'v:zz'",
            "'o4'",
            "v:a",
            "v:b@1",
        ];
        let mut answered = 0;
        for r in refs {
            for tail in ["DEPTH 2 RETURN count", "RETURN nodes", "RETURN ops"] {
                // A new handle each time: nothing of the trace is cached,
                // so the scoped query reads the trace's head.
                let fresh = Database::open_read_only(&path).unwrap();
                let scoped = fresh.query(&format!("TRACE {r} IN TRACE '#1' {tail}"));
                let fresh = Database::open_read_only(&path).unwrap();
                let indexed = fresh.query(&format!("TRACE {r} {tail}"));
                match (scoped, indexed) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.rows, b.rows, "{r} {tail}");
                        answered += 1;
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("{r} {tail}: {a:?} against {b:?}"),
                }
            }
        }
        // The unknown version and name fail on both sides; the rest answer.
        assert_eq!(answered, 3 * (refs.len() - 2));
        // The head was what the scoped query read, and the walk of one hop
        // scanned its edges: the head is cached, no graph was built.
        let fresh = Database::open_read_only(&path).unwrap();
        let q = "TRACE 'v:b' IN TRACE '#1' DEPTH 1 RETURN count";
        let n = fresh.query(q).unwrap();
        assert_eq!(n.rows[0][1].as_i64(), Some(2));
        assert_eq!(fresh.cache_stats().entries, 1);
        // Walked again, the trace's graph is built, from the cached head:
        // the cache misses only the graph.
        let before = fresh.cache_stats();
        assert_eq!(fresh.query(q).unwrap().rows, n.rows);
        let after = fresh.cache_stats();
        assert_eq!(after.entries, 2);
        assert_eq!(after.misses - before.misses, 1);
    }

    fn ops(db: &Database, q: &str) -> Vec<(String, i64)> {
        db.query(q)
            .unwrap()
            .rows
            .iter()
            .map(|r| (r[1].as_str().unwrap().to_string(), r[4].as_i64().unwrap()))
            .collect()
    }

    #[test]
    fn returned_ops_and_edges_stop_where_the_walk_stops() {
        let (_d, db) = cycle();
        // Backward from c: b (1, op bc), a (2, op ab), then x (3, op xa); the
        // edge c -> a (op ca) is walked from a, one hop past a: depth 3, not
        // the depth of its input c (the start, 0).
        assert_eq!(
            ops(&db, "TRACE v:c RETURN ops"),
            [
                ("bc".into(), 1),
                ("ab".into(), 2),
                ("ca".into(), 3),
                ("xa".into(), 3)
            ]
        );
        // DEPTH 2 does not expand a, so neither ca nor xa is crossed.
        assert_eq!(
            ops(&db, "TRACE v:c DEPTH 2 RETURN ops"),
            [("bc".into(), 1), ("ab".into(), 2)]
        );
        // An UNTIL stop is returned, its inputs are not: no edge c -> a.
        let r = db
            .query("TRACE v:c UNTIL var.name = 'a' RETURN edges")
            .unwrap();
        let ids: Vec<&str> = r.rows.iter().map(|r| r[1].as_str().unwrap()).collect();
        assert_eq!(ids, ["e1", "e2"]);
        // DEPTH 0 crosses nothing.
        assert!(db
            .query("TRACE v:c DEPTH 0 RETURN edges")
            .unwrap()
            .rows
            .is_empty());
    }

    #[test]
    fn rows_handed_out_while_walking_are_those_of_the_full_walk() {
        let (_d, db) = cycle();
        let rows = |q: &str| db.query(q).unwrap().rows;
        for base in [
            "TRACE v:c RETURN nodes",
            "FORWARD v:x RETURN nodes",
            "TRACE v:c WHERE var.name != 'b' RETURN nodes",
            "TRACE v:c DEPTH 2..3 RETURN nodes",
        ] {
            let all = rows(base);
            for n in 0..=all.len() + 1 {
                let some = rows(&format!("{base} LIMIT {n}"));
                assert_eq!(some[..], all[..n.min(all.len())], "{base} LIMIT {n}");
            }
        }
        let names = |q: &str| -> Vec<String> {
            rows(q)
                .iter()
                .map(|r| r[1].as_str().unwrap().to_string())
                .collect()
        };
        // Breadth-first from c: b, a, then x (the start is never a row).
        assert_eq!(names("TRACE v:c RETURN nodes"), ["v:b@1", "v:a@1", "v:x@1"]);
        assert_eq!(
            names("TRACE v:c WHERE var.name != 'b' RETURN nodes"),
            ["v:a@1", "v:x@1"]
        );
        let count = |q: &str| rows(q)[0][1].as_i64().unwrap();
        assert_eq!(count("TRACE v:c RETURN count"), 3);
        assert_eq!(count("TRACE v:c DEPTH 2..3 RETURN count"), 2);
        assert_eq!(count("TRACE v:c DEPTH 1 RETURN count"), 1);
    }
}
