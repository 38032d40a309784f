//! The list of an `IN` whose items are all literals (or bound parameters),
//! indexed once when the statement is planned, so that each row is looked
//! up in hash sets instead of compared with every item.
//!
//! It answers exactly as comparing with each item does
//! ([`Value::compare`]): integers equal integers exactly; numbers equal
//! numbers, and text that reads as a number, as doubles (`1 = 1.0`,
//! `1 = '1'`, `'1' = 1.0`, but `'1' != '1.0'`, text with text as text); NaN
//! equals nothing; truth values equal truth values; lists are compared item
//! by item (they are kept aside and scanned, as they are rare in a list).

use std::cmp::Ordering;
use std::collections::HashSet;

use crate::value::Value;

/// The literal items of an `IN` list, by kind, for lookups.
#[derive(Debug, Clone, Default)]
pub struct InSet {
    /// Text items, as text.
    texts: HashSet<String>,
    /// Integer items.
    ints: HashSet<i64>,
    /// Integer items as doubles (their bits, see [`bits`]).
    ints_as_doubles: HashSet<u64>,
    /// Float items (not NaN).
    floats: HashSet<u64>,
    /// Text items that read as a number (not NaN), as doubles.
    text_numbers: HashSet<u64>,
    /// Whether `false` and `true` are items.
    bools: [bool; 2],
    /// List items, compared one by one.
    lists: Vec<Value>,
}

/// A double's bits, with -0 as 0 (they are equal); `None` for NaN, which
/// equals nothing.
fn bits(x: f64) -> Option<u64> {
    if x.is_nan() {
        None
    } else if x == 0.0 {
        Some(0f64.to_bits())
    } else {
        Some(x.to_bits())
    }
}

impl InSet {
    /// Indexes `items` (NULL items match nothing and are left out).
    pub fn new(items: &[Value]) -> InSet {
        let mut set = InSet::default();
        for item in items {
            match item {
                Value::Null => {}
                Value::Bool(b) => set.bools[usize::from(*b)] = true,
                Value::Int(n) => {
                    set.ints.insert(*n);
                    set.ints_as_doubles.extend(bits(*n as f64));
                }
                Value::Float(x) => set.floats.extend(bits(*x)),
                Value::Str(s) => {
                    set.texts.insert(s.clone());
                    set.text_numbers.extend(item.as_f64().and_then(bits));
                }
                Value::List(_) => set.lists.push(item.clone()),
            }
        }
        set
    }

    /// Whether `v` equals an item, as `=` compares them (NULL equals nothing).
    pub fn contains(&self, v: &Value) -> bool {
        match v {
            Value::Null => false,
            Value::Bool(b) => self.bools[usize::from(*b)],
            Value::Int(n) => {
                self.ints.contains(n)
                    || bits(*n as f64)
                        .is_some_and(|b| self.floats.contains(&b) || self.text_numbers.contains(&b))
            }
            Value::Float(x) => bits(*x).is_some_and(|b| {
                self.ints_as_doubles.contains(&b)
                    || self.floats.contains(&b)
                    || self.text_numbers.contains(&b)
            }),
            Value::Str(s) => {
                self.texts.contains(s)
                    || v.as_f64().and_then(bits).is_some_and(|b| {
                        self.ints_as_doubles.contains(&b) || self.floats.contains(&b)
                    })
            }
            Value::List(_) => self
                .lists
                .iter()
                .any(|x| v.compare(x) == Some(Ordering::Equal)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values where the kinds meet: integers and doubles that are equal
    /// or nearly, text that reads as a number or nearly, NaN, zeros.
    fn values() -> Vec<Value> {
        let big = 1i64 << 53;
        let mut v = vec![
            Value::Null,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(1),
            Value::Int(-1),
            Value::Int(2),
            Value::Int(big),
            Value::Int(big + 1),
            Value::Int(i64::MAX),
            Value::Float(0.0),
            Value::Float(-0.0),
            Value::Float(1.0),
            Value::Float(1.5),
            Value::Float(big as f64),
            Value::Float(f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Float(f64::NEG_INFINITY),
            Value::Float(9.223_372_036_854_776e18),
            Value::List(vec![Value::Int(1), Value::from("a")]),
            Value::List(vec![Value::Float(1.0), Value::from("a")]),
            Value::List(vec![]),
        ];
        for s in [
            "",
            "a",
            "A",
            "1",
            " 1 ",
            "1.0",
            "01",
            "-0",
            "0",
            "1e0",
            "1.5",
            "NaN",
            "nan",
            "inf",
            "-inf",
            "Infinity",
            "true",
            "x1",
            "9007199254740993",
        ] {
            v.push(Value::from(s));
        }
        v
    }

    fn equal_to_an_item(probe: &Value, items: &[Value]) -> bool {
        items
            .iter()
            .any(|x| probe.compare(x) == Some(Ordering::Equal))
    }

    #[test]
    fn a_set_answers_as_comparing_with_each_item_does() {
        let all = values();
        // Every single item, every pair of neighbours, and the whole list.
        let mut lists: Vec<Vec<Value>> = all.iter().map(|v| vec![v.clone()]).collect();
        lists.extend(all.windows(2).map(|w| w.to_vec()));
        lists.extend(all.windows(5).map(|w| w.to_vec()));
        lists.push(all.clone());
        lists.push(Vec::new());
        for items in &lists {
            let set = InSet::new(items);
            for probe in &all {
                assert_eq!(
                    set.contains(probe),
                    equal_to_an_item(probe, items),
                    "{probe:?} IN {items:?}"
                );
            }
        }
    }

    #[test]
    fn in_and_not_in_evaluate_the_same_with_the_set_and_without() {
        use crate::plan::fields::{Field, Subject};
        use crate::plan::pexpr::Pexpr;
        struct One(Value);
        impl crate::eval::Row for One {
            fn field(&self, _: Subject, _: &Field) -> Result<Value, crate::QueryError> {
                Ok(self.0.clone())
            }
        }
        let field = || Box::new(Pexpr::Field(Subject::Trace, Field::Id));
        let items = values();
        for negated in [false, true] {
            let plain = Pexpr::In(
                field(),
                Box::new(Pexpr::Const(Value::List(items.clone()))),
                negated,
            );
            let indexed = Pexpr::InSet(field(), Box::new(InSet::new(&items)), negated);
            for probe in values() {
                let row = One(probe.clone());
                assert_eq!(
                    plain.eval(&row).unwrap(),
                    indexed.eval(&row).unwrap(),
                    "{probe:?}, NOT {negated}"
                );
            }
        }
    }

    #[test]
    fn text_numbers_and_kinds() {
        let set = InSet::new(&[Value::from("1"), Value::Int(7), Value::Float(2.5)]);
        assert!(set.contains(&Value::Int(1)) && set.contains(&Value::Float(1.0)));
        assert!(
            !set.contains(&Value::from("1.0")),
            "text equals text as text"
        );
        assert!(set.contains(&Value::from("7.0")) && set.contains(&Value::from(" 2.5")));
        assert!(!set.contains(&Value::Null) && !set.contains(&Value::Bool(true)));
    }
}
