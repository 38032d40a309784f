//! How do other tools read what memtrace stores? The Parquet export: traces, sessions, nodes, edges, ops, failed cases and stored verdicts as Parquet tables that DuckDB, Polars, pyarrow or Spark read as they are.
//!
//! [`export_parquet`] writes one folder per [`Table`] into an output folder,
//! optionally split into Hive partitions by trace or by project
//! ([`Partition`]), with a manifest ([`MANIFEST`]) beside them. The folder
//! appears whole or not at all.
//!
//! ```no_run
//! let db = memtrace_analysis::open_read_only("memtrace.db")?;
//! let options = memtrace_columnar::ParquetOptions::default();
//! let summary = memtrace_columnar::export_parquet(&db, "out", &options)?;
//! println!("{} traces, {} nodes", summary.traces, summary.rows["nodes"]);
//! # Ok::<(), memtrace_columnar::ColumnarError>(())
//! ```

#![deny(missing_docs)]

mod error;
mod manifest;
pub mod partition;
mod tables;
mod write;

pub use error::{ColumnarError, Result};
pub use manifest::MANIFEST;
pub use tables::{type_name, Table, TraceRecords};
pub use write::{
    export_parquet, hive_value, ParquetOptions, ParquetSummary, Partition, HIVE_NULL,
    SCHEMA_VERSION,
};
