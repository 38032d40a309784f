//! The rows that a query's conditions and projections read: records of one
//! trace ([`RecRow`]) and MATCH bindings ([`MatchRow`]).

use memtrace_query::plan::{PatternVar, VarKind};
use memtrace_query::{Field, QueryError, Row, Subject, Value};

use super::ctx::TraceCtx;
use super::value::from_json;
use crate::error::Result;
use crate::extension::{CaseOrigin, ResultRow};

/// A failed case as a row sees it: its fields as a JSON object (a stored
/// annotation, or one made from a judge op that scored 0) and its origin.
#[derive(Clone, Copy)]
pub(super) struct CaseRef<'r> {
    pub(super) json: &'r serde_json::Value,
    pub(super) origin: &'r CaseOrigin,
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

/// A case's origin as its [`Field::Key`]: the position of its annotation,
/// or the id of its judge op.
fn origin_key(origin: &CaseOrigin) -> Value {
    match origin {
        CaseOrigin::Annotation(i) => i64::try_from(*i).map_or(Value::Null, Value::Int),
        CaseOrigin::Judge(op) => Value::Str(op.clone()),
    }
}

/// A row of records of one trace: any of a variable, op, edge, session,
/// case, stored verdict.
#[derive(Clone, Copy)]
pub(super) struct RecRow<'r, 'a> {
    pub(super) t: &'r TraceCtx<'a>,
    pub(super) var: Option<u32>,
    pub(super) op: Option<u32>,
    pub(super) edge: Option<u32>,
    pub(super) session: Option<u32>,
    pub(super) case: Option<CaseRef<'r>>,
    pub(super) verdict: Option<&'r dyn ResultRow>,
}

impl<'r, 'a> RecRow<'r, 'a> {
    pub(super) fn new(t: &'r TraceCtx<'a>) -> Self {
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
                Subject::Attribution => self.verdict.map_or(Value::Null, |v| v.field(f)),
                Subject::Bound(_) => Value::Null,
            })
        })();
        r.map_err(|e| QueryError::Other(e.to_string()))
    }

    fn stopped(&self) -> bool {
        self.t.stopped()
    }
}

/// A MATCH binding: one local id per pattern variable.
pub(super) struct MatchRow<'r, 'a> {
    pub(super) t: &'r TraceCtx<'a>,
    pub(super) vars: &'r [PatternVar],
    pub(super) binding: &'r [u32],
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

    fn stopped(&self) -> bool {
        self.t.stopped()
    }
}

/// The binding of a pattern variable that is not bound (yet).
pub(super) const UNBOUND: u32 = u32::MAX;
