//! `POST /v1/traces`: the OTLP/HTTP endpoint of `memtrace serve` and
//! `memtrace collect`. The body is read whole first (at most the size
//! limit, and cut off when the client stalls), then decoded, split by
//! trace and written ahead on a blocking thread that holds one of a few
//! places; the answer comes once the spans are durable.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Response, StatusCode};
use tokio::sync::Semaphore;
use tower_http::timeout::{TimeoutBody, TimeoutError};

use crate::receiver::wire::{self, code, Format};
use crate::receiver::{Receiver, Refusal};

/// The path OTLP/HTTP exporters post traces to.
pub const PATH: &str = "/v1/traces";

/// How long a request waits for a place before it gets 429.
const PLACE_WAIT: Duration = Duration::from_secs(2);

/// The endpoint: the receiver and the places of its requests.
pub struct Endpoint {
    receiver: Arc<Receiver>,
    places: Arc<Semaphore>,
    total: usize,
    idle: Duration,
}

/// An answer: status, body, its format and the seconds of `Retry-After`.
struct Answer {
    status: u16,
    format: Format,
    body: Vec<u8>,
    retry_after: Option<u64>,
}

impl Answer {
    fn error(format: Format, status: u16, code: i32, message: &str) -> Answer {
        Answer {
            status,
            format,
            body: wire::status(format, code, message),
            retry_after: None,
        }
    }

    fn retry(mut self, seconds: u64) -> Answer {
        self.retry_after = Some(seconds);
        self
    }
}

impl Endpoint {
    /// The endpoint of `receiver`, taking `places` requests at once.
    pub fn new(receiver: Arc<Receiver>, places: usize, idle: Duration) -> Endpoint {
        Endpoint {
            receiver,
            places: Arc::new(Semaphore::new(places.max(1))),
            total: places.max(1),
            idle,
        }
    }

    /// Answers one request to [`PATH`].
    pub async fn answer(
        &self,
        method: &Method,
        headers: &HeaderMap,
        body: Incoming,
    ) -> Response<Full<Bytes>> {
        let a = self.answer_inner(method, headers, body).await;
        let mut resp = Response::new(Full::new(Bytes::from(a.body)));
        *resp.status_mut() =
            StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let h = resp.headers_mut();
        h.insert(
            "content-type",
            HeaderValue::from_static(a.format.content_type()),
        );
        h.insert("cache-control", HeaderValue::from_static("no-store"));
        if let Some(s) = a.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                h.insert("retry-after", v);
            }
        }
        resp
    }

    async fn answer_inner(&self, method: &Method, headers: &HeaderMap, body: Incoming) -> Answer {
        let header = |name: &str| {
            headers
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        let content_type = header("content-type").unwrap_or_default();
        let format = Format::of(&content_type);
        let reply_format = format.unwrap_or(Format::Json);
        if method != Method::POST {
            return Answer::error(
                reply_format,
                405,
                code::INVALID_ARGUMENT,
                &format!("{method} is not allowed on {PATH}; OTLP exporters POST their spans"),
            );
        }
        let Some(format) = format else {
            return Answer::error(
                reply_format,
                415,
                code::INVALID_ARGUMENT,
                &format!(
                    "Content-Type {content_type:?} is not OTLP/HTTP: send application/x-protobuf or application/json"
                ),
            );
        };
        let max = self.receiver.options().max_body;
        let too_large = || {
            Answer::error(
                format,
                413,
                code::RESOURCE_EXHAUSTED,
                &format!(
                    "the request body is larger than {max} bytes (memtrace serve --otlp-max-body); send smaller batches"
                ),
            )
        };
        let declared = header("content-length").and_then(|l| l.trim().parse::<u64>().ok());
        if declared.is_some_and(|l| l > max as u64) {
            return too_large();
        }
        let bytes = match read_body(body, self.idle, max).await {
            Ok(b) => b,
            Err(BodyError::TooLarge) => return too_large(),
            Err(BodyError::Stalled) => {
                return Answer::error(
                    format,
                    408,
                    code::UNAVAILABLE,
                    &format!(
                        "the client sent nothing for {} s in the middle of the body; nothing of it was kept",
                        self.idle.as_secs_f64()
                    ),
                )
            }
            Err(BodyError::Broken(e)) => {
                return Answer::error(
                    format,
                    400,
                    code::INVALID_ARGUMENT,
                    &format!("reading the body: {e}"),
                )
            }
        };
        let place = self.places.clone().acquire_owned();
        let waited = tokio::time::timeout(PLACE_WAIT, place).await;
        let Ok(Ok(permit)) = waited else {
            let message = format!(
                "{} OTLP requests are being written and none finished within {} s; retry later",
                self.total,
                PLACE_WAIT.as_secs()
            );
            return Answer::error(format, 429, code::RESOURCE_EXHAUSTED, &message).retry(1);
        };
        let encoding = header("content-encoding");
        let receiver = self.receiver.clone();
        let job = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            take(&receiver, bytes.to_vec(), encoding.as_deref(), format, max)
        });
        job.await.unwrap_or_else(|e| {
            Answer::error(
                format,
                500,
                code::INTERNAL,
                &format!("the request's work failed: {e}"),
            )
        })
    }
}

/// Decodes, splits and writes ahead one body (on a blocking thread).
fn take(
    receiver: &Receiver,
    body: Vec<u8>,
    encoding: Option<&str>,
    format: Format,
    max: usize,
) -> Answer {
    let bad = |status: u16, message: &str| {
        let code = if status == 413 {
            code::RESOURCE_EXHAUSTED
        } else {
            code::INVALID_ARGUMENT
        };
        Answer::error(format, status, code, message)
    };
    let plain = match wire::decompress(body, encoding, max) {
        Ok(p) => p,
        Err(e) => return bad(e.status, &e.message),
    };
    let doc = match wire::decode(&plain, format) {
        Ok(d) => d,
        Err(e) => return bad(e.status, &e.message),
    };
    let split = match memtrace::engine::split_request(doc) {
        Ok(s) => s,
        Err(e) => return bad(400, &format!("the request is malformed: {e}")),
    };
    match receiver.accept(&split) {
        Ok(_) => Answer {
            status: 200,
            format,
            body: wire::success(format, split.rejected, &split.errors),
            retry_after: None,
        },
        Err(Refusal::Full(why)) => {
            let wait = receiver.options().quiet.as_secs().clamp(1, 30);
            Answer::error(format, 503, code::UNAVAILABLE, &why).retry(wait)
        }
        Err(Refusal::Spool(why)) => Answer::error(format, 503, code::UNAVAILABLE, &why).retry(5),
        Err(Refusal::Stopping) => Answer::error(
            format,
            503,
            code::UNAVAILABLE,
            "the receiver is stopping; send again to the next one",
        )
        .retry(1),
    }
}

enum BodyError {
    TooLarge,
    Stalled,
    Broken(String),
}

/// Reads a whole body of at most `max` bytes, giving up when the client
/// sends nothing for `idle`.
async fn read_body(body: Incoming, idle: Duration, max: usize) -> Result<Bytes, BodyError> {
    let mut body = std::pin::pin!(TimeoutBody::new(idle, body));
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    if out.len() + data.len() > max {
                        return Err(BodyError::TooLarge);
                    }
                    out.extend_from_slice(&data);
                }
            }
            Err(e) if e.downcast_ref::<TimeoutError>().is_some() => return Err(BodyError::Stalled),
            Err(e) => return Err(BodyError::Broken(e.to_string())),
        }
    }
    Ok(Bytes::from(out))
}
