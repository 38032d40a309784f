//! What a conversation message says, without the wrapper its recorder put
//! around it.
//!
//! Recorders wrap each message in a template (`Speaker Ann says: ...` and a
//! `Timestamp: ...` line, `Ann: ...`, a JSON object with `content` and
//! `speaker_name` fields). The template is learned from the trace itself:
//! a head before `": "` that nearly every message has, lines at the end
//! that start with the same `Key:` in nearly every message, and the
//! metadata key whose value names the speaker in the text. No template is
//! assumed.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::model::TraceModel;
use super::pyvalue::leaves;
use super::text::tokens;

/// Share of messages that must share a convention for it to count as the
/// trace's wrapper.
const CONVENTION: f64 = 0.6;

/// Share of message heads a token must recur in to be template text.
const RECURRING: f64 = 0.8;

/// Longest head (in words) read as a wrapper rather than as text.
const HEAD_WORDS: usize = 5;

/// Metadata key names that usually hold a speaker, best first.
const SPEAKER_KEYS: &[&str] = &[
    "speaker",
    "speaker_name",
    "speakers",
    "name",
    "author",
    "sender",
    "role",
    "from",
    "user",
];

/// One message, unwrapped.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// The message variable.
    pub var: usize,
    /// What the message says, without head and trailing wrapper lines.
    pub text: String,
    /// The speaker, as written, when known.
    pub speaker: Option<String>,
}

impl Body {
    /// The sentences of the body: split after `.`, `!` and `?`, at line
    /// breaks, and around bracketed asides such as a photo caption.
    pub fn sentences(&self) -> Vec<String> {
        sentences(&self.text)
    }
}

/// The sentences of a text (see [`Body::sentences`]).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let chars: Vec<char> = text.chars().collect();
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        let t = cur.trim();
        if t.chars().any(char::is_alphanumeric) {
            out.push(t.to_string());
        }
        cur.clear();
    };
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '[' if depth == 0 => {
                flush(&mut cur, &mut out);
                depth = 1;
                cur.push(c);
            }
            ']' if depth > 0 => {
                cur.push(c);
                depth = 0;
                flush(&mut cur, &mut out);
            }
            '\n' if depth == 0 => flush(&mut cur, &mut out),
            '.' | '!' | '?' if depth == 0 => {
                cur.push(c);
                let next = chars.get(i + 1).copied();
                if next.is_none_or(char::is_whitespace) {
                    flush(&mut cur, &mut out);
                }
            }
            c => cur.push(c),
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// The messages of a trace, unwrapped by the template learned from them.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    bodies: HashMap<usize, Body>,
    speakers: HashSet<String>,
    /// The learned template, for explanations: the recurring head tokens
    /// and the trailing line keys.
    pub head_tokens: Vec<String>,
    /// Keys of trailing wrapper lines (`timestamp`).
    pub tail_keys: Vec<String>,
    /// The metadata key read as the speaker, if any.
    pub speaker_key: Option<String>,
}

/// The text of a message value: a string literal's text, or the longest
/// string leaf of a structured value (its other leaves are wrapper fields).
fn raw_text(value: &str) -> String {
    let all = leaves(value);
    match all.len() {
        0 => value.trim().to_string(),
        1 => all.into_iter().next().unwrap_or_default(),
        _ => all.into_iter().max_by_key(|l| l.len()).unwrap_or_default(),
    }
}

/// The head of a text's first line: what comes before its first `": "`
/// when that is a few words.
fn head(text: &str) -> Option<(&str, &str)> {
    let first = text.lines().next()?;
    let at = first.find(": ")?;
    let h = &first[..at];
    let words = h.split_whitespace().count();
    (1..=HEAD_WORDS)
        .contains(&words)
        .then(|| (h, &text[at + 2..]))
}

/// The key of a `Key: value` line, lower-cased.
fn line_key(line: &str) -> Option<String> {
    let (k, _) = line.split_once(':')?;
    let k = k.trim();
    (!k.is_empty()
        && k.split_whitespace().count() <= 2
        && k.chars()
            .all(|c| c.is_alphanumeric() || c == ' ' || c == '_'))
    .then(|| k.to_ascii_lowercase())
}

/// Distinct speakers a conversation may have however short it is.
const SPEAKERS_AT_LEAST: usize = 4;

/// Whether a metadata value reads as a name: words of letters only.
fn is_name_like(value: &str) -> bool {
    value.split_whitespace().all(|w| {
        w.chars()
            .all(|c| c.is_alphabetic() || matches!(c, '.' | '-' | '\'' | '_'))
    }) && value.chars().any(char::is_alphabetic)
}

fn meta_str<'a>(meta: &'a Value, key: &str) -> Option<&'a str> {
    meta.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty() && s.len() <= 60 && s.split_whitespace().count() <= 4)
}

/// The speaker key: the metadata key whose value the text names most
/// often; else the first usual key name present. A speaker is a name: words
/// of letters, and few of them in one conversation (a timestamp or a message
/// id is in the text too, but differs from message to message).
fn speaker_key(model: &TraceModel, vars: &[usize], raws: &[String], n: f64) -> Option<String> {
    let mut counts: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut distinct: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (&v, raw) in vars.iter().zip(raws) {
        let text_tokens: HashSet<String> = tokens(raw).into_iter().collect();
        if let Value::Object(map) = &model.vars[v].metadata {
            for key in map.keys() {
                let Some(val) = meta_str(&model.vars[v].metadata, key) else {
                    continue;
                };
                if !is_name_like(val) {
                    continue;
                }
                distinct.entry(key.as_str()).or_default().insert(val);
                let e = counts.entry(key.as_str()).or_default();
                e.0 += 1;
                let t = tokens(val);
                if !t.is_empty() && t.iter().all(|x| text_tokens.contains(x)) {
                    e.1 += 1;
                }
            }
        }
    }
    let few = (n / 3.0).max(SPEAKERS_AT_LEAST as f64);
    counts.retain(|k, _| distinct.get(k).is_some_and(|d| d.len() as f64 <= few));
    let preference = |k: &str| {
        SPEAKER_KEYS
            .iter()
            .position(|s| *s == k)
            .unwrap_or(SPEAKER_KEYS.len())
    };
    let named = counts
        .iter()
        .filter(|(_, (_, hits))| *hits as f64 >= 0.3 * n)
        .max_by_key(|(k, (_, hits))| {
            (
                *hits,
                std::cmp::Reverse(preference(k)),
                std::cmp::Reverse(k.len()),
            )
        })
        .map(|(k, _)| k.to_string());
    named.or_else(|| {
        SPEAKER_KEYS
            .iter()
            .find(|k| {
                counts
                    .get(**k)
                    .is_some_and(|(c, _)| *c as f64 >= CONVENTION * n)
            })
            .map(|k| k.to_string())
    })
}

/// Whether most messages start with a head (a few words before `": "` on
/// the first line), and the tokens that recur in those heads.
fn head_tokens(raws: &[String], n: f64) -> (bool, Vec<String>) {
    let heads: Vec<Option<&str>> = raws.iter().map(|r| head(r).map(|h| h.0)).collect();
    let with_head = heads.iter().flatten().count();
    let mut head_tokens: Vec<String> = Vec::new();
    let strip_heads = with_head as f64 >= CONVENTION * n;
    if strip_heads {
        let mut df: HashMap<String, usize> = HashMap::new();
        for h in heads.iter().flatten() {
            let set: HashSet<String> = tokens(h).into_iter().collect();
            for t in set {
                *df.entry(t).or_default() += 1;
            }
        }
        head_tokens = df
            .into_iter()
            .filter(|(_, c)| *c as f64 >= RECURRING * with_head as f64)
            .map(|(t, _)| t)
            .collect();
        head_tokens.sort();
    }
    (strip_heads, head_tokens)
}

/// Keys of the `Key: ...` lines that end nearly every message.
fn tail_keys(raws: &[String], n: f64) -> Vec<String> {
    let mut tail_df: HashMap<String, usize> = HashMap::new();
    for raw in raws {
        let lines: Vec<&str> = raw.lines().collect();
        if lines.len() < 2 {
            continue;
        }
        if let Some(k) = lines.last().and_then(|l| line_key(l)) {
            *tail_df.entry(k).or_default() += 1;
        }
    }
    let mut tail_keys: Vec<String> = tail_df
        .into_iter()
        .filter(|(_, c)| *c as f64 >= CONVENTION * n)
        .map(|(k, _)| k)
        .collect();
    tail_keys.sort();
    tail_keys
}

impl Messages {
    /// Learns the template from every message of the trace and unwraps them.
    pub fn learn(model: &TraceModel) -> Messages {
        let vars: Vec<usize> = (0..model.vars.len())
            .filter(|&v| model.is_message(v))
            .collect();
        let raws: Vec<String> = vars.iter().map(|&v| raw_text(model.value(v))).collect();
        let n = vars.len().max(1) as f64;

        let speaker_key = speaker_key(model, &vars, &raws, n);
        let (strip_heads, head_tokens) = head_tokens(&raws, n);
        let tail_keys = tail_keys(&raws, n);

        let mut out = Messages {
            bodies: HashMap::new(),
            speakers: HashSet::new(),
            head_tokens,
            tail_keys,
            speaker_key,
        };
        for (&v, raw) in vars.iter().zip(&raws) {
            let body = out.unwrap(model, v, raw, strip_heads);
            if let Some(s) = &body.speaker {
                out.speakers.extend(tokens(s));
            }
            out.bodies.insert(v, body);
        }
        out
    }

    fn unwrap(&self, model: &TraceModel, var: usize, raw: &str, strip_heads: bool) -> Body {
        let meta_speaker = self
            .speaker_key
            .as_deref()
            .and_then(|k| meta_str(&model.vars[var].metadata, k))
            .map(str::to_string);
        let mut text = raw.trim();
        let mut speaker = meta_speaker;
        if strip_heads {
            if let Some((h, rest)) = head(text) {
                let names: Vec<String> = tokens(h)
                    .into_iter()
                    .filter(|t| !self.head_tokens.contains(t))
                    .collect();
                let from_meta = speaker.as_deref().map(tokens).unwrap_or_default();
                // A head is a wrapper when what is left of it is a name: the
                // metadata speaker, or a few words when there is none.
                let is_wrapper = if from_meta.is_empty() {
                    names.len() <= 3
                } else {
                    names.iter().all(|t| from_meta.contains(t))
                };
                if is_wrapper {
                    if speaker.is_none() && !names.is_empty() {
                        let words: Vec<&str> = h
                            .split_whitespace()
                            .filter(|w| {
                                let t = tokens(w);
                                !t.is_empty() && t.iter().all(|x| names.contains(x))
                            })
                            .collect();
                        speaker = Some(words.join(" "));
                    }
                    text = rest.trim_start();
                }
            }
        }
        // Trailing wrapper lines.
        let mut lines: Vec<&str> = text.lines().collect();
        while lines.len() > 1 {
            let last = lines[lines.len() - 1];
            let keyed = line_key(last).is_some_and(|k| self.tail_keys.contains(&k));
            if keyed || last.trim().is_empty() {
                lines.pop();
            } else {
                break;
            }
        }
        Body {
            var,
            text: lines.join("\n").trim().to_string(),
            speaker: speaker.filter(|s| !s.trim().is_empty()),
        }
    }

    /// A message's body, if `var` is a message of the trace.
    pub fn body(&self, var: usize) -> Option<&Body> {
        self.bodies.get(&var)
    }

    /// Every message body.
    pub fn all(&self) -> impl Iterator<Item = &Body> {
        self.bodies.values()
    }

    /// Whether a token is (part of) some speaker's name.
    pub fn is_speaker_token(&self, t: &str) -> bool {
        self.speakers.contains(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrib::model::test_model;
    use serde_json::json;

    fn model(vars: Vec<(&str, &str, Value)>) -> TraceModel {
        let vars: Vec<(&str, &str, &str, Value)> = vars
            .into_iter()
            .map(|(n, v, meta)| (n, "message", v, meta))
            .collect();
        test_model(&vars)
    }

    #[test]
    fn a_speaker_says_template_with_a_timestamp_line_is_learned_and_removed() {
        let m = model(vec![
            (
                "message:D1:1",
                "Speaker Caroline says: I went to a support group. It was great!\nTimestamp: 2023-05-08T13:56:00",
                json!({"speaker_tag": "speaker_a", "speakers": "Caroline"}),
            ),
            (
                "message:D1:2",
                "Speaker Melanie says: Wow: tell me more.\nTimestamp: 2023-05-08T13:57:00",
                json!({"speaker_tag": "speaker_b", "speakers": "Melanie"}),
            ),
            (
                "message:D1:3",
                "Speaker Caroline says: Sure.\nTimestamp: 2023-05-08T13:58:00",
                json!({"speaker_tag": "speaker_a", "speakers": "Caroline"}),
            ),
        ]);
        let msgs = Messages::learn(&m);
        assert_eq!(msgs.speaker_key.as_deref(), Some("speakers"));
        assert_eq!(msgs.tail_keys, ["timestamp"]);
        let b = msgs.body(0).expect("a body");
        assert_eq!(b.text, "I went to a support group. It was great!");
        assert_eq!(b.speaker.as_deref(), Some("Caroline"));
        assert_eq!(
            b.sentences(),
            ["I went to a support group.", "It was great!"]
        );
        assert_eq!(msgs.body(1).expect("a body").text, "Wow: tell me more.");
        assert!(msgs.is_speaker_token("melanie"));
    }

    #[test]
    fn a_timestamp_the_text_repeats_is_not_taken_for_the_speaker() {
        let msg = |who: &str, text: &str, at: &str| {
            (
                format!("Speaker {who} says: {text}\nTimestamp: {at}"),
                json!({"timestamp": at, "dia_id": "D1:1", "speaker_name": who}),
            )
        };
        let rows = [
            msg(
                "Gina",
                "Hey Jon! Nothing beats pho for me.",
                "2023-12-17T21:48:00",
            ),
            msg("Jon", "I could eat tacos every day.", "2023-12-17T21:49:00"),
            msg("Gina", "Sure.", "2023-12-17T21:50:00"),
        ];
        let m = model(
            rows.iter()
                .enumerate()
                .map(|(i, (v, meta))| {
                    (
                        ["message:1", "message:2", "message:3"][i],
                        v.as_str(),
                        meta.clone(),
                    )
                })
                .collect(),
        );
        let msgs = Messages::learn(&m);
        assert_eq!(msgs.speaker_key.as_deref(), Some("speaker_name"));
        let b = msgs.body(0).expect("a body");
        assert_eq!(b.text, "Hey Jon! Nothing beats pho for me.");
        assert_eq!(b.speaker.as_deref(), Some("Gina"));
    }

    #[test]
    fn a_name_prefix_without_metadata_names_the_speaker() {
        let m = model(vec![
            ("message:a", "'Omar: I drive a blue Volvo.'", json!({})),
            (
                "message:b",
                "'Lena: My cat sleeps. [shares a photo of a cat]'",
                json!({}),
            ),
        ]);
        let msgs = Messages::learn(&m);
        let b = msgs.body(0).expect("a body");
        assert_eq!(b.text, "I drive a blue Volvo.");
        assert_eq!(b.speaker.as_deref(), Some("Omar"));
        assert_eq!(
            msgs.body(1).expect("a body").sentences(),
            ["My cat sleeps.", "[shares a photo of a cat]"]
        );
    }

    #[test]
    fn a_structured_message_reads_its_longest_field() {
        let m = model(vec![(
            "message:a",
            r#"{"speaker_name": "Ann", "content": "I moved to Lisbon last spring."}"#,
            json!({"speaker_name": "Ann"}),
        )]);
        let msgs = Messages::learn(&m);
        let b = msgs.body(0).expect("a body");
        assert_eq!(b.text, "I moved to Lisbon last spring.");
        assert_eq!(b.speaker.as_deref(), Some("Ann"));
    }

    #[test]
    fn text_without_a_convention_is_kept_whole() {
        let m = model(vec![
            ("message:a", "'Note: this is kept.'", json!({})),
            ("message:b", "'No head here at all'", json!({})),
            ("message:c", "'Nor here'", json!({})),
        ]);
        let msgs = Messages::learn(&m);
        assert_eq!(msgs.body(0).expect("a body").text, "Note: this is kept.");
    }
}
