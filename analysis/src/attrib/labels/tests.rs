//! Labels: appended, never overwritten; checked; exported as MemTraceBench
//! annotations that import back as the same cases.

use super::*;
use crate::AnalysisError;
use memtrace_engine::EngineError;
use memtrace_engine::{Database, ImportOptions, InputFormat};
use memtrace_gen::set::{generate_trace, GenSpec};

/// A database holding one small generated Mem0 trace with failed cases.
fn db_with_trace() -> (tempfile::TempDir, Database, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::open(dir.path().join("db")).unwrap();
    let t = generate_trace(&GenSpec::small(memtrace_gen::sim::System::Mem0), 0);
    db.import_reader(
        t.document.to_string().as_bytes(),
        InputFormat::Json,
        "test",
        &ImportOptions::default(),
    )
    .unwrap();
    (dir, db, t.graph_id)
}

fn first_case(db: &Database, trace: &str) -> (FailedCase, String) {
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

    // The whole file imports elsewhere as a MemTraceBench trace whose cases
    // carry the labels.
    let doc = db.export_labelled(&gid).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other = crate::open(dir.path().join("other")).unwrap();
    other
        .import_reader(
            doc.to_string().as_bytes(),
            InputFormat::Json,
            "labelled.json",
            &ImportOptions::default(),
        )
        .unwrap();
    let back = other.trace(&gid).unwrap().cases().unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].final_error_type.as_deref(), Some("DeletionError"));
    assert_eq!(back[0].final_op_id.as_deref(), Some(ops[2].op_id.as_str()));
    assert_eq!(back[1].query.as_deref(), Some(b.query.as_str()));
    // No labels: no annotations.
    let (_d2, fresh, gid2) = db_with_trace();
    assert!(fresh.label_annotations(&gid2).unwrap().is_empty());
}
