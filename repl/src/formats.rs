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
