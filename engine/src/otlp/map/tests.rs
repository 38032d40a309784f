//! Tests of the conversion of a trace's spans into an export.

use super::*;
use crate::otlp::flows::{sibling_flows, SIBLINGS};
use std::rc::Rc;

fn span(id: &str, parent: Option<&str>, start: u64, end: u64, attrs: Value) -> Span {
    let Value::Object(attrs) = attrs else {
        panic!()
    };
    Span {
        trace_id: "t1".into(),
        span_id: id.into(),
        parent: parent.map(str::to_string),
        name: id.into(),
        kind: "INTERNAL",
        start,
        end,
        attrs,
        events: Vec::new(),
        links: Vec::new(),
        status: "UNSET",
        status_message: None,
        trace_state: None,
        resource: Rc::default(),
        scope: Rc::new(json!({})),
        at: (Rc::from("x"), String::new()),
    }
}

fn edges(export: &Value) -> Vec<(String, String, String, String)> {
    export["data"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["op_id"].as_str().unwrap().to_string(),
                e["source_full_node_id"].as_str().unwrap().to_string(),
                e["target_full_node_id"].as_str().unwrap().to_string(),
                e["metadata"]["flow"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn has(es: &[(String, String, String, String)], op: &str, src: &str, dst: &str) -> bool {
    es.iter().any(|e| e.0 == op && e.1 == src && e.2 == dst)
}

#[test]
fn the_tree_and_the_order_of_siblings_become_edges() {
    let spans = vec![
        span(
            "llm",
            Some("root"),
            30,
            40,
            json!({
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "q + docs",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "answer",
            }),
        ),
        span(
            "root",
            None,
            0,
            50,
            json!({
                "openinference.span.kind": "CHAIN",
                "input.value": "q", "output.value": "answer",
            }),
        ),
        span(
            "ret",
            Some("root"),
            10,
            20,
            json!({
                "openinference.span.kind": "RETRIEVER",
                "input.value": "q",
                "retrieval.documents.0.document.id": "d1",
                "retrieval.documents.0.document.content": "fact",
            }),
        ),
    ];
    let x = trace("t1", spans);
    let es = edges(&x);
    // The order is by start: root, ret, llm.
    let ops: Vec<&str> = x["data"]["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["op_id"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["span-root", "span-ret", "span-llm"]);
    assert_eq!(x["data"]["operations"][2]["category"], "llm");
    // Parent input to a child's primary input; own inputs to outputs.
    assert!(has(&es, "span-ret", "input:root@1", "input:ret@1"));
    assert!(has(&es, "span-ret", "input:ret@1", "document:d1@1"));
    // The retriever ended before the LLM started: its documents reach
    // the LLM's user message.
    assert!(has(&es, "span-llm", "document:d1@1", "message:llm:0@1"));
    assert!(has(
        &es,
        "span-llm",
        "message:llm:0@1",
        "output_message:llm:0@1"
    ));
    // Only the last child passes its outputs up (the retriever's
    // reached the LLM).
    assert!(has(
        &es,
        "span-root",
        "output_message:llm:0@1",
        "output:root@1"
    ));
    assert!(!has(&es, "span-root", "document:d1@1", "output:root@1"));
    assert_eq!(x["graph_id"], "otel-t1");
}

#[test]
fn siblings_connect_to_the_latest_ones_only() {
    // a, then b and c in parallel, then d: d reads b and c, not a.
    let mk = |id: &str, s: u64, e: u64| span(id, Some("p"), s, e, json!({}));
    let spans = vec![
        span("p", None, 0, 100, json!({})),
        mk("a", 1, 10),
        mk("b", 11, 20),
        mk("c", 12, 30),
        mk("d", 31, 40),
    ];
    let flows = sibling_flows(&spans, &[1, 2, 3, 4]);
    let of = |i: usize| flows.iter().find(|f| f.0 == i).unwrap().1.clone();
    assert_eq!(of(1), Vec::<usize>::new());
    assert_eq!(of(2), vec![1]);
    assert_eq!(of(3), vec![1]);
    let mut d = of(4);
    d.sort();
    assert_eq!(d, vec![2, 3]);
}

#[test]
fn a_thousand_children_make_a_linear_number_of_edges() {
    let mut spans = vec![span(
        "p",
        None,
        0,
        1_000_000,
        json!({"input.value": "q", "output.value": "a"}),
    )];
    // 500 in sequence, then 500 in parallel.
    for k in 0..500u64 {
        spans.push(span(
            &format!("s{k}"),
            Some("p"),
            10 + 2 * k,
            11 + 2 * k,
            json!({"output.value": "x"}),
        ));
    }
    for k in 0..500u64 {
        spans.push(span(
            &format!("q{k}"),
            Some("p"),
            5000,
            6000,
            json!({"output.value": "y"}),
        ));
    }
    spans.push(span(
        "last",
        Some("p"),
        7000,
        8000,
        json!({"input.value": "z"}),
    ));
    let x = trace("t1", spans);
    let n = x["data"]["edges"].as_array().unwrap().len();
    // parent -> child: 1001; sibling: 499 + 500 + 8 (capped); the
    // parallel ones not passed on reach the parent: 492; own: 1.
    assert!(n < 3 * 1002, "{n} edges");
    let last_preds = edges(&x)
        .iter()
        .filter(|e| e.0 == "span-last" && e.3 == "sibling")
        .count();
    assert_eq!(last_preds, SIBLINGS);
}

#[test]
fn missing_parents_make_roots_and_cycles_do_not_hang() {
    let spans = vec![
        span("a", Some("gone"), 0, 5, json!({})),
        span("b", Some("c"), 1, 2, json!({})),
        span("c", Some("b"), 1, 3, json!({})),
    ];
    let x = trace("t1", spans);
    // b's parent chain is a cycle: b is read as a root.
    assert_eq!(x["metadata"]["spans_without_parent"], json!(["a", "b"]));
    let ops = x["data"]["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 3);
    assert_eq!(ops[0]["metadata"]["parent_missing"], true);
    // Spans with nothing to read read the NONE sentinel.
    assert!(edges(&x).iter().any(|e| e.1 == "COMMENT:NONE@1"));
}

#[test]
fn a_failing_evaluation_makes_a_case_and_a_passing_one_does_not() {
    let mut judge = span(
        "judge",
        Some("root"),
        30,
        40,
        json!({
            "openinference.span.kind": "EVALUATOR",
            "input.value": "{\"input\": \"Where?\", \"reference\": \"Paris\"}",
            "evaluations.0.evaluation.name": "correctness",
            "evaluations.0.evaluation.label": "incorrect",
        }),
    );
    judge.links.push(crate::otlp::read::Link {
        trace_id: "t1".into(),
        span_id: "llm".into(),
        attrs: Map::new(),
    });
    let spans = vec![
        span(
            "root",
            None,
            0,
            50,
            json!({"input.value": "Where?", "output.value": "Berlin",
            "trace.evaluations.0.evaluation.label": "correct"}),
        ),
        span(
            "llm",
            Some("root"),
            10,
            20,
            json!({
            "input.value": "prompt", "output.value": "Berlin"}),
        ),
        judge,
    ];
    let x = trace("t1", spans);
    let a = x["data"]["annotations"].as_array().unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["query_id"], "input:llm@1");
    assert_eq!(a[0]["query"], "Where?");
    assert_eq!(a[0]["golden_answers"], "Paris");
    assert_eq!(a[0]["prediction"], "Berlin");
    assert_eq!(a[0]["judge_op_id"], "span-judge");
    assert_eq!(a[0]["evaluated_op_id"], "span-llm");
}

#[test]
fn attributes_nest_at_dots_and_clashes_stay_whole() {
    let m = nest([
        ("llm.model_name".to_string(), json!("m")),
        ("llm".to_string(), json!("x")),
        ("a..b".to_string(), json!(1)),
    ]);
    assert_eq!(m["llm"]["model_name"], "m");
    assert_eq!(m["_flat"]["llm"], "x");
    assert_eq!(m["_flat"]["a..b"], 1);
    assert_eq!(
        iso(1_772_442_000_003_000_500),
        "2026-03-02T09:00:00.003000Z"
    );
}
