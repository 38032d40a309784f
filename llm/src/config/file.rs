//! The TOML config file: its keys, how it is read, and its endpoints.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::{LlmError, Result};

use super::defaults::DEFAULT_BASE_URL;
use super::env::var;
use super::setting::{Raw, Setting};
use super::types::{Config, Endpoint, Secret};
use super::url::check_url;

/// The config file. Every key is optional; an unknown one is an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSettings {
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
pub(super) struct FilePool {
    pub(super) path: PathBuf,
    pub(super) endpoints: Vec<Endpoint>,
}

/// Reads and parses the file; errors name the file, and the line and column
/// of a TOML error. The message is built from the toml crate's message and
/// span rather than its `Display`, which quotes the offending line, and that
/// line may hold a key.
pub(super) fn read_file(path: &Path) -> Result<FileSettings> {
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
    pub(super) fn apply(
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
