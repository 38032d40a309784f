use super::*;

#[test]
fn a_log_flushed_for_its_size_is_not_kept_alive_by_idle_families() {
    // Flushes for the logs' size while the families of attributions,
    // the LLM cache and patterns receive nothing; then a close.
    TEST_MAX_WAL_BYTES.with(|m| m.set(Some(64 << 10)));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    TEST_MAX_WAL_BYTES.with(|m| m.set(None));
    for i in 0..40u64 {
        // Values that do not compress away: the log grows by each.
        let value: String = (0..2000u64)
            .map(|j| {
                format!(
                    "{:x}",
                    (j + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i + 1))
                )
            })
            .collect();
        write_trace(&store, &format!("g{i}"), &value);
        if i == 19 {
            // One family flushed alone (as ingesting table files
            // flushes the family they go to): the log it leaves holds
            // the other families' records and outgrows the limit.
            store.db.flush_cf(store.cf(cf::VALUES)).unwrap();
        }
    }
    drop(store);
    let kept: Vec<(String, u64)> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .filter(|(_, len)| *len > 0)
        .collect();
    assert_eq!(kept, Vec::new(), "logs a reader would replay");
    let store = Store::open(
        &path,
        &StoreOptions {
            read_only: true,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    assert_eq!(store.read().traces().count(), 40);
}

/// The size of the filter blocks of a family's table files, summed, from
/// RocksDB's aggregated table properties.
fn filter_bytes(store: &Store, name: &str) -> u64 {
    let props = store
        .db
        .property_value_cf(store.cf(name), "rocksdb.aggregated-table-properties")
        .unwrap()
        .unwrap();
    props
        .split(';')
        .find_map(|p| p.trim().strip_prefix("filter block size="))
        .unwrap_or_else(|| panic!("no filter size in {props}"))
        .trim()
        .parse()
        .unwrap()
}

/// Files of family `name` per level, 0 to 6.
fn files_per_level(store: &Store, name: &str) -> Vec<u64> {
    (0..7)
        .map(|l| {
            let p = format!("rocksdb.num-files-at-level{l}");
            store
                .db
                .property_int_value_cf(store.cf(name), &p)
                .unwrap()
                .unwrap()
        })
        .collect()
}

#[test]
fn point_read_families_have_filters_and_flushes_leave_no_level0_run() {
    // Two flushes of traces in turn: two table files per family that
    // do not overlap, as an import of some hundred traces leaves them.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let a = write_trace(&store, "g1", "x");
    store.flush().unwrap();
    let b = write_trace(&store, "g2", "y");
    store.flush().unwrap();
    for name in [cf::ADJACENCY, cf::TRACES, cf::VARIABLES] {
        let levels = files_per_level(&store, name);
        // Moved out of level 0 as they were: two files still, not one
        // merged file.
        assert_eq!(levels[0], 0, "{name}: {levels:?}");
        assert_eq!(levels.iter().sum::<u64>(), 2, "{name}: {levels:?}");
    }
    for name in [cf::ADJACENCY, cf::TRACES] {
        assert!(filter_bytes(&store, name) > 0, "{name}");
    }
    // A family read by prefix scans keeps no filter.
    assert_eq!(filter_bytes(&store, cf::VARIABLES), 0);
    // Files of the name index overlap (every flush holds names from a
    // to z): they stay in level 0 for RocksDB's own compactions.
    assert_eq!(files_per_level(&store, cf::STRING_ID)[0], 2);
    let view = store.read();
    for t in [a, b] {
        assert!(view.head(t).unwrap().is_some());
    }
    drop(view);
    drop(store);
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    assert_eq!(store.read().traces().count(), 2);
}

#[test]
fn flushed_files_are_not_rewritten_for_their_sequence_numbers() {
    // A flush's files are the families' only ones, then moved down
    // whole: in the last level, with sequence numbers no snapshot
    // needs, RocksDB would by default rewrite each of them once more.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    write_trace(&store, "g1", "x");
    store.flush().unwrap();
    write_trace(&store, "g2", "y");
    store.flush().unwrap();
    // A rewrite is a new file (a new number) in place of the old.
    let names = |store: &Store| {
        let mut files: Vec<(String, String)> = store
            .db
            .live_files()
            .unwrap()
            .into_iter()
            .map(|f| (f.column_family_name, f.name))
            .collect();
        files.sort();
        files
    };
    let before = names(&store);
    assert!(before.iter().any(|(cf, _)| cf == cf::ADJACENCY));
    store
        .db
        .wait_for_compact(&rocksdb::WaitForCompactOptions::default())
        .unwrap();
    assert_eq!(before, names(&store));
    let view = store.read();
    assert_eq!(view.traces().count(), 2);
}

#[test]
fn level0_moves_down_only_without_rewriting() {
    let f = |l: i32, a: &'static str, b: &'static str| (l, a.as_bytes(), b.as_bytes());
    // Two disjoint files, nothing below: the range of both.
    assert_eq!(
        level0_moves_down(&[f(0, "m", "p"), f(0, "a", "c")]),
        Some((&b"a"[..], &b"p"[..]))
    );
    // Files below outside that range do not stop it.
    assert_eq!(
        level0_moves_down(&[
            f(0, "d", "e"),
            f(0, "f", "g"),
            f(6, "a", "c"),
            f(5, "h", "z")
        ]),
        Some((&b"d"[..], &b"g"[..]))
    );
    // One file: nothing to gain.
    assert_eq!(level0_moves_down(&[f(0, "a", "c"), f(6, "d", "e")]), None);
    // Overlapping files, or sharing a key, would be merged.
    assert_eq!(level0_moves_down(&[f(0, "a", "f"), f(0, "e", "g")]), None);
    assert_eq!(level0_moves_down(&[f(0, "a", "e"), f(0, "e", "g")]), None);
    // A file below inside the range would be rewritten with them.
    assert_eq!(
        level0_moves_down(&[f(0, "a", "b"), f(0, "x", "y"), f(6, "m", "n")]),
        None
    );
    assert_eq!(
        level0_moves_down(&[f(0, "c", "d"), f(0, "x", "y"), f(6, "a", "c")]),
        None
    );
    assert_eq!(level0_moves_down(&[]), None);
}
