//! Bulk ingest of a large trace: its entries are sorted into table files,
//! written on two threads and ingested whole, instead of going through the
//! write batch and the write-ahead log.

use std::path::{Path, PathBuf};

use rocksdb::{Cache, Options, WriteBatch, WriteOptions};

use super::cf;
use super::io::io_err;
use super::open::Store;
use super::options::{base_options, cf_options};
use super::schema::{ingesting_key, META_INGESTING};
use crate::error::StorageError;
use crate::ids::{Result, TraceId};
use crate::keys;

/// A trace expected to take at least this many bytes (its export's size)
/// is written in bulk: its records, values and index entries go into table
/// files that are ingested whole, and the rest goes through one write
/// batch, which is what makes the trace visible (readers ignore index
/// entries of a trace without a record, see
/// [`ReadView::committed`](super::ReadView::committed)); a crash in between
/// leaves a mark that the next open to write clears. The bar is high
/// because every bulk write adds table files that slow the first query
/// after an open.
pub const BULK_BYTES: usize = 64 << 20;

/// The column families a bulk write ingests as table files: first a
/// trace's records (keyed by their trace) and its values
/// (content-addressed), then its index entries, which a crash cleanup
/// finds again from the records.
pub(super) const BULK_FAMILIES: [&str; 10] = [
    cf::SESSIONS,
    cf::VARIABLES,
    cf::OPS,
    cf::EDGES,
    cf::VALUES,
    cf::VAR_NAME,
    cf::STRING_ID,
    cf::CATEGORY,
    cf::OP_NAME,
    cf::VALUE_REFS,
];

/// The folder, inside the database's, where table files are written
/// before they are ingested.
pub(super) const INGEST_DIR: &str = "ingest";

/// One column family's entries of a bulk write, in the order added: keys
/// and short values back to back in one buffer, so that the many small
/// index entries of a large trace cost no allocation each; longer values
/// (records, stored values) are kept as they were handed over.
#[derive(Debug, Default)]
pub(super) struct FamilyEntries {
    bytes: Vec<u8>,
    pub(super) owned: Vec<Vec<u8>>,
    at: Vec<EntryPlace>,
}

/// Where one entry of a [`FamilyEntries`] is: its key at `start` in the buffer, its
/// value after the key or, when `owned` is not [`IN_BUFFER`], that long value.
#[derive(Debug, Clone, Copy)]
struct EntryPlace {
    start: usize,
    key: usize,
    value: usize,
    owned: usize,
}

/// A table file written for a column family, to be ingested.
pub(super) type TableFile = (&'static str, PathBuf);

/// [`EntryPlace::owned`] of a value kept in the buffer.
const IN_BUFFER: usize = usize::MAX;

/// Values of at least this many bytes are kept as handed over, not copied.
pub(super) const OWNED_FROM: usize = 64;

impl FamilyEntries {
    pub(super) fn push<V: AsRef<[u8]> + Into<Vec<u8>>>(&mut self, key: &[u8], value: V) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        let len = value.as_ref().len();
        let owned = if len >= OWNED_FROM {
            self.owned.push(value.into());
            self.owned.len() - 1
        } else {
            self.bytes.extend_from_slice(value.as_ref());
            IN_BUFFER
        };
        self.at.push(EntryPlace {
            start,
            key: key.len(),
            value: len,
            owned,
        });
    }

    pub(super) fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Bytes of keys and values.
    pub(super) fn size(&self) -> u64 {
        (self.bytes.len() + self.owned.iter().map(Vec::len).sum::<usize>()) as u64
    }

    fn key<'r>(bytes: &'r [u8], a: &EntryPlace) -> &'r [u8] {
        &bytes[a.start..a.start + a.key]
    }

    /// The entries sorted by key, of equal keys the last added (as a write
    /// batch keeps the last put).
    pub(super) fn sorted(&mut self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let FamilyEntries { bytes, owned, at } = self;
        let key = |a: &EntryPlace| Self::key(bytes, a);
        // A stable sort keeps equal keys in the order they were added.
        if !at.is_sorted_by(|a, b| key(a) < key(b)) {
            at.sort_by(|a, b| key(a).cmp(key(b)));
        }
        let (bytes, owned, at) = (&*bytes, &*owned, &*at);
        at.iter().enumerate().filter_map(move |(i, a)| {
            let k = Self::key(bytes, a);
            if at
                .get(i + 1)
                .is_some_and(|next| Self::key(bytes, next) == k)
            {
                return None;
            }
            let v = match a.owned {
                IN_BUFFER => &bytes[a.start + a.key..a.start + a.key + a.value],
                o => owned[o].as_slice(),
            };
            Some((k, v))
        })
    }
}

/// Writes `entries` into a table file at `path` with a column family's
/// options, in key order; of equal keys the last added is kept, as in a
/// write batch.
fn write_table(path: &Path, opts: &Options, mut run: FamilyEntries) -> Result<()> {
    let writer = rocksdb::SstFileWriter::create(opts);
    writer.open(path)?;
    let mut writer = writer;
    for (k, v) in run.sorted() {
        writer.put(k, v)?;
    }
    writer.finish()?;
    Ok(())
}

/// Writes one thread's share of a bulk write's families into table files
/// in `dir` (made when missing).
pub(super) fn write_share(
    dir: &Path,
    cache: &Cache,
    trace: TraceId,
    tag: usize,
    share: Vec<(&'static str, FamilyEntries)>,
) -> Result<Vec<TableFile>> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    share
        .into_iter()
        .filter(|(_, entries)| !entries.is_empty())
        .map(|(name, entries)| {
            let file = dir.join(format!("{trace}-{tag}-{name}.sst"));
            write_table(&file, &cf_options(name, cache, &base_options()), entries)?;
            Ok((name, file))
        })
        .collect()
}

/// Families' entries shared between two threads that write their table
/// files: the larger first, each to the thread with less to write; empty
/// ones left out.
pub(super) fn two_shares(
    families: impl IntoIterator<Item = (&'static str, FamilyEntries)>,
) -> [Vec<(&'static str, FamilyEntries)>; 2] {
    let mut jobs: Vec<(&'static str, FamilyEntries, u64)> = families
        .into_iter()
        .filter(|(_, e)| !e.is_empty())
        .map(|(name, e)| {
            let bytes = e.size();
            (name, e, bytes)
        })
        .collect();
    jobs.sort_by_key(|j| std::cmp::Reverse(j.2));
    let mut shares: [Vec<(&'static str, FamilyEntries)>; 2] = Default::default();
    let mut load = [0u64; 2];
    for (name, entries, bytes) in jobs {
        let i = usize::from(load[1] < load[0]);
        load[i] += bytes;
        shares[i].push((name, entries));
    }
    shares
}

/// The error of a thread writing table files that stopped (panicked).
pub(super) fn stopped(dir: &Path) -> StorageError {
    io_err(
        dir,
        std::io::Error::other("the thread writing table files stopped"),
    )
}

impl Store {
    /// Writes each column family's entries of a bulk write into a table
    /// file (sorted, the last of equal keys kept), on two threads; returns
    /// the files, or the first error. `tag` tells apart the files of one
    /// trace.
    pub(super) fn write_tables(
        &self,
        trace: TraceId,
        tag: usize,
        families: Vec<(&'static str, FamilyEntries)>,
    ) -> Result<Vec<TableFile>> {
        let dir = self.path.join(INGEST_DIR);
        let (cache, dir) = (&self.cache, &dir);
        let [first, second] = two_shares(families);
        let (a, b) = std::thread::scope(|scope| {
            let other = scope.spawn(|| write_share(dir, cache, trace, tag, second));
            (write_share(dir, cache, trace, tag, first), other.join())
        });
        let mut files = a?;
        files.extend(b.map_err(|_| stopped(dir))??);
        Ok(files)
    }

    /// Ingests table files, records before index entries: a cleanup after
    /// a crash finds the entries from the records.
    pub(super) fn ingest_files(&self, mut files: Vec<TableFile>) -> Result<()> {
        let mut o = rocksdb::IngestExternalFileOptions::default();
        o.set_move_files(true);
        files.sort_by_key(|(name, _)| BULK_FAMILIES.iter().position(|f| f == name));
        for (name, file) in files {
            self.db
                .ingest_external_file_cf_opts(self.cf(name), &o, vec![file])?;
        }
        Ok(())
    }

    /// [`write_tables`](Self::write_tables) and [`ingest_files`](Self::ingest_files).
    #[cfg(test)]
    pub(super) fn ingest(
        &self,
        trace: TraceId,
        families: Vec<(&'static str, FamilyEntries)>,
    ) -> Result<()> {
        let files = self.write_tables(trace, 0, families)?;
        self.ingest_files(files)
    }

    /// Removes what a bulk write of `trace` ingested: its index entries
    /// (found from its records), its records and its mark. Values are
    /// shared by content and stay.
    pub(super) fn forget_ingested(&self, trace: TraceId) -> Result<()> {
        let mut batch = WriteBatch::default();
        let view = self.read();
        self.delete_index_entries(&view, trace, &mut batch)?;
        drop(view);
        let from = keys::trace_key(trace);
        let to = keys::trace_key(trace.saturating_add(1));
        for name in BULK_FAMILIES {
            if cf::BY_TRACE.contains(&name) {
                batch.delete_range_cf(self.cf(name), from, to);
            }
        }
        batch.delete_cf(self.cf(cf::META), ingesting_key(trace));
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        self.db.write_opt(batch, &w)?;
        Ok(())
    }

    /// Clears what bulk writes interrupted by a crash left: the records of
    /// each marked trace, and table files never ingested.
    pub(super) fn clear_unfinished_ingests(&self) -> Result<()> {
        let meta = self.cf(cf::META);
        let mut marked = Vec::new();
        for item in self.db.prefix_iterator_cf(meta, META_INGESTING) {
            let (k, _) = item?;
            match k.strip_prefix(META_INGESTING) {
                Some(rest) => {
                    if let Some(t) = keys::read_u32(rest) {
                        marked.push(t);
                    }
                }
                None => break,
            }
        }
        for t in marked {
            self.forget_ingested(t)?;
        }
        let dir = self.path.join(INGEST_DIR);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        }
        Ok(())
    }
}
