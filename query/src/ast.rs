//! The abstract syntax tree of a statement, and how it prints back to text.
//!
//! Printing is canonical: keywords in upper case, one space between tokens,
//! parentheses only where precedence needs them. Parsing what a statement
//! prints gives the same statement back.
//!
//! The nodes that errors point at (field paths, calls, pattern variables,
//! property keys, `IN TRACE`, the parts of `=~`, a subquery, a method and
//! its setting) carry their [`Span`] in the statement text, set by the
//! parser. Spans take part in equality, so trees read from different texts
//! compare equal only once their spans are cleared.

use std::fmt::{self, Display, Formatter, Write};

use crate::node_ref::{quote, NodeRef};
use crate::value::Value;

#[cfg(test)]
pub(crate) mod spans;

/// The bytes `start..end` of the statement text a node was read from, so
/// errors can point at it; `0..0` in a statement built rather than parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

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

/// A name the statement binds or refers to (a pattern variable, a
/// property key), with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// The name as written.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// `key: value` in the braces of a node or relationship pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The field the value is required of.
    pub key: Ident,
    /// A literal or a parameter.
    pub value: Expr,
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

/// A node in a MATCH pattern: `(a:class {key: value})`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodePattern {
    /// The variable it binds.
    pub var: Option<Ident>,
    /// Its class name.
    pub label: Option<String>,
    /// Required field values.
    pub props: Vec<Property>,
}

/// How many hops a relationship pattern spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hops {
    /// `*n`.
    Exact(u32),
    /// `*`, `*m..`, `*..n`, `*m..n`.
    Range(Option<u32>, Option<u32>),
}

/// An edge in a MATCH pattern: `-[e:op_kind*1..3 {key: value}]->` or `<-[...]-`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RelPattern {
    /// `<-` instead of `->`.
    pub leftward: bool,
    /// The variable it binds (single hops only).
    pub var: Option<Ident>,
    /// The kind (category) of the op that made the edge.
    pub label: Option<String>,
    /// Variable length.
    pub hops: Option<Hops>,
    /// Required edge field values.
    pub props: Vec<Property>,
}

/// A chain of node and relationship patterns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pattern {
    /// The first node.
    pub first: NodePattern,
    /// Each relationship with the node it leads to.
    pub steps: Vec<(RelPattern, NodePattern)>,
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
    Query(Subquery),
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

/// A literal value.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `'text'`.
    Str(String),
    /// An integer.
    Int(i64),
    /// A number with a fraction or exponent.
    Float(f64),
    /// `TRUE` / `FALSE`.
    Bool(bool),
    /// `NULL`.
    Null,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` (also written `<>`)
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator as printed.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A test that follows an operand.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// `= != < <= > >=`
    Cmp(CmpOp, Box<Expr>),
    /// `CONTAINS x`
    Contains(Box<Expr>),
    /// `STARTS WITH x`
    StartsWith(Box<Expr>),
    /// `=~ 'regex'`
    Regex {
        /// The regular expression.
        pattern: Box<Expr>,
        /// Where the `=~` was written.
        operator: Span,
        /// Where the regular expression was written.
        pattern_span: Span,
    },
    /// `[NOT] IN [..]` or `[NOT] IN $list`
    In {
        /// `NOT IN`.
        negated: bool,
        /// A list or a parameter.
        list: Box<Expr>,
    },
    /// `IS [NOT] NULL`
    IsNull {
        /// `IS NOT NULL`.
        negated: bool,
    },
}

/// A field path such as `var.category`, `op.meta.model` or `a.value`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldPath {
    /// The dot-separated parts.
    pub parts: Vec<String>,
    /// Where it was written.
    pub span: Span,
}

/// The argument of a function call.
#[derive(Debug, Clone, PartialEq)]
pub enum CallArg {
    /// `f()`.
    None,
    /// `count(*)`.
    Star,
    /// `f(expr)` or `f(DISTINCT expr)`.
    Expr {
        /// `DISTINCT`.
        distinct: bool,
        /// The argument.
        expr: Box<Expr>,
    },
}

/// An expression: predicates and returned values.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Literal),
    /// `$name`.
    Param(String),
    /// A field path.
    Field(FieldPath),
    /// `[a, b, ...]`.
    List(Vec<Expr>),
    /// `name(arg)`.
    Call {
        /// The function name as written.
        name: String,
        /// Its argument.
        arg: CallArg,
        /// Where it was written.
        span: Span,
    },
    /// An operand with a test.
    Test(Box<Expr>, Test),
    /// `NOT e`.
    Not(Box<Expr>),
    /// `a AND b AND ...` (two or more).
    And(Vec<Expr>),
    /// `a OR b OR ...` (two or more).
    Or(Vec<Expr>),
}

// ------------------------------------------------------------------ printing

/// Is `s` printable as an identifier (and not mistaken for a keyword)?
pub(crate) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && !crate::keywords::is_reserved(s)
}

fn write_name(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    if is_ident(s) {
        f.write_str(s)
    } else {
        f.write_str(&quote(s))
    }
}

fn join<T: Display>(f: &mut Formatter<'_>, items: &[T], sep: &str) -> fmt::Result {
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{it}")?;
    }
    Ok(())
}

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Traverse(t) => t.fmt(f),
            Statement::Match(m) => m.fmt(f),
            Statement::Find(x) => x.fmt(f),
            Statement::ShowTraces => f.write_str("SHOW TRACES"),
            Statement::Describe(d) => d.fmt(f),
            Statement::Attribute(a) => a.fmt(f),
            Statement::Explain(s) => write!(f, "EXPLAIN {s}"),
            Statement::SavePattern(s) => s.fmt(f),
            Statement::RunPattern(r) => r.fmt(f),
            Statement::ShowPatterns => f.write_str("SHOW PATTERNS"),
            Statement::ShowPatternHistory(name) => write!(f, "SHOW PATTERN {name} HISTORY"),
            Statement::DropPattern(name) => write!(f, "DROP PATTERN {name}"),
        }
    }
}

/// A value written as a literal the parser reads back as the same value:
/// `NULL`, `TRUE`, `FALSE`, an integer, a float that keeps its fraction or
/// exponent (`2.0`, `1e-7`), a quoted string with quotes doubled
/// (`'it''s'`), a list in brackets (`['a', 'b']`).
///
/// A float that is not finite has no literal and is written `NULL`. A list
/// inside a list reads back inside an expression, but not as the value of
/// a `WITH $p = ...`, which takes literals and lists of literals only.
pub fn value_literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Bool(true) => "TRUE".to_string(),
        Value::Bool(false) => "FALSE".to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(x) if x.is_finite() => Literal::Float(*x).to_string(),
        Value::Float(_) => "NULL".to_string(),
        Value::Str(s) => quote(s),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(value_literal).collect();
            format!("[{}]", items.join(", "))
        }
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

/// Writes ` WITH $a = v, $b = w`, or nothing for no parameters.
fn write_params(f: &mut Formatter<'_>, params: &[(String, Value)]) -> fmt::Result {
    for (i, (name, v)) in params.iter().enumerate() {
        f.write_str(if i == 0 { " WITH " } else { ", " })?;
        write!(f, "${name} = {}", value_literal(v))?;
    }
    Ok(())
}

impl Display for SavePattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "SAVE PATTERN {}", self.name)?;
        write_params(f, &self.params)?;
        write!(f, " AS {}", self.body)
    }
}

impl Display for RunPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "RUN PATTERN {}", self.name)?;
        if let Some(p) = &self.over {
            write!(f, " OVER TRACES WHERE {p}")?;
        }
        write_params(f, &self.params)
    }
}

impl Display for TextArg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TextArg::Text(s) => f.write_str(&quote(s)),
            TextArg::Param(p) => write!(f, "${p}"),
        }
    }
}

impl Display for CountArg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CountArg::Value(n) => write!(f, "{n}"),
            CountArg::Param(p) => write!(f, "${p}"),
        }
    }
}

impl Display for Start {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Start::Ref(r) => r.fmt(f),
            Start::Param(p) => write!(f, "${p}"),
        }
    }
}

fn write_in_trace(f: &mut Formatter<'_>, t: &Option<InTrace>) -> fmt::Result {
    match t {
        Some(t) => write!(f, " IN TRACE {}", t.trace),
        None => Ok(()),
    }
}

fn write_limit(f: &mut Formatter<'_>, l: &Option<CountArg>) -> fmt::Result {
    match l {
        Some(l) => write!(f, " LIMIT {l}"),
        None => Ok(()),
    }
}

fn write_order(f: &mut Formatter<'_>, items: &[OrderItem]) -> fmt::Result {
    if items.is_empty() {
        return Ok(());
    }
    f.write_str(" ORDER BY ")?;
    join(f, items, ", ")
}

impl Display for Traverse {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self.direction {
            Direction::Backward => "TRACE ",
            Direction::Forward => "FORWARD ",
        })?;
        join(f, &self.starts, ", ")?;
        write_in_trace(f, &self.in_trace)?;
        match self.depth {
            Some(Depth::Max(n)) => write!(f, " DEPTH {n}")?,
            Some(Depth::Range(m, n)) => write!(f, " DEPTH {m}..{n}")?,
            None => {}
        }
        if let Some(p) = &self.until {
            write!(f, " UNTIL {p}")?;
        }
        if let Some(p) = &self.while_ {
            write!(f, " WHILE {p}")?;
        }
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        if let Some(o) = self.output {
            write!(f, " RETURN {}", o.keyword())?;
        }
        write_limit(f, &self.limit)
    }
}

fn write_props(f: &mut Formatter<'_>, props: &[Property]) -> fmt::Result {
    if props.is_empty() {
        return Ok(());
    }
    f.write_str(" {")?;
    for (i, p) in props.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{}: {}", p.key.name, p.value)?;
    }
    f.write_str("}")
}

impl Display for NodePattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        if let Some(v) = &self.var {
            f.write_str(&v.name)?;
        }
        if let Some(l) = &self.label {
            f.write_str(":")?;
            write_name(f, l)?;
        }
        write_props(f, &self.props)?;
        f.write_str(")")
    }
}

impl Display for RelPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(if self.leftward { "<-" } else { "-" })?;
        let body = self.var.is_some()
            || self.label.is_some()
            || self.hops.is_some()
            || !self.props.is_empty();
        if body {
            f.write_str("[")?;
            if let Some(v) = &self.var {
                f.write_str(&v.name)?;
            }
            if let Some(l) = &self.label {
                f.write_str(":")?;
                write_name(f, l)?;
            }
            match self.hops {
                Some(Hops::Exact(n)) => write!(f, "*{n}")?,
                Some(Hops::Range(a, b)) => {
                    f.write_str("*")?;
                    if a.is_some() || b.is_some() {
                        if let Some(a) = a {
                            write!(f, "{a}")?;
                        }
                        f.write_str("..")?;
                        if let Some(b) = b {
                            write!(f, "{b}")?;
                        }
                    }
                }
                None => {}
            }
            write_props(f, &self.props)?;
            f.write_str("]")?;
        }
        f.write_str(if self.leftward { "-" } else { "->" })
    }
}

impl Display for Pattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.first.fmt(f)?;
        for (r, n) in &self.steps {
            write!(f, "{r}{n}")?;
        }
        Ok(())
    }
}

impl Display for ReturnItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if let Some(a) = &self.alias {
            write!(f, " AS {a}")?;
        }
        Ok(())
    }
}

impl Display for Returns {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(" RETURN ")?;
        if self.distinct {
            f.write_str("DISTINCT ")?;
        }
        join(f, &self.items, ", ")
    }
}

impl Display for OrderItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        match self.dir {
            SortDir::Default => Ok(()),
            SortDir::Asc => f.write_str(" ASC"),
            SortDir::Desc => f.write_str(" DESC"),
        }
    }
}

impl Display for Match {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("MATCH ")?;
        join(f, &self.patterns, ", ")?;
        write_in_trace(f, &self.in_trace)?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        self.returns.fmt(f)?;
        write_order(f, &self.order_by)?;
        write_limit(f, &self.limit)
    }
}

impl Display for Find {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "FIND {}", self.kind.keyword())?;
        write_in_trace(f, &self.in_trace)?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            join(f, &self.group_by, ", ")?;
        }
        if let Some(r) = &self.returns {
            r.fmt(f)?;
        }
        write_order(f, &self.order_by)?;
        write_limit(f, &self.limit)
    }
}

impl Display for Describe {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "DESCRIBE {}", self.target)?;
        write_in_trace(f, &self.in_trace)
    }
}

impl Display for CaseQuery {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CaseQuery::Find(x) => x.fmt(f),
            CaseQuery::RunPattern(r) => r.fmt(f),
        }
    }
}

impl Display for Attribute {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("ATTRIBUTE ")?;
        match &self.target {
            AttributeTarget::Cases => f.write_str("CASES")?,
            AttributeTarget::Starts(starts) => join(f, starts, ", ")?,
            AttributeTarget::Query(q) => write!(f, "({})", q.query)?,
        }
        write_in_trace(f, &self.in_trace)?;
        write!(f, " USING {}", self.method)?;
        if let Some((setting, _)) = &self.setting {
            write!(f, " SETTING {setting}")?;
        }
        Ok(())
    }
}

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => f.write_str(&quote(s)),
            Literal::Int(n) => write!(f, "{n}"),
            Literal::Float(x) => {
                // Debug keeps a fraction or exponent, so it reads back as a float.
                let mut s = String::new();
                write!(s, "{x:?}")?;
                f.write_str(&s)
            }
            Literal::Bool(true) => f.write_str("TRUE"),
            Literal::Bool(false) => f.write_str("FALSE"),
            Literal::Null => f.write_str("NULL"),
        }
    }
}

impl Display for FieldPath {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
                write_name(f, p)?;
            } else {
                f.write_str(p)?;
            }
        }
        Ok(())
    }
}

/// Binding strength, loosest first.
#[derive(PartialEq, PartialOrd, Clone, Copy)]
enum Prec {
    Or,
    And,
    Not,
    Test,
    Operand,
}

impl Expr {
    fn prec(&self) -> Prec {
        match self {
            Expr::Or(_) => Prec::Or,
            Expr::And(_) => Prec::And,
            Expr::Not(_) => Prec::Not,
            Expr::Test(..) => Prec::Test,
            _ => Prec::Operand,
        }
    }

    /// Writes `self`, in parentheses when it binds looser than `min`.
    fn write_at(&self, f: &mut Formatter<'_>, min: Prec) -> fmt::Result {
        if self.prec() < min {
            write!(f, "({self})")
        } else {
            write!(f, "{self}")
        }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Lit(l) => l.fmt(f),
            Expr::Param(p) => write!(f, "${p}"),
            Expr::Field(p) => {
                // A keyword heading a path reads as that keyword where one may
                // stand (`RETURN distinct.x`, `not IS NULL`): such a path goes in
                // parentheses, unless it is longer than the keyword and the
                // keyword cannot be taken for it (`trace.id`).
                let head = p.parts.first().map_or("", String::as_str);
                if crate::keywords::is_reserved(head)
                    && (p.parts.len() == 1 || head.eq_ignore_ascii_case("distinct"))
                {
                    write!(f, "({p})")
                } else {
                    p.fmt(f)
                }
            }
            Expr::List(items) => {
                // Items are operands: a test or a connective goes in parentheses.
                f.write_str("[")?;
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    e.write_at(f, Prec::Operand)?;
                }
                f.write_str("]")
            }
            Expr::Call { name, arg, .. } => {
                write!(f, "{name}(")?;
                match arg {
                    CallArg::None => {}
                    CallArg::Star => f.write_str("*")?,
                    CallArg::Expr { distinct, expr } => {
                        if *distinct {
                            f.write_str("DISTINCT ")?;
                        }
                        expr.fmt(f)?;
                    }
                }
                f.write_str(")")
            }
            Expr::Test(left, test) => {
                left.write_at(f, Prec::Operand)?;
                match test {
                    Test::Cmp(op, r) => {
                        write!(f, " {} ", op.symbol())?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::Contains(r) => {
                        f.write_str(" CONTAINS ")?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::StartsWith(r) => {
                        f.write_str(" STARTS WITH ")?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::Regex { pattern: r, .. } => {
                        f.write_str(" =~ ")?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::In { negated, list } => {
                        f.write_str(if *negated { " NOT IN " } else { " IN " })?;
                        list.write_at(f, Prec::Operand)
                    }
                    Test::IsNull { negated } => {
                        f.write_str(if *negated { " IS NOT NULL" } else { " IS NULL" })
                    }
                }
            }
            Expr::Not(e) => {
                f.write_str("NOT ")?;
                e.write_at(f, Prec::Not)
            }
            Expr::And(items) => {
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" AND ")?;
                    }
                    // A nested AND keeps its own parentheses, so it reads back as written.
                    e.write_at(f, Prec::Not)?;
                }
                Ok(())
            }
            Expr::Or(items) => {
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" OR ")?;
                    }
                    e.write_at(f, Prec::And)?;
                }
                Ok(())
            }
        }
    }
}
