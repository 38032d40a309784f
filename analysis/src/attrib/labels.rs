//! Labels: a person's verdict on a failed case (error type, faulty op,
//! reason), appended with its author and time beside the attributors'
//! verdicts, never overwriting an earlier one, and exported as MemTraceBench
//! `data.annotations`.

use serde_json::{json, Map, Value};

use super::attribute::Attribute;
use super::case::{names_case, FailedCase};
use super::model::TraceModel;
use super::stored::StoredVerdict;
use super::traces::trace_cases;
use super::verdict::{ErrorType, Verdict};
use crate::error::{AnalysisError, Result};
use memtrace_engine::iso_utc;
use memtrace_engine::now_ms;
use memtrace_engine::CaseOrigin;
use memtrace_engine::TraceId;
use memtrace_engine::{Engine, TraceView};

/// The method name under which labels are stored among the verdicts
/// (`FIND attributions WHERE method = 'human'` lists them).
pub const HUMAN: &str = "human";

/// The longest author name a label takes, in characters.
pub const MAX_AUTHOR: usize = 100;

/// The longest reason a label takes, in characters.
pub const MAX_REASON: usize = 10_000;

/// What a person says about a failed case.
#[derive(Debug, Clone, Copy)]
pub struct LabelInput<'a> {
    /// The error type.
    pub error_type: ErrorType,
    /// The earliest decisive faulty op (an op id of the trace).
    pub op_id: &'a str,
    /// Why (may be empty).
    pub reason: &'a str,
    /// Who says so.
    pub author: &'a str,
}

/// A person's verdict on a failed case, as stored (a label).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HumanVerdict {
    /// Its place among the trace's stored verdicts and labels, from 1.
    pub seq: u64,
    /// When it was stored, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The trace.
    pub trace: TraceId,
    /// The trace's graph id.
    pub graph_id: String,
    /// The case's name (its query's full node id, or its judge op id).
    pub case: String,
    /// The error type.
    pub error_type: ErrorType,
    /// The faulty op.
    pub op_id: String,
    /// That op's name.
    pub op_name: Option<String>,
    /// Why.
    pub reason: String,
    /// Who labelled it.
    pub author: String,
}

impl HumanVerdict {
    fn from_stored(s: &StoredVerdict) -> Option<HumanVerdict> {
        let v = &s.verdict;
        if v.method != HUMAN {
            return None;
        }
        Some(HumanVerdict {
            seq: s.seq,
            at_ms: s.at_ms,
            trace: v.trace,
            graph_id: v.graph_id.clone(),
            case: v.case.clone(),
            error_type: v.error_type?,
            op_id: v.op_id.clone()?,
            op_name: v.op_name.clone(),
            reason: v.reason.clone(),
            author: s.author.clone(),
        })
    }
}

/// A failed case found by its reference, with its trace read whole.
pub struct CaseContext<'db> {
    /// The trace.
    pub view: TraceView<'db>,
    /// The trace in memory.
    pub model: TraceModel,
    /// The case.
    pub case: FailedCase,
}

fn check_text(field: &'static str, text: &str, max: usize, required: bool) -> Result<()> {
    if required && text.trim().is_empty() {
        return Err(AnalysisError::BadLabel {
            field,
            problem: "must not be empty".into(),
        });
    }
    let n = text.chars().count();
    if n > max {
        return Err(AnalysisError::BadLabel {
            field,
            problem: format!("{n} characters, at most {max} are allowed"),
        });
    }
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    {
        return Err(AnalysisError::BadLabel {
            field,
            problem: format!("holds the control character {c:?}"),
        });
    }
    Ok(())
}

/// Labels that people add to failed cases, and export of labelled traces.
pub trait Labels {
    /// The failed case of a trace (graph id or `#ID`) that `reference` names:
    /// its name, its query's full name or full node id, or its judge op id.
    fn failed_case(&self, trace: &str, reference: &str) -> Result<CaseContext<'_>>;

    /// Appends a label to a failed case: a new record with its author and
    /// time; earlier labels of the case stay as they are. The op must be one
    /// of the trace's ops, and the author must not be empty.
    fn add_label(&self, trace: &str, case: &str, input: &LabelInput<'_>) -> Result<HumanVerdict>;

    /// Every label of one trace (graph id or `#ID`) or of every trace,
    /// oldest first within a trace.
    fn labels(&self, trace: Option<&str>) -> Result<Vec<HumanVerdict>>;

    /// A trace's labels as MemTraceBench `data.annotations`: one annotation
    /// per labelled case, from its latest label, in the order of the
    /// trace's failed cases. Each carries the case's query, gold answers,
    /// prediction and source evidence, plus `reason`, `annotator` and
    /// `annotated_at`.
    fn label_annotations(&self, trace: &str) -> Result<Vec<Value>>;

    /// Every failed case of a trace as a MemTraceBench annotation, in the
    /// order of the trace's failed cases, labelled or not. A case that came
    /// from an annotation keeps it whole; a case that an `llm-judge` op
    /// recorded gets one made from the case (`query_id`, `query`,
    /// `golden_answers`, `prediction`, `source_evidence_ids`, and
    /// `judge_op_id`, which names the case when it has no query variable),
    /// with `final_error_type` and `final_op_id` null. A case with a label
    /// takes its latest label's `final_error_type`, `final_op_id`,
    /// `reason`, `annotator` and `annotated_at`.
    fn case_annotations(&self, trace: &str) -> Result<Vec<Value>>;

    /// A MemTraceBench file of one trace: its smartcomment export with
    /// `data.annotations` holding every failed case, with its latest label
    /// where it has one (see [`Labels::case_annotations`]). Importing it into
    /// another database gives the same failed cases (the same names,
    /// questions, gold answers, predictions and evidence), each carrying its
    /// label.
    fn export_labelled(&self, trace: &str) -> Result<Value>;
}

impl Labels for Engine {
    fn failed_case(&self, trace: &str, reference: &str) -> Result<CaseContext<'_>> {
        let view = self.trace(trace)?;
        let (model, cases) = trace_cases(&view)?;
        let case = cases
            .into_iter()
            .find(|c| names_case(&model, c, reference))
            .ok_or_else(|| AnalysisError::UnknownCase {
                trace: view.info().graph_id,
                case: reference.to_string(),
            })?;
        Ok(CaseContext { view, model, case })
    }

    fn add_label(&self, trace: &str, case: &str, input: &LabelInput<'_>) -> Result<HumanVerdict> {
        check_text("author", input.author, MAX_AUTHOR, true)?;
        check_text("reason", input.reason, MAX_REASON, false)?;
        let ctx = self.failed_case(trace, case)?;
        let op = ctx
            .model
            .op(input.op_id)
            .ok_or_else(|| AnalysisError::BadLabel {
                field: "op_id",
                problem: format!("no op {:?} in trace {}", input.op_id, ctx.case.graph_id),
            })?;
        let c = &ctx.case;
        let verdict = Verdict {
            trace: c.trace,
            graph_id: c.graph_id.clone(),
            system: c.system.clone(),
            case: c.id.clone(),
            query: c.query.clone(),
            error_type: Some(input.error_type),
            op_id: Some(input.op_id.to_string()),
            op_name: ctx.model.ops[op].op_name.clone(),
            confidence: 1.0,
            reason: input.reason.to_string(),
            chain: Vec::new(),
            method: HUMAN.to_string(),
            version: "1".to_string(),
            micros: 0,
            model: None,
            cost: None,
            setting: None,
        };
        let at_ms = now_ms();
        let stored = StoredVerdict {
            seq: 0,
            at_ms,
            author: input.author.trim().to_string(),
            verdict,
        };
        let json = serde_json::to_string(&stored)?;
        let appended = self.append_trace_results(c.trace, &[json])?;
        let record = appended
            .first()
            .ok_or_else(|| AnalysisError::LabelNotStored)?;
        // What reads back: the stored sequence number and time.
        let mut stored = stored;
        stored.seq = record.seq;
        stored.at_ms = record.at_ms;
        HumanVerdict::from_stored(&stored).ok_or(AnalysisError::LabelUnreadable)
    }

    fn labels(&self, trace: Option<&str>) -> Result<Vec<HumanVerdict>> {
        Ok(self
            .attributions(trace)?
            .iter()
            .filter_map(HumanVerdict::from_stored)
            .collect())
    }

    fn label_annotations(&self, trace: &str) -> Result<Vec<Value>> {
        let view = self.trace(trace)?;
        let labels = self.labels(Some(trace))?;
        if labels.is_empty() {
            return Ok(Vec::new());
        }
        let (model, cases) = trace_cases(&view)?;
        let mut out = Vec::new();
        for c in &cases {
            let Some(l) = labels.iter().rev().find(|l| l.case == c.id) else {
                continue;
            };
            out.push(annotation(&model, c, l));
        }
        Ok(out)
    }

    fn case_annotations(&self, trace: &str) -> Result<Vec<Value>> {
        let view = self.trace(trace)?;
        let labels = self.labels(Some(trace))?;
        let stored = view.cases()?;
        let (model, cases) = trace_cases(&view)?;
        let mut out = Vec::with_capacity(cases.len());
        for c in &cases {
            let mut a = match &c.origin {
                CaseOrigin::Annotation(i) => match stored.get(*i).map(|s| &s.raw) {
                    Some(Value::Object(raw)) => raw.clone(),
                    _ => {
                        return Err(AnalysisError::AnnotationNotObject {
                            number: i + 1,
                            trace: c.graph_id.clone(),
                        })
                    }
                },
                CaseOrigin::Judge(op) => judge_annotation(&model, c, op),
            };
            if let Some(l) = labels.iter().rev().find(|l| l.case == c.id) {
                for (k, v) in label_fields(l) {
                    a.insert(k.into(), v);
                }
            }
            out.push(Value::Object(a));
        }
        Ok(out)
    }

    fn export_labelled(&self, trace: &str) -> Result<Value> {
        let view = self.trace(trace)?;
        let mut bytes = Vec::new();
        view.export(memtrace_engine::ExportFormat::Smartcomment, &mut bytes)?;
        let mut doc: Value = serde_json::from_slice(&bytes)?;
        let annotations = Value::Array(self.case_annotations(trace)?);
        let root = doc
            .as_object_mut()
            .ok_or_else(|| AnalysisError::ExportNotObject)?;
        let data = root
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        match data.as_object_mut() {
            Some(d) => {
                d.insert("annotations".into(), annotations);
            }
            None => return Err(AnalysisError::ExportDataNotObject),
        }
        Ok(doc)
    }
}

/// What a label sets in an annotation.
fn label_fields(l: &HumanVerdict) -> [(&'static str, Value); 5] {
    [
        ("final_error_type", json!(l.error_type.name())),
        ("final_op_id", json!(l.op_id)),
        ("reason", json!(l.reason)),
        ("annotator", json!(l.author)),
        ("annotated_at", json!(iso_utc(l.at_ms))),
    ]
}

/// The annotation of a case that the judge op `op` recorded, unlabelled.
fn judge_annotation(model: &TraceModel, c: &FailedCase, op: &str) -> Map<String, Value> {
    let query_id = c.query_node.clone().filter(|q| model.var(q).is_some());
    // The evidence of a judge case is what its query's metadata names;
    // when some of it is not a node of the trace, none is written, and the
    // import reads the same list from the metadata again.
    let evidence: Vec<&String> = if c.source_evidence.iter().all(|e| model.var(e).is_some()) {
        c.source_evidence.iter().collect()
    } else {
        Vec::new()
    };
    let mut a = Map::new();
    a.insert("query_id".into(), json!(query_id));
    a.insert("query".into(), json!(c.query));
    a.insert("golden_answers".into(), json!(c.gold));
    a.insert("prediction".into(), json!(c.prediction));
    a.insert("source_evidence_ids".into(), json!(evidence));
    a.insert("judge_op_id".into(), json!(op));
    if let Some(r) = &c.judge_response {
        a.insert("judge_response".into(), json!(r));
    }
    a.insert("final_error_type".into(), Value::Null);
    a.insert("final_op_id".into(), Value::Null);
    a
}

fn annotation(model: &TraceModel, c: &FailedCase, l: &HumanVerdict) -> Value {
    let query_id = c
        .query_node
        .clone()
        .or_else(|| match &c.origin {
            CaseOrigin::Annotation(_) => Some(c.id.clone()),
            CaseOrigin::Judge(_) => None,
        })
        .filter(|q| model.var(q).is_some());
    json!({
        "query_id": query_id,
        "query": c.query,
        "golden_answers": c.gold,
        "prediction": c.prediction,
        "source_evidence_ids": c.source_evidence.iter().filter(|e| model.var(e).is_some()).collect::<Vec<_>>(),
        "final_error_type": l.error_type.name(),
        "final_op_id": l.op_id,
        "reason": l.reason,
        "annotator": l.author,
        "annotated_at": iso_utc(l.at_ms),
    })
}

#[cfg(test)]
mod tests;
