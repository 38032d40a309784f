//! Python reprs of strings and lists, as smartcomment stores values, and
//! word counts.

/// How many words `text` has.
pub(super) fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// A Python-style `repr` of a string, as smartcomment stores values.
pub fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A Python-style `repr` of a list of strings.
pub(super) fn py_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let parts: Vec<String> = items.map(py_str).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_reprs() {
        assert_eq!(py_str("it's"), "'it\\'s'");
        assert_eq!(py_list(["a", "b"].into_iter()), "['a', 'b']");
    }
}
