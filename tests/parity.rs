//! Parity with smartcomment: on fixture traces (the bundled sample, a hand-written
//! trace with a cycle, parallel edges and a self-loop, and one generated trace of
//! each memory system), for every variable,
//!
//! - `TRACE '<id>' IN TRACE '<graph>' RETURN nodes` gives smartcomment's `get_ancestors(id)`,
//! - `... DEPTH n RETURN nodes` gives `get_ancestors(id, max_depth=n)` for n = 1, 2, 3,
//! - `FORWARD ...` gives `get_descendants(id)` and `get_descendants(id, max_depth=n)`.
//!
//! The expected sets were written by smartcomment 0.1.2 itself
//! (`scripts/parity_fixtures.py`, which says how to rerun it) into
//! `tests/fixtures/parity/<stem>.expected.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use memtrace::{Database, ImportOptions};
use serde_json::Value;

/// Depths for which the expected files hold bounded sets.
const DEPTHS: [u32; 3] = [1, 2, 3];
/// How many mismatches the failure message shows in full.
const SHOWN: usize = 8;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A string literal of the query language: single quotes, a quote inside doubled.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// `{full node id: [full node ids]}` from an expected file.
type Sets = BTreeMap<String, BTreeSet<String>>;

fn sets(value: &Value, what: &str) -> Sets {
    let map = value
        .as_object()
        .unwrap_or_else(|| panic!("expected file: {what} is not an object"));
    map.iter()
        .map(|(id, list)| {
            let list = list
                .as_array()
                .unwrap_or_else(|| panic!("expected file: {what}[{id:?}] is not a list"));
            let set = list
                .iter()
                .map(|v| {
                    v.as_str()
                        .unwrap_or_else(|| {
                            panic!("expected file: {what}[{id:?}] holds a non-string")
                        })
                        .to_string()
                })
                .collect();
            (id.clone(), set)
        })
        .collect()
}

struct Expected {
    graph_id: String,
    /// `(keyword, depth, sets)`: TRACE or FORWARD, unbounded (None) or DEPTH n.
    cases: Vec<(&'static str, Option<u32>, Sets)>,
}

fn load_expected(fixture_rel: &str, expected_rel: &str) -> Expected {
    let path = repo().join(expected_rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        doc["fixture"].as_str(),
        Some(fixture_rel),
        "{expected_rel} was written for another fixture"
    );
    assert_eq!(
        doc["smartcomment"].as_str(),
        Some("0.1.2"),
        "{expected_rel}: smartcomment version"
    );
    let graph_id = doc["graph_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{expected_rel}: no graph_id"))
        .to_string();
    let mut cases = Vec::new();
    for (keyword, all, by_depth) in [
        ("TRACE", "ancestors", "ancestors_depth"),
        ("FORWARD", "descendants", "descendants_depth"),
    ] {
        cases.push((keyword, None, sets(&doc[all], all)));
        for n in DEPTHS {
            let what = format!("{by_depth}.{n}");
            cases.push((keyword, Some(n), sets(&doc[by_depth][n.to_string()], &what)));
        }
    }
    Expected { graph_id, cases }
}

/// One query whose answer differs from smartcomment's.
struct Mismatch {
    query: String,
    /// What went wrong besides the sets: an error, a missing column, duplicate rows.
    problem: Option<String>,
    missing: Vec<String>,
    extra: Vec<String>,
}

/// The `node` column of a query's rows, as a set; duplicates are a problem
/// (each node is returned once), as is a `trace` column naming another trace.
fn run(db: &Database, query: &str, graph_id: &str) -> Result<BTreeSet<String>, String> {
    let result = db.query(query).map_err(|e| format!("error: {e}"))?;
    let node = result
        .columns
        .iter()
        .position(|c| c == "node")
        .ok_or_else(|| format!("no \"node\" column in {:?}", result.columns))?;
    let trace = result.columns.iter().position(|c| c == "trace");
    let mut nodes = BTreeSet::new();
    let mut duplicates = Vec::new();
    for (i, row) in result.rows.iter().enumerate() {
        let id = row
            .get(node)
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("row {i}: \"node\" is not a string: {row:?}"))?;
        if let Some(t) = trace {
            if row.get(t).and_then(|v| v.as_str()) != Some(graph_id) {
                return Err(format!(
                    "row {i}: \"trace\" is {:?}, not {graph_id:?}",
                    row.get(t)
                ));
            }
        }
        if !nodes.insert(id.to_string()) {
            duplicates.push(id.to_string());
        }
    }
    if duplicates.is_empty() {
        Ok(nodes)
    } else {
        Err(format!("nodes returned more than once: {duplicates:?}"))
    }
}

fn check(fixture_rel: &str, expected_rel: &str) {
    let expected = load_expected(fixture_rel, expected_rel);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("parity.db")).unwrap();

    let reports = db.import_paths(
        &[repo().join(fixture_rel)],
        &ImportOptions::default(),
        &mut |_| {},
    );
    assert_eq!(reports.len(), 1, "{fixture_rel}: one file imported");
    let imported = match &reports[0].result {
        Ok(traces) => traces.clone(),
        Err(e) => panic!("{fixture_rel} did not import: {e}"),
    };
    assert_eq!(imported.len(), 1, "{fixture_rel}: one trace");
    assert_eq!(
        imported[0].graph_id, expected.graph_id,
        "{fixture_rel}: graph id"
    );

    // The expected file covers exactly the variables of the trace.
    let variables: BTreeSet<String> = db
        .trace(&expected.graph_id)
        .unwrap()
        .variables()
        .unwrap()
        .into_iter()
        .map(|v| v.full_node_id)
        .collect();
    assert_eq!(
        variables.len(),
        imported[0].counts.variables as usize,
        "{fixture_rel}: variables stored"
    );
    for (keyword, depth, sets) in &expected.cases {
        let keys: BTreeSet<String> = sets.keys().cloned().collect();
        assert!(
            keys == variables,
            "{expected_rel}: {keyword} depth {depth:?} covers {} variables, the trace holds {} \
             (first absent: {:?}, first unknown: {:?})",
            keys.len(),
            variables.len(),
            variables.difference(&keys).next(),
            keys.difference(&variables).next(),
        );
    }

    let gid = quoted(&expected.graph_id);
    let mut queries = 0usize;
    let mut mismatches = Vec::new();
    for (keyword, depth, sets) in &expected.cases {
        for (start, want) in sets {
            let depth_clause = depth.map(|n| format!(" DEPTH {n}")).unwrap_or_default();
            let query = format!(
                "{keyword} {} IN TRACE {gid}{depth_clause} RETURN nodes",
                quoted(start)
            );
            queries += 1;
            match run(&db, &query, &expected.graph_id) {
                Ok(got) if &got == want => {}
                Ok(got) => mismatches.push(Mismatch {
                    query,
                    problem: None,
                    missing: want.difference(&got).cloned().collect(),
                    extra: got.difference(want).cloned().collect(),
                }),
                Err(problem) => mismatches.push(Mismatch {
                    query,
                    problem: Some(problem),
                    missing: Vec::new(),
                    extra: Vec::new(),
                }),
            }
        }
    }

    if !mismatches.is_empty() {
        let mut msg = format!(
            "{fixture_rel}: {} of {queries} queries differ from smartcomment ({expected_rel}); the first {}:\n",
            mismatches.len(),
            mismatches.len().min(SHOWN)
        );
        for m in mismatches.iter().take(SHOWN) {
            let _ = writeln!(msg, "  {}", m.query);
            if let Some(p) = &m.problem {
                let _ = writeln!(msg, "    {p}");
            }
            if !m.missing.is_empty() {
                let _ = writeln!(msg, "    missing ({}): {:?}", m.missing.len(), m.missing);
            }
            if !m.extra.is_empty() {
                let _ = writeln!(msg, "    extra ({}): {:?}", m.extra.len(), m.extra);
            }
        }
        panic!("{msg}");
    }
}

/// `tests/fixtures/parity/<stem>.expected.json` for a fixture path.
fn expected_for(fixture_rel: &str) -> String {
    let stem = Path::new(fixture_rel)
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("fixture file name");
    format!("tests/fixtures/parity/{stem}.expected.json")
}

fn parity(fixture_rel: &str) {
    check(fixture_rel, &expected_for(fixture_rel));
}

#[test]
fn sample_export() {
    parity("tests/fixtures/sample_export.json");
}

#[test]
fn cycles_parallel_edges_self_loop() {
    parity("tests/fixtures/parity/cycles.json");
}

#[test]
fn generated_long_context() {
    parity("tests/fixtures/parity/gen_long_context.json");
}

#[test]
fn generated_rag() {
    parity("tests/fixtures/parity/gen_rag.json");
}

#[test]
fn generated_mem0() {
    parity("tests/fixtures/parity/gen_mem0.json");
}

#[test]
fn generated_evermemos() {
    parity("tests/fixtures/parity/gen_evermemos.json");
}
