//! `memtrace import`: files and folders of traces into the database.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::error::Result;
use crate::transfer::import_into;

/// Imports files and folders; the exit status is 1 when any file failed.
pub fn run(db: &std::path::Path, paths: &[PathBuf], force: bool) -> Result<ExitCode> {
    let db = crate::opening::open(db)?;
    let (_, failed) = import_into(&db, paths, force, &mut std::io::stdout())?;
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
