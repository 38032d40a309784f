//! OpenTelemetry traces (OTLP JSON, OpenInference conventions) imported by
//! the `memtrace` binary: the fixtures of `tests/fixtures/otlp/` (written by
//! its `make_fixtures.py` with the OpenTelemetry SDK) become traces whose
//! provenance, cases and attribution work, which the viewer lists, and
//! malformed files are refused with their place and store nothing.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::*;

fn otlp(name: &str) -> PathBuf {
    fixtures().join("otlp").join(name)
}

/// The failing RAG turn of `rag_session.json`, and its follow-up.
const RAG: &str = "otel-db5b5fab8f4d3e27dda1494c73cf256d";
const FOLLOW_UP: &str = "otel-7253edc6181879932fa91425cb008853";
/// The trace of `collector.jsonl` spread over its two lines.
const CHAT: &str = "otel-4a37fa2df2d7d40fc7859faeecc3f80c";

fn query(dir: &Path, db: &Path, q: &str) -> serde_json::Value {
    json(&ok(run(dir, Some(db), &["query", q, "--format", "json"])))
}

fn rows(v: &serde_json::Value) -> Vec<Vec<serde_json::Value>> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().clone())
        .collect()
}

fn imported() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let out = ok(run(
        dir.path(),
        Some(&db),
        &["import", otlp("rag_session.json").to_str().unwrap()],
    ));
    assert!(
        stdout(&out).contains(&format!("trace #1 {RAG}")),
        "{}",
        stdout(&out)
    );
    (dir, db)
}

#[test]
fn an_otlp_file_becomes_one_trace_per_trace_id_and_imports_once() {
    let (dir, db) = imported();
    let traces = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    let list = traces.as_array().expect("a list of traces");
    assert_eq!(list.len(), 2, "{traces}");
    let rag = list.iter().find(|t| t["graph_id"] == RAG).unwrap();
    assert_eq!(rag["format"], "otlp");
    assert_eq!(rag["project_id"], "memtrace-rag-demo");
    assert_eq!(rag["user_id"], "user-7");
    // Seven spans: chain, embedding, retriever, reranker, tool, LLM, evaluator.
    assert_eq!(rag["ops"], 7);
    assert_eq!(rag["cases"], 1);
    assert!(list
        .iter()
        .any(|t| t["graph_id"] == FOLLOW_UP && t["cases"] == 0));

    // The same file again, and the same spans in protobuf's JSON (base64
    // ids, enum names, integers as strings), are the same content.
    for f in ["rag_session.json", "rag_session_protobuf.json"] {
        let again = ok(run(
            dir.path(),
            Some(&db),
            &["import", otlp(f).to_str().unwrap()],
        ));
        let text = stdout(&again);
        assert!(
            text.contains("0 trace(s) stored, 2 already stored with the same content"),
            "{text}"
        );
    }
    let ops = query(
        dir.path(),
        &db,
        &format!("FIND ops IN TRACE '{RAG}' RETURN kind ORDER BY kind"),
    );
    let kinds: Vec<String> = rows(&ops)
        .iter()
        .map(|r| r[0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "chain",
            "embedding",
            "evaluator",
            "llm",
            "reranker",
            "retriever",
            "tool"
        ]
    );
}

#[test]
fn the_llm_answer_traces_back_to_the_documents_and_the_question() {
    let (dir, db) = imported();
    let walk = query(
        dir.path(),
        &db,
        &format!("TRACE 'output_message:generate_answer:0@1' IN TRACE '{RAG}' RETURN nodes"),
    );
    let nodes: Vec<String> = rows(&walk)
        .iter()
        .map(|r| r[1].as_str().unwrap().to_string())
        .collect();
    for want in [
        // The user's question, the root CHAIN's input.
        "input:rag_agent@1",
        // Every document the retriever returned, and the reranked ones.
        "document:doc-paris@1",
        "document:doc-berlin@1",
        "document:doc-cooking@1",
        "document:doc-paris@3",
        "message:generate_answer:1@1",
        "prompt_template:generate_answer@1",
    ] {
        assert!(nodes.iter().any(|n| n == want), "{want} not in {nodes:?}");
    }
    // The retrieved document's value and metadata came along.
    let doc = query(
        dir.path(),
        &db,
        &format!(
            "FIND vars IN TRACE '{RAG}' WHERE var.full_name = 'document:doc-paris' AND version = 1 \
             RETURN value, var.meta.score, var.meta.metadata.speaker"
        ),
    );
    assert_eq!(
        rows(&doc)[0][0],
        "Caroline said she moved to Paris last week for her new job."
    );
    assert_eq!(rows(&doc)[0][2], "Caroline");
}

#[test]
fn a_failing_evaluation_is_a_case_that_attribute_answers() {
    let (dir, db) = imported();
    let cases = query(
        dir.path(),
        &db,
        "FIND cases RETURN trace, query_id, query, prediction, golden_answers, case.judge_op_id",
    );
    let r = rows(&cases);
    assert_eq!(r.len(), 1, "{cases}");
    assert_eq!(r[0][0], RAG);
    assert_eq!(r[0][2], "Where did Caroline move last week?");
    assert_eq!(r[0][3], "Caroline moved to Berlin.");
    assert!(r[0][4].to_string().contains("Paris"), "{}", r[0][4]);
    let judge = r[0][5].as_str().unwrap().to_string();
    assert!(judge.starts_with("span-"), "{judge}");

    let verdicts = query(
        dir.path(),
        &db,
        &format!("ATTRIBUTE CASES IN TRACE '{RAG}' USING evidence"),
    );
    let v = rows(&verdicts);
    assert_eq!(v.len(), 1, "{verdicts}");
    let columns: Vec<&str> = verdicts["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let col = |name: &str| columns.iter().position(|c| *c == name).unwrap();
    // Whatever the verdict, it names one of the five types and an op of the trace.
    let error_type = v[0][col("error_type")].as_str().unwrap_or_default();
    assert!(
        [
            "ExtractionError",
            "UpdateError",
            "DeletionError",
            "RetrievalError",
            "ResponseError"
        ]
        .contains(&error_type),
        "{verdicts}"
    );
    let op = v[0][col("op_id")].as_str().unwrap().to_string();
    let found = query(
        dir.path(),
        &db,
        &format!("FIND ops IN TRACE '{RAG}' WHERE op.id = '{op}' RETURN count(*)"),
    );
    assert_eq!(rows(&found)[0][0], 1, "{op}");
}

#[test]
fn traces_of_one_session_are_found_by_it() {
    let (dir, db) = imported();
    let by_meta = query(
        dir.path(),
        &db,
        "FIND traces WHERE trace.meta.session_id = 'sess-42' RETURN trace ORDER BY trace",
    );
    let by_session = query(
        dir.path(),
        &db,
        "FIND sessions WHERE name = 'sess-42' RETURN trace ORDER BY trace",
    );
    let mut want = vec![RAG, FOLLOW_UP];
    want.sort();
    for got in [by_meta, by_session] {
        let ids: Vec<String> = rows(&got)
            .iter()
            .map(|r| r[0].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids, want);
    }
}

#[test]
fn collector_lines_are_grouped_by_trace_and_plain_spans_get_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    ok(run(
        dir.path(),
        Some(&db),
        &["import", otlp("collector.jsonl").to_str().unwrap()],
    ));
    // The chat trace's spans are on both lines: one trace of three ops.
    let ops = query(
        dir.path(),
        &db,
        &format!(
            "FIND ops IN TRACE '{CHAT}' RETURN name, kind, op.meta.attributes.gen_ai.request.model"
        ),
    );
    let r = rows(&ops);
    assert_eq!(r.len(), 3, "{ops}");
    assert!(r
        .iter()
        .any(|o| o[0] == "chat gpt-4o-mini" && o[1] == "llm" && o[2] == "gpt-4o-mini"));
    assert!(r.iter().any(|o| o[0] == "POST /chat" && o[1] == "span"));
    // The `eval.faithfulness.*` attributes fail; the passing event does not.
    let cases = query(dir.path(), &db, "FIND cases RETURN trace, prediction");
    assert_eq!(rows(&cases).len(), 1, "{cases}");
    assert_eq!(rows(&cases)[0][1], "You have 21 vacation days left.");
    // The span whose parent was never exported is a root, and says so.
    let orphan = query(
        dir.path(),
        &db,
        "FIND ops WHERE op.meta.parent_missing = true RETURN name, op.meta.status.code",
    );
    assert_eq!(
        rows(&orphan),
        vec![vec![
            serde_json::json!("cache.get"),
            serde_json::json!("ERROR")
        ]]
    );
}

/// (file, JSON path in the message, part of the reason)
const MALFORMED: &[(&str, &str, &str)] = &[
    (
        "bad_span_id.json",
        "resourceSpans[0].scopeSpans[0].spans[1].spanId",
        "\"not-an-id\" is not an 8-byte id",
    ),
    (
        "missing_trace_id.json",
        "resourceSpans[0].scopeSpans[0].spans[0].traceId",
        "required field is missing",
    ),
    (
        "wrong_attribute_type.json",
        "resourceSpans[0].scopeSpans[0].spans[1].attributes[0].value.intValue",
        "must be an integer, found a boolean",
    ),
    (
        "bad_kind.json",
        "resourceSpans[0].scopeSpans[0].spans[0].kind",
        "SPAN_KIND_SIDEWAYS",
    ),
    ("no_spans.json", "resourceSpans", "holds no spans"),
    ("empty.json", "$", "the input is empty"),
    (
        "bad_second_line.jsonl:2",
        "resourceSpans[0].scopeSpans[0].spans[0].spanId",
        "is not an 8-byte id",
    ),
];

#[test]
fn malformed_otlp_files_name_the_place_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    for (name, path, reason) in MALFORMED {
        let file = otlp("malformed").join(name.split(':').next().unwrap());
        let out = run(dir.path(), Some(&db), &["import", file.to_str().unwrap()]);
        assert!(!out.status.success(), "{name} was accepted");
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{name}: invalid at {path}: ")) && err.contains(reason),
            "{name}: {err}"
        );
    }
    let traces = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    assert_eq!(traces.as_array().map(Vec::len), Some(0), "{traces}");
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, serde_json::Value) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

#[test]
fn the_viewer_lists_otlp_traces_and_takes_them_by_post() {
    let (dir, db) = imported();
    let mut child = command(dir.path(), Some(&db), &["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .trim_start_matches("memtrace serve: listening on http://")
        .to_string();
    let server = Server(child, addr);
    let a = server.1.as_str();
    let (status, list) = http(a, "GET", "/api/traces", b"");
    assert_eq!(status, 200, "{list}");
    let text = list.to_string();
    assert!(text.contains(RAG) && text.contains(FOLLOW_UP), "{text}");
    let (status, cases) = http(a, "GET", &format!("/api/traces/{RAG}/cases"), b"");
    assert_eq!(status, 200, "{cases}");
    assert_eq!(cases["cases"].as_array().map(Vec::len), Some(1), "{cases}");
    // An OTLP request posted to the import endpoint is read as one.
    let body = std::fs::read(otlp("collector.jsonl")).unwrap();
    let (status, out) = http(
        a,
        "POST",
        "/api/import?source=collector&format=jsonl",
        &body,
    );
    assert_eq!(status, 201, "{out}");
    let (_, list) = http(a, "GET", "/api/traces", b"");
    assert!(list.to_string().contains(CHAT), "{list}");
}
