//! The embedding API: [`Database`] and the per-trace [`TraceView`].

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memtrace_query::{parse_node_ref, NodeRef};
use memtrace_storage::keys::IdKind;
use memtrace_storage::records::{
    CaseRecord, EdgeRecord, OpRecord, SessionRecord, TraceRecord, ValueRef, VarRecord,
};
use memtrace_storage::{LocalId, ReadView, Store, StoreOptions, TraceId};
use serde_json::Value;

use crate::cache::{CacheStats, Cached, TraceCache};
use crate::catalog::{TraceCatalog, TraceEdges, TraceOps};
use crate::error::{EngineError, Result};
use crate::export::{self, ExportFormat};
use crate::graph::TraceGraph;
use crate::import::{self, FileReport, ImportOptions, ImportedTrace, InputFormat, Progress};
use crate::model::{
    metadata, Case, Edge, LogEntry, Node, Operation, Session, Stats, TraceInfo, Variable,
};

/// An open memtrace database.
///
/// Opening takes RocksDB's lock on the folder: one process at a time.
/// Within the process a `Database` is shared freely (`&self` everywhere);
/// readers see consistent snapshots while imports run.
#[derive(Debug)]
pub struct Database {
    store: Arc<Store>,
    cache: TraceCache,
    llm: std::sync::Mutex<Option<memtrace_llm::Config>>,
}

impl Database {
    /// Opens the database at `path`, creating it when the path does not exist.
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Ok(Database {
            store: Arc::new(Store::open(path.as_ref(), &StoreOptions::default())?),
            cache: TraceCache::default(),
            llm: std::sync::Mutex::new(None),
        })
    }

    /// Opens the database at `path`; fails when there is none.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Database> {
        let opts = StoreOptions {
            create: false,
            ..StoreOptions::default()
        };
        Ok(Database {
            store: Arc::new(Store::open(path.as_ref(), &opts)?),
            cache: TraceCache::default(),
            llm: std::sync::Mutex::new(None),
        })
    }

    /// A consistent snapshot of the store, for queries.
    pub(crate) fn read_view(&self) -> ReadView<'_> {
        self.store.read()
    }

    /// Appends attribution records to a trace.
    pub(crate) fn append_attributions(
        &self,
        trace: TraceId,
        records: &[memtrace_storage::records::AttributionRecord],
    ) -> Result<Vec<u64>> {
        Ok(self.store.append_attributions(trace, records)?)
    }

    /// Appends a pattern record; returns its sequence number.
    pub(crate) fn append_pattern_record(
        &self,
        record: &memtrace_storage::records::PatternRecord,
    ) -> Result<u64> {
        Ok(self.store.append_pattern(record)?)
    }

    /// A cached LLM answer, by its key.
    pub(crate) fn cached_answer(&self, key: &[u8; 32]) -> Result<Option<Vec<u8>>> {
        Ok(self.store.cached_answer(key)?)
    }

    /// Caches an LLM answer under its key.
    pub(crate) fn cache_answer(&self, key: &[u8; 32], body: &[u8]) -> Result<()> {
        Ok(self.store.cache_answer(key, body)?)
    }

    /// Sets the LLM endpoint that `USING llm`, `USING hybrid`, the written
    /// report summary and prompt feedback use, instead of the one the
    /// environment describes.
    pub fn set_llm_config(&self, config: memtrace_llm::Config) {
        *self.llm.lock().unwrap_or_else(|p| p.into_inner()) = Some(config);
    }

    /// The LLM settings in use: those set by [`Database::set_llm_config`],
    /// else read from the environment and the config file
    /// ([`memtrace_llm::Config::from_env`]) and kept.
    pub fn llm_config(&self) -> Result<memtrace_llm::Config> {
        let mut slot = self.llm.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = memtrace_llm::Config::from_env()?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        self.store.path()
    }

    /// Imports one export object (smartcomment or MemTraceBench) or, with
    /// [`InputFormat::JsonLines`], one per line, from a reader. `source`
    /// names the input in messages and in the trace record. Nothing of an
    /// invalid input is stored.
    pub fn import_reader<R: Read>(
        &self,
        reader: R,
        format: InputFormat,
        source: &str,
        opts: &ImportOptions,
    ) -> Result<Vec<ImportedTrace>> {
        match format {
            InputFormat::Json => Ok(vec![import::import_json(
                &self.store,
                reader,
                source,
                opts,
                None,
            )?]),
            InputFormat::JsonLines => {
                let buffered: Box<dyn BufRead + '_> = Box::new(std::io::BufReader::new(reader));
                import::import_lines(&self.store, buffered, None, source, opts, None)
            }
        }
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
        files
            .into_iter()
            .map(|f| match f {
                Ok(path) => {
                    let bytes = path.metadata().map(|m| m.len()).unwrap_or(0);
                    progress(Progress::File {
                        path: path.clone(),
                        bytes,
                    });
                    let result = import::import_file(&self.store, &path, opts, progress);
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
        let ids = view.traces_with_graph_id(selector)?;
        let id = match ids.as_slice() {
            [one] => *one,
            [] => match selector
                .strip_prefix('#')
                .and_then(|n| n.parse::<TraceId>().ok())
            {
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
        Ok(TraceView {
            view,
            store: &self.store,
            id,
            record,
        })
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
    fn cached<T: Cached>(
        &self,
        view: &ReadView,
        trace: TraceId,
        load: impl FnOnce(&ReadView, TraceId, &memtrace_storage::records::Counts) -> Result<T>,
    ) -> Result<Arc<T>> {
        // The record is read even on a hit: a view that does not see the
        // trace (dropped, or imported after it) must not see its entries.
        let record = view
            .trace(trace)?
            .ok_or_else(|| EngineError::UnknownTrace(format!("#{trace}")))?;
        self.cache
            .get_or_load(trace, || load(view, trace, &record.counts))
    }

    /// A trace's adjacency (CSR), from the cache or by one prefix scan.
    pub(crate) fn trace_graph(&self, view: &ReadView, trace: TraceId) -> Result<Arc<TraceGraph>> {
        self.cached(view, trace, TraceGraph::load)
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

    /// The evidence-flow findings of a trace's failed cases, from the cache
    /// or by reading the trace whole and attributing every case.
    pub(crate) fn trace_findings(
        &self,
        view: &ReadView,
        trace: TraceId,
        cancel: &crate::graph::Cancel,
    ) -> Result<Arc<crate::patterns::TraceFindings>> {
        self.cached(view, trace, |_, t, _| {
            crate::patterns::TraceFindings::load(self, t, cancel)
        })
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

/// String ids of a trace's records, indexed by local id.
pub(crate) struct Names {
    /// Full node ids of the variables.
    pub node_ids: Vec<String>,
    /// Op ids.
    pub op_ids: Vec<String>,
    /// Session ids.
    pub session_ids: Vec<String>,
}

/// One trace, read from a consistent snapshot.
pub struct TraceView<'db> {
    view: ReadView<'db>,
    store: &'db Arc<Store>,
    id: TraceId,
    record: TraceRecord,
}

fn split_node_id(id: &str) -> Option<(&str, u32)> {
    let (name, version) = id.rsplit_once('@')?;
    Some((name, version.parse().ok()?))
}

impl<'db> TraceView<'db> {
    /// The trace id.
    pub fn id(&self) -> TraceId {
        self.id
    }

    /// The trace's summary.
    pub fn info(&self) -> TraceInfo {
        TraceInfo::from_record(self.id, self.record.clone())
    }

    pub(crate) fn record(&self) -> &TraceRecord {
        &self.record
    }

    pub(crate) fn store(&self) -> &ReadView<'db> {
        &self.view
    }

    pub(crate) fn to_variable(&self, id: LocalId, v: VarRecord) -> Result<Variable> {
        let value = v.value.as_ref().map(|r| self.view.value(r)).transpose()?;
        Ok(self.variable_of(id, v, value))
    }

    /// The store, for reading values after this view is gone (values are
    /// immutable).
    pub(crate) fn shared_store(&self) -> Arc<Store> {
        Arc::clone(self.store)
    }

    /// Every variable version in insertion order, with the reference of its
    /// value instead of the value (read it with [`Store::value`] when it is
    /// needed).
    pub(crate) fn variables_deferred(&self) -> Result<Vec<(Variable, Option<ValueRef>)>> {
        self.view
            .variables(self.id)
            .map(|r| {
                let (id, v) = r?;
                let value = v.value;
                Ok((self.variable_of(id, v, None), value))
            })
            .collect()
    }

    fn variable_of(&self, id: LocalId, v: VarRecord, value: Option<String>) -> Variable {
        let full_name = v.full_name();
        let full_node_id = v.full_node_id();
        let metadata = metadata(&v.common);
        Variable {
            trace: self.id,
            id,
            name: v.name,
            class_name: v.class_name,
            version: v.version,
            value,
            comment: v.comment,
            category: v.category,
            session_id: v.session_id,
            created_at: v.common.created_at,
            filename: v.common.filename,
            lineno: v.common.lineno,
            metadata,
            full_name,
            full_node_id,
        }
    }

    fn to_op(&self, id: LocalId, o: OpRecord) -> Operation {
        let metadata = metadata(&o.common);
        Operation {
            trace: self.id,
            id,
            op_id: o.op_id,
            op_name: o.op_name,
            category: o.category,
            comment: o.comment,
            session_id: o.session_id,
            created_at: o.common.created_at,
            metadata,
        }
    }

    fn to_edge(
        &self,
        id: LocalId,
        e: EdgeRecord,
        op_id: String,
        source: String,
        target: String,
        session_id: String,
    ) -> Edge {
        let metadata = metadata(&e.common);
        Edge {
            trace: self.id,
            id,
            edge_id: e.edge_id,
            op: e.op,
            op_id,
            source: e.source,
            target: e.target,
            source_full_node_id: source,
            target_full_node_id: target,
            category: e.category,
            comment: e.comment,
            session_id,
            metadata,
        }
    }

    fn to_session(id: LocalId, s: SessionRecord) -> Session {
        let metadata = metadata(&s.common);
        Session {
            id,
            session_id: s.session_id,
            session_name: s.session_name,
            category: s.category,
            comment: s.comment,
            created_at: s.common.created_at,
            metadata,
        }
    }

    /// All sessions, in recorded order.
    pub fn sessions(&self) -> Result<Vec<Session>> {
        self.view
            .sessions(self.id)
            .map(|r| Ok(r.map(|(id, s)| Self::to_session(id, s))?))
            .collect()
    }

    /// All variable versions, in recorded order, with their values.
    pub fn variables(&self) -> Result<Vec<Variable>> {
        self.view
            .variables(self.id)
            .map(|r| {
                r.map_err(EngineError::from)
                    .and_then(|(id, v)| self.to_variable(id, v))
            })
            .collect()
    }

    /// A variable version by local id.
    pub fn variable_by_id(&self, id: LocalId) -> Result<Option<Variable>> {
        self.view
            .variable(self.id, id)?
            .map(|v| self.to_variable(id, v))
            .transpose()
    }

    /// Every version of a full name, oldest first.
    pub fn variable_versions(&self, full_name: &str) -> Result<Vec<Variable>> {
        let mut out = Vec::new();
        for (_, _, local) in self.view.versions(full_name, Some(self.id))? {
            if let Some(v) = self.variable_by_id(local)? {
                out.push(v);
            }
        }
        Ok(out)
    }

    /// The latest version of a full name.
    pub fn latest(&self, full_name: &str) -> Result<Option<Variable>> {
        match self.view.versions(full_name, Some(self.id))?.last() {
            Some((_, _, local)) => self.variable_by_id(*local),
            None => Ok(None),
        }
    }

    /// A variable by its full node id (`full_name@version`).
    pub fn variable(&self, full_node_id: &str) -> Result<Option<Variable>> {
        let Some((name, version)) = split_node_id(full_node_id) else {
            return Ok(None);
        };
        let found = self
            .view
            .versions(name, Some(self.id))?
            .into_iter()
            .find(|(_, v, _)| *v == version);
        match found {
            Some((_, _, local)) => self.variable_by_id(local),
            None => Ok(None),
        }
    }

    /// All operations, in recorded order.
    pub fn ops(&self) -> Result<Vec<Operation>> {
        self.view
            .ops(self.id)
            .map(|r| Ok(r.map(|(id, o)| self.to_op(id, o))?))
            .collect()
    }

    /// An operation by its op id.
    pub fn op(&self, op_id: &str) -> Result<Option<Operation>> {
        let hit = self
            .view
            .string_id(IdKind::Op, op_id)?
            .into_iter()
            .find(|(t, _)| *t == self.id);
        match hit {
            Some((_, local)) => Ok(self.view.op(self.id, local)?.map(|o| self.to_op(local, o))),
            None => Ok(None),
        }
    }

    /// Resolves a reference (`answer:42`, `answer:42@2`, `'full node id'`, an op id).
    pub fn resolve(&self, reference: &str) -> Result<Node> {
        let unknown = || EngineError::UnknownNode {
            trace: self.record.graph_id.clone(),
            reference: reference.to_string(),
        };
        let found = match parse_node_ref(reference)? {
            NodeRef::Name {
                full_name,
                version: Some(v),
            } => self
                .variable(&format!("{full_name}@{v}"))?
                .map(Node::Variable),
            NodeRef::Name {
                full_name,
                version: None,
            } => match self.latest(&full_name)? {
                Some(v) => Some(Node::Variable(v)),
                None => self.op(&full_name)?.map(Node::Operation),
            },
            NodeRef::Quoted(id) => match self.variable(&id)? {
                Some(v) => Some(Node::Variable(v)),
                None => match self.latest(&id)? {
                    Some(v) => Some(Node::Variable(v)),
                    None => self.op(&id)?.map(Node::Operation),
                },
            },
        };
        found.ok_or_else(unknown)
    }

    fn full_node_id(&self, local: LocalId) -> Result<String> {
        Ok(self
            .view
            .variable(self.id, local)?
            .map(|v| v.full_node_id())
            .unwrap_or_default())
    }

    fn edge_with_lookups(&self, id: LocalId, e: EdgeRecord) -> Result<Edge> {
        let op_id = self
            .view
            .op(self.id, e.op)?
            .map(|o| o.op_id)
            .unwrap_or_default();
        let session = self
            .view
            .session(self.id, e.session)?
            .map(|s| s.session_id)
            .unwrap_or_default();
        let (s, t) = (self.full_node_id(e.source)?, self.full_node_id(e.target)?);
        Ok(self.to_edge(id, e, op_id, s, t, session))
    }

    /// The string ids of the trace's variables, ops and sessions, indexed by local id.
    pub(crate) fn names(&self) -> Result<Names> {
        fn collect<T>(
            it: impl Iterator<Item = memtrace_storage::Result<(LocalId, T)>>,
            f: impl Fn(T) -> String,
        ) -> Result<Vec<String>> {
            it.map(|r| r.map(|(_, x)| f(x)).map_err(EngineError::from))
                .collect()
        }
        Ok(Names {
            node_ids: collect(self.view.variables(self.id), |v| v.full_node_id())?,
            op_ids: collect(self.view.ops(self.id), |o| o.op_id)?,
            session_ids: collect(self.view.sessions(self.id), |s| s.session_id)?,
        })
    }

    /// All edges, in recorded order.
    pub fn edges(&self) -> Result<Vec<Edge>> {
        let Names {
            node_ids: names,
            op_ids: ops,
            session_ids: sessions,
        } = self.names()?;
        let get = |v: &Vec<String>, i: LocalId| v.get(i as usize).cloned().unwrap_or_default();
        self.view
            .edges(self.id)
            .map(|r| {
                let (id, e) = r?;
                let (o, s, t, ss) = (
                    get(&ops, e.op),
                    get(&names, e.source),
                    get(&names, e.target),
                    get(&sessions, e.session),
                );
                Ok(self.to_edge(id, e, o, s, t, ss))
            })
            .collect()
    }

    fn adjacent(&self, var: &Variable, outgoing: bool) -> Result<Vec<Edge>> {
        self.view
            .adjacent(self.id, var.id, outgoing)?
            .into_iter()
            .filter_map(|(edge, _, _)| self.view.edge(self.id, edge).transpose().map(|r| (edge, r)))
            .map(|(edge, r)| self.edge_with_lookups(edge, r?))
            .collect()
    }

    /// Local ids of every variable the given one depends on, at any depth
    /// (breadth-first along incoming edges through the adjacency index; the
    /// start is left out, cycles are followed once). One index scan per
    /// visited variable: the query language's cached adjacency is faster.
    pub fn ancestors(&self, start: LocalId) -> Result<Vec<LocalId>> {
        let mut seen = std::collections::HashSet::from([start]);
        let mut queue = std::collections::VecDeque::from([start]);
        let mut out = Vec::new();
        while let Some(v) = queue.pop_front() {
            for (_, source, _) in self.view.adjacent(self.id, v, false)? {
                if seen.insert(source) {
                    out.push(source);
                    queue.push_back(source);
                }
            }
        }
        Ok(out)
    }

    /// Edges into a variable (its dependencies), in recorded order.
    pub fn edges_in(&self, var: &Variable) -> Result<Vec<Edge>> {
        self.adjacent(var, false)
    }

    /// Edges out of a variable (what depends on it), in recorded order.
    pub fn edges_out(&self, var: &Variable) -> Result<Vec<Edge>> {
        self.adjacent(var, true)
    }

    pub(crate) fn to_case(&self, id: LocalId, c: CaseRecord) -> Result<Case> {
        let raw: Value = serde_json::from_str(&c.json)?;
        let s = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
        let evidence = raw
            .get("source_evidence_ids")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Case {
            trace: self.id,
            id,
            query_id: s("query_id"),
            query: s("query"),
            golden_answers: raw.get("golden_answers").cloned().unwrap_or(Value::Null),
            prediction: s("prediction"),
            source_evidence_ids: evidence,
            final_error_type: s("final_error_type"),
            final_op_id: s("final_op_id"),
            raw,
        })
    }

    /// The trace's cases (MemTraceBench annotations), in recorded order.
    pub fn cases(&self) -> Result<Vec<Case>> {
        self.view
            .cases(self.id)
            .map(|r| {
                r.map_err(EngineError::from)
                    .and_then(|(id, c)| self.to_case(id, c))
            })
            .collect()
    }

    /// Writes the trace in `format` (smartcomment JSON, DOT or Mermaid).
    pub fn export(&self, format: ExportFormat, out: &mut dyn Write) -> Result<()> {
        export::write(self, format, out)
    }
}
