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
    /// A pattern name that names no pattern, built-in or saved.
    #[error("no pattern {name}{}; SHOW PATTERNS lists them", did_you_mean(.nearest))]
    UnknownPattern {
        /// The name as given.
        name: String,
        /// The known pattern name nearest to it, if any is near.
        nearest: Option<String>,
    },
    /// A pattern name to drop that names no saved pattern.
    #[error("no saved pattern {name}{}; SHOW PATTERNS lists them", did_you_mean(.nearest))]
    UnknownSavedPattern {
        /// The name as given.
        name: String,
        /// The saved pattern name nearest to it, if any is near.
        nearest: Option<String>,
    },
    /// A built-in pattern's name used for what only saved patterns allow.
    #[error("{name} is a built-in pattern{refused}")]
    BuiltinPattern {
        /// The built-in pattern's name.
        name: String,
        /// What was asked of it.
        refused: BuiltinRefusal,
    },
    /// A statement to save as a pattern that is not a pattern definition.
    #[error("{}not a pattern definition: {statement}", pattern_prefix(.pattern))]
    NotAPatternDefinition {
        /// The pattern it was given for, when given inline.
        pattern: Option<String>,
        /// The statement as given.
        statement: String,
    },
    /// A parameter that a pattern does not take.
    #[error("{pattern} has no parameter ${name}; {}", parameter_list(.takes))]
    UnknownParameter {
        /// The pattern, in words.
        pattern: String,
        /// The parameter as given.
        name: String,
        /// The parameters it takes.
        takes: Vec<String>,
    },
    /// A value of the wrong kind for a built-in pattern's parameter.
    #[error("built-in pattern {pattern}: ${name} must be {expected}, not {given}")]
    ParameterKind {
        /// The built-in pattern's name.
        pattern: String,
        /// The parameter.
        name: String,
        /// The kind of value it takes.
        expected: String,
        /// The value given, as a literal.
        given: String,
    },
    /// A pattern used to pick cases whose hits are not failed cases.
    #[error("{0}")]
    HitsNotCases(String),
    /// A condition on traces that does not parse.
    #[error("the trace condition {text:?} does not parse: {reason}")]
    TraceConditionSyntax {
        /// The condition as given.
        text: String,
        /// What the parser said.
        reason: String,
    },
    /// A condition that is not about traces.
    #[error("not a condition on traces: {0}")]
    NotATraceCondition(String),
    /// An attribution method this build does not have.
    #[error("{0}")]
    UnknownMethod(String),
    /// An attribution setting that does not exist.
    #[error("{0}")]
    UnknownSetting(String),
    /// A case reference that names a failed case in no trace.
    #[error("no failed case {0} in any trace (FIND cases lists them)")]
    UnknownCaseAnywhere(String),
    /// A picked case that its trace does not have.
    #[error("trace {trace} has no failed case from {origin} (FIND cases lists them)")]
    UnknownPickedCase {
        /// The trace's graph id.
        trace: String,
        /// Where the case was picked from, in words.
        origin: String,
    },
    /// The evidence-flow attributor gave a different number of verdicts
    /// than a trace has failed cases.
    #[error("trace {trace}: {verdicts} evidence-flow verdict(s) for {cases} failed case(s)")]
    VerdictsPerTrace {
        /// The trace's graph id.
        trace: String,
        /// How many verdicts came.
        verdicts: usize,
        /// How many failed cases the trace has.
        cases: usize,
    },
    /// An attribution gave a different number of verdicts than cases were
    /// picked.
    #[error("{verdicts} verdict(s) for {picked} case(s) picked")]
    VerdictsPerPick {
        /// How many verdicts came.
        verdicts: usize,
        /// How many cases were picked.
        picked: usize,
    },
    /// A dense or hybrid evidence search without an embeddings endpoint.
    #[error(
        "the {search} evidence search needs an embeddings endpoint: set MEMTRACE_EMBED_MODEL \
         (and MEMTRACE_EMBED_BASE_URL and MEMTRACE_EMBED_API_KEY unless the LLM endpoint \
         serves embeddings too)"
    )]
    NoEmbeddingsEndpoint {
        /// The search, by name.
        search: String,
    },
    /// The runtime that drives an LLM or embeddings client could not start.
    #[error("cannot start the {client} client: {source}")]
    ClientCannotStart {
        /// Which client (`LLM`, `embeddings`).
        client: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A stored verdict that does not read back.
    #[error("trace #{trace}: stored verdict {seq} does not read back: {reason}")]
    StoredVerdictUnreadable {
        /// The trace's id.
        trace: u32,
        /// The verdict's sequence number.
        seq: u64,
        /// What the JSON reader said.
        reason: String,
    },
    /// A field of a label that is not allowed as given.
    #[error("{field}: {problem}")]
    BadLabel {
        /// The field (`author`, `reason`, `op_id`).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A label the database appended without a sequence number.
    #[error("the label was not stored (no sequence number)")]
    LabelNotStored,
    /// A label that does not read back once stored.
    #[error("the stored label does not read back")]
    LabelUnreadable,
    /// A stored annotation that is not a JSON object.
    #[error("annotation {number} of trace {trace} is not stored as an object")]
    AnnotationNotObject {
        /// The annotation's number, from 1.
        number: usize,
        /// The trace's graph id.
        trace: String,
    },
    /// A trace export that is not a JSON object.
    #[error("the trace's export is not a JSON object")]
    ExportNotObject,
    /// A trace export whose `data` is not a JSON object.
    #[error("the trace's export has a `data` that is not an object")]
    ExportDataNotObject,
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

    /// Whether the request could not be carried out as given (a server
    /// answers it as the client's mistake).
    pub fn is_invalid_request(&self) -> bool {
        match self {
            AnalysisError::Engine(_)
            | AnalysisError::UnknownCase { .. }
            | AnalysisError::ValueUnreadable { .. }
            | AnalysisError::Llm(_)
            | AnalysisError::Io { .. }
            | AnalysisError::Json(_) => false,
            AnalysisError::UnknownPattern { .. }
            | AnalysisError::UnknownSavedPattern { .. }
            | AnalysisError::BuiltinPattern { .. }
            | AnalysisError::NotAPatternDefinition { .. }
            | AnalysisError::UnknownParameter { .. }
            | AnalysisError::ParameterKind { .. }
            | AnalysisError::HitsNotCases(_)
            | AnalysisError::TraceConditionSyntax { .. }
            | AnalysisError::NotATraceCondition(_)
            | AnalysisError::UnknownMethod(_)
            | AnalysisError::UnknownSetting(_)
            | AnalysisError::UnknownCaseAnywhere(_)
            | AnalysisError::UnknownPickedCase { .. }
            | AnalysisError::VerdictsPerTrace { .. }
            | AnalysisError::VerdictsPerPick { .. }
            | AnalysisError::NoEmbeddingsEndpoint { .. }
            | AnalysisError::ClientCannotStart { .. }
            | AnalysisError::StoredVerdictUnreadable { .. }
            | AnalysisError::BadLabel { .. }
            | AnalysisError::LabelNotStored
            | AnalysisError::LabelUnreadable
            | AnalysisError::AnnotationNotObject { .. }
            | AnalysisError::ExportNotObject
            | AnalysisError::ExportDataNotObject => true,
        }
    }
}

/// What a built-in pattern refused, as the end of the error's sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuiltinRefusal {
    /// Reading its history: it has none.
    History,
    /// Dropping it.
    Drop,
    /// Saving a pattern under its name.
    Save,
    /// Giving an inline statement under its name.
    Inline,
}

impl std::fmt::Display for BuiltinRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BuiltinRefusal::History => ": it has no history (SHOW PATTERNS describes it)",
            BuiltinRefusal::Drop => " and cannot be dropped",
            BuiltinRefusal::Save => "; save yours under another name",
            BuiltinRefusal::Inline => "; give your statement another name",
        })
    }
}

/// ` (did you mean X?)` when there is a near name, else nothing.
fn did_you_mean(nearest: &Option<String>) -> String {
    nearest
        .as_ref()
        .map(|n| format!(" (did you mean {n}?)"))
        .unwrap_or_default()
}

/// `pattern X: ` when the pattern is named, else nothing.
fn pattern_prefix(pattern: &Option<String>) -> String {
    pattern
        .as_ref()
        .map(|p| format!("pattern {p}: "))
        .unwrap_or_default()
}

/// The parameters a pattern takes, in words.
fn parameter_list(takes: &[String]) -> String {
    if takes.is_empty() {
        "it takes none".to_string()
    } else {
        let known: Vec<String> = takes.iter().map(|n| format!("${n}")).collect();
        format!("its parameters: {}", known.join(", "))
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
