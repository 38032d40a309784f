//! A trace's records in memory, for queries, each kind read by one prefix
//! scan and cached separately, so that a query loads only what it reads: its
//! variables ([`TraceCatalog`], values not loaded) with lookups by node id and
//! name, its sessions and ops ([`TraceOps`]) with a lookup by op id, and its
//! edge records ([`TraceEdges`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::mem::size_of;
use std::sync::OnceLock;

use memtrace_storage::records::{Common, Counts, Shared};
use memtrace_storage::{
    EdgeRecord, LocalId, OpRecord, ReadView, SessionRecord, StorageError, TextTable, TraceId,
    TraceTexts, VarRecord,
};

use crate::error::Result;

/// Collects one scan into a vector indexed by local id; the ids must be
/// exactly `0..count`.
fn dense<T>(
    items: impl Iterator<Item = memtrace_storage::Result<(LocalId, T)>>,
    count: u32,
    what: &'static str,
    trace: TraceId,
) -> Result<Vec<T>> {
    let damaged = |reason: String| StorageError::Decode {
        what,
        reason: format!("trace #{trace}: {reason}"),
    };
    let mut out = Vec::with_capacity(count as usize);
    for item in items {
        let (local, record) = item?;
        if local as usize != out.len() || local >= count {
            return Err(damaged(format!(
                "record {local} found where {} was expected ({count} recorded)",
                out.len()
            ))
            .into());
        }
        out.push(record);
    }
    if out.len() != count as usize {
        return Err(damaged(format!("{} records, but {count} recorded", out.len())).into());
    }
    Ok(out)
}

fn opt(s: &Option<String>) -> usize {
    s.as_ref().map_or(0, String::capacity)
}

fn shared(s: &Shared) -> usize {
    match s {
        Shared::Same => 0,
        Shared::Own(v) => opt(v),
    }
}

fn common(c: &Common) -> usize {
    opt(&c.created_at)
        + opt(&c.filename)
        + shared(&c.graph_id)
        + shared(&c.user_id)
        + shared(&c.project_id)
        + opt(&c.metadata)
        + opt(&c.trigger_point)
        + opt(&c.extra)
}

/// Approximate heap bytes of a map: its slots plus what the entries own.
fn map_bytes<V, S>(map: &HashMap<String, V, S>, value_heap: impl Fn(&V) -> usize) -> usize {
    map.capacity() * (size_of::<(String, V)>() + 1)
        + map
            .iter()
            .map(|(k, v)| k.capacity() + value_heap(v))
            .sum::<usize>()
}

/// One trace's variables, in local-id order (values are not loaded: a
/// [`VarRecord`] holds a reference), with lookups by node id and full name.
#[derive(Debug, Clone)]
pub struct TraceCatalog {
    vars: Vec<VarRecord>,
    /// Each variable's full node id and category, made on first use
    /// (queries that hand out rows by the thousand use them; scans and
    /// patterns do not).
    labels: OnceLock<Option<TextTable<2>>>,
    /// Built on the first lookup by node id: scans and traversals never
    /// need it.
    by_node_id: OnceLock<FastMap<String, u32>>,
    /// Built on the first lookup by full name (each name's versions).
    by_name: OnceLock<FastMap<String, Vec<u32>>>,
    bytes: usize,
}

/// A hash map with a fast, non-cryptographic hasher: keys come from one
/// trace's own records.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One trace's sessions and ops, in local-id order, with a lookup by op id.
#[derive(Debug, Clone)]
pub struct TraceOps {
    sessions: Vec<SessionRecord>,
    ops: Vec<OpRecord>,
    by_op_id: OnceLock<HashMap<String, u32>>,
    /// Each op's id, name and kind, made on first use.
    labels: OnceLock<Option<TextTable<3>>>,
    bytes: usize,
}

/// A trace's labels as stored at its import (see [`TraceTexts`]): `None`
/// for a trace stored before labels were, whose rows take their texts
/// from its records ([`TraceCatalog::label`], [`TraceOps::label`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLabels(pub Option<TraceTexts>);

impl StoredLabels {
    /// Reads a trace's stored labels (one get) and checks them against its
    /// counts.
    pub fn load(view: &ReadView, trace: TraceId, counts: &Counts) -> Result<StoredLabels> {
        Self::checked(trace, counts, view.texts(trace)?)
    }

    fn checked(trace: TraceId, counts: &Counts, stored: Option<TraceTexts>) -> Result<Self> {
        match stored {
            Some(l)
                if l.vars.len() != counts.variables as usize
                    || l.ops.len() != counts.ops as usize =>
            {
                Err(StorageError::Decode {
                    what: "labels",
                    reason: format!(
                        "trace #{trace}: {} variables and {} ops labelled, {} and {} recorded",
                        l.vars.len(),
                        l.ops.len(),
                        counts.variables,
                        counts.ops
                    ),
                }
                .into())
            }
            stored => Ok(StoredLabels(stored)),
        }
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        size_of::<Self>() + self.0.as_ref().map_or(0, TraceTexts::bytes)
    }
}

/// Each variable's full node id and category; `None` from 2 GiB of text.
fn var_labels(vars: &[VarRecord]) -> Option<TextTable<2>> {
    let (mut t, mut scratch) = (TextTable::default(), String::new());
    for v in vars {
        if !t.push_variable(v, &mut scratch) {
            return None;
        }
    }
    t.shrink_to_fit();
    Some(t)
}

/// Each op's id, name and kind; `None` from 2 GiB of text.
fn op_labels(ops: &[OpRecord]) -> Option<TextTable<3>> {
    let mut t = TextTable::default();
    for o in ops {
        if !t.push_op(o) {
            return None;
        }
    }
    t.shrink_to_fit();
    Some(t)
}

/// A variable's full node id (`class:name@version`) and category, as
/// [`TraceCatalog::label`] hands them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarLabel<'a> {
    /// The full node id.
    pub node_id: Cow<'a, str>,
    /// The category.
    pub category: Option<&'a str>,
}

/// An op's id, name and kind (its `category`), as [`TraceOps::label`]
/// hands them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpLabel<'a> {
    /// The op id.
    pub id: &'a str,
    /// The op name.
    pub name: Option<&'a str>,
    /// The kind (`category`).
    pub kind: Option<&'a str>,
}

impl TraceOps {
    /// Loads a trace's sessions and ops, one prefix scan each; `counts` are
    /// the trace record's (missing, extra or out-of-order records are damage).
    pub fn load(view: &ReadView, trace: TraceId, counts: &Counts) -> Result<TraceOps> {
        let sessions = dense(view.sessions(trace), counts.sessions, "session", trace)?;
        let ops = dense(view.ops(trace), counts.ops, "op", trace)?;
        Ok(Self::new(sessions, ops))
    }

    /// These records (local id = position).
    pub fn new(sessions: Vec<SessionRecord>, ops: Vec<OpRecord>) -> TraceOps {
        let s: usize = sessions
            .iter()
            .map(|s| {
                s.session_id.capacity()
                    + opt(&s.session_name)
                    + opt(&s.comment)
                    + opt(&s.category)
                    + common(&s.common)
            })
            .sum();
        let o: usize = ops
            .iter()
            .map(|o| {
                o.op_id.capacity()
                    + opt(&o.op_name)
                    + opt(&o.comment)
                    + opt(&o.category)
                    + opt(&o.session_id)
                    + common(&o.common)
            })
            .sum();
        let bytes = size_of::<Self>()
            + sessions.capacity() * size_of::<SessionRecord>()
            + ops.capacity() * size_of::<OpRecord>()
            + s
            + o;
        TraceOps {
            sessions,
            ops,
            by_op_id: OnceLock::new(),
            labels: OnceLock::new(),
            bytes,
        }
    }

    /// An op's id, name and kind by local id, read from a compact copy
    /// beside the records, made on first use (from the record when there
    /// is none).
    pub fn label(&self, id: u32) -> Option<OpLabel<'_>> {
        let labels = self.labels.get_or_init(|| op_labels(&self.ops));
        match labels {
            Some(l) => l.get(id).map(|[id, name, kind]| OpLabel {
                id: id.unwrap_or(""),
                name,
                kind,
            }),
            None => self.op(id).map(|o| OpLabel {
                id: &o.op_id,
                name: o.op_name.as_deref(),
                kind: o.category.as_deref(),
            }),
        }
    }

    /// The sessions, by local id.
    pub fn sessions(&self) -> &[SessionRecord] {
        &self.sessions
    }

    /// The ops, by local id.
    pub fn ops(&self) -> &[OpRecord] {
        &self.ops
    }

    /// A session by local id.
    pub fn session(&self, id: u32) -> Option<&SessionRecord> {
        self.sessions.get(id as usize)
    }

    /// An op by local id.
    pub fn op(&self, id: u32) -> Option<&OpRecord> {
        self.ops.get(id as usize)
    }

    /// The local id of the op with this op id (the lookup is built on first use).
    pub fn op_by_id(&self, op_id: &str) -> Option<u32> {
        self.by_op_id
            .get_or_init(|| {
                let mut m = HashMap::with_capacity(self.ops.len());
                for (local, o) in self.ops.iter().enumerate() {
                    m.entry(o.op_id.clone()).or_insert(local as u32);
                }
                m
            })
            .get(op_id)
            .copied()
    }

    /// Approximate bytes held: string lengths and vector capacities (the
    /// lookup and the labels, made on first use, are not counted).
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl TraceCatalog {
    /// Loads a trace's variables by one prefix scan.
    ///
    /// `counts` are the trace record's; records that are missing, extra or
    /// out of order are reported as damaged data.
    pub fn load(view: &ReadView, trace: TraceId, counts: &Counts) -> Result<TraceCatalog> {
        let vars = dense(view.variables(trace), counts.variables, "variable", trace)?;
        Ok(Self::new(vars))
    }

    /// A catalog of these variables (local id = position).
    pub fn new(vars: Vec<VarRecord>) -> TraceCatalog {
        let mut catalog = TraceCatalog {
            vars,
            labels: OnceLock::new(),
            by_node_id: OnceLock::new(),
            by_name: OnceLock::new(),
            bytes: 0,
        };
        catalog.bytes = catalog.measure();
        catalog
    }

    fn by_node_id(&self) -> &FastMap<String, u32> {
        self.by_node_id.get_or_init(|| {
            let mut map = FastMap::with_capacity_and_hasher(self.vars.len(), Default::default());
            for (local, v) in self.vars.iter().enumerate() {
                map.entry(v.full_node_id()).or_insert(local as u32);
            }
            map
        })
    }

    fn by_name(&self) -> &FastMap<String, Vec<u32>> {
        self.by_name.get_or_init(|| {
            let vars = &self.vars;
            let mut map: FastMap<String, Vec<u32>> = FastMap::default();
            for (local, v) in vars.iter().enumerate() {
                map.entry(v.full_name()).or_default().push(local as u32);
            }
            for locals in map.values_mut() {
                // Stable: equal versions (not imported, but possible) keep recorded order.
                locals.sort_by_key(|&l| vars[l as usize].version);
                locals.shrink_to_fit();
            }
            map
        })
    }

    fn measure(&self) -> usize {
        let vars: usize = self
            .vars
            .iter()
            .map(|v| {
                v.name.capacity()
                    + opt(&v.class_name)
                    + opt(&v.comment)
                    + opt(&v.category)
                    + opt(&v.session_id)
                    + opt(&v.node_id)
                    + common(&v.common)
            })
            .sum();
        size_of::<Self>()
            + self.vars.capacity() * size_of::<VarRecord>()
            + vars
            + self.by_node_id.get().map_or(0, |m| map_bytes(m, |_| 0))
            + self
                .by_name
                .get()
                .map_or(0, |m| map_bytes(m, |v| v.capacity() * size_of::<u32>()))
    }

    /// The variables (every version), by local id.
    pub fn variables(&self) -> &[VarRecord] {
        &self.vars
    }

    /// A variable by local id.
    pub fn variable(&self, id: u32) -> Option<&VarRecord> {
        self.vars.get(id as usize)
    }

    /// A variable's full node id and category by local id, from a compact
    /// copy beside the records, made on first use (from the record when
    /// there is none).
    pub fn label(&self, id: u32) -> Option<VarLabel<'_>> {
        let labels = self.labels.get_or_init(|| var_labels(&self.vars));
        match labels {
            Some(l) => l.get(id).map(|[node_id, category]| VarLabel {
                node_id: Cow::Borrowed(node_id.unwrap_or("")),
                category,
            }),
            None => self.variable(id).map(|v| VarLabel {
                node_id: Cow::Owned(v.full_node_id()),
                category: v.category.as_deref(),
            }),
        }
    }

    /// The local id of the variable with this full node id (`full_name@version`).
    pub fn var_by_node_id(&self, full_node_id: &str) -> Option<u32> {
        self.by_node_id().get(full_node_id).copied()
    }

    /// Local ids of the versions of a full name, oldest version first
    /// (empty for an unknown name).
    pub fn versions(&self, full_name: &str) -> &[u32] {
        self.by_name().get(full_name).map_or(&[], Vec::as_slice)
    }

    /// Each full name's versions (local ids, oldest version first), one
    /// run per name, in no particular order.
    pub fn version_runs(&self) -> impl Iterator<Item = &[u32]> {
        self.by_name().values().map(Vec::as_slice)
    }

    /// The local id of the latest version of a full name.
    pub fn latest(&self, full_name: &str) -> Option<u32> {
        self.versions(full_name).last().copied()
    }

    /// Approximate bytes held: string lengths and vector capacities (the
    /// lookups and labels, made on first use, are not counted).
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// One trace's edge records, by local id (for `edge.category`, `edge.comment`
/// and the like; the graph itself is a [`TraceGraph`](crate::TraceGraph)).
#[derive(Debug, Clone)]
pub struct TraceEdges {
    edges: Vec<EdgeRecord>,
    bytes: usize,
}

impl TraceEdges {
    /// Loads a trace's edge records by one prefix scan; `counts` are the
    /// trace record's (missing, extra or out-of-order records are damage).
    pub fn load(view: &ReadView, trace: TraceId, counts: &Counts) -> Result<TraceEdges> {
        Ok(Self::new(dense(
            view.edges(trace),
            counts.edges,
            "edge",
            trace,
        )?))
    }

    /// These records (local id = position).
    pub fn new(edges: Vec<EdgeRecord>) -> TraceEdges {
        let heap: usize = edges
            .iter()
            .map(|e| e.edge_id.capacity() + opt(&e.category) + opt(&e.comment) + common(&e.common))
            .sum();
        let bytes = size_of::<Self>() + edges.capacity() * size_of::<EdgeRecord>() + heap;
        TraceEdges { edges, bytes }
    }

    /// The edge records, by local id.
    pub fn edges(&self) -> &[EdgeRecord] {
        &self.edges
    }

    /// An edge record by local id.
    pub fn get(&self, id: u32) -> Option<&EdgeRecord> {
        self.edges.get(id as usize)
    }

    /// Approximate bytes held: string lengths and vector capacity.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, EngineError, ImportOptions};

    fn import_sample(dir: &std::path::Path) -> (Engine, TraceId, Counts) {
        let db = Engine::open(dir.join("db")).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/sample_export.json");
        let reports = db.import_paths(&[path], &ImportOptions::default(), &mut |_| {});
        let imported = reports.into_iter().next().unwrap().result.unwrap();
        (db, imported[0].trace, imported[0].counts)
    }

    #[test]
    fn labels_are_the_records_texts_and_tell_absent_from_empty() {
        let dir = tempfile::tempdir().unwrap();
        let (db, t, counts) = import_sample(dir.path());
        let tv = db.trace_by_id(t).unwrap();
        let c = TraceCatalog::load(tv.store(), t, &counts).unwrap();
        let ops = TraceOps::load(tv.store(), t, &counts).unwrap();
        for (i, v) in c.variables().iter().enumerate() {
            let l = c.label(i as u32).unwrap();
            assert_eq!(l.node_id, v.full_node_id());
            assert!(matches!(l.node_id, Cow::Borrowed(_)));
            assert_eq!(l.category, v.category.as_deref());
        }
        for (i, o) in ops.ops().iter().enumerate() {
            let l = ops.label(i as u32).unwrap();
            assert_eq!(l.id, o.op_id);
            assert_eq!(l.name, o.op_name.as_deref());
            assert_eq!(l.kind, o.category.as_deref());
        }
        assert!(c.label(counts.variables).is_none());
        assert!(ops.label(counts.ops).is_none());
        // Absent, empty and present texts, side by side.
        let mut rec = ops.ops()[0].clone();
        let mut three = Vec::new();
        for (name, kind) in [(None, Some("")), (Some(""), None), (Some("n"), Some("k"))] {
            rec.op_name = name.map(str::to_string);
            rec.category = kind.map(str::to_string);
            three.push(rec.clone());
        }
        let ops = TraceOps::new(Vec::new(), three);
        let got: Vec<(Option<&str>, Option<&str>)> = (0..3)
            .map(|i| ops.label(i).map(|l| (l.name, l.kind)).unwrap())
            .collect();
        assert_eq!(
            got,
            [(None, Some("")), (Some(""), None), (Some("n"), Some("k"))]
        );
    }

    #[test]
    fn stored_labels_are_the_records_texts_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let (db, t, counts) = import_sample(dir.path());
        let tv = db.trace_by_id(t).unwrap();
        let view = tv.store();
        let stored = StoredLabels::load(view, t, &counts).unwrap();
        let stored = stored.0.expect("stored at import");
        // The texts a trace stored before labels were shows: its records'.
        let c = TraceCatalog::load(view, t, &counts).unwrap();
        let ops = TraceOps::load(view, t, &counts).unwrap();
        assert_eq!(stored.vars, var_labels(c.variables()).unwrap());
        assert_eq!(stored.ops, op_labels(ops.ops()).unwrap());
        for (i, v) in c.variables().iter().enumerate() {
            let [node_id, category] = stored.vars.get(i as u32).unwrap();
            assert_eq!(node_id, Some(v.full_node_id().as_str()));
            assert_eq!(category, v.category.as_deref());
        }
        assert_eq!(stored.ops.len(), counts.ops as usize);
        for (i, v) in c.variables().iter().enumerate() {
            let t = stored.var(i as u32).expect("classes stored at import");
            assert_eq!(
                (t.name, t.class, t.version, t.full_name),
                (
                    v.name.as_str(),
                    v.class_name.as_deref(),
                    v.version,
                    v.full_name().as_str()
                )
            );
        }
        // Labels that do not match the trace's counts are damaged data.
        let fewer = Counts {
            variables: counts.variables - 1,
            ..counts
        };
        let e = StoredLabels::checked(t, &fewer, Some(stored)).unwrap_err();
        assert!(e.to_string().contains("labelled"), "{e}");
        assert_eq!(
            StoredLabels::checked(t, &fewer, None).unwrap(),
            StoredLabels(None)
        );
    }

    #[test]
    fn the_catalog_holds_the_records_in_order_with_their_lookups() {
        let dir = tempfile::tempdir().unwrap();
        let (db, t, counts) = import_sample(dir.path());
        let tv = db.trace_by_id(t).unwrap();
        let c = TraceCatalog::load(tv.store(), t, &counts).unwrap();
        let ops = TraceOps::load(tv.store(), t, &counts).unwrap();
        assert_eq!(ops.sessions().len(), counts.sessions as usize);
        assert_eq!(c.variables().len(), counts.variables as usize);
        assert_eq!(ops.ops().len(), counts.ops as usize);
        for v in tv.variables().unwrap() {
            let rec = c.variable(v.id).unwrap();
            assert_eq!(rec.full_node_id(), v.full_node_id);
            assert_eq!(c.var_by_node_id(&v.full_node_id), Some(v.id));
            let versions: Vec<u32> = tv
                .variable_versions(&v.full_name)
                .unwrap()
                .iter()
                .map(|x| x.id)
                .collect();
            assert_eq!(c.versions(&v.full_name), versions.as_slice());
            assert_eq!(
                c.latest(&v.full_name),
                tv.latest(&v.full_name).unwrap().map(|x| x.id)
            );
        }
        for o in tv.ops().unwrap() {
            assert_eq!(ops.op_by_id(&o.op_id), Some(o.id));
            assert_eq!(ops.op(o.id).unwrap().op_id, o.op_id);
        }
        for s in tv.sessions().unwrap() {
            assert_eq!(ops.session(s.id).unwrap().session_id, s.session_id);
        }
        assert_eq!(c.var_by_node_id("nope@1"), None);
        assert!(c.versions("nope").is_empty());
        assert_eq!(ops.op_by_id("op-nope"), None);
        assert!(ops.bytes() > counts.ops as usize * size_of::<OpRecord>());
        assert!(c.variable(counts.variables).is_none());
        let names: usize = c.variables().iter().map(|v| v.name.len()).sum();
        assert!(c.bytes() > names);

        let edges = TraceEdges::load(tv.store(), t, &counts).unwrap();
        let expected = tv.edges().unwrap();
        assert_eq!(edges.edges().len(), expected.len());
        for e in &expected {
            let rec = edges.get(e.id).unwrap();
            assert_eq!(
                (&rec.edge_id, rec.source, rec.target, &rec.category),
                (&e.edge_id, e.source, e.target, &e.category)
            );
        }
        assert!(edges.get(counts.edges).is_none());
        assert!(edges.bytes() > expected.len() * size_of::<EdgeRecord>());
    }

    #[test]
    fn counts_that_disagree_with_the_records_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (db, t, counts) = import_sample(dir.path());
        let tv = db.trace_by_id(t).unwrap();
        let damaged = |r: Result<()>| {
            assert!(
                matches!(r, Err(EngineError::Storage(StorageError::Decode { .. }))),
                "{r:?}"
            )
        };
        damaged(
            TraceCatalog::load(
                tv.store(),
                t,
                &Counts {
                    variables: counts.variables - 1,
                    ..counts
                },
            )
            .map(drop),
        );
        damaged(
            TraceOps::load(
                tv.store(),
                t,
                &Counts {
                    sessions: counts.sessions + 1,
                    ..counts
                },
            )
            .map(drop),
        );
        damaged(
            TraceEdges::load(
                tv.store(),
                t,
                &Counts {
                    edges: counts.edges + 1,
                    ..counts
                },
            )
            .map(drop),
        );
    }
}
