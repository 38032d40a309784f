//! From text to [`Statement`](crate::ast::Statement)s, through the pest
//! grammar: the nesting limits are checked first, then a reader builds the
//! tree from the grammar's pairs, statements, patterns and expressions each
//! in their own file.

mod entry;
mod exprs;
mod nesting;
mod patterns;
mod reader;
mod statements;
#[cfg(test)]
mod tests;

pub use entry::{parse_script, parse_statement};
