//! Each built-in pattern on hand-built traces where it must fire and where
//! it must not; saved patterns through their whole life.

use crate::prelude::*;
use serde_json::json;

use super::{PatternReport, PatternSpec, RunOptions};
use crate::testing::{self, temp_db};
use memtrace_engine::{Cancel, Engine, Value};
use memtrace_gen::builder::{TraceBuilder, VarRef};

/// Imports a built trace.
fn import(db: &Engine, b: TraceBuilder) {
    testing::import(db, &b.finish());
}

fn var(b: &mut TraceBuilder, class: &str, name: &str, value: &str, category: &str) -> VarRef {
    b.variable(Some(class), name, value, category, None, json!({}))
}

/// Where the evidence of the one failed case gets lost.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Extraction,
    Update,
    Deletion,
    Retrieval,
    Response,
}

/// A Mem0-like trace with one failed question ("What car does Omar
/// drive?"), its evidence lost as `fault` says. Returns the op at fault.
fn fault_trace(db: &Engine, graph_id: &str, fault: Fault) -> String {
    let mut b = TraceBuilder::new(graph_id, "u", "mem0", json!({}), 19_000);
    b.session("memory_construction", "session", json!({}));
    let m1 = var(
        &mut b,
        "message",
        "s1:1",
        "'Omar: I drive a blue Volvo.'",
        "message",
    );
    let m2 = var(
        &mut b,
        "message",
        "s1:2",
        "'Lena: My cat Luna sleeps all day.'",
        "message",
    );
    let prompt = b.variable(
        None,
        "extraction-prompt",
        "'Extract the facts worth remembering.'",
        "prompt",
        None,
        json!({}),
    );
    let kept = if fault == Fault::Extraction {
        "['Lena has a cat named Luna']"
    } else {
        "['Omar drives a blue Volvo', 'Lena has a cat named Luna']"
    };
    let facts = var(&mut b, "facts", "s1", kept, "facts");
    let extract = b.op(
        "memory_system.extract_facts",
        "extraction",
        None,
        &[&m1, &m2, &prompt],
        &[&facts],
        json!({}),
    );
    let car = if fault == Fault::Extraction {
        "'Lena has a cat named Luna'"
    } else {
        "'Omar drives a blue Volvo'"
    };
    let memory = var(&mut b, "memory", "mem_1", car, "memory_entry");
    b.op(
        "memory_system.add",
        "update",
        None,
        &[&facts],
        &[&memory],
        json!({}),
    );
    let cat = var(
        &mut b,
        "memory",
        "mem_2",
        "'Lena has a cat named Luna'",
        "memory_entry",
    );
    b.op(
        "memory_system.add",
        "update",
        None,
        &[&facts],
        &[&cat],
        json!({}),
    );
    let mut at_fault = extract;
    let mut read = vec![memory.clone(), cat.clone()];
    match fault {
        Fault::Update => {
            let (_, op) = b.mutate(
                &memory,
                Some("memory"),
                "mem_1",
                "'Omar drives a car'",
                "memory_entry",
                "memory_system.update",
                "update",
                &[],
            );
            at_fault = op;
            read = vec![cat.clone()];
        }
        Fault::Deletion => {
            let marker = var(
                &mut b,
                "delete_marker",
                "mem_1",
                "'deleted'",
                "delete_marker",
            );
            at_fault = b.op(
                "memory_system.delete",
                "update",
                None,
                &[&memory],
                &[&marker],
                json!({}),
            );
            read = vec![cat.clone()];
        }
        _ => {}
    }
    b.session("memory_evaluation", "session", json!({}));
    let query = b.variable(
        Some("query"),
        "Q1",
        "'What car does Omar drive?'",
        "message & query",
        None,
        json!({"evidence": ["message:s1:1"]}),
    );
    let context_value = match fault {
        Fault::Response => "['Omar drives a blue Volvo']",
        _ => "['Lena has a cat named Luna']",
    };
    let context = var(&mut b, "context", "Q1", context_value, "memory_context");
    let mut inputs: Vec<&VarRef> = vec![&query];
    inputs.extend(read.iter());
    let retrieve = b.op(
        "memory_system.retrieve",
        "retrieval",
        None,
        &inputs,
        &[&context],
        json!({}),
    );
    if fault == Fault::Retrieval {
        at_fault = retrieve;
    }
    let pred = var(&mut b, "prediction", "Q1", "'a red Toyota'", "prediction");
    let answer = b.op(
        "question-answering",
        "evaluation",
        None,
        &[&query, &context],
        &[&pred],
        json!({}),
    );
    if fault == Fault::Response {
        at_fault = answer;
    }
    judge(&mut b, &query, &pred, "['a blue Volvo']", "0.0");
    import(db, b);
    at_fault
}

/// A judge op scoring `pred` against `gold`.
fn judge(b: &mut TraceBuilder, query: &VarRef, pred: &VarRef, gold: &str, score: &str) {
    let n = query
        .full_node_id
        .split(':')
        .nth(1)
        .unwrap_or("Q")
        .to_string();
    let n = n.split('@').next().unwrap_or("Q").to_string();
    testing::judge(b, &n, query, pred, gold, "'WRONG'", score);
}

fn run(db: &Engine, specs: &[PatternSpec]) -> PatternReport {
    db.run_patterns(
        specs,
        &RunOptions {
            over: None,
            examples: 10,
        },
        &Cancel::new(),
        &|_, _| {},
    )
    .unwrap()
}

fn spec(name: &str, params: &[(&str, Value)]) -> PatternSpec {
    PatternSpec {
        name: name.into(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        statement: None,
    }
}

/// Hits of one pattern per trace graph id.
fn hits_in(r: &PatternReport, pattern: &str, graph_id: &str) -> u64 {
    r.patterns
        .iter()
        .find(|p| p.name == pattern)
        .unwrap()
        .per_trace
        .iter()
        .filter(|t| t.graph_id == graph_id)
        .map(|t| t.hits)
        .sum()
}

const ERROR_PATTERNS: [(&str, Fault); 5] = [
    ("evidence_never_stored", Fault::Extraction),
    ("stored_then_overwritten", Fault::Update),
    ("evidence_deleted", Fault::Deletion),
    ("stored_not_retrieved", Fault::Retrieval),
    ("retrieved_answered_wrong", Fault::Response),
];

#[test]
fn each_error_type_pattern_fires_on_its_fault_and_on_no_other() {
    let (_d, db) = temp_db();
    let mut faulty = Vec::new();
    for (i, (_, fault)) in ERROR_PATTERNS.iter().enumerate() {
        let op = fault_trace(&db, &format!("g{i}"), *fault);
        faulty.push(op);
    }
    let specs: Vec<PatternSpec> = ERROR_PATTERNS
        .iter()
        .map(|(n, _)| PatternSpec::named(n))
        .collect();
    let r = run(&db, &specs);
    assert_eq!(r.traces, 5);
    for (p, (name, _)) in ERROR_PATTERNS.iter().enumerate() {
        for t in 0..ERROR_PATTERNS.len() {
            let n = hits_in(&r, name, &format!("g{t}"));
            assert_eq!(n, u64::from(p == t), "{name} in g{t}");
        }
        // The hit names the case and the op at fault.
        let o = &r.patterns[p];
        assert_eq!(o.columns[..3], ["case", "query", "op_id"]);
        assert_eq!(o.examples.len(), 1);
        assert_eq!(o.examples[0].graph_id, format!("g{p}"));
        assert_eq!(o.examples[0].row[0], Value::Str("query:Q1@1".into()));
        assert_eq!(
            o.examples[0].row[2],
            Value::Str(faulty[p].clone()),
            "{name}"
        );
    }
    // A confidence floor above every verdict leaves nothing.
    let r = run(
        &db,
        &[spec(
            "evidence_never_stored",
            &[("min_confidence", Value::Float(1.01))],
        )],
    );
    assert_eq!(r.patterns[0].hits, 0);
}

#[test]
fn a_passing_case_fires_no_error_type_pattern() {
    let (_d, db) = temp_db();
    let mut b = TraceBuilder::new("ok", "u", "mem0", json!({}), 19_000);
    b.session("s", "session", json!({}));
    let m = var(
        &mut b,
        "message",
        "s1:1",
        "'Omar: I drive a blue Volvo.'",
        "message",
    );
    let q = b.variable(
        Some("query"),
        "Q1",
        "'What car does Omar drive?'",
        "message & query",
        None,
        json!({"evidence": ["message:s1:1"]}),
    );
    let p = var(&mut b, "prediction", "Q1", "'a blue Volvo'", "prediction");
    b.op(
        "question-answering",
        "evaluation",
        None,
        &[&q, &m],
        &[&p],
        json!({}),
    );
    judge(&mut b, &q, &p, "['a blue Volvo']", "1.0");
    import(&db, b);
    let specs: Vec<PatternSpec> = ERROR_PATTERNS
        .iter()
        .map(|(n, _)| PatternSpec::named(n))
        .collect();
    let r = run(&db, &specs);
    assert!(r.patterns.iter().all(|p| p.hits == 0), "{r:?}");
}

/// A unit written in versions with these values, each by an op of `kind`.
fn versions_trace(db: &Engine, graph_id: &str, values: &[String], kind: &str) {
    let mut b = TraceBuilder::new(graph_id, "u", "mem0", json!({}), 19_000);
    b.session("s", "session", json!({}));
    let mut unit = var(&mut b, "memory", "m", &values[0], "memory_entry");
    for (i, v) in values.iter().enumerate().skip(1) {
        let msg = var(&mut b, "message", &format!("s:{i}"), "'hi'", "message");
        let (next, _) = b.mutate(
            &unit,
            Some("memory"),
            "m",
            v,
            "memory_entry",
            "memory_system.update",
            kind,
            &[&msg],
        );
        unit = next;
    }
    import(db, b);
}

#[test]
fn noop_update_fires_on_an_update_that_repeats_the_value_and_only_then() {
    let (_d, db) = temp_db();
    let same = ["'a'", "'b'", "'b'"].map(String::from);
    versions_trace(&db, "same", &same, "update");
    let changed = ["'a'", "'b'", "'c'"].map(String::from);
    versions_trace(&db, "changed", &changed, "update");
    versions_trace(&db, "other-kind", &same, "extraction");
    let r = run(&db, &[PatternSpec::named("noop_update")]);
    assert_eq!(hits_in(&r, "noop_update", "same"), 1);
    assert_eq!(hits_in(&r, "noop_update", "changed"), 0);
    assert_eq!(hits_in(&r, "noop_update", "other-kind"), 0);
    let row = &r.patterns[0].examples[0].row;
    assert_eq!(row[2], Value::Str("memory:m@3".into()));
    assert_eq!(row[3], Value::Str("memory:m@2".into()));
    // The kinds that count as updates are a parameter.
    let r = run(
        &db,
        &[spec(
            "noop_update",
            &[("kinds", Value::List(vec![Value::Str("extraction".into())]))],
        )],
    );
    assert_eq!(hits_in(&r, "noop_update", "other-kind"), 1);
    assert_eq!(hits_in(&r, "noop_update", "same"), 0);
}

/// A retrieval op whose one output has this value.
fn retrieval_trace(db: &Engine, graph_id: &str, output: &str) {
    let mut b = TraceBuilder::new(graph_id, "u", "rag", json!({}), 19_000);
    b.session("s", "session", json!({}));
    let q = var(&mut b, "query", "Q1", "'anything?'", "message & query");
    let c = var(&mut b, "context", "Q1", output, "memory_context");
    b.op("search", "retrieval", None, &[&q], &[&c], json!({}));
    import(db, b);
}

#[test]
fn empty_retrieval_fires_on_empty_results_and_not_on_others() {
    let (_d, db) = temp_db();
    for (g, v) in [
        ("list", "[]"),
        ("none", "None"),
        ("blank", "  "),
        ("one", "['Omar drives a Volvo']"),
        ("zero", "0"),
        ("long", &"x".repeat(40)),
    ] {
        retrieval_trace(&db, g, v);
    }
    let r = run(&db, &[PatternSpec::named("empty_retrieval")]);
    for g in ["list", "none", "blank"] {
        assert_eq!(hits_in(&r, "empty_retrieval", g), 1, "{g}");
    }
    for g in ["one", "zero", "long"] {
        assert_eq!(hits_in(&r, "empty_retrieval", g), 0, "{g}");
    }
    let e = &r.patterns[0].examples[0];
    assert_eq!(e.graph_id, "list");
    assert_eq!(e.row[2], Value::Str("context:Q1@1".into()));
    assert_eq!(e.row[3], Value::Str("[]".into()));
}

#[test]
fn unbounded_growth_fires_on_a_unit_that_only_grows_and_not_on_a_trimmed_one() {
    let (_d, db) = temp_db();
    let grow: Vec<String> = (1..=20)
        .map(|i| format!("'{}'", "x".repeat(i * 3)))
        .collect();
    versions_trace(&db, "grows", &grow, "update");
    let mut trimmed = grow.clone();
    trimmed[10] = "'x'".into();
    versions_trace(&db, "trimmed", &trimmed, "update");
    versions_trace(&db, "short", &grow[..19], "update");
    let flat: Vec<String> = (0..20).map(|_| "'xxxx'".to_string()).collect();
    versions_trace(&db, "flat", &flat, "update");
    let r = run(&db, &[PatternSpec::named("unbounded_growth")]);
    assert_eq!(hits_in(&r, "unbounded_growth", "grows"), 1);
    for g in ["trimmed", "short", "flat"] {
        assert_eq!(hits_in(&r, "unbounded_growth", g), 0, "{g}");
    }
    let row = &r.patterns[0].examples[0].row;
    assert_eq!(row[0], Value::Str("memory:m".into()));
    assert_eq!(row[1], Value::Int(20));
    assert_eq!(
        (row[2].clone(), row[3].clone()),
        (Value::Int(5), Value::Int(62))
    );
    let r = run(
        &db,
        &[spec(
            "unbounded_growth",
            &[("min_versions", Value::Int(19))],
        )],
    );
    assert_eq!(hits_in(&r, "unbounded_growth", "short"), 1);
}

/// Two questions, each lost by its own extraction op; the ops read the
/// same prompt when `shared`, else one prompt each.
fn prompt_trace(db: &Engine, graph_id: &str, shared: bool) {
    let mut b = TraceBuilder::new(graph_id, "u", "mem0", json!({}), 19_000);
    b.session("s", "session", json!({}));
    let p1 = b.variable(None, "prompt-a", "'Extract.'", "prompt", None, json!({}));
    let p2 = b.variable(
        None,
        "prompt-b",
        "'Extract too.'",
        "prompt",
        None,
        json!({}),
    );
    let facts = [
        (
            "s1:1",
            "'Omar: I drive a blue Volvo.'",
            "Q1",
            "What car does Omar drive?",
            "['a blue Volvo']",
        ),
        (
            "s1:2",
            "'Lena: I live in Porto.'",
            "Q2",
            "Where does Lena live?",
            "['Porto']",
        ),
    ];
    let mut queries = Vec::new();
    for (i, (msg, text, _, _, _)) in facts.iter().enumerate() {
        let m = var(&mut b, "message", msg, text, "message");
        let prompt = if shared || i == 0 { &p1 } else { &p2 };
        let out = var(&mut b, "facts", msg, "['nothing to keep']", "facts");
        b.op(
            &format!("memory_system.extract_{i}"),
            "extraction",
            None,
            &[&m, prompt],
            &[&out],
            json!({}),
        );
    }
    for (msg, _, q, question, gold) in facts {
        let query = b.variable(
            Some("query"),
            q,
            &format!("'{question}'"),
            "message & query",
            None,
            json!({"evidence": [format!("message:{msg}")]}),
        );
        let pred = var(&mut b, "prediction", q, "'I do not know'", "prediction");
        b.op(
            "question-answering",
            "evaluation",
            None,
            &[&query],
            &[&pred],
            json!({}),
        );
        judge(&mut b, &query, &pred, gold, "0.0");
        queries.push(query);
    }
    import(db, b);
}

#[test]
fn shared_failing_prompt_fires_when_several_faulty_ops_read_one_prompt() {
    let (_d, db) = temp_db();
    prompt_trace(&db, "shared", true);
    prompt_trace(&db, "apart", false);
    let r = run(
        &db,
        &[
            PatternSpec::named("shared_failing_prompt"),
            PatternSpec::named("evidence_never_stored"),
        ],
    );
    // Both cases are extraction errors in both traces...
    assert_eq!(hits_in(&r, "evidence_never_stored", "shared"), 2);
    assert_eq!(hits_in(&r, "evidence_never_stored", "apart"), 2);
    // ...but only one trace has a prompt both faulty ops read.
    assert_eq!(hits_in(&r, "shared_failing_prompt", "shared"), 1);
    assert_eq!(hits_in(&r, "shared_failing_prompt", "apart"), 0);
    let row = &r.patterns[0].examples[0].row;
    assert_eq!(row[0], Value::Str("prompt-a@1".into()));
    assert_eq!(
        (row[1].clone(), row[2].clone()),
        (Value::Int(2), Value::Int(2))
    );
    let r = run(
        &db,
        &[spec("shared_failing_prompt", &[("min_ops", Value::Int(1))])],
    );
    assert_eq!(hits_in(&r, "shared_failing_prompt", "apart"), 2);
}

#[test]
fn built_in_parameters_are_checked() {
    let (_d, db) = temp_db();
    let err = |s: PatternSpec| {
        db.run_patterns(&[s], &RunOptions::default(), &Cancel::new(), &|_, _| {})
            .unwrap_err()
            .to_string()
    };
    let e = err(spec("noop_update", &[("kind", Value::Int(1))]));
    assert!(
        e.contains("built-in pattern noop_update has no parameter $kind; its parameters: $kinds"),
        "{e}"
    );
    let e = err(spec(
        "unbounded_growth",
        &[("min_versions", Value::Int(-1))],
    ));
    assert!(
        e.contains("$min_versions must be a whole number of at least 0, not -1"),
        "{e}"
    );
    let e = err(spec(
        "unbounded_growth",
        &[("factor", Value::Str("big".into()))],
    ));
    assert!(e.contains("$factor must be a number, not 'big'"), "{e}");
    let e = err(PatternSpec::named("noop_updates"));
    assert!(
        e.contains("no pattern noop_updates (did you mean noop_update?)"),
        "{e}"
    );
}

#[test]
fn a_run_in_parallel_finds_what_a_run_on_one_thread_finds() {
    let (_d, db) = temp_db();
    for i in 0..12 {
        let fault = ERROR_PATTERNS[i % 5].1;
        fault_trace(&db, &format!("t{i}"), fault);
        retrieval_trace(
            &db,
            &format!("r{i}"),
            if i % 2 == 0 { "[]" } else { "['x']" },
        );
    }
    let specs: Vec<PatternSpec> = super::BUILTINS
        .iter()
        .map(|b| PatternSpec::named(b.name))
        .collect();
    let mut parallel = run(&db, &specs);
    db.clear_cache();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut serial = pool.install(|| run(&db, &specs));
    parallel.seconds = 0.0;
    serial.seconds = 0.0;
    assert_eq!(parallel, serial);
    assert_eq!(parallel.traces, 24);
    let empty = parallel
        .patterns
        .iter()
        .find(|p| p.name == "empty_retrieval")
        .unwrap();
    assert_eq!(empty.hits, 6);
    // Examples come in trace order, whatever thread found them.
    let ids: Vec<u32> = empty.examples.iter().map(|e| e.trace).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
}

#[test]
fn over_limits_the_traces_a_run_reads() {
    let (_d, db) = temp_db();
    retrieval_trace(&db, "rag-1", "[]");
    fault_trace(&db, "mem0-1", Fault::Extraction);
    let opts = RunOptions {
        over: Some("trace.project_id = 'rag'".into()),
        examples: 5,
    };
    let r = db
        .run_patterns(
            &[PatternSpec::named("empty_retrieval")],
            &opts,
            &Cancel::new(),
            &|_, _| {},
        )
        .unwrap();
    assert_eq!((r.traces, r.skipped, r.patterns[0].hits), (1, 1, 1));
    let bad = RunOptions {
        over: Some("var.name = 'x'".into()),
        examples: 5,
    };
    let e = db
        .run_patterns(
            &[PatternSpec::named("empty_retrieval")],
            &bad,
            &Cancel::new(),
            &|_, _| {},
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("var.name"), "{e}");
}

#[test]
fn saved_patterns_keep_their_history_through_saves_and_drops() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = crate::open(&path).unwrap();
        retrieval_trace(&db, "a", "[]");
        retrieval_trace(&db, "b", "['x']");
        let v = db
            .save_pattern(
                "searches",
                "FIND ops WHERE op.category = $kind RETURN op.id, op.name",
                &[("kind".into(), Value::Str("retrieval".into()))],
                "ana",
            )
            .unwrap();
        assert_eq!(v, 1);
        let r = run(&db, &[PatternSpec::named("searches")]);
        assert_eq!(r.patterns[0].hits, 2);
        assert_eq!(r.patterns[0].columns, ["op.id", "op.name"]);
        // A parameter given at run time overrides the default.
        let r = run(
            &db,
            &[spec("searches", &[("kind", Value::Str("update".into()))])],
        );
        assert_eq!(r.patterns[0].hits, 0);
        // A new version replaces the definition.
        let v = db
            .save_pattern(
                "searches",
                "FIND ops WHERE op.category = $kind AND trace.id = 'a'",
                &[("kind".into(), Value::Str("retrieval".into()))],
                "ben",
            )
            .unwrap();
        assert_eq!(v, 2);
        db.drop_pattern("searches", "ana").unwrap();
    }
    let db = crate::open(&path).unwrap();
    let h = db.pattern_history("searches").unwrap();
    let actions: Vec<(&str, &str)> = h
        .iter()
        .map(|e| (e.action.as_str(), e.author.as_str()))
        .collect();
    assert_eq!(actions, [("save", "ana"), ("save", "ben"), ("drop", "ana")]);
    assert!(h[1]
        .statement
        .as_deref()
        .unwrap()
        .contains("trace.id = 'a'"));
    assert!(!db.patterns().unwrap().iter().any(|p| p.name == "searches"));
    let e = run_err(&db, "searches");
    assert!(e.contains("no pattern searches"), "{e}");
    // Saved again after the drop: version 3, visible again.
    db.save_pattern("searches", "FIND ops", &[], "ana").unwrap();
    let p = db.patterns().unwrap();
    let p = p.iter().find(|p| p.name == "searches").unwrap();
    assert_eq!((p.version, p.builtin), (3, false));
}

fn run_err(db: &Engine, name: &str) -> String {
    db.run_patterns(
        &[PatternSpec::named(name)],
        &RunOptions::default(),
        &Cancel::new(),
        &|_, _| {},
    )
    .unwrap_err()
    .to_string()
}

#[test]
fn bad_saves_and_drops_store_nothing() {
    let (_d, db) = temp_db();
    let e = db
        .save_pattern("noop_update", "FIND ops", &[], "ana")
        .unwrap_err()
        .to_string();
    assert!(e.contains("noop_update is a built-in pattern"), "{e}");
    let e = db
        .save_pattern("p", "FIND ops WHERE op.category = $kind", &[], "ana")
        .unwrap_err()
        .to_string();
    assert!(e.contains("$kind has no default"), "{e}");
    let e = db
        .save_pattern("p", "FIND opz", &[], "ana")
        .unwrap_err()
        .to_string();
    assert!(e.contains("opz"), "{e}");
    let e = db.drop_pattern("p", "ana").unwrap_err().to_string();
    assert!(e.contains("no saved pattern p"), "{e}");
    let e = db
        .drop_pattern("empty_retrieval", "ana")
        .unwrap_err()
        .to_string();
    assert!(e.contains("built-in pattern and cannot be dropped"), "{e}");
    assert!(db.pattern_history("p").is_err());
    assert_eq!(db.patterns().unwrap().len(), super::BUILTINS.len());
}

#[test]
fn a_saved_traversal_counts_no_hits_in_traces_without_its_start() {
    let (_d, db) = temp_db();
    fault_trace(&db, "has", Fault::Extraction);
    retrieval_trace(&db, "lacks", "[]");
    db.save_pattern(
        "car",
        "TRACE prediction:Q1 RETURN nodes LIMIT $n",
        &[("n".into(), Value::Int(100))],
        "ana",
    )
    .unwrap();
    let r = run(&db, &[PatternSpec::named("car")]);
    assert_eq!(r.patterns[0].per_trace.len(), 1);
    assert_eq!(r.patterns[0].per_trace[0].graph_id, "has");
    assert!(r.patterns[0].hits >= 2);
}

#[test]
fn findings_are_stored_and_a_later_run_reads_them_instead_of_attributing_again() {
    use super::findings::{memo_key, Finding};
    use crate::attrib::ErrorType;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let never = [spec("evidence_never_stored", &[])];
    let deleted = [spec("evidence_deleted", &[])];
    let key = {
        let db = crate::open(&path).unwrap();
        fault_trace(&db, "g", Fault::Extraction);
        assert_eq!(hits_in(&run(&db, &never), "evidence_never_stored", "g"), 1);
        let key = memo_key(&db.trace("g").unwrap().info());
        let body = db.memo(&key).unwrap().expect("the findings were stored");
        let mut stored: Vec<Finding> = serde_json::from_slice(&body).unwrap();
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].error_type, Some(ErrorType::ExtractionError));
        // Stand-in findings that no attribution of this trace gives: a run
        // in a new process can only report them by reading what is stored.
        stored[0].error_type = Some(ErrorType::DeletionError);
        db.put_memo(&key, &serde_json::to_vec(&stored).unwrap())
            .unwrap();
        key
    };
    {
        let db = crate::open(&path).unwrap();
        assert_eq!(hits_in(&run(&db, &deleted), "evidence_deleted", "g"), 1);
        assert_eq!(hits_in(&run(&db, &never), "evidence_never_stored", "g"), 0);
        // A memo that does not read back is attributed again, and replaced.
        db.put_memo(&key, b"not json").unwrap();
    }
    let db = crate::open(&path).unwrap();
    assert_eq!(hits_in(&run(&db, &never), "evidence_never_stored", "g"), 1);
    let body = db.memo(&key).unwrap().unwrap();
    assert!(serde_json::from_slice::<Vec<Finding>>(&body).is_ok());
}
