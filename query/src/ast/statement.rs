//! Statements and their clauses.

use crate::node_ref::NodeRef;
use crate::value::Value;

use super::expr::Expr;
use super::pattern::Pattern;
use super::span::Span;

/// One statement of the language.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// `TRACE ...` (backward) or `FORWARD ...`.
    Traverse(Traverse),
    /// `MATCH pattern, ... RETURN ...`.
    Match(Match),
    /// `FIND vars|ops|... WHERE ... GROUP BY ... RETURN ...`.
    Find(Find),
    /// `SHOW TRACES`.
    ShowTraces,
    /// `DESCRIBE reference`.
    Describe(Describe),
    /// `ATTRIBUTE CASES | starts [IN TRACE ...] USING method`, or
    /// `ATTRIBUTE (subquery) USING method`.
    Attribute(Attribute),
    /// `EXPLAIN statement`: show the plan instead of running it.
    Explain(Box<Statement>),
    /// `SAVE PATTERN name [WITH $p = v, ...] AS statement`.
    SavePattern(SavePattern),
    /// `RUN PATTERN name [OVER TRACES WHERE p] [WITH $p = v, ...]`.
    RunPattern(RunPattern),
    /// `SHOW PATTERNS`.
    ShowPatterns,
    /// `SHOW PATTERN name HISTORY`.
    ShowPatternHistory(String),
    /// `DROP PATTERN name`.
    DropPattern(String),
}

impl Statement {
    /// Whether running it stores something (verdicts, a pattern's save or
    /// drop); EXPLAIN of any statement does not.
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Statement::Attribute(_) | Statement::SavePattern(_) | Statement::DropPattern(_)
        )
    }
}

/// Which way a traversal walks the dependency edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `TRACE`: from a variable to what it was derived from.
    Backward,
    /// `FORWARD`: from a variable to what was derived from it.
    Forward,
}

/// A text argument given literally or as a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextArg {
    /// `'text'`.
    Text(String),
    /// `$name`.
    Param(String),
}

/// A count given literally or as a parameter (`LIMIT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CountArg {
    /// A literal count.
    Value(u64),
    /// `$name`.
    Param(String),
}

/// Where a traversal starts: a node reference or a parameter holding one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// A variable or op reference written in the statement.
    Ref(NodeRef),
    /// `$name`, whose value is read as a reference.
    Param(String),
}

/// `DEPTH n` or `DEPTH m..n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// `DEPTH n`: at most n hops.
    Max(u32),
    /// `DEPTH m..n`: between m and n hops, both included.
    Range(u32, u32),
}

/// What a traversal returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    /// The reached variables (the default).
    Nodes,
    /// The operations of the crossed edges.
    Ops,
    /// The crossed edges.
    Edges,
    /// Reached variables and crossed edges together.
    Subgraph,
    /// For each reached variable, the path that first reached it.
    Paths,
    /// The number of reached variables.
    Count,
}

impl Output {
    /// The keyword, as printed.
    pub fn keyword(self) -> &'static str {
        match self {
            Output::Nodes => "nodes",
            Output::Ops => "ops",
            Output::Edges => "edges",
            Output::Subgraph => "subgraph",
            Output::Paths => "paths",
            Output::Count => "count",
        }
    }
}

/// `IN TRACE 'id'` or `IN TRACE $name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InTrace {
    /// The trace id, given literally or as a parameter.
    pub trace: TextArg,
    /// Where the clause was written, from `IN` on.
    pub span: Span,
}

/// `TRACE` / `FORWARD`.
#[derive(Debug, Clone, PartialEq)]
pub struct Traverse {
    /// Backward or forward.
    pub direction: Direction,
    /// One or more starts.
    pub starts: Vec<Start>,
    /// `IN TRACE 'id'`.
    pub in_trace: Option<InTrace>,
    /// `DEPTH`.
    pub depth: Option<Depth>,
    /// `UNTIL p`.
    pub until: Option<Expr>,
    /// `WHILE p`.
    pub while_: Option<Expr>,
    /// `WHERE p`.
    pub filter: Option<Expr>,
    /// `RETURN ...`.
    pub output: Option<Output>,
    /// `LIMIT n`.
    pub limit: Option<CountArg>,
}

/// `RETURN [DISTINCT] expr [AS name], ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct Returns {
    /// `DISTINCT`.
    pub distinct: bool,
    /// The items.
    pub items: Vec<ReturnItem>,
}

/// One returned expression.
#[derive(Debug, Clone, PartialEq)]
pub struct ReturnItem {
    /// The expression.
    pub expr: Expr,
    /// `AS name`.
    pub alias: Option<String>,
}

/// Sort direction as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortDir {
    /// Not written (ascending).
    Default,
    /// `ASC`.
    Asc,
    /// `DESC`.
    Desc,
}

/// One `ORDER BY` key.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    /// The key.
    pub expr: Expr,
    /// The direction.
    pub dir: SortDir,
}

/// `MATCH`.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// Comma-separated patterns.
    pub patterns: Vec<Pattern>,
    /// `IN TRACE 'id'`.
    pub in_trace: Option<InTrace>,
    /// `WHERE p`.
    pub filter: Option<Expr>,
    /// `RETURN ...`.
    pub returns: Returns,
    /// `ORDER BY ...`.
    pub order_by: Vec<OrderItem>,
    /// `LIMIT n`.
    pub limit: Option<CountArg>,
}

/// What a FIND lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindKind {
    /// Variables (every version).
    Vars,
    /// Operations.
    Ops,
    /// Edges.
    Edges,
    /// Sessions.
    Sessions,
    /// Traces.
    Traces,
    /// Failed cases.
    Cases,
    /// Stored attribution verdicts.
    Attributions,
}

impl FindKind {
    /// The keyword, as printed.
    pub fn keyword(self) -> &'static str {
        match self {
            FindKind::Vars => "vars",
            FindKind::Ops => "ops",
            FindKind::Edges => "edges",
            FindKind::Sessions => "sessions",
            FindKind::Traces => "traces",
            FindKind::Cases => "cases",
            FindKind::Attributions => "attributions",
        }
    }
}

/// `FIND`.
#[derive(Debug, Clone, PartialEq)]
pub struct Find {
    /// What is listed.
    pub kind: FindKind,
    /// `IN TRACE 'id'`.
    pub in_trace: Option<InTrace>,
    /// `WHERE p`.
    pub filter: Option<Expr>,
    /// `GROUP BY e, ...`.
    pub group_by: Vec<Expr>,
    /// `RETURN ...`; without it, a default set of columns.
    pub returns: Option<Returns>,
    /// `ORDER BY ...`.
    pub order_by: Vec<OrderItem>,
    /// `LIMIT n`.
    pub limit: Option<CountArg>,
}

/// `DESCRIBE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Describe {
    /// The variable or op.
    pub target: Start,
    /// `IN TRACE 'id'`.
    pub in_trace: Option<InTrace>,
}

/// Which failed cases an `ATTRIBUTE` attributes.
#[derive(Debug, Clone, PartialEq)]
pub enum AttributeTarget {
    /// `CASES`: every failed case (of the trace, or of every trace).
    Cases,
    /// The cases these starts name: a case's query variable (full name or
    /// full node id) or the judge op id of a judge-derived case.
    Starts(Vec<Start>),
    /// `(FIND cases ...)` or `(RUN PATTERN name ...)`: the cases a subquery
    /// returns, across any number of traces, each attributed in its own trace.
    Query(Box<Subquery>),
}

/// A subquery in parentheses whose rows are the failed cases an
/// `ATTRIBUTE` attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Subquery {
    /// The statement inside the parentheses.
    pub query: CaseQuery,
    /// Where that statement was written, inside the parentheses.
    pub span: Span,
}

/// The statements a subquery of `ATTRIBUTE` may be. The grammar takes any
/// FIND and any RUN PATTERN; planning refuses those whose rows are not
/// failed cases (`FIND ops`, a pattern whose hits are ops, ...).
#[derive(Debug, Clone, PartialEq)]
pub enum CaseQuery {
    /// `FIND cases [IN TRACE 'id'] [WHERE p] [RETURN ...] [ORDER BY ...] [LIMIT n]`.
    Find(Find),
    /// `RUN PATTERN name [OVER TRACES WHERE p] [WITH $p = v, ...]`.
    RunPattern(RunPattern),
}

/// `ATTRIBUTE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// Which cases.
    pub target: AttributeTarget,
    /// `IN TRACE 'id'` (never with a subquery, which picks its own traces).
    pub in_trace: Option<InTrace>,
    /// `USING method`: the method's name as written (the engine checks it).
    pub method: String,
    /// Where the method's name was written.
    pub method_span: Span,
    /// `SETTING name`: what each case shows the method, as written (the
    /// engine checks it), and where the name was written.
    pub setting: Option<(String, Span)>,
}

/// `SAVE PATTERN`: a statement stored under a name, to be run over every
/// trace later with `RUN PATTERN`.
#[derive(Debug, Clone, PartialEq)]
pub struct SavePattern {
    /// The pattern's name: an identifier that is not a keyword, as written
    /// (names are case-sensitive).
    pub name: String,
    /// Defaults of the pattern's parameters, in written order (names without `$`).
    pub params: Vec<(String, Value)>,
    /// The saved statement: Traverse, Match or Find.
    pub body: Box<Statement>,
}

/// `RUN PATTERN`: runs a saved pattern over every trace, or over the traces
/// a condition picks.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPattern {
    /// The pattern's name, as written.
    pub name: String,
    /// `OVER TRACES WHERE p`.
    pub over: Option<Expr>,
    /// Parameter values given, in written order (names without `$`).
    pub params: Vec<(String, Value)>,
}
