//! What is stored, and what do queries over it return? The memtrace database: the [`Engine`], import and export of traces, the trace cache, the query executor, and the extension point through which analyses run their statements.
//!
//! ```no_run
//! let db = memtrace_engine::Engine::open("memtrace.db")?;
//! for t in db.traces()? {
//!     println!("{} {} variables", t.graph_id, t.counts.variables);
//! }
//! # Ok::<(), memtrace_engine::EngineError>(())
//! ```

#![deny(missing_docs)]

mod cache;
mod catalog;
mod db;
mod error;
mod exec;
mod export;
mod extension;
mod graph;
mod import;
mod model;
mod otlp;
mod pyjson;
mod sniff;
mod timestamp;
mod view;

pub use cache::{CacheStats, TraceState};
pub use catalog::{OpLabel, TraceCatalog, TraceEdges, TraceOps, VarLabel};
pub use db::{
    Call, Definition, Engine, Extension, OpenOptions, OtlpRequest, Snapshot, TraceResult,
};
pub use error::{EngineError, Result};
pub use exec::batch::{Batch, BatchSink, Column, TextColumn};
pub use exec::cancel::Cancel;
pub use exec::ctx::lazy;
pub use exec::run::columns_of;
pub use exec::subgraph::{GraphEdge, GraphNode, GraphOptions, QueryGraph};
pub use exec::value::{from_json, to_json, Cell, CellFn, CellSink, QueryResult, Sink};
pub use export::{dot_escape, mermaid_escape, ExportFormat};
pub use extension::{statement_name, CaseOrigin, CasePick, DerivedCase, ResultRow};
pub use graph::{Admit, TraceGraph, Visit};
pub use import::records::json_kind;
pub use import::{FileReport, ImportOptions, ImportedTrace, InputFormat, Progress, SET_MANIFEST};
/// The query language: its parser, plans and values.
pub use memtrace_query as query;
pub use memtrace_query::ast::{Direction, Direction as WalkDirection, Output};
pub use memtrace_query::plan::traverse_columns;
pub use memtrace_query::{
    field_names, Params, Plan, Statement, Value, FIND_KINDS, KEYWORDS, OUTPUTS, SUBJECTS,
};
pub use memtrace_storage::records::{Counts, TraceRecord, ValueRef, VarRecord};
pub use memtrace_storage::store::BULK_BYTES;
pub use memtrace_storage::TextRun;
pub use memtrace_storage::{LocalId, StorageError, TraceId};
pub use model::{Case, Edge, LogEntry, Node, Operation, Session, Stats, TraceInfo, Variable};
pub use otlp::label_fails;
pub use otlp::split::{split_request, OtlpMalformed, OtlpPart, OtlpSpanHead, OtlpSplit};
/// The graph library a [`QueryGraph`] is built on, for its algorithms.
pub use petgraph;
pub use timestamp::{check as check_timestamp, civil_from_days, iso_utc, now_ms};
pub use view::{LazyValues, TraceView};
