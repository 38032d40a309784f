//! The rows of TRACE and FORWARD: a node's or an op's row, built once or
//! refilled in place, and a whole level of them handed to a sink.

use std::borrow::Cow;

use memtrace_query::Value;
use memtrace_storage::{TextTable, TraceTexts};

use crate::error::Result;
use crate::exec::batch::ops_run;
use crate::exec::ctx::{OpTexts, TraceCtx};
use crate::exec::row::RecRow;
use crate::exec::value::{Cell, CellFn};
use crate::graph::{TraceGraph, Visit};

/// The parent of a [`Visit`] made from a level walk's nodes, which do not
/// say it: no row of a plain walk reads it.
pub(super) const NO_PARENT: u32 = u32::MAX;

/// What WHERE sees of a visited node: the node, and the edge and op that
/// reached it.
pub(super) fn visit_rec<'r, 'a>(t: &'r TraceCtx<'a>, g: &TraceGraph, v: &Visit) -> RecRow<'r, 'a> {
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
pub(super) struct RowTexts<'t, 'a> {
    pub(super) labels: Option<&'t TraceTexts>,
    pub(super) ops: OpTexts<'t, 'a>,
}

impl<'t, 'a> RowTexts<'t, 'a> {
    pub(super) fn of(t: &'t TraceCtx<'a>) -> Result<Self> {
        Ok(RowTexts {
            labels: t.labels()?,
            ops: t.op_reader()?,
        })
    }
}

/// The `RETURN nodes` row of a visited node: trace, node id, category,
/// depth and the op that reached it (text borrowed from the trace's labels,
/// or from its records when it has none stored).
pub(super) fn node_row<'t>(
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
pub(super) fn refill_node_row<'t>(
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

/// Sets `cell` to borrowed `text`, or `NULL` when there is none, without
/// dropping it when it is borrowed text already (see [`refill_op_row`]).
#[inline]
pub(super) fn put_text<'t>(cell: &mut Cell<'t>, text: Option<&'t str>) {
    match (cell, text) {
        (Cell::Text(slot), Some(text)) => *slot = text,
        (cell, text) => *cell = Cell::text(text),
    }
}

/// Sets `cell` to the integer `n`, without dropping it when it holds one.
#[inline]
pub(super) fn put_int(cell: &mut Cell<'_>, n: u32) {
    match cell {
        Cell::Value(Value::Int(slot)) => *slot = i64::from(n),
        cell => *cell = Cell::Value(Value::from(n)),
    }
}

/// Refills `row`, an op row that a sink has had, in place with `op_row`'s
/// cells: a cell still of the kind it is refilled with is overwritten
/// without being dropped (a sink may have taken an owned cell, which left
/// it `Null`). A walk that hands out one op row after another then pays no
/// drop per row. Always inlined, because a call per row costs more than
/// the refill itself.
#[inline(always)]
pub(super) fn refill_op_row<'t>(
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
/// walk's state, which makes the rows cheaper.
#[inline(never)]
pub(super) fn level_rows<'t, S>(
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
pub(super) struct NodeLevel<'l> {
    pub(super) nodes: &'l [u32],
    pub(super) via: &'l [u32],
    pub(super) depth: u32,
}

/// Hands the `RETURN nodes` rows of one level of a walk to `emit`, as
/// [`level_rows`] does the ops', refilling `row`: each node's id and
/// category read from the trace's `labels`, and the id of the op of the
/// edge that reached it; false once `emit` wants no more.
#[inline(never)]
pub(super) fn level_node_rows<'t, S>(
    labels: &'t TraceTexts,
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
/// kind and depth (`texts` are the op's id, name and kind, borrowed from the
/// trace; `gid` is its graph id).
#[inline]
pub(super) fn op_row<'t>(gid: &'t str, texts: [Option<&'t str>; 3], depth: u32) -> [Cell<'t>; 5] {
    let [id, name, kind] = texts;
    [
        Cell::Text(gid),
        Cell::Text(id.unwrap_or("")),
        Cell::text(name),
        Cell::text(kind),
        Cell::Value(Value::from(depth)),
    ]
}
