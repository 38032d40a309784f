//! A scripted OpenAI-compatible server on 127.0.0.1, for tests and
//! benchmarks: every request it receives is recorded and answered by a
//! script (a good completion, an HTTP error, a malformed body, a slow
//! answer, or a dropped connection). Plain threads and std only.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::chat::estimate_tokens;

/// The longest request head (request line and headers) read.
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body read.
const MAX_BODY: usize = 256 * 1024 * 1024;
/// How long a connection may stay silent before it is closed.
const IDLE: Duration = Duration::from_secs(10);
/// How often blocked reads and delays look at the stop flag.
const TICK: Duration = Duration::from_millis(10);

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The headers in order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body (chunked bodies decoded), as text.
    pub body: String,
    /// The body as JSON, when it is.
    pub json: Option<Value>,
}

impl Recorded {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with this JSON (`application/json`).
    Json(Value),
    /// Any status, with extra headers and a body.
    Status {
        /// The HTTP status.
        status: u16,
        /// Extra headers (`Content-Length` and `Connection` are the
        /// server's own and are ignored here).
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// 200 with exactly this body (e.g. malformed JSON).
    Raw(String),
    /// Sleep, then answer (the client may have timed out by then).
    Delay(Duration, Box<Reply>),
    /// Read the request, then close without answering.
    Drop,
}

/// The server's script: called once per request, in the order received.
pub type Script = Box<dyn FnMut(&Recorded) -> Reply + Send>;

struct Shared {
    script: Mutex<Script>,
    log: Mutex<Vec<Recorded>>,
    stop: AtomicBool,
}

/// A local HTTP/1.1 server answering by a [`Script`]. Dropping it stops
/// it, and waits for the connections in progress (delays are cut short).
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and answers every request by the
    /// script, in a background thread (one thread per connection, so a
    /// [`Reply::Delay`] does not hold up others; the script runs behind a
    /// mutex, one request at a time).
    pub fn start(script: Script) -> io::Result<ScriptedServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            log: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let accept = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("scripted-accept".into())
                .spawn(move || accept_loop(&listener, &shared))?
        };
        Ok(ScriptedServer {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:<port>/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.log).clone()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop; if that fails, leave the thread be rather
        // than wait for it forever.
        let woken = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok();
        if let Some(handle) = self.accept.take() {
            if woken {
                let _ = handle.join();
            }
        }
    }
}

/// A mutex's guard, poisoned or not (a script that panicked costs its own
/// request only).
fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut connections: Vec<JoinHandle<()>> = Vec::new();
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else {
            thread::sleep(TICK);
            continue;
        };
        connections.retain(|h| !h.is_finished());
        let shared = Arc::clone(shared);
        // If no thread can start, the stream is dropped: the client sees
        // a closed connection.
        if let Ok(h) = thread::Builder::new()
            .name("scripted-conn".into())
            .spawn(move || serve(stream, &shared))
        {
            connections.push(h);
        }
    }
    for h in connections {
        let _ = h.join();
    }
}

/// Answers the one request of a connection, then closes it.
fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(TICK));
    let _ = stream.set_nodelay(true);
    let mut conn = Conn {
        stream,
        buf: Vec::new(),
        pos: 0,
        stop: &shared.stop,
    };
    let request = match read_request(&mut conn) {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            let _ = write_response(
                &mut conn.stream,
                400,
                &[("content-type", "text/plain")],
                &e.to_string(),
            );
            let _ = conn.stream.shutdown(Shutdown::Write);
            return;
        }
        Err(_) => return,
    };
    let reply = {
        let mut script = lock(&shared.script);
        lock(&shared.log).push(request.clone());
        (*script)(&request)
    };
    let mut reply = reply;
    loop {
        match reply {
            Reply::Delay(wait, next) => {
                if !sleep_unless_stopped(wait, &shared.stop) {
                    return;
                }
                reply = *next;
            }
            Reply::Json(v) => {
                let _ = write_response(
                    &mut conn.stream,
                    200,
                    &[("content-type", "application/json")],
                    &v.to_string(),
                );
                break;
            }
            Reply::Raw(body) => {
                let _ = write_response(
                    &mut conn.stream,
                    200,
                    &[("content-type", "application/json")],
                    &body,
                );
                break;
            }
            Reply::Status {
                status,
                headers,
                body,
            } => {
                let mut all: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                if !headers
                    .iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                {
                    let kind = if body.trim_start().starts_with('{') {
                        "application/json"
                    } else {
                        "text/plain"
                    };
                    all.push(("content-type", kind));
                }
                let _ = write_response(&mut conn.stream, status, &all, &body);
                break;
            }
            Reply::Drop => break,
        }
    }
    let _ = conn.stream.shutdown(Shutdown::Write);
}

/// Sleeps `wait`, or less when the server stops; whether it slept it all.
fn sleep_unless_stopped(wait: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + wait;
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        thread::sleep(TICK.min(end - now));
    }
}

fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
) -> io::Result<()> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("connection") {
            continue;
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    out.push_str(body);
    stream.write_all(out.as_bytes())?;
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// A connection being read: bytes buffered, and a cursor.
struct Conn<'a> {
    stream: TcpStream,
    buf: Vec<u8>,
    pos: usize,
    stop: &'a AtomicBool,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

impl Conn<'_> {
    /// Reads more bytes; false at the end of the stream.
    fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 16 * 1024];
        let deadline = Instant::now() + IDLE;
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "stopping"));
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    if Instant::now() >= deadline {
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "idle"));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The next line without its line end; `None` at the end of the
    /// stream before any byte of it.
    fn line(&mut self) -> io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = &self.buf[self.pos..self.pos + i];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let text = String::from_utf8_lossy(line).into_owned();
                self.pos += i + 1;
                return Ok(Some(text));
            }
            if self.buf.len() - self.pos > MAX_HEAD {
                return Err(bad("request head too long"));
            }
            if !self.fill()? {
                return if self.pos == self.buf.len() {
                    Ok(None)
                } else {
                    Err(bad("request cut short"))
                };
            }
        }
    }

    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() - self.pos < n {
            if !self.fill()? {
                return Err(bad("request body cut short"));
            }
        }
        let out = self.buf[self.pos..self.pos + n].to_vec();
        self.pos += n;
        Ok(out)
    }
}

fn read_request(conn: &mut Conn<'_>) -> io::Result<Option<Recorded>> {
    let Some(first) = conn.line()? else {
        return Ok(None);
    };
    let mut parts = first.split_whitespace();
    let (Some(method), Some(path), Some(_version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("bad request line"));
    };
    let (method, path) = (method.to_string(), path.to_string());
    let mut headers = Vec::new();
    loop {
        let line = conn.line()?.ok_or_else(|| bad("request head cut short"))?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').ok_or_else(|| bad("bad header line"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        if headers.len() > 500 {
            return Err(bad("too many headers"));
        }
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    if get("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        conn.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let chunked =
        get("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked(conn)?
    } else if let Some(len) = get("content-length") {
        let len: usize = len.trim().parse().map_err(|_| bad("bad content-length"))?;
        if len > MAX_BODY {
            return Err(bad("request body too large"));
        }
        conn.take(len)?
    } else {
        Vec::new()
    };
    let body = String::from_utf8_lossy(&body).into_owned();
    let json = serde_json::from_str(&body).ok();
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
        json,
    }))
}

fn read_chunked(conn: &mut Conn<'_>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = conn.line()?.ok_or_else(|| bad("chunked body cut short"))?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                match conn.line()? {
                    Some(l) if !l.is_empty() => {}
                    _ => return Ok(body),
                }
            }
        }
        if body.len().saturating_add(size) > MAX_BODY {
            return Err(bad("request body too large"));
        }
        body.extend(conn.take(size)?);
        conn.line()?; // the chunk's line end
    }
}

/// The text of a request's messages: their contents and the arguments of
/// their tool calls, concatenated.
fn messages_text(request: &Recorded) -> String {
    let mut text = String::new();
    let messages = request
        .json
        .as_ref()
        .and_then(|j| j.get("messages"))
        .and_then(Value::as_array);
    for m in messages.into_iter().flatten() {
        match m.get("content") {
            Some(Value::String(s)) => text.push_str(s),
            Some(Value::Array(parts)) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        text.push_str(t);
                    }
                }
            }
            _ => {}
        }
        let calls = m.get("tool_calls").and_then(Value::as_array);
        for c in calls.into_iter().flatten() {
            match c.get("function").and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => text.push_str(s),
                None | Some(Value::Null) => {}
                Some(other) => text.push_str(&other.to_string()),
            }
        }
    }
    text
}

/// The estimated prompt tokens of a request: [`estimate_tokens`] of its
/// messages' text (contents and tool call arguments, concatenated); 0 when
/// it has no JSON body.
pub fn prompt_tokens(request: &Recorded) -> u64 {
    estimate_tokens(&messages_text(request))
}

fn completion(request: &Recorded, message: Value, finish: &str, completion_tokens: u64) -> Value {
    let prompt = prompt_tokens(request);
    let model = request
        .json
        .as_ref()
        .and_then(|j| j.get("model"))
        .cloned()
        .unwrap_or_else(|| json!("scripted"));
    json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    })
}

/// A chat completion whose message calls one tool. The arguments go as
/// JSON text; a JSON string is sent as it is (so a test can send arguments
/// that do not parse). Usage: prompt = [`prompt_tokens`], completion =
/// the estimate of the arguments' text.
pub fn tool_call(request: &Recorded, id: &str, name: &str, arguments: Value) -> Value {
    let arguments = match arguments {
        Value::String(s) => s,
        other => other.to_string(),
    };
    let tokens = estimate_tokens(&arguments);
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{"id": id, "type": "function",
                        "function": {"name": name, "arguments": arguments}}],
    });
    completion(request, message, "tool_calls", tokens)
}

/// A chat completion whose message is text; usage estimated as for
/// [`tool_call`], the completion from `content`.
pub fn text(request: &Recorded, content: &str) -> Value {
    let message = json!({"role": "assistant", "content": content});
    completion(request, message, "stop", estimate_tokens(content))
}

/// An embeddings answer for a request's `input` (a string or a list of
/// strings): each text becomes a bag of its lower-cased words hashed into
/// `dims` dimensions, scaled to length 1, so that texts sharing words point
/// the same way. A stand-in for an embedding model, deterministic and local.
pub fn embeddings(request: &Recorded, dims: usize) -> Value {
    let inputs: Vec<String> = match request.json.as_ref().and_then(|j| j.get("input")) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let dims = dims.max(1);
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut v = vec![0f64; dims];
            for word in text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.len() > 2)
            {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                for b in word.to_lowercase().bytes() {
                    h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
                }
                v[(h % dims as u64) as usize] += 1.0;
            }
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-9);
            json!({"object": "embedding", "index": i,
                   "embedding": v.iter().map(|x| x / norm).collect::<Vec<f64>>()})
        })
        .collect();
    let tokens: u64 = inputs.iter().map(|t| estimate_tokens(t)).sum();
    json!({
        "object": "list",
        "data": data,
        "model": request.json.as_ref().and_then(|j| j.get("model")).cloned().unwrap_or(Value::Null),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(server: &ScriptedServer, raw: &str) -> String {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.write_all(raw.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn a_request_is_recorded_and_answered_by_the_script() {
        let server = ScriptedServer::start(Box::new(|r| Reply::Json(text(r, "hello")))).unwrap();
        let body = r#"{"model":"m","messages":[{"role":"user","content":"12345678"}]}"#;
        let answer = post(
            &server,
            &format!(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Test: Yes\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        let json: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(json["choices"][0]["message"]["content"], "hello");
        assert_eq!(json["usage"]["prompt_tokens"], 2);
        assert_eq!(json["usage"]["completion_tokens"], 2);
        assert_eq!(json["model"], "m");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].method, "POST");
        assert_eq!(reqs[0].path, "/v1/chat/completions");
        assert_eq!(reqs[0].header("x-test"), Some("Yes"));
        assert_eq!(reqs[0].header("X-TEST"), Some("Yes"));
        assert_eq!(prompt_tokens(&reqs[0]), 2);
    }

    #[test]
    fn a_chunked_body_is_decoded() {
        let server = ScriptedServer::start(Box::new(|_| Reply::Raw("ok".into()))).unwrap();
        let answer = post(
            &server,
            "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
             5;ext=1\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\nX-Trailer: t\r\n\r\n",
        );
        assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
        let r = &server.requests()[0];
        assert_eq!(r.body, "{\"a\": 1}");
        assert_eq!(r.json, Some(json!({"a": 1})));
    }

    #[test]
    fn a_bad_request_gets_400_and_is_not_recorded() {
        let server = ScriptedServer::start(Box::new(|_| Reply::Raw("ok".into()))).unwrap();
        let answer = post(&server, "nonsense\r\n\r\n");
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(server.requests().is_empty());
    }

    #[test]
    fn stopping_cuts_a_delay_short() {
        let server = ScriptedServer::start(Box::new(|_| {
            Reply::Delay(Duration::from_secs(30), Box::new(Reply::Raw("late".into())))
        }))
        .unwrap();
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        while server.requests().is_empty() {
            thread::sleep(TICK);
        }
        let t = Instant::now();
        drop(server);
        assert!(t.elapsed() < Duration::from_secs(2));
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        assert_eq!(out, "");
    }

    #[test]
    fn the_helpers_count_contents_and_arguments() {
        let request = Recorded {
            method: "POST".into(),
            path: "/".into(),
            headers: Vec::new(),
            body: String::new(),
            json: Some(json!({"messages": [
                {"role": "user", "content": "abcd"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"function": {"name": "f", "arguments": "{\"x\":1}"}}]},
            ]})),
        };
        assert_eq!(prompt_tokens(&request), 3); // 4 + 7 bytes
        let v = tool_call(&request, "c1", "finish", json!({"op_id": "op-3"}));
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            r#"{"op_id":"op-3"}"#
        );
        assert_eq!(v["usage"]["completion_tokens"], 4);
        assert_eq!(v["usage"]["prompt_tokens"], 3);
        let none = Recorded {
            json: None,
            ..request
        };
        assert_eq!(prompt_tokens(&none), 0);
    }
}
