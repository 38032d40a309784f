//! Which operation made an LLM memory system answer wrongly? memtrace stores execution traces and answers that.
//!
//! This crate is the embedding API. [`Database::open`] (or
//! [`Database::open_read_only`]) opens a database on which every statement
//! of the query language runs, ATTRIBUTE and the pattern statements
//! included; the traits of [`prelude`] add the analyses' methods
//! (`attribute`, `evaluate`, `report`, `run_patterns`, ...), and
//! [`Database::export_parquet`] writes the stored records as Parquet tables.
//!
//! ```no_run
//! use memtrace::prelude::*;
//! use memtrace::{Database, ImportOptions};
//!
//! let db = Database::open("memtrace.db")?;
//! db.import_paths(&["trace.json".into()], &ImportOptions::default(), &mut |_| {});
//! let rows = db.query("SHOW TRACES")?;
//! println!("{} traces", rows.rows.len());
//! for case in db.failed_cases(None)? {
//!     println!("{} in {}", case.id, case.graph_id);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The book's "Embedding in Rust" chapter walks through it; the modules
//! below the root ([`engine`], [`query`]) are the layers it is built on,
//! for tools that need their lower-level calls.

#![deny(missing_docs)]

mod analyses;
mod database;

pub use database::Database;

pub use memtrace_engine::{
    Batch, BatchSink, Cancel, Case, Cell, CellFn, Column, Edge, EngineError, ExportFormat,
    FileReport, GraphEdge, GraphNode, GraphOptions, ImportOptions, ImportedTrace, InputFormat,
    LogEntry, Node, OpenOptions, Operation, Params, Progress, QueryGraph, QueryResult, Result,
    Session, Stats, StorageError, TraceId, TraceInfo, TraceView, Value, Variable,
};

pub use memtrace_analysis::{attrib, llm, patterns, prelude, report, AnalysisError};
pub use memtrace_columnar::{ColumnarError, ParquetOptions, ParquetSummary, Partition};

/// The Parquet export: its tables, options and partitioning.
pub use memtrace_columnar as columnar;
/// The engine under [`Database`]: plans, snapshots, caches and the
/// extension point, for tools built on memtrace.
pub use memtrace_engine as engine;
/// The query language: parsing, parameters and plans.
pub use memtrace_engine::query;
/// Generated traces with known root causes, and synthetic exports for benchmarks.
pub use memtrace_gen as gen;

/// The book's page on embedding memtrace in Rust, so that its examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/src/embedding.md")]
mod book_embedding {}
