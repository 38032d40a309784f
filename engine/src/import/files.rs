//! Import of files and folders: the files a run reads, and JSON files read
//! and checked one ahead of the one being written.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memtrace_storage::Store;

use super::input::{parse_bytes, read_traces, refuse_start, traces_of, Ready};
use super::lines::import_lines;
use super::options::{
    FileReport, ImportOptions, ImportedTrace, InputFormat, Progress, SET_MANIFEST,
};
use super::write::{import_json, store_all};
use crate::error::{EngineError, Result};
use crate::sniff;

/// The files an import of `paths` reads: files as given, folders searched
/// recursively for `*.json` and `*.jsonl`, in name order, leaving out the
/// `manifest.json` that `memtrace gen` writes beside its traces.
pub(crate) fn collect_files(
    paths: &[PathBuf],
) -> Vec<std::result::Result<PathBuf, (PathBuf, std::io::Error)>> {
    fn walk(dir: &Path, out: &mut Vec<std::result::Result<PathBuf, (PathBuf, std::io::Error)>>) {
        let mut entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(e) => {
                out.push(Err((dir.to_path_buf(), e)));
                return;
            }
        };
        entries.sort();
        for p in entries {
            let manifest = p.file_name().and_then(|n| n.to_str()) == Some(SET_MANIFEST);
            if p.is_dir() {
                walk(&p, out);
            } else if !manifest
                && matches!(
                    p.extension()
                        .and_then(|e| e.to_str())
                        .map(|e| e.to_ascii_lowercase())
                        .as_deref(),
                    Some("json" | "jsonl")
                )
            {
                out.push(Ok(p));
            }
        }
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out);
        } else if p.exists() {
            out.push(Ok(p.clone()));
        } else {
            out.push(Err((
                p.clone(),
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
            )));
        }
    }
    out
}

/// The traces of a JSON file read and checked, not yet stored.
type ParsedFile = Result<Vec<Ready>>;

/// Reads and checks one JSON file (no store involved).
fn parse_json_file(path: &Path) -> ParsedFile {
    parse_json_file_as(path, &path.display().to_string())
}

/// [`parse_json_file`], the file named `source` in messages and records.
fn parse_json_file_as(path: &Path, source: &str) -> ParsedFile {
    let source = source.to_string();
    let file = File::open(path).map_err(|e| EngineError::Io {
        path: source.clone(),
        source: e,
    })?;
    let size = file_len(&file);
    // A file that is wrong from its first bytes is refused before it is
    // read whole (mapping reads it all).
    let mut head = Vec::with_capacity(sniff::HEAD);
    (&file)
        .take(sniff::HEAD as u64)
        .read_to_end(&mut head)
        .map_err(|e| EngineError::Io {
            path: source.clone(),
            source: e,
        })?;
    refuse_start(&head, &source)?;
    if size >= MAP_BYTES {
        // A large file is read where the kernel keeps it (its page cache)
        // instead of being copied into fresh memory, which the kernel would
        // first fill with zeros. (Were the file cut short while it is read,
        // the process would stop with SIGBUS before anything is written.)
        //
        // SAFETY: the map is read-only and private, and lives only while
        // the file is parsed; the bytes are checked as UTF-8 JSON as they
        // are read, and nothing here relies on them staying unchanged.
        if let Ok(map) = unsafe { memmap2::MmapOptions::new().populate().map(&file) } {
            let map = Arc::new(map);
            let input = parse_bytes(&map, &source, map.len() as u64, Some(&map))?;
            return traces_of(input, &source);
        }
    }
    // The head is read already (a pipe cannot be read again).
    read_traces(std::io::Cursor::new(head).chain(file), &source, size, None)
}

/// JSON files of at least this many bytes are mapped into memory to be
/// read, not copied.
const MAP_BYTES: usize = 1 << 20;

/// A file's length, as a size hint for reading it whole (0 when unknown).
fn file_len(file: &File) -> usize {
    file.metadata()
        .map_or(0, |m| usize::try_from(m.len()).unwrap_or(0))
}

/// Imports files in order, each all-or-nothing. JSON exports are read and
/// checked on a second thread one file ahead of the one being stored, so
/// parsing and writing overlap; JSON Lines files are read as they come.
pub(crate) fn import_files(
    store: &Store,
    files: Vec<std::result::Result<PathBuf, (PathBuf, std::io::Error)>>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Vec<FileReport> {
    let is_json = |p: &Path| InputFormat::for_path(p) == InputFormat::Json;
    let ahead: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.as_ref().ok())
        .filter(|p| is_json(p))
        .cloned()
        .collect();
    std::thread::scope(|scope| {
        // A rendezvous channel: the parser is at most one file ahead.
        let (tx, rx) = std::sync::mpsc::sync_channel::<ParsedFile>(0);
        scope.spawn(move || {
            for path in ahead {
                if tx.send(parse_json_file(&path)).is_err() {
                    break;
                }
            }
        });
        files
            .into_iter()
            .map(|f| match f {
                Ok(path) => {
                    let bytes = path.metadata().map(|m| m.len()).unwrap_or(0);
                    progress(Progress::File {
                        path: path.clone(),
                        bytes,
                    });
                    let result = if is_json(&path) {
                        let source = path.display().to_string();
                        match rx.recv() {
                            Ok(parsed) => parsed.and_then(|traces| {
                                progress(Progress::Read(traces.iter().map(|t| t.read.bytes).sum()));
                                progress(Progress::Storing);
                                store_all(store, traces, opts, &source)
                            }),
                            Err(_) => Err(EngineError::FileReaderStopped { path: source }),
                        }
                    } else {
                        import_file(store, &path, opts, progress)
                    };
                    progress(Progress::FileDone);
                    FileReport { path, result }
                }
                Err((path, e)) => FileReport {
                    result: Err(EngineError::Io {
                        path: path.display().to_string(),
                        source: e,
                    }),
                    path,
                },
            })
            .collect()
    })
}

/// Imports one file of `format`, named `source` in messages and in the
/// trace record (a file that holds what was sent some other way): a JSON
/// file mapped and parsed as `memtrace import` reads files, JSON Lines read
/// twice from the file instead of kept in memory.
pub(crate) fn import_file_as(
    store: &Store,
    path: &Path,
    format: InputFormat,
    source: &str,
    opts: &ImportOptions,
) -> Result<Vec<ImportedTrace>> {
    match format {
        InputFormat::Json => store_all(store, parse_json_file_as(path, source)?, opts, source),
        InputFormat::JsonLines => {
            let open = || -> std::io::Result<Box<dyn BufRead>> {
                Ok(Box::new(BufReader::new(File::open(path)?)))
            };
            let first = open().map_err(|e| EngineError::Io {
                path: source.to_string(),
                source: e,
            })?;
            import_lines(store, first, Some(&open), source, opts, None)
        }
    }
}

/// Imports one file.
pub(crate) fn import_file(
    store: &Store,
    path: &Path,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<ImportedTrace>> {
    let source = path.display().to_string();
    let io = |e: std::io::Error| EngineError::Io {
        path: source.clone(),
        source: e,
    };
    let file = File::open(path).map_err(io)?;
    match InputFormat::for_path(path) {
        InputFormat::Json => {
            let size = file_len(&file);
            import_json(store, file, &source, size, opts, Some(progress))
        }
        InputFormat::JsonLines => {
            let owned = path.to_path_buf();
            let reopen = move || -> std::io::Result<Box<dyn BufRead>> {
                Ok(Box::new(BufReader::new(File::open(&owned)?)))
            };
            import_lines(
                store,
                Box::new(BufReader::new(file)),
                Some(&reopen),
                &source,
                opts,
                Some(progress),
            )
        }
    }
}
