//! `memtrace patterns` and `memtrace check`: run failure patterns over every
//! trace (hits per pattern and per trace, with examples), and fail a build
//! when a pattern has more hits than its threshold.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use clap::ValueEnum;
use memtrace::engine::{to_json, Engine};
use memtrace::patterns::{PatternOutcome, PatternReport, PatternSpec, RunOptions};
use memtrace::prelude::*;
use memtrace::{Cancel, Value};
use serde::Deserialize;
use serde_json::json;

use crate::attribute::trace_bar;
use crate::error::{io, CliError, Result};
use memtrace_table as table;

/// Output formats of `memtrace patterns` and `memtrace check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PatternFormat {
    /// A summary table, then example hits per pattern.
    Table,
    /// Everything: totals, hits per trace, examples.
    Json,
    /// One line per pattern and trace with hits: pattern, trace, system, hits.
    Csv,
}

/// The trace cache's budget for a run of patterns: a pass reads each trace once, so it can be small.
const PASS_CACHE_BYTES: usize = 16 << 20;

/// Opens the database for one pass of patterns over its traces. Each trace
/// is read once and all patterns run on it together, so a trace kept in the
/// cache afterwards would never be read again: the cache keeps little, and
/// memory stays near what the traces in flight need.
fn open_for_a_pass(db_path: &Path) -> Result<Engine> {
    let db = crate::opening::open_writing_or_reading(db_path)?;
    db.set_cache_budget(PASS_CACHE_BYTES);
    Ok(db)
}

fn default_specs(db: &Engine, builtin_only: bool) -> Result<Vec<PatternSpec>> {
    Ok(db
        .patterns()?
        .into_iter()
        .filter(|p| p.builtin || !builtin_only)
        .map(|p| PatternSpec::named(&p.name))
        .collect())
}

/// Gives each pattern the parameters it takes; a parameter no pattern
/// takes is an error.
fn with_params(
    db: &Engine,
    mut specs: Vec<PatternSpec>,
    params: &[(String, Value)],
) -> Result<Vec<PatternSpec>> {
    if params.is_empty() {
        return Ok(specs);
    }
    let all = db.patterns()?;
    let mut used = vec![false; params.len()];
    for s in &mut specs {
        let takes: Vec<&str> = all
            .iter()
            .find(|p| p.name == s.name)
            .map(|p| p.params.iter().map(|(n, _)| n.as_str()).collect())
            .unwrap_or_default();
        for (i, (k, v)) in params.iter().enumerate() {
            if takes.contains(&k.as_str()) {
                s.params.push((k.clone(), v.clone()));
                used[i] = true;
            }
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(CliError::Usage(format!(
            "--param {}: none of the patterns run takes ${} (SHOW PATTERNS lists their parameters)",
            params[i].0, params[i].0
        )));
    }
    Ok(specs)
}

fn run(
    db: &Engine,
    specs: &[PatternSpec],
    over: Option<&str>,
    examples: usize,
) -> Result<PatternReport> {
    let bar = trace_bar("searched");
    let report = db.run_patterns(
        specs,
        &RunOptions {
            over: over.map(str::to_string),
            examples,
        },
        &Cancel::new(),
        &|done, total| {
            bar.set_length(total);
            bar.set_position(done);
        },
    );
    bar.finish_and_clear();
    Ok(report?)
}

/// `memtrace patterns`.
pub fn patterns(
    db_path: &Path,
    names: &[String],
    builtin_only: bool,
    over: Option<&str>,
    params: &[(String, Value)],
    examples: usize,
    format: PatternFormat,
) -> Result<ExitCode> {
    let db = open_for_a_pass(db_path)?;
    let specs = if names.is_empty() {
        default_specs(&db, builtin_only)?
    } else {
        names.iter().map(|n| PatternSpec::named(n)).collect()
    };
    let specs = with_params(&db, specs, params)?;
    let report = run(&db, &specs, over, examples)?;
    print(&report, None, format);
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------- check

/// The thresholds file of `memtrace check --patterns FILE` (TOML).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckFile {
    /// The threshold of patterns that set none.
    max_hits: Option<u64>,
    /// A condition on trace fields for every pattern.
    over: Option<String>,
    #[serde(default)]
    pattern: Vec<CheckPattern>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckPattern {
    name: String,
    statement: Option<String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    max_hits: Option<u64>,
}

fn toml_value(file: &Path, pattern: &str, key: &str, v: &toml::Value) -> Result<Value> {
    Ok(match v {
        toml::Value::String(s) => Value::Str(s.clone()),
        toml::Value::Integer(n) => Value::Int(*n),
        toml::Value::Float(x) => Value::Float(*x),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Array(items) => Value::List(
            items
                .iter()
                .map(|i| toml_value(file, pattern, key, i))
                .collect::<Result<_>>()?,
        ),
        _ => {
            return Err(CliError::Usage(format!(
                "{}: pattern {pattern}: params.{key} must be a string, number, boolean or list",
                file.display()
            )))
        }
    })
}

/// `memtrace check`.
pub fn check(
    db_path: &Path,
    file: Option<&Path>,
    builtin_only: bool,
    max_hits: Option<u64>,
    over: Option<&str>,
    examples: usize,
    format: PatternFormat,
) -> Result<ExitCode> {
    let db = open_for_a_pass(db_path)?;
    let (specs, limits, file_over) = match file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(io(path.display()))?;
            let parsed: CheckFile = toml::from_str(&text)
                .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
            if parsed.pattern.is_empty() {
                return Err(CliError::Usage(format!(
                    "{}: no [[pattern]] tables: name at least one pattern to check",
                    path.display()
                )));
            }
            let mut seen = std::collections::HashSet::new();
            let mut specs = Vec::new();
            let mut limits = Vec::new();
            for p in &parsed.pattern {
                if !seen.insert(p.name.clone()) {
                    return Err(CliError::Usage(format!(
                        "{}: pattern {} is listed twice",
                        path.display(),
                        p.name
                    )));
                }
                let params = p
                    .params
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), toml_value(path, &p.name, k, v)?)))
                    .collect::<Result<Vec<_>>>()?;
                specs.push(PatternSpec {
                    name: p.name.clone(),
                    params,
                    statement: p.statement.clone(),
                });
                limits.push(p.max_hits.or(max_hits).or(parsed.max_hits).unwrap_or(0));
            }
            (specs, limits, parsed.over)
        }
        None => {
            let specs = default_specs(&db, builtin_only)?;
            let limits = vec![max_hits.unwrap_or(0); specs.len()];
            (specs, limits, None)
        }
    };
    let over = over.map(str::to_string).or(file_over);
    let report = run(&db, &specs, over.as_deref(), examples)?;
    print(&report, Some(&limits), format);
    let over_limit: Vec<String> = report
        .patterns
        .iter()
        .zip(&limits)
        .filter(|(p, max)| p.hits > **max)
        .map(|(p, max)| format!("{} ({} > {max})", table::visible(&p.name), p.hits))
        .collect();
    if over_limit.is_empty() {
        eprintln!(
            "check passed: {} pattern(s) within their thresholds over {} trace(s)",
            report.patterns.len(),
            report.traces
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "check failed: {} of {} pattern(s) over their threshold: {}",
            over_limit.len(),
            report.patterns.len(),
            over_limit.join(", ")
        );
        Ok(ExitCode::from(1))
    }
}

// --------------------------------------------------------------- output

fn kind(p: &PatternOutcome) -> &'static str {
    if p.builtin {
        "built-in"
    } else {
        "saved"
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn print(report: &PatternReport, limits: Option<&[u64]>, format: PatternFormat) {
    match format {
        PatternFormat::Json => print_json(report, limits),
        PatternFormat::Csv => print_csv(report),
        PatternFormat::Table => print_tables(report, limits),
    }
}

/// The report as one JSON object, each pattern with its threshold when there are thresholds.
fn print_json(report: &PatternReport, limits: Option<&[u64]>) {
    let patterns: Vec<serde_json::Value> = report
        .patterns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let params: serde_json::Map<String, serde_json::Value> = p
                .params
                .iter()
                .map(|(k, v)| (k.clone(), to_json(v)))
                .collect();
            let mut o = json!({
                "name": p.name,
                "kind": kind(p),
                "error_type": p.error_type.map(|e| e.name()),
                "params": params,
                "columns": p.columns,
                "hits": p.hits,
                "traces_hit": p.per_trace.len(),
                "per_trace": p.per_trace.iter().map(|t| json!({
                    "trace": t.graph_id, "id": t.trace, "system": t.system, "hits": t.hits,
                })).collect::<Vec<_>>(),
                "examples": p.examples.iter().map(|e| {
                    let row: serde_json::Map<String, serde_json::Value> = p
                        .columns
                        .iter()
                        .cloned()
                        .zip(e.row.iter().map(to_json))
                        .collect();
                    json!({"trace": e.graph_id, "id": e.trace, "row": row})
                }).collect::<Vec<_>>(),
            });
            if let Some(l) = limits {
                o["max_hits"] = json!(l[i]);
                o["passed"] = json!(p.hits <= l[i]);
            }
            o
        })
        .collect();
    let out = json!({
        "traces": report.traces,
        "skipped": report.skipped,
        "seconds": (report.seconds * 1000.0).round() / 1000.0,
        "patterns": patterns,
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&out).unwrap_or_else(|_| out.to_string())
    );
}

/// One CSV line per pattern and trace with hits.
fn print_csv(report: &PatternReport) {
    let mut text = String::from("pattern,trace,system,hits\r\n");
    for p in &report.patterns {
        for t in &p.per_trace {
            text.push_str(&format!(
                "{},{},{},{}\r\n",
                csv_field(&p.name),
                csv_field(&t.graph_id),
                csv_field(t.system.as_deref().unwrap_or("")),
                t.hits
            ));
        }
    }
    print!("{text}");
}

/// A table of the patterns, then a table of each pattern's example hits.
fn print_tables(report: &PatternReport, limits: Option<&[u64]>) {
    println!(
        "{} pattern(s) over {} trace(s){} in {:.2} s",
        report.patterns.len(),
        report.traces,
        if report.skipped > 0 {
            format!(" ({} left out by the trace condition)", report.skipped)
        } else {
            String::new()
        },
        report.seconds
    );
    println!();
    let mut header = vec![
        "pattern",
        "kind",
        "error type",
        "hits",
        "traces",
        "most in one",
    ];
    if limits.is_some() {
        header.extend(["max", "result"]);
    }
    let rows: Vec<Vec<String>> = report
        .patterns
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let most = p.per_trace.iter().max_by_key(|t| t.hits);
            let mut row = vec![
                p.name.clone(),
                kind(p).to_string(),
                p.error_type
                    .map(|e| e.name().to_string())
                    .unwrap_or_default(),
                p.hits.to_string(),
                p.per_trace.len().to_string(),
                most.map(|t| format!("{} ({})", t.hits, t.graph_id))
                    .unwrap_or_default(),
            ];
            if let Some(l) = limits {
                row.push(l[i].to_string());
                row.push(if p.hits > l[i] { "OVER" } else { "ok" }.to_string());
            }
            row
        })
        .collect();
    print!("{}", table::render(&header, &rows, &[3, 4]));
    for p in &report.patterns {
        if p.examples.is_empty() {
            continue;
        }
        println!();
        println!(
            "{}: {} hit(s) in {} trace(s); the first {}:",
            table::visible(&p.name),
            p.hits,
            p.per_trace.len(),
            p.examples.len()
        );
        let mut header: Vec<&str> = vec!["trace"];
        header.extend(p.columns.iter().map(String::as_str));
        let rows: Vec<Vec<String>> = p
            .examples
            .iter()
            .map(|e| {
                let mut row = vec![e.graph_id.clone()];
                row.extend(
                    e.row
                        .iter()
                        .map(|v| crate::query::cut(&crate::query::cell(v))),
                );
                row
            })
            .collect();
        print!("{}", table::render(&header, &rows, &[]));
    }
}
