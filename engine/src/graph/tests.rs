//! Tests of the in-memory graph, its walks and the walks over stored rows.

use super::levels::*;
use super::op_graph::*;
use super::stored::*;
use super::trace_graph::*;
use crate::error::EngineError;
use crate::exec::cancel::Cancel;
use crate::{Engine, ImportOptions};
use memtrace_query::ast::Direction;
use memtrace_storage::records::Counts;
use memtrace_storage::{StorageError, StoredAdjacency, TraceId};
use proptest::prelude::*;
use std::collections::VecDeque;

fn expand_all(_: u32, _: u32, _: u32) -> Admit {
    Admit::Expand
}

/// (node, depth, edge, parent) of every visit.
fn run(
    g: &TraceGraph,
    starts: &[u32],
    dir: Direction,
    max_depth: Option<u32>,
    admit: impl FnMut(u32, u32, u32) -> Admit,
) -> Vec<(u32, u32, u32, u32)> {
    let mut out = Vec::new();
    g.walk(starts, 0, dir, max_depth, &Cancel::new(), admit, |v| {
        out.push((v.node, v.depth, v.edge, v.parent))
    })
    .unwrap();
    out
}

/// 0 -> 1 -> 2 -> 0 (a cycle), 1 -> 1 (a self-loop), 2 => 3 twice
/// (parallel edges), 3 -> 4, and 5 alone.
fn sample() -> TraceGraph {
    TraceGraph::from_edges(
        6,
        3,
        &[
            (0, 1, 0),
            (1, 2, 0),
            (2, 0, 1),
            (1, 1, 1),
            (2, 3, 2),
            (2, 3, 2),
            (3, 4, 2),
        ],
    )
    .unwrap()
}

#[test]
fn rows_with_ops_are_made_by_the_first_ops_walk_and_counted_since() {
    let g = sample();
    let before = g.bytes();
    g.reach_count(&[0], Direction::Forward, 0, None, &Cancel::new())
        .unwrap();
    assert_eq!(g.bytes(), before, "a count makes no rows with ops");
    let walk = |dir| {
        let mut got = Vec::new();
        g.walk_new_ops(&[0], dir, None, &Cancel::new(), |d, ops| {
            got.extend(ops.iter().map(|&o| (d, o)));
            Ok(true)
        })
        .unwrap();
        got
    };
    let first = walk(Direction::Forward);
    let made = g.bytes();
    assert!(made > before);
    // Made once: a second walk reads them again.
    assert_eq!(walk(Direction::Forward), first);
    assert_eq!(g.bytes(), made);
    walk(Direction::Backward);
    assert!(g.bytes() > made);
}

#[test]
fn an_op_is_cut_into_groups_of_near_ends_with_the_same_far_ends() {
    // Op 0 feeds both its inputs (0, 1) to both its outputs (2, 3): one
    // group, numbered 0. Op 1 feeds 2 to 4 and 3 to 5: going backward,
    // two groups (4 and 5 have different other ends), numbered from the op
    // count up; going forward, 2 and 3 differ too. Op 2 writes 6 from 4
    // and 5 (twice over): one group. Variables 0 and 1 are no op's
    // output.
    let edges = [
        (0, 2, 0),
        (1, 2, 0),
        (0, 3, 0),
        (1, 3, 0),
        (2, 4, 1),
        (3, 5, 1),
        (4, 6, 2),
        (5, 6, 2),
        (5, 6, 2),
    ];
    let g = TraceGraph::from_edges(7, 3, &edges).unwrap();
    let back = g.op_graph(Direction::Backward).unwrap();
    assert_eq!((back.groups(), &back.split[..]), (5, &[1, 1][..]));
    let row = |o: &OpGraph, g: usize| {
        let mut r = o.far[o.off[g] as usize..o.off[g + 1] as usize].to_vec();
        r.sort_unstable();
        r
    };
    assert_eq!(back.of_var(0), &[] as &[u32]);
    assert_eq!(back.of_var(2), &[0]);
    assert_eq!(back.of_var(3), &[0]);
    assert_eq!((back.of_var(4), back.of_var(5)), (&[3][..], &[4][..]));
    assert_eq!(back.of_var(6), &[2]);
    // Group 0 reaches the inputs, which no op wrote; op 2 reaches both
    // groups of op 1, and each of those reaches op 0.
    assert_eq!(row(back, 0), Vec::<u32>::new());
    assert_eq!(row(back, 2), vec![3, 4]);
    assert_eq!((row(back, 3), row(back, 4)), (vec![0], vec![0]));
    assert_eq!(row(back, 1), Vec::<u32>::new());
    let fwd = g.op_graph(Direction::Forward).unwrap();
    assert_eq!((fwd.groups(), &fwd.split[..]), (5, &[1, 1][..]));
    assert_eq!(fwd.of_var(0), &[0]);
    assert_eq!(fwd.of_var(6), &[] as &[u32]);
    assert_eq!(row(fwd, 0), vec![3, 4]);
    // An unknown variable is in no group.
    assert_eq!(back.of_var(99), &[] as &[u32]);
}

#[test]
fn a_variable_of_many_writers_and_readers_is_a_hub_named_once_per_row() {
    // Variable 0 is written by five ops (each from an input of its own)
    // and read by five (each to an output of its own). Going backward,
    // each reader's row would name all five writers (25 entries for 10
    // edges); it names the hub instead, which reaches them in the same
    // level.
    let mut edges = Vec::new();
    for k in 0..5u32 {
        edges.push((1 + k, 0, k));
        edges.push((0, 6 + k, 5 + k));
    }
    let g = TraceGraph::from_edges(11, 10, &edges).unwrap();
    let back = g.op_graph(Direction::Backward).unwrap();
    assert_eq!((back.groups(), &back.hubs[..]), (10, &[0][..]));
    for reader in 5..10 {
        assert_eq!(
            &back.far[back.off[reader] as usize..back.off[reader + 1] as usize],
            &[10]
        );
    }
    let walk = |starts: &[u32], max_depth| {
        let mut got = Vec::new();
        g.walk_new_ops(
            starts,
            Direction::Backward,
            max_depth,
            &Cancel::new(),
            |d, ops| {
                got.extend(ops.iter().map(|&o| (d, o)));
                Ok(true)
            },
        )
        .unwrap();
        got
    };
    let all = vec![(1, 5), (1, 6), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4)];
    assert_eq!(walk(&[6, 7], None), all);
    assert_eq!(walk(&[6, 7], Some(1)), all[..2].to_vec());
    // From the hub itself: its writers at depth 1, once.
    assert_eq!(
        walk(&[0, 8], None),
        vec![(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 7)]
    );
}

#[test]
fn csr_lists_edges_in_recorded_order() {
    let g = sample();
    assert_eq!((g.vars(), g.edge_count(), g.op_count()), (6, 7, 3));
    assert_eq!(g.outgoing(1), &[1, 3]);
    assert_eq!(g.outgoing(2), &[2, 4, 5]);
    assert_eq!(g.incoming(1), &[0, 3]);
    assert_eq!(g.incoming(3), &[4, 5]);
    assert_eq!(g.outgoing(5), &[] as &[u32]);
    assert_eq!(g.outgoing(99), &[] as &[u32]);
    assert_eq!(g.op_edges(2), &[4, 5, 6]);
    assert_eq!(g.op_edges(3), &[] as &[u32]);
    assert_eq!(
        (g.source(6), g.target(6), g.op(6)),
        (Some(3), Some(4), Some(2))
    );
    assert_eq!(g.source(7), None);
    assert!(g.bytes() >= 9 * 4);
    assert!(TraceGraph::from_edges(2, 1, &[(0, 2, 0)]).is_err());
    assert!(TraceGraph::from_edges(2, 1, &[(0, 1, 1)]).is_err());
}

#[test]
fn walks_terminate_on_cycles_self_loops_and_parallel_edges() {
    let g = sample();
    assert_eq!(
        run(&g, &[0], Direction::Forward, None, expand_all),
        vec![(1, 1, 0, 0), (2, 2, 1, 1), (3, 3, 4, 2), (4, 4, 6, 3)]
    );
    assert_eq!(
        run(&g, &[4], Direction::Backward, None, expand_all),
        vec![(3, 1, 6, 4), (2, 2, 4, 3), (1, 3, 1, 2), (0, 4, 0, 1)]
    );
    assert_eq!(
        run(&g, &[1], Direction::Backward, None, expand_all),
        vec![(0, 1, 0, 1), (2, 2, 2, 0)],
        "the self-loop is not offered: 1 is visited"
    );
    assert!(run(&g, &[5], Direction::Forward, None, expand_all).is_empty());
    // Duplicate starts are one start.
    assert_eq!(
        run(&g, &[3, 3], Direction::Forward, None, expand_all).len(),
        1
    );
}

#[test]
fn depth_limits_and_start_depth() {
    let g = sample();
    assert!(run(&g, &[0], Direction::Forward, Some(0), expand_all).is_empty());
    assert_eq!(
        run(&g, &[0], Direction::Forward, Some(2), expand_all),
        vec![(1, 1, 0, 0), (2, 2, 1, 1)]
    );
    let mut out = Vec::new();
    g.walk(
        &[0],
        5,
        Direction::Forward,
        Some(7),
        &Cancel::new(),
        expand_all,
        |v| out.push((v.node, v.depth)),
    )
    .unwrap();
    assert_eq!(out, vec![(1, 6), (2, 7)]);
    // Depths never overflow.
    let mut out = Vec::new();
    g.walk(
        &[0],
        u32::MAX - 1,
        Direction::Forward,
        None,
        &Cancel::new(),
        expand_all,
        |v| out.push(v.node),
    )
    .unwrap();
    assert_eq!(out, vec![1]);
}

#[test]
fn skip_reach_and_expand() {
    let g = sample();
    // Reach stops at 2: neither 3 nor 4 is reported.
    let reach_2 = |_: u32, other: u32, _: u32| {
        if other == 2 {
            Admit::Reach
        } else {
            Admit::Expand
        }
    };
    assert_eq!(
        run(&g, &[0], Direction::Forward, None, reach_2),
        vec![(1, 1, 0, 0), (2, 2, 1, 1)]
    );
    // Skipping the first of two parallel edges: the node comes through the second.
    let skip_4 = |e: u32, _: u32, _: u32| if e == 4 { Admit::Skip } else { Admit::Expand };
    assert_eq!(
        run(&g, &[2], Direction::Forward, None, skip_4),
        vec![(0, 1, 2, 2), (3, 1, 5, 2), (1, 2, 0, 0), (4, 2, 6, 3)]
    );
    // A node skipped through one edge is reached later through another.
    let g = TraceGraph::from_edges(3, 1, &[(0, 2, 0), (0, 1, 0), (1, 2, 0)]).unwrap();
    let skip_0 = |e: u32, _: u32, _: u32| if e == 0 { Admit::Skip } else { Admit::Expand };
    assert_eq!(
        run(&g, &[0], Direction::Forward, None, skip_0),
        vec![(1, 1, 1, 0), (2, 2, 2, 1)]
    );
    let mut offered = Vec::new();
    run(&g, &[0], Direction::Forward, None, |e, o, d| {
        offered.push((e, o, d));
        Admit::Skip
    });
    assert_eq!(offered, vec![(0, 2, 1), (1, 1, 1)]);
}

#[test]
fn cancellation_and_bad_starts_are_errors() {
    let g = sample();
    let cancel = Cancel::new();
    let other = cancel.clone();
    other.cancel();
    assert!(cancel.is_cancelled());
    let r = g.walk(
        &[0],
        0,
        Direction::Forward,
        None,
        &cancel,
        expand_all,
        |_| {},
    );
    assert!(matches!(r, Err(EngineError::Cancelled)));
    let r = g.walk(
        &[6],
        0,
        Direction::Forward,
        None,
        &Cancel::new(),
        expand_all,
        |_| {},
    );
    assert!(matches!(r, Err(EngineError::StartOutOfRange { .. })));
}

#[test]
fn a_long_walk_sees_a_cancel_made_while_it_runs() {
    // A chain of 20,000 variables; cancel after the first thousand visits.
    let n = 20_000u32;
    let edges: Vec<_> = (0..n - 1).map(|i| (i, i + 1, 0)).collect();
    let g = TraceGraph::from_edges(n, 1, &edges).unwrap();
    let cancel = Cancel::new();
    let mut visits = 0;
    let r = g.walk(
        &[0],
        0,
        Direction::Forward,
        None,
        &cancel,
        expand_all,
        |_| {
            visits += 1;
            if visits == 1000 {
                cancel.cancel();
            }
        },
    );
    assert!(matches!(r, Err(EngineError::Cancelled)));
    assert!(visits < 1000 + CANCEL_CHECK_STEPS as usize + 1, "{visits}");
}

fn import_sample(dir: &std::path::Path) -> (Engine, TraceId, Counts) {
    let db = Engine::open(dir.join("db")).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/sample_export.json");
    let reports = db.import_paths(&[path], &ImportOptions::default(), &mut |_| {});
    let imported = reports.into_iter().next().unwrap().result.unwrap();
    let t = &imported[0];
    (db, t.trace, t.counts)
}

#[test]
fn the_loaded_graph_equals_the_adjacency_index() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t, counts) = import_sample(dir.path());
    let tv = db.trace_by_id(t).unwrap();
    let view = tv.store();
    let g = TraceGraph::load(view, t, &counts).unwrap();
    assert_eq!(
        (g.vars(), g.edge_count(), g.op_count()),
        (counts.variables, counts.edges, counts.ops)
    );
    assert!(counts.edges > 0);
    for v in 0..g.vars() {
        let out: Vec<_> = g
            .outgoing(v)
            .iter()
            .map(|&e| (e, g.target(e).unwrap(), g.op(e).unwrap()))
            .collect();
        assert_eq!(out, view.adjacent(t, v, true).unwrap(), "out of {v}");
        let inc: Vec<_> = g
            .incoming(v)
            .iter()
            .map(|&e| (e, g.source(e).unwrap(), g.op(e).unwrap()))
            .collect();
        assert_eq!(inc, view.adjacent(t, v, false).unwrap(), "into {v}");
    }
    for item in view.edges(t) {
        let (e, rec) = item.unwrap();
        assert_eq!(
            (g.source(e), g.target(e), g.op(e)),
            (Some(rec.source), Some(rec.target), Some(rec.op))
        );
        assert!(g.op_edges(rec.op).contains(&e));
    }
    for v in 0..g.vars() {
        let mut ancestors = Vec::new();
        g.walk(
            &[v],
            0,
            Direction::Backward,
            None,
            &Cancel::new(),
            expand_all,
            |visit| ancestors.push(visit.node),
        )
        .unwrap();
        assert_eq!(ancestors, tv.ancestors(v).unwrap(), "ancestors of {v}");
    }
}

#[test]
fn counts_that_disagree_with_the_index_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (db, t, counts) = import_sample(dir.path());
    let tv = db.trace_by_id(t).unwrap();
    for bad in [
        Counts {
            variables: 1,
            ..counts
        },
        Counts { ops: 1, ..counts },
        Counts {
            edges: counts.edges - 1,
            ..counts
        },
        Counts {
            edges: counts.edges + 1,
            ..counts
        },
    ] {
        let err = TraceGraph::load(tv.store(), t, &bad).unwrap_err();
        assert!(
            matches!(err, EngineError::Storage(StorageError::Decode { .. })),
            "{err}"
        );
    }
}

/// The reference: a plain breadth-first search with a visited set.
fn naive_bfs(
    edges: &[(u32, u32, u32)],
    start: u32,
    dir: Direction,
    max_depth: Option<u32>,
) -> Vec<(u32, u32, u32, u32)> {
    let mut seen = std::collections::HashSet::from([start]);
    let mut queue = VecDeque::from([(start, 0u32)]);
    let mut out = Vec::new();
    while let Some((node, depth)) = queue.pop_front() {
        if max_depth.is_some_and(|m| depth >= m) {
            continue;
        }
        for (e, &(s, t, _)) in edges.iter().enumerate() {
            let (from, to) = match dir {
                Direction::Forward => (s, t),
                Direction::Backward => (t, s),
            };
            if from == node && seen.insert(to) {
                out.push((to, depth + 1, e as u32, node));
                queue.push_back((to, depth + 1));
            }
        }
    }
    out
}

fn multigraph() -> impl Strategy<Value = (u32, Vec<(u32, u32, u32)>)> {
    (1u32..12).prop_flat_map(|vars| {
        (
            Just(vars),
            proptest::collection::vec((0..vars, 0..vars, 0u32..3), 0..40),
        )
    })
}

/// Traces of ops that each feed every input to every output, then a
/// few edges dropped and a few added at random.
fn op_traces() -> impl Strategy<Value = (u32, Vec<(u32, u32, u32)>)> {
    (2u32..16).prop_flat_map(|vars| {
        let op = (
            proptest::collection::vec(0..vars, 1..4),
            proptest::collection::vec(0..vars, 1..4),
        );
        (
            Just(vars),
            proptest::collection::vec(op, 1..10),
            proptest::collection::vec(any::<u16>(), 0..3),
            proptest::collection::vec((0..vars, 0..vars, 0u32..10), 0..3),
        )
            .prop_map(|(vars, ops, drop, add)| {
                let mut edges = Vec::new();
                for (o, (ins, outs)) in (0u32..).zip(&ops) {
                    for &i in ins {
                        edges.extend(outs.iter().map(|&t| (i, t, o)));
                    }
                }
                for d in drop {
                    if !edges.is_empty() {
                        edges.remove(d as usize % edges.len());
                    }
                }
                let ops = ops.len() as u32;
                edges.extend(add.into_iter().map(|(s, t, o)| (s, t, o % ops)));
                (vars, edges)
            })
    })
}

proptest! {
    #[test]
    fn sort_dedup_keeps_each_id_once_in_order(
        ids in proptest::collection::vec(0u32..20, 0..24)) {
        let mut want = ids.clone();
        want.sort_unstable();
        want.dedup();
        let mut got = ids;
        let kept = sort_dedup(&mut got);
        prop_assert_eq!(&got[..kept], &want[..]);
    }

    #[test]
    fn sort_distinct_sorts_near_and_far_ids_and_leaves_the_bitmap_clear(
        ids in proptest::collection::hash_set(0u32..4096, 0..200),
        spread in 1u32..64) {
        // Spread 1 keeps ids within a few words (the bitmap path);
        // larger spreads scatter them (the sort path).
        let mut ids: Vec<u32> = ids.into_iter().map(|i| i * spread % 4096).collect();
        ids.sort_unstable();
        ids.dedup();
        let want = ids.clone();
        ids.reverse();
        let mut bits = vec![0u64; 64];
        sort_distinct(&mut ids, &mut bits);
        prop_assert_eq!(ids, want);
        prop_assert!(bits.iter().all(|&w| w == 0));
    }

    #[test]
    fn a_row_read_as_a_window_keeps_what_its_slice_keeps(
        far in proptest::collection::vec(0u32..200, 0..12),
        bounds in (0usize..14, 0usize..14),
        marked in proptest::collection::vec(0u32..200, 0..20),
        held in 0usize..3,
    ) {
        // Rows anywhere in `far`, short and long, with and without room
        // for their window before the end, over a partly seen bitmap.
        let (a, b) = (bounds.0.min(bounds.1), bounds.0.max(bounds.1));
        // Four words for ids below 256, and the sink.
        let mut seen = vec![0u64, 0, 0, 0, u64::MAX];
        for &m in &marked {
            seen[m as usize / 64] |= 1 << (m % 64);
        }
        let (mut seen_w, mut out_w) = (seen.clone(), vec![7u32; held]);
        out_w.resize(held + WINDOW, 7);
        let kept_w = keep_row(&mut seen_w, &far, a, b, &mut out_w, held, 1);
        let (mut seen_s, mut out_s) = (seen, vec![7u32; held]);
        let kept_s = keep_unseen(&mut seen_s, far.get(a..b).unwrap_or(&[]), &mut out_s, held);
        prop_assert_eq!(kept_w, kept_s);
        prop_assert_eq!(&out_w[..kept_w], &out_s[..kept_s]);
        prop_assert_eq!(seen_w, seen_s);
    }

    #[test]
    fn sort_distinct_gives_a_shuffled_run_of_ids_back_in_order(
        lo in 0u32..4000, len in 1u32..96, gap in proptest::option::of(1u32..95),
        seed: u64) {
        // A run with no gap is every id of its span (answered without
        // sorting); one id missing is not, and is sorted.
        let mut want: Vec<u32> = (lo..lo + len).collect();
        if let Some(g) = gap.filter(|&g| g < len - 1) {
            want.remove(g as usize);
        }
        let mut ids = want.clone();
        let mut x = seed | 1;
        for i in (1..ids.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ids.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let mut bits = vec![0u64; 64];
        sort_distinct(&mut ids, &mut bits);
        prop_assert_eq!(ids, want);
        prop_assert!(bits.iter().all(|&w| w == 0));
    }

    #[test]
    fn a_walk_stopped_early_is_a_prefix_of_the_full_walk((vars, edges) in multigraph(),
                                                         start_pick: u32, stop in 0usize..12) {
        let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
        let start = start_pick % vars;
        let full = run(&g, &[start], Direction::Backward, None, expand_all);
        let mut some = Vec::new();
        g.walk_while(&[start], 0, Direction::Backward, None, &Cancel::new(), expand_all, |v| {
            some.push((v.node, v.depth, v.edge, v.parent));
            some.len() < stop
        })
        .unwrap();
        prop_assert_eq!(&some[..], &full[..stop.max(1).min(full.len())]);
    }

    #[test]
    fn reach_count_counts_what_the_walk_reports((vars, edges) in multigraph(), picks in proptest::collection::vec(any::<u32>(), 1..4),
                                                 forward: bool, min_depth in 0u32..4,
                                                 max_depth in proptest::option::of(0u32..6)) {
        let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
        let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
        let dir = if forward { Direction::Forward } else { Direction::Backward };
        let walked = run(&g, &starts, dir, max_depth, expand_all)
            .iter()
            .filter(|v| v.1 >= min_depth)
            .count() as u64;
        prop_assert_eq!(
            g.reach_count(&starts, dir, min_depth, max_depth, &Cancel::new()).unwrap(),
            walked
        );
    }

    #[test]
    fn a_count_over_the_stored_edges_equals_the_graph_s((vars, edges) in multigraph(), picks in proptest::collection::vec(any::<u32>(), 1..4),
                                                        forward: bool, narrow: bool, min_depth in 0u32..4,
                                                        max_depth in 0u32..6) {
        let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
        let stored = if narrow { g.adj.encode_narrow() } else { g.adj.encode() };
        let stored = StoredAdjacency::new(&stored).unwrap();
        let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
        let dir = if forward { Direction::Forward } else { Direction::Backward };
        let cancel = Cancel::new();
        prop_assert_eq!(
            reach_count_scanned(&stored, &starts, dir, min_depth, max_depth, &cancel).unwrap(),
            g.reach_count(&starts, dir, min_depth, Some(max_depth), &cancel).unwrap()
        );
    }

    #[test]
    fn walk_levels_crosses_every_edge_of_each_expanded_node_at_one_hop_more(
        (vars, edges) in multigraph(), start_pick: u32, forward: bool,
        max_depth in proptest::option::of(0u32..6)) {
        let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
        let start = start_pick % vars;
        let dir = if forward { Direction::Forward } else { Direction::Backward };
        // Expected: the start at 0 and each visit at its depth; every
        // node below max_depth gives all its edges at its depth + 1.
        let mut at = vec![(start, 0u32)];
        at.extend(run(&g, &[start], dir, max_depth, expand_all).iter().map(|v| (v.0, v.1)));
        let mut want: Vec<(u32, u32)> = Vec::new();
        for (n, d) in at {
            if max_depth.is_some_and(|m| d >= m) {
                continue;
            }
            let list = if forward { g.outgoing(n) } else { g.incoming(n) };
            want.extend(list.iter().map(|&e| (d + 1, e)));
        }
        let mut got: Vec<(u32, u32)> = Vec::new();
        g.walk_levels(&[start], dir, max_depth, &Cancel::new(), |d, es| {
            got.extend(es.iter().map(|&e| (d, e)));
            Ok(true)
        })
        .unwrap();
        want.sort_unstable();
        got.sort_unstable();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn walk_new_ops_hands_each_op_once_at_the_level_that_first_crosses_it(
        (vars, edges) in multigraph(), start_pick: u32, forward: bool,
        max_depth in proptest::option::of(0u32..6)) {
        let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
        let start = start_pick % vars;
        let dir = if forward { Direction::Forward } else { Direction::Backward };
        let mut want: Vec<(u32, u32)> = Vec::new();
        g.walk_levels(&[start], dir, max_depth, &Cancel::new(), |d, es| {
            for &e in es {
                let o = g.op(e).unwrap();
                if !want.iter().any(|w| w.1 == o) {
                    want.push((d, o));
                }
            }
            Ok(true)
        })
        .unwrap();
        // Same order too: level by level, by id within a level.
        want.sort_unstable();
        let mut got: Vec<(u32, u32)> = Vec::new();
        g.walk_new_ops(&[start], dir, max_depth, &Cancel::new(), |d, ops| {
            got.extend(ops.iter().map(|&o| (d, o)));
            Ok(true)
        })
        .unwrap();
        prop_assert_eq!(&got, &want);
        let mut by_vars: Vec<(u32, u32)> = Vec::new();
        g.new_ops_by_variables(&[start], dir, max_depth, &Cancel::new(), |d, ops| {
            by_vars.extend(ops.iter().map(|&o| (d, o)));
            Ok(true)
        })
        .unwrap();
        prop_assert_eq!(&by_vars, &want);
    }

    #[test]
    fn walk_new_ops_of_whole_and_cut_ops_matches_the_walk_of_variables(
        (vars, edges) in op_traces(), picks in proptest::collection::vec(any::<u32>(), 1..3),
        forward: bool, max_depth in proptest::option::of(0u32..6), stop_after in 1usize..5) {
        // Ops that feed each input to each output, with a few edges
        // dropped (ops cut into groups) or added: a graph of groups is
        // made for most, and its walk is the walk of the variables.
        let ops = edges.iter().map(|e| e.2 + 1).max().unwrap_or(0);
        let g = TraceGraph::from_edges(vars, ops, &edges).unwrap();
        let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
        let dir = if forward { Direction::Forward } else { Direction::Backward };
        prop_assume!(g.op_graph(dir).is_some());
        let walk = |by_vars: bool| {
            let (mut got, mut levels) = (Vec::new(), 0);
            let level = |d: u32, ops: &mut Vec<u32>| {
                got.extend(ops.iter().map(|&o| (d, o)));
                levels += usize::from(!ops.is_empty());
                Ok(levels < stop_after)
            };
            if by_vars {
                g.new_ops_by_variables(&starts, dir, max_depth, &Cancel::new(), level)
            } else {
                g.walk_new_ops(&starts, dir, max_depth, &Cancel::new(), level)
            }
            .unwrap();
            got
        };
        prop_assert_eq!(walk(false), walk(true));
    }

    #[test]
    fn walk_new_nodes_hands_the_walks_visits_in_its_order_a_level_at_a_time(
        (vars, edges) in multigraph(), picks in proptest::collection::vec(any::<u32>(), 1..3),
        forward: bool, max_depth in proptest::option::of(0u32..6), stop_after in 0usize..4) {
        let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
        let starts: Vec<u32> = picks.iter().map(|p| p % vars).collect();
        let dir = if forward { Direction::Forward } else { Direction::Backward };
        let want: Vec<(u32, u32, u32)> = run(&g, &starts, dir, max_depth, expand_all)
            .into_iter()
            .map(|(node, depth, edge, _)| (node, depth, edge))
            .collect();
        let mut got: Vec<(u32, u32, u32)> = Vec::new();
        g.walk_new_nodes(&starts, dir, max_depth, &Cancel::new(), |d, nodes, via| {
            assert_eq!(nodes.len(), via.len());
            got.extend(nodes.iter().zip(via).map(|(&n, &e)| (n, d, e)));
            Ok(true)
        })
        .unwrap();
        prop_assert_eq!(&got, &want);
        // A level answered false is the last handed out.
        let (mut levels, mut handed) = (0, Vec::new());
        g.walk_new_nodes(&starts, dir, max_depth, &Cancel::new(), |d, nodes, _| {
            levels += 1;
            handed.extend(nodes.iter().map(|&n| (n, d)));
            Ok(levels <= stop_after)
        })
        .unwrap();
        let upto: Vec<(u32, u32)> = want
            .iter()
            .filter(|w| w.1 as usize <= stop_after + 1)
            .map(|w| (w.0, w.1))
            .collect();
        prop_assert_eq!(handed, upto);
    }

    #[test]
    fn walk_equals_a_naive_bfs((vars, edges) in multigraph(), start_pick: u32,
                               forward: bool, max_depth in proptest::option::of(0u32..6)) {
        let g = TraceGraph::from_edges(vars, 3, &edges).unwrap();
        let start = start_pick % vars;
        let dir = if forward { Direction::Forward } else { Direction::Backward };
        prop_assert_eq!(
            run(&g, &[start], dir, max_depth, expand_all),
            naive_bfs(&edges, start, dir, max_depth)
        );
    }
}
