//! `memtrace log`: the event log of imports, drops and labels.

use std::io::Write;
use std::process::ExitCode;

use memtrace_table as table;

use crate::error::{io, Result};
use crate::formats::Records;
use crate::query::csv_field;

/// One entry of the event log as JSON: its time both as ISO-8601 UTC and in milliseconds.
fn log_json(e: &memtrace::LogEntry) -> serde_json::Value {
    serde_json::json!({
        "seq": e.seq,
        "at": memtrace::engine::iso_utc(e.at_ms),
        "at_ms": e.at_ms,
        "action": e.action,
        "trace": e.trace,
        "graph_id": e.graph_id,
        "detail": e.detail,
    })
}

/// Prints the event log in the chosen format.
pub fn run(db: &std::path::Path, format: Records) -> Result<ExitCode> {
    let db = crate::opening::open_read_only(db)?;
    let entries = db.log()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let w = io("standard output");
    match format {
        Records::Table => {
            let rows: Vec<Vec<String>> = entries
                .iter()
                .map(|e| {
                    vec![
                        e.seq.to_string(),
                        memtrace::engine::iso_utc(e.at_ms),
                        e.action.clone(),
                        format!("#{}", e.trace),
                        e.graph_id.clone(),
                        e.detail.clone(),
                    ]
                })
                .collect();
            write!(
                out,
                "{}",
                table::render(
                    &["seq", "at", "action", "trace", "graph_id", "detail"],
                    &rows,
                    &[0]
                )
            )
        }
        Records::Json => {
            let all: Vec<serde_json::Value> = entries.iter().map(log_json).collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&all)?)
        }
        Records::Jsonl => entries
            .iter()
            .try_for_each(|e| writeln!(out, "{}", log_json(e))),
        Records::Csv => {
            let mut text = String::from("seq,at,at_ms,action,trace,graph_id,detail\r\n");
            for e in &entries {
                let fields = [
                    e.seq.to_string(),
                    memtrace::engine::iso_utc(e.at_ms),
                    e.at_ms.to_string(),
                    e.action.clone(),
                    e.trace.to_string(),
                    e.graph_id.clone(),
                    e.detail.clone(),
                ];
                let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                text.push_str(&line.join(","));
                text.push_str("\r\n");
            }
            write!(out, "{text}")
        }
    }
    .map_err(w)?;
    out.flush().map_err(io("standard output"))?;
    Ok(ExitCode::SUCCESS)
}
