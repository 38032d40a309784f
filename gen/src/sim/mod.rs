//! Four simulated memory systems (Long-Context, RAG, Mem0-like,
//! EverMemOS-like) reading a synthetic world, with injected faults, natural
//! failures, counterfactual replay and labels.
//!
//! A run is a fixed schedule of operations ("slots"): the memory
//! construction ops of the system, then per question a retrieval, a
//! question-answering and an llm-judge op. The schedule depends only on the
//! world, so the same slot can be run as recorded (the system's policy, with
//! its injected faults and natural failures) or ideally (lossless and
//! complete) in a counterfactual [`Intervention`].
//!
//! Information is followed as *items*: one item per fact value of the world.
//! Memory holds items in pieces of text; a degraded piece no longer carries
//! its item. The label of a failed question is the earliest op `k` such that
//! with every op up to `k` as recorded and every later op ideal the answer is
//! wrong (while with `k` repaired it is right): the op after which the needed
//! information can no longer reach the answer. The recorded run finds it by
//! watching, after each op, which items still live anywhere (pending input,
//! buffers, memory units, retrieved context); tests confirm each label by
//! actually replaying the interventions.
//!
//! A [`Style`](crate::Style) shapes the pieces and how they are recorded: a
//! message may say several sentences around its informative one, and a piece
//! carries its item exactly while that sentence (or a faithful rewrite of
//! it, or the canonical fact) is in it; garbling removes the sentence or puts
//! a wrong value in it, and a word budget either keeps it whole or drops it.
//! Budgets are the systems' own losses, absent from ideal runs like window
//! trimming.

// The files, each built only on those above it (methods of `Sim` and of the
// recorder `Rec` are added file by file):
//   types        the systems, the error types, sizes and rates
//   plan         the ops of a run, the faults planned into them, interventions
//   outcome      what a run yields: deviations, outcomes, labels
//   text         Python reprs and word counts
//   memory       messages as read, pieces, memory units, the state of a run
//   schedule     `Sim`: a world read by one system, its schedule and fault plan
//   pieces       making and degrading pieces of memory text
//   record       the recorder: a run written through a `TraceBuilder`
//   long_context, rag, mem0, evermemos
//                each system's memory construction ops, run and recorded
//   retrieve     retrieval for a question
//   answer       answering and judging a question
//   run          running the schedule: replay, recording, labels
mod answer;
mod evermemos;
mod long_context;
mod mem0;
mod memory;
mod outcome;
mod pieces;
mod plan;
mod rag;
mod record;
mod retrieve;
mod run;
mod schedule;
#[cfg(test)]
mod test_support;
mod text;
mod types;

pub use outcome::{Deviation, Outcome, Recorded, TrueCause};
pub use plan::{Fault, FaultKind, Intervention, Slot};
pub use schedule::Sim;
pub use text::py_str;
pub use types::{ErrorType, SimParams, System};
