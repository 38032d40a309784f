//! Text matching for following evidence: normalised text (case, punctuation,
//! numbers and dates), containment, and a token-overlap score.

/// Words that carry no information about a fact.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "of", "and", "or", "to", "in", "on", "at",
    "for", "with", "my", "i", "me", "it", "its", "s", "that", "this", "now", "do", "did", "does",
    "have", "has", "had", "what", "when", "which", "who", "where", "how", "since", "same", "day",
    "from", "as", "by", "so", "up", "just",
];

/// Number words read as digits, so "twenty one" and "21" compare equal.
const NUMBERS: &[(&str, &str)] = &[
    ("zero", "0"),
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
    ("ten", "10"),
    ("eleven", "11"),
    ("twelve", "12"),
    ("twenty", "20"),
    ("thirty", "30"),
];

/// The months' names, January first.
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The tokens of a text: lower-case runs of letters and digits. Number words
/// become digits; an ISO date (`2023-05-01`) and a written date (`1 May
/// 2023`, `May 1, 2023`) become one token `20230501`.
pub fn tokens(text: &str) -> Vec<String> {
    // Lower-cased before it is split: a capital can lower-case to a letter
    // and a mark that is not alphanumeric (`İ` to `i` and a combining dot),
    // which must split there too, or the tokens of a normalised text would
    // not be its own.
    let lower = text.to_lowercase();
    let raw: Vec<String> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| match NUMBERS.iter().find(|(w, _)| *w == t) {
            Some((_, d)) => (*d).to_string(),
            None => t.to_string(),
        })
        .collect();
    let mut out: Vec<String> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if let Some((date, used)) = date_at(&raw[i..]) {
            out.push(date);
            i += used;
        } else {
            out.push(raw[i].clone());
            i += 1;
        }
    }
    out
}

fn is_digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

fn month(s: &str) -> Option<usize> {
    MONTHS
        .iter()
        .position(|m| *m == s || (s.len() == 3 && m.starts_with(s)))
        .map(|i| i + 1)
}

/// A date starting at `t[0]`: the token and how many tokens it used.
fn date_at(t: &[String]) -> Option<(String, usize)> {
    let day = |s: &str| -> Option<u32> {
        let d: u32 = s
            .trim_end_matches("st")
            .trim_end_matches("nd")
            .trim_end_matches("rd")
            .trim_end_matches("th")
            .parse()
            .ok()?;
        (1..=31).contains(&d).then_some(d)
    };
    // 2023 05 01 (from 2023-05-01 or 2023/05/01)
    if t.len() >= 3 && is_digits(&t[0], 4) && t[1].len() <= 2 && t[2].len() <= 2 {
        if let (Ok(m), Ok(d)) = (t[1].parse::<u32>(), t[2].parse::<u32>()) {
            if (1..=12).contains(&m) && (1..=31).contains(&d) {
                return Some((format!("{}{m:02}{d:02}", t[0]), 3));
            }
        }
    }
    // 1 may 2023
    if t.len() >= 3 && is_digits(&t[2], 4) {
        if let (Some(d), Some(m)) = (day(&t[0]), month(&t[1])) {
            return Some((format!("{}{m:02}{d:02}", t[2]), 3));
        }
        // may 1 2023
        if let (Some(m), Some(d)) = (month(&t[0]), day(&t[1])) {
            return Some((format!("{}{m:02}{d:02}", t[2]), 3));
        }
    }
    None
}

/// A text normalised for containment: its tokens joined by single spaces,
/// with a space at each end so that `" volvo "` matches whole words only.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    for t in tokens(text) {
        out.push_str(&t);
        out.push(' ');
    }
    out
}

/// The tokens of a text that say something (no stop words), without repeats.
pub fn content_tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tokens(text) {
        if !STOPWORDS.contains(&t.as_str()) && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Function words and conversational filler that say nothing about a fact:
/// an evidence item's stems leave them out.
const FILLER: &[&str] = &[
    "you", "your", "yours", "we", "our", "us", "they", "them", "their", "he", "she", "him", "her",
    "his", "hers", "but", "not", "no", "yes", "very", "really", "too", "can", "will", "would",
    "could", "should", "about", "all", "some", "any", "there", "here", "than", "then", "if",
    "been", "being", "am", "im", "ive", "ll", "re", "ve", "don", "oh", "wow", "hey", "hi", "yeah",
    "okay", "ok", "also", "into", "out", "over", "more", "most", "much", "many", "one", "get",
    "got", "go", "going", "gonna", "thing", "things", "lot", "lots", "way", "like", "said", "says",
    "say", "these", "those", "who", "whom", "whose", "why", "well", "again", "even", "still",
    "only", "own", "other", "such", "each", "both", "after", "before", "while", "until", "because",
    "through", "during", "off", "down", "let", "lets", "make", "made", "be", "am",
    // What is left of a negative contraction once its "'t" is cut off.
    "won", "didn", "doesn", "isn", "wasn", "aren", "weren", "hasn", "haven", "hadn", "couldn",
    "shouldn", "wouldn", "ain",
];

/// A light stem of a token: plural, `-ing`, `-ed` and `-ly` endings cut,
/// so that "paints", "painted" and "painting" meet at "paint". Digits and
/// date tokens are kept whole.
pub fn stem(t: &str) -> String {
    if t.bytes().any(|b| b.is_ascii_digit()) || !t.is_ascii() {
        return t.to_string();
    }
    let n = t.len();
    let cut = |suffix: &str, min: usize| n >= suffix.len() + min && t.ends_with(suffix);
    let base = if cut("ies", 3) {
        format!("{}y", &t[..n - 3])
    } else if cut("ing", 3) {
        t[..n - 3].to_string()
    } else if cut("ed", 3)
        || cut("ly", 3)
        || (cut("es", 3) && matches!(t.as_bytes()[n - 3], b's' | b'x' | b'z' | b'h'))
    {
        t[..n - 2].to_string()
    } else if cut("s", 3) && !t.ends_with("ss") && !t.ends_with("us") && !t.ends_with("is") {
        t[..n - 1].to_string()
    } else {
        t.to_string()
    };
    // "running" -> "runn" -> "run"; "hoped" -> "hop" stays.
    let b = base.as_bytes();
    if b.len() >= 4
        && b[b.len() - 1] == b[b.len() - 2]
        && !matches!(b[b.len() - 1], b'l' | b's' | b'z')
    {
        base[..base.len() - 1].to_string()
    } else {
        base
    }
}

/// Whether a token says something about a fact: not a stop word, not
/// filler, not a lone letter.
pub fn is_content(t: &str) -> bool {
    (t.len() > 1 || t.bytes().all(|b| b.is_ascii_digit()))
        && !STOPWORDS.contains(&t)
        && !FILLER.contains(&t)
}

/// Whether a token is a date token made by [`tokens`].
pub fn is_date_token(t: &str) -> bool {
    is_digits(t, 8)
}

/// Share of `wanted` tokens present in the normalised text `hay` (1 when
/// nothing is wanted).
pub fn overlap(wanted: &[String], hay: &str) -> f64 {
    if wanted.is_empty() {
        return 1.0;
    }
    let found = wanted.iter().filter(|t| has_token(hay, t)).count();
    found as f64 / wanted.len() as f64
}

/// Whether the normalised text `hay` holds the token `t` as a whole word.
pub fn has_token(hay: &str, t: &str) -> bool {
    let bytes = hay.as_bytes();
    let mut from = 0;
    while let Some(i) = hay[from..].find(t) {
        let start = from + i;
        let end = start + t.len();
        let before = start == 0 || bytes[start - 1] == b' ';
        let after = end == bytes.len() || bytes[end] == b' ';
        if before && after {
            return true;
        }
        from = start + 1;
        while !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn case_punctuation_numbers_and_dates_normalise() {
        assert_eq!(
            normalise("Omar: I drive a blue Volvo!"),
            " omar i drive a blue volvo "
        );
        assert_eq!(tokens("since 2023-05-01."), ["since", "20230501"]);
        assert_eq!(tokens("on 1 May 2023"), ["on", "20230501"]);
        assert_eq!(tokens("on May 1st, 2023"), ["on", "20230501"]);
        assert_eq!(tokens("twenty one km"), ["20", "1", "km"]);
        assert_eq!(tokens("Tomas's pet"), ["tomas", "s", "pet"]);
        assert_eq!(
            content_tokens("What car does Omar drive?"),
            ["car", "omar", "drive"]
        );
    }

    #[test]
    fn tokens_match_whole_words_and_overlap_counts_them() {
        let hay = normalise("Omar's car is a blue Volvo (since 2023-05-01)");
        assert!(has_token(&hay, "volvo"));
        assert!(!has_token(&hay, "vol"));
        assert!(has_token(&hay, "20230501"));
        let wanted = content_tokens("a blue Volvo");
        assert_eq!(overlap(&wanted, &hay), 1.0);
        let wanted = content_tokens("a red Volvo");
        assert_eq!(overlap(&wanted, &hay), 0.5);
        assert_eq!(overlap(&[], &hay), 1.0);
    }

    #[test]
    fn stems_meet_across_inflections_and_filler_is_not_content() {
        for w in ["paints", "painted", "painting", "paint"] {
            assert_eq!(stem(w), "paint", "{w}");
        }
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("stories"), "story");
        assert_eq!(stem("classes"), "class");
        assert_eq!(stem("glass"), "glass");
        assert_eq!(stem("20230508"), "20230508");
        assert_eq!(stem("is"), "is");
        assert!(is_content("violin") && is_content("5"));
        // A capital whose lower case has a combining mark (found by the
        // property test below).
        assert_eq!(normalise("İ"), " i ");
        assert_eq!(normalise(&normalise("İstanbul")), normalise("İstanbul"));
        assert!(!is_content("really") && !is_content("the") && !is_content("x"));
    }

    proptest! {
        #[test]
        fn stems_are_never_longer_nor_empty(s in "[a-z]{1,12}") {
            let once = stem(&s);
            prop_assert!(once.len() <= s.len());
            prop_assert!(!once.is_empty());
        }

        #[test]
        fn normalised_text_holds_each_of_its_tokens(s in "\\PC{0,60}") {
            let n = normalise(&s);
            prop_assert!(n.starts_with(' ') && n.ends_with(' '));
            for t in tokens(&s) {
                prop_assert!(has_token(&n, &t), "{t} in {n}");
            }
            prop_assert_eq!(normalise(&n), n.clone());
        }
    }
}
