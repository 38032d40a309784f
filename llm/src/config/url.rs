//! Reading and checking base URLs without quoting credentials.

use crate::{LlmError, Result};

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
pub(super) fn host(url: &str) -> String {
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
pub(super) fn check_url(url: &str, source: &str) -> Result<String> {
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
