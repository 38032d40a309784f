use super::*;

#[test]
fn a_content_digest_is_kept_with_its_trace_and_dropped_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let without = write_trace(&store, "g0", "x");
    let mut w = store.begin_trace().unwrap();
    let digest = content_digest(b"{\"graph_id\": \"g1\"}");
    assert_ne!(digest, content_digest(b"{\"graph_id\": \"g2\"}"));
    w.set_content_digest(digest);
    let with = w.commit(trace_record("g1"), true).unwrap().unwrap();
    let view = store.read();
    assert_eq!(view.content_digest(with).unwrap(), Some(digest));
    assert_eq!(view.content_digest(without).unwrap(), None);
    drop(view);
    store.drop_trace(with, "test").unwrap();
    assert_eq!(store.read().content_digest(with).unwrap(), None);
}

#[test]
fn kept_otlp_requests_go_with_their_trace() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let without = write_trace(&store, "g0", "x");
    let mut w = store.begin_trace().unwrap();
    w.keep_otlp_requests(b"[{\"resourceSpans\": []}]".to_vec());
    let with = w.commit(trace_record("g1"), true).unwrap().unwrap();
    let view = store.read();
    assert_eq!(
        view.otlp_requests(with).unwrap().as_deref(),
        Some(&b"[{\"resourceSpans\": []}]"[..])
    );
    assert_eq!(view.otlp_requests(without).unwrap(), None);
    drop(view);
    store.drop_trace(with, "test").unwrap();
    assert_eq!(store.read().otlp_requests(with).unwrap(), None);
}

#[test]
fn a_trace_reads_back_with_its_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let t = write_trace(&store, "g1", "hello");
    let view = store.read();
    let rec = view.trace(t).unwrap().unwrap();
    assert_eq!(
        rec.counts,
        Counts {
            sessions: 1,
            variables: 2,
            ops: 1,
            edges: 2,
            cases: 0
        }
    );
    assert_eq!(
        view.versions("answer:42", None).unwrap(),
        vec![(t, 1, 0), (t, 2, 1)]
    );
    assert_eq!(view.string_id(IdKind::Op, "op-1").unwrap(), vec![(t, 0)]);
    assert_eq!(
        view.adjacent(t, 0, true).unwrap(),
        vec![(0, 1, 0), (1, 1, 0)]
    );
    assert_eq!(view.adjacent(t, 1, false).unwrap().len(), 2);
    assert_eq!(
        view.by_category(RecordKind::Op, "generation").unwrap(),
        vec![(t, 0)]
    );
    assert_eq!(view.ops_named("llm").unwrap(), vec![(t, 0)]);
    let v = view.variable(t, 1).unwrap().unwrap();
    assert_eq!(view.value(&v.value.unwrap()).unwrap(), "hello");
    assert_eq!(
        view.count(cf::VALUES, &[]).unwrap(),
        1,
        "one value stored once"
    );
}

#[test]
fn adjacency_is_one_value_per_trace_and_version_1_indexes_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let before = write_trace(&store, "g0", "x");
    let mut w = store.begin_trace().unwrap();
    let r = w.stage_value("v");
    for version in 1..=3 {
        w.put_variable(&var("7", version, r)).unwrap();
    }
    let op = w
        .put_op(&OpRecord {
            op_id: "op-x".into(),
            op_name: None,
            comment: None,
            category: None,
            session_id: None,
            session: None,
            common: Common::default(),
        })
        .unwrap();
    // Recorded out of variable order, with a self-loop and parallel edges.
    for (source, target) in [(2, 0), (0, 1), (1, 1), (0, 1)] {
        let n = w.counts().edges;
        w.put_edge(&EdgeRecord {
            edge_id: format!("edge-x{n}"),
            op,
            source,
            target,
            session: 0,
            category: None,
            comment: None,
            common: Common::default(),
        })
        .unwrap();
    }
    let t = w.commit(trace_record("gx"), true).unwrap().unwrap();
    let after = write_trace(&store, "g2", "y");
    // (var, edge, other end, op), ordered by variable, then edge.
    let want = vec![(0, 1, 1, 0), (0, 3, 1, 0), (1, 2, 1, 0), (2, 0, 0, 0)];
    let per_var = |v: u32| -> Vec<(u32, u32, u32)> {
        want.iter()
            .filter(|e| e.0 == v)
            .map(|&(_, e, o, op)| (e, o, op))
            .collect()
    };
    {
        let view = store.read();
        let adj = view.adjacency(t).unwrap().unwrap();
        assert_eq!((adj.vars, adj.ops, adj.edges()), (3, 1, 4));
        assert_eq!(adj.out_edges, vec![1, 3, 2, 0]);
        for v in 0..3 {
            assert_eq!(view.adjacent(t, v, true).unwrap(), per_var(v));
        }
        for other in [before, after] {
            assert_eq!(view.adjacency(other).unwrap().unwrap().edges(), 2);
        }
        assert_eq!(view.adjacency(after + 1).unwrap(), None);
        // Beside the value, each direction's rows in blocks.
        for backward in [true, false] {
            let got = view.adjacency_blocks(t, backward, &[0, 1], 3, 4).unwrap();
            assert_eq!(got, vec![Some(adj.blocks(backward)[0].clone()), None]);
        }
        assert!(
            view.adjacency_blocks(t, true, &[0], 3, 2).is_err(),
            "checked against the counts"
        );
        // Nothing is written to the version-1 indexes any more.
        assert_eq!(view.adjacency_out(t).count(), 0);
    }
    // The same trace as schema version 1 stored it: index entries, no value.
    let mut batch = WriteBatch::default();
    batch.delete_cf(store.cf(cf::ADJACENCY), keys::trace_key(t));
    for &(var, edge, other, op) in &want {
        batch.put_cf(
            store.cf(cf::ADJ_OUT),
            keys::adjacency_key(t, var, edge),
            keys::adjacency_value(other, op),
        );
        batch.put_cf(
            store.cf(cf::ADJ_IN),
            keys::adjacency_key(t, other, edge),
            keys::adjacency_value(var, op),
        );
    }
    store.write(batch).unwrap();
    let view = store.read();
    assert_eq!(view.adjacency(t).unwrap(), None);
    let got: Vec<_> = view.adjacency_out(t).map(|r| r.unwrap()).collect();
    assert_eq!(got, want);
    for v in 0..3 {
        assert_eq!(view.adjacent(t, v, true).unwrap(), per_var(v));
    }
    assert_eq!(
        view.adjacent(t, 1, false).unwrap(),
        vec![(1, 0, 0), (2, 1, 0), (3, 0, 0)]
    );
}

#[test]
fn duplicates_are_refused_and_uncommitted_writers_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let t = write_trace(&store, "g1", "x");
    let mut w = store.begin_trace().unwrap();
    w.put_session(&SessionRecord {
        session_id: "s".into(),
        session_name: None,
        comment: None,
        category: None,
        common: Common::default(),
    })
    .unwrap();
    assert_eq!(w.commit(trace_record("g1"), true).unwrap(), Err(vec![t]));
    let mut w = store.begin_trace().unwrap();
    w.put_session(&SessionRecord {
        session_id: "zz".into(),
        session_name: None,
        comment: None,
        category: None,
        common: Common::default(),
    })
    .unwrap();
    drop(w);
    let view = store.read();
    assert_eq!(view.traces().count(), 1);
    assert!(view.string_id(IdKind::Session, "zz").unwrap().is_empty());
}

#[test]
fn heads_are_read_for_the_traces_stored_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let old;
    {
        let store = Store::open(&path, &StoreOptions::default()).unwrap();
        old = write_trace(&store, "old", "v");
        let view = store.read();
        let head = view.head(old).unwrap().expect("stored with its trace");
        assert_eq!(Some(head.record), view.trace(old).unwrap());
        let names = head.names.expect("a small trace's names");
        assert_eq!(names.latest("answer:42"), Some((2, 1)));
        assert_eq!(
            head.adjacency.map(|a| a.decode().unwrap()),
            view.adjacency(old).unwrap()
        );
        // As a database from before heads: no mark, no head.
        let mut batch = WriteBatch::default();
        batch.delete_cf(store.cf(cf::META), META_HEADS_FROM);
        batch.delete_cf(store.cf(cf::ADJACENCY), keys::head_key(old));
        store.write(batch).unwrap();
    }
    let store = Store::open(&path, &StoreOptions::default()).unwrap();
    assert_eq!(store.read().head(old).unwrap(), None);
    // A trace stored now has its head, and marks where heads start.
    let new = write_trace(&store, "new", "w");
    assert!(store.read().head(new).unwrap().is_some());
    drop(store);
    let reading = StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    };
    let store = Store::open(&path, &reading).unwrap();
    assert_eq!(store.heads_from.load(Ordering::SeqCst), new);
    let view = store.read();
    assert!(view.head(new).unwrap().is_some());
    assert_eq!(view.head(old).unwrap(), None);
    assert_eq!(
        view.versions_in("answer:42", new).unwrap(),
        vec![(1, 0), (2, 1)]
    );
}

#[test]
fn a_version_in_a_trace_is_found_by_one_get_as_the_scan_finds_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let a = write_trace(&store, "g1", "x");
    let b = write_trace(&store, "g2", "y");
    let view = store.read();
    for t in [a, b] {
        for (version, var) in view.versions_in("answer:42", t).unwrap() {
            assert_eq!(view.version_in("answer:42", t, version).unwrap(), Some(var));
        }
        assert_eq!(view.version_in("answer:42", t, 3).unwrap(), None);
        assert_eq!(view.version_in("answer:4", t, 1).unwrap(), None);
    }
    assert_eq!(view.version_in("answer:42", b + 1, 1).unwrap(), None);
    // An entry that is not a variable is an error naming it.
    let mut batch = WriteBatch::default();
    batch.put_cf(
        store.cf(cf::VAR_NAME),
        keys::name_key("answer:42", a, 7),
        b"xy",
    );
    store.write(batch).unwrap();
    let err = store
        .read()
        .version_in("answer:42", a, 7)
        .unwrap_err()
        .to_string();
    assert!(err.contains("answer:42@7"), "{err}");
}

#[test]
fn a_head_holds_no_names_past_its_byte_budget() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    let mut w = store.begin_trace().unwrap();
    let r = w.stage_value("v");
    for i in 0..3 {
        // Three node ids of 100 KB: few variables, but past the budget.
        let name = format!("{i}{}", "n".repeat(100_000));
        w.put_variable(&var(&name, 1, r)).unwrap();
    }
    let t = w.commit(trace_record("long"), true).unwrap().unwrap();
    let head = store.read().head(t).unwrap().expect("a head");
    assert_eq!(head.record.counts.variables, 3);
    assert_eq!((head.names, head.adjacency), (None, None));
}

#[test]
fn a_digest_in_pieces_is_the_digest_of_the_whole() {
    let text: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let whole = content_digest(&text);
    assert_eq!(content_digest_pieces(text.chunks(7919)), whole);
    assert_eq!(content_digest_pieces([&text[..]]), whole);
    assert_eq!(
        content_digest_pieces(std::iter::empty()),
        content_digest(b"")
    );
}

#[test]
fn a_snapshot_does_not_see_a_later_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("db"), &StoreOptions::default()).unwrap();
    write_trace(&store, "g1", "x");
    let before = store.read();
    write_trace(&store, "g2", "y");
    assert_eq!(before.traces().count(), 1);
    assert_eq!(store.read().traces().count(), 2);
}
