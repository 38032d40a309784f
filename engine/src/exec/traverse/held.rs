//! The levels of a `RETURN ops` walk held and handed out together, in
//! batches, when the rows go out column by column.

use std::cell::RefCell;

use crate::error::Result;
use crate::exec::batch::{ops_run, Batch, BatchOut, Gather};

/// The fewest ops of a level, recorded one after the other, that go out as
/// a batch of their own (see [`Exec::ops_plain`]): below it, a batch's own
/// cost is more than looking each op up.
pub(super) const RUN_ROWS: usize = 16;

/// How many ops a `RETURN ops` walk that hands out batches finds before it
/// hands them out: walking and reading the rows in turns of many ops each
/// keeps them from pushing each other's data out of the processor's cache,
/// while a sink that stops early still stops the walk within this many
/// ops.
pub(super) const HAND_OUT_OPS: usize = 1 << 14;

/// One level of a `RETURN ops` walk held before it is handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// The `n` ops from `first`, a run of the labels' records.
    Run { depth: u32, first: u32, n: u32 },
    /// The next `n` ops of [`HeldLevels::lone`].
    Lone { depth: u32, n: usize },
}

/// The levels of a `RETURN ops` walk found and not yet handed out, and the
/// scratch of handing them out.
#[derive(Debug, Default)]
pub(super) struct HeldLevels {
    /// Each level, in the order walked.
    pub(super) levels: Vec<Held>,
    /// The ops of the levels that are no run, one level after the other.
    pub(super) lone: Vec<u32>,
    /// How many ops the levels hold.
    pub(super) ops: usize,
    /// Ops gathered for a batch looked up one by one, and their depths.
    kept: Vec<u32>,
    depths: Vec<u32>,
}

impl HeldLevels {
    /// Holds level `depth`'s new ops `fresh` (distinct, in order): as a
    /// run when there are at least [`RUN_ROWS`] of them, one after the
    /// other.
    pub(super) fn push(&mut self, depth: u32, fresh: &[u32]) {
        match ops_run(fresh) {
            Some((first, n)) if fresh.len() >= RUN_ROWS => {
                self.levels.push(Held::Run { depth, first, n });
            }
            _ => {
                self.lone.extend_from_slice(fresh);
                self.levels.push(Held::Lone {
                    depth,
                    n: fresh.len(),
                });
            }
        }
        self.ops += fresh.len();
    }

    /// Hands the levels held to `out`, in the order walked, and forgets
    /// them: a run the labels hold as `run`, a batch of its own; other ops
    /// gathered in `rest`, several levels to a batch, each op looked up.
    /// False once `out` wants no more.
    pub(super) fn hand_out(
        &mut self,
        run: &mut Batch<'_>,
        rest: &mut Batch<'_>,
        out: &RefCell<dyn BatchOut + '_>,
    ) -> Result<bool> {
        let HeldLevels {
            levels,
            lone,
            ops,
            kept,
            depths,
        } = self;
        let mut send_kept = |kept: &mut Vec<u32>, depths: &mut Vec<u32>| {
            if kept.is_empty() {
                return Ok(true);
            }
            rest.set_ops(kept, depths);
            kept.clear();
            depths.clear();
            out.borrow_mut().batch(rest)
        };
        let mut lone_ops = lone.iter().copied();
        let mut wanted = true;
        for level in levels.iter() {
            wanted = match *level {
                Held::Run { depth, first, n } if run.set_ops_run(first, n, depth) => {
                    send_kept(kept, depths)? && out.borrow_mut().batch(run)?
                }
                Held::Run { depth, first, n } => {
                    kept.extend(first..first.saturating_add(n));
                    depths.resize(kept.len(), depth);
                    kept.len() < Gather::ROWS || send_kept(kept, depths)?
                }
                Held::Lone { depth, n } => {
                    kept.extend(lone_ops.by_ref().take(n));
                    depths.resize(kept.len(), depth);
                    kept.len() < Gather::ROWS || send_kept(kept, depths)?
                }
            };
            if !wanted {
                break;
            }
        }
        if wanted {
            wanted = send_kept(kept, depths)?;
        }
        levels.clear();
        lone.clear();
        *ops = 0;
        Ok(wanted)
    }
}
