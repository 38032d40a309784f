//! Which operation failed, when we injected the fault ourselves? Generated traces with known
//! root causes: the synthetic conversations
//! ("worlds") that simulated memory systems read and are questioned about,
//! the four simulated systems with injected faults and labels by
//! counterfactual replay, the styles in which a run is recorded, the
//! builder that records runs as smartcomment exports, and whole generated
//! sets with their manifest; and synthetic exports of any size for
//! benchmarks ([`synth`]).

#![deny(missing_docs)]

pub mod builder;
mod error;
pub mod set;
pub mod sim;
pub mod style;
pub mod synth;
pub mod world;

pub use builder::{TraceBuilder, VarRef};
pub use error::{GenError, Result};
pub use set::{generate_set, generate_trace, GenSpec, TraceSummary};
pub use sim::{ErrorType, Intervention, Sim, SimParams, System};
pub use style::{Style, StyleSpec};
pub use world::{
    Fact, Message, MessageKind, Question, QuestionKind, World, WorldSession, WorldSpec,
};
