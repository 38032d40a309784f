//! The failed cases of a trace: a MemTraceBench annotation for each span
//! that a failing evaluation is about, with its query, answer and gold.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::builder::Builder;
use super::eval::{self, Evaluation, Scope};
use super::read::Span;
use super::span_vars::SpanVars;
use super::values::{op_id, text};

/// An evaluation found: (the span evaluated, the evaluator span if any, the
/// evaluation, the span it was on).
type Found = (usize, Option<usize>, Evaluation, usize);

/// A failed case (a MemTraceBench annotation) per span that a failing
/// evaluation is about.
pub(super) fn cases(
    spans: &[Span],
    vars: &[SpanVars],
    b: &Builder<'_>,
    parent: &[Option<usize>],
    index: &HashMap<&str, usize>,
    root: usize,
) -> Vec<Value> {
    let found = evaluations(spans, b, parent, index, root);
    let mut order: Vec<usize> = Vec::new();
    let mut by_target: HashMap<usize, Vec<&Found>> = HashMap::new();
    for f in found.iter().filter(|f| f.2.failed() == Some(true)) {
        if !by_target.contains_key(&f.0) {
            order.push(f.0);
        }
        by_target.entry(f.0).or_default().push(f);
    }
    order
        .into_iter()
        .map(|t| case(spans, vars, b, t, &by_target[&t]))
        .collect()
}

/// Every evaluation the spans carry, each with the span it is about.
fn evaluations(
    spans: &[Span],
    b: &Builder<'_>,
    parent: &[Option<usize>],
    index: &HashMap<&str, usize>,
    root: usize,
) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let is_evaluator = b.categories[i] == "evaluator";
        // An EVALUATOR span evaluates the span it links to in this trace,
        // else its parent, else itself.
        let target = if is_evaluator {
            s.links
                .iter()
                .filter(|l| l.trace_id == s.trace_id)
                .find_map(|l| index.get(l.span_id.as_str()).copied())
                .filter(|&t| t != i)
                .or(parent[i])
                .unwrap_or(i)
        } else {
            i
        };
        for e in eval::evaluations(s, is_evaluator) {
            let t = match e.scope {
                Scope::Span => target,
                Scope::Trace => root,
            };
            found.push((t, is_evaluator.then_some(i), e, i));
        }
    }
    found
}

/// The case of span `t`, from its failing evaluations `fs`.
fn case(spans: &[Span], vars: &[SpanVars], b: &Builder<'_>, t: usize, fs: &[&Found]) -> Value {
    let v = &vars[t];
    let evaluator = fs.iter().find_map(|f| f.1);
    let evaluator_input = evaluator.and_then(|e| spans[e].attrs.get("input.value"));
    let query_var = v.primary;
    let query = evaluator_input
        .and_then(|x| eval::lookup(x, eval::QUERY_KEYS))
        .and_then(|q| text(&q))
        .or_else(|| query_var.and_then(|q| b.nodes[q]["value"].as_str().map(str::to_string)));
    let prediction = v
        .answer
        .or_else(|| v.outputs.first().copied())
        .and_then(|o| b.nodes[o]["value"].as_str().map(str::to_string));
    let gold = fs
        .iter()
        .find_map(|f| {
            f.2.metadata
                .as_ref()
                .and_then(|m| eval::lookup(m, eval::GOLD_KEYS))
        })
        .or_else(|| evaluator_input.and_then(|x| eval::lookup(x, eval::GOLD_KEYS)))
        .or_else(|| {
            spans[t]
                .attrs
                .get("metadata")
                .and_then(|m| eval::lookup(m, eval::GOLD_KEYS))
        });
    let mut a = Map::new();
    a.insert(
        "query_id".into(),
        query_var.map(|q| b.node_ids[q].clone()).into(),
    );
    a.insert("query".into(), query.into());
    a.insert("golden_answers".into(), gold.unwrap_or(Value::Null));
    a.insert("prediction".into(), prediction.into());
    a.insert("source_evidence_ids".into(), Value::Array(Vec::new()));
    a.insert("evaluated_op_id".into(), op_id(&spans[t].span_id).into());
    if let Some(e) = evaluator {
        a.insert("judge_op_id".into(), op_id(&spans[e].span_id).into());
    }
    a.insert(
        "evaluations".into(),
        Value::Array(
            fs.iter()
                .map(|f| f.2.to_json(&spans[f.3].span_id))
                .collect(),
        ),
    );
    Value::Object(a)
}
