//! What the benchmarks measure with: the peak memory of this process, the
//! files of a generated set, and SQLite's errors as ours.

use std::path::{Path, PathBuf};

use memtrace::gen::set::MANIFEST;
use serde_json::Value;

use crate::error::{io, CliError, Result};

/// Peak resident set size of this process, from /proc (0 where unavailable).
pub(crate) fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The first `n` files of a generated set, with their record counts.
pub(crate) fn set_files(set: &Path, n: usize) -> Result<Vec<(PathBuf, u64)>> {
    let path = set.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(io(path.display()))?;
    let manifest: Value = serde_json::from_str(&text)?;
    let traces = manifest["traces"].as_array().cloned().unwrap_or_default();
    if traces.len() < n {
        return Err(CliError::Bench(format!(
            "{} holds {} traces, {n} wanted",
            set.display(),
            traces.len()
        )));
    }
    Ok(traces
        .iter()
        .take(n)
        .map(|t| {
            let records = ["variables", "ops", "edges"]
                .iter()
                .map(|k| t[k].as_u64().unwrap_or(0))
                .sum();
            (set.join(t["file"].as_str().unwrap_or_default()), records)
        })
        .collect())
}

/// A SQLite error as a benchmark error.
pub(crate) fn sqlite_err(e: rusqlite::Error) -> CliError {
    CliError::Bench(format!("SQLite: {e}"))
}
