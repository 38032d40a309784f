//! What does this text ask? The memtrace query language: parsing into an AST, with no I/O.
//!
//! The grammar lives in `grammar/memtrace.pest` at the workspace root. This
//! crate parses it; the engine resolves what it names against stored traces.

#![deny(missing_docs)]

mod error;
mod node_ref;

pub use error::QueryError;
pub use node_ref::{parse_node_ref, NodeRef};

mod grammar {
    #![allow(missing_docs)]
    /// The pest parser generated from the one grammar file.
    #[derive(pest_derive::Parser)]
    #[grammar = "../../grammar/memtrace.pest"]
    pub struct MemtraceParser;
}

pub(crate) use grammar::{MemtraceParser, Rule};
