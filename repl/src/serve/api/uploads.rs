//! Import bodies written to files as they arrive, and removed when done.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::serve::http::ApiError;

/// Where the bodies of imports are written as they arrive, to be imported
/// from a file as `memtrace import` reads one (mapped, not copied into
/// memory), and how large one may be.
#[derive(Debug, Clone)]
pub struct Uploads {
    /// The folder (inside the database's, so on its disk).
    pub dir: PathBuf,
    /// Bytes an import's body may have; past it, 413.
    pub limit: u64,
}

/// Uploads written by this process so far (for their file names).
static UPLOADS: AtomicU64 = AtomicU64::new(0);

impl Uploads {
    /// The folder of uploads in the database folder at `db`.
    pub fn in_db(db: &Path, limit: u64) -> Uploads {
        Uploads {
            dir: db.join("uploads"),
            limit,
        }
    }

    /// Makes the folder, empty: what is there was left by a server that
    /// stopped while it received it.
    pub fn clear(&self) -> std::io::Result<()> {
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir)?;
        }
        std::fs::create_dir_all(&self.dir)
    }

    /// A new upload's file, removed when the [`Upload`] is dropped.
    pub fn create(&self) -> Result<(Upload, std::fs::File), ApiError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| upload_error(&self.dir, &e))?;
        let n = UPLOADS.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{}-{n}.upload", std::process::id()));
        let file = std::fs::File::create(&path).map_err(|e| upload_error(&path, &e))?;
        Ok((Upload { path, bytes: 0 }, file))
    }

    /// 413 for a body of `bytes`, when that is past the limit.
    pub fn check(&self, bytes: u64) -> Result<(), ApiError> {
        if bytes > self.limit {
            Err(ApiError {
                message: format!(
                    "the import is larger than {} bytes (memtrace serve --max-import); nothing of it was stored",
                    self.limit
                ),
                ..ApiError::too_large(self.limit)
            })
        } else {
            Ok(())
        }
    }

    /// Writes a body read from `body` to a new upload.
    pub(super) fn write(&self, body: &mut dyn Read) -> Result<Upload, ApiError> {
        let (mut upload, file) = self.create()?;
        let mut out = std::io::BufWriter::new(file);
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = body
                .read(&mut buf)
                .map_err(|e| ApiError::bad(format!("reading the request body: {e}")))?;
            if n == 0 {
                break;
            }
            upload.bytes += n as u64;
            self.check(upload.bytes)?;
            out.write_all(&buf[..n])
                .map_err(|e| upload_error(&upload.path, &e))?;
        }
        out.flush().map_err(|e| upload_error(&upload.path, &e))?;
        Ok(upload)
    }
}

/// 500: an upload could not be written.
pub fn upload_error(path: &Path, e: &std::io::Error) -> ApiError {
    ApiError {
        status: 500,
        kind: "internal",
        message: format!(
            "cannot write the upload to {}: {e}; nothing of it was stored",
            path.display()
        ),
    }
}

/// An import's body, received whole into a file; the file is removed when
/// this is dropped.
#[derive(Debug)]
pub struct Upload {
    /// The file.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: u64,
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
