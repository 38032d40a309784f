//! Where the configuration is read from: built-in defaults, a TOML file,
//! then the environment over it.

use std::path::{Path, PathBuf};

use crate::{LlmError, Result};

use super::defaults::{DEFAULT_BASE_URL, DEFAULT_MODEL, OPENAI_HOST};
use super::env::var;
use super::file::read_file;
use super::pool::{pool, pool_of};
use super::setting::{Raw, Setting};
use super::types::Config;
use super::url::host;

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
    pub(super) fn load_default(env: &dyn Fn(&str) -> Option<String>) -> Result<Config> {
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
