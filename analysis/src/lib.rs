//! Why did a memory system answer wrongly, and where else does that failure recur? The analyses on top of the memtrace database: failed cases, evidence-flow and LLM attribution, evaluation against labels, failure patterns and reports.
//!
//! They use the engine's public API only, and reach the query language
//! through its extension point: [`Analyses`] runs ATTRIBUTE and the pattern
//! statements, finds the failed cases that judge ops record, and reads the
//! stored verdicts for `FIND attributions`. [`open`] opens a database with
//! it registered; the traits of [`prelude`] add the analyses' methods to a
//! [`Engine`].
//!
//! ```no_run
//! use memtrace_analysis::prelude::*;
//! let db = memtrace_analysis::open("memtrace.db")?;
//! let rows = db.query("ATTRIBUTE CASES USING evidence")?;
//! println!("{} verdicts", rows.rows.len());
//! # Ok::<(), memtrace_analysis::AnalysisError>(())
//! ```

#![deny(missing_docs)]

pub mod attrib;
mod error;
mod extension;
pub mod patterns;
pub mod report;
#[cfg(test)]
mod testing;

pub use error::{AnalysisError, BuiltinRefusal, Result};
pub use extension::{open, open_existing, open_read_only, Analyses};

/// The traits that give an [`Engine`] the analyses' methods.
pub mod prelude {
    pub use crate::attrib::advice::Advise;
    pub use crate::attrib::agent::LlmSettings;
    pub use crate::attrib::eval::Evaluate;
    pub use crate::attrib::labels::Labels;
    pub use crate::attrib::Attribute;
    pub use crate::patterns::Patterns;
    pub use crate::report::Reports;
}
pub use memtrace_engine::Engine;
/// The LLM client: its configuration, errors and wire types.
pub use memtrace_llm as llm;
