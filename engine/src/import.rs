//! Import of smartcomment exports, MemTraceBench files, OpenTelemetry
//! traces (OTLP JSON, see [`crate::otlp`]) and JSON Lines of any of them,
//! from readers, files and folders. Each trace is validated whole before
//! anything of it is written, then written in one batch.

use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use memmap2::Mmap;
use serde::de::DeserializeSeed;
use serde::Serialize;
use serde_json::{Map, Value};

use memtrace_storage::records::{
    CaseRecord, Common, Counts, EdgeRecord, OpRecord, SessionRecord, Shared, TraceRecord, VarRecord,
};
use memtrace_storage::{content_digest, content_digest_pieces, PreparedValue, Store, TraceId};

use crate::error::{EngineError, Result};
use crate::otlp;
use crate::parse::{
    self, Ctx, InCommon, InVar, Invalid, ParsedTrace, Parts, Resolved, TopSeed, Tri,
};
use crate::pyjson;
use crate::sniff;

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

fn invalid(source: &str, inv: Invalid) -> EngineError {
    EngineError::Invalid {
        source_name: source.to_string(),
        json_path: inv.path,
        reason: inv.reason,
    }
}

/// What an export was read from: its size and its content digest.
#[derive(Debug)]
pub(crate) struct Source {
    bytes: u64,
    digest: Digest,
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
    fn get(&mut self) -> [u8; 32] {
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
    trace: ParsedTrace,
    resolved: Resolved,
    read: Source,
    format: &'static str,
    /// The OTLP requests it is made from, to keep with it (a receiver's).
    otlp: Option<Vec<u8>>,
}

/// What one input object is.
enum Input {
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
fn parse_reader<R: Read>(
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
    // The whole input is read first and parsed from memory: parsing from
    // a slice finds string ends with a fast scan, where a reader is read
    // byte by byte (the parsed trace holds every string anyway). With the
    // size known, the buffer is made once instead of doubled (a copy of
    // everything read so far, into fresh pages the kernel zeroes, each time).
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
fn refuse_start(head: &[u8], source: &str) -> Result<()> {
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
fn parse_bytes(bytes: &[u8], source: &str, read: u64, mapped: Option<&Arc<Mmap>>) -> Result<Input> {
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
fn parse_top(content: &[u8], source: &str) -> Result<parse::Top> {
    // A well-formed export is read with its lists on two threads; anything
    // wrong is read again by the sequential reader, which names the error.
    // Python's `NaN` and `Infinity` are not JSON: only an input the fast
    // reader did not read is looked at for them, and read again with them
    // rewritten (looking at every input first took two passes over it,
    // 40 to 60 ms for an export of 170 to 250 MB).
    if let Some(top) = crate::split::parse_split(content) {
        return Ok(top);
    }
    let text = pyjson::python_numbers(content);
    if let std::borrow::Cow::Owned(rewritten) = &text {
        if let Some(top) = crate::split::parse_split(rewritten) {
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
    data: Option<parse::DataParts>,
    source: &str,
    read: Source,
    format: Option<&'static str>,
) -> Result<Ready> {
    let trace = parse::assemble(header, data).map_err(|i| invalid(source, i))?;
    let resolved = parse::validate(&trace).map_err(|i| invalid(source, i))?;
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
fn otlp_traces(
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
fn read_traces<R: Read>(
    reader: R,
    source: &str,
    size_hint: usize,
    progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Vec<Ready>> {
    traces_of(parse_reader(reader, source, size_hint, progress)?, source)
}

/// The traces of one input read.
fn traces_of(input: Input, source: &str) -> Result<Vec<Ready>> {
    match input {
        Input::Export(r) => Ok(vec![*r]),
        Input::Otlp(doc, bytes) => {
            otlp_traces(vec![(source.to_string(), doc)], bytes, source, false)
        }
    }
}

/// Stores the traces of one input; when there are several, each is checked
/// against what is stored before any is written.
fn store_all(
    store: &Store,
    traces: Vec<Ready>,
    opts: &ImportOptions,
    source: &str,
) -> Result<Vec<ImportedTrace>> {
    let mut traces = traces;
    if traces.len() > 1 {
        for r in &mut traces {
            stored_already(store, &r.trace.graph_id, &mut r.read.digest, opts, source)?;
        }
    }
    traces
        .into_iter()
        .map(|r| store_trace(store, r, opts, source))
        .collect()
}

/// Whether `graph_id` may be stored from content with this digest: `None`
/// when no trace has it (or `force`), the stored trace when one holds the
/// same content (nothing to do), and an error when traces hold it with
/// other content or content that cannot be compared.
fn stored_already(
    store: &Store,
    graph_id: &str,
    digest: &mut Digest,
    opts: &ImportOptions,
    source: &str,
) -> Result<Option<(TraceId, TraceRecord)>> {
    if opts.force {
        return Ok(None);
    }
    let view = store.read();
    let existing = view.traces_with_graph_id(graph_id)?;
    if existing.is_empty() {
        return Ok(None);
    }
    let digest = digest.get();
    let mut compared = true;
    for &t in &existing {
        match view.content_digest(t)? {
            Some(d) if d == digest => {
                if let Some(record) = view.trace(t)? {
                    return Ok(Some((t, record)));
                }
            }
            Some(_) => {}
            None => compared = false,
        }
    }
    Err(EngineError::AlreadyStored {
        source_name: source.to_string(),
        graph_id: graph_id.to_string(),
        existing,
        compared,
    })
}

/// The report of an import that found its content already stored.
fn unchanged(trace: TraceId, record: TraceRecord) -> ImportedTrace {
    ImportedTrace {
        trace,
        graph_id: record.graph_id,
        counts: record.counts,
        format: record.format,
        unchanged: true,
    }
}

fn shared(tri: Tri, trace_value: Option<&str>) -> Shared {
    match tri {
        None => Shared::Same,
        Some(v) if v.as_deref() == trace_value => Shared::Same,
        Some(v) => Shared::Own(v),
    }
}

struct TraceIds<'a> {
    graph_id: &'a str,
    user_id: Option<&'a str>,
    project_id: Option<&'a str>,
}

fn common(c: InCommon, ids: &TraceIds<'_>) -> Common {
    Common {
        created_at: c.created_at,
        filename: c.filename,
        lineno: c.lineno,
        graph_id: shared(c.graph_id, Some(ids.graph_id)),
        user_id: shared(c.user_id, ids.user_id),
        project_id: shared(c.project_id, ids.project_id),
        metadata: c.metadata,
        trigger_point: c.trigger_point,
        extra: c.extra,
    }
}

/// Values of fewer bytes than this, in all, are prepared on the calling
/// thread only.
const PREPARE_APART: usize = 1 << 20;

/// Each variable's value hashed and encoded (see [`PreparedValue`]), the
/// later half of the list's parts on a second thread when the values are
/// large.
fn prepare_values(nodes: &Parts<InVar>) -> Vec<Option<PreparedValue>> {
    let prepare = |part: &[InVar]| -> Vec<Option<PreparedValue>> {
        part.iter()
            .map(|v| v.value.as_deref().map(PreparedValue::new))
            .collect()
    };
    let bytes: usize = nodes
        .iter()
        .filter_map(|v| v.value.as_ref())
        .map(String::len)
        .sum();
    let parts = nodes.parts();
    if bytes < PREPARE_APART || parts.len() < 2 {
        return parts.iter().flat_map(|p| prepare(p)).collect();
    }
    // The parts are of about equal length: the later half of them is
    // prepared on a second thread.
    let (mine, theirs) = parts.split_at(parts.len() / 2);
    let all = |parts: &[Vec<InVar>]| -> Vec<Option<PreparedValue>> {
        parts.iter().flat_map(|p| prepare(p)).collect()
    };
    std::thread::scope(|scope| {
        let apart = scope.spawn(|| all(theirs));
        let mut out = all(mine);
        match apart.join() {
            Ok(rest) => out.extend(rest),
            // Not reached (preparing does not panic); done here instead.
            Err(_) => out.extend(all(theirs)),
        }
        out
    })
}

/// Writes a validated trace in one batch.
fn store_trace(
    store: &Store,
    ready: Ready,
    opts: &ImportOptions,
    source: &str,
) -> Result<ImportedTrace> {
    let Ready {
        trace: t,
        resolved: r,
        mut read,
        format,
        otlp,
    } = ready;
    if let Some((trace, record)) =
        stored_already(store, &t.graph_id, &mut read.digest, opts, source)?
    {
        return Ok(unchanged(trace, record));
    }
    let graph_id = t.graph_id.clone();
    let user_id = t.user_id.clone();
    let project_id = t.project_id.clone();
    let ids = TraceIds {
        graph_id: &graph_id,
        user_id: user_id.as_deref(),
        project_id: project_id.as_deref(),
    };
    let mut w = store.begin_trace_sized(usize::try_from(read.bytes).unwrap_or(0))?;
    for s in t.sessions {
        w.put_session(&SessionRecord {
            session_id: s.session_id,
            session_name: s.session_name,
            comment: s.comment,
            category: s.category,
            common: common(s.common, &ids),
        })?;
    }
    let prepared = prepare_values(&t.nodes);
    for ((v, session), value) in t.nodes.into_iter().zip(r.var_sessions).zip(prepared) {
        let value = value.map(|p| w.stage_prepared(p));
        w.put_variable(&VarRecord {
            name: v.name,
            class_name: v.class_name,
            version: v.version,
            value,
            comment: v.comment,
            category: v.category,
            session_id: v.session_id,
            session,
            node_id: v.node_id,
            common: common(v.common, &ids),
        })?;
    }
    // In a bulk write, what is finished is written while the rest is added.
    w.finish_variables()?;
    for (o, session) in t.ops.into_iter().zip(r.op_sessions) {
        w.put_op(&OpRecord {
            op_id: o.op_id,
            op_name: o.op_name,
            comment: o.comment,
            category: o.category,
            session_id: o.session_id,
            session,
            common: common(o.common, &ids),
        })?;
    }
    w.finish_ops()?;
    for (e, (op, source, target, session)) in t.edges.into_iter().zip(r.edges) {
        w.put_edge(&EdgeRecord {
            edge_id: e.edge_id,
            op,
            source,
            target,
            session,
            category: e.category,
            comment: e.comment,
            common: common(e.common, &ids),
        })?;
    }
    for (a, (query, evidence, op)) in t.annotations.into_iter().flatten().zip(r.cases) {
        w.put_case(&CaseRecord {
            query,
            evidence,
            op,
            json: serde_json::Value::Object(a).to_string(),
        })?;
    }
    let record = TraceRecord {
        graph_id: graph_id.clone(),
        user_id: user_id.clone(),
        project_id: project_id.clone(),
        created_at: t.created_at,
        header_json: serde_json::Value::Object(t.header).to_string(),
        data_keys: t.data_keys,
        data_extra: (!t.data_extra.is_empty())
            .then(|| serde_json::Value::Object(t.data_extra).to_string()),
        counts: Counts::default(),
        source: source.to_string(),
        source_bytes: read.bytes,
        format: format.to_string(),
        imported_at_ms: 0,
    };
    // Last: a large file's digest is taken while the records are written.
    w.set_content_digest(read.digest.get());
    if let Some(requests) = otlp {
        w.keep_otlp_requests(requests);
    }
    let counts = w.counts();
    match w.commit(record, !opts.force)? {
        Ok(trace) => Ok(ImportedTrace {
            trace,
            graph_id,
            counts,
            format: format.to_string(),
            unchanged: false,
        }),
        // Stored by another writer since the check above.
        Err(existing) => Err(EngineError::AlreadyStored {
            source_name: source.to_string(),
            graph_id,
            existing,
            compared: false,
        }),
    }
}

/// Imports one export object, or the traces of one OTLP request, from a reader.
pub(crate) fn import_json<R: Read>(
    store: &Store,
    reader: R,
    source: &str,
    size_hint: usize,
    opts: &ImportOptions,
    mut progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Vec<ImportedTrace>> {
    let reborrowed = progress
        .as_mut()
        .map(|p| &mut **p as &mut dyn FnMut(Progress));
    let traces = read_traces(reader, source, size_hint, reborrowed)?;
    if let Some(p) = progress {
        p(Progress::Storing);
    }
    store_all(store, traces, opts, source)
}

/// Imports the spans an OTLP receiver kept, as requests (each named by its
/// place, for errors), `bytes` long in all: one trace per trace id, a span
/// received twice kept as first received.
pub(crate) fn import_otlp(
    store: &Store,
    requests: Vec<(String, Map<String, Value>)>,
    bytes: u64,
    source: &str,
    opts: &ImportOptions,
) -> Result<Vec<ImportedTrace>> {
    let traces = otlp_traces(requests, bytes, source, true)?;
    store_all(store, traces, opts, source)
}

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
    mut progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Vec<ImportedTrace>> {
    let io = |e: std::io::Error| EngineError::Io {
        path: source.to_string(),
        source: e,
    };
    // A file wrong from its first bytes is refused before its first line
    // (which may be all of it) is read.
    refuse_start(first.fill_buf().map_err(io)?, source)?;
    let mut kept: Vec<(usize, String)> = Vec::new();
    let mut graph_ids: Vec<(String, usize)> = Vec::new();
    let mut requests: Vec<(String, Map<String, Value>)> = Vec::new();
    let mut line = String::new();
    let mut n = 0;
    let mut read = 0u64;
    loop {
        line.clear();
        let got = read_line(&mut first, &mut line).map_err(|e| match e {
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
        if reopen.is_none() {
            kept.push((n, std::mem::take(&mut line)));
        }
    }
    if !requests.is_empty() {
        let traces = otlp_traces(requests, read, source, false)?;
        return store_all(store, traces, opts, source);
    }
    let mut out = Vec::new();
    match reopen {
        Some(reopen) => {
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
        }
        None => {
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
        }
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
        // instead of being copied into fresh memory, which the kernel
        // would first fill with zeros: that took a tenth of a large
        // import. (Were the file cut short while it is read, the process
        // would stop with SIGBUS before anything of it is written.)
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
                            Err(_) => Err(EngineError::BadRequest(format!(
                                "{source}: the thread that reads files stopped before it"
                            ))),
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
