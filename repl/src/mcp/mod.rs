//! `memtrace mcp`: a Model Context Protocol server over stdio, built on the
//! official Rust SDK (rmcp), so that a coding agent can do what a person
//! does in the shell: list and filter traces, run statements of the query
//! language with a row limit and a time limit, EXPLAIN them, read a value,
//! list failed cases, attribute a case, run a failure pattern, and read
//! what the schema and the language are.
//!
//! It only reads unless started with `--allow-writes`, which adds the one
//! tool that stores (`execute`: ATTRIBUTE, SAVE PATTERN, DROP PATTERN).
//! Reading, it opens the database read-only for each call, so it works
//! beside `memtrace serve` and sees what was stored since the last call.
//! Results are structured and bounded (rows, characters per cell, value
//! pages); errors are MCP errors that say what to fix, with the caret line
//! of a syntax error; everything read from a trace sits under `data` and
//! the `notice` says it is data, never instructions.

mod bounds;
mod cases;
mod describe;
mod errors;
mod limits;
mod params;
mod results;
mod server;
mod statements;
mod tools;
mod traces;
mod values;

pub use server::{run, McpOptions};
