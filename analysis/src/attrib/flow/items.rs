//! The evidence items a case needs, read from its messages, question and
//! gold answer.

use super::roles::{asks_for_latest, first_read};
use super::types::Flow;
use crate::attrib::case::FailedCase;
use crate::attrib::evidence::{Evidence, EvidenceOrigin};
use crate::attrib::holds::{Item, DATED_OVERLAP, VALUE_OVERLAP};
use crate::attrib::pyvalue::unrepr;
use crate::attrib::text::{is_content, is_date_token, tokens};

use std::collections::HashMap;

impl<'m> Flow<'m> {
    /// The token stems of a text as (stem, is a date) pairs.
    pub(super) fn stems_of(&self, text: &str) -> Vec<(u32, bool)> {
        let mut out: Vec<(u32, bool)> = Vec::new();
        for t in tokens(text) {
            if !is_content(&t) {
                continue;
            }
            let id = self.matcher.content(&t).first().copied();
            if let Some(id) = id {
                if !out.iter().any(|x| x.0 == id) {
                    out.push((id, is_date_token(&t)));
                }
            }
        }
        out
    }

    /// The evidence items a case needs. For a question about the latest
    /// value, only each speaker's latest message is needed.
    pub fn items(&self, case: &FailedCase, evidence: &Evidence) -> Vec<Item> {
        let gold = case.gold.first().map(String::as_str).unwrap_or("");
        let asked: Vec<u32> = self
            .stems_of(&format!("{} {}", case.query, case.gold.join(" ")))
            .into_iter()
            .map(|x| x.0)
            .collect();
        let mut messages: Vec<usize> = evidence.items.clone();
        messages.dedup();
        // Chosen evidence is weighed, not all needed: which of several
        // statements is the latest is left to the weights.
        if evidence.origin == EvidenceOrigin::Source
            && asks_for_latest(self.model, case)
            && messages.len() > 1
        {
            self.keep_latest_per_speaker(&mut messages);
        }
        let question = Question {
            gold,
            parts: answer_parts(gold),
            query_stems: self.stems_of(&case.query),
            speakers: self.speakers_in_question_order(&case.query, &messages),
        };
        messages
            .iter()
            .filter_map(|&m| {
                let mut item = self.matcher.item(m, &asked)?;
                self.set_answer(&mut item, m, &question);
                item.weight = weight_of(evidence, m);
                Some(item)
            })
            .collect()
    }

    /// The first word of the speaker of a message, if it names one.
    fn speaker_of(&self, message: usize) -> Option<String> {
        self.matcher
            .body(message)
            .and_then(|b| b.speaker.as_deref())
            .and_then(|s| tokens(s).into_iter().next())
    }

    /// Keeps only the latest message of each speaker.
    fn keep_latest_per_speaker(&self, messages: &mut Vec<usize>) {
        let model = self.model;
        let mut latest: HashMap<Option<String>, usize> = HashMap::new();
        for &m in messages.iter() {
            let key = self.speaker_of(m);
            let keep = latest
                .get(&key)
                .is_none_or(|&old| first_read(model, m) >= first_read(model, old));
            if keep {
                latest.insert(key, m);
            }
        }
        messages.retain(|m| latest.values().any(|v| v == m));
    }

    /// The speakers of the messages in the order the question names them,
    /// each with where the question names them, for `A vs B` answers.
    fn speakers_in_question_order(&self, query: &str, messages: &[usize]) -> Vec<(usize, String)> {
        let query_tokens = tokens(query);
        let mut speakers: Vec<(usize, String)> = messages
            .iter()
            .filter_map(|&m| self.speaker_of(m))
            .filter_map(|s| query_tokens.iter().position(|t| *t == s).map(|at| (at, s)))
            .collect();
        speakers.sort();
        speakers.dedup_by(|a, b| a.1 == b.1);
        speakers
    }

    /// The stems of a message's own text.
    fn body_stems(&self, message: usize) -> Vec<u32> {
        self.matcher
            .body(message)
            .map(|b| self.matcher.content(&b.text))
            .unwrap_or_else(|| self.matcher.content(&unrepr(self.model.value(message))))
    }

    /// Sets what an item's answer is: the value a holder must keep, the
    /// stems it must have, and how much of the value will do.
    fn set_answer(&self, item: &mut Item, message: usize, question: &Question<'_>) {
        let Question {
            gold,
            parts,
            query_stems,
            speakers,
        } = question;
        let who = self.speaker_of(message);
        let part = if parts.len() > 1 {
            who.as_ref()
                .and_then(|w| speakers.iter().position(|(_, s)| s == w))
                .and_then(|i| parts.get(i))
                .cloned()
                .unwrap_or_else(|| gold.to_string())
        } else {
            parts.first().cloned().unwrap_or_else(|| gold.to_string())
        };
        let mut value: Vec<(u32, bool)> = self
            .stems_of(&part)
            .into_iter()
            .filter(|x| Some(x.0) != item.speaker)
            .collect();
        if part.trim().is_empty() {
            // Without a gold answer, the answer is what the sentence
            // says beyond what the question asks.
            value = self
                .stems_of(&item.text)
                .into_iter()
                .filter(|x| Some(x.0) != item.speaker && !query_stems.iter().any(|q| q.0 == x.0))
                .collect();
        }
        // Dates the question names pin the fact down.
        let mut must: Vec<u32> = query_stems.iter().filter(|x| x.1).map(|x| x.0).collect();
        let mut value_ids: Vec<u32> = value.iter().map(|x| x.0).collect();
        let mut threshold = VALUE_OVERLAP;
        if !value.is_empty() && value.iter().all(|x| x.1) {
            // A date answers "when": it must be there, and the value
            // is what the question and the message share (half of it
            // will do, the date pinning the fact), else what the
            // question says.
            must.append(&mut value_ids);
            let said = self.body_stems(message);
            let asked_here: Vec<u32> = query_stems
                .iter()
                .filter(|x| !x.1 && Some(x.0) != item.speaker)
                .map(|x| x.0)
                .collect();
            value_ids = asked_here
                .iter()
                .copied()
                .filter(|s| said.contains(s))
                .collect();
            if value_ids.is_empty() {
                value_ids = asked_here;
            } else {
                threshold = DATED_OVERLAP;
            }
        }
        item.value = value_ids;
        item.must = must;
        item.asked = query_stems.iter().map(|x| x.0).collect();
        item.threshold = threshold;
    }
}

/// What a case's question and gold answer say, shared by all its items.
struct Question<'a> {
    /// The first gold answer, or empty.
    gold: &'a str,
    /// The gold answer's parts, one per person it compares.
    parts: Vec<String>,
    /// The question's stems, each with whether it is a date.
    query_stems: Vec<(u32, bool)>,
    /// The speakers the question names, in its order.
    speakers: Vec<(usize, String)>,
}

/// The weight of a message in the evidence (1 when it has none).
fn weight_of(evidence: &Evidence, message: usize) -> f64 {
    evidence
        .items
        .iter()
        .position(|&x| x == message)
        .and_then(|i| evidence.weights.get(i).copied())
        .unwrap_or(1.0)
}

/// The parts of a gold answer that compares two people (`No: A vs B`,
/// `Yes, both: A`), else the answer as one part.
pub(super) fn answer_parts(gold: &str) -> Vec<String> {
    let g = gold.trim();
    let lower = g.to_ascii_lowercase();
    let body = ["yes, both:", "no:", "yes:"]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map_or(g, |p| g[p.len()..].trim());
    body.split(" vs ")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}
