//! The verdict on a case: the likeliest failure point, its chain and
//! reason, and the other verdicts the evidence allows.

use super::carriers::last_live;
use super::roles::op_name;
use super::types::{Alternative, Analysis, Finding, Flow};
use super::weighing::{calibrated, weigh_outcomes, Outcome, Spread, NOT_GIVEN};
use crate::attrib::case::FailedCase;
use crate::attrib::choose::says_no_answer;
use crate::attrib::evidence::Evidence;
use crate::attrib::holds::Item;
use crate::attrib::verdict::ErrorType;

impl<'m> Flow<'m> {
    /// Attributes one case.
    pub fn attribute(&self, case: &FailedCase, evidence: &Evidence) -> Option<Finding> {
        let analysis = self.analyse(case, evidence);
        let pseudo = analysis.pseudo;
        // Doubts about the trace make a verdict less sure; not knowing which
        // messages were needed is already in the weights.
        let weak = if analysis.doubts.len() > usize::from(pseudo) {
            0.85
        } else {
            1.0
        };
        // An answer that says it found nothing was not given the evidence:
        // a chosen message that reached its context is unlikely to be it.
        let reached = if pseudo && says_no_answer(&case.prediction) {
            NOT_GIVEN
        } else {
            1.0
        };
        let outcomes = weigh_outcomes(&analysis.items, &analysis.failures, reached);
        let best = outcomes.first().copied();
        let weighed = Weighed {
            spread: self.spread(case, &analysis, &outcomes),
            weak,
            alternatives: alternatives(&analysis, &outcomes),
        };
        if let Some(Outcome {
            failure: Some(fi),
            probability,
        }) = best
        {
            return Some(self.failure_finding(analysis, fi, probability, weighed));
        }
        let probability = best.map_or(0.0, |o| o.probability);
        self.response_finding(analysis, probability, weighed)
    }

    /// Chosen evidence: how the weight of the outcomes is spread, which
    /// with the verdict's type says how sure it is; none for recorded
    /// evidence.
    fn spread(
        &self,
        case: &FailedCase,
        analysis: &Analysis,
        outcomes: &[Outcome],
    ) -> Option<Spread> {
        analysis.pseudo.then(|| Spread {
            first: outcomes.first().map_or(0.0, |o| o.probability),
            second: outcomes.get(1).map_or(0.0, |o| o.probability),
            top_weight: analysis.items.iter().map(|i| i.weight).fold(0.0, f64::max),
            said_nothing: says_no_answer(&case.prediction),
            has_gold: case.gold.iter().any(|g| !g.trim().is_empty()),
            error_type: ErrorType::ResponseError,
        })
    }

    /// The verdict when the likeliest outcome is failure `fi`: its op and
    /// type, and the chain of its item up to where it was lost.
    fn failure_finding(
        &self,
        analysis: Analysis,
        fi: usize,
        probability: f64,
        weighed: Weighed,
    ) -> Finding {
        let m = self.model;
        let Analysis {
            items,
            flows,
            failures,
            doubts,
            pseudo,
            ..
        } = analysis;
        let f = &failures[fi];
        let flow = &flows[f.item];
        let mut chain = vec![self.evidence_step(&items[f.item])];
        match f.last {
            Some((holder, what)) => {
                chain.extend(self.chain(flow, holder));
                chain.push(self.step(f.op, flow.carriers[holder].var, what));
            }
            None => {
                chain.extend(self.chain(flow, last_live(flow)));
                let var = m
                    .outputs(f.op)
                    .first()
                    .copied()
                    .unwrap_or(items[f.item].message);
                chain.push(self.step(f.op, var, "left out"));
            }
        }
        let mut reason = f.reason.clone();
        if pseudo {
            reason.push_str(&format!(
                "; {} was chosen as evidence with weight {:.2}, and {:.0}% of the weight of \
                 the chosen evidence points to this op",
                m.vars[items[f.item].message].full_node_id,
                items[f.item].weight,
                probability * 100.0
            ));
        }
        Finding {
            error_type: f.error_type,
            op: f.op,
            confidence: weighed
                .sure_of(f.error_type)
                .unwrap_or(probability * f.confidence)
                * weighed.weak,
            reason,
            chain,
            doubts,
            alternatives: weighed.alternatives,
        }
    }

    /// The verdict when every needed item reached the answer's context: the
    /// answering op is at fault. None when no op answered.
    fn response_finding(
        &self,
        analysis: Analysis,
        probability: f64,
        weighed: Weighed,
    ) -> Option<Finding> {
        let m = self.model;
        let Analysis {
            items,
            flows,
            failures,
            answer,
            contexts,
            mut doubts,
            pseudo,
        } = analysis;
        let answer = answer?;
        let held: Vec<&Item> = items
            .iter()
            .enumerate()
            .filter(|(i, _)| !failures.iter().any(|f| f.item == *i))
            .map(|(_, it)| it)
            .collect();
        let mut chain = Vec::new();
        for (item, flow) in items.iter().zip(&flows) {
            if held.iter().any(|h| h.message == item.message) {
                chain.push(self.evidence_step(item));
                chain.extend(self.chain(flow, last_live(flow)));
            }
        }
        if let Some(&(context, _)) = contexts.first() {
            chain.push(self.step(answer, context, "ignored"));
        }
        if items.is_empty() {
            doubts.push("no evidence item could be followed".into());
        }
        let what = if pseudo {
            "the chosen evidence it held"
        } else {
            "every needed evidence item"
        };
        let reason = format!(
            "the context of op {} ({}) holds {what} ({}), yet the answer is wrong",
            m.ops[answer].op_id,
            op_name(m, answer),
            held.iter()
                .map(|s| m.vars[s.message].full_node_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Some(Finding {
            error_type: ErrorType::ResponseError,
            op: answer,
            confidence: if items.is_empty() {
                0.3
            } else {
                weighed
                    .sure_of(ErrorType::ResponseError)
                    .unwrap_or(0.7 * probability)
                    * weighed.weak
            },
            reason,
            chain,
            doubts,
            alternatives: weighed.alternatives,
        })
    }
}

/// What weighing a case's outcomes gave every verdict on it.
struct Weighed {
    /// How the weight of chosen evidence is spread (none for recorded
    /// evidence).
    spread: Option<Spread>,
    /// How much doubts about the trace lower a verdict's confidence.
    weak: f64,
    /// Every verdict the evidence allows, most likely first.
    alternatives: Vec<Alternative>,
}

impl Weighed {
    /// How sure a verdict of `error_type` on chosen evidence is.
    fn sure_of(&self, error_type: ErrorType) -> Option<f64> {
        self.spread.map(|s| calibrated(&Spread { error_type, ..s }))
    }
}

/// Every verdict the outcomes allow, most likely first.
fn alternatives(analysis: &Analysis, outcomes: &[Outcome]) -> Vec<Alternative> {
    let failures = &analysis.failures;
    outcomes
        .iter()
        .filter_map(|o| match o.failure {
            Some(f) => Some(Alternative {
                op: failures[f].op,
                error_type: failures[f].error_type,
                probability: o.probability,
            }),
            None => analysis.answer.map(|a| Alternative {
                op: a,
                error_type: ErrorType::ResponseError,
                probability: o.probability,
            }),
        })
        .collect()
}
