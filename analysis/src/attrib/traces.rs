//! The traces an analysis reads: those a trace selector names, and one
//! trace read whole with its failed cases.

use super::case::{failed_cases, FailedCase};
use super::model::TraceModel;
use crate::error::Result;
use memtrace_engine::{Engine, TraceView};

/// The trace a selector (graph id or `#ID`) names, or every trace, each
/// as a view.
pub(crate) fn views<'db>(db: &'db Engine, trace: Option<&str>) -> Result<Vec<TraceView<'db>>> {
    match trace {
        Some(t) => Ok(vec![db.trace(t)?]),
        None => db
            .traces()?
            .into_iter()
            .map(|t| Ok(db.trace_by_id(t.id)?))
            .collect(),
    }
}

/// A trace read whole, and its failed cases.
pub(crate) fn trace_cases(view: &TraceView<'_>) -> Result<(TraceModel, Vec<FailedCase>)> {
    let model = TraceModel::load(view)?;
    let cases = failed_cases(&model, &view.cases()?);
    model.read_error()?;
    Ok((model, cases))
}
