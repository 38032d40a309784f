//! The query error type.

use thiserror::Error;

use crate::grammar::Rule;
use crate::keywords::{nearest, KEYWORDS, PATTERN_STATEMENTS, STATEMENTS};

/// Why a text is not a valid query.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueryError {
    /// The text does not follow the grammar.
    #[error("syntax error at line {line}, column {column}: {message}\n{snippet}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What was expected, and the nearest keyword when one is close.
        message: String,
        /// The offending line with a caret under the position.
        snippet: String,
    },
    /// The text parses but does not make sense (an unknown field, a
    /// misplaced aggregate, a number out of range).
    #[error("invalid statement at line {line}, column {column}: {message}\n{snippet}")]
    Invalid {
        /// 1-based line.
        line: usize,
        /// 1-based column (characters).
        column: usize,
        /// What is wrong.
        message: String,
        /// The offending line with a caret under the position.
        snippet: String,
    },
    /// A problem with no position in the text (a missing parameter, a bad value).
    #[error("{0}")]
    Other(String),
    /// The work was stopped from outside while it ran (a time limit passed,
    /// or whoever asked for it went away): see [`crate::eval::Row::stopped`].
    #[error("the statement was stopped")]
    Stopped,
}

/// Line and column (1-based, in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

impl QueryError {
    /// An error about the text at byte `offset`.
    pub(crate) fn at(text: &str, offset: usize, message: String) -> QueryError {
        let (line, column) = line_col(text, offset);
        QueryError::Invalid {
            line,
            column,
            message,
            snippet: caret(text, line, column),
        }
    }

    /// An [`Invalid`](QueryError::Invalid) error about the statement `text`
    /// at byte `offset`, with a caret under it; without text (a statement
    /// built, not parsed), an error without position.
    pub fn invalid_at(text: &str, offset: usize, message: impl Into<String>) -> QueryError {
        if text.is_empty() {
            QueryError::Other(message.into())
        } else {
            QueryError::at(text, offset, message.into())
        }
    }

    /// A [`Syntax`](QueryError::Syntax) error at byte `offset` of `text`,
    /// for what the grammar accepts only to report it better.
    pub(crate) fn syntax_at(text: &str, offset: usize, message: String) -> QueryError {
        let (line, column) = line_col(text, offset);
        QueryError::Syntax {
            line,
            column,
            message,
            snippet: caret(text, line, column),
        }
    }

    pub(crate) fn from_pest(text: &str, e: pest::error::Error<Rule>) -> QueryError {
        let offset = match e.location {
            pest::error::InputLocation::Pos(p) => p,
            pest::error::InputLocation::Span((p, _)) => p,
        };
        let (line, column) = line_col(text, offset);
        let word: String = text
            .get(offset..)
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let mut message = match &e.variant {
            pest::error::ErrorVariant::ParsingError { positives, .. } if !positives.is_empty() => {
                expected_message(text, offset, &word, positives)
            }
            pest::error::ErrorVariant::ParsingError { .. } => format!(
                "unexpected {}",
                if word.is_empty() {
                    "input".to_string()
                } else {
                    format!("'{word}'")
                }
            ),
            pest::error::ErrorVariant::CustomError { message } => message.clone(),
        };
        if message.is_empty() {
            message = "unexpected input".into();
        }
        QueryError::Syntax {
            line,
            column,
            message,
            snippet: caret(text, line, column),
        }
    }
}

/// "expected ..., found ...", with the nearest keyword or a note when one helps.
fn expected_message(text: &str, offset: usize, word: &str, positives: &[Rule]) -> String {
    let expected = expected_text(positives);
    let found = found_text(text, offset, word);
    let mut m = format!("expected {expected}, found {found}");
    // Suggest among the keywords expected here, else among all.
    let expected_kw = keywords_expected(positives);
    let before = text.get(..offset).unwrap_or("");
    let note =
        pattern_note(before, word, positives).or_else(|| unparenthesised_note(before, positives));
    let guess = if expected_kw.is_empty() || note.is_some() {
        None
    } else {
        nearest(word, expected_kw.iter().copied()).or_else(|| {
            // Any keyword, when the word is long enough to tell.
            (word.len() >= 4)
                .then(|| nearest(word, KEYWORDS.iter().copied()))
                .flatten()
        })
    };
    if let Some(k) = guess {
        m.push_str(&format!(" (did you mean {k}?)"));
    }
    // What a subquery may be, unless a near keyword says it.
    let note = note.or_else(|| {
        guess
            .is_none()
            .then(|| subquery_note(before, positives))
            .flatten()
    });
    if let Some(note) = note {
        m.push_str(&format!(" ({note})"));
    }
    m
}

/// What the grammar expected, as one choice: "A, B or C".
fn expected_text(positives: &[Rule]) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut ordered: Vec<Rule> = positives.to_vec();
    // The end of input reads best last.
    ordered.sort_by_key(|r| *r == Rule::EOI);
    for r in &ordered {
        // A direction is one of two keywords: listed as such, the
        // choice reads "..., TRACE or FORWARD", not "... or TRACE or FORWARD".
        let ds = match r {
            Rule::direction => vec!["TRACE".to_string(), "FORWARD".to_string()],
            r => vec![describe(*r)],
        };
        for d in ds {
            if !names.contains(&d) {
                names.push(d);
            }
        }
    }
    match names.len() {
        1 => names[0].clone(),
        n => format!("{} or {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

/// What stands where the error is: the word, a string, a character, or the end.
fn found_text(text: &str, offset: usize, word: &str) -> String {
    if word.is_empty() {
        match text.get(offset..).and_then(|s| s.chars().next()) {
            Some('\'') if !closed(&text[offset..]) => {
                "a string that is never closed (a quote inside one is written twice: 'it''s')"
                    .to_string()
            }
            Some('\'') => "a string".to_string(),
            Some(c) => format!("'{c}'"),
            None => "the end of the statement".to_string(),
        }
    } else {
        format!("'{word}'")
    }
}

/// The keywords the grammar expected here, to suggest the nearest one from.
fn keywords_expected(positives: &[Rule]) -> Vec<&'static str> {
    let mut expected_kw: Vec<&str> = positives.iter().filter_map(|r| keyword_of(*r)).collect();
    for r in positives {
        match r {
            Rule::output => expected_kw.extend(crate::keywords::OUTPUTS),
            Rule::find_kind => expected_kw.extend(crate::keywords::FIND_KINDS),
            Rule::statement => {
                expected_kw.extend(STATEMENTS);
                expected_kw.extend(PATTERN_STATEMENTS);
            }
            Rule::explain => expected_kw.extend(STATEMENTS),
            Rule::pattern_body => expected_kw.extend(["TRACE", "FORWARD", "MATCH", "FIND"]),
            _ => {}
        }
    }
    expected_kw
}

/// Whether `s`, which starts with a quote, holds a whole quoted string.
fn closed(s: &str) -> bool {
    let mut chars = s.chars().skip(1).peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            if chars.peek() == Some(&'\'') {
                chars.next();
            } else {
                return true;
            }
        }
    }
    false
}

/// Why `word`, found after the text `before`, cannot stand where a pattern
/// statement's part was expected: a keyword as a pattern's name, a pattern
/// statement after EXPLAIN.
fn pattern_note(before: &str, word: &str, positives: &[Rule]) -> Option<&'static str> {
    let is = |k: &str| word.eq_ignore_ascii_case(k);
    if positives.contains(&Rule::pattern_name) && crate::keywords::is_reserved(word) {
        return Some("a keyword cannot name a pattern");
    }
    let previous = before
        .trim_end()
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    // EXPLAIN's alternatives, which are DESCRIBE and ATTRIBUTE among others,
    // or, after SHOW, the TRACES of SHOW TRACES alone: the SHOW of an EXPLAIN.
    let after_explain = (positives.contains(&Rule::kw_describe)
        && positives.contains(&Rule::kw_attribute)
        && PATTERN_STATEMENTS.iter().any(|k| is(k)))
        || (positives.contains(&Rule::kw_traces)
            && !positives.contains(&Rule::kw_patterns)
            && previous.eq_ignore_ascii_case("SHOW")
            && (is("PATTERNS") || is("PATTERN")));
    after_explain.then_some(
        "EXPLAIN does not apply to SAVE PATTERN, RUN PATTERN, SHOW PATTERNS, \
         SHOW PATTERN ... HISTORY or DROP PATTERN",
    )
}

/// Why what was found cannot start a subquery of ATTRIBUTE: only a FIND
/// or a RUN PATTERN may follow its opening parenthesis.
fn subquery_note(before: &str, positives: &[Rule]) -> Option<&'static str> {
    (positives.contains(&Rule::kw_find)
        && positives.contains(&Rule::kw_run)
        && before.trim_end().ends_with('('))
    .then_some("ATTRIBUTE takes the cases of a subquery, which is a FIND cases or a RUN PATTERN")
}

/// A FIND or RUN PATTERN written after ATTRIBUTE without parentheses: its
/// first word reads as a case named `FIND`, after which only IN, USING or
/// `,` may follow.
fn unparenthesised_note(before: &str, positives: &[Rule]) -> Option<&'static str> {
    let words: Vec<&str> = before
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let [.., a, b] = words.as_slice() else {
        return None;
    };
    (a.eq_ignore_ascii_case("ATTRIBUTE")
        && (b.eq_ignore_ascii_case("FIND") || b.eq_ignore_ascii_case("RUN"))
        && positives.contains(&Rule::kw_using))
    .then_some("a subquery goes in parentheses: ATTRIBUTE (FIND cases ...) USING method")
}

/// The keyword a keyword rule matches.
fn keyword_of(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        kw_trace => "TRACE",
        kw_forward => "FORWARD",
        kw_in => "IN",
        kw_depth => "DEPTH",
        kw_until => "UNTIL",
        kw_while => "WHILE",
        kw_where => "WHERE",
        kw_return => "RETURN",
        kw_limit => "LIMIT",
        kw_match => "MATCH",
        kw_find => "FIND",
        kw_group => "GROUP",
        kw_order => "ORDER",
        kw_by => "BY",
        kw_asc => "ASC",
        kw_desc => "DESC",
        kw_distinct => "DISTINCT",
        kw_as => "AS",
        kw_show => "SHOW",
        kw_traces => "TRACES",
        kw_describe => "DESCRIBE",
        kw_explain => "EXPLAIN",
        kw_and => "AND",
        kw_or => "OR",
        kw_not => "NOT",
        kw_contains => "CONTAINS",
        kw_starts => "STARTS",
        kw_with => "WITH",
        kw_is => "IS",
        kw_null => "NULL",
        kw_true => "TRUE",
        kw_false => "FALSE",
        kw_attribute => "ATTRIBUTE",
        kw_cases | all_cases => "CASES",
        kw_using => "USING",
        kw_save => "SAVE",
        kw_pattern => "PATTERN",
        kw_patterns => "PATTERNS",
        kw_run => "RUN",
        kw_over => "OVER",
        kw_drop => "DROP",
        kw_history => "HISTORY",
        kw_setting | setting => "SETTING",
        _ => return None,
    })
}

fn describe(rule: Rule) -> String {
    if let Some(k) = keyword_of(rule) {
        return k.to_string();
    }
    match rule {
        Rule::EOI => "end of input".into(),
        Rule::string | Rule::quoted_id => "a quoted string".into(),
        Rule::int => "a number".into(),
        Rule::number | Rule::literal => "a value".into(),
        Rule::bare | Rule::name_part => "a name".into(),
        Rule::version => "'@' and a version".into(),
        Rule::reference | Rule::name_ref | Rule::start | Rule::starts | Rule::no_target => {
            "a variable or op reference".into()
        }
        Rule::param => "a $parameter".into(),
        Rule::ident | Rule::label => "a name".into(),
        Rule::field => "a field such as var.category".into(),
        Rule::statement => "a statement (TRACE, FORWARD, MATCH, FIND, SHOW, DESCRIBE, \
                            ATTRIBUTE, EXPLAIN, SAVE, RUN, DROP)"
            .into(),
        Rule::explain => {
            "a statement (TRACE, FORWARD, MATCH, FIND, SHOW, DESCRIBE, ATTRIBUTE, EXPLAIN)".into()
        }
        Rule::pattern_name => "a pattern name".into(),
        Rule::pattern_body => {
            "a TRACE, FORWARD, MATCH or FIND statement (what a pattern saves)".into()
        }
        Rule::pattern_params => "WITH".into(),
        Rule::pattern_param => "a parameter and its value ($name = value)".into(),
        Rule::equals => "'='".into(),
        Rule::param_value => {
            "a value (a string, number, TRUE, FALSE, NULL, or a list of them such as ['a', 'b'])"
                .into()
        }
        Rule::value_list => "a list".into(),
        Rule::over_traces => "OVER".into(),
        Rule::direction => "TRACE or FORWARD".into(),
        Rule::output => "nodes, ops, edges, subgraph, paths or count".into(),
        Rule::find_kind => "vars, ops, edges, sessions, traces, cases or attributions".into(),
        Rule::attribute => "ATTRIBUTE".into(),
        Rule::subquery => "a subquery such as (FIND cases ...)".into(),
        Rule::subquery_end => "')' (the end of the subquery)".into(),
        Rule::method => "an attribution method such as evidence".into(),
        Rule::setting_name => "a setting (benchmark, evaluation or production)".into(),
        Rule::expr | Rule::or_expr | Rule::and_expr | Rule::not_expr | Rule::comparison => {
            "an expression".into()
        }
        Rule::operand | Rule::call | Rule::list => "a value, field or function".into(),
        Rule::test | Rule::cmp | Rule::cmp_op => "an operator (=, !=, <, CONTAINS, ...)".into(),
        Rule::regex => "'=~'".into(),
        Rule::in_list => "IN".into(),
        Rule::is_null => "IS".into(),
        Rule::negated => "NOT".into(),
        Rule::depth_range => "a range m..n".into(),
        Rule::in_trace => "IN TRACE".into(),
        Rule::depth => "DEPTH".into(),
        Rule::until => "UNTIL".into(),
        Rule::while_clause => "WHILE".into(),
        Rule::where_clause => "WHERE".into(),
        Rule::return_kind | Rule::return_items => "RETURN".into(),
        Rule::limit => "LIMIT".into(),
        Rule::group_by => "GROUP BY".into(),
        Rule::order_by => "ORDER BY".into(),
        Rule::pattern | Rule::node_pat => "a node pattern such as (a:message)".into(),
        Rule::rel | Rule::rel_right | Rule::rel_left => "a relationship such as -[:kind]->".into(),
        Rule::rel_body => "'[' (a relationship is written -->, -[...]->, <-- or <-[...]-)".into(),
        Rule::hops | Rule::hop_range => "'*'".into(),
        Rule::props | Rule::prop => "'{'".into(),
        Rule::ret_item | Rule::order_item => "an expression".into(),
        Rule::distinct => "DISTINCT".into(),
        Rule::asc => "ASC".into(),
        Rule::desc => "DESC".into(),
        Rule::star => "'*'".into(),
        other => format!("{other:?}"),
    }
}

/// The line `line` of `text` and a caret under column `column`.
pub(crate) fn caret(text: &str, line: usize, column: usize) -> String {
    let src = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    format!("  {src}\n  {}^", " ".repeat(column.saturating_sub(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_keyword_rule_is_a_listed_keyword() {
        let mut rules = 0;
        for rule in Rule::all_rules() {
            let name = format!("{rule:?}");
            let Some(word) = name.strip_prefix("kw_") else {
                continue;
            };
            rules += 1;
            let k = keyword_of(*rule).unwrap_or_else(|| panic!("{name} has no keyword"));
            assert!(k.eq_ignore_ascii_case(word), "{name} reads {k}");
            assert!(KEYWORDS.contains(&k), "{k} is not in KEYWORDS");
        }
        assert_eq!(rules, KEYWORDS.len());
    }

    #[test]
    fn line_and_column_count_characters() {
        assert_eq!(line_col("abc", 0), (1, 1));
        assert_eq!(line_col("abc\ndé f", 7), (2, 3));
        assert_eq!(line_col("abc", 99), (1, 4));
    }

    #[test]
    fn an_unclosed_string_and_a_direction_read_well() {
        let e = crate::parse_statement("FIND vars WHERE var.name = 'it''s").unwrap_err();
        assert!(
            e.to_string()
                .contains("found a string that is never closed"),
            "{e}"
        );
        assert!(closed("'it''s' AND") && !closed("'it''s") && !closed("'"));
        let e = crate::parse_statement("EXPLAIN EXPLAIN SHOW TRACES").unwrap_err();
        let m = e.to_string();
        assert!(m.contains(", TRACE or FORWARD, found 'EXPLAIN'"), "{m}");
        assert!(!m.contains("or TRACE or"), "{m}");
        let e = crate::parse_statement("MATCH (a)->(b) RETURN a").unwrap_err();
        assert!(
            e.to_string().contains("expected '[' (a relationship is written -->, -[...]->, <-- or <-[...]-), found '>'"),
            "{e}"
        );
    }
}
