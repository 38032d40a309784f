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
}
