//! Runs query plans over the stored traces: traversals and MATCH on the
//! cached CSR adjacency, FIND over the cached catalogs, rows streamed to a sink.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use memtrace_query::ast::{Direction as QDir, FindKind, Output};
use memtrace_query::plan::{
    AttributePlan, CaseSource, Constraint, DescribePlan, FindPlan, MatchPlan, MatchStep,
    PatternVar, Pred, TraversePlan, VarKind,
};
use memtrace_query::{
    Collector, Field, NodeRef, Params, Plan, QueryError, Row, Statement, Subject, Value,
};
use memtrace_storage::keys::IdKind;
use memtrace_storage::records::TraceRecord;
use memtrace_storage::{LocalId, ReadView, TraceId};
use serde::Serialize;

use crate::attrib::{
    self, AttributeRequest, CaseOrigin, CasePick, Method, StoredVerdict, TraceModel,
};
use crate::catalog::{TraceCatalog, TraceEdges, TraceOps};
use crate::db::Database;
use crate::error::{EngineError, Result};
use crate::graph::{Admit, Cancel, Direction, TraceGraph, Visit};
use crate::patterns;
use crate::timestamp::iso_utc;

/// A query's answer: column names and rows of JSON values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// Converts a query value to JSON.
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(n) => serde_json::Value::from(*n),
        Value::Float(x) => serde_json::Number::from_f64(*x)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::List(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
    }
}

pub(crate) fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => n.as_f64().map_or(Value::Null, Value::Float),
        },
        serde_json::Value::String(s) => Value::Str(s.clone()),
        serde_json::Value::Array(a) => Value::List(a.iter().map(from_json).collect()),
        serde_json::Value::Object(_) => Value::Str(v.to_string()),
    }
}

fn meta_path(json: Option<&str>, path: &[String]) -> Value {
    let Some(text) = json else {
        return Value::Null;
    };
    let Ok(root) = serde_json::from_str::<serde_json::Value>(text) else {
        return Value::Null;
    };
    let mut cur = &root;
    for p in path {
        cur = match cur {
            serde_json::Value::Object(m) => match m.get(p) {
                Some(v) => v,
                None => return Value::Null,
            },
            serde_json::Value::Array(a) => match p.parse::<usize>().ok().and_then(|i| a.get(i)) {
                Some(v) => v,
                None => return Value::Null,
            },
            _ => return Value::Null,
        };
    }
    from_json(cur)
}

/// The column names a planned statement returns.
pub fn columns_of(plan: &Plan) -> Vec<String> {
    Exec::columns(plan)
}

/// Where rows go. Returning `false` stops the query early.
pub type Sink<'s> = dyn FnMut(Vec<Value>) -> Result<bool> + 's;

/// The value in `cell`, loaded (from the trace cache) on first use.
pub(crate) fn lazy<T>(
    cell: &OnceLock<Arc<T>>,
    load: impl FnOnce() -> Result<Arc<T>>,
) -> Result<&T> {
    if let Some(x) = cell.get() {
        return Ok(x);
    }
    let x = load()?;
    Ok(cell.get_or_init(|| x))
}

/// One trace as a query sees it: its record and lazily loaded cached parts.
struct TraceCtx<'a> {
    db: &'a Database,
    view: &'a ReadView<'a>,
    id: TraceId,
    record: TraceRecord,
    catalog: OnceLock<Arc<TraceCatalog>>,
    ops: OnceLock<Arc<TraceOps>>,
    graph: OnceLock<Arc<TraceGraph>>,
    edges: OnceLock<Arc<TraceEdges>>,
    values: RefCell<HashMap<u32, Value>>,
}

impl<'a> TraceCtx<'a> {
    fn new(db: &'a Database, view: &'a ReadView<'a>, id: TraceId, record: TraceRecord) -> Self {
        TraceCtx {
            db,
            view,
            id,
            record,
            catalog: OnceLock::new(),
            ops: OnceLock::new(),
            graph: OnceLock::new(),
            edges: OnceLock::new(),
            values: RefCell::new(HashMap::new()),
        }
    }

    fn catalog(&self) -> Result<&TraceCatalog> {
        lazy(&self.catalog, || self.db.trace_catalog(self.view, self.id))
    }

    fn ops(&self) -> Result<&TraceOps> {
        lazy(&self.ops, || self.db.trace_ops(self.view, self.id))
    }

    fn graph(&self) -> Result<&TraceGraph> {
        lazy(&self.graph, || self.db.trace_graph(self.view, self.id))
    }

    fn edges(&self) -> Result<&TraceEdges> {
        lazy(&self.edges, || self.db.trace_edges(self.view, self.id))
    }

    fn gid(&self) -> Value {
        Value::Str(self.record.graph_id.clone())
    }

    fn node_id(&self, v: u32) -> Result<String> {
        Ok(self
            .catalog()?
            .variable(v)
            .map(|r| r.full_node_id())
            .unwrap_or_default())
    }

    fn op_id(&self, o: u32) -> Result<String> {
        Ok(self
            .ops()?
            .op(o)
            .map(|r| r.op_id.clone())
            .unwrap_or_default())
    }

    fn session_id(&self, s: Option<LocalId>) -> Result<Value> {
        Ok(match s {
            Some(s) => self
                .ops()?
                .session(s)
                .map_or(Value::Null, |r| Value::Str(r.session_id.clone())),
            None => Value::Null,
        })
    }

    fn var_field(&self, v: u32, f: &Field) -> Result<Value> {
        let c = self.catalog()?;
        let Some(r) = c.variable(v) else {
            return Ok(Value::Null);
        };
        Ok(match f {
            Field::FullName => Value::Str(r.full_name()),
            Field::Name => Value::Str(r.name.clone()),
            Field::Class => r.class_name.clone().into(),
            Field::Version => Value::from(r.version),
            Field::Category => r.category.clone().into(),
            Field::Comment => r.comment.clone().into(),
            Field::Value => {
                if let Some(v) = self.values.borrow().get(&v) {
                    return Ok(v.clone());
                }
                let val = match &r.value {
                    Some(vr) => Value::Str(self.view.value(vr)?),
                    None => Value::Null,
                };
                self.values.borrow_mut().insert(v, val.clone());
                val
            }
            Field::CreatedAt => r.common.created_at.clone().into(),
            Field::Session => r.session_id.clone().into(),
            Field::NodeId => Value::Str(r.full_node_id()),
            Field::Filename => r.common.filename.clone().into(),
            Field::Lineno => r.common.lineno.map_or(Value::Null, Value::Int),
            Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
            _ => Value::Null,
        })
    }

    /// A variable's text field, borrowed: `Some(value)` for the plain text
    /// fields, `None` for the others (which need [`var_field`](Self::var_field)).
    fn var_str(&self, v: u32, f: &Field) -> Result<Option<Option<&str>>> {
        let Some(r) = self.catalog()?.variable(v) else {
            return Ok(Some(None));
        };
        Ok(match f {
            Field::Name => Some(Some(r.name.as_str())),
            Field::Class => Some(r.class_name.as_deref()),
            Field::Category => Some(r.category.as_deref()),
            Field::Comment => Some(r.comment.as_deref()),
            Field::Session => Some(r.session_id.as_deref()),
            Field::CreatedAt => Some(r.common.created_at.as_deref()),
            _ => None,
        })
    }

    fn op_field(&self, o: u32, f: &Field) -> Result<Value> {
        let c = self.ops()?;
        let Some(r) = c.op(o) else {
            return Ok(Value::Null);
        };
        Ok(match f {
            Field::Id => Value::Str(r.op_id.clone()),
            Field::OpName => r.op_name.clone().into(),
            Field::Category => r.category.clone().into(),
            Field::Comment => r.comment.clone().into(),
            Field::Session => r.session_id.clone().into(),
            Field::CreatedAt => r.common.created_at.clone().into(),
            Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
            _ => Value::Null,
        })
    }

    fn edge_field(&self, e: u32, f: &Field) -> Result<Value> {
        let g = self.graph()?;
        Ok(match f {
            Field::Source => match g.source(e) {
                Some(v) => Value::Str(self.node_id(v)?),
                None => Value::Null,
            },
            Field::Target => match g.target(e) {
                Some(v) => Value::Str(self.node_id(v)?),
                None => Value::Null,
            },
            Field::Op => match g.op(e) {
                Some(o) => Value::Str(self.op_id(o)?),
                None => Value::Null,
            },
            Field::OpName => match g.op(e) {
                Some(o) => self.op_field(o, &Field::OpName)?,
                None => Value::Null,
            },
            Field::Kind => match g.op(e) {
                Some(o) => self.op_field(o, &Field::Category)?,
                None => Value::Null,
            },
            _ => {
                let edges = self.edges()?;
                let Some(r) = edges.get(e) else {
                    return Ok(Value::Null);
                };
                match f {
                    Field::Id => Value::Str(r.edge_id.clone()),
                    Field::Category => r.category.clone().into(),
                    Field::Comment => r.comment.clone().into(),
                    Field::Session => self.session_id(Some(r.session))?,
                    Field::CreatedAt => r.common.created_at.clone().into(),
                    Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
                    _ => Value::Null,
                }
            }
        })
    }

    fn session_field(&self, s: u32, f: &Field) -> Result<Value> {
        let c = self.ops()?;
        let Some(r) = c.session(s) else {
            return Ok(Value::Null);
        };
        Ok(match f {
            Field::Id => Value::Str(r.session_id.clone()),
            Field::Name => r.session_name.clone().into(),
            Field::Category => r.category.clone().into(),
            Field::Comment => r.comment.clone().into(),
            Field::CreatedAt => r.common.created_at.clone().into(),
            Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
            _ => Value::Null,
        })
    }

    fn trace_field(&self, f: &Field) -> Value {
        let r = &self.record;
        match f {
            Field::Id => self.gid(),
            Field::UserId => r.user_id.clone().into(),
            Field::ProjectId => r.project_id.clone().into(),
            Field::CreatedAt => r.created_at.clone().into(),
            Field::Source => Value::Str(r.source.clone()),
            Field::Key => Value::Int(i64::from(self.id)),
            Field::Meta(path) => {
                let mut p = vec!["metadata".to_string()];
                p.extend(path.iter().cloned());
                meta_path(Some(&r.header_json), &p)
            }
            _ => Value::Null,
        }
    }
}

/// A failed case as a row sees it: its fields as a JSON object (a stored
/// annotation, or one made from a judge op that scored 0) and its origin.
#[derive(Clone, Copy)]
struct CaseRef<'r> {
    json: &'r serde_json::Value,
    origin: &'r CaseOrigin,
}

/// The fields of a judge-derived case, under the keys an annotation uses.
fn judge_case_json(c: &attrib::FailedCase) -> serde_json::Value {
    let judge_op = match &c.origin {
        attrib::CaseOrigin::Judge(op) => Some(op.as_str()),
        attrib::CaseOrigin::Annotation(_) => None,
    };
    serde_json::json!({
        "query_id": c.query_node,
        "query": c.query,
        "golden_answers": c.gold,
        "prediction": c.prediction,
        "source_evidence_ids": c.source_evidence,
        "judge_op_id": judge_op,
        "judge_response": c.judge_response,
    })
}

fn case_field(case: CaseRef<'_>, f: &Field) -> Value {
    let CaseRef { json: case, origin } = case;
    let key = match f {
        Field::Origin => {
            return Value::Str(
                match origin {
                    CaseOrigin::Annotation(_) => "annotation",
                    CaseOrigin::Judge(_) => "judge",
                }
                .to_string(),
            )
        }
        Field::Key => return origin_key(origin),
        Field::QueryId => "query_id",
        Field::Query => "query",
        Field::GoldenAnswers => "golden_answers",
        Field::Prediction => "prediction",
        Field::Evidence => "source_evidence_ids",
        Field::ErrorType => "final_error_type",
        Field::OpId => "final_op_id",
        Field::Meta(path) => {
            let mut cur = case;
            for p in path {
                match cur.get(p) {
                    Some(v) => cur = v,
                    None => return Value::Null,
                }
            }
            return from_json(cur);
        }
        _ => return Value::Null,
    };
    case.get(key).map_or(Value::Null, from_json)
}

fn verdict_field(s: &StoredVerdict, f: &Field) -> Value {
    let v = &s.verdict;
    let int = |n: u64| i64::try_from(n).map_or(Value::Null, Value::Int);
    match f {
        Field::Case => Value::Str(v.case.clone()),
        Field::Query => Value::Str(v.query.clone()),
        Field::ErrorType => v.error_type.map(|e| e.name()).into(),
        Field::OpId => v.op_id.clone().into(),
        Field::OpName => v.op_name.clone().into(),
        Field::Confidence => Value::Float(v.confidence),
        Field::Reason => Value::Str(v.reason.clone()),
        Field::Method => Value::Str(v.method.clone()),
        Field::Version => Value::Str(v.version.clone()),
        Field::Author => Value::Str(s.author.clone()),
        Field::At => Value::Str(crate::timestamp::iso_utc(s.at_ms)),
        Field::Seq => int(s.seq),
        Field::Micros => int(v.micros),
        Field::Model => v.model.clone().into(),
        Field::Calls => v.cost.map_or(Value::Null, |c| int(c.calls.into())),
        Field::CachedCalls => v.cost.map_or(Value::Null, |c| int(c.cached_calls.into())),
        Field::TokensIn => v.cost.map_or(Value::Null, |c| int(c.tokens_in)),
        Field::TokensOut => v.cost.map_or(Value::Null, |c| int(c.tokens_out)),
        Field::Seconds => v.cost.map_or(Value::Null, |c| Value::Float(c.seconds)),
        _ => Value::Null,
    }
}

/// A case's origin as its [`Field::Key`]: the position of its annotation,
/// or the id of its judge op.
fn origin_key(origin: &CaseOrigin) -> Value {
    match origin {
        CaseOrigin::Annotation(i) => i64::try_from(*i).map_or(Value::Null, Value::Int),
        CaseOrigin::Judge(op) => Value::Str(op.clone()),
    }
}

/// The case a row of a keyed `FIND cases` came from: its last two values
/// are the trace's and the case's [`Field::Key`].
fn pick_of(row: &[Value]) -> Result<CasePick> {
    let bad = || {
        EngineError::BadRequest(format!(
            "a row of the subquery does not end with a trace and a case key: {row:?}"
        ))
    };
    let [.., trace, case] = row else {
        return Err(bad());
    };
    let trace = match trace {
        Value::Int(n) => TraceId::try_from(*n).map_err(|_| bad())?,
        _ => return Err(bad()),
    };
    let origin = match case {
        Value::Int(i) => CaseOrigin::Annotation(usize::try_from(*i).map_err(|_| bad())?),
        Value::Str(op) => CaseOrigin::Judge(op.clone()),
        _ => return Err(bad()),
    };
    Ok(CasePick { trace, origin })
}

/// An ATTRIBUTE row: the columns of [`memtrace_query::attribute_columns`].
fn verdict_row(v: &attrib::Verdict) -> Vec<Value> {
    vec![
        Value::Str(v.graph_id.clone()),
        Value::Str(v.case.clone()),
        v.error_type.map(|e| e.name()).into(),
        v.op_id.clone().into(),
        v.op_name.clone().into(),
        Value::Float(v.confidence),
        Value::Str(v.reason.clone()),
    ]
}

/// A case reference as [`AttributeRequest`] takes it: a full name, a full
/// node id or an op id, unquoted.
fn case_reference(r: &NodeRef) -> String {
    match r {
        NodeRef::Name {
            full_name,
            version: Some(v),
        } => format!("{full_name}@{v}"),
        NodeRef::Name {
            full_name,
            version: None,
        } => full_name.clone(),
        NodeRef::Quoted(s) => s.clone(),
    }
}

/// Checks the attribution method of an ATTRIBUTE (also under EXPLAIN): an
/// unknown one is an error placed at its name in `text`.
fn check_plan(plan: &Plan, text: &str) -> Result<()> {
    match plan {
        Plan::Explain(inner) => check_plan(inner, text),
        Plan::Attribute(a) => match a.method.parse::<Method>() {
            Ok(_) => Ok(()),
            Err(e) => {
                let names = Method::ALL.map(Method::name);
                let hint = memtrace_query::nearest(&a.method, names)
                    .map(|k| format!(" (did you mean {k}?)"))
                    .unwrap_or_default();
                Err(QueryError::invalid_at(text, a.method_at, format!("{e}{hint}")).into())
            }
        },
        _ => Ok(()),
    }
}

/// Whether a condition on `trace.` fields holds for a trace.
pub(crate) fn trace_matches(
    db: &Database,
    view: &ReadView<'_>,
    id: TraceId,
    record: &TraceRecord,
    pred: &Pred,
) -> Result<bool> {
    let t = TraceCtx::new(db, view, id, record.clone());
    pred.expr.test(&RecRow::new(&t)).map_err(qerr)
}

/// Who saves or drops a pattern from a statement: the login name, else `query`.
fn author() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "query".to_string())
}

/// A row of records of one trace: any of a variable, op, edge, session,
/// case, stored verdict.
#[derive(Clone, Copy)]
struct RecRow<'r, 'a> {
    t: &'r TraceCtx<'a>,
    var: Option<u32>,
    op: Option<u32>,
    edge: Option<u32>,
    session: Option<u32>,
    case: Option<CaseRef<'r>>,
    verdict: Option<&'r StoredVerdict>,
}

impl<'r, 'a> RecRow<'r, 'a> {
    fn new(t: &'r TraceCtx<'a>) -> Self {
        RecRow {
            t,
            var: None,
            op: None,
            edge: None,
            session: None,
            case: None,
            verdict: None,
        }
    }

    fn session_local(&self) -> Result<Option<u32>> {
        if self.session.is_some() {
            return Ok(self.session);
        }
        if let Some(e) = self.edge {
            if let Some(r) = self.t.edges()?.get(e) {
                return Ok(Some(r.session));
            }
        }
        if let Some(o) = self.op {
            return Ok(self.t.ops()?.op(o).and_then(|r| r.session));
        }
        if let Some(v) = self.var {
            return Ok(self.t.catalog()?.variable(v).and_then(|r| r.session));
        }
        Ok(None)
    }
}

impl Row for RecRow<'_, '_> {
    fn field(&self, subject: Subject, f: &Field) -> std::result::Result<Value, QueryError> {
        let r: Result<Value> = (|| {
            Ok(match subject {
                Subject::Var => match self.var {
                    Some(v) => self.t.var_field(v, f)?,
                    None => Value::Null,
                },
                Subject::Op => match self.op {
                    Some(o) => self.t.op_field(o, f)?,
                    None => Value::Null,
                },
                Subject::Edge => match self.edge {
                    Some(e) => self.t.edge_field(e, f)?,
                    None => Value::Null,
                },
                Subject::Source | Subject::Target => {
                    let g = self.t.graph()?;
                    let end = self.edge.and_then(|e| {
                        if subject == Subject::Source {
                            g.source(e)
                        } else {
                            g.target(e)
                        }
                    });
                    match end {
                        Some(v) => self.t.var_field(v, f)?,
                        None => Value::Null,
                    }
                }
                Subject::Session => match self.session_local()? {
                    Some(s) => self.t.session_field(s, f)?,
                    None => Value::Null,
                },
                Subject::Trace => self.t.trace_field(f),
                Subject::Case => self.case.map_or(Value::Null, |c| case_field(c, f)),
                Subject::Attribution => self.verdict.map_or(Value::Null, |v| verdict_field(v, f)),
                Subject::Bound(_) => Value::Null,
            })
        })();
        r.map_err(|e| QueryError::Other(e.to_string()))
    }
}

/// A MATCH binding: one local id per pattern variable.
struct MatchRow<'r, 'a> {
    t: &'r TraceCtx<'a>,
    vars: &'r [PatternVar],
    binding: &'r [u32],
}

impl Row for MatchRow<'_, '_> {
    fn field(&self, subject: Subject, f: &Field) -> std::result::Result<Value, QueryError> {
        let r: Result<Value> = match subject {
            Subject::Bound(i) => match (self.vars.get(i), self.binding.get(i)) {
                (Some(v), Some(&id)) if id != UNBOUND => match v.kind {
                    VarKind::Node => self.t.var_field(id, f),
                    VarKind::Edge => self.t.edge_field(id, f),
                },
                _ => Ok(Value::Null),
            },
            Subject::Trace => Ok(self.t.trace_field(f)),
            _ => Ok(Value::Null),
        };
        r.map_err(|e| QueryError::Other(e.to_string()))
    }
}

const UNBOUND: u32 = u32::MAX;

/// A start resolved in one trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StartNode {
    Var(u32),
    Op(u32),
}

/// Runs a plan, handing rows to `sink`; returns the column names first through `columns`.
pub(crate) struct Exec<'a> {
    pub db: &'a Database,
    pub view: &'a ReadView<'a>,
    pub cancel: &'a Cancel,
}

fn qerr(e: QueryError) -> EngineError {
    EngineError::Query(e)
}

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

    /// Runs the plan.
    pub fn run(&self, plan: &Plan, sink: &mut Sink<'_>) -> Result<()> {
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
                    let (id, r) = item?;
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
                    let _ = id;
                    if !sink(row)? {
                        break;
                    }
                }
                Ok(())
            }
            Plan::Traverse(t) => self.traverse(t, sink),
            Plan::Find(f) => self.find(f, sink),
            Plan::Match(m) => self.match_(m, sink),
            Plan::Describe(d) => self.describe(d, sink),
            Plan::Attribute(a) => self.attribute(a, sink),
            Plan::SavePattern(p) => {
                let version = self
                    .db
                    .store_pattern(&p.name, &p.text, &p.params, &author())?;
                sink(vec![
                    Value::Str(p.name.clone()),
                    patterns::int(version),
                    Value::Str(patterns::params_text(&p.params)),
                    Value::Str(p.text.clone()),
                ])?;
                Ok(())
            }
            Plan::RunPattern(r) => self.db.run_pattern_rows(self.view, r, self.cancel, sink),
            Plan::ShowPatterns => {
                for p in self.db.patterns()? {
                    let (at, by) = match &p.saved {
                        Some((at, by)) => (Value::Str(iso_utc(*at)), Value::Str(by.clone())),
                        None => (Value::Null, Value::Null),
                    };
                    let row = vec![
                        Value::Str(p.name),
                        Value::Str(if p.builtin { "built-in" } else { "saved" }.into()),
                        p.error_type.map(|e| e.name().to_string()).into(),
                        Value::Str(patterns::params_text(&p.params)),
                        Value::Str(p.definition),
                        patterns::int(p.version),
                        at,
                        by,
                    ];
                    if !sink(row)? {
                        break;
                    }
                }
                Ok(())
            }
            Plan::ShowPatternHistory(name) => {
                for e in self.db.pattern_history(name)? {
                    let row = vec![
                        patterns::int(e.seq),
                        Value::Str(e.name),
                        Value::Str(e.action),
                        Value::Str(patterns::params_text(&e.params)),
                        e.statement.into(),
                        Value::Str(e.author),
                        Value::Str(iso_utc(e.at_ms)),
                    ];
                    if !sink(row)? {
                        break;
                    }
                }
                Ok(())
            }
            Plan::DropPattern(name) => {
                self.db.drop_pattern(name, &author())?;
                sink(vec![Value::Str(name.clone()), Value::Bool(true)])?;
                Ok(())
            }
        }
    }

    /// The traces in scope: one named by graph id (or `#N`), or all.
    fn traces(&self, scope: &Option<String>) -> Result<Vec<(TraceId, TraceRecord)>> {
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
    fn resolve(&self, r: &NodeRef, only: Option<TraceId>) -> Result<Vec<(TraceId, StartNode)>> {
        let by_version = |name: &str, version: u32| -> Result<Vec<(TraceId, StartNode)>> {
            Ok(self
                .view
                .versions(name, only)?
                .into_iter()
                .filter(|(_, v, _)| *v == version)
                .map(|(t, _, l)| (t, StartNode::Var(l)))
                .collect())
        };
        let latest = |name: &str| -> Result<Vec<(TraceId, StartNode)>> {
            let mut out: Vec<(TraceId, StartNode)> = Vec::new();
            let mut best: HashMap<TraceId, u32> = HashMap::new();
            for (t, v, l) in self.view.versions(name, only)? {
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
        };
        let op = |id: &str| -> Result<Vec<(TraceId, StartNode)>> {
            Ok(self
                .view
                .string_id(IdKind::Op, id)?
                .into_iter()
                .filter(|(t, _)| only.is_none_or(|o| o == *t))
                .map(|(t, l)| (t, StartNode::Op(l)))
                .collect())
        };
        let found = match r {
            NodeRef::Name {
                full_name,
                version: Some(v),
            } => by_version(full_name, *v)?,
            NodeRef::Name {
                full_name,
                version: None,
            } => {
                let v = latest(full_name)?;
                if v.is_empty() {
                    op(full_name)?
                } else {
                    v
                }
            }
            NodeRef::Quoted(id) => {
                let mut v = match id.rsplit_once('@') {
                    Some((name, ver)) => match ver.parse::<u32>() {
                        Ok(ver) => by_version(name, ver)?,
                        Err(_) => Vec::new(),
                    },
                    None => Vec::new(),
                };
                if v.is_empty() {
                    v = latest(id)?;
                }
                if v.is_empty() {
                    v = op(id)?;
                }
                v
            }
        };
        Ok(found)
    }

    fn traverse(&self, p: &TraversePlan, sink: &mut Sink<'_>) -> Result<()> {
        let only = match &p.scope {
            Some(s) => Some(self.db.trace(s)?.id()),
            None => None,
        };
        // Each start, in each trace that holds it.
        let mut per_trace: Vec<(TraceId, Vec<StartNode>)> = Vec::new();
        for r in &p.starts {
            let found = self.resolve(r, only)?;
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
            let record = self
                .view
                .trace(tid)?
                .ok_or_else(|| EngineError::UnknownTrace(format!("#{tid}")))?;
            let t = TraceCtx::new(self.db, self.view, tid, record);
            let mut emit = |row: Vec<Value>| -> Result<bool> {
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

    /// Walks one trace; returns false when the sink wants no more rows.
    fn traverse_trace(
        &self,
        p: &TraversePlan,
        t: &TraceCtx<'_>,
        starts: &[StartNode],
        emit: &mut dyn FnMut(Vec<Value>) -> Result<bool>,
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
                        if visits.iter().any(|v| v.node == n) || seeds.contains(&n) {
                            continue;
                        }
                        match admit(e, n, 1) {
                            Admit::Skip => continue,
                            a => {
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
                        if !visits.iter().any(|y| y.node == v.node) {
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
            let mut seen: std::collections::HashSet<u32> = visits.iter().map(|v| v.node).collect();
            let only_walk = visits.is_empty();
            visits.reserve(found.len());
            for (v, x) in found {
                if only_walk || seen.insert(v.node) {
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
        visits.retain(|v| !start_nodes.contains(&v.node));
        let visit_row = |v: &Visit| RecRow {
            var: Some(v.node),
            op: g.op(v.edge),
            edge: Some(v.edge),
            ..RecRow::new(t)
        };
        let passes = |row: &dyn Row| -> Result<bool> {
            match &p.filter {
                Some(f) => f.expr.test(row).map_err(qerr),
                None => Ok(true),
            }
        };
        let returned: Vec<&Visit> = visits.iter().filter(|v| v.depth >= p.min_depth).collect();
        match p.output {
            Output::Count => {
                let mut n = 0i64;
                for v in &returned {
                    if passes(&visit_row(v))? {
                        n += 1;
                    }
                }
                emit(vec![t.gid(), Value::Int(n)])
            }
            Output::Nodes => {
                for (i, v) in returned.iter().enumerate() {
                    if i.is_multiple_of(4096) {
                        self.cancel.check()?;
                    }
                    if !passes(&visit_row(v))? {
                        continue;
                    }
                    let via = match g.op(v.edge) {
                        Some(o) => Value::Str(t.op_id(o)?),
                        None => Value::Null,
                    };
                    let row = vec![
                        t.gid(),
                        Value::Str(t.node_id(v.node)?),
                        t.var_field(v.node, &Field::Category)?,
                        Value::from(v.depth),
                        via,
                    ];
                    if !emit(row)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            Output::Paths => {
                let by_node: HashMap<u32, &Visit> = visits.iter().map(|v| (v.node, v)).collect();
                for v in &returned {
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
                            Some(next) if !start_nodes.contains(&cur.parent) => cur = next,
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
                    if !emit(row)? {
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
                    let expands = (start_nodes.contains(&n) || expanded.contains(&n))
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
                        let mut ops: Vec<(u32, u32)> = Vec::new();
                        for &e in &edge_ids {
                            if let Some(o) = g.op(e) {
                                let d = depth_of(e);
                                match ops.iter_mut().find(|(x, _)| *x == o) {
                                    Some((_, md)) => *md = (*md).min(d),
                                    None => ops.push((o, d)),
                                }
                            }
                        }
                        ops.sort_by_key(|(o, d)| (*d, *o));
                        for (o, d) in ops {
                            let row = RecRow {
                                op: Some(o),
                                ..RecRow::new(t)
                            };
                            if !passes(&row)? {
                                continue;
                            }
                            let out = vec![
                                t.gid(),
                                Value::Str(t.op_id(o)?),
                                t.op_field(o, &Field::OpName)?,
                                t.op_field(o, &Field::Category)?,
                                Value::from(d),
                            ];
                            if !emit(out)? {
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
                            if !emit(out)? {
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    }
                    _ => {
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
                            if !emit(out)? {
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
                            if !emit(out)? {
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------ FIND

    fn find(&self, p: &FindPlan, sink: &mut Sink<'_>) -> Result<()> {
        let mut col = Collector::new(&p.projection);
        'traces: for (tid, record) in self.traces(&p.scope)? {
            self.cancel.check()?;
            let t = TraceCtx::new(self.db, self.view, tid, record);
            if let Some(f) = &p.trace_filter {
                if !f.expr.test(&RecRow::new(&t)).map_err(qerr)? {
                    continue;
                }
            }
            let mut offer = |row: &dyn Row, col: &mut Collector<'_>| -> Result<bool> {
                if let Some(f) = &p.filter {
                    if !f.expr.test(row).map_err(qerr)? {
                        return Ok(true);
                    }
                }
                if let Some(out) = col.push(row).map_err(qerr)? {
                    if !sink(out)? {
                        return Ok(false);
                    }
                }
                Ok(!col.done())
            };
            let base = RecRow::new(&t);
            // One row per record of the kind.
            let n: u32 = match p.kind {
                FindKind::Traces => 1,
                FindKind::Vars => t.catalog()?.variables().len() as u32,
                FindKind::Ops => t.ops()?.ops().len() as u32,
                FindKind::Sessions => t.ops()?.sessions().len() as u32,
                FindKind::Edges => t.graph()?.edge_count(),
                FindKind::Cases => {
                    // The trace's annotations, read from the store as JSON...
                    let mut annotated = false;
                    for (i, item) in self.view.cases(tid).enumerate() {
                        let (_, c) = item?;
                        annotated = true;
                        let json: serde_json::Value = serde_json::from_str(&c.json)?;
                        let origin = CaseOrigin::Annotation(i);
                        let row = RecRow {
                            case: Some(CaseRef {
                                json: &json,
                                origin: &origin,
                            }),
                            ..base
                        };
                        if !offer(&row, &mut col)? {
                            break 'traces;
                        }
                    }
                    // ...else its judge ops that scored 0. The whole trace is
                    // read only when it has a judge op at all.
                    let judged = !annotated
                        && t.ops()?.ops().iter().any(|o| {
                            o.op_name
                                .as_deref()
                                .is_some_and(attrib::case::is_judge_name)
                        });
                    if judged {
                        let model = TraceModel::load(&self.db.trace_by_id(tid)?)?;
                        let cases = attrib::case::failed_cases(&model, &[]);
                        model.read_error()?;
                        for c in cases {
                            let json = judge_case_json(&c);
                            let row = RecRow {
                                case: Some(CaseRef {
                                    json: &json,
                                    origin: &c.origin,
                                }),
                                ..base
                            };
                            if !offer(&row, &mut col)? {
                                break 'traces;
                            }
                        }
                    }
                    continue;
                }
                FindKind::Attributions => {
                    for v in attrib::read_verdicts(self.view, tid)? {
                        let row = RecRow {
                            verdict: Some(&v),
                            ..base
                        };
                        if !offer(&row, &mut col)? {
                            break 'traces;
                        }
                    }
                    continue;
                }
            };
            for i in 0..n {
                if i.is_multiple_of(4096) {
                    self.cancel.check()?;
                }
                let row = match p.kind {
                    FindKind::Vars => RecRow {
                        var: Some(i),
                        ..base
                    },
                    FindKind::Ops => RecRow {
                        op: Some(i),
                        ..base
                    },
                    FindKind::Sessions => RecRow {
                        session: Some(i),
                        ..base
                    },
                    FindKind::Edges => RecRow {
                        edge: Some(i),
                        op: t.graph()?.op(i),
                        ..base
                    },
                    FindKind::Traces | FindKind::Cases | FindKind::Attributions => base,
                };
                if !offer(&row, &mut col)? {
                    break 'traces;
                }
            }
        }
        for row in col.finish().map_err(qerr)? {
            if !sink(row)? {
                break;
            }
        }
        Ok(())
    }

    // ----------------------------------------------------------------- MATCH

    fn match_(&self, p: &MatchPlan, sink: &mut Sink<'_>) -> Result<()> {
        let mut col = Collector::new(&p.projection);
        for (tid, record) in self.traces(&p.scope)? {
            self.cancel.check()?;
            let t = TraceCtx::new(self.db, self.view, tid, record);
            let mut binding = vec![UNBOUND; p.vars.len()];
            let mut m = Matcher {
                exec: self,
                t: &t,
                plan: p,
                col: &mut col,
                sink,
                steps: 0,
                stop: false,
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

    // ------------------------------------------------------------- ATTRIBUTE

    /// Attributes the cases, appends the verdicts (as author `query`), and
    /// returns one row per verdict.
    fn attribute(&self, p: &AttributePlan, sink: &mut Sink<'_>) -> Result<()> {
        let method: Method = p.method.parse().map_err(EngineError::BadRequest)?;
        let verdicts = match &p.cases {
            CaseSource::All | CaseSource::Named(_) => {
                let cases: Option<Vec<String>> = match &p.cases {
                    CaseSource::Named(refs) => Some(refs.iter().map(case_reference).collect()),
                    _ => None,
                };
                let req = AttributeRequest {
                    trace: p.scope.as_deref(),
                    cases: cases.as_deref(),
                    method,
                };
                self.db.attribute(&req, self.cancel, &mut |_, _| {})?
            }
            CaseSource::Query { plan, .. } => {
                let picks = match plan.as_ref() {
                    Plan::RunPattern(r) => self.db.pattern_case_picks(self.view, r, self.cancel)?,
                    other => self.case_picks(other)?,
                };
                self.db
                    .attribute_picked(&picks, method, self.cancel, &mut |_, _| {})?
            }
        };
        self.db.store_verdicts(&verdicts, "query")?;
        for v in &verdicts {
            if !sink(verdict_row(v))? {
                break;
            }
        }
        Ok(())
    }

    /// The failed cases a `FIND cases` returns, in its order, each with its
    /// trace (the rows' case keys, [`FindPlan::keep_case_keys`]).
    pub(crate) fn case_picks(&self, plan: &Plan) -> Result<Vec<CasePick>> {
        let Plan::Find(find) = plan else {
            return Err(EngineError::BadRequest(format!(
                "not a subquery of failed cases: {}",
                plan.explain().first().map_or("", String::as_str)
            )));
        };
        let mut keyed = find.clone();
        keyed
            .keep_case_keys()
            .map_err(|why| EngineError::BadRequest(format!("{why}; ATTRIBUTE needs cases")))?;
        let mut picks = Vec::new();
        self.find(&keyed, &mut |row| {
            picks.push(pick_of(&row)?);
            Ok(true)
        })?;
        Ok(picks)
    }

    // -------------------------------------------------------------- DESCRIBE

    fn describe(&self, p: &DescribePlan, sink: &mut Sink<'_>) -> Result<()> {
        let only = match &p.scope {
            Some(s) => Some(self.db.trace(s)?.id()),
            None => None,
        };
        let found = self.resolve(&p.target, only)?;
        if found.is_empty() {
            return Err(match &p.scope {
                Some(s) => EngineError::UnknownNode {
                    trace: s.clone(),
                    reference: p.target.to_string(),
                },
                None => EngineError::BadRequest(format!(
                    "no trace holds a variable or op {} (see FIND vars WHERE var.full_name CONTAINS '...')",
                    p.target
                )),
            });
        }
        for (tid, node) in found {
            let record = self
                .view
                .trace(tid)?
                .ok_or_else(|| EngineError::UnknownTrace(format!("#{tid}")))?;
            let t = TraceCtx::new(self.db, self.view, tid, record);
            let g = t.graph()?;
            // A variable: its incoming edges grouped by edge category. An op:
            // all its edges.
            let (edges, node_id): (Vec<u32>, Value) = match node {
                StartNode::Var(v) => (g.incoming(v).to_vec(), Value::Str(t.node_id(v)?)),
                StartNode::Op(o) => (g.op_edges(o).to_vec(), Value::Null),
            };
            let mut rows = Vec::new();
            for e in edges {
                let cat = t.edge_field(e, &Field::Category)?;
                let o = g.op(e);
                let row = vec![
                    t.gid(),
                    node_id.clone(),
                    cat,
                    match o {
                        Some(o) => Value::Str(t.op_id(o)?),
                        None => Value::Null,
                    },
                    match o {
                        Some(o) => t.op_field(o, &Field::OpName)?,
                        None => Value::Null,
                    },
                    match o {
                        Some(o) => t.op_field(o, &Field::Category)?,
                        None => Value::Null,
                    },
                    t.edge_field(e, &Field::Source)?,
                    t.edge_field(e, &Field::Target)?,
                ];
                rows.push(row);
            }
            // Grouped by edge category, first appearance first.
            let mut order: Vec<Value> = Vec::new();
            for r in &rows {
                if !order.contains(&r[2]) {
                    order.push(r[2].clone());
                }
            }
            rows.sort_by_key(|r| order.iter().position(|c| *c == r[2]).unwrap_or(0));
            for r in rows {
                if !sink(r)? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

struct Matcher<'m, 'a, 's, 'p> {
    exec: &'m Exec<'a>,
    t: &'m TraceCtx<'a>,
    plan: &'m MatchPlan,
    col: &'m mut Collector<'p>,
    sink: &'m mut Sink<'s>,
    steps: u64,
    stop: bool,
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
                let op = self.t.graph()?.op(e);
                let kind = match op {
                    Some(o) => self.t.ops()?.op(o).and_then(|r| r.category.as_deref()),
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
                let n = self.t.catalog()?.variables().len() as u32;
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
                let g = self.t.graph()?;
                let start = binding[*from];
                let forward = *direction == QDir::Forward;
                let next = |e: u32| {
                    if forward {
                        g.target(e)
                    } else {
                        g.source(e)
                    }
                };
                let list = |n: u32| {
                    if forward {
                        g.outgoing(n)
                    } else {
                        g.incoming(n)
                    }
                };
                let saved = binding[*to];
                if *min_hops == 1 && *max_hops == Some(1) {
                    for &e in list(start) {
                        if self.stop {
                            break;
                        }
                        let Some(n) = next(e) else { continue };
                        if *check && n != saved {
                            continue;
                        }
                        if !self.fits_edge(e, edge_constraints)?
                            || !self.fits_node(n, constraints)?
                        {
                            continue;
                        }
                        binding[*to] = n;
                        if let Some(r) = rel {
                            binding[*r] = e;
                        }
                        self.step(i + 1, binding)?;
                    }
                    if let Some(r) = rel {
                        binding[*r] = UNBOUND;
                    }
                } else {
                    // Variable length: every node within min..max hops
                    // (breadth-first, each node once), crossing only fitting edges.
                    let mut dist: HashMap<u32, u32> = HashMap::from([(start, 0)]);
                    let mut frontier = vec![start];
                    let mut reached: Vec<u32> = Vec::new();
                    if *min_hops == 0 {
                        reached.push(start);
                    }
                    let mut d = 0;
                    while !frontier.is_empty() && max_hops.is_none_or(|m| d < m) {
                        d += 1;
                        let mut nextf = Vec::new();
                        for &u in &frontier {
                            for &e in list(u) {
                                self.tick()?;
                                let Some(n) = next(e) else { continue };
                                if dist.contains_key(&n) || !self.fits_edge(e, edge_constraints)? {
                                    continue;
                                }
                                dist.insert(n, d);
                                nextf.push(n);
                                if d >= *min_hops {
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
                        if *check && n != saved {
                            continue;
                        }
                        if !self.fits_node(n, constraints)? {
                            continue;
                        }
                        binding[*to] = n;
                        self.step(i + 1, binding)?;
                    }
                }
                binding[*to] = saved;
            }
        }
        Ok(())
    }
}

impl Database {
    /// Runs one statement and collects its rows.
    ///
    /// ```no_run
    /// let db = memtrace_engine::Database::open("memtrace.db")?;
    /// let r = db.query("TRACE prediction:Q1 DEPTH 3 RETURN nodes")?;
    /// println!("{:?} {} rows", r.columns, r.rows.len());
    /// # Ok::<(), memtrace_engine::EngineError>(())
    /// ```
    pub fn query(&self, text: &str) -> Result<QueryResult> {
        self.query_with(text, &Params::new(), &Cancel::new())
    }

    /// Runs one statement with parameters and a cancellation token, collecting rows.
    pub fn query_with(&self, text: &str, params: &Params, cancel: &Cancel) -> Result<QueryResult> {
        let mut rows = Vec::new();
        let columns = self.query_stream(text, params, cancel, &mut |r| {
            rows.push(r.iter().map(to_json).collect());
            Ok(true)
        })?;
        Ok(QueryResult { columns, rows })
    }

    /// Runs one statement, handing each row to `sink` as soon as it is
    /// known (sorted and grouped results once complete). `sink` returns
    /// `false` to stop early. Returns the column names.
    pub fn query_stream(
        &self,
        text: &str,
        params: &Params,
        cancel: &Cancel,
        sink: &mut Sink<'_>,
    ) -> Result<Vec<String>> {
        let plan = self.prepare(text, params)?;
        self.run_plan(&plan, cancel, sink)
    }

    /// Parses a script: statements separated by `;`, with `--` comments.
    pub fn parse_script(&self, text: &str) -> Result<Vec<Statement>> {
        Ok(memtrace_query::parse_script(text)?)
    }

    /// Plans one statement of a script parsed from `text` (error positions
    /// refer to `text`), binding `params`. An ATTRIBUTE's method is checked
    /// here too, and so is the pattern of an `ATTRIBUTE (RUN PATTERN ...)`:
    /// its hits must be failed cases.
    pub fn plan(&self, stmt: &Statement, params: &Params, text: &str) -> Result<Plan> {
        let mut plan = memtrace_query::plan_text(stmt, params, text)?;
        check_plan(&plan, text)?;
        if let Plan::RunPattern(r) = &mut plan {
            self.resolve_run_plan(r)?;
        }
        self.resolve_case_pattern_in(&mut plan, text)?;
        Ok(plan)
    }

    /// Looks up the pattern of an `ATTRIBUTE (RUN PATTERN ...)` (also under
    /// EXPLAIN) and checks that its hits are cases; a pattern whose hits are
    /// not is an error placed at the subquery in `text`.
    fn resolve_case_pattern_in(&self, plan: &mut Plan, text: &str) -> Result<()> {
        match plan {
            Plan::Explain(inner) => self.resolve_case_pattern_in(inner, text),
            Plan::Attribute(a) => match &mut a.cases {
                CaseSource::Query { plan, at } => match plan.as_mut() {
                    Plan::RunPattern(r) => match self.resolve_case_pattern(r)? {
                        Ok(()) => Ok(()),
                        Err(why) => Err(QueryError::invalid_at(text, *at, why).into()),
                    },
                    _ => Ok(()),
                },
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Parses and plans a statement without running it: syntax, field,
    /// parameter and attribution method errors show here. [`columns_of`] names its result columns.
    pub fn prepare(&self, text: &str, params: &Params) -> Result<Plan> {
        let stmt = memtrace_query::parse_statement(text)?;
        self.plan(&stmt, params, text)
    }

    /// Runs a planned statement; returns the column names.
    pub fn run_plan(
        &self,
        plan: &Plan,
        cancel: &Cancel,
        sink: &mut Sink<'_>,
    ) -> Result<Vec<String>> {
        let view = self.read_view();
        let exec = Exec {
            db: self,
            view: &view,
            cancel,
        };
        exec.run(plan, sink)?;
        Ok(Exec::columns(plan))
    }
}

#[cfg(test)]
mod tests {
    use super::{case_reference, verdict_row};
    use crate::attrib::{ErrorType, Verdict};
    use crate::{Database, ImportOptions, InputFormat, Value};
    use memtrace_query::NodeRef;

    #[test]
    fn attribute_rows_and_case_references_take_the_shapes_asked_for() {
        let mut v = Verdict {
            trace: 3,
            graph_id: "g".into(),
            system: None,
            case: "query:Q1@1".into(),
            query: "Where?".into(),
            error_type: Some(ErrorType::RetrievalError),
            op_id: Some("op-1".into()),
            op_name: Some("search".into()),
            confidence: 0.75,
            reason: "left out".into(),
            chain: Vec::new(),
            method: "evidence".into(),
            version: "1".into(),
            micros: 5,
            model: None,
            cost: None,
        };
        assert_eq!(
            verdict_row(&v),
            [
                Value::Str("g".into()),
                Value::Str("query:Q1@1".into()),
                Value::Str("RetrievalError".into()),
                Value::Str("op-1".into()),
                Value::Str("search".into()),
                Value::Float(0.75),
                Value::Str("left out".into()),
            ]
        );
        assert_eq!(
            verdict_row(&v).len(),
            memtrace_query::attribute_columns().len()
        );
        (v.error_type, v.op_id, v.op_name) = (None, None, None);
        assert_eq!(
            verdict_row(&v)[2..5],
            [Value::Null, Value::Null, Value::Null]
        );
        let name = |full_name: &str, version| NodeRef::Name {
            full_name: full_name.into(),
            version,
        };
        assert_eq!(case_reference(&name("query:Q8", None)), "query:Q8");
        assert_eq!(case_reference(&name("query:Q8", Some(2))), "query:Q8@2");
        assert_eq!(
            case_reference(&NodeRef::Quoted("op-it's".into())),
            "op-it's"
        );
    }

    /// a -> b -> c -> a (ops ab, bc, ca), and x -> a (op xa).
    fn cycle() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("t.db")).unwrap();
        let node = |n: &str| {
            format!(
                r#"{{"name": "{n}", "class_name": "v", "version": 1, "value": "'{n}'", "session_id": "s"}}"#
            )
        };
        let op = |o: &str| {
            format!(r#"{{"op_id": "{o}", "op_name": "{o}", "category": "k", "session_id": "s"}}"#)
        };
        let edge = |id: &str, o: &str, a: &str, b: &str| {
            format!(
                r#"{{"edge_id": "{id}", "op_id": "{o}", "session_id": "s",
                    "source_full_node_id": "v:{a}@1", "target_full_node_id": "v:{b}@1"}}"#
            )
        };
        let text = format!(
            r#"{{"graph_id": "g", "user_id": "u", "project_id": "p", "data": {{
                "sessions": [{{"session_id": "s", "session_name": "s"}}],
                "operations": [{}],
                "nodes": [{}],
                "edges": [{}]}}}}"#,
            ["ab", "bc", "ca", "xa"].map(op).join(","),
            ["a", "b", "c", "x"].map(node).join(","),
            [
                edge("e1", "ab", "a", "b"),
                edge("e2", "bc", "b", "c"),
                edge("e3", "ca", "c", "a"),
                edge("e4", "xa", "x", "a"),
            ]
            .join(",")
        );
        db.import_reader(
            text.as_bytes(),
            InputFormat::Json,
            "t",
            &ImportOptions::default(),
        )
        .unwrap();
        (dir, db)
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
}

/// ATTRIBUTE over the cases of a subquery, run through the query language
/// on generated traces (annotated cases) and on hand-built judged ones.
#[cfg(test)]
mod subquery_tests {
    use std::collections::BTreeSet;

    use serde_json::{json, Value as Json};

    use crate::gen::{generate_trace, GenSpec, System, TraceBuilder};
    use crate::{Database, ImportOptions, InputFormat};

    fn import(db: &Database, doc: &Json) {
        db.import_reader(
            doc.to_string().as_bytes(),
            InputFormat::Json,
            "test",
            &ImportOptions::default(),
        )
        .unwrap();
    }

    /// A trace without annotations: one question per entry, judged by an
    /// `llm-judge` op that scored `score`.
    fn judged(graph_id: &str, questions: &[(&str, &str)]) -> Json {
        let mut b = TraceBuilder::new(graph_id, "u", "judged", json!({}), 19_000);
        b.session("memory_construction", "session", json!({}));
        let m = b.variable(
            Some("message"),
            "D1:1",
            "'Omar: I drive a blue Volvo.'",
            "message",
            None,
            json!({}),
        );
        b.session("memory_evaluation", "session", json!({}));
        for (q, score) in questions {
            let v = |b: &mut TraceBuilder, class: &str, value: &str| {
                b.variable(Some(class), q, value, class, None, json!({}))
            };
            let query = v(&mut b, "query", "'What car does Omar drive?'");
            let pred = v(&mut b, "prediction", "'a red Toyota'");
            b.op(
                "question-answering",
                "evaluation",
                None,
                &[&query, &m],
                &[&pred],
                json!({}),
            );
            let gold = v(&mut b, "golden_answers", "['a blue Volvo']");
            let resp = v(&mut b, "judge_response", "'WRONG'");
            let sc = v(&mut b, "judge_score", score);
            b.op(
                "llm-judge",
                "evaluation",
                None,
                &[&query, &gold, &pred],
                &[&resp, &sc],
                json!({}),
            );
        }
        b.finish()
    }

    /// Two small Mem0 traces, a RAG trace and a judged trace.
    fn db() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("db")).unwrap();
        for (system, seed) in [(System::Mem0, 3), (System::Rag, 3), (System::Mem0, 4)] {
            let spec = GenSpec {
                seed,
                ..GenSpec::small(system)
            };
            import(&db, &generate_trace(&spec, 0).document);
        }
        import(
            &db,
            &judged("judged-1", &[("Q1", "0.0"), ("Q2", "1.0"), ("Q3", "0")]),
        );
        (dir, db)
    }

    fn rows(db: &Database, q: &str) -> Vec<Vec<Json>> {
        db.query(q).unwrap_or_else(|e| panic!("{q}\n{e}")).rows
    }

    /// (trace, case) of rows whose first two columns are those.
    fn pairs(rows: &[Vec<Json>]) -> Vec<(String, String)> {
        rows.iter()
            .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
            .collect()
    }

    /// The stored verdicts: (trace, case, method, author).
    fn stored(db: &Database) -> BTreeSet<(String, String, String, String)> {
        rows(
            db,
            "FIND attributions RETURN trace.id, case, method, author",
        )
        .into_iter()
        .map(|r| {
            let s = |i: usize| r[i].as_str().unwrap().to_string();
            (s(0), s(1), s(2), s(3))
        })
        .collect()
    }

    #[test]
    fn attribute_takes_exactly_the_cases_its_find_returns_each_in_its_own_trace() {
        let (_dir, db) = db();
        let all = pairs(&rows(&db, "FIND cases RETURN trace.id, case.query_id"));
        let sub = "FIND cases WHERE trace.project_id = 'mem0' \
                   RETURN trace.id, case.query_id ORDER BY case.query_id DESC, trace.id LIMIT 5";
        let want = pairs(&rows(&db, sub));
        // Cases of both Mem0 traces, and not every case of either.
        let traces: BTreeSet<&String> = want.iter().map(|(t, _)| t).collect();
        assert_eq!(want.len(), 5, "{want:?}");
        assert_eq!(traces.len(), 2, "{want:?}");
        assert!(all.len() > 10 && all.iter().any(|c| !want.contains(c)));

        let r = db
            .query(&format!("ATTRIBUTE ({sub}) USING evidence"))
            .unwrap();
        assert_eq!(r.columns, memtrace_query::attribute_columns());
        // One verdict per case, in the subquery's order.
        assert_eq!(pairs(&r.rows), want);
        assert!(r.rows.iter().all(|row| row[2].is_string()), "{:?}", r.rows);
        let expect: BTreeSet<_> = want
            .iter()
            .map(|(t, c)| (t.clone(), c.clone(), "evidence".into(), "query".into()))
            .collect();
        assert_eq!(stored(&db), expect);
        // The same verdicts as naming each case in its trace.
        for row in &r.rows {
            let one = db
                .query(&format!(
                    "ATTRIBUTE '{}' IN TRACE '{}' USING evidence",
                    row[1].as_str().unwrap(),
                    row[0].as_str().unwrap()
                ))
                .unwrap();
            assert_eq!(one.rows, vec![row.clone()]);
        }
        // Nothing new was stored by repeating the same findings.
        assert_eq!(stored(&db), expect);
        // An empty subquery attributes nothing, even with an LLM method and no endpoint.
        let r = db
            .query("ATTRIBUTE (FIND cases WHERE trace.project_id = 'nope') USING llm")
            .unwrap();
        assert!(r.rows.is_empty());
    }

    #[test]
    fn judge_cases_are_picked_by_their_judge_op() {
        let (_dir, db) = db();
        let judges = rows(
            &db,
            "FIND cases WHERE case.origin = 'judge' RETURN trace.id, case.query_id, case.judge_op_id",
        );
        assert_eq!(judges.len(), 2, "{judges:?}");
        let r = db
            .query(
                "ATTRIBUTE (FIND cases WHERE case.origin = 'judge' AND case.query_id = 'query:Q3@1') \
                 USING evidence",
            )
            .unwrap();
        assert_eq!(
            pairs(&r.rows),
            [("judged-1".to_string(), "query:Q3@1".to_string())]
        );
        assert_eq!(
            stored(&db),
            [(
                "judged-1".to_string(),
                "query:Q3@1".to_string(),
                "evidence".to_string(),
                "query".to_string()
            )]
            .into()
        );
    }

    #[test]
    fn attribute_takes_the_cases_a_pattern_hits() {
        let (_dir, db) = db();
        // The built-in patterns of the evidence: their hits are cases.
        let mut attributed = 0;
        for (name, ty) in [
            ("evidence_never_stored", "ExtractionError"),
            ("stored_then_overwritten", "UpdateError"),
            ("stored_not_retrieved", "RetrievalError"),
        ] {
            let run = format!("RUN PATTERN {name} OVER TRACES WHERE trace.project_id = 'mem0'");
            let hits = pairs(&rows(&db, &run));
            let r = db
                .query(&format!("ATTRIBUTE ({run}) USING evidence"))
                .unwrap();
            assert_eq!(pairs(&r.rows), hits, "{name}");
            assert!(r.rows.iter().all(|row| row[2] == ty), "{name}");
            attributed += hits.len();
        }
        assert!(attributed > 0);
        assert_eq!(stored(&db).len(), attributed);

        // A saved FIND cases: its LIMIT applies in each trace.
        rows(
            &db,
            "SAVE PATTERN first_two AS FIND cases ORDER BY case.query_id LIMIT 2",
        );
        // Each hit: the trace, then the saved FIND's columns (trace, query_id, ...).
        let hits: Vec<(String, String)> = rows(
            &db,
            "RUN PATTERN first_two OVER TRACES WHERE trace.project_id IN ['rag', 'judged']",
        )
        .iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[2].as_str().unwrap().into()))
        .collect();
        assert_eq!(hits.len(), 4, "{hits:?}");
        let r = db
            .query(
                "ATTRIBUTE (RUN PATTERN first_two OVER TRACES WHERE \
                 trace.project_id IN ['rag', 'judged']) USING evidence",
            )
            .unwrap();
        assert_eq!(pairs(&r.rows), hits);
        // EXPLAIN shows the saved statement under the pattern.
        let plan: Vec<String> = rows(
            &db,
            "EXPLAIN ATTRIBUTE (RUN PATTERN first_two) USING evidence",
        )
        .into_iter()
        .map(|r| r[0].as_str().unwrap().to_string())
        .collect();
        assert_eq!(
            plan[3..],
            [
                "      └─ The failed cases the pattern's hits name, each once, in trace order",
                "         └─ Run pattern first_two over every trace",
                "            └─ Limit 2",
                "               └─ Sort by case.query_id",
                "                  └─ Project trace, query_id, query, prediction, error_type, op_id",
                "                     └─ Scan cases of each trace (its annotations, else its llm-judge ops that scored 0)",
                "                        └─ Every trace",
            ]
        );
    }

    #[test]
    fn a_pattern_whose_hits_are_not_cases_is_refused_when_planned() {
        let (_dir, db) = db();
        rows(
            &db,
            "SAVE PATTERN judge_ops AS FIND ops WHERE op.name = 'llm-judge'",
        );
        rows(
            &db,
            "SAVE PATTERN per_trace AS FIND cases GROUP BY trace.id",
        );
        rows(&db, "SAVE PATTERN walk AS TRACE prediction:Q1 DEPTH 1");
        let err = |q: &str| {
            db.prepare(q, &crate::Params::new())
                .unwrap_err()
                .to_string()
        };
        let e = err("ATTRIBUTE (RUN PATTERN judge_ops) USING evidence");
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 12: pattern judge_ops: FIND ops returns ops, \
                 not failed cases; ATTRIBUTE needs one failed case per hit: the built-in patterns \
                 evidence_never_stored, stored_then_overwritten, evidence_deleted, \
                 stored_not_retrieved, retrieved_answered_wrong, or a saved FIND cases without \
                 GROUP BY, aggregates or DISTINCT\n  ATTRIBUTE (RUN PATTERN judge_ops) USING evidence\n             ^"
            ),
            "{e}"
        );
        let e = err("EXPLAIN ATTRIBUTE (RUN PATTERN per_trace) USING evidence");
        assert!(
            e.contains("column 20: pattern per_trace: its rows are groups"),
            "{e}"
        );
        let e = err("ATTRIBUTE (RUN PATTERN walk) USING evidence");
        assert!(
            e.contains("the hits of pattern walk are the rows of a traversal, not failed cases"),
            "{e}"
        );
        let e = err("ATTRIBUTE (RUN PATTERN noop_update) USING evidence");
        assert!(
            e.contains(
                "the hits of built-in pattern noop_update (op_id, op_name, var, previous, bytes) \
                 are not failed cases"
            ),
            "{e}"
        );
        let e = err("ATTRIBUTE (RUN PATTERN nope) USING evidence");
        assert!(e.contains("no pattern nope"), "{e}");
        let e = err("ATTRIBUTE (RUN PATTERN evidence_deleted WITH $k = 1) USING evidence");
        assert!(e.contains("has no parameter $k"), "{e}");
        // Nothing was attributed.
        assert!(rows(&db, "FIND attributions").is_empty());
    }
}
