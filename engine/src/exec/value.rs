//! Row values: a query's collected result, the conversions between query
//! values and JSON, and the sinks that rows stream to (owned rows, or
//! cells that borrow the trace's text).

use memtrace_query::Value;
use serde::Serialize;

use crate::error::Result;

/// A query's answer: column names and rows of JSON values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryResult {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// Converts a query value to JSON. JSON has no infinity and no NaN: plus
/// and minus infinity become the numbers `1e+999` and `-1e+999` (which
/// JSON readers, Python's included, read back as infinities; they are how
/// an import stores Python's `Infinity`), NaN becomes `null`.
pub fn to_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(n) => serde_json::Value::from(*n),
        Value::Float(x) => serde_json::Number::from_f64(*x)
            .or_else(|| match *x {
                f64::INFINITY => "1e+999".parse().ok(),
                f64::NEG_INFINITY => "-1e+999".parse().ok(),
                _ => None,
            })
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Value::Str(s) => serde_json::Value::String(s.clone()),
        Value::List(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
    }
}

/// Converts a query value to JSON, moving its strings.
pub fn into_json(v: Value) -> serde_json::Value {
    match v {
        Value::Str(s) => serde_json::Value::String(s),
        Value::List(items) => serde_json::Value::Array(items.into_iter().map(into_json).collect()),
        other => to_json(&other),
    }
}

/// Converts JSON to a query value (an object becomes its JSON text; a
/// number too large for a double, such as the `1e+999` an import stores for
/// Python's `Infinity`, becomes an infinity).
pub fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => n
                .as_f64()
                .or_else(|| n.to_string().parse().ok())
                .map_or(Value::Null, Value::Float),
        },
        serde_json::Value::String(s) => Value::Str(s.clone()),
        serde_json::Value::Array(a) => Value::List(a.iter().map(from_json).collect()),
        serde_json::Value::Object(_) => Value::Str(v.to_string()),
    }
}

/// The value at `path` in a JSON text (a record's metadata), `Null` when
/// there is no text, it is not JSON, or the path leads nowhere.
pub(super) fn meta_path(json: Option<&str>, path: &[String]) -> Value {
    let Some(text) = json else {
        return Value::Null;
    };
    let Ok(root) = serde_json::from_str::<serde_json::Value>(text) else {
        return Value::Null;
    };
    let mut cur = &root;
    for p in path {
        cur = match cur {
            serde_json::Value::Object(m) => match m.get(p) {
                Some(v) => v,
                None => return Value::Null,
            },
            serde_json::Value::Array(a) => match p.parse::<usize>().ok().and_then(|i| a.get(i)) {
                Some(v) => v,
                None => return Value::Null,
            },
            _ => return Value::Null,
        };
    }
    from_json(cur)
}

/// Where rows go. Returning `false` stops the query early.
pub type Sink<'s> = dyn FnMut(Vec<Value>) -> Result<bool> + 's;

/// One value of a row handed to a [`CellSink`]: either owned by the row, or
/// text borrowed from the trace the query reads (an op id, a name, a graph id),
/// valid for the call only. Lending is what lets a traversal hand out
/// thousands of rows without copying each row's strings.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    /// A value the row owns.
    Value(Value),
    /// Text borrowed for the duration of the call.
    Text(&'a str),
}

impl<'a> Cell<'a> {
    /// The text, borrowed or owned; `None` for any other value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Cell::Text(s) => Some(s),
            Cell::Value(Value::Str(s)) => Some(s),
            Cell::Value(_) => None,
        }
    }

    /// The integer, if the cell holds one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Cell::Value(Value::Int(n)) => Some(*n),
            _ => None,
        }
    }

    /// The cell as a query value (borrowed text is copied).
    pub fn to_value(&self) -> Value {
        match self {
            Cell::Text(s) => Value::Str((*s).to_string()),
            Cell::Value(v) => v.clone(),
        }
    }

    /// Takes the cell's value, leaving `Null` (borrowed text is copied).
    pub fn take(&mut self) -> Value {
        match self {
            Cell::Text(s) => Value::Str((*s).to_string()),
            Cell::Value(v) => std::mem::replace(v, Value::Null),
        }
    }

    /// Text borrowed as a cell, or `Null` when there is none.
    pub fn text(s: Option<&'a str>) -> Cell<'a> {
        match s {
            Some(s) => Cell::Text(s),
            None => Cell::Value(Value::Null),
        }
    }
}

/// Where rows go as cells: each row is borrowed for the call (its owned values
/// may be taken with [`Cell::take`]). Returning `false` stops the query
/// early.
pub type CellSink<'s> = dyn FnMut(&mut [Cell<'_>]) -> Result<bool> + 's;

/// What [`Engine::query_each`](crate::Engine::query_each) hands rows
/// to: any closure that takes a row's cells, or a [`CellSink`]. A closure
/// is compiled into the walks that hand out rows one by one (TRACE and
/// FORWARD), so that each row costs no call through a pointer.
pub trait CellFn: for<'c> FnMut(&mut [Cell<'c>]) -> Result<bool> {}

impl<F: ?Sized + for<'c> FnMut(&mut [Cell<'c>]) -> Result<bool>> CellFn for F {}

/// Hands an owned row to a cell sink, each value as a cell it owns.
pub(crate) fn give<S: ?Sized + CellFn>(sink: &mut S, row: Vec<Value>) -> Result<bool> {
    let mut cells: Vec<Cell<'_>> = row.into_iter().map(Cell::Value).collect();
    sink(&mut cells)
}

/// Takes a row out of its cells as owned values.
pub(crate) fn take_row(cells: &mut [Cell<'_>]) -> Vec<Value> {
    cells.iter_mut().map(Cell::take).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infinities_go_through_json_and_nan_becomes_null() {
        let stored: serde_json::Value = serde_json::from_str("[1e999, -1e999, 1.5, 7]").unwrap();
        let values: Vec<Value> = stored.as_array().unwrap().iter().map(from_json).collect();
        assert_eq!(
            values,
            [
                Value::Float(f64::INFINITY),
                Value::Float(f64::NEG_INFINITY),
                Value::Float(1.5),
                Value::Int(7)
            ]
        );
        let back: Vec<String> = values.iter().map(|v| to_json(v).to_string()).collect();
        assert_eq!(back, ["1e+999", "-1e+999", "1.5", "7"]);
        assert_eq!(to_json(&Value::Float(f64::NAN)), serde_json::Value::Null);
    }
}
