//! Generated traces with known root causes: the synthetic conversations
//! ("worlds") that simulated memory systems read and are questioned about.

pub mod world;

pub use world::{
    Fact, Message, MessageKind, Question, QuestionKind, World, WorldSession, WorldSpec,
};
