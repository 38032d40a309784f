//! How the analyses plug into the database: [`Analyses`] is the engine
//! [`Extension`] that runs ATTRIBUTE and the pattern statements, finds the
//! failed cases that judge ops record, and reads stored verdicts for
//! `FIND attributions`; [`open`] opens a database with it registered.

use std::path::Path;
use std::sync::Arc;

use memtrace_engine::query::plan::{AttributePlan, CaseSource};
use memtrace_engine::query::NodeRef;
use memtrace_engine::query::{self, Field, Plan, QueryError, Value};
use memtrace_engine::{
    iso_utc, Call, CaseOrigin, DerivedCase, Engine, EngineError, Extension, ResultRow, Sink,
    TraceId,
};

use crate::attrib::case::{failed_cases, is_judge_name, says_feedback};
use crate::attrib::{
    read_verdicts, Attribute, AttributeRequest, FailedCase, Method, Setting, StoredVerdict,
    TraceModel, Verdict,
};
use crate::error::{AnalysisError, Result};
use crate::patterns::{
    int, params_text, pattern_case_picks, resolve_case_pattern, resolve_run_plan, run_pattern_rows,
    store_pattern, Patterns,
};

/// Opens the database at `path` (creating it when the path does not exist)
/// with the analyses registered.
pub fn open(path: impl AsRef<Path>) -> Result<Engine> {
    Ok(Engine::open(path)?.with_extension(Arc::new(Analyses)))
}

/// Opens the database at `path` with the analyses registered; fails when
/// there is none.
pub fn open_existing(path: impl AsRef<Path>) -> Result<Engine> {
    Ok(Engine::open_existing(path)?.with_extension(Arc::new(Analyses)))
}

/// Opens the database at `path` for reading only, with the analyses
/// registered (see [`Engine::open_read_only`]).
pub fn open_read_only(path: impl AsRef<Path>) -> Result<Engine> {
    Ok(Engine::open_read_only(path)?.with_extension(Arc::new(Analyses)))
}

/// The analyses as the database calls them: the statements ATTRIBUTE, SAVE
/// PATTERN, RUN PATTERN, SHOW PATTERNS, SHOW PATTERN HISTORY and DROP
/// PATTERN; the failed cases of judge ops; stored verdicts as rows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Analyses;

impl Extension for Analyses {
    fn statements(&self) -> &[&'static str] {
        &[
            "ATTRIBUTE",
            "SAVE PATTERN",
            "RUN PATTERN",
            "SHOW PATTERNS",
            "SHOW PATTERN HISTORY",
            "DROP PATTERN",
        ]
    }

    fn prepare(&self, db: &Engine, plan: &mut Plan, text: &str) -> memtrace_engine::Result<()> {
        check_method(plan, text)?;
        if let Plan::RunPattern(r) = plan {
            resolve_run_plan(db, r)?;
        }
        resolve_case_pattern_in(db, plan, text)?;
        Ok(())
    }

    fn run(
        &self,
        call: &Call<'_, '_>,
        plan: &Plan,
        sink: &mut Sink<'_>,
    ) -> memtrace_engine::Result<()> {
        Ok(run(call, plan, sink)?)
    }

    fn may_derive_cases(&self, op_names: &mut dyn Iterator<Item = &str>) -> bool {
        for name in op_names {
            if is_judge_name(name) || says_feedback(Some(name)) {
                return true;
            }
        }
        false
    }

    fn derived_cases(
        &self,
        call: &Call<'_, '_>,
        trace: TraceId,
    ) -> memtrace_engine::Result<Vec<DerivedCase>> {
        let model = TraceModel::load(&call.snapshot.trace(trace)?)?;
        let cases = failed_cases(&model, &[]);
        model.read_error()?;
        Ok(cases
            .into_iter()
            .map(|c| DerivedCase {
                fields: judge_case_json(&c),
                origin: c.origin,
            })
            .collect())
    }

    fn result_rows(
        &self,
        call: &Call<'_, '_>,
        trace: TraceId,
    ) -> memtrace_engine::Result<Vec<Box<dyn ResultRow>>> {
        Ok(read_verdicts(call.snapshot, trace)?
            .into_iter()
            .map(|v| Box::new(v) as Box<dyn ResultRow>)
            .collect())
    }
}

/// Runs a statement of [`Analyses::statements`].
fn run(call: &Call<'_, '_>, plan: &Plan, sink: &mut Sink<'_>) -> Result<()> {
    let db = call.db();
    match plan {
        Plan::Attribute(a) => attribute(call, a, sink),
        Plan::SavePattern(p) => {
            let version = store_pattern(db, &p.name, &p.text, &p.params, &author())?;
            sink(vec![
                Value::Str(p.name.clone()),
                int(version),
                Value::Str(params_text(&p.params)),
                Value::Str(p.text.clone()),
            ])?;
            Ok(())
        }
        Plan::RunPattern(r) => run_pattern_rows(db, call.snapshot, r, call.cancel, sink),
        Plan::ShowPatterns => {
            for p in db.patterns()? {
                let (at, by) = match &p.saved {
                    Some((at, by)) => (Value::Str(iso_utc(*at)), Value::Str(by.clone())),
                    None => (Value::Null, Value::Null),
                };
                let row = vec![
                    Value::Str(p.name),
                    Value::Str(if p.builtin { "built-in" } else { "saved" }.into()),
                    p.error_type.map(|e| e.name().to_string()).into(),
                    Value::Str(params_text(&p.params)),
                    Value::Str(p.definition),
                    int(p.version),
                    at,
                    by,
                ];
                if !sink(row)? {
                    break;
                }
            }
            Ok(())
        }
        Plan::ShowPatternHistory(name) => {
            for e in db.pattern_history(name)? {
                let row = vec![
                    int(e.seq),
                    Value::Str(e.name),
                    Value::Str(e.action),
                    Value::Str(params_text(&e.params)),
                    e.statement.into(),
                    Value::Str(e.author),
                    Value::Str(iso_utc(e.at_ms)),
                ];
                if !sink(row)? {
                    break;
                }
            }
            Ok(())
        }
        Plan::DropPattern(name) => {
            db.drop_pattern(name, &author())?;
            sink(vec![Value::Str(name.clone()), Value::Bool(true)])?;
            Ok(())
        }
        other => Err(AnalysisError::Engine(EngineError::NoExtension(
            memtrace_engine::statement_name(other).unwrap_or("this statement"),
        ))),
    }
}

// ------------------------------------------------------------- ATTRIBUTE

/// Attributes the cases, appends the verdicts (as author `query`), and
/// returns one row per verdict.
fn attribute(call: &Call<'_, '_>, p: &AttributePlan, sink: &mut Sink<'_>) -> Result<()> {
    let db = call.db();
    let method: Method = p.method.parse().map_err(AnalysisError::UnknownMethod)?;
    let setting: Setting = match &p.setting {
        Some((s, _)) => s.parse().map_err(AnalysisError::UnknownSetting)?,
        None => Setting::Benchmark,
    };
    let verdicts = match &p.cases {
        CaseSource::All | CaseSource::Named(_) => {
            let cases: Option<Vec<String>> = match &p.cases {
                CaseSource::Named(refs) => Some(refs.iter().map(case_reference).collect()),
                _ => None,
            };
            let req = AttributeRequest {
                trace: p.scope.as_deref(),
                cases: cases.as_deref(),
                method,
                setting,
                search: Default::default(),
            };
            db.attribute(&req, call.cancel, &mut |_| {})?
        }
        CaseSource::Query { plan, .. } => {
            let picks = match plan.as_ref() {
                Plan::RunPattern(r) => pattern_case_picks(db, call.snapshot, r, call.cancel)?,
                other => call.snapshot.case_picks(other, call.cancel)?,
            };
            db.attribute_picked(&picks, method, setting, call.cancel, &mut |_| {})?
        }
    };
    db.store_verdicts(&verdicts, "query")?;
    for v in &verdicts {
        if !sink(verdict_row(v))? {
            break;
        }
    }
    Ok(())
}

/// Checks the attribution method and setting of an ATTRIBUTE: an
/// unknown one is an error placed at its name in `text`.
fn check_method(plan: &Plan, text: &str) -> Result<()> {
    let Plan::Attribute(a) = plan else {
        return Ok(());
    };
    if let Err(e) = a.method.parse::<Method>() {
        let names = Method::ALL.map(Method::name);
        let hint = query::nearest(&a.method, names)
            .map(|k| format!(" (did you mean {k}?)"))
            .unwrap_or_default();
        return Err(QueryError::invalid_at(text, a.method_at, format!("{e}{hint}")).into());
    }
    if let Some((s, at)) = &a.setting {
        if let Err(e) = s.parse::<Setting>() {
            let hint = query::nearest(s, Setting::ALL.map(Setting::name))
                .map(|k| format!(" (did you mean {k}?)"))
                .unwrap_or_default();
            return Err(QueryError::invalid_at(text, *at, format!("{e}{hint}")).into());
        }
    }
    Ok(())
}

/// Looks up the pattern of an `ATTRIBUTE (RUN PATTERN ...)` and checks that its hits are cases; a pattern whose hits are
/// not is an error placed at the subquery in `text`.
fn resolve_case_pattern_in(db: &Engine, plan: &mut Plan, text: &str) -> Result<()> {
    match plan {
        Plan::Attribute(a) => match &mut a.cases {
            CaseSource::Query { plan, at } => match plan.as_mut() {
                Plan::RunPattern(r) => match resolve_case_pattern(db, r)? {
                    Ok(()) => Ok(()),
                    Err(why) => Err(QueryError::invalid_at(text, *at, why).into()),
                },
                _ => Ok(()),
            },
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Who saves or drops a pattern from a statement: the login name, else `query`.
fn author() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "query".to_string())
}

/// The fields of a judge-derived case, under the keys an annotation uses.
fn judge_case_json(c: &FailedCase) -> serde_json::Value {
    let judge_op = match &c.origin {
        CaseOrigin::Judge(op) => Some(op.as_str()),
        CaseOrigin::Annotation(_) => None,
    };
    serde_json::json!({
        "query_id": c.query_node,
        "query": c.query,
        "golden_answers": c.gold,
        "prediction": c.prediction,
        "source_evidence_ids": c.source_evidence,
        "judge_op_id": judge_op,
        "judge_response": c.judge_response,
    })
}

impl ResultRow for StoredVerdict {
    fn field(&self, f: &Field) -> Value {
        verdict_field(self, f)
    }
}

/// A stored verdict's field, as `FIND attributions` reads it.
fn verdict_field(s: &StoredVerdict, f: &Field) -> Value {
    let v = &s.verdict;
    let int = |n: u64| i64::try_from(n).map_or(Value::Null, Value::Int);
    match f {
        Field::Case => Value::Str(v.case.clone()),
        Field::Query => Value::Str(v.query.clone()),
        Field::ErrorType => v.error_type.map(|e| e.name()).into(),
        Field::OpId => v.op_id.clone().into(),
        Field::OpName => v.op_name.clone().into(),
        Field::Confidence => Value::Float(v.confidence),
        Field::Reason => Value::Str(v.reason.clone()),
        Field::Method => Value::Str(v.method.clone()),
        Field::Version => Value::Str(v.version.clone()),
        Field::Author => Value::Str(s.author.clone()),
        Field::At => Value::Str(iso_utc(s.at_ms)),
        Field::Seq => int(s.seq),
        Field::Micros => int(v.micros),
        Field::Model => v.model.clone().into(),
        Field::Calls => v.cost.map_or(Value::Null, |c| int(c.calls.into())),
        Field::CachedCalls => v.cost.map_or(Value::Null, |c| int(c.cached_calls.into())),
        Field::TokensIn => v.cost.map_or(Value::Null, |c| int(c.tokens_in)),
        Field::TokensOut => v.cost.map_or(Value::Null, |c| int(c.tokens_out)),
        Field::Seconds => v.cost.map_or(Value::Null, |c| Value::Float(c.seconds)),
        Field::Setting => v.setting.map(|s| s.name()).into(),
        _ => Value::Null,
    }
}

/// An ATTRIBUTE row: the columns of [`attribute_columns`](memtrace_engine::query::attribute_columns).
fn verdict_row(v: &Verdict) -> Vec<Value> {
    vec![
        Value::Str(v.graph_id.clone()),
        Value::Str(v.case.clone()),
        v.error_type.map(|e| e.name()).into(),
        v.op_id.clone().into(),
        v.op_name.clone().into(),
        Value::Float(v.confidence),
        Value::Str(v.reason.clone()),
    ]
}

/// A case reference as [`AttributeRequest`] takes it: a full name, a full
/// node id or an op id, unquoted.
fn case_reference(r: &NodeRef) -> String {
    match r {
        NodeRef::Name {
            full_name,
            version: Some(v),
        } => format!("{full_name}@{v}"),
        NodeRef::Name {
            full_name,
            version: None,
        } => full_name.clone(),
        NodeRef::Quoted(s) => s.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::{case_reference, verdict_row};
    use crate::attrib::{ErrorType, Verdict};
    use memtrace_engine::query::NodeRef;
    use memtrace_engine::Value;

    #[test]
    fn attribute_rows_and_case_references_take_the_shapes_asked_for() {
        let mut v = Verdict {
            trace: 3,
            graph_id: "g".into(),
            system: None,
            case: "query:Q1@1".into(),
            query: "Where?".into(),
            error_type: Some(ErrorType::RetrievalError),
            op_id: Some("op-1".into()),
            op_name: Some("search".into()),
            confidence: 0.75,
            reason: "left out".into(),
            chain: Vec::new(),
            method: "evidence".into(),
            version: "1".into(),
            micros: 5,
            model: None,
            cost: None,
            setting: None,
        };
        assert_eq!(
            verdict_row(&v),
            [
                Value::Str("g".into()),
                Value::Str("query:Q1@1".into()),
                Value::Str("RetrievalError".into()),
                Value::Str("op-1".into()),
                Value::Str("search".into()),
                Value::Float(0.75),
                Value::Str("left out".into()),
            ]
        );
        assert_eq!(
            verdict_row(&v).len(),
            memtrace_engine::query::attribute_columns().len()
        );
        (v.error_type, v.op_id, v.op_name) = (None, None, None);
        assert_eq!(
            verdict_row(&v)[2..5],
            [Value::Null, Value::Null, Value::Null]
        );
        let name = |full_name: &str, version| NodeRef::Name {
            full_name: full_name.into(),
            version,
        };
        assert_eq!(case_reference(&name("query:Q8", None)), "query:Q8");
        assert_eq!(case_reference(&name("query:Q8", Some(2))), "query:Q8@2");
        assert_eq!(
            case_reference(&NodeRef::Quoted("op-it's".into())),
            "op-it's"
        );
    }
}

/// ATTRIBUTE over the cases of a subquery, run through the query language
/// on generated traces (annotated cases) and on hand-built judged ones.
#[cfg(test)]
mod subquery_tests {
    use std::collections::BTreeSet;

    use serde_json::{json, Value as Json};

    use crate::testing::{answer, import, temp_db};
    use memtrace_engine::Engine;
    use memtrace_gen::{generate_trace, GenSpec, System, TraceBuilder};

    /// A trace without annotations: one question per entry, judged by an
    /// `llm-judge` op that scored `score`.
    fn judged(graph_id: &str, questions: &[(&str, &str)]) -> Json {
        let mut b = TraceBuilder::new(graph_id, "u", "judged", json!({}), 19_000);
        b.session("memory_construction", "session", json!({}));
        let m = b.variable(
            Some("message"),
            "D1:1",
            "'Omar: I drive a blue Volvo.'",
            "message",
            None,
            json!({}),
        );
        b.session("memory_evaluation", "session", json!({}));
        for (q, score) in questions {
            let v = |b: &mut TraceBuilder, class: &str, value: &str| {
                b.variable(Some(class), q, value, class, None, json!({}))
            };
            let query = v(&mut b, "query", "'What car does Omar drive?'");
            let (pred, _) = answer(&mut b, q, "'a red Toyota'", &[&query, &m]);
            let gold = v(&mut b, "golden_answers", "['a blue Volvo']");
            let resp = v(&mut b, "judge_response", "'WRONG'");
            let sc = v(&mut b, "judge_score", score);
            b.op(
                "llm-judge",
                "evaluation",
                None,
                &[&query, &gold, &pred],
                &[&resp, &sc],
                json!({}),
            );
        }
        b.finish()
    }

    /// Two small Mem0 traces, a RAG trace and a judged trace.
    fn db() -> (tempfile::TempDir, Engine) {
        let (dir, db) = temp_db();
        for (system, seed) in [(System::Mem0, 3), (System::Rag, 3), (System::Mem0, 4)] {
            let spec = GenSpec {
                seed,
                ..GenSpec::small(system)
            };
            import(&db, &generate_trace(&spec, 0).document);
        }
        import(
            &db,
            &judged("judged-1", &[("Q1", "0.0"), ("Q2", "1.0"), ("Q3", "0")]),
        );
        (dir, db)
    }

    fn rows(db: &Engine, q: &str) -> Vec<Vec<Json>> {
        db.query(q).unwrap_or_else(|e| panic!("{q}\n{e}")).rows
    }

    /// (trace, case) of rows whose first two columns are those.
    fn pairs(rows: &[Vec<Json>]) -> Vec<(String, String)> {
        rows.iter()
            .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
            .collect()
    }

    /// The stored verdicts: (trace, case, method, author).
    fn stored(db: &Engine) -> BTreeSet<(String, String, String, String)> {
        rows(
            db,
            "FIND attributions RETURN trace.id, case, method, author",
        )
        .into_iter()
        .map(|r| {
            let s = |i: usize| r[i].as_str().unwrap().to_string();
            (s(0), s(1), s(2), s(3))
        })
        .collect()
    }

    #[test]
    fn attribute_takes_exactly_the_cases_its_find_returns_each_in_its_own_trace() {
        let (_dir, db) = db();
        let all = pairs(&rows(&db, "FIND cases RETURN trace.id, case.query_id"));
        let sub = "FIND cases WHERE trace.project_id = 'mem0' \
                   RETURN trace.id, case.query_id ORDER BY case.query_id DESC, trace.id LIMIT 5";
        let want = pairs(&rows(&db, sub));
        // Cases of both Mem0 traces, and not every case of either.
        let traces: BTreeSet<&String> = want.iter().map(|(t, _)| t).collect();
        assert_eq!(want.len(), 5, "{want:?}");
        assert_eq!(traces.len(), 2, "{want:?}");
        assert!(all.len() > 10 && all.iter().any(|c| !want.contains(c)));

        let r = db
            .query(&format!("ATTRIBUTE ({sub}) USING evidence"))
            .unwrap();
        assert_eq!(r.columns, memtrace_engine::query::attribute_columns());
        // One verdict per case, in the subquery's order.
        assert_eq!(pairs(&r.rows), want);
        assert!(r.rows.iter().all(|row| row[2].is_string()), "{:?}", r.rows);
        let expect: BTreeSet<_> = want
            .iter()
            .map(|(t, c)| (t.clone(), c.clone(), "evidence".into(), "query".into()))
            .collect();
        assert_eq!(stored(&db), expect);
        // The same verdicts as naming each case in its trace.
        for row in &r.rows {
            let one = db
                .query(&format!(
                    "ATTRIBUTE '{}' IN TRACE '{}' USING evidence",
                    row[1].as_str().unwrap(),
                    row[0].as_str().unwrap()
                ))
                .unwrap();
            assert_eq!(one.rows, vec![row.clone()]);
        }
        // Nothing new was stored by repeating the same findings.
        assert_eq!(stored(&db), expect);
        // An empty subquery attributes nothing, even with an LLM method and no endpoint.
        let r = db
            .query("ATTRIBUTE (FIND cases WHERE trace.project_id = 'nope') USING llm")
            .unwrap();
        assert!(r.rows.is_empty());
    }

    #[test]
    fn judge_cases_are_picked_by_their_judge_op() {
        let (_dir, db) = db();
        let judges = rows(
            &db,
            "FIND cases WHERE case.origin = 'judge' RETURN trace.id, case.query_id, case.judge_op_id",
        );
        assert_eq!(judges.len(), 2, "{judges:?}");
        let r = db
            .query(
                "ATTRIBUTE (FIND cases WHERE case.origin = 'judge' AND case.query_id = 'query:Q3@1') \
                 USING evidence",
            )
            .unwrap();
        assert_eq!(
            pairs(&r.rows),
            [("judged-1".to_string(), "query:Q3@1".to_string())]
        );
        assert_eq!(
            stored(&db),
            [(
                "judged-1".to_string(),
                "query:Q3@1".to_string(),
                "evidence".to_string(),
                "query".to_string()
            )]
            .into()
        );
    }

    #[test]
    fn attribute_takes_the_cases_a_pattern_hits() {
        let (_dir, db) = db();
        // The built-in patterns of the evidence: their hits are cases.
        let mut attributed = 0;
        for (name, ty) in [
            ("evidence_never_stored", "ExtractionError"),
            ("stored_then_overwritten", "UpdateError"),
            ("stored_not_retrieved", "RetrievalError"),
        ] {
            let run = format!("RUN PATTERN {name} OVER TRACES WHERE trace.project_id = 'mem0'");
            let hits = pairs(&rows(&db, &run));
            let r = db
                .query(&format!("ATTRIBUTE ({run}) USING evidence"))
                .unwrap();
            assert_eq!(pairs(&r.rows), hits, "{name}");
            assert!(r.rows.iter().all(|row| row[2] == ty), "{name}");
            attributed += hits.len();
        }
        assert!(attributed > 0);
        assert_eq!(stored(&db).len(), attributed);

        // A saved FIND cases: its LIMIT applies in each trace.
        rows(
            &db,
            "SAVE PATTERN first_two AS FIND cases ORDER BY case.query_id LIMIT 2",
        );
        // Each hit: the trace, then the saved FIND's columns (trace, query_id, ...).
        let hits: Vec<(String, String)> = rows(
            &db,
            "RUN PATTERN first_two OVER TRACES WHERE trace.project_id IN ['rag', 'judged']",
        )
        .iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[2].as_str().unwrap().into()))
        .collect();
        assert_eq!(hits.len(), 4, "{hits:?}");
        let r = db
            .query(
                "ATTRIBUTE (RUN PATTERN first_two OVER TRACES WHERE \
                 trace.project_id IN ['rag', 'judged']) USING evidence",
            )
            .unwrap();
        assert_eq!(pairs(&r.rows), hits);
        // EXPLAIN shows the saved statement under the pattern.
        let plan: Vec<String> = rows(
            &db,
            "EXPLAIN ATTRIBUTE (RUN PATTERN first_two) USING evidence",
        )
        .into_iter()
        .map(|r| r[0].as_str().unwrap().to_string())
        .collect();
        assert_eq!(
            plan[3..],
            [
                "      └─ The failed cases the pattern's hits name, each once, in trace order",
                "         └─ Run pattern first_two over every trace",
                "            └─ Limit 2",
                "               └─ Sort by case.query_id",
                "                  └─ Project trace, query_id, query, prediction, error_type, op_id",
                "                     └─ Scan cases of each trace (its annotations, else its llm-judge ops that scored 0)",
                "                        └─ Every trace",
            ]
        );
    }

    #[test]
    fn a_pattern_whose_hits_are_not_cases_is_refused_when_planned() {
        let (_dir, db) = db();
        rows(
            &db,
            "SAVE PATTERN judge_ops AS FIND ops WHERE op.name = 'llm-judge'",
        );
        rows(
            &db,
            "SAVE PATTERN per_trace AS FIND cases GROUP BY trace.id",
        );
        rows(&db, "SAVE PATTERN walk AS TRACE prediction:Q1 DEPTH 1");
        let err = |q: &str| {
            db.prepare(q, &memtrace_engine::Params::new())
                .unwrap_err()
                .to_string()
        };
        let e = err("ATTRIBUTE (RUN PATTERN judge_ops) USING evidence");
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 12: pattern judge_ops: FIND ops returns ops, \
                 not failed cases; ATTRIBUTE needs one failed case per hit: the built-in patterns \
                 evidence_never_stored, stored_then_overwritten, evidence_deleted, \
                 stored_not_retrieved, retrieved_answered_wrong, or a saved FIND cases without \
                 GROUP BY, aggregates or DISTINCT\n  ATTRIBUTE (RUN PATTERN judge_ops) USING evidence\n             ^"
            ),
            "{e}"
        );
        let e = err("EXPLAIN ATTRIBUTE (RUN PATTERN per_trace) USING evidence");
        assert!(
            e.contains("column 20: pattern per_trace: its rows are groups"),
            "{e}"
        );
        let e = err("ATTRIBUTE (RUN PATTERN walk) USING evidence");
        assert!(
            e.contains("the hits of pattern walk are the rows of a traversal, not failed cases"),
            "{e}"
        );
        let e = err("ATTRIBUTE (RUN PATTERN noop_update) USING evidence");
        assert!(
            e.contains(
                "the hits of built-in pattern noop_update (op_id, op_name, var, previous, bytes) \
                 are not failed cases"
            ),
            "{e}"
        );
        let e = err("ATTRIBUTE (RUN PATTERN nope) USING evidence");
        assert!(e.contains("no pattern nope"), "{e}");
        let e = err("ATTRIBUTE (RUN PATTERN evidence_deleted WITH $k = 1) USING evidence");
        assert!(e.contains("has no parameter $k"), "{e}");
        // Nothing was attributed.
        assert!(rows(&db, "FIND attributions").is_empty());
    }
}
