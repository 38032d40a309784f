//! Flushing an open store, and moving its freshly flushed files down a
//! level where that needs no rewriting.

use rocksdb::ColumnFamily;

use super::cf;
use super::open::Store;
use crate::ids::Result;

impl Store {
    /// Flushes memtables to table files (used before measuring disk size;
    /// a store that wrote flushes when dropped), then moves level-0 files
    /// down where that needs no rewriting (see `settle`).
    pub fn flush(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let families: Vec<&ColumnFamily> = cf::ALL
            .iter()
            .filter_map(|name| self.db.cf_handle(name))
            .collect();
        let mut o = rocksdb::FlushOptions::default();
        o.set_wait(true);
        self.db.flush_cfs_opt(&families, &o)?;
        self.settle()
    }

    /// Moves each family's level-0 files down to the levels below when
    /// RocksDB can do it without rewriting them (see [`level0_moves_down`]):
    /// file names and bytes unchanged. Moved down, a family's files are one
    /// sorted run, and a read opens only the file that holds its key instead
    /// of every level-0 file.
    fn settle(&self) -> Result<()> {
        let files = self.db.live_files()?;
        // Not exclusive: RocksDB's own compactions of other files go on, and
        // the move does not wait for them to finish.
        let mut opts = rocksdb::CompactOptions::default();
        opts.set_exclusive_manual_compaction(false);
        for name in cf::ALL {
            let Some(handle) = self.db.cf_handle(name) else {
                continue;
            };
            let mine: Vec<FileRange> = files
                .iter()
                .filter(|f| f.column_family_name == name)
                .filter_map(|f| Some((f.level, f.start_key.as_deref()?, f.end_key.as_deref()?)))
                .collect();
            if let Some((first, last)) = level0_moves_down(&mine) {
                self.db
                    .compact_range_cf_opt(handle, Some(first), Some(last), &opts);
            }
        }
        Ok(())
    }
}

/// A table file's level and its smallest and largest key.
pub(super) type FileRange<'a> = (i32, &'a [u8], &'a [u8]);

/// Whether a family's level-0 files can be moved down without rewriting,
/// and if so the key range to compact: there are at least two, no two
/// overlap, and none overlaps a file of another level. RocksDB then moves
/// each file to the level below as it is (a trivial move); overlapping
/// files would be merged and rewritten, which an import does not wait for.
pub(super) fn level0_moves_down<'a>(files: &[FileRange<'a>]) -> Option<(&'a [u8], &'a [u8])> {
    let mut top: Vec<(&[u8], &[u8])> = files
        .iter()
        .filter(|f| f.0 == 0)
        .map(|&(_, a, b)| (a, b))
        .collect();
    if top.len() < 2 {
        return None;
    }
    top.sort_unstable();
    if top.windows(2).any(|w| w[0].1 >= w[1].0) {
        return None;
    }
    let (first, last) = (top[0].0, top[top.len() - 1].1);
    let below_overlaps = files
        .iter()
        .filter(|f| f.0 != 0)
        .any(|&(_, a, b)| a <= last && first <= b);
    (!below_overlaps).then_some((first, last))
}
