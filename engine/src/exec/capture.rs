//! What TRACE, FORWARD and MATCH reach, kept as local ids when a graph of
//! the result is asked for ([`crate::Engine::query_graph`]) instead of rows.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use memtrace_storage::TraceId;

/// What a walk or a match reached in one trace, as local ids.
#[derive(Debug, Default)]
pub(super) struct Reached {
    /// The walk's starts (TRACE and FORWARD).
    pub starts: BTreeSet<u32>,
    /// Variables reached (or bound).
    pub nodes: BTreeSet<u32>,
    /// Edges walked (or crossed by a match).
    pub edges: BTreeSet<u32>,
}

/// Where the executor puts what it reached instead of making rows: set on
/// an [`Exec`] by [`Engine::query_graph`].
#[derive(Debug, Default)]
pub(super) struct Capture {
    traces: RefCell<BTreeMap<TraceId, Reached>>,
}

impl Capture {
    /// What was reached, per trace.
    pub fn into_traces(self) -> BTreeMap<TraceId, Reached> {
        self.traces.into_inner()
    }

    /// Adds to what is reached in `trace`.
    pub fn add(&self, trace: TraceId, f: impl FnOnce(&mut Reached)) {
        f(self.traces.borrow_mut().entry(trace).or_default());
    }
}
