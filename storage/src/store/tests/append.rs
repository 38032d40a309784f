use super::*;

#[test]
fn attributions_append_in_order_and_go_with_their_trace() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let a = write_trace(&store, "g-a", "x");
    let b = write_trace(&store, "g-b", "y");
    let rec = |n: u64| AttributionRecord {
        at_ms: n,
        json: format!("{{\"n\":{n}}}"),
    };
    assert_eq!(
        store.append_attributions(a, &[rec(1), rec(2)]).unwrap(),
        [1, 2]
    );
    assert_eq!(store.append_attributions(b, &[rec(3)]).unwrap(), [1]);
    assert_eq!(store.append_attributions(a, &[rec(4)]).unwrap(), [3]);
    let read: Vec<(u64, u64)> = store
        .read()
        .attributions(a)
        .map(|r| r.map(|(seq, rec)| (seq, rec.at_ms)).unwrap())
        .collect();
    assert_eq!(read, [(1, 1), (2, 2), (3, 4)]);
    assert!(matches!(
        store.append_attributions(99, &[rec(5)]),
        Err(StorageError::NoSuchTrace(99))
    ));
    store.drop_trace(a, "test").unwrap();
    assert_eq!(store.read().attributions(a).count(), 0);
    assert_eq!(store.read().attributions(b).count(), 1);
}

#[test]
fn pattern_records_append_in_order_and_outlive_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let rec = |name: &str, json: &str| PatternRecord {
        at_ms: 5,
        name: name.into(),
        json: json.into(),
    };
    {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert_eq!(store.read().pattern_records().count(), 0);
        assert_eq!(store.append_pattern(&rec("a", "1")).unwrap(), 1);
        assert_eq!(store.append_pattern(&rec("b", "2")).unwrap(), 2);
        assert_eq!(store.append_pattern(&rec("a", "3")).unwrap(), 3);
    }
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    let all: Vec<(u64, PatternRecord)> = store
        .read()
        .pattern_records()
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(
        all,
        vec![(1, rec("a", "1")), (2, rec("b", "2")), (3, rec("a", "3"))]
    );
    assert_eq!(store.append_pattern(&rec("c", "4")).unwrap(), 4);
}

#[test]
fn cached_answers_are_found_by_their_key_and_outlive_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        assert_eq!(store.cached_answer(&[1; 32]).unwrap(), None);
        store.cache_answer(&[1; 32], b"first").unwrap();
        store.cache_answer(&[2; 32], b"second").unwrap();
        store.cache_answer(&[1; 32], b"first").unwrap();
    }
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    assert_eq!(
        store.cached_answer(&[1; 32]).unwrap().as_deref(),
        Some(&b"first"[..])
    );
    assert_eq!(
        store.cached_answer(&[2; 32]).unwrap().as_deref(),
        Some(&b"second"[..])
    );
    assert_eq!(store.cached_answer(&[3; 32]).unwrap(), None);
}
