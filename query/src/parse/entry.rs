//! From text to [`Statement`]s, through the pest grammar.

use pest::Parser;

use crate::ast::Statement;
use crate::error::QueryError;
use crate::grammar::{MemtraceParser, Rule};

use super::nesting::{check_nesting, check_text_nesting};
use super::reader::{Reader, Result};

/// Parses one statement (a trailing `;` is allowed).
pub fn parse_statement(text: &str) -> Result<Statement> {
    check_text_nesting(text)?;
    let mut pairs =
        MemtraceParser::parse(Rule::query, text).map_err(|e| QueryError::from_pest(text, e))?;
    check_nesting(text, &pairs)?;
    let query = pairs.next().ok_or_else(empty)?;
    let stmt = query
        .into_inner()
        .find(|p| p.as_rule() == Rule::statement)
        .ok_or_else(empty)?;
    Reader { text }.statement(stmt)
}

/// Parses a script: statements separated by `;`, with `--` comments.
pub fn parse_script(text: &str) -> Result<Vec<Statement>> {
    check_text_nesting(text)?;
    let mut pairs = MemtraceParser::parse(Rule::statements, text)
        .map_err(|e| QueryError::from_pest(text, e))?;
    check_nesting(text, &pairs)?;
    let all = pairs.next().ok_or_else(empty)?;
    let p = Reader { text };
    all.into_inner()
        .filter(|x| x.as_rule() == Rule::statement)
        .map(|s| p.statement(s))
        .collect()
}

fn empty() -> QueryError {
    QueryError::Other("empty statement".into())
}
