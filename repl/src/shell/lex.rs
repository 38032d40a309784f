//! A forgiving scanner of statement text for the shell: it splits what is
//! being typed into tokens (even when unfinished) so that highlighting,
//! completion and the "is this statement finished?" check agree with the
//! grammar on strings and comments.

use memtrace::engine::KEYWORDS;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A keyword of the language (any case).
    Keyword,
    /// A name: an identifier, a field path (`var.category`), a node
    /// reference (`message:D1:3`, `answer:42@2`) or a trace id (`#3`).
    Word,
    /// A `'single-quoted'` string; `closed` is false while it is still open.
    Str {
        /// Whether the closing quote has been typed.
        closed: bool,
    },
    /// A number.
    Number,
    /// A `$parameter`.
    Param,
    /// A `--` comment, to the end of its line.
    Comment,
    /// `;`
    Semicolon,
    /// Anything else that is not blank: brackets, arrows, operators.
    Punct,
}

/// One token: its kind and its byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: Kind,
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// Whether `c` continues a word (names, field paths, node references).
pub fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '@' | '#' | '$')
}

fn is_keyword(word: &str) -> bool {
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// Splits `text` into tokens; blanks are skipped. Never fails: an
/// unterminated string runs to the end of the text.
pub fn tokens(text: &str) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = text[i..].chars().next().unwrap_or(' ');
        let start = i;
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        let kind = if c == '\'' {
            // A quote inside a string is written twice.
            i += 1;
            let mut closed = false;
            while i < bytes.len() {
                if bytes[i] == b'\'' {
                    if bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    closed = true;
                    break;
                }
                i += 1;
            }
            Kind::Str { closed }
        } else if text[i..].starts_with("--") && !text[i..].starts_with("-->") {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            Kind::Comment
        } else if c == ';' {
            i += 1;
            Kind::Semicolon
        } else if c == '$' {
            i += 1;
            while let Some(ch) = text[i..].chars().next() {
                if !(ch.is_alphanumeric() || ch == '_') {
                    break;
                }
                i += ch.len_utf8();
            }
            Kind::Param
        } else if c.is_ascii_digit() {
            while let Some(ch) = text[i..].chars().next() {
                if !(ch.is_ascii_alphanumeric() || ch == '.') || text[i..].starts_with("..") {
                    break;
                }
                i += ch.len_utf8();
            }
            if text[start..i]
                .chars()
                .all(|ch| ch.is_ascii_digit() || ch == '.')
            {
                Kind::Number
            } else {
                // `1a`, a name that starts with a digit (part of a node reference).
                while let Some(ch) = text[i..].chars().next() {
                    if !word_char(ch) {
                        break;
                    }
                    i += ch.len_utf8();
                }
                Kind::Word
            }
        } else if text[i..].starts_with("..") {
            i += 2;
            Kind::Punct
        } else if word_char(c) {
            while let Some(ch) = text[i..].chars().next() {
                if !word_char(ch) || (ch == '.' && text[i..].starts_with("..")) {
                    break;
                }
                i += ch.len_utf8();
            }
            if is_keyword(&text[start..i]) {
                Kind::Keyword
            } else {
                Kind::Word
            }
        } else {
            i += c.len_utf8();
            Kind::Punct
        };
        // Every token takes at least one character.
        if i == start {
            i += c.len_utf8();
        }
        out.push(Token {
            kind,
            start,
            end: i,
        });
    }
    out
}

/// Whether `text` is ready to run: it ends with `;` outside strings and
/// comments, or it holds nothing but blanks and comments.
pub fn is_complete(text: &str) -> bool {
    let toks = tokens(text);
    match toks.iter().rev().find(|t| t.kind != Kind::Comment) {
        None => true,
        Some(t) => t.kind == Kind::Semicolon,
    }
}

/// Whether `text` holds anything besides blanks, comments and `;`.
pub fn has_statement(text: &str) -> bool {
    tokens(text)
        .iter()
        .any(|t| !matches!(t.kind, Kind::Comment | Kind::Semicolon))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, &str)> {
        tokens(text)
            .into_iter()
            .map(|t| (t.kind, &text[t.start..t.end]))
            .collect()
    }

    #[test]
    fn statements_split_into_tokens() {
        assert_eq!(
            kinds("trace answer:42 DEPTH 1..3 WHERE var.value = 'it''s' -- why\nLIMIT $n;"),
            vec![
                (Kind::Keyword, "trace"),
                (Kind::Word, "answer:42"),
                (Kind::Keyword, "DEPTH"),
                (Kind::Number, "1"),
                (Kind::Punct, ".."),
                (Kind::Number, "3"),
                (Kind::Keyword, "WHERE"),
                (Kind::Word, "var.value"),
                (Kind::Punct, "="),
                (Kind::Str { closed: true }, "'it''s'"),
                (Kind::Comment, "-- why"),
                (Kind::Keyword, "LIMIT"),
                (Kind::Param, "$n"),
                (Kind::Semicolon, ";"),
            ]
        );
    }

    #[test]
    fn arrows_are_not_comments_and_open_strings_run_to_the_end() {
        assert_eq!(
            kinds("(a)-->(b)"),
            vec![
                (Kind::Punct, "("),
                (Kind::Word, "a"),
                (Kind::Punct, ")"),
                (Kind::Punct, "-"),
                (Kind::Punct, "-"),
                (Kind::Punct, ">"),
                (Kind::Punct, "("),
                (Kind::Word, "b"),
                (Kind::Punct, ")"),
            ]
        );
        assert_eq!(
            kinds("x = 'memory_e"),
            vec![
                (Kind::Word, "x"),
                (Kind::Punct, "="),
                (Kind::Str { closed: false }, "'memory_e"),
            ]
        );
    }

    #[test]
    fn a_statement_is_complete_at_a_semicolon_outside_strings_and_comments() {
        assert!(is_complete("SHOW TRACES;"));
        assert!(is_complete("SHOW TRACES;  -- done\n"));
        assert!(is_complete("FIND vars\nWHERE var.name = 'a'\n;"));
        assert!(is_complete(""));
        assert!(is_complete("-- only a comment"));
        assert!(!is_complete("SHOW TRACES"));
        assert!(!is_complete("FIND vars WHERE var.value = 'a;"));
        assert!(!is_complete("SHOW TRACES -- not yet;"));
        assert!(is_complete("FIND vars WHERE var.value = 'a;';"));
        assert!(has_statement("SHOW TRACES"));
        assert!(!has_statement(" -- nothing\n;"));
    }

    #[test]
    fn unicode_text_does_not_split_characters() {
        let t = kinds("FIND vars WHERE var.value = 'café ☕' AND var.name = naïve;");
        assert!(t.contains(&(Kind::Str { closed: true }, "'café ☕'")));
        assert!(t.contains(&(Kind::Word, "naïve")));
    }
}
