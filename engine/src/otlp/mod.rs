//! OpenTelemetry traces as memtrace traces: OTLP JSON (`{"resourceSpans":
//! [...]}`, what the collector's file exporter and Phoenix write, with the
//! OpenInference conventions for LLM applications) converted, trace by
//! trace, into the smartcomment export (plus `data.annotations` for failed
//! evaluations), which the import pipeline then validates and stores as it
//! stores any export.
//!
//! [`read`] reads spans and checks them, [`map`] turns one trace's spans into
//! an export (with the files it names), [`eval`] reads the evaluations spans
//! carry.

mod builder;
mod cases;
mod eval;
mod flows;
mod map;
mod read;
mod span_tree;
mod span_vars;
pub mod split;
mod values;

pub use eval::label_fails;

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::import::records::Invalid;

/// The top-level key that marks an OTLP request.
pub(crate) const KEY: &str = "resourceSpans";

/// Whether a top-level object (read without a `data` key) is an OTLP request.
pub(crate) fn is_otlp(header: &Map<String, Value>) -> bool {
    header.contains_key(KEY)
}

/// One OpenTelemetry trace as an export.
#[derive(Debug)]
pub(crate) struct Converted {
    /// The export object.
    pub export: Value,
    /// How many spans it holds.
    pub spans: usize,
    /// The requests that hold its spans, by their place in the input, in order.
    pub requests: Vec<usize>,
}

/// An error in one of the requests: its source's name and where.
pub(crate) type Failed = (String, Invalid);

/// Converts OTLP requests (each with the name of its source, for errors)
/// into one export per trace id, ordered by the trace's first start (then
/// trace id). A trace may be spread over several requests (the lines of a
/// collector's file); a span sent twice is kept once when both copies
/// agree, and is an error when they differ, unless `keep_first` (a
/// receiver's spans, where a copy is an exporter's retry): then the first
/// copy is kept.
pub(crate) fn convert(
    requests: Vec<(String, Map<String, Value>)>,
    keep_first: bool,
) -> Result<Vec<Converted>, Failed> {
    let mut traces: Vec<(String, Vec<read::Span>)> = Vec::new();
    let mut holding: Vec<Vec<usize>> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut seen: HashMap<(String, String), (usize, usize)> = HashMap::new();
    let mut last_source = String::from("<input>");
    for (r, (source, doc)) in requests.into_iter().enumerate() {
        let name: Rc<str> = Rc::from(source.as_str());
        let spans = read::spans(&doc, &name).map_err(|i| (source.clone(), i))?;
        for s in spans {
            let t = *by_id.entry(s.trace_id.clone()).or_insert_with(|| {
                traces.push((s.trace_id.clone(), Vec::new()));
                holding.push(Vec::new());
                traces.len() - 1
            });
            if holding[t].last() != Some(&r) {
                holding[t].push(r);
            }
            let key = (s.trace_id.clone(), s.span_id.clone());
            if let Some(&(ti, si)) = seen.get(&key) {
                let first = &traces[ti].1[si];
                if keep_first || same(first, &s) {
                    continue;
                }
                return Err((
                    source.clone(),
                    Invalid {
                        path: format!("{}.spanId", s.at.1),
                        reason: format!(
                            "span {} of trace {} appears twice with different content \
                             (first at {}: {})",
                            s.span_id, s.trace_id, first.at.0, first.at.1
                        ),
                    },
                ));
            }
            seen.insert(key, (t, traces[t].1.len()));
            traces[t].1.push(s);
        }
        last_source = source;
    }
    if traces.is_empty() {
        return Err((
            last_source,
            Invalid {
                path: KEY.into(),
                reason: "the OTLP input holds no spans".into(),
            },
        ));
    }
    let mut traces: Vec<_> = traces.into_iter().zip(holding).collect();
    traces.sort_by_key(|((id, spans), _)| (spans.iter().map(|s| s.start).min(), id.clone()));
    Ok(traces
        .into_iter()
        .map(|((id, spans), requests)| Converted {
            spans: spans.len(),
            export: map::trace(&id, spans),
            requests,
        })
        .collect())
}

/// Whether two copies of a span say the same.
fn same(a: &read::Span, b: &read::Span) -> bool {
    a.name == b.name
        && a.parent == b.parent
        && a.start == b.start
        && a.end == b.end
        && a.attrs == b.attrs
        && a.status == b.status
        && a.status_message == b.status_message
        && a.events.len() == b.events.len()
        && a.links.len() == b.links.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(spans: Value) -> Map<String, Value> {
        let Value::Object(m) = json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})
        else {
            panic!()
        };
        m
    }

    fn sp(trace: &str, span: &str, name: &str, start: u64) -> Value {
        json!({"traceId": trace, "spanId": span, "name": name,
               "startTimeUnixNano": start.to_string(), "endTimeUnixNano": (start + 5).to_string()})
    }

    const T1: &str = "11111111111111111111111111111111";
    const T2: &str = "22222222222222222222222222222222";

    #[test]
    fn spans_group_by_trace_across_requests() {
        let out = convert(
            vec![
                (
                    "f:1".into(),
                    req(json!([
                        sp(T2, "00000000000000a1", "x", 50),
                        sp(T1, "00000000000000b1", "y", 10)
                    ])),
                ),
                (
                    "f:2".into(),
                    req(json!([
                        sp(T2, "00000000000000a2", "z", 60),
                        // Sent again, the same: kept once.
                        sp(T1, "00000000000000b1", "y", 10)
                    ])),
                ),
            ],
            false,
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].export["graph_id"], format!("otel-{T1}"));
        assert_eq!((out[0].spans, out[1].spans), (1, 2));
        assert_eq!(
            (&out[0].requests[..], &out[1].requests[..]),
            (&[0, 1][..], &[0, 1][..])
        );
    }

    #[test]
    fn a_span_sent_twice_with_other_content_is_an_error() {
        let both = vec![
            (
                "f:1".into(),
                req(json!([sp(T1, "00000000000000b1", "y", 10)])),
            ),
            (
                "f:2".into(),
                req(json!([sp(T1, "00000000000000b1", "other", 10)])),
            ),
        ];
        let e = convert(both.clone(), false).unwrap_err();
        assert_eq!(e.0, "f:2");
        assert_eq!(e.1.path, "resourceSpans[0].scopeSpans[0].spans[0].spanId");
        assert!(e.1.reason.contains("first at f:1"), "{}", e.1.reason);
        // A receiver keeps the first copy (the second is an exporter's retry).
        let kept = convert(both, true).unwrap();
        assert_eq!(kept[0].spans, 1);
        assert_eq!(kept[0].export["metadata"]["root_span_name"], "y");
    }

    #[test]
    fn no_spans_is_an_error() {
        let e = convert(vec![("f".into(), req(json!([])))], false).unwrap_err();
        assert_eq!(e.1.path, "resourceSpans");
    }
}
