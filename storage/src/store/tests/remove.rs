use super::*;

#[test]
fn superseding_moves_the_records_and_drops_the_old_trace_in_one_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let old = write_trace(&store, "g", "shared");
    let record = |at_ms, json: &str| AttributionRecord {
        at_ms,
        json: json.into(),
    };
    store
        .append_attributions(old, &[record(10, "verdict"), record(20, "label")])
        .unwrap();
    let new = write_trace_again(&store, "g", "shared", false);
    store
        .append_attributions(new, &[record(30, "own")])
        .unwrap();
    let before = store.read();
    let (dropped, moved) = store.supersede(old, new, "superseded").unwrap();
    assert_eq!((dropped.graph_id.as_str(), moved), ("g", 2));
    // A view taken before sees the old trace whole, with its records.
    assert_eq!(before.attributions(old).count(), 2);
    assert!(before.trace(old).unwrap().is_some());
    drop(before);
    let view = store.read();
    assert!(view.trace(old).unwrap().is_none());
    assert_eq!(view.attributions(old).count(), 0);
    let moved: Vec<(u64, AttributionRecord)> = view.attributions(new).map(|r| r.unwrap()).collect();
    assert_eq!(
        moved,
        vec![
            (1, record(30, "own")),
            (2, record(10, "verdict")),
            (3, record(20, "label"))
        ]
    );
    // The values the new trace shares stay; the graph id names it alone.
    assert_eq!(view.variables(new).count(), 2);
    assert!(view
        .value(
            &view
                .variables(new)
                .next()
                .unwrap()
                .unwrap()
                .1
                .value
                .unwrap()
        )
        .is_ok());
    assert_eq!(view.traces_with_graph_id("g").unwrap(), vec![new]);
    let last = view.log().last().unwrap().unwrap().1;
    assert_eq!(
        (last.action.as_str(), last.trace, last.detail.as_str()),
        ("drop", old, "superseded")
    );
    drop(view);
    // Nothing is written when either trace is missing.
    assert!(matches!(
        store.supersede(old, new, "again"),
        Err(StorageError::NoSuchTrace(t)) if t == old
    ));
    assert!(matches!(
        store.supersede(new, old, "backwards"),
        Err(StorageError::NoSuchTrace(t)) if t == old
    ));
    assert_eq!(store.read().attributions(new).count(), 3);
}

#[test]
fn dropping_keeps_shared_values_and_removes_everything_else() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let a = write_trace(&store, "g1", "shared");
    let b = write_trace(&store, "g2", "shared");
    let c = write_trace(&store, "g3", "own");
    store.drop_trace(a, "test").unwrap();
    store.drop_trace(c, "test").unwrap();
    let view = store.read();
    assert_eq!(
        view.traces().map(|r| r.unwrap().0).collect::<Vec<_>>(),
        vec![b]
    );
    assert_eq!(view.count(cf::VALUES, &[]).unwrap(), 1);
    // The adjacency value and its blocks go with the trace.
    for t in [a, c] {
        assert_eq!(view.count(cf::ADJACENCY, &keys::trace_key(t)).unwrap(), 0);
    }
    assert!(view.count(cf::ADJACENCY, &keys::trace_key(b)).unwrap() >= 3);
    assert_eq!(view.versions("answer:42", None).unwrap().len(), 2);
    for name in [cf::CATEGORY, cf::OP_NAME, cf::STRING_ID] {
        assert!(view.scan(name, &[]).all(|i| {
            let (k, _) = i.unwrap();
            !k.windows(4).any(|w| w == a.to_be_bytes())
                || k.windows(4).any(|w| w == b.to_be_bytes())
        }));
    }
    assert_eq!(
        view.count(cf::STRING_ID, &[]).unwrap(),
        5,
        "session, op, two edges, graph of the one trace left"
    );
    let log: Vec<_> = view.log().map(|e| e.unwrap().1.action).collect();
    assert_eq!(log, vec!["import", "import", "import", "drop", "drop"]);
    assert!(matches!(
        store.drop_trace(a, "again"),
        Err(StorageError::NoSuchTrace(_))
    ));
}
