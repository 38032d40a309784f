//! How a reader keeps the table files of its snapshot: it opens them all
//! soon after it opens, and holds a lock that a writer waits for meanwhile,
//! so that no compaction takes a file away before the reader opened it.

use std::path::Path;
use std::sync::Arc;

use rocksdb::{ReadOptions, DB};

use super::options::MAX_OPEN_TABLE_FILES;

/// The file that readers lock (shared) while table files of their
/// snapshot may still be unopened, and a writer (exclusive) while it opens.
const READERS_FILE: &str = "READERS";

/// How long a reader waits for a writer that is opening the database.
pub(super) const READER_WAITS: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a writer waits, at most, for readers to open their table files
/// before it opens the database (and may compact them away).
pub(super) const WRITER_WAITS: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a reader reads before its thread opens the rest of its table
/// files: most commands are done by then, and read no more than they need.
const PIN_AFTER: std::time::Duration = std::time::Duration::from_millis(150);

/// A `flock` on the readers' file, released when dropped (the descriptor
/// closes).
#[derive(Debug)]
pub(super) struct ReadersLock(#[allow(dead_code)] std::fs::File);

impl ReadersLock {
    /// Takes the lock, shared or exclusive, waiting up to `wait`. `None`
    /// when the file cannot be made (a folder this process may not write:
    /// then no writer of it can be waited for either) or the wait ran out.
    pub(super) fn take(
        path: &Path,
        exclusive: bool,
        wait: std::time::Duration,
    ) -> Option<ReadersLock> {
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
pub(super) fn reader_open_files() -> i32 {
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
pub(super) struct Pinning {
    /// Dropped to stop the thread: it wakes at once.
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Pinning {
    pub(super) fn start(db: Arc<DB>, lock: ReadersLock) -> Option<Pinning> {
        let (stop, stopped) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("memtrace-pin".into())
            .spawn(move || pin_tables(&db, &stopped, lock))
            .ok()?;
        Some(Pinning { stop, thread })
    }

    /// Stops the thread (between two files) and waits for it.
    pub(super) fn stop(self) {
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
