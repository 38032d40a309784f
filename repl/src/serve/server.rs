//! The viewer's HTTP server: hyper on a small tokio runtime.
//!
//! A connection costs a task, not a thread, so clients that stall cannot
//! take the server's threads. Each connection must send its headers, and
//! each next piece of a body, within the idle limit, or it is cut off (a
//! stalled body gets 408). Work that reads the database runs on blocking
//! threads, at most `workers` requests at once; imports have their own
//! places, and every other body (small) is read whole before its request
//! takes a place, so uploads never hold up queries. A request that waits
//! too long for a place gets 503. The page, its files and `/api/health`
//! need no place, so they answer while every place is taken. When a client
//! goes away before its answer, the request's cancellation token fires and
//! a running query stops.

use std::convert::Infallible;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use memtrace::Cancel;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tower_http::timeout::{TimeoutBody, TimeoutError};

use super::api::MAX_SMALL_BODY;
use super::http::{ApiError, Reply};
use super::Api;

/// The server's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Requests that read or query the database at once.
    pub workers: usize,
    /// Imports at once.
    pub imports: usize,
    /// How long a client may send nothing: while sending its headers, within
    /// a body, and between requests on a kept-alive connection.
    pub idle: Duration,
    /// How long a request waits for a free place before it gets 503.
    pub queue_wait: Duration,
    /// Open connections at once; one more is closed as soon as it is taken.
    pub connections: usize,
    /// How long Ctrl-C waits for the answers under way.
    pub drain: Duration,
}

/// What the handlers share.
struct Shared {
    api: Arc<Api>,
    loopback: bool,
    log: bool,
    limits: Limits,
    work: Arc<Semaphore>,
    imports: Arc<Semaphore>,
}

/// Security headers on every answer.
const HEADERS: [(&str, &str); 5] = [
    ("cache-control", "no-store"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    (
        "content-security-policy",
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
    ),
    ("x-frame-options", "DENY"),
];

/// The content types a POST may carry: a form on another site can send
/// none of them without the browser asking first.
const POST_TYPES: [&str; 3] = [
    "application/json",
    "application/x-ndjson",
    "application/jsonl",
];

/// Whether a request's `Host` header names this machine's loopback (a page
/// on another site that resolves its own name to 127.0.0.1 does not).
pub fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    let name = name.to_ascii_lowercase();
    name == "localhost" || name == "127.0.0.1" || name == "::1"
}

/// The media type of a `Content-Type` value: lower case, without its
/// parameters (`application/json; charset=utf-8` is `application/json`).
fn media_type(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Checks what the API cannot see: the Host header (when serving on
/// loopback) and the content type of a POST.
pub fn guard(headers: &HeaderMap, method: &Method, loopback: bool) -> Option<ApiError> {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    // Two Host headers could name two hosts, and a proxy in front may have
    // judged the other one (RFC 9112 asks for 400).
    let hosts = headers.get_all("host").iter().count();
    if hosts > 1 {
        return Some(ApiError::bad(format!(
            "the request has {hosts} Host headers; send one"
        )));
    }
    if loopback {
        let host = header("host").unwrap_or_default();
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
    if method == Method::POST {
        let ct = header("content-type").unwrap_or_default();
        if !POST_TYPES.contains(&media_type(&ct).as_str()) {
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

/// Which place a request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The page, its files, health: answered at once.
    None,
    /// Reads or queries the database.
    Work,
    /// Writes an import.
    Import,
}

fn place(url: &str) -> Place {
    let path = url.split('?').next().unwrap_or("");
    match path.trim_end_matches('/') {
        "/api/import" => Place::Import,
        "/api/health" => Place::None,
        p if p.starts_with("/api/") || p == "/api" => Place::Work,
        _ => Place::None,
    }
}

/// A request body read by a blocking thread, one chunk at a time, as the
/// connection's task receives it.
struct BodyReader {
    chunks: mpsc::Receiver<io::Result<Bytes>>,
    chunk: Bytes,
}

impl Read for BodyReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.chunks.blocking_recv() {
                Some(Ok(c)) => self.chunk = c,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk.advance(n);
        Ok(n)
    }
}

/// Moves a body's chunks to its reader; notes in `stalled` when the
/// client sent nothing for the idle limit.
async fn pump(
    body: TimeoutBody<Incoming>,
    chunks: mpsc::Sender<io::Result<Bytes>>,
    stalled: Arc<AtomicBool>,
    idle: Duration,
) {
    let mut body = std::pin::pin!(body);
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    if !data.is_empty() && chunks.send(Ok(data)).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) => {
                let why = if e.downcast_ref::<TimeoutError>().is_some() {
                    stalled.store(true, Ordering::Relaxed);
                    format!("the client sent nothing for {} s", idle.as_secs_f64())
                } else {
                    e.to_string()
                };
                let _ = chunks.send(Err(io::Error::other(why))).await;
                return;
            }
        }
    }
}

/// Fires a request's token when its answer is dropped before it is ready:
/// the client went away.
struct StopOnDrop {
    cancel: Cancel,
    armed: bool,
    what: Option<String>,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.cancel.cancel();
            if let Some(what) = &self.what {
                eprintln!("{what}: the client went away; its work was stopped");
            }
        }
    }
}

/// Waits up to the queue limit for a place.
async fn take_place(
    shared: &Shared,
    place: Place,
) -> Result<Option<OwnedSemaphorePermit>, ApiError> {
    let (sem, total, what, flag) = match place {
        Place::None => return Ok(None),
        Place::Work => (
            &shared.work,
            shared.limits.workers,
            "requests are reading the database",
            "--threads",
        ),
        Place::Import => (
            &shared.imports,
            shared.limits.imports,
            "imports are running",
            "",
        ),
    };
    match tokio::time::timeout(shared.limits.queue_wait, sem.clone().acquire_owned()).await {
        Ok(Ok(permit)) => Ok(Some(permit)),
        _ => Err(ApiError {
            status: 503,
            kind: "busy",
            message: format!(
                "the viewer is busy: {total} {what} and none finished within {} s; try again{}",
                shared.limits.queue_wait.as_secs_f64(),
                if flag.is_empty() {
                    String::new()
                } else {
                    format!(" (memtrace serve {flag} sets how many run at once)")
                }
            ),
        }),
    }
}

/// Reads a whole body of at most [`MAX_SMALL_BODY`] bytes, giving up when
/// the client sends nothing for `idle`.
async fn small_body(body: Incoming, idle: Duration) -> Result<Bytes, ApiError> {
    let mut body = std::pin::pin!(TimeoutBody::new(idle, body));
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    if (out.len() + data.len()) as u64 > MAX_SMALL_BODY {
                        return Err(ApiError::too_large(MAX_SMALL_BODY));
                    }
                    out.extend_from_slice(&data);
                }
            }
            Err(e) if e.downcast_ref::<TimeoutError>().is_some() => return Err(stalled(idle)),
            Err(e) => return Err(ApiError::bad(format!("reading the request body: {e}"))),
        }
    }
    Ok(Bytes::from(out))
}

/// 408: the client stopped sending its body.
fn stalled(idle: Duration) -> ApiError {
    ApiError {
        status: 408,
        kind: "request_timeout",
        message: format!(
            "the client sent nothing for {} s in the middle of the request body; nothing of it was stored",
            idle.as_secs_f64()
        ),
    }
}

/// Runs the API for one request on a blocking thread. An import's body is
/// streamed to it; any other body is read whole first (it is small), so a
/// client that stalls while sending it holds no place.
async fn work(shared: &Arc<Shared>, method: &str, url: &str, body: Incoming) -> Reply {
    let place = place(url);
    let idle = shared.limits.idle;
    let stalled_body = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel(8);
    let mut pumping = None;
    let mut reader = BodyReader {
        chunks: rx,
        chunk: Bytes::new(),
    };
    if place == Place::Import {
        pumping = Some(tokio::spawn(pump(
            TimeoutBody::new(idle, body),
            tx,
            stalled_body.clone(),
            idle,
        )));
    } else {
        match small_body(body, idle).await {
            Ok(bytes) => reader.chunk = bytes,
            Err(e) => return e.reply(),
        }
        drop(tx);
    }
    let permit = match take_place(shared, place).await {
        Ok(p) => p,
        Err(e) => return e.reply(),
    };
    let cancel = Cancel::new();
    let mut stop = StopOnDrop {
        cancel: cancel.clone(),
        armed: true,
        what: shared.log.then(|| format!("{method} {url}")),
    };
    let (api, m, u) = (shared.api.clone(), method.to_string(), url.to_string());
    let job = tokio::task::spawn_blocking(move || {
        // The place is given back when the work ends, not when its client
        // leaves: a stopped query still runs until it sees its token.
        let _permit = permit;
        api.handle_until(&m, &u, &mut reader, &cancel)
    });
    let reply = job.await;
    stop.armed = false;
    if let Some(p) = pumping {
        p.abort();
    }
    if stalled_body.load(Ordering::Relaxed) {
        return stalled(idle).reply();
    }
    reply.unwrap_or_else(|e| {
        ApiError {
            status: 500,
            kind: "internal",
            message: format!("the request's work failed: {e}"),
        }
        .reply()
    })
}

/// Answers one request.
async fn answer(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let start = Instant::now();
    let method = req.method().clone();
    let url = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let reply = match guard(req.headers(), &method, shared.loopback) {
        Some(e) => e.reply(),
        None => work(&shared, method.as_str(), &url, req.into_body()).await,
    };
    if shared.log {
        eprintln!(
            "{method} {url} {} {:.1} ms",
            reply.status,
            start.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(response(reply, method == Method::HEAD))
}

/// A reply as an HTTP response with the security headers.
fn response(reply: Reply, head: bool) -> Response<Full<Bytes>> {
    let body = if head { Vec::new() } else { reply.body };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert("content-type", HeaderValue::from_static(reply.content_type));
    for (k, v) in HEADERS {
        headers.insert(k, HeaderValue::from_static(v));
    }
    if reply.status == 503 {
        headers.insert("retry-after", HeaderValue::from_static("1"));
    }
    resp
}

/// Resolves on Ctrl-C, or on SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// A bound listener and what it serves.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Binds `addr` (inside a tokio runtime).
    pub async fn bind(
        addr: SocketAddr,
        api: Arc<Api>,
        limits: Limits,
        log: bool,
    ) -> io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        let shared = Arc::new(Shared {
            api,
            loopback: addr.ip().is_loopback(),
            log,
            work: Arc::new(Semaphore::new(limits.workers.max(1))),
            imports: Arc::new(Semaphore::new(limits.imports.max(1))),
            limits,
        });
        Ok(Server { listener, shared })
    }

    /// The address it listens on (the port chosen, for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until Ctrl-C or SIGTERM, then lets the answers under way
    /// finish (up to the drain limit).
    pub async fn run(self) {
        let Server { listener, shared } = self;
        let graceful = GracefulShutdown::new();
        let connections = Arc::new(Semaphore::new(shared.limits.connections.max(1)));
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(shared.limits.idle)
            .keep_alive(true);
        let stop = stop_signal();
        tokio::pin!(stop);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            // Out of descriptors, or a connection reset while
                            // queued: wait a little rather than spin.
                            eprintln!("memtrace serve: accepting a connection: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let Ok(permit) = connections.clone().try_acquire_owned() else {
                        if shared.log {
                            eprintln!("{peer}: refused, {} connections are open", shared.limits.connections);
                        }
                        continue;
                    };
                    let handler = shared.clone();
                    let service = service_fn(move |req| answer(handler.clone(), req));
                    let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
                    let log = shared.log;
                    tokio::spawn(async move {
                        if let Err(e) = conn.await {
                            if log {
                                eprintln!("{peer}: connection closed: {e}");
                            }
                        }
                        drop(permit);
                    });
                }
                _ = &mut stop => break,
            }
        }
        drop(listener);
        tokio::select! {
            _ = graceful.shutdown() => {}
            _ = tokio::time::sleep(shared.limits.drain) => {
                eprintln!(
                    "memtrace serve: answers still under way after {} s are dropped",
                    shared.limits.drain.as_secs_f64()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_needs_one_of_the_json_media_types_exactly() {
        let post = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert("host", HeaderValue::from_static("127.0.0.1:7878"));
            if !ct.is_empty() {
                h.insert("content-type", HeaderValue::from_str(ct).unwrap());
            }
            guard(&h, &Method::POST, true).map(|e| e.status)
        };
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/x-ndjson",
            "application/jsonl",
        ] {
            assert_eq!(post(ok), None, "{ok}");
        }
        for bad in [
            "application/jsonx",
            "application/json-patch+json",
            "application/jsonlines",
            "text/plain",
            "multipart/form-data",
            "application/x-www-form-urlencoded",
            "",
        ] {
            assert_eq!(post(bad), Some(415), "{bad}");
        }
    }

    #[test]
    fn two_host_headers_are_refused_whichever_comes_first() {
        for (first, second) in [
            ("127.0.0.1:7878", "evil.example"),
            ("evil.example", "localhost"),
        ] {
            let mut h = HeaderMap::new();
            h.append("host", HeaderValue::from_static(first));
            h.append("host", HeaderValue::from_static(second));
            let e = guard(&h, &Method::GET, true).expect("refused");
            assert_eq!(e.status, 400, "{first} then {second}");
            assert!(e.message.contains("2 Host headers"), "{}", e.message);
            assert_eq!(guard(&h, &Method::GET, false).map(|e| e.status), Some(400));
        }
    }

    #[test]
    fn requests_are_placed_by_what_they_touch() {
        assert_eq!(place("/"), Place::None);
        assert_eq!(place("/app.js"), Place::None);
        assert_eq!(place("/api/health"), Place::None);
        assert_eq!(place("/api/health?x=1"), Place::None);
        assert_eq!(place("/api/query"), Place::Work);
        assert_eq!(place("/api/traces/%231/graph?start=a"), Place::Work);
        assert_eq!(place("/api/import?format=jsonl"), Place::Import);
        assert_eq!(place("/api/import/"), Place::Import);
    }

    #[test]
    fn the_body_reader_joins_chunks_and_passes_errors_on() {
        let (tx, rx) = mpsc::channel(4);
        tx.try_send(Ok(Bytes::from_static(b"ab"))).unwrap();
        tx.try_send(Ok(Bytes::from_static(b"cde"))).unwrap();
        tx.try_send(Err(io::Error::other("gone"))).unwrap();
        let mut r = BodyReader {
            chunks: rx,
            chunk: Bytes::new(),
        };
        let mut buf = [0u8; 4];
        assert_eq!(r.read(&mut buf).unwrap(), 2);
        assert_eq!(r.read(&mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"cde");
        assert_eq!(r.read(&mut buf).unwrap_err().to_string(), "gone");
        drop(tx);
        let (tx, rx) = mpsc::channel::<io::Result<Bytes>>(1);
        drop(tx);
        let mut r = BodyReader {
            chunks: rx,
            chunk: Bytes::new(),
        };
        assert_eq!(
            r.read(&mut buf).unwrap(),
            0,
            "a finished body reads as its end"
        );
    }
}
