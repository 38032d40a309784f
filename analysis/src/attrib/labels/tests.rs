//! Labels: appended, never overwritten; checked; exported as MemTraceBench
//! annotations that import back as the same cases.

use super::*;
use crate::testing::{answer, import, import_from, judge, temp_db};
use crate::AnalysisError;
use memtrace_engine::Engine;
use memtrace_engine::EngineError;
use memtrace_gen::builder::TraceBuilder;
use memtrace_gen::set::{generate_trace, GenSpec};
use serde_json::json;

/// A database holding one small generated Mem0 trace with failed cases.
fn db_with_trace() -> (tempfile::TempDir, Engine, String) {
    let (dir, db) = temp_db();
    let t = generate_trace(&GenSpec::small(memtrace_gen::sim::System::Mem0), 0);
    import(&db, &t.document);
    (dir, db, t.graph_id)
}

fn first_case(db: &Engine, trace: &str) -> (FailedCase, String) {
    let cases = db.failed_cases(Some(trace)).unwrap();
    let case = cases
        .into_iter()
        .next()
        .expect("the trace has a failed case");
    let op = db.trace(trace).unwrap().ops().unwrap()[0].op_id.clone();
    (case, op)
}

#[test]
fn labels_are_appended_with_author_and_time_and_never_overwrite() {
    let (_d, db, gid) = db_with_trace();
    let (case, op) = first_case(&db, &gid);
    let first = db
        .add_label(
            &gid,
            &case.id,
            &LabelInput {
                error_type: ErrorType::RetrievalError,
                op_id: &op,
                reason: "left out",
                author: "ana",
            },
        )
        .unwrap();
    let second = db
        .add_label(
            &gid,
            &case.id,
            &LabelInput {
                error_type: ErrorType::UpdateError,
                op_id: &op,
                reason: "overwritten",
                author: " ben ",
            },
        )
        .unwrap();
    assert!(second.seq > first.seq);
    assert!(second.at_ms >= first.at_ms && first.at_ms > 0);
    assert_eq!(second.author, "ben");
    let labels = db.labels(Some(&gid)).unwrap();
    assert_eq!(labels, vec![first.clone(), second.clone()]);
    // The evidence verdicts and the labels live side by side.
    let verdicts = db.attributions(Some(&gid)).unwrap();
    assert_eq!(
        verdicts
            .iter()
            .filter(|v| v.verdict.method == HUMAN)
            .count(),
        2
    );
    // And the query language sees them.
    let r = db
        .query("FIND attributions WHERE method = 'human' RETURN author, error_type")
        .unwrap();
    assert_eq!(r.rows.len(), 2, "{r:?}");
    // Reopening keeps both.
    let path = db.path().to_path_buf();
    drop(db);
    let db = crate::open(&path).unwrap();
    assert_eq!(db.labels(None).unwrap(), vec![first, second]);
}

#[test]
fn bad_labels_name_the_field_and_store_nothing() {
    let (_d, db, gid) = db_with_trace();
    let (case, op) = first_case(&db, &gid);
    let input = |op_id: &'static str, author: &'static str| LabelInput {
        error_type: ErrorType::ExtractionError,
        op_id,
        reason: "",
        author,
    };
    let e = db
        .add_label(&gid, &case.id, &input("op-nope", "ana"))
        .unwrap_err();
    assert!(e.to_string().contains("op_id: no op \"op-nope\""), "{e}");
    let e = db.add_label(&gid, &case.id, &input("x", "  ")).unwrap_err();
    assert!(e.to_string().contains("author: must not be empty"), "{e}");
    let long = "a".repeat(MAX_AUTHOR + 1);
    let e = db
        .add_label(
            &gid,
            &case.id,
            &LabelInput {
                author: &long,
                op_id: &op,
                ..input("x", "a")
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("at most 100"), "{e}");
    let e = db
        .add_label(
            &gid,
            "prediction:nope",
            &LabelInput {
                op_id: &op,
                ..input("x", "a")
            },
        )
        .unwrap_err();
    assert!(matches!(e, AnalysisError::UnknownCase { .. }), "{e}");
    let e = db
        .add_label(
            "no-such-trace",
            &case.id,
            &LabelInput {
                op_id: &op,
                ..input("x", "a")
            },
        )
        .unwrap_err();
    assert!(
        matches!(e, AnalysisError::Engine(EngineError::UnknownTrace(_))),
        "{e}"
    );
    assert!(db.labels(None).unwrap().is_empty());
}

#[test]
fn labels_export_as_annotations_that_import_back() {
    let (_d, db, gid) = db_with_trace();
    let cases = db.failed_cases(Some(&gid)).unwrap();
    assert!(
        cases.len() >= 2,
        "the generated trace has {} cases",
        cases.len()
    );
    let ops = db.trace(&gid).unwrap().ops().unwrap();
    let (a, b) = (&cases[0], &cases[1]);
    for (case, t, op) in [
        (a, ErrorType::UpdateError, &ops[1].op_id),
        (a, ErrorType::DeletionError, &ops[2].op_id),
        (b, ErrorType::ResponseError, &ops[3].op_id),
    ] {
        db.add_label(
            &gid,
            &case.id,
            &LabelInput {
                error_type: t,
                op_id: op,
                reason: "seen in the graph",
                author: "ana",
            },
        )
        .unwrap();
    }
    let ann = db.label_annotations(&gid).unwrap();
    assert_eq!(ann.len(), 2, "one per labelled case, the latest label");
    assert_eq!(ann[0]["final_error_type"], "DeletionError");
    assert_eq!(ann[0]["final_op_id"], ops[2].op_id.as_str());
    assert_eq!(ann[0]["annotator"], "ana");
    assert_eq!(ann[1]["final_error_type"], "ResponseError");

    // The whole file imports elsewhere as a MemTraceBench trace with every
    // failed case, the labelled ones carrying their latest label.
    let doc = db.export_labelled(&gid).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other = crate::open(dir.path().join("other")).unwrap();
    import_from(&other, &doc, "labelled.json");
    let before = db.trace(&gid).unwrap().cases().unwrap();
    let back = other.trace(&gid).unwrap().cases().unwrap();
    assert_eq!(back.len(), cases.len(), "every failed case is kept");
    assert_eq!(back[0].final_error_type.as_deref(), Some("DeletionError"));
    assert_eq!(back[0].final_op_id.as_deref(), Some(ops[2].op_id.as_str()));
    assert_eq!(back[0].raw["annotator"], "ana");
    assert_eq!(back[1].final_error_type.as_deref(), Some("ResponseError"));
    assert_eq!(back[1].query.as_deref(), Some(b.query.as_str()));
    // The cases no one labelled come back as they were, their own labels too.
    for (was, is) in before.iter().zip(&back).skip(2) {
        assert_eq!(was.raw, is.raw);
    }
    assert_eq!(
        other.failed_cases(Some(&gid)).unwrap(),
        cases
            .iter()
            .map(|c| FailedCase {
                trace: back[0].trace,
                ..c.clone()
            })
            .collect::<Vec<_>>()
    );
    // No labels: no label annotations, and the whole file is the trace's
    // own annotations.
    let (_d2, fresh, gid2) = db_with_trace();
    assert!(fresh.label_annotations(&gid2).unwrap().is_empty());
    let whole = fresh.export_labelled(&gid2).unwrap();
    let own: Vec<Value> = fresh
        .trace(&gid2)
        .unwrap()
        .cases()
        .unwrap()
        .into_iter()
        .map(|c| c.raw)
        .collect();
    assert_eq!(whole["data"]["annotations"], Value::Array(own));
}

/// A question, an answer and the judge that scored it; without `query`,
/// the judge reads no query variable (a case named by its judge op).
fn judged(b: &mut TraceBuilder, q: &str, score: &str, query: bool) -> String {
    let message = b.variable(
        Some("message"),
        &format!("{q}:1"),
        &format!("'Omar: I drive a blue Volvo ({q}).'"),
        "message",
        None,
        json!({}),
    );
    let question = b.variable(
        Some(if query { "query" } else { "question_text" }),
        q,
        &format!("'What car does Omar drive ({q})?'"),
        if query { "message & query" } else { "text" },
        None,
        json!({"evidence": [format!("message:{q}:1")]}),
    );
    let (pred, _) = answer(b, q, "'a red Toyota'", &[&question, &message]);
    judge(
        b,
        q,
        &question,
        &pred,
        "['a blue Volvo', 'Volvo']",
        "'WRONG'",
        score,
    )
}

#[test]
fn judge_cases_are_exported_labelled_or_not_and_import_back_the_same() {
    let (_dir, db) = temp_db();
    let mut b = TraceBuilder::new("g-judged", "u", "rag", json!({}), 19_000);
    b.session("evaluation", "session", json!({}));
    judged(&mut b, "Q1", "0.0", true);
    judged(&mut b, "Q2", "0", true);
    judged(&mut b, "Q3", "1.0", true);
    let no_query_judge = judged(&mut b, "Q4", "0", false);
    import_from(&db, &b.finish(), "judged.json");
    let cases = db.failed_cases(Some("g-judged")).unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        names,
        ["query:Q1@1", "query:Q2@1", no_query_judge.as_str()],
        "{cases:?}"
    );
    let op = db.trace("g-judged").unwrap().ops().unwrap()[0]
        .op_id
        .clone();
    db.add_label(
        "g-judged",
        "query:Q2@1",
        &LabelInput {
            error_type: ErrorType::RetrievalError,
            op_id: &op,
            reason: "left out",
            author: "ana",
        },
    )
    .unwrap();

    let doc = db.export_labelled("g-judged").unwrap();
    let annotations = doc["data"]["annotations"].as_array().unwrap();
    assert_eq!(annotations.len(), 3, "every failed case, labelled or not");
    assert_eq!(annotations[0]["final_error_type"], Value::Null);
    assert_eq!(annotations[1]["final_error_type"], "RetrievalError");
    assert_eq!(annotations[1]["annotator"], "ana");
    assert_eq!(annotations[2]["query_id"], Value::Null);

    let other_dir = tempfile::tempdir().unwrap();
    let other = crate::open(other_dir.path().join("other")).unwrap();
    import_from(&other, &doc, "labelled.json");
    let back = other.failed_cases(Some("g-judged")).unwrap();
    assert_eq!(back.len(), cases.len());
    for (was, is) in cases.iter().zip(&back) {
        // The same case: its name, question, answers and evidence; it now
        // comes from an annotation, which holds no judge response.
        assert_eq!(is.id, was.id);
        assert_eq!(is.query_node, was.query_node);
        assert_eq!(is.query, was.query);
        assert_eq!(is.gold, was.gold);
        assert_eq!(is.prediction, was.prediction);
        assert_eq!(is.source_evidence, was.source_evidence);
        assert!(matches!(is.origin, CaseOrigin::Annotation(_)));
    }
    assert_eq!(cases[0].gold, ["a blue Volvo", "Volvo"]);
    assert_eq!(cases[0].source_evidence, ["message:Q1:1@1"]);
    let labelled = other.trace("g-judged").unwrap().cases().unwrap();
    let types: Vec<Option<&str>> = labelled
        .iter()
        .map(|c| c.final_error_type.as_deref())
        .collect();
    assert_eq!(types, [None, Some("RetrievalError"), None]);
    assert_eq!(labelled[1].final_op_id.as_deref(), Some(op.as_str()));
    // Exported again, the file is the same (the labels travel with it).
    assert_eq!(
        other.export_labelled("g-judged").unwrap()["data"]["annotations"],
        doc["data"]["annotations"]
    );
}
