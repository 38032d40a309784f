//! Reading the store: a consistent snapshot and what it finds.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use rocksdb::{Direction, IteratorMode, ReadOptions};
use serde::de::DeserializeOwned;

use super::cf;
use super::open::Store;
use super::schema::{content_key, otlp_key};
use crate::adjacency::{Adjacency, AdjacencyBlock};
use crate::display_texts::TraceTexts;
use crate::error::StorageError;
use crate::head::TraceHead;
use crate::ids::{LocalId, Result, TraceId};
use crate::keys::{self, IdKind, RecordKind};
use crate::records::{
    decode, AttributionRecord, CaseRecord, EdgeRecord, LogEvent, OpRecord, PatternRecord,
    SessionRecord, TraceRecord, ValueRef, VarRecord,
};
use crate::values::{decode_value, hex};

impl Store {
    /// A stored value by its reference, read outside any snapshot (values
    /// are immutable; one is only gone once every trace using it was
    /// dropped).
    pub fn value(&self, r: &ValueRef) -> Result<String> {
        let payload = self
            .db
            .get_pinned_cf(self.cf(cf::VALUES), r.hash)?
            .ok_or_else(|| StorageError::MissingValue(hex(&r.hash)))?;
        decode_value(&payload)
    }

    /// A consistent view of the store as of now; imports that commit later
    /// are not seen through it.
    pub fn read(&self) -> ReadView<'_> {
        ReadView {
            store: self,
            snap: self.db.snapshot(),
        }
    }
}

/// A consistent snapshot of the store.
pub struct ReadView<'a> {
    pub(super) store: &'a Store,
    pub(super) snap: rocksdb::Snapshot<'a>,
}

/// A key and its value, as a scan returns them.
type KeyValue = (Box<[u8]>, Box<[u8]>);

impl<'a> ReadView<'a> {
    /// Iterates the keys of column family `name` that start with `prefix`, in order.
    pub fn scan<'v>(
        &'v self,
        name: &str,
        prefix: &[u8],
    ) -> impl Iterator<Item = Result<KeyValue>> + 'v {
        let mut ro = ReadOptions::default();
        if let Some(end) = keys::prefix_end(prefix) {
            ro.set_iterate_upper_bound(end);
        }
        let prefix = prefix.to_vec();
        self.snap
            .iterator_cf_opt(
                self.store.cf(name),
                ro,
                IteratorMode::From(&prefix, Direction::Forward),
            )
            .map(|item| item.map_err(StorageError::from))
            .take_while(move |item| match item {
                Ok((k, _)) => k.starts_with(&prefix),
                Err(_) => true,
            })
    }

    fn get(&self, name: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.snap.get_cf(self.store.cf(name), key)?)
    }

    fn records<'v, T: DeserializeOwned + 'v>(
        &'v self,
        name: &str,
        what: &'static str,
        trace: TraceId,
    ) -> impl Iterator<Item = Result<(LocalId, T)>> + 'v {
        self.scan(name, &keys::trace_key(trace)).map(move |item| {
            let (k, v) = item?;
            let (_, local) = keys::split_record_key(&k).ok_or(StorageError::Decode {
                what,
                reason: "bad key".into(),
            })?;
            Ok((local, decode(what, &v)?))
        })
    }

    fn record<T: DeserializeOwned>(
        &self,
        name: &str,
        what: &'static str,
        trace: TraceId,
        local: LocalId,
    ) -> Result<Option<T>> {
        self.get(name, &keys::record_key(trace, local))?
            .map(|v| decode(what, &v))
            .transpose()
    }

    /// Every stored trace, by id.
    pub fn traces(&self) -> impl Iterator<Item = Result<(TraceId, TraceRecord)>> + '_ {
        self.scan(cf::TRACES, &[]).map(|item| {
            let (k, v) = item?;
            let id = keys::read_u32(&k).ok_or(StorageError::Decode {
                what: "trace key",
                reason: "not 4 bytes".into(),
            })?;
            Ok((id, decode("trace", &v)?))
        })
    }

    /// One trace record.
    pub fn trace(&self, trace: TraceId) -> Result<Option<TraceRecord>> {
        self.get(cf::TRACES, &keys::trace_key(trace))?
            .map(|v| decode("trace", &v))
            .transpose()
    }

    /// The OTLP requests a trace keeps (see
    /// [`TraceWriter::keep_otlp_requests`](super::TraceWriter::keep_otlp_requests)), if it keeps them.
    pub fn otlp_requests(&self, trace: TraceId) -> Result<Option<Vec<u8>>> {
        self.get(cf::META, &otlp_key(trace))
    }

    /// The digest of what a trace was imported from ([`content_digest`](super::content_digest));
    /// `None` for a trace imported before memtrace kept digests, or not
    /// stored.
    pub fn content_digest(&self, trace: TraceId) -> Result<Option<[u8; 32]>> {
        Ok(self
            .get(cf::META, &content_key(trace))?
            .and_then(|v| <[u8; 32]>::try_from(v.as_slice()).ok()))
    }

    /// Whether some stored graph id may start with `#` (and so be what a
    /// `#ID` selector names). `false` only when the database keeps track and
    /// none does, so that a `#ID` selector needs no look-up of graph ids.
    pub fn hash_graph_ids_possible(&self) -> Result<bool> {
        // Kept by the store (read at open, set by the commits that store
        // such an id): nothing is read here.
        Ok(self.store.hash_ids_possible.load(Ordering::SeqCst))
    }

    /// Ids of the traces with this graph id.
    pub fn traces_with_graph_id(&self, graph_id: &str) -> Result<Vec<TraceId>> {
        Ok(self
            .string_id(IdKind::Graph, graph_id)?
            .into_iter()
            .map(|(t, _)| t)
            .collect())
    }

    /// (trace, local id) of every record with this smartcomment string id.
    pub fn string_id(&self, kind: IdKind, id: &str) -> Result<Vec<(TraceId, LocalId)>> {
        let prefix = keys::string_id_prefix(kind, id);
        let hits = self
            .scan(cf::STRING_ID, &prefix)
            .map(|item| {
                let (k, v) = item?;
                let t = keys::read_u32(&k[prefix.len()..]).ok_or(StorageError::Decode {
                    what: "string id key",
                    reason: "bad trace".into(),
                })?;
                let l = keys::read_u32(&v).ok_or(StorageError::Decode {
                    what: "string id",
                    reason: "bad local id".into(),
                })?;
                Ok((t, l))
            })
            .collect::<Result<Vec<_>>>()?;
        self.only_committed(hits, |h| h.0)
    }

    /// Whether a trace is stored whole: its record is written (by the
    /// batch that ends its import, after whatever was ingested before).
    pub fn committed(&self, trace: TraceId) -> Result<bool> {
        Ok(self
            .snap
            .get_pinned_cf(self.store.cf(cf::TRACES), keys::trace_key(trace))?
            .is_some())
    }

    /// The index hits whose trace is stored whole: a bulk write ingests a
    /// trace's index entries before its record is written.
    fn only_committed<T>(
        &self,
        mut hits: Vec<T>,
        trace_of: impl Fn(&T) -> TraceId,
    ) -> Result<Vec<T>> {
        let mut known: HashMap<TraceId, bool> = HashMap::new();
        let mut failed = None;
        hits.retain(|h| {
            let t = trace_of(h);
            if let Some(&c) = known.get(&t) {
                return c;
            }
            match self.committed(t) {
                Ok(c) => {
                    known.insert(t, c);
                    c
                }
                Err(e) => {
                    failed.get_or_insert(e);
                    false
                }
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(hits),
        }
    }

    /// A trace's sessions in insertion order.
    pub fn sessions(
        &self,
        trace: TraceId,
    ) -> impl Iterator<Item = Result<(LocalId, SessionRecord)>> + '_ {
        self.records(cf::SESSIONS, "session", trace)
    }

    /// A trace's variables in insertion order.
    pub fn variables(
        &self,
        trace: TraceId,
    ) -> impl Iterator<Item = Result<(LocalId, VarRecord)>> + '_ {
        self.records(cf::VARIABLES, "variable", trace)
    }

    /// A trace's operations in insertion order.
    pub fn ops(&self, trace: TraceId) -> impl Iterator<Item = Result<(LocalId, OpRecord)>> + '_ {
        self.records(cf::OPS, "op", trace)
    }

    /// A trace's edges in insertion order.
    pub fn edges(
        &self,
        trace: TraceId,
    ) -> impl Iterator<Item = Result<(LocalId, EdgeRecord)>> + '_ {
        self.records(cf::EDGES, "edge", trace)
    }

    /// A trace's cases in insertion order.
    pub fn cases(
        &self,
        trace: TraceId,
    ) -> impl Iterator<Item = Result<(LocalId, CaseRecord)>> + '_ {
        self.records(cf::CASES, "case", trace)
    }

    /// A trace's attribution records with their sequence numbers, oldest first.
    pub fn attributions(
        &self,
        trace: TraceId,
    ) -> impl Iterator<Item = Result<(u64, AttributionRecord)>> + '_ {
        self.scan(cf::ATTRIBUTIONS, &keys::trace_key(trace))
            .map(move |item| {
                let (k, v) = item?;
                let seq = keys::split_attribution_key(&k).ok_or(StorageError::Decode {
                    what: "attribution",
                    reason: "bad key".into(),
                })?;
                Ok((seq, decode("attribution", &v)?))
            })
    }

    /// One session.
    pub fn session(&self, trace: TraceId, local: LocalId) -> Result<Option<SessionRecord>> {
        self.record(cf::SESSIONS, "session", trace, local)
    }

    /// One variable.
    pub fn variable(&self, trace: TraceId, local: LocalId) -> Result<Option<VarRecord>> {
        self.record(cf::VARIABLES, "variable", trace, local)
    }

    /// One operation.
    pub fn op(&self, trace: TraceId, local: LocalId) -> Result<Option<OpRecord>> {
        self.record(cf::OPS, "op", trace, local)
    }

    /// One edge.
    pub fn edge(&self, trace: TraceId, local: LocalId) -> Result<Option<EdgeRecord>> {
        self.record(cf::EDGES, "edge", trace, local)
    }

    /// The value behind a reference.
    pub fn value(&self, r: &ValueRef) -> Result<String> {
        let payload = self
            .get(cf::VALUES, &r.hash)?
            .ok_or_else(|| StorageError::MissingValue(hex(&r.hash)))?;
        decode_value(&payload)
    }

    /// (trace, version, local id) of every stored version of a full name;
    /// with `trace`, only that trace's. Ordered by trace, then version.
    pub fn versions(
        &self,
        full_name: &str,
        trace: Option<TraceId>,
    ) -> Result<Vec<(TraceId, u32, LocalId)>> {
        let hits = self.name_hits(full_name, trace)?;
        self.only_committed(hits, |h| h.0)
    }

    /// (version, local id) of every stored version of a full name in
    /// `trace`, which the caller knows this view sees whole (it read the
    /// trace's record or head from it), ordered by version.
    pub fn versions_in(&self, full_name: &str, trace: TraceId) -> Result<Vec<(u32, LocalId)>> {
        Ok(self
            .name_hits(full_name, Some(trace))?
            .into_iter()
            .map(|(_, v, l)| (v, l))
            .collect())
    }

    /// The variable holding version `version` of a full name in `trace`
    /// (which the caller knows this view sees whole, as for
    /// [`Self::versions_in`]), by one get of its name index entry: no
    /// iterator over the index's files is built.
    pub fn version_in(
        &self,
        full_name: &str,
        trace: TraceId,
        version: u32,
    ) -> Result<Option<LocalId>> {
        let key = keys::name_key(full_name, trace, version);
        match self.snap.get_pinned_cf(self.store.cf(cf::VAR_NAME), &key)? {
            Some(v) => keys::read_u32(&v).map(Some).ok_or(StorageError::Decode {
                what: "name index",
                reason: format!(
                    "the entry of {full_name}@{version} in trace #{trace} is not a variable"
                ),
            }),
            None => Ok(None),
        }
    }

    /// The name index's entries of a full name (in one trace), committed or not.
    fn name_hits(
        &self,
        full_name: &str,
        trace: Option<TraceId>,
    ) -> Result<Vec<(TraceId, u32, LocalId)>> {
        let mut prefix = keys::name_prefix(full_name);
        let base = prefix.len();
        if let Some(t) = trace {
            prefix.extend_from_slice(&t.to_be_bytes());
        }
        self.scan(cf::VAR_NAME, &prefix)
            .map(|item| {
                let (k, v) = item?;
                let bad = || StorageError::Decode {
                    what: "name index",
                    reason: "bad key".into(),
                };
                let t = keys::read_u32(k.get(base..base + 4).ok_or_else(bad)?).ok_or_else(bad)?;
                let ver =
                    keys::read_u32(k.get(base + 4..base + 8).ok_or_else(bad)?).ok_or_else(bad)?;
                let l = keys::read_u32(&v).ok_or_else(bad)?;
                Ok((t, ver, l))
            })
            .collect()
    }

    /// (trace, local id) of the records of `kind` with this category.
    pub fn by_category(&self, kind: RecordKind, category: &str) -> Result<Vec<(TraceId, LocalId)>> {
        let prefix = keys::category_prefix(kind, category);
        let hits = self
            .scan(cf::CATEGORY, &prefix)
            .map(|item| {
                let (k, _) = item?;
                keys::split_record_key(&k[prefix.len()..]).ok_or(StorageError::Decode {
                    what: "category index",
                    reason: "bad key".into(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.only_committed(hits, |h| h.0)
    }

    /// (trace, local id) of the ops with this op name.
    pub fn ops_named(&self, op_name: &str) -> Result<Vec<(TraceId, LocalId)>> {
        let prefix = keys::name_prefix(op_name);
        let hits = self
            .scan(cf::OP_NAME, &prefix)
            .map(|item| {
                let (k, _) = item?;
                keys::split_record_key(&k[prefix.len()..]).ok_or(StorageError::Decode {
                    what: "op name index",
                    reason: "bad key".into(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.only_committed(hits, |h| h.0)
    }

    /// A trace's stored adjacency, read with one get; `None` for a trace
    /// stored under schema version 1 (read [`Self::adjacency_out`] instead)
    /// or not stored at all.
    pub fn adjacency(&self, trace: TraceId) -> Result<Option<Adjacency>> {
        self.trace_value(trace, &keys::trace_key(trace), Adjacency::decode)
    }

    /// A trace's head (see [`TraceHead`]): its record, and for a small trace
    /// its names and adjacency, by one get. `None` for a trace stored before
    /// heads were, or one this view does not see.
    pub fn head(&self, trace: TraceId) -> Result<Option<TraceHead>> {
        if trace < self.store.heads_from.load(Ordering::SeqCst) {
            return Ok(None);
        }
        self.trace_value(trace, &keys::head_key(trace), TraceHead::decode)
    }

    /// A trace's display texts (see [`TraceTexts`]), stored at its import;
    /// `None` for a trace stored before they were.
    pub fn texts(&self, trace: TraceId) -> Result<Option<TraceTexts>> {
        self.trace_value(trace, &keys::texts_key(trace), TraceTexts::decode)
    }

    /// A value of `trace` in [`cf::ADJACENCY`] under `key`, decoded; a
    /// decoding error names the trace.
    fn trace_value<T>(
        &self,
        trace: TraceId,
        key: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        // Pinned: decoded where the block cache holds it, not copied first.
        match self.snap.get_pinned_cf(self.store.cf(cf::ADJACENCY), key)? {
            Some(bytes) => decode(&bytes).map(Some).map_err(|e| match e {
                StorageError::Decode { what, reason } => StorageError::Decode {
                    what,
                    reason: format!("trace #{trace}: {reason}"),
                },
                other => other,
            }),
            None => Ok(None),
        }
    }

    /// Blocks `ids` of a trace's adjacency rows in one direction (see
    /// [`AdjacencyBlock`]), read together. `vars` and `edges` are the
    /// trace's counts, which every block is checked against. A block that
    /// is not stored (a trace stored before blocks were) is `None`.
    pub fn adjacency_blocks(
        &self,
        trace: TraceId,
        backward: bool,
        ids: &[u32],
        vars: u32,
        edges: u32,
    ) -> Result<Vec<Option<AdjacencyBlock>>> {
        let cf = self.store.cf(cf::ADJACENCY);
        let keys: Vec<_> = ids
            .iter()
            .map(|&b| (cf, keys::adjacency_block_key(trace, backward, b)))
            .collect();
        self.snap
            .multi_get_cf(keys)
            .into_iter()
            .map(|got| match got? {
                Some(bytes) => AdjacencyBlock::decode(&bytes, vars, edges)
                    .map(Some)
                    .map_err(|e| match e {
                        StorageError::Decode { what, reason } => StorageError::Decode {
                            what,
                            reason: format!("trace #{trace}: {reason}"),
                        },
                        other => other,
                    }),
                None => Ok(None),
            })
            .collect()
    }

    /// Adjacency of one variable: (edge, other endpoint, op), in edge order.
    /// `outgoing` lists edges leaving it, otherwise edges entering it.
    ///
    /// Reads the trace's whole adjacency value; a caller asking about many
    /// variables of one trace reads [`Self::adjacency`] once instead.
    pub fn adjacent(
        &self,
        trace: TraceId,
        var: LocalId,
        outgoing: bool,
    ) -> Result<Vec<(LocalId, LocalId, LocalId)>> {
        if let Some(a) = self.adjacency(trace)? {
            return Ok(a.adjacent(var, outgoing));
        }
        let prefix = keys::record_key(trace, var);
        let name = if outgoing { cf::ADJ_OUT } else { cf::ADJ_IN };
        self.scan(name, &prefix)
            .map(|item| {
                let (k, v) = item?;
                let bad = || StorageError::Decode {
                    what: "adjacency",
                    reason: "bad entry".into(),
                };
                let edge = keys::read_u32(k.get(8..12).ok_or_else(bad)?).ok_or_else(bad)?;
                let (other, op) = keys::split_record_key(&v).ok_or_else(bad)?;
                Ok((edge, other, op))
            })
            .collect()
    }

    /// Every outgoing adjacency index entry of a trace (schema version 1),
    /// by one prefix scan:
    /// `(var, edge, other, op)` (the edge `edge` leaves `var` for `other`,
    /// induced by `op`), ordered by variable, then edge.
    pub fn adjacency_out(
        &self,
        trace: TraceId,
    ) -> impl Iterator<Item = Result<(LocalId, LocalId, LocalId, LocalId)>> + '_ {
        self.scan(cf::ADJ_OUT, &keys::trace_key(trace)).map(|item| {
            let (k, v) = item?;
            if k.len() != 12 || v.len() != 8 {
                return Err(StorageError::Decode {
                    what: "adjacency",
                    reason: format!("entry of {} + {} bytes, not 12 + 8", k.len(), v.len()),
                });
            }
            let bad = || StorageError::Decode {
                what: "adjacency",
                reason: "bad entry".into(),
            };
            let (_, var) = keys::split_record_key(&k).ok_or_else(bad)?;
            let edge = keys::read_u32(&k[8..12]).ok_or_else(bad)?;
            let (other, op) = keys::split_record_key(&v).ok_or_else(bad)?;
            Ok((var, edge, other, op))
        })
    }

    /// The append-only event log, oldest first.
    pub fn log(&self) -> impl Iterator<Item = Result<(u64, LogEvent)>> + '_ {
        self.scan(cf::LOG, &[]).map(|item| {
            let (k, v) = item?;
            let seq =
                u64::from_be_bytes(k.as_ref().try_into().map_err(|_| StorageError::Decode {
                    what: "log key",
                    reason: "not 8 bytes".into(),
                })?);
            Ok((seq, decode("log event", &v)?))
        })
    }

    /// Every pattern record with its sequence number, oldest first.
    pub fn pattern_records(&self) -> impl Iterator<Item = Result<(u64, PatternRecord)>> + '_ {
        self.scan(cf::PATTERNS, &[]).map(|item| {
            let (k, v) = item?;
            let seq =
                u64::from_be_bytes(k.as_ref().try_into().map_err(|_| StorageError::Decode {
                    what: "pattern key",
                    reason: "not 8 bytes".into(),
                })?);
            Ok((seq, decode("pattern", &v)?))
        })
    }

    /// Number of keys under a prefix (used by tests and consistency checks).
    pub fn count(&self, name: &str, prefix: &[u8]) -> Result<usize> {
        let mut n = 0;
        for item in self.scan(name, prefix) {
            item?;
            n += 1;
        }
        Ok(n)
    }
}
