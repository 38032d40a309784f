//! Whether an op can be the faulty op of an error type: a verdict that
//! names a retrieval op for an extraction error, the judge, or an op after
//! the answer is refused, and the model is told why.

use super::super::case::FailedCase;
use super::super::flow::answer_op;
use super::super::model::TraceModel;
use super::super::verdict::ErrorType;

/// What part an op plays, as far as fitting an error type goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// The judge that scored the answer: never the memory system's fault.
    Judge,
    /// The op that wrote the case's answer (or any generation op).
    Answer,
    /// An op that retrieves from memory.
    Retrieval,
    /// Anything else: ops that extract, write, update or delete memory.
    Memory,
}

impl OpKind {
    /// Lower-case name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Judge => "judge",
            OpKind::Answer => "answering",
            OpKind::Retrieval => "retrieval",
            OpKind::Memory => "memory-writing",
        }
    }
}

fn lower(s: Option<&str>) -> String {
    s.unwrap_or("").to_ascii_lowercase()
}

/// The kind of `op` for `case`.
pub fn kind(model: &TraceModel, case: &FailedCase, op: usize) -> OpKind {
    let name = lower(model.ops[op].op_name.as_deref());
    let category = lower(model.ops[op].category.as_deref());
    if name.contains("judge") {
        return OpKind::Judge;
    }
    let answer = answer_op(model, case);
    if answer == Some(op)
        || matches!(
            category.as_str(),
            "generation" | "answer" | "qa" | "llm_output" | "response"
        )
    {
        return OpKind::Answer;
    }
    if category.contains("retriev") || category.contains("search") || category.contains("recall") {
        return OpKind::Retrieval;
    }
    if category == "evaluation" {
        return OpKind::Answer;
    }
    OpKind::Memory
}

/// `Ok` when `op` can be the faulty op of `error_type` in `case`; else why
/// not, in a sentence for the model.
pub fn check(
    model: &TraceModel,
    case: &FailedCase,
    error_type: ErrorType,
    op: usize,
) -> Result<(), String> {
    let k = kind(model, case, op);
    let id = &model.ops[op].op_id;
    let name = model.ops[op].op_name.as_deref().unwrap_or("?");
    if k == OpKind::Judge {
        return Err(format!(
            "{id} ({name}) is the judge that scored the answer; it is not part of the memory \
             system and cannot be the faulty op"
        ));
    }
    if let Some(a) = answer_op(model, case) {
        if op > a {
            return Err(format!(
                "{id} ({name}) ran after the answer was written by {} and cannot have caused it",
                model.ops[a].op_id
            ));
        }
    }
    let fits = match error_type {
        ErrorType::ResponseError => k == OpKind::Answer,
        ErrorType::RetrievalError => k == OpKind::Retrieval,
        ErrorType::ExtractionError | ErrorType::UpdateError | ErrorType::DeletionError => {
            k == OpKind::Memory
        }
    };
    if fits {
        return Ok(());
    }
    let wants = match error_type {
        ErrorType::ResponseError => "the op that wrote the answer",
        ErrorType::RetrievalError => "a retrieval op",
        ErrorType::ExtractionError => "an op that should have written the fact into memory",
        ErrorType::UpdateError => "an op that updated a memory unit",
        ErrorType::DeletionError => "an op that deleted a memory unit",
    };
    Err(format!(
        "{error_type} names {wants}; {id} ({name}) is a {} op. Choose the op that fits, or \
         another error type",
        k.name()
    ))
}
