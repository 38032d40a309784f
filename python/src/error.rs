//! The binding's error type, and the Python exception each error becomes.

use memtrace::query::QueryError as EngineQueryError;
use memtrace::{AnalysisError, ColumnarError, EngineError};
use pyo3::exceptions::{PyException, PyFileExistsError, PyTypeError, PyValueError};
use pyo3::prelude::*;

pyo3::create_exception!(
    memtrace,
    Error,
    PyException,
    "Base class of every error memtrace raises."
);
pyo3::create_exception!(
    memtrace,
    QueryError,
    Error,
    "A statement that does not parse or does not make sense. `line` and `column` (1-based) \
     say where, `caret` holds the line with a caret under the place, `message` says what is \
     wrong; all four are None for an error with no place in the text (a missing parameter)."
);
pyo3::create_exception!(
    memtrace,
    NotFoundError,
    Error,
    "No trace, variable, op or failed case matches a reference."
);
pyo3::create_exception!(
    memtrace,
    InvalidTraceError,
    Error,
    "An input is not a valid trace; nothing of it was stored."
);
pyo3::create_exception!(
    memtrace,
    AlreadyStoredError,
    Error,
    "A trace's graph id is already stored with other content; nothing was stored."
);
pyo3::create_exception!(
    memtrace,
    ImportFailedError,
    Error,
    "Some files of an import failed. Each file is all or nothing: `imported` lists the traces \
     stored from the other files, `failures` pairs each failed file with why."
);
pyo3::create_exception!(
    memtrace,
    StoreError,
    Error,
    "The store failed or refused: a file could not be read or written, or the database is \
     locked by another process."
);
pyo3::create_exception!(
    memtrace,
    LlmError,
    Error,
    "The LLM endpoint failed, answered with something unusable, or is not configured."
);
pyo3::create_exception!(
    memtrace,
    QueryTimeoutError,
    Error,
    "The work ran longer than its time limit and was stopped; nothing was stored."
);
pyo3::create_exception!(memtrace, ClosedError, Error, "The database was closed.");

/// Everything the binding reports; each becomes a Python exception.
#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    /// The database refused or failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// An analysis (attribution, evaluation, patterns, reports) failed.
    #[error(transparent)]
    Analysis(#[from] AnalysisError),
    /// A Parquet export failed (nothing was left in its folder).
    #[error(transparent)]
    Columnar(#[from] ColumnarError),
    /// The database was closed before the call.
    #[error("the database at {0} is closed")]
    Closed(String),
    /// An argument has a value that cannot be used (raised as ValueError).
    #[error("{0}")]
    Value(String),
    /// An argument has a type that cannot be used (raised as TypeError).
    #[error("{0}")]
    Type(String),
    /// The time limit passed and the work was stopped.
    #[error("stopped after its time limit of {0} s; nothing was stored")]
    Timeout(f64),
    /// Files of an import failed (the others were stored).
    #[error("{} of {files} file(s) failed, nothing of them was stored: {}", failures.len(), failures.iter().map(|(p, e)| format!("{p}: {e}")).collect::<Vec<_>>().join("; "))]
    ImportFailed {
        /// How many files the import read.
        files: usize,
        /// Each failed file and why.
        failures: Vec<(String, String)>,
        /// The traces stored from the other files, as Python dicts.
        imported: Py<PyAny>,
    },
    /// The worker thread that ran the call panicked.
    #[error("internal error in memtrace (please report it): {0}")]
    Panicked(String),
    /// A Python error (a KeyboardInterrupt, or one raised by a callback).
    #[error("{0}")]
    Python(#[from] PyErr),
}

/// The binding's result type.
pub type Result<T, E = BindingError> = std::result::Result<T, E>;

impl From<BindingError> for PyErr {
    fn from(e: BindingError) -> PyErr {
        let message = e.to_string();
        match e {
            BindingError::Engine(e) => engine_error(e),
            BindingError::Analysis(e) => analysis_error(e),
            BindingError::Columnar(e) => columnar_error(e),
            BindingError::Closed(_) => ClosedError::new_err(message),
            BindingError::Value(_) => PyValueError::new_err(message),
            BindingError::Type(_) => PyTypeError::new_err(message),
            BindingError::Timeout(_) => QueryTimeoutError::new_err(message),
            BindingError::ImportFailed {
                failures, imported, ..
            } => Python::attach(|py| {
                let err = ImportFailedError::new_err(message);
                let value = err.value(py);
                if let Err(e) = value
                    .setattr("failures", failures)
                    .and_then(|()| value.setattr("imported", imported))
                {
                    return e;
                }
                err
            }),
            BindingError::Panicked(_) => Error::new_err(message),
            BindingError::Python(e) => e,
        }
    }
}

/// The exception of an engine error.
fn engine_error(e: EngineError) -> PyErr {
    let message = e.to_string();
    match e {
        EngineError::Query(q) => query_error(q),
        EngineError::Invalid { .. } => InvalidTraceError::new_err(message),
        EngineError::AlreadyStored { .. } => AlreadyStoredError::new_err(message),
        EngineError::UnknownTrace(_)
        | EngineError::AmbiguousTrace { .. }
        | EngineError::UnknownNode { .. } => NotFoundError::new_err(message),
        EngineError::Storage(_) | EngineError::Io { .. } => StoreError::new_err(message),
        EngineError::Extension(inner) => match inner.downcast::<AnalysisError>() {
            Ok(analysis) => analysis_error(*analysis),
            Err(other) => Error::new_err(other.to_string()),
        },
        _ => Error::new_err(message),
    }
}

/// The exception of a Parquet export error.
fn columnar_error(e: ColumnarError) -> PyErr {
    let message = e.to_string();
    match e {
        ColumnarError::Engine(e) => engine_error(e),
        ColumnarError::Analysis(e) => analysis_error(e),
        ColumnarError::UnknownProject(_) => NotFoundError::new_err(message),
        ColumnarError::NotEmpty(_)
        | ColumnarError::NotAnExport(_)
        | ColumnarError::NotAFolder(_) => PyFileExistsError::new_err(message),
        ColumnarError::Io { .. } => StoreError::new_err(message),
        ColumnarError::BadInput(_) => PyValueError::new_err(message),
        _ => Error::new_err(message),
    }
}

/// The exception of an analysis error.
fn analysis_error(e: AnalysisError) -> PyErr {
    let message = e.to_string();
    match e {
        AnalysisError::Engine(e) => engine_error(e),
        AnalysisError::UnknownCase { .. } => NotFoundError::new_err(message),
        AnalysisError::Llm(_) => LlmError::new_err(message),
        AnalysisError::ValueUnreadable { .. } | AnalysisError::Io { .. } => {
            StoreError::new_err(message)
        }
        _ => Error::new_err(message),
    }
}

/// A QueryError carrying the place in the text.
fn query_error(q: EngineQueryError) -> PyErr {
    let message = q.to_string();
    let place = match &q {
        EngineQueryError::Syntax {
            line,
            column,
            message,
            snippet,
        }
        | EngineQueryError::Invalid {
            line,
            column,
            message,
            snippet,
        } => Some((*line, *column, message.clone(), snippet.clone())),
        _ => None,
    };
    Python::attach(|py| {
        let err = QueryError::new_err(message);
        let value = err.value(py);
        let (line, column, what, caret) = match place {
            Some((l, c, m, s)) => (Some(l), Some(c), Some(m), Some(s)),
            None => (None, None, None, None),
        };
        let set = value
            .setattr("line", line)
            .and_then(|()| value.setattr("column", column))
            .and_then(|()| value.setattr("message", what))
            .and_then(|()| value.setattr("caret", caret));
        match set {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("QueryError", py.get_type::<QueryError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("InvalidTraceError", py.get_type::<InvalidTraceError>())?;
    m.add("AlreadyStoredError", py.get_type::<AlreadyStoredError>())?;
    m.add("ImportFailedError", py.get_type::<ImportFailedError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("LlmError", py.get_type::<LlmError>())?;
    m.add("QueryTimeoutError", py.get_type::<QueryTimeoutError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    Ok(())
}
