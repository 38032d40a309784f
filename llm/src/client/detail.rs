//! How failures are told: endpoints named without credentials, error
//! bodies shortened and without the key, and the hints that go with them.

use crate::chat::{excerpt, parse_response};
use crate::config::Secret;

/// The deepest cause of an error, in words.
pub(super) fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut e = e;
    while let Some(source) = e.source() {
        e = source;
    }
    e.to_string()
}

/// `text` with every occurrence of the key replaced by `***`.
pub(super) fn scrub(text: &str, key: Option<&Secret>) -> String {
    match key.map(Secret::expose) {
        Some(k) if !k.is_empty() => text.replace(k, "***"),
        _ => text.to_string(),
    }
}

/// An error body, shortened, keyless.
pub(super) fn body_excerpt(body: &str, key: Option<&Secret>) -> String {
    let body = body.trim();
    if body.is_empty() {
        "(empty body)".into()
    } else {
        excerpt(&scrub(body, key), 300)
    }
}

/// The detail of an HTTP error that is not retried, with a hint.
pub(super) fn refusal_detail(status: u16, body: &str, key: Option<&Secret>) -> String {
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
pub(super) fn malformed_detail(
    raw: &str,
    detail: String,
    key: Option<&Secret>,
    native: bool,
) -> String {
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
pub(super) fn endpoint_name(base_url: &str) -> String {
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
pub(super) fn is_loopback(base_url: &str) -> bool {
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
pub(super) fn refuses_tools(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("tool") || b.contains("function")
}
