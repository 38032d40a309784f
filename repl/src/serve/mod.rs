//! `memtrace serve`: a local web viewer and annotation tool over one
//! database: traces, timelines, failed cases with their verdicts side by
//! side, provenance graphs, a query box, and labels that people append.

mod api;
mod assets;
mod http;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memtrace::Database;

pub use api::Api;
use http::ApiError;

use crate::error::{CliError, Result};

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (`127.0.0.1:7878`; port 0 picks a free one).
    pub addr: String,
    /// Worker threads answering requests.
    pub threads: usize,
    /// A query running longer than this is stopped.
    pub query_timeout: Duration,
    /// Print one line per request on standard error.
    pub log: bool,
}

fn resolve(addr: &str) -> Result<SocketAddr> {
    addr.to_socket_addrs()
        .map_err(|e| {
            CliError::Usage(format!(
                "--addr {addr}: {e} (give HOST:PORT, such as 127.0.0.1:7878)"
            ))
        })?
        .next()
        .ok_or_else(|| CliError::Usage(format!("--addr {addr}: names no address")))
}

/// Whether a request's `Host` header names this machine's loopback (a page
/// on another site that resolves its own name to 127.0.0.1 does not).
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    let name = name.to_ascii_lowercase();
    name == "localhost" || name == "127.0.0.1" || name == "::1"
}

/// Checks what the API cannot see: the Host header (when serving on
/// loopback) and the content type of a POST (a form on another site can
/// only send types that no endpoint takes).
fn guard(req: &tiny_http::Request, loopback: bool) -> Option<ApiError> {
    let header = |name: &'static str| {
        req.headers()
            .iter()
            .find(|h| h.field.equiv(name))
            .map(|h| h.value.as_str().to_string())
    };
    if loopback {
        let host = header("Host").unwrap_or_default();
        if !loopback_host(&host) {
            return Some(ApiError {
                status: 403,
                kind: "forbidden",
                message: format!(
                    "Host {host:?} is not this machine's loopback; the viewer answers only requests for localhost or 127.0.0.1"
                ),
            });
        }
    }
    if req.method() == &tiny_http::Method::Post {
        let ct = header("Content-Type")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let ok = [
            "application/json",
            "application/x-ndjson",
            "application/jsonl",
        ]
        .iter()
        .any(|t| ct.starts_with(t));
        if !ok {
            return Some(ApiError {
                status: 415,
                kind: "unsupported_media_type",
                message: format!(
                    "a POST must send Content-Type: application/json (or application/x-ndjson for JSON Lines), not {ct:?}"
                ),
            });
        }
    }
    None
}

fn respond(api: &Api, mut req: tiny_http::Request, loopback: bool, log: bool) {
    let start = Instant::now();
    let method = req.method().as_str().to_string();
    let url = req.url().to_string();
    let reply = match guard(&req, loopback) {
        Some(e) => e.reply(),
        None => api.handle(&method, &url, req.as_reader()),
    };
    let status = reply.status;
    let body = if method == "HEAD" {
        Vec::new()
    } else {
        reply.body
    };
    let mut resp = tiny_http::Response::from_data(body).with_status_code(status);
    for (k, v) in [
        ("Content-Type", reply.content_type),
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        (
            "Content-Security-Policy",
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
        ),
    ] {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            resp.add_header(h);
        }
    }
    if let Err(e) = req.respond(resp) {
        eprintln!("memtrace serve: {method} {url}: could not send the answer: {e}");
    } else if log {
        eprintln!(
            "{method} {url} {status} {:.1} ms",
            start.elapsed().as_secs_f64() * 1e3
        );
    }
}

/// The file in the database folder that says a server holds it.
const SERVE_FILE: &str = "serve.json";

/// When an error says another process holds the database and that process
/// is `memtrace serve`, how to reach the data through it instead.
pub fn busy_hint(db_path: &Path, err: &CliError) -> Option<String> {
    let CliError::Engine(memtrace::EngineError::Storage(memtrace::StorageError::InUse(_))) = err
    else {
        return None;
    };
    let text = std::fs::read_to_string(db_path.join(SERVE_FILE)).ok()?;
    let info: serde_json::Value = serde_json::from_str(&text).ok()?;
    let url = info.get("url")?.as_str()?;
    let pid = info
        .get("pid")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    Some(format!(
        "hint: memtrace serve (pid {pid}) holds it and answers at {url}; use the viewer, or its API: \
         curl -H 'Content-Type: application/json' --data-binary @trace.json {url}/api/import"
    ))
}

/// Serves the database at `db_path` until Ctrl-C.
pub fn serve(db_path: &Path, opts: &ServeOptions) -> Result<ExitCode> {
    let addr = resolve(&opts.addr)?;
    let db = Database::open_existing(db_path)?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: serving on {addr}, which other machines may reach: anyone who can connect can read every trace and add labels (there is no login); the default, 127.0.0.1, keeps it to this machine"
        );
    }
    let server = tiny_http::Server::http(addr)
        .map_err(|e| CliError::Usage(format!("cannot listen on {addr}: {e}")))?;
    let local = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| CliError::Usage(format!("{addr} is not an IP address")))?;
    let server = Arc::new(server);
    let api = Arc::new(Api::new(
        db,
        db_path.display().to_string(),
        opts.query_timeout,
    ));
    let threads = opts.threads.max(1);
    {
        let server = server.clone();
        ctrlc::set_handler(move || {
            for _ in 0..threads {
                server.unblock();
            }
        })
        .map_err(|e| CliError::Usage(format!("cannot catch Ctrl-C: {e}")))?;
    }
    let serve_file = db_path.join(SERVE_FILE);
    let note = serde_json::json!({"url": format!("http://{local}"), "pid": std::process::id()});
    if let Err(e) = std::fs::write(&serve_file, note.to_string()) {
        eprintln!("warning: cannot write {}: {e}", serve_file.display());
    }
    println!("memtrace serve: listening on http://{local}");
    eprintln!(
        "serving {} to http://{local} with {threads} threads; Ctrl-C stops",
        db_path.display()
    );
    let loopback = addr.ip().is_loopback();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (server, api, log) = (server.clone(), api.clone(), opts.log);
            std::thread::spawn(move || {
                while let Ok(req) = server.recv() {
                    respond(&api, req, loopback, log);
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    let _ = std::fs::remove_file(&serve_file);
    api.db().flush()?;
    eprintln!("memtrace serve: stopped");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests;
