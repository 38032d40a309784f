//! A trace's dependency graph in memory and the walks that traversals run
//! on: [`TraceGraph`] and its breadth-first walks (`trace_graph`), the ops
//! as a graph of their own (`op_graph`), the level-by-level walk both use
//! (`levels`), and counts read straight from the stored rows (`stored`).

mod levels;
mod op_graph;
mod stored;
mod trace_graph;

#[cfg(test)]
mod tests;

pub use crate::exec::cancel::Cancel;
pub use stored::{reach_count_scanned, reach_count_stored, SCAN_LEVELS};
pub use trace_graph::{Admit, TraceGraph, Visit};
