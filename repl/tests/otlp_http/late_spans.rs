//! Spans that come after their trace was stored: the trace is stored again and keeps its verdicts and labels.

use super::*;

/// The spans of one trace of the fixture (its graph id), split by `late`.
pub(crate) fn split_trace(graph_id: &str, late: impl Fn(&Value) -> bool) -> (Vec<Span>, Vec<Span>) {
    let id = graph_id.trim_start_matches("otel-");
    spans_of(&fixture())
        .into_iter()
        .filter(|(_, _, sp)| sp["traceId"] == id)
        .partition(|(_, _, sp)| late(sp))
}

/// The verdicts and labels stored, as `FIND attributions` lists them.
const ATTRIBUTIONS: &str =
    "FIND attributions RETURN trace, case, method, author, error_type, op_id, reason ORDER BY method";

/// A database whose RAG turn was received without its `embed_query` span,
/// then attributed and labelled. Returns it, the id of the RAG trace, what
/// `FIND attributions` lists and the span held back.
fn attributed_without_a_span() -> (tempfile::TempDir, PathBuf, u64, Value, Vec<Span>) {
    let (dir, db) = database();
    let (late, first) = split_trace(RAG, |sp| sp["name"] == "embed_query");
    assert_eq!(late.len(), 1);
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    assert_eq!(post_json(&server.addr, &request_of(&first)).0, 200);
    wait_for(&server.addr, &[RAG]);
    stop(server);
    ok(run(dir.path(), Some(&db), &["attribute", "--trace", RAG]));
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    let cases = api(&server.addr, &format!("/api/traces/{RAG}/cases"));
    let case = cases["cases"][0]["case"].as_str().unwrap().to_string();
    let (status, _, body) = request(
        &server.addr,
        "POST",
        &format!("/api/traces/{RAG}/cases/{}/labels", percent(&case)),
        &[("Content-Type", "application/json")],
        json!({
            "error_type": "RetrievalError",
            "op_id": "span-cdcc69292f45e678",
            "reason": "the profile lookup left the move out",
            "author": "reviewer"
        })
        .to_string()
        .as_bytes(),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let listed = api_query(&server.addr, ATTRIBUTIONS);
    assert_eq!(listed["rows"].as_array().unwrap().len(), 2, "{listed}");
    let [old] = ids_of(&server.addr, RAG)[..] else {
        panic!("{RAG} is not one trace")
    };
    stop(server);
    (dir, db, old, listed, late)
}

/// Checks that the RAG trace `new`, stored again with its late span, holds
/// the verdict and the label `listed` on the earlier trace `old`, and that
/// `old` is gone.
fn moved_over(addr: &str, old: u64, new: u64, listed: &Value) {
    assert_eq!(&api_query(addr, ATTRIBUTIONS)["rows"], &listed["rows"]);
    let (_, ops, _) = counts(&api(addr, "/api/traces"), RAG);
    assert_eq!(ops, 7, "the late span is in the trace");
    let labels = api(addr, &format!("/api/labels?trace=%23{new}"));
    assert_eq!(labels["labels"].as_array().unwrap().len(), 1, "{labels}");
    assert_eq!(labels["labels"][0]["author"], "reviewer", "{labels}");
    let (status, _, _) = request(
        addr,
        "GET",
        &format!("/api/labels?trace=%23{old}"),
        &[],
        b"",
    );
    assert_eq!(status, 404, "#{old} is dropped");
}

#[test]
fn a_trace_stored_again_with_late_spans_keeps_its_verdicts_and_labels() {
    let (dir, db, old, listed, late) = attributed_without_a_span();
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    assert_eq!(post_json(&server.addr, &request_of(&late)).0, 200);
    let new = wait_for_replacement(&server.addr, RAG, old);
    moved_over(&server.addr, old, new, &listed);
    drop(server);
    let log = stdout(&ok(run(dir.path(), Some(&db), &["log"])));
    assert!(log.contains(&format!("superseded by #{new}")), "{log}");
}

#[test]
fn a_kill_between_storing_a_trace_again_and_dropping_the_earlier_one_is_finished_at_the_next_start()
{
    let (dir, db, old, listed, late) = attributed_without_a_span();
    let log = dir.path().join("stderr.log");
    let server = start_with(
        dir.path(),
        &db,
        &["serve", "--addr", "127.0.0.1:0", "--otlp-quiet", "0.2"],
        &[("MEMTRACE_TEST_OTLP_STALL", "superseding")],
        Stdio::from(std::fs::File::create(&log).unwrap()),
    );
    assert_eq!(post_json(&server.addr, &request_of(&late)).0, 200);
    wait_stalled(&log, "superseding");
    drop(server);
    // Both are stored, whole; the verdict and the label are still the earlier one's.
    let both = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    let rag: Vec<&Value> = both
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["graph_id"] == RAG)
        .collect();
    assert_eq!(rag.len(), 2, "{both}");
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    let new = wait_for_replacement(&server.addr, RAG, old);
    assert!(new > old);
    moved_over(&server.addr, old, new, &listed);
}
