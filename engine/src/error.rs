//! The engine's error type: what the database reports.

use thiserror::Error;

/// Everything the engine reports.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] memtrace_storage::StorageError),
    /// A reference or query did not parse.
    #[error(transparent)]
    Query(#[from] memtrace_query::QueryError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An input is not a valid trace; nothing of it was stored.
    #[error("{source_name}: invalid at {json_path}: {reason}")]
    Invalid {
        /// The file (or `<reader>`).
        source_name: String,
        /// JSON path of the offending value, e.g. `data.edges[3].op_id`.
        json_path: String,
        /// What is wrong.
        reason: String,
    },
    /// The graph id is already stored with other content (or content that
    /// cannot be compared) and `force` was not given. (The same content
    /// again is not an error: nothing is stored.)
    #[error("{source_name}: trace {graph_id} is already stored (as {}){}", list_ids(.existing), already_why(*.compared))]
    AlreadyStored {
        /// The file (or `<reader>`).
        source_name: String,
        /// The graph id.
        graph_id: String,
        /// The stored traces with that graph id.
        existing: Vec<u32>,
        /// Whether the stored content was compared (and differs); false
        /// when the stored trace has no content digest (imported before
        /// memtrace kept them).
        compared: bool,
    },
    /// No trace matches.
    #[error("no trace {0} (see `memtrace traces`)")]
    UnknownTrace(String),
    /// Several traces match a graph id.
    #[error("graph id {graph_id} names several traces ({}); say which with #ID", list_ids(.ids))]
    AmbiguousTrace {
        /// The graph id given.
        graph_id: String,
        /// The matching trace ids.
        ids: Vec<u32>,
    },
    /// No variable or op matches a reference in a trace.
    #[error("trace {trace}: no variable or op {reference}")]
    UnknownNode {
        /// The trace's graph id.
        trace: String,
        /// The reference as given.
        reference: String,
    },
    /// A statement is run by an analysis, and none is registered for it.
    #[error("{0} is run by an analysis, and none is registered with this database (open it through the `memtrace` crate, or register one with Engine::with_extension)")]
    NoExtension(&'static str),
    /// An extension (an analysis the database called) failed.
    #[error(transparent)]
    Extension(Box<dyn std::error::Error + Send + Sync>),
    /// A TRACE, FORWARD or DESCRIBE names a variable or op that no trace
    /// holds.
    #[error("no trace holds a variable or op {reference} (see FIND vars WHERE var.full_name CONTAINS '...')")]
    NoTraceHolds {
        /// The reference as given.
        reference: String,
    },
    /// A walk starts from a variable the trace does not have.
    #[error("walk from variable {start}, but the trace has {vars}")]
    StartOutOfRange {
        /// The start's local id.
        start: u32,
        /// How many variables the trace has.
        vars: u32,
    },
    /// A graph is given more edges than a trace can hold.
    #[error("{edges} edges: more than a trace can hold")]
    TooManyEdges {
        /// How many edges were given.
        edges: usize,
    },
    /// An ATTRIBUTE's subquery is not a `FIND cases`.
    #[error("not a subquery of failed cases: {statement}")]
    NotCaseSubquery {
        /// The subquery, as EXPLAIN gives its first line.
        statement: String,
    },
    /// An ATTRIBUTE's subquery finds something other than cases.
    #[error("{reason}; ATTRIBUTE needs cases")]
    CasesNeeded {
        /// What the subquery finds instead.
        reason: String,
    },
    /// A row of an ATTRIBUTE's subquery does not name a case.
    #[error("a row of the subquery does not end with a trace and a case key: {row}")]
    NotCaseRow {
        /// The row, as Rust's debug form writes it.
        row: String,
    },
    /// A graph is asked of a statement with a LIMIT.
    #[error(
        "a graph is not cut short: drop the LIMIT (the graph holds every node and edge reached)"
    )]
    GraphLimit,
    /// A graph is asked of a statement that gives rows only.
    #[error("a graph is made by TRACE, FORWARD or MATCH; {statement} gives rows only (use query)")]
    GraphNeedsWalk {
        /// The statement's keyword.
        statement: &'static str,
    },
    /// A walk's tree is asked of a statement that is not a TRACE or FORWARD.
    #[error("a walk's tree is made of TRACE and FORWARD only")]
    TreeNeedsWalk,
    /// An output format that draws walks is asked of another statement.
    #[error("the {format} format draws TRACE and FORWARD results; use table, json or csv")]
    FormatNeedsWalk {
        /// The format's name.
        format: String,
    },
    /// The thread that reads files ahead of an import stopped before a file.
    #[error("{path}: the thread that reads files stopped before it")]
    FileReaderStopped {
        /// The file.
        path: String,
    },
    /// Writing JSON output failed.
    #[error("writing JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The work was cancelled through its [`Cancel`](crate::Cancel) token.
    #[error("cancelled")]
    Cancelled,
}

impl EngineError {
    /// Whether the request itself is wrong (a client's mistake, not the
    /// store's or the engine's): the errors a server answers with "bad
    /// request".
    pub fn is_invalid_request(&self) -> bool {
        matches!(
            self,
            EngineError::NoTraceHolds { .. }
                | EngineError::StartOutOfRange { .. }
                | EngineError::TooManyEdges { .. }
                | EngineError::NotCaseSubquery { .. }
                | EngineError::CasesNeeded { .. }
                | EngineError::NotCaseRow { .. }
                | EngineError::GraphLimit
                | EngineError::GraphNeedsWalk { .. }
                | EngineError::TreeNeedsWalk
                | EngineError::FormatNeedsWalk { .. }
                | EngineError::FileReaderStopped { .. }
        )
    }
}

fn list_ids(ids: &[u32]) -> String {
    ids.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Result type of the engine.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;

fn already_why(compared: bool) -> &'static str {
    if compared {
        " with other content; use --force to store this one as a new trace (the same content again is skipped)"
    } else {
        ", imported before memtrace kept content digests, so whether this is the same content is not known; use --force to store it again as a new trace"
    }
}
