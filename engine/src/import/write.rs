//! Writing checked traces: each compared with what is stored under its
//! graph id, then written in one batch.

use std::io::Read;

use memtrace_storage::records::{
    CaseRecord, Common, Counts, EdgeRecord, OpRecord, SessionRecord, Shared, TraceRecord, VarRecord,
};
use memtrace_storage::{PreparedValue, Store, TraceId, TraceWriter};
use serde_json::{Map, Value};

use super::input::{otlp_traces, read_traces, Digest, Ready};
use super::options::{ImportOptions, ImportedTrace, Progress};
use super::records::{AbsentOrNull, InCommon, InEdge, InOp, InSession, InVar, Parts, Resolved};
use crate::error::{EngineError, Result};

/// Stores the traces of one input; when there are several, each is checked
/// against what is stored before any is written.
pub(super) fn store_all(
    store: &Store,
    traces: Vec<Ready>,
    opts: &ImportOptions,
    source: &str,
) -> Result<Vec<ImportedTrace>> {
    let mut traces = traces;
    if traces.len() > 1 {
        for r in &mut traces {
            stored_already(store, &r.trace.graph_id, &mut r.read.digest, opts, source)?;
        }
    }
    traces
        .into_iter()
        .map(|r| store_trace(store, r, opts, source))
        .collect()
}

/// Whether `graph_id` may be stored from content with this digest: `None`
/// when no trace has it (or `force`), the stored trace when one holds the
/// same content (nothing to do), and an error when traces hold it with
/// other content or content that cannot be compared.
pub(super) fn stored_already(
    store: &Store,
    graph_id: &str,
    digest: &mut Digest,
    opts: &ImportOptions,
    source: &str,
) -> Result<Option<(TraceId, TraceRecord)>> {
    if opts.force {
        return Ok(None);
    }
    let view = store.read();
    let existing = view.traces_with_graph_id(graph_id)?;
    if existing.is_empty() {
        return Ok(None);
    }
    let digest = digest.get();
    let mut compared = true;
    for &t in &existing {
        match view.content_digest(t)? {
            Some(d) if d == digest => {
                if let Some(record) = view.trace(t)? {
                    return Ok(Some((t, record)));
                }
            }
            Some(_) => {}
            None => compared = false,
        }
    }
    Err(EngineError::AlreadyStored {
        source_name: source.to_string(),
        graph_id: graph_id.to_string(),
        existing,
        compared,
    })
}

/// The report of an import that found its content already stored.
fn unchanged(trace: TraceId, record: TraceRecord) -> ImportedTrace {
    ImportedTrace {
        trace,
        graph_id: record.graph_id,
        counts: record.counts,
        format: record.format,
        unchanged: true,
    }
}

fn shared(tri: AbsentOrNull, trace_value: Option<&str>) -> Shared {
    match tri {
        None => Shared::Same,
        Some(v) if v.as_deref() == trace_value => Shared::Same,
        Some(v) => Shared::Own(v),
    }
}

struct TraceIds<'a> {
    graph_id: &'a str,
    user_id: Option<&'a str>,
    project_id: Option<&'a str>,
}

fn common(c: InCommon, ids: &TraceIds<'_>) -> Common {
    Common {
        created_at: c.created_at,
        filename: c.filename,
        lineno: c.lineno,
        graph_id: shared(c.graph_id, Some(ids.graph_id)),
        user_id: shared(c.user_id, ids.user_id),
        project_id: shared(c.project_id, ids.project_id),
        metadata: c.metadata,
        trigger_point: c.trigger_point,
        extra: c.extra,
    }
}

/// Values of fewer bytes than this, in all, are prepared on the calling
/// thread only.
const PREPARE_APART: usize = 1 << 20;

/// Each variable's value hashed and encoded (see [`PreparedValue`]), the
/// later half of the list's parts on a second thread when the values are
/// large.
fn prepare_values(nodes: &Parts<InVar>) -> Vec<Option<PreparedValue>> {
    let prepare = |part: &[InVar]| -> Vec<Option<PreparedValue>> {
        part.iter()
            .map(|v| v.value.as_deref().map(PreparedValue::new))
            .collect()
    };
    let bytes: usize = nodes
        .iter()
        .filter_map(|v| v.value.as_ref())
        .map(String::len)
        .sum();
    let parts = nodes.parts();
    if bytes < PREPARE_APART || parts.len() < 2 {
        return parts.iter().flat_map(|p| prepare(p)).collect();
    }
    // The parts are of about equal length: the later half of them is
    // prepared on a second thread.
    let (mine, theirs) = parts.split_at(parts.len() / 2);
    let all = |parts: &[Vec<InVar>]| -> Vec<Option<PreparedValue>> {
        parts.iter().flat_map(|p| prepare(p)).collect()
    };
    std::thread::scope(|scope| {
        let apart = scope.spawn(|| all(theirs));
        let mut out = all(mine);
        match apart.join() {
            Ok(rest) => out.extend(rest),
            // Not reached (preparing does not panic); done here instead.
            Err(_) => out.extend(all(theirs)),
        }
        out
    })
}

/// Writes a validated trace in one batch.
fn store_trace(
    store: &Store,
    ready: Ready,
    opts: &ImportOptions,
    source: &str,
) -> Result<ImportedTrace> {
    let Ready {
        trace: t,
        resolved: r,
        mut read,
        format,
        otlp,
    } = ready;
    if let Some((trace, record)) =
        stored_already(store, &t.graph_id, &mut read.digest, opts, source)?
    {
        return Ok(unchanged(trace, record));
    }
    let graph_id = t.graph_id.clone();
    let user_id = t.user_id.clone();
    let project_id = t.project_id.clone();
    let ids = TraceIds {
        graph_id: &graph_id,
        user_id: user_id.as_deref(),
        project_id: project_id.as_deref(),
    };
    let mut w = store.begin_trace_sized(usize::try_from(read.bytes).unwrap_or(0))?;
    let records = TraceRecords {
        sessions: t.sessions,
        nodes: t.nodes,
        ops: t.ops,
        edges: t.edges,
        annotations: t.annotations,
    };
    put_records(&mut w, records, r, &ids)?;
    let record = TraceRecord {
        graph_id: graph_id.clone(),
        user_id: user_id.clone(),
        project_id: project_id.clone(),
        created_at: t.created_at,
        header_json: serde_json::Value::Object(t.header).to_string(),
        data_keys: t.data_keys,
        data_extra: (!t.data_extra.is_empty())
            .then(|| serde_json::Value::Object(t.data_extra).to_string()),
        counts: Counts::default(),
        source: source.to_string(),
        source_bytes: read.bytes,
        format: format.to_string(),
        imported_at_ms: 0,
    };
    // Last: a large file's digest is taken while the records are written.
    w.set_content_digest(read.digest.get());
    if let Some(requests) = otlp {
        w.keep_otlp_requests(requests);
    }
    let counts = w.counts();
    match w.commit(record, !opts.force)? {
        Ok(trace) => Ok(ImportedTrace {
            trace,
            graph_id,
            counts,
            format: format.to_string(),
            unchanged: false,
        }),
        // Stored by another writer since the check above.
        Err(existing) => Err(EngineError::AlreadyStored {
            source_name: source.to_string(),
            graph_id,
            existing,
            compared: false,
        }),
    }
}

/// The record lists of a checked trace, to be written.
struct TraceRecords {
    sessions: Parts<InSession>,
    nodes: Parts<InVar>,
    ops: Parts<InOp>,
    edges: Parts<InEdge>,
    annotations: Option<Vec<Map<String, Value>>>,
}

/// Writes a checked trace's records, each list in order, with the local
/// ids its check resolved (`r`).
fn put_records(
    w: &mut TraceWriter<'_>,
    records: TraceRecords,
    r: Resolved,
    ids: &TraceIds<'_>,
) -> Result<()> {
    for s in records.sessions {
        w.put_session(&SessionRecord {
            session_id: s.session_id,
            session_name: s.session_name,
            comment: s.comment,
            category: s.category,
            common: common(s.common, ids),
        })?;
    }
    let prepared = prepare_values(&records.nodes);
    for ((v, session), value) in records.nodes.into_iter().zip(r.var_sessions).zip(prepared) {
        let value = value.map(|p| w.stage_prepared(p));
        w.put_variable(&VarRecord {
            name: v.name,
            class_name: v.class_name,
            version: v.version,
            value,
            comment: v.comment,
            category: v.category,
            session_id: v.session_id,
            session,
            node_id: v.node_id,
            common: common(v.common, ids),
        })?;
    }
    // In a bulk write, what is finished is written while the rest is added.
    w.finish_variables()?;
    for (o, session) in records.ops.into_iter().zip(r.op_sessions) {
        w.put_op(&OpRecord {
            op_id: o.op_id,
            op_name: o.op_name,
            comment: o.comment,
            category: o.category,
            session_id: o.session_id,
            session,
            common: common(o.common, ids),
        })?;
    }
    w.finish_ops()?;
    for (e, (op, source, target, session)) in records.edges.into_iter().zip(r.edges) {
        w.put_edge(&EdgeRecord {
            edge_id: e.edge_id,
            op,
            source,
            target,
            session,
            category: e.category,
            comment: e.comment,
            common: common(e.common, ids),
        })?;
    }
    for (a, (query, evidence, op)) in records.annotations.into_iter().flatten().zip(r.cases) {
        w.put_case(&CaseRecord {
            query,
            evidence,
            op,
            json: serde_json::Value::Object(a).to_string(),
        })?;
    }
    Ok(())
}

/// Imports one export object, or the traces of one OTLP request, from a reader.
pub(crate) fn import_json<R: Read>(
    store: &Store,
    reader: R,
    source: &str,
    size_hint: usize,
    opts: &ImportOptions,
    mut progress: Option<&mut dyn FnMut(Progress)>,
) -> Result<Vec<ImportedTrace>> {
    let reborrowed = progress
        .as_mut()
        .map(|p| &mut **p as &mut dyn FnMut(Progress));
    let traces = read_traces(reader, source, size_hint, reborrowed)?;
    if let Some(p) = progress {
        p(Progress::Storing);
    }
    store_all(store, traces, opts, source)
}

/// Imports the spans an OTLP receiver kept, as requests (each named by its
/// place, for errors), `bytes` long in all: one trace per trace id, a span
/// received twice kept as first received.
pub(crate) fn import_otlp(
    store: &Store,
    requests: Vec<(String, Map<String, Value>)>,
    bytes: u64,
    source: &str,
    opts: &ImportOptions,
) -> Result<Vec<ImportedTrace>> {
    let traces = otlp_traces(requests, bytes, source, true)?;
    store_all(store, traces, opts, source)
}
