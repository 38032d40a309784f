//! `memtrace stats`: the totals of the database.

use std::process::ExitCode;

use memtrace_table as table;

use crate::error::Result;
use crate::formats::Listing;

/// Prints the totals as a table or JSON.
pub fn run(db: &std::path::Path, format: Listing) -> Result<ExitCode> {
    let db = crate::opening::open_read_only(db)?;
    let s = db.stats()?;
    match format {
        Listing::Json => println!("{}", serde_json::to_string_pretty(&s)?),
        Listing::Table => {
            let rows = vec![
                vec!["database".into(), db.path().display().to_string()],
                vec!["traces".into(), s.traces.to_string()],
                vec!["sessions".into(), s.sessions.to_string()],
                vec!["variables".into(), s.variables.to_string()],
                vec!["ops".into(), s.ops.to_string()],
                vec!["edges".into(), s.edges.to_string()],
                vec!["cases".into(), s.cases.to_string()],
                vec!["bytes on disk".into(), table::bytes(s.disk_bytes)],
                vec![
                    "bytes of imported JSON".into(),
                    table::bytes(s.imported_json_bytes),
                ],
            ];
            print!("{}", table::render(&["stat", "value"], &rows, &[]));
        }
    }
    Ok(ExitCode::SUCCESS)
}
