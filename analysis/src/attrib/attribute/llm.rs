//! The LLM methods over a group of traces: each trace's cases made ready,
//! then sent to the LLM loop up to the configured concurrency at once.

use crate::attrib::agent;
use crate::attrib::case::FailedCase;
use crate::attrib::choose::Chooser;
use crate::attrib::dense::Embedder;
use crate::attrib::evidence::{Evidence, DEFAULT_K};
use crate::attrib::flow::{Finding, Flow};
use crate::attrib::model::TraceModel;
use crate::attrib::verdict::{Method, RunProgress, Verdict};
use crate::error::{AnalysisError, Result};
use memtrace_engine::{Cancel, Engine};

use super::search::Searcher;

/// One trace's cases made ready for the LLM loop: their evidence, and in
/// hybrid mode the evidence-flow findings offered as hypotheses.
pub(super) struct Prepared {
    pub(super) model: TraceModel,
    pub(super) cases: Vec<FailedCase>,
    pub(super) evidences: Vec<Evidence>,
    pub(super) findings: Vec<Option<Finding>>,
}

impl Prepared {
    pub(super) fn new(
        model: TraceModel,
        cases: Vec<FailedCase>,
        method: Method,
        embedder: Option<&mut Embedder<'_>>,
    ) -> Result<Prepared> {
        let (evidences, findings) = {
            let flow = Flow::new(&model);
            let chooser = Chooser::new(&model, flow.matcher());
            let mut search = Searcher::new(&model, &flow, embedder)?;
            let evidences: Vec<Evidence> = cases
                .iter()
                .map(|c| search.evidence(&chooser, c, DEFAULT_K))
                .collect::<Result<_>>()?;
            let findings: Vec<Option<Finding>> = if method == Method::Hybrid {
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

/// What an LLM attribution runs with.
pub(super) struct LlmRun<'a> {
    pub(super) db: &'a Engine,
    pub(super) client: &'a memtrace_llm::Client,
    pub(super) rt: &'a tokio::runtime::Runtime,
    pub(super) method: Method,
    pub(super) cancel: &'a Cancel,
}

/// Attributes the cases of a group of traces with the LLM loop, up to
/// the configured concurrency at once, in trace and case order.
pub(super) fn attribute_group_llm(
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
