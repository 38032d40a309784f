//! How likely each way a case may have failed is, given the weights of
//! its evidence, and how sure a verdict on chosen evidence is.

use super::types::Failure;
use crate::attrib::holds::Item;
use crate::attrib::verdict::ErrorType;

/// What the confidence of a verdict on chosen evidence is read from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spread {
    /// The share of the evidence's weight that points to the verdict.
    pub(super) first: f64,
    /// The share that points to the next likeliest verdict.
    pub(super) second: f64,
    /// The weight of the likeliest candidate.
    pub(super) top_weight: f64,
    /// Whether the answer said it found nothing.
    pub(super) said_nothing: bool,
    /// Whether the case has a gold answer.
    pub(super) has_gold: bool,
    /// The verdict's type.
    pub(super) error_type: ErrorType,
}

/// Coefficients of [`calibrated`]: an intercept; the share of the weight,
/// the lead over the next verdict, the top weight, an answer that found
/// nothing, a gold answer; then one per error type in taxonomy order.
/// They are learned from labelled generated traces, so that a confidence is
/// how often such a verdict names the labelled op.
const CALIBRATION: [f64; 11] = [
    -3.259, 2.393, 1.131, 2.341, 0.246, -0.065, -0.204, -0.307, 0.028, 1.035, -0.551,
];

/// The probability that a verdict on chosen evidence names the right op.
pub(super) fn calibrated(s: &Spread) -> f64 {
    let c = &CALIBRATION;
    let kind = ErrorType::ALL
        .iter()
        .position(|t| *t == s.error_type)
        .unwrap_or(0);
    let z = c[0]
        + c[1] * s.first
        + c[2] * (s.first - s.second)
        + c[3] * s.top_weight
        + c[4] * f64::from(u8::from(s.said_nothing))
        + c[5] * f64::from(u8::from(s.has_gold))
        + c[6 + kind];
    1.0 / (1.0 + (-z).exp())
}

/// How much less likely a chosen message that reached the answer's context
/// is to be the evidence when the answer says it found nothing.
pub(super) const NOT_GIVEN: f64 = 0.1;

/// One way the case may have failed: a failure point (an index into the
/// failures), or none (every needed item reached the answer's context), and
/// how likely it is to be the verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Outcome {
    pub(super) failure: Option<usize>,
    pub(super) probability: f64,
}

/// The outcomes of a case, most likely first. Each item is needed with its
/// weight, independently of the others; the verdict is the earliest failure
/// point of a needed item, or the answering op when no needed item failed.
/// So a failure point is the verdict when its item is needed and no item
/// that failed earlier is; probabilities are taken given that at least one
/// item is needed. Failures at the same op with the same type add up.
pub(super) fn weigh_outcomes(items: &[Item], failures: &[Failure], reached: f64) -> Vec<Outcome> {
    let failed = |i: usize| failures.iter().any(|f| f.item == i);
    let weight = |i: usize| {
        let w = items[i].weight.clamp(0.0, 1.0);
        if failed(i) {
            w
        } else {
            w * reached
        }
    };
    let mut order: Vec<usize> = (0..failures.len()).collect();
    order.sort_by_key(|&f| (failures[f].op, failures[f].item));
    let mut none_before = 1.0;
    let mut out: Vec<Outcome> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for f in order {
        let item = failures[f].item;
        if seen.contains(&item) {
            continue;
        }
        seen.push(item);
        let p = weight(item) * none_before;
        none_before *= 1.0 - weight(item);
        let same = out.iter_mut().find(|o| {
            o.failure.is_some_and(|g| {
                failures[g].op == failures[f].op && failures[g].error_type == failures[f].error_type
            })
        });
        match same {
            Some(o) => o.probability += p,
            None => out.push(Outcome {
                failure: Some(f),
                probability: p,
            }),
        }
    }
    let none_held: f64 = (0..items.len())
        .filter(|i| !seen.contains(i))
        .map(|i| 1.0 - weight(i))
        .product();
    out.push(Outcome {
        failure: None,
        probability: none_before * (1.0 - none_held),
    });
    let any: f64 = 1.0 - (0..items.len()).map(|i| 1.0 - weight(i)).product::<f64>();
    if any > 0.0 {
        for o in &mut out {
            o.probability /= any;
        }
    }
    // Most likely first; on a tie, the earlier failure point.
    out.sort_by(|a, b| {
        b.probability.total_cmp(&a.probability).then_with(|| {
            let at = |o: &Outcome| o.failure.map_or(usize::MAX, |f| failures[f].op);
            at(a).cmp(&at(b))
        })
    });
    out
}
