//! Walks that count what a traversal reaches straight from the stored
//! adjacency, block by block or by scanning a small trace's edges, without
//! loading the trace's whole graph.

use std::collections::HashMap;

use memtrace_query::ast::Direction;
use memtrace_storage::records::Counts;
use memtrace_storage::{AdjacencyBlock, ReadView, StoredAdjacency, TraceId, BLOCK_VARS};

use super::levels::{count_levels, Rows};
use crate::error::Result;
use crate::exec::cancel::Cancel;

/// The size, in bytes, up to which a walk of more than one level on a cold
/// trace reads every block of its direction at once: one read of this size
/// costs about what a second small read does.
const WHOLE_DIRECTION_BYTES: u64 = 64 << 10;

/// About how many bytes one direction's blocks of a trace take: each edge
/// is a row entry (its id and its other end), each variable an offset.
fn direction_bytes(vars: u32, edges: u32) -> u64 {
    8 * u64::from(edges) + 4 * u64::from(vars)
}

/// A trace's rows in one direction, read block by block from the store as
/// a walk reaches them: a walk of a few hops on a cold trace reads a few
/// blocks instead of the whole adjacency value.
struct BlockRows<'v> {
    view: &'v ReadView<'v>,
    trace: TraceId,
    backward: bool,
    vars: u32,
    edges: u32,
    /// Blocks read so far, by number.
    blocks: HashMap<u32, AdjacencyBlock>,
    /// Set when a block is not stored (a trace stored before blocks were).
    missing: bool,
    /// Read every block of the direction on the first level.
    whole: bool,
}

impl Rows for BlockRows<'_> {
    fn prepare(&mut self, nodes: &[u32]) -> Result<()> {
        let mut want: Vec<u32> = if self.blocks.is_empty() && self.whole {
            // Every block of the direction at once: they are stored side by
            // side, so one read fetches them all, where a level at a time
            // would read once per level.
            (0..self.vars.div_ceil(BLOCK_VARS)).collect()
        } else {
            nodes
                .iter()
                .map(|&v| AdjacencyBlock::of(v))
                .filter(|b| !self.blocks.contains_key(b))
                .collect()
        };
        want.sort_unstable();
        want.dedup();
        if want.is_empty() {
            return Ok(());
        }
        let got =
            self.view
                .adjacency_blocks(self.trace, self.backward, &want, self.vars, self.edges)?;
        for (b, block) in want.into_iter().zip(got) {
            match block {
                Some(block) => {
                    self.blocks.insert(b, block);
                }
                None => {
                    self.missing = true;
                    self.blocks.insert(b, AdjacencyBlock::default());
                }
            }
        }
        Ok(())
    }

    fn row(&self, v: u32) -> (&[u32], &[u32]) {
        self.blocks
            .get(&AdjacencyBlock::of(v))
            .and_then(|b| b.row(v))
            .unwrap_or((&[], &[]))
    }
}

/// The most levels a bounded walk on a cold small trace scans its head's
/// edges for ([`reach_count_scanned`]) before building the trace's rows
/// is cheaper: building them passes over the edges about this many times
/// (three groupings of two passes each, the other ends beside two of them,
/// and the memory all of that is written to).
pub const SCAN_LEVELS: u32 = 8;

/// A trace's rows in one direction found by scanning the edges of its
/// head as stored, once per level, for those whose near end is one of the
/// level's nodes: a walk of a few hops on a cold small trace builds no
/// row of the variables it never reaches.
struct ScannedRows<'a> {
    adj: &'a StoredAdjacency,
    backward: bool,
    /// The level's nodes, a bit each; all clear between levels.
    marked: Vec<u64>,
    /// (near end, edge, other end) of each edge found, by near end then edge.
    found: Vec<(u32, u32, u32)>,
    /// The level's rows: the near ends, edges and other ends of `found`.
    near: Vec<u32>,
    edges: Vec<u32>,
    far: Vec<u32>,
}

impl Rows for ScannedRows<'_> {
    fn prepare(&mut self, nodes: &[u32]) -> Result<()> {
        for &v in nodes {
            if let Some(w) = self.marked.get_mut(v as usize / 64) {
                *w |= 1 << (v % 64);
            }
        }
        self.found.clear();
        let found = &mut self.found;
        let scanned = self
            .adj
            .scan(self.backward, &self.marked, |n, e, f| found.push((n, e, f)));
        for &v in nodes {
            if let Some(w) = self.marked.get_mut(v as usize / 64) {
                *w &= !(1 << (v % 64));
            }
        }
        scanned?;
        // By near end, each row in edge order (the scan found them so).
        self.found.sort_by_key(|&(n, _, _)| n);
        self.near.clear();
        self.edges.clear();
        self.far.clear();
        for &(n, e, f) in &self.found {
            self.near.push(n);
            self.edges.push(e);
            self.far.push(f);
        }
        Ok(())
    }

    fn row(&self, v: u32) -> (&[u32], &[u32]) {
        let a = self.near.partition_point(|&n| n < v);
        let b = a + self.near[a..].partition_point(|&n| n == v);
        (&self.edges[a..b], &self.far[a..b])
    }
}

/// [`TraceGraph::reach_count`] over the edges of a small trace's head as
/// stored (see [`ScannedRows`]), bounded at `max_depth` levels.
pub fn reach_count_scanned(
    adj: &StoredAdjacency,
    starts: &[u32],
    dir: Direction,
    min_depth: u32,
    max_depth: u32,
    cancel: &Cancel,
) -> Result<u64> {
    let (vars, _, _) = adj.counts();
    let mut rows = ScannedRows {
        adj,
        backward: dir == Direction::Backward,
        marked: vec![0; (vars as usize).div_ceil(64)],
        found: Vec::new(),
        near: Vec::new(),
        edges: Vec::new(),
        far: Vec::new(),
    };
    count_levels(&mut rows, vars, starts, min_depth, Some(max_depth), cancel)
}

/// [`TraceGraph::reach_count`] read from the stored blocks of a trace's
/// rows instead of a loaded graph: for a bounded walk on a trace that is
/// not in memory. `None` when the trace has no blocks stored (then load
/// the graph). `counts` are the trace record's.
#[allow(clippy::too_many_arguments)]
pub fn reach_count_stored(
    view: &ReadView,
    trace: TraceId,
    counts: &Counts,
    starts: &[u32],
    dir: Direction,
    min_depth: u32,
    max_depth: Option<u32>,
    cancel: &Cancel,
) -> Result<Option<u64>> {
    let mut rows = BlockRows {
        view,
        trace,
        backward: dir == Direction::Backward,
        vars: counts.variables,
        edges: counts.edges,
        blocks: HashMap::new(),
        missing: false,
        whole: max_depth.is_some_and(|d| d >= 2)
            && direction_bytes(counts.variables, counts.edges) <= WHOLE_DIRECTION_BYTES,
    };
    let count = count_levels(
        &mut rows,
        counts.variables,
        starts,
        min_depth,
        max_depth,
        cancel,
    )?;
    Ok((!rows.missing).then_some(count))
}
