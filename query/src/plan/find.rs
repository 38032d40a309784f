//! FIND: the records listed, the conditions checked before a trace is read,
//! and the columns returned without RETURN.

use crate::ast::{CallArg, Expr, FieldPath, Find, FindKind, ReturnItem, Returns, Span};

use super::exprs::{conjuncts, only_subject};
use super::fields::Subject;
use super::planner::{Planner, Result, Scope};
use super::types::FindPlan;

impl Planner<'_> {
    pub(super) fn find(&self, f: &Find) -> Result<FindPlan> {
        use Subject::*;
        let subjects: &[Subject] = match f.kind {
            FindKind::Vars => &[Var, Session, Trace],
            FindKind::Ops => &[Op, Session, Trace],
            FindKind::Edges => &[Edge, Op, Source, Target, Session, Trace],
            FindKind::Sessions => &[Session, Trace],
            FindKind::Traces => &[Trace],
            FindKind::Cases => &[Case, Trace],
            FindKind::Attributions => &[Attribution, Trace],
        };
        let scope = Scope {
            subjects,
            vars: &[],
            aggregates: true,
            // The listed records' fields may be written bare.
            bare: Some(subjects[0]),
        };
        let filter_scope = Scope {
            aggregates: false,
            ..scope
        };
        // Conditions on the trace alone are checked before the trace is read.
        let (trace_only, rest): (Vec<Expr>, Vec<Expr>) = match &f.filter {
            None => (Vec::new(), Vec::new()),
            Some(e) => conjuncts(e)
                .into_iter()
                .partition(|c| only_subject(c, "trace") && f.kind != FindKind::Traces),
        };
        let join = |v: Vec<Expr>| match v.len() {
            0 => None,
            1 => v.into_iter().next(),
            _ => Some(Expr::And(v)),
        };
        let trace_filter = join(trace_only)
            .map(|e| self.pred(&e, &filter_scope))
            .transpose()?;
        let filter = join(rest)
            .map(|e| self.pred(&e, &filter_scope))
            .transpose()?;
        let returns = match &f.returns {
            Some(r) => r.clone(),
            None => default_returns(f.kind, &f.group_by),
        };
        let projection =
            self.projection(&returns, &f.group_by, &f.order_by, &f.limit, &scope, None)?;
        Ok(FindPlan {
            kind: f.kind,
            scope: self.in_trace(&f.in_trace)?,
            trace_filter,
            filter,
            projection,
        })
    }
}

fn field(parts: &[&str]) -> Expr {
    Expr::Field(FieldPath {
        parts: parts.iter().map(|s| s.to_string()).collect(),
        span: Span::default(),
    })
}

fn item(parts: &[&str], alias: &str) -> ReturnItem {
    ReturnItem {
        expr: field(parts),
        alias: Some(alias.to_string()),
    }
}

/// The columns a FIND returns without RETURN.
fn default_returns(kind: FindKind, group_by: &[Expr]) -> Returns {
    let items = if !group_by.is_empty() {
        let mut v: Vec<ReturnItem> = group_by
            .iter()
            .map(|e| ReturnItem {
                expr: e.clone(),
                alias: None,
            })
            .collect();
        v.push(ReturnItem {
            expr: Expr::Call {
                name: "count".into(),
                arg: CallArg::Star,
                span: Span::default(),
            },
            alias: None,
        });
        v
    } else {
        match kind {
            FindKind::Vars => vec![
                item(&["trace", "id"], "trace"),
                item(&["var", "node_id"], "node"),
                item(&["var", "category"], "category"),
                item(&["var", "session"], "session"),
            ],
            FindKind::Ops => vec![
                item(&["trace", "id"], "trace"),
                item(&["op", "id"], "op_id"),
                item(&["op", "name"], "op_name"),
                item(&["op", "kind"], "kind"),
                item(&["op", "session"], "session"),
            ],
            FindKind::Edges => vec![
                item(&["trace", "id"], "trace"),
                item(&["edge", "id"], "edge_id"),
                item(&["edge", "source"], "source"),
                item(&["edge", "target"], "target"),
                item(&["edge", "op"], "op_id"),
                item(&["edge", "category"], "category"),
            ],
            FindKind::Sessions => vec![
                item(&["trace", "id"], "trace"),
                item(&["session", "id"], "session"),
                item(&["session", "name"], "name"),
                item(&["session", "category"], "category"),
            ],
            FindKind::Traces => vec![
                item(&["trace", "id"], "trace"),
                item(&["trace", "user_id"], "user_id"),
                item(&["trace", "project_id"], "project_id"),
                item(&["trace", "created_at"], "created_at"),
            ],
            FindKind::Cases => vec![
                item(&["trace", "id"], "trace"),
                item(&["case", "query_id"], "query_id"),
                item(&["case", "query"], "query"),
                item(&["case", "prediction"], "prediction"),
                item(&["case", "error_type"], "error_type"),
                item(&["case", "op_id"], "op_id"),
            ],
            FindKind::Attributions => vec![
                item(&["trace", "id"], "trace"),
                item(&["attribution", "case"], "case"),
                item(&["attribution", "error_type"], "error_type"),
                item(&["attribution", "op_id"], "op_id"),
                item(&["attribution", "op_name"], "op_name"),
                item(&["attribution", "confidence"], "confidence"),
                item(&["attribution", "method"], "method"),
                item(&["attribution", "at"], "at"),
            ],
        }
    };
    Returns {
        distinct: false,
        items,
    }
}
