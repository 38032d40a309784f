//! Recorded values are the `repr` of Python values: `'text'`, `"it's"`,
//! `['a', 'b']`, `0.0`. These read them back as text.

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
fn read_literal(s: &str) -> Option<(String, &str)> {
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, other)) => out.push(other),
                None => return None,
            },
            c if c == quote => return Some((out, &s[1 + i + 1..])),
            c => out.push(c),
        }
    }
    None
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
}
