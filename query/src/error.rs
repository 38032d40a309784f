//! The query error type.

use thiserror::Error;

/// Why a text is not a valid query.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The text does not follow the grammar.
    #[error("syntax error at line {line}, column {column}: {message}\n{snippet}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What was expected.
        message: String,
        /// The offending line with a caret under the position.
        snippet: String,
    },
    /// A number does not fit.
    #[error("{0}")]
    Invalid(String),
}

impl QueryError {
    pub(crate) fn from_pest(text: &str, e: pest::error::Error<crate::Rule>) -> QueryError {
        let (line, column) = match e.line_col {
            pest::error::LineColLocation::Pos(p) => p,
            pest::error::LineColLocation::Span(p, _) => p,
        };
        let message = match &e.variant {
            pest::error::ErrorVariant::ParsingError { positives, .. } if !positives.is_empty() => {
                let names: Vec<String> = positives.iter().map(|r| describe(*r)).collect();
                format!("expected {}", names.join(" or "))
            }
            pest::error::ErrorVariant::ParsingError { .. } => "unexpected input".to_string(),
            pest::error::ErrorVariant::CustomError { message } => message.clone(),
        };
        QueryError::Syntax {
            line,
            column,
            message,
            snippet: caret(text, line, column),
        }
    }
}

fn describe(rule: crate::Rule) -> String {
    use crate::Rule;
    match rule {
        Rule::EOI => "end of input".into(),
        Rule::string | Rule::quoted_id => "a quoted string".into(),
        Rule::int => "a version number".into(),
        Rule::bare | Rule::name_part => "a name".into(),
        Rule::version => "'@' and a version".into(),
        Rule::reference | Rule::name_ref => "a variable or op reference".into(),
        other => format!("{other:?}"),
    }
}

/// The line `line` of `text` and a caret under column `column`.
pub(crate) fn caret(text: &str, line: usize, column: usize) -> String {
    let src = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    format!("  {src}\n  {}^", " ".repeat(column.saturating_sub(1)))
}
