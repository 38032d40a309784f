//! The command-line tool's error type.

use thiserror::Error;

/// What can end a command with an error.
#[derive(Debug, Error)]
pub enum CliError {
    /// The database failed.
    #[error(transparent)]
    Engine(#[from] memtrace::EngineError),
    /// An analysis failed.
    #[error(transparent)]
    Analysis(#[from] memtrace::AnalysisError),
    /// A Parquet export failed (nothing was left in its folder).
    #[error(transparent)]
    Columnar(#[from] memtrace::ColumnarError),
    /// Generating a set failed.
    #[error(transparent)]
    Gen(#[from] memtrace::gen::GenError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing JSON failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The command line asks for something that cannot be done as given.
    #[error("{0}")]
    Usage(String),
    /// An LLM run was stopped with Ctrl-C.
    #[error("cancelled; the answers received so far are cached in the database, so running the same command again resumes at no cost")]
    LlmCancelled,
}

/// Result type of the tool.
pub type Result<T, E = CliError> = std::result::Result<T, E>;

/// Wraps an I/O error with its path.
pub fn io(path: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> CliError {
    let path = path.to_string();
    move |source| CliError::Io { path, source }
}
