use super::*;

#[test]
fn ids_survive_reopen_and_are_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let first = {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let t = write_trace(&store, "g1", "x");
        store.drop_trace(t, "test").unwrap();
        t
    };
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    assert!(write_trace(&store, "g1", "x") > first);
    assert_eq!(store.read().log().count(), 3);
}

#[test]
fn a_database_held_open_elsewhere_is_named_as_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let _held = Store::open(&path, &StoreOptions::default()).unwrap();
    match Store::open(&path, &StoreOptions::default()) {
        Err(StorageError::InUse(p)) => assert_eq!(p, path.display().to_string()),
        other => panic!("expected InUse, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn open_refuses_what_is_not_ours() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(matches!(
        Store::open(&file, &StoreOptions::default()),
        Err(StorageError::NotADatabase { .. })
    ));
    let missing = dir.path().join("missing");
    assert!(matches!(
        Store::open(
            &missing,
            &StoreOptions {
                create: false,
                ..StoreOptions::default()
            }
        ),
        Err(StorageError::Missing(_))
    ));
    let foreign = dir.path().join("foreign");
    DB::open_default(&foreign).unwrap();
    assert!(matches!(
        Store::open(&foreign, &StoreOptions::default()),
        Err(StorageError::NotADatabase { .. })
    ));
}

#[test]
fn creation_is_atomic_and_cleans_up_after_killed_creations() {
    let dir = tempfile::tempdir().unwrap();
    // What a creation killed before its rename leaves: a staging folder
    // of a process that no longer runs.
    let stale = dir.path().join(".db.creating-4294967");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("CURRENT"), b"half made").unwrap();
    let path = dir.path().join("db");
    assert!(matches!(
        Store::open(
            &path,
            &StoreOptions {
                create: false,
                ..StoreOptions::default()
            }
        ),
        Err(StorageError::Missing(_))
    ));
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    drop(store);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["db".to_string()]);
    Store::open(
        &path,
        &StoreOptions {
            create: false,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    // An empty folder where the database goes is fine.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    Store::open(&empty, &StoreOptions::default()).unwrap();
}

#[test]
fn a_database_made_before_attributions_gains_their_column_family() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let mut store = Store::open(&path, &StoreOptions::default()).unwrap();
        write_trace(&store, "g-old", "x");
        Arc::get_mut(&mut store.db)
            .unwrap()
            .drop_cf(cf::ATTRIBUTIONS)
            .unwrap();
        Arc::get_mut(&mut store.db)
            .unwrap()
            .drop_cf(cf::LLM_CACHE)
            .unwrap();
        Arc::get_mut(&mut store.db)
            .unwrap()
            .drop_cf(cf::PATTERNS)
            .unwrap();
    }
    assert!(!DB::list_cf(&base_options(), &path)
        .unwrap()
        .iter()
        .any(|c| c == cf::ATTRIBUTIONS || c == cf::LLM_CACHE || c == cf::PATTERNS));
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    assert_eq!(store.read().traces().count(), 1);
    let t = store.read().traces_with_graph_id("g-old").unwrap()[0];
    let rec = AttributionRecord {
        at_ms: 1,
        json: "{}".into(),
    };
    assert_eq!(store.append_attributions(t, &[rec]).unwrap(), [1]);
    store.cache_answer(&[7; 32], b"{}").unwrap();
    assert_eq!(
        store.cached_answer(&[7; 32]).unwrap().as_deref(),
        Some(&b"{}"[..])
    );
}

#[test]
fn graph_ids_starting_with_a_hash_are_tracked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert!(!store.read().hash_graph_ids_possible().unwrap());
        write_trace(&store, "plain", "v");
        assert!(!store.read().hash_graph_ids_possible().unwrap());
        write_trace(&store, "#1", "v");
        assert!(store.read().hash_graph_ids_possible().unwrap());
    }
    // A database from before the tracking: readers cannot tell, and
    // the first writing open looks at the stored graph ids once.
    for (graph_id, expected) in [("#9", true), ("nine", false)] {
        let path = dir.path().join(format!("old-{graph_id}"));
        {
            let store = Store::open(&path, &StoreOptions::default()).unwrap();
            write_trace(&store, graph_id, "v");
            let meta = store.cf(cf::META);
            store.db.delete_cf(meta, META_HASH_IDS_TRACKED).unwrap();
            store.db.delete_cf(meta, META_HASH_GRAPH_IDS).unwrap();
        }
        let reader = StoreOptions {
            read_only: true,
            ..StoreOptions::default()
        };
        let store = Store::open(&path, &reader).unwrap();
        assert!(store.read().hash_graph_ids_possible().unwrap());
        drop(store);
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert_eq!(
            store.read().hash_graph_ids_possible().unwrap(),
            expected,
            "{graph_id}"
        );
    }
}

#[test]
fn an_unknown_schema_version_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        store
            .db
            .put_cf(store.cf(cf::META), META_SCHEMA, 99u32.to_be_bytes())
            .unwrap();
    }
    let err = Store::open(&path, &StoreOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::SchemaVersion {
                found: 99,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("schema version 99"));
}

#[test]
fn readers_open_beside_a_writer_see_what_was_committed_and_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let reader = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    assert!(matches!(
        Store::open(&path, &reader),
        Err(StorageError::Missing(_))
    ));
    let writer = Store::open(&path, &StoreOptions::default()).unwrap();
    let first = write_trace(&writer, "g1", "x");
    // The writer holds the lock; readers open anyway, as many as wanted.
    let r1 = Store::open(&path, &reader).unwrap();
    let r2 = Store::open(&path, &reader).unwrap();
    assert!(r1.is_read_only() && !writer.is_read_only());
    let second = write_trace(&writer, "g2", "y");
    for r in [&r1, &r2] {
        let view = r.read();
        assert_eq!(view.trace(first).unwrap().unwrap().graph_id, "g1");
        assert!(view.adjacency(first).unwrap().is_some());
        // Committed after it opened: not seen.
        assert!(view.trace(second).unwrap().is_none());
    }
    assert!(matches!(r1.begin_trace(), Err(StorageError::ReadOnly(_))));
    assert!(matches!(
        r1.cache_answer(&[1; 32], b"x"),
        Err(StorageError::ReadOnly(_))
    ));
    assert!(matches!(
        r1.drop_trace(first, "no"),
        Err(StorageError::ReadOnly(_))
    ));
    let msg = r1.begin_trace().err().unwrap().to_string();
    assert!(msg.contains("reading only"), "{msg}");
    drop((r1, r2));
    // A reader opened later sees the second trace.
    let r3 = Store::open(&path, &reader).unwrap();
    assert!(r3.read().trace(second).unwrap().is_some());
}

#[test]
fn a_reader_of_a_version_1_database_upgrades_it_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let mut store = Store::open(&path, &StoreOptions::default()).unwrap();
        write_trace(&store, "g-old", "x");
        store
            .db
            .put_cf(store.cf(cf::META), META_SCHEMA, 1u32.to_be_bytes())
            .unwrap();
        Arc::get_mut(&mut store.db)
            .unwrap()
            .drop_cf(cf::ADJACENCY)
            .unwrap();
    }
    let reader = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    let store = Store::open(&path, &reader).unwrap();
    assert!(store.is_read_only());
    let found = store.db.get_cf(store.cf(cf::META), META_SCHEMA).unwrap();
    assert_eq!(found.as_deref(), Some(&SCHEMA_VERSION.to_be_bytes()[..]));
    assert_eq!(store.read().traces().count(), 1);
}

#[test]
fn a_version_1_database_opens_and_is_recorded_as_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let t = {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        let t = write_trace(&store, "g1", "x");
        store
            .db
            .put_cf(store.cf(cf::META), META_SCHEMA, 1u32.to_be_bytes())
            .unwrap();
        t
    };
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let found = store.db.get_cf(store.cf(cf::META), META_SCHEMA).unwrap();
    assert_eq!(found.as_deref(), Some(&SCHEMA_VERSION.to_be_bytes()[..]));
    assert_eq!(store.read().trace(t).unwrap().unwrap().graph_id, "g1");
}
