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

impl<'a> Exec<'a> {
    pub(super) fn find(&self, p: &FindPlan, sink: &mut Sink<'_>) -> Result<()> {
        let mut col = Collector::new(&p.projection);
        'traces: for (tid, record) in self.traces(&p.scope)? {
            self.cancel.check()?;
            let t = TraceCtx::new(self.db, self.view, tid, record).until(self.cancel);
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
                FindKind::Vars => t.var_count(),
                FindKind::Ops => t.op_count(),
                FindKind::Sessions => t.session_count(),
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
                    // ...else the cases its own ops record, as an extension
                    // finds them. The whole trace is read only for an
                    // extension that may find some there.
                    if !annotated {
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
                                if !offer(&row, &mut col)? {
                                    break 'traces;
                                }
                            }
                        }
                    }
                    continue;
                }
                FindKind::Attributions => {
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
                            if !offer(&row, &mut col)? {
                                break 'traces;
                            }
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

    /// The failed cases a `FIND cases` returns, in its order, each with its
    /// trace (the rows' case keys, [`FindPlan::keep_case_keys`]).
    pub(super) fn case_picks(&self, plan: &Plan) -> Result<Vec<CasePick>> {
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
}
