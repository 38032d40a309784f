//! The attribution methods a [`Engine`] gains: its failed cases, their
//! attribution, and the verdicts stored and read back.

use std::collections::{BTreeMap, HashMap};

use crate::attrib::case::FailedCase;
use crate::attrib::choose::Chooser;
use crate::attrib::dense::Search;
use crate::attrib::evidence::Recall;
use crate::attrib::flow::Flow;
use crate::attrib::setting::Setting;
use crate::attrib::stored::{stored_verdicts, StoredVerdict};
use crate::attrib::traces::{trace_cases, views};
use crate::attrib::verdict::{Method, RunProgress, Verdict};
use crate::error::{AnalysisError, Result};
use memtrace_engine::{now_ms, Cancel, CaseOrigin, CasePick, Engine, TraceId};

use super::runs::{attribute_views, attribute_with, embedder_for, How};
use super::search::Searcher;
use super::selection::Picked;
use super::types::{AttributeRequest, RecallReport};

/// Finds failed cases and attributes them: the earliest decisive faulty op and its error type.
pub trait Attribute {
    /// The failed cases of one trace (graph id or `#ID`), or of every trace.
    fn failed_cases(&self, trace: Option<&str>) -> Result<Vec<FailedCase>>;

    /// Recall@k of pseudo-evidence against the source evidence of every
    /// case that has some, per memory system and in total: the `k`
    /// candidates chosen for each case (its gold answer kept, its source
    /// evidence hidden), searched for with `search`.
    fn evidence_recall(&self, k: usize, search: Search) -> Result<RecallReport>;

    /// Attributes the failed cases a request names, trace by trace.
    /// `progress` hears a [`RunProgress`] after each trace and, with an LLM
    /// method, after each case.
    /// Nothing is stored; see [`Engine::store_verdicts`].
    fn attribute(
        &self,
        req: &AttributeRequest<'_>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Vec<Verdict>>;

    /// Attributes exactly the cases picked, each in its own trace, with
    /// `method` in `setting`; what a query's `ATTRIBUTE (FIND cases ...)` and
    /// `ATTRIBUTE (RUN PATTERN ...)` run. Verdicts come in the order of
    /// `picks` (a case picked twice is attributed once). A pick whose trace
    /// holds no such failed case is an error, raised before any of that
    /// trace's cases is sent to an LLM. `progress` hears a [`RunProgress`]
    /// as [`attribute`](Self::attribute) does. Nothing is stored; see
    /// [`Engine::store_verdicts`].
    fn attribute_picked(
        &self,
        picks: &[CasePick],
        method: Method,
        setting: Setting,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Vec<Verdict>>;

    /// Appends verdicts to their traces as `author`, one batch per trace.
    ///
    /// A verdict that says what the latest stored verdict of the same case
    /// and method already says is not stored again, so re-running an
    /// attribution adds nothing. Returns how many were stored.
    fn store_verdicts(&self, verdicts: &[Verdict], author: &str) -> Result<usize>;

    /// The stored verdicts of one trace (graph id or `#ID`), or of every
    /// trace, oldest first within a trace.
    fn attributions(&self, trace: Option<&str>) -> Result<Vec<StoredVerdict>>;
}

impl Attribute for Engine {
    fn failed_cases(&self, trace: Option<&str>) -> Result<Vec<FailedCase>> {
        let mut out = Vec::new();
        for view in views(self, trace)? {
            out.extend(trace_cases(&view)?.1);
        }
        Ok(out)
    }

    fn evidence_recall(&self, k: usize, search: Search) -> Result<RecallReport> {
        let mut report = RecallReport {
            k,
            search,
            total: Recall::default(),
            by_system: BTreeMap::new(),
        };
        let cancel = Cancel::new();
        let mut embedder = embedder_for(self, search, &cancel)?;
        for view in views(self, None)? {
            let (model, cases) = trace_cases(&view)?;
            if cases.is_empty() {
                continue;
            }
            let flow = Flow::new(&model);
            let chooser = Chooser::new(&model, flow.matcher());
            let mut searcher = Searcher::new(&model, &flow, embedder.as_mut())?;
            let mut r = Recall::default();
            for c in &cases {
                let source: Vec<usize> = c
                    .source_evidence
                    .iter()
                    .filter_map(|e| model.var(e))
                    .collect();
                if source.is_empty() {
                    continue;
                }
                let mut hidden = c.clone();
                hidden.hide(Setting::Evaluation);
                let chosen = searcher.evidence(&chooser, &hidden, k)?.items;
                r.add(&source, &chosen);
            }
            let system = model.info.project_id.clone().unwrap_or_else(|| "-".into());
            report.by_system.entry(system).or_default().merge(&r);
            report.total.merge(&r);
        }
        Ok(report)
    }

    fn attribute(
        &self,
        req: &AttributeRequest<'_>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Vec<Verdict>> {
        attribute_with(self, req, cancel, progress)
    }

    fn attribute_picked(
        &self,
        picks: &[CasePick],
        method: Method,
        setting: Setting,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Vec<Verdict>> {
        if picks.is_empty() {
            progress(&RunProgress::default());
            return Ok(Vec::new());
        }
        let mut wanted: BTreeMap<TraceId, Vec<&CaseOrigin>> = BTreeMap::new();
        for p in picks {
            let list = wanted.entry(p.trace).or_default();
            if !list.contains(&&p.origin) {
                list.push(&p.origin);
            }
        }
        let views = wanted
            .keys()
            .map(|&id| self.trace_by_id(id))
            .collect::<memtrace_engine::Result<Vec<_>>>()?;
        let mut picked = Picked {
            wanted,
            chosen: Vec::new(),
        };
        let verdicts = attribute_views(
            self,
            &views,
            How {
                method,
                setting,
                search: Search::Sparse,
            },
            &mut picked,
            cancel,
            progress,
        )?;
        // Verdicts follow the cases chosen, trace by trace; put them in the
        // order they were picked.
        if verdicts.len() != picked.chosen.len() {
            return Err(AnalysisError::VerdictsPerPick {
                verdicts: verdicts.len(),
                picked: picked.chosen.len(),
            });
        }
        let mut slots: HashMap<(TraceId, &CaseOrigin), Verdict> = picked
            .chosen
            .iter()
            .map(|&(t, o)| (t, o))
            .zip(verdicts)
            .collect();
        Ok(picks
            .iter()
            .filter_map(|p| slots.remove(&(p.trace, &p.origin)))
            .collect())
    }

    fn store_verdicts(&self, verdicts: &[Verdict], author: &str) -> Result<usize> {
        let mut by_trace: BTreeMap<u32, Vec<&Verdict>> = BTreeMap::new();
        for v in verdicts {
            by_trace.entry(v.trace).or_default().push(v);
        }
        let mut stored = 0;
        for (trace, list) in by_trace {
            let mut latest: HashMap<(String, String), Verdict> = HashMap::new();
            for s in stored_verdicts(self, trace)? {
                latest.insert(
                    (s.verdict.case.clone(), s.verdict.method.clone()),
                    s.verdict,
                );
            }
            let at_ms = now_ms();
            let mut records = Vec::new();
            for v in list {
                let key = (v.case.clone(), v.method.clone());
                if latest.get(&key).is_some_and(|old| same_finding(old, v)) {
                    continue;
                }
                let json = serde_json::to_string(&StoredVerdict {
                    seq: 0,
                    at_ms,
                    author: author.to_string(),
                    verdict: v.clone(),
                })?;
                records.push(json);
                latest.insert(key, v.clone());
            }
            if !records.is_empty() {
                self.append_trace_results(trace, &records)?;
                stored += records.len();
            }
        }
        Ok(stored)
    }

    fn attributions(&self, trace: Option<&str>) -> Result<Vec<StoredVerdict>> {
        let mut out = Vec::new();
        for view in views(self, trace)? {
            out.extend(stored_verdicts(self, view.id())?);
        }
        Ok(out)
    }
}

/// Whether two verdicts say the same thing (times and costs aside); a
/// verdict by another model is news.
fn same_finding(a: &Verdict, b: &Verdict) -> bool {
    a.method == b.method
        && a.version == b.version
        && a.model == b.model
        && a.error_type == b.error_type
        && a.op_id == b.op_id
        && a.reason == b.reason
        && a.confidence == b.confidence
}
