//! The Parquet export's error type.

use memtrace_analysis::AnalysisError;
use memtrace_engine::EngineError;
use thiserror::Error;

/// What can stop a Parquet export. Nothing is left in the output folder
/// when one does.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ColumnarError {
    /// The database failed or refused (an unknown trace, ...).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Reading the failed cases or the stored verdicts failed.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// A project filter matched no stored trace.
    #[error("no trace has project_id {0} (see `memtrace traces`)")]
    UnknownProject(String),
    /// The output folder exists and holds files; nothing was written.
    #[error("{0} exists and is not empty; choose another folder, or replace an earlier Parquet export there with --force")]
    NotEmpty(String),
    /// The output folder holds files that no Parquet export wrote, so it is
    /// not replaced even when asked to.
    #[error("{0} is not empty and holds no earlier Parquet export ({manifest} is missing); it is left alone", manifest = crate::manifest::MANIFEST)]
    NotAnExport(String),
    /// The output path exists and is not a folder.
    #[error("{0} exists and is not a folder")]
    NotAFolder(String),
    /// A file or folder could not be read, written or renamed.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Building an Arrow batch failed (a column did not match its schema).
    #[error("table {table}: {source}")]
    Arrow {
        /// The table being built.
        table: &'static str,
        /// What Arrow said.
        source: arrow_schema::ArrowError,
    },
    /// Writing a Parquet file failed.
    #[error("{path}: {source}")]
    Parquet {
        /// The file being written.
        path: String,
        /// What the writer said.
        source: parquet::errors::ParquetError,
    },
    /// Writing JSON (a metadata column, the manifest) failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A batch of traces to analyse, or what was asked of it, cannot be
    /// used (no such column, a column of another type, an unknown pattern).
    #[error("{0}")]
    BadInput(String),
    /// Reading or writing an Arrow IPC stream failed.
    #[error("Arrow IPC stream: {0}")]
    Ipc(arrow_schema::ArrowError),
}

/// Result type of the Parquet export.
pub type Result<T, E = ColumnarError> = std::result::Result<T, E>;

/// Wraps an I/O error with its path.
pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ColumnarError + '_ {
    move |source| ColumnarError::Io {
        path: path.display().to_string(),
        source,
    }
}
