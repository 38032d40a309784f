//! Attribution: which failed cases to attribute, the evidence-flow and LLM
//! methods run over them trace by trace, and the verdicts appended to the
//! database without repeating the latest one.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::agent::{self, LlmSettings};
use super::case::{names_case, FailedCase};
use super::choose::{Chooser, POOL};
use super::dense::{fuse, DenseIndex, Embedder, Search};
use super::evidence::{self, Evidence, Recall, DEFAULT_K};
use super::flow;
use super::model::TraceModel;
use super::setting::Setting;
use super::stored::{stored_verdicts, StoredVerdict};
use super::traces::{trace_cases, views};
use super::verdict::{Method, RunProgress, Verdict};
use crate::error::{AnalysisError, Result};
use memtrace_engine::{now_ms, Cancel, CaseOrigin, CasePick, Database, TraceId, TraceView};

/// What to attribute.
#[derive(Debug, Clone, Copy)]
pub struct AttributeRequest<'a> {
    /// One trace (graph id or `#ID`), or every trace.
    pub trace: Option<&'a str>,
    /// Case references (the query's full name or full node id, the case
    /// name, or a judge op id), or every failed case.
    pub cases: Option<&'a [String]>,
    /// The method.
    pub method: Method,
    /// What each case shows the method: [`Setting::Benchmark`] uses all it
    /// holds; the others hide its annotated evidence, or that and its gold
    /// answer, as if they had never been recorded.
    pub setting: Setting,
    /// How a case without source evidence has its evidence searched for:
    /// BM25 (the default, needing nothing), or with an embeddings endpoint.
    pub search: Search,
}

/// Which of each trace's failed cases an attribution takes.
trait Selection {
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
struct Named<'a> {
    refs: Option<&'a [String]>,
    found: Vec<bool>,
    trace: Option<&'a str>,
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
                    None => AnalysisError::BadRequest(format!(
                        "no failed case {} in any trace (FIND cases lists them)",
                        refs[i]
                    )),
                });
            }
        }
        Ok(())
    }
}

/// The cases picked in each trace; records those chosen, in the order
/// their verdicts come.
struct Picked<'a> {
    wanted: BTreeMap<TraceId, Vec<&'a CaseOrigin>>,
    chosen: Vec<(TraceId, &'a CaseOrigin)>,
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
            return Err(AnalysisError::BadRequest(format!(
                "trace {} has no failed case from {what} (FIND cases lists them)",
                model.info.graph_id
            )));
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

/// One trace's cases made ready for the LLM loop: their evidence, and in
/// hybrid mode the evidence-flow findings offered as hypotheses.
struct Prepared {
    model: TraceModel,
    cases: Vec<FailedCase>,
    evidences: Vec<Evidence>,
    findings: Vec<Option<flow::Finding>>,
}

impl Prepared {
    fn new(
        model: TraceModel,
        cases: Vec<FailedCase>,
        method: Method,
        embedder: Option<&mut Embedder<'_>>,
    ) -> Result<Prepared> {
        let (evidences, findings) = {
            let flow = flow::Flow::new(&model);
            let chooser = Chooser::new(&model, flow.matcher());
            let mut search = Searcher::new(&model, &flow, embedder)?;
            let evidences: Vec<Evidence> = cases
                .iter()
                .map(|c| search.evidence(&chooser, c, DEFAULT_K))
                .collect::<Result<_>>()?;
            let findings: Vec<Option<flow::Finding>> = if method == Method::Hybrid {
                cases
                    .iter()
                    .zip(&evidences)
                    .map(|(c, e)| flow.attribute(c, e))
                    .collect()
            } else {
                vec![None; cases.len()]
            };
            (evidences, findings)
        };
        Ok(Prepared {
            model,
            cases,
            evidences,
            findings,
        })
    }
}

/// The evidence search of one trace: BM25 alone, or with the trace's
/// messages embedded for a dense or hybrid search.
struct Searcher<'s, 'e> {
    model: &'s TraceModel,
    dense: Option<(DenseIndex, &'s mut Embedder<'e>)>,
}

impl<'s, 'e> Searcher<'s, 'e> {
    /// A searcher of `model`; with an embedder, its messages are embedded.
    fn new(
        model: &'s TraceModel,
        flow: &flow::Flow<'_>,
        embedder: Option<&'s mut Embedder<'e>>,
    ) -> Result<Searcher<'s, 'e>> {
        let dense = match embedder {
            Some(e) => Some((DenseIndex::new(model, flow.matcher(), e)?, e)),
            None => None,
        };
        Ok(Searcher { model, dense })
    }

    /// The evidence of a case: its source evidence, or the candidates the
    /// search ranks, weighed.
    fn evidence(&mut self, chooser: &Chooser<'_>, case: &FailedCase, k: usize) -> Result<Evidence> {
        let Some((index, embedder)) = self.dense.as_mut() else {
            return Ok(evidence::evidence(self.model, chooser, case, k));
        };
        if !case.source_evidence.is_empty() {
            return Ok(evidence::evidence(self.model, chooser, case, k));
        }
        let dense: Vec<usize> = index.rank(case, embedder)?.into_iter().take(POOL).collect();
        let order = match embedder.search {
            Search::Hybrid => {
                let sparse: Vec<usize> = chooser
                    .sparse(case)
                    .into_iter()
                    .take(POOL)
                    .map(|x| x.0)
                    .collect();
                fuse(&sparse, &dense).into_iter().take(POOL).collect()
            }
            _ => dense,
        };
        let chosen: Vec<_> = chooser
            .weigh_in_order(case, &order)
            .into_iter()
            .take(k)
            .collect();
        Ok(Evidence {
            items: chosen.iter().map(|c| c.message).collect(),
            weights: chosen.iter().map(|c| c.weight).collect(),
            origin: evidence::EvidenceOrigin::Pseudo,
        })
    }
}

/// Attributes the cases of one trace with the evidence-flow method.
pub(crate) fn attribute_trace(
    model: &TraceModel,
    cases: &[FailedCase],
    setup_micros: u64,
    cancel: &Cancel,
    embedder: Option<&mut Embedder<'_>>,
) -> Result<Vec<Verdict>> {
    let started = std::time::Instant::now();
    let flow = flow::Flow::new(model);
    let chooser = Chooser::new(model, flow.matcher());
    let mut search = Searcher::new(model, &flow, embedder)?;
    let shared = setup_micros + started.elapsed().as_micros() as u64;
    let share = shared / cases.len().max(1) as u64;
    let mut out = Vec::with_capacity(cases.len());
    for case in cases {
        cancel.check()?;
        let t = std::time::Instant::now();
        let ev = search.evidence(&chooser, case, DEFAULT_K)?;
        let finding = flow.attribute(case, &ev);
        let micros = share + t.elapsed().as_micros() as u64;
        let mut v = Verdict::undecided(case, Method::Evidence, micros);
        match finding {
            Some(f) => {
                v.error_type = Some(f.error_type);
                v.op_id = Some(model.ops[f.op].op_id.clone());
                v.op_name = model.ops[f.op].op_name.clone();
                v.confidence = (f.confidence * 100.0).round() / 100.0;
                v.reason = f.reason;
                v.chain = f.chain;
            }
            None => {
                v.reason = "no verdict: the evidence could not be followed and no op answered \
                            the question in this trace"
                    .into();
            }
        }
        out.push(v);
    }
    model.read_error()?;
    Ok(out)
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

/// Recall@k of pseudo-evidence, over all traces and per memory system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallReport {
    /// Messages pseudo-evidence takes per case.
    pub k: usize,
    /// How the messages were searched for.
    pub search: Search,
    /// Over every trace.
    pub total: Recall,
    /// Per memory system (`project_id`; `-` when a trace has none).
    pub by_system: BTreeMap<String, Recall>,
}

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
    /// Nothing is stored; see [`Database::store_verdicts`].
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
    /// [`Database::store_verdicts`].
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

impl Attribute for Database {
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
            let flow = flow::Flow::new(&model);
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
            return Err(AnalysisError::BadRequest(format!(
                "{} verdict(s) for {} case(s) picked",
                verdicts.len(),
                picked.chosen.len()
            )));
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

/// As [`Database::attribute`].
pub(crate) fn attribute_with(
    db: &Database,
    req: &AttributeRequest<'_>,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&RunProgress),
) -> Result<Vec<Verdict>> {
    let views = views(db, req.trace)?;
    let mut named = Named {
        refs: req.cases,
        found: vec![false; req.cases.map_or(0, <[String]>::len)],
        trace: req.trace,
    };
    attribute_views(
        db,
        &views,
        How {
            method: req.method,
            setting: req.setting,
            search: req.search,
        },
        &mut named,
        cancel,
        progress,
    )
}

/// How a run attributes each case: by which method, in which setting,
/// with which evidence search.
#[derive(Clone, Copy)]
struct How {
    method: Method,
    setting: Setting,
    search: Search,
}

/// Attributes, trace by trace, the cases of `views` that `selection`
/// keeps. Verdicts come in trace order, and within a trace in case order.
fn attribute_views(
    db: &Database,
    views: &[TraceView<'_>],
    how: How,
    selection: &mut dyn Selection,
    cancel: &Cancel,
    progress: &mut dyn FnMut(&RunProgress),
) -> Result<Vec<Verdict>> {
    let How {
        method,
        setting,
        search,
    } = how;
    let mut embedder = embedder_for(db, search, cancel)?;
    let llm = if method.needs_llm() {
        Some(agent::client_for(db)?)
    } else {
        None
    };
    let run = llm.as_ref().map(|(client, rt)| LlmRun {
        db,
        client,
        rt,
        method,
        cancel,
    });
    let mut out = Vec::new();
    let mut state = RunProgress {
        traces: views.len(),
        ..RunProgress::default()
    };
    // LLM methods: cases of several traces go out together, so that the
    // configured concurrency is used across traces; a group is sent once
    // it holds enough cases, which bounds the trace models held at once.
    let width = llm
        .as_ref()
        .map_or(1, |(c, _)| c.config().concurrency.max(1));
    let mut group: Vec<Prepared> = Vec::new();
    let mut waiting = 0;
    for (done, view) in views.iter().enumerate() {
        cancel.check()?;
        let started = std::time::Instant::now();
        let (model, mut cases) = trace_cases(view)?;
        selection.select(&model, &mut cases)?;
        for c in &mut cases {
            c.hide(setting);
        }
        state.traces_read = done + 1;
        state.cases_seen += cases.len();
        match &run {
            None => {
                if !cases.is_empty() {
                    let setup = started.elapsed().as_micros() as u64;
                    out.extend(attribute_trace(
                        &model,
                        &cases,
                        setup,
                        cancel,
                        embedder.as_mut(),
                    )?);
                }
                state.cases_done += cases.len();
                progress(&state);
            }
            Some(run) => {
                if !cases.is_empty() {
                    waiting += cases.len();
                    group.push(Prepared::new(model, cases, method, embedder.as_mut())?);
                }
                progress(&state);
                if !selection.waits() && waiting >= 4 * width {
                    out.extend(attribute_group_llm(run, &group, &mut state, progress)?);
                    group.clear();
                    waiting = 0;
                }
            }
        }
    }
    selection.finish()?;
    if let Some(run) = &run {
        if !group.is_empty() {
            out.extend(attribute_group_llm(run, &group, &mut state, progress)?);
        }
        progress(&state);
    }
    Ok(out)
}

/// The embedder a dense or hybrid search needs (none for BM25): an error
/// says how to configure one when none is.
pub(crate) fn embedder_for<'a>(
    db: &'a Database,
    search: Search,
    cancel: &'a Cancel,
) -> Result<Option<Embedder<'a>>> {
    if !search.needs_embeddings() {
        return Ok(None);
    }
    let Some(config) = db.embeddings_config()? else {
        return Err(AnalysisError::BadRequest(format!(
            "the {search} evidence search needs an embeddings endpoint: set MEMTRACE_EMBED_MODEL \
             (and MEMTRACE_EMBED_BASE_URL and MEMTRACE_EMBED_API_KEY unless the LLM endpoint \
             serves embeddings too)"
        )));
    };
    Ok(Some(Embedder::new(db, config, search, cancel)?))
}

/// What an LLM attribution runs with.
struct LlmRun<'a> {
    db: &'a Database,
    client: &'a memtrace_llm::Client,
    rt: &'a tokio::runtime::Runtime,
    method: Method,
    cancel: &'a Cancel,
}

/// Attributes the cases of a group of traces with the LLM loop, up to
/// the configured concurrency at once, in trace and case order.
fn attribute_group_llm(
    run: &LlmRun<'_>,
    group: &[Prepared],
    state: &mut RunProgress,
    progress: &mut dyn FnMut(&RunProgress),
) -> Result<Vec<Verdict>> {
    use futures_util::stream::{self, StreamExt};
    let LlmRun {
        db,
        client,
        rt,
        method,
        cancel,
    } = *run;
    let runs = group.iter().flat_map(|p| {
        p.cases.iter().enumerate().map(move |(i, case)| {
            agent::attribute_case(
                client,
                db,
                cancel,
                agent::CaseInput {
                    model: &p.model,
                    case,
                    evidence: &p.evidences[i],
                    hypothesis: (method == Method::Hybrid).then(|| p.findings[i].as_ref()),
                },
            )
        })
    });
    let width = client.config().concurrency.max(1);
    // Each verdict, in case order, as soon as it and those before it are
    // in: the progress hears every case and what it cost.
    let verdicts = rt.block_on(async {
        let mut answers = stream::iter(runs).buffered(width);
        let mut verdicts = Vec::new();
        while let Some(v) = answers.next().await {
            let v = v?;
            state.cases_done += 1;
            if let Some(c) = &v.cost {
                state.cost.add(c);
            }
            progress(state);
            verdicts.push(v);
        }
        Ok::<_, AnalysisError>(verdicts)
    })?;
    for p in group {
        p.model.read_error()?;
    }
    Ok(verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrib::{ErrorType, EvidenceOrigin};
    use crate::AnalysisError;
    use memtrace_engine::EngineError;
    use memtrace_engine::{ImportOptions, InputFormat, Params};
    use memtrace_gen::builder::{TraceBuilder, VarRef};
    use serde_json::json;

    /// Two messages, a question answered from a memory, and its judge.
    /// Returns the query and the question-answering op's id.
    fn conversation(
        b: &mut TraceBuilder,
        q: &str,
        score: &str,
        evidence: bool,
    ) -> (VarRef, String) {
        b.session("memory_construction", "session", json!({}));
        let m1 = b.variable(
            Some("message"),
            &format!("{q}:1"),
            "'Omar: I drive a blue Volvo.'",
            "message",
            None,
            json!({}),
        );
        let m2 = b.variable(
            Some("message"),
            &format!("{q}:2"),
            "'Lena: My cat Luna sleeps all day.'",
            "message",
            None,
            json!({}),
        );
        b.session("memory_evaluation", "session", json!({}));
        let meta = if evidence {
            json!({"evidence": [format!("message:{q}:1")]})
        } else {
            json!({})
        };
        let query = b.variable(
            Some("query"),
            q,
            "'What car does Omar drive?'",
            "message & query",
            None,
            meta,
        );
        let pred = b.variable(
            Some("prediction"),
            q,
            "'a red Toyota'",
            "prediction",
            None,
            json!({}),
        );
        let qa = b.op(
            "question-answering",
            "evaluation",
            None,
            &[&query, &m1],
            &[&pred],
            json!({}),
        );
        let gold = b.variable(
            Some("golden_answers"),
            q,
            "['a blue Volvo']",
            "golden_answers",
            None,
            json!({}),
        );
        let resp = b.variable(
            Some("judge_response"),
            q,
            "'WRONG: the car is a blue Volvo'",
            "judge_response",
            None,
            json!({}),
        );
        let sc = b.variable(
            Some("judge_score"),
            q,
            score,
            "judge_score",
            None,
            json!({}),
        );
        let edges: Vec<(String, String, Option<&str>)> = vec![
            (query.full_node_id.clone(), resp.full_node_id.clone(), None),
            (gold.full_node_id.clone(), resp.full_node_id.clone(), None),
            (pred.full_node_id.clone(), resp.full_node_id.clone(), None),
            (resp.full_node_id.clone(), sc.full_node_id.clone(), None),
        ];
        b.op_edges("llm-judge", "evaluation", &edges, json!({}));
        let _ = m2;
        (query, qa)
    }

    fn import(db: &Database, trace: serde_json::Value) {
        db.import_reader(
            trace.to_string().as_bytes(),
            InputFormat::Json,
            "test",
            &ImportOptions::default(),
        )
        .unwrap();
    }

    #[test]
    fn judge_ops_that_scored_zero_are_the_cases_when_there_are_no_annotations() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let mut b = TraceBuilder::new("g-judged", "u", "rag", json!({}), 19_000);
        conversation(&mut b, "Q1", "0.0", true);
        conversation(&mut b, "Q2", "1.0", false);
        import(&db, b.finish());
        let cases = db.failed_cases(None).unwrap();
        assert_eq!(cases.len(), 1, "{cases:?}");
        let c = &cases[0];
        assert_eq!(c.id, "query:Q1@1");
        assert_eq!(c.query, "What car does Omar drive?");
        assert_eq!(c.gold, vec!["a blue Volvo"]);
        assert_eq!(c.prediction, "a red Toyota");
        assert_eq!(
            c.judge_response.as_deref(),
            Some("WRONG: the car is a blue Volvo")
        );
        assert_eq!(c.source_evidence, vec!["message:Q1:1@1"]);
        assert_eq!(c.system.as_deref(), Some("rag"));
        assert!(matches!(c.origin, CaseOrigin::Judge(_)));
    }

    #[test]
    fn annotations_are_the_cases_when_present_and_labels_stay_out() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let mut b = TraceBuilder::new("g-annotated", "u", "mem0", json!({}), 19_000);
        let (_, qa) = conversation(&mut b, "Q1", "0.0", false);
        b.annotate(json!({
            "query_id": "query:Q1@1", "query": "What car does Omar drive?",
            "golden_answers": ["a blue Volvo"], "prediction": "a red Toyota",
            "source_evidence_ids": ["message:Q1:1@1"],
            "final_error_type": "RetrievalError", "final_op_id": qa
        }));
        import(&db, b.finish());
        let cases = db.failed_cases(Some("g-annotated")).unwrap();
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].origin, CaseOrigin::Annotation(0));
        assert_eq!(cases[0].source_evidence, vec!["message:Q1:1@1"]);
        let text = serde_json::to_string(&cases[0]).unwrap();
        assert!(
            !text.contains("RetrievalError") && !text.contains(&qa),
            "{text}"
        );
    }

    #[test]
    fn pseudo_evidence_finds_the_message_that_answers_and_recall_counts_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let mut b = TraceBuilder::new("g-pseudo", "u", "rag", json!({}), 19_000);
        conversation(&mut b, "Q1", "0.0", true);
        import(&db, b.finish());
        let view = db.trace("g-pseudo").unwrap();
        let (model, cases) = trace_cases(&view).unwrap();
        let flow = flow::Flow::new(&model);
        let chooser = Chooser::new(&model, flow.matcher());
        let top = chooser.candidates(&cases[0]);
        assert_eq!(model.vars[top[0].message].full_node_id, "message:Q1:1@1");
        let ev = evidence::evidence(&model, &chooser, &cases[0], 8);
        assert_eq!(ev.origin, EvidenceOrigin::Source);
        assert_eq!(ev.weights, [1.0]);
        let mut without = cases[0].clone();
        without.source_evidence.clear();
        let ev = evidence::evidence(&model, &chooser, &without, 8);
        assert_eq!(ev.origin, EvidenceOrigin::Pseudo);
        assert_eq!(ev.items[0], top[0].message);
        assert!(ev.weights[0] > ev.weights.get(1).copied().unwrap_or(0.0));
        let report = db.evidence_recall(1, Search::Sparse).unwrap();
        assert_eq!(report.total.cases, 1);
        assert_eq!(report.total.micro(), 1.0);
        assert_eq!(report.by_system["rag"].complete, 1);
    }

    fn verdict_for(case: &FailedCase, op: &str, reason: &str) -> Verdict {
        Verdict {
            trace: case.trace,
            graph_id: case.graph_id.clone(),
            system: case.system.clone(),
            case: case.id.clone(),
            query: case.query.clone(),
            error_type: Some(ErrorType::ResponseError),
            op_id: Some(op.to_string()),
            op_name: Some("question-answering".into()),
            confidence: 0.5,
            reason: reason.into(),
            chain: Vec::new(),
            method: Method::Evidence.name().into(),
            version: Method::Evidence.version().into(),
            micros: 7,
            model: None,
            cost: None,
            setting: None,
        }
    }

    #[test]
    fn verdicts_are_appended_once_and_read_back_with_author_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let mut b = TraceBuilder::new("g-verdicts", "u", "rag", json!({}), 19_000);
        let (_, qa) = conversation(&mut b, "Q1", "0.0", true);
        import(&db, b.finish());
        let case = db.failed_cases(None).unwrap().remove(0);
        let first = verdict_for(&case, &qa, "held, then ignored");
        assert_eq!(
            db.store_verdicts(std::slice::from_ref(&first), "tester")
                .unwrap(),
            1
        );
        // The same finding again adds nothing; a changed one is appended.
        assert_eq!(
            db.store_verdicts(std::slice::from_ref(&first), "tester")
                .unwrap(),
            0
        );
        let second = verdict_for(&case, &qa, "another reason");
        assert_eq!(
            db.store_verdicts(std::slice::from_ref(&second), "tester")
                .unwrap(),
            1
        );
        let stored = db.attributions(Some("g-verdicts")).unwrap();
        assert_eq!(stored.len(), 2);
        assert_eq!((stored[0].seq, stored[1].seq), (1, 2));
        assert_eq!(stored[0].verdict, first);
        assert_eq!(stored[1].verdict, second);
        assert_eq!(stored[1].author, "tester");
        assert!(stored[1].at_ms >= stored[0].at_ms && stored[0].at_ms > 0);
        assert!(matches!(
            db.attributions(Some("nope")),
            Err(AnalysisError::Engine(EngineError::UnknownTrace(_)))
        ));
    }

    fn rows(db: &Database, q: &str) -> Vec<Vec<serde_json::Value>> {
        db.query(q).unwrap_or_else(|e| panic!("{q}\n{e}")).rows
    }

    /// A question answered without a judge, and a user's feedback on the
    /// answer: `value` is what the feedback op wrote.
    fn with_feedback(b: &mut TraceBuilder, q: &str, value: &str) {
        b.session("memory_construction", "session", json!({}));
        let m1 = b.variable(
            Some("message"),
            &format!("{q}:1"),
            "'Omar: I drive a blue Volvo.'",
            "message",
            None,
            json!({}),
        );
        b.session("memory_evaluation", "session", json!({}));
        let query = b.variable(
            Some("query"),
            q,
            "'What car does Omar drive?'",
            "message & query",
            None,
            json!({}),
        );
        let pred = b.variable(
            Some("prediction"),
            q,
            "'a red Toyota'",
            "prediction",
            None,
            json!({}),
        );
        b.op(
            "question-answering",
            "evaluation",
            None,
            &[&query, &m1],
            &[&pred],
            json!({}),
        );
        let rating = b.variable(Some("rating"), q, value, "feedback", None, json!({}));
        b.op(
            "user_feedback",
            "feedback",
            None,
            &[&pred],
            &[&rating],
            json!({}),
        );
    }

    #[test]
    fn a_users_thumbs_down_is_a_case_without_a_gold_answer() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let mut b = TraceBuilder::new("g-feedback", "u", "rag", json!({}), 19_000);
        with_feedback(&mut b, "Q1", "'thumbs_down'");
        with_feedback(&mut b, "Q2", "'thumbs-up'");
        with_feedback(&mut b, "Q3", "0");
        import(&db, b.finish());
        let cases = db.failed_cases(Some("g-feedback")).unwrap();
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["query:Q1@1", "query:Q3@1"]);
        assert!(cases[0].gold.is_empty());
        assert_eq!(cases[0].prediction, "a red Toyota");
        assert_eq!(cases[0].query, "What car does Omar drive?");
        assert_eq!(cases[0].setting(), Setting::Production);
        let got = rows(
            &db,
            "FIND cases IN TRACE 'g-feedback' RETURN case.query_id, case.origin",
        );
        assert_eq!(got.len(), 2, "{got:?}");
        // Attributed from the question and the prediction alone.
        let req = AttributeRequest {
            trace: Some("g-feedback"),
            cases: None,
            method: Method::Evidence,
            setting: Setting::Benchmark,
            search: Search::Sparse,
        };
        let v = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].setting, Some(Setting::Production));
        assert!(v[0].error_type.is_some(), "{:?}", v[0]);
    }

    #[test]
    fn find_cases_lists_the_judge_cases_of_a_trace_without_annotations() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let mut b = TraceBuilder::new("g-judged", "u", "rag", json!({}), 19_000);
        conversation(&mut b, "Q1", "0.0", true);
        conversation(&mut b, "Q2", "1.0", false);
        conversation(&mut b, "Q3", "0", false);
        import(&db, b.finish());
        let mut b = TraceBuilder::new("g-annotated", "u", "mem0", json!({}), 19_000);
        let (_, qa) = conversation(&mut b, "Q1", "0.0", false);
        b.annotate(json!({
            "query_id": "query:Q1@1", "query": "What car does Omar drive?",
            "golden_answers": ["a blue Volvo"], "prediction": "a red Toyota",
            "source_evidence_ids": ["message:Q1:1@1"],
            "final_error_type": "RetrievalError", "final_op_id": qa
        }));
        import(&db, b.finish());
        let judge_ops: Vec<String> = db
            .failed_cases(Some("g-judged"))
            .unwrap()
            .into_iter()
            .map(|c| match c.origin {
                CaseOrigin::Judge(op) => op,
                other => panic!("{other:?}"),
            })
            .collect();
        let got = rows(
            &db,
            "FIND cases RETURN trace.id, case.query_id, case.query, case.golden_answers, \
             case.prediction, case.evidence, case.error_type, case.op_id, case.origin, \
             case.judge_op_id",
        );
        assert_eq!(
            got,
            [
                json!([
                    "g-judged",
                    "query:Q1@1",
                    "What car does Omar drive?",
                    ["a blue Volvo"],
                    "a red Toyota",
                    ["message:Q1:1@1"],
                    null,
                    null,
                    "judge",
                    judge_ops[0]
                ]),
                json!([
                    "g-judged",
                    "query:Q3@1",
                    "What car does Omar drive?",
                    ["a blue Volvo"],
                    "a red Toyota",
                    [],
                    null,
                    null,
                    "judge",
                    judge_ops[1]
                ]),
                json!([
                    "g-annotated",
                    "query:Q1@1",
                    "What car does Omar drive?",
                    ["a blue Volvo"],
                    "a red Toyota",
                    ["message:Q1:1@1"],
                    "RetrievalError",
                    qa,
                    "annotation",
                    null
                ]),
            ]
            .map(|r| r.as_array().unwrap().clone())
        );
        // The default columns, filters and groups see judge cases like the others.
        let got = rows(&db, "FIND cases IN TRACE 'g-judged' LIMIT 1");
        assert_eq!(
            got,
            [json!([
                "g-judged",
                "query:Q1@1",
                "What car does Omar drive?",
                "a red Toyota",
                null,
                null
            ])
            .as_array()
            .unwrap()
            .clone()]
        );
        let got = rows(
            &db,
            "FIND cases GROUP BY case.origin RETURN case.origin, count(*) ORDER BY case.origin",
        );
        assert_eq!(
            got,
            [
                vec![json!("annotation"), json!(1)],
                vec![json!("judge"), json!(2)]
            ]
        );
        let got = rows(
            &db,
            "FIND cases WHERE case.origin = 'judge' AND case.prediction CONTAINS 'Toyota' \
             RETURN case.query_id",
        );
        assert_eq!(got, [vec![json!("query:Q1@1")], vec![json!("query:Q3@1")]]);
        // A trace without judge ops and annotations has no cases.
        let mut b = TraceBuilder::new("g-plain", "u", "rag", json!({}), 19_000);
        b.session("memory_construction", "session", json!({}));
        b.variable(Some("message"), "m", "'hi'", "message", None, json!({}));
        import(&db, b.finish());
        assert!(rows(&db, "FIND cases IN TRACE 'g-plain'").is_empty());
    }

    #[test]
    fn verdicts_moved_to_a_trace_that_supersedes_theirs_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let mut b = TraceBuilder::new("g-again", "u", "rag", json!({}), 19_000);
        let (_, qa) = conversation(&mut b, "Q1", "0.0", true);
        let export = b.finish();
        import(&db, export.clone());
        let cases = db.failed_cases(Some("g-again")).unwrap();
        let old = cases[0].trace;
        db.store_verdicts(
            &[verdict_for(&cases[0], &qa, "held, then ignored")],
            "tester",
        )
        .unwrap();
        let new = db
            .import_reader(
                export.to_string().as_bytes(),
                InputFormat::Json,
                "again",
                &ImportOptions { force: true },
            )
            .unwrap()[0]
            .trace;
        assert_eq!(db.supersede_trace(old, new, "stored again").unwrap(), 1);
        let moved = db.attributions(Some("g-again")).unwrap();
        assert_eq!(moved.len(), 1);
        assert_eq!(
            (moved[0].verdict.trace, moved[0].author.as_str()),
            (new, "tester")
        );
    }

    #[test]
    fn find_attributions_lists_the_stored_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        assert!(rows(&db, "FIND attributions").is_empty());
        let mut b = TraceBuilder::new("g-verdicts", "u", "rag", json!({}), 19_000);
        let (_, qa) = conversation(&mut b, "Q1", "0.0", true);
        conversation(&mut b, "Q2", "0.0", false);
        import(&db, b.finish());
        let mut b = TraceBuilder::new("g-other", "u", "rag", json!({}), 19_000);
        conversation(&mut b, "Q1", "0.0", true);
        import(&db, b.finish());
        let cases = db.failed_cases(Some("g-verdicts")).unwrap();
        let first = verdict_for(&cases[0], &qa, "held, then ignored");
        let mut second = verdict_for(&cases[1], &qa, "never retrieved");
        second.error_type = Some(ErrorType::RetrievalError);
        second.confidence = 0.25;
        let mut none = verdict_for(&cases[1], &qa, "no evidence reached the answer");
        (none.error_type, none.op_id, none.op_name) = (None, None, None);
        none.version = "2".into();
        db.store_verdicts(&[first, second], "tester").unwrap();
        db.store_verdicts(&[none], "query").unwrap();
        let stored = db.attributions(None).unwrap();
        assert_eq!(stored.len(), 3);
        let at = memtrace_engine::iso_utc(stored[0].at_ms);
        assert!(at.ends_with('Z') && at.contains('T'), "{at}");

        let r = db.query("FIND attributions").unwrap();
        assert_eq!(
            r.columns,
            [
                "trace",
                "case",
                "error_type",
                "op_id",
                "op_name",
                "confidence",
                "method",
                "at"
            ]
        );
        assert_eq!(
            r.rows[0],
            json!([
                "g-verdicts",
                "query:Q1@1",
                "ResponseError",
                qa,
                "question-answering",
                0.5,
                "evidence",
                at
            ])
            .as_array()
            .unwrap()
            .clone()
        );
        assert_eq!(r.rows[2][2..5], [json!(null), json!(null), json!(null)]);

        let got = rows(
            &db,
            "FIND attributions GROUP BY error_type RETURN error_type, count(*) ORDER BY error_type",
        );
        assert_eq!(
            got,
            [
                vec![json!(null), json!(1)],
                vec![json!("ResponseError"), json!(1)],
                vec![json!("RetrievalError"), json!(1)],
            ]
        );
        let got = rows(
            &db,
            "FIND attributions IN TRACE 'g-verdicts' WHERE confidence < 0.5 \
             RETURN attribution.case, query, reason, method, version, author, seq, micros, \
             attribution.error_type",
        );
        assert_eq!(
            got,
            [json!([
                "query:Q2@1",
                "What car does Omar drive?",
                "never retrieved",
                "evidence",
                "2",
                "tester",
                2,
                7,
                "RetrievalError"
            ])
            .as_array()
            .unwrap()
            .clone()]
        );
        let got = rows(
            &db,
            "FIND attributions WHERE author = 'query' AND at STARTS WITH '20' AND trace.id = 'g-verdicts' \
             RETURN seq, version, op_id IS NULL",
        );
        assert_eq!(got, [vec![json!(3), json!("2"), json!(true)]]);
        assert!(rows(&db, "FIND attributions IN TRACE 'g-other'").is_empty());
    }

    #[test]
    fn attribute_checks_its_method_when_planned_and_explained() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        let plan = db
            .prepare(
                "ATTRIBUTE query:Q8, $c USING Evidence",
                &[("c".to_string(), "x".into())].into(),
            )
            .unwrap();
        assert_eq!(
            memtrace_engine::columns_of(&plan),
            [
                "trace",
                "case",
                "error_type",
                "op_id",
                "op_name",
                "confidence",
                "reason"
            ]
        );
        let e = db
            .query("ATTRIBUTE CASES USING evidnce")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "invalid statement at line 1, column 23: unknown attribution method 'evidnce' \
             (this build has: evidence, llm, hybrid) (did you mean evidence?)\n  \
             ATTRIBUTE CASES USING evidnce\n                        ^"
        );
        let e = db
            .query("EXPLAIN ATTRIBUTE query:Q1 IN TRACE 'g' USING llm_magic")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column 47: unknown attribution method 'llm_magic'"),
            "{e}"
        );
        let stmts = db.parse_script("ATTRIBUTE CASES USING nope").unwrap();
        let e = db
            .plan(&stmts[0], &Params::new(), "ATTRIBUTE CASES USING nope")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown attribution method 'nope'"), "{e}");
        let r = db
            .query("EXPLAIN ATTRIBUTE CASES IN TRACE 'g' USING evidence")
            .unwrap();
        assert_eq!(r.rows.len(), 4);
    }

    #[test]
    fn recall_counts_items_and_complete_cases() {
        let mut r = Recall::default();
        r.add(&[1, 2], &[2, 5, 9]);
        r.add(&[3], &[3]);
        r.add(&[], &[4]);
        assert_eq!((r.cases, r.items, r.found, r.complete), (2, 3, 2, 1));
        assert!((r.micro() - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(r.complete_share(), 0.5);
    }
}
