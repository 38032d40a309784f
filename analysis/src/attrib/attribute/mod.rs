//! Attribution: which failed cases to attribute, the evidence-flow and LLM
//! methods run over them trace by trace, and the verdicts appended to the
//! database without repeating the latest one.

mod database;
mod evidence_flow;
mod llm;
mod runs;
mod search;
mod selection;
mod types;

pub use database::Attribute;
pub(crate) use evidence_flow::attribute_trace;
pub(crate) use runs::attribute_with;
pub use types::{AttributeRequest, RecallReport};

#[cfg(test)]
mod tests;
