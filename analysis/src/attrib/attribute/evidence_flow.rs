//! The evidence-flow method over the cases of one trace.

use crate::attrib::case::FailedCase;
use crate::attrib::choose::Chooser;
use crate::attrib::dense::Embedder;
use crate::attrib::evidence::DEFAULT_K;
use crate::attrib::flow::Flow;
use crate::attrib::model::TraceModel;
use crate::attrib::verdict::{Method, Verdict};
use crate::error::Result;
use memtrace_engine::Cancel;

use super::search::Searcher;

/// Attributes the cases of one trace with the evidence-flow method.
pub(crate) fn attribute_trace(
    model: &TraceModel,
    cases: &[FailedCase],
    setup_micros: u64,
    cancel: &Cancel,
    embedder: Option<&mut Embedder<'_>>,
) -> Result<Vec<Verdict>> {
    let started = std::time::Instant::now();
    let flow = Flow::new(model);
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
