//! The OTLP/HTTP receiver of `memtrace serve` and `memtrace collect`:
//! spans arrive interleaved and in pieces on `POST /v1/traces`; each
//! request is split by trace, its parts are written ahead to the spool
//! (durable before the 200), and each trace is assembled and stored as one
//! trace, through the same mapping as the OTLP file import, once it is
//! complete: its root span received and no new span for the quiet period
//! (or no new span for the orphan wait, when its root never came), or at
//! shutdown. A stored trace keeps the requests it was made from, so the
//! spool is rewritten without them. A span that arrives after its trace
//! was stored has the trace stored again, whole (the spans it keeps and
//! the new ones), as a new trace under the same graph id, which takes over
//! the earlier one's verdicts and labels as the earlier one is dropped
//! (logged, with the reason).

mod spool;
pub mod wire;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memtrace::engine::{Engine, OtlpSplit};
use memtrace::{EngineError, ImportOptions};
use serde_json::{Map, Value};

use spool::{Entry, Record, Spool};

/// How the receiver decides and what it holds.
#[derive(Debug, Clone)]
pub struct ReceiverOptions {
    /// A trace whose root span came is stored after this long without a new span.
    pub quiet: Duration,
    /// A trace whose root span never came is stored after this long without a new span.
    pub orphan: Duration,
    /// Largest request body, as sent and decompressed.
    pub max_body: usize,
    /// Bytes of spans held for traces not yet stored; past it, requests get 503.
    pub max_pending: usize,
    /// Bytes of stored traces' spans the spool may hold beyond twice the
    /// spans not yet stored before it is rewritten without them (it is
    /// emptied anyway once every trace in it is stored).
    pub spool_slack: u64,
    /// Print a line per stored trace on standard error.
    pub log: bool,
}

impl Default for ReceiverOptions {
    fn default() -> Self {
        ReceiverOptions {
            quiet: Duration::from_secs(5),
            orphan: Duration::from_secs(60),
            max_body: 16 << 20,
            max_pending: 512 << 20,
            spool_slack: 16 << 20,
            log: false,
        }
    }
}

/// Where the receiver stores traces.
pub trait Sink: Send + Sync {
    /// The database.
    fn db(&self) -> &Engine;
    /// Told after traces were stored or dropped (a viewer forgets its caches).
    fn changed(&self) {}
}

/// What the receiver counted since it started.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counters {
    /// Spans acknowledged.
    pub spans: u64,
    /// Spans refused (partial success).
    pub rejected: u64,
    /// Requests acknowledged.
    pub requests: u64,
    /// Traces stored (each storing, a revision included).
    pub stored: u64,
    /// Stored traces stored again with late spans.
    pub revisions: u64,
    /// Traces held, not yet stored.
    pub pending: u64,
}

/// Why a request was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Too much is held for traces not yet stored: try again later (503).
    Full(String),
    /// The spool cannot be written (503).
    Spool(String),
    /// The receiver is stopping (503).
    Stopping,
}

/// One part held for a trace not yet stored with it.
struct Held {
    /// Where its record is in the spool.
    offset: u64,
    /// Its record's size in the spool.
    size: u64,
    /// Its JSON.
    json: Arc<Vec<u8>>,
}

/// What the receiver holds of one trace id: its parts not yet stored.
#[derive(Default)]
struct TraceState {
    /// In the spool's order.
    parts: Vec<Held>,
    /// Its root span came (now or with a part stored before).
    root: bool,
    last: Option<Instant>,
    /// Being assembled now.
    busy: bool,
    /// Storing failed: tried again when more of its spans come, or at the
    /// next start.
    failed: bool,
    /// The database was asked whether the trace was stored before.
    looked: bool,
}

impl TraceState {
    fn pending(&self) -> bool {
        !self.parts.is_empty()
    }
}

#[derive(Default)]
struct State {
    traces: HashMap<String, TraceState>,
    /// Bytes of JSON held in `traces`.
    pending_bytes: usize,
    /// Bytes of the spool's records that hold them.
    spool_live: u64,
}

/// A batch of parts to write, and where to say it is written.
struct Batch {
    parts: Vec<(String, bool, Vec<u8>)>,
    done: mpsc::SyncSender<Result<(), Refusal>>,
}

struct Inner {
    opts: ReceiverOptions,
    sink: Arc<dyn Sink>,
    spool: Mutex<Spool>,
    state: Mutex<State>,
    wake: Condvar,
    stopping: AtomicBool,
    /// Set once the writer has stopped: nothing more is held after it.
    written: AtomicBool,
    spans: AtomicU64,
    rejected: AtomicU64,
    requests: AtomicU64,
    stored: AtomicU64,
    revisions: AtomicU64,
}

/// The running receiver: a spool writer thread and an assembler thread.
pub struct Receiver {
    inner: Arc<Inner>,
    batches: Mutex<Option<mpsc::SyncSender<Batch>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    assembler: Mutex<Option<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Receiver {
    /// Opens the spool in `dir` (the database folder), takes back what it
    /// holds, and starts the writer and the assembler. Traces that were
    /// acknowledged but not stored before a stop are stored once complete.
    pub fn start(
        dir: &Path,
        sink: Arc<dyn Sink>,
        opts: ReceiverOptions,
    ) -> std::io::Result<Receiver> {
        let (mut spool, entries, torn) = Spool::open(dir)?;
        if torn > 0 {
            eprintln!(
                "memtrace: the OTLP spool ended in a record cut short ({torn} bytes, never acknowledged); it was cut off"
            );
        }
        let mut state = State::default();
        let now = Instant::now();
        for e in entries {
            match e {
                Entry::Part {
                    offset,
                    trace_id,
                    root,
                } => {
                    let t = state.traces.entry(trace_id).or_default();
                    t.parts.push(Held {
                        offset,
                        size: 0,
                        json: Arc::default(),
                    });
                    t.root |= root;
                    t.last = Some(now);
                }
                Entry::Stored { trace_id, through } => {
                    if let Some(t) = state.traces.get_mut(&trace_id) {
                        t.parts.retain(|h| h.offset > through);
                    }
                }
            }
        }
        state.traces.retain(|_, t| t.pending());
        let mut recovered = (0usize, 0usize);
        for t in state.traces.values_mut() {
            for h in &mut t.parts {
                if let (Record::Part { json, .. }, size) = spool.read_at(h.offset)? {
                    state.pending_bytes += json.len();
                    state.spool_live += size;
                    h.size = size;
                    h.json = Arc::new(json);
                    recovered.1 += 1;
                }
            }
            recovered.0 += 1;
        }
        if recovered.0 > 0 {
            eprintln!(
                "memtrace: {} trace(s) received before the last stop and not yet stored ({} part(s)) are held again; each is stored once complete",
                recovered.0, recovered.1
            );
        }
        let inner = Arc::new(Inner {
            opts,
            sink,
            spool: Mutex::new(spool),
            state: Mutex::new(state),
            wake: Condvar::new(),
            stopping: AtomicBool::new(false),
            written: AtomicBool::new(false),
            spans: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            revisions: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::sync_channel::<Batch>(256);
        let w = inner.clone();
        let writer = std::thread::Builder::new()
            .name("otlp-spool".into())
            .spawn(move || write_batches(&w, &rx))?;
        let a = inner.clone();
        let assembler = std::thread::Builder::new()
            .name("otlp-assemble".into())
            .spawn(move || assemble_loop(&a))?;
        Ok(Receiver {
            inner,
            batches: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            assembler: Mutex::new(Some(assembler)),
        })
    }

    /// The options it runs with.
    pub fn options(&self) -> &ReceiverOptions {
        &self.inner.opts
    }

    /// What it counted.
    pub fn counters(&self) -> Counters {
        let st = lock(&self.inner.state);
        let i = &self.inner;
        Counters {
            spans: i.spans.load(Ordering::Relaxed),
            rejected: i.rejected.load(Ordering::Relaxed),
            requests: i.requests.load(Ordering::Relaxed),
            stored: i.stored.load(Ordering::Relaxed),
            revisions: i.revisions.load(Ordering::Relaxed),
            pending: st.traces.values().filter(|t| t.pending()).count() as u64,
        }
    }

    /// Takes a split request: writes its parts to the spool and syncs it
    /// (with the other requests written at the same moment), then holds
    /// them for their traces. Returns once they are durable. Blocks: call
    /// it from a thread that may wait.
    pub fn accept(&self, split: &OtlpSplit) -> Result<usize, Refusal> {
        self.inner
            .rejected
            .fetch_add(split.rejected as u64, Ordering::Relaxed);
        if self.inner.stopping.load(Ordering::Relaxed) {
            return Err(Refusal::Stopping);
        }
        let mut parts = Vec::with_capacity(split.parts.len());
        let mut bytes = 0;
        let mut spans = 0;
        for p in &split.parts {
            let json = serde_json::to_vec(&p.request).map_err(|e| Refusal::Spool(e.to_string()))?;
            bytes += json.len();
            spans += p.spans.len();
            let root = p.spans.iter().any(|s| s.parent.is_none());
            parts.push((p.trace_id.clone(), root, json));
        }
        if parts.is_empty() {
            self.inner.requests.fetch_add(1, Ordering::Relaxed);
            return Ok(0);
        }
        {
            let st = lock(&self.inner.state);
            if st.pending_bytes + bytes > self.inner.opts.max_pending {
                return Err(Refusal::Full(format!(
                    "{} MiB of spans are held for traces not yet stored (the limit is {} MiB, memtrace serve --otlp-max-pending); they are stored as their traces complete",
                    st.pending_bytes >> 20,
                    self.inner.opts.max_pending >> 20
                )));
            }
        }
        let (done, wait) = mpsc::sync_channel(1);
        let Some(tx) = lock(&self.batches).clone() else {
            return Err(Refusal::Stopping);
        };
        tx.send(Batch { parts, done })
            .map_err(|_| Refusal::Stopping)?;
        wait.recv().map_err(|_| Refusal::Stopping)??;
        self.inner.spans.fetch_add(spans as u64, Ordering::Relaxed);
        self.inner.requests.fetch_add(1, Ordering::Relaxed);
        Ok(spans)
    }

    /// Stops taking requests, lets those under way be written, stores
    /// every trace held (complete or not), and stops its threads.
    pub fn finish(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
        // The writer ends once every request under way has been written.
        lock(&self.batches).take();
        if let Some(w) = lock(&self.writer).take() {
            let _ = w.join();
        }
        self.inner.written.store(true, Ordering::SeqCst);
        self.inner.wake.notify_all();
        if let Some(a) = lock(&self.assembler).take() {
            let _ = a.join();
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A part appended to the spool, to hold for its trace.
struct Written {
    trace_id: String,
    root: bool,
    offset: u64,
    size: u64,
    json: Vec<u8>,
}

/// The writer: takes every batch waiting, appends them, syncs once, holds
/// their parts, then says so to each.
fn write_batches(inner: &Inner, rx: &mpsc::Receiver<Batch>) {
    while let Ok(first) = rx.recv() {
        let mut batches = vec![first];
        while let Ok(b) = rx.try_recv() {
            batches.push(b);
        }
        let mut written: Vec<Written> = Vec::new();
        // The spool stays locked until the parts are held: a rewrite of
        // the spool keeps exactly the parts held.
        let mut spool = lock(&inner.spool);
        let mut result = Ok(());
        'all: for b in &mut batches {
            for (trace_id, root, json) in b.parts.drain(..) {
                let rec = Record::Part {
                    trace_id,
                    root,
                    json,
                };
                match spool.append(&rec) {
                    Ok(offset) => {
                        let Record::Part {
                            trace_id,
                            root,
                            json,
                        } = rec
                        else {
                            unreachable!("the record was made above")
                        };
                        written.push(Written {
                            trace_id,
                            root,
                            offset,
                            size: spool.len() - offset,
                            json,
                        });
                    }
                    Err(e) => {
                        result = Err(e);
                        break 'all;
                    }
                }
            }
        }
        if let Err(e) = result.and_then(|()| spool.sync()) {
            let why = format!(
                "cannot write the OTLP spool ({}): {e}",
                spool.path().display()
            );
            drop(spool);
            eprintln!("memtrace: {why}");
            // What was appended is not acknowledged; a later start takes
            // it back, and an exporter's retry is kept once.
            for b in batches {
                let _ = b.done.send(Err(Refusal::Spool(why.clone())));
            }
            continue;
        }
        {
            let mut st = lock(&inner.state);
            let now = Instant::now();
            for Written {
                trace_id,
                root,
                offset,
                size,
                json,
            } in written
            {
                st.pending_bytes += json.len();
                st.spool_live += size;
                let t = st.traces.entry(trace_id).or_default();
                t.parts.push(Held {
                    offset,
                    size,
                    json: Arc::new(json),
                });
                t.root |= root;
                t.last = Some(now);
                t.failed = false;
            }
        }
        drop(spool);
        inner.wake.notify_all();
        for b in batches {
            let _ = b.done.send(Ok(()));
        }
    }
}

/// The assembler: every so often, stores the traces that are complete and
/// rewrites the spool when it is due; at the stop, stores every trace held.
fn assemble_loop(inner: &Inner) {
    let tick = Duration::from_millis(100)
        .min(inner.opts.quiet / 2)
        .max(Duration::from_millis(5));
    loop {
        let stopping = inner.stopping.load(Ordering::SeqCst);
        let mut look = Vec::new();
        let ready: Vec<String> = {
            let st = lock(&inner.state);
            let mut ready = Vec::new();
            for (k, t) in &st.traces {
                if !t.pending() || t.busy || t.failed {
                    continue;
                }
                let quiet = t.last.map_or(Duration::MAX, |l| l.elapsed());
                if stopping || (t.root && quiet >= inner.opts.quiet) || quiet >= inner.opts.orphan {
                    ready.push(k.clone());
                } else if !t.root && !t.looked && quiet >= inner.opts.quiet {
                    look.push(k.clone());
                }
            }
            ready
        };
        // Spans of a trace stored before (its root among them) wait only
        // the quiet period: the spool no longer says that its root came.
        for trace_id in look {
            let before = !matches!(
                inner.sink.db().trace(&format!("otel-{trace_id}")),
                Err(EngineError::UnknownTrace(_))
            );
            if let Some(t) = lock(&inner.state).traces.get_mut(&trace_id) {
                t.looked = true;
                t.root |= before;
            }
        }
        for trace_id in &ready {
            assemble(inner, trace_id);
        }
        rewrite_spool_if_due(inner);
        if inner.written.load(Ordering::SeqCst) && ready.is_empty() {
            // The writer has stopped; nothing more comes.
            let st = lock(&inner.state);
            if !st.traces.values().any(|t| t.pending() && !t.failed) {
                return;
            }
        }
        if ready.is_empty() {
            let st = lock(&inner.state);
            let _ = inner.wake.wait_timeout(st, tick);
        }
    }
}

/// Rewrites the spool with only the parts not yet stored, once every trace
/// in it is stored or once it holds more than twice their size plus the
/// slack. Run by the assembler between two storings, so no part is being
/// stored meanwhile; the spool stays locked, so none is added.
fn rewrite_spool_if_due(inner: &Inner) {
    let mut spool = lock(&inner.spool);
    let held = spool.records_len();
    if held == 0 {
        return;
    }
    let mut st = lock(&inner.state);
    let live = st.spool_live;
    if live > 0
        && held
            <= live
                .saturating_mul(2)
                .saturating_add(inner.opts.spool_slack)
    {
        return;
    }
    let mut parts: Vec<&mut Held> = st
        .traces
        .values_mut()
        .flat_map(|t| t.parts.iter_mut())
        .collect();
    parts.sort_by_key(|h| h.offset);
    let keep: Vec<u64> = parts.iter().map(|h| h.offset).collect();
    match spool.rewrite(&keep) {
        Ok(offsets) => {
            for (h, offset) in parts.into_iter().zip(offsets) {
                h.offset = offset;
            }
        }
        // The old spool stays in use, whole; tried again at the next pass.
        Err(e) => eprintln!(
            "memtrace: cannot rewrite the OTLP spool ({}) without the spans of stored traces: {e}",
            spool.path().display()
        ),
    }
}

/// Stores one trace from all its parts.
fn assemble(inner: &Inner, trace_id: &str) {
    let (held, through) = {
        let mut st = lock(&inner.state);
        let Some(t) = st.traces.get_mut(trace_id) else {
            return;
        };
        let Some(last) = t.parts.last() else {
            return;
        };
        t.busy = true;
        let through = last.offset;
        let held: Vec<Arc<Vec<u8>>> = t.parts.iter().map(|h| h.json.clone()).collect();
        (held, through)
    };
    let n = held.len();
    let outcome = store(inner, trace_id, &held);
    if let Ok(trace) = outcome {
        let mut spool = lock(&inner.spool);
        let marked = spool
            .append(&Record::Stored {
                trace_id: trace_id.to_string(),
                through,
                trace,
            })
            .and_then(|_| spool.sync());
        if let Err(e) = marked {
            // Storing again at the next start finds the same content stored.
            eprintln!("memtrace: cannot write the OTLP spool's stored marker: {e}");
        }
    }
    let mut st = lock(&inner.state);
    let mut freed = (0, 0);
    let mut done = false;
    if let Some(t) = st.traces.get_mut(trace_id) {
        t.busy = false;
        match &outcome {
            Ok(_) => {
                for h in t.parts.drain(..n) {
                    freed.0 += h.json.len();
                    freed.1 += h.size;
                }
                done = !t.pending();
            }
            Err(e) => {
                t.failed = true;
                eprintln!(
                    "memtrace: OTLP trace {trace_id} ({n} part(s)) could not be stored: {e}; its spans stay in the spool, and it is tried again when more of them come or at the next start"
                );
            }
        }
    }
    if done {
        st.traces.remove(trace_id);
    }
    st.pending_bytes = st.pending_bytes.saturating_sub(freed.0);
    st.spool_live = st.spool_live.saturating_sub(freed.1);
    drop(st);
    if outcome.is_ok() {
        inner.sink.changed();
    }
}

/// Imports a trace's parts. When the receiver stored the trace before, its
/// kept spans come first (the earlier storings' requests, each once) and
/// the new trace supersedes the earlier ones. Returns the trace stored.
fn store(inner: &Inner, trace_id: &str, held: &[Arc<Vec<u8>>]) -> Result<u64, String> {
    let db = inner.sink.db();
    let graph_id = format!("otel-{trace_id}");
    let earlier = db
        .otlp_requests(&graph_id)
        .map_err(|e| format!("reading the spans {graph_id} was stored with: {e}"))?;
    let previous: Vec<u32> = earlier.iter().map(|(t, _)| *t).collect();
    let (requests, bytes) = requests_to_store(&graph_id, trace_id, earlier, held)?;
    let source = match previous.last() {
        None => "OTLP/HTTP receiver".to_string(),
        Some(t) => format!("OTLP/HTTP receiver: stored again with late spans (before: #{t})"),
    };
    // Only a graph id stored already (an earlier storing of this trace, or
    // a file's import) makes the import refuse the spans as other content;
    // they are then stored again, whole, beside it.
    let exists =
        !previous.is_empty() || !matches!(db.trace(&graph_id), Err(EngineError::UnknownTrace(_)));
    let keep = exists.then(|| requests.clone());
    let imported = match db.import_otlp(requests, bytes, &source, &ImportOptions { force: false }) {
        Ok(v) => v,
        Err(EngineError::AlreadyStored { .. }) if keep.is_some() => db
            .import_otlp(
                keep.unwrap_or_default(),
                bytes,
                &source,
                &ImportOptions { force: true },
            )
            .map_err(|e| e.to_string())?,
        Err(e) => return Err(e.to_string()),
    };
    let Some(first) = imported.first() else {
        return Err("the import stored nothing".into());
    };
    let id = first.trace;
    if !first.unchanged {
        inner.stored.fetch_add(1, Ordering::Relaxed);
    }
    let superseded = supersede_earlier(inner, trace_id, previous, id)?;
    if inner.opts.log {
        eprintln!(
            "memtrace: stored OTLP trace {trace_id} as #{id} {} ({} variables, {} ops{})",
            first.graph_id,
            first.counts.variables,
            first.counts.ops,
            if superseded.is_empty() {
                String::new()
            } else {
                format!("; it supersedes {}", superseded.join(", "))
            }
        );
    }
    Ok(u64::from(id))
}

/// An OTLP request to import, with the words that name it in messages.
type LabelledRequest = (String, Map<String, Value>);

/// The requests to import for a trace: the spans an earlier storing kept
/// (each once), then the parts held now that are not among them; with
/// their size in bytes.
fn requests_to_store(
    graph_id: &str,
    trace_id: &str,
    earlier: Vec<(u32, Vec<Map<String, Value>>)>,
    held: &[Arc<Vec<u8>>],
) -> Result<(Vec<LabelledRequest>, u64), String> {
    let mut seen: HashSet<[u8; 32]> = HashSet::new();
    let mut requests: Vec<LabelledRequest> = Vec::new();
    let mut bytes = 0u64;
    for (t, docs) in earlier {
        for (k, doc) in docs.into_iter().enumerate() {
            let text = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
            if seen.insert(*blake3::hash(&text).as_bytes()) {
                bytes += text.len() as u64;
                requests.push((
                    format!("part {} of trace {graph_id} as #{t} keeps it", k + 1),
                    doc,
                ));
            }
        }
    }
    for (k, json) in held.iter().enumerate() {
        // A part stored already (the marker saying so was not written
        // before a stop) is in the kept requests.
        if !seen.insert(*blake3::hash(json).as_bytes()) {
            continue;
        }
        bytes += json.len() as u64;
        let doc: Map<String, Value> = serde_json::from_slice(json)
            .map_err(|e| format!("a part in the spool is not JSON: {e}"))?;
        requests.push((format!("OTLP/HTTP part {} of trace {trace_id}", k + 1), doc));
    }
    Ok((requests, bytes))
}

/// Drops the earlier storings of a trace in favour of the new one `id`,
/// carrying their verdicts and labels over; says what each carried.
fn supersede_earlier(
    inner: &Inner,
    trace_id: &str,
    previous: Vec<u32>,
    id: u32,
) -> Result<Vec<String>, String> {
    let mut superseded = Vec::new();
    for old in previous.into_iter().filter(|&o| o != id) {
        let reason = format!(
            "superseded by #{id}: OTLP trace {trace_id} stored again with the spans that came after it was stored"
        );
        // The new trace is committed before this one write moves the records
        // and drops the old: a crash between leaves both whole, and the next
        // start stores the same spans again, finds the new one unchanged and
        // finishes here.
        spool::stall("superseding");
        match inner.sink.db().supersede_trace(old, id, &reason) {
            Ok(moved) => {
                inner.revisions.fetch_add(1, Ordering::Relaxed);
                superseded.push(format!(
                    "#{old} ({moved} verdict(s) and label(s) carried over)"
                ));
            }
            Err(EngineError::Storage(memtrace::StorageError::NoSuchTrace(_))) => {}
            Err(e) => {
                return Err(format!(
                    "#{id} is stored, but #{old}, which it supersedes, could not be dropped: {e}"
                ))
            }
        }
    }
    Ok(superseded)
}
