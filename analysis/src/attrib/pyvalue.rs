//! Recorded values are the `repr` of Python values (`'text'`, `"it's"`,
//! `['a', 'b']`, `{'k': None}`, `0.0`) or JSON text (`{"memory": "..."}`,
//! pretty-printed, with escaped newlines). These read them back as text: one
//! literal, a list of strings, or every string leaf of a nested value.

use serde_json::Value;

/// The text of a Python string literal (`'a\'b'` -> `a'b`); anything that is
/// not one quoted literal is returned as it is.
pub fn unrepr(value: &str) -> String {
    let v = value.trim();
    match read_literal(v) {
        Some((text, rest)) if rest.trim().is_empty() => text,
        _ => v.to_string(),
    }
}

/// Reads one quoted literal at the start of `s`: its text and what follows.
/// A `b`, `r` or `u` prefix is allowed; `\xNN`, `\uNNNN` and `\UNNNNNNNN`
/// escapes are read as the characters they name.
fn read_literal(s: &str) -> Option<(String, &str)> {
    let (raw, s) = match s.as_bytes().first() {
        Some(b'r' | b'R') => (true, &s[1..]),
        Some(b'b' | b'B' | b'u' | b'U') => (false, &s[1..]),
        _ => (false, s),
    };
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let q = quote as u8;
    let body = &s[1..];
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len().min(256));
    // Runs without an escape or the closing quote are copied whole; both
    // are ASCII, so every cut falls on a character boundary.
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        let next = if raw {
            memchr::memchr(q, &bytes[i..])
        } else {
            memchr::memchr2(q, b'\\', &bytes[i..])
        };
        i += next?;
        if bytes[i] == q {
            out.push_str(&body[run..i]);
            return Some((out, &body[i + 1..]));
        }
        out.push_str(&body[run..i]);
        let mut rest = body[i + 1..].chars();
        let c = rest.next()?;
        let mut used = 1 + c.len_utf8();
        match c {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'x' | 'u' | 'U' => {
                let n = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = rest.by_ref().take(n).collect();
                used += hex.len();
                let code = u32::from_str_radix(&hex, 16).ok()?;
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            other => out.push(other),
        }
        i += used;
        run = i;
    }
    None
}

/// How deep [`leaves`] reads nested values (and JSON text inside strings).
const MAX_DEPTH: usize = 64;

/// Every string leaf of a recorded value, in order: the strings of a JSON
/// value, else of a Python literal (strings, lists, tuples, dicts with their
/// values, numbers, `None`, `True`, `False`), else the value as one text.
/// Keys of objects are not leaves; a leaf that is itself JSON text is read
/// too. A value that holds no string (`0.0`, `[]`) has no leaves.
pub fn leaves(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    text_leaves(value, 0, &mut out);
    out
}

fn text_leaves(value: &str, depth: usize, out: &mut Vec<String>) {
    let v = value.trim();
    if depth < 2 && matches!(v.as_bytes().first(), Some(b'{' | b'[' | b'"')) {
        if let Ok(json) = serde_json::from_str::<Value>(v) {
            json_leaves(&json, depth, out);
            return;
        }
    }
    let mut p = PyParser {
        s: v,
        at: 0,
        depth: 0,
    };
    let mut found = Vec::new();
    if p.value(&mut found).is_some() && p.rest().is_empty() {
        for leaf in found {
            push_leaf(leaf, depth, out);
        }
        return;
    }
    if !v.is_empty() {
        out.push(v.to_string());
    }
}

fn push_leaf(leaf: String, depth: usize, out: &mut Vec<String>) {
    let t = leaf.trim_start();
    if depth < 1 && (t.starts_with('{') || t.starts_with('[')) {
        if let Ok(json) = serde_json::from_str::<Value>(t) {
            json_leaves(&json, depth + 1, out);
            return;
        }
    }
    if !leaf.trim().is_empty() {
        out.push(leaf);
    }
}

fn json_leaves(v: &Value, depth: usize, out: &mut Vec<String>) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => push_leaf(s.clone(), depth, out),
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::Object(o) => stack.extend(o.values().rev()),
            _ => {}
        }
    }
}

/// A reader of Python literals that keeps only their strings.
struct PyParser<'a> {
    s: &'a str,
    at: usize,
    depth: usize,
}

impl PyParser<'_> {
    fn rest(&self) -> &str {
        self.s[self.at..].trim_start()
    }

    fn skip_ws(&mut self) {
        let r = &self.s[self.at..];
        self.at += r.len() - r.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.s[self.at..].starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Reads one value; its strings go to `out`.
    fn value(&mut self, out: &mut Vec<String>) -> Option<()> {
        self.skip_ws();
        let r = &self.s[self.at..];
        let first = r.chars().next()?;
        match first {
            '[' | '(' | '{' => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return None;
                }
                let close = match first {
                    '[' => ']',
                    '(' => ')',
                    _ => '}',
                };
                self.at += 1;
                let dict = first == '{';
                loop {
                    if self.eat(close) {
                        break;
                    }
                    if dict {
                        let mut key = Vec::new();
                        self.value(&mut key)?;
                        if !self.eat(':') {
                            // A set: its members are values.
                            out.extend(key);
                        } else {
                            self.value(out)?;
                        }
                    } else {
                        self.value(out)?;
                    }
                    if !self.eat(',') {
                        if self.eat(close) {
                            break;
                        }
                        return None;
                    }
                }
                self.depth -= 1;
                Some(())
            }
            _ => {
                if let Some((text, rest)) = read_literal(r) {
                    self.at = self.s.len() - rest.len();
                    // Adjacent literals concatenate, as in Python.
                    let mut text = text;
                    loop {
                        let r = self.rest();
                        match read_literal(r) {
                            Some((more, rest)) if r.starts_with(['\'', '"']) => {
                                text.push_str(&more);
                                self.at = self.s.len() - rest.len();
                            }
                            _ => break,
                        }
                    }
                    out.push(text);
                    return Some(());
                }
                let word: usize = r
                    .char_indices()
                    .find(|(_, c)| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '+' | '_')))
                    .map_or(r.len(), |(i, _)| i);
                let w = &r[..word];
                let known = matches!(w, "None" | "True" | "False" | "nan" | "inf" | "-inf")
                    || w.parse::<f64>().is_ok();
                if !known {
                    return None;
                }
                self.at += word;
                Some(())
            }
        }
    }
}

/// The strings of a Python list of string literals (`['a', "b"]`); `None`
/// when the value is not such a list. A JSON list of strings reads the same.
pub fn string_list(value: &str) -> Option<Vec<String>> {
    let v = value.trim();
    let mut rest = v.strip_prefix('[')?.trim_start();
    let mut out = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix(']') {
            return after.trim().is_empty().then_some(out);
        }
        let (text, after) = read_literal(rest)?;
        out.push(text);
        rest = after.trim_start();
        if let Some(after) = rest.strip_prefix(',') {
            rest = after.trim_start();
        } else if !rest.starts_with(']') {
            return None;
        }
    }
}

/// The pieces of text a value holds: the strings of a list, or the value as
/// one text.
pub fn pieces(value: &str) -> Vec<String> {
    string_list(value).unwrap_or_else(|| vec![unrepr(value)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Python's repr of a str, for the characters the strategy draws.
    fn repr(s: &str) -> String {
        let quote = if s.contains('\'') && !s.contains('"') {
            '"'
        } else {
            '\''
        };
        let mut out = String::from(quote);
        for c in s.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c == quote => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
        out.push(quote);
        out
    }

    proptest! {
        #[test]
        fn python_literals_read_back(items in proptest::collection::vec("[a-zA-Z0-9 ,'\"\\\\\n\t\\[\\]é☕]{0,12}", 0..5)) {
            for s in &items {
                prop_assert_eq!(unrepr(&repr(s)), s.clone());
            }
            let list = format!("[{}]", items.iter().map(|s| repr(s)).collect::<Vec<_>>().join(", "));
            prop_assert_eq!(string_list(&list), Some(items.clone()));
            let nonblank: Vec<String> = items.iter().filter(|s| !s.trim().is_empty()
                && !s.trim_start().starts_with(['[', '{'])).cloned().collect();
            let got: Vec<String> = leaves(&list).into_iter().filter(|s| !s.trim_start().starts_with(['[', '{'])).collect();
            prop_assert_eq!(got, nonblank.clone());
            let json = serde_json::to_string(&serde_json::json!({ "items": items })).unwrap();
            let got: Vec<String> = leaves(&json).into_iter().filter(|s| !s.trim_start().starts_with(['[', '{'])).collect();
            prop_assert_eq!(got, nonblank);
        }
    }

    #[test]
    fn literals_and_lists_read_back() {
        assert_eq!(
            unrepr("'Omar: I drive a blue Volvo.'"),
            "Omar: I drive a blue Volvo."
        );
        assert_eq!(unrepr(r#""It's mine""#), "It's mine");
        assert_eq!(unrepr(r"'it\'s \\ ok\n'"), "it's \\ ok\n");
        assert_eq!(unrepr("0.0"), "0.0");
        assert_eq!(unrepr("'a' + 'b'"), "'a' + 'b'");
        assert_eq!(
            string_list(r#"['a', "b's", 'c, d']"#).unwrap(),
            vec!["a", "b's", "c, d"]
        );
        assert_eq!(string_list("[]").unwrap(), Vec::<String>::new());
        assert_eq!(string_list(r#"["x", "y"]"#).unwrap(), vec!["x", "y"]);
        assert!(string_list("['a' 'b']").is_none());
        assert!(string_list("['a'] tail").is_none());
        assert!(string_list("'a'").is_none());
        assert_eq!(pieces("'one'"), vec!["one"]);
    }

    #[test]
    fn leaves_read_json_python_literals_and_plain_text() {
        let json =
            "{\n    \"id\": \"7\",\n    \"memory\": \"Mel: I run.\\nEvery day.\",\n    \"n\": 3\n}";
        assert_eq!(leaves(json), vec!["7", "Mel: I run.\nEvery day."]);
        assert_eq!(
            leaves("{'episode': None, 'facts': ['a', \"b's\"], 'n': 1.5, 'ok': True}"),
            vec!["a", "b's"]
        );
        assert_eq!(leaves("('x', 'y' 'z')"), vec!["x", "yz"]);
        assert_eq!(leaves("'\\u00e9t\\xe9'"), vec!["été"]);
        assert_eq!(
            leaves("Speaker A says: hi {not json"),
            vec!["Speaker A says: hi {not json"]
        );
        assert_eq!(leaves("[]"), Vec::<String>::new());
        assert_eq!(leaves("0.0"), Vec::<String>::new());
        // JSON text inside a string leaf is read too.
        assert_eq!(leaves("['{\"content\": \"deep\"}']"), vec!["deep"]);
        assert_eq!(leaves(&"[".repeat(200)), vec!["[".repeat(200)]);
    }
}
