//! The analyses' error type.

use memtrace_engine::EngineError;
use thiserror::Error;

/// What can go wrong in an analysis.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum AnalysisError {
    /// The database failed or refused (an unknown trace, a query error,
    /// cancellation, ...).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// No failed case of a trace matches a reference.
    #[error("trace {trace}: no failed case {case} (see `FIND cases IN TRACE '{trace}'`)")]
    UnknownCase {
        /// The trace's graph id.
        trace: String,
        /// The reference as given.
        case: String,
    },
    /// A stored value that an analysis needed could not be read (the trace
    /// was dropped meanwhile, or the store failed); no verdict was kept.
    #[error("trace {trace}: the value of {node} could not be read: {reason}")]
    ValueUnreadable {
        /// The trace's graph id.
        trace: String,
        /// The variable (`name@version`).
        node: String,
        /// What the store said.
        reason: String,
    },
    /// An LLM endpoint failed, or its configuration is wrong.
    #[error(transparent)]
    Llm(#[from] memtrace_llm::LlmError),
    /// A request that cannot be carried out as given.
    #[error("{0}")]
    BadRequest(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Reading or writing JSON failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl AnalysisError {
    /// Whether the work was cancelled through its `Cancel` token.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, AnalysisError::Engine(EngineError::Cancelled))
    }
}

/// An analysis error as the database reports it when it called the analysis
/// for a statement: its own errors stay what they are, the analyses' are
/// carried whole (and can be downcast back to [`AnalysisError`]).
impl From<AnalysisError> for EngineError {
    fn from(e: AnalysisError) -> EngineError {
        match e {
            AnalysisError::Engine(e) => e,
            other => EngineError::Extension(Box::new(other)),
        }
    }
}

impl From<memtrace_engine::query::QueryError> for AnalysisError {
    fn from(e: memtrace_engine::query::QueryError) -> AnalysisError {
        AnalysisError::Engine(e.into())
    }
}

impl From<memtrace_engine::StorageError> for AnalysisError {
    fn from(e: memtrace_engine::StorageError) -> AnalysisError {
        AnalysisError::Engine(e.into())
    }
}

/// Result type of the analyses.
pub type Result<T, E = AnalysisError> = std::result::Result<T, E>;
