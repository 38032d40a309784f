//! Which operation made an LLM memory system answer wrongly, asked from Python: the native module `memtrace._memtrace`.
//!
//! The `memtrace` Python package (`memtrace/__init__.py`) wraps this
//! module; users never import it themselves. Every call that reads or
//! writes the store runs without the GIL, on a worker thread that a
//! KeyboardInterrupt cancels (see [`run::detached`]).

#![deny(missing_docs)]

mod convert;
mod error;
mod partition;
mod run;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use memtrace::attrib::{AttributeRequest, RunProgress};
use memtrace::patterns::{PatternSpec, RunOptions};
use memtrace::prelude::*;
use memtrace::{ImportOptions, ImportedTrace, InputFormat};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use convert::{json_to_py, param_list, rows_to_py, to_py};
use error::{BindingError, Result};

/// Who stores what the binding stores, unless the caller says.
const AUTHOR: &str = "memtrace python";

/// An open memtrace database (the native half of `memtrace.Database`).
#[pyclass(name = "Database", module = "memtrace._memtrace", frozen)]
struct PyDatabase {
    /// The database, until `close`.
    inner: RwLock<Option<Arc<memtrace::Database>>>,
    /// Where it is, for messages.
    path: PathBuf,
    /// Whether it was opened for reading only.
    read_only: bool,
}

impl PyDatabase {
    /// The open database, or ClosedError.
    fn db(&self) -> Result<Arc<memtrace::Database>> {
        let guard = self.inner.read().unwrap_or_else(|e| e.into_inner());
        guard
            .clone()
            .ok_or_else(|| BindingError::Closed(self.path.display().to_string()))
    }
}

/// Imported traces as a list of dicts.
fn imported_to_py<'py>(py: Python<'py>, traces: &[ImportedTrace]) -> Result<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for t in traces {
        list.append(to_py(py, t)?)?;
    }
    Ok(list)
}

/// A run's progress as a dict for a Python callback.
fn progress_dict<'py>(py: Python<'py>, p: &RunProgress) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("traces_read", p.traces_read)?;
    d.set_item("traces", p.traces)?;
    d.set_item("cases_done", p.cases_done)?;
    d.set_item("cases_expected", p.cases_expected())?;
    d.set_item("calls", p.cost.calls)?;
    d.set_item("cached_calls", p.cost.cached_calls)?;
    d.set_item("tokens_in", p.cost.tokens_in)?;
    d.set_item("tokens_out", p.cost.tokens_out)?;
    Ok(d)
}

#[pymethods]
impl PyDatabase {
    /// Opens the database at `path`, creating it when it does not exist;
    /// with `read_only`, opens an existing one for reading only, beside a
    /// process that writes it.
    #[new]
    #[pyo3(signature = (path, read_only = false))]
    fn new(py: Python<'_>, path: PathBuf, read_only: bool) -> Result<PyDatabase> {
        let at = path.clone();
        let db = py.detach(move || {
            if read_only {
                memtrace::Database::open_read_only(&at)
            } else {
                memtrace::Database::open(&at)
            }
        })?;
        Ok(PyDatabase {
            inner: RwLock::new(Some(Arc::new(db))),
            path,
            read_only,
        })
    }

    /// Closes the database; a second close does nothing. Calls that are
    /// running finish first (they hold the database until they end).
    fn close(&self, py: Python<'_>) {
        let taken = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
        py.detach(move || drop(taken));
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// The database's folder.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Whether it was opened for reading only.
    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    /// Runs one statement: returns its column names and its rows as dicts.
    #[pyo3(signature = (text, params = None, timeout = None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        params: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
    ) -> Result<(Vec<String>, Bound<'py, PyList>)> {
        let db = self.db()?;
        let params = convert::params(params)?;
        let text = text.to_string();
        let result = run::detached(py, timeout, move |cancel| {
            Ok(db.query_with(&text, &params, cancel)?)
        })?;
        let rows = rows_to_py(py, &result.columns, &result.rows)?;
        Ok((result.columns, rows))
    }

    /// Runs `text` `repeats` times in Rust, without the GIL, and returns the
    /// seconds each run took (for the benchmark of the binding's overhead).
    #[pyo3(signature = (text, repeats, params = None))]
    fn _time_in_rust(
        &self,
        py: Python<'_>,
        text: &str,
        repeats: usize,
        params: Option<&Bound<'_, PyDict>>,
    ) -> Result<Vec<f64>> {
        let db = self.db()?;
        let params = convert::params(params)?;
        let text = text.to_string();
        run::detached(py, None, move |cancel| {
            let mut times = Vec::with_capacity(repeats);
            for _ in 0..repeats {
                let t = Instant::now();
                let r = db.query_with(&text, &params, cancel)?;
                std::hint::black_box(&r);
                times.push(t.elapsed().as_secs_f64());
            }
            Ok(times)
        })
    }

    /// Imports the JSON files under `path` (a file or a folder searched for
    /// `*.json` and `*.jsonl`). Each file is all or nothing; when some fail,
    /// ImportFailedError says which, and the others stay stored. Returns the
    /// traces stored (or found already stored with the same content).
    #[pyo3(signature = (path, force = false))]
    fn import_path<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        force: bool,
    ) -> Result<Bound<'py, PyList>> {
        let db = self.db()?;
        let reports = run::detached(py, None, move |_| {
            Ok(db.import_paths(
                std::slice::from_ref(&path),
                &ImportOptions { force },
                &mut |_| {},
            ))
        })?;
        let mut stored = Vec::new();
        let mut failures = Vec::new();
        for r in &reports {
            match &r.result {
                Ok(traces) => stored.extend(traces.iter().cloned()),
                Err(e) => failures.push((r.path.display().to_string(), e.to_string())),
            }
        }
        let list = imported_to_py(py, &stored)?;
        if failures.is_empty() {
            Ok(list)
        } else {
            Err(BindingError::ImportFailed {
                files: reports.len(),
                failures,
                imported: list.into_any().unbind(),
            })
        }
    }

    /// Imports one export (smartcomment or MemTraceBench) held in memory as
    /// JSON text, or one per line with `lines`. `source` names it in
    /// messages and in the trace record.
    #[pyo3(signature = (data, source, force = false, lines = false))]
    fn import_bytes<'py>(
        &self,
        py: Python<'py>,
        data: Vec<u8>,
        source: String,
        force: bool,
        lines: bool,
    ) -> Result<Bound<'py, PyList>> {
        let db = self.db()?;
        let format = if lines {
            InputFormat::JsonLines
        } else {
            InputFormat::Json
        };
        let traces = run::detached(py, None, move |_| {
            Ok(db.import_reader(data.as_slice(), format, &source, &ImportOptions { force })?)
        })?;
        imported_to_py(py, &traces)
    }

    /// Every stored trace, as dicts.
    fn traces<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let traces = run::detached(py, None, move |_| Ok(db.traces()?))?;
        to_py(py, &traces)
    }

    /// What the database holds, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let stats = run::detached(py, None, move |_| Ok(db.stats()?))?;
        to_py(py, &stats)
    }

    /// The failed cases of one trace (graph id or `#ID`) or of every trace.
    #[pyo3(signature = (trace = None))]
    fn cases<'py>(&self, py: Python<'py>, trace: Option<String>) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let cases = run::detached(py, None, move |_| Ok(db.failed_cases(trace.as_deref())?))?;
        to_py(py, &cases)
    }

    /// Attributes failed cases with `method` and, with `store`, stores the
    /// verdicts as `author`. `setting` hides part of each case: `evaluation`
    /// its annotated evidence, `production` that and its gold answer.
    /// `progress` (a callable) hears a dict after each trace and, with an
    /// LLM method, after each case.
    #[pyo3(signature = (method, trace = None, cases = None, store = true, author = None, progress = None, timeout = None, setting = None))]
    #[allow(clippy::too_many_arguments)]
    fn attribute<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        trace: Option<String>,
        cases: Option<Vec<String>>,
        store: bool,
        author: Option<String>,
        progress: Option<Py<PyAny>>,
        timeout: Option<f64>,
        setting: Option<String>,
    ) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let method = convert::method(method)?;
        let setting = convert::setting(setting.as_deref())?;
        if cases.is_some() && trace.is_none() {
            return Err(BindingError::Value(
                "cases are named within one trace: give trace= too".into(),
            ));
        }
        let author = author.unwrap_or_else(|| AUTHOR.to_string());
        if store && author.trim().is_empty() {
            return Err(BindingError::Value("author must not be empty".into()));
        }
        let verdicts = run::detached(py, timeout, move |cancel| {
            let mut callback_error: Option<PyErr> = None;
            let verdicts = db.attribute(
                &AttributeRequest {
                    trace: trace.as_deref(),
                    cases: cases.as_deref(),
                    method,
                    setting,
                    search: Default::default(),
                },
                cancel,
                &mut |p| {
                    let Some(cb) = &progress else { return };
                    if callback_error.is_some() {
                        return;
                    }
                    let called =
                        Python::attach(|py| cb.call1(py, (progress_dict(py, p)?,)).map(drop));
                    if let Err(e) = called {
                        callback_error = Some(e);
                        cancel.cancel();
                    }
                },
            );
            if let Some(e) = callback_error {
                return Err(BindingError::Python(e));
            }
            let verdicts = verdicts?;
            if store {
                db.store_verdicts(&verdicts, &author)?;
            }
            Ok(verdicts)
        })?;
        to_py(py, &verdicts)
    }

    /// The verdicts stored for one trace or every trace, oldest first.
    #[pyo3(signature = (trace = None))]
    fn attributions<'py>(
        &self,
        py: Python<'py>,
        trace: Option<String>,
    ) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let stored = run::detached(py, None, move |_| Ok(db.attributions(trace.as_deref())?))?;
        to_py(py, &stored)
    }

    /// Runs `method` over the labelled failed cases and scores it against
    /// their labels in one setting (`benchmark` by default, `evaluation` or
    /// `production`); nothing is stored.
    #[pyo3(signature = (method, trace = None, timeout = None, setting = None))]
    fn eval<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        trace: Option<String>,
        timeout: Option<f64>,
        setting: Option<String>,
    ) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let method = convert::method(method)?;
        let setting = convert::setting(setting.as_deref())?;
        let evaluation = run::detached(py, timeout, move |cancel| {
            let req = AttributeRequest {
                trace: trace.as_deref(),
                cases: None,
                method,
                setting,
                search: Default::default(),
            };
            Ok(db.evaluate_request(&req, cancel, &mut |_| {})?)
        })?;
        to_py(py, &evaluation)
    }

    /// Writes the diagnostic report of `method`'s stored verdicts into
    /// `dir` (report.md and report.html); returns the report with the two
    /// paths.
    #[pyo3(signature = (dir, method, trace = None))]
    fn report<'py>(
        &self,
        py: Python<'py>,
        dir: PathBuf,
        method: &str,
        trace: Option<String>,
    ) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let method = convert::method(method)?;
        let (report, md, html) = run::detached(py, None, move |_| {
            let report = db.report(method, trace.as_deref())?;
            let (md, html) = report.write(&dir)?;
            Ok((report, md, html))
        })?;
        let out = to_py(py, &report)?;
        out.set_item("markdown", md)?;
        out.set_item("html", html)?;
        Ok(out)
    }

    /// Writes the traces (all, or those `traces` and `projects` pick) as
    /// Parquet tables in `dir`, partitioned by `partition` (`none`, `trace`
    /// or `project`); `force` replaces an earlier Parquet export there.
    /// Returns what was written, as a dict.
    #[pyo3(signature = (dir, traces = None, projects = None, partition = "none", force = false))]
    fn export_parquet<'py>(
        &self,
        py: Python<'py>,
        dir: PathBuf,
        traces: Option<Vec<String>>,
        projects: Option<Vec<String>>,
        partition: &str,
        force: bool,
    ) -> Result<Bound<'py, PyAny>> {
        let db = self.db()?;
        let partition = match partition {
            "none" => memtrace::Partition::None,
            "trace" => memtrace::Partition::Trace,
            "project" => memtrace::Partition::Project,
            other => {
                return Err(BindingError::Value(format!(
                    "unknown partition '{other}' (one of none, trace, project)"
                )))
            }
        };
        let options = memtrace::ParquetOptions {
            traces: traces.unwrap_or_default(),
            projects: projects.unwrap_or_default(),
            partition,
            replace: force,
        };
        let summary = run::detached(py, None, move |_| Ok(db.export_parquet(&dir, &options)?))?;
        to_py(py, &summary)
    }

    /// Every pattern, built in and saved, as dicts.
    fn patterns<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyList>> {
        let db = self.db()?;
        let infos = run::detached(py, None, move |_| Ok(db.patterns()?))?;
        let list = PyList::empty(py);
        for p in infos {
            let d = PyDict::new(py);
            d.set_item("name", &p.name)?;
            d.set_item("builtin", p.builtin)?;
            d.set_item("error_type", p.error_type.map(|t| t.to_string()))?;
            let defaults = PyDict::new(py);
            for (k, v) in &p.params {
                defaults.set_item(k, json_to_py(py, &memtrace::engine::to_json(v))?)?;
            }
            d.set_item("params", defaults)?;
            d.set_item("definition", &p.definition)?;
            d.set_item("version", p.version)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Saves a pattern (a new version when the name is saved already);
    /// returns its version.
    #[pyo3(signature = (name, statement, params = None, author = None))]
    fn save_pattern(
        &self,
        py: Python<'_>,
        name: &str,
        statement: &str,
        params: Option<&Bound<'_, PyDict>>,
        author: Option<String>,
    ) -> Result<u64> {
        let db = self.db()?;
        let params = param_list(params)?;
        let author = author.unwrap_or_else(|| AUTHOR.to_string());
        let (name, statement) = (name.to_string(), statement.to_string());
        run::detached(py, None, move |_| {
            Ok(db.save_pattern(&name, &statement, &params, &author)?)
        })
    }

    /// Drops a saved pattern (its history stays).
    #[pyo3(signature = (name, author = None))]
    fn drop_pattern(&self, py: Python<'_>, name: &str, author: Option<String>) -> Result<()> {
        let db = self.db()?;
        let author = author.unwrap_or_else(|| AUTHOR.to_string());
        let name = name.to_string();
        run::detached(py, None, move |_| Ok(db.drop_pattern(&name, &author)?))
    }

    /// Runs one pattern over every trace (or those `over` holds for):
    /// returns its columns, every hit as a dict with its trace's graph id
    /// under `trace`, and a dict of hits per trace.
    #[pyo3(signature = (name, params = None, over = None, timeout = None))]
    #[allow(clippy::type_complexity)]
    fn run_pattern<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        params: Option<&Bound<'py, PyDict>>,
        over: Option<String>,
        timeout: Option<f64>,
    ) -> Result<(Vec<String>, Bound<'py, PyList>, Bound<'py, PyDict>, u64)> {
        let db = self.db()?;
        let spec = PatternSpec {
            name: name.to_string(),
            params: param_list(params)?,
            statement: None,
        };
        let opts = RunOptions {
            over,
            examples: usize::MAX,
        };
        let report = run::detached(py, timeout, move |cancel| {
            Ok(db.run_patterns(std::slice::from_ref(&spec), &opts, cancel, &|_, _| {})?)
        })?;
        let outcome = report
            .patterns
            .into_iter()
            .next()
            .ok_or_else(|| BindingError::Value(format!("pattern {name} gave no outcome")))?;
        let mut columns = vec!["trace".to_string()];
        columns.extend(outcome.columns.iter().cloned());
        let rows = PyList::empty(py);
        for ex in &outcome.examples {
            let d = PyDict::new(py);
            d.set_item("trace", &ex.graph_id)?;
            for (c, v) in outcome.columns.iter().zip(&ex.row) {
                d.set_item(c, json_to_py(py, &memtrace::engine::to_json(v))?)?;
            }
            rows.append(d)?;
        }
        let per_trace = PyDict::new(py);
        for t in &outcome.per_trace {
            per_trace.set_item(&t.graph_id, t.hits)?;
        }
        Ok((columns, rows, per_trace, report.traces))
    }

    /// Sets the OpenAI-compatible endpoint that the `llm` and `hybrid`
    /// methods use, instead of the one the environment describes.
    #[pyo3(signature = (base_url, model, api_key = None, timeout = None, concurrency = None))]
    fn set_llm(
        &self,
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Option<f64>,
        concurrency: Option<usize>,
    ) -> Result<()> {
        let db = self.db()?;
        let mut config = memtrace::llm::Config::new(base_url, model);
        if let Some(key) = api_key {
            for e in &mut config.endpoints {
                e.api_key = Some(memtrace::llm::Secret::new(key.clone()));
            }
        }
        if let Some(t) = timeout {
            if !(t.is_finite() && t > 0.0) {
                return Err(BindingError::Value(format!(
                    "timeout must be a positive number of seconds, not {t}"
                )));
            }
            config.timeout = std::time::Duration::from_secs_f64(t);
        }
        if let Some(c) = concurrency {
            if c == 0 {
                return Err(BindingError::Value("concurrency must be at least 1".into()));
            }
            config.concurrency = c;
        }
        db.set_llm_config(config);
        Ok(())
    }

    fn __repr__(&self) -> String {
        format!(
            "<memtrace.Database {:?}{}{}>",
            self.path.display().to_string(),
            if self.read_only { " read-only" } else { "" },
            if self.closed() { " closed" } else { "" }
        )
    }
}

/// The native module: the Database class, the partition functions and the exception classes.
#[pymodule]
fn _memtrace(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDatabase>()?;
    m.add_function(wrap_pyfunction!(partition::run_partition, m)?)?;
    m.add_function(wrap_pyfunction!(partition::partition_schema, m)?)?;
    error::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
