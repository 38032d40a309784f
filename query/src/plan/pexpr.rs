//! Compiled expressions ([`Pexpr`]), what they read and call, and how
//! messages about them show values: what planning makes of written
//! expressions and evaluation runs over rows.

use crate::ast::CmpOp;
use crate::node_ref::quote;
use crate::value::Value;

use super::fields::{Field, Subject};
use super::inset::InSet;

/// A compiled expression.
#[derive(Debug, Clone)]
pub enum Pexpr {
    /// A constant (literals and bound parameters).
    Const(Value),
    /// A field of a subject of the current row.
    Field(Subject, Field),
    /// `[a, b]`.
    List(Vec<Pexpr>),
    /// A scalar function.
    Func(Func, Box<Pexpr>),
    /// The i-th aggregate of the current group.
    Agg(usize),
    /// The i-th group key of the current group.
    Group(usize),
    /// `NOT e` (three-valued).
    Not(Box<Pexpr>),
    /// `a AND b ...` (three-valued).
    And(Vec<Pexpr>),
    /// `a OR b ...` (three-valued).
    Or(Vec<Pexpr>),
    /// `a op b`.
    Cmp(CmpOp, Box<Pexpr>, Box<Pexpr>),
    /// `a CONTAINS b`.
    Contains(Box<Pexpr>, Box<Pexpr>),
    /// `a STARTS WITH b`.
    StartsWith(Box<Pexpr>, Box<Pexpr>),
    /// `a =~ 'literal'`, compiled once.
    RegexConst(Box<Pexpr>, Box<regex::Regex>),
    /// `a =~ b` with a computed pattern.
    Regex(Box<Pexpr>, Box<Pexpr>),
    /// `a [NOT] IN list`.
    In(Box<Pexpr>, Box<Pexpr>, bool),
    /// `a [NOT] IN [literals]`: the list indexed once, when planned.
    InSet(Box<Pexpr>, Box<InSet>, bool),
    /// `a IS [NOT] NULL`.
    IsNull(Box<Pexpr>, bool),
}

/// Scalar functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `lower(s)`.
    Lower,
    /// `upper(s)`.
    Upper,
    /// `length(s)`: characters of text, items of a list.
    Length,
}

impl Func {
    /// The names, for messages.
    pub const NAMES: &'static [&'static str] = &["lower", "upper", "length"];

    /// The function of a (lower-case) name.
    pub fn from_name(name: &str) -> Option<Func> {
        match name {
            "lower" => Some(Func::Lower),
            "upper" => Some(Func::Upper),
            "length" => Some(Func::Length),
            _ => None,
        }
    }
}

/// Aggregate functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    /// `count(*)`, `count(x)` (non-null), `count(DISTINCT x)`.
    Count,
    /// `min(x)`.
    Min,
    /// `max(x)`.
    Max,
    /// `sum(x)`.
    Sum,
    /// `avg(x)`.
    Avg,
}

impl AggFunc {
    /// The names, for messages.
    pub const NAMES: &'static [&'static str] = &["count", "min", "max", "sum", "avg"];

    /// The aggregate of a (lower-case) name.
    pub fn from_name(name: &str) -> Option<AggFunc> {
        match name {
            "count" => Some(AggFunc::Count),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "sum" => Some(AggFunc::Sum),
            "avg" => Some(AggFunc::Avg),
            _ => None,
        }
    }
}

impl Pexpr {
    /// Calls `f` on every field the expression reads.
    pub fn fields(&self, f: &mut dyn FnMut(Subject, &Field)) {
        match self {
            Pexpr::Field(s, x) => f(*s, x),
            Pexpr::List(v) | Pexpr::And(v) | Pexpr::Or(v) => v.iter().for_each(|x| x.fields(f)),
            Pexpr::Func(_, x)
            | Pexpr::Not(x)
            | Pexpr::IsNull(x, _)
            | Pexpr::RegexConst(x, _)
            | Pexpr::InSet(x, _, _) => x.fields(f),
            Pexpr::Cmp(_, a, b)
            | Pexpr::Contains(a, b)
            | Pexpr::StartsWith(a, b)
            | Pexpr::Regex(a, b)
            | Pexpr::In(a, b, _) => {
                a.fields(f);
                b.fields(f);
            }
            Pexpr::Const(_) | Pexpr::Agg(_) | Pexpr::Group(_) => {}
        }
    }
}

/// A value as a message shows it: text quoted, so that `'1'` and `1` differ.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::Str(s) => quote(s),
        other => other.to_string(),
    }
}

/// Why a regular expression does not compile, in one line (the regex
/// crate's own message repeats the pattern with a caret of its own).
pub(crate) fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().trim_start_matches("error: ").to_string()
}
