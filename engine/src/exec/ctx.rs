//! One trace as a query sees it ([`TraceCtx`]): its record and its cached
//! parts, loaded on first use, with the readers of its records' fields.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use memtrace_query::ast::Direction;
use memtrace_query::{Field, Value};
use memtrace_storage::records::{Counts, TraceRecord};
use memtrace_storage::{LocalId, ReadView, TextTable, TraceId, TraceTexts, VarText};

use super::value::meta_path;
use crate::cache::TraceState;
use crate::catalog::{StoredLabels, TraceCatalog, TraceEdges, TraceOps};
use crate::db::Engine;
use crate::error::Result;
use crate::exec::cancel::Cancel;
use crate::graph::{reach_count_scanned, reach_count_stored, TraceGraph, SCAN_LEVELS};

/// The value in `cell`, loaded (from the trace cache) on first use.
pub fn lazy<T>(cell: &OnceLock<Arc<T>>, load: impl FnOnce() -> Result<Arc<T>>) -> Result<&T> {
    if let Some(x) = cell.get() {
        return Ok(x);
    }
    let x = load()?;
    Ok(cell.get_or_init(|| x))
}

/// Where a trace's ops' ids, names and kinds are read: its stored labels,
/// or (a trace stored before labels were) its op records, loaded when
/// first read.
#[derive(Clone, Copy)]
pub(super) enum OpTexts<'t, 'a> {
    /// The stored labels' table of ops.
    Labels(&'t TextTable<3>),
    /// The op records, through the trace's context.
    Records(&'t TraceCtx<'a>),
}

impl<'t> OpTexts<'t, '_> {
    /// Op `o`'s id, name and kind; all absent for an unknown op.
    #[inline]
    pub(super) fn get(self, o: u32) -> Result<[Option<&'t str>; 3]> {
        Ok(match self {
            OpTexts::Labels(l) => l.get(o),
            OpTexts::Records(t) => t.ops()?.label(o).map(|l| [Some(l.id), l.name, l.kind]),
        }
        .unwrap_or([None; 3]))
    }
}

/// One trace as a query sees it: its record and lazily loaded cached parts.
pub(super) struct TraceCtx<'a> {
    db: &'a Engine,
    view: &'a ReadView<'a>,
    id: TraceId,
    record: TraceRecord,
    catalog: OnceLock<Arc<TraceCatalog>>,
    ops: OnceLock<Arc<TraceOps>>,
    graph: OnceLock<Arc<TraceGraph>>,
    edges: OnceLock<Arc<TraceEdges>>,
    labels: OnceLock<Arc<StoredLabels>>,
    values: RefCell<HashMap<u32, Value>>,
    /// The token of the statement that reads the trace, which its rows
    /// look at while a long condition is evaluated ([`Row::stopped`]).
    ///
    /// [`Row::stopped`]: memtrace_query::Row::stopped
    cancel: Cancel,
}

impl<'a> TraceCtx<'a> {
    pub(super) fn new(
        db: &'a Engine,
        view: &'a ReadView<'a>,
        id: TraceId,
        record: TraceRecord,
    ) -> Self {
        TraceCtx {
            db,
            view,
            id,
            record,
            catalog: OnceLock::new(),
            ops: OnceLock::new(),
            graph: OnceLock::new(),
            edges: OnceLock::new(),
            labels: OnceLock::new(),
            values: RefCell::new(HashMap::new()),
            cancel: Cancel::new(),
        }
    }

    /// The context read under `cancel`.
    pub(super) fn until(mut self, cancel: &Cancel) -> Self {
        self.cancel = cancel.clone();
        self
    }

    /// Whether the statement that reads the trace was stopped.
    pub(super) fn stopped(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// A cached part of the trace: the record this context holds was read
    /// from its view, so the view is known to see the trace.
    fn seen<T: TraceState>(
        &self,
        load: impl FnOnce(&ReadView, TraceId, &Counts) -> Result<T>,
    ) -> Result<Arc<T>> {
        self.db
            .cached_seen(self.view, self.id, &self.record.counts, load)
    }

    pub(super) fn catalog(&self) -> Result<&TraceCatalog> {
        lazy(&self.catalog, || self.seen(TraceCatalog::load))
    }

    pub(super) fn ops(&self) -> Result<&TraceOps> {
        lazy(&self.ops, || self.seen(TraceOps::load))
    }

    /// What rows show of the trace's variables and ops, read without
    /// loading their records; `None` for a trace stored before labels
    /// were (its rows read its records).
    pub(super) fn labels(&self) -> Result<Option<&TraceTexts>> {
        Ok(lazy(&self.labels, || self.seen(StoredLabels::load))?
            .0
            .as_ref())
    }

    /// An op's id, name and kind, from the stored labels or the op's record.
    pub(super) fn op_texts(&self, o: u32) -> Result<[Option<&str>; 3]> {
        self.op_reader()?.get(o)
    }

    /// Where the trace's ops' texts are read: a walk that hands out a row
    /// per op looks this up once, not per row.
    pub(super) fn op_reader(&self) -> Result<OpTexts<'_, 'a>> {
        Ok(match self.labels()? {
            Some(l) => OpTexts::Labels(&l.ops),
            None => OpTexts::Records(self),
        })
    }

    pub(super) fn graph(&self) -> Result<&TraceGraph> {
        lazy(&self.graph, || {
            self.seen(|view, trace, counts| self.db.load_graph(view, trace, counts))
        })
    }

    /// [`TraceGraph::reach_count`] without loading the graph, when the
    /// walk is bounded and the graph is not in memory (see
    /// [`TraceCache::walk_stored`]): over the edges of the trace's head, or
    /// (a trace without one in the cache) from the stored blocks of its
    /// rows. `None` when the graph should be used instead.
    ///
    /// [`TraceCache::walk_stored`]: crate::cache::TraceCache::walk_stored
    pub(super) fn reach_count_stored(
        &self,
        starts: &[u32],
        dir: Direction,
        min_depth: u32,
        max_depth: Option<u32>,
        cancel: &Cancel,
    ) -> Result<Option<u64>> {
        let Some(depth) = max_depth else {
            return Ok(None);
        };
        if self.graph.get().is_some() || !self.db.walk_stored(self.id) {
            return Ok(None);
        }
        if let Some(head) = self.db.cached_small_head(self.id) {
            return match &head.adjacency {
                Some(adj) if depth <= SCAN_LEVELS => {
                    reach_count_scanned(adj, starts, dir, min_depth, depth, cancel).map(Some)
                }
                _ => Ok(None),
            };
        }
        reach_count_stored(
            self.view,
            self.id,
            &self.record.counts,
            starts,
            dir,
            min_depth,
            max_depth,
            cancel,
        )
    }

    pub(super) fn edges(&self) -> Result<&TraceEdges> {
        lazy(&self.edges, || self.seen(TraceEdges::load))
    }

    /// The trace's dense id.
    pub(super) fn id(&self) -> TraceId {
        self.id
    }

    pub(super) fn gid(&self) -> Value {
        Value::Str(self.record.graph_id.clone())
    }

    /// The trace's graph id, borrowed.
    pub(super) fn graph_id(&self) -> &str {
        &self.record.graph_id
    }

    /// An op's id, borrowed (empty for an op the trace does not hold).
    pub(super) fn op_id_str(&self, o: u32) -> Result<&str> {
        Ok(self.op_texts(o)?[0].unwrap_or(""))
    }

    /// How many variables the trace holds (local ids `0..n`).
    pub(super) fn var_count(&self) -> u32 {
        self.record.counts.variables
    }

    /// How many ops the trace holds (local ids `0..n`).
    pub(super) fn op_count(&self) -> u32 {
        self.record.counts.ops
    }

    /// How many sessions the trace holds (local ids `0..n`).
    pub(super) fn session_count(&self) -> u32 {
        self.record.counts.sessions
    }

    /// Variable `v`'s name, class, version, full node id and category from
    /// the stored labels, without its record; `None` where they do not
    /// hold them (a trace stored before labels or their classes were, or
    /// an unknown variable): the record is read instead.
    fn var_text(&self, v: u32) -> Result<Option<VarText<'_>>> {
        Ok(self.labels()?.and_then(|l| l.var(v)))
    }

    pub(super) fn node_id(&self, v: u32) -> Result<String> {
        if let Some(id) = self
            .labels()?
            .and_then(|l| l.vars.get(v))
            .and_then(|[id, _]| id)
        {
            return Ok(id.to_string());
        }
        Ok(self
            .catalog()?
            .variable(v)
            .map(|r| r.full_node_id())
            .unwrap_or_default())
    }

    pub(super) fn op_id(&self, o: u32) -> Result<String> {
        Ok(self.op_id_str(o)?.to_string())
    }

    fn session_id(&self, s: Option<LocalId>) -> Result<Value> {
        Ok(match s {
            Some(s) => self
                .ops()?
                .session(s)
                .map_or(Value::Null, |r| Value::Str(r.session_id.clone())),
            None => Value::Null,
        })
    }

    pub(super) fn var_field(&self, v: u32, f: &Field) -> Result<Value> {
        let labelled = matches!(
            f,
            Field::FullName
                | Field::Name
                | Field::Class
                | Field::Version
                | Field::Category
                | Field::NodeId
        );
        if let Some(l) = labelled.then(|| self.var_text(v)).transpose()?.flatten() {
            return Ok(match f {
                Field::FullName => Value::Str(l.full_name.to_string()),
                Field::Name => Value::Str(l.name.to_string()),
                Field::Class => l.class.map(str::to_string).into(),
                Field::Version => Value::from(l.version),
                Field::Category => l.category.map(str::to_string).into(),
                _ => Value::Str(l.node_id.to_string()),
            });
        }
        let c = self.catalog()?;
        let Some(r) = c.variable(v) else {
            return Ok(Value::Null);
        };
        Ok(match f {
            Field::FullName => Value::Str(r.full_name()),
            Field::Name => Value::Str(r.name.clone()),
            Field::Class => r.class_name.clone().into(),
            Field::Version => Value::from(r.version),
            Field::Category => r.category.clone().into(),
            Field::Comment => r.comment.clone().into(),
            Field::Value => {
                if let Some(v) = self.values.borrow().get(&v) {
                    return Ok(v.clone());
                }
                let val = match &r.value {
                    Some(vr) => Value::Str(self.view.value(vr)?),
                    None => Value::Null,
                };
                self.values.borrow_mut().insert(v, val.clone());
                val
            }
            Field::CreatedAt => r.common.created_at.clone().into(),
            Field::Session => r.session_id.clone().into(),
            Field::NodeId => Value::Str(r.full_node_id()),
            Field::Filename => r.common.filename.clone().into(),
            Field::Lineno => r.common.lineno.map_or(Value::Null, Value::Int),
            Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
            _ => Value::Null,
        })
    }

    /// A variable's text field, borrowed: `Some(value)` for the plain text
    /// fields, `None` for the others (which need [`var_field`](Self::var_field)).
    pub(super) fn var_str(&self, v: u32, f: &Field) -> Result<Option<Option<&str>>> {
        let text = matches!(
            f,
            Field::Name
                | Field::Class
                | Field::Category
                | Field::Comment
                | Field::Session
                | Field::CreatedAt
        );
        if !text {
            return Ok(None);
        }
        let labelled = matches!(f, Field::Name | Field::Class | Field::Category);
        if let Some(l) = labelled.then(|| self.var_text(v)).transpose()?.flatten() {
            return Ok(Some(match f {
                Field::Name => Some(l.name),
                Field::Class => l.class,
                _ => l.category,
            }));
        }
        let Some(r) = self.catalog()?.variable(v) else {
            return Ok(Some(None));
        };
        Ok(match f {
            Field::Name => Some(Some(r.name.as_str())),
            Field::Class => Some(r.class_name.as_deref()),
            Field::Category => Some(r.category.as_deref()),
            Field::Comment => Some(r.comment.as_deref()),
            Field::Session => Some(r.session_id.as_deref()),
            Field::CreatedAt => Some(r.common.created_at.as_deref()),
            _ => None,
        })
    }

    pub(super) fn op_field(&self, o: u32, f: &Field) -> Result<Value> {
        if matches!(f, Field::Id | Field::OpName | Field::Category) {
            // From the stored labels, without the op's record.
            if let Some([id, name, kind]) = self.labels()?.and_then(|l| l.ops.get(o)) {
                return Ok(match f {
                    Field::Id => Value::Str(id.unwrap_or("").to_string()),
                    Field::OpName => name.map(str::to_string).into(),
                    _ => kind.map(str::to_string).into(),
                });
            }
        }
        let c = self.ops()?;
        let Some(r) = c.op(o) else {
            return Ok(Value::Null);
        };
        Ok(match f {
            Field::Id => Value::Str(r.op_id.clone()),
            Field::OpName => r.op_name.clone().into(),
            Field::Category => r.category.clone().into(),
            Field::Comment => r.comment.clone().into(),
            Field::Session => r.session_id.clone().into(),
            Field::CreatedAt => r.common.created_at.clone().into(),
            Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
            _ => Value::Null,
        })
    }

    pub(super) fn edge_field(&self, e: u32, f: &Field) -> Result<Value> {
        let g = self.graph()?;
        Ok(match f {
            Field::Source => match g.source(e) {
                Some(v) => Value::Str(self.node_id(v)?),
                None => Value::Null,
            },
            Field::Target => match g.target(e) {
                Some(v) => Value::Str(self.node_id(v)?),
                None => Value::Null,
            },
            Field::Op => match g.op(e) {
                Some(o) => Value::Str(self.op_id(o)?),
                None => Value::Null,
            },
            Field::OpName => match g.op(e) {
                Some(o) => self.op_field(o, &Field::OpName)?,
                None => Value::Null,
            },
            Field::Kind => match g.op(e) {
                Some(o) => self.op_field(o, &Field::Category)?,
                None => Value::Null,
            },
            _ => {
                let edges = self.edges()?;
                let Some(r) = edges.get(e) else {
                    return Ok(Value::Null);
                };
                match f {
                    Field::Id => Value::Str(r.edge_id.clone()),
                    Field::Category => r.category.clone().into(),
                    Field::Comment => r.comment.clone().into(),
                    Field::Session => self.session_id(Some(r.session))?,
                    Field::CreatedAt => r.common.created_at.clone().into(),
                    Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
                    _ => Value::Null,
                }
            }
        })
    }

    pub(super) fn session_field(&self, s: u32, f: &Field) -> Result<Value> {
        let c = self.ops()?;
        let Some(r) = c.session(s) else {
            return Ok(Value::Null);
        };
        Ok(match f {
            Field::Id => Value::Str(r.session_id.clone()),
            Field::Name => r.session_name.clone().into(),
            Field::Category => r.category.clone().into(),
            Field::Comment => r.comment.clone().into(),
            Field::CreatedAt => r.common.created_at.clone().into(),
            Field::Meta(path) => meta_path(r.common.metadata.as_deref(), path),
            _ => Value::Null,
        })
    }

    pub(super) fn trace_field(&self, f: &Field) -> Value {
        let r = &self.record;
        match f {
            Field::Id => self.gid(),
            Field::UserId => r.user_id.clone().into(),
            Field::ProjectId => r.project_id.clone().into(),
            Field::CreatedAt => r.created_at.clone().into(),
            Field::Source => Value::Str(r.source.clone()),
            Field::Key => Value::Int(i64::from(self.id)),
            Field::Meta(path) => {
                let mut p = vec!["metadata".to_string()];
                p.extend(path.iter().cloned());
                meta_path(Some(&r.header_json), &p)
            }
            _ => Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, ImportOptions, InputFormat};

    /// A classed `message:D1@1`, a classless `message:D1@2` (its name holds
    /// the colon) and an empty class, with two ops.
    const ALIKE: &str = r#"{"graph_id": "alike", "data": {
        "sessions": [{"session_id": "s"}],
        "operations": [
            {"op_id": "w1", "op_name": "write", "category": "update", "session_id": "s"},
            {"op_id": "w2", "op_name": null, "category": null, "session_id": "s"}],
        "nodes": [
            {"name": "D1", "class_name": "message", "version": 1, "value": "a", "session_id": "s", "category": "msg"},
            {"name": "message:D1", "class_name": null, "version": 2, "value": "b", "session_id": "s"},
            {"name": ":x@y", "class_name": "", "version": 10, "value": "c", "session_id": "s", "category": ""}],
        "edges": [
            {"edge_id": "e1", "op_id": "w1", "session_id": "s",
             "source_full_node_id": "message:D1@1", "target_full_node_id": "message:D1@2"}]}}"#;

    #[test]
    fn labelled_fields_are_the_records_and_are_read_without_them() {
        let dir = tempfile::tempdir().unwrap();
        let db = Engine::open(dir.path().join("db")).unwrap();
        let opts = ImportOptions::default();
        db.import_reader(ALIKE.as_bytes(), InputFormat::Json, "t", &opts)
            .unwrap();
        let snap = db.snapshot();
        let (id, record) = snap.traces().unwrap().remove(0);
        let labelled = TraceCtx::new(&db, snap.view(), id, record.clone());
        // The same trace as a schema-2 database holds it: labels without
        // classes, so its variables' fields come from their records.
        let unclassed = TraceCtx::new(&db, snap.view(), id, record);
        let mut stored = labelled.labels().unwrap().unwrap().clone();
        stored.classes = None;
        assert!(unclassed
            .labels
            .set(Arc::new(StoredLabels(Some(stored))))
            .is_ok());
        let fields = [
            Field::FullName,
            Field::Name,
            Field::Class,
            Field::Version,
            Field::Category,
            Field::NodeId,
        ];
        // Every variable, then (after checking that no record was read) one
        // the trace does not hold, which reads as null both ways.
        let vars = (0..labelled.var_count()).chain([labelled.var_count()]);
        for v in vars {
            if v == labelled.var_count() {
                assert!(labelled.catalog.get().is_none(), "no variable record read");
            }
            for f in &fields {
                let want = unclassed.var_field(v, f).unwrap();
                assert_eq!(labelled.var_field(v, f).unwrap(), want, "{v} {f:?}");
                assert_eq!(
                    labelled.var_str(v, f).unwrap(),
                    unclassed.var_str(v, f).unwrap(),
                    "{v} {f:?}"
                );
            }
            assert_eq!(labelled.node_id(v).unwrap(), unclassed.node_id(v).unwrap());
        }
        assert_eq!(
            labelled.var_field(1, &Field::Name).unwrap(),
            Value::Str("message:D1".into())
        );
        assert_eq!(labelled.var_field(1, &Field::Class).unwrap(), Value::Null);
        assert!(unclassed.catalog.get().is_some());
        // Ops: the labels' texts against the records'.
        let records = unclassed.ops().unwrap();
        for o in (0..labelled.op_count()).chain([labelled.op_count()]) {
            if o == labelled.op_count() {
                assert!(labelled.ops.get().is_none(), "no op record read");
            }
            for f in [Field::Id, Field::OpName, Field::Category] {
                let want = match (records.op(o), &f) {
                    (None, _) => Value::Null,
                    (Some(r), Field::Id) => Value::Str(r.op_id.clone()),
                    (Some(r), Field::OpName) => r.op_name.clone().into(),
                    (Some(r), _) => r.category.clone().into(),
                };
                assert_eq!(labelled.op_field(o, &f).unwrap(), want, "{o} {f:?}");
            }
        }
    }
}
