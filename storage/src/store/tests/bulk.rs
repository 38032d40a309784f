use super::*;

#[test]
fn a_run_sorts_its_entries_and_keeps_the_last_of_equal_keys() {
    let mut run = FamilyEntries::default();
    let long = vec![7u8; OWNED_FROM + 5];
    run.push(b"b", vec![1u8]);
    run.push(b"a", long.clone());
    run.push(b"c", []);
    run.push(b"b", 2u32.to_be_bytes());
    run.push(b"a", vec![3u8]);
    assert_eq!(run.size(), 5 + 1 + long.len() as u64 + 4 + 1);
    let got: Vec<(Vec<u8>, Vec<u8>)> = run
        .sorted()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(
        got,
        [
            (b"a".to_vec(), vec![3]),
            (b"b".to_vec(), vec![0, 0, 0, 2]),
            (b"c".to_vec(), vec![])
        ]
    );
    // A long value is kept as handed over, and read back whole.
    let mut run = FamilyEntries::default();
    run.push(b"k", long.clone());
    assert_eq!(run.owned.len(), 1);
    assert_eq!(run.sorted().next(), Some((&b"k"[..], &long[..])));
}

#[test]
fn a_bulk_write_reads_back_as_a_batch_write_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let mut w = store.begin_trace().unwrap();
    assert!(w.bulk.is_none());
    fill(&mut w, 300);
    let batch = w.commit(trace_record("batch"), true).unwrap().unwrap();
    let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
    assert!(w.bulk.is_some());
    fill(&mut w, 300);
    let bulk = w.commit(trace_record("bulk"), true).unwrap().unwrap();
    // A second bulk write of the same graph id is refused, and leaves
    // nothing behind.
    let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
    fill(&mut w, 10);
    let refused = w.trace_id();
    assert_eq!(
        w.commit(trace_record("bulk"), true).unwrap(),
        Err(vec![bulk])
    );
    let view = store.read();
    assert_eq!(seen(&view, bulk), seen(&view, batch));
    assert_eq!(view.variables(refused).count(), 0);
    drop(view);
    assert!(
        !path.join(INGEST_DIR).exists()
            || path.join(INGEST_DIR).read_dir().unwrap().next().is_none()
    );
    drop(store);
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let view = store.read();
    assert_eq!(seen(&view, bulk), seen(&view, batch));
    // Dropping the bulk-written trace removes it as it removes any.
    drop(view);
    store.drop_trace(bulk, "test").unwrap();
    let view = store.read();
    assert!(view.trace(bulk).unwrap().is_none());
    assert_eq!(view.variables(bulk).count(), 0);
    assert_eq!(view.adjacency(bulk).unwrap(), None);
    assert!(view.trace(batch).unwrap().is_some());
}

#[test]
fn finished_kinds_are_written_ahead_and_refuse_more() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let mut w = store.begin_trace().unwrap();
    fill(&mut w, 40);
    let batch = w.commit(trace_record("batch"), true).unwrap().unwrap();
    // In order, finishing variables and ops as an import does; a value
    // staged after the variables are finished is still stored.
    let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
    w.put_session(&SessionRecord {
        session_id: "s".into(),
        session_name: Some("session s".into()),
        comment: None,
        category: Some("qa".into()),
        common: Common::default(),
    })
    .unwrap();
    let mut vars = Vec::new();
    for i in 0..40u32 {
        let r = w.stage_value(&format!("value {}", i % 3 * i));
        vars.push(var(&format!("v{}", i % 5), i + 1, r));
    }
    for v in &vars {
        w.put_variable(v).unwrap();
    }
    w.finish_variables().unwrap();
    let late = w.stage_value("staged late");
    assert!(matches!(
        w.put_variable(&vars[0]),
        Err(StorageError::Finished("variables"))
    ));
    w.finish_ops().unwrap();
    assert!(matches!(
        w.put_op(&OpRecord {
            op_id: "x".into(),
            op_name: None,
            comment: None,
            category: None,
            session_id: None,
            session: None,
            common: Common::default(),
        }),
        Err(StorageError::Finished("ops"))
    ));
    let t = w.commit(trace_record("ahead"), true).unwrap().unwrap();
    let view = store.read();
    assert_eq!(view.variables(t).count(), 40);
    assert_eq!(view.value(&late).unwrap(), "staged late");
    assert_eq!(
        view.versions("answer:v3", Some(t)).unwrap(),
        view.versions("answer:v3", Some(batch))
            .unwrap()
            .into_iter()
            .map(|(_, v, l)| (t, v, l))
            .collect::<Vec<_>>()
    );
    drop(view);
    // A writer dropped after writing ahead leaves no table file.
    let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
    fill(&mut w, 20);
    w.finish_variables().unwrap();
    w.finish_ops().unwrap();
    drop(w);
    let left = path.join(INGEST_DIR);
    assert!(!left.exists() || left.read_dir().unwrap().next().is_none());
}

#[test]
fn a_bulk_write_cut_short_is_cleared_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let kept = write_trace(&store, "kept", "x");
    let index_entries = |store: &Store| -> Vec<usize> {
        let view = store.read();
        [cf::VAR_NAME, cf::STRING_ID, cf::CATEGORY, cf::OP_NAME]
            .map(|name| view.count(name, &[]).unwrap())
            .to_vec()
    };
    let before = index_entries(&store);
    // What a crash between the ingest and the final batch leaves: the
    // mark, the ingested records and index entries, and a table file
    // not yet ingested.
    let mut w = store.begin_trace_sized(BULK_BYTES).unwrap();
    fill(&mut w, 50);
    let t = w.trace_id();
    let mut mark = WriteBatch::default();
    mark.put_cf(store.cf(cf::META), ingesting_key(t), []);
    store.write(mark).unwrap();
    let families = BULK_FAMILIES
        .into_iter()
        .zip(w.bulk.take().unwrap())
        .collect();
    store.ingest(t, families).unwrap();
    std::fs::write(path.join(INGEST_DIR).join("left.sst"), b"x").unwrap();
    drop(w);
    assert_eq!(store.read().variables(t).count(), 50);
    assert!(store.read().trace(t).unwrap().is_none());
    // Its index entries are there, and no reader sees them.
    assert_ne!(index_entries(&store), before);
    let view = store.read();
    assert!(!view.committed(t).unwrap());
    let not_t = |hits: Vec<(TraceId, LocalId)>| hits.iter().all(|h| h.0 != t);
    assert!(not_t(view.string_id(IdKind::Op, "op-7").unwrap()));
    assert!(not_t(view.string_id(IdKind::Session, "t").unwrap()));
    assert!(view
        .versions("answer:v3", None)
        .unwrap()
        .iter()
        .all(|h| h.0 != t));
    assert!(not_t(view.by_category(RecordKind::Edge, "flow").unwrap()));
    assert!(not_t(view.ops_named("llm").unwrap()));
    drop(view);
    drop(store);
    // A reader leaves it as it is (and sees no trace of it).
    let reader = Store::open(
        &path,
        &StoreOptions {
            read_only: true,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    assert_eq!(reader.read().traces().count(), 1);
    drop(reader);
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let view = store.read();
    assert_eq!(view.variables(t).count(), 0);
    assert_eq!(view.edges(t).count(), 0);
    assert_eq!(view.adjacency(t).unwrap(), None);
    assert!(store
        .db
        .get_cf(store.cf(cf::META), ingesting_key(t))
        .unwrap()
        .is_none());
    assert!(!path.join(INGEST_DIR).exists());
    assert!(view.trace(kept).unwrap().is_some());
    drop(view);
    assert_eq!(index_entries(&store), before, "its index entries are gone");
    // The id may be used again, by a trace of its own.
    let next = write_trace(&store, "next", "y");
    assert_eq!(store.read().variables(next).count(), 2);
}
