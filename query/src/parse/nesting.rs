//! The limits on how deep a statement may nest, checked before the tree is
//! built recursively.

use pest::iterators::Pairs;
use pest::Token;

use crate::error::QueryError;
use crate::grammar::Rule;

use super::reader::Result;

/// How deep expressions may nest (parentheses, lists, calls, NOTs): parsing
/// recurses once a level, and this keeps it well inside a thread's default
/// stack, so deep text is an error rather than a crash.
const MAX_NESTING: usize = 48;

/// Refuses a parsed statement whose expressions nest more than
/// [`MAX_NESTING`] deep, before the tree is built recursively.
pub(super) fn check_nesting(text: &str, pairs: &Pairs<'_, Rule>) -> Result<()> {
    let mut depth = 0usize;
    for token in pairs.clone().tokens() {
        match token {
            Token::Start {
                rule: Rule::expr | Rule::list | Rule::negation,
                pos,
            } => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(too_deep(text, pos.pos()));
                }
            }
            Token::End {
                rule: Rule::expr | Rule::list | Rule::negation,
                ..
            } => depth -= 1,
            _ => {}
        }
    }
    Ok(())
}

fn too_deep(text: &str, offset: usize) -> QueryError {
    QueryError::at(
        text,
        offset,
        format!("expressions nest more than {MAX_NESTING} levels deep"),
    )
}

/// Refuses text that could make the grammar itself recurse too deep: the
/// brackets and NOTs open at any point, outside strings and comments, may be
/// at most `4 * MAX_NESTING` (an upper bound of the grammar's recursion,
/// looser than [`check_nesting`] as it is read without the grammar's context).
/// A NOT is open until the end of its bracket level, or a `,`, `;`, or an
/// AND / OR that follows an operand (after a keyword, `and` may be a name).
///
/// Whether `--` starts a comment depends on that context: it does not inside
/// a bare name (`a--b`) or after the arrow `<-`. Where it may go either way
/// (at the top level, right after a character other than a space, bracket,
/// comma, semicolon or quote), both readings are followed.
pub(super) fn check_text_nesting(text: &str) -> Result<()> {
    let limit = 4 * MAX_NESTING;
    let b = text.as_bytes();
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // Where to read from, with how many NOTs are open at the top level.
    let mut todo = vec![(0usize, 0usize)];
    let mut seen = std::collections::HashSet::new();
    let mut line = None;
    while let Some((start, top_nots)) = todo.pop() {
        if !seen.insert((start, top_nots)) {
            continue;
        }
        // NOTs open at each bracket level; `open` counts brackets and NOTs.
        let mut levels = vec![top_nots];
        let mut open = top_nots;
        // Whether the last token may end an operand.
        let mut after_operand = false;
        let mut i = start;
        while i < b.len() {
            let c = b[i];
            match c {
                b'\'' => i = closing_quote(b, i),
                b'-' if b.get(i + 1) == Some(&b'-') && b.get(i + 2) != Some(&b'>') => {
                    // The end of the line, remembered for the next `--` on it.
                    let eol = match line {
                        Some((from, eol)) if from <= i && i <= eol => eol,
                        _ => {
                            let eol = b[i..]
                                .iter()
                                .position(|&c| c == b'\n')
                                .map_or(b.len(), |n| i + n);
                            line = Some((i, eol));
                            eol
                        }
                    };
                    if levels.len() > 1 || after_separator(b, i) {
                        i = eol;
                        continue;
                    }
                    todo.push((eol, levels[0]));
                    todo.push((i + 1, levels[0]));
                    break;
                }
                b' ' | b'\t' | b'\r' | b'\n' => {}
                b'(' | b'[' => {
                    levels.push(0);
                    open += 1;
                }
                b')' | b']' if levels.len() > 1 => {
                    open -= 1 + levels.pop().unwrap_or(0);
                }
                b',' | b';' => {
                    let last = levels.len() - 1;
                    open -= levels[last];
                    levels[last] = 0;
                }
                c if is_word(c) => {
                    let end = b[i..]
                        .iter()
                        .position(|&c| !is_word(c))
                        .map_or(b.len(), |n| i + n);
                    let word = &text[i..end];
                    let last = levels.len() - 1;
                    if word.eq_ignore_ascii_case("not") {
                        levels[last] += 1;
                        open += 1;
                        if open > limit {
                            return Err(too_deep(text, i));
                        }
                    } else if after_operand
                        && (word.eq_ignore_ascii_case("and") || word.eq_ignore_ascii_case("or"))
                    {
                        open -= levels[last];
                        levels[last] = 0;
                    }
                    after_operand = !crate::keywords::is_reserved(word)
                        || ["null", "true", "false"]
                            .iter()
                            .any(|k| word.eq_ignore_ascii_case(k));
                    i = end;
                    continue;
                }
                _ => {}
            }
            if !matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
                after_operand = matches!(c, b')' | b']' | b'\'');
            }
            if open > limit {
                return Err(too_deep(text, i));
            }
            i += 1;
        }
    }
    Ok(())
}

/// Where the string whose opening quote is at `open` ends: at its closing
/// quote, or at the end of the text when it is never closed (a doubled
/// quote is a quote inside the string).
fn closing_quote(b: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while i < b.len() {
        if b[i] == b'\'' {
            if b.get(i + 1) != Some(&b'\'') {
                return i;
            }
            i += 1;
        }
        i += 1;
    }
    i
}

/// Whether byte `i` starts the text or follows a space, a bracket, a comma,
/// a semicolon or a quote, where a `--` at the top level surely starts a
/// comment.
fn after_separator(b: &[u8], i: usize) -> bool {
    i == 0
        || matches!(
            b[i - 1],
            b' ' | b'\t' | b'\r' | b'\n' | b')' | b']' | b'}' | b',' | b';' | b'\''
        )
}
