//! A bounded count on a trace whose graph is not in memory reads the stored
//! blocks of the trace's rows instead of loading the graph. Its answer must
//! be the loaded graph's, for starts spread over every block, both
//! directions and each depth.

use memtrace::synth::{write_export, SynthSpec};
use memtrace::{Database, ImportOptions, InputFormat};

fn count(db: &Database, q: &str) -> i64 {
    let out = db.query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    out.rows[0][1].as_i64().unwrap()
}

#[test]
fn bounded_counts_from_stored_blocks_equal_the_loaded_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("walks.db");
    let mut export = Vec::new();
    // 1,500 variables: six blocks of rows, edges across all of them.
    write_export(
        &SynthSpec {
            graph_id: "walks".into(),
            variables: 1500,
            edges: 5000,
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
    assert_eq!(nodes.len(), 1500);
    drop(writer);

    // The reference: one handle whose graph is loaded (an unbounded count
    // loads it) before any bounded count.
    let loaded = Database::open_read_only(&path).unwrap();
    count(&loaded, &format!("TRACE '{}' RETURN count", nodes[0]));
    let mut nonzero = 0;
    for start in nodes.iter().step_by(97) {
        for walk in ["TRACE", "FORWARD"] {
            for depth in 1..=4 {
                let q = format!("{walk} '{start}' IN TRACE 'walks' DEPTH {depth} RETURN count");
                // A new handle: its first bounded count reads the blocks.
                let fresh = Database::open_read_only(&path).unwrap();
                let from_blocks = count(&fresh, &q);
                let before = fresh.cache_stats().bytes;
                // The graph was not loaded for it: a walk that needs the
                // graph loads it now.
                count(
                    &fresh,
                    &format!("{walk} '{start}' IN TRACE 'walks' RETURN count"),
                );
                assert!(
                    fresh.cache_stats().bytes > before,
                    "{q}: the bounded count loaded the graph"
                );
                assert_eq!(from_blocks, count(&loaded, &q), "{q}");
                nonzero += usize::from(from_blocks > 0);
            }
        }
    }
    assert!(nonzero > 12, "the walks reach something ({nonzero} do)");
}
