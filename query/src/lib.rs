//! What does this text ask? The memtrace query language: text to AST to logical plan, with no I/O.
//!
//! The grammar lives in `grammar/memtrace.pest` at the workspace root.
//! [`parse_statement`] turns text into a [`Statement`] (which prints back as
//! equivalent text), [`plan()`] checks it and turns it into a [`Plan`] that
//! the engine runs over stored traces; EXPLAIN prints that plan. Evaluation
//! of expressions and aggregation are pure functions here too, so the engine
//! only supplies rows.

#![deny(missing_docs)]

pub mod ast;
mod error;
pub mod eval;
mod grammar;
mod keywords;
mod node_ref;
mod parse;
pub mod plan;
#[cfg(test)]
mod roundtrip;
mod value;

pub use ast::{value_literal, Statement};
pub use error::QueryError;
pub use eval::{Collector, InSet, Pexpr, Row};
pub use keywords::{nearest, FIND_KINDS, KEYWORDS, OUTPUTS, PATTERN_STATEMENTS, STATEMENTS};
pub use node_ref::{parse_node_ref, NodeRef};
pub use parse::{parse_script, parse_statement};
pub use plan::{
    attribute_columns, field_names, plan, plan_text, plan_until, statement_params, Field, Params,
    Plan, Subject, SUBJECTS,
};
pub use value::Value;
