//! Generated traces with known root causes: the synthetic conversations
//! ("worlds") that simulated memory systems read and are questioned about,
//! and the builder that records such runs as smartcomment exports.

pub mod builder;
pub mod set;
pub mod sim;
pub mod world;

pub use builder::{TraceBuilder, VarRef};
pub use world::{
    Fact, Message, MessageKind, Question, QuestionKind, World, WorldSession, WorldSpec,
};
