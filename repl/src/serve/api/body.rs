//! Reading what a request sends: its JSON body, its fields and its parameters.

use std::io::Read;

use memtrace::engine::json_kind;
use memtrace::InputFormat;
use serde_json::{Map, Value};

use super::limits::MAX_SMALL_BODY;
use crate::serve::http::{ApiError, Target};

/// Reads a request body of at most `limit` bytes.
pub(super) fn read_body(body: &mut dyn Read, limit: u64) -> Result<Vec<u8>, ApiError> {
    let mut buf = Vec::new();
    body.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ApiError::bad(format!("reading the request body: {e}")))?;
    if buf.len() as u64 > limit {
        return Err(ApiError::too_large(limit));
    }
    Ok(buf)
}

/// A JSON object body.
pub(super) fn json_body(body: &mut dyn Read) -> Result<Map<String, Value>, ApiError> {
    let bytes = read_body(body, MAX_SMALL_BODY)?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad(format!(
            "the body is not JSON: {e} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    match value {
        Value::Object(m) => Ok(m),
        other => Err(ApiError::bad(format!(
            "the body must be a JSON object, found {}",
            json_kind(&other)
        ))),
    }
}

/// Checks that `body` has only `allowed` fields.
pub(super) fn only_fields(body: &Map<String, Value>, allowed: &[&str]) -> Result<(), ApiError> {
    match body.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(ApiError::bad(format!(
            "unknown field {k:?} (allowed: {})",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

/// A string field: required, or optional with a default.
pub(super) fn text_field<'a>(
    body: &'a Map<String, Value>,
    name: &str,
    default: Option<&'a str>,
) -> Result<&'a str, ApiError> {
    match body.get(name) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => {
            default.ok_or_else(|| ApiError::bad(format!("{name}: missing (a string is needed)")))
        }
        Some(other) => Err(ApiError::bad(format!(
            "{name}: must be a string, found {}",
            json_kind(other)
        ))),
    }
}

pub(super) fn direction(target: &Target) -> Result<&'static str, ApiError> {
    match target.param("dir").unwrap_or("backward") {
        "backward" | "back" | "trace" => Ok("backward"),
        "forward" => Ok("forward"),
        other => Err(ApiError::bad(format!(
            "dir: {other:?} is neither backward nor forward"
        ))),
    }
}

/// The format an import names (`format=json|jsonl`).
pub(super) fn import_format(t: &Target) -> Result<InputFormat, ApiError> {
    match t.param("format").unwrap_or("json") {
        "json" => Ok(InputFormat::Json),
        "jsonl" => Ok(InputFormat::JsonLines),
        other => Err(ApiError::bad(format!(
            "format: {other:?} is neither json nor jsonl"
        ))),
    }
}
