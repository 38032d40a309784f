//! The small pieces of HTTP the viewer needs: replies, errors with their
//! status, and percent-decoding of paths and query strings.

use std::collections::HashMap;

use memtrace::{AnalysisError, EngineError};
use serde_json::{json, Value};

/// An answer to a request.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// A JSON body with this status.
    pub fn json(status: u16, value: &Value) -> Reply {
        Reply {
            status,
            content_type: "application/json; charset=utf-8",
            body: serde_json::to_vec(value).unwrap_or_else(|e| {
                format!("{{\"error\":\"internal\",\"message\":\"JSON: {e}\"}}").into_bytes()
            }),
        }
    }

    /// A JSON body with status 200.
    pub fn ok(value: &Value) -> Reply {
        Reply::json(200, value)
    }
}

/// Why a request failed, and the status that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The status code.
    pub status: u16,
    /// A short kind: `bad_request`, `not_found`, `query_error`, ...
    pub kind: &'static str,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// 400: the request is wrong.
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            kind: "bad_request",
            message: message.into(),
        }
    }

    /// 404: nothing is there.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 404,
            kind: "not_found",
            message: message.into(),
        }
    }

    /// 405: the path exists, the method does not.
    pub fn method(method: &str, path: &str, allowed: &str) -> ApiError {
        ApiError {
            status: 405,
            kind: "method_not_allowed",
            message: format!("{method} is not allowed on {path} (allowed: {allowed})"),
        }
    }

    /// 413: the body is larger than the endpoint takes.
    pub fn too_large(limit: u64) -> ApiError {
        ApiError {
            status: 413,
            kind: "payload_too_large",
            message: format!("the request body is larger than {limit} bytes"),
        }
    }

    /// The error as a reply.
    pub fn reply(&self) -> Reply {
        Reply::json(
            self.status,
            &json!({"error": self.kind, "message": self.message}),
        )
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        let message = e.to_string();
        let (status, kind) = match &e {
            EngineError::UnknownTrace(_) | EngineError::UnknownNode { .. } => (404, "not_found"),
            EngineError::Query(_) => (400, "query_error"),
            e if e.is_invalid_request() => (400, "bad_request"),
            EngineError::AmbiguousTrace { .. } | EngineError::Invalid { .. } => {
                (400, "bad_request")
            }
            EngineError::AlreadyStored { .. } => (409, "conflict"),
            EngineError::Cancelled => (503, "timeout"),
            EngineError::Extension(inner) => match inner.downcast_ref::<AnalysisError>() {
                Some(AnalysisError::UnknownCase { .. }) => (404, "not_found"),
                Some(e) if e.is_invalid_request() => (400, "bad_request"),
                _ => (500, "internal"),
            },
            _ => (500, "internal"),
        };
        ApiError {
            status,
            kind,
            message,
        }
    }
}

impl From<AnalysisError> for ApiError {
    fn from(e: AnalysisError) -> ApiError {
        ApiError::from(EngineError::from(e))
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> ApiError {
        ApiError {
            status: 500,
            kind: "internal",
            message: format!("JSON: {e}"),
        }
    }
}

/// Decodes `%XX` escapes (and `+` as a space when `plus` is set). Fails on
/// a broken escape or bytes that are not UTF-8.
pub fn percent_decode(s: &str, plus: bool) -> Result<String, ApiError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ApiError::bad(format!("broken %-escape in {s:?}")))?;
                out.push(hex);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| ApiError::bad(format!("{s:?} does not decode to UTF-8")))
}

/// A request target split into decoded path segments and query parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The path as sent (for messages).
    pub path: String,
    /// Its segments, decoded; empty segments dropped.
    pub segments: Vec<String>,
    /// The query parameters, decoded (the last of a repeated name wins).
    pub query: HashMap<String, String>,
}

impl Target {
    /// Splits and decodes a request target such as `/api/traces/%231?failed=1`.
    pub fn parse(url: &str) -> Result<Target, ApiError> {
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p, q),
            None => (url, ""),
        };
        let segments = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| percent_decode(s, false))
            .collect::<Result<Vec<_>, _>>()?;
        let mut params = HashMap::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            params.insert(percent_decode(k, true)?, percent_decode(v, true)?);
        }
        Ok(Target {
            path: path.to_string(),
            segments,
            query: params,
        })
    }

    /// A query parameter, when given and not empty.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .get(name)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// A whole-number query parameter in `range`, or `default` when absent.
    pub fn number(
        &self,
        name: &str,
        default: u64,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<u64, ApiError> {
        let Some(text) = self.param(name) else {
            return Ok(default);
        };
        let n: u64 = text
            .parse()
            .map_err(|_| ApiError::bad(format!("{name}: {text:?} is not a whole number")))?;
        if !range.contains(&n) {
            return Err(ApiError::bad(format!(
                "{name}: {n} is out of range ({}..={})",
                range.start(),
                range.end()
            )));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_decode_segments_and_parameters() {
        let t = Target::parse("/api/traces/%231/cases/prediction%3AQ20%401?a=x+y&b=%2F&c").unwrap();
        assert_eq!(
            t.segments,
            ["api", "traces", "#1", "cases", "prediction:Q20@1"]
        );
        assert_eq!(t.param("a"), Some("x y"));
        assert_eq!(t.param("b"), Some("/"));
        assert_eq!(t.param("c"), None);
        // A plus in a path segment stays a plus.
        assert_eq!(Target::parse("/a+b").unwrap().segments, ["a+b"]);
    }

    #[test]
    fn broken_escapes_and_numbers_are_bad_requests() {
        for url in ["/api/%zz", "/api/%4", "/api/%ff%fe"] {
            let e = Target::parse(url).unwrap_err();
            assert_eq!(e.status, 400, "{url}");
        }
        let t = Target::parse("/x?depth=abc&limit=9").unwrap();
        assert!(t
            .number("depth", 2, 1..=20)
            .unwrap_err()
            .message
            .contains("not a whole number"));
        assert!(t
            .number("limit", 2, 1..=5)
            .unwrap_err()
            .message
            .contains("out of range"));
        assert_eq!(t.number("other", 7, 1..=9).unwrap(), 7);
    }

    #[test]
    fn engine_errors_keep_their_message_and_get_a_status() {
        let e: ApiError = EngineError::UnknownTrace("x".into()).into();
        assert_eq!((e.status, e.kind), (404, "not_found"));
        assert!(e.message.contains("no trace x"));
        let e: ApiError = EngineError::TreeNeedsWalk.into();
        assert_eq!(
            (e.status, e.message.as_str()),
            (400, "a walk's tree is made of TRACE and FORWARD only")
        );
    }
}
