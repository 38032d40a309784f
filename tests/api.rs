//! End-to-end tests of the embedding API (`memtrace::Database`).

use memtrace::prelude::*;
use memtrace::{Database, EngineError, ExportFormat, ImportOptions, InputFormat, Node};
use serde_json::{json, Value};

const SAMPLE: &str = include_str!("fixtures/sample_export.json");
const GRAPH: &str = "graph-e02a1f3b041740d5b82569831ef2d06e";
const ANSWER: &str = "str:663d79858dc5e938f2b614b6b560fc10a2aeeb24@1";

fn db() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("api.db")).unwrap();
    (dir, db)
}

fn import(db: &Database, text: &str) -> memtrace::Result<Vec<memtrace::ImportedTrace>> {
    db.import_reader(
        text.as_bytes(),
        InputFormat::Json,
        "test",
        &ImportOptions::default(),
    )
}

fn with_annotations() -> Value {
    let mut doc: Value = serde_json::from_str(SAMPLE).unwrap();
    doc["graph_id"] = json!("bench-case-1");
    doc["data"]["annotations"] = json!([{
        "query_id": "str:05e8691f5383ac46bd377f51116e408b07624d1e@1",
        "query": "What does the user like?",
        "golden_answers": ["graph databases"],
        "prediction": "The user likes graphs.",
        "source_evidence_ids": ["str:f13d2a37b4c41c580bdcb236d3ab10516026af14@1"],
        "final_error_type": "ExtractionError",
        "final_op_id": "op-4ec49f11e6534123aff61b3ea3a0e196"
    }]);
    doc
}

#[test]
fn typed_access_to_variables_ops_edges() {
    let (_d, db) = db();
    let t = import(&db, SAMPLE).unwrap();
    assert_eq!(t[0].counts.variables, 9);
    let view = db.trace(GRAPH).unwrap();
    assert_eq!(view.variables().unwrap().len(), 9);
    let versions = view.variable_versions("memory_store").unwrap();
    assert_eq!(
        versions.iter().map(|v| v.version).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert_eq!(
        versions[1].value.as_deref(),
        Some("['m0: user is a developer', 'FACT: user likes graphs']")
    );
    assert_eq!(
        view.latest("memory_store").unwrap().unwrap().full_node_id,
        "memory_store@2"
    );
    let answer = view.variable(ANSWER).unwrap().unwrap();
    assert_eq!(answer.category.as_deref(), Some("answer"));
    assert_eq!(answer.metadata, json!({"k": 1, "run_id": "demo-run-1"}));
    // Four edges enter the answer; two of them from memory_store@2 through different ops.
    let incoming = view.edges_in(&answer).unwrap();
    assert_eq!(incoming.len(), 4);
    let from_memory: Vec<_> = incoming
        .iter()
        .filter(|e| e.source_full_node_id == "memory_store@2")
        .map(|e| e.op_id.as_str())
        .collect();
    assert_eq!(
        from_memory,
        vec!["op-97c7dc92567a4ea689633a1a6505c5ca", "__none_op__"]
    );
    assert!(view.edges_out(&answer).unwrap().is_empty());
    let llm_output = view
        .latest("llm_output:str:23bdc09b3c7ac90ce55630f1b5ea7181c74a6e2c")
        .unwrap()
        .unwrap();
    assert_eq!(
        view.edges_out(&llm_output).unwrap()[0].target_full_node_id,
        "memory_store@2"
    );
    let ops = view.ops().unwrap();
    assert_eq!(
        ops.iter()
            .map(|o| o.op_name.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
        vec![
            "llm.generate",
            "memory.append",
            "rag.answer",
            "NONE sentinel"
        ]
    );
    assert_eq!(
        view.op("__none_op__")
            .unwrap()
            .unwrap()
            .session_id
            .as_deref(),
        Some("__none__")
    );
    let sessions = view.sessions().unwrap();
    assert_eq!(
        sessions.last().map(|s| s.session_id.as_str()),
        Some("__none__")
    );
    assert_eq!(view.edges().unwrap().len(), 8);
    assert!(view.variable("memory_store@3").unwrap().is_none());
}

#[test]
fn references_resolve_like_the_query_language() {
    let (_d, db) = db();
    import(&db, SAMPLE).unwrap();
    let view = db.trace("#1").unwrap();
    let name = |n: Node| match n {
        Node::Variable(v) => v.full_node_id,
        Node::Operation(o) => o.op_id,
    };
    assert_eq!(
        name(view.resolve("memory_store").unwrap()),
        "memory_store@2"
    );
    assert_eq!(
        name(view.resolve("memory_store@1").unwrap()),
        "memory_store@1"
    );
    assert_eq!(name(view.resolve(&format!("'{ANSWER}'")).unwrap()), ANSWER);
    assert_eq!(
        name(
            view.resolve("retrieved:list:7f3c311ff07f7757a701259feebe1c535d5f8fbc")
                .unwrap()
        ),
        "retrieved:list:7f3c311ff07f7757a701259feebe1c535d5f8fbc@1"
    );
    assert_eq!(
        name(view.resolve("op-97c7dc92567a4ea689633a1a6505c5ca").unwrap()),
        "op-97c7dc92567a4ea689633a1a6505c5ca"
    );
    assert!(matches!(
        view.resolve("answer:42"),
        Err(EngineError::UnknownNode { .. })
    ));
    assert!(matches!(
        view.resolve("answer:42@x"),
        Err(EngineError::Query(_))
    ));
}

#[test]
fn memtracebench_cases_are_stored_and_exported() {
    let (_d, db) = db();
    let doc = with_annotations();
    let t = import(&db, &doc.to_string()).unwrap();
    assert_eq!(
        (t[0].counts.cases, t[0].format.as_str()),
        (1, "memtracebench")
    );
    let view = db.trace("bench-case-1").unwrap();
    let cases = view.cases().unwrap();
    assert_eq!(
        cases[0].final_error_type.as_deref(),
        Some("ExtractionError")
    );
    assert_eq!(cases[0].golden_answers, json!(["graph databases"]));
    assert_eq!(
        cases[0].source_evidence_ids,
        vec!["str:f13d2a37b4c41c580bdcb236d3ab10516026af14@1"]
    );
    let mut out = Vec::new();
    view.export(ExportFormat::Smartcomment, &mut out).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&out).unwrap(), doc);
    assert_eq!(db.stats().unwrap().cases, 1);
}

#[test]
fn the_sample_round_trips_exactly() {
    let (_d, db) = db();
    import(&db, SAMPLE).unwrap();
    let mut out = Vec::new();
    db.trace(GRAPH)
        .unwrap()
        .export(ExportFormat::Smartcomment, &mut out)
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&out).unwrap(),
        serde_json::from_str::<Value>(SAMPLE).unwrap()
    );
    // Key order and formatting are kept too: the bytes match but for a final newline.
    assert_eq!(
        String::from_utf8(out).unwrap().trim_end(),
        SAMPLE.trim_end()
    );
}

#[test]
fn a_snapshot_keeps_reading_while_the_database_changes() {
    let (_d, db) = db();
    import(&db, SAMPLE).unwrap();
    let before = db.trace(GRAPH).unwrap();
    db.drop_trace(GRAPH, "test").unwrap();
    assert!(matches!(db.trace(GRAPH), Err(EngineError::UnknownTrace(_))));
    assert_eq!(
        before.variables().unwrap().len(),
        9,
        "a view reads its snapshot"
    );
    assert_eq!(before.edges().unwrap().len(), 8);
    let log = db.log().unwrap();
    assert_eq!(
        log.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(),
        vec!["import", "drop"]
    );
}

#[test]
fn json_lines_readers_are_all_or_nothing() {
    let (_d, db) = db();
    let mut a: Value = serde_json::from_str(SAMPLE).unwrap();
    a["graph_id"] = json!("line-1");
    let mut b = a.clone();
    b["graph_id"] = json!("line-2");
    let good = format!("{a}\n\n{b}\n");
    let t = db
        .import_reader(
            good.as_bytes(),
            InputFormat::JsonLines,
            "lines",
            &ImportOptions::default(),
        )
        .unwrap();
    assert_eq!(t.len(), 2);
    let mut c = a.clone();
    c["graph_id"] = json!("line-3");
    let bad = format!("{c}\n{{\"graph_id\": 1}}\n");
    let err = db
        .import_reader(
            bad.as_bytes(),
            InputFormat::JsonLines,
            "lines",
            &ImportOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("lines:2"), "{err}");
    assert_eq!(
        db.traces().unwrap().len(),
        2,
        "line 1 of the bad input was not stored"
    );
    let dup = format!("{c}\n{c}\n");
    assert!(db
        .import_reader(
            dup.as_bytes(),
            InputFormat::JsonLines,
            "dup",
            &ImportOptions::default()
        )
        .unwrap_err()
        .to_string()
        .contains("already appears on line 1"));
}

#[test]
fn stats_count_every_trace() {
    let (_d, db) = db();
    import(&db, SAMPLE).unwrap();
    import(&db, &with_annotations().to_string()).unwrap();
    let s = db.stats().unwrap();
    assert_eq!(
        (s.traces, s.sessions, s.variables, s.ops, s.edges, s.cases),
        (2, 6, 18, 8, 16, 1)
    );
    assert!(s.disk_bytes > 0 && s.imported_json_bytes > 0);
}

#[test]
fn values_shared_by_traces_are_stored_once_and_survive_a_drop() {
    let (dir, db) = db();
    let mut big: Value = serde_json::from_str(SAMPLE).unwrap();
    let snapshot = "the long context window holds every message so far. ".repeat(40_000);
    big["data"]["nodes"][4]["value"] = json!(snapshot);
    big["graph_id"] = json!("copy-a");
    import(&db, &big.to_string()).unwrap();
    db.flush().unwrap();
    let one = db.stats().unwrap().disk_bytes;
    big["graph_id"] = json!("copy-b");
    import(&db, &big.to_string()).unwrap();
    db.flush().unwrap();
    let two = db.stats().unwrap().disk_bytes;
    assert!(
        two - one < snapshot.len() as u64 / 10,
        "a repeated 2 MB value is not stored again ({one} -> {two})"
    );
    db.drop_trace("copy-a", "test").unwrap();
    assert_eq!(
        db.trace("copy-b")
            .unwrap()
            .latest("memory_store")
            .unwrap()
            .unwrap()
            .version,
        2
    );
    assert_eq!(
        db.trace("copy-b")
            .unwrap()
            .variable("memory_store@1")
            .unwrap()
            .unwrap()
            .value
            .unwrap(),
        snapshot
    );
    drop(db);
    let reopened = Database::open_existing(dir.path().join("api.db")).unwrap();
    assert_eq!(reopened.traces().unwrap().len(), 1);
}

#[test]
fn readers_see_whole_traces_while_imports_run() {
    let (_d, db) = db();
    let exports: Vec<Vec<u8>> = (0..6)
        .map(|i| {
            let spec = memtrace::synth::SynthSpec {
                graph_id: format!("concurrent-{i}"),
                variables: 600,
                edges: 1200,
                sessions: 4,
                seed: i,
            };
            let mut out = Vec::new();
            memtrace::synth::write_export(&spec, &mut out).unwrap();
            out
        })
        .collect();
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut observed = 0usize;
    std::thread::scope(|s| {
        s.spawn(|| {
            for e in &exports {
                db.import_reader(
                    e.as_slice(),
                    InputFormat::Json,
                    "concurrent",
                    &ImportOptions::default(),
                )
                .unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            for t in db.traces().unwrap() {
                let view = db.trace_by_id(t.id).unwrap();
                assert_eq!(
                    view.edges().unwrap().len() as u32,
                    t.counts.edges,
                    "a reader saw part of {}",
                    t.graph_id
                );
                assert_eq!(view.variables().unwrap().len() as u32, t.counts.variables);
                observed += 1;
            }
        }
    });
    assert_eq!(db.traces().unwrap().len(), 6);
    println!("{observed} whole traces read while importing");
}

#[test]
fn generated_traces_import_with_their_cases_and_labels_replay() {
    use memtrace::gen::{generate_trace, GenSpec, Intervention, System};
    let spec = GenSpec {
        system: Some(System::Mem0),
        sessions: 4..=5,
        messages_per_session: 10..=12,
        questions: 30,
        seed: 21,
        ..GenSpec::default()
    };
    let t = generate_trace(&spec, 0);
    let (_dir, db) = db();
    let stored = import(&db, &t.document.to_string()).unwrap();
    assert_eq!(stored[0].graph_id, t.graph_id);
    let view = db.trace(&t.graph_id).unwrap();
    let cases = view.cases().unwrap();
    assert_eq!(cases.len(), t.recorded.labels.len());
    assert!(!cases.is_empty());
    for (case, label) in cases.iter().zip(&t.recorded.labels) {
        // The labelled op exists in the stored trace ...
        let op = case.final_op_id.as_deref().unwrap();
        assert!(view.op(op).unwrap().is_some(), "{op}");
        assert_eq!(
            case.final_error_type.as_deref(),
            Some(label.error_type.name())
        );
        // ... and repairing it (later ops ideal) rescues the answer.
        assert!(t.sim.replay(&Intervention::repair_then_ideal(label.slot))[label.question]);
    }
}

/// A chain of `n` variables, each derived from the one before.
fn chain(n: usize) -> String {
    let nodes: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("{i}"), "class_name": "v", "version": 1, "value": "x", "session_id": "s"}))
        .collect();
    let ops: Vec<Value> = (1..n)
        .map(|i| json!({"op_id": format!("op{i}"), "op_name": "step", "category": "update", "session_id": "s"}))
        .collect();
    let edges: Vec<Value> = (1..n)
        .map(|i| {
            json!({"edge_id": format!("e{i}"), "op_id": format!("op{i}"), "session_id": "s",
                   "source_full_node_id": format!("v:{}@1", i - 1), "target_full_node_id": format!("v:{i}@1")})
        })
        .collect();
    json!({"graph_id": "chain", "data": {"sessions": [{"session_id": "s"}], "operations": ops, "nodes": nodes, "edges": edges}})
        .to_string()
}

/// `levels` levels of `width` variables, each variable written by its own
/// op from every variable of the level below, and `x:top` written from
/// the last level: a backward walk from it meets `width` new ops a level.
fn fan(levels: usize, width: usize) -> String {
    layers(&vec![width; levels])
}

/// A level of `widths[i]` variables for each `i`, each variable above the
/// first level written by its own op from every variable of the level
/// below (the ops recorded level by level), and `x:top` written from the
/// last level: a backward walk from it meets level `i`'s `widths[i]` ops
/// together, one after the other.
fn layers(widths: &[usize]) -> String {
    let var = |i: usize, j: usize| format!("x:{i}_{j}@1");
    let mut nodes = vec![
        json!({"name": "top", "class_name": "x", "version": 1, "value": "t", "session_id": "s"}),
    ];
    let (mut ops, mut edges) = (Vec::new(), Vec::new());
    let mut op = |id: String, inputs: Vec<String>, output: String| {
        for (k, input) in inputs.into_iter().enumerate() {
            edges.push(
                json!({"edge_id": format!("{id}-{k}"), "op_id": id, "session_id": "s",
                              "source_full_node_id": input, "target_full_node_id": output}),
            );
        }
        ops.push(json!({"op_id": id, "op_name": "mix", "category": "update", "session_id": "s"}));
    };
    for (i, &width) in widths.iter().enumerate() {
        for j in 0..width {
            nodes.push(json!({"name": format!("{i}_{j}"), "class_name": "x", "version": 1, "value": "v", "session_id": "s"}));
            if i > 0 {
                op(
                    format!("o{i}_{j}"),
                    (0..widths[i - 1]).map(|k| var(i - 1, k)).collect(),
                    var(i, j),
                );
            }
        }
    }
    let last = widths.len().saturating_sub(1);
    op(
        "otop".into(),
        (0..widths.get(last).copied().unwrap_or(0))
            .map(|k| var(last, k))
            .collect(),
        "x:top@1".into(),
    );
    json!({"graph_id": "fan", "data": {"sessions": [{"session_id": "s"}], "operations": ops, "nodes": nodes, "edges": edges}})
        .to_string()
}

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

/// Variables whose full node ids read alike: `message:D1` of version 1
/// has the class `message`, `message:D1` of version 2 has none (its name
/// holds the colon), and `:x` has an empty class; ops read from an edge.
fn alike() -> String {
    let nodes = [
        json!({"name": "D1", "class_name": "message", "version": 1, "value": "a", "session_id": "s", "category": "msg"}),
        json!({"name": "message:D1", "class_name": null, "version": 2, "value": "b", "session_id": "s"}),
        json!({"name": ":x@y", "class_name": "", "version": 10, "value": "c", "session_id": "s", "category": ""}),
    ];
    let ops = [
        json!({"op_id": "w1", "op_name": "write", "category": "update", "session_id": "s"}),
        json!({"op_id": "w2", "op_name": null, "category": null, "session_id": "s"}),
    ];
    let edges = [
        json!({"edge_id": "e1", "op_id": "w1", "session_id": "s",
               "source_full_node_id": "message:D1@1", "target_full_node_id": "message:D1@2"}),
        json!({"edge_id": "e2", "op_id": "w2", "session_id": "s",
               "source_full_node_id": "message:D1@2", "target_full_node_id": ":x@y@10"}),
    ];
    json!({"graph_id": "alike", "data": {"sessions": [{"session_id": "s"}], "operations": ops, "nodes": nodes, "edges": edges}})
        .to_string()
}

#[test]
fn fields_read_without_records_tell_apart_ids_that_read_alike() {
    let (dir, db) = db();
    import(&db, &alike()).unwrap();
    // Read back after reopening, so nothing comes from the import's memory.
    drop(db);
    let db = Database::open_existing(dir.path().join("api.db")).unwrap();
    let rows = |q: &str| db.query(q).unwrap().rows;
    assert_eq!(
        rows("FIND vars RETURN var.name, var.class, var.version, var.full_name, var.node_id, var.category"),
        [
            json!(["D1", "message", 1, "message:D1", "message:D1@1", "msg"]),
            json!(["message:D1", null, 2, "message:D1", "message:D1@2", null]),
            json!([":x@y", "", 10, ":x@y", ":x@y@10", ""]),
        ]
        .map(|r| r.as_array().unwrap().clone())
    );
    // A label is the class as recorded, never the text before a colon.
    assert_eq!(
        rows("MATCH (v:message) RETURN v, v.name"),
        [[json!("alike"), json!("message:D1@1"), json!("D1")]]
    );
    assert_eq!(
        rows("MATCH (a)-[e]->(b) WHERE b.class IS NULL RETURN a.name, e.kind, e.op_name, e.op, b.version"),
        [[json!("alike"), json!("D1"), json!("update"), json!("write"), json!("w1"), json!(2)]]
    );
    assert_eq!(
        rows("MATCH (a)-[e]->(b:message) RETURN count(*)"),
        [[json!(0)]],
        "no edge ends at the classed message:D1"
    );
    assert_eq!(
        rows("FIND ops RETURN op.id, op.name, op.kind"),
        [
            [json!("w1"), json!("write"), json!("update")],
            [json!("w2"), Value::Null, Value::Null],
        ]
    );
    assert_eq!(
        rows("MATCH (a)-[e:update]->(b) RETURN b.name"),
        [[json!("alike"), json!("message:D1")]]
    );
}

#[test]
fn a_large_file_read_again_is_the_same_content_and_other_content_is_refused() {
    let (dir, db) = db();
    // Over a mebibyte: the file is mapped and its digest taken while it is stored.
    let text = chain(6000);
    assert!(text.len() > 1 << 20, "{}", text.len());
    let file = dir.path().join("chain.json");
    // A byte order mark and whitespace around the object are not content.
    std::fs::write(&file, format!("\u{feff}  {text}\n")).unwrap();
    let first = import(&db, &text).unwrap();
    assert!(!first[0].unchanged);
    let import_file = |path: &std::path::Path| {
        db.import_paths(
            &[path.to_path_buf()],
            &ImportOptions::default(),
            &mut |_| {},
        )
        .into_iter()
        .next()
        .unwrap()
        .result
    };
    let again = import_file(&file).unwrap();
    assert!(again[0].unchanged, "{again:?}");
    assert_eq!(again[0].trace, first[0].trace);
    let other = dir.path().join("other.json");
    std::fs::write(&other, text.replace("\"x\"", "\"y\"")).unwrap();
    match import_file(&other) {
        Err(EngineError::AlreadyStored { compared, .. }) => assert!(compared),
        r => panic!("{r:?}"),
    }
    assert_eq!(db.traces().unwrap().len(), 1);
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
                    .map(|c| memtrace::to_json(&c.to_value()))
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
                rows.push(b.row(i).unwrap().iter().map(memtrace::to_json).collect());
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
        let sink: &mut memtrace::CellSink<'_> = &mut |row| {
            through_pointer.push(
                row.iter()
                    .map(|c| memtrace::to_json(&c.to_value()))
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
fn attribution_through_the_embedding_api() {
    use memtrace::attrib::{AttributeRequest, Method};
    use memtrace::gen::set::{generate_set, GenSpec};
    use memtrace::Cancel;

    let (dir, db) = db();
    let set = dir.path().join("set");
    let spec = GenSpec {
        traces: 2,
        seed: 3,
        sessions: 4..=5,
        messages_per_session: 10..=12,
        questions: 40,
        ..GenSpec::default()
    };
    let written = generate_set(&spec, &set, false, |_, _| {}).unwrap();
    let failed: usize = written.iter().map(|t| t.failed).sum();
    assert!(failed > 0);
    let reports = db.import_paths(&[set], &ImportOptions::default(), &mut |_| {});
    assert!(reports.iter().all(|r| r.result.is_ok()));
    let cases = db.failed_cases(None).unwrap();
    assert_eq!(cases.len(), failed);

    let req = AttributeRequest {
        trace: None,
        cases: None,
        method: Method::Evidence,
        setting: Default::default(),
        search: Default::default(),
    };
    let verdicts = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    assert_eq!(verdicts.len(), failed);
    assert!(verdicts.iter().all(|v| v.error_type.is_some()));
    assert_eq!(db.store_verdicts(&verdicts, "api test").unwrap(), failed);
    let stored = db.attributions(None).unwrap();
    assert_eq!(stored.len(), failed);
    assert!(stored.iter().all(|s| s.author == "api test"));

    let e = db
        .evaluate(Method::Evidence, None, &Cancel::new(), &mut |_| {})
        .unwrap();
    assert_eq!(e.cases, failed);
    assert!(
        e.error_type_accuracy >= 0.85 && e.op_id_accuracy >= 0.85,
        "{e:?}"
    );

    let report = db.report(Method::Evidence, None).unwrap();
    assert_eq!(report.overall.failed, failed);
    assert_eq!(report.overall.attributed, failed);
    let html = report.html();
    assert!(html.contains(&written[0].graph_id[..4]));

    // The same through the query language.
    let one = &cases[0];
    let r = db
        .query(&format!(
            "ATTRIBUTE '{}' IN TRACE '{}' USING evidence",
            one.id, one.graph_id
        ))
        .unwrap();
    assert_eq!(r.rows.len(), 1);
    let r = db.query("FIND attributions RETURN count(*)").unwrap();
    assert_eq!(r.rows[0][0], failed as u64);
}

#[test]
fn picked_cases_are_attributed_each_in_its_own_trace() {
    use memtrace::attrib::{AttributeRequest, CaseOrigin, CasePick, Method};
    use memtrace::gen::{generate_trace, GenSpec, System};
    use memtrace::Cancel;

    let (_dir, db) = db();
    for system in [System::Mem0, System::Rag] {
        import(
            &db,
            &generate_trace(&GenSpec::small(system), 0)
                .document
                .to_string(),
        )
        .unwrap();
    }
    let cases = db.failed_cases(None).unwrap();
    let first_trace = cases[0].trace;
    let other = cases.iter().find(|c| c.trace != first_trace).unwrap();
    let picks = [
        // The other trace's case first: verdicts come in the order picked.
        CasePick {
            trace: other.trace,
            origin: other.origin.clone(),
        },
        CasePick {
            trace: cases[0].trace,
            origin: cases[0].origin.clone(),
        },
        CasePick {
            trace: other.trace,
            origin: other.origin.clone(),
        },
    ];
    let verdicts = db
        .attribute_picked(
            &picks,
            Method::Evidence,
            memtrace::attrib::Setting::Benchmark,
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    let got: Vec<(u32, &str)> = verdicts
        .iter()
        .map(|v| (v.trace, v.case.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (other.trace, other.id.as_str()),
            (cases[0].trace, cases[0].id.as_str())
        ]
    );
    // The same verdict as naming the case in its trace.
    let named = db
        .attribute(
            &AttributeRequest {
                trace: Some(&format!("#{}", other.trace)),
                cases: Some(std::slice::from_ref(&other.id)),
                method: Method::Evidence,
                setting: Default::default(),
                search: Default::default(),
            },
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(
        (&named[0].error_type, &named[0].op_id, &named[0].reason),
        (
            &verdicts[0].error_type,
            &verdicts[0].op_id,
            &verdicts[0].reason
        )
    );
    // A case the trace does not have is an error.
    let e = db
        .attribute_picked(
            &[CasePick {
                trace: first_trace,
                origin: CaseOrigin::Annotation(10_000),
            }],
            Method::Evidence,
            memtrace::attrib::Setting::Benchmark,
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("has no failed case from annotation 10001"),
        "{e}"
    );
    assert!(db
        .attribute_picked(
            &[],
            Method::Llm,
            memtrace::attrib::Setting::Benchmark,
            &Cancel::new(),
            &mut |_| {}
        )
        .unwrap()
        .is_empty());
}

#[test]
fn llm_attribution_summaries_and_feedback_through_the_embedding_api() {
    use memtrace::attrib::agent::walker;
    use memtrace::attrib::{AttributeRequest, Method};
    use memtrace::gen::set::{generate_set, GenSpec};
    use memtrace::llm::scripted::ScriptedServer;
    use memtrace::Cancel;

    let (dir, db) = db();
    let set = dir.path().join("set");
    let spec = GenSpec {
        traces: 2,
        seed: 5,
        sessions: 4..=5,
        messages_per_session: 10..=12,
        questions: 30,
        ..GenSpec::default()
    };
    generate_set(&spec, &set, false, |_, _| {}).unwrap();
    db.import_paths(&[set], &ImportOptions::default(), &mut |_| {});
    let server = ScriptedServer::start(walker::script()).unwrap();
    db.set_llm_config(memtrace::llm::Config::new(server.base_url(), "walker"));
    assert_eq!(db.llm_config().unwrap().model, "walker");

    let req = AttributeRequest {
        trace: None,
        cases: None,
        method: Method::Hybrid,
        setting: Default::default(),
        search: Default::default(),
    };
    let verdicts = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    assert_eq!(verdicts.len(), db.failed_cases(None).unwrap().len());
    assert!(verdicts.iter().all(|v| v.cost.is_some_and(|c| c.calls > 0)));
    db.store_verdicts(&verdicts, "api test").unwrap();

    let mut report = db.report(Method::Hybrid, None).unwrap();
    let cost = db.write_summaries(&mut report, &Cancel::new()).unwrap();
    assert!(cost.calls >= 1);
    assert!(report.systems.iter().any(|s| s.written.is_some()));
    assert_eq!(report.written_by.as_deref(), Some("walker"));

    let fb = db
        .prompt_feedback(Method::Hybrid, None, 4, &Cancel::new())
        .unwrap();
    assert!(!fb.prompts.is_empty());
    assert!(fb.prompts.keys().all(|k| k.ends_with("@1")));
    assert!(fb
        .prompts
        .values()
        .all(|p| p.suggested.is_some() && !p.cases.is_empty()));
}

#[test]
fn patterns_are_saved_run_and_dropped_through_the_embedding_api() {
    use memtrace::gen::{generate_trace, GenSpec, System};
    use memtrace::patterns::{PatternSpec, RunOptions};
    let (_dir, db) = db();
    for (i, system) in [System::Mem0, System::Rag].into_iter().enumerate() {
        let spec = GenSpec {
            system: Some(system),
            sessions: 4..=5,
            messages_per_session: 10..=12,
            questions: 30,
            seed: 40 + i as u64,
            ..GenSpec::default()
        };
        import(&db, &generate_trace(&spec, 0).document.to_string()).unwrap();
    }
    let v = db
        .save_pattern(
            "judged",
            "FIND ops WHERE op.name = $name RETURN op.id",
            &[("name".into(), memtrace::Value::Str("llm-judge".into()))],
            "api-test",
        )
        .unwrap();
    assert_eq!(v, 1);
    let specs = [
        PatternSpec::named("judged"),
        PatternSpec::named("stored_not_retrieved"),
    ];
    let opts = RunOptions {
        over: Some("trace.project_id = 'mem0'".into()),
        examples: 2,
    };
    let r = db
        .run_patterns(&specs, &opts, &memtrace::Cancel::new(), &|_, _| {})
        .unwrap();
    assert_eq!((r.traces, r.skipped), (1, 1));
    // Every question of the Mem0 trace was judged once.
    assert_eq!(r.patterns[0].hits, 30);
    assert_eq!(r.patterns[0].examples.len(), 2);
    assert_eq!(r.patterns[0].per_trace[0].system.as_deref(), Some("mem0"));
    // The built-in agrees with the stored attribution of the same method.
    let verdicts = db
        .attribute(
            &memtrace::attrib::AttributeRequest {
                trace: None,
                cases: None,
                method: memtrace::attrib::Method::Evidence,
                setting: Default::default(),
                search: Default::default(),
            },
            &memtrace::Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    let retrieval = verdicts
        .iter()
        .filter(|v| {
            v.system.as_deref() == Some("mem0")
                && v.error_type == Some(memtrace::attrib::ErrorType::RetrievalError)
        })
        .count() as u64;
    assert_eq!(r.patterns[1].hits, retrieval);
    db.drop_pattern("judged", "api-test").unwrap();
    assert_eq!(db.pattern_history("judged").unwrap().len(), 2);
    assert!(db.patterns().unwrap().iter().all(|p| p.builtin));
}

#[test]
fn provenance_comes_out_as_a_petgraph_graph() {
    use memtrace::petgraph::algo::dominators::simple_fast;
    use memtrace::petgraph::algo::{astar, tarjan_scc, toposort};
    use memtrace::petgraph::visit::Reversed;
    use memtrace::Params;

    let (_d, db) = db();
    import(&db, SAMPLE).unwrap();
    let q = format!("TRACE '{ANSWER}'");
    let g = db.query_graph(&q, &Params::new()).unwrap();
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
        )
        .unwrap();
    assert_eq!(f.graph.node_count(), 4);
    // MATCH: every binding, with the path of a variable-length step.
    let m = db
        .query_graph(
            "MATCH (p:prompt)-[*1..5]->(a) WHERE a.full_name = 'str:663d79858dc5e938f2b614b6b560fc10a2aeeb24' RETURN p, a",
            &Params::new(),
        )
        .unwrap();
    assert_eq!(m.graph.node_count(), 4);
    assert_eq!(m.graph.edge_count(), 3);
    // A statement that makes no graph is refused by name.
    let err = db.query_graph("FIND vars", &Params::new()).unwrap_err();
    assert!(err.to_string().contains("FIND gives rows only"), "{err}");
}

#[test]
fn a_graph_id_that_looks_like_a_trace_id_is_still_found_by_it() {
    let (_d, db) = db();
    import(&db, SAMPLE).unwrap();
    let mut doc: Value = serde_json::from_str(SAMPLE).unwrap();
    doc["graph_id"] = json!("second");
    import(&db, &doc.to_string()).unwrap();
    // '#2' is trace 2 while no graph id is '#2'.
    assert_eq!(db.trace("#2").unwrap().record().graph_id, "second");
    assert!(matches!(db.trace("#3"), Err(EngineError::UnknownTrace(_))));
    // A trace stored under the graph id '#2': the graph id wins, as before.
    doc["graph_id"] = json!("#2");
    import(&db, &doc.to_string()).unwrap();
    assert_eq!(db.trace("#2").unwrap().id(), 3);
    assert_eq!(db.trace("#3").unwrap().record().graph_id, "#2");
    assert_eq!(db.trace("#1").unwrap().record().graph_id, GRAPH);
}

/// The write-ahead log files of the database at `path` that still hold
/// records, with their sizes.
fn logs_with_records(path: &std::path::Path) -> Vec<(String, u64)> {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .filter(|(_, len)| *len > 0)
        .collect()
}

#[test]
fn closing_after_imports_leaves_no_log_for_a_reader_to_replay() {
    // Several sessions of writes, each closed: no log with records is left
    // for a read-only open to replay (the storage crate's tests cover a
    // log left by families idle since a flush for the logs' size).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs.db");
    for round in 0..3 {
        let db = Database::open(&path).unwrap();
        let mut doc: Value = serde_json::from_str(SAMPLE).unwrap();
        doc["graph_id"] = json!(format!("round-{round}"));
        import(&db, &doc.to_string()).unwrap();
        drop(db);
        assert_eq!(logs_with_records(&path), Vec::new(), "after round {round}");
    }
    // A reader sees every round.
    let db = Database::open_read_only(&path).unwrap();
    assert_eq!(db.traces().unwrap().len(), 3);
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

/// Gives `head`, then fails: an input whose rest must not be read.
struct HeadOnly(std::io::Cursor<Vec<u8>>);

impl std::io::Read for HeadOnly {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 => Err(std::io::Error::other("read past the first bytes")),
            n => Ok(n),
        }
    }
}

#[test]
fn an_input_wrong_from_its_first_byte_is_refused_before_the_rest_is_read() {
    let (_dir, db) = db();
    let mut head = b"x".to_vec();
    head.resize(16 << 10, b' ');
    for format in [InputFormat::Json, InputFormat::JsonLines] {
        let err = db
            .import_reader(
                HeadOnly(std::io::Cursor::new(head.clone())),
                format,
                "big.json",
                &ImportOptions::default(),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid at $: expected a smartcomment export object")
                && err.contains("found 'x' at line 1, column 1"),
            "{format:?}: {err}"
        );
    }
    // UTF-16 without a byte order mark is named as such, also through a reader.
    let utf16: Vec<u8> = SAMPLE.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let err = db
        .import_reader(
            &utf16[..],
            InputFormat::Json,
            "be.json",
            &ImportOptions::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("UTF-16 (big-endian, without a byte order mark)"),
        "{err}"
    );
    assert!(db.traces().unwrap().is_empty());
}

#[test]
fn a_file_imports_in_the_format_and_under_the_name_given() {
    let (dir, db) = db();
    let mut doc: Value = serde_json::from_str(SAMPLE).unwrap();
    let mut lines = String::new();
    for id in ["line-1", "line-2"] {
        doc["graph_id"] = json!(id);
        lines.push_str(&doc.to_string());
        lines.push('\n');
    }
    // The name says nothing of the format: the caller does.
    let file = dir.path().join("upload-7.tmp");
    std::fs::write(&file, &lines).unwrap();
    let opts = ImportOptions::default();
    let got = db
        .import_file(&file, InputFormat::JsonLines, "sent over HTTP", &opts)
        .unwrap();
    assert_eq!(got.len(), 2);
    let traces = db.traces().unwrap();
    let sources: Vec<&str> = traces.iter().map(|t| t.source.as_str()).collect();
    assert_eq!(sources, ["sent over HTTP:1", "sent over HTTP:2"]);
    // One export, and a bad one named by the name given.
    std::fs::write(&file, SAMPLE).unwrap();
    let got = db
        .import_file(&file, InputFormat::Json, "again", &opts)
        .unwrap();
    assert_eq!(got[0].graph_id, GRAPH);
    std::fs::write(&file, "[1]").unwrap();
    let e = db
        .import_file(&file, InputFormat::Json, "bad upload", &opts)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("bad upload: invalid at $"), "{e}");
}
