//! One trace read from a consistent snapshot ([`TraceView`]): its records
//! as the model's types, and its variables' values read when needed
//! ([`LazyValues`]).

use std::sync::Arc;

use memtrace_query::{parse_node_ref, NodeRef};
use memtrace_storage::keys::IdKind;
use memtrace_storage::records::{
    CaseRecord, EdgeRecord, OpRecord, SessionRecord, TraceRecord, ValueRef, VarRecord,
};
use memtrace_storage::{LocalId, ReadView, Store, TraceId};
use serde_json::Value;

use crate::error::{EngineError, Result};
use crate::graph::TraceGraph;
use crate::model::{metadata, Case, Edge, Node, Operation, Session, TraceInfo, Variable};

/// One trace, read from a consistent snapshot.
pub struct TraceView<'db> {
    view: ReadView<'db>,
    store: &'db Arc<Store>,
    id: TraceId,
    record: TraceRecord,
    /// The trace's adjacency, read once when first needed.
    graph: std::cell::OnceCell<TraceGraph>,
}

fn split_node_id(id: &str) -> Option<(&str, u32)> {
    let (name, version) = id.rsplit_once('@')?;
    Some((name, version.parse().ok()?))
}

impl<'db> TraceView<'db> {
    /// A view of the trace `id`, whose record is `record`.
    pub(crate) fn new(
        view: ReadView<'db>,
        store: &'db Arc<Store>,
        id: TraceId,
        record: TraceRecord,
    ) -> TraceView<'db> {
        TraceView {
            view,
            store,
            id,
            record,
            graph: std::cell::OnceCell::new(),
        }
    }

    /// The trace id.
    pub fn id(&self) -> TraceId {
        self.id
    }

    /// The trace's summary.
    pub fn info(&self) -> TraceInfo {
        TraceInfo::from_record(self.id, self.record.clone())
    }

    /// The trace's stored record (header, counts, source).
    pub fn record(&self) -> &TraceRecord {
        &self.record
    }

    pub(crate) fn store(&self) -> &ReadView<'db> {
        &self.view
    }

    pub(crate) fn to_variable(&self, id: LocalId, v: VarRecord) -> Result<Variable> {
        let value = v.value.as_ref().map(|r| self.view.value(r)).transpose()?;
        Ok(self.variable_of(id, v, value))
    }

    /// Every variable version in insertion order without its value, and a
    /// reader of the values to read them when needed: an analysis reads the
    /// values it looks at, not the megabytes of every version of a rolling
    /// memory.
    pub fn variables_lazy(&self) -> Result<(Vec<Variable>, LazyValues)> {
        let mut vars = Vec::new();
        let mut refs = Vec::new();
        for r in self.view.variables(self.id) {
            let (id, v) = r?;
            refs.push(v.value);
            vars.push(self.variable_of(id, v, None));
        }
        Ok((
            vars,
            LazyValues {
                store: Arc::clone(self.store),
                refs,
            },
        ))
    }

    fn variable_of(&self, id: LocalId, v: VarRecord, value: Option<String>) -> Variable {
        let full_name = v.full_name();
        let full_node_id = v.full_node_id();
        let metadata = metadata(&v.common);
        Variable {
            trace: self.id,
            id,
            name: v.name,
            class_name: v.class_name,
            version: v.version,
            value,
            comment: v.comment,
            category: v.category,
            session_id: v.session_id,
            created_at: v.common.created_at,
            filename: v.common.filename,
            lineno: v.common.lineno,
            metadata,
            full_name,
            full_node_id,
        }
    }

    fn to_op(&self, id: LocalId, o: OpRecord) -> Operation {
        let metadata = metadata(&o.common);
        Operation {
            trace: self.id,
            id,
            op_id: o.op_id,
            op_name: o.op_name,
            category: o.category,
            comment: o.comment,
            session_id: o.session_id,
            created_at: o.common.created_at,
            metadata,
        }
    }

    fn to_edge(
        &self,
        id: LocalId,
        e: EdgeRecord,
        op_id: String,
        source: String,
        target: String,
        session_id: String,
    ) -> Edge {
        let metadata = metadata(&e.common);
        Edge {
            trace: self.id,
            id,
            edge_id: e.edge_id,
            op: e.op,
            op_id,
            source: e.source,
            target: e.target,
            source_full_node_id: source,
            target_full_node_id: target,
            category: e.category,
            comment: e.comment,
            session_id,
            metadata,
        }
    }

    fn to_session(id: LocalId, s: SessionRecord) -> Session {
        let metadata = metadata(&s.common);
        Session {
            id,
            session_id: s.session_id,
            session_name: s.session_name,
            category: s.category,
            comment: s.comment,
            created_at: s.common.created_at,
            metadata,
        }
    }

    /// All sessions, in recorded order.
    pub fn sessions(&self) -> Result<Vec<Session>> {
        self.view
            .sessions(self.id)
            .map(|r| Ok(r.map(|(id, s)| Self::to_session(id, s))?))
            .collect()
    }

    /// All variable versions, in recorded order, with their values.
    pub fn variables(&self) -> Result<Vec<Variable>> {
        self.view
            .variables(self.id)
            .map(|r| {
                r.map_err(EngineError::from)
                    .and_then(|(id, v)| self.to_variable(id, v))
            })
            .collect()
    }

    /// A variable version by local id.
    pub fn variable_by_id(&self, id: LocalId) -> Result<Option<Variable>> {
        self.view
            .variable(self.id, id)?
            .map(|v| self.to_variable(id, v))
            .transpose()
    }

    /// A variable version by local id, its value left unread (`None`).
    pub(crate) fn variable_without_value(&self, id: LocalId) -> Result<Option<Variable>> {
        Ok(self
            .view
            .variable(self.id, id)?
            .map(|v| self.variable_of(id, v, None)))
    }

    /// Every version of a full name, oldest first.
    pub fn variable_versions(&self, full_name: &str) -> Result<Vec<Variable>> {
        let mut out = Vec::new();
        for (_, _, local) in self.view.versions(full_name, Some(self.id))? {
            if let Some(v) = self.variable_by_id(local)? {
                out.push(v);
            }
        }
        Ok(out)
    }

    /// The latest version of a full name.
    pub fn latest(&self, full_name: &str) -> Result<Option<Variable>> {
        match self.view.versions(full_name, Some(self.id))?.last() {
            Some((_, _, local)) => self.variable_by_id(*local),
            None => Ok(None),
        }
    }

    /// A variable by its full node id (`full_name@version`).
    pub fn variable(&self, full_node_id: &str) -> Result<Option<Variable>> {
        let Some((name, version)) = split_node_id(full_node_id) else {
            return Ok(None);
        };
        let found = self
            .view
            .versions(name, Some(self.id))?
            .into_iter()
            .find(|(_, v, _)| *v == version);
        match found {
            Some((_, _, local)) => self.variable_by_id(local),
            None => Ok(None),
        }
    }

    /// All operations, in recorded order.
    pub fn ops(&self) -> Result<Vec<Operation>> {
        self.view
            .ops(self.id)
            .map(|r| Ok(r.map(|(id, o)| self.to_op(id, o))?))
            .collect()
    }

    /// An operation by local id.
    pub fn op_by_id(&self, id: LocalId) -> Result<Option<Operation>> {
        Ok(self.view.op(self.id, id)?.map(|o| self.to_op(id, o)))
    }

    /// An edge by local id, with its op id, ends and session named.
    pub fn edge_by_id(&self, id: LocalId) -> Result<Option<Edge>> {
        self.view
            .edge(self.id, id)?
            .map(|e| self.edge_with_lookups(id, e))
            .transpose()
    }

    /// An operation by its op id.
    pub fn op(&self, op_id: &str) -> Result<Option<Operation>> {
        let hit = self
            .view
            .string_id(IdKind::Op, op_id)?
            .into_iter()
            .find(|(t, _)| *t == self.id);
        match hit {
            Some((_, local)) => Ok(self.view.op(self.id, local)?.map(|o| self.to_op(local, o))),
            None => Ok(None),
        }
    }

    /// Resolves a reference (`answer:42`, `answer:42@2`, `'full node id'`, an op id).
    /// A stored full node id or op id is found as written, whatever it holds
    /// (`input:POST /chat@1`), without the quotes a reference would need.
    pub fn resolve(&self, reference: &str) -> Result<Node> {
        let unknown = || EngineError::UnknownNode {
            trace: self.record.graph_id.clone(),
            reference: reference.to_string(),
        };
        if let Some(v) = self.variable(reference)? {
            return Ok(Node::Variable(v));
        }
        let parsed = match parse_node_ref(reference) {
            Ok(parsed) => parsed,
            // Not a reference: a full name or an op id as written, or the
            // reference's syntax error.
            Err(e) => {
                if let Some(v) = self.latest(reference)? {
                    return Ok(Node::Variable(v));
                }
                return match self.op(reference)? {
                    Some(o) => Ok(Node::Operation(o)),
                    None => Err(e.into()),
                };
            }
        };
        let found = match parsed {
            NodeRef::Name {
                full_name,
                version: Some(v),
            } => self
                .variable(&format!("{full_name}@{v}"))?
                .map(Node::Variable),
            NodeRef::Name {
                full_name,
                version: None,
            } => match self.latest(&full_name)? {
                Some(v) => Some(Node::Variable(v)),
                None => self.op(&full_name)?.map(Node::Operation),
            },
            NodeRef::Quoted(id) => match self.variable(&id)? {
                Some(v) => Some(Node::Variable(v)),
                None => match self.latest(&id)? {
                    Some(v) => Some(Node::Variable(v)),
                    None => self.op(&id)?.map(Node::Operation),
                },
            },
        };
        found.ok_or_else(unknown)
    }

    fn full_node_id(&self, local: LocalId) -> Result<String> {
        Ok(self
            .view
            .variable(self.id, local)?
            .map(|v| v.full_node_id())
            .unwrap_or_default())
    }

    fn edge_with_lookups(&self, id: LocalId, e: EdgeRecord) -> Result<Edge> {
        let op_id = self
            .view
            .op(self.id, e.op)?
            .map(|o| o.op_id)
            .unwrap_or_default();
        let session = self
            .view
            .session(self.id, e.session)?
            .map(|s| s.session_id)
            .unwrap_or_default();
        let (s, t) = (self.full_node_id(e.source)?, self.full_node_id(e.target)?);
        Ok(self.to_edge(id, e, op_id, s, t, session))
    }

    /// The string ids of the trace's variables, ops and sessions, indexed by local id.
    pub(crate) fn names(&self) -> Result<Names> {
        fn collect<T>(
            it: impl Iterator<Item = memtrace_storage::Result<(LocalId, T)>>,
            f: impl Fn(T) -> String,
        ) -> Result<Vec<String>> {
            it.map(|r| r.map(|(_, x)| f(x)).map_err(EngineError::from))
                .collect()
        }
        Ok(Names {
            node_ids: collect(self.view.variables(self.id), |v| v.full_node_id())?,
            op_ids: collect(self.view.ops(self.id), |o| o.op_id)?,
            session_ids: collect(self.view.sessions(self.id), |s| s.session_id)?,
        })
    }

    /// All edges, in recorded order.
    pub fn edges(&self) -> Result<Vec<Edge>> {
        let Names {
            node_ids: names,
            op_ids: ops,
            session_ids: sessions,
        } = self.names()?;
        let get = |v: &Vec<String>, i: LocalId| v.get(i as usize).cloned().unwrap_or_default();
        self.view
            .edges(self.id)
            .map(|r| {
                let (id, e) = r?;
                let (o, s, t, ss) = (
                    get(&ops, e.op),
                    get(&names, e.source),
                    get(&names, e.target),
                    get(&sessions, e.session),
                );
                Ok(self.to_edge(id, e, o, s, t, ss))
            })
            .collect()
    }

    /// The trace's adjacency, read with one get the first time.
    fn graph(&self) -> Result<&TraceGraph> {
        if let Some(g) = self.graph.get() {
            return Ok(g);
        }
        let g = TraceGraph::load(&self.view, self.id, &self.record.counts)?;
        Ok(self.graph.get_or_init(|| g))
    }

    fn adjacent(&self, var: &Variable, outgoing: bool) -> Result<Vec<Edge>> {
        let g = self.graph()?;
        let edges = if outgoing {
            g.outgoing(var.id)
        } else {
            g.incoming(var.id)
        };
        edges
            .iter()
            .filter_map(|&edge| self.view.edge(self.id, edge).transpose().map(|r| (edge, r)))
            .map(|(edge, r)| self.edge_with_lookups(edge, r?))
            .collect()
    }

    /// Local ids of every variable the given one depends on, at any depth
    /// (breadth-first along incoming edges, in recorded edge order; the
    /// start is left out, cycles are followed once). Reads the trace's
    /// adjacency once; the query language's `TRACE` runs on the cached one.
    pub fn ancestors(&self, start: LocalId) -> Result<Vec<LocalId>> {
        let graph = self.graph()?;
        let mut seen = std::collections::HashSet::from([start]);
        let mut queue = std::collections::VecDeque::from([start]);
        let mut out = Vec::new();
        while let Some(v) = queue.pop_front() {
            for &e in graph.incoming(v) {
                if let Some(source) = graph.source(e) {
                    if seen.insert(source) {
                        out.push(source);
                        queue.push_back(source);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Edges into a variable (its dependencies), in recorded order.
    pub fn edges_in(&self, var: &Variable) -> Result<Vec<Edge>> {
        self.adjacent(var, false)
    }

    /// Edges out of a variable (what depends on it), in recorded order.
    pub fn edges_out(&self, var: &Variable) -> Result<Vec<Edge>> {
        self.adjacent(var, true)
    }

    pub(crate) fn to_case(&self, id: LocalId, c: CaseRecord) -> Result<Case> {
        let raw: Value = serde_json::from_str(&c.json)?;
        let s = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_string);
        let evidence = raw
            .get("source_evidence_ids")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Case {
            trace: self.id,
            id,
            query_id: s("query_id"),
            query: s("query"),
            golden_answers: raw.get("golden_answers").cloned().unwrap_or(Value::Null),
            prediction: s("prediction"),
            source_evidence_ids: evidence,
            final_error_type: s("final_error_type"),
            final_op_id: s("final_op_id"),
            raw,
        })
    }

    /// The trace's cases (MemTraceBench annotations), in recorded order.
    pub fn cases(&self) -> Result<Vec<Case>> {
        self.view
            .cases(self.id)
            .map(|r| {
                r.map_err(EngineError::from)
                    .and_then(|(id, c)| self.to_case(id, c))
            })
            .collect()
    }
}

/// String ids of a trace's records, indexed by local id.
pub(crate) struct Names {
    /// Full node ids of the variables.
    pub node_ids: Vec<String>,
    /// Op ids.
    pub op_ids: Vec<String>,
    /// Session ids.
    pub session_ids: Vec<String>,
}

/// The values of a trace's variables, read from the store when asked for
/// (values never change once stored). It outlives the view that made it.
#[derive(Clone)]
pub struct LazyValues {
    store: Arc<Store>,
    refs: Vec<Option<ValueRef>>,
}

impl std::fmt::Debug for LazyValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LazyValues {{ variables: {} }}", self.refs.len())
    }
}

impl LazyValues {
    /// How many variables it covers (in the order of
    /// [`TraceView::variables_lazy`]).
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// Whether it covers no variable.
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// The value of the `i`-th variable: `None` when it has none (or `i` is
    /// out of range), an error when the store cannot give it (the trace was
    /// dropped meanwhile, or the store failed).
    pub fn read(&self, i: usize) -> Result<Option<String>> {
        match self.refs.get(i) {
            Some(Some(r)) => Ok(Some(self.store.value(r)?)),
            _ => Ok(None),
        }
    }
}
