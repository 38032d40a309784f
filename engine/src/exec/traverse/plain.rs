//! TRACE and FORWARD walks of the common, plain kind: variable starts, no
//! WHILE or UNTIL, and a count, the nodes or the ops, handed to the sink a
//! level at a time while walking.

use std::cell::RefCell;

use memtrace_query::ast::{Direction, Output};
use memtrace_query::plan::TraversePlan;
use memtrace_query::Value;
use memtrace_storage::TraceTexts;

use super::held::{HeldLevels, HAND_OUT_OPS};
use super::rows::{
    level_node_rows, level_rows, op_row, refill_node_row, refill_op_row, visit_rec, NodeLevel,
    RowTexts, NO_PARENT,
};
use crate::error::Result;
use crate::exec::batch::{Batch, BatchOut, Gather, NO_RECORD};
use crate::exec::ctx::{OpTexts, TraceCtx};
use crate::exec::row::RecRow;
use crate::exec::run::{qerr, Exec, StartNode};
use crate::exec::value::{give, Cell, CellFn};
use crate::graph::{TraceGraph, Visit};

impl Exec<'_> {
    /// The common case, done while walking: variable starts, no WHILE or
    /// UNTIL, and a count (without WHERE), the nodes or the ops. A count
    /// keeps no rows and builds no visits; nodes and ops are handed to the
    /// sink a level at a time, as the walk finishes each level, and the
    /// walk stops when the sink wants no more (a LIMIT costs the levels
    /// walked up to its last row). `None` when the traversal is not of this
    /// kind.
    pub(super) fn walk_plain<S>(
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
        let dir = p.direction;
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
    /// thousand and more at a time, their texts borrowed from the trace's
    /// labels. Returns false when the sink wants no more rows.
    #[allow(clippy::too_many_arguments)]
    fn nodes_batches(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        g: &TraceGraph,
        dir: Direction,
        var_starts: &[u32],
        labels: &TraceTexts,
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
            // own, borrowing a run of the labels at no cost per row. The
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
}
