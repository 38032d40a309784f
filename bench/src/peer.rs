//! The ceiling for import speed: raw RocksDB batched puts of given bytes,
//! with the same RocksDB options as the store. Benchmarks measure memtrace's
//! import beside it in the same run.

use std::path::Path;

use rocksdb::{WriteBatch, WriteOptions, DB};

use memtrace_storage::store::writer_options;
use memtrace_storage::Result;

/// A plain RocksDB database with the store's options.
pub struct RawPeer {
    db: DB,
}

impl RawPeer {
    /// Creates (or opens) the database at `path`.
    pub fn open(path: &Path) -> Result<RawPeer> {
        let mut opts = writer_options();
        opts.create_if_missing(true);
        Ok(RawPeer {
            db: DB::open(&opts, path)?,
        })
    }

    /// Writes `chunks` as values under 8-byte big-endian keys, `per_batch`
    /// puts per write batch, syncing the last batch. Returns the number of puts.
    pub fn put_all<'a>(
        &self,
        chunks: impl IntoIterator<Item = &'a [u8]>,
        per_batch: usize,
    ) -> Result<u64> {
        let mut batch = WriteBatch::default();
        let mut n: u64 = 0;
        for chunk in chunks {
            batch.put(n.to_be_bytes(), chunk);
            n += 1;
            if batch.len() >= per_batch.max(1) {
                self.db
                    .write_opt(std::mem::take(&mut batch), &WriteOptions::default())?;
            }
        }
        let mut last = WriteOptions::default();
        last.set_sync(true);
        self.db.write_opt(batch, &last)?;
        Ok(n)
    }

    /// Writes `chunks` in one synced write batch under consecutive 8-byte
    /// big-endian keys starting at `first_key` (one batch per trace, as
    /// memtrace's import writes). Returns the number of puts.
    pub fn put_batch<'a>(
        &self,
        first_key: u64,
        chunks: impl IntoIterator<Item = &'a [u8]>,
    ) -> Result<u64> {
        let mut batch = WriteBatch::default();
        let mut n: u64 = 0;
        for chunk in chunks {
            batch.put((first_key + n).to_be_bytes(), chunk);
            n += 1;
        }
        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        self.db.write_opt(batch, &opts)?;
        Ok(n)
    }

    /// Flushes memtables to table files (before measuring disk size).
    pub fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_chunk() {
        let dir = tempfile::tempdir().unwrap();
        {
            let peer = RawPeer::open(&dir.path().join("db")).unwrap();
            let data = vec![b"a".as_slice(), b"bb", b"ccc"];
            assert_eq!(peer.put_all(data, 2).unwrap(), 3);
            peer.flush().unwrap();
        }
        let db = DB::open_default(dir.path().join("db")).unwrap();
        assert_eq!(db.get(2u64.to_be_bytes()).unwrap().unwrap(), b"ccc");
    }
}
