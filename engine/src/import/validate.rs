//! The check of a read export's references, as smartcomment checks them:
//! unique ids, and every edge's session, op, source and target present.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::records::{json_kind, Invalid, ParsedTrace, Resolved};

/// The query, evidence and labelled op of one annotation, by local id.
type CaseIds = (Option<u32>, Vec<u32>, Option<u32>);

/// A map from a list's ids to their positions.
type IdIndex<'a> = HashMap<&'a str, u32, foldhash::fast::RandomState>;

fn index<'a, I: Iterator<Item = &'a str>>(
    ids: I,
    len: usize,
    list: &str,
    field: &str,
) -> Result<IdIndex<'a>, Invalid> {
    let mut map = IdIndex::with_capacity_and_hasher(len, Default::default());
    for (i, id) in ids.enumerate() {
        if let Some(first) = map.insert(id, i as u32) {
            return Err(Invalid::at(
                format!("{list}[{i}].{field}"),
                format!("duplicate id {id:?} (first at {list}[{first}])"),
            ));
        }
    }
    Ok(map)
}

/// Validates references as smartcomment does (unique ids; every edge's
/// session, op, source and target exist) and the annotations' references.
pub(crate) fn validate(t: &ParsedTrace) -> Result<Resolved, Invalid> {
    let sessions = index(
        t.sessions.iter().map(|s| s.session_id.as_str()),
        t.sessions.len(),
        "data.sessions",
        "session_id",
    )?;
    let vars = index(
        t.nodes.iter().map(|v| v.full_node_id.as_str()),
        t.nodes.len(),
        "data.nodes",
        "full_node_id",
    )?;
    let ops = index(
        t.ops.iter().map(|o| o.op_id.as_str()),
        t.ops.len(),
        "data.operations",
        "op_id",
    )?;
    index(
        t.edges.iter().map(|e| e.edge_id.as_str()),
        t.edges.len(),
        "data.edges",
        "edge_id",
    )?;
    let var_sessions = t
        .nodes
        .iter()
        .map(|v| {
            v.session_id
                .as_deref()
                .and_then(|s| sessions.get(s).copied())
        })
        .collect();
    let op_sessions = t
        .ops
        .iter()
        .map(|o| {
            o.session_id
                .as_deref()
                .and_then(|s| sessions.get(s).copied())
        })
        .collect();
    let edges = resolve_edges(t, &sessions, &vars, &ops)?;
    let mut cases = Vec::new();
    for (i, a) in t.annotations.iter().flatten().enumerate() {
        cases.push(resolve_case(i, a, &vars, &ops)?);
    }
    Ok(Resolved {
        var_sessions,
        op_sessions,
        edges,
        cases,
    })
}

/// (op, source, target, session) of each edge, each named by its id.
fn resolve_edges(
    t: &ParsedTrace,
    sessions: &IdIndex<'_>,
    vars: &IdIndex<'_>,
    ops: &IdIndex<'_>,
) -> Result<Vec<(u32, u32, u32, u32)>, Invalid> {
    let mut edges = Vec::with_capacity(t.edges.len());
    for (i, e) in t.edges.iter().enumerate() {
        let at = |field: &str| format!("data.edges[{i}].{field}");
        let op = *ops.get(e.op_id.as_str()).ok_or_else(|| {
            Invalid::at(
                at("op_id"),
                format!("no operation {:?} in the trace", e.op_id),
            )
        })?;
        let source = *vars.get(e.source.as_str()).ok_or_else(|| {
            Invalid::at(
                at("source_full_node_id"),
                format!("no node {:?} in the trace", e.source),
            )
        })?;
        let target = *vars.get(e.target.as_str()).ok_or_else(|| {
            Invalid::at(
                at("target_full_node_id"),
                format!("no node {:?} in the trace", e.target),
            )
        })?;
        let session = *sessions.get(e.session_id.as_str()).ok_or_else(|| {
            Invalid::at(
                at("session_id"),
                format!("no session {:?} in the trace", e.session_id),
            )
        })?;
        edges.push((op, source, target, session));
    }
    Ok(edges)
}

/// The query, evidence and labelled op of annotation `i`, `a`, with the
/// types of its other fields checked.
fn resolve_case(
    i: usize,
    a: &Map<String, Value>,
    vars: &IdIndex<'_>,
    ops: &IdIndex<'_>,
) -> Result<CaseIds, Invalid> {
    let at = |field: &str| format!("data.annotations[{i}].{field}");
    let node = |field: &str, v: &Value| -> Result<u32, Invalid> {
        match v {
            Value::String(s) => vars
                .get(s.as_str())
                .copied()
                .ok_or_else(|| Invalid::at(at(field), format!("no node {s:?} in the trace"))),
            other => Err(Invalid::at(
                at(field),
                format!("must be a full node id string, found {}", json_kind(other)),
            )),
        }
    };
    let query = match a.get("query_id") {
        None | Some(Value::Null) => None,
        Some(v) => Some(node("query_id", v)?),
    };
    let mut evidence = Vec::new();
    match a.get("source_evidence_ids") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (j, v) in items.iter().enumerate() {
                evidence.push(node(&format!("source_evidence_ids[{j}]"), v)?);
            }
        }
        Some(other) => {
            return Err(Invalid::at(
                at("source_evidence_ids"),
                format!(
                    "must be a list of full node ids, found {}",
                    json_kind(other)
                ),
            ))
        }
    }
    let op = match a.get("final_op_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(*ops.get(s.as_str()).ok_or_else(|| {
            Invalid::at(
                at("final_op_id"),
                format!("no operation {s:?} in the trace"),
            )
        })?),
        Some(other) => {
            return Err(Invalid::at(
                at("final_op_id"),
                format!(
                    "must be an op id string or null, found {}",
                    json_kind(other)
                ),
            ))
        }
    };
    for field in ["query", "prediction", "final_error_type"] {
        match a.get(field) {
            None | Some(Value::Null) | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(Invalid::at(
                    at(field),
                    format!("must be a string or null, found {}", json_kind(other)),
                ))
            }
        }
    }
    match a.get("golden_answers") {
        None | Some(Value::Null) | Some(Value::String(_)) | Some(Value::Array(_)) => {}
        Some(other) => {
            return Err(Invalid::at(
                at("golden_answers"),
                format!("must be a string or a list, found {}", json_kind(other)),
            ))
        }
    }
    Ok((query, evidence, op))
}
