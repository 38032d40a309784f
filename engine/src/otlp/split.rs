//! One OTLP request split by trace, for a receiver that gets the spans of
//! many traces interleaved and in pieces (`memtrace serve`'s `/v1/traces`):
//! every span is checked as the file import checks it, the spans that fail
//! are counted out (OTLP's `partial_success`), and the rest are regrouped
//! into one request per trace id, each holding its spans under their own
//! resource and scope, ready to be kept until the trace is complete and
//! then imported with [`crate::Engine::import_otlp`].

use std::rc::Rc;

use serde_json::{Map, Value};

use super::read;
use crate::import::records::{json_kind, Invalid};

/// A span's identity and what tells whether its trace is complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSpanHead {
    /// The span id, 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's span id; `None` for a root span.
    pub parent: Option<String>,
    /// When it ended, in nanoseconds since the Unix epoch (0 when not given).
    pub end: u64,
}

/// The spans of one trace in one request, as a request of their own.
#[derive(Debug, Clone)]
pub struct OtlpPart {
    /// The trace id, 32 lowercase hex digits.
    pub trace_id: String,
    /// `{"resourceSpans": [...]}` with only this trace's accepted spans.
    pub request: Map<String, Value>,
    /// Its spans, in request order.
    pub spans: Vec<OtlpSpanHead>,
}

/// A request split by trace.
#[derive(Debug, Clone, Default)]
pub struct OtlpSplit {
    /// One part per trace id, in the order of each trace's first span.
    pub parts: Vec<OtlpPart>,
    /// Spans refused (each names its place and reason in `errors`).
    pub rejected: usize,
    /// The first few reasons, `JSON path: reason`.
    pub errors: Vec<String>,
}

/// Reasons kept for the answer; the count says how many there were.
const ERRORS_KEPT: usize = 5;

/// A request that cannot be read at all: its place and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpMalformed {
    /// JSON path of the offending value.
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for OtlpMalformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid at {}: {}", self.path, self.reason)
    }
}

impl From<Invalid> for OtlpMalformed {
    fn from(i: Invalid) -> OtlpMalformed {
        OtlpMalformed {
            path: i.path,
            reason: i.reason,
        }
    }
}

/// A resource entry and its scope entries with their spans.
type Shell = (
    Map<String, Value>,
    &'static str,
    Vec<(Map<String, Value>, Vec<Value>)>,
);

/// Where a part's spans go: the part's resource entry and scope entry for
/// the request's current resource and scope.
struct Building {
    trace_id: String,
    /// Each resource entry (without its scopes) with its scope entries
    /// (without their spans) and their spans.
    resources: Vec<Shell>,
    /// The request's resource and scope numbers the last span came from.
    at: Option<(usize, usize)>,
    spans: Vec<OtlpSpanHead>,
}

impl Building {
    /// The request of the trace's spans, each resource and scope holding
    /// the spans of it that the trace has, in order.
    fn into_part(self) -> OtlpPart {
        let resources = self
            .resources
            .into_iter()
            .map(|(mut rs, key, scopes)| {
                let list = scopes
                    .into_iter()
                    .map(|(mut ss, spans)| {
                        ss.insert("spans".into(), Value::Array(spans));
                        Value::Object(ss)
                    })
                    .collect();
                rs.insert(key.into(), Value::Array(list));
                Value::Object(rs)
            })
            .collect();
        let mut request = Map::new();
        request.insert(super::KEY.into(), Value::Array(resources));
        OtlpPart {
            trace_id: self.trace_id,
            request,
            spans: self.spans,
        }
    }
}

/// Splits an OTLP request (`{"resourceSpans": [...]}` in either JSON form)
/// by trace. A request whose structure is wrong (no `resourceSpans` array,
/// a resource or scope that is not an object or has bad attributes) is
/// refused whole; a span that the file import would refuse (a bad id, a
/// value of the wrong type) is counted in `rejected` and left out. An empty
/// request splits into nothing.
pub fn split_request(mut doc: Map<String, Value>) -> Result<OtlpSplit, OtlpMalformed> {
    let source: Rc<str> = Rc::from("request");
    let list = into_array(doc.remove(super::KEY), super::KEY)?;
    let mut out = OtlpSplit::default();
    let mut building: Vec<Building> = Vec::new();
    let mut by_trace: std::collections::HashMap<String, usize> = Default::default();
    for (r, rs) in list.into_iter().enumerate() {
        let rpath = format!("resourceSpans[{r}]");
        let mut rs = into_object(rs, &rpath)?;
        let resource = match rs.get("resource") {
            None | Some(Value::Null) => Map::new(),
            Some(v) => {
                let p = format!("{rpath}.resource");
                let res = read::object(v, &p)?;
                read::attributes(res.get("attributes"), &format!("{p}.attributes"))?
            }
        };
        let resource = Rc::new(resource);
        let (scopes_key, scope_key) = if rs.contains_key("scopeSpans") {
            ("scopeSpans", "scope")
        } else {
            ("instrumentationLibrarySpans", "instrumentationLibrary")
        };
        let scopes = into_array(rs.remove(scopes_key), &format!("{rpath}.{scopes_key}"))?;
        for (s, ss) in scopes.into_iter().enumerate() {
            let spath = format!("{rpath}.{scopes_key}[{s}]");
            let mut ss = into_object(ss, &spath)?;
            let scope = Rc::new(read::scope(
                ss.get(scope_key),
                &format!("{spath}.{scope_key}"),
            )?);
            let spans = into_array(ss.remove("spans"), &format!("{spath}.spans"))?;
            for (i, raw) in spans.into_iter().enumerate() {
                let path = format!("{spath}.spans[{i}]");
                let span = match read::span(&raw, &path, &resource, &scope, &source) {
                    Ok(span) => span,
                    Err(e) => {
                        out.rejected += 1;
                        if out.errors.len() < ERRORS_KEPT {
                            out.errors.push(format!("{}: {}", e.path, e.reason));
                        }
                        continue;
                    }
                };
                let b = *by_trace.entry(span.trace_id.clone()).or_insert_with(|| {
                    building.push(Building {
                        trace_id: span.trace_id.clone(),
                        resources: Vec::new(),
                        at: None,
                        spans: Vec::new(),
                    });
                    building.len() - 1
                });
                let part = &mut building[b];
                if part.at.map(|(pr, _)| pr) != Some(r) {
                    part.resources.push((rs.clone(), scopes_key, Vec::new()));
                    part.at = None;
                }
                let scopes_of = match part.resources.last_mut() {
                    Some((_, _, list)) => list,
                    None => continue,
                };
                if part.at != Some((r, s)) {
                    scopes_of.push((ss.clone(), Vec::new()));
                    part.at = Some((r, s));
                }
                if let Some((_, list)) = scopes_of.last_mut() {
                    list.push(raw);
                }
                part.spans.push(OtlpSpanHead {
                    span_id: span.span_id,
                    parent: span.parent,
                    end: span.end,
                });
            }
        }
    }
    out.parts = building.into_iter().map(Building::into_part).collect();
    Ok(out)
}

/// A list that may be absent (no entries), taken out of its request.
fn into_array(v: Option<Value>, path: &str) -> Result<Vec<Value>, Invalid> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(Invalid {
            path: path.to_string(),
            reason: format!("must be an array, found {}", json_kind(&other)),
        }),
    }
}

/// An object, taken out of its request.
fn into_object(v: Value, path: &str) -> Result<Map<String, Value>, Invalid> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Invalid {
            path: path.to_string(),
            reason: format!("must be an object, found {}", json_kind(&other)),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> Map<String, Value> {
        let Value::Object(m) = v else { panic!() };
        m
    }

    const T1: &str = "11111111111111111111111111111111";
    const T2: &str = "22222222222222222222222222222222";

    fn sp(trace: &str, span: &str, parent: Option<&str>) -> Value {
        let mut v = json!({"traceId": trace, "spanId": span, "name": "s",
                           "startTimeUnixNano": "10", "endTimeUnixNano": "20"});
        if let Some(p) = parent {
            v["parentSpanId"] = json!(p);
        }
        v
    }

    #[test]
    fn spans_are_regrouped_by_trace_under_their_resource_and_scope() {
        let d = doc(json!({"resourceSpans": [
            {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]},
             "scopeSpans": [
                {"scope": {"name": "x"}, "spans": [sp(T1, "00000000000000a1", None), sp(T2, "00000000000000b1", None)]},
                {"scope": {"name": "y"}, "spans": [sp(T1, "00000000000000a2", Some("00000000000000a1"))]}
             ]},
            {"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "b"}}]},
             "scopeSpans": [{"scope": {"name": "x"}, "spans": [sp(T2, "00000000000000b2", Some("00000000000000b1"))]}]}
        ]}));
        let s = split_request(d).unwrap();
        assert_eq!(s.rejected, 0);
        assert_eq!(s.parts.len(), 2);
        let p1 = &s.parts[0];
        assert_eq!(p1.trace_id, T1);
        assert_eq!(p1.spans.len(), 2);
        assert_eq!(p1.spans[0].parent, None);
        assert_eq!(p1.spans[1].parent.as_deref(), Some("00000000000000a1"));
        assert_eq!(p1.spans[1].end, 20);
        let rs = p1.request["resourceSpans"].as_array().unwrap();
        assert_eq!(rs.len(), 1);
        assert_eq!(rs[0]["scopeSpans"].as_array().unwrap().len(), 2);
        assert_eq!(rs[0]["scopeSpans"][1]["scope"]["name"], "y");
        let p2 = &s.parts[1];
        let rs = p2.request["resourceSpans"].as_array().unwrap();
        assert_eq!(rs.len(), 2, "the second trace's spans keep both resources");
        assert_eq!(
            rs[1]["resource"]["attributes"][0]["value"]["stringValue"],
            "b"
        );
    }

    #[test]
    fn a_bad_span_is_rejected_alone_and_a_bad_structure_refuses_the_request() {
        let d = doc(json!({"resourceSpans": [{"scopeSpans": [{"spans": [
            sp(T1, "00000000000000a1", None),
            sp(T1, "xyz", None),
            {"traceId": T1, "spanId": "00000000000000a3", "name": 7},
        ]}]}]}));
        let s = split_request(d).unwrap();
        assert_eq!(s.rejected, 2);
        assert_eq!(s.parts[0].spans.len(), 1);
        assert!(
            s.errors[0].starts_with("resourceSpans[0].scopeSpans[0].spans[1].spanId: "),
            "{:?}",
            s.errors
        );
        let e = split_request(doc(json!({"resourceSpans": {"x": 1}}))).unwrap_err();
        assert_eq!(e.path, "resourceSpans");
        let e = split_request(doc(json!({"resourceSpans": [{"scopeSpans": [3]}]}))).unwrap_err();
        assert_eq!(e.path, "resourceSpans[0].scopeSpans[0]");
        assert!(split_request(doc(json!({"resourceSpans": []})))
            .unwrap()
            .parts
            .is_empty());
    }

    #[test]
    fn a_trace_received_keeps_its_requests_and_one_stored_again_takes_over_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::Engine::open(dir.path().join("t.db")).unwrap();
        let first = doc(json!({"resourceSpans": [{"scopeSpans": [{"spans": [
            sp(T1, "00000000000000a1", None), sp(T2, "00000000000000b1", None)]}]}]}));
        let late = doc(json!({"resourceSpans": [{"scopeSpans": [{"spans": [
            sp(T1, "00000000000000a2", Some("00000000000000a1"))]}]}]}));
        let receive = |docs: &[&Map<String, Value>], force| {
            let requests = docs
                .iter()
                .map(|d| ("r".to_string(), (*d).clone()))
                .collect();
            db.import_otlp(requests, 100, "receiver", &crate::ImportOptions { force })
                .unwrap()
        };
        let old = receive(&[&first], false)[0].trace;
        let graph_id = format!("otel-{T1}");
        // Each trace keeps the whole request its spans came in.
        let kept = db.otlp_requests(&graph_id).unwrap();
        assert_eq!(kept, vec![(old, vec![first.clone()])]);
        let seq = db.append_trace_results(old, &["verdict".into()]).unwrap()[0].seq;
        assert_eq!(seq, 1);
        // Stored again with the late span: both keep requests until superseded.
        let new = receive(&[&first, &late], true)[0].trace;
        assert_eq!(db.otlp_requests(&graph_id).unwrap().len(), 2);
        assert_eq!(db.supersede_trace(old, new, "late spans").unwrap(), 1);
        let kept = db.otlp_requests(&graph_id).unwrap();
        assert_eq!(kept, vec![(new, vec![first, late])]);
        let moved = db.trace_results(new).unwrap();
        assert_eq!((moved.len(), moved[0].json.as_str()), (1, "verdict"));
        assert!(matches!(
            db.trace(&format!("#{old}")),
            Err(crate::EngineError::UnknownTrace(_))
        ));
        // A file's import keeps none.
        let file = crate::Engine::open(dir.path().join("f.db")).unwrap();
        let text = json!({"resourceSpans": [{"scopeSpans": [{"spans": [
            sp(T1, "00000000000000a1", None)]}]}]})
        .to_string();
        file.import_reader(
            text.as_bytes(),
            crate::InputFormat::Json,
            "f",
            &crate::ImportOptions::default(),
        )
        .unwrap();
        assert_eq!(file.trace(&graph_id).unwrap().id(), 1);
        assert!(file.otlp_requests(&graph_id).unwrap().is_empty());
    }
}
