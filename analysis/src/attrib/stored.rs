//! Verdicts as stored: appended to their trace after import with who made
//! them and when, and read back oldest first.

use serde::{Deserialize, Serialize};

use super::verdict::Verdict;
use crate::error::{AnalysisError, Result};
use memtrace_engine::{Engine, Snapshot};

/// A verdict as stored: appended after import, with who made it and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredVerdict {
    /// Its place among the trace's stored verdicts, from 1.
    #[serde(skip)]
    pub seq: u64,
    /// When it was stored, in milliseconds since the Unix epoch.
    #[serde(skip)]
    pub at_ms: u64,
    /// Who stored it (the user, or the tool).
    pub author: String,
    /// The verdict. (Not flattened: serde's flatten loses numbers with
    /// serde_json's arbitrary precision.)
    pub verdict: Verdict,
}

/// The stored verdicts of the trace with this id, oldest first.
pub(crate) fn stored_verdicts(db: &Engine, trace: u32) -> Result<Vec<StoredVerdict>> {
    read_verdicts(&db.snapshot(), trace)
}

/// The stored verdicts of one trace as `snapshot` sees them, oldest first.
pub(crate) fn read_verdicts(snapshot: &Snapshot<'_>, trace: u32) -> Result<Vec<StoredVerdict>> {
    snapshot
        .trace_results(trace)?
        .into_iter()
        .map(|rec| {
            let seq = rec.seq;
            let mut s: StoredVerdict = serde_json::from_str(&rec.json).map_err(|e| {
                AnalysisError::StoredVerdictUnreadable {
                    trace,
                    seq,
                    reason: e.to_string(),
                }
            })?;
            s.seq = seq;
            s.at_ms = rec.at_ms;
            // A verdict moved from a trace this one superseded names the
            // trace it was made on; it belongs to the one that holds it now.
            s.verdict.trace = trace;
            Ok(s)
        })
        .collect()
}
