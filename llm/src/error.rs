//! The error type of the LLM client.

use thiserror::Error;

/// Everything talking to an LLM endpoint can report. No message ever holds
/// an API key; endpoints are named by their base URL without credentials.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The configuration (environment or file) is missing or wrong.
    #[error("LLM configuration: {0}")]
    Config(String),
    /// The endpoint could not be reached, or did not answer in time, on any try.
    #[error("{endpoint}: no answer after {attempts} tries: {detail}")]
    Unreachable {
        /// Base URL of the endpoint tried last.
        endpoint: String,
        /// How many requests were sent.
        attempts: u32,
        /// The last failure (timeout, refused, dropped connection, ...).
        detail: String,
    },
    /// The endpoint answered with an HTTP error that retrying will not mend
    /// (or kept answering 429/5xx until the tries ran out).
    #[error("{endpoint} answered HTTP {status}: {detail}")]
    Status {
        /// Base URL of the endpoint.
        endpoint: String,
        /// The HTTP status.
        status: u16,
        /// An excerpt of the body, and a hint.
        detail: String,
    },
    /// The endpoint answered 200 with a body that is not a chat completion.
    #[error("{endpoint} sent a response that is not a chat completion: {detail}")]
    Malformed {
        /// Base URL of the endpoint.
        endpoint: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The endpoint redirected the request to another origin (scheme, host
    /// and port), which the client does not follow: it would send the
    /// prompt, which holds trace content, and the API key there.
    #[error(
        "{endpoint} redirected the request to {to}, another origin; memtrace does not follow \
         a redirect to another origin, which would send the prompt (trace content) there: \
         set the base URL to the endpoint itself"
    )]
    Redirected {
        /// Base URL of the endpoint.
        endpoint: String,
        /// The origin it redirected to (`https://host:port`).
        to: String,
    },
    /// The work was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// Result type of the LLM client.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;
