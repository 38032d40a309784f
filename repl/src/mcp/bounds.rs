//! The limits a caller gives, checked, and long text cut to the cell limit.

use std::time::Duration;

use rmcp::ErrorData;
use serde_json::Value;

use super::errors::bad;
use super::limits::{CELL_CHARS, SECONDS_DEFAULT, SECONDS_MAX};

/// A number within its bounds, or the default.
pub fn bounded(
    given: Option<u64>,
    default: usize,
    max: usize,
    name: &str,
) -> Result<usize, ErrorData> {
    match given {
        None => Ok(default),
        Some(0) => Err(bad(format!("{name}: give at least 1"))),
        Some(n) if n as usize > max => Err(bad(format!("{name}: {n} is over the limit of {max}"))),
        Some(n) => Ok(n as usize),
    }
}

/// A JSON value with every string longer than the cell limit cut; says
/// whether it cut anything.
pub fn cut_cells(v: Value, cut: &mut bool) -> Value {
    match v {
        Value::String(s) if s.chars().count() > CELL_CHARS => {
            *cut = true;
            let mut t: String = s.chars().take(CELL_CHARS).collect();
            t.push('…');
            Value::String(t)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|x| cut_cells(x, cut)).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, x)| (k, cut_cells(x, cut))).collect())
        }
        other => other,
    }
}

/// A time limit in seconds within its bounds, or the default.
pub fn seconds(given: Option<f64>) -> Result<Duration, ErrorData> {
    match given {
        None => Ok(Duration::from_secs_f64(SECONDS_DEFAULT)),
        Some(s) if s > 0.0 && s <= SECONDS_MAX => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(bad(format!(
            "timeout_seconds: {s} is not between 0 and {SECONDS_MAX}"
        ))),
    }
}

/// A JSON value with every string longer than the cell limit cut.
pub fn cut_value(v: Value) -> Value {
    let mut cut = false;
    cut_cells(v, &mut cut)
}
