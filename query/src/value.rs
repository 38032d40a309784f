//! Values that expressions compute, and how they compare.

use std::cmp::Ordering;
use std::fmt;

/// A value: a field, a literal, or what an expression computes.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Absent or unknown.
    Null,
    /// A truth value.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// Text.
    Str(String),
    /// A list.
    List(Vec<Value>),
}

impl Value {
    /// Is it `TRUE`? (`NULL` and everything else is not.)
    pub fn is_true(&self) -> bool {
        matches!(self, Value::Bool(true))
    }

    /// The value as a number, when it is one or is text that reads as one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(n) => Some(*n as f64),
            Value::Float(x) => Some(*x),
            Value::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// The value as text, as `CONTAINS`, `STARTS WITH` and `=~` read it.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Str(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// Compares two values for `=`, `<` and the like: numbers with numbers
    /// (text that reads as a number counts as one when the other side is a
    /// number), text with text, truth values with truth values, lists item
    /// by item. `None` when either side is NULL or the kinds differ.
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (Null, _) | (_, Null) => None,
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Str(a), Str(b)) => Some(a.cmp(b)),
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Int(_) | Float(_), Int(_) | Float(_) | Str(_)) | (Str(_), Int(_) | Float(_)) => {
                self.as_f64()?.partial_cmp(&other.as_f64()?)
            }
            (List(a), List(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.compare(y)? {
                        Ordering::Equal => continue,
                        o => return Some(o),
                    }
                }
                Some(a.len().cmp(&b.len()))
            }
            _ => None,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 2,
            Value::Str(_) => 3,
            Value::List(_) => 4,
        }
    }

    /// A total order for sorting and grouping: NULL first, then truth
    /// values, numbers, text and lists.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        use Value::*;
        match (self, other) {
            (Int(a), Int(b)) => a.cmp(b),
            (Int(_) | Float(_), Int(_) | Float(_)) => {
                let (a, b) = (self.as_f64().unwrap_or(0.0), other.as_f64().unwrap_or(0.0));
                a.total_cmp(&b)
            }
            (Str(a), Str(b)) => a.cmp(b),
            (Bool(a), Bool(b)) => a.cmp(b),
            (List(a), List(b)) => {
                for (x, y) in a.iter().zip(b) {
                    match x.total_cmp(y) {
                        Ordering::Equal => continue,
                        o => return o,
                    }
                }
                a.len().cmp(&b.len())
            }
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}

impl From<Option<String>> for Value {
    fn from(s: Option<String>) -> Value {
        s.map_or(Value::Null, Value::Str)
    }
}

impl From<Option<&str>> for Value {
    fn from(s: Option<&str>) -> Value {
        s.map_or(Value::Null, Value::from)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Int(i64::from(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_across_kinds_and_with_numeric_text() {
        assert_eq!(
            Value::Int(2).compare(&Value::Float(2.0)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            Value::Int(2).compare(&Value::from("10")),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::from("b").compare(&Value::from("a")),
            Some(Ordering::Greater)
        );
        assert_eq!(Value::Null.compare(&Value::Null), None);
        assert_eq!(Value::from("x").compare(&Value::Int(1)), None);
        assert_eq!(Value::Bool(true).compare(&Value::Int(1)), None);
    }

    #[test]
    fn the_total_order_puts_null_first() {
        let mut v = vec![
            Value::from("a"),
            Value::Int(3),
            Value::Null,
            Value::Float(1.5),
            Value::Bool(false),
        ];
        v.sort_by(|a, b| a.total_cmp(b));
        assert_eq!(
            v,
            vec![
                Value::Null,
                Value::Bool(false),
                Value::Float(1.5),
                Value::Int(3),
                Value::from("a")
            ]
        );
    }
}
