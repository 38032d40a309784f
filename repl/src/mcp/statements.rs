//! Statements of the query language: run within their limits, explained, refused when they store.

use std::time::{Duration, Instant};

use memtrace::engine::{Engine, Plan};
use memtrace::{EngineError, Params};
use rmcp::ErrorData;
use serde_json::Value;

use super::bounds::cut_cells;
use super::errors::{bad, engine};
use super::limits::{NOTICE, ROWS_MAX};
use super::params::{ExecuteArgs, QueryArgs, RunPatternArgs};
use super::results::{Explained, Rows};
use crate::timeout::with_timeout;

/// Why a statement is refused by the reading tools, if it is.
fn writes(plan: &Plan) -> Option<&'static str> {
    match plan {
        Plan::Attribute(_) => Some("ATTRIBUTE stores verdicts"),
        Plan::SavePattern(_) => Some("SAVE PATTERN stores a pattern"),
        Plan::DropPattern(_) => Some("DROP PATTERN stores a tombstone"),
        _ => None,
    }
}

/// Runs a planned statement within its limits.
pub fn rows(db: &Engine, plan: &Plan, limit: usize, timeout: Duration) -> Result<Rows, ErrorData> {
    let start = Instant::now();
    let (columns, data, truncated) = with_timeout(timeout, |cancel| {
        let mut rows: Vec<Vec<Value>> = Vec::new();
        let mut truncated = false;
        let columns = db.run_plan(plan, cancel, &mut |row| {
            if rows.len() >= limit {
                truncated = true;
                return Ok(false);
            }
            rows.push(row.iter().map(memtrace::engine::to_json).collect());
            Ok(true)
        })?;
        Ok::<_, EngineError>((columns, rows, truncated))
    })
    .map_err(engine)?;
    let mut cut = false;
    let data = data
        .into_iter()
        .map(|r| r.into_iter().map(|c| cut_cells(c, &mut cut)).collect())
        .collect();
    Ok(Rows {
        notice: NOTICE.into(),
        columns,
        data,
        truncated,
        row_limit: limit,
        cells_cut: cut,
        elapsed_ms: start.elapsed().as_millis() as u64,
    })
}

/// Runs a reading statement; one that stores is refused, saying where it can run.
pub fn query(
    db: &Engine,
    a: QueryArgs,
    limit: usize,
    timeout: Duration,
    writer: bool,
) -> Result<Rows, ErrorData> {
    let params: Params = a
        .params
        .unwrap_or_default()
        .iter()
        .map(|(k, v)| {
            (
                k.trim_start_matches('$').to_string(),
                memtrace::engine::from_json(v),
            )
        })
        .collect();
    let plan = db.prepare(&a.statement, &params).map_err(engine)?;
    if let Some(why) = writes(&plan) {
        return Err(bad(if writer {
            format!("{why}: run it with the execute tool")
        } else {
            format!("{why}, and this server only reads: the attribute_case tool gives a verdict without storing it; to store, start it as `memtrace mcp --allow-writes` and use its execute tool")
        }));
    }
    rows(db, &plan, limit, timeout)
}

/// The statement without a leading EXPLAIN, and without its final `;`.
pub fn explained_statement(statement: &str) -> String {
    let text = statement.trim().trim_end_matches(';').to_string();
    text.strip_prefix("EXPLAIN ")
        .or_else(|| text.strip_prefix("explain "))
        .unwrap_or(&text)
        .to_string()
}

/// The plan of `inner`, one step a line, with the statement printed back.
pub fn explain(db: &Engine, inner: String) -> Result<Explained, ErrorData> {
    let plan = db
        .prepare(&format!("EXPLAIN {inner}"), &Params::new())
        .map_err(engine)?;
    let rows = rows(db, &plan, ROWS_MAX, Duration::from_secs(10))?;
    let lines: Vec<String> = rows
        .data
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect();
    let statement = memtrace::query::parse_statement(&inner)
        .map(|s| s.to_string())
        .unwrap_or(inner);
    Ok(Explained {
        statement,
        plan: lines.join("\n"),
    })
}

/// RUN PATTERN's statement for a pattern's name, its OVER condition and its parameter values.
pub fn pattern_statement(a: &RunPatternArgs) -> Result<String, ErrorData> {
    let name = a.name.trim().to_string();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad(format!(
            "name: {name:?} is not a pattern name (letters, digits and _; SHOW PATTERNS lists them)"
        )));
    }
    let mut text = format!("RUN PATTERN {name}");
    if let Some(over) = a.over.as_deref().filter(|o| !o.trim().is_empty()) {
        text.push_str(&format!(" OVER TRACES WHERE {over}"));
    }
    if let Some(params) = &a.params {
        let mut pairs: Vec<_> = params.iter().collect();
        pairs.sort_by(|x, y| x.0.cmp(y.0));
        let given = pairs
            .iter()
            .map(|(k, v)| Ok(format!("${} = {}", k.trim_start_matches('$'), literal(v)?)))
            .collect::<Result<Vec<_>, ErrorData>>()?;
        if !given.is_empty() {
            text.push_str(&format!(" WITH {}", given.join(", ")));
        }
    }
    Ok(text)
}

/// A JSON value as a literal of the query language (for RUN PATTERN's WITH).
fn literal(v: &Value) -> Result<String, ErrorData> {
    Ok(match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        Value::Array(a) => format!(
            "[{}]",
            a.iter()
                .map(literal)
                .collect::<Result<Vec<_>, _>>()?
                .join(", ")
        ),
        Value::Object(_) => {
            return Err(bad(
                "a parameter value is a string, number, boolean, null or a list of them",
            ))
        }
    })
}

/// Runs a statement that stores; a reading one is refused.
pub fn execute(db: &Engine, a: ExecuteArgs, timeout: Duration) -> Result<Rows, ErrorData> {
    let plan = db.prepare(&a.statement, &Params::new()).map_err(engine)?;
    if writes(&plan).is_none() {
        return Err(bad(
            "execute runs ATTRIBUTE, SAVE PATTERN and DROP PATTERN; run reading statements with the query tool",
        ));
    }
    rows(db, &plan, ROWS_MAX, timeout)
}
