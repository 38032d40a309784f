//! Literals and the values they stand for.

use crate::node_ref::quote;
use crate::value::Value;

use super::expr::Literal;

/// A value written as a literal the parser reads back as the same value:
/// `NULL`, `TRUE`, `FALSE`, an integer, a float that keeps its fraction or
/// exponent (`2.0`, `1e-7`), a quoted string with quotes doubled
/// (`'it''s'`), a list in brackets (`['a', 'b']`).
///
/// A float that is not finite has no literal and is written `NULL`. A list
/// inside a list reads back inside an expression, but not as the value of
/// a `WITH $p = ...`, which takes literals and lists of literals only.
pub fn value_literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Bool(true) => "TRUE".to_string(),
        Value::Bool(false) => "FALSE".to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(x) if x.is_finite() => Literal::Float(*x).to_string(),
        Value::Float(_) => "NULL".to_string(),
        Value::Str(s) => quote(s),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(value_literal).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

/// The value a literal stands for.
pub(crate) fn literal_value(l: &Literal) -> Value {
    match l {
        Literal::Str(s) => Value::Str(s.clone()),
        Literal::Int(n) => Value::Int(*n),
        Literal::Float(x) => Value::Float(*x),
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Null => Value::Null,
    }
}
