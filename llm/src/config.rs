//! What the client needs to know: the endpoints (a pool of base URLs and
//! keys), the model, time limits, concurrency and the budget of one case;
//! and where it is read from: built-in defaults, a TOML file, then the
//! environment (`OPENAI_*`, then `MEMTRACE_LLM_*`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;

use crate::{LlmError, Result};

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

/// The base URL when neither the file nor the environment names one.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The model when neither the file nor the environment names one.
const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The host that always needs a key.
const OPENAI_HOST: &str = "api.openai.com";

impl Config {
    /// Reads the configuration: a TOML file (when given or found), then the environment over it.
    /// `env` looks a variable up (tests pass a map; `from_env` passes std::env::var).
    ///
    /// Lowest precedence first: the defaults of [`Config::new`] (model
    /// `gpt-4o-mini` at `https://api.openai.com/v1`), the file, then
    /// `OPENAI_BASE_URL` / `OPENAI_API_KEY`, then the `MEMTRACE_LLM_*`
    /// variables. A key goes only where its own variables point:
    /// `OPENAI_API_KEY` to `OPENAI_BASE_URL` or OpenAI itself (also a file
    /// endpoint on api.openai.com without a key), `MEMTRACE_LLM_API_KEY` to
    /// any pool. `file = None` means no file. A variable set to an empty
    /// string counts as unset. Every bad value is an [`LlmError::Config`]
    /// naming where it came from; no message ever holds a key.
    pub fn load(env: &dyn Fn(&str) -> Option<String>, file: Option<&Path>) -> Result<Config> {
        let mut config = Config::new(DEFAULT_BASE_URL, DEFAULT_MODEL);
        let file_pool = match file {
            Some(path) => read_file(path)?.apply(&mut config, path, env)?,
            None => None,
        };
        for setting in Setting::ALL {
            let name = setting.variable();
            if let Some(value) = var(env, name) {
                setting.apply(&mut config, name, Raw::Text(&value))?;
            }
        }
        config.endpoints = pool(env, file_pool)?;
        if let Some(e) = config
            .endpoints
            .iter()
            .find(|e| e.api_key.is_none() && host(&e.base_url) == OPENAI_HOST)
        {
            return Err(LlmError::Config(format!(
                "no API key for {}: set OPENAI_API_KEY or MEMTRACE_LLM_API_KEY",
                e.base_url
            )));
        }
        Ok(config)
    }

    /// The embeddings endpoint, for dense evidence search: `None` unless
    /// `MEMTRACE_EMBED_MODEL` names a model. Its pool is
    /// `MEMTRACE_EMBED_BASE_URL` with `MEMTRACE_EMBED_API_KEY` (under the same
    /// key rules as the chat pool: `OPENAI_API_KEY` never goes there unless
    /// it is OpenAI's own URL), else the chat configuration's pool; timeout,
    /// concurrency and retries are read as for chat.
    pub fn embeddings(
        env: &dyn Fn(&str) -> Option<String>,
        file: Option<&Path>,
    ) -> Result<Option<Config>> {
        let Some(model) = var(env, "MEMTRACE_EMBED_MODEL") else {
            return Ok(None);
        };
        if var(env, "MEMTRACE_EMBED_BASE_URL").is_none() {
            let mut config = Config::load(env, file)?;
            config.model = model;
            return Ok(Some(config));
        }
        let mut config = Config::new(DEFAULT_BASE_URL, model);
        for setting in Setting::ALL.into_iter().filter(|s| *s != Setting::Model) {
            let name = setting.variable();
            if let Some(value) = var(env, name) {
                setting.apply(&mut config, name, Raw::Text(&value))?;
            }
        }
        config.endpoints = pool_of(
            env,
            None,
            "MEMTRACE_EMBED_BASE_URL",
            "MEMTRACE_EMBED_API_KEY",
        )?;
        if let Some(e) = config
            .endpoints
            .iter()
            .find(|e| e.api_key.is_none() && host(&e.base_url) == OPENAI_HOST)
        {
            return Err(LlmError::Config(format!(
                "no API key for {}: set MEMTRACE_EMBED_API_KEY",
                e.base_url
            )));
        }
        Ok(Some(config))
    }

    /// [`Config::embeddings`] with the process environment and the default
    /// file, as [`Config::from_env`] reads them.
    pub fn embeddings_from_env() -> Result<Option<Config>> {
        let env = |name: &str| std::env::var(name).ok();
        if var(&env, "MEMTRACE_EMBED_MODEL").is_none() {
            return Ok(None);
        }
        let file = match var(&env, "MEMTRACE_LLM_CONFIG") {
            Some(named) => Some(PathBuf::from(named)),
            None => Config::default_file(&env).filter(|path| path.exists()),
        };
        Config::embeddings(&env, file.as_deref())
    }

    /// `load` with the process environment and the default file: `$MEMTRACE_LLM_CONFIG` when set
    /// (an error when that file is missing), else `$XDG_CONFIG_HOME/memtrace/llm.toml` or
    /// `$HOME/.config/memtrace/llm.toml` when it exists (no error when absent).
    pub fn from_env() -> Result<Config> {
        Config::load_default(&|name| std::env::var(name).ok())
    }

    /// The default config file path as above (None when no HOME/XDG is set).
    ///
    /// That is `$XDG_CONFIG_HOME/memtrace/llm.toml` when `XDG_CONFIG_HOME`
    /// is an absolute path, else `$HOME/.config/memtrace/llm.toml`; whether
    /// the file exists is not looked at. `MEMTRACE_LLM_CONFIG` is not
    /// consulted here ([`Config::from_env`] looks at it first).
    pub fn default_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let base = match var(env, "XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
        {
            Some(dir) => dir,
            None => PathBuf::from(var(env, "HOME")?).join(".config"),
        };
        Some(base.join("memtrace").join("llm.toml"))
    }

    /// [`Config::from_env`] with the environment as a parameter.
    fn load_default(env: &dyn Fn(&str) -> Option<String>) -> Result<Config> {
        if let Some(named) = var(env, "MEMTRACE_LLM_CONFIG") {
            let path = PathBuf::from(named);
            if !path.exists() {
                return Err(LlmError::Config(format!(
                    "MEMTRACE_LLM_CONFIG names {}, which does not exist",
                    path.display()
                )));
            }
            return Config::load(env, Some(&path));
        }
        let file = Config::default_file(env).filter(|path| path.exists());
        Config::load(env, file.as_deref())
    }
}

/// A variable's value, trimmed; `None` when it is unset or empty.
fn var(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name)
        .map(|value| value.trim().to_string())
        .filter(|value| !value.is_empty())
}

/// The settings other than the pool, each read from one variable or one
/// file key with the same checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    Model,
    Timeout,
    Concurrency,
    MaxCalls,
    MaxTokens,
    Retries,
    Backoff,
    Tools,
    Temperature,
    MaxOutputTokens,
}

/// A value as given: text from the environment, a number or a string from the file.
#[derive(Debug, Clone, Copy)]
enum Raw<'a> {
    Text(&'a str),
    Int(i64),
    Float(f64),
}

impl fmt::Display for Raw<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Raw::Text(s) => f.write_str(s),
            Raw::Int(n) => write!(f, "{n}"),
            Raw::Float(x) => write!(f, "{x}"),
        }
    }
}

impl Raw<'_> {
    /// The value as a number, whole or not.
    fn number(self) -> Option<f64> {
        match self {
            Raw::Text(s) => s.parse().ok(),
            // Precision lost on huge values does not matter for a range check.
            Raw::Int(n) => Some(n as f64),
            Raw::Float(x) => Some(x),
        }
    }

    /// The value as a whole number in `min..=max`.
    fn whole(self, min: u64, max: u64) -> Option<u64> {
        let n = match self {
            Raw::Text(s) => s.parse::<u64>().ok()?,
            Raw::Int(n) => u64::try_from(n).ok()?,
            Raw::Float(_) => return None,
        };
        (min..=max).contains(&n).then_some(n)
    }
}

/// The error for a bad value: where it came from, the value, what is expected.
fn bad(name: &str, value: Raw<'_>, expected: &str) -> LlmError {
    LlmError::Config(format!("{name} is '{value}': expected {expected}"))
}

/// What a whole number in `min..=max` is called in an error.
fn whole_expected(min: u64, max: u64) -> String {
    if max == u64::MAX {
        format!("a whole number of at least {min}")
    } else {
        format!("a whole number from {min} to {max}")
    }
}

impl Setting {
    const ALL: [Setting; 10] = [
        Setting::Model,
        Setting::Timeout,
        Setting::Concurrency,
        Setting::MaxCalls,
        Setting::MaxTokens,
        Setting::Retries,
        Setting::Backoff,
        Setting::Tools,
        Setting::Temperature,
        Setting::MaxOutputTokens,
    ];

    /// The variable that overrides it.
    fn variable(self) -> &'static str {
        match self {
            Setting::Model => "MEMTRACE_LLM_MODEL",
            Setting::Timeout => "MEMTRACE_LLM_TIMEOUT",
            Setting::Concurrency => "MEMTRACE_LLM_CONCURRENCY",
            Setting::MaxCalls => "MEMTRACE_LLM_MAX_CALLS",
            Setting::MaxTokens => "MEMTRACE_LLM_MAX_TOKENS",
            Setting::Retries => "MEMTRACE_LLM_RETRIES",
            Setting::Backoff => "MEMTRACE_LLM_BACKOFF_MS",
            Setting::Tools => "MEMTRACE_LLM_TOOLS",
            Setting::Temperature => "MEMTRACE_LLM_TEMPERATURE",
            Setting::MaxOutputTokens => "MEMTRACE_LLM_MAX_OUTPUT_TOKENS",
        }
    }

    /// Checks `value` (named `name` in errors) and stores it in `config`.
    fn apply(self, config: &mut Config, name: &str, value: Raw<'_>) -> Result<()> {
        let whole = |min: u64, max: u64| {
            value
                .whole(min, max)
                .ok_or_else(|| bad(name, value, &whole_expected(min, max)))
        };
        let small = |min: u64| -> Result<u32> {
            let n = whole(min, u64::from(u32::MAX))?;
            u32::try_from(n).map_err(|_| bad(name, value, &whole_expected(min, u32::MAX.into())))
        };
        match self {
            Setting::Model => match value {
                Raw::Text(model) if !model.trim().is_empty() => {
                    config.model = model.trim().to_string();
                }
                _ => return Err(bad(name, value, "a model name")),
            },
            Setting::Timeout => {
                config.timeout = value
                    .number()
                    .filter(|secs| *secs > 0.0)
                    .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                    .filter(|timeout| !timeout.is_zero())
                    .ok_or_else(|| bad(name, value, "a number of seconds above 0"))?;
            }
            Setting::Concurrency => {
                let n = small(1)?;
                config.concurrency = usize::try_from(n)
                    .map_err(|_| bad(name, value, &whole_expected(1, u32::MAX.into())))?;
            }
            Setting::MaxCalls => config.max_calls = small(1)?,
            Setting::MaxTokens => config.max_tokens = whole(1, u64::MAX)?,
            Setting::Retries => config.retries = small(0)?,
            Setting::Backoff => config.backoff = Duration::from_millis(whole(0, u64::MAX)?),
            Setting::Tools => {
                config.tool_mode = match value {
                    Raw::Text(mode) => mode.parse().ok(),
                    _ => None,
                }
                .ok_or_else(|| bad(name, value, "auto, native or text"))?;
            }
            Setting::Temperature => {
                config.temperature = value
                    .number()
                    .filter(|t| (0.0..=2.0).contains(t))
                    .ok_or_else(|| bad(name, value, "a number from 0 to 2"))?;
            }
            Setting::MaxOutputTokens => config.max_output_tokens = small(1)?,
        }
        Ok(())
    }
}

/// The config file. Every key is optional; an unknown one is an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    model: Option<String>,
    timeout_secs: Option<f64>,
    concurrency: Option<i64>,
    max_calls: Option<i64>,
    max_tokens: Option<i64>,
    retries: Option<i64>,
    backoff_ms: Option<i64>,
    tools: Option<String>,
    temperature: Option<f64>,
    max_output_tokens: Option<i64>,
    #[serde(default)]
    endpoint: Vec<FileEndpoint>,
}

/// One `[[endpoint]]` of the file. Deliberately not `Debug`: it may hold a key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEndpoint {
    /// Defaults to `https://api.openai.com/v1`.
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
}

/// The file's pool, and how it is named in errors.
struct FilePool {
    path: PathBuf,
    endpoints: Vec<Endpoint>,
}

/// Reads and parses the file; errors name the file, and the line and column
/// of a TOML error. The message is built from the toml crate's message and
/// span rather than its `Display`, which quotes the offending line, and that
/// line may hold a key.
fn read_file(path: &Path) -> Result<FileSettings> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LlmError::Config(format!("cannot read {}: {e}", path.display())))?;
    toml::from_str(&text).map_err(|e| {
        let place = e
            .span()
            .map(|span| {
                let before = text.as_bytes().get(..span.start).unwrap_or(text.as_bytes());
                let line = before.iter().filter(|b| **b == b'\n').count() + 1;
                let start = before
                    .iter()
                    .rposition(|b| *b == b'\n')
                    .map_or(0, |i| i + 1);
                let column = String::from_utf8_lossy(&before[start..]).chars().count() + 1;
                format!(" at line {line}, column {column}")
            })
            .unwrap_or_default();
        LlmError::Config(format!(
            "{}: TOML error{place}: {}",
            path.display(),
            e.message().trim()
        ))
    })
}

impl FileSettings {
    /// Stores the file's settings in `config` and returns its pool, if it has one.
    fn apply(
        self,
        config: &mut Config,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<FilePool>> {
        let shown = path.display();
        let name = |key: &str| format!("{shown}: {key}");
        let texts = [
            (Setting::Model, "model", self.model.as_deref()),
            (Setting::Tools, "tools", self.tools.as_deref()),
        ];
        for (setting, key, value) in texts {
            if let Some(value) = value {
                setting.apply(config, &name(key), Raw::Text(value))?;
            }
        }
        let floats = [
            (Setting::Timeout, "timeout_secs", self.timeout_secs),
            (Setting::Temperature, "temperature", self.temperature),
        ];
        for (setting, key, value) in floats {
            if let Some(value) = value {
                setting.apply(config, &name(key), Raw::Float(value))?;
            }
        }
        let ints = [
            (Setting::Concurrency, "concurrency", self.concurrency),
            (Setting::MaxCalls, "max_calls", self.max_calls),
            (Setting::MaxTokens, "max_tokens", self.max_tokens),
            (Setting::Retries, "retries", self.retries),
            (Setting::Backoff, "backoff_ms", self.backoff_ms),
            (
                Setting::MaxOutputTokens,
                "max_output_tokens",
                self.max_output_tokens,
            ),
        ];
        for (setting, key, value) in ints {
            if let Some(value) = value {
                setting.apply(config, &name(key), Raw::Int(value))?;
            }
        }
        if self.endpoint.is_empty() {
            return Ok(None);
        }
        let mut endpoints = Vec::with_capacity(self.endpoint.len());
        for (i, entry) in self.endpoint.into_iter().enumerate() {
            let which = format!("{shown}: endpoint {}", i + 1);
            let base_url = check_url(
                entry.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL),
                &format!("{which} base_url"),
            )?;
            let api_key = match (entry.api_key, entry.api_key_env) {
                (Some(_), Some(_)) => {
                    return Err(LlmError::Config(format!(
                        "{which} has both api_key and api_key_env: give one of them"
                    )))
                }
                (Some(key), None) => {
                    let key = key.trim();
                    if key.is_empty() {
                        return Err(LlmError::Config(format!(
                            "{which} has an empty api_key: give a key or leave it out"
                        )));
                    }
                    Some(Secret::new(key))
                }
                (None, Some(variable)) => match var(env, &variable) {
                    Some(key) => Some(Secret::new(key)),
                    None => {
                        return Err(LlmError::Config(format!(
                            "{which} reads its key from api_key_env = '{variable}', \
                             which is not set (or empty)"
                        )))
                    }
                },
                (None, None) => None,
            };
            endpoints.push(Endpoint { base_url, api_key });
        }
        Ok(Some(FilePool {
            path: path.to_path_buf(),
            endpoints,
        }))
    }
}

/// The items of a comma-separated variable, trimmed, with the variable's
/// name; `None` when it is unset. The error never quotes the value.
fn list(
    env: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<Option<(&'static str, Vec<String>)>> {
    let Some(value) = var(env, name) else {
        return Ok(None);
    };
    let items: Vec<String> = value.split(',').map(|s| s.trim().to_string()).collect();
    if let Some(i) = items.iter().position(String::is_empty) {
        return Err(LlmError::Config(format!(
            "{name} has an empty item (item {} of {}): expected items separated by single commas",
            i + 1,
            items.len()
        )));
    }
    Ok(Some((name, items)))
}

/// The endpoint pool: the environment's URLs, else the file's endpoints,
/// else the default URL; then the environment's keys, if any, over the
/// keys these have.
fn pool(env: &dyn Fn(&str) -> Option<String>, file: Option<FilePool>) -> Result<Vec<Endpoint>> {
    pool_of(env, file, "MEMTRACE_LLM_BASE_URL", "MEMTRACE_LLM_API_KEY")
}

/// [`pool`] with memtrace's own variables named `url_var` and `key_var`.
fn pool_of(
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<FilePool>,
    url_var: &'static str,
    key_var: &'static str,
) -> Result<Vec<Endpoint>> {
    let urls = match list(env, url_var)? {
        Some(urls) => Some(urls),
        None => list(env, "OPENAI_BASE_URL")?,
    };
    // A key goes only where its own family of variables points: OPENAI_API_KEY
    // to OPENAI_BASE_URL (or OpenAI itself), never to a URL named by
    // memtrace's own variables or by the file, so a key in the shell cannot
    // leak to another provider.
    let own_keys = list(env, key_var)?;
    let openai_keys = list(env, "OPENAI_API_KEY")?;
    let from_memtrace = urls.as_ref().is_some_and(|(n, _)| *n == url_var);
    let from_file = urls.is_none() && file.is_some();
    let keys = match own_keys {
        Some(keys) => Some(keys),
        None if from_memtrace || from_file => None,
        None => openai_keys.clone(),
    };
    let (mut endpoints, described) = match (urls, file) {
        (Some((name, urls)), _) => {
            let count = urls.len();
            let mut endpoints = Vec::with_capacity(count);
            for (i, url) in urls.iter().enumerate() {
                let source = if count == 1 {
                    name.to_string()
                } else {
                    format!("{name} (item {} of {count})", i + 1)
                };
                endpoints.push(Endpoint {
                    base_url: check_url(url, &source)?,
                    api_key: None,
                });
            }
            (endpoints, format!("{name} has {count} URLs"))
        }
        (None, Some(file)) => {
            let described = format!(
                "{} has {} endpoints",
                file.path.display(),
                file.endpoints.len()
            );
            (file.endpoints, described)
        }
        (None, None) => (
            vec![Endpoint {
                base_url: DEFAULT_BASE_URL.to_string(),
                api_key: None,
            }],
            "the default URL".to_string(),
        ),
    };
    let Some((key_name, keys)) = keys else {
        // The file's endpoints on OpenAI itself that have no key take
        // OPENAI_API_KEY (a single key only).
        if let (true, Some((_, k))) = (from_file, &openai_keys) {
            if let [key] = k.as_slice() {
                for e in endpoints.iter_mut() {
                    if e.api_key.is_none() && host(&e.base_url) == OPENAI_HOST {
                        e.api_key = Some(Secret::new(key.clone()));
                    }
                }
            }
        }
        return Ok(endpoints);
    };
    let keys: Vec<Secret> = keys.into_iter().map(Secret::new).collect();
    match (endpoints.len(), keys.len()) {
        (_, 1) => Ok(endpoints
            .into_iter()
            .map(|e| Endpoint {
                api_key: keys.first().cloned(),
                ..e
            })
            .collect()),
        (1, _) => {
            let base_url = endpoints
                .into_iter()
                .next()
                .map(|e| e.base_url)
                .unwrap_or_default();
            Ok(keys
                .into_iter()
                .map(|key| Endpoint {
                    base_url: base_url.clone(),
                    api_key: Some(key),
                })
                .collect())
        }
        (n, m) if n == m => Ok(endpoints
            .into_iter()
            .zip(keys)
            .map(|(e, key)| Endpoint {
                api_key: Some(key),
                ..e
            })
            .collect()),
        (_, m) => Err(LlmError::Config(format!(
            "{described} and {key_name} has {m} keys: give one key for all the URLs, \
             one URL for all the keys, or as many keys as URLs (paired in order)"
        ))),
    }
}

/// The part of a URL after `http://` or `https://`, if it starts with either.
fn after_scheme(url: &str) -> Option<&str> {
    ["http://", "https://"].into_iter().find_map(|scheme| {
        url.get(..scheme.len())
            .filter(|head| head.eq_ignore_ascii_case(scheme))
            .and_then(|_| url.get(scheme.len()..))
    })
}

/// The authority of a URL (`host:port`, with any `user@`): after the scheme
/// if there is one, up to the path, query or fragment.
fn authority(url: &str) -> &str {
    let rest = after_scheme(url)
        .or_else(|| url.split_once("://").map(|(_, rest)| rest))
        .unwrap_or(url);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

/// The host of a URL, lower-cased, without port or trailing dot.
fn host(url: &str) -> String {
    let authority = authority(url);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.split(':').next().unwrap_or(authority),
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Checks a base URL from `source` and trims its trailing slashes. A URL
/// with credentials is refused without being quoted.
fn check_url(url: &str, source: &str) -> Result<String> {
    let url = url.trim();
    if authority(url).contains('@') {
        return Err(LlmError::Config(format!(
            "{source} holds a user name or password (user:password@host): not shown, and not \
             allowed; give the key in OPENAI_API_KEY or MEMTRACE_LLM_API_KEY (or api_key / \
             api_key_env in the config file) instead"
        )));
    }
    let Some(rest) = after_scheme(url) else {
        return Err(LlmError::Config(format!(
            "{source} is '{url}': expected a URL starting with http:// or https://"
        )));
    };
    if authority(url).is_empty() || rest.starts_with(['/', '?', '#']) {
        return Err(LlmError::Config(format!(
            "{source} is '{url}': expected a URL with a host after http:// or https://"
        )));
    }
    Ok(url.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// An environment holding just `vars`.
    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn load(vars: &[(&str, &str)]) -> Result<Config> {
        Config::load(&env(vars), None)
    }

    fn load_err(vars: &[(&str, &str)]) -> String {
        match load(vars) {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// A config file holding `text`, in a directory that lives as long as the guard.
    fn file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("llm.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    /// Loads with `vars` and a file holding `text` (deleted on return).
    fn load_file(vars: &[(&str, &str)], text: &str) -> (Result<Config>, PathBuf) {
        let (_dir, path) = file(text);
        (Config::load(&env(vars), Some(&path)), path)
    }

    fn urls_and_keys(c: &Config) -> Vec<(&str, Option<&str>)> {
        c.endpoints
            .iter()
            .map(|e| (e.base_url.as_str(), e.api_key.as_ref().map(Secret::expose)))
            .collect()
    }

    #[test]
    fn a_key_never_prints() {
        let mut c = Config::new("http://127.0.0.1:1/v1/", "m");
        c.endpoints[0].api_key = Some(Secret::new("sk-very-secret"));
        assert!(!format!("{c:?}").contains("sk-very"));
        assert!(!c.describe().contains("sk-very"));
        assert_eq!(c.endpoints[0].base_url, "http://127.0.0.1:1/v1");
        assert_eq!(
            c.describe(),
            "model m at http://127.0.0.1:1/v1, key set for 1 of 1"
        );
    }

    #[test]
    fn tool_modes_read_their_names() {
        assert_eq!("Text".parse::<ToolMode>(), Ok(ToolMode::Text));
        assert!("fancy"
            .parse::<ToolMode>()
            .unwrap_err()
            .contains("auto, native or text"));
    }

    #[test]
    fn defaults_with_only_openai_api_key() {
        let c = load(&[("OPENAI_API_KEY", "sk-test")]).unwrap();
        let mut expected = Config::new("https://api.openai.com/v1", "gpt-4o-mini");
        expected.endpoints[0].api_key = Some(Secret::new("sk-test"));
        assert_eq!(c, expected);
        assert_eq!(c.timeout, Duration::from_secs(60));
        assert_eq!(c.tool_mode, ToolMode::Auto);
    }

    #[test]
    fn file_then_openai_then_memtrace_llm() {
        let text = r#"
model = "from-file"
timeout_secs = 30
concurrency = 2
max_calls = 5
max_tokens = 1000
retries = 1
backoff_ms = 100
tools = "text"
temperature = 0.5
max_output_tokens = 256

[[endpoint]]
base_url = "http://file-host:8000/v1/"
api_key = "file-key"
"#;
        // The file alone.
        let (c, _) = load_file(&[], text);
        let c = c.unwrap();
        assert_eq!(c.model, "from-file");
        assert_eq!(c.timeout, Duration::from_secs(30));
        assert_eq!(c.concurrency, 2);
        assert_eq!(c.max_calls, 5);
        assert_eq!(c.max_tokens, 1000);
        assert_eq!(c.retries, 1);
        assert_eq!(c.backoff, Duration::from_millis(100));
        assert_eq!(c.tool_mode, ToolMode::Text);
        assert_eq!(c.temperature, 0.5);
        assert_eq!(c.max_output_tokens, 256);
        assert_eq!(
            urls_and_keys(&c),
            [("http://file-host:8000/v1", Some("file-key"))]
        );

        // OPENAI_* over the file.
        let openai = [
            ("OPENAI_BASE_URL", "http://openai-var:1/v1"),
            ("OPENAI_API_KEY", "openai-key"),
        ];
        let (c, _) = load_file(&openai, text);
        let c = c.unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [("http://openai-var:1/v1", Some("openai-key"))]
        );
        assert_eq!(c.model, "from-file");

        // OPENAI_API_KEY never goes to the file's endpoints (only to
        // OpenAI's own, when they have no key).
        let (c, _) = load_file(&[("OPENAI_API_KEY", "openai-key")], text);
        assert_eq!(
            urls_and_keys(&c.unwrap()),
            [("http://file-host:8000/v1", Some("file-key"))]
        );
        let (c, _) = load_file(
            &[("OPENAI_API_KEY", "openai-key")],
            "[[endpoint]]\nbase_url = \"http://local:1/v1\"\n[[endpoint]]\n",
        );
        assert_eq!(
            urls_and_keys(&c.unwrap()),
            [
                ("http://local:1/v1", None),
                ("https://api.openai.com/v1", Some("openai-key"))
            ]
        );
        // Nor to a URL that MEMTRACE_LLM_BASE_URL names.
        let c = load(&[
            ("OPENAI_API_KEY", "openai-key"),
            ("MEMTRACE_LLM_BASE_URL", "http://local:2/v1"),
        ])
        .unwrap();
        assert_eq!(urls_and_keys(&c), [("http://local:2/v1", None)]);

        // MEMTRACE_LLM_* over both.
        let all = [
            ("OPENAI_BASE_URL", "http://openai-var:1/v1"),
            ("OPENAI_API_KEY", "openai-key"),
            ("MEMTRACE_LLM_BASE_URL", "https://memtrace-var/v1"),
            ("MEMTRACE_LLM_API_KEY", "memtrace-key"),
            ("MEMTRACE_LLM_MODEL", "from-env"),
            ("MEMTRACE_LLM_TIMEOUT", "2.5"),
            ("MEMTRACE_LLM_CONCURRENCY", "8"),
            ("MEMTRACE_LLM_MAX_CALLS", "20"),
            ("MEMTRACE_LLM_MAX_TOKENS", "90000"),
            ("MEMTRACE_LLM_RETRIES", "0"),
            ("MEMTRACE_LLM_BACKOFF_MS", "0"),
            ("MEMTRACE_LLM_TOOLS", "Native"),
            ("MEMTRACE_LLM_TEMPERATURE", "2"),
            ("MEMTRACE_LLM_MAX_OUTPUT_TOKENS", "4096"),
        ];
        let (c, _) = load_file(&all, text);
        let c = c.unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [("https://memtrace-var/v1", Some("memtrace-key"))]
        );
        assert_eq!(c.model, "from-env");
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.concurrency, 8);
        assert_eq!(c.max_calls, 20);
        assert_eq!(c.max_tokens, 90_000);
        assert_eq!(c.retries, 0);
        assert_eq!(c.backoff, Duration::ZERO);
        assert_eq!(c.tool_mode, ToolMode::Native);
        assert_eq!(c.temperature, 2.0);
        assert_eq!(c.max_output_tokens, 4096);
    }

    #[test]
    fn empty_variables_count_as_unset() {
        let c = load(&[
            ("OPENAI_API_KEY", "sk-a"),
            ("MEMTRACE_LLM_API_KEY", ""),
            ("MEMTRACE_LLM_MODEL", "  "),
            ("MEMTRACE_LLM_BASE_URL", ""),
        ])
        .unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [("https://api.openai.com/v1", Some("sk-a"))]
        );
        assert_eq!(c.model, "gpt-4o-mini");
    }

    #[test]
    fn embeddings_need_a_model_and_keep_the_key_rules() {
        let embed = |vars: &[(&str, &str)]| Config::embeddings(&env(vars), None);
        assert_eq!(embed(&[("OPENAI_API_KEY", "sk-1")]).unwrap(), None);
        // The chat pool serves embeddings when no embeddings URL is named.
        let c = embed(&[
            ("MEMTRACE_LLM_BASE_URL", "http://local:1/v1"),
            ("MEMTRACE_EMBED_MODEL", "nomic-embed-text"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.model, "nomic-embed-text");
        assert_eq!(c.endpoints[0].base_url, "http://local:1/v1");
        // OPENAI_API_KEY never goes to a URL memtrace's own variable names.
        let c = embed(&[
            ("OPENAI_API_KEY", "sk-secret"),
            ("MEMTRACE_EMBED_BASE_URL", "http://embed:2/v1"),
            ("MEMTRACE_EMBED_MODEL", "e5"),
            ("MEMTRACE_LLM_TIMEOUT", "3"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(c.endpoints.len(), 1);
        assert!(c.endpoints[0].api_key.is_none());
        assert_eq!(c.timeout, Duration::from_secs(3));
        let c = embed(&[
            ("MEMTRACE_EMBED_BASE_URL", "http://embed:2/v1"),
            ("MEMTRACE_EMBED_API_KEY", "embed-key"),
            ("MEMTRACE_EMBED_MODEL", "e5"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            c.endpoints[0].api_key.as_ref().map(Secret::expose),
            Some("embed-key")
        );
        let e = embed(&[
            ("MEMTRACE_EMBED_BASE_URL", "https://api.openai.com/v1"),
            ("MEMTRACE_EMBED_MODEL", "text-embedding-3-small"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("set MEMTRACE_EMBED_API_KEY"), "{e}");
    }

    #[test]
    fn pool_of_urls_sharing_one_key() {
        let c = load(&[
            ("MEMTRACE_LLM_BASE_URL", "http://a:1/v1, http://b:2/v1/"),
            ("MEMTRACE_LLM_API_KEY", "k"),
        ])
        .unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [("http://a:1/v1", Some("k")), ("http://b:2/v1", Some("k"))]
        );
    }

    #[test]
    fn pool_of_keys_on_one_url() {
        let c = load(&[("MEMTRACE_LLM_API_KEY", "k1,k2,k3")]).unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [
                ("https://api.openai.com/v1", Some("k1")),
                ("https://api.openai.com/v1", Some("k2")),
                ("https://api.openai.com/v1", Some("k3")),
            ]
        );
    }

    #[test]
    fn pool_pairs_urls_and_keys_in_order() {
        let c = load(&[
            ("MEMTRACE_LLM_BASE_URL", "http://a/v1,http://b/v1"),
            ("MEMTRACE_LLM_API_KEY", "ka,kb"),
        ])
        .unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [("http://a/v1", Some("ka")), ("http://b/v1", Some("kb"))]
        );
        // Several URLs and no key: local servers need none.
        let c = load(&[("MEMTRACE_LLM_BASE_URL", "http://a/v1,http://b/v1")]).unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [("http://a/v1", None), ("http://b/v1", None)]
        );
    }

    #[test]
    fn pool_counts_that_do_not_match_are_an_error() {
        let e = load_err(&[
            (
                "MEMTRACE_LLM_BASE_URL",
                "http://a/v1,http://b/v1,http://c/v1",
            ),
            ("MEMTRACE_LLM_API_KEY", "secret-ka,secret-kb"),
        ]);
        assert!(e.contains("MEMTRACE_LLM_BASE_URL has 3 URLs"), "{e}");
        assert!(e.contains("MEMTRACE_LLM_API_KEY has 2 keys"), "{e}");
        assert!(!e.contains("secret"), "{e}");

        // The file's pool against the environment's keys.
        let text =
            "[[endpoint]]\nbase_url = \"http://a/v1\"\n[[endpoint]]\nbase_url = \"http://b/v1\"\n";
        let (c, path) = load_file(
            &[("MEMTRACE_LLM_API_KEY", "secret-1,secret-2,secret-3")],
            text,
        );
        let e = c.unwrap_err().to_string();
        assert!(
            e.contains(&format!("{} has 2 endpoints", path.display())),
            "{e}"
        );
        assert!(e.contains("MEMTRACE_LLM_API_KEY has 3 keys"), "{e}");
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn empty_items_are_errors() {
        let e = load_err(&[("MEMTRACE_LLM_BASE_URL", "http://a/v1,,http://b/v1")]);
        assert!(
            e.contains("MEMTRACE_LLM_BASE_URL has an empty item (item 2 of 3)"),
            "{e}"
        );
        let e = load_err(&[("MEMTRACE_LLM_API_KEY", "secret-a, ")]);
        assert!(
            e.contains("MEMTRACE_LLM_API_KEY has an empty item (item 2 of 2)"),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn bad_values_name_the_variable_the_value_and_what_is_expected() {
        let cases = [
            (
                "MEMTRACE_LLM_TIMEOUT",
                "soon",
                "a number of seconds above 0",
            ),
            ("MEMTRACE_LLM_TIMEOUT", "0", "a number of seconds above 0"),
            ("MEMTRACE_LLM_TIMEOUT", "-1", "a number of seconds above 0"),
            ("MEMTRACE_LLM_TIMEOUT", "NaN", "a number of seconds above 0"),
            (
                "MEMTRACE_LLM_TIMEOUT",
                "1e300",
                "a number of seconds above 0",
            ),
            (
                "MEMTRACE_LLM_CONCURRENCY",
                "0",
                "a whole number from 1 to 4294967295",
            ),
            ("MEMTRACE_LLM_CONCURRENCY", "2.5", "a whole number from 1"),
            ("MEMTRACE_LLM_MAX_CALLS", "0", "a whole number from 1"),
            (
                "MEMTRACE_LLM_MAX_CALLS",
                "99999999999",
                "a whole number from 1 to 4294967295",
            ),
            (
                "MEMTRACE_LLM_MAX_TOKENS",
                "0",
                "a whole number of at least 1",
            ),
            (
                "MEMTRACE_LLM_MAX_TOKENS",
                "lots",
                "a whole number of at least 1",
            ),
            ("MEMTRACE_LLM_RETRIES", "-1", "a whole number from 0"),
            (
                "MEMTRACE_LLM_BACKOFF_MS",
                "-5",
                "a whole number of at least 0",
            ),
            ("MEMTRACE_LLM_TOOLS", "fancy", "auto, native or text"),
            ("MEMTRACE_LLM_TEMPERATURE", "2.5", "a number from 0 to 2"),
            ("MEMTRACE_LLM_TEMPERATURE", "-0.1", "a number from 0 to 2"),
            ("MEMTRACE_LLM_TEMPERATURE", "warm", "a number from 0 to 2"),
            (
                "MEMTRACE_LLM_MAX_OUTPUT_TOKENS",
                "0",
                "a whole number from 1",
            ),
        ];
        for (name, value, expected) in cases {
            let e = load_err(&[("OPENAI_API_KEY", "sk-x"), (name, value)]);
            assert!(
                e.contains(&format!("{name} is '{value}': expected {expected}")),
                "{name}={value}: {e}"
            );
        }
        assert_eq!(
            load_err(&[("OPENAI_API_KEY", "sk-x"), ("MEMTRACE_LLM_TIMEOUT", "soon")]),
            "LLM configuration: MEMTRACE_LLM_TIMEOUT is 'soon': expected a number of seconds above 0"
        );
    }

    #[test]
    fn openai_without_key_is_an_error() {
        let expected = "LLM configuration: no API key for https://api.openai.com/v1: \
                        set OPENAI_API_KEY or MEMTRACE_LLM_API_KEY";
        assert_eq!(load_err(&[]), expected);
        assert_eq!(
            load_err(&[("OPENAI_BASE_URL", "https://API.openai.com/v1/")]),
            "LLM configuration: no API key for https://API.openai.com/v1: \
             set OPENAI_API_KEY or MEMTRACE_LLM_API_KEY"
        );
        // Also when it is one of several.
        let e = load_err(&[(
            "MEMTRACE_LLM_BASE_URL",
            "http://localhost:8000/v1,https://api.openai.com:443/v1",
        )]);
        assert!(
            e.contains("no API key for https://api.openai.com:443/v1"),
            "{e}"
        );
    }

    #[test]
    fn a_local_url_without_key_is_fine() {
        let c = load(&[("OPENAI_BASE_URL", "http://localhost:11434/v1/")]).unwrap();
        assert_eq!(urls_and_keys(&c), [("http://localhost:11434/v1", None)]);
        // A host that merely contains the name is not OpenAI's.
        let c = load(&[("OPENAI_BASE_URL", "https://api.openai.com.proxy.example/v1")]).unwrap();
        assert_eq!(c.endpoints[0].api_key, None);
    }

    #[test]
    fn urls_need_http_and_no_credentials() {
        let e = load_err(&[("MEMTRACE_LLM_BASE_URL", "localhost:8000/v1")]);
        assert!(
            e.contains("MEMTRACE_LLM_BASE_URL is 'localhost:8000/v1': expected a URL starting with http:// or https://"),
            "{e}"
        );
        let e = load_err(&[("OPENAI_BASE_URL", "ftp://host/v1")]);
        assert!(e.contains("OPENAI_BASE_URL is 'ftp://host/v1'"), "{e}");
        let e = load_err(&[("OPENAI_BASE_URL", "https:///v1")]);
        assert!(e.contains("expected a URL with a host"), "{e}");
        let e = load_err(&[(
            "MEMTRACE_LLM_BASE_URL",
            "http://a/v1,https://bob:hunter2@b/v1",
        )]);
        assert!(e.contains("MEMTRACE_LLM_BASE_URL (item 2 of 2)"), "{e}");
        assert!(e.contains("MEMTRACE_LLM_API_KEY"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = load_err(&[("OPENAI_BASE_URL", "bob:hunter2@b/v1")]);
        assert!(!e.contains("hunter2"), "{e}");
        // An @ in the path is no credential.
        let c = load(&[("OPENAI_BASE_URL", "http://h/v1/@x")]).unwrap();
        assert_eq!(c.endpoints[0].base_url, "http://h/v1/@x");

        let (c, path) = load_file(&[], "[[endpoint]]\nbase_url = \"https://u:hunter2@h/v1\"\n");
        let e = c.unwrap_err().to_string();
        assert!(
            e.contains(&format!("{}: endpoint 1 base_url", path.display())),
            "{e}"
        );
        assert!(!e.contains("hunter2"), "{e}");
    }

    #[test]
    fn file_unknown_key_names_the_key_and_the_file() {
        let (c, path) = load_file(&[], "model = \"m\"\ntimeout = 5\n");
        let e = c.unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("unknown field `timeout`"), "{e}");
        assert!(e.contains("line 2, column 1"), "{e}");

        let (c, _) = load_file(
            &[],
            "[[endpoint]]\nbase_url = \"http://h/v1\"\napi_keys = \"x\"\n",
        );
        let e = c.unwrap_err().to_string();
        assert!(e.contains("unknown field `api_keys`"), "{e}");
    }

    #[test]
    fn file_syntax_error_names_the_file() {
        let (c, path) = load_file(&[], "model = \"m\"\nconcurrency = = 3\n");
        let e = c.unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        assert!(e.contains("line 2"), "{e}");
        // A missing file names it too.
        let missing = Path::new("/nonexistent/memtrace/llm.toml");
        let e = Config::load(&env(&[]), Some(missing))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/memtrace/llm.toml"), "{e}");
    }

    #[test]
    fn file_bad_values_are_errors() {
        let cases = [
            (
                "timeout_secs = 0",
                "timeout_secs is '0': expected a number of seconds above 0",
            ),
            (
                "concurrency = 0",
                "concurrency is '0': expected a whole number from 1",
            ),
            (
                "max_calls = -3",
                "max_calls is '-3': expected a whole number from 1",
            ),
            (
                "max_tokens = 0",
                "max_tokens is '0': expected a whole number of at least 1",
            ),
            (
                "retries = -1",
                "retries is '-1': expected a whole number from 0",
            ),
            (
                "backoff_ms = -1",
                "backoff_ms is '-1': expected a whole number of at least 0",
            ),
            (
                "tools = \"fancy\"",
                "tools is 'fancy': expected auto, native or text",
            ),
            (
                "temperature = 3",
                "temperature is '3': expected a number from 0 to 2",
            ),
            (
                "max_output_tokens = 0",
                "max_output_tokens is '0': expected a whole number from 1",
            ),
            ("model = \"\"", "model is '': expected a model name"),
        ];
        for (line, expected) in cases {
            let (c, path) = load_file(&[("OPENAI_API_KEY", "sk-x")], line);
            let e = c.unwrap_err().to_string();
            assert!(
                e.contains(&format!("{}: {expected}", path.display())),
                "{line}: {e}"
            );
        }
        // Whole numbers are fine where fractions are allowed.
        let (c, _) = load_file(
            &[("OPENAI_API_KEY", "sk-x")],
            "timeout_secs = 1.5\ntemperature = 1",
        );
        let c = c.unwrap();
        assert_eq!(c.timeout, Duration::from_millis(1500));
        assert_eq!(c.temperature, 1.0);
    }

    #[test]
    fn file_api_key_env_reads_the_named_variable() {
        let text = "[[endpoint]]\nbase_url = \"http://localhost:11434/v1\"\napi_key_env = \"MY_OLLAMA_KEY\"\n\
                    [[endpoint]]\napi_key = \"inline-key\"\n";
        let (c, _) = load_file(&[("MY_OLLAMA_KEY", "ollama-key")], text);
        let c = c.unwrap();
        assert_eq!(
            urls_and_keys(&c),
            [
                ("http://localhost:11434/v1", Some("ollama-key")),
                ("https://api.openai.com/v1", Some("inline-key")),
            ]
        );

        let (c, path) = load_file(&[], text);
        let e = c.unwrap_err().to_string();
        assert!(
            e.contains(&format!("{}: endpoint 1", path.display())),
            "{e}"
        );
        assert!(e.contains("MY_OLLAMA_KEY"), "{e}");
        assert!(e.contains("not set"), "{e}");

        let both = "[[endpoint]]\nbase_url = \"http://h/v1\"\napi_key = \"secret-inline\"\napi_key_env = \"K\"\n";
        let (c, _) = load_file(&[("K", "secret-env")], both);
        let e = c.unwrap_err().to_string();
        assert!(e.contains("both api_key and api_key_env"), "{e}");
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn environment_urls_replace_the_files_pool() {
        let text = "[[endpoint]]\nbase_url = \"http://a/v1\"\napi_key = \"ka\"\n\
                    [[endpoint]]\nbase_url = \"http://b/v1\"\napi_key = \"kb\"\n";
        let (c, _) = load_file(&[], text);
        assert_eq!(
            urls_and_keys(&c.unwrap()),
            [("http://a/v1", Some("ka")), ("http://b/v1", Some("kb"))]
        );
        let (c, _) = load_file(&[("MEMTRACE_LLM_BASE_URL", "http://c/v1")], text);
        assert_eq!(urls_and_keys(&c.unwrap()), [("http://c/v1", None)]);
        let (c, _) = load_file(&[("MEMTRACE_LLM_API_KEY", "k1,k2")], text);
        assert_eq!(
            urls_and_keys(&c.unwrap()),
            [("http://a/v1", Some("k1")), ("http://b/v1", Some("k2"))]
        );
    }

    #[test]
    fn default_file_prefers_xdg_then_home() {
        assert_eq!(
            Config::default_file(&env(&[("XDG_CONFIG_HOME", "/xdg"), ("HOME", "/home/u")])),
            Some(PathBuf::from("/xdg/memtrace/llm.toml"))
        );
        assert_eq!(
            Config::default_file(&env(&[("HOME", "/home/u")])),
            Some(PathBuf::from("/home/u/.config/memtrace/llm.toml"))
        );
        // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
        assert_eq!(
            Config::default_file(&env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/home/u")])),
            Some(PathBuf::from("/home/u/.config/memtrace/llm.toml"))
        );
        assert_eq!(Config::default_file(&env(&[])), None);
    }

    #[test]
    fn the_default_file_is_read_when_present() {
        let dir = tempfile::tempdir().unwrap();
        let xdg = dir.path().to_str().unwrap();
        let vars = [("XDG_CONFIG_HOME", xdg), ("OPENAI_API_KEY", "sk-x")];
        // Absent: no error.
        let c = Config::load_default(&env(&vars)).unwrap();
        assert_eq!(c.model, "gpt-4o-mini");
        // Present: read.
        std::fs::create_dir_all(dir.path().join("memtrace")).unwrap();
        let path = dir.path().join("memtrace").join("llm.toml");
        std::fs::write(&path, "model = \"from-default-file\"\n").unwrap();
        assert_eq!(
            Config::load_default(&env(&vars)).unwrap().model,
            "from-default-file"
        );
        // MEMTRACE_LLM_CONFIG wins, and must exist.
        let other = dir.path().join("other.toml");
        std::fs::write(&other, "model = \"from-named-file\"\n").unwrap();
        let named = [
            ("XDG_CONFIG_HOME", xdg),
            ("OPENAI_API_KEY", "sk-x"),
            ("MEMTRACE_LLM_CONFIG", other.to_str().unwrap()),
        ];
        assert_eq!(
            Config::load_default(&env(&named)).unwrap().model,
            "from-named-file"
        );
        let gone = [
            ("OPENAI_API_KEY", "sk-x"),
            ("MEMTRACE_LLM_CONFIG", "/nonexistent/llm.toml"),
        ];
        let e = Config::load_default(&env(&gone)).unwrap_err().to_string();
        assert!(
            e.contains("MEMTRACE_LLM_CONFIG names /nonexistent/llm.toml"),
            "{e}"
        );
    }

    #[test]
    fn no_key_in_errors_or_debug() {
        const SECRET: &str = "sk-SECRET-9f8e7d";
        let with_key = |name: &'static str| [(name, SECRET)];
        // Loaded configurations print no key.
        for name in ["OPENAI_API_KEY", "MEMTRACE_LLM_API_KEY"] {
            let c = load(&with_key(name)).unwrap();
            assert!(!format!("{c:?}").contains(SECRET));
            assert!(!c.describe().contains(SECRET));
        }
        let (c, _) = load_file(&[], &format!("[[endpoint]]\napi_key = \"{SECRET}\"\n"));
        assert!(!format!("{:?}", c.unwrap()).contains(SECRET));

        // Errors with a key around print no key.
        let mut errors = vec![
            load_err(&[("MEMTRACE_LLM_API_KEY", &format!("{SECRET},"))]),
            load_err(&[("OPENAI_API_KEY", &format!(",{SECRET}"))]),
            load_err(&[
                (
                    "MEMTRACE_LLM_BASE_URL",
                    "http://a/v1,http://b/v1,http://c/v1",
                ),
                ("MEMTRACE_LLM_API_KEY", &format!("{SECRET},{SECRET}")),
            ]),
            load_err(&[("OPENAI_BASE_URL", &format!("https://user:{SECRET}@h/v1"))]),
            load_err(&[
                ("OPENAI_API_KEY", SECRET),
                ("MEMTRACE_LLM_TEMPERATURE", "9"),
            ]),
        ];
        let files = [
            // The key on the line of the error.
            format!("api_key = \"{SECRET}\"\n"),
            format!("[[endpoint]]\napi_key = \"{SECRET}\"\napi_key_env = \"X\"\n"),
            format!("[[endpoint]]\napi_key = \"{SECRET}\" junk\n"),
            format!("[[endpoint]]\napi_key = \"{SECRET}\"\napi_key = \"{SECRET}\"\n"),
            format!("[[endpoint]]\nbase_url = \"https://u:{SECRET}@h/v1\"\n"),
        ];
        for text in &files {
            let (c, _) = load_file(&[("X", SECRET)], text);
            errors.push(c.unwrap_err().to_string());
        }
        for e in errors {
            assert!(!e.contains(SECRET) && !e.contains("9f8e7d"), "{e}");
        }
    }
}
