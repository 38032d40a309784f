//! The text both renderings share: values cut and escaped for Markdown and
//! for HTML, counts as shares, times, and the words around labels and scope.

use super::types::{ratio, AnnotatedCause, Example, Report};
use crate::attrib::ErrorType;
use memtrace_engine::civil_from_days;

/// Characters of a value shown before it is cut with `…`.
pub const MAX_CHARS: usize = 300;
/// Steps of an evidence chain shown per example.
pub(super) const MAX_STEPS: usize = 30;

/// `s` cut to `max` characters, with `…` when cut.
pub(super) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// A value for a Markdown table cell or line: cut, one line, with the
/// characters that would change the table or the formatting escaped, and
/// control characters shown as `\u{…}` (`memtrace_table::visible`).
pub(super) fn md(s: &str) -> String {
    md_cut(s, MAX_CHARS)
}

/// As [`md`], cut at `max` characters.
pub(super) fn md_cut(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len());
    let s = cut(s, max);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => out.push_str("<br>"),
            '|' | '\\' | '`' | '*' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\t' => out.push(' '),
            c if memtrace_table::is_hidden(c) => {
                // Markdown shows `\\` as one backslash.
                out.push('\\');
                memtrace_table::push_escaped(&mut out, c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text escaped for HTML element content and quoted attribute values;
/// control characters other than line breaks and tabs are shown as
/// `\u{…}`.
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if memtrace_table::is_hidden(c) && c != '\n' && c != '\t' => {
                memtrace_table::push_escaped(&mut out, c)
            }
            c => out.push(c),
        }
    }
    out
}

/// A value for HTML: cut, then escaped.
pub(super) fn hv(s: &str) -> String {
    esc(&cut(s, MAX_CHARS))
}

pub(super) fn percent(n: usize, d: usize) -> String {
    match ratio(n, d) {
        Some(r) => format!("{:.0}%", 100.0 * r),
        None => "–".into(),
    }
}

pub(super) fn score(n: usize, d: usize) -> String {
    match ratio(n, d) {
        Some(r) => format!("{:.1}% ({n}/{d})", 100.0 * r),
        None => "–".into(),
    }
}

pub(super) fn golds(gold: &[String]) -> String {
    gold.join(" · ")
}

/// `YYYY-MM-DD HH:MM UTC`.
pub(super) fn utc(ms: u64) -> String {
    let ms = ms as i64;
    let day = ms.div_euclid(86_400_000);
    let minute = ms.rem_euclid(86_400_000) / 60_000;
    format!(
        "{} {:02}:{:02} UTC",
        civil_from_days(day),
        minute / 60,
        minute % 60
    )
}

/// What the label says and whether the verdict agrees, in words.
pub(super) fn label_text(label: &AnnotatedCause, ex: &Example, verdict_type: ErrorType) -> String {
    let t = label.error_type.as_deref().unwrap_or("no error type");
    let op = label.op_id.as_deref().unwrap_or("no op");
    let mut out = format!("{t} at {op}");
    match label.memory_type() {
        Some(lt) => {
            let type_ok = if lt == verdict_type {
                "agrees"
            } else {
                "differs"
            };
            out.push_str(&format!(" (type {type_ok}"));
            if let Some(lop) = &label.op_id {
                let op_ok = if ex.op_id.as_deref() == Some(lop.as_str()) {
                    "agrees"
                } else {
                    "differs"
                };
                out.push_str(&format!(", op {op_ok}"));
            }
            out.push(')');
        }
        None => out.push_str(" (not a memory error type; left out of accuracy)"),
    }
    out
}

pub(super) const CASES_NOTE: &str =
    "Failed cases come from a trace's annotations, else from the judge ops that scored 0. \
A case is attributed when the method stored a verdict for it (the latest one counts); \
undecided verdicts name no error type. Accuracy compares verdicts with labels naming one \
of the five memory error types, over the labelled cases that have a verdict.";

pub(super) fn scope(report: &Report) -> String {
    match &report.trace {
        Some(t) => format!("trace {t}"),
        None => format!("all ({})", report.overall.traces),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut_and_cells_stay_on_one_line() {
        let long = "é".repeat(MAX_CHARS + 5);
        let c = cut(&long, MAX_CHARS);
        assert_eq!(c.chars().count(), MAX_CHARS + 1);
        assert!(c.ends_with('…'));
        assert_eq!(cut("short", MAX_CHARS), "short");
        assert_eq!(
            md("a|b\r\nc\\d <x> [l](u) *e*"),
            "a\\|b<br>c\\\\d &lt;x&gt; \\[l\\](u) \\*e\\*"
        );
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(utc(86_400_000 + 61 * 60_000), "1970-01-02 01:01 UTC");
        // Control characters are shown, not sent.
        assert_eq!(
            md("\u{1b}]0;pwned\u{7}\0\u{202e}"),
            "\\\\u{1b}\\]0;pwned\\\\u{7}\\\\u{0}\\\\u{202e}"
        );
        assert_eq!(esc("\u{1b}[31m\0"), "\\u{1b}[31m\\u{0}");
    }
}
