//! Generated traces with known root causes: the synthetic conversations
//! ("worlds") that simulated memory systems read and are questioned about,
//! the four simulated systems with injected faults and labels by
//! counterfactual replay, the styles in which a run is recorded, the
//! builder that records runs as smartcomment exports, and whole generated
//! sets with their manifest.

pub mod builder;
pub mod set;
pub mod sim;
pub mod style;
pub mod world;

pub use builder::{TraceBuilder, VarRef};
pub use set::{generate_set, generate_trace, GenSpec, TraceSummary};
pub use sim::{ErrorType, Intervention, Sim, SimParams, System};
pub use style::{Style, StyleSpec};
pub use world::{
    Fact, Message, MessageKind, Question, QuestionKind, World, WorldSession, WorldSpec,
};
