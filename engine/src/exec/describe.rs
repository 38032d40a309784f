//! DESCRIBE: the edges of a variable (those into it) or of an op, with
//! their ops and ends, grouped by edge category.

use memtrace_query::plan::DescribePlan;
use memtrace_query::{Field, Value};

use super::ctx::TraceCtx;
use super::run::{Exec, StartNode};
use super::value::Sink;
use crate::error::{EngineError, Result};

impl<'a> Exec<'a> {
    pub(super) fn describe(&self, p: &DescribePlan, sink: &mut Sink<'_>) -> Result<()> {
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
                None => EngineError::NoTraceHolds {
                    reference: p.target.to_string(),
                },
            });
        }
        for (tid, node) in found {
            let record = self
                .view
                .trace(tid)?
                .ok_or_else(|| EngineError::UnknownTrace(format!("#{tid}")))?;
            let t = TraceCtx::new(self.db, self.view, tid, record).until(self.cancel);
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
