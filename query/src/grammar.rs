//! The pest parser generated from the one grammar file, `grammar/memtrace.pest`
//! at the workspace root: [`MemtraceParser`] and its [`Rule`]s.

#![allow(missing_docs)]

/// The pest parser generated from the one grammar file.
#[derive(pest_derive::Parser)]
#[grammar = "../../grammar/memtrace.pest"]
pub struct MemtraceParser;
