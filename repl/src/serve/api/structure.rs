//! The shape of a trace the pages draw: its ops in order, with what each reads and writes.

use std::collections::HashMap;

use memtrace::TraceView;
use serde_json::{json, Value};

use crate::serve::http::ApiError;

/// A trace's ops with their inputs and outputs, and each node's degree.
pub struct Structure {
    pub(super) ops: Vec<OpInfo>,
    pub(super) by_op_id: HashMap<String, usize>,
    pub(super) in_degree: HashMap<String, u32>,
    pub(super) out_degree: HashMap<String, u32>,
}

/// A session's name, category and creation time.
pub type SessionHead = (Option<String>, Option<String>, Option<String>);

/// An op with the nodes it reads and writes.
pub struct OpInfo {
    pub(super) op_id: String,
    pub(super) name: Option<String>,
    pub(super) category: Option<String>,
    pub(super) comment: Option<String>,
    pub(super) created_at: Option<String>,
    pub(super) session_id: Option<String>,
    pub(super) inputs: Vec<String>,
    pub(super) outputs: Vec<String>,
}

fn push_once(list: &mut Vec<String>, x: &str) {
    if !list.iter().any(|y| y == x) {
        list.push(x.to_string());
    }
}

impl Structure {
    pub(super) fn load(view: &TraceView<'_>) -> Result<Structure, ApiError> {
        let mut ops: Vec<OpInfo> = view
            .ops()?
            .into_iter()
            .map(|o| OpInfo {
                op_id: o.op_id,
                name: o.op_name,
                category: o.category,
                comment: o.comment,
                created_at: o.created_at,
                session_id: o.session_id,
                inputs: Vec::new(),
                outputs: Vec::new(),
            })
            .collect();
        let by_op_id: HashMap<String, usize> = ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.op_id.clone(), i))
            .collect();
        let mut in_degree: HashMap<String, u32> = HashMap::new();
        let mut out_degree: HashMap<String, u32> = HashMap::new();
        for e in view.edges()? {
            *in_degree.entry(e.target_full_node_id.clone()).or_default() += 1;
            *out_degree.entry(e.source_full_node_id.clone()).or_default() += 1;
            if let Some(&i) = by_op_id.get(&e.op_id) {
                push_once(&mut ops[i].inputs, &e.source_full_node_id);
                push_once(&mut ops[i].outputs, &e.target_full_node_id);
            }
        }
        Ok(Structure {
            ops,
            by_op_id,
            in_degree,
            out_degree,
        })
    }

    pub(super) fn op(&self, op_id: &str) -> Option<&OpInfo> {
        self.by_op_id.get(op_id).map(|&i| &self.ops[i])
    }

    pub(super) fn op_json(&self, op_id: &str) -> Value {
        match self.op(op_id) {
            Some(o) => json!({
                "op_id": o.op_id, "name": o.name, "category": o.category,
                "created_at": o.created_at, "comment": o.comment,
                "inputs": o.inputs, "outputs": o.outputs,
            }),
            None => json!({"op_id": op_id, "name": null, "category": null,
                           "inputs": [], "outputs": []}),
        }
    }
}
