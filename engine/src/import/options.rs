//! What an import is told and what it reports: its options, the layout
//! of its input, the traces it stored and its progress.

use std::path::{Path, PathBuf};

use memtrace_storage::records::Counts;
use memtrace_storage::TraceId;
use serde::Serialize;

use crate::error::Result;

/// The name of a generated set's manifest: a file of this name in a folder
/// describes the set and is not a trace, so importing the folder skips it.
pub const SET_MANIFEST: &str = "manifest.json";

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Store a trace whose graph id is already stored, as a new trace.
    pub force: bool,
}

/// The layout of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// One export object (smartcomment or MemTraceBench), or one OTLP
    /// request (`{"resourceSpans": [...]}`, which may hold several traces).
    Json,
    /// One export object per line, or one OTLP request per line (a trace's
    /// spans may be spread over the lines).
    JsonLines,
}

impl InputFormat {
    /// The format a file name implies: `.jsonl` is JSON Lines, anything else one object.
    pub fn for_path(path: &Path) -> InputFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("jsonl") => InputFormat::JsonLines,
            _ => InputFormat::Json,
        }
    }
}

/// One stored trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedTrace {
    /// The new trace id.
    pub trace: TraceId,
    /// Its graph id.
    pub graph_id: String,
    /// What it holds.
    pub counts: Counts,
    /// `smartcomment`, `memtracebench` or `otlp`.
    pub format: String,
    /// True when this content was already stored as `trace` (an import run
    /// again, to resume one that was interrupted): nothing was written.
    pub unchanged: bool,
}

/// What happened to one file of an import run.
#[derive(Debug)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// The traces stored from it, or why nothing of it was stored.
    pub result: Result<Vec<ImportedTrace>>,
}

/// Progress of an import run, for progress bars.
#[derive(Debug, Clone)]
pub enum Progress {
    /// The run will read these files, this many bytes in all.
    Planned {
        /// Number of files.
        files: usize,
        /// Their total size.
        bytes: u64,
    },
    /// A file is being started.
    File {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
    },
    /// Bytes read of the current pass over the current file.
    Read(u64),
    /// A trace of the current file is read and valid, and is being written.
    Storing,
    /// The current file is done.
    FileDone,
}
