//! Reading traces: typed access, references, cases, snapshots and shared values.

use super::*;

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
    let reopened = Database::open_with(dir.path().join("api.db"), &EXISTING).unwrap();
    assert_eq!(reopened.traces().unwrap().len(), 1);
}

#[test]
fn readers_see_whole_traces_while_imports_run() {
    let (_d, db) = db();
    let exports: Vec<Vec<u8>> = (0..6)
        .map(|i| {
            let spec = memtrace::gen::synth::SynthSpec {
                graph_id: format!("concurrent-{i}"),
                variables: 600,
                edges: 1200,
                sessions: 4,
                seed: i,
            };
            let mut out = Vec::new();
            memtrace::gen::synth::write_export(&spec, &mut out).unwrap();
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
                let view = db.engine().trace_by_id(t.id).unwrap();
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
    let db = Database::open_with(dir.path().join("api.db"), &EXISTING).unwrap();
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
