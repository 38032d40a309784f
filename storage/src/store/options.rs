//! RocksDB tuning: the options of the database and of each column family.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options};

use super::cf;

/// RocksDB options shared by the store and the raw-write peer of the benchmark.
pub fn base_options() -> Options {
    let mut o = Options::default();
    o.increase_parallelism(2);
    o.set_max_background_jobs(2);
    o.set_write_buffer_size(64 << 20);
    o.set_compression_type(DBCompressionType::Lz4);
    o.set_keep_log_file_num(4);
    // Every command opens and closes the database, so an open starts no
    // threads and reads no statistics it does not need.
    o.set_max_file_opening_threads(1);
    o.set_skip_stats_update_on_db_open(true);
    // A bounded table cache opens table files when a read first needs
    // them, not all at open, and stays under the process's limit of open
    // files.
    o.set_max_open_files(MAX_OPEN_TABLE_FILES);
    o.set_stats_dump_period_sec(0);
    o.set_stats_persist_period_sec(0);
    // Flushing once the logs pass this leaves a long import little log to
    // replay at the next open.
    #[cfg(not(test))]
    o.set_max_total_wal_size(MAX_WAL_BYTES);
    #[cfg(test)]
    o.set_max_total_wal_size(
        TEST_MAX_WAL_BYTES
            .with(|m| m.get())
            .unwrap_or(MAX_WAL_BYTES),
    );
    // Flushing all families together keeps an idle family from holding an
    // old log alive, which every read-only open would read again.
    o.set_atomic_flush(true);
    o
}

/// [`base_options`] for a store opened to write (and the raw-write peer of
/// the benchmark): with `BOTTOMMOST_REWRITE_DELAY`, which readers go
/// without since they never compact and parsing it takes time.
pub fn writer_options() -> Options {
    never_rewrite_for_sequence_numbers(base_options())
}

/// What [`writer_options`] sets through RocksDB's option string, for want
/// of a setter: a table file in a family's last level is not rewritten
/// only to zero its sequence numbers (RocksDB's `BottommostFiles`
/// compaction) until it is this many seconds old, that is, never, since
/// such rewrites cost an import much disk work and change no read.
const BOTTOMMOST_REWRITE_DELAY: &str = "bottommost_file_compaction_delay=4294967295";

/// `o` with [`BOTTOMMOST_REWRITE_DELAY`] set (`o` as it was should the
/// option string ever be refused: the store then rewrites such files as
/// RocksDB does by default, and reads the same).
fn never_rewrite_for_sequence_numbers(mut o: Options) -> Options {
    match o.get_options_from_string(BOTTOMMOST_REWRITE_DELAY) {
        Ok(set) => set,
        Err(_) => o,
    }
}

/// The table files a store keeps open at most (RocksDB's table cache).
pub(super) const MAX_OPEN_TABLE_FILES: i32 = 512;

/// The write-ahead log's size beyond which memtables are flushed.
const MAX_WAL_BYTES: u64 = 256 << 20;

/// Index entries per run that shares key prefixes (see `cf_options`).
const INDEX_RESTART_INTERVAL: i32 = 16;

/// The block cache that every column family of one open store shares.
pub(super) const BLOCK_CACHE_BYTES: usize = 64 << 20;

/// A column family's options, its table blocks cached in `cache`, which
/// all families share so that memory does not grow with their number.
pub(super) fn cf_options(name: &str, cache: &Cache, base: &Options) -> Options {
    let mut o = base.clone();
    let mut b = BlockBasedOptions::default();
    b.set_block_cache(cache);
    // Keys that share a prefix make the index block, which a cold read
    // reads whole, several times smaller.
    b.set_index_block_restart_interval(INDEX_RESTART_INTERVAL);
    if name == cf::VALUES {
        // Payloads are compressed by us already.
        o.set_compression_type(DBCompressionType::None);
        b.set_bloom_filter(10.0, false);
    }
    if name == cf::ADJACENCY || name == cf::TRACES {
        // Point reads of a few keys per trace: a filter tells which
        // level-0 files lack a key without reading their data blocks.
        b.set_bloom_filter(10.0, false);
    }
    o.set_block_based_table_factory(&b);
    o
}

#[cfg(test)]
thread_local! {
    /// The log size past which this thread's stores flush, when a test sets it.
    pub(super) static TEST_MAX_WAL_BYTES: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}
