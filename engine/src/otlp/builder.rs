//! The export of one trace as it is built: its variables, each a new
//! version of its name, and its edges, each made once.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::read::Span;
use super::values::{iso, op_id};

/// The export being built.
pub(super) struct Builder<'s> {
    /// The trace's spans, in span order.
    pub(super) spans: &'s [Span],
    /// The variables made so far.
    pub(super) nodes: Vec<Value>,
    /// Each variable's full node id.
    pub(super) node_ids: Vec<String>,
    /// The last version of each full name.
    pub(super) versions: HashMap<String, u32>,
    /// The edges made so far.
    pub(super) edges: Vec<Value>,
    /// (op, source, target) of each edge, so that each is made once.
    pub(super) edge_seen: HashSet<(usize, usize, usize)>,
    /// How many edges each span's op induced.
    pub(super) op_edges: Vec<usize>,
    /// Each span's session id.
    pub(super) span_session: Vec<String>,
    /// Each span's op category.
    pub(super) categories: Vec<String>,
}

impl Builder<'_> {
    /// A new version of variable `class:name` of span `span`, written at
    /// `at`; returns its place.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn var(
        &mut self,
        span: usize,
        class: &str,
        name: &str,
        value: Option<String>,
        category: &str,
        at: u64,
        mut meta: Map<String, Value>,
    ) -> usize {
        let full = format!("{class}:{name}");
        let version = self.versions.entry(full.clone()).or_insert(0);
        *version += 1;
        let version = *version;
        meta.insert("span_id".into(), self.spans[span].span_id.clone().into());
        self.node_ids.push(format!("{full}@{version}"));
        self.nodes.push(json!({
            "name": name,
            "class_name": class,
            "version": version,
            "value": value,
            "comment": null,
            "category": category,
            "session_id": self.span_session[span],
            "created_at": iso(at),
            "metadata": meta,
        }));
        self.nodes.len() - 1
    }

    /// An edge `source -> target` induced by `op`, once.
    pub(super) fn edge(&mut self, op: usize, source: usize, target: usize, flow: &str, at: u64) {
        if source == target || !self.edge_seen.insert((op, source, target)) {
            return;
        }
        self.op_edges[op] += 1;
        let n = self.edges.len();
        self.edges.push(json!({
            "edge_id": format!("edge-{n}"),
            "op_id": op_id(&self.spans[op].span_id),
            "category": self.categories[op],
            "comment": null,
            "source_full_node_id": self.node_ids[source],
            "target_full_node_id": self.node_ids[target],
            "session_id": self.span_session[op],
            "created_at": iso(at),
            "metadata": {"flow": flow},
        }));
    }
}
