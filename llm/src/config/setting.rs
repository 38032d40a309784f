//! The settings other than the pool, each checked the same way whether it
//! comes from a variable or from the file.

use std::fmt;
use std::time::Duration;

use crate::{LlmError, Result};

use super::types::Config;

/// The settings other than the pool, each read from one variable or one
/// file key with the same checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Setting {
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
pub(super) enum Raw<'a> {
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
    pub(super) const ALL: [Setting; 10] = [
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
    pub(super) fn variable(self) -> &'static str {
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
    pub(super) fn apply(self, config: &mut Config, name: &str, value: Raw<'_>) -> Result<()> {
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
