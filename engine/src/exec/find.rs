//! FIND: a row per record of a kind (traces, variables, ops, sessions,
//! edges, cases, stored results) that passes the statement's conditions,
//! and the failed cases that a `FIND cases` picks.

use memtrace_query::ast::FindKind;
use memtrace_query::plan::FindPlan;
use memtrace_query::{Collector, Plan, Row, Value};
use memtrace_storage::TraceId;

use super::ctx::TraceCtx;
use super::row::{CaseRef, RecRow};
use super::run::{qerr, Exec};
use super::value::Sink;
use crate::db::Call;
use crate::error::{EngineError, Result};
use crate::extension::{CaseOrigin, CasePick};

/// The case a row of a keyed `FIND cases` came from: its last two values
/// are the trace's and the case's
/// [`Field::Key`](memtrace_query::Field::Key).
fn pick_of(row: &[Value]) -> Result<CasePick> {
    let bad = || EngineError::NotCaseRow {
        row: format!("{row:?}"),
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

impl<'a> Exec<'a> {
    pub(super) fn find(&self, p: &FindPlan, sink: &mut Sink<'_>) -> Result<()> {
        let mut col = Collector::new(&p.projection);
        for (tid, record) in self.traces(&p.scope)? {
            self.cancel.check()?;
            let t = TraceCtx::new(self.db, self.view, tid, record).until(self.cancel);
            if let Some(f) = &p.trace_filter {
                if !f.expr.test(&RecRow::new(&t)).map_err(qerr)? {
                    continue;
                }
            }
            let mut offer = |row: &dyn Row| -> Result<bool> {
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
            let wanted = match p.kind {
                FindKind::Cases => self.case_rows(&t, tid, &mut offer)?,
                FindKind::Attributions => self.attribution_rows(&t, tid, &mut offer)?,
                kind => self.record_rows(kind, &t, &mut offer)?,
            };
            if !wanted {
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

    /// One row per record of `kind` in trace `t`, each handed to `offer`;
    /// false once it wants no more.
    fn record_rows(
        &self,
        kind: FindKind,
        t: &TraceCtx<'_>,
        offer: &mut dyn FnMut(&dyn Row) -> Result<bool>,
    ) -> Result<bool> {
        let base = RecRow::new(t);
        let n: u32 = match kind {
            FindKind::Vars => t.var_count(),
            FindKind::Ops => t.op_count(),
            FindKind::Sessions => t.session_count(),
            FindKind::Edges => t.graph()?.edge_count(),
            FindKind::Traces | FindKind::Cases | FindKind::Attributions => 1,
        };
        for i in 0..n {
            if i.is_multiple_of(4096) {
                self.cancel.check()?;
            }
            let row = match kind {
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
            if !offer(&row)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The rows of trace `t`'s failed cases, each handed to `offer`: its
    /// annotations as stored, else the cases its own ops record, as an
    /// extension finds them. False once `offer` wants no more.
    fn case_rows(
        &self,
        t: &TraceCtx<'_>,
        tid: TraceId,
        offer: &mut dyn FnMut(&dyn Row) -> Result<bool>,
    ) -> Result<bool> {
        let base = RecRow::new(t);
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
            if !offer(&row)? {
                return Ok(false);
            }
        }
        if annotated {
            return Ok(true);
        }
        // The whole trace is read only for an extension that may find
        // cases there.
        let call = Call {
            snapshot: self.snapshot,
            cancel: self.cancel,
        };
        for ext in self.db.extensions().iter() {
            let ops = t.ops()?;
            let mut names = ops.ops().iter().filter_map(|o| o.op_name.as_deref());
            if !ext.may_derive_cases(&mut names) {
                continue;
            }
            for c in ext.derived_cases(&call, tid)? {
                let row = RecRow {
                    case: Some(CaseRef {
                        json: &c.fields,
                        origin: &c.origin,
                    }),
                    ..base
                };
                if !offer(&row)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The rows of trace `t`'s stored results, as the extensions give
    /// them, each handed to `offer`; false once it wants no more.
    fn attribution_rows(
        &self,
        t: &TraceCtx<'_>,
        tid: TraceId,
        offer: &mut dyn FnMut(&dyn Row) -> Result<bool>,
    ) -> Result<bool> {
        let base = RecRow::new(t);
        let call = Call {
            snapshot: self.snapshot,
            cancel: self.cancel,
        };
        for ext in self.db.extensions().iter() {
            for v in ext.result_rows(&call, tid)? {
                let row = RecRow {
                    verdict: Some(v.as_ref()),
                    ..base
                };
                if !offer(&row)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The failed cases a `FIND cases` returns, in its order, each with its
    /// trace (the rows' case keys, [`FindPlan::keep_case_keys`]).
    pub(super) fn case_picks(&self, plan: &Plan) -> Result<Vec<CasePick>> {
        let Plan::Find(find) = plan else {
            return Err(EngineError::NotCaseSubquery {
                statement: plan.explain().first().cloned().unwrap_or_default(),
            });
        };
        let mut keyed = find.clone();
        keyed
            .keep_case_keys()
            .map_err(|reason| EngineError::CasesNeeded { reason })?;
        let mut picks = Vec::new();
        self.find(&keyed, &mut |row| {
            picks.push(pick_of(&row)?);
            Ok(true)
        })?;
        Ok(picks)
    }
}
