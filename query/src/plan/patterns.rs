//! SAVE PATTERN and RUN PATTERN: a saved statement checked against its
//! defaults, and the traces a run picks.

use crate::ast::{InTrace, RunPattern, SavePattern, Span, Statement};
use crate::value::Value;

use super::exprs::visit_fields;
use super::fields::Subject;
use super::params::statement_params;
use super::planner::{Planner, Result, Scope};
use super::types::{Params, Plan, RunPatternPlan, SavePatternPlan};

/// Plans a saved statement (TRACE, FORWARD, MATCH or FIND) with a planner
/// that binds the pattern's defaults.
type PlanBody<'s> = dyn Fn(&Planner<'_>) -> Result<Plan> + 's;

impl Planner<'_> {
    /// An error if `params` (of one WITH) names a parameter twice.
    fn unique_params(&self, params: &[(String, Value)]) -> Result<()> {
        for (i, (name, _)) in params.iter().enumerate() {
            if params[..i].iter().any(|(n, _)| n == name) {
                return Err(self.param_err(
                    name,
                    format!("parameter ${name} is given twice; give each parameter one value"),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn save_pattern(&self, s: &SavePattern) -> Result<SavePatternPlan> {
        let name = &s.name;
        // What a pattern may save, and how it plans once the defaults are bound.
        let (in_trace, plan_body): (&Option<InTrace>, Box<PlanBody<'_>>) = match s.body.as_ref() {
            Statement::Traverse(t) => (
                &t.in_trace,
                Box::new(|p: &Planner<'_>| p.traverse(t).map(Plan::Traverse)),
            ),
            Statement::Match(m) => (
                &m.in_trace,
                Box::new(|p: &Planner<'_>| p.match_plan(m).map(Plan::Match)),
            ),
            Statement::Find(f) => (
                &f.in_trace,
                Box::new(|p: &Planner<'_>| p.find(f).map(Plan::Find)),
            ),
            other => {
                let what = other.to_string();
                let what = what.split_whitespace().next().unwrap_or("");
                return Err(self.err(
                    Span::default(),
                    format!(
                        "a pattern saves a TRACE, FORWARD, MATCH or FIND statement, not {what}"
                    ),
                ));
            }
        };
        if let Some(in_trace) = in_trace {
            return Err(self.err(
                in_trace.span,
                format!(
                    "a pattern runs over every trace; drop IN TRACE and use \
                     RUN PATTERN {name} OVER TRACES WHERE trace.id = '...'"
                ),
            ));
        }
        self.unique_params(&s.params)?;
        let used = statement_params(&s.body);
        let missing: Vec<&String> = used
            .iter()
            .filter(|u| !s.params.iter().any(|(n, _)| n == *u))
            .collect();
        if let Some(first) = missing.first() {
            let names: Vec<String> = missing.iter().map(|m| format!("${m}")).collect();
            let fix: Vec<String> = names.iter().map(|n| format!("{n} = ...")).collect();
            let message = if missing.len() == 1 {
                format!("pattern parameter {} has no default", names[0])
            } else {
                format!("pattern parameters {} have no default", list_and(&names))
            };
            return Err(self.param_err(
                first,
                format!(
                    "{message}: write SAVE PATTERN {name} WITH {} AS ...",
                    fix.join(", ")
                ),
            ));
        }
        if let Some((unused, _)) = s.params.iter().find(|(n, _)| !used.contains(n)) {
            return Err(self.param_err(
                unused,
                format!(
                    "parameter ${unused} is not used by the pattern: drop it from WITH, \
                     or use it in the saved statement"
                ),
            ));
        }
        let defaults: Params = s.params.iter().cloned().collect();
        let body = plan_body(&Planner::new(&defaults, self.text))?;
        Ok(SavePatternPlan {
            name: name.clone(),
            params: s.params.clone(),
            text: s.body.to_string(),
            body: Box::new(body),
        })
    }

    pub(super) fn run_pattern(&self, r: &RunPattern) -> Result<RunPatternPlan> {
        self.unique_params(&r.params)?;
        let over = match &r.over {
            None => None,
            Some(e) => {
                // Which traces a pattern runs over is a question about traces alone.
                let mut other = None;
                visit_fields(e, &mut |p| {
                    if other.is_none() && p.parts.first().map(String::as_str) != Some("trace") {
                        other = Some(p.clone());
                    }
                });
                if let Some(p) = other {
                    return Err(self.err(
                        p.span,
                        format!(
                            "only trace fields (such as trace.id or trace.source) are allowed \
                             after OVER TRACES WHERE, not {p}"
                        ),
                    ));
                }
                let scope = Scope {
                    subjects: &[Subject::Trace],
                    vars: &[],
                    aggregates: false,
                    bare: None,
                };
                Some(self.pred(e, &scope)?)
            }
        };
        Ok(RunPatternPlan {
            name: r.name.clone(),
            over,
            params: r.params.clone(),
            body: None,
            columns: Vec::new(),
        })
    }
}

fn list_and(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::Pexpr;
    use crate::plan::plan;
    use crate::plan::test_support::{plan_err, plan_of};

    #[test]
    fn a_saved_pattern_is_its_canonical_body_planned_with_its_defaults() {
        let text = "save pattern big with $min = 20, $cats = ['a', 'b'] as find vars \
                    where var.version >= $min and var.category in $cats";
        // The caller's parameters are not the pattern's.
        let Plan::SavePattern(s) = plan_of(text, &[("min", Value::Int(5))]) else {
            panic!("not a SAVE PATTERN plan")
        };
        assert_eq!(s.name, "big");
        assert_eq!(
            s.params,
            vec![
                ("min".to_string(), Value::Int(20)),
                (
                    "cats".to_string(),
                    Value::List(vec![Value::from("a"), Value::from("b")])
                )
            ]
        );
        assert_eq!(
            s.text,
            "FIND vars WHERE var.version >= $min AND var.category IN $cats"
        );
        let Plan::Find(f) = s.body.as_ref() else {
            panic!("the body is not a FIND plan")
        };
        let filter = format!("{:?}", f.filter.as_ref().map(|p| &p.expr));
        assert!(filter.contains("Const(Int(20))"), "{filter}");
        assert!(!filter.contains("Const(Int(5))"), "{filter}");
        // The stored text reads back as the same statement.
        let again = crate::parse_statement(&s.text).unwrap();
        assert_eq!(again.to_string(), s.text);
        // TRACE, FORWARD and MATCH may be saved too.
        for text in [
            "SAVE PATTERN t WITH $s = 'answer:42' AS TRACE $s DEPTH 3",
            "SAVE PATTERN f AS FORWARD message:1 WHERE var.category = 'x'",
            "SAVE PATTERN m WITH $k = 10 AS MATCH (a:message)-->(b) RETURN a, b LIMIT $k",
        ] {
            assert!(matches!(plan_of(text, &[]), Plan::SavePattern(_)), "{text}");
        }
    }

    #[test]
    fn a_saved_pattern_has_a_default_for_each_parameter_and_uses_each() {
        let text = "SAVE PATTERN big AS FIND vars WHERE var.version >= $min";
        assert_eq!(
            plan_err(text, &[("min", Value::Int(5))]),
            format!(
                "invalid statement at line 1, column 52: pattern parameter $min has no default: \
                 write SAVE PATTERN big WITH $min = ... AS ...\n  {text}\n  {}^",
                " ".repeat(51)
            )
        );
        let e = plan_err(
            "SAVE PATTERN p WITH $a = 1 AS TRACE $s WHERE var.version = $a LIMIT $n",
            &[],
        );
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 37: pattern parameters $s and $n have no \
                 default: write SAVE PATTERN p WITH $s = ..., $n = ... AS ..."
            ),
            "{e}"
        );
        let e = plan_err(
            "SAVE PATTERN p WITH $a = 1, $x = 2 AS FIND vars WHERE var.version = $a",
            &[],
        );
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 29: parameter $x is not used by the \
                 pattern: drop it from WITH, or use it in the saved statement"
            ),
            "{e}"
        );
        // A default of the wrong kind is reported where it is given.
        let e = plan_err("SAVE PATTERN p WITH $n = 'x' AS TRACE a:1 LIMIT $n", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 21: parameter $n must be a count"),
            "{e}"
        );
        // Without the text, the errors have no position.
        let stmt = crate::parse_statement("SAVE PATTERN p AS FIND vars LIMIT $n").unwrap();
        assert_eq!(
            plan(&stmt, &Params::new()).unwrap_err().to_string(),
            "pattern parameter $n has no default: write SAVE PATTERN p WITH $n = ... AS ..."
        );
    }

    #[test]
    fn a_saved_pattern_runs_over_every_trace() {
        let e = plan_err(
            "SAVE PATTERN p WITH $s = 'x in trace y' AS FIND vars IN TRACE 'g' WHERE var.name = $s",
            &[],
        );
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 54: a pattern runs over every trace; drop IN \
                 TRACE and use RUN PATTERN p OVER TRACES WHERE trace.id = '...'"
            ),
            "{e}"
        );
        // Before its parameter is missed.
        let e = plan_err("SAVE PATTERN p AS TRACE x in\n trace $t", &[]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 27: a pattern runs over every trace"
            ),
            "{e}"
        );
        let e = plan_err("SAVE PATTERN p AS MATCH (a) IN TRACE 'g' RETURN a", &[]);
        assert!(
            e.contains("column 29: a pattern runs over every trace"),
            "{e}"
        );
    }

    #[test]
    fn a_built_pattern_statement_is_checked_too() {
        let save = |body: Statement, params: Vec<(String, Value)>| {
            let stmt = Statement::SavePattern(SavePattern {
                name: "p".into(),
                params,
                body: Box::new(body),
            });
            plan(&stmt, &Params::new()).unwrap_err().to_string()
        };
        assert_eq!(
            save(Statement::ShowTraces, vec![]),
            "a pattern saves a TRACE, FORWARD, MATCH or FIND statement, not SHOW"
        );
        let find = crate::parse_statement("FIND vars LIMIT $a").unwrap();
        let twice = vec![("a".into(), Value::Int(1)), ("a".into(), Value::Int(2))];
        assert_eq!(
            save(find, twice.clone()),
            "parameter $a is given twice; give each parameter one value"
        );
        let run = Statement::RunPattern(RunPattern {
            name: "p".into(),
            over: None,
            params: twice,
        });
        assert!(plan(&run, &Params::new())
            .unwrap_err()
            .to_string()
            .contains("$a is given twice"));
    }

    #[test]
    fn a_run_picks_traces_by_their_fields_only() {
        let text = "RUN PATTERN big OVER TRACES WHERE trace.source = $src AND trace.id != 'a' \
                    WITH $min = 5";
        let Plan::RunPattern(r) = plan_of(text, &[("src", "x".into())]) else {
            panic!("not a RUN PATTERN plan")
        };
        assert_eq!(r.name, "big");
        assert_eq!(r.params, vec![("min".to_string(), Value::Int(5))]);
        assert!(r.body.is_none() && r.columns.is_empty());
        let over = r.over.expect("an OVER condition");
        assert_eq!(over.text, "trace.source = $src AND trace.id != 'a'");
        let compiled = format!("{:?}", over.expr);
        assert!(
            compiled.contains("Field(Trace, Source)")
                && compiled.contains("Field(Trace, Id)")
                && compiled.contains("Const(Str(\"x\"))"),
            "{compiled}"
        );
        let mut fields = Vec::new();
        fn subjects(e: &Pexpr, out: &mut Vec<Subject>) {
            match e {
                Pexpr::Field(s, _) => out.push(*s),
                Pexpr::And(v) => v.iter().for_each(|x| subjects(x, out)),
                Pexpr::Cmp(_, l, r) => {
                    subjects(l, out);
                    subjects(r, out);
                }
                _ => {}
            }
        }
        subjects(&over.expr, &mut fields);
        assert_eq!(fields, [Subject::Trace, Subject::Trace]);
        let Plan::RunPattern(r) = plan_of("RUN PATTERN big", &[]) else {
            panic!("not a RUN PATTERN plan")
        };
        assert!(r.over.is_none() && r.params.is_empty());
        // The condition's parameters are the caller's.
        let e = plan_err(
            "RUN PATTERN big OVER TRACES WHERE trace.id = $t WITH $t = 'g'",
            &[],
        );
        assert!(e.contains("column 46: parameter $t is not set"), "{e}");
        let e = plan_err("RUN PATTERN big OVER TRACES WHERE var.name = 'x'", &[]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 35: only trace fields (such as trace.id or \
                 trace.source) are allowed after OVER TRACES WHERE, not var.name"
            ),
            "{e}"
        );
        let e = plan_err(
            "RUN PATTERN big OVER TRACES WHERE trace.id = 'a' OR a.b = 1",
            &[],
        );
        assert!(
            e.contains("column 53: only trace fields") && e.contains("not a.b"),
            "{e}"
        );
        let e = plan_err("RUN PATTERN big OVER TRACES WHERE trace.idd = 'a'", &[]);
        assert!(
            e.contains("column 35: unknown field trace.idd (did you mean trace.id?)"),
            "{e}"
        );
        // A bare trace is its id.
        let e = plan_err(
            "RUN PATTERN big OVER TRACES WHERE trace = 'a' AND var.x = 1",
            &[],
        );
        assert!(e.contains("column 51: only trace fields"), "{e}");
        let e = plan_err("RUN PATTERN big OVER TRACES WHERE count(trace.id) > 1", &[]);
        assert!(e.contains("count() is an aggregate"), "{e}");
    }
}
