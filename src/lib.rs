//! Which operation made an LLM memory system answer wrongly? memtrace stores execution traces and answers that.
//!
//! This facade crate is the embedding API: the database of `memtrace-engine`
//! with the analyses of `memtrace-analysis` registered, and the generator of
//! `memtrace-gen`. [`Database::open`] opens a database on which every
//! statement of the query language runs, ATTRIBUTE and the pattern
//! statements included; the traits of [`prelude`] add the analyses' methods
//! (`attribute`, `evaluate`, `report`, `run_patterns`, ...).
//! [`Database::export_parquet`] writes the stored records, failed cases
//! and verdicts as Parquet tables ([`columnar`]).
#![doc = include_str!("../README.md")]

use std::path::Path;

pub use memtrace_analysis::{attrib, llm, patterns, prelude, report, Analyses, AnalysisError};
/// The Parquet export: its tables, options and partitioning.
pub use memtrace_columnar as columnar;
pub use memtrace_columnar::{ColumnarError, ParquetOptions, ParquetSummary, Partition};
pub use memtrace_engine::*;
/// Generated traces with known root causes, and synthetic exports for benchmarks.
pub use memtrace_gen as gen;
pub use memtrace_gen::synth;

/// An open memtrace database with the analyses registered: every method of
/// [`memtrace_engine::Database`] (through `Deref`), and those of the
/// [`prelude`] traits once they are in scope.
#[derive(Debug)]
pub struct Database(memtrace_engine::Database);

impl Database {
    /// Opens the database at `path`, creating it when the path does not
    /// exist, with the analyses registered.
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Ok(Database(memtrace_analysis::open(path)?))
    }

    /// Opens the database at `path` with the analyses registered; fails
    /// when there is none.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Database> {
        Ok(Database(memtrace_analysis::open_existing(path)?))
    }

    /// Opens the database at `path` for reading only, with the analyses
    /// registered: no lock, so it opens while another process writes, and
    /// nothing is written at open (see the engine's `open_read_only`).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Database> {
        Ok(Database(memtrace_analysis::open_read_only(path)?))
    }

    /// Writes the traces `options` selects as Parquet tables in `dir`
    /// (traces, sessions, nodes, edges, ops, cases, verdicts; see
    /// [`columnar::export_parquet`]): `dir` holds the whole export
    /// afterwards, or is left as it was on an error.
    pub fn export_parquet(
        &self,
        dir: impl AsRef<Path>,
        options: &ParquetOptions,
    ) -> std::result::Result<ParquetSummary, ColumnarError> {
        memtrace_columnar::export_parquet(&self.0, dir, options)
    }

    /// The engine's database, to hand to code that takes one.
    pub fn engine(&self) -> &memtrace_engine::Database {
        &self.0
    }

    /// The engine's database, owned.
    pub fn into_engine(self) -> memtrace_engine::Database {
        self.0
    }
}

impl std::ops::Deref for Database {
    type Target = memtrace_engine::Database;

    fn deref(&self) -> &memtrace_engine::Database {
        &self.0
    }
}

/// The book's page on embedding memtrace in Rust, so that its examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/src/embedding.md")]
mod book_embedding {}
