//! The query API of the [`Database`] and its [`Snapshot`]s: parse, plan
//! and run statements, collecting or streaming their rows.

use memtrace_query::plan::Pred;
use memtrace_query::{Params, Plan, Statement};
use memtrace_storage::records::TraceRecord;
use memtrace_storage::TraceId;

use super::ctx::TraceCtx;
use super::row::RecRow;
use super::run::{qerr, Exec};
use super::value::{to_json, QueryResult, Sink};
use crate::db::{Database, Snapshot};
use crate::error::Result;
use crate::extension::{statement_name, CasePick};
use crate::graph::Cancel;

impl Database {
    /// Runs one statement and collects its rows.
    ///
    /// ```no_run
    /// let db = memtrace_engine::Database::open("memtrace.db")?;
    /// let r = db.query("TRACE prediction:Q1 DEPTH 3 RETURN nodes")?;
    /// println!("{:?} {} rows", r.columns, r.rows.len());
    /// # Ok::<(), memtrace_engine::EngineError>(())
    /// ```
    pub fn query(&self, text: &str) -> Result<QueryResult> {
        self.query_with(text, &Params::new(), &Cancel::new())
    }

    /// Runs one statement with parameters and a cancellation token, collecting rows.
    pub fn query_with(&self, text: &str, params: &Params, cancel: &Cancel) -> Result<QueryResult> {
        let mut rows = Vec::new();
        let columns = self.query_stream(text, params, cancel, &mut |r| {
            rows.push(r.iter().map(to_json).collect());
            Ok(true)
        })?;
        Ok(QueryResult { columns, rows })
    }

    /// Runs one statement, handing each row to `sink` as soon as it is
    /// known (sorted and grouped results once complete). `sink` returns
    /// `false` to stop early. Returns the column names.
    pub fn query_stream(
        &self,
        text: &str,
        params: &Params,
        cancel: &Cancel,
        sink: &mut Sink<'_>,
    ) -> Result<Vec<String>> {
        let plan = self.prepare(text, params)?;
        self.run_plan(&plan, cancel, sink)
    }

    /// Parses a script: statements separated by `;`, with `--` comments.
    pub fn parse_script(&self, text: &str) -> Result<Vec<Statement>> {
        Ok(memtrace_query::parse_script(text)?)
    }

    /// Plans one statement of a script parsed from `text` (error positions
    /// refer to `text`), binding `params`. A statement that an extension
    /// runs is checked and completed by it here (an ATTRIBUTE's method, the
    /// pattern a RUN PATTERN names), also under EXPLAIN.
    pub fn plan(&self, stmt: &Statement, params: &Params, text: &str) -> Result<Plan> {
        let mut plan = memtrace_query::plan_text(stmt, params, text)?;
        if let Some(name) = statement_name(&plan) {
            let mut inner = &mut plan;
            while let Plan::Explain(p) = inner {
                inner = p.as_mut();
            }
            self.extensions()
                .for_statement(name)?
                .prepare(self, inner, text)?;
        }
        Ok(plan)
    }

    /// Parses and plans a statement without running it: syntax, field,
    /// parameter and attribution method errors show here. [`columns_of`](crate::columns_of) names its result columns.
    pub fn prepare(&self, text: &str, params: &Params) -> Result<Plan> {
        let stmt = memtrace_query::parse_statement(text)?;
        self.plan(&stmt, params, text)
    }

    /// Runs a planned statement; returns the column names.
    pub fn run_plan(
        &self,
        plan: &Plan,
        cancel: &Cancel,
        sink: &mut Sink<'_>,
    ) -> Result<Vec<String>> {
        self.snapshot().run(plan, cancel, sink)?;
        Ok(Exec::columns(plan))
    }
}

impl<'db> Snapshot<'db> {
    fn exec<'a>(&'a self, cancel: &'a Cancel) -> Exec<'a> {
        Exec {
            db: self.database(),
            view: self.view(),
            snapshot: self,
            cancel,
        }
    }

    /// Runs a planned statement on this snapshot, handing each row to
    /// `sink` (which returns `false` to stop early).
    pub fn run(&self, plan: &Plan, cancel: &Cancel, sink: &mut Sink<'_>) -> Result<()> {
        self.exec(cancel).run(plan, sink)
    }

    /// The failed cases that a planned `FIND cases` returns, in its order,
    /// each in its trace. Any other statement is refused.
    pub fn case_picks(&self, plan: &Plan, cancel: &Cancel) -> Result<Vec<CasePick>> {
        self.exec(cancel).case_picks(plan)
    }

    /// Whether a condition on `trace.` fields (a planned `OVER TRACES WHERE`)
    /// holds for a trace.
    pub fn trace_matches(&self, id: TraceId, record: &TraceRecord, pred: &Pred) -> Result<bool> {
        let t = TraceCtx::new(self.database(), self.view(), id, record.clone());
        pred.expr.test(&RecRow::new(&t)).map_err(qerr)
    }
}
