//! Tests of TRACE and FORWARD: held op levels, level rows, and walks run
//! as queries.

use std::cell::RefCell;

use memtrace_query::Value;
use memtrace_storage::TextTable;

use super::held::HeldLevels;
use crate::exec::batch::{Batch, Gather};
use crate::Engine;

/// Hands out what `held` holds over a table of ops `op0`, `op1`, ...
/// (`ops` of them) to a sink that wants `wanted` batches: the batches
/// it got, each as its rows' ids and depths, and what the hand-out
/// answered.
fn handed_out(
    held: &mut HeldLevels,
    ops: usize,
    wanted: usize,
) -> (Vec<Vec<(String, Value)>>, bool) {
    let mut table = TextTable::<3>::default();
    for i in 0..ops {
        assert!(table.push([Some(&format!("op{i}")), Some("n"), Some("k")]));
    }
    let mut got = Vec::new();
    let mut sink = |b: &Batch<'_>| {
        got.push(
            (0..b.len())
                .map(|i| {
                    let row = b.row(i).unwrap();
                    (b.str(i, 1).unwrap_or("").to_string(), row[4].clone())
                })
                .collect::<Vec<_>>(),
        );
        Ok(got.len() < wanted)
    };
    let out = RefCell::new(Gather::new(5, &mut sink));
    let (mut run, mut rest) = (Batch::ops("g", &table), Batch::ops("g", &table));
    let answer = held.hand_out(&mut run, &mut rest, &out).unwrap();
    drop(out);
    (got, answer)
}

#[test]
fn a_levels_rows_are_its_ops_texts_run_or_not_whatever_the_sink_left() {
    // Ops 0..30: with absent texts (every third without a name, op 7
    // without a kind), and with every text.
    for complete in [false, true] {
        let mut table = TextTable::<3>::default();
        for i in 0..30 {
            let name = (complete || i % 3 != 0).then(|| format!("name{i}"));
            let kind = (complete || i != 7).then_some("kind");
            assert!(table.push([Some(&format!("op{i}")), name.as_deref(), kind]));
        }
        rows_of_levels(&table);
    }
}

/// The rows [`super::rows::level_rows`] makes of several kinds of levels of
/// `table`'s ops are the ops' texts.
fn rows_of_levels(table: &TextTable<3>) {
    let expected = |o: u32, depth: u32| {
        let [id, name, kind] = table.get(o).unwrap_or([None; 3]);
        vec![
            Value::Str("g".into()),
            Value::Str(id.unwrap_or("").into()),
            name.map_or(Value::Null, |n| Value::Str(n.into())),
            kind.map_or(Value::Null, |k| Value::Str(k.into())),
            Value::Int(i64::from(depth)),
        ]
    };
    let levels: [Vec<u32>; 5] = [
        (0..20).collect(),  // a run
        vec![20, 22, 23],   // not a run
        vec![24],           // a run of one
        (28..33).collect(), // a run past the table: looked up one by one
        vec![5, 7, 40],     // not a run, one past the table
    ];
    let mut row = super::rows::op_row("g", [None; 3], 0);
    let mut got = Vec::new();
    for (depth, fresh) in (1..).zip(&levels) {
        // The sink takes every cell, leaving owned values and nulls
        // behind: the next row must not show them.
        let mut sink = |cells: &mut [crate::exec::value::Cell<'_>]| {
            got.push(cells.iter_mut().map(|c| c.take()).collect::<Vec<_>>());
            cells[1] = crate::exec::value::Cell::Value(Value::Str("left behind".into()));
            cells[2] = crate::exec::value::Cell::Value(Value::Int(7));
            Ok(true)
        };
        assert!(super::rows::level_rows(table, "g", fresh, depth, &mut row, &mut sink).unwrap());
    }
    let want: Vec<Vec<Value>> = (1..)
        .zip(&levels)
        .flat_map(|(d, fresh)| fresh.iter().map(move |&o| (o, d)))
        .map(|(o, d)| expected(o, d))
        .collect();
    assert_eq!(got, want);
    // A sink that wants no more stops the level there.
    let mut seen = 0;
    let mut stop = |_: &mut [crate::exec::value::Cell<'_>]| {
        seen += 1;
        Ok(seen < 3)
    };
    let all: Vec<u32> = (0..20).collect();
    assert!(!super::rows::level_rows(table, "g", &all, 1, &mut row, &mut stop).unwrap());
    assert_eq!(seen, 3);
}

fn ids(batch: &[(String, Value)]) -> Vec<&str> {
    batch.iter().map(|(id, _)| id.as_str()).collect()
}

#[test]
fn held_levels_go_out_in_the_order_walked_runs_as_batches_of_their_own() {
    let mut held = HeldLevels::default();
    held.push(1, &[40]);
    held.push(2, &(0..20).collect::<Vec<u32>>());
    // Too few for a run, and a gap: looked up one by one, gathered.
    held.push(3, &[20, 21]);
    held.push(4, &[22, 30, 31]);
    // A run past the labels (30 ops): looked up, ids empty.
    held.push(5, &(25..45).collect::<Vec<u32>>());
    assert_eq!(held.ops, 1 + 20 + 2 + 3 + 20);
    let (got, answer) = handed_out(&mut held, 30, usize::MAX);
    assert!(answer);
    assert_eq!(got.len(), 3, "{got:?}");
    // Op 40 is past the labels: its id is empty.
    assert_eq!(ids(&got[0]), [""]);
    assert_eq!(got[0][0].1, Value::Int(1));
    let run: Vec<String> = (0..20).map(|i| format!("op{i}")).collect();
    assert_eq!(ids(&got[1]), run);
    assert!(got[1].iter().all(|(_, d)| *d == Value::Int(2)));
    let rest = &got[2];
    assert_eq!(ids(&rest[..5]), ["op20", "op21", "op22", "", ""]);
    let depths: Vec<&Value> = rest.iter().map(|(_, d)| d).collect();
    assert_eq!(
        depths[..6],
        [
            &Value::Int(3),
            &Value::Int(3),
            &Value::Int(4),
            &Value::Int(4),
            &Value::Int(4),
            &Value::Int(5)
        ]
    );
    assert_eq!(rest.len(), 2 + 3 + 20);
    assert_eq!(ids(&rest[5..10]), ["op25", "op26", "op27", "op28", "op29"]);
    assert!(rest[10..].iter().all(|(id, _)| id.is_empty()));
    // Handed out, the levels are forgotten.
    assert_eq!((held.levels.len(), held.lone.len(), held.ops), (0, 0, 0));
    assert_eq!(handed_out(&mut held, 30, usize::MAX), (Vec::new(), true));
}

#[test]
fn a_sink_that_wants_no_more_stops_the_hand_out() {
    let mut held = HeldLevels::default();
    held.push(1, &(0..16).collect::<Vec<u32>>());
    held.push(2, &(16..32).collect::<Vec<u32>>());
    held.push(3, &[40]);
    let (got, answer) = handed_out(&mut held, 50, 1);
    assert!(!answer);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].len(), 16);
}

/// A database of one trace: variables `v:<name>` at their versions,
/// ops of kind `k`, and edges (id, op, source, target), whose ends are
/// `<name>@<version>`.
fn trace_of(
    nodes: &[(&str, u32)],
    ops: &[&str],
    edges: &[(&str, &str, &str, &str)],
) -> (tempfile::TempDir, Engine) {
    let node = |(n, v): &(&str, u32)| {
        format!(
            r#"{{"name": "{n}", "class_name": "v", "version": {v}, "value": "'{n}'", "session_id": "s"}}"#
        )
    };
    let op = |o: &&str| {
        format!(r#"{{"op_id": "{o}", "op_name": "{o}", "category": "k", "session_id": "s"}}"#)
    };
    let edge = |(id, o, a, b): &(&str, &str, &str, &str)| {
        format!(
            r#"{{"edge_id": "{id}", "op_id": "{o}", "session_id": "s",
                "source_full_node_id": "v:{a}", "target_full_node_id": "v:{b}"}}"#
        )
    };
    let list = |items: Vec<String>| items.join(",");
    let text = format!(
        r#"{{"graph_id": "g", "user_id": "u", "project_id": "p", "data": {{
            "sessions": [{{"session_id": "s", "session_name": "s"}}],
            "operations": [{}],
            "nodes": [{}],
            "edges": [{}]}}}}"#,
        list(ops.iter().map(op).collect()),
        list(nodes.iter().map(node).collect()),
        list(edges.iter().map(edge).collect()),
    );
    crate::exec::test_db(&text)
}

/// a -> b -> c -> a (ops ab, bc, ca), and x -> a (op xa).
fn cycle() -> (tempfile::TempDir, Engine) {
    trace_of(
        &[("a", 1), ("b", 1), ("c", 1), ("x", 1)],
        &["ab", "bc", "ca", "xa"],
        &[
            ("e1", "ab", "a@1", "b@1"),
            ("e2", "bc", "b@1", "c@1"),
            ("e3", "ca", "c@1", "a@1"),
            ("e4", "xa", "x@1", "a@1"),
        ],
    )
}

/// v:a at versions 1, 2 and 10, v:a@x (a name with `@`) at 3, and v:b:
/// a@1 -> a@2 -> a@10 -> b, a@x@3 -> b.
fn versions() -> (tempfile::TempDir, Engine) {
    trace_of(
        &[("a", 1), ("a", 2), ("a", 10), ("a@x", 3), ("b", 1)],
        &["o1", "o2", "o3", "o4"],
        &[
            ("e1", "o1", "a@1", "a@2"),
            ("e2", "o2", "a@2", "a@10"),
            ("e3", "o3", "a@10", "b@1"),
            ("e4", "o4", "a@x@3", "b@1"),
        ],
    )
}

#[test]
fn a_trace_s_head_finds_starts_as_the_name_index_does() {
    let (dir, db) = versions();
    drop(db);
    let path = dir.path().join("t.db");
    let refs = [
        "'v:a@1'",
        "'v:a@2'",
        "'v:a@10'",
        "'v:a@01'",
        "'v:a'",
        "'v:a@x'",
        "'v:a@x@3'",
        "'v:b'",
        "'v:b@2'",
        "'v:zz'",
        "'o4'",
        "v:a",
        "v:b@1",
    ];
    let mut answered = 0;
    for r in refs {
        for tail in ["DEPTH 2 RETURN count", "RETURN nodes", "RETURN ops"] {
            // A new handle each time: nothing of the trace is cached,
            // so the scoped query reads the trace's head.
            let fresh = Engine::open_read_only(&path).unwrap();
            let scoped = fresh.query(&format!("TRACE {r} IN TRACE '#1' {tail}"));
            let fresh = Engine::open_read_only(&path).unwrap();
            let indexed = fresh.query(&format!("TRACE {r} {tail}"));
            match (scoped, indexed) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a.rows, b.rows, "{r} {tail}");
                    answered += 1;
                }
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{r} {tail}: {a:?} against {b:?}"),
            }
        }
    }
    // The unknown version and name fail on both sides; the rest answer.
    assert_eq!(answered, 3 * (refs.len() - 2));
    // The head was what the scoped query read, and the walk of one hop
    // scanned its edges: the head is cached, no graph was built.
    let fresh = Engine::open_read_only(&path).unwrap();
    let q = "TRACE 'v:b' IN TRACE '#1' DEPTH 1 RETURN count";
    let n = fresh.query(q).unwrap();
    assert_eq!(n.rows[0][1].as_i64(), Some(2));
    assert_eq!(fresh.cache_stats().entries, 1);
    // Walked again, the trace's graph is built, from the cached head:
    // the cache misses only the graph.
    let before = fresh.cache_stats();
    assert_eq!(fresh.query(q).unwrap().rows, n.rows);
    let after = fresh.cache_stats();
    assert_eq!(after.entries, 2);
    assert_eq!(after.misses - before.misses, 1);
}

fn ops(db: &Engine, q: &str) -> Vec<(String, i64)> {
    db.query(q)
        .unwrap()
        .rows
        .iter()
        .map(|r| (r[1].as_str().unwrap().to_string(), r[4].as_i64().unwrap()))
        .collect()
}

#[test]
fn returned_ops_and_edges_stop_where_the_walk_stops() {
    let (_d, db) = cycle();
    // Backward from c: b (1, op bc), a (2, op ab), then x (3, op xa); the
    // edge c -> a (op ca) is walked from a, one hop past a: depth 3, not
    // the depth of its input c (the start, 0).
    assert_eq!(
        ops(&db, "TRACE v:c RETURN ops"),
        [
            ("bc".into(), 1),
            ("ab".into(), 2),
            ("ca".into(), 3),
            ("xa".into(), 3)
        ]
    );
    // DEPTH 2 does not expand a, so neither ca nor xa is crossed.
    assert_eq!(
        ops(&db, "TRACE v:c DEPTH 2 RETURN ops"),
        [("bc".into(), 1), ("ab".into(), 2)]
    );
    // An UNTIL stop is returned, its inputs are not: no edge c -> a.
    let r = db
        .query("TRACE v:c UNTIL var.name = 'a' RETURN edges")
        .unwrap();
    let ids: Vec<&str> = r.rows.iter().map(|r| r[1].as_str().unwrap()).collect();
    assert_eq!(ids, ["e1", "e2"]);
    // DEPTH 0 crosses nothing.
    assert!(db
        .query("TRACE v:c DEPTH 0 RETURN edges")
        .unwrap()
        .rows
        .is_empty());
}

#[test]
fn rows_handed_out_while_walking_are_those_of_the_full_walk() {
    let (_d, db) = cycle();
    let rows = |q: &str| db.query(q).unwrap().rows;
    for base in [
        "TRACE v:c RETURN nodes",
        "FORWARD v:x RETURN nodes",
        "TRACE v:c WHERE var.name != 'b' RETURN nodes",
        "TRACE v:c DEPTH 2..3 RETURN nodes",
    ] {
        let all = rows(base);
        for n in 0..=all.len() + 1 {
            let some = rows(&format!("{base} LIMIT {n}"));
            assert_eq!(some[..], all[..n.min(all.len())], "{base} LIMIT {n}");
        }
    }
    let names = |q: &str| -> Vec<String> {
        rows(q)
            .iter()
            .map(|r| r[1].as_str().unwrap().to_string())
            .collect()
    };
    // Breadth-first from c: b, a, then x (the start is never a row).
    assert_eq!(names("TRACE v:c RETURN nodes"), ["v:b@1", "v:a@1", "v:x@1"]);
    assert_eq!(
        names("TRACE v:c WHERE var.name != 'b' RETURN nodes"),
        ["v:a@1", "v:x@1"]
    );
    let count = |q: &str| rows(q)[0][1].as_i64().unwrap();
    assert_eq!(count("TRACE v:c RETURN count"), 3);
    assert_eq!(count("TRACE v:c DEPTH 2..3 RETURN count"), 2);
    assert_eq!(count("TRACE v:c DEPTH 1 RETURN count"), 1);
}
