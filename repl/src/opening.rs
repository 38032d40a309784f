//! How commands open the database: with the analyses registered, to write
//! where they can, and else to read. Commands work on the engine under the
//! embedding API's `Database`, since they also plan, stream and cache.

use std::path::Path;

use memtrace::engine::Engine;
use memtrace::{Database, OpenOptions};

use crate::error::Result;

/// Opens the database at `path` to read and write, creating it when missing.
pub fn open(path: impl AsRef<Path>) -> memtrace::Result<Engine> {
    Ok(Database::open(path)?.into_engine())
}

/// Opens the database at `path` to read and write; fails when there is none.
pub fn open_existing(path: impl AsRef<Path>) -> memtrace::Result<Engine> {
    let existing = OpenOptions {
        create: false,
        ..OpenOptions::default()
    };
    Ok(Database::open_with(path, &existing)?.into_engine())
}

/// Opens the database at `path` to read only, beside a process that writes.
pub fn open_read_only(path: impl AsRef<Path>) -> memtrace::Result<Engine> {
    Ok(Database::open_read_only(path)?.into_engine())
}

/// Opens the database to write where it can, and else, when another
/// process holds it, to read only (for work whose writes only save time
/// later, such as the stored findings of `check`).
pub fn open_writing_or_reading(path: &Path) -> Result<Engine> {
    match open_existing(path) {
        Err(memtrace::EngineError::Storage(memtrace::StorageError::InUse(_))) => {
            Ok(open_read_only(path)?)
        }
        other => Ok(other?),
    }
}
