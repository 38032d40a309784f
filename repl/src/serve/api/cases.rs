//! One failed case with its evidence, verdicts and labels, and the labels people add.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;

use memtrace::attrib::evidence::evidence_of;
use memtrace::attrib::{flow, ErrorType, LabelInput, StoredVerdict, TraceModel};
use memtrace::prelude::*;
use serde_json::{json, Map, Value};

use super::body::{json_body, only_fields, text_field};
use super::handler::Api;
use super::json::{label_json, preview, trace_json, verdict_json};
use super::limits::METHODS;
use crate::serve::http::{ApiError, Reply, Target};

impl Api {
    pub(super) fn case(&self, trace: &str, case: &str) -> Result<Reply, ApiError> {
        let ctx = self.db.failed_case(trace, case)?;
        let (m, c) = (&ctx.model, &ctx.case);
        let ev = evidence_of(m, c, memtrace::attrib::DEFAULT_K);
        let origin = serde_json::to_value(ev.origin)?;
        let evidence_list: Vec<Value> = ev
            .items
            .iter()
            .zip(&ev.weights)
            .map(|(&v, &w)| {
                json!({
                    "node": m.vars[v].full_node_id,
                    "preview": preview(m.value(v)),
                    "origin": origin,
                    "weight": (w * 100.0).round() / 100.0,
                })
            })
            .collect();
        let answer = flow::answer_op(m, c);
        let prediction_node = answer.and_then(|o| {
            let outs = m.outputs(o);
            outs.iter()
                .find(|&&v| m.class(v) == "prediction")
                .or(outs.first())
                .map(|&v| m.vars[v].full_node_id.clone())
        });
        let stored: Vec<StoredVerdict> = self
            .db
            .attributions(Some(&format!("#{}", c.trace)))?
            .into_iter()
            .filter(|s| s.verdict.case == c.id)
            .collect();
        let mut methods: Vec<String> = METHODS.iter().map(|s| s.to_string()).collect();
        let mut verdicts = Map::new();
        for s in &stored {
            if !methods.contains(&s.verdict.method) {
                methods.push(s.verdict.method.clone());
            }
            verdicts.insert(s.verdict.method.clone(), verdict_json(s));
        }
        let labels: Vec<Value> = self
            .db
            .labels(Some(&format!("#{}", c.trace)))?
            .iter()
            .rev()
            .filter(|l| l.case == c.id)
            .map(label_json)
            .collect();
        // The label the file itself carries (MemTraceBench's
        // final_error_type and final_op_id), to set beside the verdicts.
        let file_label = ctx
            .view
            .cases()?
            .into_iter()
            .find(|r| r.query_id.as_deref() == Some(c.id.as_str()))
            .filter(|r| r.final_error_type.is_some() || r.final_op_id.is_some())
            .map(|r| {
                let op_name = r.final_op_id.as_deref().and_then(|id| {
                    m.ops
                        .iter()
                        .find(|o| o.op_id == id)
                        .and_then(|o| o.op_name.clone())
                });
                json!({
                    "error_type": r.final_error_type,
                    "op_id": r.final_op_id,
                    "op_name": op_name,
                })
            });
        Ok(Reply::ok(&json!({
            "trace": trace_json(&ctx.view.info(), None),
            "case": c.id,
            "query": c.query,
            "gold": c.gold,
            "prediction": c.prediction,
            "judge": c.judge_response,
            "query_node": c.query_node,
            "prediction_node": prediction_node,
            "answer_op": answer.map(|o| m.ops[o].op_id.clone()),
            "evidence": evidence_list,
            "methods": methods,
            "verdicts": verdicts,
            "labels": labels,
            "file_label": file_label,
            "ops": provenance_ops(m, prediction_node.as_deref().or(c.query_node.as_deref())),
        })))
    }

    /// The labels people gave one case, newest first.
    pub(super) fn case_labels(&self, trace: &str, case: &str) -> Result<Reply, ApiError> {
        let ctx = self.db.failed_case(trace, case)?;
        let labels: Vec<Value> = self
            .db
            .labels(Some(trace))?
            .iter()
            .rev()
            .filter(|l| l.case == ctx.case.id)
            .map(label_json)
            .collect();
        Ok(Reply::ok(&json!({"labels": labels})))
    }

    /// Every label, or one trace's (`trace=`), oldest first.
    pub(super) fn labels(&self, t: &Target) -> Result<Reply, ApiError> {
        let labels: Vec<Value> = self
            .db
            .labels(t.param("trace"))?
            .iter()
            .map(label_json)
            .collect();
        Ok(Reply::ok(&json!({"labels": labels})))
    }

    /// A trace's labels as MemTraceBench annotations, or (`full=1`) the whole labelled export.
    pub(super) fn annotations(&self, trace: &str, t: &Target) -> Result<Reply, ApiError> {
        if t.param("full").is_some_and(|v| v != "0") {
            return Ok(Reply::ok(&self.db.export_labelled(trace)?));
        }
        let view = self.db.trace(trace)?;
        Ok(Reply::ok(&json!({
            "graph_id": view.info().graph_id,
            "data": {"annotations": self.db.label_annotations(trace)?},
        })))
    }

    pub(super) fn add_label(
        &self,
        trace: &str,
        case: &str,
        body: &mut dyn Read,
    ) -> Result<Reply, ApiError> {
        let b = json_body(body)?;
        only_fields(&b, &["error_type", "op_id", "reason", "author"])?;
        let error_type: ErrorType = text_field(&b, "error_type", None)?
            .parse()
            .map_err(|e: String| ApiError::bad(format!("error_type: {e}")))?;
        let label = self.db.add_label(
            trace,
            case,
            &LabelInput {
                error_type,
                op_id: text_field(&b, "op_id", None)?,
                reason: text_field(&b, "reason", Some(""))?,
                author: text_field(&b, "author", None)?,
            },
        )?;
        Ok(Reply::json(201, &label_json(&label)))
    }
}

/// The ops on the backward provenance of `node` (every op that wrote it or
/// wrote what those read), in execution order.
fn provenance_ops(m: &TraceModel, node: Option<&str>) -> Vec<Value> {
    let Some(start) = node.and_then(|n| m.var(n)) else {
        return Vec::new();
    };
    let mut seen_vars = HashSet::from([start]);
    let mut queue = vec![start];
    let mut ops: BTreeMap<usize, ()> = BTreeMap::new();
    while let Some(v) = queue.pop() {
        for &o in m.made_by(v) {
            if ops.insert(o, ()).is_none() {
                for &i in m.inputs(o) {
                    if seen_vars.insert(i) {
                        queue.push(i);
                    }
                }
            }
        }
    }
    ops.keys()
        .map(|&o| {
            let op = &m.ops[o];
            json!({"op_id": op.op_id, "name": op.op_name, "category": op.category})
        })
        .collect()
}
