//! A scripted stand-in for a model, for tests and the token benchmark: it
//! speaks the attribution protocol the way a careful but simple agent
//! would, so whole runs can be measured against a local server without a
//! real LLM. It is not a diagnostician, and its verdicts measure nothing
//! but the protocol.
//!
//! Its policy, read from the conversation alone: explore the first three
//! frontier variables, one call each; then finish with the hypothesis when
//! hybrid mode gives one; otherwise with the first op of the explorations
//! whose kind may hold the error (extraction and update ops as
//! ExtractionError), then the answering op as ResponseError, moving on
//! whenever a verdict is refused. Plain completions get a short summary, or
//! the feedback JSON when that is asked for.

use memtrace_llm::scripted::{self, Recorded, Reply, Script};
use serde_json::{json, Value};

/// Frontier variables the walker explores before it finishes.
pub const EXPLORE: usize = 3;

fn messages(r: &Recorded) -> Vec<Value> {
    r.json
        .as_ref()
        .and_then(|j| j.get("messages"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn content(m: &Value) -> &str {
    m.get("content").and_then(Value::as_str).unwrap_or("")
}

/// The text after `label` up to the end of its line.
fn line_after<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    let at = text.find(label)? + label.len();
    Some(text[at..].lines().next().unwrap_or("").trim())
}

/// Op ids and categories listed by explorations, in order.
fn listed_ops(results: &[&str]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in results {
        for line in r.lines() {
            if !line.ends_with("in execution order") {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(id), Some(_name), Some(cat)) = (words.next(), words.next(), words.next())
            else {
                continue;
            };
            let cat = cat
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            if !out.iter().any(|(i, _)| i == id) {
                out.push((id.to_string(), cat));
            }
        }
    }
    out
}

fn answer(r: &Recorded) -> Value {
    let msgs = messages(r);
    let has_tools = r
        .json
        .as_ref()
        .and_then(|j| j.get("tools"))
        .is_some_and(|t| t.as_array().is_some_and(|a| !a.is_empty()));
    let system = msgs.first().map(content).unwrap_or("");
    if !has_tools {
        if system.contains("\"rewrite\"") {
            let body = msgs.get(1).map(content).unwrap_or("");
            let ops = line_after(body, "Used by:").unwrap_or("its ops");
            return scripted::text(
                r,
                &json!({
                    "feedback": format!("The prompt read by {ops} does not say to keep every dated fact."),
                    "rewrite": "Extract every fact worth remembering, each with its date and speaker; never drop a fact because it seems minor.",
                })
                .to_string(),
            );
        }
        let body = msgs.get(1).map(content).unwrap_or("");
        let first = line_after(body, "1.").unwrap_or("no pattern");
        return scripted::text(r, &format!("The most common failure is {first}."));
    }
    let case = msgs.get(1).map(content).unwrap_or("");
    let frontier: Vec<&str> = line_after(case, "Frontier:")
        .unwrap_or("")
        .split(", ")
        .filter(|s| !s.is_empty())
        .collect();
    let assistant = msgs.iter().filter(|m| m["role"] == "assistant").count();
    let call_id = format!("w{assistant}");
    if assistant < EXPLORE.min(frontier.len()) {
        return scripted::tool_call(r, &call_id, "explore", json!({"var": frontier[assistant]}));
    }
    let results: Vec<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(content)
        .collect();
    let refused = results.iter().filter(|t| t.starts_with("refused")).count();
    let mut candidates: Vec<(String, String)> = Vec::new();
    if let Some(h) = line_after(case, "analysis proposes: ") {
        let mut w = h.split_whitespace();
        if let (Some(t), Some("at"), Some(op)) = (w.next(), w.next(), w.next()) {
            candidates.push((t.to_string(), op.to_string()));
        }
    }
    for (op, cat) in listed_ops(&results) {
        if cat == "extraction" || cat == "update" {
            candidates.push(("ExtractionError".into(), op));
        }
    }
    if let Some(a) = line_after(case, "The answering op: ") {
        if let Some(op) = a.split_whitespace().next() {
            candidates.push(("ResponseError".into(), op.to_string()));
        }
    }
    match candidates.get(refused) {
        Some((t, op)) => scripted::tool_call(
            r,
            &call_id,
            "finish",
            json!({"error_type": t, "op_id": op, "reason": format!("{op} is where the evidence was last seen to go wrong"), "confidence": 0.5}),
        ),
        None => scripted::tool_call(r, &call_id, "history", json!({})),
    }
}

/// The walker as a script for [`scripted::ScriptedServer`].
pub fn script() -> Script {
    Box::new(|r: &Recorded| Reply::Json(answer(r)))
}
