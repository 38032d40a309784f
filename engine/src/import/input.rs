//! Reading one input into checked traces: the bytes read whole (or a file
//! mapped), the export parsed by the fast reader or else the checking one,
//! its references checked, and its content digest taken; an OTLP request
//! is turned into the exports of its traces first.

use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;
use std::sync::Arc;

use memmap2::Mmap;
use memtrace_storage::content_digest;
use memtrace_storage::content_digest_pieces;
use serde::de::DeserializeSeed;
use serde_json::{Map, Value};

use super::checking_reader::{assemble, Ctx, TopSeed};
use super::fast_reader::parse_split;
use super::options::Progress;
use super::records::{DataParts, Invalid, ParsedTrace, Resolved, Top};
use super::validate::validate;
use crate::error::{EngineError, Result};
use crate::otlp;
use crate::pyjson;
use crate::sniff;

/// A reader that counts what passes through it and reports it now and then.
struct Counting<'p, R> {
    inner: R,
    count: Rc<Cell<u64>>,
    last_report: u64,
    progress: Option<&'p mut dyn FnMut(Progress)>,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.count.get() + n as u64;
        self.count.set(total);
        if total - self.last_report >= 1 << 20 {
            self.last_report = total;
            if let Some(p) = self.progress.as_mut() {
                p(Progress::Read(total));
            }
        }
        Ok(n)
    }
}

pub(super) fn invalid(source: &str, inv: Invalid) -> EngineError {
    EngineError::Invalid {
        source_name: source.to_string(),
        json_path: inv.path,
        reason: inv.reason,
    }
}

/// What an export was read from: its size and its content digest.
#[derive(Debug)]
pub(crate) struct Source {
    pub(super) bytes: u64,
    pub(super) digest: Digest,
}

/// An export's content digest: known, or taken from a mapped file on a
/// thread of its own while the trace is checked and stored (taken while
/// the file is parsed, it would slow the parse, which has both cores;
/// checking and storing have one).
#[derive(Debug)]
pub(crate) enum Digest {
    /// Taken.
    Known([u8; 32]),
    /// Being taken (once started) from this file's content.
    Taking(Option<std::thread::JoinHandle<[u8; 32]>>, Arc<Mmap>),
}

impl Digest {
    /// Starts taking the digest on a thread of its own, which gives the
    /// mapped file's pages back as it goes (the parse is done with them).
    fn start(&mut self) {
        if let Digest::Taking(handle @ None, map) = self {
            let map = Arc::clone(map);
            *handle = std::thread::Builder::new()
                .name("memtrace-digest".into())
                .spawn(move || digest_releasing(&map))
                .ok();
        }
    }

    /// The digest, waiting for its thread (or taking it here when there is
    /// none).
    pub(super) fn get(&mut self) -> [u8; 32] {
        let d = match self {
            Digest::Known(d) => return *d,
            Digest::Taking(handle, map) => handle
                .take()
                .and_then(|h| h.join().ok())
                .unwrap_or_else(|| digest_of(map)),
        };
        *self = Digest::Known(d);
        d
    }
}

/// The content digest of an input: of its bytes without a byte order mark
/// and without the whitespace around the object.
fn digest_of(bytes: &[u8]) -> [u8; 32] {
    content_digest(pyjson::strip_bom(bytes).trim_ascii())
}

/// Bytes of a mapped file hashed between two gives of its pages back.
const RELEASE_BYTES: usize = 4 << 20;

/// [`digest_of`] a mapped file that nothing else reads any more, its pages
/// given back to the kernel as they are hashed: otherwise the whole file
/// stays resident until the trace is written, beside the parsed trace.
fn digest_releasing(map: &Mmap) -> [u8; 32] {
    let content = pyjson::strip_bom(map).trim_ascii();
    let start = content.as_ptr() as usize - map.as_ptr() as usize;
    let mut done = 0;
    let pieces = content.chunks(RELEASE_BYTES).inspect(|piece| {
        // The previous piece is hashed: its pages may go.
        if done > 0 {
            let (from, len) = (start + done - RELEASE_BYTES, RELEASE_BYTES);
            // SAFETY: the map is private and read-only, and only this
            // thread reads it now; a page read again after this is read
            // again from the file. A refusal only leaves the pages resident.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, len)
            };
        }
        done += piece.len();
    });
    content_digest_pieces(pieces)
}

/// One trace read and checked, not yet stored.
pub(crate) struct Ready {
    pub(super) trace: ParsedTrace,
    pub(super) resolved: Resolved,
    pub(super) read: Source,
    pub(super) format: &'static str,
    /// The OTLP requests it is made from, to keep with it (a receiver's).
    pub(super) otlp: Option<Vec<u8>>,
}

/// What one input object is.
pub(super) enum Input {
    /// A smartcomment export or MemTraceBench file, checked.
    Export(Box<Ready>),
    /// An OTLP request (its top-level object) and the bytes read.
    Otlp(Map<String, Value>, u64),
}

/// Inputs of at least this many bytes have their digest taken on a second
/// thread while they are parsed.
const DIGEST_APART: usize = 1 << 20;

/// Reads one JSON object from a reader: an export, parsed and validated,
/// or an OTLP request, parsed. A UTF-8 byte order mark before it is
/// skipped, and Python's `NaN`, `Infinity` and `-Infinity` outside strings
/// are read as numbers (see [`pyjson`]).
pub(super) fn parse_reader<R: Read>(
    reader: R,
    source: &str,
    size_hint: usize,
    progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Input> {
    let count = Rc::new(Cell::new(0));
    let counting = Counting {
        inner: reader,
        count: count.clone(),
        last_report: 0,
        progress,
    };
    // The whole input is read first and parsed from memory, because parsing
    // a slice finds string ends with a fast scan where a reader is read
    // byte by byte; with the size known, the buffer is made once.
    let mut bytes = Vec::with_capacity(size_hint.saturating_add(1));
    let mut counting = counting;
    let io = |e| EngineError::Io {
        path: source.to_string(),
        source: e,
    };
    // An input that is not a JSON object from its first character is
    // refused before the rest of it is read.
    (&mut counting)
        .take(sniff::HEAD as u64)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    refuse_start(&bytes, source)?;
    counting.read_to_end(&mut bytes).map_err(io)?;
    parse_bytes(&bytes, source, count.get(), None)
}

/// An error when the first bytes of an input (`head`) show that it cannot
/// be one JSON object (see [`sniff::refuse_start`]).
pub(super) fn refuse_start(head: &[u8], source: &str) -> Result<()> {
    match sniff::refuse_start(&head[..head.len().min(sniff::HEAD)]) {
        Some(reason) => Err(invalid(
            source,
            Invalid {
                path: "$".into(),
                reason,
            },
        )),
        None => Ok(()),
    }
}

/// `e` with "found null" said as "found NaN" where the value at its JSON
/// path is written `NaN` in `content` (Python's not-a-number, read as null).
fn nan_named(e: EngineError, content: &[u8]) -> EngineError {
    match e {
        EngineError::Invalid {
            source_name,
            json_path,
            reason,
        } if reason.contains("found null") && sniff::nan_at(content, &json_path) => {
            EngineError::Invalid {
                source_name,
                reason: reason.replace(
                    "found null",
                    "found NaN (Python's not-a-number, which JSON has not; memtrace reads it as null)",
                ),
                json_path,
            }
        }
        other => other,
    }
}

/// Reads one JSON object from the whole of an input, `read` bytes long
/// (see [`parse_reader`]). The digest of a mapped file (`mapped`) is taken
/// after the parse, on a thread of its own ([`Digest::start`]).
pub(super) fn parse_bytes(
    bytes: &[u8],
    source: &str,
    read: u64,
    mapped: Option<&Arc<Mmap>>,
) -> Result<Input> {
    refuse_start(bytes, source)?;
    let content = pyjson::strip_bom(bytes);
    parse_content(bytes, content, source, read, mapped).map_err(|e| nan_named(e, content))
}

/// [`parse_bytes`] once the input's start is known to be right: `content`
/// is `bytes` without its byte order mark.
fn parse_content(
    bytes: &[u8],
    content: &[u8],
    source: &str,
    read: u64,
    mapped: Option<&Arc<Mmap>>,
) -> Result<Input> {
    // Whitespace around the object is not content (a line's newline, a
    // file's last one), and neither is a byte order mark. A large input's
    // digest is taken on a second thread while it is parsed; a mapped
    // file's later.
    let (parsed, digest) = match mapped {
        Some(map) => (
            parse_top(content, source),
            Digest::Taking(None, Arc::clone(map)),
        ),
        None => std::thread::scope(|scope| {
            let apart = (content.trim_ascii().len() >= DIGEST_APART)
                .then(|| scope.spawn(|| digest_of(bytes)));
            let parsed = parse_top(content, source);
            let digest = apart
                .and_then(|h| h.join().ok())
                .unwrap_or_else(|| digest_of(bytes));
            (parsed, Digest::Known(digest))
        }),
    };
    let (header, data) = parsed?;
    if data.is_none() && otlp::is_otlp(&header) {
        return Ok(Input::Otlp(header, read));
    }
    let mut read = Source {
        bytes: read,
        digest,
    };
    // The parse is done: a mapped file's digest is taken while the export
    // is checked (on one core) and stored.
    read.digest.start();
    Ok(Input::Export(Box::new(checked(
        header, data, source, read, None,
    )?)))
}

/// Parses one JSON object into the export's header and `data`.
fn parse_top(content: &[u8], source: &str) -> Result<Top> {
    // A well-formed export is read with its lists on two threads; anything
    // wrong is read again by the checking reader, which names the error.
    // Python's `NaN` and `Infinity` are not JSON: only an input the fast
    // reader did not read is looked at for them, so that a well-formed
    // input is passed over once.
    if let Some(top) = parse_split(content) {
        return Ok(top);
    }
    let text = pyjson::python_numbers(content);
    if let std::borrow::Cow::Owned(rewritten) = &text {
        if let Some(top) = parse_split(rewritten) {
            return Ok(top);
        }
    }
    let ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_slice(&text);
    let top = TopSeed(&ctx)
        .deserialize(&mut de)
        .and_then(|top| de.end().map(|_| top));
    match top {
        Ok(top) => Ok(top),
        Err(_) if content.is_empty() => Err(invalid(
            source,
            Invalid {
                path: "$".into(),
                reason: "the input is empty".into(),
            },
        )),
        Err(e) => Err(invalid(source, ctx.into_invalid(e, &text))),
    }
}

/// Checks a parsed export; `format` names it when it is not read from the
/// export itself (`memtracebench` with annotations, else `smartcomment`).
fn checked(
    header: Map<String, Value>,
    data: Option<DataParts>,
    source: &str,
    read: Source,
    format: Option<&'static str>,
) -> Result<Ready> {
    let trace = assemble(header, data).map_err(|i| invalid(source, i))?;
    let resolved = validate(&trace).map_err(|i| invalid(source, i))?;
    let format = format.unwrap_or(if trace.annotations.is_some() {
        "memtracebench"
    } else {
        "smartcomment"
    });
    Ok(Ready {
        trace,
        resolved,
        read,
        format,
        otlp: None,
    })
}

/// OTLP requests (each with its source's name) as checked traces, one per
/// trace id. Each trace's content, compared on a second import, is its
/// export's JSON; the `bytes` read are shared among the traces by their
/// number of spans. A `receiver`'s spans keep the first copy of a span
/// sent twice, and each trace keeps the requests that hold its spans (as a
/// JSON array), so that spans that come after it was stored can have it
/// stored again whole.
pub(super) fn otlp_traces(
    requests: Vec<(String, Map<String, Value>)>,
    bytes: u64,
    source: &str,
    receiver: bool,
) -> Result<Vec<Ready>> {
    let texts = if receiver {
        requests
            .iter()
            .map(|(_, doc)| serde_json::to_vec(doc))
            .collect::<std::result::Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let traces = otlp::convert(requests, receiver).map_err(|(at, i)| invalid(&at, i))?;
    let total = traces.iter().map(|t| t.spans as u64).sum::<u64>().max(1);
    let mut left = bytes;
    let last = traces.len().saturating_sub(1);
    traces
        .into_iter()
        .enumerate()
        .map(|(k, t)| {
            let share = if k == last {
                left
            } else {
                (u128::from(bytes) * t.spans as u128 / u128::from(total)) as u64
            };
            left -= share.min(left);
            let text = serde_json::to_vec(&t.export)?;
            let (header, data) = parse_top(&text, source)?;
            let read = Source {
                bytes: share,
                digest: Digest::Known(content_digest(&text)),
            };
            let mut ready = checked(header, data, source, read, Some("otlp"))?;
            if receiver {
                let mut kept = b"[".to_vec();
                for (n, &i) in t.requests.iter().enumerate() {
                    if n > 0 {
                        kept.push(b',');
                    }
                    kept.extend_from_slice(&texts[i]);
                }
                kept.push(b']');
                ready.otlp = Some(kept);
            }
            Ok(ready)
        })
        .collect()
}

/// Reads one JSON object from a reader as the traces it holds.
pub(super) fn read_traces<R: Read>(
    reader: R,
    source: &str,
    size_hint: usize,
    progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Vec<Ready>> {
    traces_of(parse_reader(reader, source, size_hint, progress)?, source)
}

/// The traces of one input read.
pub(super) fn traces_of(input: Input, source: &str) -> Result<Vec<Ready>> {
    match input {
        Input::Export(r) => Ok(vec![*r]),
        Input::Otlp(doc, bytes) => {
            otlp_traces(vec![(source.to_string(), doc)], bytes, source, false)
        }
    }
}
