//! The client's settings and the pool's endpoints, with their defaults.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// An API key. It prints as `***`, so it cannot reach a log, an error or
/// the database by way of `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Secret {
        Secret(key.into())
    }

    /// The key itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// One endpoint of the pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Base URL, up to and including the API version (`https://api.openai.com/v1`);
    /// requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    /// The key sent as `Authorization: Bearer`; `None` for servers that
    /// need none (a local vLLM or Ollama).
    pub api_key: Option<Secret>,
}

/// How tools are offered to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolMode {
    /// Native tool calling first; the text protocol once an endpoint
    /// refuses tools.
    #[default]
    Auto,
    /// Native tool calling only.
    Native,
    /// The JSON-in-text protocol only.
    Text,
}

impl FromStr for ToolMode {
    type Err = String;

    fn from_str(s: &str) -> Result<ToolMode, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(ToolMode::Auto),
            "native" => Ok(ToolMode::Native),
            "text" => Ok(ToolMode::Text),
            _ => Err(format!("unknown tool mode '{s}' (auto, native or text)")),
        }
    }
}

impl fmt::Display for ToolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ToolMode::Auto => "auto",
            ToolMode::Native => "native",
            ToolMode::Text => "text",
        })
    }
}

/// The client's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The pool: requests go round it, and a retry moves to the next one.
    /// Never empty.
    pub endpoints: Vec<Endpoint>,
    /// The model name sent with every request.
    pub model: String,
    /// Time limit of one request.
    pub timeout: Duration,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Budget of one case: model calls.
    pub max_calls: u32,
    /// Budget of one case: tokens, prompt and completion together.
    pub max_tokens: u64,
    /// Tries after the first on timeouts, dropped connections, 429 and 5xx.
    pub retries: u32,
    /// The first wait between tries; it doubles each time, up to
    /// [`Config::MAX_BACKOFF`].
    pub backoff: Duration,
    /// How tools are offered.
    pub tool_mode: ToolMode,
    /// Sampling temperature.
    pub temperature: f64,
    /// The longest answer asked for, in tokens.
    pub max_output_tokens: u32,
}

impl Config {
    /// The longest wait between two tries (and the most of a Retry-After
    /// that is honoured).
    pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

    /// Defaults for one endpoint without a key: 60 s per request, 4 in
    /// flight, 12 calls and 60,000 tokens per case, 4 retries from 500 ms.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Config {
        Config {
            endpoints: vec![Endpoint {
                base_url: base_url.into().trim_end_matches('/').to_string(),
                api_key: None,
            }],
            model: model.into(),
            timeout: Duration::from_secs(60),
            concurrency: 4,
            max_calls: 12,
            max_tokens: 60_000,
            retries: 4,
            backoff: Duration::from_millis(500),
            tool_mode: ToolMode::Auto,
            temperature: 0.0,
            max_output_tokens: 1024,
        }
    }

    /// One line for people: the model and where it runs, never a key.
    pub fn describe(&self) -> String {
        let first = self
            .endpoints
            .first()
            .map_or("(no endpoint)", |e| e.base_url.as_str());
        let more = match self.endpoints.len() {
            0 | 1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        let keys = self
            .endpoints
            .iter()
            .filter(|e| e.api_key.is_some())
            .count();
        format!(
            "model {} at {first}{more}, {}",
            self.model,
            if keys == 0 {
                "no key".to_string()
            } else {
                format!("key set for {keys} of {}", self.endpoints.len())
            }
        )
    }
}
