//! `memtrace drop`: removes a whole trace, and logs why.

use std::process::ExitCode;

use memtrace_table as table;

use crate::error::Result;

/// Removes the trace when `yes` is given; otherwise says what would go and exits 1.
pub fn run(db: &std::path::Path, trace: &str, yes: bool, reason: &str) -> Result<ExitCode> {
    let db = crate::opening::open_existing(db)?;
    let info = db.trace(trace)?.info();
    if !yes {
        eprintln!(
            "would remove trace #{} {} ({} variables, {} edges); pass --yes to remove it",
            info.id,
            table::visible(&info.graph_id),
            info.counts.variables,
            info.counts.edges
        );
        return Ok(ExitCode::from(1));
    }
    let info = db.drop_trace(&format!("#{}", info.id), reason)?;
    println!(
        "removed trace #{} {} (logged: {})",
        info.id,
        table::visible(&info.graph_id),
        table::visible(reason)
    );
    Ok(ExitCode::SUCCESS)
}
