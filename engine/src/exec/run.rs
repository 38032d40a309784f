//! The executor of one planned statement ([`Exec`]): the columns it returns,
//! its dispatch to the statement's runner or extension, and the traces and
//! start nodes a statement names.

use std::cell::RefCell;
use std::collections::HashMap;

use memtrace_query::{NodeRef, Plan, QueryError, Value};
use memtrace_storage::keys::IdKind;
use memtrace_storage::records::TraceRecord;
use memtrace_storage::{ReadView, TraceId};

use super::batch::BatchOut;
use super::value::{give, take_row, CellSink, Sink};
use crate::cache::Head;
use crate::db::{Call, Engine, Snapshot};
use crate::error::{EngineError, Result};
use crate::exec::cancel::Cancel;
use crate::extension::statement_name;

/// The column names a planned statement returns.
pub fn columns_of(plan: &Plan) -> Vec<String> {
    Exec::columns(plan)
}

/// A start resolved in one trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StartNode {
    /// A variable version, by local id.
    Var(u32),
    /// An op, by local id.
    Op(u32),
}

/// Runs a plan, handing rows to `sink`; returns the column names first through `columns`.
pub(super) struct Exec<'a> {
    pub db: &'a Engine,
    pub view: &'a ReadView<'a>,
    pub snapshot: &'a Snapshot<'a>,
    pub cancel: &'a Cancel,
    /// Set by [`crate::Engine::query_graph`]: TRACE, FORWARD and MATCH
    /// put what they reach here instead of making rows.
    pub capture: Option<&'a super::capture::Capture>,
    /// Set by [`crate::Engine::query_batches`]: where a walk that makes
    /// whole batches sends them (the rows go to the row sink, which
    /// gathers them into batches for the same place).
    pub batches: Option<&'a RefCell<dyn BatchOut + 'a>>,
    /// Set by [`crate::Engine::walk_tree`]: the rows of `RETURN paths`
    /// are the walk's steps (see there) instead of whole paths.
    pub steps: bool,
}

/// A query error as the engine's error.
pub(super) fn qerr(e: QueryError) -> EngineError {
    match e {
        QueryError::Stopped => EngineError::Cancelled,
        e => EngineError::Query(e),
    }
}

/// (version, variable) of the versions of a full name in one trace.
type Versions = Vec<(u32, u32)>;

impl<'a> Exec<'a> {
    /// The columns a plan returns.
    pub fn columns(plan: &Plan) -> Vec<String> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        match plan {
            Plan::Traverse(t) => t.columns.clone(),
            Plan::Match(m) => m.projection.columns.clone(),
            Plan::Find(f) => f.projection.columns.clone(),
            Plan::ShowTraces => s(&[
                "trace",
                "user_id",
                "project_id",
                "created_at",
                "vars",
                "ops",
                "edges",
                "cases",
                "source",
            ]),
            Plan::Describe(_) => s(&[
                "trace",
                "node",
                "edge_category",
                "op_id",
                "op_name",
                "kind",
                "input",
                "output",
            ]),
            Plan::Attribute(a) => a.columns.clone(),
            Plan::Explain(_) => s(&["plan"]),
            Plan::SavePattern(_) => s(&["pattern", "version", "params", "statement"]),
            Plan::RunPattern(r) => r.columns.clone(),
            Plan::ShowPatterns => s(&[
                "pattern",
                "kind",
                "error_type",
                "params",
                "definition",
                "version",
                "saved_at",
                "author",
            ]),
            Plan::ShowPatternHistory(_) => s(&[
                "seq",
                "pattern",
                "action",
                "params",
                "statement",
                "author",
                "at",
            ]),
            Plan::DropPattern(_) => s(&["pattern", "dropped"]),
        }
    }

    /// Runs the plan. TRACE and FORWARD hand rows whose text is borrowed
    /// from the trace; every other statement hands owned rows.
    pub fn run(&self, plan: &Plan, cells: &mut CellSink<'_>) -> Result<()> {
        match plan {
            Plan::Traverse(t) => self.traverse(t, cells),
            other => self.run_owned(other, &mut |row| give(cells, row)),
        }
    }

    /// Runs a plan whose rows are owned.
    fn run_owned(&self, plan: &Plan, sink: &mut Sink<'_>) -> Result<()> {
        match plan {
            Plan::Explain(inner) => {
                for line in inner.explain() {
                    if !sink(vec![Value::Str(line)])? {
                        break;
                    }
                }
                Ok(())
            }
            Plan::ShowTraces => {
                for item in self.view.traces() {
                    let (_, r) = item?;
                    let c = r.counts;
                    let row = vec![
                        Value::Str(r.graph_id),
                        r.user_id.into(),
                        r.project_id.into(),
                        r.created_at.into(),
                        Value::from(c.variables),
                        Value::from(c.ops),
                        Value::from(c.edges),
                        Value::from(c.cases),
                        Value::Str(r.source),
                    ];
                    if !sink(row)? {
                        break;
                    }
                }
                Ok(())
            }
            Plan::Traverse(t) => self.traverse(t, &mut |c| sink(take_row(c))),
            Plan::Find(f) => self.find(f, sink),
            Plan::Match(m) => self.match_(m, sink),
            Plan::Describe(d) => self.describe(d, sink),
            Plan::Attribute(_)
            | Plan::SavePattern(_)
            | Plan::RunPattern(_)
            | Plan::ShowPatterns
            | Plan::ShowPatternHistory(_)
            | Plan::DropPattern(_) => {
                let name = statement_name(plan).unwrap_or("this statement");
                let call = Call {
                    snapshot: self.snapshot,
                    cancel: self.cancel,
                };
                self.db
                    .extensions()
                    .for_statement(name)?
                    .run(&call, plan, sink)
            }
        }
    }

    /// The traces in scope: one named by graph id (or `#N`), or all.
    pub(super) fn traces(&self, scope: &Option<String>) -> Result<Vec<(TraceId, TraceRecord)>> {
        match scope {
            Some(s) => {
                let id = self.db.trace(s)?.id();
                let r = self
                    .view
                    .trace(id)?
                    .ok_or_else(|| EngineError::UnknownTrace(s.clone()))?;
                Ok(vec![(id, r)])
            }
            None => self
                .view
                .traces()
                .map(|r| r.map_err(EngineError::from))
                .collect(),
        }
    }

    /// Where a start is, per trace, through the name and id indexes.
    pub(super) fn resolve(
        &self,
        r: &NodeRef,
        only: Option<TraceId>,
    ) -> Result<Vec<(TraceId, StartNode)>> {
        self.resolve_in(r, only.map(|t| (t, None)))
    }

    /// [`resolve`](Self::resolve), in one trace when `only` names it. With
    /// that trace's head (read from this view, so the trace is known to be
    /// whole), a small trace's variables are found in its names, and a
    /// large one's in the name index without looking its record up again:
    /// either way what the index alone would find.
    pub(super) fn resolve_in(
        &self,
        r: &NodeRef,
        only: Option<(TraceId, Option<&Head>)>,
    ) -> Result<Vec<(TraceId, StartNode)>> {
        let lookup = NodeLookup {
            view: self.view,
            seen: only.and_then(|(t, h)| Some((t, h?))),
            only: only.map(|(t, _)| t),
        };
        let found = match r {
            NodeRef::Name {
                full_name,
                version: Some(v),
            } => lookup.by_version(full_name, *v)?,
            NodeRef::Name {
                full_name,
                version: None,
            } => {
                let v = lookup.latest(full_name)?;
                if v.is_empty() {
                    lookup.op(full_name)?
                } else {
                    v
                }
            }
            NodeRef::Quoted(id) => {
                let mut v = match id.rsplit_once('@') {
                    Some((name, ver)) => match ver.parse::<u32>() {
                        Ok(ver) => lookup.by_version(name, ver)?,
                        Err(_) => Vec::new(),
                    },
                    None => Vec::new(),
                };
                if v.is_empty() {
                    v = lookup.latest(id)?;
                }
                if v.is_empty() {
                    v = lookup.op(id)?;
                }
                v
            }
        };
        Ok(found)
    }
}

/// Finds a reference's variables and ops in the name and id indexes, in one
/// trace when `only` names it; with that trace's head (`seen`), in the
/// names it holds.
struct NodeLookup<'v, 'h> {
    view: &'v ReadView<'v>,
    seen: Option<(TraceId, &'h Head)>,
    only: Option<TraceId>,
}

impl NodeLookup<'_, '_> {
    /// (version, variable) of each version of a name in a seen trace
    /// whose head holds no names, from the name index.
    fn seen_versions(&self, name: &str) -> Result<Option<(TraceId, Versions)>> {
        match self.seen {
            Some((t, head)) if head.names.is_none() => {
                Ok(Some((t, self.view.versions_in(name, t)?)))
            }
            _ => Ok(None),
        }
    }

    /// Version `version` of variable `name`.
    fn by_version(&self, name: &str, version: u32) -> Result<Vec<(TraceId, StartNode)>> {
        if let Some((t, head)) = self.seen {
            let found = match &head.names {
                Some(names) => names.version(name, version),
                // One entry per name, trace and version: a get finds it.
                None => self.view.version_in(name, t, version)?,
            };
            return Ok(found.map(|l| (t, StartNode::Var(l))).into_iter().collect());
        }
        Ok(self
            .view
            .versions(name, self.only)?
            .into_iter()
            .filter(|(_, v, _)| *v == version)
            .map(|(t, _, l)| (t, StartNode::Var(l)))
            .collect())
    }

    /// The latest version of variable `name` in each trace that has it.
    fn latest(&self, name: &str) -> Result<Vec<(TraceId, StartNode)>> {
        let mut out: Vec<(TraceId, StartNode)> = Vec::new();
        if let Some((t, head)) = self.seen {
            if let Some(names) = &head.names {
                return Ok(names
                    .latest(name)
                    .map(|(_, l)| (t, StartNode::Var(l)))
                    .into_iter()
                    .collect());
            }
        }
        if let Some((t, found)) = self.seen_versions(name)? {
            // Ordered by version: the last is the latest.
            return Ok(found
                .last()
                .map(|&(_, l)| (t, StartNode::Var(l)))
                .into_iter()
                .collect());
        }
        let mut best: HashMap<TraceId, u32> = HashMap::new();
        for (t, v, l) in self.view.versions(name, self.only)? {
            match best.get(&t) {
                Some(b) if *b >= v => {}
                _ => {
                    best.insert(t, v);
                    out.retain(|(x, _)| *x != t);
                    out.push((t, StartNode::Var(l)));
                }
            }
        }
        Ok(out)
    }

    /// The op of id `id`.
    fn op(&self, id: &str) -> Result<Vec<(TraceId, StartNode)>> {
        Ok(self
            .view
            .string_id(IdKind::Op, id)?
            .into_iter()
            .filter(|(t, _)| self.only.is_none_or(|o| o == *t))
            .map(|(t, l)| (t, StartNode::Op(l)))
            .collect())
    }
}
