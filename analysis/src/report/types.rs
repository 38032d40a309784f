//! The report's figures: per memory system and overall, the failed cases,
//! their verdicts by error type and faulty op, the agreement with labels and
//! the most common failure patterns with examples.

use serde::Serialize;

use crate::attrib::{ErrorType, Step};
use memtrace_engine::TraceId;

/// Most failure patterns a summary keeps.
pub const MAX_PATTERNS: usize = 8;
/// Most example cases a failure pattern keeps.
pub const MAX_EXAMPLES: usize = 3;
/// Most faulty op names a summary lists one by one; the rest are summed.
pub const MAX_OPS: usize = 12;

/// The system name of traces without a `project_id`.
pub const NO_SYSTEM: &str = "-";
/// The op name of a verdict that names no op.
pub const NO_OP: &str = "(no op)";
/// The op name of a verdict whose op has no name (or is not in the trace).
pub const UNNAMED_OP: &str = "(unnamed op)";

/// The cause a trace's annotations give a case (its label).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnnotatedCause {
    /// `final_error_type` as written (one of the five types, or a
    /// non-memory label such as a judge error).
    pub error_type: Option<String>,
    /// `final_op_id`.
    pub op_id: Option<String>,
}

impl AnnotatedCause {
    /// The labelled error type when it is one of the five memory error types.
    pub fn memory_type(&self) -> Option<ErrorType> {
        self.error_type.as_deref().and_then(|t| t.parse().ok())
    }
}

/// How many cases fall under one error type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeCount {
    /// The error type.
    pub error_type: ErrorType,
    /// Attributed cases with that type.
    pub cases: usize,
}

/// How many cases a faulty op name accounts for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpCount {
    /// The op name ([`NO_OP`] or [`UNNAMED_OP`] when there is none).
    pub op_name: String,
    /// Attributed cases whose faulty op has that name.
    pub cases: usize,
}

/// Agreement of the verdicts with the labels.
///
/// Only labels naming one of the five memory error types count; other
/// labels (judge or annotation errors) are left out, as MemTraceBench's
/// scoring does. Accuracy is over the labelled cases that have a verdict;
/// a verdict that names no error type counts as wrong.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Accuracy {
    /// Failed cases labelled with a memory error type.
    pub labelled: usize,
    /// Failed cases with a label that is not a memory error type (left out).
    pub non_memory: usize,
    /// Labelled cases with a verdict: the denominator of error-type accuracy.
    pub scored: usize,
    /// Of those, verdicts naming the labelled error type.
    pub type_correct: usize,
    /// Scored cases whose label names an op: the denominator of op-id match.
    pub op_labelled: usize,
    /// Of those, verdicts naming exactly the labelled op id.
    pub op_correct: usize,
    /// `type_correct / scored`, when anything was scored.
    pub error_type_accuracy: Option<f64>,
    /// `op_correct / op_labelled`, when any scored label names an op.
    pub op_id_accuracy: Option<f64>,
}

/// One example case of a failure pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Example {
    /// The trace.
    pub trace: TraceId,
    /// The trace's graph id.
    pub graph_id: String,
    /// The case's name.
    pub case: String,
    /// The question.
    pub query: String,
    /// The gold answer(s).
    pub gold: Vec<String>,
    /// The system's answer.
    pub prediction: String,
    /// The faulty op the verdict names.
    pub op_id: Option<String>,
    /// Its name.
    pub op_name: String,
    /// The verdict's confidence.
    pub confidence: f64,
    /// The verdict's reason.
    pub reason: String,
    /// The verdict's evidence chain.
    pub chain: Vec<Step>,
    /// The case's label, when the trace has one.
    pub label: Option<AnnotatedCause>,
}

/// A failure pattern: an error type at a faulty op name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pattern {
    /// The error type.
    pub error_type: ErrorType,
    /// The faulty op's name.
    pub op_name: String,
    /// Attributed cases with this pattern.
    pub cases: usize,
    /// Up to [`MAX_EXAMPLES`] of them, in database order.
    pub examples: Vec<Example>,
}

/// The figures of one memory system, or of all of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The system (`project_id`; [`NO_SYSTEM`] when a trace has none), or
    /// `all` for the overall summary.
    pub system: String,
    /// Traces read.
    pub traces: usize,
    /// Failed cases.
    pub failed: usize,
    /// Failed cases with a stored verdict of the method.
    pub attributed: usize,
    /// Of those, verdicts that name no error type (no verdict reached).
    pub undecided: usize,
    /// Failed cases without a stored verdict of the method.
    pub not_attributed: usize,
    /// Attributed cases per error type, all five in taxonomy order.
    pub by_error_type: Vec<TypeCount>,
    /// Attributed cases per faulty op name, most first, at most [`MAX_OPS`].
    pub by_op: Vec<OpCount>,
    /// Attributed cases whose op name is beyond the listed ones.
    pub other_ops: usize,
    /// Agreement with the labels.
    pub accuracy: Accuracy,
    /// The most common patterns, most first, at most [`MAX_PATTERNS`].
    pub patterns: Vec<Pattern>,
    /// A summary of the failure patterns written by an LLM
    /// ([`Engine::write_summaries`](crate::prelude::Advise::write_summaries)), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

impl Summary {
    /// Attributed cases whose verdict names an error type.
    pub fn decided(&self) -> usize {
        self.attributed - self.undecided
    }
}

/// A diagnostic report over the failed cases of a database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The database folder.
    pub database: String,
    /// The attribution method whose verdicts are reported.
    pub method: String,
    /// The method's current version (stored verdicts may be older).
    pub method_version: String,
    /// The trace selector, when the report covers one trace.
    pub trace: Option<String>,
    /// When the report was made, in milliseconds since the Unix epoch.
    pub generated_at_ms: u64,
    /// Every system together.
    pub overall: Summary,
    /// Per memory system, by name.
    pub systems: Vec<Summary>,
    /// The model that wrote the summaries, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_by: Option<String>,
}

/// `n / d`, when `d` is not 0.
pub(super) fn ratio(n: usize, d: usize) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}
