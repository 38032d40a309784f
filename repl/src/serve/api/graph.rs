//! Provenance graphs: a walk from a node, one step from a node, and one node's panel.

use std::collections::HashSet;

use memtrace::engine::{traverse_columns, Output, Plan};
use memtrace::{Cancel, Params, TraceView, Value as QValue};
use serde_json::{json, Value};

use super::body::direction;
use super::handler::Api;
use super::json::preview;
use super::limits::{MAX_GRAPH_NODES, MAX_VALUE_CHARS};
use crate::serve::http::{ApiError, Reply, Target};
use crate::timeout::with_timeout_on;

impl Api {
    /// The graph object of nodes (full node ids) and edges (id, source,
    /// target, op id) of a trace.
    pub(super) fn graph_json(
        &self,
        view: &TraceView<'_>,
        direction: &str,
        starts: &[String],
        nodes: &[String],
        edges: &[(String, String, String, String)],
    ) -> Result<Value, ApiError> {
        let s = self.structure(view)?;
        let mut seen = HashSet::new();
        let mut node_list = Vec::new();
        let truncated = nodes.len() > MAX_GRAPH_NODES;
        for id in nodes.iter().take(MAX_GRAPH_NODES) {
            if !seen.insert(id.as_str()) {
                continue;
            }
            let var = view.variable(id)?;
            node_list.push(json!({
                "id": id,
                "class": var.as_ref().and_then(|v| v.class_name.clone()),
                "name": var.as_ref().map(|v| v.name.clone()),
                "version": var.as_ref().map(|v| v.version),
                "category": var.as_ref().and_then(|v| v.category.clone()),
                "preview": var.as_ref().and_then(|v| v.value.as_deref()).map(preview),
                "in_degree": s.in_degree.get(id).copied().unwrap_or(0),
                "out_degree": s.out_degree.get(id).copied().unwrap_or(0),
                "start": starts.contains(id),
            }));
        }
        let mut op_ids: Vec<&str> = Vec::new();
        let mut edge_list = Vec::new();
        for (id, source, target, op) in edges {
            if !seen.contains(source.as_str()) || !seen.contains(target.as_str()) {
                continue;
            }
            if !op_ids.contains(&op.as_str()) {
                op_ids.push(op);
            }
            edge_list.push(json!({"id": id, "source": source, "target": target, "op": op}));
        }
        let ops: Vec<Value> = op_ids
            .iter()
            .map(|o| match s.op(o) {
                Some(x) => json!({"id": o, "name": x.name, "category": x.category}),
                None => json!({"id": o, "name": null, "category": null}),
            })
            .collect();
        Ok(json!({
            "trace": view.info().graph_id,
            "direction": direction,
            "nodes": node_list,
            "ops": ops,
            "edges": edge_list,
            "truncated": truncated,
        }))
    }

    /// Runs a TRACE or FORWARD plan as a subgraph and draws it.
    pub(super) fn traverse_graph(
        &self,
        view: &TraceView<'_>,
        plan: &Plan,
        cancel: &Cancel,
    ) -> Result<Option<Value>, ApiError> {
        let Plan::Traverse(p) = plan else {
            return Ok(None);
        };
        let mut p = p.clone();
        p.output = Output::Subgraph;
        p.columns = traverse_columns(Output::Subgraph);
        p.limit = None;
        let mut nodes: Vec<String> = Vec::new();
        let mut edges = Vec::new();
        let text = |v: &QValue| match v {
            QValue::Str(s) => s.clone(),
            other => other.to_string(),
        };
        self.db
            .run_plan(&Plan::Traverse(p.clone()), cancel, &mut |row| {
                match row.get(1).map(&text).as_deref() {
                    Some("node") => nodes.push(text(&row[2])),
                    Some("edge") => {
                        edges.push((text(&row[2]), text(&row[3]), text(&row[4]), text(&row[5])))
                    }
                    _ => {}
                }
                Ok(nodes.len() <= MAX_GRAPH_NODES * 4)
            })?;
        let dir = match p.direction {
            memtrace::engine::WalkDirection::Backward => "backward",
            memtrace::engine::WalkDirection::Forward => "forward",
        };
        // The starts are the first node rows (the traversal emits them first).
        let starts: Vec<String> = nodes.iter().take(p.starts.len().max(1)).cloned().collect();
        Ok(Some(self.graph_json(view, dir, &starts, &nodes, &edges)?))
    }

    pub(super) fn graph(
        &self,
        trace: &str,
        t: &Target,
        cancel: &Cancel,
    ) -> Result<Reply, ApiError> {
        let view = self.db.trace(trace)?;
        let start = t
            .param("start")
            .ok_or_else(|| ApiError::bad("start: missing (a node such as prediction:Q1)"))?;
        // A start that names nothing is a 404, not an empty graph.
        view.resolve(start)?;
        let dir = direction(t)?;
        let depth = t.number("depth", 2, 1..=20)?;
        let keyword = if dir == "backward" {
            "TRACE"
        } else {
            "FORWARD"
        };
        let text = format!("{keyword} $start IN TRACE $trace DEPTH {depth} RETURN subgraph");
        let mut params = Params::new();
        params.insert("start".into(), QValue::Str(start.to_string()));
        params.insert("trace".into(), QValue::Str(format!("#{}", view.id())));
        let plan = self.db.prepare(&text, &params)?;
        let graph = with_timeout_on(cancel, self.query_timeout, |cancel| {
            self.traverse_graph(&view, &plan, cancel)
        })?;
        Ok(Reply::ok(&graph.unwrap_or(Value::Null)))
    }

    pub(super) fn expand(&self, trace: &str, t: &Target) -> Result<Reply, ApiError> {
        let view = self.db.trace(trace)?;
        let node = t
            .param("node")
            .ok_or_else(|| ApiError::bad("node: missing (a full node id)"))?;
        let dir = direction(t)?;
        let var = match view.resolve(node)? {
            memtrace::Node::Variable(v) => v,
            memtrace::Node::Operation(o) => {
                return Err(ApiError::bad(format!(
                    "node: {} is an op; expand a variable",
                    o.op_id
                )))
            }
        };
        let edges = if dir == "backward" {
            view.edges_in(&var)?
        } else {
            view.edges_out(&var)?
        };
        let mut nodes = vec![var.full_node_id.clone()];
        let mut list = Vec::new();
        for e in edges {
            let far = if dir == "backward" {
                &e.source_full_node_id
            } else {
                &e.target_full_node_id
            };
            if !nodes.contains(far) {
                nodes.push(far.clone());
            }
            list.push((
                e.edge_id,
                e.source_full_node_id,
                e.target_full_node_id,
                e.op_id,
            ));
        }
        let starts = [var.full_node_id.clone()];
        Ok(Reply::ok(
            &self.graph_json(&view, dir, &starts, &nodes, &list)?,
        ))
    }

    pub(super) fn node(&self, trace: &str, node: &str) -> Result<Reply, ApiError> {
        let view = self.db.trace(trace)?;
        let var = match view.resolve(node)? {
            memtrace::Node::Variable(v) => v,
            memtrace::Node::Operation(o) => {
                let s = self.structure(&view)?;
                return Ok(Reply::ok(&json!({"op": s.op_json(&o.op_id)})));
            }
        };
        let s = self.structure(&view)?;
        let value = var.value.clone().unwrap_or_default();
        let chars = value.chars().count();
        let shown: String = value.chars().take(MAX_VALUE_CHARS).collect();
        let ops = |edges: Vec<memtrace::Edge>| -> Vec<Value> {
            let mut ids: Vec<String> = Vec::new();
            for e in edges {
                if !ids.contains(&e.op_id) {
                    ids.push(e.op_id);
                }
            }
            ids.iter().map(|o| s.op_json(o)).collect()
        };
        let versions: Vec<String> = view
            .variable_versions(&var.full_name)?
            .into_iter()
            .map(|v| v.full_node_id)
            .collect();
        Ok(Reply::ok(&json!({
            "id": var.full_node_id,
            "class": var.class_name,
            "name": var.name,
            "version": var.version,
            "category": var.category,
            "comment": var.comment,
            "session_id": var.session_id,
            "created_at": var.created_at,
            "metadata": var.metadata,
            "value": shown,
            "value_chars": chars,
            "truncated": chars > MAX_VALUE_CHARS,
            "versions": versions,
            "written_by": ops(view.edges_in(&var)?),
            "read_by": ops(view.edges_out(&var)?),
        })))
    }
}
