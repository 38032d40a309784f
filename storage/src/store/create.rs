//! Creating a new database, atomically.

use std::path::{Path, PathBuf};

use rocksdb::{Cache, ColumnFamilyDescriptor, WriteBatch, WriteOptions, DB};

use super::cf;
use super::io::io_err;
use super::options::{cf_options, writer_options, BLOCK_CACHE_BYTES};
use super::schema::{META_HASH_IDS_TRACKED, META_NEXT_TRACE, META_SCHEMA, SCHEMA_VERSION};
use crate::ids::Result;

/// Creates a new, empty database at `path` atomically: it is built in a
/// hidden sibling folder, schema version included, and renamed into place,
/// so that a crash during creation leaves no half-made database behind.
pub(super) fn create_new(path: &Path) -> Result<()> {
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
