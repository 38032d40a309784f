//! The evidence-flow findings the patterns read: one verdict per failed case
//! of a trace, attributed once and kept in the trace cache.

use std::sync::Arc;

use crate::attrib::{self, CaseOrigin, ErrorType};
use crate::error::{AnalysisError, Result};
use memtrace_engine::{Cancel, Database, Snapshot, TraceId, TraceState};

/// The evidence-flow verdict on one failed case, as the patterns read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The case's name.
    pub case: String,
    /// Where the case comes from in its trace (which annotation or judge op).
    pub origin: CaseOrigin,
    /// The question.
    pub query: String,
    /// The error type; `None` without a verdict.
    pub error_type: Option<ErrorType>,
    /// The faulty op.
    pub op_id: Option<String>,
    /// Its name.
    pub op_name: Option<String>,
    /// How sure the verdict is, 0 to 1.
    pub confidence: f64,
    /// Why.
    pub reason: String,
}

/// The evidence-flow findings of one trace's failed cases (cached per trace:
/// a trace never changes, so neither do they).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceFindings {
    /// One per failed case, in case order.
    pub findings: Vec<Finding>,
    bytes: usize,
}

impl TraceState for TraceFindings {
    fn bytes(&self) -> usize {
        self.bytes
    }
}

impl TraceFindings {
    /// Reads a trace whole and attributes each of its failed cases.
    pub(crate) fn load(db: &Database, trace: TraceId, cancel: &Cancel) -> Result<TraceFindings> {
        let view = db.trace_by_id(trace)?;
        let (model, cases) = attrib::trace_cases(&view)?;
        let verdicts = attrib::attribute_trace(&model, &cases, 0, cancel)?;
        if verdicts.len() != cases.len() {
            return Err(AnalysisError::BadRequest(format!(
                "trace {}: {} evidence-flow verdict(s) for {} failed case(s)",
                model.info.graph_id,
                verdicts.len(),
                cases.len()
            )));
        }
        let findings: Vec<Finding> = verdicts
            .into_iter()
            .zip(cases)
            .map(|(v, c)| Finding {
                case: v.case,
                origin: c.origin,
                query: v.query,
                error_type: v.error_type,
                op_id: v.op_id,
                op_name: v.op_name,
                confidence: v.confidence,
                reason: v.reason,
            })
            .collect();
        let bytes = std::mem::size_of::<TraceFindings>()
            + findings
                .iter()
                .map(|f| {
                    std::mem::size_of::<Finding>()
                        + f.case.len()
                        + f.query.len()
                        + f.reason.len()
                        + f.op_id.as_ref().map_or(0, String::len)
                        + f.op_name.as_ref().map_or(0, String::len)
                })
                .sum::<usize>();
        Ok(TraceFindings { findings, bytes })
    }

    /// Approximate heap bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// A trace's findings from the trace cache, or loaded and cached.
    pub(crate) fn cached(
        view: &Snapshot<'_>,
        trace: TraceId,
        cancel: &Cancel,
    ) -> Result<Arc<TraceFindings>> {
        view.trace_state(trace, || {
            TraceFindings::load(view.database(), trace, cancel)
        })
    }
}
