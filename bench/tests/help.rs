//! The benchmark binary as a user meets it: `--help` names every benchmark
//! with examples, a wrong argument is refused with a clear message, and
//! `walk-split` runs on a small database.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_memtrace-bench"))
        .args(args)
        .output()
        .expect("memtrace-bench runs")
}

#[test]
fn help_lists_every_benchmark_with_examples() {
    let out = bench(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in [
        "import",
        "suite",
        "llm",
        "attribution",
        "patterns",
        "walk-split",
    ] {
        assert!(text.contains(sub), "{sub} missing from --help:\n{text}");
    }
    assert!(text.contains("Examples"), "{text}");
    assert!(
        !text.contains("suite-step"),
        "internal steps are hidden:\n{text}"
    );
}

#[test]
fn a_wrong_argument_is_refused() {
    let out = bench(&["import", "--variables", "many"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--variables"), "{err}");
}

#[test]
fn suite_help_names_its_cold_warm_and_growth_options() {
    let out = bench(&["suite", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--scales",
        "--cold",
        "--warm",
        "--growth",
        "--no-big",
        "--no-duckdb",
        "--keep",
    ] {
        assert!(
            text.contains(flag),
            "{flag} missing from suite --help:\n{text}"
        );
    }
    assert!(text.contains("DuckDB"), "{text}");
}

#[test]
fn a_suite_without_warm_runs_is_refused() {
    let out = bench(&["suite", "--scales", "1", "--warm", "0", "--no-duckdb"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--warm"), "{err}");
}

/// A database of one chain of `n` variables ending in a `prediction`,
/// each written from the one before by an op of its own.
fn chain_db(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    use serde_json::json;
    let class = |i: usize| if i + 1 == n { "prediction" } else { "v" };
    let id = |i: usize| format!("{}:{i}@1", class(i));
    let nodes: Vec<_> = (0..n)
        .map(|i| json!({"name": format!("{i}"), "class_name": class(i), "version": 1, "value": "x", "session_id": "s"}))
        .collect();
    let ops: Vec<_> = (1..n)
        .map(|i| json!({"op_id": format!("op{i}"), "op_name": "step", "category": "update", "session_id": "s"}))
        .collect();
    let edges: Vec<_> = (1..n)
        .map(|i| {
            json!({"edge_id": format!("e{i}"), "op_id": format!("op{i}"), "session_id": "s",
                        "source_full_node_id": id(i - 1), "target_full_node_id": id(i)})
        })
        .collect();
    let trace = json!({"graph_id": "chain", "data": {"sessions": [{"session_id": "s"}],
        "operations": ops, "nodes": nodes, "edges": edges}});
    let file = dir.join("chain.json");
    std::fs::write(&file, trace.to_string()).unwrap();
    let path = dir.join("db");
    let db = memtrace::Database::open(&path).unwrap();
    for report in db.import_paths(&[file], &memtrace::ImportOptions::default(), &mut |_| {}) {
        report.result.unwrap();
    }
    path
}

#[test]
fn walk_split_compares_every_workload_with_the_count_across_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let db = chain_db(dir.path(), 50);
    let db = db.to_str().unwrap();
    let out = bench(&["walk-split", "--db", db, "--runs", "1", "--rounds", "3"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("closure of 49 nodes and 49 ops"), "{text}");
    // Eight workloads in each of the three rounds, then their spread.
    assert_eq!(text.matches("ops by rows").count(), 4, "{text}");
    assert_eq!(text.matches("ops rows unkept").count(), 4, "{text}");
    assert_eq!(text.matches("nodes by rows").count(), 4, "{text}");
    assert_eq!(text.matches("nodes by batches").count(), 4, "{text}");
    assert!(text.contains("across the 3 rounds"), "{text}");
    assert!(text.contains("count query"), "{text}");
    assert!(
        text.contains("1.00x    1.00x    1.00x       3 of 3"),
        "{text}"
    );
    // Only the spread.
    let out = bench(&[
        "walk-split",
        "--db",
        db,
        "--runs",
        "1",
        "--rounds",
        "3",
        "--summary",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("ops by rows").count(), 1, "{text}");
    assert!(!text.contains("median us"), "{text}");
    // No runs: refused, naming the option.
    let out = bench(&["walk-split", "--db", db, "--runs", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--runs"));
}
