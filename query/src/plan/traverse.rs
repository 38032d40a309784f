//! TRACE and FORWARD: traversals from one or more starts.

use crate::ast::{Depth, Expr, Output, Traverse};

use super::fields::Subject;
use super::planner::{Planner, Result, Scope};
use super::types::TraversePlan;

/// The columns a traversal returns.
pub fn traverse_columns(output: Output) -> Vec<String> {
    let cols: &[&str] = match output {
        Output::Nodes => &["trace", "node", "category", "depth", "via_op"],
        Output::Ops => &["trace", "op_id", "op_name", "kind", "depth"],
        Output::Edges => &["trace", "edge_id", "source", "target", "op_id", "category"],
        Output::Subgraph => &["trace", "element", "id", "source", "target", "op_id"],
        Output::Paths => &["trace", "node", "depth", "path"],
        Output::Count => &["trace", "count"],
    };
    cols.iter().map(|s| s.to_string()).collect()
}

impl Planner<'_> {
    pub(super) fn traverse(&self, t: &Traverse) -> Result<TraversePlan> {
        let scope = Scope {
            subjects: &[
                Subject::Var,
                Subject::Op,
                Subject::Edge,
                Subject::Session,
                Subject::Trace,
            ],
            vars: &[],
            aggregates: false,
            bare: None,
        };
        let pred = |e: &Option<Expr>| e.as_ref().map(|e| self.pred(e, &scope)).transpose();
        let (min_depth, max_depth) = match t.depth {
            None => (1, None),
            Some(Depth::Max(n)) => (1, Some(n)),
            Some(Depth::Range(m, n)) => (m.max(1), Some(n)),
        };
        let output = t.output.unwrap_or(Output::Nodes);
        Ok(TraversePlan {
            direction: t.direction,
            starts: t
                .starts
                .iter()
                .map(|s| self.start(s))
                .collect::<Result<_>>()?,
            scope: self.in_trace(&t.in_trace)?,
            min_depth,
            max_depth,
            until: pred(&t.until)?,
            while_: pred(&t.while_)?,
            filter: pred(&t.filter)?,
            output,
            limit: self.count_arg(&t.limit)?,
            columns: traverse_columns(output),
        })
    }
}
