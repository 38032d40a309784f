//! Control characters made visible. A trace may hold any text in its ids
//! and values; printed raw, an escape sequence (ESC `]0;...BEL` sets the
//! terminal's title, ESC `[31m` colours what follows), a NUL or a
//! bidirectional override would act on the terminal, or hide or reorder what
//! is shown. Every human-readable output shows such a character as `\u{…}`,
//! its code point in lower-case hexadecimal (ESC is `\u{1b}`, NUL `\u{0}`).
//! A backslash is shown as it is, so the text `\u{1b}` and the character
//! look alike here; the JSON and CSV outputs keep the exact values.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is shown escaped: the C0 controls (U+0000–U+001F, NUL, tab,
/// line breaks and ESC among them), DEL (U+007F), the C1 controls
/// (U+0080–U+009F), the bidirectional-text controls (U+061C, U+200E,
/// U+200F, U+202A–U+202E, U+2066–U+2069) and the line and paragraph
/// separators (U+2028, U+2029).
pub fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{61c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// Appends the visible form of `c`, `\u{…}`, to `out`.
pub fn push_escaped(out: &mut String, c: char) {
    // Writing to a String does not fail.
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

fn escape_where(s: &str, hide: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&hide) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hide(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` with every character of [`is_hidden`] shown as `\u{…}`: the form of
/// ids and values in tables, trees and one-line messages.
pub fn visible(s: &str) -> Cow<'_, str> {
    escape_where(s, is_hidden)
}

/// Like [`visible`], but line breaks (`\n`) and tabs are kept: the form of
/// messages of several lines (an error with its caret line).
pub fn visible_lines(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| is_hidden(c) && c != '\n' && c != '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(visible("plain ünïcode 日本"), "plain ünïcode 日本");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
        assert_eq!(visible("\u{1b}]0;pwned\u{7}"), "\\u{1b}]0;pwned\\u{7}");
        assert_eq!(visible("\u{1b}[31mred"), "\\u{1b}[31mred");
        assert_eq!(visible("a\0b"), "a\\u{0}b");
        assert_eq!(visible("del\u{7f} c1\u{9b}"), "del\\u{7f} c1\\u{9b}");
        assert_eq!(visible("\u{202e}txt.exe"), "\\u{202e}txt.exe");
        assert_eq!(visible("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(visible("a\nb\tc\r"), "a\\u{a}b\\u{9}c\\u{d}");
        assert_eq!(visible_lines("a\nb\tc\r\u{1b}"), "a\nb\tc\\u{d}\\u{1b}");
        // Printable neighbours of the ranges stay as they are.
        for c in [
            ' ', '~', '\u{a0}', '\u{200d}', '\u{202f}', '\u{2065}', '\u{206a}',
        ] {
            assert!(!is_hidden(c), "{c:?}");
        }
    }

    #[test]
    fn what_is_shown_holds_no_hidden_character() {
        let every: String = (0u32..0x2100).filter_map(char::from_u32).collect();
        let shown = visible(&every);
        assert!(!shown.chars().any(is_hidden));
        assert!(!visible_lines(&every)
            .chars()
            .any(|c| is_hidden(c) && c != '\n' && c != '\t'));
    }
}
