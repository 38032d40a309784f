//! The analyses over a batch of traces, for engines that split work by
//! trace (Spark's `mapInArrow`, Ray Data, Dask): an Arrow batch whose rows
//! each hold a trace file's content in, an Arrow batch of results out.
//!
//! Traces are independent, so a batch needs nothing but itself: it is
//! imported into a private scratch database, analysed, and the database is
//! deleted. The results are one [`Output`] table, rows in the order of the
//! input rows (and, within a row, of its traces and their cases), with no
//! times in them, so the same batch always gives the same rows. A row that
//! does not import (malformed JSON, not a trace) gives one error row naming
//! it, and the other rows go on.
//!
//! ```no_run
//! use memtrace_columnar::partition::{run_batch, Job, PartitionOptions};
//! # fn batch() -> arrow_array::RecordBatch { unimplemented!() }
//! let job = Job::Verdicts {
//!     method: "evidence".parse().map_err(memtrace_columnar::ColumnarError::BadInput)?,
//!     setting: Default::default(),
//!     search: Default::default(),
//! };
//! let cancel = memtrace_engine::Cancel::new();
//! let verdicts = run_batch(&batch(), &job, &PartitionOptions::default(), &cancel)?;
//! println!("{} verdict rows", verdicts.num_rows());
//! # Ok::<(), memtrace_columnar::ColumnarError>(())
//! ```

mod input;
mod sheet;

use std::collections::HashMap;
use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use memtrace_analysis::attrib::{
    AttributeRequest, CaseOrigin, FailedCase, Method, Search, Setting, Verdict,
};
use memtrace_analysis::patterns::{PatternSpec, RunOptions, BUILTINS};
use memtrace_analysis::prelude::{Attribute, Patterns};
use memtrace_analysis::{Analyses, AnalysisError};
use memtrace_engine::{
    to_json, Cancel, Engine, ImportOptions, ImportedTrace, TraceId, TraceView, Value,
};

use crate::error::{ColumnarError, Result};
use input::Row;
pub use sheet::Output;
use sheet::{Cell, Sheet};

/// The analysis a partition runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Job {
    /// Attribute every failed case: one [`Output::Verdicts`] row each.
    Verdicts {
        /// The attribution method.
        method: Method,
        /// What each case shows the method.
        setting: Setting,
        /// How a case without source evidence has its evidence searched for.
        search: Search,
    },
    /// Run failure patterns: one [`Output::PatternHits`] row per hit.
    /// Make the list with [`pattern_specs`].
    Patterns(Vec<PatternSpec>),
    /// List the failed cases: one [`Output::Cases`] row each.
    Cases,
    /// Count what each trace holds: one [`Output::Stats`] row per trace.
    Stats,
}

impl Job {
    /// The table the job gives.
    pub fn output(&self) -> Output {
        match self {
            Job::Verdicts { .. } => Output::Verdicts,
            Job::Patterns(_) => Output::PatternHits,
            Job::Cases => Output::Cases,
            Job::Stats => Output::Stats,
        }
    }
}

/// Where a batch's traces are and where the scratch database goes.
#[derive(Debug, Clone)]
pub struct PartitionOptions {
    /// The column that holds each row's trace file: text or binary (UTF-8
    /// JSON). A file named `*.jsonl` by its source is read as JSON Lines.
    pub content: String,
    /// The column that names each row (a path, say), or none: then rows
    /// are named `row N` (N from 0 within the batch).
    pub source: Option<String>,
    /// The folder for the scratch database (the system's temporary folder
    /// when `None`).
    pub scratch: Option<PathBuf>,
    /// Threads the pattern runs use (at least one).
    pub threads: usize,
}

impl Default for PartitionOptions {
    fn default() -> Self {
        PartitionOptions {
            content: "content".into(),
            source: Some("path".into()),
            scratch: None,
            threads: 1,
        }
    }
}

/// A pattern given by its statement: the name its hits carry, the TRACE,
/// FORWARD, MATCH or FIND statement, and its parameters' defaults.
pub type InlinePattern = (String, String, Vec<(String, Value)>);

/// The patterns to run: built-in patterns by name (every built-in one when
/// `names` and `statements` are both empty), inline statements by the name
/// their hits carry (with their parameters' defaults), and parameter values
/// given to every pattern that takes them, as `memtrace patterns --param`
/// gives them. A parameter no pattern takes is an error, and so is a name
/// that is not a built-in pattern (a private database holds no saved
/// pattern: give its statement instead).
pub fn pattern_specs(
    names: &[String],
    statements: &[InlinePattern],
    params: &[(String, Value)],
) -> Result<Vec<PatternSpec>> {
    let mut specs: Vec<PatternSpec> = Vec::new();
    let mut takes: Vec<Vec<String>> = Vec::new();
    let builtin_names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
    let chosen: Vec<&str> = if names.is_empty() && statements.is_empty() {
        builtin_names.clone()
    } else {
        names.iter().map(String::as_str).collect()
    };
    for name in chosen {
        let Some(b) = BUILTINS.iter().find(|b| b.name == name) else {
            return Err(ColumnarError::BadInput(format!(
                "no built-in pattern {name} (they are {}); a saved pattern runs here by its \
                 statement, given with the statements",
                builtin_names.join(", ")
            )));
        };
        specs.push(PatternSpec::named(name));
        takes.push(b.params.iter().map(|p| p.name.to_string()).collect());
    }
    for (name, statement, defaults) in statements {
        if specs.iter().any(|s| &s.name == name) {
            return Err(ColumnarError::BadInput(format!(
                "pattern {name} is named twice"
            )));
        }
        specs.push(PatternSpec {
            name: name.clone(),
            params: defaults.clone(),
            statement: Some(statement.clone()),
        });
        takes.push(defaults.iter().map(|(k, _)| k.clone()).collect());
    }
    for (key, value) in params {
        let mut used = false;
        for (spec, names) in specs.iter_mut().zip(&takes) {
            if !names.contains(key) {
                continue;
            }
            used = true;
            match spec.params.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value.clone(),
                None => spec.params.push((key.clone(), value.clone())),
            }
        }
        if !used {
            return Err(ColumnarError::BadInput(format!(
                "parameter {key}: none of the patterns run takes ${key}"
            )));
        }
    }
    Ok(specs)
}

/// Runs `job` over the traces of one batch and returns its results, one
/// batch of the job's [`Output`] schema. Errors are those of the batch as
/// a whole (no such column, a scratch folder that cannot be made, a
/// pattern that does not plan, cancellation); a trace that fails gives an
/// error row instead.
pub fn run_batch(
    batch: &RecordBatch,
    job: &Job,
    opts: &PartitionOptions,
    cancel: &Cancel,
) -> Result<RecordBatch> {
    let rows = input::rows(batch, &opts.content, opts.source.as_deref())?;
    let mut sheet = Sheet::new(job.output());
    // A batch without rows still checks its patterns, so a bad one fails early.
    if rows.is_empty() && !matches!(job, Job::Patterns(_)) {
        return sheet.finish();
    }
    let dir = scratch_dir(opts)?;
    {
        let db = Engine::open_scratch(dir.path())?.with_extension(Arc::new(Analyses));
        let mut imported: Vec<std::result::Result<Vec<ImportedTrace>, String>> = Vec::new();
        for row in &rows {
            cancel.check()?;
            imported.push(import_row(&db, row));
        }
        match job {
            Job::Patterns(specs) => {
                pattern_rows(&db, &rows, &imported, specs, opts, cancel, &mut sheet)?
            }
            _ => {
                for (row, traces) in rows.iter().zip(&imported) {
                    let traces = match traces {
                        Ok(t) => t,
                        Err(e) => {
                            sheet.error(&row.source, None, None, e)?;
                            continue;
                        }
                    };
                    for t in traces {
                        cancel.check()?;
                        trace_rows(&db, row, t.trace, job, cancel, &mut sheet)?;
                    }
                }
            }
        }
    }
    let path = dir.path().to_path_buf();
    dir.close().map_err(crate::error::io(&path))?;
    sheet.finish()
}

/// Runs `job` over every batch of an Arrow IPC stream and returns an Arrow
/// IPC stream of the results: one batch per input batch, in order, of the
/// job's [`Output`] schema (so a stream without batches gives a stream
/// with the schema alone).
pub fn run_ipc(
    input: &[u8],
    job: &Job,
    opts: &PartitionOptions,
    cancel: &Cancel,
) -> Result<Vec<u8>> {
    let reader = StreamReader::try_new(Cursor::new(input), None).map_err(ColumnarError::Ipc)?;
    let schema = job.output().schema();
    let mut writer = StreamWriter::try_new(Vec::new(), &schema).map_err(ColumnarError::Ipc)?;
    for batch in reader {
        let batch = batch.map_err(ColumnarError::Ipc)?;
        let out = run_batch(&batch, job, opts, cancel)?;
        writer.write(&out).map_err(ColumnarError::Ipc)?;
    }
    writer.finish().map_err(ColumnarError::Ipc)?;
    writer.into_inner().map_err(ColumnarError::Ipc)
}

/// The schema of `output` as an Arrow IPC stream without batches.
pub fn schema_ipc(output: Output) -> Result<Vec<u8>> {
    let mut writer =
        StreamWriter::try_new(Vec::new(), &output.schema()).map_err(ColumnarError::Ipc)?;
    writer.finish().map_err(ColumnarError::Ipc)?;
    writer.into_inner().map_err(ColumnarError::Ipc)
}

/// A fresh folder for the batch's database, deleted when dropped.
fn scratch_dir(opts: &PartitionOptions) -> Result<tempfile::TempDir> {
    let mut b = tempfile::Builder::new();
    b.prefix("memtrace-partition-");
    let made = match &opts.scratch {
        Some(dir) => b.tempdir_in(dir),
        None => b.tempdir(),
    };
    let at = opts.scratch.clone().unwrap_or_else(std::env::temp_dir);
    made.map_err(crate::error::io(&at))
}

/// Imports one row's file: its traces, or why not (naming the row).
fn import_row(db: &Engine, row: &Row<'_>) -> std::result::Result<Vec<ImportedTrace>, String> {
    let name = &row.source;
    let Some(content) = row.content else {
        return Err(format!("{name}: no trace (the content is null)"));
    };
    let format = if name.to_ascii_lowercase().ends_with(".jsonl") {
        memtrace_engine::InputFormat::JsonLines
    } else {
        memtrace_engine::InputFormat::Json
    };
    // Every row stands alone: a graph id seen in another row of the batch is no conflict.
    let opts = ImportOptions { force: true };
    match db.import_reader(content, format, name, &opts) {
        Ok(traces) if traces.is_empty() => Err(format!("{name}: holds no trace")),
        Ok(traces) => Ok(traces),
        Err(e) => {
            let mut message = e.to_string();
            if !message.contains(name.as_ref()) {
                message = format!("{name}: {message}");
            }
            if std::str::from_utf8(content).is_err() {
                message.push_str(
                    " (the content is not UTF-8 text: memtrace reads JSON, and OTLP as JSON, \
                     not as protobuf)",
                );
            }
            Err(message)
        }
    }
}

/// Whether an error is the work stopping at its cancel token.
fn cancelled(e: &AnalysisError) -> bool {
    e.is_cancelled()
}

/// The rows of one imported trace for a per-trace job (not patterns); a
/// failure of this trace alone becomes an error row.
fn trace_rows(
    db: &Engine,
    row: &Row<'_>,
    trace: TraceId,
    job: &Job,
    cancel: &Cancel,
    sheet: &mut Sheet,
) -> Result<()> {
    let view = db.trace_by_id(trace)?;
    let info = view.info();
    let made = match job {
        Job::Verdicts {
            method,
            setting,
            search,
        } => verdict_rows(db, row, &view, (*method, *setting, *search), cancel),
        Job::Cases => case_rows(db, row, &view),
        Job::Stats => stat_rows(db, row, &view),
        Job::Patterns(_) => Ok(Vec::new()),
    };
    match made {
        Ok(rows) => {
            for r in rows {
                r.append(sheet)?;
            }
            Ok(())
        }
        Err(e) if cancelled(&e) => Err(e.into()),
        Err(e) => sheet.error(
            &row.source,
            Some(&info.graph_id),
            info.project_id.as_deref(),
            &format!("{}: {e}", info.graph_id),
        ),
    }
}

/// One result row, owned until appended.
struct Owned {
    source: String,
    graph_id: String,
    project_id: Option<String>,
    body: Vec<OwnedCell>,
}

/// A cell of an [`Owned`] row.
enum OwnedCell {
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    List(Vec<String>),
}

impl From<Option<String>> for OwnedCell {
    fn from(v: Option<String>) -> OwnedCell {
        v.map_or(OwnedCell::Null, OwnedCell::Text)
    }
}

impl From<String> for OwnedCell {
    fn from(v: String) -> OwnedCell {
        OwnedCell::Text(v)
    }
}

impl From<&str> for OwnedCell {
    fn from(v: &str) -> OwnedCell {
        OwnedCell::Text(v.to_string())
    }
}

impl From<Option<&str>> for OwnedCell {
    fn from(v: Option<&str>) -> OwnedCell {
        v.map_or(OwnedCell::Null, |s| OwnedCell::Text(s.to_string()))
    }
}

impl From<u64> for OwnedCell {
    fn from(v: u64) -> OwnedCell {
        OwnedCell::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<Option<u64>> for OwnedCell {
    fn from(v: Option<u64>) -> OwnedCell {
        v.map_or(OwnedCell::Null, OwnedCell::from)
    }
}

impl Owned {
    fn new(row: &Row<'_>, view: &TraceView<'_>, body: Vec<OwnedCell>) -> Owned {
        let record = view.record();
        Owned {
            source: row.source.to_string(),
            graph_id: record.graph_id.clone(),
            project_id: record.project_id.clone(),
            body,
        }
    }

    fn append(&self, sheet: &mut Sheet) -> Result<()> {
        let body: Vec<Cell<'_>> = self
            .body
            .iter()
            .map(|c| match c {
                OwnedCell::Null => Cell::Null,
                OwnedCell::Text(s) => Cell::Text(s),
                OwnedCell::Int(n) => Cell::Int(*n),
                OwnedCell::Float(x) => Cell::Float(*x),
                OwnedCell::List(l) => Cell::List(l),
            })
            .collect();
        sheet.row(
            [
                Cell::Text(&self.source),
                Cell::Text(&self.graph_id),
                self.project_id.as_deref().into(),
            ],
            &body,
        )
    }
}

/// The trace's `#ID` selector.
fn selector(view: &TraceView<'_>) -> String {
    format!("#{}", view.id())
}

/// The verdicts of every failed case of one trace.
fn verdict_rows(
    db: &Engine,
    row: &Row<'_>,
    view: &TraceView<'_>,
    (method, setting, search): (Method, Setting, Search),
    cancel: &Cancel,
) -> memtrace_analysis::Result<Vec<Owned>> {
    let sel = selector(view);
    let verdicts = db.attribute(
        &AttributeRequest {
            trace: Some(&sel),
            cases: None,
            method,
            setting,
            search,
        },
        cancel,
        &mut |_| {},
    )?;
    if verdicts.is_empty() {
        return Ok(Vec::new());
    }
    let cases = db.failed_cases(Some(&sel))?;
    let mut kinds: HashMap<String, Option<String>> = HashMap::new();
    let mut out = Vec::with_capacity(verdicts.len());
    for (i, v) in verdicts.iter().enumerate() {
        // Verdicts come in case order; a case is found by name when they do not line up.
        let case = cases
            .get(i)
            .filter(|c| c.id == v.case)
            .or_else(|| cases.iter().find(|c| c.id == v.case));
        let kind = match &v.op_id {
            Some(op) => match kinds.get(op) {
                Some(k) => k.clone(),
                None => {
                    let k = view.op(op)?.and_then(|o| o.category);
                    kinds.insert(op.clone(), k.clone());
                    k
                }
            },
            None => None,
        };
        out.push(Owned::new(row, view, verdict_body(v, case, kind)?));
    }
    Ok(out)
}

fn verdict_body(
    v: &Verdict,
    case: Option<&FailedCase>,
    op_kind: Option<String>,
) -> memtrace_analysis::Result<Vec<OwnedCell>> {
    let cost = v.cost.as_ref();
    Ok(vec![
        v.case.as_str().into(),
        v.query.as_str().into(),
        case.map(|c| c.prediction.as_str()).into(),
        v.method.as_str().into(),
        v.version.as_str().into(),
        v.model.as_deref().into(),
        v.setting.map(|s| s.to_string()).into(),
        v.error_type.map(|e| e.name()).into(),
        v.op_id.as_deref().into(),
        v.op_name.as_deref().into(),
        op_kind.into(),
        OwnedCell::Float(v.confidence),
        v.reason.as_str().into(),
        serde_json::to_string(&v.chain)?.into(),
        cost.map(|c| u64::from(c.calls)).into(),
        cost.map(|c| c.tokens_in).into(),
        cost.map(|c| c.tokens_out).into(),
    ])
}

/// The failed cases of one trace, as the Parquet export's cases table has them.
fn case_rows(
    db: &Engine,
    row: &Row<'_>,
    view: &TraceView<'_>,
) -> memtrace_analysis::Result<Vec<Owned>> {
    let cases = db.failed_cases(Some(&selector(view)))?;
    if cases.is_empty() {
        return Ok(Vec::new());
    }
    let annotations = view.cases()?;
    let mut out = Vec::with_capacity(cases.len());
    for c in &cases {
        let (origin, judge) = match &c.origin {
            CaseOrigin::Annotation(_) => ("annotation", None),
            CaseOrigin::Judge(op) => ("judge", Some(op.as_str())),
        };
        let label = match c.origin {
            CaseOrigin::Annotation(i) => annotations.get(i),
            CaseOrigin::Judge(_) => None,
        };
        let body = vec![
            c.id.as_str().into(),
            origin.into(),
            judge.into(),
            c.query_node.as_deref().into(),
            c.query.as_str().into(),
            OwnedCell::List(c.gold.clone()),
            c.prediction.as_str().into(),
            c.judge_response.as_deref().into(),
            OwnedCell::List(c.source_evidence.clone()),
            label.and_then(|a| a.final_error_type.as_deref()).into(),
            label.and_then(|a| a.final_op_id.as_deref()).into(),
        ];
        out.push(Owned::new(row, view, body));
    }
    Ok(out)
}

/// What one trace holds, and how many failed cases.
fn stat_rows(
    db: &Engine,
    row: &Row<'_>,
    view: &TraceView<'_>,
) -> memtrace_analysis::Result<Vec<Owned>> {
    let info = view.info();
    let failed = db.failed_cases(Some(&selector(view)))?.len() as u64;
    let c = &info.counts;
    let body = vec![
        info.user_id.as_deref().into(),
        info.created_at.as_deref().into(),
        info.format.as_str().into(),
        info.source_bytes.into(),
        u64::from(c.sessions).into(),
        u64::from(c.variables).into(),
        u64::from(c.ops).into(),
        u64::from(c.edges).into(),
        u64::from(c.cases).into(),
        failed.into(),
    ];
    Ok(vec![Owned::new(row, view, body)])
}

/// The hits of the patterns in every trace of the batch, in row order.
fn pattern_rows(
    db: &Engine,
    rows: &[Row<'_>],
    imported: &[std::result::Result<Vec<ImportedTrace>, String>],
    specs: &[PatternSpec],
    opts: &PartitionOptions,
    cancel: &Cancel,
    sheet: &mut Sheet,
) -> Result<()> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.threads.max(1))
        .thread_name(|i| format!("memtrace-partition-{i}"))
        .build()
        .map_err(|e| {
            ColumnarError::BadInput(format!("could not start the pattern threads: {e}"))
        })?;
    let run = RunOptions {
        over: None,
        examples: usize::MAX,
    };
    let report = pool.install(|| db.run_patterns(specs, &run, cancel, &|_, _| {}))?;
    // Per trace, per pattern: its rows as JSON objects, in order.
    let mut hits: HashMap<TraceId, Vec<Vec<String>>> = HashMap::new();
    for (p, outcome) in report.patterns.iter().enumerate() {
        for ex in &outcome.examples {
            let per = hits
                .entry(ex.trace)
                .or_insert_with(|| vec![Vec::new(); report.patterns.len()]);
            let object: serde_json::Map<String, serde_json::Value> = outcome
                .columns
                .iter()
                .cloned()
                .zip(ex.row.iter().map(to_json))
                .collect();
            per[p].push(serde_json::Value::Object(object).to_string());
        }
    }
    for (row, traces) in rows.iter().zip(imported) {
        let traces = match traces {
            Ok(t) => t,
            Err(e) => {
                sheet.error(&row.source, None, None, e)?;
                continue;
            }
        };
        for t in traces {
            let Some(per) = hits.get(&t.trace) else {
                continue;
            };
            let view = db.trace_by_id(t.trace)?;
            let record = view.record();
            for (outcome, rows_of) in report.patterns.iter().zip(per) {
                let kind = outcome.error_type.map(|e| e.name());
                for (i, json) in rows_of.iter().enumerate() {
                    sheet.row(
                        [
                            Cell::Text(&row.source),
                            Cell::Text(&record.graph_id),
                            record.project_id.as_deref().into(),
                        ],
                        &[
                            Cell::Text(&outcome.name),
                            kind.into(),
                            (i as u64).into(),
                            Cell::Text(json),
                        ],
                    )?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
