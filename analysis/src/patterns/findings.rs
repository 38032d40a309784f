//! The evidence-flow findings the patterns read: one verdict per failed case
//! of a trace, attributed once, stored in the database (keyed by the trace
//! and the attributor's fingerprint, so a later run, in any process, reads
//! them instead of attributing again) and kept in the trace cache.

use std::sync::Arc;

use crate::attrib::{self, CaseOrigin, ErrorType};
use crate::error::{AnalysisError, Result};
use memtrace_engine::{Cancel, Engine, Snapshot, TraceId, TraceInfo, TraceState};

/// Where a trace's findings are stored: a hash of what they depend on, the
/// attributor's fingerprint and the trace (ids are never reused, and a
/// stored trace never changes; the import time tells a trace apart from one
/// imported under the same id into another database).
pub(crate) fn memo_key(info: &TraceInfo) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"memtrace evidence-flow findings\0");
    h.update(&attrib::ATTRIBUTOR_DIGEST.to_le_bytes());
    h.update(&info.id.to_le_bytes());
    h.update(info.graph_id.as_bytes());
    h.update(b"\0");
    h.update(&info.imported_at_ms.to_le_bytes());
    h.finalize().into()
}

/// The evidence-flow verdict on one failed case, as the patterns read it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The stored findings of a trace, or, where none are stored for this
    /// attributor, the trace read whole, each failed case attributed, and
    /// the findings stored.
    pub(crate) fn load(db: &Engine, trace: TraceId, cancel: &Cancel) -> Result<TraceFindings> {
        let view = db.trace_by_id(trace)?;
        let key = memo_key(&view.info());
        if let Some(body) = db.memo(&key)? {
            // A memo that does not read back (damaged) is recomputed.
            if let Ok(findings) = serde_json::from_slice::<Vec<Finding>>(&body) {
                return Ok(TraceFindings::new(findings));
            }
        }
        let (model, cases) = attrib::trace_cases(&view)?;
        let verdicts = attrib::attribute_trace(&model, &cases, 0, cancel, None)?;
        if verdicts.len() != cases.len() {
            return Err(AnalysisError::VerdictsPerTrace {
                trace: model.info.graph_id.clone(),
                verdicts: verdicts.len(),
                cases: cases.len(),
            });
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
        // A reader computes them for itself; the next writer stores them.
        if !db.is_read_only() {
            db.put_memo(&key, &serde_json::to_vec(&findings)?)?;
        }
        Ok(TraceFindings::new(findings))
    }

    fn new(findings: Vec<Finding>) -> TraceFindings {
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
        TraceFindings { findings, bytes }
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
