//! The endpoint pool: which URLs, and which key goes to each.

use crate::{LlmError, Result};

use super::defaults::{DEFAULT_BASE_URL, OPENAI_HOST};
use super::env::list;
use super::file::FilePool;
use super::types::{Endpoint, Secret};
use super::url::{check_url, host};

/// The endpoint pool: the environment's URLs, else the file's endpoints,
/// else the default URL; then the environment's keys, if any, over the
/// keys these have.
pub(super) fn pool(
    env: &dyn Fn(&str) -> Option<String>,
    file: Option<FilePool>,
) -> Result<Vec<Endpoint>> {
    pool_of(env, file, "MEMTRACE_LLM_BASE_URL", "MEMTRACE_LLM_API_KEY")
}

/// [`pool`] with memtrace's own variables named `url_var` and `key_var`.
pub(super) fn pool_of(
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
    let (mut endpoints, described) = base_urls(urls, file)?;
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
    pair_keys(endpoints, keys, key_name, &described)
}

/// The endpoints before the environment's keys are given out, and how
/// they are named in errors: the environment's URLs (without keys), else
/// the file's endpoints, else the default URL.
fn base_urls(
    urls: Option<(&'static str, Vec<String>)>,
    file: Option<FilePool>,
) -> Result<(Vec<Endpoint>, String)> {
    Ok(match (urls, file) {
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
    })
}

/// `endpoints` with `keys` (named `key_name`): one key for every endpoint,
/// one endpoint for every key, or as many keys as endpoints, paired in order.
fn pair_keys(
    endpoints: Vec<Endpoint>,
    keys: Vec<String>,
    key_name: &str,
    described: &str,
) -> Result<Vec<Endpoint>> {
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
