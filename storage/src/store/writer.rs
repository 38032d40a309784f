//! Writing one trace: its records, values and index entries go into one
//! write batch (or, for a large trace, into table files ingested whole),
//! and the commit makes it visible at once.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use rocksdb::WriteBatch;
use serde::Serialize;

use super::bulk::{
    stopped, two_shares, write_share, FamilyEntries, TableFile, BULK_BYTES, BULK_FAMILIES,
    INGEST_DIR,
};
use super::cf;
use super::io::{io_err, now_ms};
use super::open::Store;
use super::schema::{
    content_key, ingesting_key, otlp_key, META_HASH_GRAPH_IDS, META_HEADS_FROM, META_NEXT_TRACE,
};
use crate::adjacency::Adjacency;
use crate::display_texts::TraceTexts;
use crate::error::StorageError;
use crate::head::{encode_head, HeadNames, HEAD_BYTES, HEAD_VARS};
use crate::ids::{LocalId, Result, TraceId};
use crate::keys::{self, IdKind, RecordKind};
use crate::records::{
    encode, encode_into, CaseRecord, Counts, EdgeRecord, LogEvent, OpRecord, SessionRecord,
    TraceRecord, ValueRef, VarRecord,
};
use crate::values::{encode_value, hex, value_ref, PreparedValue};

/// Collects one trace's records into a single write batch.
///
/// Local ids are handed out in call order per record kind, starting at 0.
/// Dropping the writer without committing stores nothing.
pub struct TraceWriter<'s> {
    store: &'s Store,
    trace: TraceId,
    batch: WriteBatch,
    pending_values: HashMap<[u8; 32], Vec<u8>>,
    counts: Counts,
    /// Each edge's (source, target, op), for the trace's adjacency value.
    ends: [Vec<u32>; 3],
    /// The digest of what the trace is imported from, when known.
    content: Option<[u8; 32]>,
    /// The OTLP requests the trace is made from, when it keeps them.
    otlp: Option<Vec<u8>>,
    /// A bulk write's entries of each of [`BULK_FAMILIES`] (see
    /// [`BULK_BYTES`]); `None` for a trace written in one batch.
    pub(super) bulk: Option<Vec<FamilyEntries>>,
    /// What was finished: [`VARIABLES_DONE`], [`OPS_DONE`].
    finished: u8,
    /// TableFile files of finished families being written, each batch of them
    /// on a thread of its own, while the rest of the trace is added.
    early: Vec<std::thread::JoinHandle<Result<Vec<TableFile>>>>,
    /// Where records are encoded, reused from one to the next.
    scratch: Vec<u8>,
    /// The display texts of the variables and ops added so far, stored at
    /// the commit; `None` once a table would be too large to store (readers
    /// then make them from the records).
    texts: Option<TraceTexts>,
    /// Where a variable's full node id is made for its texts.
    text_scratch: String,
}

/// [`TraceWriter::finish_variables`] was called.
const VARIABLES_DONE: u8 = 1;
/// [`TraceWriter::finish_ops`] was called.
const OPS_DONE: u8 = 2;

impl Drop for TraceWriter<'_> {
    /// A writer dropped before its commit waits for the table files it
    /// was writing, and removes them.
    fn drop(&mut self) {
        for files in self.early_files().unwrap_or_default() {
            let _ = std::fs::remove_file(files.1);
        }
    }
}

fn next_local(counter: &mut u32, what: &'static str) -> Result<LocalId> {
    let id = *counter;
    *counter = id.checked_add(1).ok_or(StorageError::IdsExhausted(what))?;
    Ok(id)
}

impl Store {
    /// Starts writing a new trace. Nothing is visible until [`TraceWriter::commit`].
    pub fn begin_trace(&self) -> Result<TraceWriter<'_>> {
        self.begin_trace_sized(0)
    }

    /// [`Store::begin_trace`] with room for about `bytes` of records made
    /// up front (a trace's records take about the bytes of its export), so
    /// that the write batch of a large trace is not grown by doubling: a
    /// copy of all it holds, into fresh pages, each time.
    pub fn begin_trace_sized(&self, bytes: usize) -> Result<TraceWriter<'_>> {
        self.writable()?;
        let trace = self
            .next_trace
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| t.checked_add(1))
            .map_err(|_| StorageError::IdsExhausted("traces"))?;
        let bulk = bytes >= BULK_BYTES;
        Ok(TraceWriter {
            store: self,
            trace,
            // In bulk, the batch holds only the adjacency and the trace
            // record (about a sixteenth of the export, at most).
            batch: WriteBatch::with_capacity_bytes(if bulk { bytes / 16 } else { bytes }),
            pending_values: HashMap::new(),
            counts: Counts::default(),
            ends: Default::default(),
            content: None,
            otlp: None,
            bulk: bulk.then(|| {
                BULK_FAMILIES
                    .iter()
                    .map(|_| FamilyEntries::default())
                    .collect()
            }),
            finished: 0,
            early: Vec::new(),
            scratch: Vec::new(),
            texts: Some(TraceTexts::default()),
            text_scratch: String::new(),
        })
    }
}

impl<'s> TraceWriter<'s> {
    /// The id the trace will have.
    pub fn trace_id(&self) -> TraceId {
        self.trace
    }

    /// Keeps `digest` (see [`content_digest`](super::content_digest)) as the digest of what the
    /// trace is imported from.
    pub fn set_content_digest(&mut self, digest: [u8; 32]) {
        self.content = Some(digest);
    }

    /// Keeps `requests` (the OTLP requests the trace is made from, as the
    /// importer encodes them) with the trace, written with its record and
    /// dropped with it; [`ReadView::otlp_requests`](super::ReadView::otlp_requests) reads them back.
    pub fn keep_otlp_requests(&mut self, requests: Vec<u8>) {
        self.otlp = Some(requests);
    }

    /// Adds a record under `key` to column family `name` (see
    /// [`put`](Self::put)), encoded in the writer's reused buffer.
    fn put_record<T: Serialize>(
        &mut self,
        name: &'static str,
        key: impl AsRef<[u8]>,
        what: &'static str,
        record: &T,
    ) -> Result<()> {
        let mut buf = std::mem::take(&mut self.scratch);
        encode_into(what, record, &mut buf)?;
        self.put(name, key, buf.as_slice());
        self.scratch = buf;
        Ok(())
    }

    /// Adds an entry to column family `name`: to the write batch, or in a
    /// bulk write to the entries of a family that is ingested.
    fn put<K: AsRef<[u8]>, V: AsRef<[u8]> + Into<Vec<u8>>>(
        &mut self,
        name: &'static str,
        key: K,
        value: V,
    ) {
        if let Some(bulk) = self.bulk.as_mut() {
            // Callers name families by the same constants, so comparing
            // addresses spares comparing text for every entry.
            let i = BULK_FAMILIES
                .iter()
                .position(|f| std::ptr::eq(*f, name))
                .or_else(|| BULK_FAMILIES.iter().position(|f| *f == name));
            if let Some(i) = i {
                bulk[i].push(key.as_ref(), value);
                return;
            }
        }
        self.batch.put_cf(self.store.cf(name), key, value);
    }

    /// Adds a session.
    pub fn put_session(&mut self, s: &SessionRecord) -> Result<LocalId> {
        let local = next_local(&mut self.counts.sessions, "sessions")?;
        let t = self.trace;
        self.put_record(cf::SESSIONS, keys::record_key(t, local), "session", s)?;
        self.put(
            cf::STRING_ID,
            keys::string_id_key(IdKind::Session, &s.session_id, t),
            local.to_be_bytes(),
        );
        if let Some(c) = &s.category {
            self.put(
                cf::CATEGORY,
                keys::category_key(RecordKind::Session, c, t, local),
                [],
            );
        }
        Ok(local)
    }

    /// The reference a value will be stored under; pass it in the variable
    /// record given to [`put_variable`](Self::put_variable).
    pub fn stage_value(&mut self, value: &str) -> ValueRef {
        let r = value_ref(value);
        self.pending_values
            .entry(r.hash)
            .or_insert_with(|| encode_value(value));
        r
    }

    /// [`stage_value`](Self::stage_value) for a value hashed and encoded
    /// beforehand.
    pub fn stage_prepared(&mut self, value: PreparedValue) -> ValueRef {
        let (r, payload) = value.into_parts();
        self.pending_values.entry(r.hash).or_insert(payload);
        r
    }

    /// Says that every variable of the trace was added: in a bulk write,
    /// their table files (records, names, values and value references)
    /// are written from now on, on a thread of their own, while the rest
    /// of the trace is added. A variable added afterwards is an error
    /// ([`StorageError::Finished`]); a value staged afterwards is stored
    /// at the commit.
    pub fn finish_variables(&mut self) -> Result<()> {
        self.finish(
            VARIABLES_DONE,
            &[cf::VARIABLES, cf::VAR_NAME, cf::VALUES, cf::VALUE_REFS],
        )
    }

    /// Says that every op of the trace was added (see
    /// [`finish_variables`](Self::finish_variables)): their records and
    /// op names are written from now on.
    pub fn finish_ops(&mut self) -> Result<()> {
        self.finish(OPS_DONE, &[cf::OPS, cf::OP_NAME])
    }

    fn finish(&mut self, done: u8, families: &[&'static str]) -> Result<()> {
        if self.finished & done != 0 {
            return Ok(());
        }
        self.finished |= done;
        if self.bulk.is_none() {
            return Ok(());
        }
        if done == VARIABLES_DONE {
            self.put_pending_values()?;
        }
        let Some(bulk) = self.bulk.as_mut() else {
            return Ok(());
        };
        let share: Vec<(&'static str, FamilyEntries)> = BULK_FAMILIES
            .iter()
            .zip(bulk.iter_mut())
            .filter(|(name, _)| families.contains(name))
            .map(|(name, run)| (*name, std::mem::take(run)))
            .collect();
        self.write_ahead(share)
    }

    /// In a bulk write, at the commit: the entries of the families not
    /// finished yet are final, and their table files are written from now
    /// on, on two threads, while the commit makes the trace's adjacency,
    /// texts and head.
    fn finish_rest(&mut self) -> Result<()> {
        let Some(bulk) = self.bulk.as_mut() else {
            return Ok(());
        };
        let rest = BULK_FAMILIES
            .iter()
            .zip(bulk.iter_mut())
            .map(|(name, run)| (*name, std::mem::take(run)));
        for share in two_shares(rest).into_iter().filter(|s| !s.is_empty()) {
            self.write_ahead(share)?;
        }
        Ok(())
    }

    /// Writes the table files of `share` on a thread of its own; the
    /// commit waits for them ([`early_files`](Self::early_files)).
    fn write_ahead(&mut self, share: Vec<(&'static str, FamilyEntries)>) -> Result<()> {
        let dir = self.store.path.join(INGEST_DIR);
        let cache = self.store.cache.clone();
        let (trace, tag) = (self.trace, self.early.len() + 1);
        let handle = std::thread::Builder::new()
            .name("memtrace-tables".into())
            .spawn(move || write_share(&dir, &cache, trace, tag, share))
            .map_err(|e| io_err(&self.store.path.join(INGEST_DIR), e))?;
        self.early.push(handle);
        Ok(())
    }

    /// Waits for the table files written ahead; the first error, if any.
    fn early_files(&mut self) -> Result<Vec<TableFile>> {
        let dir = self.store.path.join(INGEST_DIR);
        let mut files = Vec::new();
        let mut failed = None;
        for handle in std::mem::take(&mut self.early) {
            match handle.join() {
                Ok(Ok(f)) => files.extend(f),
                Ok(Err(e)) => {
                    failed.get_or_insert(e);
                }
                Err(_) => {
                    failed.get_or_insert(stopped(&dir));
                }
            }
        }
        match failed {
            None => Ok(files),
            Some(e) => {
                for (_, f) in files {
                    let _ = std::fs::remove_file(f);
                }
                Err(e)
            }
        }
    }

    /// Puts the values staged so far (those not stored yet) and their
    /// references.
    fn put_pending_values(&mut self) -> Result<()> {
        let store = self.store;
        let values = store.cf(cf::VALUES);
        for (hash, payload) in std::mem::take(&mut self.pending_values) {
            if store.db.get_pinned_cf(values, hash)?.is_none() {
                self.put(cf::VALUES, hash, payload);
            }
            self.put(cf::VALUE_REFS, keys::value_ref_key(&hash, self.trace), []);
        }
        Ok(())
    }

    /// Adds a variable; its value must have been staged with [`stage_value`](Self::stage_value).
    pub fn put_variable(&mut self, v: &VarRecord) -> Result<LocalId> {
        if self.finished & VARIABLES_DONE != 0 {
            return Err(StorageError::Finished("variables"));
        }
        if let Some(r) = &v.value {
            if !self.pending_values.contains_key(&r.hash) {
                return Err(StorageError::MissingValue(hex(&r.hash)));
            }
        }
        let local = next_local(&mut self.counts.variables, "variables")?;
        let t = self.trace;
        self.put_record(cf::VARIABLES, keys::record_key(t, local), "variable", v)?;
        if let Some(texts) = self.texts.as_mut() {
            if !texts.push_variable(v, &mut self.text_scratch) {
                self.texts = None;
            }
        }
        self.put(
            cf::VAR_NAME,
            keys::name_key(&v.full_name(), t, v.version),
            local.to_be_bytes(),
        );
        if let Some(c) = &v.category {
            self.put(
                cf::CATEGORY,
                keys::category_key(RecordKind::Variable, c, t, local),
                [],
            );
        }
        Ok(local)
    }

    /// Adds an operation.
    pub fn put_op(&mut self, o: &OpRecord) -> Result<LocalId> {
        if self.finished & OPS_DONE != 0 {
            return Err(StorageError::Finished("ops"));
        }
        let local = next_local(&mut self.counts.ops, "ops")?;
        let t = self.trace;
        self.put_record(cf::OPS, keys::record_key(t, local), "op", o)?;
        if let Some(texts) = self.texts.as_mut() {
            if !texts.ops.push_op(o) {
                self.texts = None;
            }
        }
        self.put(
            cf::STRING_ID,
            keys::string_id_key(IdKind::Op, &o.op_id, t),
            local.to_be_bytes(),
        );
        if let Some(c) = &o.category {
            self.put(
                cf::CATEGORY,
                keys::category_key(RecordKind::Op, c, t, local),
                [],
            );
        }
        if let Some(n) = &o.op_name {
            self.put(cf::OP_NAME, keys::op_name_key(n, t, local), []);
        }
        Ok(local)
    }

    /// Adds an edge and its two adjacency entries.
    pub fn put_edge(&mut self, e: &EdgeRecord) -> Result<LocalId> {
        let local = next_local(&mut self.counts.edges, "edges")?;
        let t = self.trace;
        self.put_record(cf::EDGES, keys::record_key(t, local), "edge", e)?;
        self.put(
            cf::STRING_ID,
            keys::string_id_key(IdKind::Edge, &e.edge_id, t),
            local.to_be_bytes(),
        );
        if let Some(c) = &e.category {
            self.put(
                cf::CATEGORY,
                keys::category_key(RecordKind::Edge, c, t, local),
                [],
            );
        }
        for (list, id) in self.ends.iter_mut().zip([e.source, e.target, e.op]) {
            list.push(id);
        }
        Ok(local)
    }

    /// Adds a case annotation.
    pub fn put_case(&mut self, c: &CaseRecord) -> Result<LocalId> {
        let local = next_local(&mut self.counts.cases, "cases")?;
        self.put(
            cf::CASES,
            keys::record_key(self.trace, local),
            encode("case", c)?,
        );
        Ok(local)
    }

    /// Counts of what was added so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Writes the trace, its values and indexes, and a log entry, atomically.
    ///
    /// With `refuse_duplicate`, fails with the ids of the stored traces that
    /// have the same graph id (checked under the write lock).
    pub fn commit(
        mut self,
        mut record: TraceRecord,
        refuse_duplicate: bool,
    ) -> Result<std::result::Result<TraceId, Vec<TraceId>>> {
        let store = self.store;
        let _guard = store.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let t = self.trace;
        if refuse_duplicate {
            let existing = store.read().traces_with_graph_id(&record.graph_id)?;
            if !existing.is_empty() {
                return Ok(Err(existing));
            }
        }
        record.counts = self.counts;
        record.imported_at_ms = now_ms();
        if self.bulk.is_some() {
            // Values staged since the variables were finished go with the
            // rest, whose table files are written while the adjacency,
            // texts and head are made.
            self.put_pending_values()?;
            self.finish_rest()?;
        }
        self.put_adjacency_and_head(&record)?;
        if let Some(mut texts) = self.texts.take() {
            texts.shrink_to_fit();
            self.put(cf::ADJACENCY, keys::texts_key(t), texts.encode());
        }
        self.put_pending_values()?;
        self.put_trace_record(&record)?;
        let batch = std::mem::take(&mut self.batch);
        match self.bulk.take() {
            None => store.write(batch)?,
            Some(bulk) => self.write_in_bulk(batch, bulk)?,
        }
        Ok(Ok(t))
    }

    /// Puts the trace's adjacency, its blocks and its head: the record, and
    /// a small trace's names and adjacency, for a query to read with one
    /// get (see [`TraceHead`](crate::TraceHead)).
    fn put_adjacency_and_head(&mut self, record: &TraceRecord) -> Result<()> {
        let (store, t) = (self.store, self.trace);
        let [source, target, op] = std::mem::take(&mut self.ends);
        let adjacency =
            Adjacency::from_edges(self.counts.variables, self.counts.ops, source, target, op)?;
        self.put(cf::ADJACENCY, keys::trace_key(t), adjacency.encode());
        for backward in [true, false] {
            for (i, block) in adjacency.blocks(backward).iter().enumerate() {
                self.put(
                    cf::ADJACENCY,
                    keys::adjacency_block_key(t, backward, i as u32),
                    block.encode(),
                );
            }
        }
        let names = match &self.texts {
            Some(l) if self.counts.variables <= HEAD_VARS => HeadNames::new(
                (0..l.vars.len() as u32)
                    .map(|v| (l.vars.get(v).and_then(|[id, _]| id).unwrap_or(""), v)),
            ),
            _ => None,
        };
        let small = names
            .map(|n| (adjacency.encode_narrow(), n))
            .filter(|(a, n)| a.len() + n.bytes() <= HEAD_BYTES);
        let head = encode_head(record, small.as_ref().map(|(a, n)| (n, a.as_slice())))?;
        self.put(cf::ADJACENCY, keys::head_key(t), head);
        if t < store.heads_from.load(Ordering::SeqCst) {
            self.put(cf::META, META_HEADS_FROM, t.to_be_bytes());
            // Before the trace can be seen: a view may then look for a head
            // that is not there yet, never skip one that is.
            store.heads_from.store(t, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Puts the trace record and what goes with it: its graph id, its
    /// content digest and OTLP requests, the next trace id and the log entry.
    fn put_trace_record(&mut self, record: &TraceRecord) -> Result<()> {
        let (store, t) = (self.store, self.trace);
        // The graph id goes with the trace record, never ahead of it: a
        // duplicate check reads it.
        self.batch.put_cf(
            store.cf(cf::STRING_ID),
            keys::string_id_key(IdKind::Graph, &record.graph_id, t),
            0u32.to_be_bytes(),
        );
        if record.graph_id.starts_with('#') {
            self.put(cf::META, META_HASH_GRAPH_IDS, []);
            // Before the trace can be seen: a view may then look graph ids
            // up when it need not, never skip them when it must.
            store.hash_ids_possible.store(true, Ordering::SeqCst);
        }
        self.put(cf::TRACES, keys::trace_key(t), encode("trace", record)?);
        if let Some(digest) = self.content {
            self.put(cf::META, content_key(t), digest);
        }
        if let Some(requests) = self.otlp.take() {
            self.put(cf::META, otlp_key(t), requests);
        }
        let next = store
            .next_trace
            .load(Ordering::SeqCst)
            .max(t.saturating_add(1));
        self.put(cf::META, META_NEXT_TRACE, next.to_be_bytes());
        let event = LogEvent {
            at_ms: now_ms(),
            action: "import".into(),
            trace: t,
            graph_id: record.graph_id.clone(),
            detail: record.source.clone(),
        };
        self.put(cf::LOG, store.next_log_key(), encode("log event", &event)?);
        Ok(())
    }

    /// Ends a bulk write: ingests the table files of `bulk`'s entries and
    /// those written ahead, then writes `batch`, which makes the trace
    /// visible. A failure removes what was ingested.
    fn write_in_bulk(&mut self, mut batch: WriteBatch, bulk: Vec<FamilyEntries>) -> Result<()> {
        let (store, t) = (self.store, self.trace);
        // The mark first, durably: a crash from here on is cleared at the
        // next open.
        let mut mark = WriteBatch::default();
        mark.put_cf(store.cf(cf::META), ingesting_key(t), []);
        store.write(mark)?;
        batch.delete_cf(store.cf(cf::META), ingesting_key(t));
        let families = BULK_FAMILIES.into_iter().zip(bulk).collect();
        let last = store.write_tables(t, 0, families);
        let written = self.early_files().and_then(|mut files| {
            files.extend(last?);
            Ok(files)
        });
        let done = written
            .and_then(|files| store.ingest_files(files))
            .and_then(|()| store.write(batch));
        if let Err(e) = done {
            // Best effort: what is left is cleared at the next open.
            let _ = store.forget_ingested(t);
            return Err(e);
        }
        Ok(())
    }
}
