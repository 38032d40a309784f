//! The typed records an export is read into, by either reader, and the
//! rules both readers apply to them as they read (the computed keys
//! smartcomment writes, which are left out when they say what the record
//! says already).

use std::fmt;

use serde_json::{Map, Value};

/// Why an input is invalid, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// JSON path of the offending value (`$` is the whole document).
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl Invalid {
    pub(crate) fn at(path: impl Into<String>, reason: impl Into<String>) -> Invalid {
        let path = path.into();
        Invalid {
            path: if path.is_empty() { "$".into() } else { path },
            reason: reason.into(),
        }
    }
}

/// A string field that may be absent (outer `None`), null (inner `None`) or a string.
pub(crate) type AbsentOrNull = Option<Option<String>>;

/// Fields every record carries.
#[derive(Debug, Default)]
pub(crate) struct InCommon {
    pub created_at: Option<String>,
    pub filename: Option<String>,
    pub lineno: Option<i64>,
    pub graph_id: AbsentOrNull,
    pub user_id: AbsentOrNull,
    pub project_id: AbsentOrNull,
    pub metadata: Option<String>,
    pub trigger_point: Option<String>,
    pub extra: Option<String>,
}

#[derive(Debug)]
pub(crate) struct InSession {
    pub session_id: String,
    pub session_name: Option<String>,
    pub comment: Option<String>,
    pub category: Option<String>,
    pub common: InCommon,
}

#[derive(Debug)]
pub(crate) struct InVar {
    pub name: String,
    pub class_name: Option<String>,
    pub version: u32,
    pub value: Option<String>,
    pub comment: Option<String>,
    pub category: Option<String>,
    pub session_id: Option<String>,
    pub node_id: Option<String>,
    pub full_node_id: String,
    pub common: InCommon,
}

#[derive(Debug)]
pub(crate) struct InOp {
    pub op_id: String,
    pub op_name: Option<String>,
    pub comment: Option<String>,
    pub category: Option<String>,
    pub session_id: Option<String>,
    pub common: InCommon,
}

#[derive(Debug)]
pub(crate) struct InEdge {
    pub edge_id: String,
    pub op_id: String,
    pub category: Option<String>,
    pub comment: Option<String>,
    pub source: String,
    pub target: String,
    pub session_id: String,
    pub common: InCommon,
}

/// A list of records read in parts, in order (the fast reader reads a long
/// list a few thousand records at a time, on two threads; the parts are
/// kept as they are instead of being copied into one vector).
pub(crate) struct Parts<T>(Vec<Vec<T>>);

impl<T> Parts<T> {
    /// The parts, each in order, in order.
    pub(crate) fn new(parts: Vec<Vec<T>>) -> Parts<T> {
        Parts(parts)
    }

    /// How many records.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    /// The records in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter().flatten()
    }

    /// The parts.
    pub(crate) fn parts(&self) -> &[Vec<T>] {
        &self.0
    }
}

impl<T> Default for Parts<T> {
    fn default() -> Self {
        Parts(Vec::new())
    }
}

impl<T> From<Vec<T>> for Parts<T> {
    fn from(v: Vec<T>) -> Self {
        Parts(vec![v])
    }
}

impl<T> IntoIterator for Parts<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().flatten()
    }
}

/// Shown as one list, however it was read.
impl<T: fmt::Debug> fmt::Debug for Parts<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A parsed, not yet validated, trace.
#[derive(Debug)]
pub(crate) struct ParsedTrace {
    /// The top-level object with `data` as a null placeholder, in order.
    pub header: Map<String, Value>,
    pub graph_id: String,
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    pub created_at: Option<String>,
    pub data_keys: Vec<String>,
    pub data_extra: Map<String, Value>,
    pub sessions: Parts<InSession>,
    pub nodes: Parts<InVar>,
    pub ops: Parts<InOp>,
    pub edges: Parts<InEdge>,
    pub annotations: Option<Vec<Map<String, Value>>>,
}

/// Local ids resolved by validation.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub var_sessions: Vec<Option<u32>>,
    pub op_sessions: Vec<Option<u32>>,
    /// (op, source, target, session) per edge.
    pub edges: Vec<(u32, u32, u32, u32)>,
    /// (query, evidence, labelled op) per annotation.
    pub cases: Vec<(Option<u32>, Vec<u32>, Option<u32>)>,
}

/// What the top-level visit yields.
pub(crate) type Top = (Map<String, Value>, Option<DataParts>);

/// The parsed `data` object: its keys in order, its other members, and its
/// lists as typed records.
#[derive(Debug, Default)]
pub(crate) struct DataParts {
    pub keys: Vec<String>,
    pub extra: Map<String, Value>,
    pub sessions: Parts<InSession>,
    pub nodes: Parts<InVar>,
    pub ops: Parts<InOp>,
    pub edges: Parts<InEdge>,
    pub annotations: Option<Vec<Map<String, Value>>>,
}

/// What a JSON value is, in words for error messages ("a string", "an array", ...).
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `filename:lineno`, as smartcomment computes `trigger_point`.
pub(crate) fn trigger_point(filename: Option<&str>, lineno: Option<i64>) -> String {
    let l = lineno.map(|l| l.to_string());
    format!(
        "{}:{}",
        filename.unwrap_or("None"),
        l.as_deref().unwrap_or("None")
    )
}

/// Whether `text` is what [`trigger_point`] makes of `filename` and
/// `lineno` (compared without building it: this runs once per record).
fn is_trigger_point(text: &str, filename: Option<&str>, lineno: Option<i64>) -> bool {
    let Some((f, l)) = text.rsplit_once(':') else {
        return false;
    };
    f == filename.unwrap_or("None")
        && match lineno {
            None => l == "None",
            Some(n) => is_decimal(l, n),
        }
}

/// Whether `text` is `n` written in decimal, as `n.to_string()` writes it.
fn is_decimal(text: &str, n: i64) -> bool {
    use std::io::Write;
    let mut buf = [0u8; 24];
    let mut w = &mut buf[..];
    // 24 bytes hold any i64 in decimal.
    let _ = write!(w, "{n}");
    let len = 24 - w.len();
    text.as_bytes() == &buf[..len]
}

/// Whether `node_id` is `{name}@{version}` (compared without building it).
pub(crate) fn is_name_at_version(node_id: &str, name: &str, version: u32) -> bool {
    node_id
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('@'))
        .is_some_and(|v| is_decimal(v, i64::from(version)))
}

pub(crate) fn finish_common(mut c: InCommon, extra: Option<String>) -> InCommon {
    if c.trigger_point
        .as_deref()
        .is_some_and(|t| is_trigger_point(t, c.filename.as_deref(), c.lineno))
    {
        c.trigger_point = None;
    }
    c.extra = extra;
    c
}

/// A variable's full name as smartcomment makes it: `class:name`, or the
/// name alone when the class is absent or empty.
pub(crate) fn full_name_of(class_name: Option<&str>, name: &str) -> String {
    match class_name {
        Some(c) if !c.is_empty() => format!("{c}:{name}"),
        _ => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_points_and_node_ids_are_compared_without_being_built() {
        for (file, line) in [
            (Some("a.py"), Some(12)),
            (None, None),
            (Some("C:\\x:y.py"), Some(-3)),
            (Some("b"), None),
        ] {
            let made = trigger_point(file, line);
            assert!(is_trigger_point(&made, file, line), "{made}");
            assert!(!is_trigger_point(&format!("{made}0"), file, line));
            assert!(!is_trigger_point(&format!("x{made}"), file, line));
        }
        assert!(!is_trigger_point("a.py:012", Some("a.py"), Some(12)));
        assert!(!is_trigger_point("a.py", Some("a.py"), None));
        assert!(is_decimal("-9223372036854775808", i64::MIN));
        assert!(is_decimal("0", 0) && !is_decimal("", 0) && !is_decimal("+1", 1));
        assert!(is_name_at_version("x@3", "x", 3));
        assert!(is_name_at_version("a@b@10", "a@b", 10));
        assert!(!is_name_at_version("x@3", "x", 30));
        assert!(!is_name_at_version("x3", "x", 3));
        assert!(!is_name_at_version("y@3", "x", 3));
    }
}
