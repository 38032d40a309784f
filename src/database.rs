//! [`Database`]: the one type an embedding program opens and runs
//! everything on.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memtrace_analysis::Analyses;
use memtrace_columnar::{ColumnarError, ParquetOptions, ParquetSummary};
use memtrace_engine::{
    BatchSink, Cancel, CellFn, Engine, FileReport, GraphOptions, ImportOptions, ImportedTrace,
    InputFormat, LogEntry, OpenOptions, Params, Progress, QueryGraph, QueryResult, Result, Stats,
    TraceId, TraceInfo, TraceView,
};

/// An open memtrace database with the analyses registered: every statement
/// of the query language runs on it, ATTRIBUTE and the pattern statements
/// included, and the traits of [`prelude`](crate::prelude) add the
/// analyses' methods (`attribute`, `evaluate`, `report`, `run_patterns`, ...).
///
/// ```no_run
/// let db = memtrace::Database::open("memtrace.db")?;
/// let rows = db.query("SHOW TRACES")?;
/// println!("{} traces", rows.rows.len());
/// # Ok::<(), memtrace::EngineError>(())
/// ```
#[derive(Debug)]
pub struct Database(Engine);

impl Database {
    /// Opens the database at `path` for reading and writing, creating it
    /// when the path holds none. One process at a time opens a database
    /// this way; a second fails with a storage error that says it is in use.
    pub fn open(path: impl AsRef<Path>) -> Result<Database> {
        Database::open_with(path, &OpenOptions::default())
    }

    /// Opens the database at `path` for reading only; fails when there is
    /// none. No lock is taken, so it opens while another process writes,
    /// and sees what was committed when it opened; statements that store
    /// something fail with a storage error that says it is read-only.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Database> {
        let options = OpenOptions {
            read_only: true,
            ..OpenOptions::default()
        };
        Database::open_with(path, &options)
    }

    /// Opens the database at `path` as `options` say (whether to create it,
    /// read-only, whether commits wait for the disk).
    ///
    /// ```no_run
    /// use memtrace::{Database, OpenOptions};
    /// let existing = OpenOptions { create: false, ..OpenOptions::default() };
    /// let db = Database::open_with("memtrace.db", &existing)?;
    /// # Ok::<(), memtrace::EngineError>(())
    /// ```
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Database> {
        let engine = Engine::open_with(path, options)?;
        Ok(Database(engine.with_extension(Arc::new(Analyses))))
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Whether it was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.0.is_read_only()
    }

    /// Runs one statement and collects its rows.
    pub fn query(&self, text: &str) -> Result<QueryResult> {
        self.0.query(text)
    }

    /// Runs one statement with `$name` parameters and a cancellation token,
    /// collecting its rows.
    pub fn query_with(&self, text: &str, params: &Params, cancel: &Cancel) -> Result<QueryResult> {
        self.0.query_with(text, params, cancel)
    }

    /// Runs one statement, handing each row to `sink` as soon as it is
    /// known, its text borrowed from the trace rather than copied; `sink`
    /// returns `false` to stop early. Returns the column names.
    ///
    /// ```no_run
    /// use memtrace::{Cancel, Database, Params};
    /// let db = Database::open("memtrace.db")?;
    /// let mut ids = Vec::new();
    /// db.query_each("TRACE prediction:Q1 RETURN ops", &Params::new(), &Cancel::new(), &mut |row| {
    ///     ids.push(row[1].as_str().unwrap_or_default().to_string());
    ///     Ok(true)
    /// })?;
    /// # Ok::<(), memtrace::EngineError>(())
    /// ```
    pub fn query_each<S>(
        &self,
        text: &str,
        params: &Params,
        cancel: &Cancel,
        sink: &mut S,
    ) -> Result<Vec<String>>
    where
        S: ?Sized + CellFn,
    {
        self.0.query_each(text, params, cancel, sink)
    }

    /// Runs one statement, handing its rows to `sink` many at a time,
    /// column by column: the cheapest way to read every row. The rows and
    /// their order are those of [`query_each`](Self::query_each).
    pub fn query_batches(
        &self,
        text: &str,
        params: &Params,
        cancel: &Cancel,
        sink: &mut BatchSink<'_>,
    ) -> Result<Vec<String>> {
        self.0.query_batches(text, params, cancel, sink)
    }

    /// Runs a TRACE, FORWARD or MATCH and returns what it reached as a
    /// petgraph graph; other statements, and LIMIT, are refused.
    pub fn query_graph(
        &self,
        text: &str,
        params: &Params,
        options: &GraphOptions,
    ) -> Result<QueryGraph> {
        self.0.query_graph_with(text, params, options)
    }

    /// Imports files and folders (searched for `*.json` and `*.jsonl`);
    /// each file is stored whole or not at all, and a failed file does not
    /// stop the others. `progress` hears about files and bytes read.
    pub fn import_paths(
        &self,
        paths: &[PathBuf],
        options: &ImportOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Vec<FileReport> {
        self.0.import_paths(paths, options, progress)
    }

    /// Imports what `reader` holds in `format`, named `source` in messages;
    /// every trace of it is stored, or none.
    pub fn import_reader<R: Read>(
        &self,
        reader: R,
        format: InputFormat,
        source: &str,
        options: &ImportOptions,
    ) -> Result<Vec<ImportedTrace>> {
        self.0.import_reader(reader, format, source, options)
    }

    /// Imports one file read as `format` whatever its name, named `source`
    /// in messages and in the trace record; every trace of it is stored, or none.
    pub fn import_file(
        &self,
        path: &Path,
        format: InputFormat,
        source: &str,
        options: &ImportOptions,
    ) -> Result<Vec<ImportedTrace>> {
        self.0.import_file(path, format, source, options)
    }

    /// Every stored trace, by id.
    pub fn traces(&self) -> Result<Vec<TraceInfo>> {
        self.0.traces()
    }

    /// One trace, by graph id or `#id`.
    pub fn trace(&self, selector: &str) -> Result<TraceView<'_>> {
        self.0.trace(selector)
    }

    /// One trace, by its id.
    pub fn trace_by_id(&self, id: TraceId) -> Result<TraceView<'_>> {
        self.0.trace_by_id(id)
    }

    /// Totals over the database.
    pub fn stats(&self) -> Result<Stats> {
        self.0.stats()
    }

    /// Removes a whole trace (by graph id or `#id`), logging `reason`.
    pub fn drop_trace(&self, selector: &str, reason: &str) -> Result<TraceInfo> {
        self.0.drop_trace(selector, reason)
    }

    /// The event log: every import and removal, oldest first.
    pub fn log(&self) -> Result<Vec<LogEntry>> {
        self.0.log()
    }

    /// Flushes what is held in memory to the files on disk.
    pub fn flush(&self) -> Result<()> {
        self.0.flush()
    }

    /// Writes the traces `options` selects as Parquet tables in `dir`
    /// (traces, sessions, nodes, edges, ops, cases, verdicts): `dir` holds
    /// the whole export afterwards, or is left as it was on an error.
    pub fn export_parquet(
        &self,
        dir: impl AsRef<Path>,
        options: &ParquetOptions,
    ) -> std::result::Result<ParquetSummary, ColumnarError> {
        memtrace_columnar::export_parquet(&self.0, dir, options)
    }

    /// The engine underneath, for tools built on memtrace that need its
    /// lower-level calls (plans, snapshots, caches).
    pub fn engine(&self) -> &Engine {
        &self.0
    }

    /// The engine underneath, owned (the analyses stay registered).
    pub fn into_engine(self) -> Engine {
        self.0
    }
}
