//! The store: opening (with the schema check), writing one trace in one
//! batch, consistent snapshot reads, and the one removal (dropping a trace).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, Direction,
    IteratorMode, Options, ReadOptions, WriteBatch, WriteOptions, DB,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::adjacency::{Adjacency, AdjacencyBlock};
use crate::error::StorageError;
use crate::head::{encode_head, HeadNames, TraceHead, HEAD_BYTES, HEAD_VARS};
use crate::ids::{LocalId, Result, TraceId};
use crate::keys::{self, IdKind, RecordKind};
use crate::labels::TraceLabels;
use crate::records::{
    decode, encode, encode_into, AttributionRecord, CaseRecord, Counts, EdgeRecord, LogEvent,
    OpRecord, PatternRecord, SessionRecord, TraceRecord, ValueRef, VarRecord,
};
use crate::values::{decode_value, encode_value, hex, value_ref, PreparedValue};

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 3;

/// The oldest schema version this build opens. Version 1 kept adjacency as
/// two index entries per edge ([`cf::ADJ_OUT`], [`cf::ADJ_IN`]); version 2
/// keeps it as one value per trace ([`cf::ADJACENCY`]); version 3 adds each
/// variable's class to a trace's labels ([`TraceLabels`]), so that a query
/// reads names, classes and versions without the variables' records.
/// Traces stored under an older version are still read as it stored them;
/// opening such a database records the current version, since traces
/// imported from then on are stored in a form an older build cannot read.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

const META_SCHEMA: &[u8] = b"schema_version";
const META_NEXT_TRACE: &[u8] = b"next_trace";
/// Present when [`META_HASH_GRAPH_IDS`] is kept up to date: written when a
/// database is created, or by the first writing open of an older one.
const META_HASH_IDS_TRACKED: &[u8] = b"hash_graph_ids_tracked";
/// Present once some trace was stored under a graph id that starts with
/// `#`, which a `#ID` selector could also mean. Never removed.
const META_HASH_GRAPH_IDS: &[u8] = b"hash_graph_ids";
/// The smallest id of a trace stored with a head (see [`TraceHead`]), as a
/// big-endian `u32`: a trace below it was stored before heads were, and
/// its head is not looked for.
const META_HEADS_FROM: &[u8] = b"heads_from";
/// Prefix of a trace's content digest in [`cf::META`] (then the trace id).
const META_CONTENT: &[u8] = b"content:";
/// Prefix of the OTLP requests a trace was made from, when it keeps them
/// (see [`TraceWriter::keep_otlp_requests`]), in [`cf::META`] (then the trace id).
const META_OTLP: &[u8] = b"otlp:";

fn otlp_key(trace: TraceId) -> Vec<u8> {
    let mut k = META_OTLP.to_vec();
    k.extend_from_slice(&keys::trace_key(trace));
    k
}

/// Where a trace's content digest is kept.
/// Marks a trace whose table files are being ingested (see
/// [`BULK_BYTES`]); the final batch of its import removes the mark, and an
/// open to write removes what a mark's trace left behind.
const META_INGESTING: &[u8] = b"ingesting:";

fn ingesting_key(trace: TraceId) -> Vec<u8> {
    let mut k = META_INGESTING.to_vec();
    k.extend_from_slice(&trace.to_be_bytes());
    k
}

/// A trace expected to take at least this many bytes (its export's size)
/// is written in bulk: its records, values and index entries are sorted
/// into table files, written on two threads and ingested whole, and the
/// rest (adjacency, labels, cases, the trace record, its graph id and the
/// log entry) goes through a write batch (and the write-ahead log), which is
/// what makes the trace visible: records are found through the trace
/// record, values through the variables, and readers ignore index entries
/// of a trace that has no record ([`ReadView::committed`]). A crash in
/// between leaves a mark that the next open to write clears, with what was
/// ingested (the index entries found again from the ingested records).
///
/// Each bulk write adds a table file to each of [`BULK_FAMILIES`] (until
/// compactions merge them), and an open reads the first few table files
/// at once and the others when a query first needs them: the threshold is
/// set so that only traces whose import it speeds up by seconds pay that.
/// (At 16 MiB, one generated long-context trace of 17 MB among ten made
/// the first query after an open of that set 1.6x to 2x slower.)
pub const BULK_BYTES: usize = 64 << 20;

/// The column families a bulk write ingests as table files: first a
/// trace's records (keyed by their trace) and its values
/// (content-addressed), then its index entries, which a crash cleanup
/// finds again from the records.
const BULK_FAMILIES: [&str; 10] = [
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
const INGEST_DIR: &str = "ingest";

/// One column family's entries of a bulk write, in the order added: keys
/// and short values back to back in one buffer (a bulk write adds about a
/// million index entries, which would otherwise be two allocations each),
/// longer values (records, stored values) kept as they were handed over.
#[derive(Debug, Default)]
struct Run {
    bytes: Vec<u8>,
    owned: Vec<Vec<u8>>,
    at: Vec<At>,
}

/// Where one entry of a [`Run`] is: its key at `start` in the buffer, its
/// value after the key or, when `owned` is not [`INLINE`], that long value.
#[derive(Debug, Clone, Copy)]
struct At {
    start: usize,
    key: usize,
    value: usize,
    owned: usize,
}

/// A table file written for a column family, to be ingested.
type Table = (&'static str, PathBuf);

/// [`At::owned`] of a value kept in the buffer.
const INLINE: usize = usize::MAX;

/// Values of at least this many bytes are kept as handed over, not copied.
const OWNED_FROM: usize = 64;

impl Run {
    fn push<V: AsRef<[u8]> + Into<Vec<u8>>>(&mut self, key: &[u8], value: V) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        let len = value.as_ref().len();
        let owned = if len >= OWNED_FROM {
            self.owned.push(value.into());
            self.owned.len() - 1
        } else {
            self.bytes.extend_from_slice(value.as_ref());
            INLINE
        };
        self.at.push(At {
            start,
            key: key.len(),
            value: len,
            owned,
        });
    }

    fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    /// Bytes of keys and values.
    fn size(&self) -> u64 {
        (self.bytes.len() + self.owned.iter().map(Vec::len).sum::<usize>()) as u64
    }

    fn key<'r>(bytes: &'r [u8], a: &At) -> &'r [u8] {
        &bytes[a.start..a.start + a.key]
    }

    /// The entries sorted by key, of equal keys the last added (as a write
    /// batch keeps the last put).
    fn sorted(&mut self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let Run { bytes, owned, at } = self;
        let key = |a: &At| Self::key(bytes, a);
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
                INLINE => &bytes[a.start + a.key..a.start + a.key + a.value],
                o => owned[o].as_slice(),
            };
            Some((k, v))
        })
    }
}

fn content_key(trace: TraceId) -> Vec<u8> {
    let mut k = META_CONTENT.to_vec();
    k.extend_from_slice(&keys::trace_key(trace));
    k
}

/// The digest memtrace keeps of what a trace was imported from (blake3 of
/// the export's bytes), to tell an import of the same content again (a
/// no-op) from another trace under the same graph id.
pub fn content_digest(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// [`content_digest`] of bytes handed over in pieces, in their order (the
/// same digest as of the pieces joined).
pub fn content_digest_pieces<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for piece in pieces {
        h.update(piece);
    }
    *h.finalize().as_bytes()
}

/// Column family names.
pub mod cf {
    /// Database metadata: schema version, id counters.
    pub const META: &str = "meta";
    /// Trace records, by trace id.
    pub const TRACES: &str = "traces";
    /// Session records, by (trace, local id).
    pub const SESSIONS: &str = "sessions";
    /// Variable records, by (trace, local id).
    pub const VARIABLES: &str = "variables";
    /// Operation records, by (trace, local id).
    pub const OPS: &str = "operations";
    /// Edge records, by (trace, local id).
    pub const EDGES: &str = "edges";
    /// Case annotations, by (trace, local id).
    pub const CASES: &str = "cases";
    /// Distinct value payloads, by content hash.
    pub const VALUES: &str = "values";
    /// Which traces use a value: (hash, trace).
    pub const VALUE_REFS: &str = "value_refs";
    /// A trace's whole adjacency as one value (see [`crate::Adjacency`]):
    /// trace -> edges' ends and ops with their CSR lists. Schema version 2.
    /// Beside it, its rows in blocks (see [`crate::keys::adjacency_block_key`])
    /// and its labels (see [`crate::keys::labels_key`]).
    pub const ADJACENCY: &str = "adjacency";
    /// Outgoing adjacency: (trace, source, edge) -> (target, op). Written
    /// by schema version 1 only; read for the traces it stored.
    pub const ADJ_OUT: &str = "idx_adj_out";
    /// Incoming adjacency: (trace, target, edge) -> (source, op). Written
    /// by schema version 1 only; read for the traces it stored.
    pub const ADJ_IN: &str = "idx_adj_in";
    /// Full name -> versions: (full name, trace, version) -> local id.
    pub const VAR_NAME: &str = "idx_var_name";
    /// smartcomment string ids: (kind, id, trace) -> local id.
    pub const STRING_ID: &str = "idx_string_id";
    /// Category -> ids: (kind, category, trace, local).
    pub const CATEGORY: &str = "idx_category";
    /// Op name -> ids: (op name, trace, local).
    pub const OP_NAME: &str = "idx_op_name";
    /// Append-only event log: sequence number -> event.
    pub const LOG: &str = "log";
    /// Attribution verdicts, appended after import: (trace, sequence number).
    pub const ATTRIBUTIONS: &str = "attributions";
    /// Answers of LLM endpoints, by a hash of what was asked (a cache that
    /// makes a re-run cost nothing and reproduce its verdicts).
    pub const LLM_CACHE: &str = "llm_cache";
    /// Saved failure patterns, appended (saves and drops alike) under one
    /// database-wide sequence number.
    pub const PATTERNS: &str = "patterns";
    /// Every column family, in creation order.
    pub const ALL: [&str; 20] = [
        META,
        TRACES,
        SESSIONS,
        VARIABLES,
        OPS,
        EDGES,
        CASES,
        VALUES,
        VALUE_REFS,
        ADJ_OUT,
        ADJ_IN,
        VAR_NAME,
        STRING_ID,
        CATEGORY,
        OP_NAME,
        LOG,
        ATTRIBUTIONS,
        LLM_CACHE,
        PATTERNS,
        ADJACENCY,
    ];
    /// Column families added after schema version 1 was first written: a
    /// database made before them gets them, empty, when it is opened.
    pub const ADDED: [&str; 4] = [ATTRIBUTIONS, LLM_CACHE, PATTERNS, ADJACENCY];
    /// Column families whose keys start with the trace id.
    pub const BY_TRACE: [&str; 9] = [
        SESSIONS,
        VARIABLES,
        OPS,
        EDGES,
        CASES,
        ADJ_OUT,
        ADJ_IN,
        ATTRIBUTIONS,
        ADJACENCY,
    ];
}

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Create the database when the path holds none.
    pub create: bool,
    /// fsync the write-ahead log at every trace commit (power-loss safety).
    pub sync: bool,
    /// Open for reading only: no lock is taken, so any number of readers
    /// may open the database while one process writes to it, each seeing
    /// what was committed when it opened; nothing is written at open, and
    /// every write fails with [`StorageError::ReadOnly`]. Implies no `create`.
    pub read_only: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            create: true,
            sync: true,
            read_only: false,
        }
    }
}

/// An open memtrace store.
pub struct Store {
    db: Arc<DB>,
    /// A reader's thread that opens the table files of its snapshot (see
    /// [`Store::open`]).
    pinning: Option<Pinning>,
    path: PathBuf,
    /// The block cache every column family shares (its options are those
    /// of the table files a bulk write makes).
    cache: Cache,
    write_lock: Mutex<()>,
    next_trace: AtomicU32,
    next_log: AtomicU64,
    sync: bool,
    /// Whether anything was written since open (then closing flushes).
    written: AtomicBool,
    read_only: bool,
    /// Whether some stored graph id may start with `#` (see
    /// [`ReadView::hash_graph_ids_possible`]): read at open, set before a
    /// commit stores such a graph id, so that a query naming a trace by
    /// `#ID` reads nothing to know it.
    hash_ids_possible: AtomicBool,
    /// The smallest id of a trace stored with a head (`u32::MAX`: none),
    /// read at open and lowered before a commit stores a head, so that a
    /// database from before heads pays no read for them.
    heads_from: AtomicU32,
    /// A writer's entry among the databases this process writes; declared
    /// after `db`, so that it goes only once the lock has.
    _writer: Option<WriterMark>,
}

impl Drop for Store {
    /// Flushes what this process wrote to table files, so the next open
    /// replays no log. A process killed before this point loses nothing:
    /// the log is replayed at the next open instead.
    fn drop(&mut self) {
        if let Some(p) = self.pinning.take() {
            p.stop();
        }
        if self.written.load(Ordering::Relaxed) {
            let _ = self.flush();
        }
    }
}

/// The file that readers lock (shared) while table files of their
/// snapshot may still be unopened, and a writer (exclusive) while it opens.
const READERS_FILE: &str = "READERS";

/// How long a reader waits for a writer that is opening the database.
const READER_WAITS: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a writer waits, at most, for readers to open their table files
/// before it opens the database (and may compact them away).
const WRITER_WAITS: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a reader reads before its thread opens the rest of its table
/// files: most commands are done by then, and read no more than they need.
const PIN_AFTER: std::time::Duration = std::time::Duration::from_millis(150);

/// A `flock` on the readers' file, released when dropped (the descriptor
/// closes).
#[derive(Debug)]
struct ReadersLock(#[allow(dead_code)] std::fs::File);

impl ReadersLock {
    /// Takes the lock, shared or exclusive, waiting up to `wait`. `None`
    /// when the file cannot be made (a folder this process may not write:
    /// then no writer of it can be waited for either) or the wait ran out.
    fn take(path: &Path, exclusive: bool, wait: std::time::Duration) -> Option<ReadersLock> {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path.join(READERS_FILE))
            .ok()?;
        let how = if exclusive {
            libc::LOCK_EX
        } else {
            libc::LOCK_SH
        };
        let start = std::time::Instant::now();
        loop {
            // SAFETY: the descriptor is open for the call.
            if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
                return Some(ReadersLock(file));
            }
            if start.elapsed() >= wait {
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// The table cache of a reader that opens files lazily: large enough that
/// no file it opened is closed again while it lives (closing would let a
/// writer's compaction take it away), within the process's limit of open
/// files, which is raised to its maximum for that.
fn reader_open_files() -> i32 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid rlimit for getrlimit and setrlimit.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    // Descriptors for everything else the process opens.
    let room = limit.rlim_cur.saturating_sub(256);
    i32::try_from(room.min(1 << 20))
        .unwrap_or(i32::MAX)
        .max(MAX_OPEN_TABLE_FILES)
}

/// A reader's thread that opens every table file of its snapshot, so that
/// each is held open however long the reader lives, then lets writers open.
struct Pinning {
    /// Dropped to stop the thread: it wakes at once.
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Pinning {
    fn start(db: Arc<DB>, lock: ReadersLock) -> Option<Pinning> {
        let (stop, stopped) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("memtrace-pin".into())
            .spawn(move || pin_tables(&db, &stopped, lock))
            .ok()?;
        Some(Pinning { stop, thread })
    }

    /// Stops the thread (between two files) and waits for it.
    fn stop(self) {
        drop(self.stop);
        let _ = self.thread.join();
    }
}

/// Opens each table file of `db`'s snapshot by reading its first key, after
/// [`PIN_AFTER`]; releases `lock` once done (or stopped).
fn pin_tables(db: &DB, stopped: &std::sync::mpsc::Receiver<()>, lock: ReadersLock) {
    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
    // Nothing is sent: the channel is closed to stop.
    if stopped.recv_timeout(PIN_AFTER) != Err(RecvTimeoutError::Timeout) {
        return;
    }
    let Ok(files) = db.live_files() else {
        return;
    };
    for f in files {
        if !matches!(stopped.try_recv(), Err(TryRecvError::Empty)) {
            break;
        }
        let (Some(cf), Some(first), Some(last)) = (
            db.cf_handle(&f.column_family_name),
            f.start_key.as_deref(),
            f.end_key.as_deref(),
        ) else {
            continue;
        };
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        ro.set_iterate_lower_bound(first.to_vec());
        let mut end = last.to_vec();
        end.push(0);
        ro.set_iterate_upper_bound(end);
        let mut it = db.raw_iterator_cf_opt(cf, ro);
        it.seek(first);
        let _ = it.valid();
    }
    drop(lock);
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// RocksDB options shared by the store and the raw-write peer of the benchmark.
pub fn base_options() -> Options {
    let mut o = Options::default();
    o.increase_parallelism(2);
    o.set_max_background_jobs(2);
    o.set_write_buffer_size(64 << 20);
    o.set_compression_type(DBCompressionType::Lz4);
    o.set_keep_log_file_num(4);
    // A command-line tool opens and closes the database at every command:
    // open table files on this thread (RocksDB's default starts 16 threads
    // per column family to do it), read no table statistics at open, and
    // keep no timer threads for statistics dumps.
    o.set_max_file_opening_threads(1);
    o.set_skip_stats_update_on_db_open(true);
    // With a bounded table cache, RocksDB opens at most 16 table files at
    // open and the rest when a read first needs them, instead of reading
    // the footer, index and filter of every file before the first query.
    // The bound also keeps a large database under the usual limit of 1,024
    // open files per process. (A reader beside a writer opens every file at
    // once instead: see `Store::open`.)
    o.set_max_open_files(MAX_OPEN_TABLE_FILES);
    o.set_stats_dump_period_sec(0);
    o.set_stats_persist_period_sec(0);
    // Memtables holding the oldest log are flushed once the logs pass this,
    // so a long import leaves no gigabytes of log to replay at the next open.
    #[cfg(not(test))]
    o.set_max_total_wal_size(MAX_WAL_BYTES);
    #[cfg(test)]
    o.set_max_total_wal_size(tests::MAX_WAL.with(|m| m.get()).unwrap_or(MAX_WAL_BYTES));
    // Every flush is of all the families with records, and records the
    // oldest log still needed across all of them. Flushed one by one, a
    // family that receives nothing after a flush for the logs' size
    // (attributions, the LLM cache, patterns during an import) kept the
    // log of that flush alive: every read-only open then read it again
    // (80 ms after importing 100 traces).
    o.set_atomic_flush(true);
    o
}

/// [`base_options`] for a store opened to write (and the raw-write peer of
/// the benchmark): with [`BOTTOMMOST_REWRITE_DELAY`]. A read-only open
/// never compacts, and setting it costs a parse of RocksDB's option
/// string (about 0.2 ms), so readers go without.
pub fn writer_options() -> Options {
    never_rewrite_for_sequence_numbers(base_options())
}

/// What [`writer_options`] sets through RocksDB's option string, for want
/// of a setter: a table file in a family's last level is not rewritten
/// only to zero its sequence numbers (RocksDB's `BottommostFiles`
/// compaction) until it is this many seconds old, that is, never.
///
/// Without it, each flush of an import whose files are the family's only
/// ones, and each file moved down whole after a flush (see
/// [`Store::settle`]), was read and written again in the background once
/// no snapshot needed its sequence numbers: importing 1,000 generated
/// traces rewrote 579 MiB that way, beside its own writes, on the same
/// two cores. The store appends: what it deletes (a dropped trace, an
/// import cut short) ordinary compactions drop, and only entries that such
/// a compaction had to keep for a reader's snapshot stay on disk until a
/// later compaction rewrites their file; reads are the same either way.
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

/// The databases this process has open to write, by canonical folder.
///
/// RocksDB's lock is a POSIX record lock on the folder's `LOCK` file, and
/// closing any descriptor of that file releases every such lock the
/// process holds on it. So [`lock_held`] asks the kernel about other
/// processes through a descriptor of its own only when this process holds
/// no lock there, which this list tells; and a writer of this process
/// opens (taking the lock) while holding the list, so that no descriptor
/// opened by `lock_held` can be closed in between.
static WRITING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The list of [`WRITING`], locked (a panic elsewhere while it was held
/// left it whole: each change is one push or one removal).
fn writing() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    WRITING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How [`WRITING`] names the database at `path`.
fn writing_key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A writer's entry in [`WRITING`], removed when the store that holds it
/// is dropped (after its database, whose lock goes first).
#[derive(Debug)]
struct WriterMark(PathBuf);

impl Drop for WriterMark {
    fn drop(&mut self) {
        let mut list = writing();
        if let Some(at) = list.iter().position(|p| *p == self.0) {
            list.swap_remove(at);
        }
    }
}

/// Whether a process (this one included) holds the lock of the database at
/// `path`, that is, has it open to write: this process when [`WRITING`]
/// lists it, another when the kernel reports a lock on its `LOCK` file
/// that would keep this process from writing (`F_GETLK`). Where that
/// cannot be asked, a writer is assumed. Reading the kernel's whole table
/// of locks (`/proc/locks`) instead cost 6 to 14 ms on its first read in a
/// process, and every command is a fresh process (BENCHMARKS.md, "Opening
/// without reading the kernel's table of locks").
fn lock_held(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let list = writing();
    if list.contains(&writing_key(path)) {
        return true;
    }
    // No lock of this process is on the file, and none is taken while the
    // list is held: the descriptor opened here may be closed.
    let file = match std::fs::File::open(path.join("LOCK")) {
        Ok(f) => f,
        // Never opened to write: nothing can hold it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    // SAFETY: `flock` is plain data, for which all zeroes is a valid value.
    let mut query: libc::flock = unsafe { std::mem::zeroed() };
    query.l_type = libc::F_WRLCK as libc::c_short;
    query.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: the descriptor is open for the call, and `query` is a valid
    // `flock` that F_GETLK reads and overwrites.
    let asked = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut query) };
    drop(file);
    drop(list);
    asked != 0 || query.l_type != libc::F_UNLCK as libc::c_short
}

/// The table files a store keeps open at most (RocksDB's table cache).
const MAX_OPEN_TABLE_FILES: i32 = 512;

/// The write-ahead log's size beyond which memtables are flushed.
const MAX_WAL_BYTES: u64 = 256 << 20;

/// Index entries per run that shares key prefixes (see `cf_options`).
const INDEX_RESTART_INTERVAL: i32 = 16;

/// The block cache that every column family of one open store shares.
const BLOCK_CACHE_BYTES: usize = 64 << 20;

/// A column family's options, its table blocks cached in `cache`. (Left to
/// itself, RocksDB gives each column family a block cache of its own, 32
/// MiB each: over 600 MiB for a store's twenty.)
fn cf_options(name: &str, cache: &Cache, base: &Options) -> Options {
    let mut o = base.clone();
    let mut b = BlockBasedOptions::default();
    b.set_block_cache(cache);
    // A cold read opens its table file and reads the whole index block
    // first. With a full key per entry (RocksDB's default) the index of a
    // family holding many small values is tens of KiB; keys sharing a
    // prefix (the trace) in runs of 16 make it several times smaller, for a
    // search that reads up to 16 entries in a row at its end.
    b.set_index_block_restart_interval(INDEX_RESTART_INTERVAL);
    if name == cf::VALUES {
        // Payloads are compressed by us already.
        o.set_compression_type(DBCompressionType::None);
        b.set_bloom_filter(10.0, false);
    }
    if name == cf::ADJACENCY || name == cf::TRACES {
        // Point reads of a few keys per trace (head, adjacency, labels,
        // blocks; the record). While a family's files are all in level 0
        // and at most three (after importing some hundred traces), RocksDB
        // does not compare a key with a file's range but searches every
        // file: without a filter, a cold read of one trace's head read a
        // data block of each newer file first (30 KiB at 100 traces). A
        // filter of a few bytes per trace answers that from the file's
        // tail, read when the file is opened.
        b.set_bloom_filter(10.0, false);
    }
    o.set_block_based_table_factory(&b);
    o
}

/// Writes `entries` into a table file at `path` with a column family's
/// options, in key order; of equal keys the last added is kept, as in a
/// write batch.
fn write_table(path: &Path, opts: &Options, mut run: Run) -> Result<()> {
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
fn write_share(
    dir: &Path,
    cache: &Cache,
    trace: TraceId,
    tag: usize,
    share: Vec<(&'static str, Run)>,
) -> Result<Vec<Table>> {
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
fn two_shares(
    families: impl IntoIterator<Item = (&'static str, Run)>,
) -> [Vec<(&'static str, Run)>; 2] {
    let mut jobs: Vec<(&'static str, Run, u64)> = families
        .into_iter()
        .filter(|(_, e)| !e.is_empty())
        .map(|(name, e)| {
            let bytes = e.size();
            (name, e, bytes)
        })
        .collect();
    jobs.sort_by_key(|j| std::cmp::Reverse(j.2));
    let mut shares: [Vec<(&'static str, Run)>; 2] = Default::default();
    let mut load = [0u64; 2];
    for (name, entries, bytes) in jobs {
        let i = usize::from(load[1] < load[0]);
        load[i] += bytes;
        shares[i].push((name, entries));
    }
    shares
}

/// The error of a thread writing table files that stopped (panicked).
fn stopped(dir: &Path) -> StorageError {
    io_err(
        dir,
        std::io::Error::other("the thread writing table files stopped"),
    )
}

/// Whether any graph id in the string id index starts with `#`.
fn any_hash_graph_id(db: &DB) -> Result<bool> {
    let cf = db.cf_handle(cf::STRING_ID).expect("listed");
    let prefix = [IdKind::Graph as u8];
    for item in db.prefix_iterator_cf(cf, prefix) {
        let (k, _) = item?;
        if k.first() != Some(&prefix[0]) {
            break;
        }
        if keys::read_str(&k[1..]).is_some_and(|(id, _)| id.starts_with('#')) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Creates a new, empty database at `path` atomically: it is built in a
/// hidden sibling folder, schema version included, and renamed into place,
/// so that a crash during creation leaves no half-made database behind.
fn create_new(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| io_err(&parent, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "memtrace.db".into());
    let prefix = format!(".{name}.creating-");
    // Leftovers of creations that were killed: their process is gone.
    if let Ok(entries) = std::fs::read_dir(&parent) {
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = file.strip_prefix(&prefix) {
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
    }
    let staging = parent.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    {
        let base = writer_options();
        let mut db_opts = base.clone();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        let cache = Cache::new_lru_cache(BLOCK_CACHE_BYTES);
        let descriptors = cf::ALL
            .iter()
            .map(|name| ColumnFamilyDescriptor::new(*name, cf_options(name, &cache, &base)));
        let db = DB::open_cf_descriptors(&db_opts, &staging, descriptors)?;
        let mut batch = WriteBatch::default();
        let meta = db.cf_handle(cf::META).expect("created");
        batch.put_cf(meta, META_SCHEMA, SCHEMA_VERSION.to_be_bytes());
        batch.put_cf(meta, META_NEXT_TRACE, 1u32.to_be_bytes());
        batch.put_cf(meta, META_HASH_IDS_TRACKED, []);
        let mut w = WriteOptions::default();
        w.set_sync(true);
        db.write_opt(batch, &w)?;
        db.flush_wal(true)?;
    }
    if path.is_dir() {
        // An empty folder stands where the database goes (checked by the caller).
        let _ = std::fs::remove_dir(path);
    }
    match std::fs::rename(&staging, path) {
        Ok(()) => Ok(()),
        // Another process created it meanwhile: use theirs.
        Err(_) if path.join("CURRENT").is_file() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(io_err(path, e))
        }
    }
}

/// Bytes of all files under a folder (a database's size on disk).
pub fn dir_bytes(dir: &Path) -> Result<u64> {
    // RocksDB deletes obsolete files (old logs, compacted tables) in the
    // background: one gone between listing and reading it counts as 0.
    fn gone(e: &std::io::Error) -> bool {
        e.kind() == std::io::ErrorKind::NotFound
    }
    fn walk(dir: &Path) -> std::io::Result<u64> {
        let mut total = 0;
        for entry in std::fs::read_dir(dir)? {
            let entry = match entry {
                Ok(e) => e,
                Err(e) if gone(&e) => continue,
                Err(e) => return Err(e),
            };
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) if gone(&e) => continue,
                Err(e) => return Err(e),
            };
            total += if meta.is_dir() {
                match walk(&entry.path()) {
                    Ok(n) => n,
                    Err(e) if gone(&e) => 0,
                    Err(e) => return Err(e),
                }
            } else {
                meta.len()
            };
        }
        Ok(total)
    }
    walk(dir).map_err(|e| io_err(dir, e))
}

fn io_err(path: &Path, source: std::io::Error) -> StorageError {
    StorageError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Store {
    /// Opens (or, with `create`, creates) the store at `path`.
    ///
    /// Refuses a path that holds something other than a memtrace database
    /// and a database of another schema version.
    pub fn open(path: &Path, opts: &StoreOptions) -> Result<Store> {
        let shown = path.display().to_string();
        let exists = path.join("CURRENT").is_file();
        if !exists {
            if path.is_file() {
                return Err(StorageError::NotADatabase {
                    path: shown,
                    reason: "it is a file".into(),
                });
            }
            if path.is_dir() {
                let mut entries = std::fs::read_dir(path).map_err(|e| io_err(path, e))?;
                if entries.next().is_some() {
                    return Err(StorageError::NotADatabase {
                        path: shown,
                        reason: "the folder is not empty and holds no RocksDB database".into(),
                    });
                }
            }
            if !opts.create || opts.read_only {
                return Err(StorageError::Missing(shown));
            }
        }
        if !exists {
            create_new(path)?;
        }
        let base = if opts.read_only {
            base_options()
        } else {
            writer_options()
        };
        let mut db_opts = base.clone();
        // A writer may compact table files away while a reader reads; a
        // file held open survives that. A reader beside a writer opens every
        // file now. One that opens first opens them lazily, as reads need
        // them, and holds each open (its table cache is not bounded), and a
        // thread of its own opens the rest soon after; until it has, it
        // holds the readers' lock, which a writer waits for before it opens
        // (see `ReadersLock`).
        let mut readers = None;
        let mut pin = false;
        if opts.read_only {
            readers = ReadersLock::take(path, false, READER_WAITS);
            if lock_held(path) {
                db_opts.set_max_open_files(-1);
                readers = None;
            } else {
                db_opts.set_max_open_files(reader_open_files());
                pin = readers.is_some();
            }
        } else if exists {
            readers = ReadersLock::take(path, true, WRITER_WAITS);
        }
        let cache = Cache::new_lru_cache(BLOCK_CACHE_BYTES);
        // A writer takes the lock with the list of writers held (see
        // `WRITING`); declared before `db`, it is released after `db` on
        // every early return.
        let writers = (!opts.read_only).then(writing);
        let db = {
            let present = DB::list_cf(&db_opts, path)?;
            if !present.iter().any(|c| c == cf::META) {
                return Err(StorageError::NotADatabase {
                    path: shown,
                    reason: "a RocksDB database without memtrace metadata".into(),
                });
            }
            let descriptors = || {
                present
                    .iter()
                    .map(|name| ColumnFamilyDescriptor::new(name, cf_options(name, &cache, &base)))
            };
            let opened = if opts.read_only {
                // A writer may delete a table file (flushed or compacted
                // away) between our reading the manifest and opening the
                // file: read the manifest again. Beside a writer, every
                // table file is opened now and held open, so later reads do
                // not race.
                let mut attempt = 0;
                loop {
                    match DB::open_cf_descriptors_read_only(&db_opts, path, descriptors(), false) {
                        Err(e) if attempt < 20 && e.as_ref().contains("No such file") => {
                            attempt += 1;
                            std::thread::sleep(std::time::Duration::from_millis(5));
                        }
                        other => break other,
                    }
                }
            } else {
                DB::open_cf_descriptors(&db_opts, path, descriptors())
            };
            let mut db = opened.map_err(|e| {
                // RocksDB takes an exclusive lock on the folder's LOCK file.
                if e.as_ref().contains("LOCK: ") {
                    StorageError::InUse(shown.clone())
                } else {
                    StorageError::Rocks(e)
                }
            })?;
            let found = db
                .get_cf(db.cf_handle(cf::META).expect("listed"), META_SCHEMA)?
                .and_then(|v| keys::read_u32(&v));
            let mut upgrade = false;
            match found {
                Some(SCHEMA_VERSION) => {}
                Some(v) if (OLDEST_SCHEMA_VERSION..SCHEMA_VERSION).contains(&v) => upgrade = true,
                Some(found) => {
                    return Err(StorageError::SchemaVersion {
                        path: shown,
                        found,
                        supported: SCHEMA_VERSION,
                    })
                }
                None => {
                    return Err(StorageError::NotADatabase {
                        path: shown,
                        reason: "no schema version recorded".into(),
                    })
                }
            }
            let lacking = cf::ADDED
                .iter()
                .any(|added| !present.iter().any(|p| p == added));
            if opts.read_only && (upgrade || lacking) {
                // A reader cannot upgrade: open once to write, then read.
                drop(db);
                drop(readers);
                let writer = StoreOptions {
                    create: false,
                    read_only: false,
                    ..opts.clone()
                };
                drop(Store::open(path, &writer)?);
                return Store::open(path, opts);
            }
            for added in cf::ADDED {
                if !present.iter().any(|p| p == added) {
                    db.create_cf(added, &cf_options(added, &cache, &base))?;
                }
            }
            let meta = db.cf_handle(cf::META).expect("listed");
            if !opts.read_only && db.get_pinned_cf(meta, META_HASH_IDS_TRACKED)?.is_none() {
                // Written before graph ids starting with '#' were tracked:
                // look for them once (one index key per trace).
                let mut batch = WriteBatch::default();
                if any_hash_graph_id(&db)? {
                    batch.put_cf(meta, META_HASH_GRAPH_IDS, []);
                }
                batch.put_cf(meta, META_HASH_IDS_TRACKED, []);
                let mut w = WriteOptions::default();
                w.set_sync(true);
                db.write_opt(batch, &w)?;
            }
            if upgrade {
                let mut w = WriteOptions::default();
                w.set_sync(true);
                db.put_cf_opt(
                    db.cf_handle(cf::META).expect("listed"),
                    META_SCHEMA,
                    SCHEMA_VERSION.to_be_bytes(),
                    &w,
                )?;
            }
            if let Some(missing) = cf::ALL
                .iter()
                .find(|c| !cf::ADDED.contains(c) && !present.iter().any(|p| p == *c))
            {
                return Err(StorageError::NotADatabase {
                    path: shown,
                    reason: format!("column family {missing} is missing"),
                });
            }
            db
        };
        let next_trace = db
            .get_cf(db.cf_handle(cf::META).expect("checked"), META_NEXT_TRACE)?
            .and_then(|v| keys::read_u32(&v))
            .unwrap_or(1);
        // Only a writer appends to the log: a reader does not read it at open.
        let next_log = if opts.read_only {
            0
        } else {
            let mut it = db.iterator_cf(db.cf_handle(cf::LOG).expect("checked"), IteratorMode::End);
            match it.next() {
                Some(item) => {
                    let (k, _) = item?;
                    u64::from_be_bytes(k.as_ref().try_into().map_err(|_| StorageError::Decode {
                        what: "log key",
                        reason: "not 8 bytes".into(),
                    })?) + 1
                }
                None => 1,
            }
        };
        let hash_ids_possible = {
            let meta = db.cf_handle(cf::META).expect("checked");
            db.get_pinned_cf(meta, META_HASH_IDS_TRACKED)?.is_none()
                || db.get_pinned_cf(meta, META_HASH_GRAPH_IDS)?.is_some()
        };
        let heads_from = {
            let meta = db.cf_handle(cf::META).expect("checked");
            db.get_pinned_cf(meta, META_HEADS_FROM)?
                .and_then(|v| keys::read_u32(&v))
                .unwrap_or(u32::MAX)
        };
        let db = Arc::new(db);
        // A writer's open is done: readers may come, and see it.
        let pinning = match readers {
            Some(lock) if pin => Pinning::start(Arc::clone(&db), lock),
            _ => None,
        };
        let store = Store {
            db,
            pinning,
            path: path.to_path_buf(),
            cache,
            write_lock: Mutex::new(()),
            next_trace: AtomicU32::new(next_trace),
            next_log: AtomicU64::new(next_log),
            sync: opts.sync,
            written: AtomicBool::new(false),
            read_only: opts.read_only,
            hash_ids_possible: AtomicBool::new(hash_ids_possible),
            heads_from: AtomicU32::new(heads_from),
            _writer: writers.map(|mut list| {
                let key = writing_key(path);
                list.push(key.clone());
                WriterMark(key)
            }),
        };
        if !store.read_only {
            store.clear_unfinished_ingests()?;
        }
        Ok(store)
    }

    /// Whether the store was opened for reading only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn writable(&self) -> Result<()> {
        if self.read_only {
            Err(StorageError::ReadOnly(self.path.display().to_string()))
        } else {
            Ok(())
        }
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn cf(&self, name: &str) -> &ColumnFamily {
        // Every name in cf::ALL is checked to exist at open.
        self.db
            .cf_handle(name)
            .expect("column family checked at open")
    }

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
            bulk: bulk.then(|| BULK_FAMILIES.iter().map(|_| Run::default()).collect()),
            finished: 0,
            early: Vec::new(),
            scratch: Vec::new(),
            labels: Some(TraceLabels::default()),
            label_scratch: String::new(),
        })
    }

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

    fn next_log_key(&self) -> [u8; 8] {
        self.next_log.fetch_add(1, Ordering::SeqCst).to_be_bytes()
    }

    fn write(&self, batch: WriteBatch) -> Result<()> {
        self.writable()?;
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        self.written.store(true, Ordering::Relaxed);
        self.db.write_opt(batch, &w)?;
        Ok(())
    }

    /// Writes each column family's entries of a bulk write into a table
    /// file (sorted, the last of equal keys kept), on two threads; returns
    /// the files, or the first error. `tag` tells apart the files of one
    /// trace.
    fn write_tables(
        &self,
        trace: TraceId,
        tag: usize,
        families: Vec<(&'static str, Run)>,
    ) -> Result<Vec<Table>> {
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
    fn ingest_files(&self, mut files: Vec<Table>) -> Result<()> {
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
    fn ingest(&self, trace: TraceId, families: Vec<(&'static str, Run)>) -> Result<()> {
        let files = self.write_tables(trace, 0, families)?;
        self.ingest_files(files)
    }

    /// Removes what a bulk write of `trace` ingested: its index entries
    /// (found from its records), its records and its mark. Values are
    /// shared by content and stay.
    fn forget_ingested(&self, trace: TraceId) -> Result<()> {
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
    fn clear_unfinished_ingests(&self) -> Result<()> {
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

    /// Adds to `batch` the deletion of a trace's index entries, found from
    /// its records (names, ids, categories, op names, value references);
    /// returns the hashes of its values.
    fn delete_index_entries(
        &self,
        view: &ReadView<'_>,
        trace: TraceId,
        batch: &mut WriteBatch,
    ) -> Result<std::collections::HashSet<[u8; 32]>> {
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
        let mut hashes = std::collections::HashSet::new();
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

    /// Bytes the database occupies on disk (all files under its folder).
    pub fn disk_bytes(&self) -> Result<u64> {
        dir_bytes(&self.path)
    }

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
    /// a few milliseconds, file names and bytes unchanged.
    ///
    /// Every import ends with a flush, and after importing some hundred
    /// traces a family's files are two or three in level 0 and none below.
    /// RocksDB then searches every one of them for a key, and an iterator
    /// seeks in each: a cold read of one trace opened the table file of
    /// each newer flush too (its tail, and without a filter a data block).
    /// Moved down, the files are one sorted run, and a read opens only the
    /// file that holds its key.
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
type FileRange<'a> = (i32, &'a [u8], &'a [u8]);

/// Whether a family's level-0 files can be moved down without rewriting,
/// and if so the key range to compact: there are at least two, no two
/// overlap, and none overlaps a file of another level. RocksDB then moves
/// each file to the level below as it is (a trivial move); overlapping
/// files would be merged and rewritten, which an import does not wait for.
fn level0_moves_down<'a>(files: &[FileRange<'a>]) -> Option<(&'a [u8], &'a [u8])> {
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
    bulk: Option<Vec<Run>>,
    /// What was finished: [`VARIABLES_DONE`], [`OPS_DONE`].
    finished: u8,
    /// Table files of finished families being written, each batch of them
    /// on a thread of its own, while the rest of the trace is added.
    early: Vec<std::thread::JoinHandle<Result<Vec<Table>>>>,
    /// Where records are encoded, reused from one to the next.
    scratch: Vec<u8>,
    /// The labels of the variables and ops added so far, stored at the
    /// commit; `None` once a table would reach 2 GiB of text (readers then
    /// make them from the records).
    labels: Option<TraceLabels>,
    /// Where a variable's full node id is made for its label.
    label_scratch: String,
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

impl<'s> TraceWriter<'s> {
    /// The id the trace will have.
    pub fn trace_id(&self) -> TraceId {
        self.trace
    }

    /// Keeps `digest` (see [`content_digest`]) as the digest of what the
    /// trace is imported from.
    pub fn set_content_digest(&mut self, digest: [u8; 32]) {
        self.content = Some(digest);
    }

    /// Keeps `requests` (the OTLP requests the trace is made from, as the
    /// importer encodes them) with the trace, written with its record and
    /// dropped with it; [`ReadView::otlp_requests`] reads them back.
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
            // Callers name families by the same constants: comparing where
            // the names are finds them without comparing their text (once
            // per entry, about a million times in a large import).
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
        let share: Vec<(&'static str, Run)> = BULK_FAMILIES
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
    /// labels and head.
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
    fn write_ahead(&mut self, share: Vec<(&'static str, Run)>) -> Result<()> {
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
    fn early_files(&mut self) -> Result<Vec<Table>> {
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
        if let Some(labels) = self.labels.as_mut() {
            if !labels.push_variable(v, &mut self.label_scratch) {
                self.labels = None;
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
        if let Some(labels) = self.labels.as_mut() {
            if !labels.ops.push_op(o) {
                self.labels = None;
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
            // labels and head are made.
            self.put_pending_values()?;
            self.finish_rest()?;
        }
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
        // The head: the record, and a small trace's names and adjacency,
        // for a query to read with one get (see `head`).
        let names = match &self.labels {
            Some(l) if self.counts.variables <= HEAD_VARS => HeadNames::new(
                (0..l.vars.len() as u32)
                    .map(|v| (l.vars.get(v).and_then(|[id, _]| id).unwrap_or(""), v)),
            ),
            _ => None,
        };
        let small = names
            .map(|n| (adjacency.encode_narrow(), n))
            .filter(|(a, n)| a.len() + n.bytes() <= HEAD_BYTES);
        let head = encode_head(&record, small.as_ref().map(|(a, n)| (n, a.as_slice())))?;
        self.put(cf::ADJACENCY, keys::head_key(t), head);
        if t < store.heads_from.load(Ordering::SeqCst) {
            self.put(cf::META, META_HEADS_FROM, t.to_be_bytes());
            // Before the trace can be seen: a view may then look for a head
            // that is not there yet, never skip one that is.
            store.heads_from.store(t, Ordering::SeqCst);
        }
        if let Some(mut labels) = self.labels.take() {
            labels.shrink_to_fit();
            self.put(cf::ADJACENCY, keys::labels_key(t), labels.encode());
        }
        self.put_pending_values()?;
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
        self.put(cf::TRACES, keys::trace_key(t), encode("trace", &record)?);
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
        let mut batch = std::mem::take(&mut self.batch);
        match self.bulk.take() {
            None => store.write(batch)?,
            Some(bulk) => {
                // The mark first, durably: a crash from here on is cleared
                // at the next open.
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
            }
        }
        Ok(Ok(t))
    }
}

/// A consistent snapshot of the store.
pub struct ReadView<'a> {
    store: &'a Store,
    snap: rocksdb::Snapshot<'a>,
}

type Pair = (Box<[u8]>, Box<[u8]>);

impl<'a> ReadView<'a> {
    /// Iterates the keys of column family `name` that start with `prefix`, in order.
    pub fn scan<'v>(
        &'v self,
        name: &str,
        prefix: &[u8],
    ) -> impl Iterator<Item = Result<Pair>> + 'v {
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
    /// [`TraceWriter::keep_otlp_requests`]), if it keeps them.
    pub fn otlp_requests(&self, trace: TraceId) -> Result<Option<Vec<u8>>> {
        self.get(cf::META, &otlp_key(trace))
    }

    /// The digest of what a trace was imported from ([`content_digest`]);
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

    /// A trace's labels (see [`TraceLabels`]), stored at its import; `None`
    /// for a trace stored before labels were.
    pub fn labels(&self, trace: TraceId) -> Result<Option<TraceLabels>> {
        self.trace_value(trace, &keys::labels_key(trace), TraceLabels::decode)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Common, Shared};

    fn trace_record(graph_id: &str) -> TraceRecord {
        TraceRecord {
            graph_id: graph_id.into(),
            user_id: Some("u".into()),
            project_id: None,
            created_at: None,
            header_json: "{}".into(),
            data_keys: vec![],
            data_extra: None,
            counts: Counts::default(),
            source: "test".into(),
            source_bytes: 0,
            format: "smartcomment".into(),
            imported_at_ms: 0,
        }
    }

    fn var(name: &str, version: u32, value: ValueRef) -> VarRecord {
        VarRecord {
            name: name.into(),
            class_name: Some("answer".into()),
            version,
            value: Some(value),
            comment: None,
            category: Some("answer".into()),
            session_id: Some("s".into()),
            session: Some(0),
            node_id: None,
            common: Common {
                graph_id: Shared::Same,
                ..Common::default()
            },
        }
    }

    thread_local! {
        /// The log size past which this thread's stores flush, when set.
        pub(super) static MAX_WAL: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
    }

    #[test]
    fn a_log_flushed_for_its_size_is_not_kept_alive_by_idle_families() {
        // Flushes for the logs' size while the families of attributions,
        // the LLM cache and patterns receive nothing; then a close.
        MAX_WAL.with(|m| m.set(Some(64 << 10)));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        MAX_WAL.with(|m| m.set(None));
        for i in 0..40u64 {
            // Values that do not compress away: the log grows by each.
            let value: String = (0..2000u64)
                .map(|j| {
                    format!(
                        "{:x}",
                        (j + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i + 1))
                    )
                })
                .collect();
            write_trace(&store, &format!("g{i}"), &value);
            if i == 19 {
                // One family flushed alone (as ingesting table files
                // flushes the family they go to): the log it leaves holds
                // the other families' records and outgrows the limit.
                store.db.flush_cf(store.cf(cf::VALUES)).unwrap();
            }
        }
        drop(store);
        let kept: Vec<(String, u64)> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().len(),
                )
            })
            .filter(|(_, len)| *len > 0)
            .collect();
        assert_eq!(kept, Vec::new(), "logs a reader would replay");
        let store = Store::open(
            &path,
            &StoreOptions {
                read_only: true,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        assert_eq!(store.read().traces().count(), 40);
    }

    fn write_trace(store: &Store, graph_id: &str, value: &str) -> TraceId {
        write_trace_again(store, graph_id, value, true)
    }

    /// `write_trace`, which with `refuse_duplicate` false may store a graph
    /// id stored already.
    fn write_trace_again(
        store: &Store,
        graph_id: &str,
        value: &str,
        refuse_duplicate: bool,
    ) -> TraceId {
        let mut w = store.begin_trace().unwrap();
        let s = SessionRecord {
            session_id: "s".into(),
            session_name: None,
            comment: None,
            category: Some("qa".into()),
            common: Common::default(),
        };
        w.put_session(&s).unwrap();
        let r = w.stage_value(value);
        let a = w.put_variable(&var("42", 1, r)).unwrap();
        let b = w.put_variable(&var("42", 2, r)).unwrap();
        let op = w
            .put_op(&OpRecord {
                op_id: "op-1".into(),
                op_name: Some("llm".into()),
                comment: None,
                category: Some("generation".into()),
                session_id: Some("s".into()),
                session: Some(0),
                common: Common::default(),
            })
            .unwrap();
        for i in 0..2 {
            w.put_edge(&EdgeRecord {
                edge_id: format!("edge-{i}"),
                op,
                source: a,
                target: b,
                session: 0,
                category: None,
                comment: None,
                common: Common::default(),
            })
            .unwrap();
        }
        w.commit(trace_record(graph_id), refuse_duplicate)
            .unwrap()
            .unwrap()
    }

    /// Puts a trace's records: two sessions, `n` variables in a chain
    /// (every third value shared), their ops and edges, and a case.
    fn fill(w: &mut TraceWriter<'_>, n: u32) {
        for s in ["s", "t"] {
            w.put_session(&SessionRecord {
                session_id: s.into(),
                session_name: Some(format!("session {s}")),
                comment: None,
                category: Some("qa".into()),
                common: Common::default(),
            })
            .unwrap();
        }
        for i in 0..n {
            let r = w.stage_value(&format!("value {}", i % 3 * i));
            w.put_variable(&var(&format!("v{}", i % 5), i + 1, r))
                .unwrap();
            w.put_op(&OpRecord {
                op_id: format!("op-{i}"),
                op_name: Some("llm".into()),
                comment: None,
                category: Some("generation".into()),
                session_id: Some("t".into()),
                session: Some(1),
                common: Common::default(),
            })
            .unwrap();
        }
        for i in 1..n {
            w.put_edge(&EdgeRecord {
                edge_id: format!("edge-{i}"),
                op: i,
                source: i - 1,
                target: i,
                session: 1,
                category: Some("flow".into()),
                comment: None,
                common: Common::default(),
            })
            .unwrap();
        }
        w.put_case(&CaseRecord {
            query: Some(n - 1),
            evidence: vec![0, 1],
            op: Some(2),
            json: "{}".into(),
        })
        .unwrap();
    }

    /// Everything a reader sees of one trace, trace ids left out.
    fn seen(view: &ReadView<'_>, t: TraceId) -> String {
        let all = |r: Vec<(TraceId, LocalId)>| -> Vec<LocalId> {
            r.into_iter()
                .filter(|(x, _)| *x == t)
                .map(|(_, l)| l)
                .collect()
        };
        let vars: Vec<_> = view.variables(t).map(|v| v.unwrap()).collect();
        let values: Vec<String> = vars
            .iter()
            .map(|(_, v)| view.value(v.value.as_ref().unwrap()).unwrap())
            .collect();
        let mut record = view.trace(t).unwrap().unwrap();
        record.imported_at_ms = 0;
        record.graph_id.clear();
        format!(
            "{record:?}\n{vars:?}\n{values:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            view.sessions(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
            view.ops(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
            view.edges(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
            view.cases(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
            view.adjacency(t).unwrap(),
            view.adjacency_blocks(t, true, &[0, 1], record.counts.variables, record.counts.edges)
                .unwrap(),
            view.versions("answer:v3", Some(t))
                .unwrap()
                .into_iter()
                .map(|(_, v, l)| (v, l))
                .collect::<Vec<_>>(),
            all(view.string_id(IdKind::Op, "op-7").unwrap()),
            all(view.by_category(RecordKind::Edge, "flow").unwrap()),
        )
    }

    #[test]
    fn a_run_sorts_its_entries_and_keeps_the_last_of_equal_keys() {
        let mut run = Run::default();
        let long = vec![7u8; OWNED_FROM + 5];
        run.push(b"b", vec![1u8]);
        run.push(b"a", long.clone());
        run.push(b"c", []);
        run.push(b"b", 2u32.to_be_bytes());
        run.push(b"a", vec![3u8]);
        assert_eq!(run.size(), 5 + 1 + long.len() as u64 + 4 + 1);
        let got: Vec<(Vec<u8>, Vec<u8>)> = run
            .sorted()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(
            got,
            [
                (b"a".to_vec(), vec![3]),
                (b"b".to_vec(), vec![0, 0, 0, 2]),
                (b"c".to_vec(), vec![])
            ]
        );
        // A long value is kept as handed over, and read back whole.
        let mut run = Run::default();
        run.push(b"k", long.clone());
        assert_eq!(run.owned.len(), 1);
        assert_eq!(run.sorted().next(), Some((&b"k"[..], &long[..])));
    }

    #[test]
    fn a_bulk_write_reads_back_as_a_batch_write_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let mut w = store.begin_trace().unwrap();
        assert!(w.bulk.is_none());
        fill(&mut w, 300);
        let batch = w.commit(trace_record("batch"), true).unwrap().unwrap();
        let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
        assert!(w.bulk.is_some());
        fill(&mut w, 300);
        let bulk = w.commit(trace_record("bulk"), true).unwrap().unwrap();
        // A second bulk write of the same graph id is refused, and leaves
        // nothing behind.
        let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
        fill(&mut w, 10);
        let refused = w.trace_id();
        assert_eq!(
            w.commit(trace_record("bulk"), true).unwrap(),
            Err(vec![bulk])
        );
        let view = store.read();
        assert_eq!(seen(&view, bulk), seen(&view, batch));
        assert_eq!(view.variables(refused).count(), 0);
        drop(view);
        assert!(
            !path.join(INGEST_DIR).exists()
                || path.join(INGEST_DIR).read_dir().unwrap().next().is_none()
        );
        drop(store);
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let view = store.read();
        assert_eq!(seen(&view, bulk), seen(&view, batch));
        // Dropping the bulk-written trace removes it as it removes any.
        drop(view);
        store.drop_trace(bulk, "test").unwrap();
        let view = store.read();
        assert!(view.trace(bulk).unwrap().is_none());
        assert_eq!(view.variables(bulk).count(), 0);
        assert_eq!(view.adjacency(bulk).unwrap(), None);
        assert!(view.trace(batch).unwrap().is_some());
    }

    #[test]
    fn finished_kinds_are_written_ahead_and_refuse_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let mut w = store.begin_trace().unwrap();
        fill(&mut w, 40);
        let batch = w.commit(trace_record("batch"), true).unwrap().unwrap();
        // In order, finishing variables and ops as an import does; a value
        // staged after the variables are finished is still stored.
        let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
        w.put_session(&SessionRecord {
            session_id: "s".into(),
            session_name: Some("session s".into()),
            comment: None,
            category: Some("qa".into()),
            common: Common::default(),
        })
        .unwrap();
        let mut vars = Vec::new();
        for i in 0..40u32 {
            let r = w.stage_value(&format!("value {}", i % 3 * i));
            vars.push(var(&format!("v{}", i % 5), i + 1, r));
        }
        for v in &vars {
            w.put_variable(v).unwrap();
        }
        w.finish_variables().unwrap();
        let late = w.stage_value("staged late");
        assert!(matches!(
            w.put_variable(&vars[0]),
            Err(StorageError::Finished("variables"))
        ));
        w.finish_ops().unwrap();
        assert!(matches!(
            w.put_op(&OpRecord {
                op_id: "x".into(),
                op_name: None,
                comment: None,
                category: None,
                session_id: None,
                session: None,
                common: Common::default(),
            }),
            Err(StorageError::Finished("ops"))
        ));
        let t = w.commit(trace_record("ahead"), true).unwrap().unwrap();
        let view = store.read();
        assert_eq!(view.variables(t).count(), 40);
        assert_eq!(view.value(&late).unwrap(), "staged late");
        assert_eq!(
            view.versions("answer:v3", Some(t)).unwrap(),
            view.versions("answer:v3", Some(batch))
                .unwrap()
                .into_iter()
                .map(|(_, v, l)| (t, v, l))
                .collect::<Vec<_>>()
        );
        drop(view);
        // A writer dropped after writing ahead leaves no table file.
        let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
        fill(&mut w, 20);
        w.finish_variables().unwrap();
        w.finish_ops().unwrap();
        drop(w);
        let left = path.join(INGEST_DIR);
        assert!(!left.exists() || left.read_dir().unwrap().next().is_none());
    }

    #[test]
    fn a_bulk_write_cut_short_is_cleared_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let kept = write_trace(&store, "kept", "x");
        let index_entries = |store: &Store| -> Vec<usize> {
            let view = store.read();
            [cf::VAR_NAME, cf::STRING_ID, cf::CATEGORY, cf::OP_NAME]
                .map(|name| view.count(name, &[]).unwrap())
                .to_vec()
        };
        let before = index_entries(&store);
        // What a crash between the ingest and the final batch leaves: the
        // mark, the ingested records and index entries, and a table file
        // not yet ingested.
        let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
        fill(&mut w, 50);
        let t = w.trace_id();
        let mut mark = WriteBatch::default();
        mark.put_cf(store.cf(cf::META), ingesting_key(t), []);
        store.write(mark).unwrap();
        let families = BULK_FAMILIES
            .into_iter()
            .zip(w.bulk.take().unwrap())
            .collect();
        store.ingest(t, families).unwrap();
        std::fs::write(path.join(INGEST_DIR).join("left.sst"), b"x").unwrap();
        drop(w);
        assert_eq!(store.read().variables(t).count(), 50);
        assert!(store.read().trace(t).unwrap().is_none());
        // Its index entries are there, and no reader sees them.
        assert_ne!(index_entries(&store), before);
        let view = store.read();
        assert!(!view.committed(t).unwrap());
        let not_t = |hits: Vec<(TraceId, LocalId)>| hits.iter().all(|h| h.0 != t);
        assert!(not_t(view.string_id(IdKind::Op, "op-7").unwrap()));
        assert!(not_t(view.string_id(IdKind::Session, "t").unwrap()));
        assert!(view
            .versions("answer:v3", None)
            .unwrap()
            .iter()
            .all(|h| h.0 != t));
        assert!(not_t(view.by_category(RecordKind::Edge, "flow").unwrap()));
        assert!(not_t(view.ops_named("llm").unwrap()));
        drop(view);
        drop(store);
        // A reader leaves it as it is (and sees no trace of it).
        let reader = Store::open(
            &path,
            &StoreOptions {
                read_only: true,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        assert_eq!(reader.read().traces().count(), 1);
        drop(reader);
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let view = store.read();
        assert_eq!(view.variables(t).count(), 0);
        assert_eq!(view.edges(t).count(), 0);
        assert_eq!(view.adjacency(t).unwrap(), None);
        assert!(store
            .db
            .get_cf(store.cf(cf::META), ingesting_key(t))
            .unwrap()
            .is_none());
        assert!(!path.join(INGEST_DIR).exists());
        assert!(view.trace(kept).unwrap().is_some());
        drop(view);
        assert_eq!(index_entries(&store), before, "its index entries are gone");
        // The id may be used again, by a trace of its own.
        let next = write_trace(&store, "next", "y");
        assert_eq!(store.read().variables(next).count(), 2);
    }

    #[test]
    fn a_content_digest_is_kept_with_its_trace_and_dropped_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let without = write_trace(&store, "g0", "x");
        let mut w = store.begin_trace().unwrap();
        let digest = content_digest(b"{\"graph_id\": \"g1\"}");
        assert_ne!(digest, content_digest(b"{\"graph_id\": \"g2\"}"));
        w.set_content_digest(digest);
        let with = w.commit(trace_record("g1"), true).unwrap().unwrap();
        let view = store.read();
        assert_eq!(view.content_digest(with).unwrap(), Some(digest));
        assert_eq!(view.content_digest(without).unwrap(), None);
        drop(view);
        store.drop_trace(with, "test").unwrap();
        assert_eq!(store.read().content_digest(with).unwrap(), None);
    }

    #[test]
    fn kept_otlp_requests_go_with_their_trace() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let without = write_trace(&store, "g0", "x");
        let mut w = store.begin_trace().unwrap();
        w.keep_otlp_requests(b"[{\"resourceSpans\": []}]".to_vec());
        let with = w.commit(trace_record("g1"), true).unwrap().unwrap();
        let view = store.read();
        assert_eq!(
            view.otlp_requests(with).unwrap().as_deref(),
            Some(&b"[{\"resourceSpans\": []}]"[..])
        );
        assert_eq!(view.otlp_requests(without).unwrap(), None);
        drop(view);
        store.drop_trace(with, "test").unwrap();
        assert_eq!(store.read().otlp_requests(with).unwrap(), None);
    }

    #[test]
    fn superseding_moves_the_records_and_drops_the_old_trace_in_one_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let old = write_trace(&store, "g", "shared");
        let record = |at_ms, json: &str| AttributionRecord {
            at_ms,
            json: json.into(),
        };
        store
            .append_attributions(old, &[record(10, "verdict"), record(20, "label")])
            .unwrap();
        let new = write_trace_again(&store, "g", "shared", false);
        store
            .append_attributions(new, &[record(30, "own")])
            .unwrap();
        let before = store.read();
        let (dropped, moved) = store.supersede(old, new, "superseded").unwrap();
        assert_eq!((dropped.graph_id.as_str(), moved), ("g", 2));
        // A view taken before sees the old trace whole, with its records.
        assert_eq!(before.attributions(old).count(), 2);
        assert!(before.trace(old).unwrap().is_some());
        drop(before);
        let view = store.read();
        assert!(view.trace(old).unwrap().is_none());
        assert_eq!(view.attributions(old).count(), 0);
        let moved: Vec<(u64, AttributionRecord)> =
            view.attributions(new).map(|r| r.unwrap()).collect();
        assert_eq!(
            moved,
            vec![
                (1, record(30, "own")),
                (2, record(10, "verdict")),
                (3, record(20, "label"))
            ]
        );
        // The values the new trace shares stay; the graph id names it alone.
        assert_eq!(view.variables(new).count(), 2);
        assert!(view
            .value(
                &view
                    .variables(new)
                    .next()
                    .unwrap()
                    .unwrap()
                    .1
                    .value
                    .unwrap()
            )
            .is_ok());
        assert_eq!(view.traces_with_graph_id("g").unwrap(), vec![new]);
        let last = view.log().last().unwrap().unwrap().1;
        assert_eq!(
            (last.action.as_str(), last.trace, last.detail.as_str()),
            ("drop", old, "superseded")
        );
        drop(view);
        // Nothing is written when either trace is missing.
        assert!(matches!(
            store.supersede(old, new, "again"),
            Err(StorageError::NoSuchTrace(t)) if t == old
        ));
        assert!(matches!(
            store.supersede(new, old, "backwards"),
            Err(StorageError::NoSuchTrace(t)) if t == old
        ));
        assert_eq!(store.read().attributions(new).count(), 3);
    }

    #[test]
    fn a_trace_reads_back_with_its_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let t = write_trace(&store, "g1", "hello");
        let view = store.read();
        let rec = view.trace(t).unwrap().unwrap();
        assert_eq!(
            rec.counts,
            Counts {
                sessions: 1,
                variables: 2,
                ops: 1,
                edges: 2,
                cases: 0
            }
        );
        assert_eq!(
            view.versions("answer:42", None).unwrap(),
            vec![(t, 1, 0), (t, 2, 1)]
        );
        assert_eq!(view.string_id(IdKind::Op, "op-1").unwrap(), vec![(t, 0)]);
        assert_eq!(
            view.adjacent(t, 0, true).unwrap(),
            vec![(0, 1, 0), (1, 1, 0)]
        );
        assert_eq!(view.adjacent(t, 1, false).unwrap().len(), 2);
        assert_eq!(
            view.by_category(RecordKind::Op, "generation").unwrap(),
            vec![(t, 0)]
        );
        assert_eq!(view.ops_named("llm").unwrap(), vec![(t, 0)]);
        let v = view.variable(t, 1).unwrap().unwrap();
        assert_eq!(view.value(&v.value.unwrap()).unwrap(), "hello");
        assert_eq!(
            view.count(cf::VALUES, &[]).unwrap(),
            1,
            "one value stored once"
        );
    }

    #[test]
    fn adjacency_is_one_value_per_trace_and_version_1_indexes_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let before = write_trace(&store, "g0", "x");
        let mut w = store.begin_trace().unwrap();
        let r = w.stage_value("v");
        for version in 1..=3 {
            w.put_variable(&var("7", version, r)).unwrap();
        }
        let op = w
            .put_op(&OpRecord {
                op_id: "op-x".into(),
                op_name: None,
                comment: None,
                category: None,
                session_id: None,
                session: None,
                common: Common::default(),
            })
            .unwrap();
        // Recorded out of variable order, with a self-loop and parallel edges.
        for (source, target) in [(2, 0), (0, 1), (1, 1), (0, 1)] {
            let n = w.counts().edges;
            w.put_edge(&EdgeRecord {
                edge_id: format!("edge-x{n}"),
                op,
                source,
                target,
                session: 0,
                category: None,
                comment: None,
                common: Common::default(),
            })
            .unwrap();
        }
        let t = w.commit(trace_record("gx"), true).unwrap().unwrap();
        let after = write_trace(&store, "g2", "y");
        // (var, edge, other end, op), ordered by variable, then edge.
        let want = vec![(0, 1, 1, 0), (0, 3, 1, 0), (1, 2, 1, 0), (2, 0, 0, 0)];
        let per_var = |v: u32| -> Vec<(u32, u32, u32)> {
            want.iter()
                .filter(|e| e.0 == v)
                .map(|&(_, e, o, op)| (e, o, op))
                .collect()
        };
        {
            let view = store.read();
            let adj = view.adjacency(t).unwrap().unwrap();
            assert_eq!((adj.vars, adj.ops, adj.edges()), (3, 1, 4));
            assert_eq!(adj.out_edges, vec![1, 3, 2, 0]);
            for v in 0..3 {
                assert_eq!(view.adjacent(t, v, true).unwrap(), per_var(v));
            }
            for other in [before, after] {
                assert_eq!(view.adjacency(other).unwrap().unwrap().edges(), 2);
            }
            assert_eq!(view.adjacency(after + 1).unwrap(), None);
            // Beside the value, each direction's rows in blocks.
            for backward in [true, false] {
                let got = view.adjacency_blocks(t, backward, &[0, 1], 3, 4).unwrap();
                assert_eq!(got, vec![Some(adj.blocks(backward)[0].clone()), None]);
            }
            assert!(
                view.adjacency_blocks(t, true, &[0], 3, 2).is_err(),
                "checked against the counts"
            );
            // Nothing is written to the version-1 indexes any more.
            assert_eq!(view.adjacency_out(t).count(), 0);
        }
        // The same trace as schema version 1 stored it: index entries, no value.
        let mut batch = WriteBatch::default();
        batch.delete_cf(store.cf(cf::ADJACENCY), keys::trace_key(t));
        for &(var, edge, other, op) in &want {
            batch.put_cf(
                store.cf(cf::ADJ_OUT),
                keys::adjacency_key(t, var, edge),
                keys::adjacency_value(other, op),
            );
            batch.put_cf(
                store.cf(cf::ADJ_IN),
                keys::adjacency_key(t, other, edge),
                keys::adjacency_value(var, op),
            );
        }
        store.write(batch).unwrap();
        let view = store.read();
        assert_eq!(view.adjacency(t).unwrap(), None);
        let got: Vec<_> = view.adjacency_out(t).map(|r| r.unwrap()).collect();
        assert_eq!(got, want);
        for v in 0..3 {
            assert_eq!(view.adjacent(t, v, true).unwrap(), per_var(v));
        }
        assert_eq!(
            view.adjacent(t, 1, false).unwrap(),
            vec![(1, 0, 0), (2, 1, 0), (3, 0, 0)]
        );
    }

    #[test]
    fn duplicates_are_refused_and_uncommitted_writers_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let t = write_trace(&store, "g1", "x");
        let mut w = store.begin_trace().unwrap();
        w.put_session(&SessionRecord {
            session_id: "s".into(),
            session_name: None,
            comment: None,
            category: None,
            common: Common::default(),
        })
        .unwrap();
        assert_eq!(w.commit(trace_record("g1"), true).unwrap(), Err(vec![t]));
        let mut w = store.begin_trace().unwrap();
        w.put_session(&SessionRecord {
            session_id: "zz".into(),
            session_name: None,
            comment: None,
            category: None,
            common: Common::default(),
        })
        .unwrap();
        drop(w);
        let view = store.read();
        assert_eq!(view.traces().count(), 1);
        assert!(view.string_id(IdKind::Session, "zz").unwrap().is_empty());
    }

    /// The size of the filter blocks of a family's table files, summed, from
    /// RocksDB's aggregated table properties.
    fn filter_bytes(store: &Store, name: &str) -> u64 {
        let props = store
            .db
            .property_value_cf(store.cf(name), "rocksdb.aggregated-table-properties")
            .unwrap()
            .unwrap();
        props
            .split(';')
            .find_map(|p| p.trim().strip_prefix("filter block size="))
            .unwrap_or_else(|| panic!("no filter size in {props}"))
            .trim()
            .parse()
            .unwrap()
    }

    /// Files of family `name` per level, 0 to 6.
    fn files_per_level(store: &Store, name: &str) -> Vec<u64> {
        (0..7)
            .map(|l| {
                let p = format!("rocksdb.num-files-at-level{l}");
                store
                    .db
                    .property_int_value_cf(store.cf(name), &p)
                    .unwrap()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn point_read_families_have_filters_and_flushes_leave_no_level0_run() {
        // Two flushes of traces in turn: two table files per family that
        // do not overlap, as an import of some hundred traces leaves them.
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let a = write_trace(&store, "g1", "x");
        store.flush().unwrap();
        let b = write_trace(&store, "g2", "y");
        store.flush().unwrap();
        for name in [cf::ADJACENCY, cf::TRACES, cf::VARIABLES] {
            let levels = files_per_level(&store, name);
            // Moved out of level 0 as they were: two files still, not one
            // merged file.
            assert_eq!(levels[0], 0, "{name}: {levels:?}");
            assert_eq!(levels.iter().sum::<u64>(), 2, "{name}: {levels:?}");
        }
        for name in [cf::ADJACENCY, cf::TRACES] {
            assert!(filter_bytes(&store, name) > 0, "{name}");
        }
        // A family read by prefix scans keeps no filter.
        assert_eq!(filter_bytes(&store, cf::VARIABLES), 0);
        // Files of the name index overlap (every flush holds names from a
        // to z): they stay in level 0 for RocksDB's own compactions.
        assert_eq!(files_per_level(&store, cf::STRING_ID)[0], 2);
        let view = store.read();
        for t in [a, b] {
            assert!(view.head(t).unwrap().is_some());
        }
        drop(view);
        drop(store);
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        assert_eq!(store.read().traces().count(), 2);
    }

    #[test]
    fn flushed_files_are_not_rewritten_for_their_sequence_numbers() {
        // A flush's files are the families' only ones, then moved down
        // whole: in the last level, with sequence numbers no snapshot
        // needs, RocksDB would by default rewrite each of them once more.
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        write_trace(&store, "g1", "x");
        store.flush().unwrap();
        write_trace(&store, "g2", "y");
        store.flush().unwrap();
        // A rewrite is a new file (a new number) in place of the old.
        let names = |store: &Store| {
            let mut files: Vec<(String, String)> = store
                .db
                .live_files()
                .unwrap()
                .into_iter()
                .map(|f| (f.column_family_name, f.name))
                .collect();
            files.sort();
            files
        };
        let before = names(&store);
        assert!(before.iter().any(|(cf, _)| cf == cf::ADJACENCY));
        store
            .db
            .wait_for_compact(&rocksdb::WaitForCompactOptions::default())
            .unwrap();
        assert_eq!(before, names(&store));
        let view = store.read();
        assert_eq!(view.traces().count(), 2);
    }

    #[test]
    fn level0_moves_down_only_without_rewriting() {
        let f = |l: i32, a: &'static str, b: &'static str| (l, a.as_bytes(), b.as_bytes());
        // Two disjoint files, nothing below: the range of both.
        assert_eq!(
            level0_moves_down(&[f(0, "m", "p"), f(0, "a", "c")]),
            Some((&b"a"[..], &b"p"[..]))
        );
        // Files below outside that range do not stop it.
        assert_eq!(
            level0_moves_down(&[
                f(0, "d", "e"),
                f(0, "f", "g"),
                f(6, "a", "c"),
                f(5, "h", "z")
            ]),
            Some((&b"d"[..], &b"g"[..]))
        );
        // One file: nothing to gain.
        assert_eq!(level0_moves_down(&[f(0, "a", "c"), f(6, "d", "e")]), None);
        // Overlapping files, or sharing a key, would be merged.
        assert_eq!(level0_moves_down(&[f(0, "a", "f"), f(0, "e", "g")]), None);
        assert_eq!(level0_moves_down(&[f(0, "a", "e"), f(0, "e", "g")]), None);
        // A file below inside the range would be rewritten with them.
        assert_eq!(
            level0_moves_down(&[f(0, "a", "b"), f(0, "x", "y"), f(6, "m", "n")]),
            None
        );
        assert_eq!(
            level0_moves_down(&[f(0, "c", "d"), f(0, "x", "y"), f(6, "a", "c")]),
            None
        );
        assert_eq!(level0_moves_down(&[]), None);
    }

    #[test]
    fn dropping_keeps_shared_values_and_removes_everything_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let a = write_trace(&store, "g1", "shared");
        let b = write_trace(&store, "g2", "shared");
        let c = write_trace(&store, "g3", "own");
        store.drop_trace(a, "test").unwrap();
        store.drop_trace(c, "test").unwrap();
        let view = store.read();
        assert_eq!(
            view.traces().map(|r| r.unwrap().0).collect::<Vec<_>>(),
            vec![b]
        );
        assert_eq!(view.count(cf::VALUES, &[]).unwrap(), 1);
        // The adjacency value and its blocks go with the trace.
        for t in [a, c] {
            assert_eq!(view.count(cf::ADJACENCY, &keys::trace_key(t)).unwrap(), 0);
        }
        assert!(view.count(cf::ADJACENCY, &keys::trace_key(b)).unwrap() >= 3);
        assert_eq!(view.versions("answer:42", None).unwrap().len(), 2);
        for name in [cf::CATEGORY, cf::OP_NAME, cf::STRING_ID] {
            assert!(view.scan(name, &[]).all(|i| {
                let (k, _) = i.unwrap();
                !k.windows(4).any(|w| w == a.to_be_bytes())
                    || k.windows(4).any(|w| w == b.to_be_bytes())
            }));
        }
        assert_eq!(
            view.count(cf::STRING_ID, &[]).unwrap(),
            5,
            "session, op, two edges, graph of the one trace left"
        );
        let log: Vec<_> = view.log().map(|e| e.unwrap().1.action).collect();
        assert_eq!(log, vec!["import", "import", "import", "drop", "drop"]);
        assert!(matches!(
            store.drop_trace(a, "again"),
            Err(StorageError::NoSuchTrace(_))
        ));
    }

    #[test]
    fn ids_survive_reopen_and_are_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let first = {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            let t = write_trace(&store, "g1", "x");
            store.drop_trace(t, "test").unwrap();
            t
        };
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert!(write_trace(&store, "g1", "x") > first);
        assert_eq!(store.read().log().count(), 3);
    }

    #[test]
    fn a_database_held_open_elsewhere_is_named_as_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let _held = Store::open(&path, &StoreOptions::default()).unwrap();
        match Store::open(&path, &StoreOptions::default()) {
            Err(StorageError::InUse(p)) => assert_eq!(p, path.display().to_string()),
            other => panic!("expected InUse, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn open_refuses_what_is_not_ours() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        assert!(matches!(
            Store::open(&file, &StoreOptions::default()),
            Err(StorageError::NotADatabase { .. })
        ));
        let missing = dir.path().join("missing");
        assert!(matches!(
            Store::open(
                &missing,
                &StoreOptions {
                    create: false,
                    ..StoreOptions::default()
                }
            ),
            Err(StorageError::Missing(_))
        ));
        let foreign = dir.path().join("foreign");
        DB::open_default(&foreign).unwrap();
        assert!(matches!(
            Store::open(&foreign, &StoreOptions::default()),
            Err(StorageError::NotADatabase { .. })
        ));
    }

    #[test]
    fn creation_is_atomic_and_cleans_up_after_killed_creations() {
        let dir = tempfile::tempdir().unwrap();
        // What a creation killed before its rename leaves: a staging folder
        // of a process that no longer runs.
        let stale = dir.path().join(".db.creating-4294967");
        std::fs::create_dir_all(&stale).unwrap();
        std::fs::write(stale.join("CURRENT"), b"half made").unwrap();
        let path = dir.path().join("db");
        assert!(matches!(
            Store::open(
                &path,
                &StoreOptions {
                    create: false,
                    ..StoreOptions::default()
                }
            ),
            Err(StorageError::Missing(_))
        ));
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        drop(store);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec!["db".to_string()]);
        Store::open(
            &path,
            &StoreOptions {
                create: false,
                ..StoreOptions::default()
            },
        )
        .unwrap();
        // An empty folder where the database goes is fine.
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        Store::open(&empty, &StoreOptions::default()).unwrap();
    }

    #[test]
    fn attributions_append_in_order_and_go_with_their_trace() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let a = write_trace(&store, "g-a", "x");
        let b = write_trace(&store, "g-b", "y");
        let rec = |n: u64| AttributionRecord {
            at_ms: n,
            json: format!("{{\"n\":{n}}}"),
        };
        assert_eq!(
            store.append_attributions(a, &[rec(1), rec(2)]).unwrap(),
            [1, 2]
        );
        assert_eq!(store.append_attributions(b, &[rec(3)]).unwrap(), [1]);
        assert_eq!(store.append_attributions(a, &[rec(4)]).unwrap(), [3]);
        let read: Vec<(u64, u64)> = store
            .read()
            .attributions(a)
            .map(|r| r.map(|(seq, rec)| (seq, rec.at_ms)).unwrap())
            .collect();
        assert_eq!(read, [(1, 1), (2, 2), (3, 4)]);
        assert!(matches!(
            store.append_attributions(99, &[rec(5)]),
            Err(StorageError::NoSuchTrace(99))
        ));
        store.drop_trace(a, "test").unwrap();
        assert_eq!(store.read().attributions(a).count(), 0);
        assert_eq!(store.read().attributions(b).count(), 1);
    }

    #[test]
    fn a_database_made_before_attributions_gains_their_column_family() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let mut store = Store::open(&path, &StoreOptions::default()).unwrap();
            write_trace(&store, "g-old", "x");
            Arc::get_mut(&mut store.db)
                .unwrap()
                .drop_cf(cf::ATTRIBUTIONS)
                .unwrap();
            Arc::get_mut(&mut store.db)
                .unwrap()
                .drop_cf(cf::LLM_CACHE)
                .unwrap();
            Arc::get_mut(&mut store.db)
                .unwrap()
                .drop_cf(cf::PATTERNS)
                .unwrap();
        }
        assert!(!DB::list_cf(&base_options(), &path)
            .unwrap()
            .iter()
            .any(|c| c == cf::ATTRIBUTIONS || c == cf::LLM_CACHE || c == cf::PATTERNS));
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert_eq!(store.read().traces().count(), 1);
        let t = store.read().traces_with_graph_id("g-old").unwrap()[0];
        let rec = AttributionRecord {
            at_ms: 1,
            json: "{}".into(),
        };
        assert_eq!(store.append_attributions(t, &[rec]).unwrap(), [1]);
        store.cache_answer(&[7; 32], b"{}").unwrap();
        assert_eq!(
            store.cached_answer(&[7; 32]).unwrap().as_deref(),
            Some(&b"{}"[..])
        );
    }

    #[test]
    fn pattern_records_append_in_order_and_outlive_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let rec = |name: &str, json: &str| PatternRecord {
            at_ms: 5,
            name: name.into(),
            json: json.into(),
        };
        {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            assert_eq!(store.read().pattern_records().count(), 0);
            assert_eq!(store.append_pattern(&rec("a", "1")).unwrap(), 1);
            assert_eq!(store.append_pattern(&rec("b", "2")).unwrap(), 2);
            assert_eq!(store.append_pattern(&rec("a", "3")).unwrap(), 3);
        }
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let all: Vec<(u64, PatternRecord)> = store
            .read()
            .pattern_records()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            all,
            vec![(1, rec("a", "1")), (2, rec("b", "2")), (3, rec("a", "3"))]
        );
        assert_eq!(store.append_pattern(&rec("c", "4")).unwrap(), 4);
    }

    #[test]
    fn heads_are_read_for_the_traces_stored_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let old;
        {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            old = write_trace(&store, "old", "v");
            let view = store.read();
            let head = view.head(old).unwrap().expect("stored with its trace");
            assert_eq!(Some(head.record), view.trace(old).unwrap());
            let names = head.names.expect("a small trace's names");
            assert_eq!(names.latest("answer:42"), Some((2, 1)));
            assert_eq!(
                head.adjacency.map(|a| a.decode().unwrap()),
                view.adjacency(old).unwrap()
            );
            // As a database from before heads: no mark, no head.
            let mut batch = WriteBatch::default();
            batch.delete_cf(store.cf(cf::META), META_HEADS_FROM);
            batch.delete_cf(store.cf(cf::ADJACENCY), keys::head_key(old));
            store.write(batch).unwrap();
        }
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert_eq!(store.read().head(old).unwrap(), None);
        // A trace stored now has its head, and marks where heads start.
        let new = write_trace(&store, "new", "w");
        assert!(store.read().head(new).unwrap().is_some());
        drop(store);
        let reading = StoreOptions {
            read_only: true,
            ..StoreOptions::default()
        };
        let store = Store::open(&path, &reading).unwrap();
        assert_eq!(store.heads_from.load(Ordering::SeqCst), new);
        let view = store.read();
        assert!(view.head(new).unwrap().is_some());
        assert_eq!(view.head(old).unwrap(), None);
        assert_eq!(
            view.versions_in("answer:42", new).unwrap(),
            vec![(1, 0), (2, 1)]
        );
    }

    #[test]
    fn a_version_in_a_trace_is_found_by_one_get_as_the_scan_finds_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let a = write_trace(&store, "g1", "x");
        let b = write_trace(&store, "g2", "y");
        let view = store.read();
        for t in [a, b] {
            for (version, var) in view.versions_in("answer:42", t).unwrap() {
                assert_eq!(view.version_in("answer:42", t, version).unwrap(), Some(var));
            }
            assert_eq!(view.version_in("answer:42", t, 3).unwrap(), None);
            assert_eq!(view.version_in("answer:4", t, 1).unwrap(), None);
        }
        assert_eq!(view.version_in("answer:42", b + 1, 1).unwrap(), None);
        // An entry that is not a variable is an error naming it.
        let mut batch = WriteBatch::default();
        batch.put_cf(
            store.cf(cf::VAR_NAME),
            keys::name_key("answer:42", a, 7),
            b"xy",
        );
        store.write(batch).unwrap();
        let err = store
            .read()
            .version_in("answer:42", a, 7)
            .unwrap_err()
            .to_string();
        assert!(err.contains("answer:42@7"), "{err}");
    }

    #[test]
    fn a_head_holds_no_names_past_its_byte_budget() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        let mut w = store.begin_trace().unwrap();
        let r = w.stage_value("v");
        for i in 0..3 {
            // Three node ids of 100 KB: few variables, but past the budget.
            let name = format!("{i}{}", "n".repeat(100_000));
            w.put_variable(&var(&name, 1, r)).unwrap();
        }
        let t = w.commit(trace_record("long"), true).unwrap().unwrap();
        let head = store.read().head(t).unwrap().expect("a head");
        assert_eq!(head.record.counts.variables, 3);
        assert_eq!((head.names, head.adjacency), (None, None));
    }

    #[test]
    fn cached_answers_are_found_by_their_key_and_outlive_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            assert_eq!(store.cached_answer(&[1; 32]).unwrap(), None);
            store.cache_answer(&[1; 32], b"first").unwrap();
            store.cache_answer(&[2; 32], b"second").unwrap();
            store.cache_answer(&[1; 32], b"first").unwrap();
        }
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert_eq!(
            store.cached_answer(&[1; 32]).unwrap().as_deref(),
            Some(&b"first"[..])
        );
        assert_eq!(
            store.cached_answer(&[2; 32]).unwrap().as_deref(),
            Some(&b"second"[..])
        );
        assert_eq!(store.cached_answer(&[3; 32]).unwrap(), None);
    }

    #[test]
    fn graph_ids_starting_with_a_hash_are_tracked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            assert!(!store.read().hash_graph_ids_possible().unwrap());
            write_trace(&store, "plain", "v");
            assert!(!store.read().hash_graph_ids_possible().unwrap());
            write_trace(&store, "#1", "v");
            assert!(store.read().hash_graph_ids_possible().unwrap());
        }
        // A database from before the tracking: readers cannot tell, and
        // the first writing open looks at the stored graph ids once.
        for (graph_id, expected) in [("#9", true), ("nine", false)] {
            let path = dir.path().join(format!("old-{graph_id}"));
            {
                let store = Store::open(&path, &StoreOptions::default()).unwrap();
                write_trace(&store, graph_id, "v");
                let meta = store.cf(cf::META);
                store.db.delete_cf(meta, META_HASH_IDS_TRACKED).unwrap();
                store.db.delete_cf(meta, META_HASH_GRAPH_IDS).unwrap();
            }
            let reader = StoreOptions {
                read_only: true,
                ..StoreOptions::default()
            };
            let store = Store::open(&path, &reader).unwrap();
            assert!(store.read().hash_graph_ids_possible().unwrap());
            drop(store);
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            assert_eq!(
                store.read().hash_graph_ids_possible().unwrap(),
                expected,
                "{graph_id}"
            );
        }
    }

    #[test]
    fn an_unknown_schema_version_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            store
                .db
                .put_cf(store.cf(cf::META), META_SCHEMA, 99u32.to_be_bytes())
                .unwrap();
        }
        let err = Store::open(&path, &StoreOptions::default()).unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::SchemaVersion {
                    found: 99,
                    supported: SCHEMA_VERSION,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("schema version 99"));
    }

    #[test]
    fn the_lock_is_seen_held_while_a_writer_is_open_and_stays_held() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        assert!(!lock_held(&path), "no database, no lock");
        let writer = Store::open(&path, &StoreOptions::default()).unwrap();
        assert!(lock_held(&path));
        // Looking did not release it: a second writer is still refused.
        assert!(lock_held(&path));
        assert!(matches!(
            Store::open(&path, &StoreOptions::default()),
            Err(StorageError::InUse(_))
        ));
        drop(writer);
        assert!(!lock_held(&path));
    }

    /// The other process of
    /// `a_writer_in_another_process_is_seen_and_keeps_its_lock`: opens the
    /// database at `MEMTRACE_TEST_HOLD` to write, creates the file at
    /// `MEMTRACE_TEST_READY`, and holds the database until its standard
    /// input closes. Without those variables (a plain `--ignored` run) it
    /// does nothing.
    #[test]
    #[ignore = "run by another test, in a process of its own"]
    fn hold_a_database_open_to_write() {
        use std::io::Read;
        let (Some(path), Some(ready)) = (
            std::env::var_os("MEMTRACE_TEST_HOLD"),
            std::env::var_os("MEMTRACE_TEST_READY"),
        ) else {
            return;
        };
        let _writer = Store::open(Path::new(&path), &StoreOptions::default()).unwrap();
        std::fs::write(ready, b"").unwrap();
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
    }

    #[test]
    fn a_writer_in_another_process_is_seen_and_keeps_its_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        drop(Store::open(&path, &StoreOptions::default()).unwrap());
        assert!(!lock_held(&path), "closed: no lock");
        let ready = dir.path().join("ready");
        let mut other = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "store::tests::hold_a_database_open_to_write",
                "--ignored",
                "--test-threads=1",
            ])
            .env("MEMTRACE_TEST_HOLD", &path)
            .env("MEMTRACE_TEST_READY", &ready)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let waited = std::time::Instant::now();
        while !ready.exists() {
            assert!(
                waited.elapsed() < std::time::Duration::from_secs(60),
                "the other process did not open the database"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(lock_held(&path), "the other process's lock is seen");
        // Asking released nothing: a writer here is still refused.
        assert!(lock_held(&path));
        assert!(matches!(
            Store::open(&path, &StoreOptions::default()),
            Err(StorageError::InUse(_))
        ));
        let reader = StoreOptions {
            read_only: true,
            ..StoreOptions::default()
        };
        assert!(Store::open(&path, &reader).unwrap().is_read_only());
        drop(other.stdin.take());
        assert!(other.wait().unwrap().success());
        assert!(!lock_held(&path), "the other process closed it");
    }

    #[test]
    fn readers_open_beside_a_writer_see_what_was_committed_and_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let reader = StoreOptions {
            read_only: true,
            ..StoreOptions::default()
        };
        assert!(matches!(
            Store::open(&path, &reader),
            Err(StorageError::Missing(_))
        ));
        let writer = Store::open(&path, &StoreOptions::default()).unwrap();
        let first = write_trace(&writer, "g1", "x");
        // The writer holds the lock; readers open anyway, as many as wanted.
        let r1 = Store::open(&path, &reader).unwrap();
        let r2 = Store::open(&path, &reader).unwrap();
        assert!(r1.is_read_only() && !writer.is_read_only());
        let second = write_trace(&writer, "g2", "y");
        for r in [&r1, &r2] {
            let view = r.read();
            assert_eq!(view.trace(first).unwrap().unwrap().graph_id, "g1");
            assert!(view.adjacency(first).unwrap().is_some());
            // Committed after it opened: not seen.
            assert!(view.trace(second).unwrap().is_none());
        }
        assert!(matches!(r1.begin_trace(), Err(StorageError::ReadOnly(_))));
        assert!(matches!(
            r1.cache_answer(&[1; 32], b"x"),
            Err(StorageError::ReadOnly(_))
        ));
        assert!(matches!(
            r1.drop_trace(first, "no"),
            Err(StorageError::ReadOnly(_))
        ));
        let msg = r1.begin_trace().err().unwrap().to_string();
        assert!(msg.contains("reading only"), "{msg}");
        drop((r1, r2));
        // A reader opened later sees the second trace.
        let r3 = Store::open(&path, &reader).unwrap();
        assert!(r3.read().trace(second).unwrap().is_some());
    }

    #[test]
    fn a_reader_of_a_version_1_database_upgrades_it_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        {
            let mut store = Store::open(&path, &StoreOptions::default()).unwrap();
            write_trace(&store, "g-old", "x");
            store
                .db
                .put_cf(store.cf(cf::META), META_SCHEMA, 1u32.to_be_bytes())
                .unwrap();
            Arc::get_mut(&mut store.db)
                .unwrap()
                .drop_cf(cf::ADJACENCY)
                .unwrap();
        }
        let reader = StoreOptions {
            read_only: true,
            ..StoreOptions::default()
        };
        let store = Store::open(&path, &reader).unwrap();
        assert!(store.is_read_only());
        let found = store.db.get_cf(store.cf(cf::META), META_SCHEMA).unwrap();
        assert_eq!(found.as_deref(), Some(&SCHEMA_VERSION.to_be_bytes()[..]));
        assert_eq!(store.read().traces().count(), 1);
    }

    #[test]
    fn a_version_1_database_opens_and_is_recorded_as_the_current_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let t = {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            let t = write_trace(&store, "g1", "x");
            store
                .db
                .put_cf(store.cf(cf::META), META_SCHEMA, 1u32.to_be_bytes())
                .unwrap();
            t
        };
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let found = store.db.get_cf(store.cf(cf::META), META_SCHEMA).unwrap();
        assert_eq!(found.as_deref(), Some(&SCHEMA_VERSION.to_be_bytes()[..]));
        assert_eq!(store.read().trace(t).unwrap().unwrap().graph_id, "g1");
    }

    #[test]
    fn a_digest_in_pieces_is_the_digest_of_the_whole() {
        let text: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let whole = content_digest(&text);
        assert_eq!(content_digest_pieces(text.chunks(7919)), whole);
        assert_eq!(content_digest_pieces([&text[..]]), whole);
        assert_eq!(
            content_digest_pieces(std::iter::empty()),
            content_digest(b"")
        );
    }

    #[test]
    fn a_snapshot_does_not_see_a_later_commit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
        write_trace(&store, "g1", "x");
        let before = store.read();
        write_trace(&store, "g2", "y");
        assert_eq!(before.traces().count(), 1);
        assert_eq!(store.read().traces().count(), 2);
    }
}
