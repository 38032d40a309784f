//! What one request came to, and what the client does about it: the answer,
//! another try, or an error that ends the request.

use std::time::Duration;

use crate::config::Endpoint;
use crate::error::{LlmError, Result};

use super::detail::{body_excerpt, endpoint_name, refusal_detail};

/// What one request came to.
pub(super) enum Outcome {
    /// A 2xx answer and its body.
    Body(String),
    /// Any other HTTP answer.
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// No (complete) answer: timeout, refused, dropped.
    Transport(String),
    /// A redirect to this other origin, not followed.
    Redirected(String),
    /// The request could not even be built.
    Invalid(String),
}

/// Why the last try failed, when it may be retried.
pub(super) enum Failure {
    Unreachable(String),
    Status(u16, String),
    Malformed(String),
}

impl Failure {
    /// The error once no retry is left.
    pub(super) fn into_error(self, endpoint: String, attempts: u32) -> LlmError {
        match self {
            Failure::Unreachable(detail) => LlmError::Unreachable {
                endpoint,
                attempts,
                detail,
            },
            Failure::Status(status, detail) => LlmError::Status {
                endpoint,
                status,
                detail,
            },
            Failure::Malformed(detail) => LlmError::Malformed { endpoint, detail },
        }
    }
}

/// What the client does after one try.
pub(super) enum Verdict<T> {
    /// Returns the answer.
    Answer(T),
    /// Tries again, waiting at least as long as the server asked, if it did.
    Retry(Failure, Option<Duration>),
}

/// Judges the outcome of one try at `endpoint`. `read` turns a 2xx body
/// into the answer, or says (without the key) why the body is malformed,
/// which may be retried; so may a 429, a 5xx or a lost connection. Any
/// other outcome ends the request with its error.
pub(super) fn verdict<T>(
    outcome: Outcome,
    endpoint: &Endpoint,
    read: impl FnOnce(String) -> std::result::Result<T, String>,
) -> Result<Verdict<T>> {
    let key = endpoint.api_key.as_ref();
    let name = || endpoint_name(&endpoint.base_url);
    Ok(match outcome {
        Outcome::Body(raw) => match read(raw) {
            Ok(answer) => Verdict::Answer(answer),
            Err(detail) => Verdict::Retry(Failure::Malformed(detail), None),
        },
        Outcome::Status {
            status,
            retry_after,
            body,
        } if status == 429 || (500..=599).contains(&status) => {
            // Only these two statuses say how long to wait.
            let retry_after = retry_after.filter(|_| matches!(status, 429 | 503));
            let failure = Failure::Status(status, body_excerpt(&body, key));
            Verdict::Retry(failure, retry_after)
        }
        Outcome::Status { status, body, .. } => {
            return Err(LlmError::Status {
                endpoint: name(),
                status,
                detail: refusal_detail(status, &body, key),
            })
        }
        Outcome::Transport(detail) => Verdict::Retry(Failure::Unreachable(detail), None),
        Outcome::Redirected(to) => {
            return Err(LlmError::Redirected {
                endpoint: name(),
                to,
            })
        }
        Outcome::Invalid(detail) => {
            return Err(LlmError::Config(format!("endpoint {}: {detail}", name())))
        }
    })
}
