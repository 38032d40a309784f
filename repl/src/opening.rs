//! How commands open the database: to write where they can, and else to read.

use std::path::Path;

use memtrace::Database;

use crate::error::Result;

/// Opens the database to write where it can, and else, when another
/// process holds it, to read only (for work whose writes only save time
/// later, such as the stored findings of `check`).
pub fn open_writing_or_reading(path: &Path) -> Result<Database> {
    match Database::open_existing(path) {
        Err(memtrace::EngineError::Storage(memtrace::StorageError::InUse(_))) => {
            Ok(Database::open_read_only(path)?)
        }
        other => Ok(other?),
    }
}
