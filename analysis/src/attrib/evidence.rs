//! The evidence of a case: its source evidence when the case names any,
//! otherwise pseudo-evidence, the messages of the trace that best match the
//! question and the gold answer by BM25.

use serde::Serialize;

use super::case::FailedCase;
use super::model::TraceModel;
use super::pyvalue::unrepr;
use memtrace_text::Bm25;

/// How many messages pseudo-evidence takes by default.
pub const DEFAULT_K: usize = 8;

/// Where a case's evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceOrigin {
    /// The case's source evidence (annotation or the query's metadata).
    Source,
    /// BM25 over the trace's messages.
    Pseudo,
}

/// The evidence of one case: message variables, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// Variables (indexes into the trace model) holding the evidence.
    pub items: Vec<usize>,
    /// Where they came from.
    pub origin: EvidenceOrigin,
}

/// A BM25 index over the message variables of one trace, built once and
/// shared by all its cases.
#[derive(Debug, Clone)]
pub struct MessageIndex {
    index: Bm25,
    vars: Vec<usize>,
}

impl MessageIndex {
    /// Indexes every message variable of the trace.
    pub fn new(model: &TraceModel) -> MessageIndex {
        let mut index = Bm25::new();
        let mut vars = Vec::new();
        for v in 0..model.vars.len() {
            if model.is_message(v) {
                index.add(&unrepr(model.value(v)));
                vars.push(v);
            }
        }
        MessageIndex { index, vars }
    }

    /// The `k` messages that best match `text`, best first, with their scores.
    pub fn top(&self, text: &str, k: usize) -> Vec<(usize, f64)> {
        self.index
            .top(text, k)
            .into_iter()
            .map(|(doc, score)| (self.vars[doc], score))
            .collect()
    }

    /// Pseudo-evidence of a case: the `k` messages best matching its
    /// question and gold answer.
    pub fn pseudo(&self, case: &FailedCase, k: usize) -> Vec<usize> {
        let text = format!("{} {}", case.query, case.gold.join(" "));
        self.top(&text, k).into_iter().map(|(v, _)| v).collect()
    }
}

/// The evidence of `case`: its source evidence found in the trace, or
/// pseudo-evidence (`k` messages) when it names none that the trace holds.
pub fn evidence(model: &TraceModel, index: &MessageIndex, case: &FailedCase, k: usize) -> Evidence {
    let items: Vec<usize> = case
        .source_evidence
        .iter()
        .filter_map(|e| model.var(e))
        .collect();
    if items.is_empty() {
        Evidence {
            items: index.pseudo(case, k),
            origin: EvidenceOrigin::Pseudo,
        }
    } else {
        Evidence {
            items,
            origin: EvidenceOrigin::Source,
        }
    }
}

/// Recall@k of pseudo-evidence against source evidence, over the cases
/// that have both.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Recall {
    /// Cases with source evidence found in their trace.
    pub cases: usize,
    /// Source evidence items over those cases.
    pub items: usize,
    /// Of those, how many pseudo-evidence found.
    pub found: usize,
    /// Cases whose every source item pseudo-evidence found.
    pub complete: usize,
}

impl Recall {
    /// Counts one case: its source items and its pseudo-evidence.
    pub fn add(&mut self, source: &[usize], pseudo: &[usize]) {
        if source.is_empty() {
            return;
        }
        let found = source.iter().filter(|s| pseudo.contains(s)).count();
        self.cases += 1;
        self.items += source.len();
        self.found += found;
        if found == source.len() {
            self.complete += 1;
        }
    }

    /// Adds another tally to this one.
    pub fn merge(&mut self, other: &Recall) {
        self.cases += other.cases;
        self.items += other.items;
        self.found += other.found;
        self.complete += other.complete;
    }

    /// Found items over source items (0 when there are none).
    pub fn micro(&self) -> f64 {
        if self.items == 0 {
            0.0
        } else {
            self.found as f64 / self.items as f64
        }
    }

    /// Share of cases with all their source items found.
    pub fn complete_share(&self) -> f64 {
        if self.cases == 0 {
            0.0
        } else {
            self.complete as f64 / self.cases as f64
        }
    }
}

/// Recall@k over the cases of one trace.
pub fn recall(model: &TraceModel, index: &MessageIndex, cases: &[FailedCase], k: usize) -> Recall {
    let mut r = Recall::default();
    for c in cases {
        let source: Vec<usize> = c
            .source_evidence
            .iter()
            .filter_map(|e| model.var(e))
            .collect();
        r.add(&source, &index.pseudo(c, k));
    }
    r
}
