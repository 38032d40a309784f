//! Styles: how a simulated memory system writes down what it does. Real
//! systems differ in how a message is framed (`Caroline: ...` or
//! `Speaker Caroline says: ...` with a `Timestamp:` line, the speaker under
//! one metadata key or another), in how much a message says besides its one
//! informative sentence, in how values are serialised (Python reprs, JSON
//! objects), in what an extraction step keeps (a canonical fact, the
//! informative sentence prefixed by the speaker, a third-person rewrite),
//! in how memory units are laid out (one per fact, shared by several
//! messages, one cell mutated in place) and where the answer's context is
//! assembled (by retrieval, or by the question-answering op from the units
//! retrieval returned). A style picks one of each. The simulation and its
//! labels stay those of [`super::sim`]: a style changes what the pieces of
//! memory look like and how they are recorded, never how a label is found.

use serde::Serialize;
use serde_json::Value;

/// A named way of recording simulated runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Style {
    /// The original generator: `Name: text` messages of one sentence,
    /// Python string reprs, canonical fact sentences, one unit per fact, the
    /// context built by retrieval.
    Classic,
    /// MemBase's recording conventions: `Speaker <name> says:` messages with
    /// a `Timestamp:` line and the speaker under `speakers` (beside a
    /// `speaker_tag` that names a role, not a person), messages of several
    /// sentences, pretty-printed JSON units with a `memory` field, the
    /// informative sentence kept with its speaker, EverMemOS cells mutated in
    /// place, the context assembled by the question-answering op.
    Membase,
    /// Third-person rewrites ("Caroline said that they ..."), Mem0 units
    /// that merge several messages of a speaker, Python dict reprs,
    /// episode summaries cut at a word budget, the speaker under
    /// `speaker_name`.
    Narrative,
    /// Token budgets: RAG chunks and Mem0 facts cut at a word budget (what
    /// does not fit is lost), `Name: text` messages of several sentences,
    /// JSON units with a `content` field, shared Mem0 units, the context
    /// assembled at answer time.
    Budgeted,
}

/// How a message variable's text frames what was said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageForm {
    /// `Caroline: I moved to Paris.`
    Colon,
    /// `Speaker Caroline says: I moved to Paris.` and a `Timestamp:` line.
    Says,
}

/// How structured values (buffers, units, lists) are serialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// The classic generator's: Python string and list reprs of plain text.
    Classic,
    /// Python reprs of dicts and lists (`{'memory': 'x', 'id': 'm1'}`).
    Python,
    /// JSON objects and arrays, pretty-printed with four-space indents.
    Json,
}

/// What an extraction step keeps of a message that states a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extraction {
    /// The fact in a canonical sentence with its date.
    Canonical,
    /// The informative sentence, prefixed by the speaker.
    Sentence,
    /// A third-person rewrite of the informative sentence.
    Reported,
}

/// Everything a style decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StyleSpec {
    /// Message framing.
    pub message: MessageForm,
    /// The message metadata key that names the speaker.
    pub speaker_key: &'static str,
    /// Whether messages also carry `speaker_tag: speaker_a|speaker_b`.
    pub speaker_tag: bool,
    /// Messages of several sentences around the informative one.
    pub chatty: bool,
    /// Serialisation of structured values.
    pub encoding: Encoding,
    /// The field of a memory unit that holds its text.
    pub unit_text_key: &'static str,
    /// What Mem0 fact extraction and EverMemOS atomic facts keep.
    pub extraction: Extraction,
    /// What EverMemOS episode summaries say of each message.
    pub summary: Extraction,
    /// Mem0 units hold several messages of one speaker and session.
    pub shared_units: bool,
    /// EverMemOS: the memory cell is one unit, mutated in place by the
    /// extraction op (episode and atomic facts written into it).
    pub cell_in_place: bool,
    /// Memory units named `memory-unit-<hex>` without a class.
    pub uuid_names: bool,
    /// Retrieval links the query to the units; the question-answering op
    /// builds the context from them.
    pub context_at_answer: bool,
    /// RAG: chunk content cut at this many words.
    pub chunk_budget: Option<usize>,
    /// Mem0: each extracted fact keeps the sentences that follow the
    /// informative one and is cut at this many words.
    pub fact_budget: Option<usize>,
    /// EverMemOS: episode summaries cut at this many words.
    pub summary_budget: Option<usize>,
    /// A query's `metadata.evidence` lists exactly the messages whose
    /// information the answer needs (all required), not also the earlier
    /// values a knowledge-update question supersedes.
    pub evidence_needed_only: bool,
}

impl Style {
    /// Every style, in the order `--style all` cycles through them.
    pub const ALL: [Style; 4] = [
        Style::Classic,
        Style::Membase,
        Style::Narrative,
        Style::Budgeted,
    ];

    /// The name used on the command line and in `metadata.gen_style`.
    pub fn name(self) -> &'static str {
        match self {
            Style::Classic => "classic",
            Style::Membase => "membase",
            Style::Narrative => "narrative",
            Style::Budgeted => "budgeted",
        }
    }

    /// The style of a name given by [`Style::name`].
    pub fn parse(name: &str) -> Option<Style> {
        Style::ALL.into_iter().find(|s| s.name() == name)
    }

    /// What the style decides.
    pub fn spec(self) -> StyleSpec {
        let classic = StyleSpec {
            message: MessageForm::Colon,
            speaker_key: "speaker",
            speaker_tag: false,
            chatty: false,
            encoding: Encoding::Classic,
            unit_text_key: "memory",
            extraction: Extraction::Canonical,
            summary: Extraction::Canonical,
            shared_units: false,
            cell_in_place: false,
            uuid_names: false,
            context_at_answer: false,
            chunk_budget: None,
            fact_budget: None,
            summary_budget: None,
            evidence_needed_only: false,
        };
        match self {
            Style::Classic => classic,
            Style::Membase => StyleSpec {
                message: MessageForm::Says,
                speaker_key: "speakers",
                speaker_tag: true,
                chatty: true,
                encoding: Encoding::Json,
                unit_text_key: "memory",
                extraction: Extraction::Sentence,
                summary: Extraction::Reported,
                cell_in_place: true,
                uuid_names: true,
                context_at_answer: true,
                evidence_needed_only: true,
                ..classic
            },
            Style::Narrative => StyleSpec {
                message: MessageForm::Says,
                speaker_key: "speaker_name",
                speaker_tag: true,
                chatty: true,
                encoding: Encoding::Python,
                unit_text_key: "memory",
                extraction: Extraction::Reported,
                summary: Extraction::Reported,
                shared_units: true,
                cell_in_place: true,
                summary_budget: Some(60),
                evidence_needed_only: true,
                ..classic
            },
            Style::Budgeted => StyleSpec {
                message: MessageForm::Colon,
                speaker_key: "speaker_name",
                speaker_tag: false,
                chatty: true,
                encoding: Encoding::Json,
                unit_text_key: "content",
                extraction: Extraction::Sentence,
                summary: Extraction::Sentence,
                shared_units: true,
                uuid_names: true,
                context_at_answer: true,
                chunk_budget: Some(60),
                fact_budget: Some(16),
                evidence_needed_only: true,
                ..classic
            },
        }
    }

    /// One line on what the style varies (manifest, help).
    pub fn describe(self) -> &'static str {
        match self {
            Style::Classic => "Name: text messages, Python string reprs, canonical facts, one unit per fact, context built by retrieval",
            Style::Membase => "Speaker <name> says: messages with a Timestamp line, several sentences, JSON units, speaker-prefixed sentences kept, cells mutated in place, context assembled at answer time",
            Style::Narrative => "third-person rewrites, Mem0 units shared by several messages, Python dict reprs, episode summaries cut at a word budget",
            Style::Budgeted => "RAG chunks and Mem0 facts cut at a word budget, several sentences per message, JSON units with a content field, shared units, context assembled at answer time",
        }
    }
}

impl std::fmt::Display for Style {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A Python-style `repr` of a string, as smartcomment stores values: single
/// quotes unless the text holds a single quote and no double quote, as
/// Python chooses; backslashes, quotes and control characters escaped.
pub fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The Python `repr` of a JSON value: `None`, `True`, numbers, strings as
/// [`py_repr_str`], lists and dicts (keys in their order).
pub fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_repr_str(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(py_repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// JSON pretty-printed with four-space indents, as Python's
/// `json.dumps(value, indent=4)` writes it (non-ASCII kept as it is).
pub fn json_pretty(v: &Value) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    v.serialize(&mut ser)
        .expect("a JSON value always serialises");
    String::from_utf8(buf).expect("serde_json writes UTF-8")
}

impl Encoding {
    /// A structured value as the style records it.
    pub fn value(self, v: &Value) -> String {
        match self {
            Encoding::Json => json_pretty(v),
            Encoding::Python | Encoding::Classic => py_repr(v),
        }
    }

    /// A text blob (a context, a buffered document): a JSON string literal
    /// (newlines escaped) or a Python string repr.
    pub fn blob(self, text: &str) -> String {
        match self {
            Encoding::Json => Value::String(text.to_string()).to_string(),
            Encoding::Python | Encoding::Classic => py_repr_str(text),
        }
    }
}

/// Greetings and small talk said before the informative sentence.
const OPENERS: &[&str] = &[
    "Hey {o}!",
    "Hi {o}, good to hear from you.",
    "Oh, before I forget.",
    "You won't believe this.",
    "Long day today, but anyway.",
    "Thanks for asking!",
    "Sorry for the late reply.",
    "Morning!",
];

/// Questions and small talk said after it.
const CLOSERS: &[&str] = &[
    "How about you?",
    "What have you been up to lately?",
    "Anyway, how is your week going?",
    "Can't wait to tell you more.",
    "Talk soon!",
    "Did I mention that before?",
    "It still feels a bit unreal.",
    "What do you think?",
];

/// The sentences said around a message's text, chosen by `roll` (any
/// 64-bit number): `(before, after)`, each possibly empty. `other` is the
/// person spoken to.
pub fn chatter(roll: u64, other: &str, informative: bool) -> (String, String) {
    let pick = |list: &[&str], r: u64| list[(r % list.len() as u64) as usize].replace("{o}", other);
    let (p_open, p_close) = if informative { (75, 60) } else { (35, 45) };
    let before = if roll % 100 < p_open {
        pick(OPENERS, roll >> 8)
    } else {
        String::new()
    };
    let after = if (roll >> 20) % 100 < p_close {
        pick(CLOSERS, roll >> 28)
    } else {
        String::new()
    };
    (before, after)
}

/// Joins non-empty sentences with single spaces.
pub fn join_sentences<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let kept: Vec<&str> = parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    kept.join(" ")
}

/// A sentence retold in the third person: first-person pronouns become
/// `they`, `their`, `them`; the first letter is lowered so that it follows
/// `<Name> said that`.
pub fn third_person(sentence: &str) -> String {
    let swap = |w: &str| -> Option<&'static str> {
        Some(match w {
            "I" => "they",
            "I'm" => "they're",
            "I've" => "they've",
            "I'd" => "they'd",
            "I'll" => "they'll",
            "me" => "them",
            "my" | "My" => "their",
            "mine" => "theirs",
            "myself" => "themselves",
            "we" | "We" => "they",
            "We're" | "we're" => "they're",
            "We've" | "we've" => "they've",
            "us" => "them",
            "our" | "Our" => "their",
            _ => return None,
        })
    };
    let mut words = Vec::new();
    for (i, token) in sentence.split(' ').enumerate() {
        let end = token
            .char_indices()
            .rev()
            .take_while(|(_, c)| matches!(c, '!' | '.' | ',' | '?' | ':' | ';'))
            .last()
            .map_or(token.len(), |(i, _)| i);
        let (word, punct) = token.split_at(end);
        let mut w = swap(word).map_or_else(|| word.to_string(), str::to_string);
        if i == 0 {
            let mut chars = w.chars();
            if let Some(first) = chars.next() {
                w = first.to_lowercase().chain(chars).collect();
            }
        }
        words.push(format!("{w}{punct}"));
    }
    words.join(" ")
}

/// The prefix of `text` that holds its first `n` words, with the
/// whitespace between them as it was.
pub fn first_words(text: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    let mut seen = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                seen += 1;
                if seen == n {
                    return &text[..i];
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    text
}

/// A deterministic uuid-like hex id for `key` (8-4-4-4-12 when `dashed`,
/// else 24 hex digits).
pub fn hex_id(key: &str, seed: u64, dashed: bool) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in key.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut r = crate::synth::Rng::new(h);
    let hex = format!("{:016x}{:016x}", r.next_u64(), r.next_u64());
    if dashed {
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..32]
        )
    } else {
        hex[..24].to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// A reader of the Python literals [`py_repr`] writes, to check that
    /// they read back as the value they came from.
    fn read_py(s: &str) -> Option<(Value, &str)> {
        let s = s.trim_start();
        if let Some(rest) = s.strip_prefix("None") {
            return Some((Value::Null, rest));
        }
        if let Some(rest) = s.strip_prefix("True") {
            return Some((Value::Bool(true), rest));
        }
        if let Some(rest) = s.strip_prefix("False") {
            return Some((Value::Bool(false), rest));
        }
        let first = s.chars().next()?;
        match first {
            '\'' | '"' => {
                let mut out = String::new();
                let mut chars = s[1..].char_indices();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => match chars.next()?.1 {
                            'n' => out.push('\n'),
                            'r' => out.push('\r'),
                            't' => out.push('\t'),
                            'x' => {
                                let hex: String =
                                    (0..2).filter_map(|_| chars.next()).map(|x| x.1).collect();
                                out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                            }
                            other => out.push(other),
                        },
                        c if c == first => return Some((Value::String(out), &s[1 + i + 1..])),
                        c => out.push(c),
                    }
                }
                None
            }
            '[' => {
                let mut items = Vec::new();
                let mut rest = s[1..].trim_start();
                if let Some(r) = rest.strip_prefix(']') {
                    return Some((Value::Array(items), r));
                }
                loop {
                    let (v, r) = read_py(rest)?;
                    items.push(v);
                    let r = r.trim_start();
                    if let Some(r) = r.strip_prefix(", ") {
                        rest = r;
                    } else {
                        return Some((Value::Array(items), r.strip_prefix(']')?));
                    }
                }
            }
            '{' => {
                let mut m = serde_json::Map::new();
                let mut rest = s[1..].trim_start();
                if let Some(r) = rest.strip_prefix('}') {
                    return Some((Value::Object(m), r));
                }
                loop {
                    let (k, r) = read_py(rest)?;
                    let r = r.strip_prefix(": ")?;
                    let (v, r) = read_py(r)?;
                    m.insert(k.as_str()?.to_string(), v);
                    if let Some(r) = r.strip_prefix(", ") {
                        rest = r;
                    } else {
                        return Some((Value::Object(m), r.strip_prefix('}')?));
                    }
                }
            }
            _ => {
                let end = s
                    .find(|c: char| {
                        !(c.is_ascii_digit() || matches!(c, '-' | '.' | 'e' | 'E' | '+'))
                    })
                    .unwrap_or(s.len());
                let n: serde_json::Number = s[..end].parse().ok()?;
                Some((Value::Number(n), &s[end..]))
            }
        }
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            ".{0,12}".prop_map(Value::String),
            "[a-z'\"\\\\\n ]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-z_]{1,6}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn python_reprs_read_back(v in value()) {
            let text = py_repr(&v);
            let (back, rest) = read_py(&text).expect("reads back");
            prop_assert!(rest.is_empty(), "{text}: left {rest:?}");
            prop_assert_eq!(back, v);
        }

        #[test]
        fn pretty_json_reads_back_and_blobs_escape_newlines(v in value(), s in ".{0,40}") {
            let text = Encoding::Json.value(&v);
            prop_assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), v);
            let blob = Encoding::Json.blob(&format!("{s}\nnext line"));
            prop_assert!(!blob.contains('\n'), "{blob}");
            prop_assert_eq!(serde_json::from_str::<String>(&blob).unwrap(), format!("{s}\nnext line"));
            let py = Encoding::Python.blob(&s);
            prop_assert_eq!(read_py(&py).unwrap().0, Value::String(s.clone()));
        }

        #[test]
        fn first_words_keeps_a_prefix_of_whole_words(text in "[a-z \n]{0,40}", n in 0usize..10) {
            let p = first_words(&text, n);
            prop_assert!(text.starts_with(p));
            prop_assert_eq!(p.split_whitespace().count(), n.min(text.split_whitespace().count()));
        }
    }

    #[test]
    fn python_picks_its_quotes_as_python_does() {
        assert_eq!(py_repr_str("it's"), "\"it's\"");
        assert_eq!(py_repr_str("say \"hi\""), "'say \"hi\"'");
        assert_eq!(py_repr_str("it's \"x\""), "'it\\'s \"x\"'");
        assert_eq!(
            py_repr(&json!({"memory": "a\nb", "id": 3, "x": null})),
            "{'memory': 'a\\nb', 'id': 3, 'x': None}"
        );
    }

    #[test]
    fn third_person_rewrites_pronouns() {
        assert_eq!(
            third_person("I moved to Paris last week!"),
            "they moved to Paris last week!"
        );
        assert_eq!(
            third_person("My best friend is a cat named Luna, honestly."),
            "their best friend is a cat named Luna, honestly."
        );
        assert_eq!(
            third_person("Career change! I'm a pilot since yesterday."),
            "career change! they're a pilot since yesterday."
        );
    }

    #[test]
    fn styles_parse_by_name_and_differ() {
        for s in Style::ALL {
            assert_eq!(Style::parse(s.name()), Some(s));
        }
        assert_eq!(Style::parse("fancy"), None);
        let specs: Vec<StyleSpec> = Style::ALL.iter().map(|s| s.spec()).collect();
        for (i, a) in specs.iter().enumerate() {
            for b in &specs[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(hex_id("m1", 7, true).len(), 36);
        assert_eq!(hex_id("m1", 7, false).len(), 24);
        assert_ne!(hex_id("m1", 7, true), hex_id("m2", 7, true));
    }
}
