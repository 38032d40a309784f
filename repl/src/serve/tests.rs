//! The API answered without a socket: each endpoint on a generated trace,
//! and the errors a client gets for bad requests.

use std::time::Duration;

use memtrace::attrib::{AttributeRequest, Method};
use memtrace::gen::set::{generate_trace, GenSpec};
use memtrace::gen::sim::System;
use memtrace::prelude::*;
use memtrace::{Cancel, ImportOptions, InputFormat};
use serde_json::{json, Value};

use super::server::loopback_host;
use super::Api;

/// An API over a database with one small generated Mem0 trace whose failed
/// cases have evidence-flow verdicts. Returns the trace's graph id and the
/// document (to import again).
fn api() -> (tempfile::TempDir, Api, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::opening::open(dir.path().join("db")).unwrap();
    let t = generate_trace(&GenSpec::small(System::Mem0), 0);
    db.import_reader(
        t.document.to_string().as_bytes(),
        InputFormat::Json,
        "gen",
        &ImportOptions::default(),
    )
    .unwrap();
    let req = AttributeRequest {
        trace: None,
        cases: None,
        method: Method::Evidence,
        setting: Default::default(),
        search: Default::default(),
    };
    let verdicts = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    db.store_verdicts(&verdicts, "test").unwrap();
    let uploads = super::api::Uploads::in_db(&dir.path().join("db"), 64 << 20);
    let api = Api::new(db, "test.db".into(), Duration::from_secs(30), uploads);
    (dir, api, t.graph_id, t.document)
}

fn call(api: &Api, method: &str, url: &str, body: &str) -> (u16, Value) {
    let reply = api.handle(method, url, &mut body.as_bytes());
    let value = serde_json::from_slice(&reply.body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&reply.body).into()));
    (reply.status, value)
}

fn get(api: &Api, url: &str) -> Value {
    let (status, v) = call(api, "GET", url, "");
    assert_eq!(status, 200, "GET {url}: {v}");
    v
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn first_case(api: &Api, gid: &str) -> String {
    let t = get(api, &format!("/api/traces/{}", enc(gid)));
    t["cases"][0]["case"].as_str().unwrap().to_string()
}

#[test]
fn traces_list_filters_and_refuses_a_bad_filter() {
    let (_d, api, gid, _) = api();
    let v = get(&api, "/api/traces");
    assert_eq!(v["total"], 1);
    let row = &v["traces"][0];
    assert_eq!(row["graph_id"], gid.as_str());
    assert_eq!(row["system"], "mem0");
    assert!(row["failed_cases"].as_u64().unwrap() > 0);
    assert_eq!(v["systems"], json!(["mem0"]));
    assert_eq!(
        get(&api, "/api/traces?failed=1")["traces"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(get(&api, "/api/traces?system=rag")["traces"], json!([]));
    let user = row["user"].as_str().unwrap();
    assert_eq!(
        get(&api, &format!("/api/traces?user={user}"))["traces"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let (status, e) = call(&api, "GET", "/api/traces?failed=maybe", "");
    assert_eq!(status, 400);
    assert!(e["message"].as_str().unwrap().contains("failed"), "{e}");
}

#[test]
fn a_trace_has_its_timeline_in_pages_and_an_unknown_one_is_404() {
    let (_d, api, gid, _) = api();
    let v = get(&api, &format!("/api/traces/{}?limit=7", enc(&gid)));
    let ops: Vec<&Value> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["ops"].as_array().unwrap())
        .collect();
    assert_eq!(ops.len(), 7);
    assert!(v["ops_total"].as_u64().unwrap() > 7);
    assert!(ops
        .iter()
        .any(|o| !o["outputs"].as_array().unwrap().is_empty()));
    let next = get(&api, &format!("/api/traces/{}?limit=7&offset=7", enc(&gid)));
    let first_next = &next["sessions"][0]["ops"][0]["op_id"];
    assert!(ops.iter().all(|o| &o["op_id"] != first_next));
    // By #ID too.
    assert_eq!(
        get(&api, "/api/traces/%231")["trace"]["graph_id"],
        gid.as_str()
    );
    let (status, e) = call(&api, "GET", "/api/traces/no-such-trace", "");
    assert_eq!((status, e["error"].as_str()), (404, Some("not_found")));
    assert!(e["message"].as_str().unwrap().contains("no-such-trace"));
    let (status, _) = call(
        &api,
        "GET",
        &format!("/api/traces/{}?limit=0", enc(&gid)),
        "",
    );
    assert_eq!(status, 400);
}

#[test]
fn a_case_shows_its_verdicts_and_labels_append() {
    let (_d, api, gid, _) = api();
    let case = first_case(&api, &gid);
    let url = format!("/api/traces/{}/cases/{}", enc(&gid), enc(&case));
    let v = get(&api, &url);
    assert_eq!(v["case"], case.as_str());
    assert!(!v["query"].as_str().unwrap().is_empty());
    assert_eq!(v["methods"], json!(["evidence", "llm", "hybrid", "human"]));
    assert_eq!(v["verdicts"]["evidence"]["method"], "evidence");
    assert!(v["verdicts"].get("human").is_none());
    assert!(!v["evidence"].as_array().unwrap().is_empty());
    // The file's own label, to set beside the verdicts; its op opens a graph.
    let file = &v["file_label"];
    assert!(
        file["error_type"]
            .as_str()
            .is_some_and(|t| t.ends_with("Error")),
        "{v}"
    );
    let blamed = file["op_id"].as_str().unwrap();
    assert!(file["op_name"].as_str().is_some(), "{v}");
    let graph = get(
        &api,
        &format!("/api/traces/{}/graph?start={}", enc(&gid), enc(blamed)),
    );
    assert!(!graph["nodes"].as_array().unwrap().is_empty(), "{graph}");
    let ops = v["ops"].as_array().unwrap();
    assert!(!ops.is_empty(), "the case has ops on its provenance");
    let op = ops[0]["op_id"].as_str().unwrap();

    let label = |reason: &str| {
        json!({"error_type": "RetrievalError", "op_id": op, "reason": reason, "author": "ana"})
            .to_string()
    };
    let (status, first) = call(&api, "POST", &format!("{url}/labels"), &label("first look"));
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["author"], "ana");
    let (status, _) = call(
        &api,
        "POST",
        &format!("{url}/labels"),
        &label("second look"),
    );
    assert_eq!(status, 201);
    let v = get(&api, &url);
    let reasons: Vec<&str> = v["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        ["second look", "first look"],
        "newest first, none overwritten"
    );
    assert_eq!(v["verdicts"]["human"]["reason"], "second look");
    assert_eq!(
        get(&api, "/api/labels")["labels"].as_array().unwrap().len(),
        2
    );
    let ann = get(&api, &format!("/api/traces/{}/annotations", enc(&gid)));
    let list = ann["data"]["annotations"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["final_error_type"], "RetrievalError");
    assert_eq!(list[0]["reason"], "second look");
    let full = get(
        &api,
        &format!("/api/traces/{}/annotations?full=1", enc(&gid)),
    );
    // The whole file keeps every failed case, labelled or not, the label
    // over the case it is on.
    let every = full["data"]["annotations"].as_array().unwrap();
    let cases = get(&api, &format!("/api/traces/{}/cases", enc(&gid)))["cases"]
        .as_array()
        .unwrap()
        .len();
    assert!(cases > 1);
    assert_eq!(every.len(), cases, "every failed case");
    let labelled: Vec<&Value> = every.iter().filter(|a| a.get("reason").is_some()).collect();
    assert_eq!(labelled.len(), 1);
    assert_eq!(labelled[0]["query_id"], list[0]["query_id"]);
    assert_eq!(labelled[0]["final_error_type"], "RetrievalError");
    assert_eq!(labelled[0]["reason"], "second look");
    assert_eq!(full["graph_id"], gid.as_str());
    assert!(
        full["data"]["nodes"]
            .as_array()
            .is_some_and(|n| !n.is_empty()),
        "the whole trace"
    );
}

#[test]
fn bad_labels_get_400_naming_the_field_and_store_nothing() {
    let (_d, api, gid, _) = api();
    let case = first_case(&api, &gid);
    let url = format!("/api/traces/{}/cases/{}/labels", enc(&gid), enc(&case));
    let op = get(
        &api,
        &format!("/api/traces/{}/cases/{}", enc(&gid), enc(&case)),
    )["ops"][0]["op_id"]
        .as_str()
        .unwrap()
        .to_string();
    let cases = [
        ("{not json", "not JSON"),
        ("[1]", "must be a JSON object"),
        (
            r#"{"error_type": "RetrievalError", "op_id": "x", "author": "a", "extra": 1}"#,
            "unknown field \"extra\"",
        ),
        (r#"{"op_id": "x", "author": "a"}"#, "error_type: missing"),
        (
            r#"{"error_type": 3, "op_id": "x", "author": "a"}"#,
            "error_type: must be a string",
        ),
        (
            r#"{"error_type": "Typo", "op_id": "x", "author": "a"}"#,
            "unknown error type 'Typo'",
        ),
        (
            r#"{"error_type": "RetrievalError", "op_id": "op-nope", "author": "a"}"#,
            "op_id: no op",
        ),
        (
            &format!(r#"{{"error_type": "RetrievalError", "op_id": "{op}", "author": ""}}"#),
            "author: must not be empty",
        ),
    ];
    for (body, says) in cases {
        let (status, e) = call(&api, "POST", &url, body);
        assert_eq!(status, 400, "{body}: {e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{body}: {e}");
    }
    let body = format!(r#"{{"error_type": "RetrievalError", "op_id": "{op}", "author": "a"}}"#);
    let (status, _) = call(
        &api,
        "POST",
        &format!("/api/traces/{}/cases/prediction%3Anope/labels", enc(&gid)),
        &body,
    );
    assert_eq!(status, 404);
    let (status, _) = call(&api, "PUT", &url, &body);
    assert_eq!(status, 405);
    assert_eq!(get(&api, "/api/labels")["labels"], json!([]));
}

#[test]
fn graphs_expand_and_nodes_show_their_value_and_ops() {
    let (_d, api, gid, _) = api();
    let case = first_case(&api, &gid);
    let c = get(
        &api,
        &format!("/api/traces/{}/cases/{}", enc(&gid), enc(&case)),
    );
    let start = c["prediction_node"].as_str().unwrap();
    let g = get(
        &api,
        &format!(
            "/api/traces/{}/graph?start={}&depth=1",
            enc(&gid),
            enc(start)
        ),
    );
    let nodes = g["nodes"].as_array().unwrap();
    assert!(
        nodes.iter().any(|n| n["id"] == start && n["start"] == true),
        "{g}"
    );
    let ids: Vec<&str> = nodes.iter().map(|n| n["id"].as_str().unwrap()).collect();
    let ops: Vec<&str> = g["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    for e in g["edges"].as_array().unwrap() {
        assert!(
            ids.contains(&e["source"].as_str().unwrap())
                && ids.contains(&e["target"].as_str().unwrap())
        );
        assert!(ops.contains(&e["op"].as_str().unwrap()));
    }
    // A frontier node: it has more incoming edges than the graph shows.
    let drawn_in = |id: &str| {
        g["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["target"] == id)
            .count() as u64
    };
    let frontier = nodes
        .iter()
        .find(|n| n["in_degree"].as_u64().unwrap() > drawn_in(n["id"].as_str().unwrap()))
        .expect("a depth-1 graph has a frontier");
    let fid = frontier["id"].as_str().unwrap();
    let x = get(
        &api,
        &format!(
            "/api/traces/{}/expand?node={}&dir=backward",
            enc(&gid),
            enc(fid)
        ),
    );
    assert_eq!(
        x["edges"].as_array().unwrap().len() as u64,
        frontier["in_degree"].as_u64().unwrap()
    );
    let n = get(
        &api,
        &format!("/api/traces/{}/nodes/{}", enc(&gid), enc(start)),
    );
    assert_eq!(n["id"], start);
    assert!(!n["value"].as_str().unwrap().is_empty());
    assert!(!n["written_by"].as_array().unwrap().is_empty());
    assert_eq!(
        n["written_by"][0]["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| *o == start)
            .count(),
        1
    );
    for (url, status) in [
        (
            format!("/api/traces/{}/graph?start=nothing%3Ahere", enc(&gid)),
            404,
        ),
        (format!("/api/traces/{}/graph", enc(&gid)), 400),
        (
            format!(
                "/api/traces/{}/graph?start={}&dir=up",
                enc(&gid),
                enc(start)
            ),
            400,
        ),
        (
            format!(
                "/api/traces/{}/graph?start={}&depth=99",
                enc(&gid),
                enc(start)
            ),
            400,
        ),
        (
            format!("/api/traces/{}/nodes/nothing%3Ahere", enc(&gid)),
            404,
        ),
        ("/api/traces/%ZZ".to_string(), 400),
    ] {
        assert_eq!(call(&api, "GET", &url, "").0, status, "{url}");
    }
}

#[test]
fn queries_return_tables_graphs_and_caret_errors() {
    let (_d, api, gid, _) = api();
    let (status, v) = call(
        &api,
        "POST",
        "/api/query",
        r#"{"statement": "SHOW TRACES"}"#,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["rows"].as_array().unwrap().len(), 1);
    assert_eq!(v["graph"], Value::Null);
    let case = first_case(&api, &gid);
    let c = get(
        &api,
        &format!("/api/traces/{}/cases/{}", enc(&gid), enc(&case)),
    );
    let start = c["prediction_node"].as_str().unwrap();
    let stmt = format!("TRACE '{start}' IN TRACE '{gid}' DEPTH 2 RETURN ops");
    let (status, v) = call(
        &api,
        "POST",
        "/api/query",
        &json!({"statement": stmt}).to_string(),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["columns"][1], "op_id");
    assert!(v["graph"]["nodes"].as_array().unwrap().len() > 1, "{v}");
    let (status, e) = call(
        &api,
        "POST",
        "/api/query",
        r#"{"statement": "FIND ops WHERE"}"#,
    );
    assert_eq!(
        (status, e["error"].as_str()),
        (400, Some("query_error")),
        "{e}"
    );
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("line 1, column") && msg.lines().any(|l| l.trim() == "^"),
        "{msg}"
    );
    let (status, e) = call(
        &api,
        "POST",
        "/api/query",
        r#"{"statement": "ATTRIBUTE CASES USING evidence"}"#,
    );
    assert_eq!(status, 400);
    assert!(e["message"].as_str().unwrap().contains("only reads"), "{e}");
    // So is an ATTRIBUTE over a subquery's cases, and nothing is stored.
    for statement in [
        "ATTRIBUTE (FIND cases LIMIT 1) USING evidence",
        "ATTRIBUTE (RUN PATTERN evidence_never_stored) USING evidence",
    ] {
        let body = serde_json::json!({ "statement": statement }).to_string();
        let (status, e) = call(&api, "POST", "/api/query", &body);
        assert_eq!(status, 400, "{statement}: {e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("the viewer only reads: ATTRIBUTE stores verdicts"),
            "{e}"
        );
    }
    let (status, r) = call(
        &api,
        "POST",
        "/api/query",
        r#"{"statement": "FIND attributions WHERE author = 'query' RETURN count(*)"}"#,
    );
    assert_eq!(
        (status, &r["rows"]),
        (200, &serde_json::json!([[0]])),
        "{r}"
    );
    // Its plan may be read.
    let (status, r) = call(
        &api,
        "POST",
        "/api/query",
        r#"{"statement": "EXPLAIN ATTRIBUTE (FIND cases LIMIT 1) USING evidence"}"#,
    );
    assert_eq!(status, 200, "{r}");
    assert!(
        r["rows"].to_string().contains("each case in its own trace"),
        "{r}"
    );
    assert_eq!(call(&api, "GET", "/api/query", "").0, 405);
    assert_eq!(
        call(&api, "POST", "/api/query", r#"{"statement": ""}"#).0,
        400
    );
}

#[test]
fn imports_store_whole_traces_or_nothing() {
    let (_d, api, _gid, doc) = api();
    // The same content again stores nothing and says so.
    let (status, v) = call(&api, "POST", "/api/import", &doc.to_string());
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["imported"][0]["unchanged"], true, "{v}");
    assert_eq!(v["imported"][0]["id"], 1, "{v}");
    // The same graph id with other content is a conflict; with force it
    // is a new trace.
    let mut other = doc.clone();
    other["user_id"] = serde_json::json!("someone-else");
    let (status, e) = call(&api, "POST", "/api/import", &other.to_string());
    assert_eq!(status, 409, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("with other content"),
        "{e}"
    );
    assert_eq!(get(&api, "/api/traces")["total"], 1);
    let (status, v) = call(
        &api,
        "POST",
        "/api/import?force=1&source=again",
        &doc.to_string(),
    );
    assert_eq!(status, 201, "{v}");
    assert_ne!(v["imported"][0]["id"], 1);
    assert_eq!(get(&api, "/api/traces")["total"], 2);
    let (status, e) = call(
        &api,
        "POST",
        "/api/import",
        r#"{"graph_id": "x", "data": {"nodes": 3}}"#,
    );
    assert_eq!(status, 400, "{e}");
    assert_eq!(
        get(&api, "/api/traces")["total"],
        2,
        "{v}\n{}",
        get(&api, "/api/traces")
    );
    assert_eq!(call(&api, "POST", "/api/import?format=xml", "").0, 400);
}

#[test]
fn the_app_is_served_and_unknown_paths_are_404() {
    let (_d, api, _, _) = api();
    let r = api.handle("GET", "/", &mut std::io::empty());
    assert_eq!(
        (r.status, r.content_type),
        (200, "text/html; charset=utf-8")
    );
    assert_eq!(
        api.handle("GET", "/app.js", &mut std::io::empty()).status,
        200
    );
    assert_eq!(
        api.handle("GET", "/etc/passwd", &mut std::io::empty())
            .status,
        404
    );
    assert_eq!(
        api.handle("GET", "/api/nothing", &mut std::io::empty())
            .status,
        404
    );
    assert_eq!(get(&api, "/api/health")["traces"], 1);
}

#[test]
fn only_loopback_host_names_pass() {
    for h in [
        "localhost:7878",
        "127.0.0.1:7878",
        "[::1]:7878",
        "LOCALHOST",
        "127.0.0.1",
    ] {
        assert!(loopback_host(h), "{h}");
    }
    for h in ["evil.example:7878", "127.0.0.1.evil.example", "", "[::2]:1"] {
        assert!(!loopback_host(h), "{h}");
    }
}

#[test]
fn reads_see_whole_traces_while_imports_run() {
    let (_d, api, _gid, doc) = api();
    let body = doc.to_string();
    let first = get(&api, "/api/traces")["traces"][0].clone();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..5 {
                let (status, v) = call(&api, "POST", "/api/import?force=1", &body);
                assert_eq!(status, 201, "{v}");
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        for _ in 0..2 {
            s.spawn(|| {
                let mut last = 0;
                let mut reads = 0;
                while !done.load(std::sync::atomic::Ordering::SeqCst) || reads == 0 {
                    let v = get(&api, "/api/traces");
                    let total = v["total"].as_u64().unwrap();
                    assert!(total >= last, "the trace count went back");
                    last = total;
                    for t in v["traces"].as_array().unwrap() {
                        for k in ["variables", "ops", "edges", "failed_cases"] {
                            assert_eq!(t[k], first[k], "{k} of a trace listed mid-import");
                        }
                        let id = t["id"].as_u64().unwrap();
                        let timeline = get(&api, &format!("/api/traces/%23{id}?limit=1"));
                        assert_eq!(timeline["ops_total"], first["ops"]);
                    }
                    reads += 1;
                }
            });
        }
    });
    assert_eq!(get(&api, "/api/traces")["total"], 6);
}

#[test]
fn ids_with_spaces_and_slashes_open_in_the_graph_the_node_and_expand() {
    let (_d, api, _, _) = api();
    let otlp = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/otlp/collector.jsonl"),
    )
    .unwrap();
    let reply = api.handle("POST", "/api/import?format=jsonl", &mut &otlp[..]);
    assert_eq!(
        reply.status,
        201,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let id = "input:POST /chat@1";
    let (status, found) = call(
        &api,
        "POST",
        "/api/query",
        &json!({"statement": format!("FIND vars WHERE var.full_node_id = '{id}' RETURN trace")})
            .to_string(),
    );
    assert_eq!(status, 200, "{found}");
    let gid = enc(found["rows"][0][0].as_str().unwrap());
    let node = get(&api, &format!("/api/traces/{gid}/nodes/{}", enc(id)));
    assert_eq!(node["id"], id);
    let graph = get(
        &api,
        &format!("/api/traces/{gid}/graph?start={}&dir=forward", enc(id)),
    );
    assert!(graph["nodes"].as_array().unwrap().len() >= 2, "{graph}");
    // A query string may also carry a space as '+'.
    let plus = get(
        &api,
        &format!("/api/traces/{gid}/graph?start=input%3APOST+%2Fchat%401&dir=forward"),
    );
    assert_eq!(plus["nodes"], graph["nodes"]);
    let hop = get(
        &api,
        &format!("/api/traces/{gid}/expand?node={}&dir=forward", enc(id)),
    );
    assert_eq!(hop["nodes"][0]["id"], id);
    // An id that names nothing is a 404; text that is neither an id nor a
    // reference is a 400 that says why.
    let (status, e) = call(
        &api,
        "GET",
        &format!("/api/traces/{gid}/nodes/{}", enc("input:none@1")),
        "",
    );
    assert_eq!(
        (status, e["error"].as_str()),
        (404, Some("not_found")),
        "{e}"
    );
    let (status, e) = call(
        &api,
        "GET",
        &format!("/api/traces/{gid}/nodes/{}", enc("input:GET /none@1")),
        "",
    );
    assert_eq!(
        (status, e["error"].as_str()),
        (400, Some("query_error")),
        "{e}"
    );
}
