//! The language's keywords, and the nearest one to a misspelt word.

/// Every keyword of the language, upper case.
pub const KEYWORDS: &[&str] = &[
    "TRACE",
    "FORWARD",
    "IN",
    "DEPTH",
    "UNTIL",
    "WHILE",
    "WHERE",
    "RETURN",
    "LIMIT",
    "MATCH",
    "FIND",
    "GROUP",
    "ORDER",
    "BY",
    "ASC",
    "DESC",
    "DISTINCT",
    "AS",
    "SHOW",
    "TRACES",
    "DESCRIBE",
    "EXPLAIN",
    "AND",
    "OR",
    "NOT",
    "CONTAINS",
    "STARTS",
    "WITH",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "ATTRIBUTE",
    "CASES",
    "USING",
    "SAVE",
    "PATTERN",
    "PATTERNS",
    "RUN",
    "OVER",
    "DROP",
    "HISTORY",
    "SETTING",
];

/// Words a bare identifier may not be, because the grammar reads them as keywords.
pub(crate) fn is_reserved(word: &str) -> bool {
    KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word))
}

/// Edit distance between two short words, ignoring case: insertions,
/// deletions, substitutions and swaps of two adjacent letters (`vra` is one
/// edit from `var`) each count one (optimal string alignment).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_ascii_uppercase().chars().collect();
    let b: Vec<char> = b.to_ascii_uppercase().chars().collect();
    let mut before: Vec<usize> = Vec::new();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                cur[j + 1] = cur[j + 1].min(before[j - 1] + 1);
            }
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

/// The candidate nearest to `word` (ignoring case), when it is close enough
/// to be a likely typo: one edit for words of up to 3 letters, two up to 6,
/// three beyond. `None` for the word itself or when nothing is that close.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if word.is_empty() {
        return None;
    }
    let limit = match word.chars().count() {
        0..=3 => 1,
        4..=6 => 2,
        _ => 3,
    };
    candidates
        .into_iter()
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= limit && !c.eq_ignore_ascii_case(word))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The keywords that start a statement (pattern statements aside).
pub const STATEMENTS: [&str; 8] = [
    "TRACE",
    "FORWARD",
    "MATCH",
    "FIND",
    "SHOW",
    "DESCRIBE",
    "ATTRIBUTE",
    "EXPLAIN",
];

/// The keywords that start a pattern statement (not allowed after EXPLAIN).
pub const PATTERN_STATEMENTS: [&str; 3] = ["SAVE", "RUN", "DROP"];

/// The outputs of TRACE and FORWARD (`RETURN nodes`, ...): words, not keywords.
pub const OUTPUTS: [&str; 6] = ["nodes", "ops", "edges", "subgraph", "paths", "count"];

/// What FIND lists (`FIND vars`, ...): words, not keywords.
pub const FIND_KINDS: [&str; 7] = [
    "vars",
    "ops",
    "edges",
    "sessions",
    "traces",
    "cases",
    "attributions",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("UNTILL", "UNTIL"), 1);
        assert_eq!(distance("untl", "UNTIL"), 1);
        assert_eq!(distance("abc", "abc"), 0);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("kitten", "sitting"), 3);
        // A swap of two adjacent letters is one edit.
        assert_eq!(distance("vra", "var"), 1);
        assert_eq!(distance("retrun", "RETURN"), 1);
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("ca", "abc"), 3);
    }

    #[test]
    fn the_nearest_keyword_is_suggested_only_when_close() {
        assert_eq!(nearest("UNTILL", KEYWORDS.iter().copied()), Some("UNTIL"));
        assert_eq!(nearest("retrun", KEYWORDS.iter().copied()), Some("RETURN"));
        assert_eq!(nearest("banana", KEYWORDS.iter().copied()), None);
        assert_eq!(nearest("", KEYWORDS.iter().copied()), None);
    }
}
