//! `memtrace traces`: the stored traces with their counts.

use std::process::ExitCode;

use memtrace::TraceInfo;
use memtrace_table as table;

use crate::error::Result;
use crate::formats::Listing;

fn trace_json(t: &TraceInfo) -> serde_json::Value {
    serde_json::json!({
        "id": t.id,
        "graph_id": t.graph_id,
        "user_id": t.user_id,
        "project_id": t.project_id,
        "created_at": t.created_at,
        "sessions": t.counts.sessions,
        "variables": t.counts.variables,
        "ops": t.counts.ops,
        "edges": t.counts.edges,
        "cases": t.counts.cases,
        "format": t.format,
        "source": t.source,
        "source_bytes": t.source_bytes,
    })
}

/// Prints the stored traces as a table or JSON.
pub fn run(db: &std::path::Path, format: Listing) -> Result<ExitCode> {
    let db = crate::opening::open_read_only(db)?;
    let list = db.traces()?;
    match format {
        Listing::Json => println!(
            "{}",
            serde_json::to_string_pretty(&list.iter().map(trace_json).collect::<Vec<_>>())?
        ),
        Listing::Table => {
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|t| {
                    vec![
                        format!("#{}", t.id),
                        t.graph_id.clone(),
                        t.user_id.clone().unwrap_or_default(),
                        t.project_id.clone().unwrap_or_default(),
                        t.counts.sessions.to_string(),
                        t.counts.variables.to_string(),
                        t.counts.ops.to_string(),
                        t.counts.edges.to_string(),
                        t.counts.cases.to_string(),
                    ]
                })
                .collect();
            print!(
                "{}",
                table::render(
                    &[
                        "id",
                        "graph_id",
                        "user_id",
                        "project_id",
                        "sessions",
                        "variables",
                        "ops",
                        "edges",
                        "cases"
                    ],
                    &rows,
                    &[4, 5, 6, 7, 8]
                )
            );
            println!(
                "({} trace{})",
                list.len(),
                if list.len() == 1 { "" } else { "s" }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
