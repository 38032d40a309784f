//! The tools a client can call: each checks its arguments, then runs its work with the database.

use memtrace::Params;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router, ErrorData, Json};

use super::bounds::{bounded, seconds};
use super::errors::{bad, engine};
use super::limits::{LIST_DEFAULT, LIST_MAX, ROWS_DEFAULT, ROWS_MAX, VALUE_DEFAULT, VALUE_MAX};
use super::params::{
    AttributeArgs, DescribeArgs, ExecuteArgs, ExplainArgs, FailedCases, ListTraces, QueryArgs,
    RunPatternArgs, ShowValue,
};
use super::results::{Attributed, CaseList, Described, Explained, Rows, TraceList, ValuePage};
use super::server::McpServer;
use super::{cases, describe, statements, traces, values};

#[tool_router(vis = "pub(super)")]
impl McpServer {
    #[tool(
        description = "List stored traces, newest last, filtered by project, user, part of the graph id, or only those with failed cases. Each has its graph id (used by the other tools), counts and failed cases.",
        annotations(read_only_hint = true)
    )]
    async fn list_traces(
        &self,
        Parameters(a): Parameters<ListTraces>,
    ) -> Result<Json<TraceList>, ErrorData> {
        let limit = bounded(a.limit, LIST_DEFAULT, LIST_MAX, "limit")?;
        self.answer(move |db| traces::list(db, a, limit)).await
    }

    #[tool(
        description = "Run one statement of memtrace's query language (TRACE, FORWARD, MATCH, FIND, SHOW TRACES, SHOW PATTERNS, DESCRIBE, RUN PATTERN, EXPLAIN) with a row limit and a time limit. Statements that store (ATTRIBUTE, SAVE/DROP PATTERN) are refused here. A syntax error comes back with its line, column and a caret under the place.",
        annotations(read_only_hint = true)
    )]
    async fn query(&self, Parameters(a): Parameters<QueryArgs>) -> Result<Json<Rows>, ErrorData> {
        let limit = bounded(a.limit, ROWS_DEFAULT, ROWS_MAX, "limit")?;
        let timeout = seconds(a.timeout_seconds)?;
        if a.statement.trim().is_empty() {
            return Err(bad(
                "statement: empty; give one statement, such as SHOW TRACES",
            ));
        }
        let writer = self.writer.is_some();
        self.answer(move |db| statements::query(db, a, limit, timeout, writer))
            .await
    }

    #[tool(
        description = "Show the plan of a statement (what EXPLAIN prints): how it will find its starts, walk and filter. Nothing runs.",
        annotations(read_only_hint = true)
    )]
    async fn explain(
        &self,
        Parameters(a): Parameters<ExplainArgs>,
    ) -> Result<Json<Explained>, ErrorData> {
        let inner = statements::explained_statement(&a.statement);
        self.answer(move |db| statements::explain(db, inner)).await
    }

    #[tool(
        description = "Read one variable of a trace with its value (a page of it: offset and max_chars page through a long value), category, metadata, versions and the ops that wrote and read it; an op id gives the op.",
        annotations(read_only_hint = true)
    )]
    async fn show_value(
        &self,
        Parameters(a): Parameters<ShowValue>,
    ) -> Result<Json<ValuePage>, ErrorData> {
        let max = bounded(a.max_chars, VALUE_DEFAULT, VALUE_MAX, "max_chars")?;
        let offset = a.offset.unwrap_or(0) as usize;
        self.answer(move |db| values::show(db, a, offset, max))
            .await
    }

    #[tool(
        description = "List failed cases (wrong answers a judge or an evaluation flagged): trace, case name, question, gold answer, prediction, and the latest stored verdict when there is one.",
        annotations(read_only_hint = true)
    )]
    async fn failed_cases(
        &self,
        Parameters(a): Parameters<FailedCases>,
    ) -> Result<Json<CaseList>, ErrorData> {
        let limit = bounded(a.limit, LIST_DEFAULT, LIST_MAX, "limit")?;
        self.answer(move |db| cases::failed(db, a, limit)).await
    }

    #[tool(
        description = "Attribute one failed case: name the earliest decisive faulty op and its error type (ExtractionError, UpdateError, DeletionError, RetrievalError, ResponseError) with a confidence, a reason and the chain of ops. The evidence method is deterministic and needs no network; llm and hybrid need a configured LLM endpoint. Nothing is stored.",
        annotations(read_only_hint = true)
    )]
    async fn attribute_case(
        &self,
        Parameters(a): Parameters<AttributeArgs>,
    ) -> Result<Json<Attributed>, ErrorData> {
        let (method, setting) = cases::method_and_setting(&a)?;
        self.answer(move |db| cases::attribute(db, a, method, setting))
            .await
    }

    #[tool(
        description = "Run a failure pattern (built-in or saved; SHOW PATTERNS lists them) over every trace, or those an `over` condition picks, with parameter values. Each row is a hit; the trace comes first.",
        annotations(read_only_hint = true)
    )]
    async fn run_pattern(
        &self,
        Parameters(a): Parameters<RunPatternArgs>,
    ) -> Result<Json<Rows>, ErrorData> {
        let limit = bounded(a.limit, ROWS_DEFAULT, ROWS_MAX, "limit")?;
        let timeout = seconds(a.timeout_seconds)?;
        let text = statements::pattern_statement(&a)?;
        self.answer(move |db| {
            let plan = db.prepare(&text, &Params::new()).map_err(engine)?;
            statements::rows(db, &plan, limit, timeout)
        })
        .await
    }

    #[tool(
        description = "Describe what is stored (schema: traces, sessions, variables, ops, edges, cases, verdicts and their fields) and the query language (statements with examples; topic names one).",
        annotations(read_only_hint = true)
    )]
    async fn describe(
        &self,
        Parameters(a): Parameters<DescribeArgs>,
    ) -> Result<Json<Described>, ErrorData> {
        describe::describe(a).map(Json).map_err(bad)
    }

    #[tool(
        description = "Run a statement that stores: ATTRIBUTE (stores verdicts), SAVE PATTERN, DROP PATTERN. Present only when memtrace mcp was started with --allow-writes.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn execute(
        &self,
        Parameters(a): Parameters<ExecuteArgs>,
    ) -> Result<Json<Rows>, ErrorData> {
        let timeout = seconds(a.timeout_seconds)?;
        self.answer(move |db| statements::execute(db, a, timeout))
            .await
    }
}
