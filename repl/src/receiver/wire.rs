//! OTLP/HTTP on the wire: the request body (protobuf or JSON, plain or
//! gzip) to an OTLP/JSON request, and the answers the specification asks
//! for: `ExportTraceServiceResponse` (with `partial_success` when spans were
//! refused) on success, a `google.rpc.Status` on failure, each in the
//! encoding of the request.

use std::io::Read;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use serde_json::{json, Map, Value};

/// How a body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/x-protobuf`.
    Protobuf,
    /// `application/json`.
    Json,
}

impl Format {
    /// The format a `Content-Type` names, if it is one of the two.
    pub fn of(content_type: &str) -> Option<Format> {
        let media = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match media.as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Format::Protobuf),
            "application/json" => Some(Format::Json),
            _ => None,
        }
    }

    /// The `Content-Type` of answers in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Protobuf => "application/x-protobuf",
            Format::Json => "application/json",
        }
    }
}

/// `google.rpc.Status` (google/rpc/status.proto), the body of every OTLP
/// error answer; its `details` are not sent.
#[derive(Clone, PartialEq, Message)]
pub struct Status {
    /// A `google.rpc.Code`.
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// What is wrong, for a person.
    #[prost(string, tag = "2")]
    pub message: String,
}

/// `google.rpc.Code` values the receiver answers with.
pub mod code {
    /// The request is malformed.
    pub const INVALID_ARGUMENT: i32 = 3;
    /// Too much at once, or too much held.
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    /// The receiver cannot take it now.
    pub const UNAVAILABLE: i32 = 14;
    /// Something else.
    pub const INTERNAL: i32 = 13;
}

/// A failure's body in `format`.
pub fn status(format: Format, code: i32, message: &str) -> Vec<u8> {
    match format {
        Format::Protobuf => Status {
            code,
            message: message.to_string(),
        }
        .encode_to_vec(),
        Format::Json => json!({"code": code, "message": message})
            .to_string()
            .into_bytes(),
    }
}

/// The success body in `format`: `partial_success` when spans were refused.
pub fn success(format: Format, rejected: usize, errors: &[String]) -> Vec<u8> {
    let partial = (rejected > 0).then(|| ExportTracePartialSuccess {
        rejected_spans: rejected as i64,
        error_message: format!(
            "{rejected} span(s) refused: {}{}",
            errors.join("; "),
            if rejected > errors.len() { "; ..." } else { "" }
        ),
    });
    match format {
        Format::Protobuf => ExportTraceServiceResponse {
            partial_success: partial,
        }
        .encode_to_vec(),
        Format::Json => match partial {
            Some(p) => json!({"partialSuccess": {
                "rejectedSpans": p.rejected_spans.to_string(),
                "errorMessage": p.error_message,
            }}),
            None => json!({}),
        }
        .to_string()
        .into_bytes(),
    }
}

/// Why a body could not be read, and the status that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// 400, 413 or 415.
    pub status: u16,
    /// What is wrong.
    pub message: String,
}

impl WireError {
    fn bad(message: impl Into<String>) -> WireError {
        WireError {
            status: 400,
            message: message.into(),
        }
    }
}

/// The body with its `Content-Encoding` undone (`gzip`, or none), at most
/// `max` bytes once decompressed.
pub fn decompress(body: Vec<u8>, encoding: Option<&str>, max: usize) -> Result<Vec<u8>, WireError> {
    let enc = encoding.map(|e| e.trim().to_ascii_lowercase());
    match enc.as_deref() {
        None | Some("") | Some("identity") => Ok(body),
        Some("gzip") | Some("x-gzip") => {
            let mut out = Vec::with_capacity((body.len() * 4).min(max));
            flate2::read::MultiGzDecoder::new(&body[..])
                .take(max as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| WireError::bad(format!("the body is not valid gzip: {e}")))?;
            if out.len() > max {
                return Err(WireError {
                    status: 413,
                    message: format!(
                        "the body decompresses to more than {max} bytes (memtrace serve --otlp-max-body)"
                    ),
                });
            }
            Ok(out)
        }
        Some(other) => Err(WireError {
            status: 415,
            message: format!(
                "Content-Encoding {other:?} is not supported; send gzip or no encoding"
            ),
        }),
    }
}

/// The body as an OTLP/JSON request object. Protobuf is decoded with the
/// published OpenTelemetry definitions (opentelemetry-proto) and written as
/// OTLP/JSON by their serde mapping; JSON is read as it is.
pub fn decode(body: &[u8], format: Format) -> Result<Map<String, Value>, WireError> {
    match format {
        Format::Protobuf => {
            let req = ExportTraceServiceRequest::decode(body).map_err(|e| {
                WireError::bad(format!(
                    "the body is not a protobuf ExportTraceServiceRequest: {e}"
                ))
            })?;
            match serde_json::to_value(&req) {
                Ok(Value::Object(m)) => Ok(m),
                Ok(_) => Err(WireError::bad("the request did not map to a JSON object")),
                Err(e) => Err(WireError::bad(format!(
                    "the request cannot be written as OTLP/JSON: {e}"
                ))),
            }
        }
        Format::Json => {
            let v: Value = serde_json::from_slice(body).map_err(|e| {
                WireError::bad(format!(
                    "the body is not JSON: {e} (line {}, column {})",
                    e.line(),
                    e.column()
                ))
            })?;
            match v {
                Value::Object(m) => Ok(m),
                other => Err(WireError::bad(format!(
                    "the body must be an ExportTraceServiceRequest object ({{\"resourceSpans\": [...]}}), found {}",
                    memtrace::engine::json_kind(&other)
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

    fn request() -> ExportTraceServiceRequest {
        let span = Span {
            trace_id: vec![0xab; 16],
            span_id: vec![0xcd; 8],
            name: "llm".into(),
            kind: 1,
            start_time_unix_nano: 1_700_000_000_000_000_000,
            end_time_unix_nano: 1_700_000_000_500_000_000,
            attributes: vec![
                KeyValue {
                    key: "openinference.span.kind".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue("LLM".into())),
                    }),
                    ..Default::default()
                },
                KeyValue {
                    key: "llm.token_count.total".into(),
                    value: Some(AnyValue {
                        value: Some(any_value::Value::IntValue(42)),
                    }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                scope_spans: vec![ScopeSpans {
                    spans: vec![span],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn protobuf_becomes_the_otlp_json_the_file_import_reads() {
        let bytes = request().encode_to_vec();
        let doc = decode(&bytes, Format::Protobuf).unwrap();
        let split = memtrace::engine::split_request(doc).unwrap();
        assert_eq!(split.rejected, 0, "{:?}", split.errors);
        let part = &split.parts[0];
        assert_eq!(part.trace_id, "ab".repeat(16));
        assert_eq!(part.spans[0].span_id, "cd".repeat(8));
        assert_eq!(
            part.spans[0].parent, None,
            "an empty parent id is no parent"
        );
        assert_eq!(part.spans[0].end, 1_700_000_000_500_000_000);
    }

    #[test]
    fn gzip_is_undone_within_the_limit_and_bad_bodies_are_400() {
        use std::io::Write;
        let plain = request().encode_to_vec();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(
            decompress(gz.clone(), Some("gzip"), 1 << 20).unwrap(),
            plain
        );
        let e = decompress(gz, Some("gzip"), 10).unwrap_err();
        assert_eq!(e.status, 413);
        assert_eq!(
            decompress(b"nope".to_vec(), Some("gzip"), 100)
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            decompress(b"x".to_vec(), Some("br"), 100)
                .unwrap_err()
                .status,
            415
        );
        let e = decode(b"\xff\xff\xff", Format::Protobuf).unwrap_err();
        assert!(e.message.contains("ExportTraceServiceRequest"), "{e:?}");
        let e = decode(b"[1]", Format::Json).unwrap_err();
        assert!(e.message.contains("found an array"), "{e:?}");
    }

    #[test]
    fn answers_are_encoded_as_the_request_was() {
        let ok = success(Format::Protobuf, 0, &[]);
        assert_eq!(
            ExportTraceServiceResponse::decode(&ok[..]).unwrap(),
            ExportTraceServiceResponse::default()
        );
        let partial = success(Format::Protobuf, 2, &["a: b".into()]);
        let r = ExportTraceServiceResponse::decode(&partial[..]).unwrap();
        assert_eq!(r.partial_success.as_ref().unwrap().rejected_spans, 2);
        let j: Value = serde_json::from_slice(&success(Format::Json, 1, &["x".into()])).unwrap();
        assert_eq!(j["partialSuccess"]["rejectedSpans"], "1");
        let s = Status::decode(&status(Format::Protobuf, 3, "bad")[..]).unwrap();
        assert_eq!((s.code, s.message.as_str()), (3, "bad"));
        assert_eq!(
            Format::of("application/json; charset=utf-8"),
            Some(Format::Json)
        );
        assert_eq!(Format::of("application/x-protobuf"), Some(Format::Protobuf));
        assert_eq!(Format::of("text/plain"), None);
    }
}
