//! Queries: collected, streamed, lent and batched rows, cancellation, typed errors, graphs.

use super::*;

#[test]
fn query_rows_stream_and_the_sink_can_stop_them() {
    let (_dir, db) = db();
    import(&db, &chain(500)).unwrap();
    let all = db.query("TRACE v:499 RETURN nodes").unwrap();
    assert_eq!(all.rows.len(), 499);
    assert_eq!(all.rows[0][1], "v:498@1");
    assert_eq!(all.rows[498][3], 499);
    let mut seen = Vec::new();
    let cols = db
        .engine()
        .query_stream(
            "TRACE v:499 RETURN nodes",
            &memtrace::Params::new(),
            &memtrace::Cancel::new(),
            &mut |row| {
                seen.push(row);
                Ok(seen.len() < 3)
            },
        )
        .unwrap();
    assert_eq!(cols[1], "node");
    assert_eq!(seen.len(), 3, "the sink's false stops the rows");
    let limited = db.query("TRACE v:499 RETURN nodes LIMIT 7").unwrap();
    assert_eq!(limited.rows.len(), 7);
}

/// A statement's rows read through `query_each`, each cell as JSON.
fn lent_rows(db: &Database, q: &str) -> Vec<Vec<Value>> {
    let mut rows = Vec::new();
    db.query_each(
        q,
        &memtrace::Params::new(),
        &memtrace::Cancel::new(),
        &mut |row| {
            rows.push(
                row.iter()
                    .map(|c| memtrace::engine::to_json(&c.to_value()))
                    .collect(),
            );
            Ok(true)
        },
    )
    .unwrap();
    rows
}

#[test]
fn lent_rows_are_the_collected_rows() {
    let (_dir, db) = db();
    import(&db, SAMPLE).unwrap();
    import(&db, &chain(300)).unwrap();
    for q in [
        "TRACE v:299 RETURN nodes",
        "TRACE v:299 RETURN ops",
        "TRACE v:299 DEPTH 4 RETURN ops",
        "TRACE v:299 RETURN ops LIMIT 5",
        "TRACE v:299 WHERE op.name = 'step' RETURN ops",
        "TRACE v:299 WHERE var.name CONTAINS '9' RETURN nodes",
        "TRACE v:299 RETURN edges",
        "TRACE v:299 RETURN paths LIMIT 3",
        "TRACE v:299 UNTIL var.name = '250' RETURN ops",
        "FORWARD v:0 DEPTH 3 RETURN nodes",
        "TRACE 'llm_output:str:23bdc09b3c7ac90ce55630f1b5ea7181c74a6e2c@1' RETURN ops",
        "TRACE 'llm_output:str:23bdc09b3c7ac90ce55630f1b5ea7181c74a6e2c@1' RETURN nodes",
        "FIND ops WHERE op.name = 'step' LIMIT 4",
        "FIND vars GROUP BY var.class RETURN var.class, count(*)",
        "MATCH (a:v)-[:update]->(b:v) RETURN a, b LIMIT 3",
        "SHOW TRACES",
    ] {
        let collected = db.query(q).unwrap().rows;
        assert!(!collected.is_empty(), "{q}");
        assert_eq!(lent_rows(&db, q), collected, "{q}");
    }
    // Ops rows lend their text: the op id, name and kind as the trace has them.
    let mut first = None;
    db.query_each(
        "TRACE v:299 RETURN ops LIMIT 1",
        &memtrace::Params::new(),
        &memtrace::Cancel::new(),
        &mut |row| {
            first = Some((
                row[1].as_str().map(str::to_string),
                row[2].as_str().map(str::to_string),
                row[3].as_str().map(str::to_string),
                row[4].as_i64(),
            ));
            Ok(true)
        },
    )
    .unwrap();
    assert_eq!(
        first,
        Some((
            Some("op299".into()),
            Some("step".into()),
            Some("update".into()),
            Some(1)
        ))
    );
}

/// A statement's rows read through `query_batches`, each cell as JSON,
/// with the number of rows of each batch and whether its second column
/// was text lent from the trace.
fn batched_rows(db: &Database, q: &str) -> (Vec<Vec<Value>>, Vec<(usize, bool)>) {
    let mut rows = Vec::new();
    let mut batches = Vec::new();
    db.query_batches(
        q,
        &memtrace::Params::new(),
        &memtrace::Cancel::new(),
        &mut |b| {
            assert!(!b.is_empty(), "{q}: an empty batch");
            for i in 0..b.len() {
                rows.push(
                    b.row(i)
                        .unwrap()
                        .iter()
                        .map(memtrace::engine::to_json)
                        .collect(),
                );
            }
            let lent = matches!(b.columns().get(1), Some(memtrace::Column::Text(_)));
            batches.push((b.len(), lent));
            Ok(true)
        },
    )
    .unwrap();
    (rows, batches)
}

#[test]
fn batched_rows_are_the_collected_rows() {
    let (_dir, db) = db();
    import(&db, SAMPLE).unwrap();
    import(&db, &chain(3000)).unwrap();
    let ops_of_sample =
        "TRACE 'llm_output:str:23bdc09b3c7ac90ce55630f1b5ea7181c74a6e2c@1' RETURN ops";
    for q in [
        "TRACE v:2999 RETURN nodes",
        "TRACE v:2999 DEPTH 2..1500 RETURN nodes",
        "TRACE v:2999 RETURN nodes LIMIT 5",
        "FORWARD v:0 DEPTH 3 RETURN nodes",
        "TRACE v:2999 WHERE var.name CONTAINS '9' RETURN nodes",
        "TRACE 'llm_output:str:23bdc09b3c7ac90ce55630f1b5ea7181c74a6e2c@1' RETURN nodes",
        "TRACE v:2999 RETURN ops",
        "TRACE v:2999 DEPTH 4 RETURN ops",
        "TRACE v:2999 RETURN ops LIMIT 5",
        "TRACE v:2999 WHERE op.name = 'step' RETURN ops",
        "TRACE v:2999 RETURN count",
        "TRACE v:2999 UNTIL var.name = '2500' RETURN ops",
        "FORWARD v:0 DEPTH 3 RETURN ops",
        ops_of_sample,
        "FIND ops WHERE op.name = 'step' LIMIT 4",
        "FIND vars GROUP BY var.class RETURN var.class, count(*)",
        "SHOW TRACES",
    ] {
        let collected = db.query(q).unwrap().rows;
        assert!(!collected.is_empty(), "{q}");
        let (rows, batches) = batched_rows(&db, q);
        assert_eq!(rows, collected, "{q}");
        // A plain walk's ops and nodes are lent from the trace's labels;
        // any other statement gathers owned rows, a thousand and more to a
        // batch.
        let plain = (q.ends_with("RETURN ops") || q.ends_with("RETURN nodes"))
            && !q.contains("WHERE")
            && !q.contains("UNTIL");
        if plain {
            assert!(batches.iter().all(|&(_, lent)| lent), "{q}: {batches:?}");
        } else {
            assert!(batches.iter().all(|&(_, lent)| !lent), "{q}: {batches:?}");
            let (last, full) = batches.split_last().unwrap();
            assert!(full.iter().all(|&(n, _)| n >= 1000), "{q}: {batches:?}");
            assert!(last.0 >= 1, "{q}");
        }
    }
    // The chain's ops are one to a level: gathered, many levels to a
    // batch. The fan's levels of 40 ops recorded one after the other are
    // a batch each.
    let (_, chain_ops) = batched_rows(&db, "TRACE v:2999 RETURN ops");
    assert_eq!(chain_ops, [(1024, true), (1024, true), (951, true)]);
    import(&db, &fan(6, 40)).unwrap();
    let fan_ops = "TRACE x:top RETURN ops";
    let (rows, fan_batches) = batched_rows(&db, fan_ops);
    assert_eq!(rows, db.query(fan_ops).unwrap().rows);
    let mut sizes = vec![40; 5];
    sizes.insert(0, 1);
    assert_eq!(
        fan_batches,
        sizes.into_iter().map(|n| (n, true)).collect::<Vec<_>>()
    );
    let (nodes, batches) = batched_rows(&db, "TRACE v:2999 RETURN nodes");
    assert_eq!(nodes.len(), 2999);
    assert_eq!(batches, [(1024, true), (1024, true), (951, true)]);
    let fan_nodes = "TRACE x:top DEPTH 3 RETURN nodes";
    assert_eq!(
        batched_rows(&db, fan_nodes).0,
        db.query(fan_nodes).unwrap().rows
    );
}

#[test]
fn ops_rows_lent_to_a_closure_or_through_a_pointer_are_the_general_walks() {
    // Levels of 40 ops recorded one after the other between levels of one
    // op. A closure is compiled into the walk, a `CellSink` is called
    // through its pointer, and an UNTIL that never holds takes the general
    // walk, which gathers every visit first: all three give the same rows.
    let (_dir, db) = db();
    let widths: Vec<usize> = (0..60).map(|i| if i % 3 == 0 { 1 } else { 40 }).collect();
    import(&db, &layers(&widths)).unwrap();
    for (plain, general) in [
        (
            "TRACE x:top RETURN ops",
            "TRACE x:top UNTIL var.name = 'none' RETURN ops",
        ),
        (
            "TRACE x:top DEPTH 7 RETURN ops",
            "TRACE x:top DEPTH 7 UNTIL var.name = 'none' RETURN ops",
        ),
        (
            "TRACE x:top RETURN nodes",
            "TRACE x:top UNTIL var.name = 'none' RETURN nodes",
        ),
    ] {
        let closure = lent_rows(&db, plain);
        assert!(closure.len() > 40, "{plain}");
        let mut through_pointer: Vec<Vec<Value>> = Vec::new();
        let sink: &mut memtrace::engine::CellSink<'_> = &mut |row| {
            through_pointer.push(
                row.iter()
                    .map(|c| memtrace::engine::to_json(&c.to_value()))
                    .collect(),
            );
            Ok(true)
        };
        db.query_each(
            plain,
            &memtrace::Params::new(),
            &memtrace::Cancel::new(),
            sink,
        )
        .unwrap();
        assert_eq!(closure, through_pointer, "{plain}");
        assert_eq!(closure, lent_rows(&db, general), "{plain}");
        assert_eq!(closure, db.query(plain).unwrap().rows, "{plain}");
    }
}

#[test]
fn a_walk_of_more_ops_than_it_holds_hands_out_every_level_in_order() {
    // Levels of 40 ops recorded one after the other (a batch each) between
    // levels of one op (gathered), 16,811 ops in all: more than a walk
    // finds before it hands them out.
    let (_dir, db) = db();
    let widths: Vec<usize> = (0..821).map(|i| if i % 2 == 0 { 40 } else { 1 }).collect();
    import(&db, &layers(&widths)).unwrap();
    let q = "TRACE x:top RETURN ops";
    let collected = db.query(q).unwrap().rows;
    assert_eq!(collected.len(), widths[1..].iter().sum::<usize>() + 1);
    let (rows, batches) = batched_rows(&db, q);
    assert_eq!(rows, collected);
    assert!(batches.iter().all(|&(_, lent)| lent), "{batches:?}");
    let runs = batches.iter().filter(|&&(n, _)| n == 40).count();
    assert_eq!(runs, widths[1..].iter().filter(|&&w| w == 40).count());
    // A sink that stops at its first batch gets no second.
    let mut calls = 0;
    db.query_batches(
        q,
        &memtrace::Params::new(),
        &memtrace::Cancel::new(),
        &mut |_| {
            calls += 1;
            Ok(false)
        },
    )
    .unwrap();
    assert_eq!(calls, 1);
}

#[test]
fn a_batch_sink_that_wants_no_more_gets_no_more() {
    let (_dir, db) = db();
    import(&db, &chain(3000)).unwrap();
    for q in ["TRACE v:2999 RETURN ops", "TRACE v:2999 RETURN nodes"] {
        let mut calls = 0;
        let mut first = None;
        let cols = db
            .query_batches(
                q,
                &memtrace::Params::new(),
                &memtrace::Cancel::new(),
                &mut |b| {
                    calls += 1;
                    first = b.str(0, 1).map(str::to_string);
                    Ok(false)
                },
            )
            .unwrap();
        assert_eq!(calls, 1, "{q}");
        assert_eq!(
            first.as_deref(),
            Some(if q.ends_with("ops") {
                "op2999"
            } else {
                "v:2998@1"
            })
        );
        assert_eq!(cols[1], if q.ends_with("ops") { "op_id" } else { "node" });
    }
    // Errors are the row API's errors.
    let err = db
        .query_batches(
            "TRACE v:nope RETURN ops",
            &memtrace::Params::new(),
            &memtrace::Cancel::new(),
            &mut |_| Ok(true),
        )
        .unwrap_err();
    assert!(err.to_string().contains("v:nope"), "{err}");
}

#[test]
fn a_cancelled_query_stops_with_cancelled_and_the_database_goes_on() {
    let (_dir, db) = db();
    import(&db, &chain(20_000)).unwrap();
    let cancel = memtrace::Cancel::new();
    let c2 = cancel.clone();
    // Cancel from another thread as soon as the first row arrives.
    let mut first = true;
    let err = db
        .engine()
        .query_stream(
            "MATCH (a:v)-[*]->(b:v) RETURN a, b",
            &memtrace::Params::new(),
            &cancel,
            &mut |_| {
                if first {
                    first = false;
                    let c = c2.clone();
                    std::thread::spawn(move || c.cancel()).join().unwrap();
                }
                Ok(true)
            },
        )
        .unwrap_err();
    assert!(matches!(err, EngineError::Cancelled), "{err}");
    let pre = memtrace::Cancel::new();
    pre.cancel();
    let err = db
        .query_with("FIND vars", &memtrace::Params::new(), &pre)
        .unwrap_err();
    assert!(matches!(err, EngineError::Cancelled), "{err}");
    assert_eq!(
        db.query("TRACE v:19999 RETURN count").unwrap().rows[0][1],
        19_999
    );
}

#[test]
fn query_errors_are_typed() {
    let (_dir, db) = db();
    import(&db, SAMPLE).unwrap();
    assert!(matches!(
        db.query("TRACE answer:42 UNTILL x").unwrap_err(),
        EngineError::Query(memtrace_query_error) if memtrace_query_error.to_string().contains("did you mean UNTIL?")
    ));
    assert!(matches!(
        db.query(&format!("TRACE answer:42 IN TRACE '{GRAPH}'"))
            .unwrap_err(),
        EngineError::UnknownNode { .. }
    ));
    assert!(matches!(
        db.query("TRACE answer:42 IN TRACE 'nope'").unwrap_err(),
        EngineError::UnknownTrace(_)
    ));
    let r = db
        .query(&format!("FORWARD '{ANSWER}' RETURN count"))
        .unwrap();
    assert_eq!(r.rows, vec![vec![json!(GRAPH), json!(0)]]);
}

#[test]
fn provenance_comes_out_as_a_petgraph_graph() {
    use memtrace::engine::petgraph::algo::dominators::simple_fast;
    use memtrace::engine::petgraph::algo::{astar, tarjan_scc, toposort};
    use memtrace::engine::petgraph::visit::Reversed;
    use memtrace::Params;

    let (_d, db) = db();
    import(&db, SAMPLE).unwrap();
    let q = format!("TRACE '{ANSWER}'");
    let g = db
        .query_graph(&q, &Params::new(), &memtrace::GraphOptions::default())
        .unwrap();
    // The same nodes and edges as RETURN subgraph gives.
    let rows = db.query(&format!("{q} RETURN subgraph")).unwrap().rows;
    let count = |k: &str| rows.iter().filter(|r| r[1] == k).count();
    assert_eq!(g.graph.node_count(), count("node"));
    assert_eq!(g.graph.edge_count(), count("edge"));
    // Eight of the sample's nine variables feed the answer.
    assert_eq!((g.graph.node_count(), g.graph.edge_count()), (8, 8));
    let node = |id: &str| g.node(GRAPH, id).unwrap_or_else(|| panic!("{id}"));
    let answer = node(ANSWER);
    assert_eq!(g.starts(), [answer]);
    // Weights are the stored records.
    let prompt = node("prompt:str:3f054e1126c996b7d7b3a51f8b508abce3d7333c@1");
    let llm = node("llm_output:str:23bdc09b3c7ac90ce55630f1b5ea7181c74a6e2c@1");
    let store2 = node("memory_store@2");
    assert_eq!(
        g.graph[prompt].variable.class_name.as_deref(),
        Some("prompt")
    );
    let e = g.graph.find_edge(prompt, llm).unwrap();
    assert_eq!(g.graph[e].op.op_id, "op-4ec49f11e6534123aff61b3ea3a0e196");
    assert_eq!(g.graph[e].graph_id, GRAPH);
    // Parallel edges stay: memory_store@2 reaches the answer twice.
    assert_eq!(g.graph.edges_connecting(store2, answer).count(), 2);
    // petgraph's algorithms on provenance: the prompt reaches the answer
    // only through the LLM output, which reaches it only through the store.
    let dom = simple_fast(Reversed(&g.graph), answer);
    assert_eq!(dom.immediate_dominator(prompt), Some(llm));
    assert_eq!(dom.immediate_dominator(llm), Some(store2));
    assert_eq!(dom.immediate_dominator(store2), Some(answer));
    let order = toposort(&g.graph, None).unwrap();
    assert_eq!(order.last(), Some(&answer));
    assert_eq!(tarjan_scc(&g.graph).len(), g.graph.node_count());
    let (hops, path) = astar(&g.graph, prompt, |n| n == answer, |_| 1, |_| 0).unwrap();
    assert_eq!(hops, 3);
    assert_eq!(path, [prompt, llm, store2, answer]);
    // FORWARD from the prompt: what it fed, as far as the answer.
    let f = db
        .query_graph(
            "FORWARD 'prompt:str:3f054e1126c996b7d7b3a51f8b508abce3d7333c@1'",
            &Params::new(),
            &memtrace::GraphOptions::default(),
        )
        .unwrap();
    assert_eq!(f.graph.node_count(), 4);
    // MATCH: every binding, with the path of a variable-length step.
    let m = db
        .query_graph(
            "MATCH (p:prompt)-[*1..5]->(a) WHERE a.full_name = 'str:663d79858dc5e938f2b614b6b560fc10a2aeeb24' RETURN p, a",
            &Params::new(), &memtrace::GraphOptions::default()
        )
        .unwrap();
    assert_eq!(m.graph.node_count(), 4);
    assert_eq!(m.graph.edge_count(), 3);
    // A statement that makes no graph is refused by name.
    let err = db
        .query_graph(
            "FIND vars",
            &Params::new(),
            &memtrace::GraphOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("FIND gives rows only"), "{err}");
}

/// `RETURN ops` walks the ops as a graph of their own when the walk is
/// plain; an `UNTIL` that never holds takes the general walk over the
/// variables' visits. On traces recorded by someone else (ops cut into
/// groups, variables written by many ops), both give the same rows, from
/// every variable, both ways, whole and bounded.
#[test]
fn ops_of_the_ops_graph_are_the_ops_of_the_general_walk_on_recorded_traces() {
    let (_dir, db) = db();
    for system in ["long_context", "rag", "mem0", "evermemos"] {
        let path = format!(
            "{}/tests/fixtures/devsplit/{system}-locomo_1.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        import(&db, &text).unwrap();
    }
    let vars = db.query("FIND vars").unwrap().rows;
    assert!(vars.len() > 1500, "{} variables", vars.len());
    let (mut compared, mut with_ops) = (0, 0);
    for row in &vars {
        let (Some(trace), Some(node)) = (row[0].as_str(), row[1].as_str()) else {
            panic!("a variable row without a trace and a node: {row:?}");
        };
        let node = node.replace('\'', "''");
        for walk in ["TRACE", "FORWARD"] {
            for depth in ["", "DEPTH 2 "] {
                let head = format!("{walk} '{node}' IN TRACE '{trace}' {depth}");
                let plain = db.query(&format!("{head}RETURN ops")).unwrap().rows;
                let general = db
                    .query(&format!("{head}UNTIL var.name = '\u{1}' RETURN ops"))
                    .unwrap()
                    .rows;
                assert!(
                    plain == general,
                    "{head}: {} rows, the general walk's {}",
                    plain.len(),
                    general.len()
                );
                compared += 1;
                with_ops += usize::from(!plain.is_empty());
            }
        }
    }
    assert!(
        with_ops > compared / 3,
        "{with_ops} of {compared} walks found ops"
    );
}
