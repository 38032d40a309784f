//! TRACE and FORWARD: walks from the start nodes along the cached
//! adjacency, and the rows of each output (nodes, paths, a count, the ops,
//! edges or subgraph walked).
//!
//! A walk of the common kind is done while walking (`plain`, its op levels
//! held for batches in `held`); any other gathers its visits first and then
//! makes the rows of its output (`general`). Both build rows with `rows`.

mod general;
mod held;
mod plain;
mod rows;

#[cfg(test)]
mod tests;

use memtrace_query::plan::TraversePlan;
use memtrace_storage::TraceId;

use super::ctx::TraceCtx;
use super::run::{Exec, StartNode};
use super::value::{Cell, CellFn};
use crate::error::{EngineError, Result};

impl Exec<'_> {
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
                    None => EngineError::NoTraceHolds {
                        reference: r.to_string(),
                    },
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
}
