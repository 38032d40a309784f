//! The typed records the embedding API returns.

use serde::Serialize;
use serde_json::Value;

use memtrace_storage::records::{Common, Counts, TraceRecord};
use memtrace_storage::{LocalId, TraceId};

/// A stored trace (one smartcomment graph).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TraceInfo {
    /// Dense trace id (shown as `#id`).
    pub id: TraceId,
    /// smartcomment's `graph_id`.
    pub graph_id: String,
    /// `user_id`.
    pub user_id: Option<String>,
    /// `project_id` (the memory system in MemTraceBench).
    pub project_id: Option<String>,
    /// `created_at` as written.
    pub created_at: Option<String>,
    /// Record counts.
    pub counts: Counts,
    /// Where it was imported from.
    pub source: String,
    /// Bytes of JSON it came from.
    pub source_bytes: u64,
    /// Detected format (`smartcomment`, `memtracebench`).
    pub format: String,
    /// Import time, ms since the Unix epoch.
    pub imported_at_ms: u64,
}

impl TraceInfo {
    pub(crate) fn from_record(id: TraceId, r: TraceRecord) -> TraceInfo {
        TraceInfo {
            id,
            graph_id: r.graph_id,
            user_id: r.user_id,
            project_id: r.project_id,
            created_at: r.created_at,
            counts: r.counts,
            source: r.source,
            source_bytes: r.source_bytes,
            format: r.format,
            imported_at_ms: r.imported_at_ms,
        }
    }
}

pub(crate) fn metadata(c: &Common) -> Value {
    c.metadata
        .as_deref()
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_else(|| Value::Object(Default::default()))
}

/// A session of a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    /// Local id within the trace.
    pub id: LocalId,
    /// `session_id`.
    pub session_id: String,
    /// `session_name`.
    pub session_name: Option<String>,
    /// `category`.
    pub category: Option<String>,
    /// `comment`.
    pub comment: Option<String>,
    /// `created_at`.
    pub created_at: Option<String>,
    /// `metadata`.
    pub metadata: Value,
}

/// One version of a variable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variable {
    /// The trace it belongs to.
    pub trace: TraceId,
    /// Local id within the trace.
    pub id: LocalId,
    /// `name`.
    pub name: String,
    /// `class_name`.
    pub class_name: Option<String>,
    /// `version` (>= 1).
    pub version: u32,
    /// `value` (the repr of the recorded value).
    pub value: Option<String>,
    /// `comment`.
    pub comment: Option<String>,
    /// `category`.
    pub category: Option<String>,
    /// `session_id`.
    pub session_id: Option<String>,
    /// `created_at`.
    pub created_at: Option<String>,
    /// `filename`.
    pub filename: Option<String>,
    /// `lineno`.
    pub lineno: Option<i64>,
    /// `metadata`.
    pub metadata: Value,
    /// `class_name:name` (or `name`).
    pub full_name: String,
    /// `full_name@version`.
    pub full_node_id: String,
}

/// An operation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Operation {
    /// The trace it belongs to.
    pub trace: TraceId,
    /// Local id within the trace.
    pub id: LocalId,
    /// `op_id`.
    pub op_id: String,
    /// `op_name`.
    pub op_name: Option<String>,
    /// `category` (the op's kind).
    pub category: Option<String>,
    /// `comment`.
    pub comment: Option<String>,
    /// `session_id`.
    pub session_id: Option<String>,
    /// `created_at`.
    pub created_at: Option<String>,
    /// `metadata`.
    pub metadata: Value,
}

/// A dependency edge, source -> target, induced by an op.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Edge {
    /// The trace it belongs to.
    pub trace: TraceId,
    /// Local id within the trace.
    pub id: LocalId,
    /// `edge_id`.
    pub edge_id: String,
    /// Local id of the op.
    pub op: LocalId,
    /// `op_id` of the op.
    pub op_id: String,
    /// Local id of the source variable.
    pub source: LocalId,
    /// Local id of the target variable.
    pub target: LocalId,
    /// `source_full_node_id`.
    pub source_full_node_id: String,
    /// `target_full_node_id`.
    pub target_full_node_id: String,
    /// `category`.
    pub category: Option<String>,
    /// `comment`.
    pub comment: Option<String>,
    /// `session_id`.
    pub session_id: String,
    /// `metadata`.
    pub metadata: Value,
}

/// A failed question recorded in MemTraceBench `data.annotations`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Case {
    /// The trace it belongs to.
    pub trace: TraceId,
    /// Local id within the trace.
    pub id: LocalId,
    /// Full node id of the query variable.
    pub query_id: Option<String>,
    /// The question.
    pub query: Option<String>,
    /// Gold answer(s): a string or a list.
    pub golden_answers: Value,
    /// The system's answer.
    pub prediction: Option<String>,
    /// Full node ids of the evidence messages.
    pub source_evidence_ids: Vec<String>,
    /// The labelled error type, when labelled.
    pub final_error_type: Option<String>,
    /// The labelled faulty op id, when labelled.
    pub final_op_id: Option<String>,
    /// The annotation as stored.
    pub raw: Value,
}

/// A variable or an op that a reference names.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Node {
    /// A variable version.
    Variable(Variable),
    /// An operation.
    Operation(Operation),
}

/// Totals over the database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    /// Stored traces.
    pub traces: u64,
    /// Sessions in all traces.
    pub sessions: u64,
    /// Variable versions in all traces.
    pub variables: u64,
    /// Operations in all traces.
    pub ops: u64,
    /// Edges in all traces.
    pub edges: u64,
    /// Cases in all traces.
    pub cases: u64,
    /// Bytes the database occupies on disk.
    pub disk_bytes: u64,
    /// Bytes of JSON the stored traces were imported from.
    pub imported_json_bytes: u64,
}

/// An entry of the database's event log (imports and removals).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogEntry {
    /// Sequence number.
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// `import` or `drop`.
    pub action: String,
    /// The trace concerned.
    pub trace: TraceId,
    /// Its graph id.
    pub graph_id: String,
    /// Source file or removal reason.
    pub detail: String,
}
