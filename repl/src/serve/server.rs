//! The viewer's HTTP server: hyper on a small tokio runtime.
//!
//! A connection costs a task, not a thread, so clients that stall cannot
//! take the server's threads. Each connection must send its headers within
//! the header limit, and each next piece of a body within the idle limit
//! (a small body whole within it), or it is cut off (a stalled body gets
//! 408). Work that reads the database runs on blocking threads, at most
//! `workers` requests at once; imports have their own places. Every body
//! is received before its request takes a place (an import's into a file),
//! so uploads never hold up queries. A request that waits too long for a
//! place gets 503. The page, its files and `/api/health` need no place, so
//! they answer while every place is taken. When a client goes away before
//! its answer, the request's cancellation token fires and a running query
//! stops.
//!
//! At most `connections` are open; when one more comes, the open
//! connection that is neither worked on nor quick is closed for it: one
//! idle between requests, or sending its headers or body slowest (bytes a
//! second since its request began). Clients that stall are shed first, so
//! they cannot lock out those that behave, `/api/health` included. Only
//! when every connection is being worked on does a new one get 503, after
//! a few kept for it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use memtrace::Cancel;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tower_http::timeout::{TimeoutBody, TimeoutError};

use super::api::{upload_error, Upload, MAX_SMALL_BODY};
use super::http::{ApiError, Reply};
use super::otlp::{self, Endpoint};
use super::Api;

/// The server's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Requests that read or query the database at once.
    pub workers: usize,
    /// Imports at once.
    pub imports: usize,
    /// How long a client may take to send a request's headers, counted
    /// from when the connection waits for them (so also between requests
    /// on a kept-alive connection).
    pub header: Duration,
    /// How long a client may send nothing within a body; a small body must
    /// arrive whole within it.
    pub idle: Duration,
    /// How long a request waits for a free place before it gets 503.
    pub queue_wait: Duration,
    /// Open connections at once; past it, the slowest is shed (see the
    /// module's comment).
    pub connections: usize,
    /// Connections kept beyond `connections` for when every open one is
    /// being worked on (a health probe); past them a new one gets 503.
    pub reserve: usize,
    /// How long Ctrl-C waits for the answers under way.
    pub drain: Duration,
}

/// What the handlers share.
struct Shared {
    api: Arc<Api>,
    /// The OTLP/HTTP endpoint, when it receives.
    otlp: Option<Arc<Endpoint>>,
    /// Whether the viewer and its API answer (not under `memtrace collect`).
    viewer: bool,
    loopback: bool,
    log: bool,
    limits: Limits,
    work: Arc<Semaphore>,
    imports: Arc<Semaphore>,
    conns: Conns,
    /// When the server started: connections' times are kept as
    /// milliseconds since.
    epoch: Instant,
}

/// A connection's progress, by which the slowest is chosen to be shed.
struct Conn {
    /// Bytes received so far.
    bytes: AtomicU64,
    /// Bytes received, and the time, when its current request began (its
    /// first byte was awaited): the rate since is how fast it sends.
    mark_bytes: AtomicU64,
    mark_ms: AtomicU64,
    /// Requests of it being worked on: received, waiting for a place or
    /// running (never shed).
    busy: AtomicUsize,
    /// Chosen to be shed (once).
    shed: AtomicBool,
    /// Tells its task to close it.
    close: Notify,
}

/// A connection is not shed in its first moments, before it could send
/// anything.
const GRACE: Duration = Duration::from_millis(250);

impl Conn {
    fn new(now_ms: u64) -> Conn {
        Conn {
            bytes: AtomicU64::new(0),
            mark_bytes: AtomicU64::new(0),
            mark_ms: AtomicU64::new(now_ms),
            busy: AtomicUsize::new(0),
            shed: AtomicBool::new(false),
            close: Notify::new(),
        }
    }

    /// A new request is awaited from now.
    fn restart(&self, now_ms: u64) {
        self.mark_bytes
            .store(self.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        self.mark_ms.store(now_ms, Ordering::Relaxed);
    }

    /// Bytes a second of its current request, when it may be shed (not
    /// worked on, past its first moments).
    fn rate(&self, now_ms: u64) -> Option<f64> {
        if self.busy.load(Ordering::Relaxed) > 0 || self.shed.load(Ordering::Relaxed) {
            return None;
        }
        let age = now_ms.saturating_sub(self.mark_ms.load(Ordering::Relaxed));
        if age < GRACE.as_millis() as u64 {
            return None;
        }
        let sent = self.bytes.load(Ordering::Relaxed) - self.mark_bytes.load(Ordering::Relaxed);
        Some(sent as f64 * 1000.0 / age as f64)
    }
}

/// The open connections.
#[derive(Default)]
struct Conns {
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
}

impl Conns {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection to shed for a new one: the slowest that may be shed
    /// (an idle one sends nothing: the slowest of all), marked shed.
    fn shed_slowest(&self, now_ms: u64) -> Option<Arc<Conn>> {
        let open = self.lock();
        let slowest = open
            .values()
            .filter_map(|c| c.rate(now_ms).map(|r| (r, c)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, c)| c.clone())?;
        slowest.shed.store(true, Ordering::Relaxed);
        Some(slowest)
    }

    /// Open connections not yet shed.
    fn counted(&self) -> usize {
        self.lock()
            .values()
            .filter(|c| !c.shed.load(Ordering::Relaxed))
            .count()
    }
}

/// A connection's socket, counting what it receives.
struct Counted {
    stream: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let got = buf.filled().len() - before;
        if got > 0 {
            self.conn.bytes.fetch_add(got as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Marks a connection worked on while it lives; after, a new request is
/// awaited.
struct Busy<'a> {
    conn: &'a Conn,
    epoch: Instant,
}

impl<'a> Busy<'a> {
    fn start(conn: &'a Conn, epoch: Instant) -> Busy<'a> {
        conn.busy.fetch_add(1, Ordering::Relaxed);
        Busy { conn, epoch }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.conn.restart(self.epoch.elapsed().as_millis() as u64);
        self.conn.busy.fetch_sub(1, Ordering::Relaxed);
    }
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
/// it has not all arrived within `idle`.
async fn small_body(body: Incoming, idle: Duration) -> Result<Bytes, ApiError> {
    let read = async {
        let mut body = std::pin::pin!(body);
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
                Err(e) => return Err(ApiError::bad(format!("reading the request body: {e}"))),
            }
        }
        Ok(Bytes::from(out))
    };
    tokio::time::timeout(idle, read)
        .await
        .unwrap_or_else(|_| Err(stalled(idle)))
}

/// Receives an import's body into a file as it arrives, giving up when the
/// client sends nothing for `idle` (408) or sends more than the limit (413).
async fn upload(api: &Api, body: Incoming, idle: Duration) -> Result<Upload, ApiError> {
    let uploads = api.uploads();
    let (mut upload, file) = uploads.create()?;
    let mut file = tokio::fs::File::from_std(file);
    let mut body = std::pin::pin!(TimeoutBody::new(idle, body));
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    upload.bytes += data.len() as u64;
                    uploads.check(upload.bytes)?;
                    file.write_all(&data)
                        .await
                        .map_err(|e| upload_error(&upload.path, &e))?;
                }
            }
            Err(e) if e.downcast_ref::<TimeoutError>().is_some() => return Err(stalled(idle)),
            Err(e) => return Err(ApiError::bad(format!("reading the request body: {e}"))),
        }
    }
    file.flush()
        .await
        .map_err(|e| upload_error(&upload.path, &e))?;
    Ok(upload)
}

/// The `Content-Length` a request declares, when it does.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

/// 408: the client stopped sending its body (or sent it too slowly).
fn stalled(idle: Duration) -> ApiError {
    ApiError {
        status: 408,
        kind: "request_timeout",
        message: format!(
            "the request body did not arrive in time (nothing for {} s, or a small body not whole within it); nothing of it was stored",
            idle.as_secs_f64()
        ),
    }
}

/// Runs the API for one request on a blocking thread. Its body is
/// received first, before the request takes a place and before the
/// connection counts as worked on: an import's into a file, any other
/// (small) whole into memory.
async fn work(
    shared: &Arc<Shared>,
    conn: &Conn,
    method: &str,
    url: &str,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    let place = place(url);
    let idle = shared.limits.idle;
    let mut small = Bytes::new();
    let mut upload = None;
    if place == Place::Import && method == "POST" {
        if let Some(n) = declared_length(headers) {
            if let Err(e) = shared.api.uploads().check(n) {
                return e.reply();
            }
        }
        match self::upload(&shared.api, body, idle).await {
            Ok(u) => upload = Some(u),
            Err(e) => return e.reply(),
        }
    } else {
        match small_body(body, idle).await {
            Ok(bytes) => small = bytes,
            Err(e) => return e.reply(),
        }
    }
    let _busy = Busy::start(conn, shared.epoch);
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
        match &upload {
            Some(upload) => api.import_upload(&u, upload),
            None => api.handle_until(&m, &u, &mut &small[..], &cancel),
        }
    });
    let reply = job.await;
    stop.armed = false;
    reply.unwrap_or_else(|e| {
        ApiError {
            status: 500,
            kind: "internal",
            message: format!("the request's work failed: {e}"),
        }
        .reply()
    })
}

/// Answers one request of connection `conn`.
async fn answer(
    shared: Arc<Shared>,
    conn: Arc<Conn>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let start = Instant::now();
    let method = req.method().clone();
    let url = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let path = req.uri().path().trim_end_matches('/').to_string();
    let (parts, body) = req.into_parts();
    if path == otlp::PATH {
        if let Some(endpoint) = &shared.otlp {
            let _busy = Busy::start(&conn, shared.epoch);
            // Only the Host check: the endpoint checks its own content types.
            let resp = match guard(&parts.headers, &Method::GET, shared.loopback) {
                Some(e) => response(e.reply(), false),
                None => endpoint.answer(&parts.method, &parts.headers, body).await,
            };
            if shared.log {
                eprintln!(
                    "{method} {url} {} {:.1} ms",
                    resp.status().as_u16(),
                    start.elapsed().as_secs_f64() * 1e3
                );
            }
            return Ok(resp);
        }
    }
    let viewer_path = shared.viewer || path == "/api/health";
    let reply = match guard(&parts.headers, &method, shared.loopback) {
        Some(e) => {
            let _busy = Busy::start(&conn, shared.epoch);
            e.reply()
        }
        None if !viewer_path => {
            let _busy = Busy::start(&conn, shared.epoch);
            ApiError::not_found(format!(
                "memtrace collect only receives OpenTelemetry traces: POST them to {} (memtrace serve has the viewer)",
                otlp::PATH
            ))
            .reply()
        }
        None => work(&shared, &conn, method.as_str(), &url, &parts.headers, body).await,
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
        otlp: Option<Arc<Endpoint>>,
        viewer: bool,
    ) -> io::Result<Server> {
        let listener = TcpListener::bind(addr).await?;
        let shared = Arc::new(Shared {
            api,
            otlp,
            viewer,
            loopback: addr.ip().is_loopback(),
            log,
            work: Arc::new(Semaphore::new(limits.workers.max(1))),
            imports: Arc::new(Semaphore::new(limits.imports.max(1))),
            limits,
            conns: Conns::default(),
            epoch: Instant::now(),
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
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(shared.limits.header)
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
                    let now = shared.epoch.elapsed().as_millis() as u64;
                    if !make_room(&shared, now, peer) {
                        tokio::spawn(refuse(stream, shared.limits.connections));
                        continue;
                    }
                    let id = shared.conns.next.fetch_add(1, Ordering::Relaxed);
                    let conn = Arc::new(Conn::new(now));
                    shared.conns.lock().insert(id, conn.clone());
                    let handler = shared.clone();
                    let mine = conn.clone();
                    let service = service_fn(move |req| answer(handler.clone(), mine.clone(), req));
                    let io = Counted { stream, conn: conn.clone() };
                    let served = graceful.watch(builder.serve_connection(TokioIo::new(io), service));
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        tokio::select! {
                            done = served => {
                                if let Err(e) = done {
                                    if shared.log {
                                        eprintln!("{peer}: connection closed: {e}");
                                    }
                                }
                            }
                            _ = conn.close.notified() => {
                                if shared.log {
                                    eprintln!("{peer}: closed for a new connection (the slowest of {} open)", shared.limits.connections);
                                }
                            }
                        }
                        shared.conns.lock().remove(&id);
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

/// Whether a new connection may be served: under the limit, or once the
/// slowest connection that may be shed is closed for it, or within the
/// connections kept for when none may.
fn make_room(shared: &Shared, now_ms: u64, peer: SocketAddr) -> bool {
    let limits = &shared.limits;
    let open = shared.conns.counted();
    if open < limits.connections {
        return true;
    }
    if let Some(slowest) = shared.conns.shed_slowest(now_ms) {
        slowest.close.notify_one();
        return true;
    }
    if open < limits.connections + limits.reserve {
        return true;
    }
    if shared.log {
        eprintln!(
            "{peer}: refused with 503, {open} connections are open and all are being answered"
        );
    }
    false
}

/// Answers 503 on a connection that is not served, and closes it.
async fn refuse(mut stream: TcpStream, limit: usize) {
    let body = format!(
        "{{\"error\":\"busy\",\"message\":\"the viewer has {limit} connections open and answers each of them; try again\"}}"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let answered = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await?;
        // What the client sent is read and dropped, so that closing does
        // not reset the connection before it reads the answer.
        let mut sink = [0u8; 4096];
        while tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answered).await;
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
    fn the_slowest_connection_not_worked_on_is_shed_first() {
        let conns = Conns::default();
        let add = |bytes: u64, since: u64, busy: usize| {
            let c = Arc::new(Conn::new(since));
            c.bytes.store(bytes, Ordering::Relaxed);
            c.busy.store(busy, Ordering::Relaxed);
            let id = conns.next.fetch_add(1, Ordering::Relaxed);
            conns.lock().insert(id, c.clone());
            c
        };
        let now = 10_000;
        let worked_on = add(0, 0, 1);
        let fast = add(5_000, 9_000, 0);
        let trickling = add(10, 0, 0);
        let idle = add(0, 5_000, 0);
        let new = add(0, now - 100, 0);
        assert!(Arc::ptr_eq(&conns.shed_slowest(now).unwrap(), &idle));
        assert!(Arc::ptr_eq(&conns.shed_slowest(now).unwrap(), &trickling));
        assert!(Arc::ptr_eq(&conns.shed_slowest(now).unwrap(), &fast));
        // Neither one worked on nor one in its first moments is shed.
        assert!(conns.shed_slowest(now).is_none());
        assert_eq!(conns.counted(), 2);
        assert_eq!(worked_on.busy.load(Ordering::Relaxed), 1);
        // A connection whose request is answered is measured from then on.
        new.restart(now);
        assert!(conns.shed_slowest(now + GRACE.as_millis() as u64).is_some());
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
}
