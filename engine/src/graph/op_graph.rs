//! The ops of one direction of a trace as a graph of their own, and the
//! level walk over it that hands out the ops a walk over variables crosses.

use memtrace_query::ast::Direction;
use memtrace_storage::adjacency::group;
use memtrace_storage::Adjacency;

use super::levels::{keep_row, keep_unseen, room, seed, sort_distinct, WINDOW};
use crate::error::Result;
use crate::exec::cancel::Cancel;

/// The ops of one direction as a graph of their own, for a walk that
/// gathers ops ([`TraceGraph::walk_new_ops`]). Each op's edges are cut
/// into groups: the near ends (where a walk in this direction arrives at
/// the op: the targets going backward, the sources going forward) whose
/// other ends are the same make one group, and a walk that reaches any near
/// end of a group crosses the op to all the group's other ends. Most ops are
/// one group (each input feeds each output), whose id is the op's own; the
/// groups of an op cut in several are numbered from the trace's op count
/// up. A group's row lists the groups that hold its other ends as near ends,
/// or, for another end written by several groups and read by several, the
/// hub that stands for them (see `hubs`): rows then hold at most three
/// entries per edge of the trace.
///
/// Walked level by level, the groups are reached at the depths at which a
/// walk over variables first crosses their edges, so each op at the least
/// depth of its groups. The walk reads no variable that no op wrote (the
/// inputs of a recorded trace, often many), and an op with several outputs
/// once, not once per output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OpGraph {
    /// The trace's ops: a group below this is the op of its id, whole.
    pub(super) ops: u32,
    /// Per group, and one past the last: where its row starts in `far`.
    pub(super) off: Vec<u32>,
    /// The rows, each group at most once in a row; padded so that each
    /// row's window lies inside (see [`keep_row`]).
    pub(super) far: Vec<u32>,
    /// Per variable, and one past the last: where the groups that hold it
    /// as a near end start in `near`.
    pub(super) var_off: Vec<u32>,
    /// The groups that hold each variable as a near end.
    pub(super) near: Vec<u32>,
    /// The op of each group numbered from `ops` up, in order.
    pub(super) split: Vec<u32>,
    /// The variable of each hub, the nodes numbered after the groups: a
    /// variable written by several groups and read by several, which a
    /// row names once instead of naming each of its writers (a variable
    /// updated in place by many ops, read by many, would otherwise give
    /// rows as many entries as writers times readers). A hub reached in a
    /// level adds its writers' groups to that level; its own row is empty.
    pub(super) hubs: Vec<u32>,
}

impl OpGraph {
    /// The groups of `adj`'s ops in `dir`, their hubs and their rows: at
    /// most three entries per edge. `None` when they outgrow 32-bit ids.
    pub(super) fn new(adj: &Adjacency, dir: Direction) -> Option<OpGraph> {
        let (near_of, far_of) = match dir {
            Direction::Backward => (&adj.target, &adj.source),
            Direction::Forward => (&adj.source, &adj.target),
        };
        let groups = OpGroups::new(adj, near_of, far_of)?;
        // The groups that hold each variable as a near end.
        let (var_off, by_var) = group(adj.vars, &groups.near_vars);
        let near = by_var
            .iter()
            .map(|&i| groups.near_groups.get(i as usize).copied())
            .collect::<Option<Vec<u32>>>()?;
        let (hub_of, hubs) = find_hubs(adj.vars, &groups, &var_off)?;
        let (off, far) = group_rows(&groups, &hub_of, hubs.len(), &var_off, &near)?;
        Some(OpGraph {
            ops: adj.ops,
            off,
            far,
            var_off,
            near,
            split: groups.split,
            hubs,
        })
    }

    /// How many groups the graph has (its nodes before the hubs).
    pub(super) fn groups(&self) -> usize {
        self.off.len().saturating_sub(1 + self.hubs.len())
    }

    /// How many nodes the graph has: its groups and its hubs.
    pub(super) fn nodes(&self) -> usize {
        self.off.len().saturating_sub(1)
    }

    /// The groups that hold variable `v` as a near end.
    pub(super) fn of_var(&self, v: u32) -> &[u32] {
        let v = v as usize;
        match (self.var_off.get(v), self.var_off.get(v + 1)) {
            (Some(&a), Some(&b)) => self.near.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    pub(super) fn bytes(&self) -> usize {
        4 * (self.off.capacity()
            + self.far.capacity()
            + self.var_off.capacity()
            + self.near.capacity()
            + self.split.capacity()
            + self.hubs.capacity())
    }
}

/// The ops of one direction cut into groups, before their rows are made.
struct OpGroups {
    /// Per group, where its other ends lie in `fars`.
    spans: Vec<[u32; 2]>,
    /// The groups' other ends, each group's in order and once.
    fars: Vec<u32>,
    /// The op of each group numbered from the op count up, in order.
    split: Vec<u32>,
    /// The near ends as variables, beside `near_groups`.
    near_vars: Vec<u32>,
    /// The group of each near end in `near_vars`.
    near_groups: Vec<u32>,
}

impl OpGroups {
    /// Cuts each op of `adj` into groups of near ends (`near_of` per edge)
    /// with the same other ends (`far_of` per edge); `None` when the ids
    /// outgrow 32 bits.
    fn new(adj: &Adjacency, near_of: &[u32], far_of: &[u32]) -> Option<OpGroups> {
        let ops = adj.ops as usize;
        // Each group's other ends, `spans[g]` delimiting them in `fars`; the
        // near ends as (variable, group).
        let (mut spans, mut fars) = (vec![[0u32; 2]; ops], Vec::with_capacity(near_of.len()));
        // The near ends as (variable, group), a list each.
        let mut split = Vec::new();
        let (mut near_vars, mut near_groups) = (Vec::new(), Vec::new());
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        // Every edge's ends, grouped by op: read in edge order and written
        // to each op's place, because reading them op by op jumps around
        // memory when an op's edges were not recorded together.
        let mut by_op = vec![(0u32, 0u32); near_of.len()];
        let mut fill = adj.op_off.clone();
        for ((&o, &n), &f) in adj.op.iter().zip(near_of).zip(far_of) {
            let slot = fill.get_mut(o as usize)?;
            *by_op.get_mut(*slot as usize)? = (n, f);
            *slot += 1;
        }
        for (o, w) in (0u32..).zip(adj.op_off.windows(2)) {
            let edges = by_op.get(w[0] as usize..w[1] as usize)?;
            if let Some(&(v, _)) = edges.first() {
                if edges.iter().all(|p| p.0 == v) {
                    // One near end (most ops write one variable): whole.
                    let start = u32::try_from(fars.len()).ok()?;
                    fars.extend(edges.iter().map(|p| p.1));
                    let kept = sort_dedup(fars.get_mut(start as usize..)?);
                    fars.truncate(start as usize + kept);
                    spans[o as usize] = [start, u32::try_from(fars.len()).ok()?];
                    near_vars.push(v);
                    near_groups.push(o);
                    continue;
                }
            }
            pairs.clear();
            pairs.extend_from_slice(edges);
            pairs.sort_unstable();
            pairs.dedup();
            // Runs of one near end each, its other ends in order.
            runs.clear();
            let mut at = 0;
            while at < pairs.len() {
                let v = pairs[at].0;
                let end = at + pairs[at..].iter().take_while(|p| p.0 == v).count();
                runs.push((at, end));
                at = end;
            }
            let far_ends = |&(a, b): &(usize, usize)| pairs[a..b].iter().map(|p| p.1);
            let whole = runs.windows(2).all(|r| far_ends(&r[0]).eq(far_ends(&r[1])));
            if whole {
                if let Some(first) = runs.first() {
                    let start = u32::try_from(fars.len()).ok()?;
                    fars.extend(far_ends(first));
                    spans[o as usize] = [start, u32::try_from(fars.len()).ok()?];
                    near_vars.extend(runs.iter().map(|&(a, _)| pairs[a].0));
                    near_groups.extend(runs.iter().map(|_| o));
                }
                continue;
            }
            // Near ends with the same other ends, one group each.
            runs.sort_unstable_by(|x, y| far_ends(x).cmp(far_ends(y)));
            let mut i = 0;
            while i < runs.len() {
                let same = runs[i..]
                    .iter()
                    .take_while(|r| far_ends(r).eq(far_ends(&runs[i])))
                    .count();
                let g = u32::try_from(ops + split.len()).ok()?;
                split.push(o);
                let start = u32::try_from(fars.len()).ok()?;
                fars.extend(far_ends(&runs[i]));
                spans.push([start, u32::try_from(fars.len()).ok()?]);
                near_vars.extend(runs[i..i + same].iter().map(|&(a, _)| pairs[a].0));
                near_groups.extend(runs[i..i + same].iter().map(|_| g));
                i += same;
            }
        }
        Some(OpGroups {
            spans,
            fars,
            split,
            near_vars,
            near_groups,
        })
    }
}

/// The variables written by several groups and read by several, which a
/// row names once as a hub (see [`OpGraph::hubs`]): the hub of each
/// variable (`u32::MAX` for none) and the variable of each hub.
fn find_hubs(vars: u32, groups: &OpGroups, var_off: &[u32]) -> Option<(Vec<u32>, Vec<u32>)> {
    let vars = vars as usize;
    let (spans, fars) = (&groups.spans, &groups.fars);
    let mut readers = vec![0u32; vars];
    for &x in fars.iter() {
        let r = readers.get_mut(x as usize)?;
        *r = r.saturating_add(1);
    }
    let first_hub = u32::try_from(spans.len()).ok()?;
    let (mut hub_of, mut hubs) = (vec![u32::MAX; vars], Vec::new());
    for (x, (&r, w)) in (0u32..).zip(readers.iter().zip(var_off.windows(2))) {
        let writers = w[1] - w[0];
        if u64::from(writers) * u64::from(r) > u64::from(writers) + u64::from(r) {
            *hub_of.get_mut(x as usize)? =
                first_hub.checked_add(u32::try_from(hubs.len()).ok()?)?;
            hubs.push(x);
        }
    }
    Some((hub_of, hubs))
}

/// The rows of the groups, then the empty rows of `hubs` hubs: each
/// group's row names the groups that hold its other ends as near ends, or
/// their hub, each once. Returns the offsets and the padded rows.
fn group_rows(
    groups: &OpGroups,
    hub_of: &[u32],
    hubs: usize,
    var_off: &[u32],
    near: &[u32],
) -> Option<(Vec<u32>, Vec<u32>)> {
    let (spans, fars) = (&groups.spans, &groups.fars);
    // Each group's row: the groups of its other ends, or their hubs, each
    // once.
    let mut off = Vec::with_capacity(spans.len() + hubs + 1);
    let mut far: Vec<u32> = Vec::new();
    for &[a, b] in spans.iter() {
        let start = far.len();
        off.push(u32::try_from(start).ok()?);
        for &x in fars.get(a as usize..b as usize)? {
            let x = x as usize;
            match *hub_of.get(x)? {
                u32::MAX => {
                    let (&from, &to) = (var_off.get(x)?, var_off.get(x + 1)?);
                    for &h in near.get(from as usize..to as usize)? {
                        far.push(h);
                    }
                }
                hub => far.push(hub),
            }
        }
        // Each group once, in order (most rows hold one or two).
        if let Some(row) = far.get_mut(start..).filter(|r| r.len() > 1) {
            let kept = sort_dedup(row);
            far.truncate(start + kept);
        }
    }
    // The hubs' rows, empty, then the end.
    let end = u32::try_from(far.len()).ok()?;
    off.extend(std::iter::repeat_n(end, hubs + 1));
    far.extend([0; WINDOW]);
    Some((off, far))
}

/// The level loop over `graph`'s groups of ops (see [`OpGraph`]), from
/// variables `starts` of a trace of `vars` variables: level 1 is the groups
/// that hold a start as a near end, and each level after it the groups
/// that the rows of the level before reach and no level before held, as
/// the level loop of [`levels`] keeps its nodes. After each level,
/// `level(depth, new_ops)` gets the ops of its groups that no level before
/// had, in id order (it may reorder or empty them); it answers false to
/// stop. A group numbered below the op count is a whole op, new when the
/// group is; only the ops cut in several groups are looked up in a set of
/// ops seen.
pub(super) fn op_levels(
    graph: &OpGraph,
    vars: u32,
    starts: &[u32],
    max_depth: Option<u32>,
    cancel: &Cancel,
    mut level: impl FnMut(u32, &mut Vec<u32>) -> Result<bool>,
) -> Result<()> {
    cancel.check()?;
    let (_, starts) = seed(vars, starts)?;
    if max_depth == Some(0) {
        return Ok(());
    }
    let ops = graph.ops;
    let mut seen = vec![0u64; graph.nodes().div_ceil(64)];
    // The sink word of `keep_row`.
    seen.push(u64::MAX);
    // Ops seen, of those cut in several groups; `order` is scratch for
    // ordering a level's new ops, all clear between levels.
    let words = (ops as usize).div_ceil(64);
    let mut ops_seen = vec![0u64; if graph.split.is_empty() { 0 } else { words }];
    let mut order = vec![0u64; words];
    // A level's groups are `nodes`, the next's `next[..held]`.
    let (mut nodes, mut next, mut fresh) = (Vec::new(), Vec::new(), Vec::new());
    let mut held = 0;
    for &s in &starts {
        held = keep_unseen(&mut seen, graph.of_var(s), &mut nodes, held);
    }
    nodes.truncate(held);
    let mut depth = 1u32;
    while !nodes.is_empty() {
        if !graph.hubs.is_empty() {
            reach_through_hubs(graph, &mut seen, &mut nodes);
        }
        fresh.clear();
        for &g in &nodes {
            if g < ops {
                fresh.push(g);
            } else if let Some(&o) = graph.split.get((g - ops) as usize) {
                let (w, bit) = (o as usize / 64, 1u64 << (o % 64));
                if let Some(word) = ops_seen.get_mut(w) {
                    if *word & bit == 0 {
                        *word |= bit;
                        fresh.push(o);
                    }
                }
            }
        }
        sort_distinct(&mut fresh, &mut order);
        if !level(depth, &mut fresh)? || max_depth.is_some_and(|m| depth >= m) {
            return Ok(());
        }
        cancel.check()?;
        held = 0;
        // Room for a window of other ends per row (see `keep_row`).
        room(&mut next, WINDOW * nodes.len());
        for &g in &nodes {
            let g = g as usize;
            let (Some(&a), Some(&b)) = (graph.off.get(g), graph.off.get(g + 1)) else {
                continue;
            };
            held = keep_row(
                &mut seen,
                &graph.far,
                a as usize,
                b as usize,
                &mut next,
                held,
                nodes.len(),
            );
        }
        depth += 1;
        nodes.clear();
        nodes.extend_from_slice(next.get(..held).unwrap_or(&[]));
    }
    Ok(())
}

/// Adds to a level of `graph`'s `nodes` the groups, not yet `seen`, of
/// each hub among them (a hub reached in a level stands for its writers'
/// groups in that level; see [`OpGraph::hubs`]).
pub(super) fn reach_through_hubs(graph: &OpGraph, seen: &mut [u64], nodes: &mut Vec<u32>) {
    let first_hub = graph.groups();
    let mut i = 0;
    while let Some(&h) = nodes.get(i) {
        if let Some(&x) = (h as usize)
            .checked_sub(first_hub)
            .and_then(|k| graph.hubs.get(k))
        {
            let held = keep_unseen(seen, graph.of_var(x), nodes, nodes.len());
            nodes.truncate(held);
        }
        i += 1;
    }
}

/// Sorts `ids` and moves its distinct values to its front, in order;
/// returns how many there are. A few ids (most rows of a trace's ops hold
/// one to three) are sorted in place by insertion, without a call.
pub(super) fn sort_dedup(ids: &mut [u32]) -> usize {
    if ids.len() <= 8 {
        for i in 1..ids.len() {
            let mut j = i;
            while j > 0 && ids[j - 1] > ids[j] {
                ids.swap(j - 1, j);
                j -= 1;
            }
        }
    } else {
        ids.sort_unstable();
    }
    let mut kept = 0;
    for i in 0..ids.len() {
        if kept == 0 || ids[i] != ids[kept - 1] {
            ids[kept] = ids[i];
            kept += 1;
        }
    }
    kept
}
