//! Cold starts that are cold for every side: a closed database's files are
//! written back and evicted from the operating system's page cache
//! (`posix_fadvise(POSIX_FADV_DONTNEED)`), and how much of them is still
//! resident afterwards is measured (`mincore`), so that the output can say
//! that the eviction happened.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{io, CliError, Result};

/// What the evictions of one step did: the files and bytes evicted (the
/// largest eviction), and the most that was still resident right after one.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Eviction {
    /// Evictions made (one per cold start).
    pub times: u64,
    /// Files evicted (the largest eviction).
    pub files: u64,
    /// Bytes of those files.
    pub bytes: u64,
    /// The most bytes still in the page cache right after an eviction.
    pub resident_after: u64,
}

impl Eviction {
    /// Adds one eviction's figures.
    pub fn add(&mut self, files: u64, bytes: u64, resident_after: u64) {
        self.times += 1;
        self.files = self.files.max(files);
        self.bytes = self.bytes.max(bytes);
        self.resident_after = self.resident_after.max(resident_after);
    }
}

/// Every regular file under `path` (the path itself when it is a file);
/// missing paths give nothing.
pub fn files_under(path: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![path.to_path_buf()];
    while let Some(p) = todo.pop() {
        let Ok(md) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if md.is_file() {
            out.push(p);
        } else if md.is_dir() {
            for entry in std::fs::read_dir(&p).map_err(io(p.display()))? {
                todo.push(entry.map_err(io(p.display()))?.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Writes back and evicts `files` from the page cache, then measures how
/// much of them is still resident; records the figures in `ev`. Files that
/// vanished in between (a database's temporary files) are skipped.
pub fn evict(files: &[PathBuf], ev: &mut Eviction) -> Result<()> {
    let (mut n, mut bytes) = (0u64, 0u64);
    for path in files {
        let Ok(f) = File::open(path) else { continue };
        // Dirty pages cannot be dropped: write them back first. A file the
        // database only reads may refuse; it has no dirty pages then.
        let _ = f.sync_all();
        let len = f.metadata().map_err(io(path.display()))?.len();
        // SAFETY: a valid open descriptor; the advice has no memory effects.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(CliError::Bench(format!(
                "{}: posix_fadvise(DONTNEED) failed: {}",
                path.display(),
                std::io::Error::from_raw_os_error(rc)
            )));
        }
        n += 1;
        bytes += len;
    }
    let mut resident = 0u64;
    for path in files {
        resident += resident_bytes(path)?;
    }
    ev.add(n, bytes, resident);
    Ok(())
}

/// Bytes of `path` that are in the page cache (`mincore` over a read-only
/// mapping, which reads nothing in); 0 for a missing or empty file.
pub fn resident_bytes(path: &Path) -> Result<u64> {
    let Ok(f) = File::open(path) else {
        return Ok(0);
    };
    let len = f.metadata().map_err(io(path.display()))?.len() as usize;
    if len == 0 {
        return Ok(0);
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: a fresh private read-only mapping of an open file, unmapped
    // below; `vec` holds one byte per page of it, as mincore requires.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        if addr == libc::MAP_FAILED {
            return Err(CliError::Bench(format!(
                "{}: mmap failed: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
        let rc = libc::mincore(addr, len, vec.as_mut_ptr());
        let err = std::io::Error::last_os_error();
        libc::munmap(addr, len);
        if rc != 0 {
            return Err(CliError::Bench(format!(
                "{}: mincore failed: {err}",
                path.display()
            )));
        }
    }
    let resident = vec.iter().filter(|b| *b & 1 == 1).count();
    Ok((resident * page).min(len) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicted_files_are_not_resident() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("db");
        std::fs::create_dir_all(&sub).unwrap();
        let a = sub.join("a");
        std::fs::write(&a, vec![7u8; 1 << 20]).unwrap();
        std::fs::write(sub.join("empty"), b"").unwrap();
        let _ = std::fs::read(&a).unwrap();
        let files = files_under(dir.path()).unwrap();
        assert_eq!(files.len(), 2);
        let mut ev = Eviction::default();
        evict(&files, &mut ev).unwrap();
        assert_eq!(ev.times, 1);
        assert_eq!(ev.bytes, 1 << 20);
        // Where the page cache is the storage (tmpfs), nothing is evicted.
        assert!(ev.resident_after <= ev.bytes);
        let _ = std::fs::read(&a).unwrap();
        assert!(resident_bytes(&a).unwrap() > 0);
    }
}
