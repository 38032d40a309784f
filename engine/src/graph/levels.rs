//! The level-by-level walk over rows of local ids: a visited bitmap, each
//! level's new nodes kept without a branch per node, and what a walk does
//! with each level (count it, gather its edges, or hand out its nodes).

use crate::error::{EngineError, Result};
use crate::exec::cancel::Cancel;

/// The visited-set bitmap of a walk over `vars` variables, with `starts`
/// marked; the starts once each, in order. A start that is not a variable
/// is an error.
pub(super) fn seed(vars: u32, starts: &[u32]) -> Result<(Vec<u64>, Vec<u32>)> {
    // Room for one word more: the level loops add a sink (see `keep_row`).
    let words = (vars as usize).div_ceil(64);
    let mut seen = Vec::with_capacity(words + 1);
    seen.resize(words, 0u64);
    let mut first = Vec::with_capacity(starts.len());
    for &s in starts {
        if s >= vars {
            return Err(EngineError::StartOutOfRange { start: s, vars });
        }
        let (w, b) = (s as usize / 64, 1u64 << (s % 64));
        if seen[w] & b == 0 {
            seen[w] |= b;
            first.push(s);
        }
    }
    Ok((seen, first))
}

/// Where a level walk reads each variable's row in one direction: its
/// edges and their other ends.
pub(super) trait Rows {
    /// Makes the rows of `nodes` readable (reads what is not yet held).
    fn prepare(&mut self, nodes: &[u32]) -> Result<()>;
    /// The row of `v`, prepared before.
    fn row(&self, v: u32) -> (&[u32], &[u32]);
    /// Keeps the other ends of `v`'s row (prepared before) not yet `seen`,
    /// as [`keep_unseen`] does; `out` has room as [`keep_row`] wants it
    /// for `rows` rows.
    #[inline(always)]
    fn keep_far(
        &self,
        v: u32,
        seen: &mut [u64],
        out: &mut Vec<u32>,
        held: usize,
        _rows: usize,
    ) -> usize {
        keep_unseen(seen, self.row(v).1, out, held)
    }
}

/// The rows of a whole graph in memory, their entries being the edges.
pub(super) struct CsrRows<'g> {
    pub(super) off: &'g [u32],
    pub(super) edges: &'g [u32],
    pub(super) far: &'g [u32],
}

impl Rows for CsrRows<'_> {
    fn prepare(&mut self, _: &[u32]) -> Result<()> {
        Ok(())
    }

    #[inline]
    fn row(&self, v: u32) -> (&[u32], &[u32]) {
        let (a, b) = (
            self.off[v as usize] as usize,
            self.off[v as usize + 1] as usize,
        );
        (&self.edges[a..b], &self.far[a..b])
    }

    #[inline(always)]
    fn keep_far(
        &self,
        v: u32,
        seen: &mut [u64],
        out: &mut Vec<u32>,
        held: usize,
        rows: usize,
    ) -> usize {
        let v = v as usize;
        let (Some(&a), Some(&b)) = (self.off.get(v), self.off.get(v + 1)) else {
            return held;
        };
        keep_row(seen, self.far, a as usize, b as usize, out, held, rows)
    }
}

/// What a level walk does with the rows it expands and at the end of each
/// level.
pub(super) trait Levels {
    /// Whether [`row`](Self::row) wants the rows' entries.
    const ROWS: bool;
    /// The entries (edges, or their ops) of one expanded node's row.
    fn row(&mut self, entries: &[u32]);
    /// Level `depth` is walked and newly reached `reached` nodes; false
    /// stops the walk.
    fn level(&mut self, depth: u32, reached: usize) -> Result<bool>;
}

/// Counts the nodes reached at a depth of at least `min_depth`.
pub(super) struct Count {
    pub(super) min_depth: u32,
    pub(super) count: u64,
}

impl Levels for Count {
    const ROWS: bool = false;

    fn row(&mut self, _: &[u32]) {}

    fn level(&mut self, depth: u32, reached: usize) -> Result<bool> {
        if depth >= self.min_depth {
            self.count += reached as u64;
        }
        Ok(true)
    }
}

/// Gathers each level's edges for a callback.
pub(super) struct Gather<F> {
    pub(super) walked: Vec<u32>,
    pub(super) level: F,
}

impl<F: FnMut(u32, &[u32]) -> Result<bool>> Levels for Gather<F> {
    const ROWS: bool = true;

    fn row(&mut self, entries: &[u32]) {
        self.walked.extend_from_slice(entries);
    }

    fn level(&mut self, depth: u32, _: usize) -> Result<bool> {
        let go_on = (self.level)(depth, &self.walked)?;
        self.walked.clear();
        Ok(go_on)
    }
}

/// Sorts distinct ids, all below `64 * bits.len()`. Ids as many as their
/// span are every id of it (a level's ops often are: recorded one after
/// the other) and are written out in order. When they lie close together
/// they are set in the bitmap `bits` and read back in order, which is
/// linear; otherwise they are sorted. `bits` is all clear before and after.
pub(super) fn sort_distinct(ids: &mut Vec<u32>, bits: &mut [u64]) {
    if ids.is_empty() {
        return;
    }
    // Both bounds in one pass.
    let (lo, hi) = ids
        .iter()
        .fold((u32::MAX, 0), |(lo, hi), &i| (lo.min(i), hi.max(i)));
    if (hi - lo) as usize + 1 == ids.len() {
        // Distinct ids as many as their span: every id of it, once.
        ids.clear();
        ids.extend(lo..=hi);
        return;
    }
    let (lo, hi) = (lo as usize / 64, hi as usize / 64);
    if ids.len() < 8 || hi - lo >= 2 * ids.len() || hi >= bits.len() {
        ids.sort_unstable();
        return;
    }
    for &i in ids.iter() {
        bits[i as usize / 64] |= 1 << (i % 64);
    }
    ids.clear();
    for (w, word) in (lo..).zip(&mut bits[lo..=hi]) {
        let mut rest = std::mem::take(word);
        while rest != 0 {
            ids.push((w * 64) as u32 + rest.trailing_zeros());
            rest &= rest - 1;
        }
    }
}

/// Makes `slots` at least `len` long (doubling, so that growing it costs
/// linear time over a walk); what it holds past what a caller kept is of
/// no meaning.
#[inline]
pub(super) fn room(slots: &mut Vec<u32>, len: usize) {
    if slots.len() < len {
        slots.resize(len.max(2 * slots.len()), 0);
    }
}

/// The level loop: from `starts` (depth 0), each node at its least depth,
/// for each level below `max_depth` every edge of the level's nodes is
/// walked: `visit` gets each expanded node's row entries (when it wants
/// them), and the depth and number of nodes newly reached after each
/// level; it answers false to stop.
pub(super) fn levels<R: Rows, L: Levels>(
    rows: &mut R,
    vars: u32,
    starts: &[u32],
    max_depth: Option<u32>,
    cancel: &Cancel,
    visit: &mut L,
) -> Result<()> {
    cancel.check()?;
    let (mut seen, mut nodes) = seed(vars, starts)?;
    // The sink word of `keep_row`.
    seen.push(u64::MAX);
    // The next level's nodes are `next[..held]`. Every other end is written
    // to `next[held]` and kept by moving `held` past it when not yet seen,
    // without a branch: whether it is new follows no pattern a processor
    // can predict, and a branch would make each row's read wait in turn.
    let mut next: Vec<u32> = Vec::new();
    let mut depth = 0u32;
    while !nodes.is_empty() && max_depth.is_none_or(|m| depth < m) {
        cancel.check()?;
        rows.prepare(&nodes)?;
        let mut held = 0usize;
        // Room for a window per row (see `keep_row`).
        room(&mut next, WINDOW * nodes.len());
        for &node in &nodes {
            if L::ROWS {
                visit.row(rows.row(node).0);
            }
            held = rows.keep_far(node, &mut seen, &mut next, held, nodes.len());
        }
        depth += 1;
        if !visit.level(depth, held)? {
            return Ok(());
        }
        nodes.clear();
        nodes.extend_from_slice(next.get(..held).unwrap_or(&[]));
    }
    Ok(())
}

/// Keeps those of `ids` not yet `seen`, marking them: each is written to
/// `out[held]` and kept by moving `held` past it when new, without a
/// branch (see [`levels`]). Returns the new `held`. Ids past `seen` are
/// left out.
#[inline(always)]
pub(super) fn keep_unseen(seen: &mut [u64], ids: &[u32], out: &mut Vec<u32>, held: usize) -> usize {
    keep_unseen_at(seen, ids, 0, out, &mut (), held)
}

/// Where a level walk notes, beside each other end it keeps, the position in
/// the other ends it was read at: nowhere (`()`, a walk that wants only the
/// nodes), or a list as long as the kept other ends (a walk whose rows name
/// the edge that reached each node).
pub(super) trait Spots {
    /// Makes room for `len` positions.
    fn room(&mut self, len: usize);
    /// Notes `at` as the position of the other end written at `held`.
    fn put(&mut self, held: usize, at: usize);
}

impl Spots for () {
    #[inline(always)]
    fn room(&mut self, _: usize) {}

    #[inline(always)]
    fn put(&mut self, _: usize, _: usize) {}
}

impl Spots for Vec<u32> {
    #[inline(always)]
    fn room(&mut self, len: usize) {
        room(self, len);
    }

    #[inline(always)]
    fn put(&mut self, held: usize, at: usize) {
        if let Some(slot) = self.get_mut(held) {
            *slot = at as u32;
        }
    }
}

/// [`keep_unseen`], noting in `spots` where each id was read: `ids` being
/// the other ends from position `base`, the `k`th at `base + k`.
#[inline(always)]
pub(super) fn keep_unseen_at<P: Spots>(
    seen: &mut [u64],
    ids: &[u32],
    base: usize,
    out: &mut Vec<u32>,
    spots: &mut P,
    mut held: usize,
) -> usize {
    room(out, held + ids.len());
    spots.room(held + ids.len());
    for (k, &id) in ids.iter().enumerate() {
        let (w, bit) = (id as usize / 64, 1u64 << (id % 64));
        if let (Some(word), Some(slot)) = (seen.get_mut(w), out.get_mut(held)) {
            *slot = id;
            spots.put(held, base + k);
            held += usize::from(*word & bit == 0);
            *word |= bit;
        }
    }
    held
}

/// How many other ends a short row's window holds: rows of one up to this
/// many are read as a window of this many entries of the other ends, those
/// past the row's end masked, so that the loop over a row runs the same
/// number of times for every short row and its end is not a branch that
/// a processor mispredicts; padding keeps every window inside the array.
/// An empty row (a variable no op wrote, common in recorded traces) is
/// passed over before it. Three was the fastest window size tried.
pub(super) const WINDOW: usize = 3;

/// [`keep_unseen`] of the other ends `far[a..b]` of one row: a short row
/// (see [`WINDOW`]) whose window lies inside `far` is read as that window,
/// with its entries past `b` masked (written to `out` but not kept); a
/// longer row as a slice.
///
/// The last word of `seen` is a sink, all ones, past every other end's: a
/// masked entry reads and marks it instead of its own word, so it is never
/// new and never makes another entry's test wait on its write.
///
/// `out` must have room for a window past `held` for each of `rows` rows
/// (`out.len() >= held + WINDOW * rows`), `rows` being at least the rows
/// of the level not yet kept, this one among them: a short row then needs
/// no check of its room, and a longer one makes room to keep that true.
#[inline(always)]
pub(super) fn keep_row(
    seen: &mut [u64],
    far: &[u32],
    a: usize,
    b: usize,
    out: &mut Vec<u32>,
    held: usize,
    rows: usize,
) -> usize {
    keep_row_at(seen, far, a, b, out, &mut (), held, rows)
}

/// [`keep_row`], noting in `spots` where in `far` each other end was read;
/// `spots` must have room as `out` does.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn keep_row_at<P: Spots>(
    seen: &mut [u64],
    far: &[u32],
    a: usize,
    b: usize,
    out: &mut Vec<u32>,
    spots: &mut P,
    mut held: usize,
    rows: usize,
) -> usize {
    let len = b.wrapping_sub(a);
    if len == 0 {
        return held;
    }
    if len <= WINDOW {
        if let Some(window) = far.get(a..a + WINDOW) {
            let sink = seen.len().wrapping_sub(1);
            for (k, &id) in window.iter().enumerate() {
                let w = if k < len { id as usize / 64 } else { sink };
                let bit = 1u64 << (id % 64);
                if let (Some(word), Some(slot)) = (seen.get_mut(w), out.get_mut(held)) {
                    *slot = id;
                    spots.put(held, a + k);
                    held += usize::from(*word & bit == 0);
                    *word |= bit;
                }
            }
            return held;
        }
    }
    keep_long(
        seen,
        far.get(a..b).unwrap_or(&[]),
        a,
        out,
        spots,
        held,
        rows,
    )
}

/// The part of [`keep_row`] for a row longer than its window: kept as
/// [`keep_unseen`] keeps it, with room made for windows of `rows` rows
/// after it. Not inlined, so that the loop over short rows stays small.
#[inline(never)]
pub(super) fn keep_long<P: Spots>(
    seen: &mut [u64],
    ids: &[u32],
    base: usize,
    out: &mut Vec<u32>,
    spots: &mut P,
    held: usize,
    rows: usize,
) -> usize {
    let len = held + ids.len() + WINDOW * rows;
    room(out, len);
    spots.room(len);
    keep_unseen_at(seen, ids, base, out, spots, held)
}

/// How many nodes a level walk makes room for at its start, at most (as
/// many as the trace's variables when fewer).
pub(super) const FIRST_ROOM: usize = 1024;

/// The level loop of [`levels`] over a graph's rows in memory (`off`,
/// `edges`, `far` as [`CsrRows`] has them), noting the edge that first
/// reached each new node: after each level, `level(depth, nodes, edges)`
/// gets the level's new nodes in the order a breadth-first walk reaches
/// them and, beside each, that edge; it answers false to stop.
#[allow(clippy::too_many_arguments)]
pub(super) fn node_levels(
    off: &[u32],
    edges: &[u32],
    far: &[u32],
    vars: u32,
    starts: &[u32],
    max_depth: Option<u32>,
    cancel: &Cancel,
    mut level: impl FnMut(u32, &[u32], &[u32]) -> Result<bool>,
) -> Result<()> {
    cancel.check()?;
    let (mut seen, mut nodes) = seed(vars, starts)?;
    // The sink word of `keep_row`.
    seen.push(u64::MAX);
    // A level's new nodes are `next[..held]`, `spots[..held]` where each
    // was read in `far`, and `via` the edges at those places.
    // Room made once for the levels of a small trace (a walk's lists grow
    // by doubling otherwise: a few reallocations each on every walk).
    let first_room = (vars as usize).min(FIRST_ROOM);
    let mut next = Vec::with_capacity(WINDOW * first_room);
    let mut spots = Vec::with_capacity(WINDOW * first_room);
    let mut via = Vec::with_capacity(first_room);
    nodes.reserve(first_room);
    let mut depth = 0u32;
    while !nodes.is_empty() && max_depth.is_none_or(|m| depth < m) {
        cancel.check()?;
        let mut held = 0usize;
        // Room for a window per row (see `keep_row`), in both lists.
        room(&mut next, WINDOW * nodes.len());
        room(&mut spots, WINDOW * nodes.len());
        for &node in &nodes {
            let v = node as usize;
            let (Some(&a), Some(&b)) = (off.get(v), off.get(v + 1)) else {
                continue;
            };
            let rows = nodes.len();
            held = keep_row_at(
                &mut seen, far, a as usize, b as usize, &mut next, &mut spots, held, rows,
            );
        }
        depth += 1;
        via.clear();
        via.extend(
            spots
                .get(..held)
                .unwrap_or(&[])
                .iter()
                .map(|&at| edges.get(at as usize).copied().unwrap_or(u32::MAX)),
        );
        let reached = next.get(..held).unwrap_or(&[]);
        if !level(depth, reached, &via)? {
            return Ok(());
        }
        nodes.clear();
        nodes.extend_from_slice(reached);
    }
    Ok(())
}

/// The nodes a level walk over `rows` reaches at a depth of at least
/// `min_depth`.
pub(super) fn count_levels<R: Rows>(
    rows: &mut R,
    vars: u32,
    starts: &[u32],
    min_depth: u32,
    max_depth: Option<u32>,
    cancel: &Cancel,
) -> Result<u64> {
    let mut count = Count {
        min_depth,
        count: 0,
    };
    levels(rows, vars, starts, max_depth, cancel, &mut count)?;
    Ok(count.count)
}
