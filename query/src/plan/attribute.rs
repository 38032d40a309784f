//! ATTRIBUTE: which failed cases (all, named, or a subquery's), the method,
//! and the columns of the verdicts returned.

use crate::ast::{Attribute, AttributeTarget, CaseQuery};

use super::planner::{Planner, Result};
use super::types::{AttributePlan, CaseSource, Plan};

/// What an ATTRIBUTE's subquery may be, for the errors that refuse one.
pub const SUBQUERIES: &str = "write (FIND cases [IN TRACE 'id'] [WHERE ...] [ORDER BY ...] \
     [LIMIT n]), whose WHERE reads case. and trace. fields, or (RUN PATTERN name ...) with a \
     pattern whose hits are cases, such as stored_not_retrieved";

/// The columns ATTRIBUTE returns: one row per verdict.
pub fn attribute_columns() -> Vec<String> {
    [
        "trace",
        "case",
        "error_type",
        "op_id",
        "op_name",
        "confidence",
        "reason",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

impl Planner<'_> {
    pub(super) fn attribute(&self, a: &Attribute) -> Result<AttributePlan> {
        let cases = match &a.target {
            AttributeTarget::Cases => CaseSource::All,
            AttributeTarget::Starts(starts) => CaseSource::Named(
                starts
                    .iter()
                    .map(|s| self.start(s))
                    .collect::<Result<_>>()?,
            ),
            AttributeTarget::Query(q) => {
                let plan = match &q.query {
                    CaseQuery::Find(f) => {
                        let mut find = self.find(f)?;
                        find.keep_case_keys().map_err(|why| {
                            self.err(
                                q.span,
                                format!(
                                    "{why}; ATTRIBUTE needs one failed case per row: {SUBQUERIES}"
                                ),
                            )
                        })?;
                        Plan::Find(find)
                    }
                    CaseQuery::RunPattern(r) => Plan::RunPattern(self.run_pattern(r)?),
                };
                CaseSource::Query {
                    plan: Box::new(plan),
                    at: q.span.start,
                }
            }
        };
        Ok(AttributePlan {
            cases,
            scope: self.in_trace(&a.in_trace)?,
            method: a.method.clone(),
            method_at: a.method_span.start,
            setting: a.setting.as_ref().map(|(s, at)| (s.clone(), at.start)),
            columns: attribute_columns(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::Pexpr;
    use crate::node_ref::NodeRef;
    use crate::plan::test_support::{explain, plan_err, plan_of};
    use crate::plan::{plan, Field, Params, Subject};
    use crate::value::Value;

    #[test]
    fn attribute_plans_name_the_cases_the_method_and_the_columns() {
        let stmt = crate::parse_statement("ATTRIBUTE 'query:Q8@1', $c USING evidence").unwrap();
        let params: Params = [("c".to_string(), Value::Str("query:Q9".into()))].into();
        let Plan::Attribute(a) = plan(&stmt, &params).unwrap() else {
            panic!("not an attribute plan")
        };
        let CaseSource::Named(refs) = &a.cases else {
            panic!("not named cases: {:?}", a.cases)
        };
        assert_eq!(
            refs,
            &[
                NodeRef::Quoted("query:Q8@1".into()),
                NodeRef::Name {
                    full_name: "query:Q9".into(),
                    version: None
                }
            ]
        );
        assert!(matches!(
            plan_of("ATTRIBUTE CASES USING evidence", &[]),
            Plan::Attribute(AttributePlan {
                cases: CaseSource::All,
                ..
            })
        ));
        assert_eq!(
            (a.scope, a.method.as_str(), a.method_at),
            (None, "evidence", 33)
        );
        assert_eq!(
            a.columns,
            [
                "trace",
                "case",
                "error_type",
                "op_id",
                "op_name",
                "confidence",
                "reason"
            ]
        );
        assert_eq!(
            explain("EXPLAIN ATTRIBUTE CASES IN TRACE $t USING evidence", &[("t", "g".into())]),
            [
                "Project trace, case, error_type, op_id, op_name, confidence, reason",
                "└─ Store verdicts as 'query' (a finding already stored is skipped)",
                "   └─ Attribute each case using evidence",
                "      └─ Every failed case of trace 'g' (annotations, else llm-judge ops that scored 0)",
            ]
        );
        assert_eq!(
            explain("ATTRIBUTE query:Q8, 'x y' USING evidence", &[])[3],
            "      └─ Failed cases query:Q8, 'x y' (query variable, node id or judge op id) of every trace"
        );
        let e = plan_err("ATTRIBUTE query:Q8 IN TRACE $t USING evidence", &[]);
        assert!(e.contains("column 29: parameter $t is not set"), "{e}");
        let e = plan_err("ATTRIBUTE $c USING evidence", &[("c", Value::Int(3))]);
        assert!(
            e.contains("parameter $c must be text naming a variable or op"),
            "{e}"
        );
    }

    #[test]
    fn an_attribute_subquery_plans_as_a_find_of_cases_that_keeps_their_keys() {
        let text = "ATTRIBUTE (FIND cases WHERE trace.project_id = 'mem0' AND case.query \
                    CONTAINS $w ORDER BY case.golden_answers DESC LIMIT 3) USING hybrid";
        let Plan::Attribute(a) = plan_of(text, &[("w", "when".into())]) else {
            panic!("not an ATTRIBUTE plan")
        };
        assert_eq!((a.scope.as_deref(), a.method.as_str()), (None, "hybrid"));
        let CaseSource::Query { plan, at } = &a.cases else {
            panic!("not a subquery: {:?}", a.cases)
        };
        assert_eq!(*at, 11);
        let Plan::Find(f) = plan.as_ref() else {
            panic!("not a FIND: {plan:?}")
        };
        let p = &f.projection;
        // The columns a FIND cases shows, then the two keys, then the sort key.
        assert_eq!(
            p.columns,
            [
                "trace",
                "query_id",
                "query",
                "prediction",
                "error_type",
                "op_id"
            ]
        );
        assert_eq!(p.keys, 2);
        assert_eq!(
            format!("{:?}", &p.outputs[6..]),
            format!(
                "{:?}",
                [
                    Pexpr::Field(Subject::Trace, Field::Key),
                    Pexpr::Field(Subject::Case, Field::Key),
                    Pexpr::Field(Subject::Case, Field::GoldenAnswers),
                ]
            )
        );
        assert_eq!(p.order, [(8, true)]);
        assert_eq!(p.limit, Some(3));
        assert!(f.trace_filter.is_some() && f.filter.is_some());
        // Keys are added once.
        let mut again = f.clone();
        again.keep_case_keys().unwrap();
        assert_eq!(
            format!("{:?}", again.projection.outputs),
            format!("{:?}", p.outputs)
        );
        assert_eq!(again.projection.order, p.order);
        // A sort key that is a column stays where it is.
        let Plan::Attribute(a) = plan_of(
            "ATTRIBUTE (FIND cases ORDER BY query_id, trace DESC) USING evidence",
            &[],
        ) else {
            panic!("not an ATTRIBUTE plan")
        };
        let CaseSource::Query { plan, .. } = a.cases else {
            panic!("not a subquery")
        };
        let Plan::Find(f) = *plan else {
            panic!("not a FIND")
        };
        assert_eq!(f.projection.order, [(1, false), (0, true)]);
        assert_eq!(f.projection.outputs.len(), 8);

        assert_eq!(
            explain(text, &[("w", "when".into())]),
            [
                "Project trace, case, error_type, op_id, op_name, confidence, reason",
                "└─ Store verdicts as 'query' (a finding already stored is skipped)",
                "   └─ Attribute each case in its own trace using hybrid",
                "      └─ The failed cases of the subquery's rows, each once, in its order",
                "         └─ Limit 3",
                "            └─ Sort by case.golden_answers DESC",
                "               └─ Project trace, query_id, query, prediction, error_type, op_id",
                "                  └─ Filter case.query CONTAINS $w",
                "                     └─ Scan cases of each trace (its annotations, else its llm-judge ops that scored 0)",
                "                        └─ Every trace where trace.project_id = 'mem0'",
            ]
        );
        // A pattern's hits: the engine resolves the pattern.
        let Plan::Attribute(a) = plan_of(
            "ATTRIBUTE (RUN PATTERN evidence_deleted OVER TRACES WHERE trace.id = 'g') USING llm",
            &[],
        ) else {
            panic!("not an ATTRIBUTE plan")
        };
        assert!(matches!(
            &a.cases,
            CaseSource::Query { plan, at: 11 } if matches!(plan.as_ref(), Plan::RunPattern(r)
                if r.name == "evidence_deleted" && r.over.is_some() && r.body.is_none())
        ));
        assert_eq!(
            Plan::Attribute(a).explain()[2..],
            [
                "   └─ Attribute each case in its own trace using llm",
                "      └─ The failed cases the pattern's hits name, each once, in trace order",
                "         └─ Run pattern evidence_deleted over traces where trace.id = 'g'",
            ]
        );
    }

    #[test]
    fn a_subquery_whose_rows_are_not_cases_is_refused_where_it_is_written() {
        let e = plan_err(
            "ATTRIBUTE (FIND ops WHERE op.kind = 'retrieval') USING evidence",
            &[],
        );
        assert_eq!(
            e,
            format!(
                "invalid statement at line 1, column 12: FIND ops returns ops, not failed cases; \
                 ATTRIBUTE needs one failed case per row: {SUBQUERIES}\n  \
                 ATTRIBUTE (FIND ops WHERE op.kind = 'retrieval') USING evidence\n             ^"
            )
        );
        for (kind, what) in [
            ("vars", "variables"),
            ("edges", "edges"),
            ("sessions", "sessions"),
            ("traces", "traces"),
            ("attributions", "stored verdicts"),
        ] {
            let e = plan_err(&format!("EXPLAIN ATTRIBUTE\n  (FIND {kind}) USING x"), &[]);
            assert!(
                e.starts_with(&format!(
                    "invalid statement at line 2, column 4: FIND {kind} returns {what}, not failed cases;"
                )),
                "{e}"
            );
        }
        let e = plan_err(
            "ATTRIBUTE (FIND cases GROUP BY trace.id) USING evidence",
            &[],
        );
        assert!(
            e.contains("column 12: its rows are groups (GROUP BY, or an aggregate such as count(*)), not cases; ATTRIBUTE needs one failed case per row: write (FIND cases"),
            "{e}"
        );
        let e = plan_err(
            "ATTRIBUTE (FIND cases RETURN trace.id, count(*)) USING evidence",
            &[],
        );
        assert!(e.contains("its rows are groups"), "{e}");
        let e = plan_err(
            "ATTRIBUTE (FIND cases ORDER BY count(*)) USING evidence",
            &[],
        );
        assert!(e.contains("its rows are groups"), "{e}");
        let e = plan_err(
            "ATTRIBUTE (FIND cases RETURN DISTINCT trace.id) USING evidence",
            &[],
        );
        assert!(
            e.contains("column 12: RETURN DISTINCT merges its rows, so they are not cases"),
            "{e}"
        );
        // A RETURN that keeps one row per case is allowed.
        assert!(matches!(
            plan_of(
                "ATTRIBUTE (FIND cases RETURN case.query AS q ORDER BY q) USING evidence",
                &[]
            ),
            Plan::Attribute(_)
        ));
        // Errors inside the subquery point into it.
        let e = plan_err(
            "ATTRIBUTE (FIND cases WHERE var.name = 'x') USING evidence",
            &[],
        );
        assert!(
            e.contains(
                "column 29: var. fields are not available here; this statement has case or trace"
            ),
            "{e}"
        );
        let e = plan_err("ATTRIBUTE (FIND cases LIMIT $n) USING evidence", &[]);
        assert!(e.contains("column 29: parameter $n is not set"), "{e}");
        let e = plan_err(
            "ATTRIBUTE (RUN PATTERN p OVER TRACES WHERE var.name = 'x') USING evidence",
            &[],
        );
        assert!(e.contains("only trace fields"), "{e}");
    }
}
