//! OpenTelemetry traces through the embedding API: `import_paths` and
//! `import_reader` recognise OTLP JSON by its `resourceSpans` key, store one
//! trace per trace id with format `otlp`, skip it when imported again, and
//! keep nothing of a malformed request.

use memtrace::prelude::*;
use memtrace::{Database, EngineError, ImportOptions, InputFormat};

const RAG: &str = include_str!("fixtures/otlp/rag_session.json");
const RAG_PROTOBUF: &str = include_str!("fixtures/otlp/rag_session_protobuf.json");
const COLLECTOR: &str = include_str!("fixtures/otlp/collector.jsonl");
const RAG_ID: &str = "otel-db5b5fab8f4d3e27dda1494c73cf256d";

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("api.db")).unwrap();
    (dir, db)
}

fn import(
    db: &Database,
    text: &str,
    format: InputFormat,
) -> memtrace::Result<Vec<memtrace::ImportedTrace>> {
    db.import_reader(text.as_bytes(), format, "test", &ImportOptions::default())
}

#[test]
fn readers_take_otlp_json_and_json_lines() {
    let (_dir, db) = db();
    let stored = import(&db, RAG, InputFormat::Json).unwrap();
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|t| t.format == "otlp" && !t.unchanged));
    assert_eq!(stored[0].graph_id, RAG_ID);
    assert_eq!(stored[0].counts.ops, 7);
    // Hex or base64 ids: the same traces, nothing written again.
    let again = import(&db, RAG_PROTOBUF, InputFormat::Json).unwrap();
    assert!(again.iter().all(|t| t.unchanged), "{again:?}");
    let lines = import(&db, COLLECTOR, InputFormat::JsonLines).unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(db.traces().unwrap().len(), 4);
    // Every trace's content is the smartcomment export it was turned into,
    // with the trace id kept in its metadata.
    let info = db.trace(RAG_ID).unwrap();
    assert_eq!(info.info().format, "otlp");
    let r = db
        .query(&format!(
            "FIND traces WHERE trace.meta.trace_id = '{}' RETURN trace",
            &RAG_ID[5..]
        ))
        .unwrap();
    assert_eq!(r.rows.len(), 1);
}

#[test]
fn paths_take_a_folder_of_otlp_files_and_cases_are_attributed() {
    use memtrace::attrib::{AttributeRequest, Method};
    use memtrace::Cancel;

    let (_dir, db) = db();
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otlp");
    // The malformed files are in a folder of their own; import the good ones.
    let files: Vec<_> = [
        "rag_session.json",
        "rag_session_protobuf.json",
        "collector.jsonl",
    ]
    .iter()
    .map(|f| folder.join(f))
    .collect();
    let reports = db.import_paths(&files, &ImportOptions::default(), &mut |_| {});
    assert!(reports.iter().all(|r| r.result.is_ok()), "{reports:?}");
    assert_eq!(db.traces().unwrap().len(), 4);
    let cases = db.failed_cases(None).unwrap();
    assert_eq!(cases.len(), 2, "{cases:?}");
    let req = AttributeRequest {
        trace: None,
        cases: None,
        method: Method::Evidence,
        setting: Default::default(),
        search: Default::default(),
    };
    let verdicts = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    assert_eq!(verdicts.len(), 2);
    assert!(verdicts
        .iter()
        .all(|v| v.error_type.is_some() && v.op_id.is_some()));
}

#[test]
fn a_malformed_request_is_refused_with_its_place_and_stores_nothing() {
    let (_dir, db) = db();
    // The second trace's span id is broken: the first trace is not stored either.
    let mut doc: serde_json::Value = serde_json::from_str(RAG).unwrap();
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array_mut()
        .unwrap();
    let last = spans.len() - 1;
    spans[last]["parentSpanId"] = serde_json::json!(42);
    let e = import(&db, &doc.to_string(), InputFormat::Json).unwrap_err();
    match e {
        EngineError::Invalid {
            source_name,
            json_path,
            reason,
        } => {
            assert_eq!(source_name, "test");
            assert_eq!(
                json_path,
                format!("resourceSpans[0].scopeSpans[0].spans[{last}].parentSpanId")
            );
            assert!(reason.contains("must be a string"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(db.traces().unwrap().is_empty());
    // A parent that is not in the file is not an error.
    let mut doc: serde_json::Value = serde_json::from_str(RAG).unwrap();
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["parentSpanId"] =
        serde_json::json!("0123456789abcdef");
    assert_eq!(
        import(&db, &doc.to_string(), InputFormat::Json)
            .unwrap()
            .len(),
        2
    );
}
