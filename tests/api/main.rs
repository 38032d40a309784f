//! End-to-end tests of the embedding API (`memtrace::Database`), one module per topic.

mod analyses;
mod importing;
mod queries;
mod reading;

use memtrace::prelude::*;
use memtrace::{Database, EngineError, ExportFormat, ImportOptions, InputFormat, Node};
use serde_json::{json, Value};

const SAMPLE: &str = include_str!("../fixtures/sample_export.json");

const GRAPH: &str = "graph-e02a1f3b041740d5b82569831ef2d06e";

const ANSWER: &str = "str:663d79858dc5e938f2b614b6b560fc10a2aeeb24@1";

/// Opens a database that must already exist.
const EXISTING: memtrace::OpenOptions = memtrace::OpenOptions {
    create: false,
    read_only: false,
    sync: true,
};

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
