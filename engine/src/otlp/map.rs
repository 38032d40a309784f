//! One OpenTelemetry trace as a smartcomment export (plus `data.annotations`
//! for failed evaluations): spans become ops, their inputs and outputs
//! variables, and the span tree, span order and links become edges. The
//! book's page on OpenTelemetry traces (docs/src/otlp.md) is the contract; the
//! names of the rules below are the names used there.
//!
//! The steps are in files of their own: `span_tree` (span order and the
//! tree), `span_vars` (each span's variables), `flows` (the edges between
//! them), `cases` (failed evaluations as annotations), with `builder` and
//! `values` beneath them.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::builder::Builder;
use super::cases::cases;
use super::flows::{none_sentinel, span_edges};
use super::read::Span;
use super::span_tree::{in_span_order, SpanTree};
use super::span_vars::{is_variable_key, span_vars, SpanVars};
use super::values::{graph_id, iso, nest, op_id, text};

/// The op category of a span: `openinference.span.kind` lowercased, else
/// the kind of GenAI operation, else `span`.
pub(crate) fn category(span: &Span) -> String {
    if let Some(Value::String(k)) = span.attrs.get("openinference.span.kind") {
        if !k.trim().is_empty() {
            return k.trim().to_ascii_lowercase();
        }
    }
    if let Some(Value::String(op)) = span.attrs.get("gen_ai.operation.name") {
        return match op.as_str() {
            "chat" | "text_completion" | "generate_content" => "llm".into(),
            "embeddings" => "embedding".into(),
            "execute_tool" => "tool".into(),
            "invoke_agent" | "create_agent" => "agent".into(),
            other => other.to_ascii_lowercase(),
        };
    }
    "span".into()
}

/// Converts the spans of one trace (any order) into a smartcomment export.
pub(crate) fn trace(trace_id: &str, spans: Vec<Span>) -> Value {
    let (spans, broken) = in_span_order(spans);
    let n = spans.len();
    let index: HashMap<&str, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id.as_str(), i))
        .collect();
    let tree = SpanTree::new(&spans, &broken, &index);
    let TraceSessions {
        names: session_names,
        of_span: span_session,
        mut records,
    } = TraceSessions::of(trace_id, &spans);

    let categories: Vec<String> = spans.iter().map(category).collect();
    let mut b = Builder {
        spans: &spans,
        nodes: Vec::new(),
        node_ids: Vec::new(),
        versions: HashMap::new(),
        edges: Vec::new(),
        edge_seen: HashSet::new(),
        op_edges: vec![0; n],
        span_session,
        categories,
    };
    let vars: Vec<SpanVars> = (0..n).map(|i| span_vars(&mut b, i)).collect();
    span_edges(&mut b, &vars, &tree, &index);
    if none_sentinel(&mut b, &vars) {
        records.push(json!({
            "session_id": "__none__", "session_name": "NONE sentinel",
            "category": "sentinel", "created_at": null, "metadata": {},
        }));
    }

    let ops: Vec<Value> = (0..n)
        .map(|i| op_record(&spans[i], i, &b, tree.parent_missing(&spans, i)))
        .collect();
    let root = tree.roots.first().copied().unwrap_or(0);
    let annotations = cases(&spans, &vars, &b, &tree.parent, &index, root);
    let meta = trace_metadata(trace_id, &spans, &tree, &session_names, root);
    let (project, user) = owners(&spans);
    let mut data = json!({
        "nodes": b.nodes,
        "edges": b.edges,
        "operations": ops,
        "sessions": records,
    });
    if !annotations.is_empty() {
        data["annotations"] = Value::Array(annotations);
    }
    json!({
        "graph_id": graph_id(trace_id),
        "user_id": user,
        "project_id": project,
        "created_at": spans.iter().map(|s| s.start).min().map(iso),
        "metadata": meta,
        "data": data,
    })
}

/// The project and the user of a trace: the first that a span or its
/// resource names.
fn owners(spans: &[Span]) -> (Option<String>, Option<String>) {
    let first_str = |f: &dyn Fn(&Span) -> Option<&Value>| {
        spans
            .iter()
            .find_map(|s| f(s).and_then(Value::as_str).filter(|x| !x.is_empty()))
            .map(str::to_string)
    };
    let project = first_str(&|s| s.resource.get("openinference.project.name"))
        .or_else(|| first_str(&|s| s.resource.get("service.name")));
    let user = first_str(&|s| s.attrs.get("user.id"))
        .or_else(|| first_str(&|s| s.resource.get("user.id")));
    (project, user)
}

/// The sessions of a trace: one per `session.id` its spans name, or one
/// for the whole trace when they name none.
struct TraceSessions {
    /// The session ids the spans name, in order of first use.
    names: Vec<String>,
    /// Each span's session id in the export.
    of_span: Vec<String>,
    /// The export's session records.
    records: Vec<Value>,
}

impl TraceSessions {
    fn of(trace_id: &str, spans: &[Span]) -> TraceSessions {
        let mut names: Vec<String> = Vec::new();
        for s in spans {
            if let Some(id) = s.attrs.get("session.id").and_then(text) {
                if !names.contains(&id) {
                    names.push(id);
                }
            }
        }
        let default_session = match names.first() {
            Some(s) => format!("session-{s}"),
            None => format!("trace-{trace_id}"),
        };
        let of_span: Vec<String> = spans
            .iter()
            .map(|s| match s.attrs.get("session.id").and_then(text) {
                Some(id) => format!("session-{id}"),
                None => default_session.clone(),
            })
            .collect();
        let mut records: Vec<Value> = Vec::new();
        if names.is_empty() {
            records.push(json!({
                "session_id": default_session,
                "session_name": trace_id,
                "category": "otel_trace",
                "created_at": spans.first().map(|s| iso(s.start)),
                "metadata": {"trace_id": trace_id},
            }));
        }
        for name in &names {
            let sid = format!("session-{name}");
            let first = spans
                .iter()
                .zip(&of_span)
                .find(|(_, s)| **s == sid)
                .map(|(sp, _)| iso(sp.start));
            records.push(json!({
                "session_id": sid,
                "session_name": name,
                "category": "otel_session",
                "created_at": first,
                "metadata": {"session.id": name},
            }));
        }
        TraceSessions {
            names,
            of_span,
            records,
        }
    }
}

/// The export's metadata: where it came from, its sessions, its root span
/// and that span's resource, and the spans whose parent is missing.
fn trace_metadata(
    trace_id: &str,
    spans: &[Span],
    tree: &SpanTree,
    session_names: &[String],
    root: usize,
) -> Map<String, Value> {
    let n = spans.len();
    let mut meta = Map::new();
    meta.insert("source_format".into(), "otlp".into());
    meta.insert("trace_id".into(), trace_id.into());
    if let Some(s) = session_names.first() {
        meta.insert("session_id".into(), s.clone().into());
    }
    if session_names.len() > 1 {
        meta.insert("session_ids".into(), session_names.to_vec().into());
    }
    if let Some(root_span) = spans.get(root) {
        meta.insert("root_span_id".into(), root_span.span_id.clone().into());
        meta.insert("root_span_name".into(), root_span.name.clone().into());
        meta.insert(
            "resource".into(),
            Value::Object(nest(
                root_span
                    .resource
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            )),
        );
    }
    meta.insert("spans".into(), n.into());
    let missing: Vec<Value> = (0..n)
        .filter(|&i| tree.parent_missing(spans, i))
        .map(|i| spans[i].span_id.clone().into())
        .collect();
    if !missing.is_empty() {
        meta.insert("spans_without_parent".into(), missing.into());
    }
    meta
}

/// The op of span `s` (the `i`th): its id, name, category and session,
/// and as metadata the span's ids, times, status, scope, attributes (those
/// that are no variable), events and links.
fn op_record(s: &Span, i: usize, b: &Builder<'_>, parent_missing: bool) -> Value {
    let mut meta = Map::new();
    meta.insert("span_id".into(), s.span_id.clone().into());
    meta.insert("trace_id".into(), s.trace_id.clone().into());
    meta.insert("parent_span_id".into(), s.parent.clone().into());
    if parent_missing {
        meta.insert("parent_missing".into(), true.into());
    }
    meta.insert("kind".into(), s.kind.into());
    meta.insert("start_time".into(), iso(s.start).into());
    meta.insert("end_time".into(), iso(s.end).into());
    let ms = s.end.saturating_sub(s.start) as f64 / 1e6;
    meta.insert(
        "duration_ms".into(),
        serde_json::Number::from_f64(ms).map_or(Value::Null, Value::Number),
    );
    let mut status = Map::new();
    status.insert("code".into(), s.status.into());
    if let Some(m) = &s.status_message {
        status.insert("message".into(), m.clone().into());
    }
    meta.insert("status".into(), Value::Object(status));
    if let Some(ts) = &s.trace_state {
        meta.insert("trace_state".into(), ts.clone().into());
    }
    meta.insert("scope".into(), (*s.scope).clone());
    meta.insert(
        "attributes".into(),
        Value::Object(nest(
            s.attrs
                .iter()
                .filter(|(k, _)| !is_variable_key(k))
                .map(|(k, v)| (k.clone(), v.clone())),
        )),
    );
    if !s.events.is_empty() {
        let events: Vec<Value> = s
            .events
            .iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "time": iso(e.time),
                    "attributes": nest(e.attrs.iter().map(|(k, v)| (k.clone(), v.clone()))),
                })
            })
            .collect();
        meta.insert("events".into(), events.into());
    }
    if !s.links.is_empty() {
        let links: Vec<Value> = s
            .links
            .iter()
            .map(|l| {
                json!({
                    "trace_id": l.trace_id,
                    "span_id": l.span_id,
                    "in_trace": l.trace_id == s.trace_id && b.spans.iter().any(|x| x.span_id == l.span_id),
                    "attributes": nest(l.attrs.iter().map(|(k, v)| (k.clone(), v.clone()))),
                })
            })
            .collect();
        meta.insert("links".into(), links.into());
    }
    json!({
        "op_id": op_id(&s.span_id),
        "op_name": s.name,
        "category": b.categories[i],
        "comment": null,
        "session_id": b.span_session[i],
        "created_at": iso(s.start),
        "metadata": meta,
    })
}

#[cfg(test)]
mod tests;
