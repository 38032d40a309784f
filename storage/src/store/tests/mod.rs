//! Tests of the store, by concern, with the helpers they share.

mod append;
mod bulk;
mod flush;
mod lock;
mod open;
mod read_write;
mod remove;

pub(super) use super::bulk::*;
pub(super) use super::cf;
pub(super) use super::flush::*;
pub(super) use super::lock::*;
pub(super) use super::open::*;
pub(super) use super::options::*;
pub(super) use super::read::*;
pub(super) use super::schema::*;
pub(super) use super::writer::*;
pub(super) use crate::error::StorageError;
pub(super) use crate::ids::{LocalId, Result, TraceId};
pub(super) use crate::keys::{self, IdKind, RecordKind};
pub(super) use crate::records::*;
pub(super) use rocksdb::{WriteBatch, DB};
pub(super) use std::path::Path;
pub(super) use std::sync::atomic::Ordering;
pub(super) use std::sync::Arc;

pub(super) fn trace_record(graph_id: &str) -> TraceRecord {
    TraceRecord {
        graph_id: graph_id.into(),
        user_id: Some("u".into()),
        project_id: None,
        created_at: None,
        header_json: "{}".into(),
        data_keys: vec![],
        data_extra: None,
        counts: Counts::default(),
        source: "test".into(),
        source_bytes: 0,
        format: "smartcomment".into(),
        imported_at_ms: 0,
    }
}

pub(super) fn var(name: &str, version: u32, value: ValueRef) -> VarRecord {
    VarRecord {
        name: name.into(),
        class_name: Some("answer".into()),
        version,
        value: Some(value),
        comment: None,
        category: Some("answer".into()),
        session_id: Some("s".into()),
        session: Some(0),
        node_id: None,
        common: Common {
            graph_id: Shared::Same,
            ..Common::default()
        },
    }
}

pub(super) fn write_trace(store: &Store, graph_id: &str, value: &str) -> TraceId {
    write_trace_again(store, graph_id, value, true)
}

/// `write_trace`, which with `refuse_duplicate` false may store a graph
/// id stored already.
pub(super) fn write_trace_again(
    store: &Store,
    graph_id: &str,
    value: &str,
    refuse_duplicate: bool,
) -> TraceId {
    let mut w = store.begin_trace().unwrap();
    let s = SessionRecord {
        session_id: "s".into(),
        session_name: None,
        comment: None,
        category: Some("qa".into()),
        common: Common::default(),
    };
    w.put_session(&s).unwrap();
    let r = w.stage_value(value);
    let a = w.put_variable(&var("42", 1, r)).unwrap();
    let b = w.put_variable(&var("42", 2, r)).unwrap();
    let op = w
        .put_op(&OpRecord {
            op_id: "op-1".into(),
            op_name: Some("llm".into()),
            comment: None,
            category: Some("generation".into()),
            session_id: Some("s".into()),
            session: Some(0),
            common: Common::default(),
        })
        .unwrap();
    for i in 0..2 {
        w.put_edge(&EdgeRecord {
            edge_id: format!("edge-{i}"),
            op,
            source: a,
            target: b,
            session: 0,
            category: None,
            comment: None,
            common: Common::default(),
        })
        .unwrap();
    }
    w.commit(trace_record(graph_id), refuse_duplicate)
        .unwrap()
        .unwrap()
}

/// Puts a trace's records: two sessions, `n` variables in a chain
/// (every third value shared), their ops and edges, and a case.
pub(super) fn fill(w: &mut TraceWriter<'_>, n: u32) {
    for s in ["s", "t"] {
        w.put_session(&SessionRecord {
            session_id: s.into(),
            session_name: Some(format!("session {s}")),
            comment: None,
            category: Some("qa".into()),
            common: Common::default(),
        })
        .unwrap();
    }
    for i in 0..n {
        let r = w.stage_value(&format!("value {}", i % 3 * i));
        w.put_variable(&var(&format!("v{}", i % 5), i + 1, r))
            .unwrap();
        w.put_op(&OpRecord {
            op_id: format!("op-{i}"),
            op_name: Some("llm".into()),
            comment: None,
            category: Some("generation".into()),
            session_id: Some("t".into()),
            session: Some(1),
            common: Common::default(),
        })
        .unwrap();
    }
    for i in 1..n {
        w.put_edge(&EdgeRecord {
            edge_id: format!("edge-{i}"),
            op: i,
            source: i - 1,
            target: i,
            session: 1,
            category: Some("flow".into()),
            comment: None,
            common: Common::default(),
        })
        .unwrap();
    }
    w.put_case(&CaseRecord {
        query: Some(n - 1),
        evidence: vec![0, 1],
        op: Some(2),
        json: "{}".into(),
    })
    .unwrap();
}

/// Everything a reader sees of one trace, trace ids left out.
pub(super) fn seen(view: &ReadView<'_>, t: TraceId) -> String {
    let all = |r: Vec<(TraceId, LocalId)>| -> Vec<LocalId> {
        r.into_iter()
            .filter(|(x, _)| *x == t)
            .map(|(_, l)| l)
            .collect()
    };
    let vars: Vec<_> = view.variables(t).map(|v| v.unwrap()).collect();
    let values: Vec<String> = vars
        .iter()
        .map(|(_, v)| view.value(v.value.as_ref().unwrap()).unwrap())
        .collect();
    let mut record = view.trace(t).unwrap().unwrap();
    record.imported_at_ms = 0;
    record.graph_id.clear();
    format!(
        "{record:?}\n{vars:?}\n{values:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        view.sessions(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
        view.ops(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
        view.edges(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
        view.cases(t).map(|x| x.unwrap()).collect::<Vec<_>>(),
        view.adjacency(t).unwrap(),
        view.adjacency_blocks(
            t,
            true,
            &[0, 1],
            record.counts.variables,
            record.counts.edges
        )
        .unwrap(),
        view.versions("answer:v3", Some(t))
            .unwrap()
            .into_iter()
            .map(|(_, v, l)| (v, l))
            .collect::<Vec<_>>(),
        all(view.string_id(IdKind::Op, "op-7").unwrap()),
        all(view.by_category(RecordKind::Edge, "flow").unwrap()),
    )
}
