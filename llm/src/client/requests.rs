//! The client and its two requests, chat completions and embeddings, each
//! tried round the pool until it is answered or out of retries.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::chat::{parse_response, request_body, ChatRequest, ChatResponse};
use crate::config::{Config, Endpoint, ToolMode};
use crate::error::{LlmError, Result};

use super::cancel::or_cancel;
use super::detail::{
    endpoint_name, innermost, is_loopback, malformed_detail, refuses_tools, scrub,
};
use super::embeddings::parse_embeddings;
use super::outcome::{verdict, Failure, Outcome, Verdict};
use super::redirect::same_origin_only;
use super::retry::backoff;

/// A client for an OpenAI-compatible chat-completions API, shared by
/// reference between tasks.
pub struct Client {
    pub(super) http: reqwest::Client,
    pub(super) config: Config,
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
            let outcome = self
                .try_once(endpoint, "chat/completions", &body, cancelled)
                .await?;
            attempts = attempts.saturating_add(1);
            if offers_tools && self.refuses_tools(&outcome) {
                // The text protocol from now on, and this request again at once.
                self.text_mode.store(true, Ordering::Relaxed);
                continue;
            }
            let key = endpoint.api_key.as_ref();
            let read = |raw: String| match parse_response(&raw, native, call_number) {
                Ok(response) => Ok((response, raw)),
                Err(detail) => Err(malformed_detail(&raw, detail, key, native)),
            };
            match verdict(outcome, endpoint, read)? {
                Verdict::Answer((response, raw)) => {
                    return Ok(Exchange {
                        response,
                        raw,
                        native_tools: native,
                        attempts,
                        seconds: start.elapsed().as_secs_f64(),
                    })
                }
                Verdict::Retry(failure, retry_after) => {
                    self.wait_to_retry(failure, retry_after, endpoint, retry, attempts, cancelled)
                        .await?
                }
            }
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
            let outcome = self
                .try_once(endpoint, "embeddings", &body, cancelled)
                .await?;
            attempts = attempts.saturating_add(1);
            let key = endpoint.api_key.as_ref();
            let read = |raw: String| {
                parse_embeddings(&raw, texts.len()).map_err(|detail| scrub(&detail, key))
            };
            match verdict(outcome, endpoint, read)? {
                Verdict::Answer(vectors) => return Ok(vectors),
                Verdict::Retry(failure, retry_after) => {
                    self.wait_to_retry(failure, retry_after, endpoint, retry, attempts, cancelled)
                        .await?
                }
            }
            retry += 1;
        }
    }

    /// One try at `endpoint`, once the limit on requests in flight lets it go.
    async fn try_once(
        &self,
        endpoint: &Endpoint,
        path: &str,
        body: &Value,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Outcome> {
        let _permit = or_cancel(self.permits.acquire(), cancelled)
            .await?
            // The semaphore is never closed.
            .map_err(|_| LlmError::Cancelled)?;
        or_cancel(self.send(endpoint, path, body), cancelled).await
    }

    /// Whether an answer says the endpoint does not take tools, so that in
    /// Auto mode the request goes again in the text protocol.
    fn refuses_tools(&self, outcome: &Outcome) -> bool {
        matches!(
            outcome,
            Outcome::Status { status, body, .. }
                if matches!(status, 400 | 422)
                    && self.config.tool_mode == ToolMode::Auto
                    && refuses_tools(body)
        )
    }

    /// After retry `retry` failed: the error when no retry is left, else
    /// the wait before the next one, `backoff * 2^retry` or longer when the
    /// server asked, at most [`Config::MAX_BACKOFF`].
    async fn wait_to_retry(
        &self,
        failure: Failure,
        retry_after: Option<Duration>,
        endpoint: &Endpoint,
        retry: u32,
        attempts: u32,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<()> {
        if retry >= self.config.retries {
            return Err(failure.into_error(endpoint_name(&endpoint.base_url), attempts));
        }
        let mut wait = backoff(self.config.backoff, retry);
        if let Some(after) = retry_after {
            wait = wait.max(after.min(Config::MAX_BACKOFF));
        }
        or_cancel(tokio::time::sleep(wait), cancelled).await
    }
}
