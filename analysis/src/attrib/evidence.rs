//! The evidence of a case: its source evidence when the case names any,
//! otherwise pseudo-evidence, the messages of the trace chosen from the
//! question and the gold answer ([`Chooser`]), each weighed by how likely
//! the answer needed it.

use serde::Serialize;

use super::case::FailedCase;
use super::choose::{Candidate, Chooser};
use super::holds::Matcher;
use super::model::TraceModel;

/// How many messages pseudo-evidence takes by default.
pub const DEFAULT_K: usize = 8;

/// Where a case's evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceOrigin {
    /// The case's source evidence (annotation or the query's metadata).
    Source,
    /// Chosen from the trace's messages.
    Pseudo,
}

/// The evidence of one case: message variables, most likely needed first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// Variables (indexes into the trace model) holding the evidence.
    pub items: Vec<usize>,
    /// For each item, the probability that the answer needed it: 1 for
    /// source evidence, which is needed by definition.
    pub weights: Vec<f64>,
    /// Where they came from.
    pub origin: EvidenceOrigin,
}

/// The evidence of `case`: its source evidence found in the trace, or the
/// `k` candidates `chooser` ranks first when it names none that the trace
/// holds.
pub fn evidence(
    model: &TraceModel,
    chooser: &Chooser<'_>,
    case: &FailedCase,
    k: usize,
) -> Evidence {
    let items: Vec<usize> = case
        .source_evidence
        .iter()
        .filter_map(|e| model.var(e))
        .collect();
    if items.is_empty() {
        let chosen: Vec<Candidate> = chooser.candidates(case).into_iter().take(k).collect();
        Evidence {
            items: chosen.iter().map(|c| c.message).collect(),
            weights: chosen.iter().map(|c| c.weight).collect(),
            origin: EvidenceOrigin::Pseudo,
        }
    } else {
        Evidence {
            weights: vec![1.0; items.len()],
            items,
            origin: EvidenceOrigin::Source,
        }
    }
}

/// The evidence of one case of a trace, for a caller that looks at a
/// single case (the trace's messages are indexed for it alone).
pub fn evidence_of(model: &TraceModel, case: &FailedCase, k: usize) -> Evidence {
    let matcher = Matcher::new(model);
    let chooser = Chooser::new(model, &matcher);
    evidence(model, &chooser, case, k)
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

/// Recall@k over the cases of one trace: the `k` candidates `chooser`
/// ranks first for each case (its gold answer kept, its source evidence
/// hidden from the ranking) against its source evidence.
pub fn recall(model: &TraceModel, chooser: &Chooser<'_>, cases: &[FailedCase], k: usize) -> Recall {
    let mut r = Recall::default();
    for c in cases {
        let source: Vec<usize> = c
            .source_evidence
            .iter()
            .filter_map(|e| model.var(e))
            .collect();
        let chosen: Vec<usize> = chooser
            .candidates(c)
            .into_iter()
            .take(k)
            .map(|x| x.message)
            .collect();
        r.add(&source, &chosen);
    }
    r
}
