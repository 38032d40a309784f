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

#[path = "../common/mod.rs"]
mod common;
mod late_spans;
mod receiving;
mod spool;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
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
