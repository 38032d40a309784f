//! What the engine and its extensions exchange: failed cases by where they
//! come from ([`CaseOrigin`], [`CasePick`]), the cases an extension finds in
//! a trace's records ([`DerivedCase`]), rows of stored results
//! ([`ResultRow`]), and which statements extensions run
//! ([`statement_name`]). The extension point itself, the
//! [`Extension`](crate::Extension) trait, is with the database it plugs
//! into.

use memtrace_query::{Field, Plan, Value};
use memtrace_storage::TraceId;

/// Where a failed case comes from: an annotation stored with the trace (by
/// its position among the trace's annotations), or an op of the trace that
/// records it (by op id, e.g. a judge op that scored 0).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseOrigin {
    /// A MemTraceBench annotation (its position in `data.annotations`, from 0).
    Annotation(usize),
    /// The op that records the case (an `llm-judge` op that scored 0), by op id.
    Judge(String),
}

/// A failed case picked out by where it is: its trace and its origin there
/// (which annotation, or which judge op). The rows of a query's
/// `FIND cases` and the hits of the evidence patterns name cases this way.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CasePick {
    /// The trace.
    pub trace: TraceId,
    /// The case's origin in that trace.
    pub origin: CaseOrigin,
}

/// A case that an extension finds in a trace's own records: its fields under
/// the keys a MemTraceBench annotation uses (`query_id`, `query`,
/// `golden_answers`, `prediction`, `source_evidence_ids`, ...), and where it
/// comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedCase {
    /// The case's fields as a JSON object.
    pub fields: serde_json::Value,
    /// The op that records it.
    pub origin: CaseOrigin,
}

/// A row of stored results, as `FIND attributions` reads it.
pub trait ResultRow: Send {
    /// The value of a field (`attribution.<field>`); `Null` when the row has none.
    fn field(&self, field: &Field) -> Value;
}

/// The name under which a planned statement is run by an extension, or
/// `None` for the statements the engine runs itself. An `EXPLAIN` is named
/// by the statement it explains.
pub fn statement_name(plan: &Plan) -> Option<&'static str> {
    match plan {
        Plan::Attribute(_) => Some("ATTRIBUTE"),
        Plan::SavePattern(_) => Some("SAVE PATTERN"),
        Plan::RunPattern(_) => Some("RUN PATTERN"),
        Plan::ShowPatterns => Some("SHOW PATTERNS"),
        Plan::ShowPatternHistory(_) => Some("SHOW PATTERN HISTORY"),
        Plan::DropPattern(_) => Some("DROP PATTERN"),
        Plan::Explain(inner) => statement_name(inner),
        Plan::Traverse(_)
        | Plan::Find(_)
        | Plan::Match(_)
        | Plan::Describe(_)
        | Plan::ShowTraces => None,
    }
}
