//! Which of each trace's failed cases an attribution takes: every case,
//! the cases named by reference, or the cases picked by a query.

use std::collections::BTreeMap;

use crate::attrib::case::{names_case, FailedCase};
use crate::attrib::model::TraceModel;
use crate::error::{AnalysisError, Result};
use memtrace_engine::{CaseOrigin, TraceId};

/// Which of each trace's failed cases an attribution takes.
pub(super) trait Selection {
    /// Keeps, of one trace's failed cases (in case order), those to
    /// attribute. An error stops the run before any of them is attributed.
    fn select(&mut self, model: &TraceModel, cases: &mut Vec<FailedCase>) -> Result<()>;
    /// Whether LLM calls wait until every trace has been selected (so that
    /// an error found late costs no call).
    fn waits(&self) -> bool;
    /// Called once every trace has been selected, before the last calls.
    fn finish(&self) -> Result<()>;
}

/// Every failed case, or the cases named by reference (found in any trace
/// in scope; each reference must name at least one).
pub(super) struct Named<'a> {
    pub(super) refs: Option<&'a [String]>,
    pub(super) found: Vec<bool>,
    pub(super) trace: Option<&'a str>,
}

impl Selection for Named<'_> {
    fn select(&mut self, model: &TraceModel, cases: &mut Vec<FailedCase>) -> Result<()> {
        if let Some(refs) = self.refs {
            let found = &mut self.found;
            cases.retain(|c| {
                let mut hit = false;
                for (i, r) in refs.iter().enumerate() {
                    if names_case(model, c, r) {
                        found[i] = true;
                        hit = true;
                    }
                }
                hit
            });
        }
        Ok(())
    }

    fn waits(&self) -> bool {
        // Named cases wait until all are found, so an unknown one costs no call.
        self.refs.is_some()
    }

    fn finish(&self) -> Result<()> {
        if let Some(refs) = self.refs {
            if let Some(i) = self.found.iter().position(|f| !f) {
                return Err(match self.trace {
                    Some(trace) => AnalysisError::UnknownCase {
                        trace: trace.to_string(),
                        case: refs[i].clone(),
                    },
                    None => AnalysisError::UnknownCaseAnywhere(refs[i].clone()),
                });
            }
        }
        Ok(())
    }
}

/// The cases picked in each trace; records those chosen, in the order
/// their verdicts come.
pub(super) struct Picked<'a> {
    pub(super) wanted: BTreeMap<TraceId, Vec<&'a CaseOrigin>>,
    pub(super) chosen: Vec<(TraceId, &'a CaseOrigin)>,
}

impl<'a> Selection for Picked<'a> {
    fn select(&mut self, model: &TraceModel, cases: &mut Vec<FailedCase>) -> Result<()> {
        let trace = model.info.id;
        let wanted: &[&'a CaseOrigin] = self.wanted.get(&trace).map_or(&[], Vec::as_slice);
        cases.retain(|c| wanted.iter().any(|o| **o == c.origin));
        if let Some(missing) = wanted
            .iter()
            .find(|o| !cases.iter().any(|c| c.origin == ***o))
        {
            let what = match missing {
                CaseOrigin::Annotation(i) => format!("annotation {}", i + 1),
                CaseOrigin::Judge(op) => format!("judge op {op}"),
            };
            return Err(AnalysisError::UnknownPickedCase {
                trace: model.info.graph_id.clone(),
                origin: what,
            });
        }
        for c in cases.iter() {
            if let Some(o) = wanted.iter().find(|o| ***o == c.origin) {
                self.chosen.push((trace, *o));
            }
        }
        Ok(())
    }

    fn waits(&self) -> bool {
        false
    }

    fn finish(&self) -> Result<()> {
        Ok(())
    }
}
