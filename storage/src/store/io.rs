//! What the store asks of the system beyond RocksDB: sizes of files on
//! disk, errors that name a path, and the time.

use std::path::Path;

use crate::error::StorageError;
use crate::ids::Result;

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

/// An I/O error that names the path it happened at.
pub(super) fn io_err(path: &Path, source: std::io::Error) -> StorageError {
    StorageError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Milliseconds since the Unix epoch, as log entries and trace records keep time.
pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
