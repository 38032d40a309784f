//! Whether a recorded value still holds an evidence item.
//!
//! An item is the part of a message that a question needs: the sentence(s)
//! that the question and gold answer point to, as light stems. A value holds
//! it when, inside one of its string leaves, a local window about the
//! item's length covers most of those stems ([`COVER`]), and the words of
//! that window are not better explained by another message of the trace.
//! A small value derived from one source (an extracted fact) may instead
//! hold the item by the answer's own words with the speaker. No match runs
//! over a whole large value: a transcript that has every word somewhere
//! does not hold a sentence it lost.

use std::cell::{OnceCell, RefCell};
/// Maps and sets with a fast hash (the keys are ids and stems of one trace).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
use std::rc::Rc;

use super::message::{Body, Messages};
use super::model::TraceModel;
use super::pyvalue::leaves;
use super::text::{is_content, stem, tokens};

/// Share of an item's stems one window must cover.
pub const COVER: f64 = 0.7;

/// Share of the answer's value stems a small value must hold (with the
/// speaker) to carry an item it does not quote.
pub const VALUE_OVERLAP: f64 = 0.75;

/// The share that will do for a dated fact: the words both the question
/// and the message use, beside the date.
pub const DATED_OVERLAP: f64 = 0.5;

/// The stem id of a token that says nothing (stop word, filler).
const NONE: u32 = 0;

/// Items with fewer stems than this use the whole message.
const MIN_STEMS: usize = 3;

/// Shortest leaf text that [`Matcher::carries_leaf`] looks for verbatim
/// (a short one could sit inside other words).
const MIN_CARRIED: usize = 12;

/// Content words a sentence may have and still be an aside ("It still
/// feels a bit unreal.").
const ASIDE_STEMS: usize = 3;

/// Share of a small value's words that another message must account for
/// for the value to be that message's copy.
const COPY: f64 = 0.8;

/// Tokens before a window searched for the speaker's name.
const SPEAKER_REACH: usize = 4;

/// How many candidate windows of one leaf are checked against the other
/// messages before giving up on that leaf.
const MAX_WINDOWS: usize = 24;

/// Whether a sentence tells something: not a question, not a bracketed
/// aside.
fn is_telling(sentence: &str) -> bool {
    let t = sentence.trim();
    !(t.ends_with('?') || (t.starts_with('[') && t.ends_with(']')))
}

/// One evidence item of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The message variable.
    pub message: usize,
    /// The item's distinct content stems (the speaker's name left out).
    pub stems: Vec<u32>,
    /// Its length in tokens.
    pub span: usize,
    /// The sentences it is made of.
    pub text: String,
    /// Whether it is the whole message (no sentence was pointed to).
    pub whole: bool,
    /// The speaker's first name stem, when known.
    pub speaker: Option<u32>,
    /// Stems of the answer part this message supports.
    pub value: Vec<u32>,
    /// Stems a value must hold besides (dates the question names, or the
    /// date that is the answer).
    pub must: Vec<u32>,
    /// Share of `value` a small value must hold.
    pub threshold: f64,
    /// Stems of the question: words any statement of its answer shares.
    pub asked: Vec<u32>,
    /// The probability that the answer needed this item (1 for source
    /// evidence); matching never reads it.
    pub weight: f64,
}

/// One string leaf of a value: the stem id of each token, and where each
/// stem occurs (so that matching an item touches only its own words).
struct Leaf {
    text: Rc<str>,
    stems: Vec<u32>,
    at: HashMap<u32, Vec<usize>>,
    /// A searcher for `text`, built the first time a value is searched for it.
    finder: OnceCell<memchr::memmem::Finder<'static>>,
}

impl Leaf {
    fn new(text: Rc<str>, stems: Vec<u32>) -> Leaf {
        let mut at: HashMap<u32, Vec<usize>> = HashMap::default();
        for (p, &s) in stems.iter().enumerate() {
            if s != NONE {
                at.entry(s).or_default().push(p);
            }
        }
        Leaf {
            text,
            stems,
            at,
            finder: OnceCell::new(),
        }
    }

    fn positions(&self, s: u32) -> &[usize] {
        self.at.get(&s).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// What [`Matcher::belongs`] decided on: a message, the words of a window,
/// and the speakers named next to it.
type Judged = (usize, Vec<u32>, Vec<u32>);

/// What decides whether a leaf holds an item: every field of [`Item`] that
/// the matching reads.
#[derive(PartialEq, Eq, Hash)]
struct ItemKey {
    message: usize,
    stems: Vec<u32>,
    span: usize,
    speaker: Option<u32>,
    value: Vec<u32>,
    must: Vec<u32>,
    threshold: u64,
    asked: Vec<u32>,
}

impl ItemKey {
    fn of(item: &Item) -> ItemKey {
        ItemKey {
            message: item.message,
            stems: item.stems.clone(),
            span: item.span,
            speaker: item.speaker,
            value: item.value.clone(),
            must: item.must.clone(),
            threshold: item.threshold.to_bits(),
            asked: item.asked.clone(),
        }
    }
}

/// The distinct string leaves of the values read so far. The versions of a
/// rolling memory share most of their leaves (a transcript keeps its
/// earlier lines), so each distinct leaf is decoded, indexed and judged
/// once per item, not once per version.
#[derive(Default)]
struct LeafTable {
    leaves: Vec<Rc<Leaf>>,
    by_text: HashMap<String, u32>,
    /// Leaf ids by the stems they contain, ascending.
    containing: HashMap<u32, Vec<u32>>,
}

/// The leaves known to hold one item: those of the first `seen` leaf ids
/// of the table that hold it, ascending.
#[derive(Default)]
struct Holders {
    seen: u32,
    hold: Vec<u32>,
}

/// Stem ids of one trace and the leaves of its values, computed once and
/// shared by all cases of the trace.
pub struct Matcher<'m> {
    model: &'m TraceModel,
    messages: Messages,
    ids: RefCell<HashMap<String, u32>>,
    table: RefCell<LeafTable>,
    /// The leaf ids of each variable's value, ascending and distinct.
    leaves: Vec<OnceCell<Vec<u32>>>,
    holders: RefCell<HashMap<ItemKey, Holders>>,
    bodies: HashMap<usize, HashSet<u32>>,
    postings: HashMap<u32, Vec<usize>>,
    speakers: HashSet<u32>,
    speaker_of: HashMap<usize, Vec<u32>>,
    /// Answers of [`Matcher::belongs`] by (message, words, names present):
    /// the versions of a rolling memory repeat the same windows.
    judged: RefCell<HashMap<Judged, bool>>,
    /// Answers of [`Matcher::carries_leaf`] by (variable, leaf): the cases of
    /// a trace follow the same versions.
    carried: RefCell<HashMap<(usize, u32), bool>>,
}

impl<'m> Matcher<'m> {
    /// Prepares a trace: learns its message template and indexes the
    /// messages' words.
    pub fn new(model: &'m TraceModel) -> Matcher<'m> {
        let messages = Messages::learn(model);
        let mut m = Matcher {
            model,
            messages,
            ids: RefCell::new(HashMap::default()),
            table: RefCell::new(LeafTable::default()),
            leaves: (0..model.vars.len()).map(|_| OnceCell::new()).collect(),
            holders: RefCell::new(HashMap::default()),
            bodies: HashMap::default(),
            postings: HashMap::default(),
            speakers: HashSet::default(),
            speaker_of: HashMap::default(),
            judged: RefCell::new(HashMap::default()),
            carried: RefCell::new(HashMap::default()),
        };
        let bodies: Vec<(usize, String, Option<String>)> = m
            .messages
            .all()
            .map(|b| (b.var, b.text.clone(), b.speaker.clone()))
            .collect();
        for (var, text, speaker) in bodies {
            let set: HashSet<u32> = m.stems(&text).into_iter().filter(|&s| s != NONE).collect();
            for &s in &set {
                m.postings.entry(s).or_default().push(var);
            }
            m.bodies.insert(var, set);
            let mut ids = Vec::new();
            for t in speaker.as_deref().map(tokens).unwrap_or_default() {
                let id = m.id(&t);
                if id != NONE {
                    m.speakers.insert(id);
                    ids.push(id);
                }
            }
            m.speaker_of.insert(var, ids);
        }
        for list in m.postings.values_mut() {
            list.sort_unstable();
        }
        m
    }

    /// A message's body.
    pub fn body(&self, var: usize) -> Option<&Body> {
        self.messages.body(var)
    }

    fn id(&self, t: &str) -> u32 {
        if !is_content(t) {
            return NONE;
        }
        let s = stem(t);
        let mut ids = self.ids.borrow_mut();
        let next = ids.len() as u32 + 1;
        *ids.entry(s).or_insert(next)
    }

    /// The stem id of every token of a text (`NONE` for words that say
    /// nothing).
    pub fn stems(&self, text: &str) -> Vec<u32> {
        tokens(text).iter().map(|t| self.id(t)).collect()
    }

    /// Distinct content stems of a text, in order of first use.
    pub fn content(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for s in self.stems(text) {
            if s != NONE && !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }

    /// The leaf ids of a variable's value, decoding and indexing the leaves
    /// not seen before.
    fn leaves(&self, var: usize) -> &[u32] {
        self.leaves[var].get_or_init(|| {
            let mut ids: Vec<u32> = leaves(self.model.value(var))
                .into_iter()
                .map(|text| self.intern(text))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        })
    }

    fn intern(&self, text: String) -> u32 {
        if let Some(&id) = self.table.borrow().by_text.get(&text) {
            return id;
        }
        let leaf = Leaf::new(Rc::from(text.as_str()), self.stems(&text));
        let mut table = self.table.borrow_mut();
        let id = table.leaves.len() as u32;
        for &s in leaf.at.keys() {
            table.containing.entry(s).or_default().push(id);
        }
        table.leaves.push(Rc::new(leaf));
        table.by_text.insert(text, id);
        id
    }

    /// Brings the leaves known to hold `item` up to date with the table:
    /// only new leaves that contain one of the words a match needs are
    /// judged.
    fn update_holders(&self, item: &Item, holders: &mut Holders) {
        let (candidates, total) = {
            let table = self.table.borrow();
            let total = table.leaves.len() as u32;
            if holders.seen == total {
                return;
            }
            let mut candidates: Vec<u32> = Vec::new();
            let needed = item
                .stems
                .iter()
                .chain(&item.value)
                .chain(item.must.first());
            for s in needed {
                if let Some(list) = table.containing.get(s) {
                    let from = list.partition_point(|&l| l < holders.seen);
                    candidates.extend_from_slice(&list[from..]);
                }
            }
            candidates.sort_unstable();
            candidates.dedup();
            let leaves: Vec<(u32, Rc<Leaf>)> = candidates
                .into_iter()
                .map(|l| (l, Rc::clone(&table.leaves[l as usize])))
                .collect();
            (leaves, total)
        };
        for (id, leaf) in candidates {
            if self.window_holds(&leaf, item) || self.answer_holds(&leaf, item) {
                holders.hold.push(id);
            }
        }
        holders.seen = total;
    }

    /// The evidence item of `message` for a question: the sentences that
    /// the question and answer stems point to, else the whole message.
    pub fn item(&self, message: usize, asked: &[u32]) -> Option<Item> {
        let body = self.body(message)?;
        let speaker: Vec<u32> = body
            .speaker
            .as_deref()
            .map(|s| self.content(s))
            .unwrap_or_default();
        let sentences = body.sentences();
        let scored: Vec<(usize, Vec<u32>)> = sentences
            .iter()
            .map(|s| {
                // Names of the people talking say who, not what: a
                // greeting ("Hey Jon!") tells nothing a store keeps.
                let c: Vec<u32> = self
                    .content(s)
                    .into_iter()
                    .filter(|x| !speaker.contains(x) && !self.speakers.contains(x))
                    .collect();
                (c.iter().filter(|x| asked.contains(x)).count(), c)
            })
            .collect();
        // Stores keep what a message tells and drop its questions and
        // asides (a photo caption): only a telling sentence can be the item,
        // unless the message has none.
        let telling: Vec<usize> = (0..sentences.len())
            .filter(|&i| is_telling(&sentences[i]) && !scored[i].1.is_empty())
            .collect();
        let candidates: Vec<usize> = if telling.is_empty() {
            (0..sentences.len()).collect()
        } else {
            telling
        };
        let best = candidates.iter().map(|&i| scored[i].0).max().unwrap_or(0);
        let pick = |chosen: &[usize]| -> (Vec<u32>, usize, String) {
            let mut stems = Vec::new();
            let mut span = 0;
            let mut text = Vec::new();
            for &i in chosen {
                for &x in &scored[i].1 {
                    if !stems.contains(&x) {
                        stems.push(x);
                    }
                }
                span += tokens(&sentences[i]).len();
                text.push(sentences[i].as_str());
            }
            (stems, span, text.join(" "))
        };
        // Several telling sentences and none pointed to: the whole message.
        // When all but one of them are asides (a reaction of a few words),
        // it is held where that one is: stores keep what a message tells
        // and drop its asides.
        let mut whole = candidates.len() > 1;
        let (mut stems, mut span, mut text) = pick(&candidates);
        if whole {
            let full: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&i| scored[i].1.len() > ASIDE_STEMS)
                .collect();
            if let [core] = full[..] {
                (stems, span, _) = pick(&[core]);
            }
        }
        if best > 0 && candidates.len() > 1 {
            let chosen: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&i| scored[i].0 == best)
                .collect();
            let (s, n, t) = pick(&chosen);
            if s.len() >= MIN_STEMS {
                (stems, span, text, whole) = (s, n, t, false);
            }
        }
        if stems.is_empty() {
            return None;
        }
        Some(Item {
            message,
            stems,
            span,
            text,
            whole,
            speaker: speaker.first().copied(),
            value: Vec::new(),
            must: Vec::new(),
            threshold: VALUE_OVERLAP,
            asked: Vec::new(),
            weight: 1.0,
        })
    }

    /// Whether a variable's value holds an item.
    pub fn holds(&self, var: usize, item: &Item) -> bool {
        if var == item.message {
            return true;
        }
        self.holding_leaf(var, item).is_some()
    }

    /// A string leaf of `var`'s value that holds the item, if any (a
    /// message holds only its own item, and as a whole, so never by a
    /// leaf).
    pub fn holding_leaf(&self, var: usize, item: &Item) -> Option<u32> {
        if self.messages.body(var).is_some() {
            // Another message never holds this one's item.
            return None;
        }
        let ids = self.leaves(var);
        let key = ItemKey::of(item);
        let mut holders = self.holders.borrow_mut().remove(&key).unwrap_or_default();
        self.update_holders(item, &mut holders);
        let found = if holders.hold.len() < ids.len() {
            holders
                .hold
                .iter()
                .copied()
                .find(|l| ids.binary_search(l).is_ok())
        } else {
            ids.iter()
                .copied()
                .find(|l| holders.hold.binary_search(l).is_ok())
        };
        self.holders.borrow_mut().insert(key, holders);
        found
    }

    /// Whether `var`'s value, as recorded, contains the text of a leaf
    /// verbatim: a newer version of a rolling memory that kept the line
    /// which held an item still holds it, seen without decoding it.
    pub fn carries_leaf(&self, var: usize, leaf: u32) -> bool {
        if self.messages.body(var).is_some() {
            return false;
        }
        if let Some(&known) = self.carried.borrow().get(&(var, leaf)) {
            return known;
        }
        let cell = match self.table.borrow().leaves.get(leaf as usize) {
            Some(l) => Rc::clone(l),
            None => return false,
        };
        let carried = cell.text.len() >= MIN_CARRIED
            && cell
                .finder
                .get_or_init(|| memchr::memmem::Finder::new(cell.text.as_bytes()).into_owned())
                .find(self.model.value(var).as_bytes())
                .is_some();
        self.carried.borrow_mut().insert((var, leaf), carried);
        carried
    }

    fn window_holds(&self, cell: &Leaf, item: &Item) -> bool {
        let leaf = cell.stems.as_slice();
        let k = item.stems.len();
        if k == 0 {
            return false;
        }
        let need = ((COVER * k as f64).ceil() as usize).clamp(1, k);
        if item
            .stems
            .iter()
            .filter(|s| cell.at.contains_key(s))
            .count()
            < need
        {
            return false;
        }
        let mut hits: Vec<(usize, usize)> = item
            .stems
            .iter()
            .enumerate()
            .flat_map(|(i, &s)| cell.positions(s).iter().map(move |&p| (p, i)))
            .collect();
        hits.sort_unstable();
        let mut present = vec![false; k];
        for &(_, i) in &hits {
            present[i] = true;
        }
        if present.iter().filter(|x| **x).count() < need {
            return false;
        }
        let width = item.span + item.span / 2 + 4;
        let mut counts = vec![0usize; k];
        let mut distinct = 0;
        let mut lo = 0;
        let mut checked = 0;
        let mut last_checked: Option<(usize, usize)> = None;
        for hi in 0..hits.len() {
            let (p, i) = hits[hi];
            counts[i] += 1;
            if counts[i] == 1 {
                distinct += 1;
            }
            while p - hits[lo].0 >= width {
                let j = hits[lo].1;
                counts[j] -= 1;
                if counts[j] == 0 {
                    distinct -= 1;
                }
                lo += 1;
            }
            if distinct >= need {
                // Tighten the start to the first hit still needed.
                let mut start = lo;
                let mut c = counts.clone();
                while start < hi && c[hits[start].1] > 1 {
                    c[hits[start].1] -= 1;
                    start += 1;
                }
                let span = (hits[start].0, p);
                if last_checked.is_some_and(|l| l.0 == span.0) {
                    continue;
                }
                last_checked = Some(span);
                // Judge the window at the item's own length at least, so
                // that a longer message it is part of shows.
                let pad = item.span.saturating_sub(span.1 - span.0 + 1).div_ceil(2);
                let from = span.0.saturating_sub(pad);
                let to = (span.1 + pad).min(leaf.len() - 1);
                // The words of the answer that the item says must be there
                // too: a rewrite that kept the sentence but swapped what it
                // was about (another pet, another city) lost it.
                if !self.keeps_value(&leaf[from..=to], item) {
                    checked += 1;
                    if checked >= MAX_WINDOWS {
                        return false;
                    }
                    continue;
                }
                // A name just before the window says whose words these are.
                let named = &leaf[from.saturating_sub(SPEAKER_REACH)..=to];
                if self.belongs(&leaf[from..=to], named, item.message) {
                    return true;
                }
                checked += 1;
                if checked >= MAX_WINDOWS {
                    return false;
                }
            }
        }
        false
    }

    /// Whether a window holds enough of the answer's words that the item
    /// itself says (all of them pass when it says none).
    fn keeps_value(&self, window: &[u32], item: &Item) -> bool {
        let said: Vec<u32> = item
            .value
            .iter()
            .copied()
            .filter(|s| item.stems.contains(s))
            .collect();
        if said.is_empty() {
            return true;
        }
        let kept = said.iter().filter(|s| window.contains(s)).count();
        kept as f64 >= item.threshold * said.len() as f64
    }

    /// A value that states the answer in its own words: the speaker, the
    /// dates that must be there and most of the answer's words, together
    /// in a small value or in one window about the item's length of a
    /// larger one (a summary that merged several messages), where the words
    /// are not another message's own.
    fn answer_holds(&self, cell: &Leaf, item: &Item) -> bool {
        let leaf = cell.stems.as_slice();
        if item.value.is_empty() && item.must.is_empty() {
            return false;
        }
        // A small value must not be another message's copy; a window of a
        // larger one must be explained by this message at least as well as
        // by any other.
        let states = |w: &[u32], small: bool| {
            if small && item.speaker.is_some_and(|s| !w.contains(&s)) {
                return false;
            }
            if !item.must.iter().all(|s| w.contains(s)) {
                return false;
            }
            let found = item.value.iter().filter(|s| w.contains(s)).count();
            let share = if item.value.is_empty() {
                1.0
            } else {
                found as f64 / item.value.len() as f64
            };
            share >= item.threshold && (!small || !self.copies_other(w, item.message))
        };
        let width = item.span.max(12) + 4;
        if leaf.len() <= (2 * item.span).max(30) {
            return states(leaf, true);
        }
        let anchor = item.value.first().or(item.must.first());
        let Some(&anchor) = anchor else { return false };
        let nearest = |p: usize, from: usize, to: usize, x: u32| -> Option<usize> {
            (from..=to)
                .filter(|&i| leaf[i] == x)
                .min_by_key(|&i| i.abs_diff(p))
        };
        cell.positions(anchor)
            .iter()
            .copied()
            .take(MAX_WINDOWS)
            .any(|p| {
                let from = p.saturating_sub(width / 2);
                let to = (p + width / 2).min(leaf.len() - 1);
                if !states(&leaf[from..=to], false) {
                    return false;
                }
                // In a larger text the speaker is named before what they
                // said (up to a window's width before): a name after it
                // starts someone's next line.
                let speaker_at = match item.speaker {
                    Some(s) => match nearest(p, p.saturating_sub(width), p, s) {
                        Some(i) => Some(i),
                        None => return false,
                    },
                    None => None,
                };
                // The tight span of what was needed, judged without the
                // question's own words (every statement of an answer has them).
                let needed = item
                    .must
                    .iter()
                    .chain(item.value.iter().filter(|v| leaf[from..=to].contains(v)));
                let at: Vec<usize> = needed
                    .filter_map(|&x| nearest(p, from, to, x))
                    .chain(speaker_at)
                    .collect();
                let lo = at.iter().copied().min().unwrap_or(p).min(p);
                let hi = at.iter().copied().max().unwrap_or(p).max(p);
                let span: Vec<u32> = leaf[lo..=hi]
                    .iter()
                    .map(|s| if item.asked.contains(s) { NONE } else { *s })
                    .collect();
                self.belongs(
                    &span,
                    &leaf[lo.saturating_sub(SPEAKER_REACH)..=hi],
                    item.message,
                )
            })
    }

    /// Whether a small value is (nearly) another message's own words: most
    /// of its words are that message's, and fewer are ours.
    fn copies_other(&self, leaf: &[u32], message: usize) -> bool {
        let words = self.words(leaf);
        let own = self
            .bodies
            .get(&message)
            .map_or(0, |b| words.iter().filter(|w| b.contains(w)).count());
        let mut others: HashMap<usize, usize> = HashMap::default();
        for w in &words {
            for &m in self.postings.get(w).map(Vec::as_slice).unwrap_or(&[]) {
                if m != message {
                    *others.entry(m).or_default() += 1;
                }
            }
        }
        others
            .values()
            .any(|&c| c > own && c as f64 >= COPY * words.len() as f64)
    }

    /// The distinct content stems of a span, speakers' names left out.
    fn words(&self, span: &[u32]) -> Vec<u32> {
        let mut words: Vec<u32> = span
            .iter()
            .copied()
            .filter(|&s| s != NONE && !self.speakers.contains(&s))
            .collect();
        words.sort_unstable();
        words.dedup();
        words
    }

    /// Whether the words of `span` are explained at least as well by
    /// `message` as by any other message. On a tie, the speaker named in
    /// `named` (the span and a few tokens before it) decides.
    fn belongs(&self, span: &[u32], named: &[u32], message: usize) -> bool {
        let words = self.words(span);
        let mut names: Vec<u32> = named
            .iter()
            .copied()
            .filter(|s| self.speakers.contains(s))
            .collect();
        names.sort_unstable();
        names.dedup();
        let key = (message, words, names);
        if let Some(&known) = self.judged.borrow().get(&key) {
            return known;
        }
        let answer = self.judge(&key.1, &key.2, message);
        self.judged.borrow_mut().insert(key, answer);
        answer
    }

    fn judge(&self, words: &[u32], names: &[u32], message: usize) -> bool {
        let Some(ours) = self.bodies.get(&message) else {
            return true;
        };
        let own = words.iter().filter(|w| ours.contains(w)).count();
        let mut others: HashMap<usize, usize> = HashMap::default();
        for w in words {
            for &m in self.postings.get(w).map(Vec::as_slice).unwrap_or(&[]) {
                if m != message {
                    *others.entry(m).or_default() += 1;
                }
            }
        }
        let named = |m: usize| {
            self.speaker_of
                .get(&m)
                .is_some_and(|ids| !ids.is_empty() && ids.iter().all(|s| names.contains(s)))
        };
        let we_are_named = named(message);
        !others
            .iter()
            .any(|(&m, &c)| c > own || (c == own && !we_are_named && named(m)))
    }
}

#[cfg(test)]
mod tests;
