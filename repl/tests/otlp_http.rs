//! The OTLP/HTTP receiver of `memtrace serve` (and `memtrace collect`) over
//! real HTTP: spans of the fixtures of `tests/fixtures/otlp/` sent in
//! pieces, as JSON and as protobuf (encoded with opentelemetry-proto),
//! plain and gzip, become the same traces the file import makes; a kill -9
//! between the acknowledgement and the assembly loses nothing; spans that
//! come after their trace was stored have it stored again; malformed,
//! oversized and stalled bodies get their status; a burst of concurrent
//! exporters (bounded, on loopback) loses and doubles nothing. A trace
//! stored again keeps the earlier one's verdicts and labels, even across a
//! kill -9 between the two writes; the spool is emptied and rewritten, and
//! a kill -9 in the middle of a rewrite loses no acknowledged span.

mod common_cli;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common_cli::*;
use prost::Message;
use serde_json::{json, Value};

/// The failing RAG turn of `rag_session.json`, and its follow-up.
const RAG: &str = "otel-db5b5fab8f4d3e27dda1494c73cf256d";
const FOLLOW_UP: &str = "otel-7253edc6181879932fa91425cb008853";

struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `memtrace ARGS...` (serve or collect), once it listens.
fn start(cwd: &Path, db: &Path, args: &[&str]) -> Server {
    start_with(cwd, db, args, &[], Stdio::null())
}

/// `start`, with these environment variables and its standard error there.
fn start_with(cwd: &Path, db: &Path, args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Server {
    let mut child = command(cwd, Some(db), args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start memtrace");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .split_once(": listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .1
        .to_string();
    let addr = url.trim_start_matches("http://").to_string();
    Server { child, addr }
}

fn serve(cwd: &Path, db: &Path, extra: &[&str]) -> Server {
    start(
        cwd,
        db,
        &[&["serve", "--addr", "127.0.0.1:0"], extra].concat(),
    )
}

/// One HTTP/1.1 request; returns the status, the headers (lower case) and the body.
fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| *k == "Host") {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&out[..split]).to_ascii_lowercase();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head, out[split + 4..].to_vec())
}

fn post_json(addr: &str, doc: &Value) -> (u16, String, Vec<u8>) {
    request(
        addr,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        doc.to_string().as_bytes(),
    )
}

fn api(addr: &str, path: &str) -> Value {
    let (status, _, body) = request(addr, "GET", path, &[], b"");
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

fn api_query(addr: &str, statement: &str) -> Value {
    let (status, _, body) = request(
        addr,
        "POST",
        "/api/query",
        &[("Content-Type", "application/json")],
        json!({ "statement": statement }).to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// The graph ids stored, as the viewer lists them.
fn stored(addr: &str) -> Vec<String> {
    api(addr, "/api/traces")["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["graph_id"].as_str().unwrap().to_string())
        .collect()
}

/// Waits until `graph_ids` are all stored (or fails after 30 s).
fn wait_for(addr: &str, graph_ids: &[&str]) -> Value {
    let start = Instant::now();
    loop {
        let have = stored(addr);
        if graph_ids.iter().all(|g| have.iter().any(|h| h == g)) {
            return api(addr, "/api/traces");
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{graph_ids:?} not stored after 30 s; stored: {have:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A database with the bundled sample (so that `memtrace serve` opens it).
fn database() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    ok(run(
        dir.path(),
        Some(&db),
        &["import", sample().to_str().unwrap()],
    ));
    (dir, db)
}

fn fixture() -> Value {
    let text = std::fs::read_to_string(fixtures().join("otlp").join("rag_session.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A span, with its resource and scope.
type Span = (Value, Value, Value);

/// Every span of an OTLP request, with its resource and scope.
fn spans_of(doc: &Value) -> Vec<(Value, Value, Value)> {
    let mut out = Vec::new();
    for rs in doc["resourceSpans"].as_array().unwrap() {
        for ss in rs["scopeSpans"].as_array().unwrap() {
            for sp in ss["spans"].as_array().unwrap() {
                out.push((rs["resource"].clone(), ss["scope"].clone(), sp.clone()));
            }
        }
    }
    out
}

/// A request holding these spans (each under its own resource and scope).
fn request_of(spans: &[(Value, Value, Value)]) -> Value {
    let rs: Vec<Value> = spans
        .iter()
        .map(|(r, s, sp)| json!({"resource": r, "scopeSpans": [{"scope": s, "spans": [sp]}]}))
        .collect();
    json!({ "resourceSpans": rs })
}

/// A JSON request as protobuf, through opentelemetry-proto's serde mapping.
fn protobuf(doc: &Value) -> Vec<u8> {
    let req: opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest =
        serde_json::from_value(doc.clone()).unwrap();
    req.encode_to_vec()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

/// The counts of a graph id in a `/api/traces` listing.
fn counts(listing: &Value, graph_id: &str) -> (u64, u64, u64) {
    let t = listing["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["graph_id"] == graph_id)
        .unwrap_or_else(|| panic!("no {graph_id} in {listing}"));
    (
        t["variables"].as_u64().unwrap(),
        t["ops"].as_u64().unwrap(),
        t["edges"].as_u64().unwrap(),
    )
}

/// What `memtrace export` gives for a trace of a database.
fn export(dir: &Path, db: &Path, trace: &str) -> String {
    stdout(&ok(run(dir, Some(db), &["export", trace])))
}

#[test]
fn spans_in_pieces_as_json_protobuf_and_gzip_become_the_traces_the_file_import_makes() {
    let (dir, db) = database();
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.3"]);
    // The two traces' spans interleaved over five requests in three encodings.
    let spans = spans_of(&fixture());
    let mut pieces: Vec<Vec<(Value, Value, Value)>> = vec![Vec::new(); 5];
    for (i, s) in spans.into_iter().enumerate() {
        pieces[i % 5].push(s);
    }
    for (k, piece) in pieces.iter().enumerate() {
        let doc = request_of(piece);
        let (status, head, body) = match k % 3 {
            0 => post_json(&server.addr, &doc),
            1 => request(
                &server.addr,
                "POST",
                "/v1/traces",
                &[("Content-Type", "application/x-protobuf")],
                &protobuf(&doc),
            ),
            _ => request(
                &server.addr,
                "POST",
                "/v1/traces",
                &[
                    ("Content-Type", "application/x-protobuf"),
                    ("Content-Encoding", "gzip"),
                ],
                &gzip(&protobuf(&doc)),
            ),
        };
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        if k % 3 == 0 {
            assert!(head.contains("content-type: application/json"), "{head}");
            assert_eq!(serde_json::from_slice::<Value>(&body).unwrap(), json!({}));
        } else {
            assert!(
                head.contains("content-type: application/x-protobuf"),
                "{head}"
            );
            let r = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse::decode(&body[..]).unwrap();
            assert!(r.partial_success.is_none());
        }
    }
    let listing = wait_for(&server.addr, &[RAG, FOLLOW_UP]);
    // The failed evaluation is a case, and the evidence method gives it a verdict.
    let cases = api(&server.addr, &format!("/api/traces/{RAG}/cases"));
    assert_eq!(cases["cases"].as_array().unwrap().len(), 1, "{cases}");
    let none = api(&server.addr, &format!("/api/traces/{FOLLOW_UP}/cases"));
    assert_eq!(none["cases"].as_array().unwrap().len(), 0, "{none}");
    drop(server);
    let o = ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            &format!("ATTRIBUTE CASES IN TRACE '{RAG}' USING evidence"),
            "--format",
            "json",
        ],
    ));
    let rows = json(&o)["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert!(rows[0][2].is_string(), "a verdict: {rows}");
    // The same spans imported from the file: the same traces.
    let other = dir.path().join("file.db");
    ok(run(
        dir.path(),
        Some(&other),
        &[
            "import",
            fixtures().join("otlp/rag_session.json").to_str().unwrap(),
        ],
    ));
    for g in [RAG, FOLLOW_UP] {
        assert_eq!(
            export(dir.path(), &db, g),
            export(dir.path(), &other, g),
            "{g}"
        );
    }
    let (v, o, e) = counts(&listing, RAG);
    assert!(v > 10 && o == 7 && e > 10, "{v} {o} {e}");
}

#[test]
fn a_kill_between_the_acknowledgement_and_the_assembly_loses_nothing() {
    let (dir, db) = database();
    let server = serve(dir.path(), &db, &["--otlp-quiet", "60"]);
    let (status, _, body) = post_json(&server.addr, &fixture());
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    // Acknowledged, not yet stored (the quiet period is a minute): kill -9.
    assert!(!stored(&server.addr).iter().any(|g| g == RAG));
    drop(server);
    let listed = stdout(&ok(run(dir.path(), Some(&db), &["traces"])));
    assert!(!listed.contains(RAG), "{listed}");
    // The next start takes the spans back from the spool and stores them.
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    wait_for(&server.addr, &[RAG, FOLLOW_UP]);
    drop(server);
    let other = dir.path().join("file.db");
    ok(run(
        dir.path(),
        Some(&other),
        &[
            "import",
            fixtures().join("otlp/rag_session.json").to_str().unwrap(),
        ],
    ));
    assert_eq!(
        export(dir.path(), &db, RAG),
        export(dir.path(), &other, RAG)
    );
    // A third start stores nothing again.
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    std::thread::sleep(Duration::from_millis(800));
    let all = stored(&server.addr);
    assert_eq!(all.iter().filter(|g| *g == RAG).count(), 1, "{all:?}");
}

#[test]
fn ctrl_c_stores_every_trace_held_and_late_spans_store_the_trace_again() {
    let (dir, db) = database();
    let spans = spans_of(&fixture());
    // The RAG turn without its evaluation, which comes later.
    let (eval, rest): (Vec<_>, Vec<_>) = spans
        .into_iter()
        .filter(|(_, _, sp)| sp["traceId"] == RAG.trim_start_matches("otel-"))
        .partition(|(_, _, sp)| sp["name"] == "correctness_eval");
    let server = serve(dir.path(), &db, &["--otlp-quiet", "60"]);
    assert_eq!(post_json(&server.addr, &request_of(&rest)).0, 200);
    // SIGTERM: the receiver stores what it holds before it stops.
    let mut server = server;
    let pid = server.child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let listed = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    assert!(listed.contains(RAG), "{listed}");
    let q = format!("FIND cases IN TRACE '{RAG}' RETURN count(*)");
    let cases = json(&ok(run(
        dir.path(),
        Some(&db),
        &["query", &q, "--format", "json"],
    )));
    assert_eq!(cases["rows"][0][0], 0);
    // The evaluation comes minutes later: the trace is stored again, whole,
    // with its case, and the earlier one is dropped (and logged).
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.2"]);
    assert_eq!(post_json(&server.addr, &request_of(&eval)).0, 200);
    let start = Instant::now();
    loop {
        let (status, _, body) = request(
            &server.addr,
            "POST",
            "/api/query",
            &[("Content-Type", "application/json")],
            json!({ "statement": q }).to_string().as_bytes(),
        );
        let text = String::from_utf8_lossy(&body).into_owned();
        if status == 200 {
            let rows: Value = serde_json::from_str(&text).unwrap();
            if rows["rows"][0][0] == 1 {
                break;
            }
        } else {
            // The moment between storing the trace again and dropping the
            // earlier one: the graph id names both.
            assert!(status == 400 && text.contains("several"), "{status} {text}");
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let all = stored(&server.addr);
    assert_eq!(all.iter().filter(|g| *g == RAG).count(), 1, "{all:?}");
    let found = api_query(
        &server.addr,
        &format!("FIND traces WHERE trace.graph_id = '{RAG}' RETURN trace.source"),
    );
    assert!(
        found["rows"][0][0].as_str().unwrap().contains("late spans"),
        "{found}"
    );
    drop(server);
    let log = stdout(&ok(run(dir.path(), Some(&db), &["log"])));
    assert!(log.contains("superseded by"), "{log}");
}

#[test]
fn malformed_oversized_and_wrongly_typed_requests_get_their_status() {
    let (dir, db) = database();
    let server = serve(
        dir.path(),
        &db,
        &["--otlp-quiet", "0.2", "--otlp-max-body", "1"],
    );
    let a = &server.addr;
    // Not JSON: 400 with a Status naming the problem.
    let (status, _, body) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        b"{\"resourceSpans\": [",
    );
    assert_eq!(status, 400);
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["code"], 3);
    assert!(s["message"].as_str().unwrap().contains("not JSON"), "{s}");
    // Not protobuf.
    let (status, _, body) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/x-protobuf")],
        b"\xff\xff\xff\xff",
    );
    assert_eq!(status, 400);
    let s = receiver_status(&body);
    assert!(s.contains("ExportTraceServiceRequest"), "{s}");
    // A wrong structure: 400 naming the place.
    let (status, _, body) = post_json(a, &json!({"resourceSpans": [{"scopeSpans": 7}]}));
    assert_eq!(status, 400);
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("resourceSpans[0].scopeSpans"),
        "{s}"
    );
    // One bad span among good ones: 200 with partial success.
    let mut doc = fixture();
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"] = json!("xyz");
    let (status, _, body) = post_json(a, &doc);
    assert_eq!(status, 200);
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["partialSuccess"]["rejectedSpans"], "1", "{s}");
    assert!(
        s["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap()
            .contains("spans[2].spanId"),
        "{s}"
    );
    // Other media types and methods.
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "text/plain")],
        b"x",
    );
    assert_eq!(status, 415);
    let (status, _, _) = request(a, "GET", "/v1/traces", &[], b"");
    assert_eq!(status, 405);
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "br"),
        ],
        b"{}",
    );
    assert_eq!(status, 415);
    // Over the limit (1 MiB), as sent and once decompressed.
    let big = vec![b' '; (1 << 20) + 10];
    let (status, _, body) = request(
        a,
        "POST",
        "/v1/traces",
        &[("Content-Type", "application/json")],
        &big,
    );
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    let bomb = gzip(&vec![b' '; 8 << 20]);
    assert!(bomb.len() < 1 << 20);
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/json"),
            ("Content-Encoding", "gzip"),
        ],
        &bomb,
    );
    assert_eq!(status, 413);
    // An empty request is a request with no spans.
    assert_eq!(post_json(a, &json!({})).0, 200);
    // A foreign Host is refused as on the rest of the server.
    let (status, _, _) = request(
        a,
        "POST",
        "/v1/traces",
        &[
            ("Content-Type", "application/json"),
            ("Host", "evil.example"),
        ],
        b"{}",
    );
    assert_eq!(status, 403);
    // The good spans of the partly refused request were kept.
    wait_for(a, &[RAG, FOLLOW_UP]);
}

/// The message of a protobuf `google.rpc.Status` (field 2).
fn receiver_status(body: &[u8]) -> String {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Status {
        #[prost(int32, tag = "1")]
        code: i32,
        #[prost(string, tag = "2")]
        message: String,
    }
    let s = Status::decode(body).unwrap();
    assert_eq!(s.code, 3);
    s.message
}

#[test]
fn a_slow_client_is_cut_off_without_holding_up_the_others() {
    let (dir, db) = database();
    let server = serve(
        dir.path(),
        &db,
        &["--otlp-quiet", "0.2", "--idle-timeout", "1"],
    );
    let addr = server.addr.clone();
    // Several clients send half a body and stall.
    let stalled: Vec<_> = (0..12)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                write!(
                    s,
                    "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"resourceSpans\": ["
                )
                .unwrap();
                let mut out = Vec::new();
                let _ = s.read_to_end(&mut out);
                String::from_utf8_lossy(&out).into_owned()
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // Meanwhile an exporter is answered at once.
    let start = Instant::now();
    assert_eq!(post_json(&addr, &fixture()).0, 200);
    assert!(start.elapsed() < Duration::from_secs(5));
    for t in stalled {
        let answer = t.join().unwrap();
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
    }
    wait_for(&addr, &[RAG, FOLLOW_UP]);
}

#[test]
fn a_burst_of_concurrent_exporters_loses_and_doubles_nothing() {
    let (dir, db) = database();
    let server = serve(dir.path(), &db, &["--otlp-quiet", "0.5"]);
    let addr = server.addr.clone();
    let base = spans_of(&fixture());
    // 16 exporters, each sending 4 traces (the fixture's two with new trace
    // ids) in 3 requests each, protobuf: 64 traces, 96 requests at once.
    const EXPORTERS: usize = 16;
    let threads: Vec<_> = (0..EXPORTERS)
        .map(|e| {
            let addr = addr.clone();
            let base = base.clone();
            std::thread::spawn(move || {
                let mut sent = Vec::new();
                for round in 0..2 {
                    let mut spans = base.clone();
                    let mut ids = Vec::new();
                    for (_, _, sp) in &mut spans {
                        let t = sp["traceId"].as_str().unwrap();
                        let new = format!("{:04x}{:02x}{}", e + 1, round, &t[6..]);
                        sp["traceId"] = json!(new);
                        if !ids.contains(&new) {
                            ids.push(new);
                        }
                    }
                    for chunk in spans.chunks(5) {
                        let body = protobuf(&request_of(chunk));
                        let mut tries = 0;
                        loop {
                            let (status, head, _) = request(
                                &addr,
                                "POST",
                                "/v1/traces",
                                &[("Content-Type", "application/x-protobuf")],
                                &body,
                            );
                            if status == 200 {
                                break;
                            }
                            // An exporter retries 429 and 503 after Retry-After.
                            assert!(status == 429 || status == 503, "{status}");
                            assert!(head.contains("retry-after:"), "{head}");
                            tries += 1;
                            assert!(tries < 20);
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                    sent.extend(ids.into_iter().map(|i| format!("otel-{i}")));
                }
                sent
            })
        })
        .collect();
    let mut all: Vec<String> = Vec::new();
    for t in threads {
        all.extend(t.join().unwrap());
    }
    assert_eq!(all.len(), EXPORTERS * 4);
    let want: Vec<&str> = all.iter().map(String::as_str).collect();
    let listing = wait_for(&addr, &want);
    let have = stored(&addr);
    for g in &all {
        assert_eq!(have.iter().filter(|h| *h == g).count(), 1, "{g}");
    }
    let (v, o, _) = counts(&listing, &all[0]);
    assert_eq!(o, 7);
    assert!(v > 10);
}

#[test]
fn too_much_held_gets_503_with_retry_after_and_collect_only_receives() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    // collect creates the database, and answers only the receiver (and health).
    let server = start(
        dir.path(),
        &db,
        &[
            "collect",
            "--addr",
            "127.0.0.1:0",
            "--otlp-quiet",
            "60",
            "--otlp-max-pending",
            "1",
        ],
    );
    let a = &server.addr;
    assert_eq!(request(a, "GET", "/api/traces", &[], b"").0, 404);
    assert_eq!(request(a, "GET", "/api/health", &[], b"").0, 200);
    let base = spans_of(&fixture());
    let mut refused = None;
    for round in 0..200 {
        let mut spans = base.clone();
        for (_, _, sp) in &mut spans {
            let t = sp["traceId"].as_str().unwrap().to_string();
            sp["traceId"] = json!(format!("{round:06x}{}", &t[6..]));
        }
        let (status, head, body) = post_json(a, &request_of(&spans));
        if status == 503 {
            refused = Some((head, body));
            break;
        }
        assert_eq!(status, 200);
    }
    let (head, body) = refused.expect("a 503 once 1 MiB is held");
    assert!(head.contains("retry-after:"), "{head}");
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(s["code"], 14);
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("--otlp-max-pending"),
        "{s}"
    );
    // Ctrl-C stores what was held; the database now has the traces.
    let mut server = server;
    let pid = server.child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(server.child.wait().unwrap().success());
    let stats = json(&ok(run(
        dir.path(),
        Some(&db),
        &["stats", "--format", "json"],
    )));
    assert!(stats["traces"].as_u64().unwrap() >= 2, "{stats}");
}

/// Stops a server with SIGTERM, as Ctrl-C would, and waits for it to exit.
fn stop(mut server: Server) {
    let pid = server.child.id().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// The ids (`#N`) of the traces stored under `graph_id`, as the viewer lists them.
fn ids_of(addr: &str, graph_id: &str) -> Vec<u64> {
    api(addr, "/api/traces")["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["graph_id"] == graph_id)
        .map(|t| t["id"].as_u64().unwrap())
        .collect()
}

/// Waits (30 s at most) until `graph_id` names one trace other than `old`; returns it.
fn wait_for_replacement(addr: &str, graph_id: &str, old: u64) -> u64 {
    let start = Instant::now();
    loop {
        let ids = ids_of(addr, graph_id);
        if let [id] = ids[..] {
            if id != old {
                return id;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{graph_id} is still {ids:?} after 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `text` with every byte but letters, digits and `-_.` percent-encoded.
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The spans of one trace of the fixture (its graph id), split by `late`.
fn split_trace(graph_id: &str, late: impl Fn(&Value) -> bool) -> (Vec<Span>, Vec<Span>) {
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

/// Waits (30 s at most) until the server logging to `log` stalls at `step`.
fn wait_stalled(log: &Path, step: &str) {
    let start = Instant::now();
    let want = format!("stalled at {step}");
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(&want) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no {want:?} after 30 s: {text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The size of the database's OTLP spool.
fn spool_size(db: &Path) -> u64 {
    std::fs::metadata(db.join("otlp-spool.log")).unwrap().len()
}

/// Waits (30 s at most) until `ok` holds of the spool's size; returns it.
fn wait_spool(db: &Path, what: &str, ok: impl Fn(u64) -> bool) -> u64 {
    let start = Instant::now();
    loop {
        let size = spool_size(db);
        if ok(size) {
            return size;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the spool is {size} bytes after 30 s, not {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The spool's size with no record in it (its header).
const EMPTY_SPOOL: u64 = 8;

/// Sends the follow-up turn without its root span (it waits: the orphan
/// wait is long) and then the RAG turn (stored once quiet); returns the
/// follow-up's root span and the spool's size once both are acknowledged.
fn one_waiting_one_stored(addr: &str, db: &Path) -> (Vec<Span>, u64) {
    let (root, waiting) = split_trace(FOLLOW_UP, |sp| {
        sp["parentSpanId"].as_str().unwrap_or_default().is_empty()
    });
    assert_eq!(root.len(), 1);
    assert_eq!(post_json(addr, &request_of(&waiting)).0, 200);
    let (_, rag) = split_trace(RAG, |_| false);
    assert_eq!(post_json(addr, &request_of(&rag)).0, 200);
    (root, spool_size(db))
}

/// The export of `graph_id` is the file import's.
fn as_the_file_import(dir: &Path, db: &Path, graph_id: &str) {
    let other = dir.join("file.db");
    if !other.exists() {
        ok(run(
            dir,
            Some(&other),
            &[
                "import",
                fixtures().join("otlp/rag_session.json").to_str().unwrap(),
            ],
        ));
    }
    assert_eq!(export(dir, db, graph_id), export(dir, &other, graph_id));
}

const WAITING: &[&str] = &[
    "serve",
    "--addr",
    "127.0.0.1:0",
    "--otlp-quiet",
    "0.2",
    "--otlp-orphan-wait",
    "600",
];

#[test]
fn the_spool_is_emptied_once_its_traces_are_stored_and_rewritten_past_its_slack() {
    // The default slack: the stored trace's spans stay until the spool is emptied.
    let (dir, db) = database();
    let server = start(dir.path(), &db, WAITING);
    let (root, sent) = one_waiting_one_stored(&server.addr, &db);
    wait_for(&server.addr, &[RAG]);
    // The marker saying the RAG turn is stored is appended.
    let marked = wait_spool(&db, "longer", |s| s != sent);
    assert!(marked > sent, "{marked} <= {sent}");
    assert_eq!(post_json(&server.addr, &request_of(&root)).0, 200);
    wait_for(&server.addr, &[FOLLOW_UP]);
    wait_spool(&db, "emptied", |s| s == EMPTY_SPOOL);
    drop(server);

    // No slack: once the RAG turn is stored, the spool is rewritten with
    // only the follow-up's spans, while the server runs.
    let (dir, db) = database();
    let server = start(
        dir.path(),
        &db,
        &[WAITING, &["--otlp-spool-slack", "0"]].concat(),
    );
    let (root, sent) = one_waiting_one_stored(&server.addr, &db);
    wait_for(&server.addr, &[RAG]);
    let rewritten = wait_spool(&db, "smaller", |s| s < sent);
    assert!(rewritten > EMPTY_SPOOL, "the waiting spans are kept");
    // They are taken back from the rewritten spool after a kill -9.
    drop(server);
    let server = start(dir.path(), &db, WAITING);
    assert_eq!(post_json(&server.addr, &request_of(&root)).0, 200);
    wait_for(&server.addr, &[FOLLOW_UP]);
    wait_spool(&db, "emptied", |s| s == EMPTY_SPOOL);
    assert_eq!(ids_of(&server.addr, RAG).len(), 1);
    drop(server);
    as_the_file_import(dir.path(), &db, FOLLOW_UP);
}

#[test]
fn a_kill_in_the_middle_of_a_spool_rewrite_loses_no_acknowledged_span() {
    for step in ["written", "renamed"] {
        let (dir, db) = database();
        let log = dir.path().join("stderr.log");
        let server = start_with(
            dir.path(),
            &db,
            &[WAITING, &["--otlp-spool-slack", "0"]].concat(),
            &[("MEMTRACE_TEST_OTLP_STALL", step)],
            Stdio::from(std::fs::File::create(&log).unwrap()),
        );
        let (root, sent) = one_waiting_one_stored(&server.addr, &db);
        wait_stalled(&log, step);
        let new_spool = db.join("otlp-spool.log.new");
        match step {
            // The new spool is beside the old one, which is whole.
            "written" => assert!(new_spool.exists() && spool_size(&db) > sent),
            // The new spool replaced the old one.
            _ => assert!(!new_spool.exists() && spool_size(&db) < sent),
        }
        drop(server);
        let server = start(dir.path(), &db, WAITING);
        assert!(!new_spool.exists(), "{step}");
        assert_eq!(post_json(&server.addr, &request_of(&root)).0, 200);
        wait_for(&server.addr, &[RAG, FOLLOW_UP]);
        wait_spool(&db, "emptied", |s| s == EMPTY_SPOOL);
        assert_eq!(ids_of(&server.addr, RAG).len(), 1, "{step}");
        drop(server);
        as_the_file_import(dir.path(), &db, FOLLOW_UP);
        as_the_file_import(dir.path(), &db, RAG);
    }
}
