use super::*;
use crate::attrib::case::FailedCase;
use crate::attrib::choose::Chooser;
use crate::attrib::dense::Search;
use crate::attrib::evidence::{self, Recall};
use crate::attrib::flow;
use crate::attrib::setting::Setting;
use crate::attrib::traces::trace_cases;
use crate::attrib::verdict::{Method, Verdict};
use crate::attrib::{ErrorType, EvidenceOrigin};
use crate::testing::{answer, import, judge, temp_db};
use crate::AnalysisError;
use memtrace_engine::EngineError;
use memtrace_engine::{Cancel, CaseOrigin, Engine};
use memtrace_engine::{ImportOptions, InputFormat, Params};
use memtrace_gen::builder::{TraceBuilder, VarRef};
use serde_json::json;

/// Two messages, a question answered from a memory, and its judge.
/// Returns the query and the question-answering op's id.
fn conversation(b: &mut TraceBuilder, q: &str, score: &str, evidence: bool) -> (VarRef, String) {
    b.session("memory_construction", "session", json!({}));
    let m1 = b.variable(
        Some("message"),
        &format!("{q}:1"),
        "'Omar: I drive a blue Volvo.'",
        "message",
        None,
        json!({}),
    );
    let m2 = b.variable(
        Some("message"),
        &format!("{q}:2"),
        "'Lena: My cat Luna sleeps all day.'",
        "message",
        None,
        json!({}),
    );
    b.session("memory_evaluation", "session", json!({}));
    let meta = if evidence {
        json!({"evidence": [format!("message:{q}:1")]})
    } else {
        json!({})
    };
    let query = b.variable(
        Some("query"),
        q,
        "'What car does Omar drive?'",
        "message & query",
        None,
        meta,
    );
    let (pred, qa) = answer(b, q, "'a red Toyota'", &[&query, &m1]);
    judge(
        b,
        q,
        &query,
        &pred,
        "['a blue Volvo']",
        "'WRONG: the car is a blue Volvo'",
        score,
    );
    let _ = m2;
    (query, qa)
}

#[test]
fn judge_ops_that_scored_zero_are_the_cases_when_there_are_no_annotations() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-judged", "u", "rag", json!({}), 19_000);
    conversation(&mut b, "Q1", "0.0", true);
    conversation(&mut b, "Q2", "1.0", false);
    import(&db, &b.finish());
    let cases = db.failed_cases(None).unwrap();
    assert_eq!(cases.len(), 1, "{cases:?}");
    let c = &cases[0];
    assert_eq!(c.id, "query:Q1@1");
    assert_eq!(c.query, "What car does Omar drive?");
    assert_eq!(c.gold, vec!["a blue Volvo"]);
    assert_eq!(c.prediction, "a red Toyota");
    assert_eq!(
        c.judge_response.as_deref(),
        Some("WRONG: the car is a blue Volvo")
    );
    assert_eq!(c.source_evidence, vec!["message:Q1:1@1"]);
    assert_eq!(c.system.as_deref(), Some("rag"));
    assert!(matches!(c.origin, CaseOrigin::Judge(_)));
}

#[test]
fn annotations_are_the_cases_when_present_and_labels_stay_out() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-annotated", "u", "mem0", json!({}), 19_000);
    let (_, qa) = conversation(&mut b, "Q1", "0.0", false);
    b.annotate(json!({
        "query_id": "query:Q1@1", "query": "What car does Omar drive?",
        "golden_answers": ["a blue Volvo"], "prediction": "a red Toyota",
        "source_evidence_ids": ["message:Q1:1@1"],
        "final_error_type": "RetrievalError", "final_op_id": qa
    }));
    import(&db, &b.finish());
    let cases = db.failed_cases(Some("g-annotated")).unwrap();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].origin, CaseOrigin::Annotation(0));
    assert_eq!(cases[0].source_evidence, vec!["message:Q1:1@1"]);
    let text = serde_json::to_string(&cases[0]).unwrap();
    assert!(
        !text.contains("RetrievalError") && !text.contains(&qa),
        "{text}"
    );
}

#[test]
fn pseudo_evidence_finds_the_message_that_answers_and_recall_counts_it() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-pseudo", "u", "rag", json!({}), 19_000);
    conversation(&mut b, "Q1", "0.0", true);
    import(&db, &b.finish());
    let view = db.trace("g-pseudo").unwrap();
    let (model, cases) = trace_cases(&view).unwrap();
    let flow = flow::Flow::new(&model);
    let chooser = Chooser::new(&model, flow.matcher());
    let top = chooser.candidates(&cases[0]);
    assert_eq!(model.vars[top[0].message].full_node_id, "message:Q1:1@1");
    let ev = evidence::evidence(&model, &chooser, &cases[0], 8);
    assert_eq!(ev.origin, EvidenceOrigin::Source);
    assert_eq!(ev.weights, [1.0]);
    let mut without = cases[0].clone();
    without.source_evidence.clear();
    let ev = evidence::evidence(&model, &chooser, &without, 8);
    assert_eq!(ev.origin, EvidenceOrigin::Pseudo);
    assert_eq!(ev.items[0], top[0].message);
    assert!(ev.weights[0] > ev.weights.get(1).copied().unwrap_or(0.0));
    let report = db.evidence_recall(1, Search::Sparse).unwrap();
    assert_eq!(report.total.cases, 1);
    assert_eq!(report.total.micro(), 1.0);
    assert_eq!(report.by_system["rag"].complete, 1);
}

fn verdict_for(case: &FailedCase, op: &str, reason: &str) -> Verdict {
    Verdict {
        error_type: Some(ErrorType::ResponseError),
        op_id: Some(op.to_string()),
        op_name: Some("question-answering".into()),
        confidence: 0.5,
        reason: reason.into(),
        setting: None,
        ..Verdict::undecided(case, Method::Evidence, 7)
    }
}

#[test]
fn verdicts_are_appended_once_and_read_back_with_author_and_time() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-verdicts", "u", "rag", json!({}), 19_000);
    let (_, qa) = conversation(&mut b, "Q1", "0.0", true);
    import(&db, &b.finish());
    let case = db.failed_cases(None).unwrap().remove(0);
    let first = verdict_for(&case, &qa, "held, then ignored");
    assert_eq!(
        db.store_verdicts(std::slice::from_ref(&first), "tester")
            .unwrap(),
        1
    );
    // The same finding again adds nothing; a changed one is appended.
    assert_eq!(
        db.store_verdicts(std::slice::from_ref(&first), "tester")
            .unwrap(),
        0
    );
    let second = verdict_for(&case, &qa, "another reason");
    assert_eq!(
        db.store_verdicts(std::slice::from_ref(&second), "tester")
            .unwrap(),
        1
    );
    let stored = db.attributions(Some("g-verdicts")).unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!((stored[0].seq, stored[1].seq), (1, 2));
    assert_eq!(stored[0].verdict, first);
    assert_eq!(stored[1].verdict, second);
    assert_eq!(stored[1].author, "tester");
    assert!(stored[1].at_ms >= stored[0].at_ms && stored[0].at_ms > 0);
    assert!(matches!(
        db.attributions(Some("nope")),
        Err(AnalysisError::Engine(EngineError::UnknownTrace(_)))
    ));
}

fn rows(db: &Engine, q: &str) -> Vec<Vec<serde_json::Value>> {
    db.query(q).unwrap_or_else(|e| panic!("{q}\n{e}")).rows
}

/// A question answered without a judge, and a user's feedback on the
/// answer: `value` is what the feedback op wrote.
fn with_feedback(b: &mut TraceBuilder, q: &str, value: &str) {
    b.session("memory_construction", "session", json!({}));
    let m1 = b.variable(
        Some("message"),
        &format!("{q}:1"),
        "'Omar: I drive a blue Volvo.'",
        "message",
        None,
        json!({}),
    );
    b.session("memory_evaluation", "session", json!({}));
    let query = b.variable(
        Some("query"),
        q,
        "'What car does Omar drive?'",
        "message & query",
        None,
        json!({}),
    );
    let (pred, _) = answer(b, q, "'a red Toyota'", &[&query, &m1]);
    let rating = b.variable(Some("rating"), q, value, "feedback", None, json!({}));
    b.op(
        "user_feedback",
        "feedback",
        None,
        &[&pred],
        &[&rating],
        json!({}),
    );
}

#[test]
fn a_users_thumbs_down_is_a_case_without_a_gold_answer() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-feedback", "u", "rag", json!({}), 19_000);
    with_feedback(&mut b, "Q1", "'thumbs_down'");
    with_feedback(&mut b, "Q2", "'thumbs-up'");
    with_feedback(&mut b, "Q3", "0");
    import(&db, &b.finish());
    let cases = db.failed_cases(Some("g-feedback")).unwrap();
    let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["query:Q1@1", "query:Q3@1"]);
    assert!(cases[0].gold.is_empty());
    assert_eq!(cases[0].prediction, "a red Toyota");
    assert_eq!(cases[0].query, "What car does Omar drive?");
    assert_eq!(cases[0].setting(), Setting::Production);
    let got = rows(
        &db,
        "FIND cases IN TRACE 'g-feedback' RETURN case.query_id, case.origin",
    );
    assert_eq!(got.len(), 2, "{got:?}");
    // Attributed from the question and the prediction alone.
    let req = AttributeRequest {
        trace: Some("g-feedback"),
        cases: None,
        method: Method::Evidence,
        setting: Setting::Benchmark,
        search: Search::Sparse,
    };
    let v = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].setting, Some(Setting::Production));
    assert!(v[0].error_type.is_some(), "{:?}", v[0]);
}

#[test]
fn find_cases_lists_the_judge_cases_of_a_trace_without_annotations() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-judged", "u", "rag", json!({}), 19_000);
    conversation(&mut b, "Q1", "0.0", true);
    conversation(&mut b, "Q2", "1.0", false);
    conversation(&mut b, "Q3", "0", false);
    import(&db, &b.finish());
    let mut b = TraceBuilder::new("g-annotated", "u", "mem0", json!({}), 19_000);
    let (_, qa) = conversation(&mut b, "Q1", "0.0", false);
    b.annotate(json!({
        "query_id": "query:Q1@1", "query": "What car does Omar drive?",
        "golden_answers": ["a blue Volvo"], "prediction": "a red Toyota",
        "source_evidence_ids": ["message:Q1:1@1"],
        "final_error_type": "RetrievalError", "final_op_id": qa
    }));
    import(&db, &b.finish());
    let judge_ops: Vec<String> = db
        .failed_cases(Some("g-judged"))
        .unwrap()
        .into_iter()
        .map(|c| match c.origin {
            CaseOrigin::Judge(op) => op,
            other => panic!("{other:?}"),
        })
        .collect();
    let got = rows(
        &db,
        "FIND cases RETURN trace.id, case.query_id, case.query, case.golden_answers, \
         case.prediction, case.evidence, case.error_type, case.op_id, case.origin, \
         case.judge_op_id",
    );
    assert_eq!(
        got,
        [
            json!([
                "g-judged",
                "query:Q1@1",
                "What car does Omar drive?",
                ["a blue Volvo"],
                "a red Toyota",
                ["message:Q1:1@1"],
                null,
                null,
                "judge",
                judge_ops[0]
            ]),
            json!([
                "g-judged",
                "query:Q3@1",
                "What car does Omar drive?",
                ["a blue Volvo"],
                "a red Toyota",
                [],
                null,
                null,
                "judge",
                judge_ops[1]
            ]),
            json!([
                "g-annotated",
                "query:Q1@1",
                "What car does Omar drive?",
                ["a blue Volvo"],
                "a red Toyota",
                ["message:Q1:1@1"],
                "RetrievalError",
                qa,
                "annotation",
                null
            ]),
        ]
        .map(|r| r.as_array().unwrap().clone())
    );
    // The default columns, filters and groups see judge cases like the others.
    let got = rows(&db, "FIND cases IN TRACE 'g-judged' LIMIT 1");
    assert_eq!(
        got,
        [json!([
            "g-judged",
            "query:Q1@1",
            "What car does Omar drive?",
            "a red Toyota",
            null,
            null
        ])
        .as_array()
        .unwrap()
        .clone()]
    );
    let got = rows(
        &db,
        "FIND cases GROUP BY case.origin RETURN case.origin, count(*) ORDER BY case.origin",
    );
    assert_eq!(
        got,
        [
            vec![json!("annotation"), json!(1)],
            vec![json!("judge"), json!(2)]
        ]
    );
    let got = rows(
        &db,
        "FIND cases WHERE case.origin = 'judge' AND case.prediction CONTAINS 'Toyota' \
         RETURN case.query_id",
    );
    assert_eq!(got, [vec![json!("query:Q1@1")], vec![json!("query:Q3@1")]]);
    // A trace without judge ops and annotations has no cases.
    let mut b = TraceBuilder::new("g-plain", "u", "rag", json!({}), 19_000);
    b.session("memory_construction", "session", json!({}));
    b.variable(Some("message"), "m", "'hi'", "message", None, json!({}));
    import(&db, &b.finish());
    assert!(rows(&db, "FIND cases IN TRACE 'g-plain'").is_empty());
}

#[test]
fn verdicts_moved_to_a_trace_that_supersedes_theirs_name_it() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-again", "u", "rag", json!({}), 19_000);
    let (_, qa) = conversation(&mut b, "Q1", "0.0", true);
    let export = b.finish();
    import(&db, &export);
    let cases = db.failed_cases(Some("g-again")).unwrap();
    let old = cases[0].trace;
    db.store_verdicts(
        &[verdict_for(&cases[0], &qa, "held, then ignored")],
        "tester",
    )
    .unwrap();
    let new = db
        .import_reader(
            export.to_string().as_bytes(),
            InputFormat::Json,
            "again",
            &ImportOptions { force: true },
        )
        .unwrap()[0]
        .trace;
    assert_eq!(db.supersede_trace(old, new, "stored again").unwrap(), 1);
    let moved = db.attributions(Some("g-again")).unwrap();
    assert_eq!(moved.len(), 1);
    assert_eq!(
        (moved[0].verdict.trace, moved[0].author.as_str()),
        (new, "tester")
    );
}

#[test]
fn find_attributions_lists_the_stored_verdicts() {
    let (_dir, db) = temp_db();
    assert!(rows(&db, "FIND attributions").is_empty());
    let mut b = TraceBuilder::new("g-verdicts", "u", "rag", json!({}), 19_000);
    let (_, qa) = conversation(&mut b, "Q1", "0.0", true);
    conversation(&mut b, "Q2", "0.0", false);
    import(&db, &b.finish());
    let mut b = TraceBuilder::new("g-other", "u", "rag", json!({}), 19_000);
    conversation(&mut b, "Q1", "0.0", true);
    import(&db, &b.finish());
    let cases = db.failed_cases(Some("g-verdicts")).unwrap();
    let first = verdict_for(&cases[0], &qa, "held, then ignored");
    let mut second = verdict_for(&cases[1], &qa, "never retrieved");
    second.error_type = Some(ErrorType::RetrievalError);
    second.confidence = 0.25;
    let mut none = verdict_for(&cases[1], &qa, "no evidence reached the answer");
    (none.error_type, none.op_id, none.op_name) = (None, None, None);
    none.version = "2".into();
    db.store_verdicts(&[first, second], "tester").unwrap();
    db.store_verdicts(&[none], "query").unwrap();
    let stored = db.attributions(None).unwrap();
    assert_eq!(stored.len(), 3);
    let at = memtrace_engine::iso_utc(stored[0].at_ms);
    assert!(at.ends_with('Z') && at.contains('T'), "{at}");

    let r = db.query("FIND attributions").unwrap();
    assert_eq!(
        r.columns,
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
    assert_eq!(
        r.rows[0],
        json!([
            "g-verdicts",
            "query:Q1@1",
            "ResponseError",
            qa,
            "question-answering",
            0.5,
            "evidence",
            at
        ])
        .as_array()
        .unwrap()
        .clone()
    );
    assert_eq!(r.rows[2][2..5], [json!(null), json!(null), json!(null)]);

    let got = rows(
        &db,
        "FIND attributions GROUP BY error_type RETURN error_type, count(*) ORDER BY error_type",
    );
    assert_eq!(
        got,
        [
            vec![json!(null), json!(1)],
            vec![json!("ResponseError"), json!(1)],
            vec![json!("RetrievalError"), json!(1)],
        ]
    );
    let got = rows(
        &db,
        "FIND attributions IN TRACE 'g-verdicts' WHERE confidence < 0.5 \
         RETURN attribution.case, query, reason, method, version, author, seq, micros, \
         attribution.error_type",
    );
    assert_eq!(
        got,
        [json!([
            "query:Q2@1",
            "What car does Omar drive?",
            "never retrieved",
            "evidence",
            "2",
            "tester",
            2,
            7,
            "RetrievalError"
        ])
        .as_array()
        .unwrap()
        .clone()]
    );
    let got = rows(
        &db,
        "FIND attributions WHERE author = 'query' AND at STARTS WITH '20' AND trace.id = 'g-verdicts' \
         RETURN seq, version, op_id IS NULL",
    );
    assert_eq!(got, [vec![json!(3), json!("2"), json!(true)]]);
    assert!(rows(&db, "FIND attributions IN TRACE 'g-other'").is_empty());
}

#[test]
fn attribute_checks_its_method_when_planned_and_explained() {
    let (_dir, db) = temp_db();
    let plan = db
        .prepare(
            "ATTRIBUTE query:Q8, $c USING Evidence",
            &[("c".to_string(), "x".into())].into(),
        )
        .unwrap();
    assert_eq!(
        memtrace_engine::columns_of(&plan),
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
    let e = db
        .query("ATTRIBUTE CASES USING evidnce")
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "invalid statement at line 1, column 23: unknown attribution method 'evidnce' \
         (this build has: evidence, llm, hybrid) (did you mean evidence?)\n  \
         ATTRIBUTE CASES USING evidnce\n                        ^"
    );
    let e = db
        .query("EXPLAIN ATTRIBUTE query:Q1 IN TRACE 'g' USING llm_magic")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column 47: unknown attribution method 'llm_magic'"),
        "{e}"
    );
    let stmts = db.parse_script("ATTRIBUTE CASES USING nope").unwrap();
    let e = db
        .plan(&stmts[0], &Params::new(), "ATTRIBUTE CASES USING nope")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown attribution method 'nope'"), "{e}");
    let r = db
        .query("EXPLAIN ATTRIBUTE CASES IN TRACE 'g' USING evidence")
        .unwrap();
    assert_eq!(r.rows.len(), 4);
}

#[test]
fn recall_counts_items_and_complete_cases() {
    let mut r = Recall::default();
    r.add(&[1, 2], &[2, 5, 9]);
    r.add(&[3], &[3]);
    r.add(&[], &[4]);
    assert_eq!((r.cases, r.items, r.found, r.complete), (2, 3, 2, 1));
    assert!((r.micro() - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(r.complete_share(), 0.5);
}
