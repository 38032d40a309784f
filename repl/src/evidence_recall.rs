//! `memtrace evidence-recall`: how much of the known evidence a search finds.

use std::process::ExitCode;

use memtrace::prelude::*;
use memtrace_table as table;

use crate::error::{CliError, Result};
use crate::formats::Listing;

/// Prints the recall of the search at `k`, in all and by system.
pub fn run(
    db: &std::path::Path,
    k: usize,
    search: memtrace::attrib::Search,
    format: Listing,
) -> Result<ExitCode> {
    // Dense search caches the vectors it is sent in the database.
    let db = if search.needs_embeddings() {
        crate::opening::open_existing(db)?
    } else {
        crate::opening::open_read_only(db)?
    };
    if k == 0 {
        return Err(CliError::Usage("--k must be at least 1".into()));
    }
    let report = db.evidence_recall(k, search)?;
    let json_of = |r: &memtrace::attrib::Recall| {
        serde_json::json!({
            "cases": r.cases, "items": r.items, "found": r.found, "complete": r.complete,
            "recall": r.micro(), "complete_share": r.complete_share(),
        })
    };
    match format {
        Listing::Json => {
            let by: serde_json::Map<String, serde_json::Value> = report
                .by_system
                .iter()
                .map(|(s, r)| (s.clone(), json_of(r)))
                .collect();
            let v = serde_json::json!({"k": k, "method": search.name(),
                "total": json_of(&report.total), "by_system": by});
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        Listing::Table => {
            let row = |name: &str, r: &memtrace::attrib::Recall| {
                vec![
                    name.to_string(),
                    r.cases.to_string(),
                    r.items.to_string(),
                    r.found.to_string(),
                    format!("{:.3}", r.micro()),
                    format!("{:.3}", r.complete_share()),
                ]
            };
            let mut rows: Vec<Vec<String>> =
                report.by_system.iter().map(|(s, r)| row(s, r)).collect();
            rows.push(row("all", &report.total));
            let recall = format!("recall@{k}");
            print!(
                "{}",
                table::render(
                    &["system", "cases", "evidence", "found", &recall, "all found"],
                    &rows,
                    &[1, 2, 3, 4, 5]
                )
            );
            if report.total.cases == 0 {
                println!("(no failed case with known source evidence)");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
