//! Answers questions over the stored traces: the memtrace [`Database`], import and export of traces.
//!
//! ```no_run
//! let db = memtrace_engine::Database::open("memtrace.db")?;
//! for t in db.traces()? {
//!     println!("{} {} variables", t.graph_id, t.counts.variables);
//! }
//! # Ok::<(), memtrace_engine::EngineError>(())
//! ```

#![deny(missing_docs)]

pub mod attrib;
mod cache;
mod catalog;
mod db;
mod error;
mod exec;
mod export;
pub mod gen;
mod graph;
mod import;
mod model;
mod parse;
pub mod patterns;
pub mod report;
pub mod synth;
pub mod text;
mod timestamp;

pub use cache::CacheStats;
pub use catalog::{TraceCatalog, TraceEdges, TraceOps};
pub use db::{Database, TraceView};
pub use error::{EngineError, Result};
pub use exec::{columns_of, to_json, QueryResult, Sink};
pub use export::{dot_escape, mermaid_escape, ExportFormat};
pub use graph::{Admit, Cancel, Direction, TraceGraph, Visit};
pub use import::{FileReport, ImportOptions, ImportedTrace, InputFormat, Progress};
/// The LLM client: its configuration, errors and wire types.
pub use memtrace_llm as llm;
pub use memtrace_query::ast::{Direction as WalkDirection, Output};
pub use memtrace_query::plan::traverse_columns;
pub use memtrace_query::{
    field_names, Params, Plan, Statement, Value, FIND_KINDS, KEYWORDS, OUTPUTS, SUBJECTS,
};
pub use memtrace_storage::records::Counts;
pub use memtrace_storage::{LocalId, StorageError, TraceId};
pub use model::{Case, Edge, LogEntry, Node, Operation, Session, Stats, TraceInfo, Variable};
pub use parse::json_kind;
pub use timestamp::iso_utc;

/// Raw RocksDB batched puts: the ceiling that import benchmarks compare against.
pub mod peer {
    pub use memtrace_storage::dir_bytes;
    pub use memtrace_storage::peer::RawPeer;
}
