//! TRACE and FORWARD walks that are not plain (WHILE, UNTIL, op starts, a
//! WHERE on a count, paths, or the ops, edges or subgraph walked): the
//! visits are gathered first, then the rows of the output are made.

use std::cell::{Cell as Flag, RefCell};
use std::collections::{HashMap, HashSet};

use memtrace_query::ast::{Direction, Output};
use memtrace_query::plan::TraversePlan;
use memtrace_query::{Field, QueryError, Row, Value};

use super::rows::{node_row, op_row, visit_rec, RowTexts};
use crate::error::{EngineError, Result};
use crate::exec::ctx::TraceCtx;
use crate::exec::row::RecRow;
use crate::exec::run::{qerr, Exec, StartNode};
use crate::exec::value::{give, CellSink};
use crate::graph::{Admit, TraceGraph, Visit};

/// The other end of edge `e` for a walk in `dir`: where the walk arrives.
fn far_end(g: &TraceGraph, dir: Direction, e: u32) -> Option<u32> {
    match dir {
        Direction::Backward => g.source(e),
        Direction::Forward => g.target(e),
    }
}

/// Whether `row` passes the plan's WHERE (every row does without one).
fn passes(p: &TraversePlan, row: &dyn Row) -> Result<bool> {
    match &p.filter {
        Some(f) => f.expr.test(row).map_err(qerr),
        None => Ok(true),
    }
}

/// Decides, for each edge a walk offers, whether to skip it, reach the
/// node at its other end, or expand that node, by the plan's WHILE and
/// UNTIL. The first error of a condition is kept, and every edge after it
/// is skipped.
struct EdgeAdmission<'r, 'a> {
    p: &'r TraversePlan,
    t: &'r TraceCtx<'a>,
    g: &'r TraceGraph,
    failure: RefCell<Option<EngineError>>,
    /// Whether the last node admitted is expanded (not an UNTIL stop): the
    /// walk reports a node right after admitting it.
    expanding: Flag<bool>,
}

impl EdgeAdmission<'_, '_> {
    /// The verdict for `edge`, reaching `other`; notes whether it expands.
    fn admit(&self, edge: u32, other: u32) -> Admit {
        let verdict = self.decide(edge, other);
        self.expanding.set(verdict == Admit::Expand);
        verdict
    }

    fn decide(&self, edge: u32, other: u32) -> Admit {
        if self.failure.borrow().is_some() {
            return Admit::Skip;
        }
        let row = RecRow {
            var: Some(other),
            op: self.g.op(edge),
            edge: Some(edge),
            ..RecRow::new(self.t)
        };
        if let Some(w) = &self.p.while_ {
            match w.expr.test(&row) {
                Ok(true) => {}
                Ok(false) => return Admit::Skip,
                Err(e) => {
                    self.fail(e);
                    return Admit::Skip;
                }
            }
        }
        if let Some(u) = &self.p.until {
            match u.expr.test(&row) {
                Ok(true) => return Admit::Reach,
                Ok(false) => {}
                Err(e) => {
                    self.fail(e);
                    return Admit::Skip;
                }
            }
        }
        Admit::Expand
    }

    fn fail(&self, e: QueryError) {
        self.failure
            .borrow_mut()
            .get_or_insert(EngineError::Query(e));
    }
}

/// The visits of a walk, as they are gathered.
#[derive(Default)]
struct Gathered {
    visits: Vec<Visit>,
    /// Visited nodes that the walk expanded (not UNTIL stops).
    expanded: HashSet<u32>,
    /// The nodes in `visits`, so that op starts add each node once.
    in_visits: HashSet<u32>,
}

/// What a walk that is not plain reached, before its rows are made.
struct Reached {
    /// Every node reached, in the order reached, the starts left out.
    visits: Vec<Visit>,
    /// Visited nodes that the walk expanded (not UNTIL stops).
    expanded: HashSet<u32>,
    /// The variable starts, in order.
    start_nodes: Vec<u32>,
    /// The variable starts, as a set.
    start_set: HashSet<u32>,
}

/// The edges of the result subgraph: the starts and the nodes that pass
/// WHERE, with the walked edges between them.
struct WalkedEdges {
    /// The nodes that are rows, in the order reached.
    node_rows: Vec<u32>,
    /// The walked edges, by id (those WHILE admits).
    edge_ids: Vec<u32>,
    /// Each walked edge's depth: one hop more than its node's.
    edge_depth: HashMap<u32, u32>,
}

impl Exec<'_> {
    /// [`traverse_trace`](Self::traverse_trace) of a walk that is not
    /// plain: the visits gathered, then the rows of its output.
    pub(super) fn traverse_general(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        starts: &[StartNode],
        emit: &mut CellSink<'_>,
    ) -> Result<bool> {
        let g = t.graph()?;
        let reached = self.reach(p, t, g, starts)?;
        let returned: Vec<&Visit> = reached
            .visits
            .iter()
            .filter(|v| v.depth >= p.min_depth)
            .collect();
        match p.output {
            Output::Count => count_row(p, t, g, &returned, emit),
            Output::Nodes => self.node_rows(p, t, g, &returned, emit),
            Output::Paths if self.steps => self.step_rows(p, t, g, &reached.visits, emit),
            Output::Paths => self.path_rows(p, t, g, &reached, &returned, emit),
            Output::Ops | Output::Edges | Output::Subgraph => {
                let walked = walked_edges(p, t, g, starts, &reached, &returned)?;
                match p.output {
                    Output::Ops => op_rows(p, t, g, &walked, emit),
                    Output::Edges => edge_rows(p, t, g, walked, emit),
                    _ => self.subgraph_rows(t, &reached, walked, emit),
                }
            }
        }
    }

    /// Walks from `starts` as the plan says: every node reached, with
    /// whether the walk expanded it. A WHILE or UNTIL that fails to
    /// evaluate fails the walk.
    fn reach(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        g: &TraceGraph,
        starts: &[StartNode],
    ) -> Result<Reached> {
        let admission = EdgeAdmission {
            p,
            t,
            g,
            failure: RefCell::new(None),
            expanding: Flag::new(false),
        };
        let mut gathered = Gathered::default();
        let mut start_nodes: Vec<u32> = Vec::new();
        for s in starts {
            match *s {
                StartNode::Var(v) => start_nodes.push(v),
                StartNode::Op(o) => self.walk_from_op(p, g, &admission, o, &mut gathered)?,
            }
        }
        self.walk_from_vars(p, g, &admission, &start_nodes, &mut gathered)?;
        if let Some(e) = admission.failure.into_inner() {
            return Err(e);
        }
        let Gathered {
            mut visits,
            expanded,
            ..
        } = gathered;
        // Starts are never rows of their own trace's result.
        let start_set: HashSet<u32> = start_nodes.iter().copied().collect();
        visits.retain(|v| !start_set.contains(&v.node));
        Ok(Reached {
            visits,
            expanded,
            start_nodes,
            start_set,
        })
    }

    /// Walks from op start `o`: its inputs (backward) or outputs (forward)
    /// are one hop away, then the walk goes on from them.
    fn walk_from_op(
        &self,
        p: &TraversePlan,
        g: &TraceGraph,
        admission: &EdgeAdmission<'_, '_>,
        o: u32,
        out: &mut Gathered,
    ) -> Result<()> {
        let dir = p.direction;
        let mut seeds = Vec::new();
        for &e in g.op_edges(o) {
            let Some(n) = far_end(g, dir, e) else {
                continue;
            };
            if out.in_visits.contains(&n) || seeds.contains(&n) {
                continue;
            }
            match admission.admit(e, n) {
                Admit::Skip => continue,
                a => {
                    out.in_visits.insert(n);
                    out.visits.push(Visit {
                        node: n,
                        depth: 1,
                        edge: e,
                        parent: u32::MAX,
                    });
                    if a == Admit::Expand {
                        seeds.push(n);
                        out.expanded.insert(n);
                    }
                }
            }
        }
        let mut more = Vec::new();
        g.walk(
            &seeds,
            1,
            dir,
            p.max_depth,
            self.cancel,
            |e, n, _| admission.admit(e, n),
            |v| more.push((v, admission.expanding.get())),
        )?;
        for (v, x) in more {
            if out.in_visits.insert(v.node) {
                if x {
                    out.expanded.insert(v.node);
                }
                out.visits.push(v);
            }
        }
        Ok(())
    }

    /// Walks from the variable starts `var_starts`, after any op starts.
    fn walk_from_vars(
        &self,
        p: &TraversePlan,
        g: &TraceGraph,
        admission: &EdgeAdmission<'_, '_>,
        var_starts: &[u32],
        out: &mut Gathered,
    ) -> Result<()> {
        if var_starts.is_empty() {
            return Ok(());
        }
        // Only the subgraph outputs need to know which nodes were expanded.
        let need_expanded = matches!(p.output, Output::Ops | Output::Edges | Output::Subgraph);
        let mut found = Vec::new();
        g.walk(
            var_starts,
            0,
            p.direction,
            p.max_depth,
            self.cancel,
            |e, n, _| admission.admit(e, n),
            |v| found.push((v, admission.expanding.get())),
        )?;
        // With op starts too, a node may already be a visit.
        let only_walk = out.visits.is_empty();
        out.visits.reserve(found.len());
        for (v, x) in found {
            if only_walk || out.in_visits.insert(v.node) {
                if x && need_expanded {
                    out.expanded.insert(v.node);
                }
                out.visits.push(v);
            }
        }
        Ok(())
    }

    /// `RETURN nodes`: a row per returned visit that passes WHERE.
    fn node_rows(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        g: &TraceGraph,
        returned: &[&Visit],
        emit: &mut CellSink<'_>,
    ) -> Result<bool> {
        let texts = RowTexts::of(t)?;
        for (i, v) in returned.iter().enumerate() {
            if i.is_multiple_of(4096) {
                self.cancel.check()?;
            }
            if !passes(p, &visit_rec(t, g, v))? {
                continue;
            }
            if !emit(&mut node_row(t, texts, g, v)?)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `RETURN paths` as steps: every visit, each with the node it was
    /// reached from, so the walk's tree goes out in rows of constant size.
    fn step_rows(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        g: &TraceGraph,
        visits: &[Visit],
        emit: &mut CellSink<'_>,
    ) -> Result<bool> {
        for (i, v) in visits.iter().enumerate() {
            if i.is_multiple_of(4096) {
                self.cancel.check()?;
            }
            let shown = v.depth >= p.min_depth && passes(p, &visit_rec(t, g, v))?;
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

    /// `RETURN paths`: each returned visit that passes WHERE with its path
    /// back to a start, nodes and ops in walking order.
    fn path_rows(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        g: &TraceGraph,
        reached: &Reached,
        returned: &[&Visit],
        emit: &mut CellSink<'_>,
    ) -> Result<bool> {
        let by_node: HashMap<u32, &Visit> = reached.visits.iter().map(|v| (v.node, v)).collect();
        // A path is as long as its depth: the token is looked at by the
        // steps written, not by the rows.
        let mut steps = 0usize;
        for v in returned {
            if steps >= 4096 {
                self.cancel.check()?;
                steps = 0;
            }
            steps += v.depth as usize + 1;
            if !passes(p, &visit_rec(t, g, v))? {
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
                    Some(next) if !reached.start_set.contains(&cur.parent) => cur = next,
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

    /// `RETURN subgraph`: the starts and the nodes that passed WHERE, then
    /// the walked edges; or, when the query's subgraph is being captured,
    /// the same handed to the capture instead of the sink.
    fn subgraph_rows(
        &self,
        t: &TraceCtx<'_>,
        reached: &Reached,
        walked: WalkedEdges,
        emit: &mut CellSink<'_>,
    ) -> Result<bool> {
        let WalkedEdges {
            node_rows,
            edge_ids,
            ..
        } = walked;
        if let Some(c) = self.capture {
            c.add(t.id(), |r| {
                r.starts.extend(reached.start_nodes.iter().copied());
                r.nodes.extend(node_rows.iter().copied());
                r.edges.extend(edge_ids.iter().copied());
            });
            return Ok(true);
        }
        let mut nodes: Vec<u32> = reached.start_nodes.clone();
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

/// `RETURN count`: how many returned visits pass WHERE.
fn count_row(
    p: &TraversePlan,
    t: &TraceCtx<'_>,
    g: &TraceGraph,
    returned: &[&Visit],
    emit: &mut CellSink<'_>,
) -> Result<bool> {
    let n = match &p.filter {
        None => returned.len() as i64,
        Some(_) => {
            let mut n = 0i64;
            for v in returned {
                if passes(p, &visit_rec(t, g, v))? {
                    n += 1;
                }
            }
            n
        }
    };
    give(emit, vec![t.gid(), Value::Int(n)])
}

/// The result subgraph: the starts and the nodes that pass WHERE, with the
/// walked edges between them: the edges of the nodes the walk expanded
/// (starts, and visited nodes that are neither UNTIL stops nor at the
/// DEPTH limit), each at one hop more than the node it was walked from.
fn walked_edges(
    p: &TraversePlan,
    t: &TraceCtx<'_>,
    g: &TraceGraph,
    starts: &[StartNode],
    reached: &Reached,
    returned: &[&Visit],
) -> Result<WalkedEdges> {
    let dir = p.direction;
    let far = |e: u32| far_end(g, dir, e);
    let mut keep: HashMap<u32, u32> = HashMap::new();
    for s in &reached.start_nodes {
        keep.insert(*s, 0);
    }
    let mut node_rows = Vec::new();
    for v in returned {
        if p.output == Output::Subgraph && !passes(p, &visit_rec(t, g, v))? {
            continue;
        }
        keep.insert(v.node, v.depth);
        node_rows.push(v.node);
    }
    if p.output != Output::Subgraph {
        for v in &reached.visits {
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
        let expands = (reached.start_set.contains(&n) || reached.expanded.contains(&n))
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
    Ok(WalkedEdges {
        node_rows,
        edge_ids,
        edge_depth,
    })
}

/// `RETURN ops`: each op of the walked edges at the least depth of its
/// edges, by depth then id, those that pass WHERE.
fn op_rows(
    p: &TraversePlan,
    t: &TraceCtx<'_>,
    g: &TraceGraph,
    walked: &WalkedEdges,
    emit: &mut CellSink<'_>,
) -> Result<bool> {
    let depth_of = |e: u32| walked.edge_depth.get(&e).copied().unwrap_or(0);
    let mut least: HashMap<u32, u32> = HashMap::new();
    for &e in &walked.edge_ids {
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
        if !passes(p, &row)? {
            continue;
        }
        if !emit(&mut op_row(t.graph_id(), t.op_texts(o)?, d))? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `RETURN edges`: each walked edge that passes WHERE, by id.
fn edge_rows(
    p: &TraversePlan,
    t: &TraceCtx<'_>,
    g: &TraceGraph,
    walked: WalkedEdges,
    emit: &mut CellSink<'_>,
) -> Result<bool> {
    for e in walked.edge_ids {
        let row = RecRow {
            var: far_end(g, p.direction, e),
            op: g.op(e),
            edge: Some(e),
            ..RecRow::new(t)
        };
        if !passes(p, &row)? {
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
