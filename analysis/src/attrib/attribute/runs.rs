//! An attribution run: the traces in scope read one by one, their cases
//! selected and hidden as the setting says, and attributed by the method.

use crate::attrib::agent::{self, LlmSettings};
use crate::attrib::dense::{Embedder, Search};
use crate::attrib::setting::Setting;
use crate::attrib::traces::{trace_cases, views};
use crate::attrib::verdict::{Method, RunProgress, Verdict};
use crate::error::{AnalysisError, Result};
use memtrace_engine::{Cancel, Engine, TraceView};

use super::evidence_flow::attribute_trace;
use super::llm::{attribute_group_llm, LlmRun, Prepared};
use super::selection::{Named, Selection};
use super::types::AttributeRequest;

/// As [`Engine::attribute`].
pub(crate) fn attribute_with(
    db: &Engine,
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
pub(super) struct How {
    pub(super) method: Method,
    pub(super) setting: Setting,
    pub(super) search: Search,
}

/// Attributes, trace by trace, the cases of `views` that `selection`
/// keeps. Verdicts come in trace order, and within a trace in case order.
pub(super) fn attribute_views(
    db: &Engine,
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
    db: &'a Engine,
    search: Search,
    cancel: &'a Cancel,
) -> Result<Option<Embedder<'a>>> {
    if !search.needs_embeddings() {
        return Ok(None);
    }
    let Some(config) = db.embeddings_config()? else {
        return Err(AnalysisError::NoEmbeddingsEndpoint {
            search: search.to_string(),
        });
    };
    Ok(Some(Embedder::new(db, config, search, cancel)?))
}
