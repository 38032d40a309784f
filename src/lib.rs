//! Which operation made an LLM memory system answer wrongly? memtrace stores execution traces and answers that.
//!
//! This facade crate is the embedding API: it re-exports the engine.
#![doc = include_str!("../README.md")]

pub use memtrace_engine::*;
