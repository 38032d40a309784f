//! Evaluations a span carries, and whether each one failed.
//!
//! Read from: OpenInference's `evaluations.N.evaluation.{name,label,score,
//! explanation,metadata}` and `annotations.N.annotation.*` (the span's own),
//! `trace.evaluations.N.evaluation.*` and `trace.annotations.N.annotation.*`
//! (the trace's), Arize's `eval.<name>.{label,score,explanation}`, the
//! OpenTelemetry GenAI event `gen_ai.evaluation.result`, and, on an
//! EVALUATOR span that carries none of these, its `output.value` (a JSON
//! object with `label`, `score`, `explanation`, or a label as text).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::read::Span;

/// What an evaluation is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The span it is on (or, on an EVALUATOR span, the span evaluated).
    Span,
    /// The whole trace: its root span.
    Trace,
}

/// One evaluation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Evaluation {
    /// Its name (`correctness`, `faithfulness`, ...).
    pub name: String,
    /// Its label, when given.
    pub label: Option<String>,
    /// Its score, when given.
    pub score: Option<f64>,
    /// Its explanation, when given.
    pub explanation: Option<String>,
    /// Its metadata, when given (a JSON text is read as JSON).
    pub metadata: Option<Value>,
    /// Where it was read from (`evaluations`, `eval.*`, `event`, ...).
    pub origin: &'static str,
    /// What it is about.
    pub scope: Scope,
}

impl Evaluation {
    /// The evaluation as JSON, for a case's `evaluations` list.
    pub(crate) fn to_json(&self, span_id: &str) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), self.name.clone().into());
        if let Some(l) = &self.label {
            m.insert("label".into(), l.clone().into());
        }
        if let Some(s) = self.score {
            m.insert("score".into(), number(s));
        }
        if let Some(e) = &self.explanation {
            m.insert("explanation".into(), e.clone().into());
        }
        if let Some(md) = &self.metadata {
            m.insert("metadata".into(), md.clone());
        }
        m.insert("origin".into(), self.origin.into());
        m.insert("span_id".into(), span_id.into());
        Value::Object(m)
    }

    /// Whether the evaluation failed: by its label when it is a known
    /// passing or failing word, else by its score (0 or less fails, as a
    /// judge's score of 0 does); `None` when neither decides.
    pub(crate) fn failed(&self) -> Option<bool> {
        if let Some(fails) = self.label.as_deref().and_then(label_fails) {
            return Some(fails);
        }
        self.score.map(|s| s <= 0.0)
    }
}

/// Whether an evaluation's label or a user's feedback marks a failure
/// (`incorrect`, `thumbs-down`, ...) or a pass (`correct`, `thumbs up`);
/// `None` for a word that says neither.
pub fn label_fails(label: &str) -> Option<bool> {
    let l = label.trim().to_lowercase().replace([' ', '-'], "_");
    if FAILING.contains(&l.as_str()) {
        Some(true)
    } else if PASSING.contains(&l.as_str()) {
        Some(false)
    } else {
        None
    }
}

/// Labels that mark a failed evaluation (lowercase, `_` for spaces and dashes).
pub(crate) const FAILING: &[&str] = &[
    "incorrect",
    "not_correct",
    "wrong",
    "fail",
    "failed",
    "failure",
    "false",
    "no",
    "hallucinated",
    "hallucination",
    "unfaithful",
    "not_faithful",
    "irrelevant",
    "unrelated",
    "not_relevant",
    "bad",
    "toxic",
    "unsafe",
    "invalid",
    // A user's feedback on an answer (Phoenix annotations, Langfuse scores).
    "thumbs_down",
    "thumbsdown",
    "thumb_down",
    "👎",
    "negative",
    "dislike",
    "disliked",
    "downvote",
    "downvoted",
    "unhelpful",
    "not_helpful",
];

/// Labels that mark a passed evaluation.
pub(crate) const PASSING: &[&str] = &[
    "correct",
    "right",
    "pass",
    "passed",
    "true",
    "yes",
    "factual",
    "faithful",
    "relevant",
    "good",
    "non_toxic",
    "safe",
    "valid",
    "ok",
    "thumbs_up",
    "thumbsup",
    "thumb_up",
    "👍",
    "positive",
    "like",
    "liked",
    "upvote",
    "upvoted",
    "helpful",
];

fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn score(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A JSON text read as JSON; other values as they are.
pub(crate) fn json_or_value(v: &Value) -> Value {
    match v {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
            _ => v.clone(),
        },
        other => other.clone(),
    }
}

/// The groups of `prefix.N.rest` keys: for each N, `rest -> value`.
pub(crate) fn indexed(
    attrs: &Map<String, Value>,
    prefix: &str,
) -> BTreeMap<usize, Map<String, Value>> {
    let mut out: BTreeMap<usize, Map<String, Value>> = BTreeMap::new();
    for (k, v) in attrs {
        let Some(rest) = k.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) else {
            continue;
        };
        let Some((n, field)) = rest.split_once('.') else {
            continue;
        };
        if let Ok(n) = n.parse::<usize>() {
            out.entry(n)
                .or_default()
                .insert(field.to_string(), v.clone());
        }
    }
    out
}

fn from_group(
    g: &Map<String, Value>,
    field: &str,
    origin: &'static str,
    scope: Scope,
    fallback_name: &str,
) -> Option<Evaluation> {
    let get = |k: &str| g.get(&format!("{field}.{k}"));
    let e = Evaluation {
        name: get("name")
            .and_then(text)
            .unwrap_or_else(|| fallback_name.to_string()),
        label: get("label").and_then(text),
        score: get("score").and_then(score),
        explanation: get("explanation").and_then(text),
        metadata: get("metadata").map(json_or_value),
        origin,
        scope,
    };
    (e.label.is_some() || e.score.is_some() || e.explanation.is_some()).then_some(e)
}

/// The evaluations a span carries, in the order listed in the module's comment.
pub(crate) fn evaluations(span: &Span, is_evaluator: bool) -> Vec<Evaluation> {
    let mut out = Vec::new();
    for (prefix, field, origin, scope) in [
        ("evaluations", "evaluation", "evaluations", Scope::Span),
        ("annotations", "annotation", "annotations", Scope::Span),
        (
            "trace.evaluations",
            "evaluation",
            "trace.evaluations",
            Scope::Trace,
        ),
        (
            "trace.annotations",
            "annotation",
            "trace.annotations",
            Scope::Trace,
        ),
    ] {
        for g in indexed(&span.attrs, prefix).values() {
            out.extend(from_group(g, field, origin, scope, &span.name));
        }
    }
    // eval.<name>.<field>, the name possibly dotted.
    let mut named: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for (k, v) in &span.attrs {
        let Some(rest) = k.strip_prefix("eval.") else {
            continue;
        };
        for field in ["label", "score", "explanation"] {
            if let Some(name) = rest.strip_suffix(field).and_then(|n| n.strip_suffix('.')) {
                if !name.is_empty() {
                    named
                        .entry(name)
                        .or_default()
                        .insert(format!("x.{field}"), v.clone());
                }
            }
        }
    }
    for (name, g) in named {
        out.extend(from_group(&g, "x", "eval.*", Scope::Span, name));
    }
    for e in &span.events {
        if e.name != "gen_ai.evaluation.result" {
            continue;
        }
        let get = |k: &str| e.attrs.get(&format!("gen_ai.evaluation.{k}"));
        let ev = Evaluation {
            name: get("name")
                .and_then(text)
                .unwrap_or_else(|| span.name.clone()),
            label: get("score.label").and_then(text),
            score: get("score.value").and_then(score),
            explanation: get("explanation").and_then(text),
            metadata: None,
            origin: "event",
            scope: Scope::Span,
        };
        if ev.label.is_some() || ev.score.is_some() {
            out.push(ev);
        }
    }
    if is_evaluator && out.iter().all(|e| e.scope != Scope::Span) {
        if let Some(v) = span.attrs.get("output.value") {
            out.extend(from_output(v, &span.name));
        }
    }
    out
}

/// An EVALUATOR span's verdict from its output: a JSON object with
/// `label`, `score`, `explanation` (and `name`), or a label as text.
fn from_output(v: &Value, span_name: &str) -> Option<Evaluation> {
    match json_or_value(v) {
        Value::Object(m) => {
            let e = Evaluation {
                name: m
                    .get("name")
                    .and_then(text)
                    .unwrap_or_else(|| span_name.to_string()),
                label: m.get("label").and_then(text),
                score: m.get("score").and_then(score),
                explanation: m.get("explanation").and_then(text),
                metadata: None,
                origin: "output.value",
                scope: Scope::Span,
            };
            (e.label.is_some() || e.score.is_some()).then_some(e)
        }
        Value::String(s) if !s.trim().is_empty() && s.len() <= 64 => Some(Evaluation {
            name: span_name.to_string(),
            label: Some(s.trim().to_string()),
            score: None,
            explanation: None,
            metadata: None,
            origin: "output.value",
            scope: Scope::Span,
        }),
        _ => None,
    }
}

/// Keys under which an evaluation's metadata or an evaluator's input may
/// hold the gold answer, in the order they are tried.
pub(crate) const GOLD_KEYS: &[&str] = &[
    "reference",
    "expected",
    "expected_output",
    "ground_truth",
    "gold",
    "gold_answer",
    "golden_answers",
];

/// Keys under which an evaluator's input may hold the question evaluated.
pub(crate) const QUERY_KEYS: &[&str] = &["input", "query", "question"];

/// The first of `keys` that `v` (an object, or a JSON text of one) holds,
/// as a string or a list of strings.
pub(crate) fn lookup(v: &Value, keys: &[&str]) -> Option<Value> {
    let Value::Object(m) = json_or_value(v) else {
        return None;
    };
    keys.iter().find_map(|k| match m.get(*k)? {
        Value::String(s) => Some(Value::String(s.clone())),
        Value::Array(a) => Some(Value::Array(
            a.iter().filter_map(text).map(Value::String).collect(),
        )),
        Value::Null => None,
        other => Some(Value::String(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::rc::Rc;

    fn span(attrs: Value) -> Span {
        let Value::Object(attrs) = attrs else {
            panic!()
        };
        Span {
            trace_id: "t".into(),
            span_id: "s".into(),
            parent: None,
            name: "judge".into(),
            kind: "INTERNAL",
            start: 0,
            end: 0,
            attrs,
            events: Vec::new(),
            links: Vec::new(),
            status: "UNSET",
            status_message: None,
            trace_state: None,
            resource: Rc::default(),
            scope: Rc::new(Value::Null),
            at: (Rc::from("x"), String::new()),
        }
    }

    #[test]
    fn every_convention_is_read() {
        let s = span(json!({
            "evaluations.0.evaluation.name": "correctness",
            "evaluations.0.evaluation.label": "incorrect",
            "evaluations.0.evaluation.metadata": "{\"reference\": \"Paris\"}",
            "trace.evaluations.0.evaluation.name": "overall",
            "trace.evaluations.0.evaluation.score": 1,
            "eval.hallucination.label": "factual",
            "eval.hallucination.score": "1.0",
        }));
        let e = evaluations(&s, false);
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].name.as_str(), e[0].failed(), e[0].scope),
            ("correctness", Some(true), Scope::Span)
        );
        assert_eq!(
            lookup(e[0].metadata.as_ref().unwrap(), GOLD_KEYS),
            Some(json!("Paris"))
        );
        assert_eq!((e[1].scope, e[1].failed()), (Scope::Trace, Some(false)));
        assert_eq!(
            (e[2].name.as_str(), e[2].failed()),
            ("hallucination", Some(false))
        );
    }

    #[test]
    fn labels_decide_before_scores_and_unknown_labels_fall_back() {
        let ev = |label: Option<&str>, score: Option<f64>| Evaluation {
            name: "x".into(),
            label: label.map(str::to_string),
            score,
            explanation: None,
            metadata: None,
            origin: "t",
            scope: Scope::Span,
        };
        assert_eq!(ev(Some("Not Correct"), Some(1.0)).failed(), Some(true));
        assert_eq!(ev(Some("correct"), Some(0.0)).failed(), Some(false));
        assert_eq!(ev(Some("meh"), Some(0.0)).failed(), Some(true));
        assert_eq!(ev(Some("meh"), Some(0.4)).failed(), Some(false));
        assert_eq!(ev(Some("meh"), None).failed(), None);
        // A user's feedback on an answer reads as an evaluation of it.
        assert_eq!(ev(Some("Thumbs-Down"), None).failed(), Some(true));
        assert_eq!(ev(Some("thumbs up"), None).failed(), Some(false));
        assert_eq!(ev(Some("👎"), None).failed(), Some(true));
    }

    #[test]
    fn an_evaluator_without_attributes_is_read_from_its_output() {
        let s = span(json!({"output.value": "{\"label\": \"hallucinated\", \"score\": 0}"}));
        let e = evaluations(&s, true);
        assert_eq!((e.len(), e[0].failed()), (1, Some(true)));
        assert!(evaluations(&s, false).is_empty());
        let s = span(json!({"output.value": "wrong"}));
        assert_eq!(evaluations(&s, true)[0].failed(), Some(true));
    }
}
