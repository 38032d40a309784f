//! `memtrace query`: run a statement and print its rows as a table, JSON or CSV.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use clap::ValueEnum;
use std::collections::HashMap;

use memtrace::engine::{columns_of, to_json, traverse_columns, Engine, Output, Plan};
use memtrace::{Cancel, EngineError, Params, Value};

use crate::error::{io, CliError, Result};
use memtrace_table as table;

/// Output formats of query results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryFormat {
    /// Aligned columns (long values cut with `…`).
    Table,
    /// `{"columns": [...], "rows": [[...], ...]}`, rows written as they come.
    Json,
    /// RFC 4180 CSV with a header line, rows written as they come.
    Csv,
    /// TRACE and FORWARD only: the provenance tree, op names on the branches.
    Tree,
    /// TRACE and FORWARD only: the result subgraph as Graphviz DOT.
    Dot,
    /// TRACE and FORWARD only: the result subgraph as a Mermaid flowchart.
    Mermaid,
}

/// Longest cell a table shows before cutting it.
const CELL_MAX: usize = 80;

/// Reads `name=value` as a parameter: integers, decimals, true/false and
/// null are typed; anything else is text.
pub fn parse_param(s: &str) -> std::result::Result<(String, Value), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("--param {s}: expected NAME=VALUE"))?;
    let name = name.trim().trim_start_matches('$');
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "--param {s}: a parameter name is letters, digits and _"
        ));
    }
    let v = if let Ok(n) = value.parse::<i64>() {
        Value::Int(n)
    } else if let Ok(x) = value.parse::<f64>().map_err(|_| ()).and_then(|x| {
        if x.is_finite() && value.contains('.') {
            Ok(x)
        } else {
            Err(())
        }
    }) {
        Value::Float(x)
    } else {
        match value {
            "true" | "TRUE" => Value::Bool(true),
            "false" | "FALSE" => Value::Bool(false),
            "null" | "NULL" => Value::Null,
            _ => Value::Str(value.to_string()),
        }
    };
    Ok((name.to_string(), v))
}

/// A value as a table or CSV cell: text as is, infinities and NaN as
/// Python writes them (`Infinity`, `-Infinity`, `NaN`), others as JSON.
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Str(s) => s.clone(),
        Value::Float(x) if x.is_nan() => "NaN".into(),
        Value::Float(x) if x.is_infinite() => {
            if *x > 0.0 { "Infinity" } else { "-Infinity" }.into()
        }
        other => to_json(other).to_string(),
    }
}

/// A cell as a table shows it: on one line (line breaks and tabs as
/// spaces), other control characters shown escaped ([`table::visible`]),
/// cut to [`CELL_MAX`] characters with `…`.
pub fn cut(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| {
            if c == '\n' || c == '\r' || c == '\t' {
                ' '
            } else {
                c
            }
        })
        .collect();
    let one_line = table::visible(&one_line).into_owned();
    if one_line.chars().count() <= CELL_MAX {
        one_line
    } else {
        let mut t: String = one_line.chars().take(CELL_MAX - 1).collect();
        t.push('…');
        t
    }
}

/// A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Where the statements come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Given on the command line.
    Text(String),
    /// A script file.
    File(std::path::PathBuf),
    /// Standard input (not a terminal).
    Stdin,
}

impl Source {
    fn read(&self) -> Result<String> {
        match self {
            Source::Text(t) => Ok(t.clone()),
            Source::File(p) => std::fs::read_to_string(p).map_err(io(p.display())),
            Source::Stdin => {
                if std::io::stdin().is_terminal() {
                    return Err(CliError::Usage(
                        "give a statement, -f FILE, or statements on standard input \
                         (e.g. memtrace query \"SHOW TRACES\")"
                            .into(),
                    ));
                }
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(io("standard input"))?;
                Ok(text)
            }
        }
    }
}

/// Reads `--timeout`: seconds, more than zero (`2`, `0.5`).
pub fn parse_timeout(text: &str) -> std::result::Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() && s < 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!(
            "{text:?} is not a number of seconds above zero (such as 2 or 0.5)"
        )),
    }
}

/// Runs the statements of `source` against the database at `db`, in order,
/// printing each result; stops at the first statement that fails.
pub fn run(
    db: &Path,
    source: &Source,
    format: QueryFormat,
    params: &[(String, Value)],
    timeout: Option<Duration>,
    caps: crate::tree::TreeCaps,
) -> Result<ExitCode> {
    let text = source.read()?;
    let stopped = |limit: Duration| {
        CliError::Usage(format!(
            "the statement ran longer than {} s and was stopped (--timeout)",
            limit.as_secs_f64()
        ))
    };
    // Parsing counts toward the limit too: it cannot stop halfway, but a
    // script that took longer to parse than the limit is not run.
    let parse = |cancel: &Cancel| {
        let parsed = memtrace::query::parse_script(&text).map_err(memtrace::EngineError::from);
        cancel.check().and(parsed)
    };
    let statements = match timeout {
        Some(limit) => crate::timeout::with_timeout(limit, parse).map_err(|e| match e {
            EngineError::Cancelled => stopped(limit),
            e => e.into(),
        })?,
        None => parse(&Cancel::new())?,
    };
    // Statements that only read open the database for reading: quick, and
    // beside any other process that holds it.
    let db = if statements.iter().any(|s| s.writes()) {
        crate::opening::open_existing(db)?
    } else {
        crate::opening::open_read_only(db)?
    };
    let params: Params = params.iter().cloned().collect();
    if statements.is_empty() {
        return Err(CliError::Usage(
            "no statement to run (only comments or blanks)".into(),
        ));
    }
    let several = statements.len() > 1;
    let cancel = Cancel::new();
    let width = table::terminal_width();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for (i, stmt) in statements.iter().enumerate() {
        let mut one = |cancel: &Cancel| {
            db.plan_until(stmt, &params, &text, cancel)
                .and_then(|plan| {
                    print_result(&db, &plan, format, cancel, &mut out, i > 0, width, caps)
                })
        };
        let done = match timeout {
            Some(limit) => crate::timeout::with_timeout(limit, one),
            None => one(&cancel),
        };
        if let Err(e) = done {
            out.flush().map_err(io("stdout"))?;
            let e: CliError = match (e, timeout) {
                (EngineError::Cancelled, Some(limit)) => stopped(limit),
                (e, _) => e.into(),
            };
            return Err(if several {
                CliError::Usage(format!("statement {} ({stmt}): {e}", i + 1))
            } else {
                e
            });
        }
    }
    out.flush().map_err(io("stdout"))?;
    Ok(ExitCode::SUCCESS)
}

/// Op id -> op name in a trace (empty when the trace cannot be read by its graph id).
fn op_names(db: &Engine, trace: &str) -> HashMap<String, String> {
    let q = format!(
        "FIND ops IN TRACE '{}' RETURN op.id, op.name",
        trace.replace('\'', "''")
    );
    let mut out = HashMap::new();
    if let Ok(r) = db.query(&q) {
        for row in r.rows {
            if let (Some(id), Some(name)) = (row[0].as_str(), row[1].as_str()) {
                out.insert(id.to_string(), name.to_string());
            }
        }
    }
    out
}

fn stdout_err(e: std::io::Error) -> EngineError {
    EngineError::Io {
        path: "stdout".into(),
        source: e,
    }
}

/// Runs one planned statement and prints its result; `after` puts a blank
/// line (table, CSV) or a line break (JSON) after the previous result.
/// Tables are fitted to `width` columns when given; a tree is drawn within
/// `caps`.
#[allow(clippy::too_many_arguments)]
pub fn print_result(
    db: &Engine,
    plan: &Plan,
    format: QueryFormat,
    cancel: &Cancel,
    out: &mut dyn Write,
    after: bool,
    width: Option<usize>,
    caps: crate::tree::TreeCaps,
) -> std::result::Result<(), EngineError> {
    match format {
        QueryFormat::Tree | QueryFormat::Dot | QueryFormat::Mermaid => {
            print_drawing(db, plan, format, cancel, out, after, caps)
        }
        QueryFormat::Table => print_table(db, plan, cancel, out, after, width),
        QueryFormat::Json | QueryFormat::Csv => print_rows(db, plan, format, cancel, out, after),
    }
}

/// Prints a walk's result as a tree, or its subgraph as a DOT or Mermaid
/// drawing, with op names on the branches.
fn print_drawing(
    db: &Engine,
    plan: &Plan,
    format: QueryFormat,
    cancel: &Cancel,
    out: &mut dyn Write,
    after: bool,
    caps: crate::tree::TreeCaps,
) -> std::result::Result<(), EngineError> {
    let Plan::Traverse(t) = plan else {
        return Err(EngineError::FormatNeedsWalk {
            format: format
                .to_possible_value()
                .map(|v| v.get_name().to_string())
                .unwrap_or_default(),
        });
    };
    // The tree is drawn from the walk's steps (each variable with the
    // one it was reached from), the drawings from the result subgraph.
    let mut rows = Vec::new();
    if format == QueryFormat::Tree {
        db.walk_tree(plan, cancel, &mut |r| {
            rows.push(r);
            Ok(true)
        })?;
    } else {
        let mut drawn = t.clone();
        drawn.output = Output::Subgraph;
        drawn.columns = traverse_columns(Output::Subgraph);
        db.run_plan(&Plan::Traverse(drawn), cancel, &mut |r| {
            rows.push(r);
            Ok(true)
        })?;
    }
    let mut names: HashMap<String, HashMap<String, String>> = HashMap::new();
    for row in &rows {
        if let Some(Value::Str(trace)) = row.first() {
            if !names.contains_key(trace) {
                names.insert(trace.clone(), op_names(db, trace));
            }
        }
    }
    let name = |trace: &str, op: &str| {
        names
            .get(trace)
            .and_then(|m| m.get(op))
            .cloned()
            .unwrap_or_else(|| op.to_string())
    };
    if after {
        writeln!(out).map_err(stdout_err)?;
    }
    let how = match format {
        QueryFormat::Dot => crate::tree::Drawing::Dot,
        QueryFormat::Mermaid => crate::tree::Drawing::Mermaid,
        _ => return crate::tree::draw(&rows, t.limit, caps, &name, cancel, out),
    };
    let text = crate::tree::subgraph(&rows, how, &name);
    cancel.check()?;
    write!(out, "{text}").map_err(stdout_err)?;
    Ok(())
}

/// Prints the rows as an aligned table, fitted to `width` columns when given.
fn print_table(
    db: &Engine,
    plan: &Plan,
    cancel: &Cancel,
    out: &mut dyn Write,
    after: bool,
    width: Option<usize>,
) -> std::result::Result<(), EngineError> {
    let columns = columns_of(plan);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut numeric: Vec<bool> = Vec::new();
    db.run_plan(plan, cancel, &mut |r| {
        if numeric.is_empty() {
            numeric = r
                .iter()
                .map(|v| matches!(v, Value::Int(_) | Value::Float(_)))
                .collect();
        }
        rows.push(r.iter().map(|v| cut(&cell(v))).collect());
        Ok(true)
    })?;
    cancel.check()?;
    let header: Vec<&str> = columns.iter().map(String::as_str).collect();
    let right: Vec<usize> = (0..numeric.len()).filter(|i| numeric[*i]).collect();
    if after {
        writeln!(out).map_err(stdout_err)?;
    }
    write!(out, "{}", table::render_fit(&header, &rows, &right, width)).map_err(stdout_err)?;
    writeln!(
        out,
        "({} row{})",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    )
    .map_err(stdout_err)?;
    Ok(())
}

/// Prints the rows as JSON or CSV, each row as it comes.
fn print_rows(
    db: &Engine,
    plan: &Plan,
    format: QueryFormat,
    cancel: &Cancel,
    out: &mut dyn Write,
    after: bool,
) -> std::result::Result<(), EngineError> {
    let columns = columns_of(plan);
    // Rows are written as they come. The header waits for the first
    // row (or the end), so that a statement that fails before its
    // first row leaves nothing on standard output.
    let mut header = if after && format == QueryFormat::Csv {
        "\r\n".to_string()
    } else {
        String::new()
    };
    match format {
        QueryFormat::Json => header.push_str(&format!(
            "{{\"columns\": {}, \"rows\": [",
            serde_json::to_string(&columns)?
        )),
        _ => {
            let h: Vec<String> = columns.iter().map(|c| csv_field(c)).collect();
            header.push_str(&format!("{}\r\n", h.join(",")));
        }
    }
    let mut n = 0usize;
    db.run_plan(plan, cancel, &mut |r| {
        if n == 0 {
            out.write_all(header.as_bytes()).map_err(stdout_err)?;
        }
        match format {
            QueryFormat::Json => {
                let arr = serde_json::Value::Array(r.iter().map(to_json).collect());
                write!(out, "{}\n  {arr}", if n == 0 { "" } else { "," })
            }
            _ => {
                let line: Vec<String> = r.iter().map(|v| csv_field(&cell(v))).collect();
                write!(out, "{}\r\n", line.join(","))
            }
        }
        .map_err(stdout_err)?;
        n += 1;
        Ok(true)
    })?;
    if n == 0 {
        out.write_all(header.as_bytes()).map_err(stdout_err)?;
    }
    if format == QueryFormat::Json {
        let end = if n > 0 { "\n" } else { "" };
        writeln!(out, "{end}]}}").map_err(stdout_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_typed() {
        assert_eq!(parse_param("k=3").unwrap(), ("k".into(), Value::Int(3)));
        assert_eq!(
            parse_param("$x=1.5").unwrap(),
            ("x".into(), Value::Float(1.5))
        );
        assert_eq!(
            parse_param("t=true").unwrap(),
            ("t".into(), Value::Bool(true))
        );
        assert_eq!(
            parse_param("s=a=b").unwrap(),
            ("s".into(), Value::Str("a=b".into()))
        );
        assert_eq!(
            parse_param("s=1e5").unwrap(),
            ("s".into(), Value::Str("1e5".into()))
        );
        assert!(parse_param("novalue").is_err());
        assert!(parse_param("bad name=1").is_err());
    }

    #[test]
    fn csv_quotes_what_needs_it_and_tables_cut_long_cells() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
        let long = "x".repeat(200);
        assert_eq!(cut(&long).chars().count(), CELL_MAX);
        assert!(cut(&long).ends_with('…'));
        assert_eq!(cut("a\nb"), "a b");
        assert_eq!(cell(&Value::Float(f64::INFINITY)), "Infinity");
        assert_eq!(cell(&Value::Float(f64::NEG_INFINITY)), "-Infinity");
        assert_eq!(cell(&Value::Float(f64::NAN)), "NaN");
        assert_eq!(cell(&Value::Float(1.5)), "1.5");
        assert_eq!(cut("\u{1b}[31mred\0"), "\\u{1b}[31mred\\u{0}");
    }
}
