//! Import of JSON Lines: every line read and checked before any is
//! written, exports and OTLP requests not mixed in one file.

use std::io::BufRead;

use memtrace_storage::Store;
use serde_json::{Map, Value};

use super::input::{invalid, otlp_traces, parse_reader, refuse_start, Input, Ready};
use super::options::{ImportOptions, ImportedTrace, Progress};
use super::records::Invalid;
use super::write::{import_json, store_all, stored_already};
use crate::error::{EngineError, Result};

/// Imports JSON Lines from a buffered reader. Every line is validated before
/// any is stored; `reopen` gives the input again for the writing pass (the
/// lines are kept in memory when it is `None`). A file whose lines are OTLP
/// requests is read whole, and its spans are grouped by trace across lines.
pub(crate) fn import_lines(
    store: &Store,
    mut first: Box<dyn BufRead + '_>,
    reopen: Option<&dyn Fn() -> std::io::Result<Box<dyn BufRead>>>,
    source: &str,
    opts: &ImportOptions,
    progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Vec<ImportedTrace>> {
    let io = |e: std::io::Error| EngineError::Io {
        path: source.to_string(),
        source: e,
    };
    // A file wrong from its first bytes is refused before its first line
    // (which may be all of it) is read.
    refuse_start(first.fill_buf().map_err(io)?, source)?;
    let checked = check_lines(store, &mut first, reopen.is_none(), source, opts, progress)?;
    if !checked.requests.is_empty() {
        let traces = otlp_traces(checked.requests, checked.read, source, false)?;
        return store_all(store, traces, opts, source);
    }
    match reopen {
        Some(reopen) => import_lines_again(store, reopen, source, opts),
        None => import_kept_lines(store, checked.kept, source, opts),
    }
}

/// What the checking pass over a JSON Lines file found.
struct CheckedLines {
    /// The lines that are exports, by line number, when kept in memory.
    kept: Vec<(usize, String)>,
    /// The lines that are OTLP requests, each named by its place.
    requests: Vec<(String, Map<String, Value>)>,
    /// The bytes read.
    read: u64,
}

/// Reads and checks every line of `first`: each export parsed and
/// validated (and kept when `keep`), its graph id checked against the
/// other lines' and the store's; each OTLP request kept whole.
fn check_lines(
    store: &Store,
    first: &mut Box<dyn BufRead + '_>,
    keep: bool,
    source: &str,
    opts: &ImportOptions,
    mut progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<CheckedLines> {
    let io = |e: std::io::Error| EngineError::Io {
        path: source.to_string(),
        source: e,
    };
    let mut kept: Vec<(usize, String)> = Vec::new();
    let mut graph_ids: Vec<(String, usize)> = Vec::new();
    let mut requests: Vec<(String, Map<String, Value>)> = Vec::new();
    let mut line = String::new();
    let mut n = 0;
    let mut read = 0u64;
    loop {
        line.clear();
        let got = read_line(first, &mut line).map_err(|e| match e {
            LineError::Io(e) => io(e),
            LineError::Utf8 => invalid(
                &format!("{source}:{}", n + 1),
                Invalid {
                    path: "$".into(),
                    reason: "the line is not valid UTF-8".into(),
                },
            ),
        })?;
        if got == 0 {
            break;
        }
        n += 1;
        read += got as u64;
        if let Some(p) = progress.as_mut() {
            p(Progress::Read(read));
        }
        if blank(&line, n) {
            continue;
        }
        let at = format!("{source}:{n}");
        let mixed = |what: &str| {
            invalid(
                &at,
                Invalid {
                    path: "$".into(),
                    reason: format!(
                        "{what}; a JSON Lines file holds exports or OTLP requests, not both"
                    ),
                },
            )
        };
        let Ready {
            trace: t, mut read, ..
        } = match parse_reader(line.as_bytes(), &at, line.len(), None)? {
            Input::Otlp(doc, _) => {
                if let Some((_, first)) = graph_ids.first() {
                    return Err(mixed(&format!(
                        "this line is an OTLP request, line {first} an export"
                    )));
                }
                requests.push((at, doc));
                continue;
            }
            Input::Export(r) => {
                if let Some((first, _)) = requests.first() {
                    let first = first.rsplit(':').next().unwrap_or_default();
                    return Err(mixed(&format!(
                        "this line is an export, line {first} an OTLP request"
                    )));
                }
                *r
            }
        };
        if let Some((_, first_line)) = graph_ids.iter().find(|(g, _)| *g == t.graph_id) {
            if !opts.force {
                return Err(invalid(
                    &at,
                    Invalid {
                        path: "graph_id".into(),
                        reason: format!("{:?} already appears on line {first_line}", t.graph_id),
                    },
                ));
            }
        }
        // Other content under a stored graph id fails the file before
        // anything is written; the same content is skipped when written.
        stored_already(store, &t.graph_id, &mut read.digest, opts, &at)?;
        graph_ids.push((t.graph_id, n));
        if keep {
            kept.push((n, std::mem::take(&mut line)));
        }
    }
    Ok(CheckedLines {
        kept,
        requests,
        read,
    })
}

/// Writes the exports of a JSON Lines file read again through `reopen`.
fn import_lines_again(
    store: &Store,
    reopen: &dyn Fn() -> std::io::Result<Box<dyn BufRead>>,
    source: &str,
    opts: &ImportOptions,
) -> Result<Vec<ImportedTrace>> {
    let io = |e: std::io::Error| EngineError::Io {
        path: source.to_string(),
        source: e,
    };
    let mut out = Vec::new();
    let mut line = String::new();
    let mut again = reopen().map_err(io)?;
    let mut n = 0;
    loop {
        line.clear();
        let got = read_line(&mut again, &mut line).map_err(|_| {
            io(std::io::Error::other(
                "the file changed while it was imported",
            ))
        })?;
        if got == 0 {
            break;
        }
        n += 1;
        if blank(&line, n) {
            continue;
        }
        let at = format!("{source}:{n}");
        out.extend(import_json(
            store,
            line.as_bytes(),
            &at,
            line.len(),
            opts,
            None,
        )?);
    }
    Ok(out)
}

/// Writes the exports of a JSON Lines file kept in memory, by line number.
fn import_kept_lines(
    store: &Store,
    kept: Vec<(usize, String)>,
    source: &str,
    opts: &ImportOptions,
) -> Result<Vec<ImportedTrace>> {
    let mut out = Vec::new();
    for (n, text) in kept {
        out.extend(import_json(
            store,
            text.as_bytes(),
            &format!("{source}:{n}"),
            text.len(),
            opts,
            None,
        )?);
    }
    Ok(out)
}

/// Whether line `n` (from 1) of a JSON Lines file holds nothing to read:
/// blanks only, after the byte order mark the first line may start with.
fn blank(line: &str, n: usize) -> bool {
    let line = if n == 1 {
        line.strip_prefix('\u{feff}').unwrap_or(line)
    } else {
        line
    };
    line.trim().is_empty()
}

enum LineError {
    Io(std::io::Error),
    Utf8,
}

fn read_line(r: &mut dyn BufRead, line: &mut String) -> std::result::Result<usize, LineError> {
    let mut buf = Vec::new();
    let n = r.read_until(b'\n', &mut buf).map_err(LineError::Io)?;
    line.push_str(std::str::from_utf8(&buf).map_err(|_| LineError::Utf8)?);
    Ok(n)
}
