//! Diagnostic reports: per memory system, how many failed cases an
//! attribution method explained, with which error types and faulty ops,
//! how often it agrees with the labels, and the most common failure
//! patterns with examples. Written as Markdown and as one self-contained
//! HTML page with inline SVG charts.
//!
//! ```no_run
//! use memtrace_analysis::{attrib::Method, prelude::*};
//! let db = memtrace_analysis::open("memtrace.db")?;
//! let report = db.report(Method::Evidence, None)?;
//! let (md, html) = report.write(std::path::Path::new("report"))?;
//! println!("{} {}", md.display(), html.display());
//! # Ok::<(), memtrace_analysis::AnalysisError>(())
//! ```

mod charts;
mod files;
mod gather;
mod html;
mod markdown;
pub(crate) mod summaries;
#[cfg(test)]
mod test_support;
mod text;
mod types;

pub use gather::Reports;
pub use text::MAX_CHARS;
pub use types::{
    Accuracy, AnnotatedCause, Example, OpCount, Pattern, Report, Summary, TypeCount, MAX_EXAMPLES,
    MAX_OPS, MAX_PATTERNS, NO_OP, NO_SYSTEM, UNNAMED_OP,
};
