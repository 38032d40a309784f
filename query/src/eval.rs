//! Evaluating compiled expressions over rows the engine supplies, and
//! turning rows into results: grouping, aggregates, DISTINCT, ORDER BY, LIMIT.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use crate::ast::CmpOp;
use crate::error::QueryError;
use crate::plan::pexpr::{regex_reason, shown};
use crate::plan::{AggSpec, Field, Projection, Subject};
use crate::value::Value;

pub use crate::plan::inset::InSet;
pub use crate::plan::pexpr::{AggFunc, Func, Pexpr};

type Result<T> = std::result::Result<T, QueryError>;

/// What an expression reads: the fields of the current row. The engine
/// implements it over its records; reading may fail (a value not found).
pub trait Row {
    /// The value of `field` of `subject`; NULL when the row has no such subject.
    fn field(&self, subject: Subject, field: &Field) -> Result<Value>;

    /// Whether the work was stopped from outside. A long list of terms (an
    /// `AND` of thousands) looks every [`STOP_CHECK`] terms, and then fails
    /// with [`QueryError::Stopped`], so that one row's evaluation cannot
    /// outlast a time limit by the statement's size.
    fn stopped(&self) -> bool {
        false
    }
}

/// How many terms of a list (`AND`, `OR`, a list expression) are evaluated
/// between two looks at [`Row::stopped`].
pub const STOP_CHECK: usize = 256;

/// `Err(Stopped)` when the `i`th term of a list is due a look and the row
/// says the work was stopped.
#[inline]
fn look(i: usize, row: &dyn Row) -> Result<()> {
    if i % STOP_CHECK == STOP_CHECK - 1 && row.stopped() {
        Err(QueryError::Stopped)
    } else {
        Ok(())
    }
}

/// Group keys and aggregates of the current group, for output expressions.
struct Grouped<'a> {
    keys: &'a [Value],
    aggs: &'a [Value],
}

fn text_of(v: &Value) -> Option<String> {
    v.as_text()
}

impl Pexpr {
    /// Evaluates over a row.
    pub fn eval(&self, row: &dyn Row) -> Result<Value> {
        self.eval_in(row, None)
    }

    /// Evaluates as a condition: only `TRUE` passes.
    pub fn test(&self, row: &dyn Row) -> Result<bool> {
        Ok(self.eval(row)?.is_true())
    }

    fn eval_in(&self, row: &dyn Row, g: Option<&Grouped<'_>>) -> Result<Value> {
        let ev = |e: &Pexpr| e.eval_in(row, g);
        Ok(match self {
            Pexpr::Const(v) => v.clone(),
            Pexpr::Field(s, f) => row.field(*s, f)?,
            Pexpr::List(items) => Value::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| look(i, row).and_then(|_| ev(x)))
                    .collect::<Result<_>>()?,
            ),
            Pexpr::Func(f, x) => apply_func(*f, ev(x)?),
            Pexpr::Agg(i) => g
                .and_then(|g| g.aggs.get(*i).cloned())
                .ok_or_else(|| QueryError::Other("an aggregate is read outside a group".into()))?,
            Pexpr::Group(i) => g
                .and_then(|g| g.keys.get(*i).cloned())
                .ok_or_else(|| QueryError::Other("a group key is read outside a group".into()))?,
            Pexpr::Not(x) => match ev(x)? {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::Null,
            },
            // Three-valued: AND stops at the first FALSE, OR at the first TRUE;
            // otherwise any unknown makes the whole unknown.
            Pexpr::And(items) | Pexpr::Or(items) => {
                let decisive = matches!(self, Pexpr::Or(_));
                let mut unknown = false;
                for (i, x) in items.iter().enumerate() {
                    look(i, row)?;
                    match ev(x)? {
                        Value::Bool(b) if b == decisive => return Ok(Value::Bool(decisive)),
                        Value::Bool(_) => {}
                        _ => unknown = true,
                    }
                }
                if unknown {
                    Value::Null
                } else {
                    Value::Bool(!decisive)
                }
            }
            Pexpr::Cmp(op, a, b) => {
                let (a, b) = (ev(a)?, ev(b)?);
                match a.compare(&b) {
                    None => Value::Null,
                    Some(o) => Value::Bool(cmp_holds(*op, o)),
                }
            }
            Pexpr::Contains(a, b) => match (ev(a)?, ev(b)?) {
                (Value::List(items), needle) => Value::Bool(
                    items
                        .iter()
                        .any(|x| x.compare(&needle) == Some(Ordering::Equal)),
                ),
                (a, b) => match (text_of(&a), text_of(&b)) {
                    (Some(a), Some(b)) => Value::Bool(a.contains(&b)),
                    _ => Value::Null,
                },
            },
            Pexpr::StartsWith(a, b) => match (text_of(&ev(a)?), text_of(&ev(b)?)) {
                (Some(a), Some(b)) => Value::Bool(a.starts_with(&b)),
                _ => Value::Null,
            },
            Pexpr::RegexConst(a, re) => match text_of(&ev(a)?) {
                Some(s) => Value::Bool(re.is_match(&s)),
                None => Value::Null,
            },
            Pexpr::Regex(a, p) => regex_match(text_of(&ev(a)?), ev(p)?)?,
            Pexpr::In(a, list, negated) => {
                let a = ev(a)?;
                in_list(a, ev(list)?, *negated)?
            }
            Pexpr::InSet(a, set, negated) => match ev(a)? {
                Value::Null => Value::Null,
                a => Value::Bool(set.contains(&a) != *negated),
            },
            Pexpr::IsNull(a, negated) => Value::Bool((ev(a)? == Value::Null) != *negated),
        })
    }
}

/// A scalar function applied to its argument's value.
fn apply_func(f: Func, v: Value) -> Value {
    match (f, v) {
        (_, Value::Null) => Value::Null,
        (Func::Lower, v) => Value::Str(v.to_string().to_lowercase()),
        (Func::Upper, v) => Value::Str(v.to_string().to_uppercase()),
        (Func::Length, Value::List(l)) => Value::Int(l.len() as i64),
        (Func::Length, v) => Value::Int(v.to_string().chars().count() as i64),
    }
}

/// Whether two values that compare as `o` satisfy the operator.
#[inline]
fn cmp_holds(op: CmpOp, o: Ordering) -> bool {
    match op {
        CmpOp::Eq => o == Ordering::Equal,
        CmpOp::Ne => o != Ordering::Equal,
        CmpOp::Lt => o == Ordering::Less,
        CmpOp::Le => o != Ordering::Greater,
        CmpOp::Gt => o == Ordering::Greater,
        CmpOp::Ge => o != Ordering::Less,
    }
}

/// `text =~ pattern` for a pattern only known per row: compiled here, each time.
fn regex_match(text: Option<String>, pattern: Value) -> Result<Value> {
    Ok(match (text, pattern) {
        (Some(s), Value::Str(p)) => {
            let re = regex::Regex::new(&p).map_err(|e| {
                QueryError::Other(format!(
                    "bad regular expression {}: {}",
                    crate::node_ref::quote(&p),
                    regex_reason(&e)
                ))
            })?;
            Value::Bool(re.is_match(&s))
        }
        (None, _) | (_, Value::Null) => Value::Null,
        (_, other) => {
            return Err(QueryError::Other(format!(
                "=~ needs a text pattern, not {}",
                shown(&other)
            )))
        }
    })
}

/// `a [NOT] IN list` for a list only known per row.
fn in_list(a: Value, list: Value, negated: bool) -> Result<Value> {
    let items = match list {
        Value::List(items) => items,
        Value::Null => return Ok(Value::Null),
        other => {
            return Err(QueryError::Other(format!(
                "IN needs a list, such as ['a', 'b'], not {}",
                shown(&other)
            )))
        }
    };
    if a == Value::Null {
        return Ok(Value::Null);
    }
    let found = items.iter().any(|x| a.compare(x) == Some(Ordering::Equal));
    Ok(Value::Bool(found != negated))
}

/// A value usable as a hash key (floats by their bits).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
    List(Vec<Key>),
}

fn key(v: &Value) -> Key {
    match v {
        Value::Null => Key::Null,
        Value::Bool(b) => Key::Bool(*b),
        Value::Int(n) => Key::Int(*n),
        // Whole floats group with the equal integer.
        Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Key::Int(*x as i64),
        Value::Float(x) => Key::Float(x.to_bits()),
        Value::Str(s) => Key::Str(s.clone()),
        Value::List(l) => Key::List(l.iter().map(key).collect()),
    }
}

/// Like [`key`], taking the value (its text moves instead of being copied).
fn into_key(v: Value) -> Key {
    match v {
        Value::Str(s) => Key::Str(s),
        other => key(&other),
    }
}

/// The value a key stands for (whole floats come back as integers, which
/// compare and print the same).
fn from_key(k: &Key) -> Value {
    match k {
        Key::Null => Value::Null,
        Key::Bool(b) => Value::Bool(*b),
        Key::Int(n) => Value::Int(*n),
        Key::Float(bits) => Value::Float(f64::from_bits(*bits)),
        Key::Str(s) => Value::Str(s.clone()),
        Key::List(l) => Value::List(l.iter().map(from_key).collect()),
    }
}

/// `v` as a number for `sum`/`avg`, or an error naming the aggregate.
fn number(spec: &AggSpec, v: &Value) -> Result<f64> {
    v.as_f64().ok_or_else(|| {
        QueryError::Other(format!("{} needs numbers, but got {}", spec.text, shown(v)))
    })
}

/// The running state of one aggregate.
#[derive(Debug, Clone)]
enum AggState {
    Count(u64, Option<HashSet<Key>>),
    Min(Option<Value>),
    Max(Option<Value>),
    Sum(f64, bool, Option<HashSet<Key>>),
    Avg(f64, u64, Option<HashSet<Key>>),
}

impl AggState {
    fn new(spec: &AggSpec) -> AggState {
        let set = spec.distinct.then(HashSet::new);
        match spec.func {
            AggFunc::Count => AggState::Count(0, set),
            AggFunc::Min => AggState::Min(None),
            AggFunc::Max => AggState::Max(None),
            AggFunc::Sum => AggState::Sum(0.0, true, set),
            AggFunc::Avg => AggState::Avg(0.0, 0, set),
        }
    }

    fn add(&mut self, spec: &AggSpec, row: &dyn Row) -> Result<()> {
        let v = match &spec.arg {
            None => Value::Bool(true),
            Some(e) => e.eval(row)?,
        };
        if v == Value::Null {
            return Ok(());
        }
        let fresh = |set: &mut Option<HashSet<Key>>| match set {
            Some(s) => s.insert(key(&v)),
            None => true,
        };
        match self {
            AggState::Count(n, set) => {
                if fresh(set) {
                    *n += 1;
                }
            }
            AggState::Min(m) => {
                if m.as_ref().is_none_or(|m| v.total_cmp(m) == Ordering::Less) {
                    *m = Some(v);
                }
            }
            AggState::Max(m) => {
                if m.as_ref()
                    .is_none_or(|m| v.total_cmp(m) == Ordering::Greater)
                {
                    *m = Some(v);
                }
            }
            AggState::Sum(s, int, set) => {
                if fresh(set) {
                    *s += number(spec, &v)?;
                    *int &= matches!(v, Value::Int(_));
                }
            }
            AggState::Avg(s, n, set) => {
                if fresh(set) {
                    *s += number(spec, &v)?;
                    *n += 1;
                }
            }
        }
        Ok(())
    }

    fn finish(self) -> Value {
        match self {
            AggState::Count(n, _) => Value::Int(n as i64),
            AggState::Min(m) | AggState::Max(m) => m.unwrap_or(Value::Null),
            AggState::Sum(s, true, _) => Value::Int(s as i64),
            AggState::Sum(s, false, _) => Value::Float(s),
            AggState::Avg(_, 0, _) => Value::Null,
            AggState::Avg(s, n, _) => Value::Float(s / n as f64),
        }
    }
}

/// Turns input rows into output rows for a [`Projection`].
///
/// Rows are pushed one at a time; without grouping, sorting or DISTINCT,
/// each output row is ready at once ([`Collector::push`] returns it) and
/// [`Collector::done`] says when the LIMIT is reached, so results stream.
#[derive(Debug)]
pub struct Collector<'p> {
    p: &'p Projection,
    groups: HashMap<Vec<Key>, usize>,
    group_rows: Vec<(Vec<Value>, Vec<AggState>)>,
    rows: Vec<Vec<Value>>,
    seen: HashSet<Vec<Key>>,
    emitted: u64,
}

impl<'p> Collector<'p> {
    /// A collector for `p`.
    pub fn new(p: &'p Projection) -> Collector<'p> {
        Collector {
            p,
            groups: HashMap::new(),
            group_rows: Vec::new(),
            rows: Vec::new(),
            seen: HashSet::new(),
            emitted: 0,
        }
    }

    /// Whether output rows can be handed out as they come.
    pub fn streams(&self) -> bool {
        !self.p.aggregating && self.p.order.is_empty()
    }

    /// Whether the LIMIT is reached (only when streaming).
    pub fn done(&self) -> bool {
        self.streams() && self.p.limit.is_some_and(|l| self.emitted >= l)
    }

    /// Adds an input row. When streaming, returns the output row it makes (if any).
    pub fn push(&mut self, row: &dyn Row) -> Result<Option<Vec<Value>>> {
        let p = self.p;
        if p.aggregating {
            let keys: Vec<Value> = p
                .group_keys
                .iter()
                .map(|k| k.eval(row))
                .collect::<Result<_>>()?;
            // Keys move into the hash key; a new group's values are rebuilt from it.
            let hk: Vec<Key> = keys.into_iter().map(into_key).collect();
            let i = match self.groups.get(&hk) {
                Some(i) => *i,
                None => {
                    let values = hk.iter().map(from_key).collect();
                    self.group_rows
                        .push((values, p.aggs.iter().map(AggState::new).collect()));
                    self.groups.insert(hk, self.group_rows.len() - 1);
                    self.group_rows.len() - 1
                }
            };
            let states = &mut self.group_rows[i].1;
            for (st, spec) in states.iter_mut().zip(&p.aggs) {
                st.add(spec, row)?;
            }
            return Ok(None);
        }
        if self.done() {
            return Ok(None);
        }
        let out: Vec<Value> = p
            .outputs
            .iter()
            .map(|e| e.eval(row))
            .collect::<Result<_>>()?;
        if p.distinct
            && !self
                .seen
                .insert(out[..p.columns.len()].iter().map(key).collect())
        {
            return Ok(None);
        }
        if self.streams() {
            self.emitted += 1;
            let mut out = out;
            out.truncate(p.columns.len() + p.keys);
            return Ok(Some(out));
        }
        self.rows.push(out);
        Ok(None)
    }

    /// The remaining output rows: groups, sorted, limited, hidden columns
    /// cut (but the [`Projection::keys`] kept).
    pub fn finish(mut self) -> Result<Vec<Vec<Value>>> {
        let p = self.p;
        if p.aggregating {
            struct NoRow;
            impl Row for NoRow {
                fn field(&self, _: Subject, _: &Field) -> Result<Value> {
                    // The planner refuses such a field where it is written.
                    Err(QueryError::Other(
                        "a field outside the group keys and aggregates has no value for a group"
                            .into(),
                    ))
                }
            }
            // With no input row and no GROUP BY, there is still one group.
            if self.group_rows.is_empty() && p.group_keys.is_empty() {
                self.group_rows
                    .push((Vec::new(), p.aggs.iter().map(AggState::new).collect()));
            }
            for (keys, states) in std::mem::take(&mut self.group_rows) {
                let aggs: Vec<Value> = states.into_iter().map(AggState::finish).collect();
                let g = Grouped {
                    keys: &keys,
                    aggs: &aggs,
                };
                let out: Vec<Value> = p
                    .outputs
                    .iter()
                    .map(|e| e.eval_in(&NoRow, Some(&g)))
                    .collect::<Result<_>>()?;
                if p.distinct
                    && !self
                        .seen
                        .insert(out[..p.columns.len()].iter().map(key).collect())
                {
                    continue;
                }
                self.rows.push(out);
            }
        }
        if !p.order.is_empty() {
            self.rows.sort_by(|a, b| {
                for (i, desc) in &p.order {
                    let o = a[*i].total_cmp(&b[*i]);
                    let o = if *desc { o.reverse() } else { o };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            });
        }
        let limit = p.limit.map(|l| l.saturating_sub(self.emitted));
        let mut rows = self.rows;
        if let Some(l) = limit {
            rows.truncate(usize::try_from(l).unwrap_or(usize::MAX));
        }
        for r in &mut rows {
            r.truncate(p.columns.len() + p.keys);
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::plan::{plan, Params, Plan};

    /// A row whose every field is 1, and which says it was stopped from
    /// its `after`th field read on; it counts the reads.
    struct Stopping {
        reads: Cell<usize>,
        after: usize,
    }

    impl Row for Stopping {
        fn field(&self, _: Subject, _: &Field) -> Result<Value> {
            self.reads.set(self.reads.get() + 1);
            Ok(Value::Int(1))
        }
        fn stopped(&self) -> bool {
            self.reads.get() >= self.after
        }
    }

    fn condition(text: &str) -> Pexpr {
        let stmt = crate::parse_statement(text).unwrap();
        match plan(&stmt, &Params::new()).unwrap() {
            Plan::Find(f) => f.filter.unwrap().expr,
            other => panic!("not a FIND: {other:?}"),
        }
    }

    #[test]
    fn a_long_and_or_list_stops_within_its_terms() {
        let terms = 10_000;
        for op in [" AND ", " OR "] {
            let term = if op == " AND " {
                "var.version = 1"
            } else {
                "var.version = 2"
            };
            let e = condition(&format!("FIND vars WHERE {}", vec![term; terms].join(op)));
            let row = Stopping {
                reads: Cell::new(0),
                after: 1000,
            };
            assert_eq!(e.test(&row), Err(QueryError::Stopped), "{op}");
            assert!(
                row.reads.get() < 1000 + STOP_CHECK,
                "{op}: {} of {terms} terms read after the stop",
                row.reads.get()
            );
            // Not stopped, the whole list is read.
            let row = Stopping {
                reads: Cell::new(0),
                after: usize::MAX,
            };
            assert!(e.test(&row).is_ok());
            assert_eq!(row.reads.get(), terms);
        }
        let list = condition(&format!(
            "FIND vars WHERE var.version IN [{}]",
            vec!["var.version"; terms].join(", ")
        ));
        let row = Stopping {
            reads: Cell::new(0),
            after: 10,
        };
        assert_eq!(list.test(&row), Err(QueryError::Stopped));
        assert!(row.reads.get() < 10 + STOP_CHECK + 1);
    }
}
