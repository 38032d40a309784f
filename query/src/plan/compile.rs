//! Expressions: field paths resolved to fields (with a "did you mean" for
//! typos), and written expressions compiled to [`Pexpr`], aggregates split out.

use crate::ast::{literal_value, CallArg, Expr, FieldPath, Literal, Span, Test};
use crate::error::QueryError;
use crate::keywords::nearest;
use crate::value::Value;

use super::exprs::expr_span;
use super::fields::{fields_of, id_field, subject_name, subject_named, Field, Subject};
use super::inset::InSet;
use super::pexpr::{regex_reason, shown, AggFunc, Func, Pexpr};
use super::planner::{Planner, Result, Scope};
use super::types::{AggSpec, Pred, VarKind};

impl Planner<'_> {
    pub(super) fn pred(&self, e: &Expr, scope: &Scope<'_>) -> Result<Pred> {
        let mut aggs = Vec::new();
        let expr = self.compile(e, scope, &mut aggs, None)?;
        Ok(Pred {
            expr,
            text: e.to_string(),
        })
    }

    fn field(&self, path: &FieldPath, scope: &Scope<'_>) -> Result<Pexpr> {
        let head = &path.parts[0];
        let rest = &path.parts[1..];
        // A MATCH variable?
        if let Some(i) = scope.vars.iter().position(|v| &v.name == head) {
            let subject = Subject::Bound(i);
            let table = match scope.vars[i].kind {
                VarKind::Node => fields_of(Subject::Var),
                VarKind::Edge => fields_of(Subject::Edge),
            };
            if rest.is_empty() {
                // The node (its full node id) or the edge (its id).
                let f = match scope.vars[i].kind {
                    VarKind::Node => Field::NodeId,
                    VarKind::Edge => Field::Id,
                };
                return Ok(Pexpr::Field(subject, f));
            }
            return self.field_in(path, head, subject, table, rest);
        }
        // A field of the listed records, written bare.
        if let (Some(b), true) = (scope.bare, rest.is_empty()) {
            if let Some((_, f)) = fields_of(b).iter().find(|(n, _)| n == head) {
                return Ok(Pexpr::Field(b, f.clone()));
            }
        }
        let subject = match subject_named(head) {
            Some(s) => s,
            None => {
                let mut known: Vec<&str> = scope.vars.iter().map(|v| v.name.as_str()).collect();
                known.extend(scope.subjects.iter().map(|s| subject_name(*s)));
                let bare: Vec<&str> = scope
                    .bare
                    .map(|b| fields_of(b).iter().map(|(n, _)| *n).collect())
                    .unwrap_or_default();
                let hint = nearest(head, known.iter().chain(&bare).copied())
                    .map(|k| format!(" (did you mean {k}?)"))
                    .unwrap_or_default();
                let what = if !scope.vars.is_empty() {
                    format!("in scope: {}", list_or(&known))
                } else if let Some(b) = scope.bare {
                    format!(
                        "fields start with {}, or are {} fields written bare: {}",
                        list_or(&known),
                        subject_name(b),
                        bare.join(", ")
                    )
                } else {
                    format!("fields start with {}", list_or(&known))
                };
                return Err(self.err(path.span, format!("unknown name {head}{hint}; {what}")));
            }
        };
        if !scope.subjects.contains(&subject) {
            let allowed: Vec<&str> = scope.subjects.iter().map(|s| subject_name(*s)).collect();
            return Err(self.err(
                path.span,
                format!(
                    "{head}. fields are not available here; this statement has {}",
                    list_or(&allowed)
                ),
            ));
        }
        if rest.is_empty() {
            // A subject alone is its identifier: `RETURN trace` is the
            // trace's graph id.
            return Ok(Pexpr::Field(subject, id_field(subject)));
        }
        self.field_in(path, head, subject, fields_of(subject), rest)
    }

    fn field_in(
        &self,
        path: &FieldPath,
        head: &str,
        subject: Subject,
        table: &[(&'static str, Field)],
        rest: &[String],
    ) -> Result<Pexpr> {
        let name = &rest[0];
        // Verdicts have no metadata; every other record has.
        let has_meta = subject != Subject::Attribution;
        let is_meta = has_meta && (name == "meta" || name == "metadata");
        if is_meta && subject != Subject::Case {
            if rest.len() < 2 {
                return Err(self.err(
                    path.span,
                    format!("{head}.{name} needs a key, such as {head}.meta.evidence"),
                ));
            }
            return Ok(Pexpr::Field(subject, Field::Meta(rest[1..].to_vec())));
        }
        if let Some((_, f)) = table.iter().find(|(n, _)| n == name) {
            if rest.len() > 1 {
                return Err(self.err(
                    path.span,
                    format!("{head}.{name} has no parts; only meta.<key> paths go deeper"),
                ));
            }
            return Ok(Pexpr::Field(subject, f.clone()));
        }
        if subject == Subject::Case {
            // A case is its annotation object: any other key reads it.
            return Ok(Pexpr::Field(subject, Field::Meta(rest.to_vec())));
        }
        let mut names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        if has_meta {
            names.push("meta");
        }
        let hint = nearest(name, names.iter().copied())
            .map(|k| format!(" (did you mean {head}.{k}?)"))
            .unwrap_or_default();
        Err(self.err(
            path.span,
            format!(
                "unknown field {head}.{name}{hint}; {head} has {}",
                names.join(", ")
            ),
        ))
    }

    /// Compiles an expression. Aggregate calls are appended to `aggs` and
    /// replaced by [`Pexpr::Agg`]. When the rows are grouped (`group` is
    /// given, empty for one group of all rows), subexpressions equal to a
    /// group key become [`Pexpr::Group`] and any other field is refused.
    pub(super) fn compile(
        &self,
        e: &Expr,
        scope: &Scope<'_>,
        aggs: &mut Vec<AggSpec>,
        group: Option<&[String]>,
    ) -> Result<Pexpr> {
        self.look()?;
        if let Some(keys) = group.filter(|g| !g.is_empty()) {
            let text = e.to_string();
            if let Some(i) = keys.iter().position(|g| *g == text) {
                return Ok(Pexpr::Group(i));
            }
        }
        let c = |x: &Expr, aggs: &mut Vec<AggSpec>| self.compile(x, scope, aggs, group);
        Ok(match e {
            Expr::Lit(l) => Pexpr::Const(literal_value(l)),
            Expr::Param(p) => Pexpr::Const(self.param(p)?.clone()),
            Expr::Field(path) => {
                let f = self.field(path, scope)?;
                if group.is_some() {
                    let message = if self.implicit_groups.get() {
                        format!("{path} must be a group key (RETURN it without an aggregate, or GROUP BY it) or inside an aggregate such as count({path})")
                    } else {
                        format!("{path} must be in GROUP BY or inside an aggregate such as count({path})")
                    };
                    return Err(self.err(path.span, message));
                }
                f
            }
            Expr::List(items) => Pexpr::List(
                items
                    .iter()
                    .map(|x| c(x, aggs))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Expr::Call { name, arg, span } => {
                let lname = name.to_ascii_lowercase();
                if let Some(func) = AggFunc::from_name(&lname) {
                    let (distinct, arg) = self.aggregate_arg(func, name, arg, *span, scope)?;
                    Pexpr::Agg(add_aggregate(
                        aggs,
                        AggSpec {
                            func,
                            distinct,
                            arg,
                            text: e.to_string(),
                        },
                    ))
                } else if let Some(func) = Func::from_name(&lname) {
                    match arg {
                        CallArg::Expr {
                            distinct: false,
                            expr,
                        } => Pexpr::Func(func, Box::new(c(expr, aggs)?)),
                        _ => {
                            return Err(self.err(
                                *span,
                                format!("{name}() takes one argument, without DISTINCT"),
                            ))
                        }
                    }
                } else {
                    return Err(self.unknown_function(name, &lname, *span));
                }
            }
            Expr::Test(left, test) => self.compile_test(left, test, scope, aggs, group)?,
            Expr::Not(x) => Pexpr::Not(Box::new(c(x, aggs)?)),
            Expr::And(items) => Pexpr::And(
                items
                    .iter()
                    .map(|x| c(x, aggs))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Expr::Or(items) => Pexpr::Or(
                items
                    .iter()
                    .map(|x| c(x, aggs))
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    /// Checks an aggregate call `name(arg)` and compiles its argument:
    /// whether it counts distinct values, and the argument (none for `count(*)`).
    fn aggregate_arg(
        &self,
        func: AggFunc,
        name: &str,
        arg: &CallArg,
        span: Span,
        scope: &Scope<'_>,
    ) -> Result<(bool, Option<Pexpr>)> {
        if !scope.aggregates {
            return Err(self.err(
                span,
                format!("{name}() is an aggregate; it may appear only in RETURN and ORDER BY of MATCH and FIND"),
            ));
        }
        Ok(match arg {
            CallArg::Star if func == AggFunc::Count => (false, None),
            CallArg::Star => {
                return Err(self.err(span, format!("{name}(*) is not defined; only count(*) is")))
            }
            CallArg::None => return Err(self.err(span, format!("{name}() needs an argument"))),
            CallArg::Expr { distinct, expr } => {
                // The argument is read per input row: no grouping, no nested aggregates.
                let inner_scope = Scope {
                    aggregates: false,
                    ..*scope
                };
                let mut none = Vec::new();
                let a = self.compile(expr, &inner_scope, &mut none, None)?;
                (*distinct, Some(a))
            }
        })
    }

    /// The error for a call of a function that does not exist, with the
    /// nearest known name.
    fn unknown_function(&self, name: &str, lname: &str, span: Span) -> QueryError {
        let all = Func::NAMES.iter().chain(AggFunc::NAMES.iter()).copied();
        let hint = nearest(lname, all)
            .map(|k| format!(" (did you mean {k}?)"))
            .unwrap_or_default();
        self.err(
            span,
            format!(
                "unknown function {name}(){hint}; functions are {}, {}",
                AggFunc::NAMES.join(", "),
                Func::NAMES.join(", ")
            ),
        )
    }

    /// Compiles a test of `left`: a comparison, CONTAINS, STARTS WITH, `=~`,
    /// IN or IS NULL.
    fn compile_test(
        &self,
        left: &Expr,
        test: &Test,
        scope: &Scope<'_>,
        aggs: &mut Vec<AggSpec>,
        group: Option<&[String]>,
    ) -> Result<Pexpr> {
        let mut c = |x: &Expr| self.compile(x, scope, aggs, group);
        let l = Box::new(c(left)?);
        Ok(match test {
            Test::Cmp(op, r) => Pexpr::Cmp(*op, l, Box::new(c(r)?)),
            Test::Contains(r) => Pexpr::Contains(l, Box::new(c(r)?)),
            Test::StartsWith(r) => Pexpr::StartsWith(l, Box::new(c(r)?)),
            Test::Regex {
                pattern: r,
                operator,
                pattern_span,
            } => {
                let pattern = c(r)?;
                self.regex_test(l, r, *operator, *pattern_span, pattern)?
            }
            Test::In { negated, list } => {
                let items = c(list)?;
                self.in_test(l, left, list, *negated, items)?
            }
            Test::IsNull { negated } => Pexpr::IsNull(l, *negated),
        })
    }

    /// `l =~ pattern`: a constant pattern is checked and compiled once, here.
    fn regex_test(
        &self,
        l: Box<Pexpr>,
        r: &Expr,
        operator: Span,
        pattern_span: Span,
        pattern: Pexpr,
    ) -> Result<Pexpr> {
        // An error points at the pattern's parameter or text,
        // else at the operator.
        let at = |what: &str| match r {
            Expr::Param(p) => self.param_err(p, what.to_string()),
            Expr::Lit(Literal::Str(_)) => self.err(pattern_span, what.to_string()),
            _ => self.err(operator, what.to_string()),
        };
        Ok(match &pattern {
            Pexpr::Const(Value::Str(s)) => {
                let re = regex::Regex::new(s).map_err(|e| {
                    at(&format!(
                        "bad regular expression {}: {}",
                        crate::node_ref::quote(s),
                        regex_reason(&e)
                    ))
                })?;
                Pexpr::RegexConst(l, Box::new(re))
            }
            Pexpr::Const(Value::Null) => Pexpr::Regex(l, Box::new(pattern)),
            Pexpr::Const(other) => {
                return Err(at(&format!(
                    "=~ needs a text pattern, not {}",
                    shown(other)
                )))
            }
            _ => Pexpr::Regex(l, Box::new(pattern)),
        })
    }

    /// `l [NOT] IN items`: a constant that is not a list is refused, and a
    /// list of literals is indexed once, here.
    fn in_test(
        &self,
        l: Box<Pexpr>,
        left: &Expr,
        list: &Expr,
        negated: bool,
        items: Pexpr,
    ) -> Result<Pexpr> {
        if let Pexpr::Const(v) = &items {
            if !matches!(v, Value::List(_) | Value::Null) {
                let what = format!("IN needs a list, such as ['a', 'b'], not {}", shown(v));
                return Err(match list {
                    Expr::Param(p) => self.param_err(p, what),
                    _ => self.err(expr_span(left), what),
                });
            }
        }
        let literals: Option<Vec<Value>> = match &items {
            Pexpr::Const(Value::List(v)) => Some(v.clone()),
            Pexpr::List(xs) => xs
                .iter()
                .map(|x| match x {
                    Pexpr::Const(v) => Some(v.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        Ok(match literals {
            Some(v) => Pexpr::InSet(l, Box::new(InSet::new(&v)), negated),
            None => Pexpr::In(l, Box::new(items), negated),
        })
    }
}

/// The index of an aggregate in `aggs`, added unless one written the same
/// way is already there.
fn add_aggregate(aggs: &mut Vec<AggSpec>, spec: AggSpec) -> usize {
    match aggs.iter().position(|a| a.text == spec.text) {
        Some(i) => i,
        None => {
            aggs.push(spec);
            aggs.len() - 1
        }
    }
}

fn list_or(items: &[&str]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].to_string(),
        n => format!("{} or {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::test_support::{explain, plan_err, plan_of};
    use crate::plan::{plan, plan_text, Params, Plan};

    #[test]
    fn in_lists_of_literals_are_indexed_once_when_planned() {
        let plan = |text: &str, params: &[(&str, Value)]| format!("{:?}", plan_of(text, params));
        for (text, params) in [
            ("FIND vars WHERE var.name IN ['a', 'b', 1]", vec![]),
            ("FIND vars WHERE var.name NOT IN ['a']", vec![]),
            (
                "FIND vars WHERE var.name IN $names",
                vec![("names", Value::List(vec![Value::from("a"), Value::Int(2)]))],
            ),
            (
                "FIND vars WHERE var.name IN ['a', $one]",
                vec![("one", Value::from("b"))],
            ),
            ("TRACE answer:1 WHERE var.class IN ['a', 'b']", vec![]),
            (
                "MATCH (a)-->(b) WHERE b.name IN ['x', 'y'] RETURN a",
                vec![],
            ),
        ] {
            let p = plan(text, &params);
            assert!(p.contains("InSet("), "{text}: {p}");
            assert!(!p.contains("In("), "{text}: {p}");
        }
        // A list that reads a field is evaluated per row.
        let p = plan("FIND vars WHERE var.name IN [var.class, 'x']", &[]);
        assert!(p.contains("In(") && !p.contains("InSet("), "{p}");
    }

    #[test]
    fn attribution_fields_are_read_with_or_without_their_subject() {
        let plan_of = |text: &str| {
            let stmt = crate::parse_statement(text).unwrap();
            match plan(&stmt, &Params::new()).unwrap() {
                Plan::Find(f) => f,
                _ => panic!("not a FIND"),
            }
        };
        let f = plan_of("FIND attributions");
        assert_eq!(
            f.projection.columns,
            [
                "trace",
                "case",
                "error_type",
                "op_id",
                "op_name",
                "confidence",
                "method",
                "at"
            ]
        );
        let f = plan_of("FIND attributions GROUP BY error_type RETURN error_type, count(*)");
        assert!(matches!(
            f.projection.group_keys.as_slice(),
            [Pexpr::Field(Subject::Attribution, Field::ErrorType)]
        ));
        let f = plan_of(
            "FIND attributions WHERE attribution.case = 'q' AND seq > 1 AND trace.id = 'g' \
             RETURN case, query, op_id, op_name, confidence, reason, method, version, author, \
             at, seq, micros",
        );
        assert!(f.trace_filter.is_some() && f.filter.is_some());
        assert_eq!(f.projection.outputs.len(), 12);
        let e = plan_err("FIND attributions WHERE eror_type = 'x'", &[]);
        assert!(
            e.contains("unknown name eror_type (did you mean error_type?); fields start with attribution or trace, or are attribution fields written bare: case, query, error_type"),
            "{e}"
        );
        let e = plan_err("FIND attributions RETURN attribution.meta.x", &[]);
        assert!(e.contains("unknown field attribution.meta"), "{e}");
        assert!(!e.contains(", meta"), "{e}");
        // Bare names are the listed records' own fields.
        let e = plan_err("FIND cases RETURN op_name", &[]);
        assert!(e.contains("unknown name op_name"), "{e}");
        assert!(
            e.contains("case fields written bare: query_id, query"),
            "{e}"
        );
        let f = plan_of("FIND cases RETURN query_id, query, prediction, trace");
        assert!(matches!(
            &f.projection.outputs[..4],
            [
                Pexpr::Field(Subject::Case, Field::QueryId),
                Pexpr::Field(Subject::Case, Field::Query),
                Pexpr::Field(Subject::Case, Field::Prediction),
                Pexpr::Field(Subject::Trace, Field::Id),
            ]
        ));
        // A subject alone is its identifier.
        let f = plan_of("FIND attributions RETURN trace, case, op_name");
        assert!(matches!(
            &f.projection.outputs[..3],
            [
                Pexpr::Field(Subject::Trace, Field::Id),
                Pexpr::Field(Subject::Attribution, Field::Case),
                Pexpr::Field(Subject::Attribution, Field::OpName),
            ]
        ));
        let e = plan_err("FIND attributions RETURN case.query_id", &[]);
        assert!(e.contains("case. fields are not available here"), "{e}");
        let f = plan_of("FIND cases WHERE case.origin = 'judge'");
        assert!(f.filter.is_some());
        assert_eq!(
            explain("EXPLAIN FIND attributions IN TRACE 'g'", &[])
                .last()
                .unwrap(),
            "   └─ Trace 'g'"
        );
    }

    #[test]
    fn constant_operands_of_in_and_regex_are_checked_when_planning() {
        let e = plan_err("FIND vars WHERE var.name IN $s", &[("s", "x".into())]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 29: IN needs a list, such as ['a', 'b'], not 'x'"
            ),
            "{e}"
        );
        let e = plan_err("FIND vars WHERE var.name =~ 1", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 26: =~ needs a text pattern, not 1"),
            "{e}"
        );
        let e = plan_err("FIND vars WHERE var.name =~ '(x'", &[]);
        assert_eq!(
            e,
            "invalid statement at line 1, column 29: bad regular expression '(x': unclosed group\n  \
             FIND vars WHERE var.name =~ '(x'\n                              ^"
        );
        // A NULL list or pattern is no error: the test is unknown.
        let stmt = crate::parse_statement("FIND vars WHERE var.name IN $s").unwrap();
        let params: Params = [("s".to_string(), Value::Null)].into_iter().collect();
        assert!(plan_text(&stmt, &params, "FIND vars WHERE var.name IN $s").is_ok());
    }
}
