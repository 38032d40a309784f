//! The reader of a statement's pairs and the helpers its parts share.

use pest::iterators::Pair;

use crate::ast::{Ident, Span};
use crate::error::QueryError;
use crate::grammar::Rule;

/// What parsing returns: a part of the tree, else a statement error.
pub(super) type Result<T> = std::result::Result<T, QueryError>;

/// Reads the tree of a statement out of the grammar's pairs; errors point
/// into `text`.
pub(super) struct Reader<'t> {
    pub(super) text: &'t str,
}

/// An error for a tree the grammar should not have produced.
pub(super) fn bug(what: &str) -> QueryError {
    QueryError::Other(format!("internal parser error: unexpected shape of {what}"))
}

impl Reader<'_> {
    /// An error pointing at where `pair` starts.
    pub(super) fn err(&self, pair: &Pair<'_, Rule>, message: String) -> QueryError {
        QueryError::at(self.text, pair.as_span().start(), message)
    }
}

/// The name of a `$name` parameter, without the `$`.
pub(super) fn param_name(p: &Pair<'_, Rule>) -> String {
    p.as_str().trim_start_matches('$').to_string()
}

/// Where a pair was read in the statement text.
pub(super) fn span_of(p: &Pair<'_, Rule>) -> Span {
    let s = p.as_span();
    Span {
        start: s.start(),
        end: s.end(),
    }
}

/// A name and where it was written.
pub(super) fn ident(p: &Pair<'_, Rule>) -> Ident {
    Ident {
        name: p.as_str().to_string(),
        span: span_of(p),
    }
}

/// Where the value an operand holds was written, inside any parentheses
/// around it.
pub(super) fn operand_span(pair: &Pair<'_, Rule>) -> Span {
    let mut p = pair.clone();
    loop {
        let wraps_one = matches!(
            p.as_rule(),
            Rule::operand
                | Rule::expr
                | Rule::or_expr
                | Rule::and_expr
                | Rule::not_expr
                | Rule::comparison
        );
        let mut inner = p.clone().into_inner();
        match (inner.next(), inner.next()) {
            (Some(only), None) if wraps_one => p = only,
            _ => return span_of(&p),
        }
    }
}
