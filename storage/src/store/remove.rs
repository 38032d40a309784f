//! Removing traces: dropping one, and replacing one by another.

use std::collections::HashSet;

use rocksdb::WriteBatch;

use super::cf;
use super::io::now_ms;
use super::open::Store;
use super::read::ReadView;
use super::schema::{content_key, otlp_key};
use crate::error::StorageError;
use crate::ids::{Result, TraceId};
use crate::keys::{self, IdKind, RecordKind};
use crate::records::{encode, LogEvent, TraceRecord};

impl Store {
    /// Adds to `batch` the deletion of a trace's index entries, found from
    /// its records (names, ids, categories, op names, value references);
    /// returns the hashes of its values.
    pub(super) fn delete_index_entries(
        &self,
        view: &ReadView<'_>,
        trace: TraceId,
        batch: &mut WriteBatch,
    ) -> Result<HashSet<[u8; 32]>> {
        for item in view.sessions(trace) {
            let (local, s) = item?;
            batch.delete_cf(
                self.cf(cf::STRING_ID),
                keys::string_id_key(IdKind::Session, &s.session_id, trace),
            );
            if let Some(c) = &s.category {
                batch.delete_cf(
                    self.cf(cf::CATEGORY),
                    keys::category_key(RecordKind::Session, c, trace, local),
                );
            }
        }
        let mut hashes = HashSet::new();
        for item in view.variables(trace) {
            let (local, v) = item?;
            batch.delete_cf(
                self.cf(cf::VAR_NAME),
                keys::name_key(&v.full_name(), trace, v.version),
            );
            if let Some(c) = &v.category {
                batch.delete_cf(
                    self.cf(cf::CATEGORY),
                    keys::category_key(RecordKind::Variable, c, trace, local),
                );
            }
            if let Some(r) = v.value {
                hashes.insert(r.hash);
            }
        }
        for item in view.ops(trace) {
            let (local, o) = item?;
            batch.delete_cf(
                self.cf(cf::STRING_ID),
                keys::string_id_key(IdKind::Op, &o.op_id, trace),
            );
            if let Some(c) = &o.category {
                batch.delete_cf(
                    self.cf(cf::CATEGORY),
                    keys::category_key(RecordKind::Op, c, trace, local),
                );
            }
            if let Some(n) = &o.op_name {
                batch.delete_cf(self.cf(cf::OP_NAME), keys::op_name_key(n, trace, local));
            }
        }
        for item in view.edges(trace) {
            let (local, e) = item?;
            batch.delete_cf(
                self.cf(cf::STRING_ID),
                keys::string_id_key(IdKind::Edge, &e.edge_id, trace),
            );
            if let Some(c) = &e.category {
                batch.delete_cf(
                    self.cf(cf::CATEGORY),
                    keys::category_key(RecordKind::Edge, c, trace, local),
                );
            }
        }
        for hash in &hashes {
            batch.delete_cf(self.cf(cf::VALUE_REFS), keys::value_ref_key(hash, trace));
        }
        Ok(hashes)
    }

    /// Removes a whole trace: its records, index entries and the values no
    /// other trace uses, in one batch, and logs the removal with `reason`.
    pub fn drop_trace(&self, trace: TraceId, reason: &str) -> Result<TraceRecord> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let view = self.read();
        let mut batch = WriteBatch::default();
        let record = self.drop_into(&view, trace, reason, &mut batch)?;
        drop(view);
        self.write(batch)?;
        Ok(record)
    }

    /// Moves the attribution records of `old` onto `new`, after the ones
    /// `new` has (each with its time and content), and removes `old` as
    /// [`Store::drop_trace`] does, logging `reason`: all in one batch, so a
    /// reader sees `old` with its records or `new` with them, never both
    /// or neither. Returns `old`'s record and how many records moved.
    pub fn supersede(
        &self,
        old: TraceId,
        new: TraceId,
        reason: &str,
    ) -> Result<(TraceRecord, usize)> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let view = self.read();
        if old == new || view.trace(new)?.is_none() {
            return Err(StorageError::NoSuchTrace(new));
        }
        let next = match view.attributions(new).last().transpose()? {
            Some((seq, _)) => seq + 1,
            None => 1,
        };
        let mut batch = WriteBatch::default();
        let mut moved = 0;
        for (i, item) in view.attributions(old).enumerate() {
            let (_, record) = item?;
            batch.put_cf(
                self.cf(cf::ATTRIBUTIONS),
                keys::attribution_key(new, next + i as u64),
                encode("attribution", &record)?,
            );
            moved += 1;
        }
        let record = self.drop_into(&view, old, reason, &mut batch)?;
        drop(view);
        self.write(batch)?;
        Ok((record, moved))
    }

    /// Adds the removal of `trace` (see [`Store::drop_trace`]) to `batch`,
    /// as `view` sees the trace; returns its record.
    fn drop_into(
        &self,
        view: &ReadView<'_>,
        trace: TraceId,
        reason: &str,
        batch: &mut WriteBatch,
    ) -> Result<TraceRecord> {
        let record = view.trace(trace)?.ok_or(StorageError::NoSuchTrace(trace))?;
        let hashes = self.delete_index_entries(view, trace, batch)?;
        for hash in &hashes {
            let own = keys::value_ref_key(hash, trace);
            let shared = view
                .scan(cf::VALUE_REFS, hash)
                .find(|item| match item {
                    Ok((k, _)) => k.as_ref() != own.as_slice(),
                    Err(_) => true,
                })
                .transpose()?
                .is_some();
            if !shared {
                batch.delete_cf(self.cf(cf::VALUES), hash);
            }
        }
        let start = keys::trace_key(trace);
        let end = (trace as u64 + 1).min(u32::MAX as u64) as u32;
        for name in cf::BY_TRACE {
            if trace == u32::MAX {
                // No upper key exists; delete the records one by one.
                for item in view.scan(name, &start) {
                    let (k, _) = item?;
                    batch.delete_cf(self.cf(name), k);
                }
            } else {
                batch.delete_range_cf(self.cf(name), start, keys::trace_key(end));
            }
        }
        batch.delete_cf(
            self.cf(cf::STRING_ID),
            keys::string_id_key(IdKind::Graph, &record.graph_id, trace),
        );
        batch.delete_cf(self.cf(cf::TRACES), start);
        batch.delete_cf(self.cf(cf::META), content_key(trace));
        batch.delete_cf(self.cf(cf::META), otlp_key(trace));
        let event = LogEvent {
            at_ms: now_ms(),
            action: "drop".into(),
            trace,
            graph_id: record.graph_id.clone(),
            detail: reason.to_string(),
        };
        batch.put_cf(
            self.cf(cf::LOG),
            self.next_log_key(),
            encode("log event", &event)?,
        );
        Ok(record)
    }
}
