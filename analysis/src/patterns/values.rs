//! How the patterns speak the query language: a count as a query value,
//! parameters as text, and the error for a parameter a pattern does not take.

use memtrace_engine::query::ast::value_literal;
use memtrace_engine::query::Value;

use crate::error::AnalysisError;

/// `$a = 1, $b = ['x']`.
pub fn params_text(params: &[(String, Value)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("${k} = {}", value_literal(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error for a parameter `what` (a pattern) does not take.
pub(crate) fn no_such_param<'a>(
    what: &str,
    name: &str,
    takes: impl Iterator<Item = &'a str>,
) -> AnalysisError {
    AnalysisError::UnknownParameter {
        pattern: what.to_string(),
        name: name.to_string(),
        takes: takes.map(str::to_string).collect(),
    }
}

/// A count as a query value.
pub(crate) fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}
