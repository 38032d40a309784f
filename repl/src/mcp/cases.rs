//! Failed cases with their latest verdicts, and a verdict for one case, not stored.

use memtrace::attrib::{AttributeRequest, ErrorType, Method, Search, Setting, Verdict};
use memtrace::engine::Engine;
use memtrace::prelude::*;
use memtrace::Cancel;
use rmcp::ErrorData;
use serde_json::{json, Value};

use super::bounds::cut_value;
use super::errors::{analysis, bad};
use super::limits::NOTICE;
use super::params::{AttributeArgs, FailedCases};
use super::results::{Attributed, CaseList};

/// A verdict as the JSON the tools answer with.
fn verdict_json(v: &Verdict) -> Value {
    json!({
        "trace": v.graph_id,
        "case": v.case,
        "query": v.query,
        "error_type": v.error_type.map(ErrorType::name),
        "op_id": v.op_id,
        "op_name": v.op_name,
        "confidence": v.confidence,
        "reason": v.reason,
        "chain": v.chain,
        "method": v.method,
        "model": v.model,
    })
}

/// The failed cases `a` picks, at most `limit` of them.
pub fn failed(db: &Engine, a: FailedCases, limit: usize) -> Result<CaseList, ErrorData> {
    let cases = db.failed_cases(a.trace.as_deref()).map_err(analysis)?;
    let stored = db.attributions(a.trace.as_deref()).map_err(analysis)?;
    let matched = cases.len();
    let data = cases
        .iter()
        .take(limit)
        .map(|c| {
            let latest = stored
                .iter()
                .rev()
                .find(|s| s.verdict.case == c.id && s.verdict.trace == c.trace)
                .map(|s| verdict_json(&s.verdict));
            cut_value(json!({
                "trace": c.graph_id, "case": c.id, "system": c.system,
                "query": c.query, "gold": c.gold, "prediction": c.prediction,
                "verdict": latest,
            }))
        })
        .collect();
    Ok(CaseList {
        notice: NOTICE.into(),
        matched,
        truncated: matched > limit,
        data,
    })
}

/// The method and setting `a` names; a method that needs an LLM needs one configured.
pub fn method_and_setting(a: &AttributeArgs) -> Result<(Method, Setting), ErrorData> {
    let method: Method = a
        .method
        .as_deref()
        .unwrap_or("evidence")
        .parse()
        .map_err(|e: String| bad(format!("method: {e}")))?;
    let setting: Setting = a
        .setting
        .as_deref()
        .unwrap_or("benchmark")
        .parse()
        .map_err(|e: String| bad(format!("setting: {e}")))?;
    if method.needs_llm() {
        if let Err(e) = memtrace::llm::Config::from_env() {
            return Err(bad(format!(
                "method {method}: no LLM endpoint is configured ({e}); set OPENAI_API_KEY, or MEMTRACE_LLM_BASE_URL and MEMTRACE_LLM_MODEL, where memtrace mcp is started, or use method evidence"
            )));
        }
    }
    Ok((method, setting))
}

/// The verdict on the case `a` names, not stored.
pub fn attribute(
    db: &Engine,
    a: AttributeArgs,
    method: Method,
    setting: Setting,
) -> Result<Attributed, ErrorData> {
    let cases = [a.case.clone()];
    let verdicts = db
        .attribute(
            &AttributeRequest {
                trace: Some(&a.trace),
                cases: Some(&cases),
                method,
                setting,
                search: Search::Sparse,
            },
            &Cancel::new(),
            &mut |_| {},
        )
        .map_err(analysis)?;
    let v = verdicts.first().ok_or_else(|| {
        bad(format!(
            "trace {} has no failed case {:?} (failed_cases lists them)",
            a.trace, a.case
        ))
    })?;
    Ok(Attributed {
        notice: NOTICE.into(),
        stored: false,
        data: cut_value(verdict_json(v)),
    })
}
