//! The ceiling for import speed: raw RocksDB batched puts of given bytes,
//! with the same RocksDB options as the store. Benchmarks measure memtrace's
//! import beside it in the same run.

use std::path::Path;

use rocksdb::{WriteBatch, WriteOptions, DB};

use crate::store::base_options;
use crate::Result;

/// Writes `chunks` as values under 8-byte big-endian keys into a new
/// database at `path`, `per_batch` puts per write batch, syncing the last
/// batch. Returns the number of puts.
pub fn raw_batched_puts<'a>(
    path: &Path,
    chunks: impl IntoIterator<Item = &'a [u8]>,
    per_batch: usize,
) -> Result<u64> {
    let mut opts = base_options();
    opts.create_if_missing(true);
    let db = DB::open(&opts, path)?;
    let mut batch = WriteBatch::default();
    let mut n: u64 = 0;
    let plain = WriteOptions::default();
    for chunk in chunks {
        batch.put(n.to_be_bytes(), chunk);
        n += 1;
        if batch.len() >= per_batch.max(1) {
            db.write_opt(std::mem::take(&mut batch), &plain)?;
        }
    }
    let mut last = WriteOptions::default();
    last.set_sync(true);
    db.write_opt(batch, &last)?;
    db.flush()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![b"a".as_slice(), b"bb", b"ccc"];
        assert_eq!(
            raw_batched_puts(&dir.path().join("db"), data, 2).unwrap(),
            3
        );
        let db = DB::open_default(dir.path().join("db")).unwrap();
        assert_eq!(db.get(2u64.to_be_bytes()).unwrap().unwrap(), b"ccc");
    }
}
