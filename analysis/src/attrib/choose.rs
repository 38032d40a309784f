//! Evidence chosen, not just retrieved: which messages a failed answer
//! needed, ranked from the question and the gold answer (or, in production,
//! the question alone), each with the probability that the answer needed it.
//!
//! Messages are ranked by BM25 over their unwrapped bodies, with light
//! stems so that `painted` meets `paint`, the gold answer's words weighing
//! more than the question's. The best of them are then weighed by what a
//! statement of the answer looks like: how much of the gold answer it says,
//! whether it is said by the person the question is about, whether it speaks
//! of time when the question asks when, and of the day the answer names. A
//! candidate that only repeats what a likelier one says loses weight.

use std::collections::HashMap;

use serde::Serialize;

use super::case::FailedCase;
use super::holds::Matcher;
use super::model::TraceModel;
use super::text::{is_date_token, tokens, MONTHS};
use super::when::{meet, named, said_on, spoken_of, Span, WEEKDAYS};

/// How many messages, by BM25, are weighed.
pub const POOL: usize = 24;

/// How much a gold-answer word weighs in the BM25 query beside a question word.
const GOLD_WEIGHT: f64 = 1.5;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// One message, as the ranking sees it.
struct Doc {
    var: usize,
    /// Stem ids and how often each occurs, sorted by stem.
    tf: Vec<(u32, u32)>,
    len: usize,
    /// The speaker's name stems.
    speaker: Vec<u32>,
    /// Whether the body speaks of time (a date, a weekday, a month, `ago`,
    /// `last week`, `yesterday`).
    temporal: bool,
    /// The days the body speaks of, read from the day it was said.
    spans: Vec<Span>,
}

impl Doc {
    fn count(&self, stem: u32) -> u32 {
        self.tf
            .binary_search_by_key(&stem, |x| x.0)
            .map_or(0, |i| self.tf[i].1)
    }
}

/// What a candidate looks like, as the weighing reads it. Every share is
/// between 0 and 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Features {
    /// BM25 score over the best score of the case.
    pub relative: f64,
    /// `1 / (1 + rank)`, rank from 0.
    pub rank: f64,
    /// Share of the gold answer's words the message says (0 without one).
    pub gold: f64,
    /// 1 when the message is said by a person the question names, 0 when by
    /// another, 0.5 when the question names nobody who speaks.
    pub speaker: f64,
    /// 1 when the question asks when and the message speaks of time.
    pub when: f64,
    /// 1 when the message speaks of a day the gold answer names ("last
    /// year", said in 2023, for an answer of 2022).
    pub date: f64,
    /// Whether the case has a gold answer (1) or not (0).
    pub has_gold: f64,
}

impl Features {
    /// The features as a list, in a fixed order (for fitting and dumping).
    pub fn values(&self) -> [f64; 7] {
        [
            self.relative,
            self.rank,
            self.gold,
            self.speaker,
            self.when,
            self.date,
            self.has_gold,
        ]
    }

    /// Names of [`Features::values`], in the same order.
    pub const NAMES: [&'static str; 7] = [
        "relative", "rank", "gold", "speaker", "when", "date", "has_gold",
    ];
}

/// A message that may be evidence of a case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The message variable.
    pub message: usize,
    /// Its BM25 score.
    pub score: f64,
    /// The probability that the answer needed it.
    pub weight: f64,
    /// What the weight was read from.
    pub features: Features,
    /// The words of the gold answer (then of the question) that it says.
    pub says: Said,
}

/// The words of a case that a candidate says: stem ids of the gold
/// answer's words and of the question's other words.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Said {
    /// Of the gold answer.
    pub gold: Vec<u32>,
    /// Of the question (names of the people talking aside).
    pub question: Vec<u32>,
}

/// The weighing's coefficients: an intercept, then one per feature in the
/// order of [`Features::values`]. They are learned from generated traces
/// whose source evidence is known, so that a weight is how likely a
/// candidate is to be evidence.
const COEFFICIENTS: [f64; 8] = [-6.3, 0.64, 0.2, 2.27, 2.12, 2.27, 1.0, 0.85];

/// What a gold-answer word counts for in telling what a candidate adds to
/// those before it, beside a word of the question.
const GOLD_WORD: f64 = 1.0;
const QUESTION_WORD: f64 = 0.5;

/// The least share of its weight a candidate keeps when candidates weighed
/// higher already say all it says.
const REPEAT_FLOOR: f64 = 0.2;

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The weight of a candidate with these features.
pub fn weigh(f: &Features) -> f64 {
    let v = f.values();
    let z = COEFFICIENTS[0]
        + COEFFICIENTS[1..]
            .iter()
            .zip(v.iter())
            .map(|(c, x)| c * x)
            .sum::<f64>();
    logistic(z)
}

/// Words that say a sentence is about time, besides the names of days
/// and months.
const TIME_WORDS: &[&str] = &[
    "ago",
    "yesterday",
    "today",
    "tomorrow",
    "tonight",
    "last",
    "next",
    "week",
    "weekend",
    "month",
    "year",
    "since",
    "recently",
];

fn speaks_of_time(text: &str) -> bool {
    tokens(text).iter().any(|t| {
        is_date_token(t)
            || TIME_WORDS.contains(&t.as_str())
            || WEEKDAYS.contains(&t.as_str())
            || MONTHS.contains(&t.as_str())
            || (t.len() == 4 && t.starts_with(['1', '2']) && t.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Phrases with which an answer says it found nothing to answer with.
const NO_ANSWER: &[&str] = &[
    "could not find",
    "couldn't find",
    "can't find",
    "cannot find",
    "does not say",
    "doesn't say",
    "does not mention",
    "doesn't mention",
    "not mentioned",
    "no information",
    "no mention",
    "no record",
    "don't know",
    "do not know",
    "not known",
    "cannot tell",
    "can't tell",
    "cannot determine",
    "can't determine",
    "cannot answer",
    "can't answer",
    "not specified",
    "not stated",
    "not provided",
    "no answer",
    "not enough information",
    "insufficient information",
];

/// Whether an answer says that it found nothing to answer with: an answer
/// model says so when its context lacked what the question needs.
pub fn says_no_answer(prediction: &str) -> bool {
    let p = prediction.to_lowercase().replace('’', "'");
    NO_ANSWER.iter().any(|phrase| p.contains(phrase))
}

/// Whether a question asks when something happened.
fn asks_when(question: &str) -> bool {
    let t = tokens(question);
    t.first().is_some_and(|w| w == "when")
        || t.windows(2).any(|w| {
            (w[0] == "what" || w[0] == "which")
                && matches!(w[1].as_str(), "day" | "date" | "year" | "month" | "time")
        })
        || t.windows(2).any(|w| w[0] == "how" && w[1] == "long")
}

/// The messages of one trace, indexed for ranking; shared by its cases.
pub struct Chooser<'a> {
    matcher: &'a Matcher<'a>,
    docs: Vec<Doc>,
    /// Stem -> positions in `docs` of the messages holding it.
    postings: HashMap<u32, Vec<usize>>,
    avg_len: f64,
    /// Stems of every speaker's name.
    speakers: Vec<u32>,
    /// Message variable -> position in `docs`.
    by_var: HashMap<usize, usize>,
}

impl<'a> Chooser<'a> {
    /// Indexes the messages of a trace, in recorded order.
    pub fn new(model: &TraceModel, matcher: &'a Matcher<'a>) -> Chooser<'a> {
        let mut docs = Vec::new();
        let mut speakers: Vec<u32> = Vec::new();
        for var in 0..model.vars.len() {
            let Some(body) = matcher.body(var) else {
                continue;
            };
            let mut tf: HashMap<u32, u32> = HashMap::new();
            let stems = matcher.stems(&body.text);
            let mut len = 0;
            for s in stems {
                if s != 0 {
                    *tf.entry(s).or_default() += 1;
                    len += 1;
                }
            }
            let mut tf: Vec<(u32, u32)> = tf.into_iter().collect();
            tf.sort_unstable();
            let speaker = body
                .speaker
                .as_deref()
                .map(|s| matcher.content(s))
                .unwrap_or_default();
            for &s in &speaker {
                if !speakers.contains(&s) {
                    speakers.push(s);
                }
            }
            let spans = said_on(model, var)
                .map(|day| spoken_of(&body.text, day))
                .unwrap_or_default();
            docs.push(Doc {
                var,
                tf,
                len,
                speaker,
                temporal: speaks_of_time(&body.text),
                spans,
            });
        }
        let mut postings: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            for &(s, _) in &d.tf {
                postings.entry(s).or_default().push(i);
            }
        }
        let avg_len = if docs.is_empty() {
            1.0
        } else {
            (docs.iter().map(|d| d.len).sum::<usize>() as f64 / docs.len() as f64).max(1.0)
        };
        let by_var = docs.iter().enumerate().map(|(i, d)| (d.var, i)).collect();
        Chooser {
            matcher,
            docs,
            postings,
            avg_len,
            speakers,
            by_var,
        }
    }

    fn idf(&self, stem: u32) -> f64 {
        let n = self.docs.len() as f64;
        let df = self.postings.get(&stem).map_or(0, Vec::len) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// BM25 scores of every message holding one of the query's stems.
    fn scores(&self, query: &[(u32, f64)]) -> Vec<(usize, f64)> {
        let mut acc: HashMap<usize, f64> = HashMap::new();
        for &(stem, w) in query {
            let Some(list) = self.postings.get(&stem) else {
                continue;
            };
            let idf = self.idf(stem);
            for &i in list {
                let d = &self.docs[i];
                let f = f64::from(d.count(stem));
                let norm = K1 * (1.0 - B + B * d.len as f64 / self.avg_len);
                *acc.entry(i).or_default() += w * idf * f * (K1 + 1.0) / (f + norm);
            }
        }
        let mut out: Vec<(usize, f64)> = acc.into_iter().filter(|x| x.1 > 0.0).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    /// Share of `wanted` stems that message `doc` holds (0 when none is wanted).
    fn share(&self, doc: usize, wanted: &[u32]) -> f64 {
        if wanted.is_empty() {
            return 0.0;
        }
        let d = &self.docs[doc];
        wanted.iter().filter(|&&s| d.count(s) > 0).count() as f64 / wanted.len() as f64
    }

    /// What a case asks, as the ranking reads it.
    fn ask(&self, case: &FailedCase) -> Asked {
        let question = self.matcher.content(&case.query);
        let names: Vec<u32> = question
            .iter()
            .copied()
            .filter(|s| self.speakers.contains(s))
            .collect();
        let asked: Vec<u32> = question
            .iter()
            .copied()
            .filter(|s| !names.contains(s))
            .collect();
        let gold: Vec<u32> = self
            .matcher
            .content(&case.gold.join(" "))
            .into_iter()
            .filter(|s| !self.speakers.contains(s))
            .collect();
        let mut query: Vec<(u32, f64)> = asked.iter().map(|&s| (s, 1.0)).collect();
        for &s in &gold {
            match query.iter_mut().find(|x| x.0 == s) {
                Some(x) => x.1 = x.1.max(GOLD_WEIGHT),
                None => query.push((s, GOLD_WEIGHT)),
            }
        }
        Asked {
            names,
            asked,
            gold,
            query,
            when: asks_when(&case.query),
            days: case.gold.iter().flat_map(|g| named(g)).collect(),
        }
    }

    /// The messages of a case by BM25, best first, with their scores.
    pub fn sparse(&self, case: &FailedCase) -> Vec<(usize, f64)> {
        self.scores(&self.ask(case).query)
            .into_iter()
            .map(|(i, s)| (self.docs[i].var, s))
            .collect()
    }

    /// The candidates of a case, most likely needed first: the [`POOL`]
    /// best messages by BM25, weighed.
    pub fn candidates(&self, case: &FailedCase) -> Vec<Candidate> {
        let order: Vec<usize> = self
            .sparse(case)
            .into_iter()
            .take(POOL)
            .map(|x| x.0)
            .collect();
        self.weigh_in_order(case, &order)
    }

    /// Candidates made of `order` (message variables, best first, as some
    /// ranking put them; other variables are left out), weighed, most
    /// likely needed first.
    pub fn weigh_in_order(&self, case: &FailedCase, order: &[usize]) -> Vec<Candidate> {
        let a = self.ask(case);
        let scores: HashMap<usize, f64> = self.scores(&a.query).into_iter().collect();
        let top = scores
            .values()
            .copied()
            .fold(0.0_f64, f64::max)
            .max(f64::MIN_POSITIVE);
        let has_gold = !a.gold.is_empty();
        let mut out: Vec<Candidate> = order
            .iter()
            .filter_map(|&var| self.by_var.get(&var).copied())
            .enumerate()
            .map(|(rank, i)| {
                let d = &self.docs[i];
                let score = scores.get(&i).copied().unwrap_or(0.0);
                let speaker = if a.names.is_empty() {
                    0.5
                } else if d.speaker.iter().any(|s| a.names.contains(s)) {
                    1.0
                } else {
                    0.0
                };
                let features = Features {
                    relative: score / top,
                    rank: 1.0 / (1.0 + rank as f64),
                    gold: self.share(i, &a.gold),
                    speaker,
                    when: f64::from(u8::from(a.when && d.temporal)),
                    date: f64::from(u8::from(meet(&d.spans, &a.days))),
                    has_gold: f64::from(u8::from(has_gold)),
                };
                let holds = |list: &[u32]| -> Vec<u32> {
                    list.iter().copied().filter(|&s| d.count(s) > 0).collect()
                };
                Candidate {
                    message: d.var,
                    score,
                    weight: weigh(&features),
                    features,
                    says: Said {
                        gold: holds(&a.gold),
                        question: holds(&a.asked),
                    },
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.weight
                .total_cmp(&a.weight)
                .then(b.score.total_cmp(&a.score))
        });
        discount_repeats(&mut out);
        out
    }
}

/// Lowers the weight of each candidate by how little it adds to those
/// weighed higher: the answer usually needs one or two messages, and a
/// message that says again what a likelier one says is more often an echo
/// (a reply, a later mention) than a second piece of evidence. The order is
/// kept.
fn discount_repeats(candidates: &mut [Candidate]) {
    let mut covered: Vec<(bool, u32)> = Vec::new();
    for (j, c) in candidates.iter_mut().enumerate() {
        let units: Vec<(bool, u32)> = c
            .says
            .gold
            .iter()
            .map(|&s| (true, s))
            .chain(c.says.question.iter().map(|&s| (false, s)))
            .collect();
        let worth = |u: &(bool, u32)| if u.0 { GOLD_WORD } else { QUESTION_WORD };
        if j > 0 {
            let total: f64 = units.iter().map(worth).sum();
            let new: f64 = units
                .iter()
                .filter(|u| !covered.contains(u))
                .map(worth)
                .sum();
            let adds = if total > 0.0 { new / total } else { 0.0 };
            c.weight *= adds.max(REPEAT_FLOOR);
        }
        for u in units {
            if !covered.contains(&u) {
                covered.push(u);
            }
        }
    }
}

/// What a case asks: the people it names, its other words, the gold
/// answer's words, the BM25 query, and whether it asks when.
struct Asked {
    names: Vec<u32>,
    asked: Vec<u32>,
    gold: Vec<u32>,
    query: Vec<(u32, f64)>,
    when: bool,
    /// The days the gold answer names.
    days: Vec<Span>,
}
