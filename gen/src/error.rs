//! The generator's error type.

use thiserror::Error;

/// What can go wrong generating a set.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GenError {
    /// The specification asks for something that cannot be generated.
    #[error("{0}")]
    BadSpec(String),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Writing JSON failed.
    #[error("writing JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result type of the generator.
pub type Result<T, E = GenError> = std::result::Result<T, E>;
