//! How is a result shown in a terminal? Plain aligned tables, cut to the terminal's width, byte
//! sizes, and control characters shown escaped ([`visible`]), so that text from a trace cannot
//! act on the terminal.

#![deny(missing_docs)]

mod visible;

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

pub use visible::{is_hidden, push_escaped, visible, visible_lines};

/// Narrowest a column is cut to when a table must fit a width.
const MIN_COLUMN: usize = 8;

/// Renders rows under a header, each column as wide as its widest cell.
/// Columns listed in `right` are right-aligned (numbers). Control
/// characters in the header and cells are shown escaped ([`visible`]).
pub fn render(header: &[&str], rows: &[Vec<String>], right: &[usize]) -> String {
    render_fit(header, rows, right, None)
}

/// `text` cut to at most `width` terminal columns, ending with `…` when cut,
/// with its control characters shown escaped ([`visible`]).
pub fn cut_to(text: &str, width: usize) -> String {
    let text = visible(text);
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Like [`render`], but when `max_width` is given and the table is wider,
/// the widest columns are narrowed (to no less than a few characters) and
/// their long cells cut with `…` so that each line fits.
pub fn render_fit(
    header: &[&str],
    rows: &[Vec<String>],
    right: &[usize],
    max_width: Option<usize>,
) -> String {
    let header: Vec<std::borrow::Cow<'_, str>> = header.iter().map(|h| visible(h)).collect();
    let rows: Vec<Vec<std::borrow::Cow<'_, str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| visible(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.width()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.width());
            }
        }
    }
    if let Some(max) = max_width {
        let room = max.saturating_sub(2 * widths.len().saturating_sub(1));
        if widths.iter().sum::<usize>() > room {
            // The widest cap that fits: every column keeps min(width, cap).
            let fits = |cap: usize| widths.iter().map(|w| (*w).min(cap)).sum::<usize>() <= room;
            let widest = widths.iter().copied().max().unwrap_or(0);
            let (mut lo, mut hi) = (0, widest);
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            let cap = lo.max(MIN_COLUMN);
            for w in &mut widths {
                *w = (*w).min(cap);
            }
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let c = cut_to(c, widths[i]);
                let pad = widths[i].saturating_sub(c.width());
                if right.contains(&i) {
                    format!("{}{c}", " ".repeat(pad))
                } else {
                    format!("{c}{}", " ".repeat(pad))
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let mut out = line(header.iter().map(|h| h.as_ref()).collect());
    out.push('\n');
    let rules: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&line(rules.iter().map(String::as_str).collect()));
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row.iter().map(|c| c.as_ref()).collect()));
        out.push('\n');
    }
    out
}

/// The width tables should fit: the terminal's when standard output is one,
/// else `COLUMNS` when set, else none (no limit besides the cell limit).
pub fn terminal_width() -> Option<usize> {
    #[cfg(unix)]
    {
        use std::io::IsTerminal;
        if std::io::stdout().is_terminal() {
            // SAFETY: TIOCGWINSZ fills in the winsize it is given and nothing else.
            let mut size: libc::winsize = unsafe { std::mem::zeroed() };
            let got = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
            if got == 0 && size.ws_col > 0 {
                return Some(usize::from(size.ws_col));
            }
        }
    }
    std::env::var("COLUMNS")
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|w| *w > 0)
}

/// Bytes in a human unit.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let t = render(
            &["a", "count"],
            &[
                vec!["long cell".into(), "3".into()],
                vec!["x".into(), "12".into()],
            ],
            &[1],
        );
        assert_eq!(
            t,
            "a          count\n---------  -----\nlong cell      3\nx             12\n"
        );
    }

    #[test]
    fn wide_tables_are_cut_to_fit_and_narrow_ones_are_not() {
        let header = ["id", "value", "n"];
        let rows = vec![vec![
            "#1".to_string(),
            "a long value that does not fit".to_string(),
            "7".to_string(),
        ]];
        assert_eq!(
            render_fit(&header, &rows, &[2], Some(80)),
            render(&header, &rows, &[2])
        );
        let t = render_fit(&header, &rows, &[2], Some(24));
        for l in t.lines() {
            assert!(l.width() <= 24, "{l:?} is wider than 24");
        }
        assert!(t.contains("#1  a long value tha…  7"), "{t}");
        assert!(t.contains("#1"), "short columns keep their cells: {t}");
        // Too narrow for anything: columns keep a few characters each.
        let t = render_fit(&header, &rows, &[2], Some(5));
        assert!(t.contains("a long …"), "{t}");
    }

    #[test]
    fn cutting_counts_terminal_columns() {
        assert_eq!(cut_to("short", 10), "short");
        assert_eq!(cut_to("abcdefghij", 5), "abcd…");
        // Each of these takes two columns.
        assert_eq!(cut_to("日本語テキスト", 7), "日本語…");
        assert_eq!(cut_to("日本語テキスト", 7).width(), 7);
    }

    #[test]
    fn control_characters_in_cells_and_headers_are_shown_escaped() {
        let rows = vec![vec![
            "\u{1b}]0;pwned\u{7}".to_string(),
            "\u{1b}[31mred\0".to_string(),
        ]];
        let t = render_fit(&["id\u{202e}", "value"], &rows, &[], Some(80));
        assert!(!t.chars().any(|c| is_hidden(c) && c != '\n'), "{t:?}");
        assert_eq!(
            t,
            "id\\u{202e}           value\n\
             -------------------  ------------------\n\
             \\u{1b}]0;pwned\\u{7}  \\u{1b}[31mred\\u{0}\n"
        );
        // Cut to fit, on what is shown.
        let t = render_fit(&["id", "value"], &rows, &[], Some(30));
        assert!(t.lines().all(|l| l.width() <= 30), "{t}");
        assert!(!t.chars().any(|c| is_hidden(c) && c != '\n'), "{t:?}");
        assert_eq!(cut_to("a\u{1b}b", 20), "a\\u{1b}b");
    }

    #[test]
    fn byte_units() {
        assert_eq!(bytes(12), "12 B");
        assert_eq!(bytes(2048), "2.0 KiB");
        assert_eq!(bytes(3 << 20), "3.0 MiB");
    }
}
