//! The output formats the command line offers: of listings and of exported traces.

use clap::ValueEnum;

/// Output format of listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Listing {
    /// Aligned columns.
    Table,
    /// JSON.
    Json,
}

/// Output format of listings that are also read record by record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Records {
    /// Aligned columns.
    Table,
    /// A JSON array of objects.
    Json,
    /// JSON Lines: one object per line.
    Jsonl,
    /// RFC 4180 CSV with a header line.
    Csv,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportAs {
    /// The smartcomment export object (with `data.annotations` when present).
    Smartcomment,
    /// Graphviz DOT.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
    /// Parquet tables of every trace (or those --trace and --project pick) in a folder.
    Parquet,
}

/// How a Parquet export splits each table's files into folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PartitionBy {
    /// One file per table.
    None,
    /// A `trace=ID` folder per trace.
    Trace,
    /// A `project_id=NAME` folder per project.
    Project,
}

impl From<PartitionBy> for memtrace::Partition {
    fn from(p: PartitionBy) -> memtrace::Partition {
        match p {
            PartitionBy::None => memtrace::Partition::None,
            PartitionBy::Trace => memtrace::Partition::Trace,
            PartitionBy::Project => memtrace::Partition::Project,
        }
    }
}
