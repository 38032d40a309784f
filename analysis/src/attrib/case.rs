//! Failed cases: from a trace's MemTraceBench annotations when it has them,
//! otherwise from every `llm-judge` op whose `judge_score` is 0, and from
//! every user's feedback that marks an answer wrong (an op named for
//! feedback or a rating whose output is a thumbs-down, a failing label or a
//! score of 0), which has no gold answer.
//!
//! A case carries what an attributor may read: the question, the gold
//! answer, the prediction, the judge's response and the source evidence.
//! Labels (`final_error_type`, `final_op_id`) are not part of it; only
//! evaluation reads them, from [`memtrace_engine::Case`].

use memtrace_engine::CaseOrigin;
use serde::Serialize;
use serde_json::Value;

use super::model::TraceModel;
use super::pyvalue::{pieces, unrepr};
use super::setting::Setting;
use memtrace_engine::Case;
use memtrace_engine::TraceId;

/// A failed question, as the attributors see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FailedCase {
    /// The trace.
    pub trace: TraceId,
    /// The trace's graph id.
    pub graph_id: String,
    /// The memory system (the trace's `project_id`).
    pub system: Option<String>,
    /// The case's name: its query's full node id, or else the judge op id
    /// (of a judge case, or the `judge_op_id` an annotation names, as an
    /// exported judge case has), or else `annotation N`.
    pub id: String,
    /// Full node id of the query variable, when found.
    pub query_node: Option<String>,
    /// The question.
    pub query: String,
    /// The gold answer(s).
    pub gold: Vec<String>,
    /// The system's answer.
    pub prediction: String,
    /// The judge's response, when recorded.
    pub judge_response: Option<String>,
    /// Full node ids of the source evidence (annotation, or the query's
    /// `metadata.evidence`); empty when neither names any.
    pub source_evidence: Vec<String>,
    /// Where the case came from.
    pub origin: CaseOrigin,
}

impl FailedCase {
    /// Hides what `setting` does not show. The judge's response goes with
    /// the gold answer, since a judge quotes it.
    pub fn hide(&mut self, setting: Setting) {
        if setting >= Setting::Evaluation {
            self.source_evidence.clear();
        }
        if setting >= Setting::Production {
            self.gold.clear();
            self.judge_response = None;
        }
    }

    /// The setting this case is in: what it actually holds, whatever was
    /// asked to be hidden.
    pub fn setting(&self) -> Setting {
        let gold = self.gold.iter().any(|g| !g.trim().is_empty());
        match (self.source_evidence.is_empty(), gold) {
            (_, false) => Setting::Production,
            (true, true) => Setting::Evaluation,
            (false, true) => Setting::Benchmark,
        }
    }
}

fn golds(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Value::Null => Vec::new(),
        other => vec![other.to_string()],
    }
}

/// The evidence a query variable's `metadata.evidence` names, as full node ids.
fn query_evidence(model: &TraceModel, query: usize) -> Vec<String> {
    let Some(list) = model.vars[query]
        .metadata
        .get("evidence")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(Value::as_str)
        .map(|name| match model.var(name) {
            Some(v) => model.vars[v].full_node_id.clone(),
            None => name.to_string(),
        })
        .collect()
}

/// The failed cases of a trace: its annotations (`cases`, as stored) when
/// there are any, else the `llm-judge` ops that scored 0.
pub fn failed_cases(model: &TraceModel, cases: &[Case]) -> Vec<FailedCase> {
    if !cases.is_empty() {
        return cases
            .iter()
            .enumerate()
            .map(|(i, c)| from_annotation(model, i, c))
            .collect();
    }
    let mut out: Vec<FailedCase> = (0..model.ops.len())
        .filter_map(|op| from_judge(model, op))
        .collect();
    for op in 0..model.ops.len() {
        if let Some(c) = from_feedback(model, op) {
            if !out.iter().any(|o| o.id == c.id) {
                out.push(c);
            }
        }
    }
    out
}

/// Whether an op's name says it records a person's feedback on an answer.
pub(crate) fn says_feedback(name: Option<&str>) -> bool {
    name.is_some_and(|n| {
        let n = n.to_ascii_lowercase();
        n.contains("feedback") || n.contains("rating") || n.contains("thumb")
    })
}

/// Whether a recorded feedback value marks the answer wrong: a failing
/// label (`thumbs_down`, `incorrect`, ...), `False`, or a score of 0 or less.
fn feedback_fails(value: &str) -> bool {
    let v = unrepr(value);
    let v = v.trim();
    if let Some(fails) = memtrace_engine::label_fails(v) {
        return fails;
    }
    v.parse::<f64>().is_ok_and(|x| x <= 0.0)
}

/// A case from a user's feedback: an op named for feedback whose output
/// fails, about the prediction it reads. The question is what the op that
/// made the prediction read.
fn from_feedback(model: &TraceModel, op: usize) -> Option<FailedCase> {
    let o = &model.ops[op];
    if is_judge(model, op) || !says_feedback(o.op_name.as_deref()) {
        return None;
    }
    if !model
        .outputs(op)
        .iter()
        .any(|&v| feedback_fails(model.value(v)))
    {
        return None;
    }
    let ins = model.inputs(op);
    let is_query = |v: usize| {
        model.class(v) == "query" || model.vars[v].category.as_deref() == Some("message & query")
    };
    let prediction = ins
        .iter()
        .copied()
        .find(|&v| {
            model.class(v) == "prediction"
                || model.vars[v].category.as_deref() == Some("prediction")
        })
        .or_else(|| ins.iter().copied().find(|&v| !is_query(v)))?;
    let answering = model.made_by(prediction).iter().copied().min();
    let query =
        ins.iter().copied().find(|&v| is_query(v)).or_else(|| {
            answering.and_then(|a| model.inputs(a).iter().copied().find(|&v| is_query(v)))
        });
    Some(FailedCase {
        trace: model.info.id,
        graph_id: model.info.graph_id.clone(),
        system: model.info.project_id.clone(),
        id: query.map_or_else(|| o.op_id.clone(), |q| model.vars[q].full_node_id.clone()),
        query_node: query.map(|q| model.vars[q].full_node_id.clone()),
        query: query.map(|q| unrepr(model.value(q))).unwrap_or_default(),
        gold: Vec::new(),
        prediction: unrepr(model.value(prediction)),
        judge_response: None,
        source_evidence: query.map(|q| query_evidence(model, q)).unwrap_or_default(),
        origin: CaseOrigin::Judge(o.op_id.clone()),
    })
}

fn from_annotation(model: &TraceModel, i: usize, c: &Case) -> FailedCase {
    let query_var = c.query_id.as_deref().and_then(|q| model.var(q));
    let mut evidence: Vec<String> = c
        .source_evidence_ids
        .iter()
        .map(|e| match model.var(e) {
            Some(v) => model.vars[v].full_node_id.clone(),
            None => e.clone(),
        })
        .collect();
    if evidence.is_empty() {
        if let Some(q) = query_var {
            evidence = query_evidence(model, q);
        }
    }
    let query = c
        .query
        .clone()
        .or_else(|| query_var.map(|q| unrepr(model.value(q))))
        .unwrap_or_default();
    FailedCase {
        trace: model.info.id,
        graph_id: model.info.graph_id.clone(),
        system: model.info.project_id.clone(),
        id: c
            .query_id
            .clone()
            .or_else(|| {
                // A judge case exported as an annotation keeps its name.
                c.raw
                    .get("judge_op_id")
                    .and_then(Value::as_str)
                    .filter(|op| model.op(op).is_some())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("annotation {}", i + 1)),
        query_node: query_var.map(|q| model.vars[q].full_node_id.clone()),
        query,
        gold: golds(&c.golden_answers),
        prediction: c.prediction.clone().unwrap_or_default(),
        judge_response: None,
        source_evidence: evidence,
        origin: CaseOrigin::Annotation(i),
    }
}

/// Whether an op of this name is a judge op (`llm-judge`).
pub fn is_judge_name(name: &str) -> bool {
    name.eq_ignore_ascii_case("llm-judge") || name.eq_ignore_ascii_case("llm_judge")
}

/// Whether `op` is a judge op.
fn is_judge(model: &TraceModel, op: usize) -> bool {
    model.ops[op].op_name.as_deref().is_some_and(is_judge_name)
}

fn from_judge(model: &TraceModel, op: usize) -> Option<FailedCase> {
    if !is_judge(model, op) {
        return None;
    }
    let find =
        |vars: &[usize], class: &str| vars.iter().copied().find(|&v| model.class(v) == class);
    let (ins, outs) = (model.inputs(op), model.outputs(op));
    let score = find(outs, "judge_score")?;
    let score: f64 = unrepr(model.value(score)).trim().parse().ok()?;
    if score != 0.0 {
        return None;
    }
    let query = find(ins, "query").or_else(|| {
        ins.iter()
            .copied()
            .find(|&v| model.vars[v].category.as_deref() == Some("message & query"))
    });
    let gold = find(ins, "golden_answers")
        .map(|g| pieces(model.value(g)))
        .unwrap_or_default();
    let prediction = find(ins, "prediction")
        .map(|p| unrepr(model.value(p)))
        .unwrap_or_default();
    let judge_response = find(outs, "judge_response")
        .or_else(|| find(ins, "judge_response"))
        .map(|r| unrepr(model.value(r)));
    Some(FailedCase {
        trace: model.info.id,
        graph_id: model.info.graph_id.clone(),
        system: model.info.project_id.clone(),
        id: query.map_or_else(
            || model.ops[op].op_id.clone(),
            |q| model.vars[q].full_node_id.clone(),
        ),
        query_node: query.map(|q| model.vars[q].full_node_id.clone()),
        query: query.map(|q| unrepr(model.value(q))).unwrap_or_default(),
        gold,
        prediction,
        judge_response,
        source_evidence: query.map(|q| query_evidence(model, q)).unwrap_or_default(),
        origin: CaseOrigin::Judge(model.ops[op].op_id.clone()),
    })
}

impl super::verdict::Verdict {
    /// A verdict on `case` by `method` that names nothing yet: no error
    /// type, no op, confidence 0, an empty reason and chain.
    pub fn undecided(case: &FailedCase, method: super::verdict::Method, micros: u64) -> Self {
        super::verdict::Verdict {
            trace: case.trace,
            graph_id: case.graph_id.clone(),
            system: case.system.clone(),
            case: case.id.clone(),
            query: case.query.clone(),
            error_type: None,
            op_id: None,
            op_name: None,
            confidence: 0.0,
            reason: String::new(),
            chain: Vec::new(),
            method: method.name().into(),
            version: method.version().into(),
            micros,
            model: None,
            cost: None,
            setting: Some(case.setting()),
        }
    }
}

/// Whether `reference` names `case` in `model`.
pub(crate) fn names_case(model: &TraceModel, case: &FailedCase, reference: &str) -> bool {
    if case.id == reference || case.query_node.as_deref() == Some(reference) {
        return true;
    }
    if let CaseOrigin::Judge(op) = &case.origin {
        if op == reference {
            return true;
        }
    }
    let resolved = model.var(reference).map(|v| &model.vars[v].full_node_id);
    resolved.is_some() && resolved == case.query_node.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> FailedCase {
        FailedCase {
            trace: 1,
            graph_id: "g".into(),
            system: None,
            id: "query:q@1".into(),
            query_node: Some("query:q@1".into()),
            query: "What car does Omar drive?".into(),
            gold: vec!["a blue Volvo".into()],
            prediction: "a red Toyota".into(),
            judge_response: Some("WRONG: it is a blue Volvo".into()),
            source_evidence: vec!["message:m1@1".into()],
            origin: CaseOrigin::Annotation(0),
        }
    }

    #[test]
    fn each_setting_hides_what_it_says_and_a_case_knows_its_setting() {
        let mut c = case();
        assert_eq!(c.setting(), Setting::Benchmark);
        c.hide(Setting::Benchmark);
        assert_eq!(c, case());
        c.hide(Setting::Evaluation);
        assert!(c.source_evidence.is_empty());
        assert_eq!(c.gold, ["a blue Volvo"]);
        assert_eq!(c.setting(), Setting::Evaluation);
        c.hide(Setting::Production);
        assert!(c.gold.is_empty() && c.judge_response.is_none());
        assert_eq!(c.prediction, "a red Toyota");
        assert_eq!(c.setting(), Setting::Production);
        // A case without a gold answer is in production whatever it names.
        let mut c = case();
        c.gold = vec![" ".into()];
        assert_eq!(c.setting(), Setting::Production);
    }
}
