//! The evidence-flow attributor: follows each needed evidence item forward
//! from its message through the ops that carried it, finds where it was
//! lost, and names the earliest decisive faulty op with its error type.
//!
//! What it assumes, and nothing else: op categories as MemBase records them
//! (`extraction`, `update`, `retrieval`, `evaluation`), `memory_entry`
//! variables or variables a retrieval op reads or returns as memory units,
//! versions of one variable as its successive states, and text. No system,
//! op name or class name is assumed.
//!
//! 1. The item of each evidence message is the sentence(s) the question and
//!    gold answer point to ([`Matcher::item`]); a variable *holds* it when a
//!    local window of one of its string leaves covers most of its stems.
//! 2. Carriers: from the message, every variable that a construction op
//!    made from a carrier and that holds the item. A memory unit stays alive
//!    until a newer version replaces it or it is deleted; any other carrier
//!    until its last reader. The op after which no carrier is alive lost it:
//!    `DeletionError` when it deleted the last unit, `ExtractionError` when
//!    it is an extraction op or no memory unit ever held the item,
//!    `UpdateError` when a unit had held it (or an update op dropped what an
//!    extraction op had passed on).
//! 3. At question time: the retrieved set is what the retrieval ops that
//!    read the query return. An item held by a live unit that no retrieved
//!    variable holds is a `RetrievalError` of that retrieval op; retrieved
//!    but missing from the context the answering op read, a
//!    `RetrievalError` of the op that built that context. With every item
//!    in the context, the answering op is at fault (`ResponseError`).
//! 4. The earliest failure point over all items, in execution order, is
//!    the verdict.

mod carriers;
mod chain;
mod failures;
mod finding;
mod items;
mod roles;
mod types;
mod weighing;

pub use roles::answer_op;
pub use types::{Alternative, Finding, Flow};

#[cfg(test)]
mod tests;
