//! The JSON API under `/api/` and the embedded web app: one function from a
//! request (method, target, body) to a reply, so that tests can call it
//! without a socket.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memtrace::attrib::evidence::evidence_of;
use memtrace::attrib::pyvalue::unrepr;
use memtrace::attrib::{case, flow, ErrorType, LabelInput, StoredVerdict, TraceModel, HUMAN};
use memtrace::prelude::*;
use memtrace::{
    json_kind, traverse_columns, Cancel, Database, ImportOptions, InputFormat, Output, Params,
    Plan, TraceId, TraceInfo, TraceView, Value as QValue,
};
use serde_json::{json, Map, Value};

use super::assets;
use super::http::{ApiError, Reply, Target};
use crate::timeout::with_timeout_on;

/// Rows a query returns at most over HTTP.
pub const MAX_ROWS: usize = 5000;
/// Nodes a drawn graph holds at most.
pub const MAX_GRAPH_NODES: usize = 2000;
/// Characters of a value the node panel shows at most.
pub const MAX_VALUE_CHARS: usize = 65_536;
/// Largest body of a label or a query.
pub const MAX_SMALL_BODY: u64 = 1 << 20;
/// Characters of a value shown beside a node in a graph or list.
const PREVIEW: usize = 160;
/// Traces whose structure (ops with their inputs and outputs, degrees) stay cached.
const STRUCTURES: usize = 16;

/// The methods whose verdicts the case page sets side by side, in order.
const METHODS: [&str; 4] = ["evidence", "llm", "hybrid", HUMAN];

/// A trace's ops with their inputs and outputs, and each node's degree.
struct Structure {
    ops: Vec<OpInfo>,
    by_op_id: HashMap<String, usize>,
    in_degree: HashMap<String, u32>,
    out_degree: HashMap<String, u32>,
}

/// A session's name, category and creation time.
type SessionHead = (Option<String>, Option<String>, Option<String>);

struct OpInfo {
    op_id: String,
    name: Option<String>,
    category: Option<String>,
    comment: Option<String>,
    created_at: Option<String>,
    session_id: Option<String>,
    inputs: Vec<String>,
    outputs: Vec<String>,
}

fn push_once(list: &mut Vec<String>, x: &str) {
    if !list.iter().any(|y| y == x) {
        list.push(x.to_string());
    }
}

impl Structure {
    fn load(view: &TraceView<'_>) -> Result<Structure, ApiError> {
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

    fn op(&self, op_id: &str) -> Option<&OpInfo> {
        self.by_op_id.get(op_id).map(|&i| &self.ops[i])
    }

    fn op_json(&self, op_id: &str) -> Value {
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

/// The API over one open database.
pub struct Api {
    db: Database,
    name: String,
    query_timeout: Duration,
    uploads: Uploads,
    structures: Mutex<Vec<(TraceId, Arc<Structure>)>>,
    failed: Mutex<HashMap<TraceId, u64>>,
}

/// Where the bodies of imports are written as they arrive, to be imported
/// from a file as `memtrace import` reads one (mapped, not copied into
/// memory), and how large one may be.
#[derive(Debug, Clone)]
pub struct Uploads {
    /// The folder (inside the database's, so on its disk).
    pub dir: PathBuf,
    /// Bytes an import's body may have; past it, 413.
    pub limit: u64,
}

/// Uploads written by this process so far (for their file names).
static UPLOADS: AtomicU64 = AtomicU64::new(0);

impl Uploads {
    /// The folder of uploads in the database folder at `db`.
    pub fn in_db(db: &Path, limit: u64) -> Uploads {
        Uploads {
            dir: db.join("uploads"),
            limit,
        }
    }

    /// Makes the folder, empty: what is there was left by a server that
    /// stopped while it received it.
    pub fn clear(&self) -> std::io::Result<()> {
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir)?;
        }
        std::fs::create_dir_all(&self.dir)
    }

    /// A new upload's file, removed when the [`Upload`] is dropped.
    pub fn create(&self) -> Result<(Upload, std::fs::File), ApiError> {
        std::fs::create_dir_all(&self.dir).map_err(|e| upload_error(&self.dir, &e))?;
        let n = UPLOADS.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{}-{n}.upload", std::process::id()));
        let file = std::fs::File::create(&path).map_err(|e| upload_error(&path, &e))?;
        Ok((Upload { path, bytes: 0 }, file))
    }

    /// 413 for a body of `bytes`, when that is past the limit.
    pub fn check(&self, bytes: u64) -> Result<(), ApiError> {
        if bytes > self.limit {
            Err(ApiError {
                message: format!(
                    "the import is larger than {} bytes (memtrace serve --max-import); nothing of it was stored",
                    self.limit
                ),
                ..ApiError::too_large(self.limit)
            })
        } else {
            Ok(())
        }
    }

    /// Writes a body read from `body` to a new upload.
    fn write(&self, body: &mut dyn Read) -> Result<Upload, ApiError> {
        let (mut upload, file) = self.create()?;
        let mut out = std::io::BufWriter::new(file);
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = body
                .read(&mut buf)
                .map_err(|e| ApiError::bad(format!("reading the request body: {e}")))?;
            if n == 0 {
                break;
            }
            upload.bytes += n as u64;
            self.check(upload.bytes)?;
            out.write_all(&buf[..n])
                .map_err(|e| upload_error(&upload.path, &e))?;
        }
        out.flush().map_err(|e| upload_error(&upload.path, &e))?;
        Ok(upload)
    }
}

/// 500: an upload could not be written.
pub fn upload_error(path: &Path, e: &std::io::Error) -> ApiError {
    ApiError {
        status: 500,
        kind: "internal",
        message: format!(
            "cannot write the upload to {}: {e}; nothing of it was stored",
            path.display()
        ),
    }
}

/// An import's body, received whole into a file; the file is removed when
/// this is dropped.
#[derive(Debug)]
pub struct Upload {
    /// The file.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: u64,
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A value on one line, cut to [`PREVIEW`] characters.
fn preview(value: &str) -> String {
    let text = unrepr(value).replace(['\n', '\r', '\t'], " ");
    if text.chars().count() <= PREVIEW {
        return text;
    }
    let mut out: String = text.chars().take(PREVIEW - 1).collect();
    out.push('…');
    out
}

fn trace_json(t: &TraceInfo, failed: Option<u64>) -> Value {
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

fn verdict_json(s: &StoredVerdict) -> Value {
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
        "at": memtrace::iso_utc(s.at_ms),
        "model": v.model,
        "chain": v.chain,
    })
}

/// Reads a request body of at most `limit` bytes.
fn read_body(body: &mut dyn Read, limit: u64) -> Result<Vec<u8>, ApiError> {
    let mut buf = Vec::new();
    body.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| ApiError::bad(format!("reading the request body: {e}")))?;
    if buf.len() as u64 > limit {
        return Err(ApiError::too_large(limit));
    }
    Ok(buf)
}

/// A JSON object body.
fn json_body(body: &mut dyn Read) -> Result<Map<String, Value>, ApiError> {
    let bytes = read_body(body, MAX_SMALL_BODY)?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad(format!(
            "the body is not JSON: {e} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    match value {
        Value::Object(m) => Ok(m),
        other => Err(ApiError::bad(format!(
            "the body must be a JSON object, found {}",
            json_kind(&other)
        ))),
    }
}

/// Checks that `body` has only `allowed` fields.
fn only_fields(body: &Map<String, Value>, allowed: &[&str]) -> Result<(), ApiError> {
    match body.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(ApiError::bad(format!(
            "unknown field {k:?} (allowed: {})",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

/// A string field: required, or optional with a default.
fn text_field<'a>(
    body: &'a Map<String, Value>,
    name: &str,
    default: Option<&'a str>,
) -> Result<&'a str, ApiError> {
    match body.get(name) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => {
            default.ok_or_else(|| ApiError::bad(format!("{name}: missing (a string is needed)")))
        }
        Some(other) => Err(ApiError::bad(format!(
            "{name}: must be a string, found {}",
            json_kind(other)
        ))),
    }
}

fn direction(target: &Target) -> Result<&'static str, ApiError> {
    match target.param("dir").unwrap_or("backward") {
        "backward" | "back" | "trace" => Ok("backward"),
        "forward" => Ok("forward"),
        other => Err(ApiError::bad(format!(
            "dir: {other:?} is neither backward nor forward"
        ))),
    }
}

impl Api {
    /// The API over `db`, which it names `name` in `/api/health`; imports
    /// are received into `uploads`.
    pub fn new(db: Database, name: String, query_timeout: Duration, uploads: Uploads) -> Api {
        Api {
            db,
            name,
            query_timeout,
            uploads,
            structures: Mutex::new(Vec::new()),
            failed: Mutex::new(HashMap::new()),
        }
    }

    /// Where imports are received.
    pub fn uploads(&self) -> &Uploads {
        &self.uploads
    }

    /// Answers `POST /api/import` (at `url`) whose body was received whole
    /// into `upload`.
    pub fn import_upload(&self, url: &str, upload: &Upload) -> Reply {
        let target = match Target::parse(url) {
            Ok(t) => t,
            Err(e) => return e.reply(),
        };
        match self.import_file(&target, upload) {
            Ok(r) => r,
            Err(e) => e.reply(),
        }
    }

    /// The database served.
    pub fn db(&self) -> &Database {
        &self.db
    }

    /// Forgets what it keeps of traces (after traces were stored or dropped
    /// beside it).
    pub fn forget(&self) {
        self.structures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Answers one request. `body` is read only by the endpoints that take one.
    #[cfg(test)]
    pub fn handle(&self, method: &str, url: &str, body: &mut dyn Read) -> Reply {
        self.handle_until(method, url, body, &Cancel::new())
    }

    /// [`handle`](Self::handle), with a token that stops a query or a graph
    /// walk when it fires (the server fires it when the client goes away).
    pub fn handle_until(
        &self,
        method: &str,
        url: &str,
        body: &mut dyn Read,
        cancel: &Cancel,
    ) -> Reply {
        let target = match Target::parse(url) {
            Ok(t) => t,
            Err(e) => return e.reply(),
        };
        match self.route(method, &target, body, cancel) {
            Ok(r) => r,
            Err(e) => e.reply(),
        }
    }

    fn route(
        &self,
        method: &str,
        t: &Target,
        body: &mut dyn Read,
        cancel: &Cancel,
    ) -> Result<Reply, ApiError> {
        let seg: Vec<&str> = t.segments.iter().map(String::as_str).collect();
        let get = |allowed: &str| -> Result<(), ApiError> {
            if method == "GET" || method == "HEAD" {
                Ok(())
            } else {
                Err(ApiError::method(method, &t.path, allowed))
            }
        };
        let post = || -> Result<(), ApiError> {
            if method == "POST" {
                Ok(())
            } else {
                Err(ApiError::method(method, &t.path, "POST"))
            }
        };
        match seg.as_slice() {
            [] | ["index.html"] => {
                get("GET")?;
                Ok(assets::page("index.html"))
            }
            [file] if assets::has(file) => {
                get("GET")?;
                Ok(assets::page(file))
            }
            ["api", "health"] => {
                get("GET")?;
                Ok(Reply::ok(&json!({
                    "ok": true,
                    "db": self.name,
                    "version": env!("CARGO_PKG_VERSION"),
                    "traces": self.db.traces()?.len(),
                })))
            }
            ["api", "traces"] => {
                get("GET")?;
                self.traces(t)
            }
            ["api", "traces", trace] => {
                get("GET")?;
                self.trace(trace, t)
            }
            ["api", "traces", trace, "cases"] => {
                get("GET")?;
                let view = self.db.trace(trace)?;
                Ok(Reply::ok(&json!({"cases": self.case_list(&view)?})))
            }
            ["api", "traces", trace, "cases", case] => {
                get("GET")?;
                self.case(trace, case)
            }
            ["api", "traces", trace, "cases", case, "labels"] => match method {
                "POST" => self.add_label(trace, case, body),
                "GET" | "HEAD" => {
                    let ctx = self.db.failed_case(trace, case)?;
                    let labels: Vec<Value> = self
                        .db
                        .labels(Some(trace))?
                        .iter()
                        .rev()
                        .filter(|l| l.case == ctx.case.id)
                        .map(label_json)
                        .collect();
                    Ok(Reply::ok(&json!({"labels": labels})))
                }
                _ => Err(ApiError::method(method, &t.path, "GET, POST")),
            },
            ["api", "traces", trace, "annotations"] => {
                get("GET")?;
                if t.param("full").is_some_and(|v| v != "0") {
                    return Ok(Reply::ok(&self.db.export_labelled(trace)?));
                }
                let view = self.db.trace(trace)?;
                Ok(Reply::ok(&json!({
                    "graph_id": view.info().graph_id,
                    "data": {"annotations": self.db.label_annotations(trace)?},
                })))
            }
            ["api", "traces", trace, "graph"] => {
                get("GET")?;
                self.graph(trace, t, cancel)
            }
            ["api", "traces", trace, "expand"] => {
                get("GET")?;
                self.expand(trace, t)
            }
            ["api", "traces", trace, "nodes", node] => {
                get("GET")?;
                self.node(trace, node)
            }
            ["api", "labels"] => {
                get("GET")?;
                let labels: Vec<Value> = self
                    .db
                    .labels(t.param("trace"))?
                    .iter()
                    .map(label_json)
                    .collect();
                Ok(Reply::ok(&json!({"labels": labels})))
            }
            ["api", "query"] => {
                post()?;
                self.query(body, cancel)
            }
            ["api", "import"] => {
                post()?;
                self.import(t, body)
            }
            ["api", ..] => Err(ApiError::not_found(format!(
                "no endpoint {} (the endpoints are listed in docs/src/viewer-api.md)",
                t.path
            ))),
            _ => Err(ApiError::not_found(format!("no page {}", t.path))),
        }
    }

    fn structure(&self, view: &TraceView<'_>) -> Result<Arc<Structure>, ApiError> {
        let id = view.id();
        {
            let cache = self.structures.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, s)) = cache.iter().find(|(t, _)| *t == id) {
                return Ok(s.clone());
            }
        }
        let s = Arc::new(Structure::load(view)?);
        let mut cache = self.structures.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= STRUCTURES {
            cache.remove(0);
        }
        cache.push((id, s.clone()));
        Ok(s)
    }

    /// Failed cases per trace id (a trace's count is computed once: stored
    /// traces do not change).
    fn failed_counts(&self, all: &[TraceInfo]) -> Result<HashMap<TraceId, u64>, ApiError> {
        let missing: Vec<TraceId> = {
            let cache = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            all.iter()
                .map(|t| t.id)
                .filter(|id| !cache.contains_key(id))
                .collect()
        };
        let mut found = Vec::with_capacity(missing.len());
        for id in missing {
            found.push((id, self.failed_count(id)?));
        }
        let mut cache = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        cache.extend(found);
        Ok(cache.clone())
    }

    /// A trace's failed cases, counted without reading it whole when it
    /// can be: a trace with annotations has one case per annotation, and a
    /// trace without them and without judge ops has none.
    fn failed_count(&self, id: TraceId) -> Result<u64, ApiError> {
        let view = self.db.trace_by_id(id)?;
        let annotated = u64::from(view.info().counts.cases);
        if annotated > 0 {
            return Ok(annotated);
        }
        let judged = view
            .ops()?
            .iter()
            .any(|o| o.op_name.as_deref().is_some_and(case::is_judge_name));
        if !judged {
            return Ok(0);
        }
        Ok(self.db.failed_cases(Some(&format!("#{id}")))?.len() as u64)
    }

    fn traces(&self, t: &Target) -> Result<Reply, ApiError> {
        let all = self.db.traces()?;
        let failed_only = match t.param("failed") {
            None | Some("0") | Some("false") => false,
            Some("1") | Some("true") => true,
            Some(other) => {
                return Err(ApiError::bad(format!(
                    "failed: {other:?} is neither 1 nor 0"
                )))
            }
        };
        let counts = self.failed_counts(&all)?;
        let systems: BTreeSet<&str> = all.iter().filter_map(|t| t.project_id.as_deref()).collect();
        let users: BTreeSet<&str> = all.iter().filter_map(|t| t.user_id.as_deref()).collect();
        let list: Vec<Value> = all
            .iter()
            .filter(|x| {
                t.param("system")
                    .is_none_or(|s| x.project_id.as_deref() == Some(s))
            })
            .filter(|x| {
                t.param("user")
                    .is_none_or(|u| x.user_id.as_deref() == Some(u))
            })
            .filter(|x| !failed_only || counts.get(&x.id).copied().unwrap_or(0) > 0)
            .map(|x| trace_json(x, counts.get(&x.id).copied()))
            .collect();
        Ok(Reply::ok(&json!({
            "traces": list,
            "systems": systems,
            "users": users,
            "total": all.len(),
        })))
    }

    fn case_list(&self, view: &TraceView<'_>) -> Result<Vec<Value>, ApiError> {
        let sel = format!("#{}", view.id());
        let cases = self.db.failed_cases(Some(&sel))?;
        let stored = self.db.attributions(Some(&sel))?;
        Ok(cases
            .iter()
            .map(|c| {
                let mine: Vec<&StoredVerdict> =
                    stored.iter().filter(|s| s.verdict.case == c.id).collect();
                let verdict = mine
                    .iter()
                    .rev()
                    .find(|s| s.verdict.method != HUMAN)
                    .map(|s| verdict_json(s));
                json!({
                    "case": c.id,
                    "query": c.query,
                    "gold": c.gold,
                    "prediction": c.prediction,
                    "verdict": verdict,
                    "labels": mine.iter().filter(|s| s.verdict.method == HUMAN).count(),
                })
            })
            .collect())
    }

    fn trace(&self, trace: &str, t: &Target) -> Result<Reply, ApiError> {
        let view = self.db.trace(trace)?;
        let info = view.info();
        let offset = t.number("offset", 0, 0..=u64::from(u32::MAX))? as usize;
        let limit = t.number("limit", 500, 1..=5000)? as usize;
        let s = self.structure(&view)?;
        let names: HashMap<String, SessionHead> = view
            .sessions()?
            .into_iter()
            .map(|x| (x.session_id, (x.session_name, x.category, x.created_at)))
            .collect();
        let mut sessions: Vec<Value> = Vec::new();
        let mut current: Option<(Option<String>, Vec<Value>)> = None;
        let flush = |cur: Option<(Option<String>, Vec<Value>)>, out: &mut Vec<Value>| {
            if let Some((sid, ops)) = cur {
                let (name, category, created_at) = sid
                    .as_ref()
                    .and_then(|id| names.get(id).cloned())
                    .unwrap_or((None, None, None));
                out.push(json!({
                    "session_id": sid, "name": name, "category": category,
                    "created_at": created_at, "ops": ops,
                }));
            }
        };
        for o in s.ops.iter().skip(offset).take(limit) {
            let same = current
                .as_ref()
                .is_some_and(|(sid, _)| *sid == o.session_id);
            if !same {
                flush(current.take(), &mut sessions);
                current = Some((o.session_id.clone(), Vec::new()));
            }
            if let Some((_, ops)) = current.as_mut() {
                ops.push(s.op_json(&o.op_id));
            }
        }
        flush(current, &mut sessions);
        let cases = self.case_list(&view)?;
        Ok(Reply::ok(&json!({
            "trace": trace_json(&info, Some(cases.len() as u64)),
            "ops_total": s.ops.len(),
            "offset": offset,
            "limit": limit,
            "sessions": sessions,
            "cases": cases,
        })))
    }

    fn case(&self, trace: &str, case: &str) -> Result<Reply, ApiError> {
        let ctx = self.db.failed_case(trace, case)?;
        let (m, c) = (&ctx.model, &ctx.case);
        let ev = evidence_of(m, c, memtrace::attrib::DEFAULT_K);
        let origin = serde_json::to_value(ev.origin)?;
        let evidence_list: Vec<Value> = ev
            .items
            .iter()
            .zip(&ev.weights)
            .map(|(&v, &w)| {
                json!({
                    "node": m.vars[v].full_node_id,
                    "preview": preview(m.value(v)),
                    "origin": origin,
                    "weight": (w * 100.0).round() / 100.0,
                })
            })
            .collect();
        let answer = flow::answer_op(m, c);
        let prediction_node = answer.and_then(|o| {
            let outs = m.outputs(o);
            outs.iter()
                .find(|&&v| m.class(v) == "prediction")
                .or(outs.first())
                .map(|&v| m.vars[v].full_node_id.clone())
        });
        let stored: Vec<StoredVerdict> = self
            .db
            .attributions(Some(&format!("#{}", c.trace)))?
            .into_iter()
            .filter(|s| s.verdict.case == c.id)
            .collect();
        let mut methods: Vec<String> = METHODS.iter().map(|s| s.to_string()).collect();
        let mut verdicts = Map::new();
        for s in &stored {
            if !methods.contains(&s.verdict.method) {
                methods.push(s.verdict.method.clone());
            }
            verdicts.insert(s.verdict.method.clone(), verdict_json(s));
        }
        let labels: Vec<Value> = self
            .db
            .labels(Some(&format!("#{}", c.trace)))?
            .iter()
            .rev()
            .filter(|l| l.case == c.id)
            .map(label_json)
            .collect();
        // The label the file itself carries (MemTraceBench's
        // final_error_type and final_op_id), to set beside the verdicts.
        let file_label = ctx
            .view
            .cases()?
            .into_iter()
            .find(|r| r.query_id.as_deref() == Some(c.id.as_str()))
            .filter(|r| r.final_error_type.is_some() || r.final_op_id.is_some())
            .map(|r| {
                let op_name = r.final_op_id.as_deref().and_then(|id| {
                    m.ops
                        .iter()
                        .find(|o| o.op_id == id)
                        .and_then(|o| o.op_name.clone())
                });
                json!({
                    "error_type": r.final_error_type,
                    "op_id": r.final_op_id,
                    "op_name": op_name,
                })
            });
        Ok(Reply::ok(&json!({
            "trace": trace_json(&ctx.view.info(), None),
            "case": c.id,
            "query": c.query,
            "gold": c.gold,
            "prediction": c.prediction,
            "judge": c.judge_response,
            "query_node": c.query_node,
            "prediction_node": prediction_node,
            "answer_op": answer.map(|o| m.ops[o].op_id.clone()),
            "evidence": evidence_list,
            "methods": methods,
            "verdicts": verdicts,
            "labels": labels,
            "file_label": file_label,
            "ops": provenance_ops(m, prediction_node.as_deref().or(c.query_node.as_deref())),
        })))
    }

    fn add_label(&self, trace: &str, case: &str, body: &mut dyn Read) -> Result<Reply, ApiError> {
        let b = json_body(body)?;
        only_fields(&b, &["error_type", "op_id", "reason", "author"])?;
        let error_type: ErrorType = text_field(&b, "error_type", None)?
            .parse()
            .map_err(|e: String| ApiError::bad(format!("error_type: {e}")))?;
        let label = self.db.add_label(
            trace,
            case,
            &LabelInput {
                error_type,
                op_id: text_field(&b, "op_id", None)?,
                reason: text_field(&b, "reason", Some(""))?,
                author: text_field(&b, "author", None)?,
            },
        )?;
        Ok(Reply::json(201, &label_json(&label)))
    }

    /// The graph object of nodes (full node ids) and edges (id, source,
    /// target, op id) of a trace.
    fn graph_json(
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
    fn traverse_graph(
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
            memtrace::WalkDirection::Backward => "backward",
            memtrace::WalkDirection::Forward => "forward",
        };
        // The starts are the first node rows (the traversal emits them first).
        let starts: Vec<String> = nodes.iter().take(p.starts.len().max(1)).cloned().collect();
        Ok(Some(self.graph_json(view, dir, &starts, &nodes, &edges)?))
    }

    fn graph(&self, trace: &str, t: &Target, cancel: &Cancel) -> Result<Reply, ApiError> {
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

    fn expand(&self, trace: &str, t: &Target) -> Result<Reply, ApiError> {
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

    fn node(&self, trace: &str, node: &str) -> Result<Reply, ApiError> {
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

    fn query(&self, body: &mut dyn Read, cancel: &Cancel) -> Result<Reply, ApiError> {
        let b = json_body(body)?;
        only_fields(&b, &["statement"])?;
        let text = text_field(&b, "statement", None)?;
        if text.trim().is_empty() {
            return Err(ApiError::bad("statement: empty"));
        }
        // The limit counts from here: parsing and planning are part of it.
        with_timeout_on(cancel, self.query_timeout, |cancel| {
            let plan = self.db.prepare_until(text, &Params::new(), cancel)?;
            let refused = match &plan {
                Plan::Attribute(_) => Some("ATTRIBUTE stores verdicts; run `memtrace attribute`"),
                Plan::SavePattern(_) | Plan::DropPattern(_) => {
                    Some("SAVE and DROP PATTERN change the database; run them in `memtrace` or `memtrace query`")
                }
                _ => None,
            };
            if let Some(why) = refused {
                return Err(ApiError::bad(format!(
                    "the viewer only reads: {why} (labels are the one thing it writes)"
                )));
            }
            let view_for_graph = match &plan {
                Plan::Traverse(p) => match &p.scope {
                    Some(scope) => Some(self.db.trace(scope)?),
                    None => None,
                },
                _ => None,
            };
            let mut rows: Vec<Value> = Vec::new();
            let mut truncated = false;
            let columns = self.db.run_plan(&plan, cancel, &mut |row| {
                if rows.len() >= MAX_ROWS {
                    truncated = true;
                    return Ok(false);
                }
                rows.push(Value::Array(
                    row.iter().map(memtrace::to_json).collect(),
                ));
                Ok(true)
            })?;
            let graph = match &view_for_graph {
                Some(view) => self.traverse_graph(view, &plan, cancel)?,
                None => None,
            };
            Ok(Reply::ok(&json!({
                "columns": columns,
                "rows": rows,
                "truncated": truncated,
                "graph": graph,
            })))
        })
        .map_err(|e: ApiError| self.stopped(e))
    }

    /// A query's timeout error, saying which limit stopped it.
    fn stopped(&self, e: ApiError) -> ApiError {
        if e.kind == "timeout" {
            ApiError {
                message: format!(
                    "the statement ran longer than {} s and was stopped (memtrace serve --query-timeout)",
                    self.query_timeout.as_secs_f64()
                ),
                ..e
            }
        } else {
            e
        }
    }

    fn import(&self, t: &Target, body: &mut dyn Read) -> Result<Reply, ApiError> {
        import_format(t)?;
        let upload = self.uploads.write(body)?;
        self.import_file(t, &upload)
    }

    fn import_file(&self, t: &Target, upload: &Upload) -> Result<Reply, ApiError> {
        let format = import_format(t)?;
        let source = t.param("source").unwrap_or("HTTP import");
        let force = t.param("force").is_some_and(|v| v != "0");
        let imported =
            self.db
                .import_file(&upload.path, format, source, &ImportOptions { force })?;
        let list: Vec<Value> = imported
            .iter()
            .map(|i| {
                json!({
                    "id": i.trace, "graph_id": i.graph_id, "format": i.format,
                    "variables": i.counts.variables, "ops": i.counts.ops, "edges": i.counts.edges,
                    "unchanged": i.unchanged,
                })
            })
            .collect();
        // Nothing new when every trace was already stored with this content.
        let status = if imported.iter().all(|i| i.unchanged) {
            200
        } else {
            201
        };
        self.structures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        Ok(Reply::json(status, &json!({"imported": list})))
    }
}

/// The format an import names (`format=json|jsonl`).
fn import_format(t: &Target) -> Result<InputFormat, ApiError> {
    match t.param("format").unwrap_or("json") {
        "json" => Ok(InputFormat::Json),
        "jsonl" => Ok(InputFormat::JsonLines),
        other => Err(ApiError::bad(format!(
            "format: {other:?} is neither json nor jsonl"
        ))),
    }
}

fn label_json(l: &memtrace::attrib::HumanVerdict) -> Value {
    json!({
        "seq": l.seq,
        "trace": l.graph_id,
        "case": l.case,
        "error_type": l.error_type.name(),
        "op_id": l.op_id,
        "op_name": l.op_name,
        "reason": l.reason,
        "author": l.author,
        "at": memtrace::iso_utc(l.at_ms),
    })
}

/// The ops on the backward provenance of `node` (every op that wrote it or
/// wrote what those read), in execution order.
fn provenance_ops(m: &TraceModel, node: Option<&str>) -> Vec<Value> {
    let Some(start) = node.and_then(|n| m.var(n)) else {
        return Vec::new();
    };
    let mut seen_vars = HashSet::from([start]);
    let mut queue = vec![start];
    let mut ops: BTreeMap<usize, ()> = BTreeMap::new();
    while let Some(v) = queue.pop() {
        for &o in m.made_by(v) {
            if ops.insert(o, ()).is_none() {
                for &i in m.inputs(o) {
                    if seen_vars.insert(i) {
                        queue.push(i);
                    }
                }
            }
        }
    }
    ops.keys()
        .map(|&o| {
            let op = &m.ops[o];
            json!({"op_id": op.op_id, "name": op.op_name, "category": op.category})
        })
        .collect()
}
