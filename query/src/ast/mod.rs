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

mod expr;
mod pattern;
mod print_expr;
mod print_statement;
mod span;
mod statement;
#[cfg(test)]
pub(crate) mod strip_spans;
mod values;
mod write;

pub use expr::{CallArg, CmpOp, Expr, FieldPath, Literal, Test};
pub use pattern::{Hops, NodePattern, Pattern, Property, RelPattern};
pub use span::{Ident, Span};
pub use statement::{
    Attribute, AttributeTarget, CaseQuery, CountArg, Depth, Describe, Direction, Find, FindKind,
    InTrace, Match, OrderItem, Output, ReturnItem, Returns, RunPattern, SavePattern, SortDir,
    Start, Statement, Subquery, TextArg, Traverse,
};
pub(crate) use values::literal_value;
pub use values::value_literal;
