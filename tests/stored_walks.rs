//! A bounded count on a trace whose graph is not in memory reads the stored
//! blocks of the trace's rows instead of loading the graph. Its answer must
//! be the loaded graph's, for starts spread over every block, both
//! directions and each depth: on a small trace, whose blocks a walk of two
//! levels or more reads all at once, and on a larger one, read level by
//! level. A query naming the trace of a small one reads the trace's head
//! instead, which holds its whole adjacency: its answer must be the same.

use memtrace::gen::synth::{write_export, SynthSpec};
use memtrace::{Database, ImportOptions, InputFormat};

/// The most variables a trace has whose head holds its adjacency (the
/// storage's `HEAD_VARS`).
const HEAD_VARS: usize = 4096;

fn count(db: &Database, q: &str) -> i64 {
    let out = db.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    out.rows[0][1].as_i64().unwrap()
}

#[test]
fn bounded_counts_from_stored_blocks_equal_the_loaded_graphs() {
    // 1,500 variables: six blocks of rows, edges across all of them, about
    // 46 KiB per direction (read whole).
    walks_equal(1500, 5000, 97);
    // 9,000 variables: 36 blocks, about 130 KiB per direction (read level
    // by level).
    walks_equal(9000, 12000, 599);
}

fn walks_equal(variables: usize, edges: usize, step: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walks.db");
    let mut export = Vec::new();
    write_export(
        &SynthSpec {
            graph_id: "walks".into(),
            variables,
            edges,
            sessions: 6,
            seed: 11,
        },
        &mut export,
    )
    .unwrap();
    let writer = Database::open(&path).unwrap();
    writer
        .import_reader(
            &export[..],
            InputFormat::Json,
            "synth",
            &ImportOptions::default(),
        )
        .unwrap();
    let nodes: Vec<String> = writer
        .query("FIND vars RETURN node_id")
        .unwrap()
        .rows
        .iter()
        .map(|r| r[0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(nodes.len(), variables);
    drop(writer);

    // The reference: one handle whose graph is loaded (an unbounded count
    // loads it) before any bounded count.
    let loaded = Database::open_read_only(&path).unwrap();
    count(&loaded, &format!("TRACE '{}' RETURN count", nodes[0]));
    let mut nonzero = 0;
    for start in nodes.iter().step_by(step) {
        for walk in ["TRACE", "FORWARD"] {
            for depth in 1..=4 {
                for scope in ["", " IN TRACE 'walks'"] {
                    let q = format!("{walk} '{start}'{scope} DEPTH {depth} RETURN count");
                    // A new handle: nothing of the trace is in memory.
                    let fresh = Database::open_read_only(&path).unwrap();
                    let got = count(&fresh, &q);
                    let before = fresh.engine().cache_stats().bytes;
                    if !scope.is_empty() && variables <= HEAD_VARS {
                        // A query of a small trace reads its head, which
                        // holds the whole adjacency: the graph is loaded.
                        assert!(before > 0, "{q}: the head's graph is kept");
                    } else {
                        // The first bounded count read the blocks; a walk
                        // that needs the graph loads it now.
                        count(
                            &fresh,
                            &format!("{walk} '{start}' IN TRACE 'walks' RETURN count"),
                        );
                        assert!(
                            fresh.engine().cache_stats().bytes > before,
                            "{q}: the bounded count loaded the graph"
                        );
                    }
                    assert_eq!(got, count(&loaded, &q), "{q}");
                    nonzero += usize::from(got > 0);
                }
            }
        }
    }
    assert!(nonzero > 12, "the walks reach something ({nonzero} do)");
}
