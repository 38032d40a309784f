//! What is wrong with an input that the JSON parser names poorly: text in
//! UTF-16 (with or without a byte order mark), a file that is not a JSON
//! object from its first character, bytes that are not UTF-8, an escape of
//! half a character (a lone UTF-16 surrogate), and Python's `NaN` where a
//! value of another type was needed (it is read as null).

/// The first bytes of an input looked at before it is read whole.
pub(crate) const HEAD: usize = 4096;

/// Which UTF-16 an input is, when its first bytes say so: a byte order
/// mark, or (without one) the zero bytes beside ASCII characters that
/// UTF-16 writes and UTF-8 JSON never holds.
pub(crate) fn utf16(head: &[u8]) -> Option<&'static str> {
    match head {
        [0xff, 0xfe, ..] => return Some("UTF-16 (little-endian, with a byte order mark)"),
        [0xfe, 0xff, ..] => return Some("UTF-16 (big-endian, with a byte order mark)"),
        _ => {}
    }
    let pairs: Vec<&[u8]> = head.chunks_exact(2).take(32).collect();
    if pairs.is_empty() {
        return None;
    }
    let all = |f: fn(&[u8]) -> bool| pairs.iter().all(|p| f(p));
    if all(|p| p[0] != 0 && p[1] == 0) {
        Some("UTF-16 (little-endian, without a byte order mark)")
    } else if all(|p| p[0] == 0 && p[1] != 0) {
        Some("UTF-16 (big-endian, without a byte order mark)")
    } else {
        None
    }
}

/// Why an input cannot be one JSON object, from its first bytes alone
/// (`head`, at most [`HEAD`]): it is UTF-16, or its first character other
/// than whitespace is not `{`. `None` when the head does not tell.
pub(crate) fn refuse_start(head: &[u8]) -> Option<String> {
    if let Some(kind) = utf16(head) {
        return Some(format!(
            "the input is {kind} text, and memtrace reads UTF-8 JSON (save it as UTF-8)"
        ));
    }
    let text = crate::pyjson::strip_bom(head);
    let at = text.iter().position(|b| !b.is_ascii_whitespace())?;
    let first = text[at];
    if first == b'{' {
        return None;
    }
    let (line, column) = line_column(text, at);
    let shown = match std::str::from_utf8(&text[at..]) {
        Ok(s) => s.chars().next().map(|c| format!("{c:?}")),
        Err(e) if e.valid_up_to() > 0 => std::str::from_utf8(&text[at..at + e.valid_up_to()])
            .ok()
            .and_then(|s| s.chars().next())
            .map(|c| format!("{c:?}")),
        Err(_) => None,
    }
    .unwrap_or_else(|| format!("the byte 0x{first:02x}"));
    Some(format!(
        "expected a smartcomment export object (a JSON object, starting with {{), found {shown} at line {line}, column {column}"
    ))
}

/// The line and column (both from 1, the column in characters) of byte
/// `offset` of `text`.
fn line_column(text: &[u8], offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

/// The byte offset of serde_json's line and column (the column in bytes).
fn offset_of(text: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match text[start..].iter().position(|&b| b == b'\n') {
            Some(i) => start += i + 1,
            None => return text.len(),
        }
    }
    (start + column.saturating_sub(1)).min(text.len())
}

/// A parse error of serde_json reading `text`, in words that name what is
/// there: bytes that are not UTF-8 (serde_json says "invalid unicode code
/// point") and lone surrogates in `\u` escapes (it says "unexpected end of
/// hex escape" or "lone leading surrogate"). Other errors keep their words.
pub(crate) fn explain(e: &serde_json::Error, text: &[u8]) -> String {
    let said = e.to_string();
    if said.starts_with("invalid unicode code point") {
        if let Err(bad) = std::str::from_utf8(text) {
            let at = bad.valid_up_to();
            let (line, column) = line_column(text, at);
            return format!(
                "the input is not UTF-8: the byte 0x{:02x} at line {line}, column {column} is not part of a UTF-8 character",
                text[at]
            );
        }
    }
    if said.contains("hex escape") || said.starts_with("invalid unicode code point") {
        let at = offset_of(text, e.line(), e.column());
        if let Some((escape, at)) = lone_surrogate(text, at) {
            let (line, column) = line_column(text, at);
            return format!(
                "\\u{escape} at line {line}, column {column} is a lone UTF-16 surrogate: half of a character written as a pair of escapes (such as \\ud83d\\ude00), without its other half, which no UTF-8 text can hold"
            );
        }
    }
    said
}

/// The hex digits and the offset of a `\u` escape of a surrogate (D800 to
/// DFFF) that ends near `at`, where serde_json stopped for want of its
/// partner.
fn lone_surrogate(text: &[u8], at: usize) -> Option<(String, usize)> {
    let from = at.saturating_sub(14);
    let window = &text[from..(at + 2).min(text.len())];
    let mut found = None;
    let mut i = 0;
    while i + 6 <= window.len() {
        if window[i] == b'\\' && window[i + 1] == b'u' {
            if let Some(hex) = std::str::from_utf8(&window[i + 2..i + 6])
                .ok()
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                if let Ok(unit) = u16::from_str_radix(hex, 16) {
                    if (0xd800..=0xdfff).contains(&unit) {
                        found = Some((hex.to_string(), from + i));
                    }
                }
            }
            i += 6;
        } else {
            i += 1;
        }
    }
    found
}

/// Whether the value at `path` (such as `data.nodes[3].name`) of the JSON
/// object `text` is written `NaN`, which is read as null.
pub(crate) fn nan_at(text: &[u8], path: &str) -> bool {
    value_at(text, path).is_some_and(|at| text[at..].starts_with(b"NaN"))
}

/// The offset of the value at `path` in `text`: keys separated by `.`, list
/// items as `[n]`. Keys are compared as written (without unescaping).
fn value_at(text: &[u8], path: &str) -> Option<usize> {
    let mut steps: Vec<Step<'_>> = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            steps.push(Step::Key(key));
        }
        while let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            steps.push(Step::Item(r[..end].parse().ok()?));
            rest = &r[end + 1..];
        }
    }
    let mut at = skip_ws(text, 0);
    for step in steps {
        at = match step {
            Step::Key(key) => member(text, at, key)?,
            Step::Item(n) => item(text, at, n)?,
        };
    }
    Some(at)
}

enum Step<'a> {
    Key(&'a str),
    Item(usize),
}

fn skip_ws(text: &[u8], mut at: usize) -> usize {
    while at < text.len() && text[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// The end of the string that starts at `at` (past its closing quote).
fn skip_string(text: &[u8], mut at: usize) -> Option<usize> {
    at += 1;
    while at < text.len() {
        match text[at] {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
    None
}

/// The end of the value that starts at `at`.
fn skip_value(text: &[u8], at: usize) -> Option<usize> {
    match *text.get(at)? {
        b'"' => skip_string(text, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < text.len() {
                match text[i] {
                    b'"' => {
                        i = skip_string(text, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = at;
            while i < text.len() && !matches!(text[i], b',' | b'}' | b']') {
                i += 1;
            }
            Some(i)
        }
    }
}

/// The value of member `key` of the object at `at`.
fn member(text: &[u8], at: usize, key: &str) -> Option<usize> {
    if text.get(at) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(text, at + 1);
    while text.get(i) == Some(&b'"') {
        let end = skip_string(text, i)?;
        let name = &text[i + 1..end - 1];
        i = skip_ws(text, end);
        if text.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(text, i + 1);
        if name == key.as_bytes() {
            return Some(i);
        }
        i = skip_ws(text, skip_value(text, i)?);
        if text.get(i) == Some(&b',') {
            i = skip_ws(text, i + 1);
        }
    }
    None
}

/// Item `n` of the list at `at`.
fn item(text: &[u8], at: usize, n: usize) -> Option<usize> {
    if text.get(at) != Some(&b'[') {
        return None;
    }
    let mut i = skip_ws(text, at + 1);
    for _ in 0..n {
        i = skip_ws(text, skip_value(text, i)?);
        if text.get(i) != Some(&b',') {
            return None;
        }
        i = skip_ws(text, i + 1);
    }
    (text.get(i) != Some(&b']')).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_is_told_with_and_without_a_byte_order_mark() {
        let text = "{\"graph_id\": \"g\"}";
        let le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(
            utf16(&le),
            Some("UTF-16 (little-endian, without a byte order mark)")
        );
        assert_eq!(
            utf16(&be),
            Some("UTF-16 (big-endian, without a byte order mark)")
        );
        let mut bom = vec![0xff, 0xfe];
        bom.extend(&le);
        assert!(utf16(&bom).unwrap().contains("with a byte order mark"));
        assert_eq!(utf16(text.as_bytes()), None);
        assert_eq!(utf16(b"{"), None);
        assert!(refuse_start(&le).unwrap().contains("UTF-16"));
    }

    #[test]
    fn the_first_character_must_open_an_object() {
        assert_eq!(refuse_start(b"  \n {\"a\": 1"), None);
        assert_eq!(refuse_start(b"\xef\xbb\xbf{"), None);
        assert_eq!(refuse_start(b"   "), None, "whitespace alone does not tell");
        let e = refuse_start(b"\n  [1, 2]").unwrap();
        assert!(
            e.contains("export object") && e.contains("found '[' at line 2, column 3"),
            "{e}"
        );
        let e = refuse_start(b"\xff\xff\xff").unwrap();
        assert!(e.contains("the byte 0xff at line 1, column 1"), "{e}");
    }

    fn parse_err(text: &[u8]) -> String {
        let e = serde_json::from_slice::<serde_json::Value>(text).unwrap_err();
        explain(&e, text)
    }

    #[test]
    fn bad_utf8_and_lone_surrogates_are_named() {
        let e = parse_err(b"{\n  \"na\xffme\": 1}");
        assert!(
            e.contains("not UTF-8: the byte 0xff at line 2, column 6"),
            "{e}"
        );
        for (text, hex) in [
            (&b"{\"a\": \"x\\ud800y\"}"[..], "d800"),
            (&b"{\"a\": \"x\\ud800\"}"[..], "d800"),
            (&b"{\"a\": \"\\udc00\"}"[..], "dc00"),
            (&b"{\"a\": \"\\ud800\\u0041\"}"[..], "d800"),
        ] {
            let e = parse_err(text);
            assert!(
                e.contains(&format!("\\u{hex} at line 1")) && e.contains("lone UTF-16 surrogate"),
                "{}: {e}",
                String::from_utf8_lossy(text)
            );
        }
        // A pair is a character, and other errors keep serde_json's words.
        assert!(serde_json::from_slice::<serde_json::Value>(b"\"\\ud83d\\ude00\"").is_ok());
        assert!(parse_err(b"{\"a\": tru}").contains("expected ident"));
    }

    #[test]
    fn nan_is_found_by_its_path() {
        let text = br#"{"a": 1, "data": {"nodes": [{"name": "x"}, {"v": [1, "]"], "name": NaN}]}}"#;
        assert!(nan_at(text, "data.nodes[1].name"));
        assert!(!nan_at(text, "data.nodes[0].name"));
        assert!(!nan_at(text, "data.nodes[2].name"));
        assert!(!nan_at(text, "a"));
        assert!(!nan_at(text, "missing.key"));
        assert!(!nan_at(b"[NaN]", "x"));
    }
}
