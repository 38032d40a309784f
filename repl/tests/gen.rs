// End-to-end tests of `memtrace gen`: every generated file follows the
// smartcomment export rules and imports; labels point at real ops of the
// right kind; the same seed writes the same bytes.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use common::*;
use serde_json::Value;

const SMALL: &[&str] = &[
    "--sessions",
    "4..5",
    "--messages",
    "10..12",
    "--questions",
    "25",
];

fn gen(cwd: &Path, out: &str, seed: &str, traces: &str) -> std::process::Output {
    let mut args = vec![
        "gen", "--system", "all", "--traces", traces, "--seed", seed, "--out", out,
    ];
    args.extend_from_slice(SMALL);
    run(cwd, None, &args)
}

fn is_stamp(s: &str) -> bool {
    // YYYY-MM-DD HH:MM:SS.sss
    let b = s.as_bytes();
    b.len() == 23
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b' ',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            _ => c.is_ascii_digit(),
        })
}

/// The export rules of FORMAT.md, checked on one document; returns the
/// problems found.
fn format_problems(doc: &Value) -> Vec<String> {
    let mut p = Vec::new();
    for k in [
        "graph_id",
        "user_id",
        "project_id",
        "storage_path",
        "strict",
        "driver_type",
        "created_at",
        "metadata",
        "data",
    ] {
        if doc.get(k).is_none() {
            p.push(format!("missing top-level {k}"));
        }
    }
    if doc["driver_type"] != "in_memory" {
        p.push("driver_type is not in_memory".into());
    }
    let list = |k: &str| doc["data"][k].as_array().cloned().unwrap_or_default();
    let (nodes, edges, ops, sessions) = (
        list("nodes"),
        list("edges"),
        list("operations"),
        list("sessions"),
    );
    let common = [
        "created_at",
        "filename",
        "lineno",
        "trigger_point",
        "metadata",
        "graph_id",
        "user_id",
        "project_id",
    ];
    let mut check = |what: &str, recs: &[Value], fields: &[&str], id: &str| -> HashSet<String> {
        let mut ids = HashSet::new();
        for (i, r) in recs.iter().enumerate() {
            for f in common.iter().chain(fields) {
                if r.get(*f).is_none() {
                    p.push(format!("{what}[{i}] lacks {f}"));
                }
            }
            if !r["created_at"].as_str().is_some_and(is_stamp) {
                p.push(format!("{what}[{i}] bad created_at {}", r["created_at"]));
            }
            let tp = format!(
                "{}:{}",
                r["filename"].as_str().unwrap_or("?"),
                r["lineno"].as_i64().unwrap_or(-1)
            );
            if r["trigger_point"].as_str() != Some(tp.as_str()) {
                p.push(format!("{what}[{i}] trigger_point is not filename:lineno"));
            }
            if r["graph_id"] != doc["graph_id"] {
                p.push(format!("{what}[{i}] has another graph_id"));
            }
            let key = r[id].as_str().unwrap_or_default().to_string();
            if !ids.insert(key.clone()) {
                p.push(format!("{what}[{i}] repeats id {key}"));
            }
        }
        ids
    };
    let session_ids = check(
        "sessions",
        &sessions,
        &["session_id", "session_name", "comment", "category"],
        "session_id",
    );
    let op_ids = check(
        "operations",
        &ops,
        &["op_id", "op_name", "comment", "category", "session_id"],
        "op_id",
    );
    check(
        "edges",
        &edges,
        &[
            "edge_id",
            "op_id",
            "category",
            "comment",
            "source_full_node_id",
            "target_full_node_id",
            "session_id",
        ],
        "edge_id",
    );
    let node_ids = check(
        "nodes",
        &nodes,
        &[
            "name",
            "version",
            "value",
            "comment",
            "category",
            "class_name",
            "session_id",
            "full_name",
            "node_id",
            "full_node_id",
        ],
        "full_node_id",
    );
    let mut last_version: HashMap<String, u64> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = n["name"].as_str().unwrap_or_default();
        let full = match n["class_name"].as_str() {
            Some(c) => format!("{c}:{name}"),
            None => name.to_string(),
        };
        let v = n["version"].as_u64().unwrap_or(0);
        if n["full_name"].as_str() != Some(full.as_str())
            || n["full_node_id"].as_str() != Some(format!("{full}@{v}").as_str())
            || n["node_id"].as_str() != Some(format!("{name}@{v}").as_str())
        {
            p.push(format!("nodes[{i}] computed ids disagree ({full}@{v})"));
        }
        let before = last_version.insert(full.clone(), v).unwrap_or(0);
        if v != before + 1 {
            p.push(format!("nodes[{i}] {full}: version {v} after {before}"));
        }
        if !n["value"].is_string() {
            p.push(format!("nodes[{i}] value is not a string"));
        }
        if !session_ids.contains(n["session_id"].as_str().unwrap_or_default()) {
            p.push(format!("nodes[{i}] unknown session"));
        }
    }
    for (i, o) in ops.iter().enumerate() {
        if !session_ids.contains(o["session_id"].as_str().unwrap_or_default()) {
            p.push(format!("operations[{i}] unknown session"));
        }
    }
    for (i, e) in edges.iter().enumerate() {
        for (k, set) in [
            ("session_id", &session_ids),
            ("op_id", &op_ids),
            ("source_full_node_id", &node_ids),
            ("target_full_node_id", &node_ids),
        ] {
            if !set.contains(e[k].as_str().unwrap_or_default()) {
                p.push(format!("edges[{i}] {k} {} does not exist", e[k]));
            }
        }
    }
    p
}

/// The op categories an error type may be pinned on.
fn fits(error_type: &str, op_category: &str) -> bool {
    match error_type {
        "ExtractionError" => matches!(op_category, "extraction" | "update" | "initialization"),
        "UpdateError" | "DeletionError" => op_category == "update",
        "RetrievalError" => op_category == "retrieval",
        "ResponseError" => op_category == "evaluation",
        _ => false,
    }
}

#[test]
fn every_generated_file_follows_the_format_imports_and_labels_real_ops() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(gen(dir.path(), "set", "5", "8"));
    assert!(
        stdout(&out).contains("generated 8 trace(s)"),
        "{}",
        stdout(&out)
    );
    let set = dir.path().join("set");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(set.join("manifest.json")).unwrap()).unwrap();
    let traces = manifest["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 8);
    let mut systems = HashSet::new();
    let mut failed_total = 0;
    for t in traces {
        let doc: Value = serde_json::from_str(
            &std::fs::read_to_string(set.join(t["file"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        let problems = format_problems(&doc);
        assert!(problems.is_empty(), "{}: {problems:#?}", t["file"]);
        systems.insert(doc["project_id"].as_str().unwrap().to_string());
        let data = &doc["data"];
        let n = |k: &str| data[k].as_array().map_or(0, Vec::len) as u64;
        assert_eq!(n("nodes"), t["variables"].as_u64().unwrap());
        assert_eq!(n("operations"), t["ops"].as_u64().unwrap());
        assert_eq!(n("edges"), t["edges"].as_u64().unwrap());
        assert_eq!(n("annotations"), t["failed"].as_u64().unwrap());
        failed_total += t["failed"].as_u64().unwrap();

        // Every failed question is annotated, and only those.
        let nodes: HashMap<&str, &Value> = data["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["full_node_id"].as_str().unwrap(), n))
            .collect();
        let ops: HashMap<&str, &Value> = data["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["op_id"].as_str().unwrap(), o))
            .collect();
        let zero: HashSet<String> = nodes
            .values()
            .filter(|n| n["class_name"] == "judge_score" && n["value"] == "0.0")
            .map(|n| format!("query:{}@1", n["name"].as_str().unwrap()))
            .collect();
        let annotated: HashSet<String> = data["annotations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a["query_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(zero, annotated, "{}", t["file"]);
        for a in data["annotations"].as_array().into_iter().flatten() {
            let q = nodes[a["query_id"].as_str().unwrap()];
            assert_eq!(q["category"], "message & query");
            let evidence: Vec<String> = q["metadata"]["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| format!("{}@1", e.as_str().unwrap()))
                .collect();
            let source: Vec<String> = a["source_evidence_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_string())
                .collect();
            assert_eq!(evidence, source);
            for e in &source {
                assert_eq!(nodes[e.as_str()]["class_name"], "message", "{e}");
            }
            let op = ops
                .get(a["final_op_id"].as_str().unwrap())
                .unwrap_or_else(|| panic!("{}: no op {}", t["file"], a["final_op_id"]));
            let (ty, cat) = (
                a["final_error_type"].as_str().unwrap(),
                op["category"].as_str().unwrap(),
            );
            assert!(
                fits(ty, cat),
                "{ty} pinned on a {cat} op ({})",
                op["op_name"]
            );
        }
        // The fault plan is kept for audit and names real ops.
        for f in doc["metadata"]["fault_plan"].as_array().unwrap() {
            assert!(ops.contains_key(f["op_id"].as_str().unwrap()), "{f}");
        }
    }
    assert_eq!(systems.len(), 4, "{systems:?}");
    assert_eq!(manifest["totals"]["failed"].as_u64().unwrap(), failed_total);

    // The whole folder imports (the manifest is skipped), cases included.
    let db = dir.path().join("g.db");
    let out = ok(run(dir.path(), Some(&db), &["import", "set"]));
    assert!(
        stdout(&out).contains("8 trace(s) stored from 8 file(s); 0 file(s) failed"),
        "{}",
        stdout(&out)
    );
    let stats = json(&ok(run(
        dir.path(),
        Some(&db),
        &["stats", "--format", "json"],
    )));
    assert_eq!(stats["traces"], 8);
    assert_eq!(stats["cases"].as_u64().unwrap(), failed_total);
}

#[test]
fn the_same_seed_writes_the_same_bytes_and_sets_are_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    ok(gen(dir.path(), "a", "11", "4"));
    ok(gen(dir.path(), "b", "11", "4"));
    ok(gen(dir.path(), "c", "12", "4"));
    let read = |d: &str, f: &str| std::fs::read(dir.path().join(d).join(f)).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(dir.path().join("a"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files.len(), 5, "{files:?}");
    for f in &files {
        assert_eq!(read("a", f), read("b", f), "{f} differs between two runs");
    }
    let first_c = std::fs::read_dir(dir.path().join("c")).unwrap().count();
    assert_eq!(first_c, 5);
    assert_ne!(
        read("a", "manifest.json"),
        read("c", "manifest.json"),
        "another seed, another set"
    );

    // A second run into the same folder is refused, and leaves it alone.
    let again = gen(dir.path(), "a", "99", "2");
    assert!(!again.status.success());
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    assert_eq!(read("a", &files[0]), read("b", &files[0]));
    let mut args = vec![
        "gen", "--traces", "1", "--seed", "99", "--out", "a", "--force",
    ];
    args.extend_from_slice(SMALL);
    ok(run(dir.path(), None, &args));
    let m: Value = serde_json::from_slice(&read("a", "manifest.json")).unwrap();
    assert_eq!(m["totals"]["traces"], 1);
}

#[test]
fn bad_generator_options_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (
            vec!["gen", "--out", "x", "--sessions", "9..2"],
            "the low end comes first",
        ),
        (
            vec!["gen", "--out", "x", "--messages", "ten"],
            "not a whole number",
        ),
        (
            vec!["gen", "--out", "x", "--fault-rate", "1.5"],
            "--fault-rate must be between 0 and 1",
        ),
        (
            vec!["gen", "--out", "x", "--traces", "0"],
            "--traces must be at least 1",
        ),
        (
            vec!["gen", "--out", "x", "--system", "letta"],
            "invalid value 'letta'",
        ),
    ] {
        let o = run(dir.path(), None, &args);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    assert!(!dir.path().join("x").join("manifest.json").exists());
}

#[test]
fn evidence_recall_scores_pseudo_evidence_on_every_failed_case() {
    let dir = tempfile::tempdir().unwrap();
    ok(gen(dir.path(), "set", "11", "4"));
    let db = dir.path().join("db");
    ok(run(dir.path(), Some(&db), &["import", "set"]));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("set/manifest.json")).unwrap(),
    )
    .unwrap();
    let failed: u64 = manifest["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["failed"].as_u64().unwrap())
        .sum();
    assert!(failed > 0);
    let o = ok(run(
        dir.path(),
        Some(&db),
        &["evidence-recall", "--k", "3", "--format", "json"],
    ));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["k"], 3);
    // Every generated case names its source evidence.
    assert_eq!(v["total"]["cases"].as_u64().unwrap(), failed);
    let recall = v["total"]["recall"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&recall), "{v}");
    assert!(v["total"]["found"].as_u64() <= v["total"]["items"].as_u64());
    // More messages find at least as much.
    let wider = ok(run(
        dir.path(),
        Some(&db),
        &["evidence-recall", "--k", "20", "--format", "json"],
    ));
    let w: Value = serde_json::from_slice(&wider.stdout).unwrap();
    assert!(w["total"]["found"].as_u64() >= v["total"]["found"].as_u64());
    let table = stdout(&ok(run(dir.path(), Some(&db), &["evidence-recall"])));
    assert!(
        table.contains("recall@8") && table.contains("\nall "),
        "{table}"
    );
    let bad = run(dir.path(), Some(&db), &["evidence-recall", "--k", "0"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("--k must be at least 1"));
}

#[test]
fn attribute_stores_verdicts_once_eval_scores_them_and_report_writes_both_pages() {
    let dir = tempfile::tempdir().unwrap();
    ok(gen(dir.path(), "set", "11", "4"));
    let db = dir.path().join("db");
    ok(run(dir.path(), Some(&db), &["import", "set"]));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("set/manifest.json")).unwrap(),
    )
    .unwrap();
    let failed = manifest["totals"]["failed"].as_u64().unwrap();
    assert!(failed > 0);

    let o = ok(run(
        dir.path(),
        Some(&db),
        &["attribute", "--using", "evidence", "--format", "json"],
    ));
    let verdicts: Value = serde_json::from_slice(&o.stdout).unwrap();
    let verdicts = verdicts.as_array().unwrap();
    assert_eq!(verdicts.len() as u64, failed);
    for v in verdicts {
        assert!(v["error_type"].is_string() && v["op_id"].is_string(), "{v}");
        assert_eq!(v["method"], "evidence");
        assert!(!v["reason"].as_str().unwrap().is_empty());
    }
    // A second run finds the same and stores nothing new.
    let again = stdout(&ok(run(dir.path(), Some(&db), &["attribute"])));
    assert!(again.contains("0 new verdict(s) stored"), "{again}");
    let counted = json(&ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            "FIND attributions GROUP BY error_type RETURN error_type, count(*) AS n",
            "--format",
            "json",
        ],
    )));
    let total: u64 = counted["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_u64().unwrap())
        .sum();
    assert_eq!(total, failed, "{counted}");

    let e = json(&ok(run(
        dir.path(),
        Some(&db),
        &[
            "eval",
            "--method",
            "evidence",
            "--setting",
            "benchmark",
            "--format",
            "json",
        ],
    )));
    assert_eq!(e["setting"], "benchmark");
    assert_eq!(e["cases"].as_u64().unwrap(), failed);
    for key in ["error_type_accuracy", "op_id_accuracy"] {
        let x = e[key].as_f64().unwrap();
        assert!(x >= 0.85, "{key} {x}: {e}");
    }
    assert_eq!(e["by_system"].as_object().unwrap().len(), 4, "{e}");
    assert!(!e["by_error_type"].as_object().unwrap().is_empty());
    assert!(e["confusion"].is_object() && e["median_micros"].is_u64());
    let table = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &["eval", "--setting", "benchmark"],
    )));
    assert!(
        table.contains("By memory system")
            && table.contains("Confusion")
            && table.contains("Accuracy against coverage"),
        "{table}"
    );
    // Without --setting: the three settings side by side, from the same cases.
    let all = json(&ok(run(
        dir.path(),
        Some(&db),
        &["eval", "--format", "json"],
    )));
    for s in ["benchmark", "evaluation", "production"] {
        let one = &all["settings"][s];
        assert_eq!(one["setting"], s, "{all}");
        assert_eq!(one["cases"].as_u64().unwrap(), failed);
        let bands = one["calibration"]["bands"].as_array().unwrap();
        assert_eq!(bands.len(), 6, "{one}");
    }
    assert_eq!(
        all["settings"]["benchmark"]["op_id_accuracy"],
        e["op_id_accuracy"]
    );
    let table = stdout(&ok(run(dir.path(), Some(&db), &["eval"])));
    assert!(
        table.contains("benchmark op id")
            && table.contains("evaluation op id")
            && table.contains("production op id")
            && table.contains("confident"),
        "{table}"
    );

    ok(run(dir.path(), Some(&db), &["report", "--out", "rep"]));
    let html = std::fs::read_to_string(dir.path().join("rep/report.html")).unwrap();
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    assert!(html.contains("<svg") && !html.contains("http://") && !html.contains("https://"));
    for system in ["long_context", "rag", "mem0", "evermemos"] {
        assert!(md.contains(system) && html.contains(system), "{system}");
    }

    // The statement: every case of one trace, and one case by its query.
    let mem0 = manifest["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["system"] == "mem0" && t["failed"].as_u64().unwrap() > 0)
        .expect("a mem0 trace with failures");
    let g = mem0["graph_id"].as_str().unwrap();
    let rows = json(&ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            &format!("ATTRIBUTE CASES IN TRACE '{g}' USING evidence"),
            "--format",
            "json",
        ],
    )));
    assert_eq!(
        rows["columns"],
        serde_json::json!([
            "trace",
            "case",
            "error_type",
            "op_id",
            "op_name",
            "confidence",
            "reason"
        ])
    );
    let rows = rows["rows"].as_array().unwrap();
    assert_eq!(rows.len() as u64, mem0["failed"].as_u64().unwrap());
    let case = rows[0][1].as_str().unwrap().to_string();
    let one = json(&ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            &format!("ATTRIBUTE '{case}' IN TRACE '{g}' USING evidence"),
            "--format",
            "json",
        ],
    )));
    assert_eq!(one["rows"].as_array().unwrap().len(), 1);
    assert_eq!(one["rows"][0], rows[0]);
    let bad = run(
        dir.path(),
        Some(&db),
        &[
            "query",
            &format!("ATTRIBUTE query:Q9999 IN TRACE '{g}' USING evidence"),
        ],
    );
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("no failed case query:Q9999"),
        "{}",
        stderr(&bad)
    );
    // Nothing new was stored by the statements: the verdicts were already there.
    let after = json(&ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            "FIND attributions RETURN count(*)",
            "--format",
            "json",
        ],
    )));
    assert_eq!(after["rows"][0][0].as_u64().unwrap(), failed);

    let bad = run(dir.path(), Some(&db), &["attribute", "--using", "oracle"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("unknown attribution method 'oracle'"),
        "{}",
        stderr(&bad)
    );
    let bad = run(dir.path(), Some(&db), &["attribute", "--trace", "nope"]);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("no trace nope"), "{}", stderr(&bad));
}

#[test]
fn every_style_writes_labelled_traces_that_import_and_eval_reports_per_style() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "gen", "--system", "all", "--style", "all", "--traces", "16", "--seed", "3", "--out",
        "styled",
    ];
    args.extend_from_slice(SMALL);
    let out = ok(run(dir.path(), None, &args));
    assert!(stdout(&out).contains("styles: "), "{}", stdout(&out));
    let set = dir.path().join("styled");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(set.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["style"], "all");
    let styles = ["classic", "membase", "narrative", "budgeted"];
    let mut seen: HashMap<String, HashSet<String>> = HashMap::new();
    let mut failed_total = 0;
    for t in manifest["traces"].as_array().unwrap() {
        let doc: Value = serde_json::from_str(
            &std::fs::read_to_string(set.join(t["file"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        let problems = format_problems(&doc);
        assert!(problems.is_empty(), "{}: {problems:#?}", t["file"]);
        let style = t["style"].as_str().unwrap().to_string();
        // Classic traces are as they were; the others name their style.
        match style.as_str() {
            "classic" => assert!(doc["metadata"].get("gen_style").is_none()),
            s => assert_eq!(doc["metadata"]["gen_style"], s),
        }
        seen.entry(style.clone())
            .or_default()
            .insert(doc["project_id"].as_str().unwrap().to_string());
        let data = &doc["data"];
        let ops: HashMap<&str, &Value> = data["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["op_id"].as_str().unwrap(), o))
            .collect();
        let nodes: HashMap<&str, &Value> = data["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["full_node_id"].as_str().unwrap(), n))
            .collect();
        for a in data["annotations"].as_array().into_iter().flatten() {
            let op = ops[a["final_op_id"].as_str().unwrap()];
            let ty = a["final_error_type"].as_str().unwrap();
            assert!(
                fits(ty, op["category"].as_str().unwrap()),
                "{style}: {ty} on {}",
                op["op_name"]
            );
            for e in a["source_evidence_ids"].as_array().unwrap() {
                assert_eq!(nodes[e.as_str().unwrap()]["class_name"], "message");
            }
            failed_total += 1;
        }
    }
    for s in styles {
        assert_eq!(seen[s].len(), 4, "{s} meets every system: {seen:?}");
        assert!(manifest["by_style"][s]["traces"].as_u64().unwrap() == 4);
    }
    assert_eq!(manifest["totals"]["failed"].as_u64().unwrap(), failed_total);

    // The set imports whole, every failed case with its label; eval scores per style.
    let db = dir.path().join("s.db");
    let out = ok(run(dir.path(), Some(&db), &["import", "styled"]));
    assert!(
        stdout(&out).contains("16 trace(s) stored from 16 file(s); 0 file(s) failed"),
        "{}",
        stdout(&out)
    );
    let stats = json(&ok(run(
        dir.path(),
        Some(&db),
        &["stats", "--format", "json"],
    )));
    assert_eq!(stats["cases"].as_u64().unwrap(), failed_total);
    let e = json(&ok(run(
        dir.path(),
        Some(&db),
        &["eval", "--setting", "benchmark", "--format", "json"],
    )));
    assert_eq!(
        e["cases"].as_u64().unwrap(),
        failed_total,
        "every case is labelled"
    );
    assert_eq!(e["unlabelled"], 0);
    let by_style = e["by_style"].as_object().unwrap();
    assert_eq!(by_style.len(), 4, "{e}");
    let summed: u64 = by_style
        .values()
        .map(|s| s["cases"].as_u64().unwrap())
        .sum();
    assert_eq!(summed, failed_total);
    assert!(
        e["by_style_system"]["membase/mem0"]["cases"].is_u64(),
        "{e}"
    );
    let table = stdout(&ok(run(dir.path(), Some(&db), &["eval"])));
    assert!(table.contains("By generator style"), "{table}");

    // A classic set's eval has no style table.
    ok(gen(dir.path(), "plain", "3", "4"));
    let db2 = dir.path().join("p.db");
    ok(run(dir.path(), Some(&db2), &["import", "plain"]));
    let table = stdout(&ok(run(dir.path(), Some(&db2), &["eval"])));
    assert!(!table.contains("By generator style"), "{table}");
}

#[test]
fn an_unknown_style_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), None, &["gen", "--out", "x", "--style", "fancy"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("invalid value 'fancy'"),
        "{}",
        stderr(&o)
    );
}
