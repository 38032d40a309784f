//! The embedding API: the [`Engine`], its consistent [`Snapshot`]s, and the
//! extension point through which analyses run statements ([`Extension`]).
//!
//! The engine plans every statement of the query language, but runs only
//! those about stored records (TRACE, FORWARD, FIND, MATCH, DESCRIBE, SHOW
//! TRACES). A statement that runs an analysis (ATTRIBUTE, the pattern
//! statements) is handed to the [`Extension`] registered for it, the way a
//! database calls a stored procedure: the extension gets the planned
//! statement, a [`Snapshot`] of the database and a sink for its rows. An
//! extension also supplies two kinds of rows that `FIND` reads: cases a
//! trace records without an annotation (its own judge ops, for example) and
//! the results an analysis stored on a trace (`FIND attributions`).
//!
//! An extension keeps what it stores in the engine's append-only records
//! ([`Engine::append_trace_results`], [`Engine::append_definition`],
//! [`Engine::put_memo`]), whose content is JSON text or bytes the engine
//! does not interpret, and what it computes per trace in the trace cache
//! ([`Snapshot::trace_state`]), under the same memory budget as the graphs.
//!
//! A database opened with [`Engine::open`] has no extensions: the
//! statements they run are refused with [`EngineError::NoExtension`].
//! Register them with [`Engine::with_extension`].
//!
//! The database and the extension point are one layer: a database holds its
//! extensions, and an extension is handed the database. Running statements
//! (the query API, `impl Engine { fn query .. }`) is the layer above, in
//! `exec/`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memtrace_query::Plan;
use memtrace_storage::records::{AttributionRecord, PatternRecord, TraceRecord, ValueRef};
use memtrace_storage::{ReadView, Store, StoreOptions, TraceId};

use crate::cache::{CacheStats, Head, TraceCache, TraceState};
use crate::catalog::{TraceCatalog, TraceEdges, TraceOps};
use crate::error::{EngineError, Result};
use crate::exec::value::Sink;
use crate::extension::{DerivedCase, ResultRow};
use crate::graph::{Cancel, TraceGraph};
use crate::import::{self, FileReport, ImportOptions, ImportedTrace, InputFormat, Progress};
use crate::model::{LogEntry, Stats, TraceInfo};
use crate::timestamp::now_ms;
use crate::view::TraceView;

/// An open memtrace database.
///
/// Opening takes RocksDB's lock on the folder: one process at a time.
/// Within the process a `Engine` is shared freely (`&self` everywhere);
/// readers see consistent snapshots while imports run.
///
/// The statements that run an analysis (ATTRIBUTE, the pattern statements)
/// are run by the [`Extension`]s registered with [`Engine::with_extension`];
/// the facade crate `memtrace` opens databases with the analyses registered.
#[derive(Debug)]
pub struct Engine {
    store: Arc<Store>,
    cache: TraceCache,
    extensions: Registry,
    shared: std::sync::Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

/// A record that an analysis appended to a trace (for example a verdict):
/// its sequence number, when it was stored and its content, JSON text whose
/// shape the engine does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceResult {
    /// Its sequence number in the trace, from 1.
    pub seq: u64,
    /// When it was stored, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Its content.
    pub json: String,
}

/// A named definition that an analysis appended (for example a saved
/// pattern or its drop): sequence number, time, name and JSON content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// Its sequence number in the database, from 1.
    pub seq: u64,
    /// When it was stored, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The name it defines.
    pub name: String,
    /// Its content.
    pub json: String,
}

/// How to open a database: `OpenOptions::default()` creates it when missing
/// and waits for the disk at every commit, as [`Engine::open`] does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the database when the path holds none (ignored when read-only).
    pub create: bool,
    /// Open for reading only: no lock is taken, so it opens while another
    /// process writes, and every write fails with a read-only error.
    pub read_only: bool,
    /// Wait for the write-ahead log to reach the disk at every commit;
    /// without it a machine crash may lose the last traces stored, which
    /// suits scratch work that can be redone.
    pub sync: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            create: true,
            read_only: false,
            sync: true,
        }
    }
}

/// One OTLP/JSON request, `{"resourceSpans": [...]}`.
pub type OtlpRequest = serde_json::Map<String, serde_json::Value>;

impl Engine {
    /// Opens the database at `path`, creating it when the path does not
    /// exist. No extension is registered.
    pub fn open(path: impl AsRef<Path>) -> Result<Engine> {
        Engine::open_with(path, &OpenOptions::default())
    }

    /// Opens the database at `path`; fails when there is none.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Engine> {
        let options = OpenOptions {
            create: false,
            ..OpenOptions::default()
        };
        Engine::open_with(path, &options)
    }

    /// Opens the database at `path` for reading only; fails when there is
    /// none. No lock is taken, so any number of readers may open it while
    /// another process writes (an import, a shell, the viewer); each sees
    /// what was committed when it opened. Nothing is written at open, which
    /// makes it the quick open for commands that only read; statements
    /// that store something (ATTRIBUTE, SAVE PATTERN, DROP PATTERN, import)
    /// fail with a storage error that says the database is read-only.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Engine> {
        let options = OpenOptions {
            read_only: true,
            ..OpenOptions::default()
        };
        Engine::open_with(path, &options)
    }

    /// Opens a scratch database at `path`, creating it when the path does
    /// not exist: as [`open`](Self::open), except that commits do not wait
    /// for the write-ahead log to reach the disk. A crash of the machine
    /// may lose the last traces stored, so it is for work that is thrown
    /// away afterwards and can be redone (an analysis of a batch of traces
    /// in a worker's scratch folder), not for a database to keep.
    pub fn open_scratch(path: impl AsRef<Path>) -> Result<Engine> {
        let options = OpenOptions {
            sync: false,
            ..OpenOptions::default()
        };
        Engine::open_with(path, &options)
    }

    /// Whether this database was opened for reading only.
    pub fn is_read_only(&self) -> bool {
        self.store.is_read_only()
    }

    /// Opens the database at `path` as `options` say: whether to create
    /// it, open it read-only, or let commits skip waiting for the disk.
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Engine> {
        let opts = StoreOptions {
            create: options.create && !options.read_only,
            sync: options.sync,
            read_only: options.read_only,
        };
        Ok(Engine {
            store: Arc::new(Store::open(path.as_ref(), &opts)?),
            cache: TraceCache::default(),
            extensions: Registry::default(),
            shared: std::sync::Mutex::default(),
        })
    }

    /// Registers an extension: the statements it names are run by it from
    /// now on (a later registration for the same statement wins).
    pub fn with_extension(mut self, extension: Arc<dyn Extension>) -> Engine {
        self.extensions.add(extension);
        self
    }

    /// The one value of type `T` that extensions share for as long as the
    /// database is open (for example settings made through the API),
    /// created with `T::default()` on first use.
    pub fn shared<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut map = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        match Arc::clone(entry).downcast::<T>() {
            Ok(t) => t,
            // The map is keyed by the type, so the entry is a `T`; were it
            // not, a fresh one replaces it.
            Err(_) => {
                let t = Arc::new(T::default());
                *entry = t.clone();
                t
            }
        }
    }

    pub(crate) fn extensions(&self) -> &Registry {
        &self.extensions
    }

    /// A consistent read of the whole database, for work that spans
    /// several traces and queries.
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            db: self,
            view: self.store.read(),
        }
    }

    /// Appends records to a trace, in one write, after the ones it already
    /// has; returns them as stored (sequence numbers and time included).
    /// Records are never rewritten.
    pub fn append_trace_results(
        &self,
        trace: TraceId,
        jsons: &[String],
    ) -> Result<Vec<TraceResult>> {
        let at_ms = now_ms();
        let records: Vec<AttributionRecord> = jsons
            .iter()
            .map(|json| AttributionRecord {
                at_ms,
                json: json.clone(),
            })
            .collect();
        let seqs = self.store.append_attributions(trace, &records)?;
        Ok(seqs
            .into_iter()
            .zip(records)
            .map(|(seq, r)| TraceResult {
                seq,
                at_ms: r.at_ms,
                json: r.json,
            })
            .collect())
    }

    /// The records appended to a trace, oldest first.
    pub fn trace_results(&self, trace: TraceId) -> Result<Vec<TraceResult>> {
        self.snapshot().trace_results(trace)
    }

    /// Appends a named definition after every earlier one; returns its
    /// sequence number.
    pub fn append_definition(&self, name: &str, json: String) -> Result<u64> {
        Ok(self.store.append_pattern(&PatternRecord {
            at_ms: now_ms(),
            name: name.to_string(),
            json,
        })?)
    }

    /// Every named definition, oldest first.
    pub fn definitions(&self) -> Result<Vec<Definition>> {
        self.store
            .read()
            .pattern_records()
            .map(|r| {
                let (seq, p) = r?;
                Ok(Definition {
                    seq,
                    at_ms: p.at_ms,
                    name: p.name,
                    json: p.json,
                })
            })
            .collect()
    }

    /// A memo stored under a 32-byte key (for example a hash of an LLM
    /// request), if any.
    pub fn memo(&self, key: &[u8; 32]) -> Result<Option<Vec<u8>>> {
        Ok(self.store.cached_answer(key)?)
    }

    /// Stores a memo under its key; storing the same key again keeps one.
    pub fn put_memo(&self, key: &[u8; 32], body: &[u8]) -> Result<()> {
        Ok(self.store.cache_answer(key, body)?)
    }

    /// Stores several memos in one write.
    pub fn put_memos(&self, entries: &[([u8; 32], Vec<u8>)]) -> Result<()> {
        Ok(self.store.cache_answers(entries)?)
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// Imports one export object (smartcomment or MemTraceBench) or, with
    /// [`InputFormat::JsonLines`], one per line, from a reader; or OTLP
    /// JSON (`{"resourceSpans": [...]}`, recognised by that key), one trace
    /// per OpenTelemetry trace id. `source` names the input in messages and
    /// in the trace record. Nothing of an invalid input is stored.
    pub fn import_reader<R: Read>(
        &self,
        reader: R,
        format: InputFormat,
        source: &str,
        opts: &ImportOptions,
    ) -> Result<Vec<ImportedTrace>> {
        match format {
            InputFormat::Json => import::import_json(&self.store, reader, source, 0, opts, None),
            InputFormat::JsonLines => {
                let buffered: Box<dyn BufRead + '_> = Box::new(std::io::BufReader::new(reader));
                import::import_lines(&self.store, buffered, None, source, opts, None)
            }
        }
    }

    /// Imports the spans an OTLP receiver kept until their traces were
    /// complete: OTLP requests (each with a name for its place in errors;
    /// [`crate::split_request`] makes one per trace), `bytes` long in all,
    /// one trace per trace id, mapped as the OTLP file import maps them.
    /// A span received twice is kept as first received (an exporter that
    /// retries sends it again). Each trace is stored whole, or not at all,
    /// and keeps the requests that hold its spans (see
    /// [`Engine::otlp_requests`]).
    pub fn import_otlp(
        &self,
        requests: Vec<(String, serde_json::Map<String, serde_json::Value>)>,
        bytes: u64,
        source: &str,
        opts: &ImportOptions,
    ) -> Result<Vec<ImportedTrace>> {
        import::import_otlp(&self.store, requests, bytes, source, opts)
    }

    /// The traces stored under `graph_id` by [`Engine::import_otlp`], by
    /// id, each with the OTLP requests it keeps (the spans it was made
    /// from), for a receiver to store a trace again whole when more of its
    /// spans come. Traces under that graph id that keep none (imported
    /// from a file, or stored before requests were kept) are left out.
    pub fn otlp_requests(&self, graph_id: &str) -> Result<Vec<(TraceId, Vec<OtlpRequest>)>> {
        let view = self.store.read();
        let mut out = Vec::new();
        for t in view.traces_with_graph_id(graph_id)? {
            let Some(bytes) = view.otlp_requests(t)? else {
                continue;
            };
            let requests = serde_json::from_slice(&bytes).map_err(|e| {
                EngineError::Storage(memtrace_storage::StorageError::Decode {
                    what: "kept OTLP requests",
                    reason: format!("trace #{t}: {e}"),
                })
            })?;
            out.push((t, requests));
        }
        Ok(out)
    }

    /// Replaces trace `old` with `new` (the same trace stored again with
    /// more in it): `old`'s appended records (verdicts, labels) move onto
    /// `new` after its own, with their times, and `old` is dropped, logging
    /// `reason`, in one write. Returns how many records moved.
    pub fn supersede_trace(&self, old: TraceId, new: TraceId, reason: &str) -> Result<usize> {
        let (_, moved) = self.store.supersede(old, new, reason)?;
        self.cache.evict_trace(old);
        Ok(moved)
    }

    /// Imports one file of `format` (whatever its name), named `source` in
    /// messages and in the trace record: what [`import_reader`](Self::import_reader)
    /// does, reading the file as `memtrace import` does (a large JSON file
    /// mapped, not copied into memory; JSON Lines read twice, not kept).
    pub fn import_file(
        &self,
        path: &Path,
        format: InputFormat,
        source: &str,
        opts: &ImportOptions,
    ) -> Result<Vec<ImportedTrace>> {
        import::import_file_as(&self.store, path, format, source, opts)
    }

    /// Imports files and folders (searched recursively for `*.json` and
    /// `*.jsonl`). Each file is all-or-nothing; a failed file does not stop
    /// the others. `progress` hears about files and bytes read.
    pub fn import_paths(
        &self,
        paths: &[PathBuf],
        opts: &ImportOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Vec<FileReport> {
        let files = import::collect_files(paths);
        let total: u64 = files
            .iter()
            .filter_map(|f| f.as_ref().ok())
            .filter_map(|p| p.metadata().ok())
            .map(|m| m.len())
            .sum();
        progress(Progress::Planned {
            files: files.len(),
            bytes: total,
        });
        import::import_files(&self.store, files, opts, progress)
    }

    /// Every stored trace, by id.
    pub fn traces(&self) -> Result<Vec<TraceInfo>> {
        self.store
            .read()
            .traces()
            .map(|r| {
                r.map(|(id, rec)| TraceInfo::from_record(id, rec))
                    .map_err(EngineError::from)
            })
            .collect()
    }

    /// The trace a selector names: a graph id, or `#ID` for a trace id.
    pub fn trace(&self, selector: &str) -> Result<TraceView<'_>> {
        let view = self.store.read();
        let numbered = selector
            .strip_prefix('#')
            .and_then(|n| n.parse::<TraceId>().ok());
        let ids = match numbered {
            // No graph id starts with '#': `#ID` can only be a trace id,
            // and the graph id index is not read.
            Some(_) if !view.hash_graph_ids_possible()? => Vec::new(),
            _ => view.traces_with_graph_id(selector)?,
        };
        let id = match ids.as_slice() {
            [one] => *one,
            [] => match numbered {
                Some(id) => id,
                None => return Err(EngineError::UnknownTrace(selector.to_string())),
            },
            many => {
                return Err(EngineError::AmbiguousTrace {
                    graph_id: selector.to_string(),
                    ids: many.to_vec(),
                })
            }
        };
        self.view(view, id).map_err(|e| match e {
            EngineError::Storage(memtrace_storage::StorageError::NoSuchTrace(_)) => {
                EngineError::UnknownTrace(selector.to_string())
            }
            e => e,
        })
    }

    /// The trace with this id.
    pub fn trace_by_id(&self, id: TraceId) -> Result<TraceView<'_>> {
        self.view(self.store.read(), id)
    }

    fn view<'a>(&'a self, view: ReadView<'a>, id: TraceId) -> Result<TraceView<'a>> {
        let record = view
            .trace(id)?
            .ok_or(memtrace_storage::StorageError::NoSuchTrace(id))?;
        Ok(TraceView::new(view, &self.store, id, record))
    }

    /// Totals over the database.
    pub fn stats(&self) -> Result<Stats> {
        let mut s = Stats {
            traces: 0,
            sessions: 0,
            variables: 0,
            ops: 0,
            edges: 0,
            cases: 0,
            disk_bytes: self.store.disk_bytes()?,
            imported_json_bytes: 0,
        };
        for t in self.traces()? {
            s.traces += 1;
            s.sessions += t.counts.sessions as u64;
            s.variables += t.counts.variables as u64;
            s.ops += t.counts.ops as u64;
            s.edges += t.counts.edges as u64;
            s.cases += t.counts.cases as u64;
            s.imported_json_bytes += t.source_bytes;
        }
        Ok(s)
    }

    /// Removes a whole trace (the one deletion memtrace has), logging `reason`.
    pub fn drop_trace(&self, selector: &str, reason: &str) -> Result<TraceInfo> {
        let id = self.trace(selector)?.id();
        let rec = self.store.drop_trace(id, reason)?;
        self.cache.evict_trace(id);
        Ok(TraceInfo::from_record(id, rec))
    }

    /// The cached structure of `T`'s kind for `trace`, loaded through `view`
    /// on a miss with the trace record's counts.
    fn cached<T: TraceState, E: From<EngineError>>(
        &self,
        view: &ReadView,
        trace: TraceId,
        load: impl FnOnce(&ReadView, TraceId, &memtrace_storage::records::Counts) -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        // The record is read even on a hit: a view that does not see the
        // trace (dropped, or imported after it) must not see its entries.
        let record = view
            .trace(trace)
            .map_err(EngineError::from)?
            .ok_or_else(|| EngineError::UnknownTrace(format!("#{trace}")))?;
        self.cache
            .get_or_load(trace, || load(view, trace, &record.counts))
    }

    /// Like `cached`, for a caller that read the trace's record from `view`
    /// already (so the view is known to see the trace): no second read.
    pub(crate) fn cached_seen<T: TraceState>(
        &self,
        view: &ReadView,
        trace: TraceId,
        counts: &memtrace_storage::records::Counts,
        load: impl FnOnce(&ReadView, TraceId, &memtrace_storage::records::Counts) -> Result<T>,
    ) -> Result<Arc<T>> {
        self.cache.get_or_load(trace, || load(view, trace, counts))
    }

    /// A trace's head (its record and, for a small trace, its names and
    /// adjacency as stored), from the cache or by one get of its stored
    /// value. `None` when `view` does not see the trace or it was stored
    /// before heads were.
    pub(crate) fn trace_head(&self, view: &ReadView, trace: TraceId) -> Result<Option<Arc<Head>>> {
        if let Some(head) = self.cache.get::<Head>(trace) {
            // Kept from another view: this one must see the trace too.
            return Ok(view.trace(trace)?.is_some().then_some(head));
        }
        let Some(stored) = view.head(trace)? else {
            return Ok(None);
        };
        let head = Arc::new(Head {
            record: stored.record,
            names: stored.names,
            adjacency: stored.adjacency,
        });
        self.cache.insert(trace, &head);
        Ok(Some(head))
    }

    /// The head of `trace` when the cache holds it (a query of the trace
    /// read it) and it is a small trace's, so holds the trace's names and
    /// adjacency as stored.
    pub(crate) fn cached_small_head(&self, trace: TraceId) -> Option<Arc<Head>> {
        self.cache
            .peek::<Head>(trace)
            .filter(|h| h.adjacency.is_some())
    }

    /// A trace's graph, built from its head's adjacency when the cache
    /// holds that (no read), else from its stored adjacency value (one
    /// get). `counts` are the trace record's.
    pub(crate) fn load_graph(
        &self,
        view: &ReadView,
        trace: TraceId,
        counts: &memtrace_storage::records::Counts,
    ) -> Result<TraceGraph> {
        if let Some(head) = self.cached_small_head(trace) {
            if let Some(stored) = &head.adjacency {
                return TraceGraph::from_stored(trace, counts, stored.decode()?);
            }
        }
        TraceGraph::load(view, trace, counts)
    }

    /// The trace a selector names (see [`Engine::trace`]) as `view` sees
    /// it, with its head when it has one. `#ID` is looked up by its head
    /// alone: no other read.
    pub(crate) fn scoped_trace(
        &self,
        view: &ReadView,
        selector: &str,
    ) -> Result<(TraceId, Option<Arc<Head>>)> {
        let numbered = selector
            .strip_prefix('#')
            .and_then(|n| n.parse::<TraceId>().ok());
        if let Some(id) = numbered {
            if !view.hash_graph_ids_possible()? {
                if let Some(head) = self.trace_head(view, id)? {
                    return Ok((id, Some(head)));
                }
            }
        }
        let id = self.trace(selector)?.id();
        Ok((id, self.trace_head(view, id)?))
    }

    /// Whether a bounded walk of `trace` reads its stored blocks (see the cache).
    pub(crate) fn walk_stored(&self, trace: TraceId) -> bool {
        self.cache.walk_stored(trace)
    }

    /// A trace's adjacency (CSR), from the cache or by one get of its stored value.
    pub(crate) fn trace_graph(&self, view: &ReadView, trace: TraceId) -> Result<Arc<TraceGraph>> {
        self.cached(view, trace, |v, t, c| self.load_graph(v, t, c))
    }

    /// A trace's variables with their lookups, from the cache or by one prefix scan.
    pub(crate) fn trace_catalog(
        &self,
        view: &ReadView,
        trace: TraceId,
    ) -> Result<Arc<TraceCatalog>> {
        self.cached(view, trace, TraceCatalog::load)
    }

    /// A trace's sessions and ops, from the cache or by one prefix scan each.
    pub(crate) fn trace_ops(&self, view: &ReadView, trace: TraceId) -> Result<Arc<TraceOps>> {
        self.cached(view, trace, TraceOps::load)
    }

    /// A trace's edge records, from the cache or by one prefix scan.
    pub(crate) fn trace_edges(&self, view: &ReadView, trace: TraceId) -> Result<Arc<TraceEdges>> {
        self.cached(view, trace, TraceEdges::load)
    }

    /// Sets the trace cache's budget in bytes (256 MiB by default), evicting
    /// the least recently used entries beyond it. Entries larger than the
    /// budget are used once and not kept.
    pub fn set_cache_budget(&self, bytes: usize) {
        self.cache.set_budget(bytes);
    }

    /// The trace cache's counters and size.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// Empties the trace cache (its counters stay).
    pub fn clear_cache(&self) {
        self.cache.clear();
    }

    /// The event log: every import and removal, oldest first.
    pub fn log(&self) -> Result<Vec<LogEntry>> {
        self.store
            .read()
            .log()
            .map(|r| {
                r.map(|(seq, e)| LogEntry {
                    seq,
                    at_ms: e.at_ms,
                    action: e.action,
                    trace: e.trace,
                    graph_id: e.graph_id,
                    detail: e.detail,
                })
                .map_err(EngineError::from)
            })
            .collect()
    }

    /// Flushes memory tables to disk (before measuring disk size).
    pub fn flush(&self) -> Result<()> {
        Ok(self.store.flush()?)
    }
}

/// A consistent read of the whole database: what was committed when it was
/// taken, whatever imports or drops run meanwhile. Analyses that span
/// several traces and queries work on one snapshot.
pub struct Snapshot<'db> {
    db: &'db Engine,
    view: ReadView<'db>,
}

impl<'db> Snapshot<'db> {
    /// The database it reads.
    pub fn database(&self) -> &'db Engine {
        self.db
    }

    pub(crate) fn view(&self) -> &ReadView<'db> {
        &self.view
    }

    /// Every trace it sees, by id, with its record.
    pub fn traces(&self) -> Result<Vec<(TraceId, TraceRecord)>> {
        self.view
            .traces()
            .map(|r| r.map_err(EngineError::from))
            .collect()
    }

    /// One trace, by id.
    pub fn trace(&self, id: TraceId) -> Result<TraceView<'db>> {
        self.db.trace_by_id(id)
    }

    /// A trace's adjacency (CSR), from the trace cache or by one get of its stored value.
    pub fn graph(&self, trace: TraceId) -> Result<Arc<TraceGraph>> {
        self.db.trace_graph(&self.view, trace)
    }

    /// A trace's variables with their lookups, from the cache or by one prefix scan.
    pub fn catalog(&self, trace: TraceId) -> Result<Arc<TraceCatalog>> {
        self.db.trace_catalog(&self.view, trace)
    }

    /// A trace's sessions and ops, from the cache or by one prefix scan each.
    pub fn ops(&self, trace: TraceId) -> Result<Arc<TraceOps>> {
        self.db.trace_ops(&self.view, trace)
    }

    /// A trace's edge records, from the cache or by one prefix scan.
    pub fn edges(&self, trace: TraceId) -> Result<Arc<TraceEdges>> {
        self.db.trace_edges(&self.view, trace)
    }

    /// A stored value, by the reference a variable record holds.
    pub fn value(&self, r: &ValueRef) -> Result<String> {
        Ok(self.view.value(r)?)
    }

    /// The records an analysis appended to a trace, oldest first.
    pub fn trace_results(&self, trace: TraceId) -> Result<Vec<TraceResult>> {
        self.view
            .attributions(trace)
            .map(|r| {
                let (seq, a) = r?;
                Ok(TraceResult {
                    seq,
                    at_ms: a.at_ms,
                    json: a.json,
                })
            })
            .collect()
    }

    /// What an extension computed for a trace, from the trace cache, or
    /// computed by `load` and cached (under the cache's byte budget; a
    /// dropped trace's entries go with it). An error of `load` is returned
    /// as it is, and nothing is cached.
    pub fn trace_state<T: TraceState, E: From<EngineError>>(
        &self,
        trace: TraceId,
        load: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        self.db.cached(&self.view, trace, |_, _, _| load())
    }
}

/// What an extension is handed when the database calls it.
pub struct Call<'c, 'db> {
    /// The consistent read the statement runs on.
    pub snapshot: &'c Snapshot<'db>,
    /// The statement's cancellation token.
    pub cancel: &'c Cancel,
}

impl<'db> Call<'_, 'db> {
    /// The database.
    pub fn db(&self) -> &'db Engine {
        self.snapshot.database()
    }
}

/// An analysis that runs statements of the query language and supplies rows
/// that the engine does not produce itself. Every method but
/// [`Extension::statements`] and [`Extension::run`] has a default that
/// supplies nothing.
pub trait Extension: Send + Sync + 'static {
    /// The statements it runs, by the names of
    /// [`statement_name`](crate::statement_name) (e.g. `"ATTRIBUTE"`). A
    /// statement is run by the last extension registered for it.
    fn statements(&self) -> &[&'static str];

    /// Checks and completes a planned statement it runs, before it runs
    /// (also inside EXPLAIN). An error about a part of the statement names
    /// its place in `text`, the statement as written.
    fn prepare(&self, db: &Engine, plan: &mut Plan, text: &str) -> Result<()> {
        let _ = (db, plan, text);
        Ok(())
    }

    /// Runs a planned statement, handing each row to `sink` (which returns
    /// `false` to stop early). Its columns are those [`columns_of`](crate::columns_of) names.
    fn run(&self, call: &Call<'_, '_>, plan: &Plan, sink: &mut Sink<'_>) -> Result<()>;

    /// Whether a trace whose op names are these may record cases of its
    /// own (read before [`Extension::derived_cases`], which may read the
    /// whole trace).
    fn may_derive_cases(&self, op_names: &mut dyn Iterator<Item = &str>) -> bool {
        let _ = op_names;
        false
    }

    /// The failed cases a trace records without annotations, in order.
    /// Asked only of traces that have no case annotation.
    fn derived_cases(&self, call: &Call<'_, '_>, trace: TraceId) -> Result<Vec<DerivedCase>> {
        let _ = (call, trace);
        Ok(Vec::new())
    }

    /// The results stored on a trace, as rows of `FIND attributions`,
    /// oldest first.
    fn result_rows(&self, call: &Call<'_, '_>, trace: TraceId) -> Result<Vec<Box<dyn ResultRow>>> {
        let _ = (call, trace);
        Ok(Vec::new())
    }
}

/// The extensions registered with a database.
#[derive(Clone, Default)]
pub(crate) struct Registry {
    all: Vec<Arc<dyn Extension>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .all
            .iter()
            .flat_map(|e| e.statements().iter().copied())
            .collect();
        f.debug_struct("Registry")
            .field("statements", &names)
            .finish()
    }
}

impl Registry {
    pub(crate) fn add(&mut self, ext: Arc<dyn Extension>) {
        self.all.push(ext);
    }

    /// The extension that runs a statement.
    pub(crate) fn for_statement(&self, name: &'static str) -> Result<&dyn Extension> {
        self.all
            .iter()
            .rev()
            .find(|e| e.statements().contains(&name))
            .map(|e| e.as_ref())
            .ok_or(EngineError::NoExtension(name))
    }

    /// Every registered extension, latest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &dyn Extension> {
        self.all.iter().rev().map(|e| e.as_ref())
    }
}
