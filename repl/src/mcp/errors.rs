//! Errors as MCP errors that say what to fix.

use memtrace::EngineError;
use rmcp::ErrorData;
use serde_json::json;

use super::limits::SECONDS_MAX;

/// A mistake of the caller's, said in `message`.
pub fn bad(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

/// An engine error as an MCP error: what the caller got wrong is
/// `invalid_params` (a syntax error keeps its line, column and caret line).
pub fn engine(e: EngineError) -> ErrorData {
    let message = e.to_string();
    match &e {
        EngineError::Query(_) => ErrorData::invalid_params(
            format!("{message}\n(fix the statement; the describe tool explains the language)"),
            Some(json!({"kind": "query_error"})),
        ),
        EngineError::UnknownTrace(_) | EngineError::AmbiguousTrace { .. } => {
            ErrorData::invalid_params(
                format!("{message} (list_traces gives the graph ids; #ID names a trace by number)"),
                Some(json!({"kind": "unknown_trace"})),
            )
        }
        EngineError::UnknownNode { .. } => ErrorData::invalid_params(
            format!(
                "{message} (a node is a full node id such as prediction:Q7@1, or a full name for its latest version)"
            ),
            Some(json!({"kind": "unknown_node"})),
        ),
        e if e.is_invalid_request() => ErrorData::invalid_params(message, None),
        EngineError::Cancelled => ErrorData::invalid_params(
            format!("{message}: the time limit ran out; give a larger timeout_seconds (at most {SECONDS_MAX}) or a narrower statement (IN TRACE, LIMIT, DEPTH)"),
            Some(json!({"kind": "timeout"})),
        ),
        EngineError::Extension(inner) => match inner.downcast_ref::<memtrace::AnalysisError>() {
            Some(memtrace::AnalysisError::UnknownCase { .. }) => ErrorData::invalid_params(
                format!("{message} (failed_cases lists the cases of a trace)"),
                Some(json!({"kind": "unknown_case"})),
            ),
            Some(e) if e.is_invalid_request() => ErrorData::invalid_params(message, None),
            _ => ErrorData::internal_error(message, None),
        },
        _ => ErrorData::internal_error(message, None),
    }
}

/// An analysis error as an MCP error, as [`engine`] maps it.
pub fn analysis(e: memtrace::AnalysisError) -> ErrorData {
    match e {
        memtrace::AnalysisError::Engine(inner) => engine(inner),
        other => engine(EngineError::from(other)),
    }
}
