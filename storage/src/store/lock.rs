//! The databases this process writes, and whether any process holds a
//! database's lock: RocksDB's lock cannot be asked about safely from the
//! process that holds it, so the process keeps its own list.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
pub(super) fn writing() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    WRITING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How [`WRITING`] names the database at `path`.
pub(super) fn writing_key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A writer's entry in [`WRITING`], removed when the store that holds it
/// is dropped (after its database, whose lock goes first).
#[derive(Debug)]
pub(super) struct WriterMark(pub(super) PathBuf);

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
/// that would keep this process from writing (`F_GETLK`), which is quicker
/// than reading the kernel's whole table of locks. Where that cannot be
/// asked, a writer is assumed.
pub(super) fn lock_held(path: &Path) -> bool {
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
