//! From a checked [`Statement`] to a logical [`Plan`] the engine runs, and
//! the plan's printed form (what EXPLAIN shows).
//!
//! Planning resolves field names (with a "did you mean" for typos), binds
//! parameters, compiles regular expressions, splits aggregates from group
//! keys, pushes MATCH conditions down to the step where their variables are
//! bound, and picks the most constrained node of each pattern as its anchor.

use std::collections::HashMap;
use std::fmt::{self, Display, Formatter};

use crate::ast::*;
use crate::error::QueryError;
use crate::eval::{AggFunc, Func, Pexpr};
use crate::keywords::nearest;
use crate::node_ref::{parse_node_ref, NodeRef};
use crate::value::Value;

type Result<T> = std::result::Result<T, QueryError>;

/// Parameter values by name (without the `$`).
pub type Params = HashMap<String, Value>;

/// What a field path names a field of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// `var.`: a variable (in TRACE, the node reached).
    Var,
    /// `op.`: an operation (in TRACE, the op of the edge that reached the node).
    Op,
    /// `edge.`: an edge.
    Edge,
    /// `session.`: the session of the row's record.
    Session,
    /// `trace.`: the trace.
    Trace,
    /// `case.`: a failed case.
    Case,
    /// `attribution.`: a stored attribution verdict.
    Attribution,
    /// `source.`: an edge's source variable.
    Source,
    /// `target.`: an edge's target variable.
    Target,
    /// A MATCH pattern variable, by its index in [`MatchPlan::vars`].
    Bound(usize),
}

/// A field of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Field {
    /// `full_name` (`class:name`).
    FullName,
    /// `name`.
    Name,
    /// `class`.
    Class,
    /// `version`.
    Version,
    /// `category` (an op's category is also its `kind`).
    Category,
    /// `comment`.
    Comment,
    /// `value` (a variable's value text).
    Value,
    /// `created_at`.
    CreatedAt,
    /// `session`: the session id.
    Session,
    /// `node_id`: the full node id (`full_name@version`).
    NodeId,
    /// `filename`.
    Filename,
    /// `lineno`.
    Lineno,
    /// `id`: op id, edge id, session id, trace (graph) id.
    Id,
    /// `name` of an op, session.
    OpName,
    /// `source`: an edge's source node id; a trace's import source.
    Source,
    /// `target`: an edge's target node id.
    Target,
    /// `op`: an edge's op id.
    Op,
    /// `user_id`.
    UserId,
    /// `project_id`.
    ProjectId,
    /// `query_id` of a case.
    QueryId,
    /// `query` of a case.
    Query,
    /// `golden_answers` of a case.
    GoldenAnswers,
    /// `prediction` of a case.
    Prediction,
    /// `evidence`: a case's source evidence ids.
    Evidence,
    /// `error_type`: a case's labelled error type.
    ErrorType,
    /// `op_id`: a case's labelled faulty op.
    OpId,
    /// `kind` of an edge: the category of the op that made it.
    Kind,
    /// `origin` of a case: `annotation` or `judge`.
    Origin,
    /// `case` of a verdict: the case's name (query node id or judge op id).
    Case,
    /// `confidence` of a verdict, from 0 to 1.
    Confidence,
    /// `reason` of a verdict.
    Reason,
    /// `method` of a verdict.
    Method,
    /// `author` of a stored verdict.
    Author,
    /// `at`: when a verdict was stored (ISO-8601, UTC).
    At,
    /// `seq`: a stored verdict's place among its trace's verdicts, from 1.
    Seq,
    /// `micros`: microseconds the attributor spent on a case.
    Micros,
    /// `model`: the LLM that made a verdict.
    Model,
    /// `calls`: requests an LLM verdict sent to its endpoint.
    Calls,
    /// `cached_calls`: answers an LLM verdict replayed from the cache.
    CachedCalls,
    /// `tokens_in`: prompt tokens of an LLM verdict.
    TokensIn,
    /// `tokens_out`: completion tokens of an LLM verdict.
    TokensOut,
    /// `seconds`: wall-clock seconds an LLM verdict took.
    Seconds,
    /// `meta.<key>...`: a path into the JSON metadata.
    Meta(Vec<String>),
    /// Where a record is, for the engine's own use (a statement cannot name
    /// it): a trace's dense id; a failed case's origin in its trace (the
    /// position of its annotation, or the id of its judge op). An ATTRIBUTE
    /// reads it from the rows of its `FIND cases` subquery.
    Key,
}

/// The fields each subject has: (name as written, field).
fn fields_of(subject: Subject) -> &'static [(&'static str, Field)] {
    use Field::*;
    const VAR: &[(&str, Field)] = &[
        ("full_name", FullName),
        ("name", Name),
        ("class", Class),
        ("class_name", Class),
        ("version", Version),
        ("category", Category),
        ("comment", Comment),
        ("value", Value),
        ("created_at", CreatedAt),
        ("session", Session),
        ("node_id", NodeId),
        ("full_node_id", NodeId),
        ("filename", Filename),
        ("lineno", Lineno),
    ];
    const OP: &[(&str, Field)] = &[
        ("id", Id),
        ("op_id", Id),
        ("name", OpName),
        ("op_name", OpName),
        ("kind", Category),
        ("category", Category),
        ("comment", Comment),
        ("session", Session),
        ("created_at", CreatedAt),
    ];
    const EDGE: &[(&str, Field)] = &[
        ("id", Id),
        ("edge_id", Id),
        ("category", Category),
        ("comment", Comment),
        ("source", Source),
        ("target", Target),
        ("op", Op),
        ("op_id", Op),
        ("op_name", OpName),
        ("kind", Kind),
        ("session", Session),
        ("created_at", CreatedAt),
    ];
    const SESSION: &[(&str, Field)] = &[
        ("id", Id),
        ("session_id", Id),
        ("name", Name),
        ("category", Category),
        ("comment", Comment),
        ("created_at", CreatedAt),
    ];
    const TRACE: &[(&str, Field)] = &[
        ("id", Id),
        ("graph_id", Id),
        ("user_id", UserId),
        ("project_id", ProjectId),
        ("created_at", CreatedAt),
        ("source", Source),
    ];
    const CASE: &[(&str, Field)] = &[
        ("query_id", QueryId),
        ("query", Query),
        ("golden_answers", GoldenAnswers),
        ("prediction", Prediction),
        ("evidence", Evidence),
        ("source_evidence_ids", Evidence),
        ("error_type", ErrorType),
        ("final_error_type", ErrorType),
        ("op_id", OpId),
        ("final_op_id", OpId),
        ("origin", Origin),
    ];
    const ATTRIBUTION: &[(&str, Field)] = &[
        ("case", Case),
        ("query", Query),
        ("error_type", ErrorType),
        ("op_id", OpId),
        ("op_name", OpName),
        ("confidence", Confidence),
        ("reason", Reason),
        ("method", Method),
        ("version", Version),
        ("author", Author),
        ("at", At),
        ("seq", Seq),
        ("micros", Micros),
        ("model", Model),
        ("calls", Calls),
        ("cached_calls", CachedCalls),
        ("tokens_in", TokensIn),
        ("tokens_out", TokensOut),
        ("seconds", Seconds),
    ];
    match subject {
        Subject::Var | Subject::Source | Subject::Target => VAR,
        Subject::Op => OP,
        Subject::Edge => EDGE,
        Subject::Session => SESSION,
        Subject::Trace => TRACE,
        Subject::Case => CASE,
        Subject::Attribution => ATTRIBUTION,
        Subject::Bound(_) => &[],
    }
}

/// The subjects a field path may start with, as written (`var`, `op`, ...).
pub const SUBJECTS: &[&str] = &[
    "var",
    "op",
    "edge",
    "session",
    "trace",
    "case",
    "attribution",
    "source",
    "target",
];

/// The field names of a subject as written after its dot (`var` -> `full_name`,
/// `name`, ...), for completion and help; `None` for a name that is not a subject.
/// `meta.` paths are open-ended and not listed.
pub fn field_names(subject: &str) -> Option<Vec<&'static str>> {
    let s = subject_named(subject)?;
    Some(fields_of(s).iter().map(|(name, _)| *name).collect())
}

/// The subject a field path's first name stands for.
fn subject_named(name: &str) -> Option<Subject> {
    Some(match name {
        "var" => Subject::Var,
        "op" => Subject::Op,
        "edge" => Subject::Edge,
        "session" => Subject::Session,
        "trace" => Subject::Trace,
        "case" => Subject::Case,
        "attribution" => Subject::Attribution,
        "source" => Subject::Source,
        "target" => Subject::Target,
        _ => return None,
    })
}

fn subject_name(s: Subject) -> &'static str {
    match s {
        Subject::Var => "var",
        Subject::Op => "op",
        Subject::Edge => "edge",
        Subject::Session => "session",
        Subject::Trace => "trace",
        Subject::Case => "case",
        Subject::Attribution => "attribution",
        Subject::Source => "source",
        Subject::Target => "target",
        Subject::Bound(_) => "",
    }
}

/// A compiled condition with the text it was written as.
#[derive(Debug, Clone)]
pub struct Pred {
    /// The compiled expression.
    pub expr: Pexpr,
    /// The expression as the statement wrote it (canonical form).
    pub text: String,
}

/// What a statement does once planned.
#[derive(Debug, Clone)]
pub enum Plan {
    /// TRACE or FORWARD.
    Traverse(TraversePlan),
    /// MATCH.
    Match(MatchPlan),
    /// FIND.
    Find(FindPlan),
    /// SHOW TRACES.
    ShowTraces,
    /// DESCRIBE.
    Describe(DescribePlan),
    /// ATTRIBUTE.
    Attribute(AttributePlan),
    /// EXPLAIN: the plan of the inner statement, printed.
    Explain(Box<Plan>),
    /// SAVE PATTERN: checked, not yet stored.
    SavePattern(SavePatternPlan),
    /// RUN PATTERN: the engine looks the pattern up and fills `body` and `columns`.
    RunPattern(RunPatternPlan),
    /// SHOW PATTERNS.
    ShowPatterns,
    /// SHOW PATTERN name HISTORY.
    ShowPatternHistory(String),
    /// DROP PATTERN.
    DropPattern(String),
}

/// SAVE PATTERN, checked: the body plans with the defaults alone, every
/// parameter it uses has a default, every default is used, and it runs over
/// every trace (no IN TRACE).
#[derive(Debug, Clone)]
pub struct SavePatternPlan {
    /// The pattern's name, as written.
    pub name: String,
    /// The defaults, in written order.
    pub params: Vec<(String, Value)>,
    /// The saved statement printed canonically (what is stored).
    pub text: String,
    /// The saved statement planned with its defaults (proof that it runs).
    pub body: Box<Plan>,
}

/// RUN PATTERN, before and after the engine resolves the pattern.
#[derive(Debug, Clone)]
pub struct RunPatternPlan {
    /// The pattern's name, as written.
    pub name: String,
    /// `OVER TRACES WHERE p`: a predicate on `trace.` fields only.
    pub over: Option<Pred>,
    /// Parameter values given, in written order.
    pub params: Vec<(String, Value)>,
    /// The saved statement planned with the defaults and the values given;
    /// `None` until the engine resolves the pattern (and for built-in patterns).
    pub body: Option<Box<Plan>>,
    /// Result columns; empty until the engine resolves the pattern.
    pub columns: Vec<String>,
}

/// A traversal from one or more starts.
#[derive(Debug, Clone)]
pub struct TraversePlan {
    /// Backward (TRACE) or forward.
    pub direction: Direction,
    /// The starts, parameters substituted.
    pub starts: Vec<NodeRef>,
    /// Only this trace (graph id), else every trace that holds a start.
    pub scope: Option<String>,
    /// Rows at fewer hops than this are not returned (1 unless DEPTH m..n).
    pub min_depth: u32,
    /// No node beyond this many hops.
    pub max_depth: Option<u32>,
    /// Stop at what matches: returned, not expanded.
    pub until: Option<Pred>,
    /// Expand only through what matches.
    pub while_: Option<Pred>,
    /// Filters returned rows.
    pub filter: Option<Pred>,
    /// What is returned.
    pub output: Output,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// The result columns.
    pub columns: Vec<String>,
}

/// What a MATCH pattern variable binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarKind {
    /// A variable (node).
    Node,
    /// An edge (single-hop relationship).
    Edge,
}

/// One pattern variable.
#[derive(Debug, Clone)]
pub struct PatternVar {
    /// Its name (generated `_n` for anonymous nodes).
    pub name: String,
    /// Node or edge.
    pub kind: VarKind,
}

/// A required field value in a pattern (`{category: 'x'}` or the label).
#[derive(Debug, Clone)]
pub struct Constraint {
    /// The field.
    pub field: Field,
    /// The value it must equal.
    pub value: Value,
}

/// One step of a MATCH plan.
#[derive(Debug, Clone)]
pub enum MatchStep {
    /// Binds a node variable to every variable of the trace that fits.
    Scan {
        /// The pattern variable.
        var: usize,
        /// Class name and property constraints.
        constraints: Vec<Constraint>,
    },
    /// Follows edges from a bound node to bind (or check) another.
    Expand {
        /// The bound node.
        from: usize,
        /// The node reached (bound here, or checked when `check` is set).
        to: usize,
        /// The relationship variable, for single hops.
        rel: Option<usize>,
        /// Forward follows edges from source to target.
        direction: Direction,
        /// Constraints on each crossed edge (`kind` is its op's category).
        edge_constraints: Vec<Constraint>,
        /// Fewest hops.
        min_hops: u32,
        /// Most hops (`None`: as far as the graph goes).
        max_hops: Option<u32>,
        /// Constraints on the node reached.
        constraints: Vec<Constraint>,
        /// `to` is already bound: the step checks that it is reachable.
        check: bool,
    },
    /// Drops bindings for which the condition is not true.
    Filter(Pred),
}

/// A MATCH.
#[derive(Debug, Clone)]
pub struct MatchPlan {
    /// The pattern variables.
    pub vars: Vec<PatternVar>,
    /// The steps, in order.
    pub steps: Vec<MatchStep>,
    /// Only this trace.
    pub scope: Option<String>,
    /// What is returned.
    pub projection: Projection,
}

/// A FIND.
#[derive(Debug, Clone)]
pub struct FindPlan {
    /// What is listed.
    pub kind: FindKind,
    /// Only this trace.
    pub scope: Option<String>,
    /// Conditions on `trace.` fields only, checked before a trace is read.
    pub trace_filter: Option<Pred>,
    /// The remaining conditions.
    pub filter: Option<Pred>,
    /// What is returned.
    pub projection: Projection,
}

impl FindPlan {
    /// Makes every output row keep, right after its visible columns, the
    /// keys of the failed case it came from: [`Field::Key`] of the trace
    /// (its dense id) and of the case (its annotation's position, or its
    /// judge op id). This is how an ATTRIBUTE learns which cases, in which
    /// traces, its `FIND cases` subquery (or a saved pattern's) returned;
    /// doing it twice changes nothing.
    ///
    /// Fails, saying why, when the rows are not one case each: a FIND of
    /// something else, or one that groups (GROUP BY, an aggregate) or merges
    /// rows (RETURN DISTINCT).
    pub fn keep_case_keys(&mut self) -> std::result::Result<(), String> {
        if self.kind != FindKind::Cases {
            let what = match self.kind {
                FindKind::Vars => "variables",
                FindKind::Ops => "ops",
                FindKind::Edges => "edges",
                FindKind::Sessions => "sessions",
                FindKind::Traces => "traces",
                FindKind::Attributions => "stored verdicts",
                FindKind::Cases => "cases",
            };
            return Err(format!(
                "FIND {} returns {what}, not failed cases",
                self.kind.keyword()
            ));
        }
        let p = &mut self.projection;
        if p.aggregating {
            return Err(
                "its rows are groups (GROUP BY, or an aggregate such as count(*)), \
                        not cases"
                    .to_string(),
            );
        }
        if p.distinct {
            return Err("RETURN DISTINCT merges its rows, so they are not cases".to_string());
        }
        if p.keys == 0 {
            let visible = p.columns.len();
            p.outputs
                .insert(visible, Pexpr::Field(Subject::Trace, Field::Key));
            p.outputs
                .insert(visible + 1, Pexpr::Field(Subject::Case, Field::Key));
            for (i, _) in &mut p.order {
                if *i >= visible {
                    *i += 2;
                }
            }
            p.keys = 2;
        }
        Ok(())
    }
}

/// DESCRIBE.
#[derive(Debug, Clone)]
pub struct DescribePlan {
    /// The variable or op.
    pub target: NodeRef,
    /// Only this trace.
    pub scope: Option<String>,
}

/// ATTRIBUTE: attribute failed cases, store the verdicts, return them.
#[derive(Debug, Clone)]
pub struct AttributePlan {
    /// Which cases.
    pub cases: CaseSource,
    /// Only this trace (never with a subquery, which picks its own traces).
    pub scope: Option<String>,
    /// The method's name as written; the engine checks that it has it.
    pub method: String,
    /// Byte offset of the method's name in the statement text.
    pub method_at: usize,
    /// The result columns.
    pub columns: Vec<String>,
}

/// Which failed cases an ATTRIBUTE attributes.
#[derive(Debug, Clone)]
pub enum CaseSource {
    /// `CASES`: every failed case of the scope.
    All,
    /// The cases named (parameters substituted), looked up in the scope.
    Named(Vec<NodeRef>),
    /// The cases a subquery returns, each attributed in its own trace.
    Query {
        /// A [`Plan::Find`] of cases whose rows keep their case keys
        /// ([`FindPlan::keep_case_keys`]), or a [`Plan::RunPattern`], which
        /// the engine resolves and checks (its hits must be cases).
        plan: Box<Plan>,
        /// Byte offset of the subquery in the statement text.
        at: usize,
    },
}

/// What an ATTRIBUTE's subquery may be, for the errors that refuse one.
pub const SUBQUERIES: &str = "write (FIND cases [IN TRACE 'id'] [WHERE ...] [ORDER BY ...] \
     [LIMIT n]), whose WHERE reads case. and trace. fields, or (RUN PATTERN name ...) with a \
     pattern whose hits are cases, such as stored_not_retrieved";

/// The columns ATTRIBUTE returns: one row per verdict.
pub fn attribute_columns() -> Vec<String> {
    [
        "trace",
        "case",
        "error_type",
        "op_id",
        "op_name",
        "confidence",
        "reason",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// An aggregate computed over each group.
#[derive(Debug, Clone)]
pub struct AggSpec {
    /// The function.
    pub func: AggFunc,
    /// `count(DISTINCT x)` and the like.
    pub distinct: bool,
    /// The argument; `None` for `count(*)`.
    pub arg: Option<Pexpr>,
    /// As written.
    pub text: String,
}

/// How rows become output: grouping, aggregates, columns, order, limit.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The visible column names.
    pub columns: Vec<String>,
    /// The output expressions: the visible columns, then hidden sort keys.
    /// When aggregating they read [`Pexpr::Group`] and [`Pexpr::Agg`].
    pub outputs: Vec<Pexpr>,
    /// Group keys, evaluated per input row (when aggregating).
    pub group_keys: Vec<Pexpr>,
    /// Aggregates (when aggregating).
    pub aggs: Vec<AggSpec>,
    /// Whether rows are grouped.
    pub aggregating: bool,
    /// `DISTINCT`.
    pub distinct: bool,
    /// Sort keys: output column index and descending.
    pub order: Vec<(usize, bool)>,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// Texts for EXPLAIN: group keys, outputs, order.
    pub texts: ProjectionTexts,
    /// How many outputs right after the visible columns every output row
    /// keeps: the trace and case keys of an ATTRIBUTE's `FIND cases`
    /// subquery ([`FindPlan::keep_case_keys`]); 0 for any other projection.
    pub keys: usize,
}

/// The written forms of a projection's parts, for EXPLAIN.
#[derive(Debug, Clone, Default)]
pub struct ProjectionTexts {
    /// GROUP BY keys.
    pub group: Vec<String>,
    /// ORDER BY keys with direction.
    pub order: Vec<String>,
}

/// Plans a statement, binding `params`.
pub fn plan(stmt: &Statement, params: &Params) -> Result<Plan> {
    plan_in(stmt, params, "")
}

/// Plans a statement parsed from `text` (for error positions), binding `params`.
pub fn plan_text(stmt: &Statement, params: &Params, text: &str) -> Result<Plan> {
    plan_in(stmt, params, text)
}

fn plan_in(stmt: &Statement, params: &Params, text: &str) -> Result<Plan> {
    let p = Planner {
        params,
        text,
        implicit_groups: std::cell::Cell::new(false),
    };
    match stmt {
        Statement::Traverse(t) => p.traverse(t).map(Plan::Traverse),
        Statement::Match(m) => p.match_plan(m).map(Plan::Match),
        Statement::Find(f) => p.find(f).map(Plan::Find),
        Statement::ShowTraces => Ok(Plan::ShowTraces),
        Statement::Describe(d) => Ok(Plan::Describe(DescribePlan {
            target: p.start(&d.target)?,
            scope: p.text_arg(&d.in_trace)?,
        })),
        Statement::Attribute(a) => p.attribute(a).map(Plan::Attribute),
        Statement::Explain(inner) => Ok(Plan::Explain(Box::new(plan_in(inner, params, text)?))),
        Statement::SavePattern(s) => p.save_pattern(s).map(Plan::SavePattern),
        Statement::RunPattern(r) => p.run_pattern(r).map(Plan::RunPattern),
        Statement::ShowPatterns => Ok(Plan::ShowPatterns),
        Statement::ShowPatternHistory(name) => Ok(Plan::ShowPatternHistory(name.clone())),
        Statement::DropPattern(name) => Ok(Plan::DropPattern(name.clone())),
    }
}

/// The parameters a statement reads (`$name` where a value is expected),
/// without the `$`, in the order they first appear, each once.
///
/// The names a `WITH` gives values to are not read: SAVE PATTERN reads the
/// parameters of its saved statement, RUN PATTERN those of its
/// `OVER TRACES WHERE` condition, EXPLAIN those of its statement.
pub fn statement_params(stmt: &Statement) -> Vec<String> {
    let mut out = Vec::new();
    statement_params_into(stmt, &mut out);
    out
}

fn add_param(out: &mut Vec<String>, name: &str) {
    if !out.iter().any(|n| n == name) {
        out.push(name.to_string());
    }
}

fn statement_params_into(stmt: &Statement, out: &mut Vec<String>) {
    let start = |s: &Start, out: &mut Vec<String>| {
        if let Start::Param(p) = s {
            add_param(out, p);
        }
    };
    let text_arg = |a: &Option<TextArg>, out: &mut Vec<String>| {
        if let Some(TextArg::Param(p)) = a {
            add_param(out, p);
        }
    };
    let count_arg = |a: &Option<CountArg>, out: &mut Vec<String>| {
        if let Some(CountArg::Param(p)) = a {
            add_param(out, p);
        }
    };
    let exprs = |items: &mut dyn Iterator<Item = &Expr>, out: &mut Vec<String>| {
        for e in items {
            expr_params_into(e, out);
        }
    };
    match stmt {
        Statement::Traverse(t) => {
            t.starts.iter().for_each(|s| start(s, out));
            text_arg(&t.in_trace, out);
            exprs(
                &mut [&t.until, &t.while_, &t.filter].into_iter().flatten(),
                out,
            );
            count_arg(&t.limit, out);
        }
        Statement::Match(m) => {
            for p in &m.patterns {
                exprs(&mut p.first.props.iter().map(|(_, v)| v), out);
                for (r, n) in &p.steps {
                    exprs(&mut r.props.iter().map(|(_, v)| v), out);
                    exprs(&mut n.props.iter().map(|(_, v)| v), out);
                }
            }
            text_arg(&m.in_trace, out);
            exprs(&mut m.filter.iter(), out);
            exprs(&mut m.returns.items.iter().map(|i| &i.expr), out);
            exprs(&mut m.order_by.iter().map(|o| &o.expr), out);
            count_arg(&m.limit, out);
        }
        Statement::Find(f) => {
            text_arg(&f.in_trace, out);
            exprs(&mut f.filter.iter(), out);
            exprs(&mut f.group_by.iter(), out);
            exprs(
                &mut f.returns.iter().flat_map(|r| &r.items).map(|i| &i.expr),
                out,
            );
            exprs(&mut f.order_by.iter().map(|o| &o.expr), out);
            count_arg(&f.limit, out);
        }
        Statement::Describe(d) => {
            start(&d.target, out);
            text_arg(&d.in_trace, out);
        }
        Statement::Attribute(a) => {
            match &a.target {
                AttributeTarget::Cases => {}
                AttributeTarget::Starts(starts) => starts.iter().for_each(|s| start(s, out)),
                AttributeTarget::Query(q) => match &q.query {
                    CaseQuery::Find(f) => statement_params_into(&Statement::Find(f.clone()), out),
                    CaseQuery::RunPattern(r) => exprs(&mut r.over.iter(), out),
                },
            }
            text_arg(&a.in_trace, out);
        }
        Statement::Explain(inner) => statement_params_into(inner, out),
        Statement::SavePattern(s) => statement_params_into(&s.body, out),
        Statement::RunPattern(r) => exprs(&mut r.over.iter(), out),
        Statement::ShowTraces
        | Statement::ShowPatterns
        | Statement::ShowPatternHistory(_)
        | Statement::DropPattern(_) => {}
    }
}

fn expr_params_into(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Param(p) => add_param(out, p),
        Expr::Lit(_) | Expr::Field(_) => {}
        Expr::List(items) | Expr::And(items) | Expr::Or(items) => {
            items.iter().for_each(|x| expr_params_into(x, out))
        }
        Expr::Call { arg, .. } => {
            if let CallArg::Expr { expr, .. } = arg {
                expr_params_into(expr, out);
            }
        }
        Expr::Test(left, test) => {
            expr_params_into(left, out);
            match test {
                Test::Cmp(_, r)
                | Test::Contains(r)
                | Test::StartsWith(r)
                | Test::Regex(r)
                | Test::In { list: r, .. } => expr_params_into(r, out),
                Test::IsNull { .. } => {}
            }
        }
        Expr::Not(x) => expr_params_into(x, out),
    }
}

/// The columns a traversal returns.
pub fn traverse_columns(output: Output) -> Vec<String> {
    let cols: &[&str] = match output {
        Output::Nodes => &["trace", "node", "category", "depth", "via_op"],
        Output::Ops => &["trace", "op_id", "op_name", "kind", "depth"],
        Output::Edges => &["trace", "edge_id", "source", "target", "op_id", "category"],
        Output::Subgraph => &["trace", "element", "id", "source", "target", "op_id"],
        Output::Paths => &["trace", "node", "depth", "path"],
        Output::Count => &["trace", "count"],
    };
    cols.iter().map(|s| s.to_string()).collect()
}

/// Which subjects a context allows, and the MATCH variables in scope.
struct Scope<'a> {
    subjects: &'a [Subject],
    vars: &'a [PatternVar],
    /// Where aggregates are allowed (RETURN, ORDER BY of a FIND/MATCH).
    aggregates: bool,
    /// The subject whose fields may be written bare (`error_type` for
    /// `attribution.error_type`), in a FIND of its records.
    bare: Option<Subject>,
}

struct Planner<'a> {
    params: &'a Params,
    text: &'a str,
    /// The projection being planned groups by its RETURN items without an
    /// aggregate (no GROUP BY), which error messages then name.
    implicit_groups: std::cell::Cell<bool>,
}

impl Planner<'_> {
    fn err(&self, pos: Pos, message: String) -> QueryError {
        if self.text.is_empty() {
            QueryError::Other(message)
        } else {
            QueryError::at(self.text, pos.0, message)
        }
    }

    /// An error placed where `pattern` (a regular expression) first matches
    /// the text, at its first group when it has one: for parts of a statement
    /// the tree keeps no position of (parameters, pattern variables,
    /// properties). Without a match, an error without position.
    fn err_near(&self, pattern: &str, message: String) -> QueryError {
        let found = regex::Regex::new(pattern).ok().and_then(|re| {
            re.captures(self.text)
                .and_then(|c| c.get(1).or_else(|| c.get(0)))
                .map(|m| m.start())
        });
        match found {
            Some(at) => QueryError::at(self.text, at, message),
            None => QueryError::Other(message),
        }
    }

    /// An error about parameter `$name`, placed at its first use.
    fn param_err(&self, name: &str, message: String) -> QueryError {
        self.err_near(&format!(r"\${}\b", regex::escape(name)), message)
    }

    fn param(&self, name: &str) -> Result<&Value> {
        self.params.get(name).ok_or_else(|| {
            self.param_err(
                name,
                format!("parameter ${name} is not set (give it a value, e.g. --param {name}=...)"),
            )
        })
    }

    fn text_arg(&self, a: &Option<TextArg>) -> Result<Option<String>> {
        match a {
            None => Ok(None),
            Some(TextArg::Text(s)) => Ok(Some(s.clone())),
            Some(TextArg::Param(p)) => match self.param(p)? {
                Value::Str(s) => Ok(Some(s.clone())),
                other => Err(self.param_err(
                    p,
                    format!("parameter ${p} must be text (a trace id), not {other}"),
                )),
            },
        }
    }

    fn count_arg(&self, a: &Option<CountArg>) -> Result<Option<u64>> {
        match a {
            None => Ok(None),
            Some(CountArg::Value(n)) => Ok(Some(*n)),
            Some(CountArg::Param(p)) => match self.param(p)? {
                Value::Int(n) if *n >= 0 => Ok(Some(*n as u64)),
                other => Err(self.param_err(
                    p,
                    format!(
                        "parameter ${p} must be a count (a whole number, 0 or more), not {other}"
                    ),
                )),
            },
        }
    }

    fn start(&self, s: &Start) -> Result<NodeRef> {
        match s {
            Start::Ref(r) => Ok(r.clone()),
            Start::Param(p) => match self.param(p)? {
                Value::Str(s) => parse_node_ref(s).or_else(|_| Ok(NodeRef::Quoted(s.clone()))),
                other => Err(self.param_err(
                    p,
                    format!("parameter ${p} must be text naming a variable or op, not {other}"),
                )),
            },
        }
    }

    fn pred(&self, e: &Expr, scope: &Scope<'_>) -> Result<Pred> {
        let mut aggs = Vec::new();
        let expr = self.compile(e, scope, &mut aggs, &[])?;
        Ok(Pred {
            expr,
            text: e.to_string(),
        })
    }

    fn traverse(&self, t: &Traverse) -> Result<TraversePlan> {
        let scope = Scope {
            subjects: &[
                Subject::Var,
                Subject::Op,
                Subject::Edge,
                Subject::Session,
                Subject::Trace,
            ],
            vars: &[],
            aggregates: false,
            bare: None,
        };
        let pred = |e: &Option<Expr>| e.as_ref().map(|e| self.pred(e, &scope)).transpose();
        let (min_depth, max_depth) = match t.depth {
            None => (1, None),
            Some(Depth::Max(n)) => (1, Some(n)),
            Some(Depth::Range(m, n)) => (m.max(1), Some(n)),
        };
        let output = t.output.unwrap_or(Output::Nodes);
        Ok(TraversePlan {
            direction: t.direction,
            starts: t
                .starts
                .iter()
                .map(|s| self.start(s))
                .collect::<Result<_>>()?,
            scope: self.text_arg(&t.in_trace)?,
            min_depth,
            max_depth,
            until: pred(&t.until)?,
            while_: pred(&t.while_)?,
            filter: pred(&t.filter)?,
            output,
            limit: self.count_arg(&t.limit)?,
            columns: traverse_columns(output),
        })
    }

    // ------------------------------------------------------------- ATTRIBUTE

    fn attribute(&self, a: &Attribute) -> Result<AttributePlan> {
        let cases = match &a.target {
            AttributeTarget::Cases => CaseSource::All,
            AttributeTarget::Starts(starts) => CaseSource::Named(
                starts
                    .iter()
                    .map(|s| self.start(s))
                    .collect::<Result<_>>()?,
            ),
            AttributeTarget::Query(q) => {
                let plan = match &q.query {
                    CaseQuery::Find(f) => {
                        let mut find = self.find(f)?;
                        find.keep_case_keys().map_err(|why| {
                            self.err(
                                q.pos,
                                format!(
                                    "{why}; ATTRIBUTE needs one failed case per row: {SUBQUERIES}"
                                ),
                            )
                        })?;
                        Plan::Find(find)
                    }
                    CaseQuery::RunPattern(r) => Plan::RunPattern(self.run_pattern(r)?),
                };
                CaseSource::Query {
                    plan: Box::new(plan),
                    at: q.pos.0,
                }
            }
        };
        Ok(AttributePlan {
            cases,
            scope: self.text_arg(&a.in_trace)?,
            method: a.method.clone(),
            method_at: a.method_pos.0,
            columns: attribute_columns(),
        })
    }

    // -------------------------------------------------------------- patterns

    /// An error if `params` (of one WITH) names a parameter twice.
    fn unique_params(&self, params: &[(String, Value)]) -> Result<()> {
        for (i, (name, _)) in params.iter().enumerate() {
            if params[..i].iter().any(|(n, _)| n == name) {
                return Err(self.param_err(
                    name,
                    format!("parameter ${name} is given twice; give each parameter one value"),
                ));
            }
        }
        Ok(())
    }

    fn save_pattern(&self, s: &SavePattern) -> Result<SavePatternPlan> {
        let name = &s.name;
        let in_trace = match s.body.as_ref() {
            Statement::Traverse(t) => &t.in_trace,
            Statement::Match(m) => &m.in_trace,
            Statement::Find(f) => &f.in_trace,
            other => {
                let what = other.to_string();
                let what = what.split_whitespace().next().unwrap_or("");
                return Err(self.err(
                    Pos(0),
                    format!(
                        "a pattern saves a TRACE, FORWARD, MATCH or FIND statement, not {what}"
                    ),
                ));
            }
        };
        if in_trace.is_some() {
            // The first IN TRACE outside quotes.
            return Err(self.err_near(
                r"(?is)^(?:[^']|'(?:[^']|'')*')*?\b(IN\s+TRACE)\b",
                format!(
                    "a pattern runs over every trace; drop IN TRACE and use \
                     RUN PATTERN {name} OVER TRACES WHERE trace.id = '...'"
                ),
            ));
        }
        self.unique_params(&s.params)?;
        let used = statement_params(&s.body);
        let missing: Vec<&String> = used
            .iter()
            .filter(|u| !s.params.iter().any(|(n, _)| n == *u))
            .collect();
        if let Some(first) = missing.first() {
            let names: Vec<String> = missing.iter().map(|m| format!("${m}")).collect();
            let fix: Vec<String> = names.iter().map(|n| format!("{n} = ...")).collect();
            let message = if missing.len() == 1 {
                format!("pattern parameter {} has no default", names[0])
            } else {
                format!("pattern parameters {} have no default", list_and(&names))
            };
            return Err(self.param_err(
                first,
                format!(
                    "{message}: write SAVE PATTERN {name} WITH {} AS ...",
                    fix.join(", ")
                ),
            ));
        }
        if let Some((unused, _)) = s.params.iter().find(|(n, _)| !used.contains(n)) {
            return Err(self.param_err(
                unused,
                format!(
                    "parameter ${unused} is not used by the pattern: drop it from WITH, \
                     or use it in the saved statement"
                ),
            ));
        }
        let defaults: Params = s.params.iter().cloned().collect();
        let body = plan_in(&s.body, &defaults, self.text)?;
        Ok(SavePatternPlan {
            name: name.clone(),
            params: s.params.clone(),
            text: s.body.to_string(),
            body: Box::new(body),
        })
    }

    fn run_pattern(&self, r: &RunPattern) -> Result<RunPatternPlan> {
        self.unique_params(&r.params)?;
        let over = match &r.over {
            None => None,
            Some(e) => {
                // Which traces a pattern runs over is a question about traces alone.
                let mut other = None;
                visit_fields(e, &mut |p| {
                    if other.is_none() && p.parts.first().map(String::as_str) != Some("trace") {
                        other = Some(p.clone());
                    }
                });
                if let Some(p) = other {
                    return Err(self.err(
                        p.pos,
                        format!(
                            "only trace fields (such as trace.id or trace.source) are allowed \
                             after OVER TRACES WHERE, not {p}"
                        ),
                    ));
                }
                let scope = Scope {
                    subjects: &[Subject::Trace],
                    vars: &[],
                    aggregates: false,
                    bare: None,
                };
                Some(self.pred(e, &scope)?)
            }
        };
        Ok(RunPatternPlan {
            name: r.name.clone(),
            over,
            params: r.params.clone(),
            body: None,
            columns: Vec::new(),
        })
    }

    // ---------------------------------------------------------------- fields

    fn field(&self, path: &FieldPath, scope: &Scope<'_>) -> Result<Pexpr> {
        let head = &path.parts[0];
        let rest = &path.parts[1..];
        // A MATCH variable?
        if let Some(i) = scope.vars.iter().position(|v| &v.name == head) {
            let subject = Subject::Bound(i);
            let table = match scope.vars[i].kind {
                VarKind::Node => fields_of(Subject::Var),
                VarKind::Edge => fields_of(Subject::Edge),
            };
            if rest.is_empty() {
                // The node (its full node id) or the edge (its id).
                let f = match scope.vars[i].kind {
                    VarKind::Node => Field::NodeId,
                    VarKind::Edge => Field::Id,
                };
                return Ok(Pexpr::Field(subject, f));
            }
            return self.field_in(path, head, subject, table, rest);
        }
        // A field of the listed records, written bare.
        if let (Some(b), true) = (scope.bare, rest.is_empty()) {
            if let Some((_, f)) = fields_of(b).iter().find(|(n, _)| n == head) {
                return Ok(Pexpr::Field(b, f.clone()));
            }
        }
        let subject = match subject_named(head) {
            Some(s) => s,
            None => {
                let mut known: Vec<&str> = scope.vars.iter().map(|v| v.name.as_str()).collect();
                known.extend(scope.subjects.iter().map(|s| subject_name(*s)));
                let bare: Vec<&str> = scope
                    .bare
                    .map(|b| fields_of(b).iter().map(|(n, _)| *n).collect())
                    .unwrap_or_default();
                let hint = nearest(head, known.iter().chain(&bare).copied())
                    .map(|k| format!(" (did you mean {k}?)"))
                    .unwrap_or_default();
                let what = if !scope.vars.is_empty() {
                    format!("in scope: {}", list_or(&known))
                } else if let Some(b) = scope.bare {
                    format!(
                        "fields start with {}, or are {} fields written bare: {}",
                        list_or(&known),
                        subject_name(b),
                        bare.join(", ")
                    )
                } else {
                    format!("fields start with {}", list_or(&known))
                };
                return Err(self.err(path.pos, format!("unknown name {head}{hint}; {what}")));
            }
        };
        if !scope.subjects.contains(&subject) {
            let allowed: Vec<&str> = scope.subjects.iter().map(|s| subject_name(*s)).collect();
            return Err(self.err(
                path.pos,
                format!(
                    "{head}. fields are not available here; this statement has {}",
                    list_or(&allowed)
                ),
            ));
        }
        if rest.is_empty() {
            return Err(self.err(
                path.pos,
                format!(
                    "{head} needs a field, such as {head}.{}",
                    fields_of(subject)[0].0
                ),
            ));
        }
        self.field_in(path, head, subject, fields_of(subject), rest)
    }

    fn field_in(
        &self,
        path: &FieldPath,
        head: &str,
        subject: Subject,
        table: &[(&'static str, Field)],
        rest: &[String],
    ) -> Result<Pexpr> {
        let name = &rest[0];
        // Verdicts have no metadata; every other record has.
        let has_meta = subject != Subject::Attribution;
        let is_meta = has_meta && (name == "meta" || name == "metadata");
        if is_meta && subject != Subject::Case {
            if rest.len() < 2 {
                return Err(self.err(
                    path.pos,
                    format!("{head}.{name} needs a key, such as {head}.meta.evidence"),
                ));
            }
            return Ok(Pexpr::Field(subject, Field::Meta(rest[1..].to_vec())));
        }
        if let Some((_, f)) = table.iter().find(|(n, _)| n == name) {
            if rest.len() > 1 {
                return Err(self.err(
                    path.pos,
                    format!("{head}.{name} has no parts; only meta.<key> paths go deeper"),
                ));
            }
            return Ok(Pexpr::Field(subject, f.clone()));
        }
        if subject == Subject::Case {
            // A case is its annotation object: any other key reads it.
            return Ok(Pexpr::Field(subject, Field::Meta(rest.to_vec())));
        }
        let mut names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        if has_meta {
            names.push("meta");
        }
        let hint = nearest(name, names.iter().copied())
            .map(|k| format!(" (did you mean {head}.{k}?)"))
            .unwrap_or_default();
        Err(self.err(
            path.pos,
            format!(
                "unknown field {head}.{name}{hint}; {head} has {}",
                names.join(", ")
            ),
        ))
    }

    // ----------------------------------------------------------- expressions

    /// Compiles an expression. Aggregate calls are appended to `aggs` and
    /// replaced by [`Pexpr::Agg`]; subexpressions equal to a `group` key
    /// become [`Pexpr::Group`].
    fn compile(
        &self,
        e: &Expr,
        scope: &Scope<'_>,
        aggs: &mut Vec<AggSpec>,
        group: &[String],
    ) -> Result<Pexpr> {
        if !group.is_empty() {
            let text = e.to_string();
            if let Some(i) = group.iter().position(|g| *g == text) {
                return Ok(Pexpr::Group(i));
            }
        }
        let c = |x: &Expr, aggs: &mut Vec<AggSpec>| self.compile(x, scope, aggs, group);
        Ok(match e {
            Expr::Lit(l) => Pexpr::Const(literal_value(l)),
            Expr::Param(p) => Pexpr::Const(self.param(p)?.clone()),
            Expr::Field(path) => {
                let f = self.field(path, scope)?;
                if !group.is_empty() {
                    let message = if self.implicit_groups.get() {
                        format!("{path} must be a group key (RETURN it without an aggregate, or GROUP BY it) or inside an aggregate such as count({path})")
                    } else {
                        format!("{path} must be in GROUP BY or inside an aggregate such as count({path})")
                    };
                    return Err(self.err(path.pos, message));
                }
                f
            }
            Expr::List(items) => Pexpr::List(
                items
                    .iter()
                    .map(|x| c(x, aggs))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Expr::Call { name, arg, pos } => {
                let lname = name.to_ascii_lowercase();
                if let Some(func) = AggFunc::from_name(&lname) {
                    if !scope.aggregates {
                        return Err(self.err(
                            *pos,
                            format!("{name}() is an aggregate; it may appear only in RETURN and ORDER BY of MATCH and FIND"),
                        ));
                    }
                    let (distinct, arg) = match arg {
                        CallArg::Star if func == AggFunc::Count => (false, None),
                        CallArg::Star => {
                            return Err(self
                                .err(*pos, format!("{name}(*) is not defined; only count(*) is")))
                        }
                        CallArg::None => {
                            return Err(self.err(*pos, format!("{name}() needs an argument")))
                        }
                        CallArg::Expr { distinct, expr } => {
                            // The argument is read per input row: no grouping, no nested aggregates.
                            let inner_scope = Scope {
                                aggregates: false,
                                ..*scope
                            };
                            let mut none = Vec::new();
                            let a = self.compile(expr, &inner_scope, &mut none, &[])?;
                            (*distinct, Some(a))
                        }
                    };
                    let text = e.to_string();
                    let i = match aggs.iter().position(|a| a.text == text) {
                        Some(i) => i,
                        None => {
                            aggs.push(AggSpec {
                                func,
                                distinct,
                                arg,
                                text,
                            });
                            aggs.len() - 1
                        }
                    };
                    Pexpr::Agg(i)
                } else if let Some(func) = Func::from_name(&lname) {
                    match arg {
                        CallArg::Expr {
                            distinct: false,
                            expr,
                        } => Pexpr::Func(func, Box::new(c(expr, aggs)?)),
                        _ => {
                            return Err(self.err(
                                *pos,
                                format!("{name}() takes one argument, without DISTINCT"),
                            ))
                        }
                    }
                } else {
                    let all = Func::NAMES.iter().chain(AggFunc::NAMES.iter()).copied();
                    let hint = nearest(&lname, all)
                        .map(|k| format!(" (did you mean {k}?)"))
                        .unwrap_or_default();
                    return Err(self.err(
                        *pos,
                        format!(
                            "unknown function {name}(){hint}; functions are {}, {}",
                            AggFunc::NAMES.join(", "),
                            Func::NAMES.join(", ")
                        ),
                    ));
                }
            }
            Expr::Test(left, test) => {
                let l = Box::new(c(left, aggs)?);
                match test {
                    Test::Cmp(op, r) => Pexpr::Cmp(*op, l, Box::new(c(r, aggs)?)),
                    Test::Contains(r) => Pexpr::Contains(l, Box::new(c(r, aggs)?)),
                    Test::StartsWith(r) => Pexpr::StartsWith(l, Box::new(c(r, aggs)?)),
                    Test::Regex(r) => {
                        let pattern = c(r, aggs)?;
                        // Where the pattern is written: its parameter, else its
                        // literal after the left operand, else the operator.
                        let at = |what: &str| {
                            let from = expr_pos(left).0.min(self.text.len());
                            let rest = self.text.get(from..).unwrap_or("");
                            let found = match r.as_ref() {
                                Expr::Lit(Literal::Str(s)) => {
                                    rest.find(&crate::node_ref::quote(s)).map(|i| from + i)
                                }
                                _ => None,
                            }
                            .or_else(|| rest.find("=~").map(|i| from + i));
                            match (r.as_ref(), found) {
                                (Expr::Param(p), _) => self.param_err(p, what.to_string()),
                                (_, Some(i)) => self.err(Pos(i), what.to_string()),
                                _ => self.err(expr_pos(left), what.to_string()),
                            }
                        };
                        match &pattern {
                            Pexpr::Const(Value::Str(s)) => {
                                let re = regex::Regex::new(s).map_err(|e| {
                                    at(&format!(
                                        "bad regular expression {}: {}",
                                        crate::node_ref::quote(s),
                                        crate::eval::regex_reason(&e)
                                    ))
                                })?;
                                Pexpr::RegexConst(l, Box::new(re))
                            }
                            Pexpr::Const(Value::Null) => Pexpr::Regex(l, Box::new(pattern)),
                            Pexpr::Const(other) => {
                                return Err(at(&format!(
                                    "=~ needs a text pattern, not {}",
                                    crate::eval::shown(other)
                                )))
                            }
                            _ => Pexpr::Regex(l, Box::new(pattern)),
                        }
                    }
                    Test::In { negated, list } => {
                        let items = c(list, aggs)?;
                        if let Pexpr::Const(v) = &items {
                            if !matches!(v, Value::List(_) | Value::Null) {
                                let what = format!(
                                    "IN needs a list, such as ['a', 'b'], not {}",
                                    crate::eval::shown(v)
                                );
                                return Err(match list.as_ref() {
                                    Expr::Param(p) => self.param_err(p, what),
                                    _ => self.err(expr_pos(left), what),
                                });
                            }
                        }
                        Pexpr::In(l, Box::new(items), *negated)
                    }
                    Test::IsNull { negated } => Pexpr::IsNull(l, *negated),
                }
            }
            Expr::Not(x) => Pexpr::Not(Box::new(c(x, aggs)?)),
            Expr::And(items) => Pexpr::And(
                items
                    .iter()
                    .map(|x| c(x, aggs))
                    .collect::<Result<Vec<_>>>()?,
            ),
            Expr::Or(items) => Pexpr::Or(
                items
                    .iter()
                    .map(|x| c(x, aggs))
                    .collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    // ------------------------------------------------------------ projection

    #[allow(clippy::too_many_arguments)]
    fn projection(
        &self,
        returns: &Returns,
        group_by: &[Expr],
        order_by: &[OrderItem],
        limit: &Option<CountArg>,
        scope: &Scope<'_>,
        lead: Option<(&str, Pexpr)>,
    ) -> Result<Projection> {
        let has_agg = returns.items.iter().any(|i| contains_agg(&i.expr))
            || order_by.iter().any(|o| contains_agg(&o.expr));
        let aggregating = has_agg || !group_by.is_empty();
        self.implicit_groups.set(group_by.is_empty());
        let mut columns = Vec::new();
        let mut outputs = Vec::new();
        let mut aggs = Vec::new();
        let mut group_keys = Vec::new();
        let mut group_texts: Vec<String> = Vec::new();
        if aggregating {
            // Keys: GROUP BY, or (Cypher style) every RETURN item without an aggregate.
            let keys: Vec<&Expr> = if group_by.is_empty() {
                returns
                    .items
                    .iter()
                    .filter(|i| !contains_agg(&i.expr))
                    .map(|i| &i.expr)
                    .collect()
            } else {
                group_by.iter().collect()
            };
            let key_scope = Scope {
                aggregates: false,
                ..*scope
            };
            for k in keys {
                group_keys.push(self.compile(k, &key_scope, &mut Vec::new(), &[])?);
                group_texts.push(k.to_string());
            }
        } else if let Some((name, expr)) = lead {
            columns.push(name.to_string());
            outputs.push(expr);
        }
        for item in &returns.items {
            columns.push(item.alias.clone().unwrap_or_else(|| item.expr.to_string()));
            outputs.push(if aggregating {
                self.compile(&item.expr, scope, &mut aggs, &group_texts)?
            } else {
                self.compile(&item.expr, scope, &mut aggs, &[])?
            });
        }
        let visible = columns.len();
        let mut order = Vec::new();
        let mut order_texts = Vec::new();
        for o in order_by {
            let text = o.expr.to_string();
            let desc = o.dir == SortDir::Desc;
            order_texts.push(format!("{text}{}", if desc { " DESC" } else { "" }));
            // A one-part name is also looked up as written: printing quotes a
            // name spelled like a keyword (an alias `traces`, `cases`).
            let bare = match &o.expr {
                Expr::Field(f) if f.parts.len() == 1 => Some(f.parts[0].as_str()),
                _ => None,
            };
            let found = columns
                .iter()
                .position(|c| *c == text || Some(c.as_str()) == bare)
                .or_else(|| {
                    returns
                        .items
                        .iter()
                        .position(|i| i.expr.to_string() == text)
                        .map(|i| i + visible - returns.items.len())
                });
            if let Some(i) = found {
                order.push((i, desc));
                continue;
            }
            if returns.distinct {
                return Err(self.err(
                    expr_pos(&o.expr),
                    format!("with DISTINCT, ORDER BY may use only returned columns, and {text} is not one"),
                ));
            }
            let e = if aggregating {
                self.compile(&o.expr, scope, &mut aggs, &group_texts)?
            } else {
                self.compile(&o.expr, scope, &mut aggs, &[])?
            };
            outputs.push(e);
            order.push((outputs.len() - 1, desc));
        }
        Ok(Projection {
            columns,
            outputs,
            group_keys,
            aggs,
            aggregating,
            distinct: returns.distinct,
            order,
            limit: self.count_arg(limit)?,
            texts: ProjectionTexts {
                group: group_texts,
                order: order_texts,
            },
            keys: 0,
        })
    }

    // ------------------------------------------------------------------ FIND

    fn find(&self, f: &Find) -> Result<FindPlan> {
        use Subject::*;
        let subjects: &[Subject] = match f.kind {
            FindKind::Vars => &[Var, Session, Trace],
            FindKind::Ops => &[Op, Session, Trace],
            FindKind::Edges => &[Edge, Op, Source, Target, Session, Trace],
            FindKind::Sessions => &[Session, Trace],
            FindKind::Traces => &[Trace],
            FindKind::Cases => &[Case, Trace],
            FindKind::Attributions => &[Attribution, Trace],
        };
        let scope = Scope {
            subjects,
            vars: &[],
            aggregates: true,
            bare: (f.kind == FindKind::Attributions).then_some(Attribution),
        };
        let filter_scope = Scope {
            aggregates: false,
            ..scope
        };
        // Conditions on the trace alone are checked before the trace is read.
        let (trace_only, rest): (Vec<Expr>, Vec<Expr>) = match &f.filter {
            None => (Vec::new(), Vec::new()),
            Some(e) => conjuncts(e)
                .into_iter()
                .partition(|c| only_subject(c, "trace") && f.kind != FindKind::Traces),
        };
        let join = |v: Vec<Expr>| match v.len() {
            0 => None,
            1 => v.into_iter().next(),
            _ => Some(Expr::And(v)),
        };
        let trace_filter = join(trace_only)
            .map(|e| self.pred(&e, &filter_scope))
            .transpose()?;
        let filter = join(rest)
            .map(|e| self.pred(&e, &filter_scope))
            .transpose()?;
        let returns = match &f.returns {
            Some(r) => r.clone(),
            None => default_returns(f.kind, &f.group_by),
        };
        let projection =
            self.projection(&returns, &f.group_by, &f.order_by, &f.limit, &scope, None)?;
        Ok(FindPlan {
            kind: f.kind,
            scope: self.text_arg(&f.in_trace)?,
            trace_filter,
            filter,
            projection,
        })
    }

    // ----------------------------------------------------------------- MATCH

    fn match_plan(&self, m: &Match) -> Result<MatchPlan> {
        // Collect variables: nodes by name (shared across patterns), edges.
        let mut vars: Vec<PatternVar> = Vec::new();
        let mut anon = 0;
        let mut node_var = |vars: &mut Vec<PatternVar>, n: &NodePattern| -> Result<usize> {
            match &n.var {
                Some(name) => {
                    if let Some(i) = vars.iter().position(|v| &v.name == name) {
                        if vars[i].kind != VarKind::Node {
                            return Err(self.err_near(
                                &format!(r"\(\s*({})\b", regex::escape(name)),
                                format!("{name} names a relationship and a node"),
                            ));
                        }
                        Ok(i)
                    } else {
                        vars.push(PatternVar {
                            name: name.clone(),
                            kind: VarKind::Node,
                        });
                        Ok(vars.len() - 1)
                    }
                }
                None => {
                    anon += 1;
                    vars.push(PatternVar {
                        name: format!("_{anon}"),
                        kind: VarKind::Node,
                    });
                    Ok(vars.len() - 1)
                }
            }
        };
        // Per pattern: node indices and rel indices.
        struct Chain<'p> {
            nodes: Vec<(usize, &'p NodePattern)>,
            rels: Vec<(Option<usize>, &'p RelPattern)>,
        }
        let mut chains = Vec::new();
        for p in &m.patterns {
            let mut nodes = vec![(node_var(&mut vars, &p.first)?, &p.first)];
            let mut rels = Vec::new();
            for (r, n) in &p.steps {
                let rel = match &r.var {
                    Some(name) => {
                        let at = format!(r"\[\s*({})\b", regex::escape(name));
                        if vars.iter().any(|v| &v.name == name) {
                            return Err(self.err_near(
                                &at,
                                format!(
                                    "{name} is bound twice; a relationship variable names one edge"
                                ),
                            ));
                        }
                        if r.hops.is_some() {
                            return Err(self.err_near(
                                &at,
                                format!("{name} names a variable-length relationship; only single hops can be named"),
                            ));
                        }
                        vars.push(PatternVar {
                            name: name.clone(),
                            kind: VarKind::Edge,
                        });
                        Some(vars.len() - 1)
                    }
                    None => None,
                };
                rels.push((rel, r));
                nodes.push((node_var(&mut vars, n)?, n));
            }
            chains.push(Chain { nodes, rels });
        }
        let scope = Scope {
            subjects: &[Subject::Trace],
            vars: &vars,
            aggregates: true,
            bare: None,
        };
        let filter_scope = Scope {
            aggregates: false,
            ..scope
        };
        // Constraints from labels and properties.
        let node_constraints = |n: &NodePattern| -> Result<Vec<Constraint>> {
            let mut out = Vec::new();
            if let Some(l) = &n.label {
                out.push(Constraint {
                    field: Field::Class,
                    value: Value::Str(l.clone()),
                });
            }
            for (k, v) in &n.props {
                out.push(Constraint {
                    field: self.prop_field(k, fields_of(Subject::Var), "node")?,
                    value: self.prop_value(v)?,
                });
            }
            Ok(out)
        };
        let edge_constraints = |r: &RelPattern| -> Result<Vec<Constraint>> {
            let mut out = Vec::new();
            if let Some(l) = &r.label {
                out.push(Constraint {
                    field: Field::Kind,
                    value: Value::Str(l.clone()),
                });
            }
            for (k, v) in &r.props {
                out.push(Constraint {
                    field: self.prop_field(k, fields_of(Subject::Edge), "relationship")?,
                    value: self.prop_value(v)?,
                });
            }
            Ok(out)
        };
        // Pushed-down conditions: each WHERE conjunct runs once its variables are bound.
        let mut pending: Vec<(Vec<usize>, Pred)> = Vec::new();
        if let Some(w) = &m.filter {
            for c in conjuncts(w) {
                let used = vars_used(&c, &vars);
                pending.push((used, self.pred(&c, &filter_scope)?));
            }
        }
        let mut bound = vec![false; vars.len()];
        let mut steps = Vec::new();
        let flush =
            |bound: &[bool], steps: &mut Vec<MatchStep>, pending: &mut Vec<(Vec<usize>, Pred)>| {
                let mut i = 0;
                while i < pending.len() {
                    if pending[i].0.iter().all(|v| bound[*v]) {
                        let (_, p) = pending.remove(i);
                        steps.push(MatchStep::Filter(p));
                    } else {
                        i += 1;
                    }
                }
            };
        flush(&bound, &mut steps, &mut pending);
        for chain in &chains {
            // Anchor: a node already bound, else the most constrained node.
            let anchor = chain
                .nodes
                .iter()
                .position(|(v, _)| bound[*v])
                .unwrap_or_else(|| {
                    let mut best = 0;
                    let mut best_score = -1i64;
                    for (i, (_, n)) in chain.nodes.iter().enumerate() {
                        let score = n.props.len() as i64 * 2 + i64::from(n.label.is_some()) * 3;
                        if score > best_score {
                            best = i;
                            best_score = score;
                        }
                    }
                    best
                });
            let (av, an) = chain.nodes[anchor];
            if !bound[av] {
                steps.push(MatchStep::Scan {
                    var: av,
                    constraints: node_constraints(an)?,
                });
                bound[av] = true;
                flush(&bound, &mut steps, &mut pending);
            } else if !an.props.is_empty() || an.label.is_some() {
                // Re-used variable with more constraints: check them as a filter.
                let text = an.to_string();
                steps.push(MatchStep::Filter(Pred {
                    expr: constraints_expr(av, node_constraints(an)?),
                    text,
                }));
            }
            // Expand rightwards from the anchor, then leftwards.
            let order: Vec<(usize, usize, usize, bool)> = (anchor..chain.rels.len())
                .map(|r| (r, r, r + 1, true))
                .chain((0..anchor).rev().map(|r| (r, r + 1, r, false)))
                .collect();
            for (ri, from_i, to_i, rightwards) in order {
                let (rel_var, rel) = chain.rels[ri];
                let (from, _) = chain.nodes[from_i];
                let (to, to_pat) = chain.nodes[to_i];
                // Written `(a)-[]->(b)`: edges from a to b. Walking the chain
                // rightwards over `->` follows edges forward.
                let forward = rightwards != rel.leftward;
                let (min_hops, max_hops) = match rel.hops {
                    None => (1, Some(1)),
                    Some(Hops::Exact(n)) => (n, Some(n)),
                    Some(Hops::Range(a, b)) => (a.unwrap_or(1), b),
                };
                let check = bound[to];
                steps.push(MatchStep::Expand {
                    from,
                    to,
                    rel: rel_var,
                    direction: if forward {
                        Direction::Forward
                    } else {
                        Direction::Backward
                    },
                    edge_constraints: edge_constraints(rel)?,
                    min_hops,
                    max_hops,
                    constraints: node_constraints(to_pat)?,
                    check,
                });
                bound[to] = true;
                if let Some(r) = rel_var {
                    bound[r] = true;
                }
                flush(&bound, &mut steps, &mut pending);
            }
        }
        if let Some((_, p)) = pending.into_iter().next() {
            return Err(QueryError::Other(format!(
                "WHERE {} uses a variable no pattern binds",
                p.text
            )));
        }
        let lead = if m.returns.items.iter().any(|i| contains_agg(&i.expr)) {
            None
        } else {
            Some(("trace", Pexpr::Field(Subject::Trace, Field::Id)))
        };
        let projection = self.projection(&m.returns, &[], &m.order_by, &m.limit, &scope, lead)?;
        Ok(MatchPlan {
            vars,
            steps,
            scope: self.text_arg(&m.in_trace)?,
            projection,
        })
    }

    fn prop_field(&self, key: &str, table: &[(&str, Field)], what: &str) -> Result<Field> {
        table
            .iter()
            .find(|(n, _)| *n == key)
            .map(|(_, f)| f.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                let hint = nearest(key, names.iter().copied())
                    .map(|k| format!(" (did you mean {k}?)"))
                    .unwrap_or_default();
                self.err_near(
                    &format!(r"[{{,]\s*({})\s*:", regex::escape(key)),
                    format!(
                        "unknown {what} property {key}{hint}; properties are {}",
                        names.join(", ")
                    ),
                )
            })
    }

    fn prop_value(&self, v: &Expr) -> Result<Value> {
        match v {
            Expr::Lit(l) => Ok(literal_value(l)),
            Expr::Param(p) => Ok(self.param(p)?.clone()),
            other => Err(QueryError::Other(format!(
                "a property value must be a literal or a parameter, not {other}"
            ))),
        }
    }
}

fn list_and(items: &[String]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

fn list_or(items: &[&str]) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].to_string(),
        n => format!("{} or {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

/// The value a literal stands for.
pub(crate) fn literal_value(l: &Literal) -> Value {
    match l {
        Literal::Str(s) => Value::Str(s.clone()),
        Literal::Int(n) => Value::Int(*n),
        Literal::Float(x) => Value::Float(*x),
        Literal::Bool(b) => Value::Bool(*b),
        Literal::Null => Value::Null,
    }
}

fn expr_pos(e: &Expr) -> Pos {
    match e {
        Expr::Field(f) => f.pos,
        Expr::Call { pos, .. } => *pos,
        Expr::Test(l, _) => expr_pos(l),
        Expr::Not(x) => expr_pos(x),
        Expr::And(v) | Expr::Or(v) | Expr::List(v) => v.first().map(expr_pos).unwrap_or_default(),
        _ => Pos(0),
    }
}

fn contains_agg(e: &Expr) -> bool {
    match e {
        Expr::Call { name, arg, .. } => {
            AggFunc::from_name(&name.to_ascii_lowercase()).is_some()
                || matches!(arg, CallArg::Expr { expr, .. } if contains_agg(expr))
        }
        Expr::Test(l, t) => {
            contains_agg(l)
                || match t {
                    Test::Cmp(_, r)
                    | Test::Contains(r)
                    | Test::StartsWith(r)
                    | Test::Regex(r)
                    | Test::In { list: r, .. } => contains_agg(r),
                    Test::IsNull { .. } => false,
                }
        }
        Expr::Not(x) => contains_agg(x),
        Expr::And(v) | Expr::Or(v) | Expr::List(v) => v.iter().any(contains_agg),
        _ => false,
    }
}

fn conjuncts(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::And(items) => items.iter().flat_map(conjuncts).collect(),
        other => vec![other.clone()],
    }
}

fn visit_fields(e: &Expr, f: &mut dyn FnMut(&FieldPath)) {
    match e {
        Expr::Field(p) => f(p),
        Expr::Call {
            arg: CallArg::Expr { expr, .. },
            ..
        } => visit_fields(expr, f),
        Expr::Test(l, t) => {
            visit_fields(l, f);
            match t {
                Test::Cmp(_, r)
                | Test::Contains(r)
                | Test::StartsWith(r)
                | Test::Regex(r)
                | Test::In { list: r, .. } => visit_fields(r, f),
                Test::IsNull { .. } => {}
            }
        }
        Expr::Not(x) => visit_fields(x, f),
        Expr::And(v) | Expr::Or(v) | Expr::List(v) => v.iter().for_each(|x| visit_fields(x, f)),
        _ => {}
    }
}

fn only_subject(e: &Expr, subject: &str) -> bool {
    let mut all = true;
    let mut any = false;
    visit_fields(e, &mut |p| {
        any = true;
        all &= p.parts[0] == subject;
    });
    any && all
}

fn vars_used(e: &Expr, vars: &[PatternVar]) -> Vec<usize> {
    let mut out = Vec::new();
    visit_fields(e, &mut |p| {
        if let Some(i) = vars.iter().position(|v| v.name == p.parts[0]) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    });
    out
}

fn constraints_expr(var: usize, cs: Vec<Constraint>) -> Pexpr {
    let items: Vec<Pexpr> = cs
        .into_iter()
        .map(|c| {
            Pexpr::Cmp(
                CmpOp::Eq,
                Box::new(Pexpr::Field(Subject::Bound(var), c.field)),
                Box::new(Pexpr::Const(c.value)),
            )
        })
        .collect();
    Pexpr::And(items)
}

fn field(parts: &[&str]) -> Expr {
    Expr::Field(FieldPath {
        parts: parts.iter().map(|s| s.to_string()).collect(),
        pos: Pos(0),
    })
}

fn item(parts: &[&str], alias: &str) -> ReturnItem {
    ReturnItem {
        expr: field(parts),
        alias: Some(alias.to_string()),
    }
}

/// The columns a FIND returns without RETURN.
fn default_returns(kind: FindKind, group_by: &[Expr]) -> Returns {
    let items = if !group_by.is_empty() {
        let mut v: Vec<ReturnItem> = group_by
            .iter()
            .map(|e| ReturnItem {
                expr: e.clone(),
                alias: None,
            })
            .collect();
        v.push(ReturnItem {
            expr: Expr::Call {
                name: "count".into(),
                arg: CallArg::Star,
                pos: Pos(0),
            },
            alias: None,
        });
        v
    } else {
        match kind {
            FindKind::Vars => vec![
                item(&["trace", "id"], "trace"),
                item(&["var", "node_id"], "node"),
                item(&["var", "category"], "category"),
                item(&["var", "session"], "session"),
            ],
            FindKind::Ops => vec![
                item(&["trace", "id"], "trace"),
                item(&["op", "id"], "op_id"),
                item(&["op", "name"], "op_name"),
                item(&["op", "kind"], "kind"),
                item(&["op", "session"], "session"),
            ],
            FindKind::Edges => vec![
                item(&["trace", "id"], "trace"),
                item(&["edge", "id"], "edge_id"),
                item(&["edge", "source"], "source"),
                item(&["edge", "target"], "target"),
                item(&["edge", "op"], "op_id"),
                item(&["edge", "category"], "category"),
            ],
            FindKind::Sessions => vec![
                item(&["trace", "id"], "trace"),
                item(&["session", "id"], "session"),
                item(&["session", "name"], "name"),
                item(&["session", "category"], "category"),
            ],
            FindKind::Traces => vec![
                item(&["trace", "id"], "trace"),
                item(&["trace", "user_id"], "user_id"),
                item(&["trace", "project_id"], "project_id"),
                item(&["trace", "created_at"], "created_at"),
            ],
            FindKind::Cases => vec![
                item(&["trace", "id"], "trace"),
                item(&["case", "query_id"], "query_id"),
                item(&["case", "query"], "query"),
                item(&["case", "prediction"], "prediction"),
                item(&["case", "error_type"], "error_type"),
                item(&["case", "op_id"], "op_id"),
            ],
            FindKind::Attributions => vec![
                item(&["trace", "id"], "trace"),
                item(&["attribution", "case"], "case"),
                item(&["attribution", "error_type"], "error_type"),
                item(&["attribution", "op_id"], "op_id"),
                item(&["attribution", "op_name"], "op_name"),
                item(&["attribution", "confidence"], "confidence"),
                item(&["attribution", "method"], "method"),
                item(&["attribution", "at"], "at"),
            ],
        }
    };
    Returns {
        distinct: false,
        items,
    }
}

// ---------------------------------------------------------------- EXPLAIN

/// Writes a plan as an indented operator tree, the innermost (first to run) last.
struct Tree {
    lines: Vec<String>,
    /// Added to every depth: a plan inside another one's line.
    base: usize,
}

impl Tree {
    fn push(&mut self, depth: usize, text: String) {
        let depth = depth + self.base;
        let prefix = if depth == 0 {
            String::new()
        } else {
            format!("{}└─ ", "   ".repeat(depth - 1))
        };
        self.lines.push(format!("{prefix}{text}"));
    }
}

fn constraint_text(cs: &[Constraint]) -> String {
    cs.iter()
        .map(|c| {
            let v = match &c.value {
                Value::Str(s) => crate::node_ref::quote(s),
                other => other.to_string(),
            };
            format!("{} = {v}", format!("{:?}", c.field).to_ascii_lowercase())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Plan {
    /// The plan as lines of an operator tree (what EXPLAIN returns).
    pub fn explain(&self) -> Vec<String> {
        let mut t = Tree {
            lines: Vec::new(),
            base: 0,
        };
        self.explain_into(&mut t);
        t.lines
    }

    fn projection_lines(t: &mut Tree, p: &Projection, depth: &mut usize) {
        if let Some(n) = p.limit {
            t.push(*depth, format!("Limit {n}"));
            *depth += 1;
        }
        if !p.order.is_empty() {
            t.push(*depth, format!("Sort by {}", p.texts.order.join(", ")));
            *depth += 1;
        }
        if p.distinct {
            t.push(*depth, "Distinct".into());
            *depth += 1;
        }
        t.push(*depth, format!("Project {}", p.columns.join(", ")));
        *depth += 1;
        if p.aggregating {
            let aggs: Vec<&str> = p.aggs.iter().map(|a| a.text.as_str()).collect();
            let keys = if p.texts.group.is_empty() {
                "one group".to_string()
            } else {
                format!("group by {}", p.texts.group.join(", "))
            };
            t.push(*depth, format!("Aggregate {}; {keys}", aggs.join(", ")));
            *depth += 1;
        }
    }

    fn explain_into(&self, t: &mut Tree) {
        match self {
            Plan::Explain(inner) => inner.explain_into(t),
            Plan::SavePattern(s) => {
                let n = s.params.len();
                let params = if n == 0 {
                    "no parameters".to_string()
                } else {
                    format!(
                        "{n} parameter{}: {}",
                        if n == 1 { "" } else { "s" },
                        params_text(&s.params)
                    )
                };
                t.push(0, format!("Save pattern {} ({params})", s.name));
                t.base += 1;
                s.body.explain_into(t);
                t.base -= 1;
            }
            Plan::RunPattern(r) => {
                let mut line = format!("Run pattern {}", r.name);
                match &r.over {
                    Some(p) => line.push_str(&format!(" over traces where {}", p.text)),
                    None => line.push_str(" over every trace"),
                }
                if !r.params.is_empty() {
                    line.push_str(&format!(" with {}", params_text(&r.params)));
                }
                t.push(0, line);
                if let Some(body) = &r.body {
                    t.base += 1;
                    body.explain_into(t);
                    t.base -= 1;
                }
            }
            Plan::ShowPatterns => t.push(0, "Show patterns".into()),
            Plan::ShowPatternHistory(name) => t.push(0, format!("Show history of pattern {name}")),
            Plan::DropPattern(name) => t.push(0, format!("Drop pattern {name}")),
            Plan::ShowTraces => t.push(0, "Scan trace records".into()),
            Plan::Describe(d) => {
                t.push(0, "Describe: op subgraphs grouped by edge category".into());
                t.push(1, format!("Resolve {} {}", d.target, scope_text(&d.scope)));
            }
            Plan::Attribute(a) => {
                t.push(0, format!("Project {}", a.columns.join(", ")));
                t.push(
                    1,
                    "Store verdicts as 'query' (a finding already stored is skipped)".into(),
                );
                let traces = match &a.scope {
                    Some(s) => format!("of trace '{s}'"),
                    None => "of every trace".to_string(),
                };
                let cases = match &a.cases {
                    CaseSource::All => format!(
                        "Every failed case {traces} (annotations, else llm-judge ops that scored 0)"
                    ),
                    CaseSource::Named(refs) => {
                        let names: Vec<String> = refs.iter().map(|r| r.to_string()).collect();
                        format!(
                            "Failed cases {} (query variable, node id or judge op id) {traces}",
                            names.join(", ")
                        )
                    }
                    CaseSource::Query { plan, .. } => {
                        t.push(
                            2,
                            format!("Attribute each case in its own trace using {}", a.method),
                        );
                        t.push(
                            3,
                            match plan.as_ref() {
                                Plan::RunPattern(_) => {
                                    "The failed cases the pattern's hits name, each once, \
                                     in trace order"
                                }
                                _ => "The failed cases of the subquery's rows, each once, in its order",
                            }
                            .to_string(),
                        );
                        t.base += 4;
                        plan.explain_into(t);
                        t.base -= 4;
                        return;
                    }
                };
                t.push(2, format!("Attribute each case using {}", a.method));
                t.push(3, cases);
            }
            Plan::Traverse(p) => {
                let mut depth = 0;
                if let Some(n) = p.limit {
                    t.push(depth, format!("Limit {n}"));
                    depth += 1;
                }
                t.push(
                    depth,
                    format!("Project {}: {}", p.output.keyword(), p.columns.join(", ")),
                );
                depth += 1;
                if let Some(f) = &p.filter {
                    t.push(depth, format!("Filter {}", f.text));
                    depth += 1;
                }
                let dir = match p.direction {
                    Direction::Backward => "backward (incoming edges)",
                    Direction::Forward => "forward (outgoing edges)",
                };
                let hops = match (p.min_depth, p.max_depth) {
                    (1, None) => "any depth".to_string(),
                    (1, Some(n)) => format!("depth 1..{n}"),
                    (m, None) => format!("depth {m}.."),
                    (m, Some(n)) => format!("depth {m}..{n}"),
                };
                let mut walk = format!("Walk {dir} over cached CSR adjacency, {hops}");
                if let Some(w) = &p.while_ {
                    walk.push_str(&format!(", through {}", w.text));
                }
                if let Some(u) = &p.until {
                    walk.push_str(&format!(", stop at {}", u.text));
                }
                t.push(depth, walk);
                depth += 1;
                let starts: Vec<String> = p.starts.iter().map(start_text).collect();
                t.push(
                    depth,
                    format!(
                        "Resolve starts {} {}",
                        starts.join(", "),
                        scope_text(&p.scope)
                    ),
                );
            }
            Plan::Find(f) => {
                let mut depth = 0;
                Self::projection_lines(t, &f.projection, &mut depth);
                if let Some(w) = &f.filter {
                    t.push(depth, format!("Filter {}", w.text));
                    depth += 1;
                }
                let scan = match f.kind {
                    FindKind::Cases => "Scan cases of each trace (its annotations, else its \
                                        llm-judge ops that scored 0)"
                        .to_string(),
                    FindKind::Attributions => {
                        "Scan stored attributions of each trace, oldest first".to_string()
                    }
                    kind => format!("Scan {} of each trace (cached catalog)", kind.keyword()),
                };
                t.push(depth, scan);
                depth += 1;
                let mut traces = match &f.scope {
                    Some(s) => format!("Trace '{s}'"),
                    None => "Every trace".to_string(),
                };
                if let Some(w) = &f.trace_filter {
                    traces.push_str(&format!(" where {}", w.text));
                }
                t.push(depth, traces);
            }
            Plan::Match(m) => {
                let mut depth = 0;
                Self::projection_lines(t, &m.projection, &mut depth);
                let name = |i: usize| m.vars[i].name.clone();
                for step in m.steps.iter().rev() {
                    let line = match step {
                        MatchStep::Filter(p) => format!("Filter {}", p.text),
                        MatchStep::Scan { var, constraints } => {
                            let c = constraint_text(constraints);
                            format!(
                                "Scan vars as ({}){}",
                                name(*var),
                                if c.is_empty() {
                                    String::new()
                                } else {
                                    format!(" where {c}")
                                }
                            )
                        }
                        MatchStep::Expand {
                            from,
                            to,
                            rel,
                            direction,
                            edge_constraints,
                            min_hops,
                            max_hops,
                            constraints,
                            check,
                        } => {
                            let dir = match direction {
                                Direction::Forward => "forward",
                                Direction::Backward => "backward",
                            };
                            let hops = match (min_hops, max_hops) {
                                (1, Some(1)) => "1 hop".to_string(),
                                (a, Some(b)) if a == b => format!("{a} hops"),
                                (a, Some(b)) => format!("{a}..{b} hops"),
                                (a, None) => format!("{a}.. hops"),
                            };
                            let mut s = format!(
                                "{} ({}) {dir} {hops} to ({})",
                                if *check { "Check" } else { "Expand" },
                                name(*from),
                                name(*to)
                            );
                            if let Some(r) = rel {
                                s.push_str(&format!(" binding [{}]", name(*r)));
                            }
                            let ec = constraint_text(edge_constraints);
                            if !ec.is_empty() {
                                s.push_str(&format!(", edges where {ec}"));
                            }
                            let nc = constraint_text(constraints);
                            if !nc.is_empty() {
                                s.push_str(&format!(", nodes where {nc}"));
                            }
                            s
                        }
                    };
                    t.push(depth, line);
                    depth += 1;
                }
                t.push(
                    depth,
                    match &m.scope {
                        Some(s) => format!("Trace '{s}'"),
                        None => "Every trace".to_string(),
                    },
                );
            }
        }
    }
}

/// `$a = 1, $b = 'x'`.
fn params_text(params: &[(String, Value)]) -> String {
    params
        .iter()
        .map(|(n, v)| format!("${n} = {}", value_literal(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn start_text(r: &NodeRef) -> String {
    match r {
        NodeRef::Name { version: None, .. } => format!("{r} (latest version, or an op id)"),
        NodeRef::Name { .. } => r.to_string(),
        NodeRef::Quoted(_) => format!("{r} (node id, full name or op id)"),
    }
}

fn scope_text(scope: &Option<String>) -> String {
    match scope {
        Some(s) => format!("in trace '{s}'"),
        None => "in every trace that holds them".to_string(),
    }
}

impl Display for Plan {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for line in self.explain() {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_err(text: &str, params: &[(&str, Value)]) -> String {
        let stmt = crate::parse_statement(text).unwrap();
        let params: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        plan_text(&stmt, &params, text).unwrap_err().to_string()
    }

    #[test]
    fn errors_about_parameters_point_at_them() {
        let e = plan_err("TRACE x IN TRACE $t LIMIT $n", &[("t", Value::Int(1))]);
        assert!(
            e.starts_with("invalid statement at line 1, column 18: parameter $t must be text"),
            "{e}"
        );
        let e = plan_err("TRACE x LIMIT $n", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 15: parameter $n is not set"),
            "{e}"
        );
        // `$n` is not found inside `$nn`.
        let e = plan_err(
            "FIND vars WHERE var.name = $nn OR var.name = $n",
            &[("nn", Value::Int(1))],
        );
        assert!(
            e.starts_with("invalid statement at line 1, column 46: parameter $n is not set"),
            "{e}"
        );
    }

    #[test]
    fn pattern_variable_and_property_errors_point_at_them() {
        let e = plan_err("MATCH (a)-[a]->(b) RETURN a", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 12: a is bound twice"),
            "{e}"
        );
        let e = plan_err("MATCH (a)-[e]->(b), ( e ) RETURN a", &[]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 23: e names a relationship and a node"
            ),
            "{e}"
        );
        let e = plan_err("MATCH (a)-[e*2]->(b) RETURN a", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 12: e names a variable-length"),
            "{e}"
        );
        let e = plan_err("MATCH (a {name: 'x', categry: 'y'}) RETURN a", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 22: unknown node property categry (did you mean category?)"),
            "{e}"
        );
    }

    #[test]
    fn a_field_outside_the_groups_is_told_how_groups_were_made() {
        let e = plan_err(
            "FIND vars GROUP BY var.category RETURN var.name, count(*)",
            &[],
        );
        assert!(
            e.contains(": var.name must be in GROUP BY or inside an aggregate"),
            "{e}"
        );
        let e = plan_err(
            "FIND vars RETURN var.category, count(*) ORDER BY var.name",
            &[],
        );
        assert!(
            e.contains(
                ": var.name must be a group key (RETURN it without an aggregate, or GROUP BY it)"
            ),
            "{e}"
        );
    }

    fn explain(text: &str, params: &[(&str, Value)]) -> Vec<String> {
        let stmt = crate::parse_statement(text).unwrap();
        let params: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        plan_text(&stmt, &params, text).unwrap().explain()
    }

    #[test]
    fn attribute_plans_name_the_cases_the_method_and_the_columns() {
        let stmt = crate::parse_statement("ATTRIBUTE 'query:Q8@1', $c USING evidence").unwrap();
        let params: Params = [("c".to_string(), Value::Str("query:Q9".into()))].into();
        let Plan::Attribute(a) = plan(&stmt, &params).unwrap() else {
            panic!("not an attribute plan")
        };
        let CaseSource::Named(refs) = &a.cases else {
            panic!("not named cases: {:?}", a.cases)
        };
        assert_eq!(
            refs,
            &[
                NodeRef::Quoted("query:Q8@1".into()),
                NodeRef::Name {
                    full_name: "query:Q9".into(),
                    version: None
                }
            ]
        );
        assert!(matches!(
            plan_of("ATTRIBUTE CASES USING evidence", &[]),
            Plan::Attribute(AttributePlan {
                cases: CaseSource::All,
                ..
            })
        ));
        assert_eq!(
            (a.scope, a.method.as_str(), a.method_at),
            (None, "evidence", 33)
        );
        assert_eq!(
            a.columns,
            [
                "trace",
                "case",
                "error_type",
                "op_id",
                "op_name",
                "confidence",
                "reason"
            ]
        );
        assert_eq!(
            explain("EXPLAIN ATTRIBUTE CASES IN TRACE $t USING evidence", &[("t", "g".into())]),
            [
                "Project trace, case, error_type, op_id, op_name, confidence, reason",
                "└─ Store verdicts as 'query' (a finding already stored is skipped)",
                "   └─ Attribute each case using evidence",
                "      └─ Every failed case of trace 'g' (annotations, else llm-judge ops that scored 0)",
            ]
        );
        assert_eq!(
            explain("ATTRIBUTE query:Q8, 'x y' USING evidence", &[])[3],
            "      └─ Failed cases query:Q8, 'x y' (query variable, node id or judge op id) of every trace"
        );
        let e = plan_err("ATTRIBUTE query:Q8 IN TRACE $t USING evidence", &[]);
        assert!(e.contains("column 29: parameter $t is not set"), "{e}");
        let e = plan_err("ATTRIBUTE $c USING evidence", &[("c", Value::Int(3))]);
        assert!(
            e.contains("parameter $c must be text naming a variable or op"),
            "{e}"
        );
    }

    #[test]
    fn an_attribute_subquery_plans_as_a_find_of_cases_that_keeps_their_keys() {
        let text = "ATTRIBUTE (FIND cases WHERE trace.project_id = 'mem0' AND case.query \
                    CONTAINS $w ORDER BY case.golden_answers DESC LIMIT 3) USING hybrid";
        let Plan::Attribute(a) = plan_of(text, &[("w", "when".into())]) else {
            panic!("not an ATTRIBUTE plan")
        };
        assert_eq!((a.scope.as_deref(), a.method.as_str()), (None, "hybrid"));
        let CaseSource::Query { plan, at } = &a.cases else {
            panic!("not a subquery: {:?}", a.cases)
        };
        assert_eq!(*at, 11);
        let Plan::Find(f) = plan.as_ref() else {
            panic!("not a FIND: {plan:?}")
        };
        let p = &f.projection;
        // The columns a FIND cases shows, then the two keys, then the sort key.
        assert_eq!(
            p.columns,
            [
                "trace",
                "query_id",
                "query",
                "prediction",
                "error_type",
                "op_id"
            ]
        );
        assert_eq!(p.keys, 2);
        assert_eq!(
            format!("{:?}", &p.outputs[6..]),
            format!(
                "{:?}",
                [
                    Pexpr::Field(Subject::Trace, Field::Key),
                    Pexpr::Field(Subject::Case, Field::Key),
                    Pexpr::Field(Subject::Case, Field::GoldenAnswers),
                ]
            )
        );
        assert_eq!(p.order, [(8, true)]);
        assert_eq!(p.limit, Some(3));
        assert!(f.trace_filter.is_some() && f.filter.is_some());
        // Keys are added once.
        let mut again = f.clone();
        again.keep_case_keys().unwrap();
        assert_eq!(
            format!("{:?}", again.projection.outputs),
            format!("{:?}", p.outputs)
        );
        assert_eq!(again.projection.order, p.order);
        // A sort key that is a column stays where it is.
        let Plan::Attribute(a) = plan_of(
            "ATTRIBUTE (FIND cases ORDER BY query_id, trace DESC) USING evidence",
            &[],
        ) else {
            panic!("not an ATTRIBUTE plan")
        };
        let CaseSource::Query { plan, .. } = a.cases else {
            panic!("not a subquery")
        };
        let Plan::Find(f) = *plan else {
            panic!("not a FIND")
        };
        assert_eq!(f.projection.order, [(1, false), (0, true)]);
        assert_eq!(f.projection.outputs.len(), 8);

        assert_eq!(
            explain(text, &[("w", "when".into())]),
            [
                "Project trace, case, error_type, op_id, op_name, confidence, reason",
                "└─ Store verdicts as 'query' (a finding already stored is skipped)",
                "   └─ Attribute each case in its own trace using hybrid",
                "      └─ The failed cases of the subquery's rows, each once, in its order",
                "         └─ Limit 3",
                "            └─ Sort by case.golden_answers DESC",
                "               └─ Project trace, query_id, query, prediction, error_type, op_id",
                "                  └─ Filter case.query CONTAINS $w",
                "                     └─ Scan cases of each trace (its annotations, else its llm-judge ops that scored 0)",
                "                        └─ Every trace where trace.project_id = 'mem0'",
            ]
        );
        // A pattern's hits: the engine resolves the pattern.
        let Plan::Attribute(a) = plan_of(
            "ATTRIBUTE (RUN PATTERN evidence_deleted OVER TRACES WHERE trace.id = 'g') USING llm",
            &[],
        ) else {
            panic!("not an ATTRIBUTE plan")
        };
        assert!(matches!(
            &a.cases,
            CaseSource::Query { plan, at: 11 } if matches!(plan.as_ref(), Plan::RunPattern(r)
                if r.name == "evidence_deleted" && r.over.is_some() && r.body.is_none())
        ));
        assert_eq!(
            Plan::Attribute(a).explain()[2..],
            [
                "   └─ Attribute each case in its own trace using llm",
                "      └─ The failed cases the pattern's hits name, each once, in trace order",
                "         └─ Run pattern evidence_deleted over traces where trace.id = 'g'",
            ]
        );
    }

    #[test]
    fn a_subquery_whose_rows_are_not_cases_is_refused_where_it_is_written() {
        let e = plan_err(
            "ATTRIBUTE (FIND ops WHERE op.kind = 'retrieval') USING evidence",
            &[],
        );
        assert_eq!(
            e,
            format!(
                "invalid statement at line 1, column 12: FIND ops returns ops, not failed cases; \
                 ATTRIBUTE needs one failed case per row: {SUBQUERIES}\n  \
                 ATTRIBUTE (FIND ops WHERE op.kind = 'retrieval') USING evidence\n             ^"
            )
        );
        for (kind, what) in [
            ("vars", "variables"),
            ("edges", "edges"),
            ("sessions", "sessions"),
            ("traces", "traces"),
            ("attributions", "stored verdicts"),
        ] {
            let e = plan_err(&format!("EXPLAIN ATTRIBUTE\n  (FIND {kind}) USING x"), &[]);
            assert!(
                e.starts_with(&format!(
                    "invalid statement at line 2, column 4: FIND {kind} returns {what}, not failed cases;"
                )),
                "{e}"
            );
        }
        let e = plan_err(
            "ATTRIBUTE (FIND cases GROUP BY trace.id) USING evidence",
            &[],
        );
        assert!(
            e.contains("column 12: its rows are groups (GROUP BY, or an aggregate such as count(*)), not cases; ATTRIBUTE needs one failed case per row: write (FIND cases"),
            "{e}"
        );
        let e = plan_err(
            "ATTRIBUTE (FIND cases RETURN trace.id, count(*)) USING evidence",
            &[],
        );
        assert!(e.contains("its rows are groups"), "{e}");
        let e = plan_err(
            "ATTRIBUTE (FIND cases ORDER BY count(*)) USING evidence",
            &[],
        );
        assert!(e.contains("its rows are groups"), "{e}");
        let e = plan_err(
            "ATTRIBUTE (FIND cases RETURN DISTINCT trace.id) USING evidence",
            &[],
        );
        assert!(
            e.contains("column 12: RETURN DISTINCT merges its rows, so they are not cases"),
            "{e}"
        );
        // A RETURN that keeps one row per case is allowed.
        assert!(matches!(
            plan_of(
                "ATTRIBUTE (FIND cases RETURN case.query AS q ORDER BY q) USING evidence",
                &[]
            ),
            Plan::Attribute(_)
        ));
        // Errors inside the subquery point into it.
        let e = plan_err(
            "ATTRIBUTE (FIND cases WHERE var.name = 'x') USING evidence",
            &[],
        );
        assert!(
            e.contains(
                "column 29: var. fields are not available here; this statement has case or trace"
            ),
            "{e}"
        );
        let e = plan_err("ATTRIBUTE (FIND cases LIMIT $n) USING evidence", &[]);
        assert!(e.contains("column 29: parameter $n is not set"), "{e}");
        let e = plan_err(
            "ATTRIBUTE (RUN PATTERN p OVER TRACES WHERE var.name = 'x') USING evidence",
            &[],
        );
        assert!(e.contains("only trace fields"), "{e}");
    }

    #[test]
    fn attribution_fields_are_read_with_or_without_their_subject() {
        let plan_of = |text: &str| {
            let stmt = crate::parse_statement(text).unwrap();
            match plan(&stmt, &Params::new()).unwrap() {
                Plan::Find(f) => f,
                _ => panic!("not a FIND"),
            }
        };
        let f = plan_of("FIND attributions");
        assert_eq!(
            f.projection.columns,
            [
                "trace",
                "case",
                "error_type",
                "op_id",
                "op_name",
                "confidence",
                "method",
                "at"
            ]
        );
        let f = plan_of("FIND attributions GROUP BY error_type RETURN error_type, count(*)");
        assert!(matches!(
            f.projection.group_keys.as_slice(),
            [Pexpr::Field(Subject::Attribution, Field::ErrorType)]
        ));
        let f = plan_of(
            "FIND attributions WHERE attribution.case = 'q' AND seq > 1 AND trace.id = 'g' \
             RETURN case, query, op_id, op_name, confidence, reason, method, version, author, \
             at, seq, micros",
        );
        assert!(f.trace_filter.is_some() && f.filter.is_some());
        assert_eq!(f.projection.outputs.len(), 12);
        let e = plan_err("FIND attributions WHERE eror_type = 'x'", &[]);
        assert!(
            e.contains("unknown name eror_type (did you mean error_type?); fields start with attribution or trace, or are attribution fields written bare: case, query, error_type"),
            "{e}"
        );
        let e = plan_err("FIND attributions RETURN attribution.meta.x", &[]);
        assert!(e.contains("unknown field attribution.meta"), "{e}");
        assert!(!e.contains(", meta"), "{e}");
        // Bare names belong to FIND attributions only.
        let e = plan_err("FIND cases RETURN error_type", &[]);
        assert!(e.contains("unknown name error_type"), "{e}");
        let e = plan_err("FIND attributions RETURN case.query_id", &[]);
        assert!(e.contains("case. fields are not available here"), "{e}");
        let f = plan_of("FIND cases WHERE case.origin = 'judge'");
        assert!(f.filter.is_some());
        assert_eq!(
            explain("EXPLAIN FIND attributions IN TRACE 'g'", &[])
                .last()
                .unwrap(),
            "   └─ Trace 'g'"
        );
    }

    fn params_of(params: &[(&str, Value)]) -> Params {
        params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn plan_of(text: &str, params: &[(&str, Value)]) -> Plan {
        let stmt = crate::parse_statement(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
        plan_text(&stmt, &params_of(params), text).unwrap_or_else(|e| panic!("{text}\n{e}"))
    }

    #[test]
    fn a_saved_pattern_is_its_canonical_body_planned_with_its_defaults() {
        let text = "save pattern big with $min = 20, $cats = ['a', 'b'] as find vars \
                    where var.version >= $min and var.category in $cats";
        // The caller's parameters are not the pattern's.
        let Plan::SavePattern(s) = plan_of(text, &[("min", Value::Int(5))]) else {
            panic!("not a SAVE PATTERN plan")
        };
        assert_eq!(s.name, "big");
        assert_eq!(
            s.params,
            vec![
                ("min".to_string(), Value::Int(20)),
                (
                    "cats".to_string(),
                    Value::List(vec![Value::from("a"), Value::from("b")])
                )
            ]
        );
        assert_eq!(
            s.text,
            "FIND vars WHERE var.version >= $min AND var.category IN $cats"
        );
        let Plan::Find(f) = s.body.as_ref() else {
            panic!("the body is not a FIND plan")
        };
        let filter = format!("{:?}", f.filter.as_ref().map(|p| &p.expr));
        assert!(filter.contains("Const(Int(20))"), "{filter}");
        assert!(!filter.contains("Const(Int(5))"), "{filter}");
        // The stored text reads back as the same statement.
        let again = crate::parse_statement(&s.text).unwrap();
        assert_eq!(again.to_string(), s.text);
        // TRACE, FORWARD and MATCH may be saved too.
        for text in [
            "SAVE PATTERN t WITH $s = 'answer:42' AS TRACE $s DEPTH 3",
            "SAVE PATTERN f AS FORWARD message:1 WHERE var.category = 'x'",
            "SAVE PATTERN m WITH $k = 10 AS MATCH (a:message)-->(b) RETURN a, b LIMIT $k",
        ] {
            assert!(matches!(plan_of(text, &[]), Plan::SavePattern(_)), "{text}");
        }
    }

    #[test]
    fn a_saved_pattern_has_a_default_for_each_parameter_and_uses_each() {
        let text = "SAVE PATTERN big AS FIND vars WHERE var.version >= $min";
        assert_eq!(
            plan_err(text, &[("min", Value::Int(5))]),
            format!(
                "invalid statement at line 1, column 52: pattern parameter $min has no default: \
                 write SAVE PATTERN big WITH $min = ... AS ...\n  {text}\n  {}^",
                " ".repeat(51)
            )
        );
        let e = plan_err(
            "SAVE PATTERN p WITH $a = 1 AS TRACE $s WHERE var.version = $a LIMIT $n",
            &[],
        );
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 37: pattern parameters $s and $n have no \
                 default: write SAVE PATTERN p WITH $s = ..., $n = ... AS ..."
            ),
            "{e}"
        );
        let e = plan_err(
            "SAVE PATTERN p WITH $a = 1, $x = 2 AS FIND vars WHERE var.version = $a",
            &[],
        );
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 29: parameter $x is not used by the \
                 pattern: drop it from WITH, or use it in the saved statement"
            ),
            "{e}"
        );
        // A default of the wrong kind is reported where it is given.
        let e = plan_err("SAVE PATTERN p WITH $n = 'x' AS TRACE a:1 LIMIT $n", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 21: parameter $n must be a count"),
            "{e}"
        );
        // Without the text, the errors have no position.
        let stmt = crate::parse_statement("SAVE PATTERN p AS FIND vars LIMIT $n").unwrap();
        assert_eq!(
            plan(&stmt, &Params::new()).unwrap_err().to_string(),
            "pattern parameter $n has no default: write SAVE PATTERN p WITH $n = ... AS ..."
        );
    }

    #[test]
    fn a_saved_pattern_runs_over_every_trace() {
        let e = plan_err(
            "SAVE PATTERN p WITH $s = 'x in trace y' AS FIND vars IN TRACE 'g' WHERE var.name = $s",
            &[],
        );
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 54: a pattern runs over every trace; drop IN \
                 TRACE and use RUN PATTERN p OVER TRACES WHERE trace.id = '...'"
            ),
            "{e}"
        );
        // Before its parameter is missed.
        let e = plan_err("SAVE PATTERN p AS TRACE x in\n trace $t", &[]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 27: a pattern runs over every trace"
            ),
            "{e}"
        );
        let e = plan_err("SAVE PATTERN p AS MATCH (a) IN TRACE 'g' RETURN a", &[]);
        assert!(
            e.contains("column 29: a pattern runs over every trace"),
            "{e}"
        );
    }

    #[test]
    fn a_built_pattern_statement_is_checked_too() {
        let save = |body: Statement, params: Vec<(String, Value)>| {
            let stmt = Statement::SavePattern(SavePattern {
                name: "p".into(),
                params,
                body: Box::new(body),
            });
            plan(&stmt, &Params::new()).unwrap_err().to_string()
        };
        assert_eq!(
            save(Statement::ShowTraces, vec![]),
            "a pattern saves a TRACE, FORWARD, MATCH or FIND statement, not SHOW"
        );
        let find = crate::parse_statement("FIND vars LIMIT $a").unwrap();
        let twice = vec![("a".into(), Value::Int(1)), ("a".into(), Value::Int(2))];
        assert_eq!(
            save(find, twice.clone()),
            "parameter $a is given twice; give each parameter one value"
        );
        let run = Statement::RunPattern(RunPattern {
            name: "p".into(),
            over: None,
            params: twice,
        });
        assert!(plan(&run, &Params::new())
            .unwrap_err()
            .to_string()
            .contains("$a is given twice"));
    }

    #[test]
    fn a_run_picks_traces_by_their_fields_only() {
        let text = "RUN PATTERN big OVER TRACES WHERE trace.source = $src AND trace.id != 'a' \
                    WITH $min = 5";
        let Plan::RunPattern(r) = plan_of(text, &[("src", "x".into())]) else {
            panic!("not a RUN PATTERN plan")
        };
        assert_eq!(r.name, "big");
        assert_eq!(r.params, vec![("min".to_string(), Value::Int(5))]);
        assert!(r.body.is_none() && r.columns.is_empty());
        let over = r.over.expect("an OVER condition");
        assert_eq!(over.text, "trace.source = $src AND trace.id != 'a'");
        let compiled = format!("{:?}", over.expr);
        assert!(
            compiled.contains("Field(Trace, Source)")
                && compiled.contains("Field(Trace, Id)")
                && compiled.contains("Const(Str(\"x\"))"),
            "{compiled}"
        );
        let mut fields = Vec::new();
        fn subjects(e: &Pexpr, out: &mut Vec<Subject>) {
            match e {
                Pexpr::Field(s, _) => out.push(*s),
                Pexpr::And(v) => v.iter().for_each(|x| subjects(x, out)),
                Pexpr::Cmp(_, l, r) => {
                    subjects(l, out);
                    subjects(r, out);
                }
                _ => {}
            }
        }
        subjects(&over.expr, &mut fields);
        assert_eq!(fields, [Subject::Trace, Subject::Trace]);
        let Plan::RunPattern(r) = plan_of("RUN PATTERN big", &[]) else {
            panic!("not a RUN PATTERN plan")
        };
        assert!(r.over.is_none() && r.params.is_empty());
        // The condition's parameters are the caller's.
        let e = plan_err(
            "RUN PATTERN big OVER TRACES WHERE trace.id = $t WITH $t = 'g'",
            &[],
        );
        assert!(e.contains("column 46: parameter $t is not set"), "{e}");
        let e = plan_err("RUN PATTERN big OVER TRACES WHERE var.name = 'x'", &[]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 35: only trace fields (such as trace.id or \
                 trace.source) are allowed after OVER TRACES WHERE, not var.name"
            ),
            "{e}"
        );
        let e = plan_err(
            "RUN PATTERN big OVER TRACES WHERE trace.id = 'a' OR a.b = 1",
            &[],
        );
        assert!(
            e.contains("column 53: only trace fields") && e.contains("not a.b"),
            "{e}"
        );
        let e = plan_err("RUN PATTERN big OVER TRACES WHERE trace.idd = 'a'", &[]);
        assert!(
            e.contains("column 35: unknown field trace.idd (did you mean trace.id?)"),
            "{e}"
        );
        let e = plan_err(
            "RUN PATTERN big OVER TRACES WHERE trace.meta.x = 1 AND trace",
            &[],
        );
        assert!(
            e.contains("column 56: trace needs a field, such as trace.id"),
            "{e}"
        );
        let e = plan_err("RUN PATTERN big OVER TRACES WHERE count(trace.id) > 1", &[]);
        assert!(e.contains("count() is an aggregate"), "{e}");
    }

    #[test]
    fn statement_params_lists_what_a_statement_reads_in_order() {
        let params = |text: &str| statement_params(&crate::parse_statement(text).unwrap());
        assert_eq!(
            params("TRACE $s, a:1 IN TRACE $t DEPTH 2 UNTIL var.name = $u WHILE op.kind IN $k WHERE $u = 1 LIMIT $n"),
            ["s", "t", "u", "k", "n"]
        );
        assert_eq!(
            params("MATCH (a {name: $n})-[e {kind: $k}]->(b {category: $c}) IN TRACE $t WHERE a.version > $v RETURN a, $r ORDER BY $o LIMIT $l"),
            ["n", "k", "c", "t", "v", "r", "o", "l"]
        );
        assert_eq!(
            params("FIND vars IN TRACE $t WHERE var.name = $a OR var.name = $a GROUP BY f($g) RETURN count(DISTINCT $c) ORDER BY $o LIMIT $l"),
            ["t", "a", "g", "c", "o", "l"]
        );
        assert_eq!(
            params("FIND vars WHERE NOT var.name IN [$a, $b] AND var.x =~ $r AND var.y STARTS WITH $s AND var.z CONTAINS $c AND var.w IS NULL AND var.v NOT IN $b"),
            ["a", "b", "r", "s", "c"]
        );
        assert_eq!(
            params("SAVE PATTERN p WITH $a = 1 AS FIND vars WHERE var.version = $a"),
            ["a"]
        );
        assert_eq!(
            params("RUN PATTERN p OVER TRACES WHERE trace.id = $t WITH $a = 1"),
            ["t"]
        );
        assert_eq!(params("EXPLAIN DESCRIBE $d IN TRACE $t"), ["d", "t"]);
        assert_eq!(
            params("ATTRIBUTE $c, x:1 IN TRACE $t USING evidence"),
            ["c", "t"]
        );
        assert_eq!(
            params(
                "ATTRIBUTE (FIND cases IN TRACE $t WHERE case.query = $q LIMIT $n) USING evidence"
            ),
            ["t", "q", "n"]
        );
        assert_eq!(
            params(
                "ATTRIBUTE (RUN PATTERN p OVER TRACES WHERE trace.id = $t WITH $a = 1) USING llm"
            ),
            ["t"]
        );
        for text in [
            "SHOW PATTERNS",
            "SHOW TRACES",
            "DROP PATTERN p",
            "SHOW PATTERN p HISTORY",
            "RUN PATTERN p WITH $a = 1",
            "ATTRIBUTE CASES USING evidence",
        ] {
            assert!(params(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn pattern_plans_explain_themselves() {
        assert_eq!(
            plan_of(
                "SAVE PATTERN big WITH $min = 20 AS FIND vars WHERE var.version >= $min",
                &[]
            )
            .explain(),
            [
                "Save pattern big (1 parameter: $min = 20)",
                "└─ Project trace, node, category, session",
                "   └─ Filter var.version >= $min",
                "      └─ Scan vars of each trace (cached catalog)",
                "         └─ Every trace",
            ]
        );
        assert_eq!(
            plan_of("SAVE PATTERN p AS FIND traces", &[]).explain()[0],
            "Save pattern p (no parameters)"
        );
        assert_eq!(
            plan_of(
                "SAVE PATTERN p WITH $a = 1.0, $b = 'it''s' AS FIND vars WHERE var.version = $a OR var.name = $b",
                &[]
            )
            .explain()[0],
            "Save pattern p (2 parameters: $a = 1.0, $b = 'it''s')"
        );
        let run = plan_of(
            "RUN PATTERN big OVER TRACES WHERE trace.source = 'x' WITH $min = 5, $c = ['a']",
            &[],
        );
        assert_eq!(
            run.explain(),
            ["Run pattern big over traces where trace.source = 'x' with $min = 5, $c = ['a']"]
        );
        // Once the engine has resolved the pattern, its plan shows below.
        let Plan::RunPattern(mut r) = run else {
            panic!("not a RUN PATTERN plan")
        };
        r.body = Some(Box::new(plan_of("FIND traces LIMIT 2", &[])));
        assert_eq!(
            Plan::RunPattern(r).explain(),
            [
                "Run pattern big over traces where trace.source = 'x' with $min = 5, $c = ['a']",
                "└─ Limit 2",
                "   └─ Project trace, user_id, project_id, created_at",
                "      └─ Scan traces of each trace (cached catalog)",
                "         └─ Every trace",
            ]
        );
        assert_eq!(
            plan_of("RUN PATTERN p", &[]).explain(),
            ["Run pattern p over every trace"]
        );
        assert_eq!(plan_of("SHOW PATTERNS", &[]).explain(), ["Show patterns"]);
        assert_eq!(
            plan_of("SHOW PATTERN big HISTORY", &[]).explain(),
            ["Show history of pattern big"]
        );
        assert_eq!(
            plan_of("DROP PATTERN big", &[]).explain(),
            ["Drop pattern big"]
        );
    }

    #[test]
    fn constant_operands_of_in_and_regex_are_checked_when_planning() {
        let e = plan_err("FIND vars WHERE var.name IN $s", &[("s", "x".into())]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 29: IN needs a list, such as ['a', 'b'], not 'x'"
            ),
            "{e}"
        );
        let e = plan_err("FIND vars WHERE var.name =~ 1", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 26: =~ needs a text pattern, not 1"),
            "{e}"
        );
        let e = plan_err("FIND vars WHERE var.name =~ '(x'", &[]);
        assert_eq!(
            e,
            "invalid statement at line 1, column 29: bad regular expression '(x': unclosed group\n  \
             FIND vars WHERE var.name =~ '(x'\n                              ^"
        );
        // A NULL list or pattern is no error: the test is unknown.
        let stmt = crate::parse_statement("FIND vars WHERE var.name IN $s").unwrap();
        let params: Params = [("s".to_string(), Value::Null)].into_iter().collect();
        assert!(plan_text(&stmt, &params, "FIND vars WHERE var.name IN $s").is_ok());
    }
}
