//! What a run yields: the local deviations from ideal behaviour, which
//! questions are answered right, the labels of the failed ones, and a
//! recorded run with the op id of each slot.

use super::types::ErrorType;

/// The true cause of a failed question, as the generator planted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrueCause {
    /// The question.
    pub question: usize,
    /// The earliest decisive op.
    pub slot: usize,
    /// Its error type.
    pub error_type: ErrorType,
}

/// A local deviation from ideal behaviour: at `slot`, `item` (or the
/// question's context) was lost or degraded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deviation {
    /// Where.
    pub slot: usize,
    /// Which item.
    pub item: usize,
    /// How it is typed.
    pub error_type: ErrorType,
    /// Whether an injected fault (not the system's own behaviour) did it.
    pub injected: bool,
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Per question: was the prediction right?
    pub correct: Vec<bool>,
    /// Local deviations from ideal behaviour, in execution order.
    pub deviations: Vec<Deviation>,
    /// Per planned fault: did it change anything?
    pub fired: Vec<bool>,
    /// Per item: the op after which it lived nowhere (construction only).
    pub deaths: Vec<Option<(usize, ErrorType)>>,
    /// Per question: did the retrieved context hold every needed item?
    pub context_complete: Vec<bool>,
}

/// A recorded run: its outcome, the op id of each slot and the labels.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// What happened.
    pub outcome: Outcome,
    /// The smartcomment op id of each slot.
    pub op_ids: Vec<String>,
    /// Labels of the failed questions.
    pub labels: Vec<TrueCause>,
    /// What the answer model said, per question.
    pub predictions: Vec<String>,
}
