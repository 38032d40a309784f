//! Import of smartcomment exports, MemTraceBench files, OpenTelemetry
//! traces (OTLP JSON, see [`crate::otlp`]) and JSON Lines of any of them,
//! from readers, files and folders. Each trace is checked whole before
//! anything of it is written, then written in one batch.
//!
//! From the bottom up: `records` (the typed records an export is read
//! into), `checking_reader` (reads any input and names what is wrong),
//! `fast_reader` (reads a well-formed export on two threads, or gives up),
//! `validate` (an export's references), `input` (one input read into
//! checked traces), `write` (checked traces stored), `lines` (JSON Lines),
//! `files` (files and folders), and `options` (what an import is told and
//! reports).

mod checking_reader;
mod fast_reader;
mod files;
mod input;
mod json_key;
mod lines;
mod options;
pub(crate) mod records;
mod validate;
mod write;

pub(crate) use files::{collect_files, import_file_as, import_files};
pub(crate) use lines::import_lines;
pub use options::{FileReport, ImportOptions, ImportedTrace, InputFormat, Progress, SET_MANIFEST};
pub(crate) use write::{import_json, import_otlp};
