//! `memtrace export --format parquet`: the devsplit traces, attributed, are
//! written as Parquet tables whose row counts are the database's own, in
//! one file per table or in Hive folders by trace or by project, and bad
//! requests (an unknown trace, a folder with files, a folder that cannot
//! be made) leave nothing behind.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{Array, Int64Array, StringArray};
use common::*;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const TABLES: [&str; 7] = [
    "traces", "sessions", "nodes", "edges", "ops", "cases", "verdicts",
];

/// The four devsplit traces imported into `t.db`, with evidence verdicts stored.
fn attributed() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let devsplit = fixtures().join("devsplit");
    ok(run(
        dir.path(),
        Some(&db),
        &["import", devsplit.to_str().unwrap()],
    ));
    ok(run(dir.path(), Some(&db), &["attribute"]));
    (dir, db)
}

fn query_count(dir: &Path, db: &Path, q: &str) -> u64 {
    let v = json(&ok(run(dir, Some(db), &["query", q, "--format", "json"])));
    v["rows"].as_array().expect("rows").len() as u64
}

/// The database's own counts for each table.
fn expected(dir: &Path, db: &Path) -> BTreeMap<&'static str, u64> {
    let s = json(&ok(run(dir, Some(db), &["stats", "--format", "json"])));
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("stats {k}: {s}"));
    BTreeMap::from([
        ("traces", n("traces")),
        ("sessions", n("sessions")),
        ("nodes", n("variables")),
        ("edges", n("edges")),
        ("ops", n("ops")),
        ("cases", query_count(dir, db, "FIND cases")),
        ("verdicts", query_count(dir, db, "FIND attributions")),
    ])
}

/// Every Parquet file under `dir`, sorted.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "parquet") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Rows and column names of one Parquet file, read with the parquet crate.
fn read(path: &Path) -> (u64, Vec<String>, Vec<arrow_array::RecordBatch>) {
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let names = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let batches: Vec<_> = b.build().unwrap().map(|r| r.unwrap()).collect();
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    (rows, names, batches)
}

/// Rows of each table, summed over its files.
fn table_rows(out: &Path) -> BTreeMap<&'static str, u64> {
    TABLES
        .iter()
        .map(|t| {
            let files = parquet_files(&out.join(t));
            assert!(!files.is_empty(), "no file for {t}");
            (*t, files.iter().map(|f| read(f).0).sum())
        })
        .collect()
}

fn strings(batches: &[arrow_array::RecordBatch], col: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let a = b.column_by_name(col).unwrap_or_else(|| panic!("no {col}"));
        let a = a.as_any().downcast_ref::<StringArray>().unwrap();
        out.extend(
            (0..a.len())
                .filter(|&i| a.is_valid(i))
                .map(|i| a.value(i).to_string()),
        );
    }
    out
}

/// The subfolders of `dir`, by name.
fn folders(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_table_is_written_with_the_databases_counts() {
    let (dir, db) = attributed();
    let want = expected(dir.path(), &db);
    assert_eq!(want["traces"], 4);
    assert!(want["cases"] > 0 && want["verdicts"] > 0, "{want:?}");

    let out = ok(run(
        dir.path(),
        Some(&db),
        &["export", "--format", "parquet", "out"],
    ));
    let said = stdout(&out);
    assert!(
        said.contains("4 trace(s) written to out as Parquet"),
        "{said}"
    );
    assert!(said.contains(&format!("{} nodes", want["nodes"])), "{said}");

    let root = dir.path().join("out");
    for t in TABLES {
        assert!(root.join(t).join("part-0.parquet").is_file(), "{t}");
    }
    assert_eq!(table_rows(&root), want);

    // The manifest says the same.
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("_memtrace_export.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["partition"], "none");
    assert_eq!(
        manifest["rows"]["verdicts"].as_u64(),
        Some(want["verdicts"])
    );

    // Columns hold the records: the traces table has the four graph ids and
    // projects, and the labelled cases keep their labels.
    let (_, names, traces) = read(&root.join("traces/part-0.parquet"));
    assert_eq!(names[..3], ["trace", "graph_id", "user_id"]);
    let projects: BTreeSet<String> = strings(&traces, "project_id").into_iter().collect();
    assert_eq!(
        projects,
        BTreeSet::from(["EverMemOS", "Long-Context", "Mem0", "NaiveRAG"].map(String::from))
    );
    let (_, _, cases) = read(&root.join("cases/part-0.parquet"));
    assert_eq!(
        strings(&cases, "final_error_type").len() as u64,
        want["cases"],
        "every devsplit case is labelled"
    );
    let (_, _, verdicts) = read(&root.join("verdicts/part-0.parquet"));
    assert!(strings(&verdicts, "method").iter().all(|m| m == "evidence"));
    let (_, _, nodes) = read(&root.join("nodes/part-0.parquet"));
    let ids: BTreeSet<String> = strings(&nodes, "full_node_id").into_iter().collect();
    for e in strings(&cases, "query_id") {
        assert!(ids.contains(&e), "query {e} is not a node");
    }
}

#[test]
fn partitions_are_hive_folders_by_trace_or_by_project() {
    let (dir, db) = attributed();
    let want = expected(dir.path(), &db);

    ok(run(
        dir.path(),
        Some(&db),
        &[
            "export",
            "--format",
            "parquet",
            "by-trace",
            "--partition",
            "trace",
        ],
    ));
    let root = dir.path().join("by-trace");
    let ids = BTreeSet::from(["trace=1", "trace=2", "trace=3", "trace=4"].map(String::from));
    for t in TABLES {
        assert_eq!(folders(&root.join(t)), ids, "{t}");
    }
    assert_eq!(table_rows(&root), want);
    // The folder carries the trace; the file does not repeat it.
    let (rows, names, nodes) = read(&root.join("nodes/trace=2/part-0.parquet"));
    assert!(!names.contains(&"trace".to_string()), "{names:?}");
    let traces = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    let second = traces
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == 2)
        .unwrap();
    assert_eq!(Some(rows), second["variables"].as_u64());
    let graph: BTreeSet<String> = strings(&nodes, "graph_id").into_iter().collect();
    assert_eq!(graph.len(), 1);
    assert_eq!(
        graph.first().map(String::as_str),
        second["graph_id"].as_str()
    );

    ok(run(
        dir.path(),
        Some(&db),
        &[
            "export",
            "--format",
            "parquet",
            "-o",
            "by-project",
            "--partition",
            "project",
        ],
    ));
    let root = dir.path().join("by-project");
    let projects = BTreeSet::from(
        ["EverMemOS", "Long-Context", "Mem0", "NaiveRAG"].map(|p| format!("project_id={p}")),
    );
    for t in TABLES {
        assert_eq!(folders(&root.join(t)), projects, "{t}");
    }
    assert_eq!(table_rows(&root), want);
    let (rows, names, _) = read(&root.join("traces/project_id=Mem0/part-0.parquet"));
    assert_eq!(rows, 1);
    assert!(!names.contains(&"project_id".to_string()));
}

#[test]
fn a_filter_exports_some_traces_and_force_replaces_an_earlier_export() {
    let (dir, db) = attributed();
    ok(run(
        dir.path(),
        Some(&db),
        &["export", "--format", "parquet", "out"],
    ));
    let root = dir.path().join("out");
    let before = table_rows(&root);

    // Without --force the earlier export stays as it was.
    let again = run(
        dir.path(),
        Some(&db),
        &["export", "--format", "parquet", "out", "--project", "Mem0"],
    );
    assert!(!again.status.success());
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));
    assert_eq!(table_rows(&root), before);

    ok(run(
        dir.path(),
        Some(&db),
        &[
            "export",
            "--format",
            "parquet",
            "out",
            "--project",
            "Mem0",
            "--force",
        ],
    ));
    let after = table_rows(&root);
    assert_eq!(after["traces"], 1);
    assert_eq!(after["cases"], 21, "Mem0's 21 annotated cases");
    let (_, _, ops) = read(&root.join("ops/part-0.parquet"));
    let one = parquet_files(&root.join("traces"));
    let (_, _, traces) = read(&one[0]);
    assert_eq!(strings(&traces, "project_id"), ["Mem0"]);
    let trace_ids = ops[0].column_by_name("trace").unwrap();
    let trace_ids = trace_ids.as_any().downcast_ref::<Int64Array>().unwrap();
    assert!(trace_ids
        .iter()
        .all(|t| t == trace_ids.iter().next().unwrap()));

    // --trace picks by graph id; two of them.
    ok(run(
        dir.path(),
        Some(&db),
        &[
            "export", "--format", "parquet", "two", "--trace", "#1", "--trace", "#3",
        ],
    ));
    assert_eq!(table_rows(&dir.path().join("two"))["traces"], 2);
    // Nothing is left beside the folders written.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn bad_requests_write_nothing() {
    let (dir, db) = with_sample();
    let p = dir.path();
    let fails = |args: &[&str], says: &str| {
        let o = run(p, Some(&db), args);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    };
    fails(
        &["export", "--format", "parquet", "out", "--trace", "nope"],
        "no trace nope",
    );
    fails(
        &["export", "--format", "parquet", "out", "--project", "nope"],
        "no trace has project_id nope",
    );
    assert!(!p.join("out").exists());

    std::fs::create_dir(p.join("mine")).unwrap();
    std::fs::write(p.join("mine/notes.txt"), "keep me").unwrap();
    fails(&["export", "--format", "parquet", "mine"], "is not empty");
    fails(
        &["export", "--format", "parquet", "mine", "--force"],
        "holds no earlier Parquet export",
    );
    assert_eq!(
        std::fs::read_to_string(p.join("mine/notes.txt")).unwrap(),
        "keep me"
    );
    assert_eq!(std::fs::read_dir(p.join("mine")).unwrap().count(), 1);

    // A folder that cannot be made (its parent is a file).
    std::fs::write(p.join("file"), "x").unwrap();
    fails(&["export", "--format", "parquet", "file/out"], "file");
    fails(&["export", "--format", "parquet", "file"], "not a folder");
    fails(&["export", "--format", "parquet"], "name the folder");
    fails(
        &["export", SAMPLE_GRAPH, "--partition", "trace"],
        "--partition goes with --format parquet",
    );
    fails(
        &["export", "--format", "parquet", "out", "--labels"],
        "--labels",
    );
    let left: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(left, ["file", "mine", "t.db"]);

    // An empty folder is filled; a database of one trace gives one row of traces.
    std::fs::create_dir(p.join("empty")).unwrap();
    ok(run(
        p,
        Some(&db),
        &["export", "--format", "parquet", "empty"],
    ));
    assert_eq!(table_rows(&p.join("empty"))["traces"], 1);
}
