//! Verdicts: the error type and faulty op an attributor names for a case,
//! and the chain of ops that led it there.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use memtrace_engine::TraceId;

/// The five error types of the MemTrace taxonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ErrorType {
    /// The critical information never entered any memory unit.
    ExtractionError,
    /// A unit had it; a later update removed or degraded it.
    UpdateError,
    /// A unit holding it was explicitly removed.
    DeletionError,
    /// The store held it; retrieval left it out of the context.
    RetrievalError,
    /// The context held all evidence; the answer is still wrong.
    ResponseError,
}

impl ErrorType {
    /// Every error type, in taxonomy order.
    pub const ALL: [ErrorType; 5] = [
        ErrorType::ExtractionError,
        ErrorType::UpdateError,
        ErrorType::DeletionError,
        ErrorType::RetrievalError,
        ErrorType::ResponseError,
    ];

    /// The name as MemTraceBench writes it (`ExtractionError`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorType::ExtractionError => "ExtractionError",
            ErrorType::UpdateError => "UpdateError",
            ErrorType::DeletionError => "DeletionError",
            ErrorType::RetrievalError => "RetrievalError",
            ErrorType::ResponseError => "ResponseError",
        }
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ErrorType {
    type Err = String;

    /// Reads `ExtractionError`, `extraction_error` or `extraction` (any case).
    fn from_str(s: &str) -> Result<ErrorType, String> {
        let key: String = s
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        let key = key.strip_suffix("error").unwrap_or(&key);
        ErrorType::ALL
            .into_iter()
            .find(|t| t.name().to_ascii_lowercase().strip_suffix("error") == Some(key))
            .ok_or_else(|| {
                format!(
                    "unknown error type '{s}' (one of {})",
                    ErrorType::ALL.map(ErrorType::name).join(", ")
                )
            })
    }
}

/// An attribution method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The deterministic evidence-flow attributor.
    Evidence,
    /// An LLM exploring the trace with tools, from the evidence.
    Llm,
    /// The LLM loop, given the evidence-flow verdict as a hypothesis to
    /// confirm or refute.
    Hybrid,
}

impl Method {
    /// Every method this build has.
    pub const ALL: [Method; 3] = [Method::Evidence, Method::Llm, Method::Hybrid];

    /// The name used in `USING <name>` and `--using <name>`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Evidence => "evidence",
            Method::Llm => "llm",
            Method::Hybrid => "hybrid",
        }
    }

    /// The method's version, stored with each verdict; it changes whenever
    /// the method's findings may change.
    pub fn version(self) -> &'static str {
        match self {
            Method::Evidence => "2",
            Method::Llm | Method::Hybrid => "2",
        }
    }

    /// Whether the method calls an LLM endpoint.
    pub fn needs_llm(self) -> bool {
        matches!(self, Method::Llm | Method::Hybrid)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = String;

    fn from_str(s: &str) -> Result<Method, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!(
                    "unknown attribution method '{s}' (this build has: {})",
                    Method::ALL.map(Method::name).join(", ")
                )
            })
    }
}

/// One step of the evidence chain behind a verdict: an op and what it did
/// with the evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The op's id.
    pub op_id: String,
    /// The op's name.
    pub op_name: String,
    /// The variable it wrote or read that the step is about (full node id).
    pub var: String,
    /// What happened: "held", "lost", "left out", ...
    pub what: String,
}

/// The verdict of an attributor on one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The trace.
    pub trace: TraceId,
    /// The trace's graph id.
    pub graph_id: String,
    /// The memory system (the trace's `project_id`).
    pub system: Option<String>,
    /// The case's name (its query's full node id, or its judge op id).
    pub case: String,
    /// The question.
    pub query: String,
    /// The error type; `None` when the attributor reached no verdict.
    pub error_type: Option<ErrorType>,
    /// The earliest decisive faulty op; `None` when there is no verdict.
    pub op_id: Option<String>,
    /// That op's name.
    pub op_name: Option<String>,
    /// How sure the attributor is, from 0 to 1.
    pub confidence: f64,
    /// Why: the chain of ops in words, or why no verdict was reached.
    pub reason: String,
    /// The chain: which ops held the evidence and which lost it.
    pub chain: Vec<Step>,
    /// The method (`evidence`, ...).
    pub method: String,
    /// The method's version.
    pub version: String,
    /// Microseconds the attributor spent on the case (its share of the
    /// trace's set-up included).
    pub micros: u64,
    /// The LLM that made the verdict (LLM methods only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the verdict cost (LLM methods only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// What the case showed the attributor (`None` for verdicts stored
    /// before settings were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<super::setting::Setting>,
}

/// How far an attribution run is, as its progress callback hears it
/// (after each trace, and with an LLM method after each case).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunProgress {
    /// Traces read so far.
    pub traces_read: usize,
    /// Traces the run reads.
    pub traces: usize,
    /// Failed cases found in the traces read so far.
    pub cases_seen: usize,
    /// Cases that have their verdict.
    pub cases_done: usize,
    /// What the LLM's answers cost so far (nothing with the evidence
    /// method).
    pub cost: Cost,
}

impl RunProgress {
    /// The cases the whole run will have, estimated from the traces read
    /// so far (exact once every trace is read).
    pub fn cases_expected(&self) -> usize {
        if self.traces_read == 0 || self.traces_read >= self.traces {
            return self.cases_seen;
        }
        let per_trace = self.cases_seen as f64 / self.traces_read as f64;
        (per_trace * self.traces as f64).round() as usize
    }
}

/// What an LLM verdict cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Requests sent to the endpoint (retries not counted).
    pub calls: u32,
    /// Answers replayed from the database's cache instead: they cost nothing.
    pub cached_calls: u32,
    /// Prompt tokens of every answer of the conversation, cached ones included.
    pub tokens_in: u64,
    /// Completion tokens, likewise.
    pub tokens_out: u64,
    /// Whether some token counts are estimates (the endpoint gave none).
    #[serde(default)]
    pub estimated: bool,
    /// Wall-clock seconds spent on the case, waits included.
    pub seconds: f64,
}

impl Cost {
    /// Adds another cost to this one.
    pub fn add(&mut self, other: &Cost) {
        self.calls += other.calls;
        self.cached_calls += other.cached_calls;
        self.tokens_in += other.tokens_in;
        self.tokens_out += other.tokens_out;
        self.estimated |= other.estimated;
        self.seconds += other.seconds;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_types_read_their_names_in_several_spellings() {
        for t in ErrorType::ALL {
            assert_eq!(t.name().parse::<ErrorType>(), Ok(t));
        }
        assert_eq!(
            "update_error".parse::<ErrorType>(),
            Ok(ErrorType::UpdateError)
        );
        assert_eq!(
            "Deletion".parse::<ErrorType>(),
            Ok(ErrorType::DeletionError)
        );
        let err = "Bogus".parse::<ErrorType>().unwrap_err();
        assert!(err.contains("unknown error type 'Bogus'"), "{err}");
    }
}
