//! Stored records as the JSON the pages read.

use memtrace::attrib::pyvalue::unrepr;
use memtrace::attrib::{ErrorType, StoredVerdict};
use memtrace::TraceInfo;
use serde_json::{json, Value};

use super::limits::PREVIEW;

/// A value on one line, cut to [`PREVIEW`] characters.
pub(super) fn preview(value: &str) -> String {
    let text = unrepr(value).replace(['\n', '\r', '\t'], " ");
    if text.chars().count() <= PREVIEW {
        return text;
    }
    let mut out: String = text.chars().take(PREVIEW - 1).collect();
    out.push('…');
    out
}

pub(super) fn trace_json(t: &TraceInfo, failed: Option<u64>) -> Value {
    json!({
        "id": t.id,
        "graph_id": t.graph_id,
        "system": t.project_id,
        "user": t.user_id,
        "created_at": t.created_at,
        "source": t.source,
        "sessions": t.counts.sessions,
        "variables": t.counts.variables,
        "ops": t.counts.ops,
        "edges": t.counts.edges,
        "failed_cases": failed,
    })
}

pub(super) fn verdict_json(s: &StoredVerdict) -> Value {
    let v = &s.verdict;
    json!({
        "seq": s.seq,
        "method": v.method,
        "error_type": v.error_type.map(ErrorType::name),
        "op_id": v.op_id,
        "op_name": v.op_name,
        "confidence": v.confidence,
        "reason": v.reason,
        "author": s.author,
        "at": memtrace::engine::iso_utc(s.at_ms),
        "model": v.model,
        "chain": v.chain,
    })
}

pub(super) fn label_json(l: &memtrace::attrib::HumanVerdict) -> Value {
    json!({
        "seq": l.seq,
        "trace": l.graph_id,
        "case": l.case,
        "error_type": l.error_type.name(),
        "op_id": l.op_id,
        "op_name": l.op_name,
        "reason": l.reason,
        "author": l.author,
        "at": memtrace::engine::iso_utc(l.at_ms),
    })
}
