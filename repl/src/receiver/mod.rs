//! The OTLP/HTTP receiver of `memtrace serve` and `memtrace collect`:
//! spans arrive interleaved and in pieces on `POST /v1/traces`; each
//! request is split by trace, its parts are written ahead to the spool
//! (durable before the 200), and each trace is assembled and stored as one
//! trace, through the same mapping as the OTLP file import, once it is
//! complete: its root span received and no new span for the quiet period
//! (or no new span for the orphan wait, when its root never came), or at
//! shutdown. A span that arrives after its trace was stored has the trace
//! stored again, whole, as a new trace under the same graph id, and the
//! earlier one dropped (logged, with the reason).

mod spool;
pub mod wire;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memtrace::{Database, EngineError, ImportOptions, OtlpSplit};
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
            log: false,
        }
    }
}

/// Where the receiver stores traces.
pub trait Sink: Send + Sync {
    /// The database.
    fn db(&self) -> &Database;
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

/// One part held for a trace.
struct Held {
    offset: u64,
    /// Its JSON, while the trace is not stored (else read from the spool).
    json: Option<Arc<Vec<u8>>>,
}

/// What the receiver knows of one trace id.
#[derive(Default)]
struct TraceState {
    parts: Vec<Held>,
    /// Parts covered by the last storing.
    stored_parts: usize,
    /// The memtrace trace that holds them.
    stored: Option<u64>,
    root: bool,
    last: Option<Instant>,
    /// Being assembled now.
    busy: bool,
}

impl TraceState {
    fn pending(&self) -> bool {
        self.parts.len() > self.stored_parts
    }
}

#[derive(Default)]
struct State {
    traces: HashMap<String, TraceState>,
    pending_bytes: usize,
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
                    t.parts.push(Held { offset, json: None });
                    t.root |= root;
                    t.last = Some(now);
                }
                Entry::Stored {
                    trace_id,
                    parts,
                    trace,
                } => {
                    let t = state.traces.entry(trace_id).or_default();
                    t.stored_parts = parts.min(t.parts.len());
                    if trace.is_some() {
                        t.stored = trace;
                    }
                }
            }
        }
        let mut recovered = (0usize, 0usize);
        for t in state.traces.values_mut() {
            for h in &mut t.parts[t.stored_parts..] {
                if let Record::Part { json, .. } = spool.read_at(h.offset)? {
                    state.pending_bytes += json.len();
                    h.json = Some(Arc::new(json));
                    recovered.1 += 1;
                }
            }
            if t.pending() {
                recovered.0 += 1;
            }
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
    json: Vec<u8>,
}

/// A part of a trace being stored: where it is, and its JSON when held.
struct PartRef {
    offset: u64,
    json: Option<Arc<Vec<u8>>>,
}

/// The writer: takes every batch waiting, appends them, syncs once, holds
/// their parts, then says so to each.
fn write_batches(inner: &Inner, rx: &mpsc::Receiver<Batch>) {
    while let Ok(first) = rx.recv() {
        let mut batches = vec![first];
        while let Ok(b) = rx.try_recv() {
            batches.push(b);
        }
        let mut written: Vec<Vec<Written>> = Vec::new();
        let result = {
            let mut spool = lock(&inner.spool);
            let mut out = Ok(());
            for b in &mut batches {
                let mut w = Vec::new();
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
                            w.push(Written {
                                trace_id,
                                root,
                                offset,
                                json,
                            });
                        }
                        Err(e) => {
                            out = Err(e);
                            break;
                        }
                    }
                }
                written.push(w);
                if out.is_err() {
                    break;
                }
            }
            out.and_then(|()| spool.sync())
        };
        if let Err(e) = result {
            let why = format!(
                "cannot write the OTLP spool ({}): {e}",
                lock(&inner.spool).path().display()
            );
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
            for w in &mut written {
                for Written {
                    trace_id,
                    root,
                    offset,
                    json,
                } in w.drain(..)
                {
                    st.pending_bytes += json.len();
                    let t = st.traces.entry(trace_id).or_default();
                    t.parts.push(Held {
                        offset,
                        json: Some(Arc::new(json)),
                    });
                    t.root |= root;
                    t.last = Some(now);
                }
            }
        }
        inner.wake.notify_all();
        for b in batches {
            let _ = b.done.send(Ok(()));
        }
    }
}

/// The assembler: every so often, stores the traces that are complete; at
/// the stop, every trace held.
fn assemble_loop(inner: &Inner) {
    let tick = Duration::from_millis(100)
        .min(inner.opts.quiet / 2)
        .max(Duration::from_millis(5));
    loop {
        let stopping = inner.stopping.load(Ordering::SeqCst);
        let ready: Vec<String> = {
            let st = lock(&inner.state);
            st.traces
                .iter()
                .filter(|(_, t)| t.pending() && !t.busy)
                .filter(|(_, t)| {
                    let quiet = t.last.map_or(Duration::MAX, |l| l.elapsed());
                    stopping || (t.root && quiet >= inner.opts.quiet) || quiet >= inner.opts.orphan
                })
                .map(|(k, _)| k.clone())
                .collect()
        };
        for trace_id in &ready {
            assemble(inner, trace_id);
        }
        if inner.written.load(Ordering::SeqCst) && ready.is_empty() {
            // The writer has stopped; nothing more comes.
            let st = lock(&inner.state);
            if !st.traces.values().any(TraceState::pending) {
                return;
            }
        }
        if ready.is_empty() {
            let st = lock(&inner.state);
            let _ = inner.wake.wait_timeout(st, tick);
        }
    }
}

/// Stores one trace from all its parts.
fn assemble(inner: &Inner, trace_id: &str) {
    let (held, previous) = {
        let mut st = lock(&inner.state);
        let Some(t) = st.traces.get_mut(trace_id) else {
            return;
        };
        t.busy = true;
        let held: Vec<PartRef> = t
            .parts
            .iter()
            .map(|h| PartRef {
                offset: h.offset,
                json: h.json.clone(),
            })
            .collect();
        (held, t.stored)
    };
    let n = held.len();
    let outcome = store(inner, trace_id, &held, previous);
    let trace = match &outcome {
        Ok(id) => Some(*id),
        Err(e) => {
            eprintln!(
                "memtrace: OTLP trace {trace_id} ({n} part(s)) could not be stored: {e}; its spans stay in the spool, and it is tried again when more of them come"
            );
            None
        }
    };
    {
        let mut spool = lock(&inner.spool);
        let marked = spool
            .append(&Record::Stored {
                trace_id: trace_id.to_string(),
                parts: n,
                trace,
            })
            .and_then(|_| spool.sync());
        if let Err(e) = marked {
            // Storing again at the next start finds the same content stored.
            eprintln!("memtrace: cannot write the OTLP spool's stored marker: {e}");
        }
    }
    let mut st = lock(&inner.state);
    let mut freed = 0;
    if let Some(t) = st.traces.get_mut(trace_id) {
        t.busy = false;
        t.stored_parts = n;
        if trace.is_some() {
            t.stored = trace;
        }
        for h in &mut t.parts[..n] {
            if let Some(j) = h.json.take() {
                freed += j.len();
            }
        }
    }
    st.pending_bytes = st.pending_bytes.saturating_sub(freed);
    drop(st);
    if trace.is_some() {
        inner.sink.changed();
    }
}

/// Imports a trace's parts; with an earlier storing, stores the whole
/// trace again and drops the earlier one. Returns the trace stored.
fn store(
    inner: &Inner,
    trace_id: &str,
    held: &[PartRef],
    previous: Option<u64>,
) -> Result<u64, String> {
    let mut requests: Vec<(String, Map<String, Value>)> = Vec::with_capacity(held.len());
    let mut bytes = 0u64;
    for (k, PartRef { offset, json }) in held.iter().enumerate() {
        let json = match json {
            Some(j) => j.clone(),
            None => match lock(&inner.spool).read_at(*offset) {
                Ok(Record::Part { json, .. }) => Arc::new(json),
                Ok(_) => return Err(format!("the spool has no part at {offset}")),
                Err(e) => return Err(format!("reading the spool: {e}")),
            },
        };
        bytes += json.len() as u64;
        let doc: Map<String, Value> = serde_json::from_slice(&json)
            .map_err(|e| format!("a part in the spool is not JSON: {e}"))?;
        requests.push((format!("OTLP/HTTP part {} of trace {trace_id}", k + 1), doc));
    }
    let db = inner.sink.db();
    let prev_trace = previous;
    let source = match prev_trace {
        None => "OTLP/HTTP receiver".to_string(),
        Some(t) => format!("OTLP/HTTP receiver: stored again with late spans (before: #{t})"),
    };
    // Only a graph id stored already (an earlier storing of this trace, or
    // a file's import) makes the import refuse the spans as other content;
    // they are then stored again, whole, beside it.
    let graph_id = format!("otel-{trace_id}");
    let exists = !matches!(db.trace(&graph_id), Err(EngineError::UnknownTrace(_)));
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
    let id = u64::from(first.trace);
    if !first.unchanged {
        inner.stored.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(old) = prev_trace.filter(|&o| o != id) {
        inner.revisions.fetch_add(1, Ordering::Relaxed);
        let reason = format!(
            "superseded by #{id}: OTLP trace {trace_id} stored again with the spans that came after it was stored"
        );
        match db.drop_trace(&format!("#{old}"), &reason) {
            Ok(_) | Err(EngineError::UnknownTrace(_)) => {}
            Err(e) => eprintln!("memtrace: could not drop #{old}, which #{id} supersedes: {e}"),
        }
    }
    if inner.opts.log {
        eprintln!(
            "memtrace: stored OTLP trace {trace_id} as #{id} {} ({} variables, {} ops{})",
            first.graph_id,
            first.counts.variables,
            first.counts.ops,
            match prev_trace {
                Some(o) if o != id => format!("; it supersedes #{o}"),
                _ => String::new(),
            }
        );
    }
    Ok(id)
}
