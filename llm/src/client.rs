//! The client: sends chat completions to the endpoint pool, round-robin,
//! with a limit on requests in flight, retries with exponential backoff,
//! and the fall-back from native tool calling to the text protocol.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::chat::{excerpt, parse_response, request_body, ChatRequest, ChatResponse};
use crate::config::{Config, Endpoint, Secret, ToolMode};
use crate::error::{LlmError, Result};

/// How often a cancellation flag is polled while waiting.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// A client for an OpenAI-compatible chat-completions API, shared by
/// reference between tasks.
pub struct Client {
    http: reqwest::Client,
    config: Config,
    next: AtomicUsize,
    permits: Semaphore,
    text_mode: AtomicBool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.config)
            .field("native_tools", &self.native_tools())
            .finish_non_exhaustive()
    }
}

/// One answered request.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The answer, read.
    pub response: ChatResponse,
    /// The response body as received (what a cache stores).
    pub raw: String,
    /// Whether tools went natively (false: the text protocol). Needed to
    /// re-read `raw` with [`parse_response`]. A request that offers no
    /// tools uses no text protocol, so it counts as native.
    pub native_tools: bool,
    /// Requests sent for it, retries included (and the resend in the text
    /// protocol after an endpoint refused tools).
    pub attempts: u32,
    /// Wall time spent, waits included.
    pub seconds: f64,
}

/// What one request came to.
enum Outcome {
    /// A 2xx answer and its body.
    Body(String),
    /// Any other HTTP answer.
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// No (complete) answer: timeout, refused, dropped.
    Transport(String),
    /// A redirect to this other origin, not followed.
    Redirected(String),
    /// The request could not even be built.
    Invalid(String),
}

/// Why the last try failed, when it may be retried.
enum Failure {
    Unreachable(String),
    Status(u16, String),
    Malformed(String),
}

impl Failure {
    /// The error once no retry is left.
    fn into_error(self, endpoint: String, attempts: u32) -> LlmError {
        match self {
            Failure::Unreachable(detail) => LlmError::Unreachable {
                endpoint,
                attempts,
                detail,
            },
            Failure::Status(status, detail) => LlmError::Status {
                endpoint,
                status,
                detail,
            },
            Failure::Malformed(detail) => LlmError::Malformed { endpoint, detail },
        }
    }
}

/// The vectors of an embeddings answer, in the order of the inputs (by
/// each item's `index` when it has one).
fn parse_embeddings(raw: &str, count: usize) -> std::result::Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_str(raw)
        .map_err(|e| format!("the answer is not JSON ({e}): {}", excerpt(raw, 200)))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the answer has no `data` list: {}", excerpt(raw, 200)))?;
    if data.len() != count {
        return Err(format!(
            "the answer has {} vectors for {count} inputs",
            data.len()
        ));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for (i, item) in data.iter().enumerate() {
        let at = match item.get("index") {
            None => i,
            Some(x) => x
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < count)
                .ok_or_else(|| format!("data item {i} has a bad index {x}"))?,
        };
        let numbers = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("data item {i} has no `embedding` list"))?;
        let vector = numbers
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .filter(|v| !v.is_empty() && v.iter().all(|x| x.is_finite()))
            .ok_or_else(|| format!("data item {i} is not a list of finite numbers"))?;
        if out[at].replace(vector).is_some() {
            return Err(format!("two vectors for input {at}"));
        }
    }
    let vectors: Vec<Vec<f32>> = out.into_iter().flatten().collect();
    if vectors.len() != count {
        return Err("some input has no vector".into());
    }
    if vectors.iter().any(|v| v.len() != vectors[0].len()) {
        return Err("the vectors differ in length".into());
    }
    Ok(vectors)
}

impl Client {
    /// A client for `config`. Fails when the pool is empty, a base URL is
    /// not an http(s) URL, or the HTTP stack cannot start.
    pub fn new(config: Config) -> Result<Client> {
        if config.endpoints.is_empty() {
            return Err(LlmError::Config("no endpoint configured".into()));
        }
        for e in &config.endpoints {
            match reqwest::Url::parse(&e.base_url) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => {
                    return Err(LlmError::Config(format!(
                        "endpoint '{}' is not an http(s) URL",
                        endpoint_name(&e.base_url)
                    )))
                }
            }
        }
        let mut builder = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!("memtrace-llm/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::custom(same_origin_only));
        // A proxy cannot reach this machine's own servers (a local vLLM,
        // Ollama, or the scripted server of the tests).
        if config.endpoints.iter().all(|e| is_loopback(&e.base_url)) {
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|e| {
            LlmError::Config(format!(
                "the HTTP client could not start: {}",
                innermost(&e.without_url())
            ))
        })?;
        let permits = Semaphore::new(config.concurrency.clamp(1, Semaphore::MAX_PERMITS));
        let text_mode = AtomicBool::new(config.tool_mode == ToolMode::Text);
        Ok(Client {
            http,
            config,
            next: AtomicUsize::new(0),
            permits,
            text_mode,
        })
    }

    /// The settings it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether the next request offers tools natively (false once Text mode
    /// is set or Auto fell back).
    pub fn native_tools(&self) -> bool {
        match self.config.tool_mode {
            ToolMode::Native => true,
            ToolMode::Text => false,
            ToolMode::Auto => !self.text_mode.load(Ordering::Relaxed),
        }
    }

    /// Sends one chat completion, with retries; `call_number` is passed to
    /// [`parse_response`] (ids of text-protocol calls); `cancelled` is
    /// polled before each try and during waits and in-flight requests
    /// (every ~50 ms), giving [`LlmError::Cancelled`].
    ///
    /// Timeouts, refused or dropped connections, HTTP 429 and 5xx, and 200
    /// answers that are not a chat completion are tried again, up to
    /// `retries` times, each time on the next endpoint of the pool, after
    /// `backoff * 2^n` (or longer, as a 429 or 503 `Retry-After` asks; at
    /// most [`Config::MAX_BACKOFF`]). Other HTTP errors end it at once.
    pub async fn chat(
        &self,
        req: &ChatRequest,
        call_number: usize,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Exchange> {
        let start = Instant::now();
        let endpoints = &self.config.endpoints;
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let mut retry: u32 = 0;
        let mut attempts: u32 = 0;
        loop {
            if cancelled() {
                return Err(LlmError::Cancelled);
            }
            let endpoint = &endpoints[first.wrapping_add(retry as usize) % endpoints.len()];
            // Another request may have switched the client to text meanwhile.
            let native = self.native_tools() || req.tools.is_empty();
            let offers_tools = native && !req.tools.is_empty();
            let body = request_body(
                &self.config.model,
                req,
                native,
                self.config.temperature,
                self.config.max_output_tokens,
            );
            let outcome = {
                let _permit = or_cancel(self.permits.acquire(), cancelled)
                    .await?
                    // The semaphore is never closed.
                    .map_err(|_| LlmError::Cancelled)?;
                or_cancel(self.send(endpoint, "chat/completions", &body), cancelled).await?
            };
            attempts = attempts.saturating_add(1);
            let key = endpoint.api_key.as_ref();
            let mut retry_after = None;
            let failure = match outcome {
                Outcome::Body(raw) => match parse_response(&raw, native, call_number) {
                    Ok(response) => {
                        return Ok(Exchange {
                            response,
                            raw,
                            native_tools: native,
                            attempts,
                            seconds: start.elapsed().as_secs_f64(),
                        })
                    }
                    Err(detail) => Failure::Malformed(malformed_detail(&raw, detail, key, native)),
                },
                Outcome::Status {
                    status, ref body, ..
                } if matches!(status, 400 | 422)
                    && offers_tools
                    && self.config.tool_mode == ToolMode::Auto
                    && refuses_tools(body) =>
                {
                    // The endpoint refuses tools: the text protocol from now
                    // on, and this request again at once.
                    self.text_mode.store(true, Ordering::Relaxed);
                    continue;
                }
                Outcome::Status {
                    status,
                    retry_after: after,
                    body,
                } => {
                    if status == 429 || (500..=599).contains(&status) {
                        if matches!(status, 429 | 503) {
                            retry_after = after;
                        }
                        Failure::Status(status, body_excerpt(&body, key))
                    } else {
                        return Err(LlmError::Status {
                            endpoint: endpoint_name(&endpoint.base_url),
                            status,
                            detail: refusal_detail(status, &body, key),
                        });
                    }
                }
                Outcome::Transport(detail) => Failure::Unreachable(detail),
                Outcome::Redirected(to) => {
                    return Err(LlmError::Redirected {
                        endpoint: endpoint_name(&endpoint.base_url),
                        to,
                    })
                }
                Outcome::Invalid(detail) => {
                    return Err(LlmError::Config(format!(
                        "endpoint {}: {detail}",
                        endpoint_name(&endpoint.base_url)
                    )))
                }
            };
            if retry >= self.config.retries {
                return Err(failure.into_error(endpoint_name(&endpoint.base_url), attempts));
            }
            let mut wait = backoff(self.config.backoff, retry);
            if let Some(after) = retry_after {
                wait = wait.max(after.min(Config::MAX_BACKOFF));
            }
            or_cancel(tokio::time::sleep(wait), cancelled).await?;
            retry += 1;
        }
    }

    /// Embeds `texts` with the configured model (`POST /embeddings`, as
    /// OpenAI, vLLM and Ollama serve it): one vector per text, in order.
    /// Retries, the pool, the limit on requests in flight and cancellation
    /// work as for [`Client::chat`]; an answer that does not hold one vector
    /// of numbers per text, all of one length, is malformed.
    pub async fn embed(
        &self,
        texts: &[String],
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let endpoints = &self.config.endpoints;
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let body = serde_json::json!({ "model": self.config.model, "input": texts });
        let mut retry: u32 = 0;
        let mut attempts: u32 = 0;
        loop {
            if cancelled() {
                return Err(LlmError::Cancelled);
            }
            let endpoint = &endpoints[first.wrapping_add(retry as usize) % endpoints.len()];
            let outcome = {
                let _permit = or_cancel(self.permits.acquire(), cancelled)
                    .await?
                    .map_err(|_| LlmError::Cancelled)?;
                or_cancel(self.send(endpoint, "embeddings", &body), cancelled).await?
            };
            attempts = attempts.saturating_add(1);
            let key = endpoint.api_key.as_ref();
            let mut retry_after = None;
            let failure = match outcome {
                Outcome::Body(raw) => match parse_embeddings(&raw, texts.len()) {
                    Ok(vectors) => return Ok(vectors),
                    Err(detail) => Failure::Malformed(scrub(&detail, key)),
                },
                Outcome::Status {
                    status,
                    retry_after: after,
                    body,
                } if status == 429 || (500..=599).contains(&status) => {
                    if matches!(status, 429 | 503) {
                        retry_after = after;
                    }
                    Failure::Status(status, body_excerpt(&body, key))
                }
                Outcome::Status { status, body, .. } => {
                    return Err(LlmError::Status {
                        endpoint: endpoint_name(&endpoint.base_url),
                        status,
                        detail: refusal_detail(status, &body, key),
                    })
                }
                Outcome::Transport(detail) => Failure::Unreachable(detail),
                Outcome::Redirected(to) => {
                    return Err(LlmError::Redirected {
                        endpoint: endpoint_name(&endpoint.base_url),
                        to,
                    })
                }
                Outcome::Invalid(detail) => {
                    return Err(LlmError::Config(format!(
                        "endpoint {}: {detail}",
                        endpoint_name(&endpoint.base_url)
                    )))
                }
            };
            if retry >= self.config.retries {
                return Err(failure.into_error(endpoint_name(&endpoint.base_url), attempts));
            }
            let mut wait = backoff(self.config.backoff, retry);
            if let Some(after) = retry_after {
                wait = wait.max(after.min(Config::MAX_BACKOFF));
            }
            or_cancel(tokio::time::sleep(wait), cancelled).await?;
            retry += 1;
        }
    }

    /// One POST to `path` under `endpoint`, its answer read to the end.
    async fn send(&self, endpoint: &Endpoint, path: &str, body: &Value) -> Outcome {
        let url = format!("{}/{path}", endpoint.base_url.trim_end_matches('/'));
        let mut request = self.http.post(url).json(body);
        if let Some(key) = &endpoint.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return self.transport(e),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let success = response.status().is_success();
        match response.text().await {
            Err(e) => self.transport(e),
            Ok(text) if success => Outcome::Body(text),
            Ok(body) => Outcome::Status {
                status,
                retry_after,
                body,
            },
        }
    }

    /// A failure of reqwest in words, without the URL.
    fn transport(&self, e: reqwest::Error) -> Outcome {
        let e = e.without_url();
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(c) = cause {
            if let Some(CrossOrigin(to)) = c.downcast_ref::<CrossOrigin>() {
                return Outcome::Redirected(to.clone());
            }
            cause = c.source();
        }
        if e.is_builder() {
            return Outcome::Invalid(format!(
                "the request could not be built ({}); check the base URL and the API key",
                innermost(&e)
            ));
        }
        Outcome::Transport(if e.is_timeout() {
            format!("timed out after {:.1} s", self.config.timeout.as_secs_f64())
        } else if e.is_connect() {
            format!("could not connect ({})", innermost(&e))
        } else {
            format!("connection closed before an answer ({})", innermost(&e))
        })
    }
}

/// Redirects followed at most, within the endpoint's origin.
const MAX_REDIRECTS: usize = 5;

/// A redirect to another origin, refused: names that origin.
#[derive(Debug)]
struct CrossOrigin(String);

impl std::fmt::Display for CrossOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a redirect to another origin ({})", self.0)
    }
}

impl std::error::Error for CrossOrigin {}

/// The redirect policy: follow a redirect only within the origin (scheme,
/// host and port) of the first request, since the request body is the
/// prompt, which holds trace content.
fn same_origin_only(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let first = attempt.previous().first().map(reqwest::Url::origin);
    let next = attempt.url().origin();
    if first.as_ref() != Some(&next) {
        return attempt.error(CrossOrigin(next.ascii_serialization()));
    }
    if attempt.previous().len() > MAX_REDIRECTS {
        return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
    }
    attempt.follow()
}

/// Runs `fut` unless `cancelled` says so first (polled every
/// [`CANCEL_POLL`]); the future is dropped then.
async fn or_cancel<F: Future>(fut: F, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<F::Output> {
    let watch = async {
        loop {
            if cancelled() {
                return;
            }
            tokio::time::sleep(CANCEL_POLL).await;
        }
    };
    tokio::select! {
        biased;
        _ = watch => Err(LlmError::Cancelled),
        out = fut => Ok(out),
    }
}

/// The wait before retry `n` (0 for the first): `first * 2^n`, at most
/// [`Config::MAX_BACKOFF`].
fn backoff(first: Duration, n: u32) -> Duration {
    let factor = 1u32.checked_shl(n).unwrap_or(u32::MAX);
    first.saturating_mul(factor).min(Config::MAX_BACKOFF)
}

/// A `Retry-After` value (seconds, or an HTTP date, `now` being the time
/// to count from) as a wait; `None` when it reads as neither.
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since the epoch of an HTTP date in any of its three forms
/// (`Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT`,
/// `Sun Nov  6 08:49:37 1994`).
fn http_date(s: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let mut month = None;
    let mut time = None;
    let mut numbers = Vec::new();
    for token in s.split([' ', ',', '-', '\t']).filter(|t| !t.is_empty()) {
        if token.contains(':') {
            time = Some(token);
        } else if token.bytes().all(|b| b.is_ascii_digit()) {
            numbers.push(token);
        } else if let Some(i) = MONTHS.iter().position(|m| token.eq_ignore_ascii_case(m)) {
            month = Some(i as i64 + 1);
        }
    }
    let (day, year) = match numbers.as_slice() {
        [a, b] if a.len() == 4 => (*b, *a),
        [a, b] => (*a, *b),
        _ => return None,
    };
    let day: i64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let mut year: i64 = year.parse().ok().filter(|y| *y <= 9999)?;
    if year < 100 {
        year += if year >= 70 { 1900 } else { 2000 };
    }
    let mut hms = time?.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some()
        || !(0..24).contains(&h)
        || !(0..60).contains(&m)
        || !(0..=60).contains(&sec)
    {
        return None;
    }
    let days = days_from_civil(year, month?, day);
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + sec).ok()
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The deepest cause of an error, in words.
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut e = e;
    while let Some(source) = e.source() {
        e = source;
    }
    e.to_string()
}

/// `text` with every occurrence of the key replaced by `***`.
fn scrub(text: &str, key: Option<&Secret>) -> String {
    match key.map(Secret::expose) {
        Some(k) if !k.is_empty() => text.replace(k, "***"),
        _ => text.to_string(),
    }
}

/// An error body, shortened, keyless.
fn body_excerpt(body: &str, key: Option<&Secret>) -> String {
    let body = body.trim();
    if body.is_empty() {
        "(empty body)".into()
    } else {
        excerpt(&scrub(body, key), 300)
    }
}

/// The detail of an HTTP error that is not retried, with a hint.
fn refusal_detail(status: u16, body: &str, key: Option<&Secret>) -> String {
    match status {
        // The body may quote (part of) the key: left out.
        401 | 403 => format!(
            "{}; check the API key",
            if key.is_some() {
                "the API key was refused"
            } else {
                "no API key was sent"
            }
        ),
        404 => format!(
            "{}; check the base URL and the model name",
            body_excerpt(body, key)
        ),
        _ => body_excerpt(body, key),
    }
}

/// What `parse_response` said of a bad body, keyless even when the body
/// quotes the key across the cut of an excerpt.
fn malformed_detail(raw: &str, detail: String, key: Option<&Secret>, native: bool) -> String {
    let scrubbed = scrub(raw, key);
    if scrubbed == raw {
        return detail;
    }
    match parse_response(&scrubbed, native, 0) {
        Err(d) => scrub(&d, key),
        Ok(_) => "the body quotes the API key".into(),
    }
}

/// A base URL as errors name it: without credentials or a query.
fn endpoint_name(base_url: &str) -> String {
    let url = base_url.split(['?', '#']).next().unwrap_or("");
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority.rsplit('@').next().unwrap_or(authority);
    format!("{scheme}{host}{path}")
}

/// Whether a base URL names this machine.
fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    match url.host_str() {
        Some(host) => {
            let host = host.trim_start_matches('[').trim_end_matches(']');
            host.eq_ignore_ascii_case("localhost")
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        None => false,
    }
}

/// Whether an error body says the endpoint does not take tools (vLLM without
/// a tool parser, an Ollama model without tool support), rather than some
/// other fault of the request, such as a prompt over the context length.
fn refuses_tools(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("tool") || b.contains("function")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{Message, Tool, ToolCall};
    use crate::scripted::{self, Reply, ScriptedServer};
    use serde_json::json;
    use std::sync::Arc;

    fn never() -> bool {
        false
    }

    fn config(servers: &[&ScriptedServer]) -> Config {
        let mut c = Config::new(servers[0].base_url(), "test-model");
        c.endpoints = servers
            .iter()
            .map(|s| Endpoint {
                base_url: s.base_url(),
                api_key: None,
            })
            .collect();
        c.timeout = Duration::from_millis(300);
        c.retries = 2;
        c.backoff = Duration::from_millis(10);
        c
    }

    fn request() -> ChatRequest {
        ChatRequest {
            messages: vec![
                Message::system("You attribute failures."),
                Message::user("Which op is wrong?"),
            ],
            tools: vec![Tool {
                name: "finish".into(),
                description: "Name the faulty op.".into(),
                parameters: json!({"type": "object",
                    "properties": {"op_id": {"type": "string"}}}),
            }],
        }
    }

    fn good(r: &scripted::Recorded) -> Reply {
        Reply::Json(scripted::tool_call(
            r,
            "c1",
            "finish",
            json!({"op_id": "op-3"}),
        ))
    }

    /// A script answering `first` to the first `n` requests, then well.
    fn fail_first(n: usize, first: Reply) -> scripted::Script {
        let mut seen = 0;
        Box::new(move |r| {
            seen += 1;
            if seen <= n {
                first.clone()
            } else {
                good(r)
            }
        })
    }

    fn status(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        Reply::Status {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.into(),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn embeddings_come_back_in_input_order_and_bad_answers_are_named() {
        let server = ScriptedServer::start(Box::new(|r| {
            let mut v = scripted::embeddings(r, 8);
            // Answered out of order: the index puts each vector back.
            if let Some(items) = v["data"].as_array_mut() {
                items.reverse();
            }
            Reply::Json(v)
        }))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let texts = vec!["blue volvo".to_string(), "cat named luna".to_string()];
        let vectors = client.embed(&texts, &never).await.unwrap();
        assert_eq!(vectors.len(), 2);
        assert_eq!(vectors[0].len(), 8);
        let alone = client.embed(&texts[1..], &never).await.unwrap();
        assert_eq!(alone[0], vectors[1]);
        let r = &server.requests()[0];
        assert_eq!(r.path, "/v1/embeddings");
        assert_eq!(r.json.as_ref().unwrap()["input"], json!(texts));
        assert_eq!(r.json.as_ref().unwrap()["model"], "test-model");
        assert!(client.embed(&[], &never).await.unwrap().is_empty());

        let short = ScriptedServer::start(Box::new(|_| {
            Reply::Json(json!({"data": [{"index": 0, "embedding": [0.1, 0.2]}]}))
        }))
        .unwrap();
        let client = Client::new(config(&[&short])).unwrap();
        let e = client.embed(&texts, &never).await.unwrap_err().to_string();
        assert!(e.contains("1 vectors for 2 inputs"), "{e}");
        let refused = ScriptedServer::start(Box::new(|_| status(401, &[], "bad key"))).unwrap();
        let client = Client::new(config(&[&refused])).unwrap();
        let e = client.embed(&texts, &never).await.unwrap_err().to_string();
        assert!(e.contains("401") && e.contains("check the API key"), "{e}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_tool_call_comes_back_with_usage_and_the_request_carries_model_tools_and_key() {
        let server = ScriptedServer::start(Box::new(good)).unwrap();
        let mut c = config(&[&server]);
        c.endpoints[0].api_key = Some(Secret::new("sk-test-123"));
        let client = Client::new(c).unwrap();
        let x = client.chat(&request(), 0, &never).await.unwrap();
        assert_eq!(
            x.response.message.tool_calls,
            vec![ToolCall::new("c1", "finish", r#"{"op_id":"op-3"}"#)]
        );
        let sent = &server.requests()[0];
        assert_eq!(
            x.response.usage.prompt_tokens,
            scripted::prompt_tokens(sent)
        );
        assert!(x.response.usage.prompt_tokens > 0);
        assert_eq!(x.response.usage.completion_tokens, 4);
        assert!(!x.response.usage.estimated);
        assert!(x.native_tools);
        assert_eq!(x.attempts, 1);
        assert_eq!(
            parse_response(&x.raw, x.native_tools, 0).unwrap(),
            x.response
        );
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, "/v1/chat/completions");
        assert_eq!(sent.header("authorization"), Some("Bearer sk-test-123"));
        let body = sent.json.as_ref().unwrap();
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["messages"][1]["content"], "Which op is wrong?");
        assert_eq!(body["tools"][0]["function"]["name"], "finish");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn without_a_key_no_authorization_header_is_sent() {
        let server = ScriptedServer::start(Box::new(good)).unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        client.chat(&request(), 0, &never).await.unwrap();
        assert_eq!(server.requests()[0].header("authorization"), None);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_malformed_body_is_retried() {
        let server = ScriptedServer::start(fail_first(1, Reply::Raw("{\"choi".into()))).unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let x = client.chat(&request(), 0, &never).await.unwrap();
        assert_eq!(x.attempts, 2);
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_body_malformed_every_time_is_malformed_after_all_tries() {
        let server = ScriptedServer::start(Box::new(|_| Reply::Raw("<html>".into()))).unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        match &e {
            LlmError::Malformed { endpoint, detail } => {
                assert_eq!(endpoint, &server.base_url());
                assert!(detail.contains("not JSON"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_429_waits_as_long_as_retry_after_says() {
        let server = ScriptedServer::start(fail_first(
            1,
            status(429, &[("Retry-After", "1")], r#"{"error":"slow down"}"#),
        ))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let t = Instant::now();
        let x = client.chat(&request(), 0, &never).await.unwrap();
        assert!(
            t.elapsed() >= Duration::from_millis(950),
            "{:?}",
            t.elapsed()
        );
        assert!(x.seconds >= 0.95);
        assert_eq!(x.attempts, 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_500_is_retried() {
        let server = ScriptedServer::start(fail_first(1, status(500, &[], "oops"))).unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let x = client.chat(&request(), 0, &never).await.unwrap();
        assert_eq!(x.attempts, 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_500_every_time_is_a_status_error_after_all_tries() {
        let server =
            ScriptedServer::start(Box::new(|_| status(500, &[], "the GPU is on fire"))).unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        match &e {
            LlmError::Status { status, detail, .. } => {
                assert_eq!(*status, 500);
                assert!(detail.contains("GPU is on fire"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_slow_answer_times_out_and_is_retried() {
        let server = ScriptedServer::start(fail_first(
            1,
            Reply::Delay(Duration::from_secs(1), Box::new(Reply::Raw("late".into()))),
        ))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let x = client.chat(&request(), 0, &never).await.unwrap();
        assert_eq!(x.attempts, 2);
        assert!(x.seconds < 0.9, "{}", x.seconds);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_slow_every_time_is_unreachable_timed_out() {
        let server = ScriptedServer::start(Box::new(|r| {
            Reply::Delay(Duration::from_secs(1), Box::new(good(r)))
        }))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        match &e {
            LlmError::Unreachable {
                attempts, detail, ..
            } => {
                assert_eq!(*attempts, 3);
                assert!(detail.contains("timed out after 0.3 s"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("timed out"), "{e}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_dropped_connection_is_retried() {
        let server = ScriptedServer::start(fail_first(1, Reply::Drop)).unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let x = client.chat(&request(), 0, &never).await.unwrap();
        assert_eq!(x.attempts, 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_connection_dropped_every_time_is_unreachable() {
        let server = ScriptedServer::start(Box::new(|_| Reply::Drop)).unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        match &e {
            LlmError::Unreachable {
                endpoint,
                attempts,
                detail,
            } => {
                assert_eq!(endpoint, &server.base_url());
                assert_eq!(*attempts, 3);
                assert!(detail.contains("connection closed"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_401_is_not_retried_and_names_the_key_but_not_its_value() {
        let server = ScriptedServer::start(Box::new(|_| {
            status(
                401,
                &[],
                r#"{"error":{"message":"Incorrect API key provided: sk-secret-value"}}"#,
            )
        }))
        .unwrap();
        let mut c = config(&[&server]);
        c.endpoints[0].api_key = Some(Secret::new("sk-secret-value"));
        let client = Client::new(c).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        assert!(matches!(e, LlmError::Status { status: 401, .. }), "{e:?}");
        let text = format!("{e} {e:?}");
        assert!(text.contains("check the API key"), "{text}");
        assert!(!text.contains("sk-secret"), "{text}");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_redirect_to_another_origin_is_not_followed_and_one_within_is() {
        // The other origin: the same host on another port.
        let elsewhere = ScriptedServer::start(Box::new(good)).unwrap();
        let other = elsewhere.base_url();
        for code in [301, 302, 303, 307, 308] {
            let to = format!("{other}/chat/completions");
            let server = ScriptedServer::start(Box::new(move |_| {
                status(code, &[("Location", to.as_str())], "")
            }))
            .unwrap();
            let mut c = config(&[&server]);
            c.endpoints[0].api_key = Some(Secret::new("sk-secret-value"));
            let client = Client::new(c).unwrap();
            let e = client.chat(&request(), 0, &never).await.unwrap_err();
            let origin = other.trim_end_matches("/v1").to_string();
            assert!(
                matches!(&e, LlmError::Redirected { to, .. } if *to == origin),
                "{code}: {e:?}"
            );
            let text = e.to_string();
            assert!(
                text.contains("does not follow a redirect to another origin"),
                "{text}"
            );
            assert_eq!(server.requests().len(), 1, "{code}: not retried");
        }
        assert!(
            elsewhere.requests().is_empty(),
            "nothing reached the other origin"
        );
        // Within the origin, a redirect is followed.
        let server = ScriptedServer::start(Box::new(|r| {
            if r.path == "/v1/chat/completions" {
                status(307, &[("Location", "/v2/chat/completions")], "")
            } else {
                good(r)
            }
        }))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        client.chat(&request(), 0, &never).await.unwrap();
        let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(paths, ["/v1/chat/completions", "/v2/chat/completions"]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_404_is_not_retried_and_points_at_url_and_model() {
        let server = ScriptedServer::start(Box::new(|_| {
            status(404, &[], r#"{"error":"model 'test-model' not found"}"#)
        }))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let e = client
            .chat(&request(), 0, &never)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("HTTP 404"), "{e}");
        assert!(e.contains("not found"), "{e}");
        assert!(e.contains("check the base URL and the model name"), "{e}");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn auto_mode_falls_back_to_the_text_protocol_and_stays_there() {
        let server = ScriptedServer::start(Box::new(|r| {
            let has_tools = r.json.as_ref().is_some_and(|j| j.get("tools").is_some());
            if has_tools {
                status(400, &[], r#"{"error":"tools are not supported"}"#)
            } else {
                Reply::Json(scripted::text(
                    r,
                    r#"Here: {"tool": "finish", "arguments": {"op_id": "op-3"}}"#,
                ))
            }
        }))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        assert!(client.native_tools());
        let x = client.chat(&request(), 5, &never).await.unwrap();
        assert!(!x.native_tools);
        assert_eq!(x.attempts, 2);
        assert_eq!(
            x.response.message.tool_calls,
            vec![ToolCall::new("text-5", "finish", r#"{"op_id":"op-3"}"#)]
        );
        assert_eq!(
            parse_response(&x.raw, x.native_tools, 5).unwrap(),
            x.response
        );
        assert!(!client.native_tools());
        let sent = server.requests();
        assert_eq!(sent.len(), 2);
        assert!(sent[0].json.as_ref().unwrap().get("tools").is_some());
        let second = sent[1].json.as_ref().unwrap();
        assert!(second.get("tools").is_none());
        assert!(second["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Name the faulty op."));

        let x = client.chat(&request(), 6, &never).await.unwrap();
        assert!(!x.native_tools);
        assert_eq!(x.attempts, 1);
        let sent = server.requests();
        assert_eq!(sent.len(), 3);
        assert!(sent[2].json.as_ref().unwrap().get("tools").is_none());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_400_about_something_else_keeps_native_tools() {
        let server = ScriptedServer::start(Box::new(|_| {
            status(
                400,
                &[],
                r#"{"error":{"message":"This model's maximum context length is 8192"}}"#,
            )
        }))
        .unwrap();
        let client = Client::new(config(&[&server])).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        assert!(matches!(e, LlmError::Status { status: 400, .. }), "{e:?}");
        assert!(e.to_string().contains("maximum context length"), "{e}");
        assert!(client.native_tools());
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn native_mode_does_not_fall_back_and_text_mode_never_offers_tools() {
        let server = ScriptedServer::start(Box::new(|r| {
            if r.json.as_ref().is_some_and(|j| j.get("tools").is_some()) {
                status(400, &[], "no tools here")
            } else {
                Reply::Json(scripted::text(r, r#"{"tool": "finish", "arguments": {}}"#))
            }
        }))
        .unwrap();
        let mut c = config(&[&server]);
        c.tool_mode = ToolMode::Native;
        let native = Client::new(c.clone()).unwrap();
        let e = native.chat(&request(), 0, &never).await.unwrap_err();
        assert!(matches!(e, LlmError::Status { status: 400, .. }), "{e:?}");
        assert!(e.to_string().contains("no tools here"));
        assert!(native.native_tools());
        assert_eq!(server.requests().len(), 1);

        c.tool_mode = ToolMode::Text;
        let text = Client::new(c).unwrap();
        assert!(!text.native_tools());
        let x = text.chat(&request(), 1, &never).await.unwrap();
        assert!(!x.native_tools);
        assert_eq!(x.response.message.tool_calls[0].id, "text-1");
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_pool_alternates_and_a_retry_moves_to_the_other_endpoint() {
        let a = ScriptedServer::start(Box::new(good)).unwrap();
        let b = ScriptedServer::start(Box::new(good)).unwrap();
        let client = Client::new(config(&[&a, &b])).unwrap();
        for i in 0..4 {
            let mut req = request();
            req.messages.push(Message::user(format!("call {i}")));
            client.chat(&req, i, &never).await.unwrap();
        }
        let calls = |s: &ScriptedServer| -> Vec<String> {
            s.requests()
                .iter()
                .map(|r| r.json.as_ref().unwrap()["messages"][2]["content"].to_string())
                .collect()
        };
        assert_eq!(calls(&a), vec!["\"call 0\"", "\"call 2\""]);
        assert_eq!(calls(&b), vec!["\"call 1\"", "\"call 3\""]);

        let down = ScriptedServer::start(Box::new(|_| status(503, &[], "busy"))).unwrap();
        let up = ScriptedServer::start(Box::new(good)).unwrap();
        let client = Client::new(config(&[&down, &up])).unwrap();
        let x = client.chat(&request(), 0, &never).await.unwrap();
        assert_eq!(x.attempts, 2);
        assert_eq!(down.requests().len(), 1);
        assert_eq!(up.requests().len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn cancelling_during_a_slow_answer_returns_promptly() {
        let server = ScriptedServer::start(Box::new(|r| {
            Reply::Delay(Duration::from_secs(5), Box::new(good(r)))
        }))
        .unwrap();
        let mut c = config(&[&server]);
        c.timeout = Duration::from_secs(10);
        let client = Client::new(c).unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        let setter = {
            let flag = Arc::clone(&flag);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                flag.store(true, Ordering::SeqCst);
            })
        };
        let t = Instant::now();
        let cancelled = || flag.load(Ordering::SeqCst);
        let e = client.chat(&request(), 0, &cancelled).await.unwrap_err();
        assert!(matches!(e, LlmError::Cancelled), "{e:?}");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        setter.join().unwrap();
        // Cancelled before it starts: nothing is sent.
        let e = client.chat(&request(), 0, &|| true).await.unwrap_err();
        assert!(matches!(e, LlmError::Cancelled));
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_refused_connection_is_unreachable() {
        let port = {
            let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
            l.local_addr().unwrap().port()
        };
        let mut c = Config::new(format!("http://127.0.0.1:{port}/v1"), "m");
        c.retries = 1;
        c.backoff = Duration::from_millis(10);
        c.timeout = Duration::from_millis(300);
        let client = Client::new(c).unwrap();
        let e = client.chat(&request(), 0, &never).await.unwrap_err();
        match &e {
            LlmError::Unreachable {
                endpoint,
                attempts,
                detail,
            } => {
                assert_eq!(endpoint, &format!("http://127.0.0.1:{port}/v1"));
                assert_eq!(*attempts, 2);
                assert!(detail.contains("could not connect"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn concurrency_limits_the_requests_in_flight() {
        let server = ScriptedServer::start(Box::new(|r| {
            Reply::Delay(Duration::from_millis(150), Box::new(good(r)))
        }))
        .unwrap();
        for (concurrency, slow) in [(1, true), (2, false)] {
            let mut c = config(&[&server]);
            c.concurrency = concurrency;
            c.timeout = Duration::from_secs(5);
            let client = Client::new(c).unwrap();
            let req = request();
            let t = Instant::now();
            let (x, y) = tokio::join!(client.chat(&req, 0, &never), client.chat(&req, 1, &never));
            x.unwrap();
            y.unwrap();
            let took = t.elapsed();
            assert_eq!(took >= Duration::from_millis(300), slow, "{took:?}");
        }
    }

    #[test]
    fn an_empty_pool_or_a_bad_url_is_a_config_error() {
        let mut c = Config::new("http://127.0.0.1:1/v1", "m");
        c.endpoints.clear();
        assert!(matches!(Client::new(c), Err(LlmError::Config(_))));
        let c = Config::new("ftp://user:pw@example.com/v1", "m");
        let e = Client::new(c).unwrap_err().to_string();
        assert!(e.contains("ftp://example.com/v1"), "{e}");
        assert!(!e.contains("pw"), "{e}");
    }

    #[test]
    fn the_chat_future_can_be_spawned() {
        fn send<T: Send>(_: &T) {}
        let client = Client::new(Config::new("http://127.0.0.1:1/v1", "m")).unwrap();
        let req = request();
        let fut = client.chat(&req, 0, &never);
        send(&fut);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let first = Duration::from_millis(500);
        assert_eq!(backoff(first, 0), first);
        assert_eq!(backoff(first, 3), Duration::from_secs(4));
        assert_eq!(backoff(first, 7), Config::MAX_BACKOFF);
        assert_eq!(backoff(first, 200), Config::MAX_BACKOFF);
        assert_eq!(backoff(Duration::from_secs(600), 0), Config::MAX_BACKOFF);
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let secs = |s: &str| parse_retry_after(s, now).map(|d| d.as_secs());
        assert_eq!(secs(" 7 "), Some(7));
        assert_eq!(secs("Sun, 06 Nov 1994 08:49:57 GMT"), Some(20));
        assert_eq!(secs("Sunday, 06-Nov-94 08:50:37 GMT"), Some(60));
        assert_eq!(secs("Sun Nov  6 08:49:47 1994"), Some(10));
        assert_eq!(secs("Sat, 05 Nov 1994 08:49:37 GMT"), Some(0));
        assert_eq!(
            secs("Thu, 29 Feb 2024 00:00:00 GMT"),
            Some(1_709_164_800 - 784_111_777)
        );
        assert_eq!(secs("soon"), None);
        assert_eq!(secs("-3"), None);
        assert_eq!(secs("Sun, 06 Nov 1994 25:00:00 GMT"), None);
        assert_eq!(secs("Sun, 06 Foo 1994 08:49:57 GMT"), None);
    }

    #[test]
    fn endpoints_are_named_without_credentials() {
        assert_eq!(
            endpoint_name("https://user:sk-x@api.example.com/v1?key=sk-y"),
            "https://api.example.com/v1"
        );
        assert_eq!(
            endpoint_name("http://127.0.0.1:8000/v1"),
            "http://127.0.0.1:8000/v1"
        );
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:8000/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
