//! What each tool answers: structured results with the schema a client is shown.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Traces.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TraceList {
    /// How to read `data`.
    pub notice: String,
    /// Traces that matched.
    pub matched: usize,
    /// Whether more matched than were returned.
    pub truncated: bool,
    /// The traces: id, graph_id, project, user, created_at, source, counts, failed_cases.
    pub data: Vec<Value>,
}

/// Rows of a statement.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Rows {
    /// How to read `data`.
    pub notice: String,
    /// The column names.
    pub columns: Vec<String>,
    /// The rows, each a list of cells in column order.
    pub data: Vec<Vec<Value>>,
    /// Whether rows were left out at the row limit.
    pub truncated: bool,
    /// The row limit applied.
    pub row_limit: usize,
    /// Whether some text cells were cut (show_value reads a value whole).
    pub cells_cut: bool,
    /// Milliseconds it ran.
    pub elapsed_ms: u64,
}

/// A plan.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Explained {
    /// The statement as parsed (printed back).
    pub statement: String,
    /// The plan, one step a line.
    pub plan: String,
}

/// A value, or a page of it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ValuePage {
    /// How to read `data`.
    pub notice: String,
    /// The variable (or op) and its fields; its value's page is `data.value`.
    pub data: Value,
    /// Characters in the whole value.
    pub value_chars: usize,
    /// The first character returned.
    pub offset: usize,
    /// Where the next page starts, when there is one.
    pub next_offset: Option<usize>,
}

/// Failed cases.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CaseList {
    /// How to read `data`.
    pub notice: String,
    /// Failed cases found.
    pub matched: usize,
    /// Whether more were found than returned.
    pub truncated: bool,
    /// The cases: trace, case, query, gold, prediction, latest stored verdict.
    pub data: Vec<Value>,
}

/// A verdict.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Attributed {
    /// How to read `data`.
    pub notice: String,
    /// Whether it was stored (never, from this tool; `execute` with ATTRIBUTE stores).
    pub stored: bool,
    /// The verdict: error_type, op_id, op_name, confidence, reason, chain, method.
    pub data: Value,
}

/// A description.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Described {
    /// The topic described.
    pub topic: String,
    /// The text.
    pub text: String,
    /// The topics there are.
    pub topics: Vec<String>,
}
