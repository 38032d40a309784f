//! What is added to a database after import: attribution records, saved
//! patterns, and the cache of LLM answers.

use rocksdb::WriteBatch;

use super::cf;
use super::open::Store;
use crate::error::StorageError;
use crate::ids::{Result, TraceId};
use crate::keys;
use crate::records::{encode, AttributionRecord, PatternRecord};

impl Store {
    /// Appends attribution records to a trace, in one batch, after the ones
    /// it already has. Returns their sequence numbers.
    pub fn append_attributions(
        &self,
        trace: TraceId,
        records: &[AttributionRecord],
    ) -> Result<Vec<u64>> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let view = self.read();
        if view.trace(trace)?.is_none() {
            return Err(StorageError::NoSuchTrace(trace));
        }
        let next = match view.attributions(trace).last().transpose()? {
            Some((seq, _)) => seq + 1,
            None => 1,
        };
        let mut batch = WriteBatch::default();
        let mut seqs = Vec::with_capacity(records.len());
        for (i, r) in records.iter().enumerate() {
            let seq = next + i as u64;
            batch.put_cf(
                self.cf(cf::ATTRIBUTIONS),
                keys::attribution_key(trace, seq),
                encode("attribution", r)?,
            );
            seqs.push(seq);
        }
        drop(view);
        self.write(batch)?;
        Ok(seqs)
    }

    /// Appends a pattern record (a save or a drop) after every earlier one;
    /// returns its sequence number (1 for the first).
    pub fn append_pattern(&self, record: &PatternRecord) -> Result<u64> {
        let _guard = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let view = self.read();
        let next = match view.pattern_records().last().transpose()? {
            Some((seq, _)) => seq + 1,
            None => 1,
        };
        drop(view);
        let mut batch = WriteBatch::default();
        batch.put_cf(
            self.cf(cf::PATTERNS),
            next.to_be_bytes(),
            encode("pattern", record)?,
        );
        self.write(batch)?;
        Ok(next)
    }

    /// A cached LLM answer: the body stored under `key`, if any.
    pub fn cached_answer(&self, key: &[u8; 32]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_cf(self.cf(cf::LLM_CACHE), key)?)
    }

    /// Caches an LLM answer under `key` (a hash of the model, the messages
    /// and the tools). Storing the same key again keeps one entry.
    pub fn cache_answer(&self, key: &[u8; 32], body: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(cf::LLM_CACHE), key, body);
        self.write(batch)
    }

    /// Caches several answers at once, in one write.
    pub fn cache_answers(&self, entries: &[([u8; 32], Vec<u8>)]) -> Result<()> {
        let mut batch = WriteBatch::default();
        for (key, body) in entries {
            batch.put_cf(self.cf(cf::LLM_CACHE), key, body);
        }
        self.write(batch)
    }
}
