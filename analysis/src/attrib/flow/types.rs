//! The attributor's records: what it finds on a case, and what it keeps
//! while following evidence.

use std::collections::HashMap;

use petgraph::graph::DiGraph;

use crate::attrib::holds::{Item, Matcher};
use crate::attrib::model::TraceModel;
use crate::attrib::verdict::{ErrorType, Step};

/// The findings of the attributor on one case, before they become a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The error type.
    pub error_type: ErrorType,
    /// The faulty op (position in the trace model).
    pub op: usize,
    /// How sure, 0 to 1.
    pub confidence: f64,
    /// Why, in words.
    pub reason: String,
    /// The chain behind it.
    pub chain: Vec<Step>,
    /// The steps the attributor was unsure of, in words (what the trace
    /// lacked, where a match was weak); empty when every step was clear.
    pub doubts: Vec<String>,
    /// Every verdict the weighed evidence allows, most likely first (the
    /// verdict itself first).
    pub alternatives: Vec<Alternative>,
}

/// A verdict the evidence allows, and how likely it is given the weights
/// of the chosen evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    /// The op.
    pub op: usize,
    /// The error type.
    pub error_type: ErrorType,
    /// Its share of the evidence's weight, 0 to 1.
    pub probability: f64,
}

/// Why a carrier stopped being alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// It is alive at question time.
    Alive,
    /// An op made a newer version of it.
    Replaced(usize),
    /// An op deleted it.
    Deleted(usize),
    /// Its last reader (or its maker, when nothing read it).
    Consumed(usize),
}

impl End {
    pub(super) fn at(self) -> Option<usize> {
        match self {
            End::Alive => None,
            End::Replaced(o) | End::Deleted(o) | End::Consumed(o) => Some(o),
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Carrier {
    pub(super) var: usize,
    pub(super) made: Option<usize>,
    pub(super) end: End,
    pub(super) store: bool,
}

/// How one item fared.
#[derive(Debug, Clone)]
pub(super) struct ItemFlow {
    pub(super) carriers: Vec<Carrier>,
    /// Carriers as nodes, each edge the op that passed the item on.
    pub(super) graph: DiGraph<usize, usize>,
    /// The op after which no carrier was alive, and the carrier (index)
    /// that held the item last.
    pub(super) death: Option<(usize, usize)>,
}

/// What following a case's evidence found.
pub(super) struct Analysis {
    pub(super) items: Vec<Item>,
    pub(super) flows: Vec<ItemFlow>,
    pub(super) failures: Vec<Failure>,
    pub(super) answer: Option<usize>,
    pub(super) contexts: Vec<(usize, usize)>,
    pub(super) doubts: Vec<String>,
    pub(super) pseudo: bool,
}

/// Where one item failed to reach the answer.
#[derive(Debug, Clone)]
pub(super) struct Failure {
    pub(super) op: usize,
    pub(super) error_type: ErrorType,
    pub(super) item: usize,
    pub(super) reason: String,
    pub(super) confidence: f64,
    pub(super) last: Option<(usize, &'static str)>,
}

/// One trace prepared for attribution; shared by all its cases.
pub struct Flow<'m> {
    pub(super) model: &'m TraceModel,
    pub(super) matcher: Matcher<'m>,
    /// Per variable, its next newer version (the first one with a greater
    /// version number), if any.
    pub(super) newer: Vec<Option<usize>>,
}

impl<'m> Flow<'m> {
    /// Prepares a trace.
    pub fn new(model: &'m TraceModel) -> Flow<'m> {
        let mut versions: HashMap<&str, Vec<(u32, usize)>> = HashMap::new();
        for (i, v) in model.vars.iter().enumerate() {
            versions
                .entry(v.full_name.as_str())
                .or_default()
                .push((v.version, i));
        }
        let mut newer = vec![None; model.vars.len()];
        for list in versions.values_mut() {
            list.sort_unstable();
            // One pass: `j` only moves forward.
            let mut j = 0;
            for i in 0..list.len() {
                j = j.max(i + 1);
                while j < list.len() && list[j].0 <= list[i].0 {
                    j += 1;
                }
                newer[list[i].1] = list.get(j).map(|&(_, var)| var);
            }
        }
        Flow {
            model,
            matcher: Matcher::new(model),
            newer,
        }
    }

    /// The trace's matcher: its learned message template and stems.
    pub fn matcher(&self) -> &Matcher<'m> {
        &self.matcher
    }
}
