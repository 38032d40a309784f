//! Property tests: random graphs (parallel edges, cycles, names with `:` and
//! `@`, unicode, empty strings, values of 1 MB, deep metadata, extra keys,
//! annotations) survive import and export unchanged.

use memtrace::{Database, ExportFormat, ImportOptions, InputFormat};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9_:@ .-]{0,12}",
        2 => "\\PC{0,10}",
        1 => Just(String::new()),
        1 => Just("naïve café @ 東京: 🙂".to_string()),
    ]
}

fn metadata() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e12f64..1.0e12).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
        // Numbers beyond 64 bits and floats written with a fraction keep their text.
        Just(serde_json::from_str::<Value>("123456789012345678901234567890").unwrap()),
        Just(serde_json::from_str::<Value>("1.0").unwrap()),
    ];
    leaf.prop_recursive(8, 64, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(("[a-z]{1,6}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn value() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        8 => text().prop_map(Some),
        1 => Just(None),
        1 => (0u8..26).prop_map(|c| Some(((b'a' + c) as char).to_string().repeat(1 << 20))),
    ]
}

/// Fields every record carries; `own` sometimes differs from the trace's ids.
fn common(
    m: &mut Map<String, Value>,
    graph: &str,
    meta: Value,
    own: Option<String>,
    line: i64,
    extra: bool,
) {
    m.insert(
        "created_at".into(),
        json!(format!(
            "2026-11-22 01:21:{:02}.{:03}",
            line % 60,
            line % 1000
        )),
    );
    m.insert("filename".into(), json!("prog.py"));
    m.insert("lineno".into(), json!(line));
    m.insert("graph_id".into(), json!(graph));
    m.insert(
        "user_id".into(),
        own.map(Value::String).unwrap_or(json!("u1")),
    );
    m.insert(
        "project_id".into(),
        if line % 5 == 0 {
            Value::Null
        } else {
            json!("proj")
        },
    );
    m.insert("metadata".into(), meta);
    m.insert(
        "trigger_point".into(),
        json!(if line % 7 == 0 {
            "elsewhere:1".to_string()
        } else {
            format!("prog.py:{line}")
        }),
    );
    if extra {
        m.insert("x_extra".into(), json!({"kept": [1, 2, 3]}));
    }
}

#[derive(Debug, Clone)]
struct NodeSpec {
    name: String,
    class: Option<String>,
    version: u32,
    value: Option<String>,
    meta: Value,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        text(),
        proptest::option::of(text()),
        1u32..4,
        value(),
        metadata(),
    )
        .prop_map(|(name, class, version, value, meta)| NodeSpec {
            name,
            class,
            version,
            value,
            meta,
        })
}

fn graph() -> impl Strategy<Value = Value> {
    (
        proptest::collection::vec(node_spec(), 1..10),
        proptest::collection::vec((text(), proptest::option::of(text()), metadata()), 1..4),
        1usize..4,
        proptest::collection::vec((any::<u16>(), any::<u16>(), any::<u16>(), any::<u16>(), proptest::option::of(text())), 0..24),
        metadata(),
        proptest::option::of(Just(())),
        any::<u64>(),
    )
        .prop_map(|(nodes, ops, sessions, edges, top_meta, annotations, salt)| {
            let graph = format!("graph-{salt:x}");
            let mut seen = std::collections::HashSet::new();
            let mut node_list = Vec::new();
            let mut ids = Vec::new();
            for (i, n) in nodes.into_iter().enumerate() {
                let full_name = match n.class.as_deref() {
                    Some(c) if !c.is_empty() => format!("{c}:{}", n.name),
                    _ => n.name.clone(),
                };
                let full_node_id = format!("{full_name}@{}", n.version);
                if !seen.insert(full_node_id.clone()) {
                    continue;
                }
                let mut m = Map::new();
                m.insert("name".into(), json!(n.name));
                m.insert("version".into(), json!(n.version));
                m.insert("value".into(), n.value.map(Value::String).unwrap_or(Value::Null));
                m.insert("comment".into(), if i % 2 == 0 { Value::Null } else { json!("a comment") });
                m.insert("category".into(), json!(["message", "memory_entry", "variable"][i % 3]));
                m.insert("class_name".into(), n.class.map(Value::String).unwrap_or(Value::Null));
                m.insert("session_id".into(), json!(format!("session-{}", i % sessions)));
                common(&mut m, &graph, n.meta, (i % 4 == 3).then(|| "other-user".to_string()), i as i64 + 10, i % 3 == 1);
                m.insert("full_name".into(), json!(full_name));
                m.insert("node_id".into(), json!(format!("{}@{}", n.name, n.version)));
                m.insert("full_node_id".into(), json!(full_node_id));
                ids.push(full_node_id);
                node_list.push(Value::Object(m));
            }
            let op_list: Vec<Value> = ops
                .iter()
                .enumerate()
                .map(|(i, (name, category, meta))| {
                    let mut m = Map::new();
                    m.insert("op_id".into(), json!(format!("op-{i}")));
                    m.insert("op_name".into(), json!(name));
                    m.insert("comment".into(), Value::Null);
                    m.insert("category".into(), category.clone().map(Value::String).unwrap_or(Value::Null));
                    m.insert("session_id".into(), json!(format!("session-{}", i % sessions)));
                    common(&mut m, &graph, meta.clone(), None, 100 + i as i64, false);
                    Value::Object(m)
                })
                .collect();
            let edge_list: Vec<Value> = edges
                .iter()
                .enumerate()
                .map(|(i, (s, t, o, ss, comment))| {
                    let mut m = Map::new();
                    m.insert("edge_id".into(), json!(format!("edge-{i}")));
                    m.insert("op_id".into(), json!(format!("op-{}", *o as usize % ops.len())));
                    m.insert("category".into(), json!("update"));
                    // Indices may repeat and point backwards: parallel edges, self-loops, cycles.
                    m.insert("source_full_node_id".into(), json!(ids[*s as usize % ids.len()]));
                    m.insert("target_full_node_id".into(), json!(ids[*t as usize % ids.len()]));
                    m.insert("comment".into(), comment.clone().map(Value::String).unwrap_or(Value::Null));
                    m.insert("session_id".into(), json!(format!("session-{}", *ss as usize % sessions)));
                    common(&mut m, &graph, json!({}), None, 200 + i as i64, i % 5 == 0);
                    Value::Object(m)
                })
                .collect();
            let session_list: Vec<Value> = (0..sessions)
                .map(|i| {
                    let mut m = Map::new();
                    m.insert("session_id".into(), json!(format!("session-{i}")));
                    m.insert("session_name".into(), json!("memory_construction"));
                    m.insert("comment".into(), Value::Null);
                    m.insert("category".into(), json!("session"));
                    common(&mut m, &graph, json!({"turn": i}), None, 300 + i as i64, false);
                    Value::Object(m)
                })
                .collect();
            let mut data = Map::new();
            data.insert("nodes".into(), Value::Array(node_list));
            data.insert("edges".into(), Value::Array(edge_list));
            data.insert("operations".into(), Value::Array(op_list));
            data.insert("sessions".into(), Value::Array(session_list));
            if annotations.is_some() {
                data.insert("annotations".into(), json!([{"query_id": ids[0], "query": "q?", "golden_answers": "a", "prediction": "b", "source_evidence_ids": ids.iter().take(2).collect::<Vec<_>>(), "final_error_type": "UpdateError", "final_op_id": "op-0", "note": {"by": "test"}}]));
            }
            json!({
                "graph_id": graph, "user_id": "u1", "project_id": "proj", "storage_path": null, "strict": false,
                "driver_type": "in_memory", "created_at": "2026-11-22 01:21:39.972", "metadata": top_meta, "data": data,
            })
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_round_trip_through_the_store(doc in graph()) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("p.db")).unwrap();
        let bytes = serde_json::to_vec(&doc).unwrap();
        let t = db.import_reader(bytes.as_slice(), InputFormat::Json, "prop", &ImportOptions::default()).unwrap();
        prop_assert_eq!(t[0].counts.variables as usize, doc["data"]["nodes"].as_array().unwrap().len());
        // Read back after reopening, so nothing comes from memory.
        drop(db);
        let db = Database::open_with(
            dir.path().join("p.db"),
            &memtrace::OpenOptions {
                create: false,
                ..Default::default()
            },
        ).unwrap();
        let mut out = Vec::new();
        db.trace(doc["graph_id"].as_str().unwrap()).unwrap().export(ExportFormat::Smartcomment, &mut out).unwrap();
        let back: Value = serde_json::from_slice(&out).unwrap();
        prop_assert_eq!(&back, &doc);
        // Queries read names, classes, versions and kinds from the trace's
        // labels, not its records: the same texts, names with `:` and `@`
        // and empty classes included.
        let rows = db
            .query("FIND vars RETURN var.name, var.class, var.version, var.full_name, var.node_id, var.category")
            .unwrap()
            .rows;
        let want: Vec<Vec<Value>> = doc["data"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                ["name", "class_name", "version", "full_name", "full_node_id", "category"]
                    .iter()
                    .map(|k| n[*k].clone())
                    .collect()
            })
            .collect();
        prop_assert_eq!(rows, want);
        let rows = db.query("FIND ops RETURN op.id, op.name, op.kind").unwrap().rows;
        let want: Vec<Vec<Value>> = doc["data"]["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| vec![o["op_id"].clone(), o["op_name"].clone(), o["category"].clone()])
            .collect();
        prop_assert_eq!(rows, want);
    }
}
