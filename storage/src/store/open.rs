//! The store itself: what an open store holds, and opening it (with the
//! schema check and the upgrades an older database needs).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rocksdb::{
    Cache, ColumnFamily, ColumnFamilyDescriptor, IteratorMode, Options, WriteBatch, WriteOptions,
    DB,
};

use super::cf;
use super::create::create_new;
use super::io::{dir_bytes, io_err};
use super::lock::{lock_held, writing, writing_key, WriterMark};
use super::options::{base_options, cf_options, writer_options, BLOCK_CACHE_BYTES};
use super::readers::{reader_open_files, Pinning, ReadersLock, READER_WAITS, WRITER_WAITS};
use super::schema::{
    META_HASH_GRAPH_IDS, META_HASH_IDS_TRACKED, META_HEADS_FROM, META_NEXT_TRACE, META_SCHEMA,
    OLDEST_SCHEMA_VERSION, SCHEMA_VERSION,
};
use crate::error::StorageError;
use crate::ids::Result;
use crate::keys::{self, IdKind};

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
    pub(super) db: Arc<DB>,
    /// A reader's thread that opens the table files of its snapshot (see
    /// [`Store::open`]).
    pub(super) pinning: Option<Pinning>,
    pub(super) path: PathBuf,
    /// The block cache every column family shares (its options are those
    /// of the table files a bulk write makes).
    pub(super) cache: Cache,
    pub(super) write_lock: Mutex<()>,
    pub(super) next_trace: AtomicU32,
    pub(super) next_log: AtomicU64,
    pub(super) sync: bool,
    /// Whether anything was written since open (then closing flushes).
    pub(super) written: AtomicBool,
    pub(super) read_only: bool,
    /// Whether some stored graph id may start with `#` (see
    /// [`ReadView::hash_graph_ids_possible`](super::ReadView::hash_graph_ids_possible)): read at open, set before a
    /// commit stores such a graph id, so that a query naming a trace by
    /// `#ID` reads nothing to know it.
    pub(super) hash_ids_possible: AtomicBool,
    /// The smallest id of a trace stored with a head (`u32::MAX`: none),
    /// read at open and lowered before a commit stores a head, so that a
    /// database from before heads pays no read for them.
    pub(super) heads_from: AtomicU32,
    /// A writer's entry among the databases this process writes; declared
    /// after `db`, so that it goes only once the lock has.
    pub(super) _writer: Option<WriterMark>,
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

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
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

/// Whether a database is at `path`; an error when something else is there,
/// or nothing is and `opts` do not let it be created.
fn database_exists(path: &Path, opts: &StoreOptions) -> Result<bool> {
    if path.join("CURRENT").is_file() {
        return Ok(true);
    }
    let shown = path.display().to_string();
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
    Ok(false)
}

/// Takes the readers' lock where the open needs it and sets how many table
/// files `db_opts` keep open; returns the lock and whether a thread should
/// open the reader's table files (see [`Pinning`]).
///
/// A writer may compact table files away while a reader reads, and a file
/// held open survives that. So a reader beside a writer opens every file
/// at once; a reader that opens first opens them as reads need them and
/// holds each open, while its thread opens the rest, and until then it
/// holds the readers' lock, which a writer waits for before it opens.
fn take_readers_lock(
    path: &Path,
    opts: &StoreOptions,
    exists: bool,
    db_opts: &mut Options,
) -> (Option<ReadersLock>, bool) {
    if opts.read_only {
        let readers = ReadersLock::take(path, false, READER_WAITS);
        if lock_held(path) {
            db_opts.set_max_open_files(-1);
            (None, false)
        } else {
            db_opts.set_max_open_files(reader_open_files());
            let pin = readers.is_some();
            (readers, pin)
        }
    } else if exists {
        (ReadersLock::take(path, true, WRITER_WAITS), false)
    } else {
        (None, false)
    }
}

/// Opens the RocksDB database at `path` with the column families `present`.
fn open_families(
    path: &Path,
    opts: &StoreOptions,
    db_opts: &Options,
    present: &[String],
    base: &Options,
    cache: &Cache,
) -> Result<DB> {
    let descriptors = || {
        present
            .iter()
            .map(|name| ColumnFamilyDescriptor::new(name, cf_options(name, cache, base)))
    };
    let opened = if opts.read_only {
        // A writer may delete a table file (flushed or compacted away)
        // between our reading the manifest and opening the file: read the
        // manifest again.
        let mut attempt = 0;
        loop {
            match DB::open_cf_descriptors_read_only(db_opts, path, descriptors(), false) {
                Err(e) if attempt < 20 && e.as_ref().contains("No such file") => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => break other,
            }
        }
    } else {
        DB::open_cf_descriptors(db_opts, path, descriptors())
    };
    opened.map_err(|e| {
        // RocksDB takes an exclusive lock on the folder's LOCK file.
        if e.as_ref().contains("LOCK: ") {
            StorageError::InUse(path.display().to_string())
        } else {
            StorageError::Rocks(e)
        }
    })
}

/// Whether the database's schema version is an older one this build
/// upgrades; an error for one it does not open.
fn schema_needs_upgrade(db: &DB, path: &Path) -> Result<bool> {
    let found = db
        .get_cf(db.cf_handle(cf::META).expect("listed"), META_SCHEMA)?
        .and_then(|v| keys::read_u32(&v));
    match found {
        Some(SCHEMA_VERSION) => Ok(false),
        Some(v) if (OLDEST_SCHEMA_VERSION..SCHEMA_VERSION).contains(&v) => Ok(true),
        Some(found) => Err(StorageError::SchemaVersion {
            path: path.display().to_string(),
            found,
            supported: SCHEMA_VERSION,
        }),
        None => Err(StorageError::NotADatabase {
            path: path.display().to_string(),
            reason: "no schema version recorded".into(),
        }),
    }
}

/// Brings a database opened to write up to this build: the column
/// families added since it was made, the tracking of graph ids that start
/// with `#`, and the schema version when `upgrade`.
fn bring_up_to_date(
    db: &mut DB,
    present: &[String],
    read_only: bool,
    upgrade: bool,
    base: &Options,
    cache: &Cache,
) -> Result<()> {
    for added in cf::ADDED {
        if !present.iter().any(|p| p == added) {
            db.create_cf(added, &cf_options(added, cache, base))?;
        }
    }
    let meta = db.cf_handle(cf::META).expect("listed");
    if !read_only && db.get_pinned_cf(meta, META_HASH_IDS_TRACKED)?.is_none() {
        // Written before graph ids starting with '#' were tracked: look for
        // them once (one index key per trace).
        let mut batch = WriteBatch::default();
        if any_hash_graph_id(db)? {
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
    Ok(())
}

/// Opens the memtrace database at `path` and brings it up to date; `None`
/// when it is opened to read but needs an upgrade first.
fn open_database(
    path: &Path,
    opts: &StoreOptions,
    db_opts: &Options,
    base: &Options,
    cache: &Cache,
) -> Result<Option<DB>> {
    let shown = path.display().to_string();
    let present = DB::list_cf(db_opts, path)?;
    if !present.iter().any(|c| c == cf::META) {
        return Err(StorageError::NotADatabase {
            path: shown,
            reason: "a RocksDB database without memtrace metadata".into(),
        });
    }
    let mut db = open_families(path, opts, db_opts, &present, base, cache)?;
    let upgrade = schema_needs_upgrade(&db, path)?;
    let lacking = cf::ADDED
        .iter()
        .any(|added| !present.iter().any(|p| p == added));
    if opts.read_only && (upgrade || lacking) {
        return Ok(None);
    }
    bring_up_to_date(&mut db, &present, opts.read_only, upgrade, base, cache)?;
    if let Some(missing) = cf::ALL
        .iter()
        .find(|c| !cf::ADDED.contains(c) && !present.iter().any(|p| p == *c))
    {
        return Err(StorageError::NotADatabase {
            path: shown,
            reason: format!("column family {missing} is missing"),
        });
    }
    Ok(Some(db))
}

/// What an open reads from the database to keep in its [`Store`].
struct Counters {
    next_trace: u32,
    next_log: u64,
    hash_ids_possible: bool,
    heads_from: u32,
}

impl Counters {
    fn read(db: &DB, read_only: bool) -> Result<Counters> {
        let meta = db.cf_handle(cf::META).expect("checked");
        let next_trace = db
            .get_cf(meta, META_NEXT_TRACE)?
            .and_then(|v| keys::read_u32(&v))
            .unwrap_or(1);
        // Only a writer appends to the log: a reader does not read it at open.
        let next_log = if read_only {
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
        let hash_ids_possible = db.get_pinned_cf(meta, META_HASH_IDS_TRACKED)?.is_none()
            || db.get_pinned_cf(meta, META_HASH_GRAPH_IDS)?.is_some();
        let heads_from = db
            .get_pinned_cf(meta, META_HEADS_FROM)?
            .and_then(|v| keys::read_u32(&v))
            .unwrap_or(u32::MAX);
        Ok(Counters {
            next_trace,
            next_log,
            hash_ids_possible,
            heads_from,
        })
    }
}

impl Store {
    /// Opens (or, with `create`, creates) the store at `path`.
    ///
    /// Refuses a path that holds something other than a memtrace database
    /// and a database of another schema version.
    pub fn open(path: &Path, opts: &StoreOptions) -> Result<Store> {
        let exists = database_exists(path, opts)?;
        if !exists {
            create_new(path)?;
        }
        let base = if opts.read_only {
            base_options()
        } else {
            writer_options()
        };
        let mut db_opts = base.clone();
        let (readers, pin) = take_readers_lock(path, opts, exists, &mut db_opts);
        let cache = Cache::new_lru_cache(BLOCK_CACHE_BYTES);
        // A writer takes the lock with the list of writers held (see
        // `WRITING`); declared before `db`, it is released after `db` on
        // every early return.
        let writers = (!opts.read_only).then(writing);
        let Some(db) = open_database(path, opts, &db_opts, &base, &cache)? else {
            // A reader cannot upgrade: open once to write, then read.
            drop(readers);
            let writer = StoreOptions {
                create: false,
                read_only: false,
                ..opts.clone()
            };
            drop(Store::open(path, &writer)?);
            return Store::open(path, opts);
        };
        let counters = Counters::read(&db, opts.read_only)?;
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
            next_trace: AtomicU32::new(counters.next_trace),
            next_log: AtomicU64::new(counters.next_log),
            sync: opts.sync,
            written: AtomicBool::new(false),
            read_only: opts.read_only,
            hash_ids_possible: AtomicBool::new(counters.hash_ids_possible),
            heads_from: AtomicU32::new(counters.heads_from),
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

    /// An error unless the store was opened to write.
    pub(super) fn writable(&self) -> Result<()> {
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

    /// The handle of column family `name`.
    pub(super) fn cf(&self, name: &str) -> &ColumnFamily {
        // Every name in cf::ALL is checked to exist at open.
        self.db
            .cf_handle(name)
            .expect("column family checked at open")
    }

    /// The key of the next entry of the event log.
    pub(super) fn next_log_key(&self) -> [u8; 8] {
        self.next_log.fetch_add(1, Ordering::SeqCst).to_be_bytes()
    }

    /// Writes `batch`, synced as the store was opened to.
    pub(super) fn write(&self, batch: WriteBatch) -> Result<()> {
        self.writable()?;
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        self.written.store(true, Ordering::Relaxed);
        self.db.write_opt(batch, &w)?;
        Ok(())
    }

    /// Bytes the database occupies on disk (all files under its folder).
    pub fn disk_bytes(&self) -> Result<u64> {
        dir_bytes(&self.path)
    }
}
