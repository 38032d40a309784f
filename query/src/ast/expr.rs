//! Expressions: predicates and returned values.

use super::span::Span;

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
