//! What the ops and variables of a trace are to the attributor: which op
//! retrieves, answers or judges, and which variable is a prompt.

use crate::attrib::case::FailedCase;
use crate::attrib::model::TraceModel;

/// An op's category, or empty.
pub(super) fn category(model: &TraceModel, op: usize) -> &str {
    model.ops[op].category.as_deref().unwrap_or("")
}

/// An op's name, or empty.
pub(super) fn op_name(model: &TraceModel, op: usize) -> &str {
    model.ops[op].op_name.as_deref().unwrap_or("")
}

/// Whether an op retrieves from memory.
pub(super) fn is_retrieval(model: &TraceModel, op: usize) -> bool {
    category(model, op).eq_ignore_ascii_case("retrieval")
}

/// Ops of the question phase: what they make does not keep evidence alive.
pub(super) fn is_question_op(model: &TraceModel, op: usize) -> bool {
    let c = category(model, op);
    c.eq_ignore_ascii_case("retrieval") || c.eq_ignore_ascii_case("evaluation")
}

/// Whether an op judges an answer.
pub(super) fn is_judge(model: &TraceModel, op: usize) -> bool {
    op_name(model, op).to_ascii_lowercase().contains("judge")
}

/// The op that made a variable: the first op that wrote it.
pub(super) fn maker(model: &TraceModel, var: usize) -> Option<usize> {
    model.made_by(var).iter().copied().min()
}

/// The op that answered a case: it reads the query and writes the
/// prediction (not the judge, not a retrieval).
pub fn answer_op(m: &TraceModel, case: &FailedCase) -> Option<usize> {
    let query = case.query_node.as_deref().and_then(|q| m.var(q))?;
    let candidates: Vec<usize> = m
        .read_by(query)
        .iter()
        .copied()
        .filter(|&o| !is_judge(m, o) && !is_retrieval(m, o))
        .collect();
    candidates
        .iter()
        .copied()
        .find(|&o| {
            m.outputs(o)
                .iter()
                .any(|&v| m.class(v) == "prediction" || m.value(v).contains(&case.prediction))
        })
        .or_else(|| candidates.last().copied())
}

/// Whether a variable is a prompt.
pub(super) fn is_prompt(model: &TraceModel, var: usize) -> bool {
    model.vars[var].category.as_deref() == Some("prompt")
}

/// Whether a question asks for the latest value of something that changed.
pub(super) fn asks_for_latest(model: &TraceModel, case: &FailedCase) -> bool {
    let kind = case
        .query_node
        .as_deref()
        .and_then(|q| model.var(q))
        .and_then(|q| {
            model.vars[q]
                .metadata
                .get("question_kind")
                .and_then(|k| k.as_str())
                .map(str::to_ascii_lowercase)
        });
    match kind {
        Some(k) => k.contains("update"),
        None => case.query.trim_end().ends_with("(now)"),
    }
}

/// The position of the first op that read a variable (its place in time).
pub(super) fn first_read(model: &TraceModel, var: usize) -> usize {
    model.read_by(var).first().copied().unwrap_or(usize::MAX)
}
