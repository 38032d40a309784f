//! How OTLP values are written in the export: the ids made from trace and
//! span ids, times, attributes nested at their dots, and values as text.

use serde_json::{Map, Value};

/// The graph id of an OpenTelemetry trace.
pub(crate) fn graph_id(trace_id: &str) -> String {
    format!("otel-{trace_id}")
}

/// The op id of a span.
pub(crate) fn op_id(span_id: &str) -> String {
    format!("span-{span_id}")
}

/// Nanoseconds since the Unix epoch as ISO-8601 UTC with microseconds.
pub(crate) fn iso(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let micros = ns % 1_000_000_000 / 1000;
    let day = i64::try_from(secs / 86_400).unwrap_or(i64::MAX);
    let rest = secs % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}.{micros:06}Z",
        crate::timestamp::civil_from_days(day),
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Span attributes nested at their dots (`llm.model_name` under `llm`, then
/// `model_name`), so that queries reach them as `op.meta.attributes.llm.model_name`.
/// A key that clashes with another (`a` and `a.b` both set), or that has an
/// empty part, is kept whole under `_flat`.
pub(crate) fn nest(pairs: impl IntoIterator<Item = (String, Value)>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut flat = Map::new();
    for (key, value) in pairs {
        if !insert_nested(&mut out, &key, value.clone()) {
            flat.insert(key, value);
        }
    }
    if !flat.is_empty() {
        out.insert("_flat".into(), Value::Object(flat));
    }
    out
}

/// Puts `value` in `root` at the path of `key`'s dots; false, with nothing
/// put, when a part of the path is empty or clashes with what is there.
fn insert_nested(root: &mut Map<String, Value>, key: &str, value: Value) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return false;
    }
    let mut cur = root;
    for p in &parts[..parts.len() - 1] {
        let next = cur
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        match next {
            Value::Object(m) => cur = m,
            _ => return false,
        }
    }
    let last = parts[parts.len() - 1];
    if cur.contains_key(last) {
        return false;
    }
    cur.insert(last.to_string(), value);
    true
}

/// A value as variable text: strings as they are, anything else as JSON.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}
