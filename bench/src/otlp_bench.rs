//! Spans per second taken by the OTLP/HTTP receiver (`memtrace collect`),
//! beside the file import of the same spans (`memtrace import`).
//!
//! Synthetic OpenInference traces (a CHAIN root with EMBEDDING, RETRIEVER,
//! LLM and TOOL children, with documents and messages) are sent as an
//! exporter sends them: protobuf requests of at most 512 spans (the SDK's
//! batch size), the traces interleaved, by several exporters at once over
//! kept-alive connections. "Accepted" is the time until every request was
//! answered 200 (each answer comes once its spans are synced to the
//! spool); "stored" the time until every trace was assembled and stored.
//! The file import reads the same requests as OTLP/JSON Lines. Both run the
//! release `memtrace` binary beside this one, each on a fresh database.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

use crate::error::{CliError, Result};

/// Any failure of the benchmark, as its error.
fn fail(e: impl std::fmt::Display) -> CliError {
    CliError::Bench(e.to_string())
}

/// What to measure.
#[derive(Debug, clap::Args)]
pub struct OtlpBenchArgs {
    /// Traces sent.
    #[arg(long, default_value_t = 2000)]
    pub traces: usize,
    /// Spans per trace (a root and its children).
    #[arg(long, default_value_t = 25)]
    pub spans: usize,
    /// Exporters sending at once.
    #[arg(long, default_value_t = 4)]
    pub exporters: usize,
    /// Spans per request at most.
    #[arg(long, default_value_t = 512)]
    pub batch: usize,
    /// The memtrace binary (default: beside this one).
    #[arg(long)]
    pub memtrace: Option<PathBuf>,
    /// Working folder (default: a new folder under the system's temp folder).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn s(key: &str, v: impl Into<String>) -> KeyValue {
    kv(key, any_value::Value::StringValue(v.into()))
}

/// One trace's spans: a CHAIN root, then children of four kinds in turn.
fn trace_spans(t: usize, n: usize) -> Vec<Span> {
    let mut trace_id = vec![0u8; 16];
    trace_id[..8].copy_from_slice(&(t as u64 + 1).to_be_bytes());
    trace_id[8..].copy_from_slice(&0x6d656d7472616365u64.to_be_bytes());
    let span_id = |i: usize| {
        ((t as u64 + 1) << 20 | (i as u64 + 1))
            .to_be_bytes()
            .to_vec()
    };
    let t0 = 1_772_442_000_000_000_000u64 + t as u64 * 1_000_000_000;
    let question = format!("What did user {t} say about topic {}?", t % 97);
    let mut out = Vec::with_capacity(n);
    for i in 1..n {
        let start = t0 + i as u64 * 1_000_000;
        let mut attrs = Vec::new();
        let name = match i % 4 {
            1 => {
                attrs.push(s("openinference.span.kind", "EMBEDDING"));
                attrs.push(s("embedding.embeddings.0.embedding.text", question.clone()));
                "embed_query"
            }
            2 => {
                attrs.push(s("openinference.span.kind", "RETRIEVER"));
                attrs.push(s("input.value", question.clone()));
                for d in 0..4 {
                    let p = format!("retrieval.documents.{d}.document");
                    attrs.push(s(&format!("{p}.id"), format!("doc-{t}-{i}-{d}")));
                    attrs.push(s(
                        &format!("{p}.content"),
                        format!("Memory {d} of user {t}: they talked about topic {} on day {i}, at some length, with details that a retriever would rank.", (t + d) % 97),
                    ));
                    attrs.push(kv(
                        &format!("{p}.score"),
                        any_value::Value::DoubleValue(0.9 - d as f64 * 0.1),
                    ));
                }
                "vector_search"
            }
            3 => {
                attrs.push(s("openinference.span.kind", "LLM"));
                attrs.push(s("llm.model_name", "gpt-4o-mini"));
                attrs.push(s("llm.input_messages.0.message.role", "system"));
                attrs.push(s(
                    "llm.input_messages.0.message.content",
                    "You answer from the context only.",
                ));
                attrs.push(s("llm.input_messages.1.message.role", "user"));
                attrs.push(s(
                    "llm.input_messages.1.message.content",
                    format!("Context: memories of user {t}.\nQuestion: {question}"),
                ));
                attrs.push(s("llm.output_messages.0.message.role", "assistant"));
                attrs.push(s(
                    "llm.output_messages.0.message.content",
                    format!("User {t} said topic {} was settled.", t % 97),
                ));
                attrs.push(kv("llm.token_count.total", any_value::Value::IntValue(120)));
                "generate_answer"
            }
            _ => {
                attrs.push(s("openinference.span.kind", "TOOL"));
                attrs.push(s("tool.name", "lookup"));
                attrs.push(s("input.value", format!("{{\"user\": {t}}}")));
                attrs.push(s(
                    "output.value",
                    format!("{{\"user\": {t}, \"known\": true}}"),
                ));
                "lookup"
            }
        };
        out.push(Span {
            trace_id: trace_id.clone(),
            span_id: span_id(i),
            parent_span_id: span_id(0),
            name: name.into(),
            kind: 1,
            start_time_unix_nano: start,
            end_time_unix_nano: start + 800_000,
            attributes: attrs,
            ..Default::default()
        });
    }
    // The root ends last, as an SDK exports it.
    out.push(Span {
        trace_id,
        span_id: span_id(0),
        name: "rag_agent".into(),
        kind: 1,
        start_time_unix_nano: t0,
        end_time_unix_nano: t0 + n as u64 * 1_000_000,
        attributes: vec![
            s("openinference.span.kind", "CHAIN"),
            s("input.value", question),
            s("session.id", format!("sess-{}", t % 50)),
        ],
        ..Default::default()
    });
    out
}

/// The requests exporters send: spans of several traces interleaved, at
/// most `batch` spans each.
fn requests(a: &OtlpBenchArgs) -> Vec<ExportTraceServiceRequest> {
    // Exporters see traces finish in overlapping windows: eight traces'
    // spans are interleaved, then cut into batches.
    let mut spans: Vec<Span> = Vec::with_capacity(a.traces * a.spans);
    for group in (0..a.traces).collect::<Vec<_>>().chunks(8) {
        let lists: Vec<Vec<Span>> = group.iter().map(|&t| trace_spans(t, a.spans)).collect();
        let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..longest {
            for l in &lists {
                if let Some(sp) = l.get(i) {
                    spans.push(sp.clone());
                }
            }
        }
    }
    let resource = Resource {
        attributes: vec![
            s("service.name", "bench-app"),
            s("openinference.project.name", "bench"),
        ],
        ..Default::default()
    };
    spans
        .chunks(a.batch.max(1))
        .map(|c| ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(resource.clone()),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "bench".into(),
                        ..Default::default()
                    }),
                    spans: c.to_vec(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        })
        .collect()
}

/// A kept-alive HTTP/1.1 connection that posts bodies and reads the status.
struct Conn {
    stream: BufReader<TcpStream>,
    addr: String,
}

impl Conn {
    fn open(addr: &str) -> Result<Conn> {
        let stream = TcpStream::connect(addr)
            .map_err(|e| CliError::Bench(format!("connect {addr}: {e}")))?;
        stream.set_nodelay(true).ok();
        Ok(Conn {
            stream: BufReader::new(stream),
            addr: addr.into(),
        })
    }

    fn post(&mut self, path: &str, content_type: &str, body: &[u8]) -> Result<(u16, Vec<u8>)> {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let io = |e: std::io::Error| CliError::Bench(format!("HTTP: {e}"));
        let w = self.stream.get_mut();
        w.write_all(head.as_bytes()).map_err(io)?;
        w.write_all(body).map_err(io)?;
        self.read_answer()
    }

    fn get(&mut self, path: &str) -> Result<(u16, Vec<u8>)> {
        let head = format!("GET {path} HTTP/1.1\r\nHost: {}\r\n\r\n", self.addr);
        self.stream
            .get_mut()
            .write_all(head.as_bytes())
            .map_err(|e| CliError::Bench(format!("HTTP: {e}")))?;
        self.read_answer()
    }

    fn read_answer(&mut self) -> Result<(u16, Vec<u8>)> {
        let io = |e: std::io::Error| CliError::Bench(format!("HTTP: {e}"));
        let mut line = String::new();
        self.stream.read_line(&mut line).map_err(io)?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| CliError::Bench(format!("not an HTTP answer: {line:?}")))?;
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            self.stream.read_line(&mut h).map_err(io)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0u8; len];
        self.stream.read_exact(&mut body).map_err(io)?;
        Ok((status, body))
    }
}

fn memtrace_bin(a: &OtlpBenchArgs) -> Result<PathBuf> {
    let bin = match &a.memtrace {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| CliError::Bench(e.to_string()))?
            .with_file_name("memtrace"),
    };
    if !bin.exists() {
        return Err(CliError::Bench(format!(
            "no memtrace binary at {}: build it first (cargo build --release -p memtrace-repl)",
            bin.display()
        )));
    }
    Ok(bin)
}

/// Stored traces, from `/api/health`.
fn stored(conn: &mut Conn) -> Result<u64> {
    let (_, body) = conn.get("/api/health")?;
    let v: serde_json::Value = serde_json::from_slice(&body)?;
    Ok(v["traces"].as_u64().unwrap_or(0))
}

/// Runs the benchmark and prints its table.
pub fn run(a: &OtlpBenchArgs) -> Result<std::process::ExitCode> {
    let bin = memtrace_bin(a)?;
    let tmp;
    let dir: PathBuf = match &a.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(fail)?;
            d.clone()
        }
        None => {
            tmp = std::env::temp_dir().join(format!("memtrace-otlp-bench-{}", std::process::id()));
            std::fs::create_dir_all(&tmp).map_err(fail)?;
            tmp
        }
    };
    let reqs = requests(a);
    let spans: usize = reqs
        .iter()
        .map(|r| r.resource_spans[0].scope_spans[0].spans.len())
        .sum();
    let bodies: Vec<Vec<u8>> = reqs.iter().map(Message::encode_to_vec).collect();
    let proto_bytes: usize = bodies.iter().map(Vec::len).sum();
    // The same requests as OTLP/JSON Lines for the file import.
    let jsonl = dir.join("spans.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&jsonl).map_err(fail)?);
        for r in &reqs {
            serde_json::to_writer(&mut f, r)?;
            f.write_all(b"\n").map_err(fail)?;
        }
        f.flush().map_err(fail)?;
    }
    let json_bytes = std::fs::metadata(&jsonl).map_err(fail)?.len();
    println!(
        "{} traces x {} spans = {spans} spans in {} requests ({} MiB protobuf, {} MiB as OTLP/JSON Lines); {} exporters",
        a.traces,
        a.spans,
        bodies.len(),
        proto_bytes >> 20,
        json_bytes >> 20,
        a.exporters
    );

    // The receiver.
    let db = dir.join("live.db");
    let _ = std::fs::remove_dir_all(&db);
    let mut child = Command::new(&bin)
        .args(["--db"])
        .arg(&db)
        .args([
            "collect",
            "--addr",
            "127.0.0.1:0",
            "--otlp-quiet",
            "0.5",
            "--otlp-max-pending",
            "4096",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(fail)?;
    let mut line = String::new();
    BufReader::new(
        child
            .stdout
            .take()
            .ok_or_else(|| CliError::Bench("no stdout".into()))?,
    )
    .read_line(&mut line)
    .map_err(fail)?;
    let addr = line
        .trim()
        .rsplit("http://")
        .next()
        .unwrap_or_default()
        .to_string();
    let per: Vec<Vec<Vec<u8>>> = {
        let mut v = vec![Vec::new(); a.exporters.max(1)];
        for (i, b) in bodies.into_iter().enumerate() {
            v[i % a.exporters.max(1)].push(b);
        }
        v
    };
    let start = Instant::now();
    let handles: Vec<_> = per
        .into_iter()
        .map(|list| {
            let addr = addr.clone();
            std::thread::spawn(move || -> Result<u32> {
                let mut conn = Conn::open(&addr)?;
                let mut retries = 0;
                for body in list {
                    loop {
                        let (status, _) =
                            conn.post("/v1/traces", "application/x-protobuf", &body)?;
                        match status {
                            200 => break,
                            429 | 503 => {
                                retries += 1;
                                std::thread::sleep(Duration::from_millis(100));
                            }
                            other => return Err(CliError::Bench(format!("status {other}"))),
                        }
                    }
                }
                Ok(retries)
            })
        })
        .collect();
    let mut retries = 0;
    for h in handles {
        retries += h
            .join()
            .map_err(|_| CliError::Bench("an exporter panicked".into()))??;
    }
    let accepted = start.elapsed();
    let spool_size = || {
        std::fs::metadata(db.join("otlp-spool.log"))
            .map(|m| m.len())
            .unwrap_or(0)
    };
    // Stored traces' spans leave the spool, so its size is taken while it holds the most.
    let spool_accepted = spool_size();
    let mut conn = Conn::open(&addr)?;
    while stored(&mut conn)? < a.traces as u64 {
        if start.elapsed() > Duration::from_secs(3600) {
            return Err(CliError::Bench(
                "the traces were not all stored within an hour".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let all_stored = start.elapsed();
    // Stop it (Ctrl-C).
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let _ = child.wait();
    let spool = spool_size();

    // The file import of the same spans.
    let fdb = dir.join("file.db");
    let _ = std::fs::remove_dir_all(&fdb);
    let t = Instant::now();
    let out = Command::new(&bin)
        .arg("--db")
        .arg(&fdb)
        .arg("import")
        .arg(&jsonl)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(fail)?;
    let file = t.elapsed();
    if !out.status.success() {
        return Err(CliError::Bench(format!(
            "memtrace import failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let rate = |d: Duration| spans as f64 / d.as_secs_f64();
    println!();
    println!("| side | seconds | spans/s |");
    println!("|---|---:|---:|");
    println!(
        "| receiver: accepted (every request answered 200, spans synced to the spool) | {:.2} | {:.0} |",
        accepted.as_secs_f64(),
        rate(accepted)
    );
    println!(
        "| receiver: stored (every trace assembled and stored; quiet period 0.5 s) | {:.2} | {:.0} |",
        all_stored.as_secs_f64(),
        rate(all_stored)
    );
    println!(
        "| file import of the same spans (`memtrace import`, OTLP/JSON Lines) | {:.2} | {:.0} |",
        file.as_secs_f64(),
        rate(file)
    );
    println!();
    println!(
        "requests retried after 429/503: {retries}; spool {:.1} MiB once every request was answered, {:.1} MiB after the stop",
        spool_accepted as f64 / (1 << 20) as f64,
        spool as f64 / (1 << 20) as f64
    );
    if a.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_hold_every_span_once_in_batches() {
        let a = OtlpBenchArgs {
            traces: 10,
            spans: 7,
            exporters: 2,
            batch: 16,
            memtrace: None,
            dir: None,
        };
        let r = requests(&a);
        let n: usize = r
            .iter()
            .map(|x| x.resource_spans[0].scope_spans[0].spans.len())
            .sum();
        assert_eq!(n, 70);
        assert!(r
            .iter()
            .all(|x| x.resource_spans[0].scope_spans[0].spans.len() <= 16));
    }
}
