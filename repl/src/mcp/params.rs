//! What each tool takes: the arguments a client sends, with the schema it is shown.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// Which traces to list.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListTraces {
    /// Only traces of this project_id (the memory system or service).
    pub project: Option<String>,
    /// Only traces of this user_id.
    pub user: Option<String>,
    /// Only traces whose graph id contains this text.
    pub graph_id_contains: Option<String>,
    /// Only traces with at least one failed case.
    pub failed_only: Option<bool>,
    /// Traces returned at most (default 50, at most 1000).
    pub limit: Option<u64>,
}

/// A statement of the query language to run.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// One statement: TRACE, FORWARD, MATCH, FIND, SHOW, DESCRIBE, RUN PATTERN, EXPLAIN.
    pub statement: String,
    /// Rows returned at most (default 100, at most 5000); the result says when more were left out.
    pub limit: Option<u64>,
    /// Seconds the statement may run (default 10, at most 120).
    pub timeout_seconds: Option<f64>,
    /// Values for `$name` parameters in the statement.
    pub params: Option<HashMap<String, Value>>,
}

/// A statement whose plan to show.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainArgs {
    /// The statement (without EXPLAIN).
    pub statement: String,
}

/// A value to read.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShowValue {
    /// The trace: its graph id, or #ID.
    pub trace: String,
    /// The variable: a full node id (prediction:Q7@1), or a full name for its latest version; an op id gives the op.
    pub node: String,
    /// The first character to return (for the next page of a long value).
    pub offset: Option<u64>,
    /// Characters returned at most (default 8000, at most 65536).
    pub max_chars: Option<u64>,
}

/// Which failed cases to list.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct FailedCases {
    /// Only this trace (graph id or #ID).
    pub trace: Option<String>,
    /// Cases returned at most (default 50, at most 1000).
    pub limit: Option<u64>,
}

/// A case to attribute.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AttributeArgs {
    /// The trace: its graph id, or #ID.
    pub trace: String,
    /// The case: its name as failed_cases gives it (the query's full node id or the judge op id).
    pub case: String,
    /// evidence (default; deterministic, no network), or llm / hybrid when an LLM endpoint is configured.
    pub method: Option<String>,
    /// What the case shows the method: benchmark (default; all it holds), evaluation (its annotated evidence hidden) or production (its gold answer hidden too).
    pub setting: Option<String>,
}

/// A failure pattern to run.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunPatternArgs {
    /// The pattern's name (SHOW PATTERNS lists the built-in and saved ones).
    pub name: String,
    /// Values for the pattern's parameters, by name without the `$`.
    pub params: Option<HashMap<String, Value>>,
    /// Only the traces this condition on trace fields holds for, e.g. trace.project_id = 'mem0'.
    pub over: Option<String>,
    /// Hits returned at most (default 100, at most 5000).
    pub limit: Option<u64>,
    /// Seconds it may run (default 10, at most 120).
    pub timeout_seconds: Option<f64>,
}

/// What to describe.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct DescribeArgs {
    /// A topic: schema, or one of the language's topics (trace, forward, match, find, where,
    /// fields, attribute, patterns, show, explain, ...). Without one: the schema and an overview.
    pub topic: Option<String>,
}

/// A statement that stores.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExecuteArgs {
    /// ATTRIBUTE (stores verdicts), SAVE PATTERN or DROP PATTERN.
    pub statement: String,
    /// Seconds it may run (default 10, at most 120).
    pub timeout_seconds: Option<f64>,
}
