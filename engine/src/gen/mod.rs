//! Generated traces with known root causes: the synthetic conversations
//! ("worlds") that simulated memory systems read and are questioned about,
//! the four simulated systems with injected faults and labels by
//! counterfactual replay, the builder that records their runs as
//! smartcomment exports, and whole generated sets with their manifest.

pub mod builder;
pub mod set;
pub mod sim;
pub mod world;

pub use builder::{TraceBuilder, VarRef};
pub use set::{generate_set, generate_trace, GenSpec, TraceSummary};
pub use sim::{ErrorType, Intervention, Sim, SimParams, System};
pub use world::{
    Fact, Message, MessageKind, Question, QuestionKind, World, WorldSession, WorldSpec,
};
