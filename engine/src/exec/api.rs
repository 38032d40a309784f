//! The query API of the [`Engine`] and its [`Snapshot`]s: parse, plan
//! and run statements, collecting or streaming their rows.

use std::cell::RefCell;

use memtrace_query::ast::Output;
use memtrace_query::plan::Pred;
use memtrace_query::{Params, Plan, Statement};
use memtrace_storage::records::TraceRecord;
use memtrace_storage::TraceId;

use super::batch::{BatchOut, BatchSink, Gather};
use super::ctx::TraceCtx;
use super::row::RecRow;
use super::run::{qerr, Exec};
use super::value::{into_json, take_row, CellFn, CellSink, QueryResult, Sink};
use crate::db::{Engine, Snapshot};
use crate::error::{EngineError, Result};
use crate::extension::{statement_name, CasePick};
use crate::graph::Cancel;

impl Engine {
    /// Runs one statement and collects its rows.
    ///
    /// ```no_run
    /// let db = memtrace_engine::Engine::open("memtrace.db")?;
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
        let columns = self.query_each(text, params, cancel, &mut |r| {
            rows.push(r.iter_mut().map(|c| into_json(c.take())).collect());
            Ok(true)
        })?;
        Ok(QueryResult { columns, rows })
    }

    /// Runs one statement, lending each row to `sink` as cells as soon as
    /// it is known: the rows of TRACE and FORWARD lend the trace's text
    /// (ids, names, kinds) instead of copying it, so a caller that reads
    /// each row, or keeps a part of it, pays for no more than that. A
    /// closure given here is compiled into the walk that makes TRACE's and
    /// FORWARD's rows (see [`CellFn`]); a [`CellSink`] is called through
    /// its pointer. `sink` returns `false` to stop early. Returns the
    /// column names.
    ///
    /// ```no_run
    /// use memtrace_engine::{Cancel, Engine, Params};
    /// let db = Engine::open("memtrace.db")?;
    /// let mut ids = Vec::new();
    /// db.query_each("TRACE prediction:Q1 RETURN ops", &Params::new(), &Cancel::new(), &mut |row| {
    ///     ids.push(row[1].as_str().unwrap_or_default().to_string());
    ///     Ok(true)
    /// })?;
    /// # Ok::<(), memtrace_engine::EngineError>(())
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
        let plan = self.prepare(text, params)?;
        let snapshot = self.snapshot();
        match &plan {
            Plan::Traverse(t) => snapshot.exec(cancel).traverse(t, sink)?,
            other => snapshot.run_cells(other, cancel, &mut |row| sink(row))?,
        }
        Ok(Exec::columns(&plan))
    }

    /// Runs one statement, lending its rows to `sink` many at a time,
    /// column by column ([`Batch`]): for a reader that takes every row,
    /// such as one copying a column out, a batch costs one call instead of
    /// one per row, and a text is looked up only when its column is read.
    /// The nodes and ops of a plain walk (variable starts, no WHILE, UNTIL,
    /// WHERE or LIMIT, on a trace with stored labels) are lent from the
    /// trace's labels: a wide level of ops recorded one after the other is
    /// a batch of its own, lent at no cost per row; narrower levels and the
    /// nodes go out a thousand and more to a batch. Every other
    /// statement's rows are gathered into batches of owned values. The
    /// rows, and their order, are those of [`query_each`](Self::query_each).
    /// `sink` returns `false` to stop early. Returns the column names.
    ///
    /// ```no_run
    /// use memtrace_engine::{Cancel, Engine, Params};
    /// let db = Engine::open("memtrace.db")?;
    /// let mut ids = String::new();
    /// db.query_batches("TRACE prediction:Q1 RETURN ops", &Params::new(), &Cancel::new(), &mut |b| {
    ///     for row in 0..b.len() {
    ///         ids.push_str(b.str(row, 1).unwrap_or_default());
    ///         ids.push('\n');
    ///     }
    ///     Ok(true)
    /// })?;
    /// # Ok::<(), memtrace_engine::EngineError>(())
    /// ```
    pub fn query_batches(
        &self,
        text: &str,
        params: &Params,
        cancel: &Cancel,
        sink: &mut BatchSink<'_>,
    ) -> Result<Vec<String>> {
        let plan = self.prepare(text, params)?;
        self.snapshot().run_batches(&plan, cancel, sink)?;
        Ok(Exec::columns(&plan))
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
        self.plan_until(stmt, params, text, &Cancel::new())
    }

    /// [`plan`](Self::plan), ending with [`EngineError::Cancelled`] once
    /// `cancel` fires (planning looks at it as it goes).
    pub fn plan_until(
        &self,
        stmt: &Statement,
        params: &Params,
        text: &str,
        cancel: &Cancel,
    ) -> Result<Plan> {
        cancel.check()?;
        let mut plan = memtrace_query::plan_until(stmt, params, text, &|| cancel.is_cancelled())
            .map_err(qerr)?;
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
        self.prepare_until(text, params, &Cancel::new())
    }

    /// [`prepare`](Self::prepare), ending with [`EngineError::Cancelled`]
    /// once `cancel` fires (after parsing, and while planning).
    pub fn prepare_until(&self, text: &str, params: &Params, cancel: &Cancel) -> Result<Plan> {
        let stmt = memtrace_query::parse_statement(text)?;
        self.plan_until(&stmt, params, text, cancel)
    }

    /// Runs a TRACE or FORWARD and hands out the walk's tree instead of its
    /// rows: one row per variable the walk reached, `[trace, node, depth,
    /// parent, via_op, in_result]`, where `parent` is the variable it was
    /// reached from (null where an op start reached it; `via_op` is then
    /// that op), `via_op` the op between them, and `in_result` whether the
    /// statement's result holds it (its depth range and WHERE; the others
    /// lie on the way to such variables). The statement's LIMIT is not
    /// applied. Each row is of constant size, where `RETURN paths` repeats
    /// the beginning of every path: this is what `--format tree` draws.
    pub fn walk_tree(&self, plan: &Plan, cancel: &Cancel, sink: &mut Sink<'_>) -> Result<()> {
        let Plan::Traverse(t) = plan else {
            return Err(EngineError::TreeNeedsWalk);
        };
        let mut t = t.clone();
        t.output = Output::Paths;
        t.columns = memtrace_query::plan::traverse_columns(Output::Paths);
        t.limit = None;
        let snapshot = self.snapshot();
        let mut exec = snapshot.exec(cancel);
        exec.steps = true;
        exec.run(&Plan::Traverse(t), &mut |c| sink(take_row(c)))
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
            capture: None,
            batches: None,
            steps: false,
        }
    }

    /// Runs a planned statement on this snapshot, handing each row to
    /// `sink` (which returns `false` to stop early).
    pub fn run(&self, plan: &Plan, cancel: &Cancel, sink: &mut Sink<'_>) -> Result<()> {
        self.exec(cancel).run(plan, &mut |c| sink(take_row(c)))
    }

    /// Runs a planned statement on this snapshot, lending each row to
    /// `sink` as cells (see [`Engine::query_each`]).
    pub fn run_cells(&self, plan: &Plan, cancel: &Cancel, sink: &mut CellSink<'_>) -> Result<()> {
        self.exec(cancel).run(plan, sink)
    }

    /// Runs a planned statement on this snapshot, lending its rows to
    /// `sink` in batches (see [`Engine::query_batches`]).
    pub fn run_batches(
        &self,
        plan: &Plan,
        cancel: &Cancel,
        sink: &mut BatchSink<'_>,
    ) -> Result<()> {
        let gather = RefCell::new(Gather::new(Exec::columns(plan).len(), sink));
        let mut exec = self.exec(cancel);
        exec.batches = Some(&gather);
        exec.run(plan, &mut |row| gather.borrow_mut().row(row))?;
        gather.borrow_mut().flush()?;
        Ok(())
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use memtrace_query::{Field, Plan, Value};

    use crate::{
        Call, CaseOrigin, DerivedCase, Engine, EngineError, Extension, ResultRow, Sink, TraceId,
    };

    /// One trace with an op named `judge` and no annotation.
    fn db() -> (tempfile::TempDir, Engine) {
        let text = r#"{"graph_id": "g", "user_id": "u", "project_id": "p", "data": {
            "sessions": [{"session_id": "s", "session_name": "s"}],
            "operations": [{"op_id": "op-1", "op_name": "judge", "category": "k", "session_id": "s"}],
            "nodes": [{"name": "a", "class_name": "v", "version": 1, "value": "'a'", "session_id": "s"},
                      {"name": "b", "class_name": "v", "version": 1, "value": "'b'", "session_id": "s"}],
            "edges": [{"edge_id": "e1", "op_id": "op-1", "session_id": "s",
                       "source_full_node_id": "v:a@1", "target_full_node_id": "v:b@1"}]}}"#;
        crate::exec::test_db(text)
    }

    /// A stored result with one field.
    struct Stored(String);

    impl ResultRow for Stored {
        fn field(&self, field: &Field) -> Value {
            match field {
                Field::Reason => Value::Str(self.0.clone()),
                _ => Value::Null,
            }
        }
    }

    /// Runs SHOW PATTERNS and ATTRIBUTE with one row per stored result, finds a case at
    /// every op named `judge`, and counts its calls.
    #[derive(Default)]
    struct Probe {
        prepared: AtomicUsize,
        ran: AtomicUsize,
    }

    impl Extension for Probe {
        fn statements(&self) -> &[&'static str] {
            &["SHOW PATTERNS", "ATTRIBUTE"]
        }

        fn prepare(&self, _: &Engine, plan: &mut Plan, _: &str) -> crate::Result<()> {
            assert!(!matches!(plan, Plan::Explain(_)), "EXPLAIN is unwrapped");
            self.prepared.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }

        fn run(&self, call: &Call<'_, '_>, _: &Plan, sink: &mut Sink<'_>) -> crate::Result<()> {
            self.ran.fetch_add(1, Ordering::Relaxed);
            for (id, record) in call.snapshot.traces()? {
                for r in call.snapshot.trace_results(id)? {
                    sink(vec![
                        Value::Str(record.graph_id.clone()),
                        Value::Str(r.json),
                    ])?;
                }
            }
            Ok(())
        }

        fn may_derive_cases(&self, op_names: &mut dyn Iterator<Item = &str>) -> bool {
            for name in op_names {
                if name == "judge" {
                    return true;
                }
            }
            false
        }

        fn derived_cases(
            &self,
            call: &Call<'_, '_>,
            trace: TraceId,
        ) -> crate::Result<Vec<DerivedCase>> {
            Ok(call
                .snapshot
                .ops(trace)?
                .ops()
                .iter()
                .filter(|o| o.op_name.as_deref() == Some("judge"))
                .map(|o| DerivedCase {
                    fields: serde_json::json!({"query": "q?", "prediction": "p"}),
                    origin: CaseOrigin::Judge(o.op_id.clone()),
                })
                .collect())
        }

        fn result_rows(
            &self,
            call: &Call<'_, '_>,
            trace: TraceId,
        ) -> crate::Result<Vec<Box<dyn ResultRow>>> {
            Ok(call
                .snapshot
                .trace_results(trace)?
                .into_iter()
                .map(|r| Box::new(Stored(r.json)) as Box<dyn ResultRow>)
                .collect())
        }
    }

    #[test]
    fn statements_of_an_analysis_are_refused_without_one() {
        let (_dir, db) = db();
        for q in [
            "ATTRIBUTE CASES USING evidence",
            "SHOW PATTERNS",
            "EXPLAIN ATTRIBUTE CASES USING evidence",
        ] {
            let e = db.query(q).unwrap_err();
            assert!(matches!(e, EngineError::NoExtension(_)), "{q}: {e}");
            assert!(e.to_string().contains("with_extension"), "{e}");
        }
        // What the engine runs itself needs no extension; no case is found
        // where nothing derives one.
        assert_eq!(db.query("FIND vars RETURN count(*)").unwrap().rows[0][0], 2);
        assert!(db.query("FIND cases").unwrap().rows.is_empty());
        assert!(db.query("FIND attributions").unwrap().rows.is_empty());
    }

    #[test]
    fn an_extension_runs_its_statements_and_supplies_rows() {
        let (dir, db) = db();
        let probe = Arc::new(Probe::default());
        let db = db.with_extension(probe.clone());
        let trace = db.trace("g").unwrap().id();
        assert_eq!(
            db.append_trace_results(trace, &["first".into(), "second".into()])
                .unwrap()
                .iter()
                .map(|r| (r.seq, r.json.as_str()))
                .collect::<Vec<_>>(),
            [(1, "first"), (2, "second")]
        );
        let r = db.query("SHOW PATTERNS").unwrap();
        assert_eq!(r.rows, [["g", "first"], ["g", "second"]]);
        let explained = db.query("EXPLAIN ATTRIBUTE CASES USING evidence").unwrap();
        assert_eq!(explained.columns, ["plan"]);
        assert_eq!(probe.prepared.load(Ordering::Relaxed), 2);
        assert_eq!(probe.ran.load(Ordering::Relaxed), 1, "EXPLAIN does not run");
        let cases = db
            .query("FIND cases RETURN case.origin, case.query, case.prediction")
            .unwrap();
        assert_eq!(cases.rows, [["judge", "q?", "p"]]);
        let reasons = db.query("FIND attributions RETURN reason").unwrap();
        assert_eq!(reasons.rows, [["first"], ["second"]]);
        // A statement it does not name is still nobody's.
        assert!(matches!(
            db.query("DROP PATTERN p"),
            Err(EngineError::NoExtension("DROP PATTERN"))
        ));
        drop(dir);
    }

    #[test]
    fn what_an_analysis_keeps_reads_back_as_written() {
        let (_dir, db) = db();
        assert_eq!(db.append_definition("p", "{\"v\":1}".into()).unwrap(), 1);
        assert_eq!(db.append_definition("p", "{\"v\":2}".into()).unwrap(), 2);
        let defs = db.definitions().unwrap();
        assert_eq!(defs.len(), 2);
        assert_eq!((defs[1].seq, defs[1].name.as_str()), (2, "p"));
        assert_eq!(defs[1].json, "{\"v\":2}");
        let key = [7u8; 32];
        assert_eq!(db.memo(&key).unwrap(), None);
        db.put_memo(&key, b"answer").unwrap();
        assert_eq!(db.memo(&key).unwrap().as_deref(), Some(&b"answer"[..]));
        assert!(matches!(
            db.append_trace_results(99, &["x".into()]),
            Err(EngineError::Storage(_))
        ));
        #[derive(Default)]
        struct Count(AtomicUsize);
        db.shared::<Count>().0.fetch_add(1, Ordering::Relaxed);
        assert_eq!(db.shared::<Count>().0.load(Ordering::Relaxed), 1);
    }
}
