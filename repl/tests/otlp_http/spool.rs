//! The spool of accepted spans: emptied once its traces are stored, rewritten, and safe across a kill.

use super::late_spans::split_trace;
use super::*;

/// The size of the database's OTLP spool.
fn spool_size(db: &Path) -> u64 {
    std::fs::metadata(db.join("otlp-spool.log")).unwrap().len()
}

/// Waits (30 s at most) until `ok` holds of the spool's size; returns it.
fn wait_spool(db: &Path, what: &str, ok: impl Fn(u64) -> bool) -> u64 {
    let start = Instant::now();
    loop {
        let size = spool_size(db);
        if ok(size) {
            return size;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the spool is {size} bytes after 30 s, not {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The spool's size with no record in it (its header).
const EMPTY_SPOOL: u64 = 8;

/// Sends the follow-up turn without its root span (it waits: the orphan
/// wait is long) and then the RAG turn (stored once quiet); returns the
/// follow-up's root span and the spool's size once both are acknowledged.
fn one_waiting_one_stored(addr: &str, db: &Path) -> (Vec<Span>, u64) {
    let (root, waiting) = split_trace(FOLLOW_UP, |sp| {
        sp["parentSpanId"].as_str().unwrap_or_default().is_empty()
    });
    assert_eq!(root.len(), 1);
    assert_eq!(post_json(addr, &request_of(&waiting)).0, 200);
    let (_, rag) = split_trace(RAG, |_| false);
    assert_eq!(post_json(addr, &request_of(&rag)).0, 200);
    (root, spool_size(db))
}

/// The export of `graph_id` is the file import's.
fn as_the_file_import(dir: &Path, db: &Path, graph_id: &str) {
    let other = dir.join("file.db");
    if !other.exists() {
        ok(run(
            dir,
            Some(&other),
            &[
                "import",
                fixtures().join("otlp/rag_session.json").to_str().unwrap(),
            ],
        ));
    }
    assert_eq!(export(dir, db, graph_id), export(dir, &other, graph_id));
}

const WAITING: &[&str] = &[
    "serve",
    "--addr",
    "127.0.0.1:0",
    "--otlp-quiet",
    "0.2",
    "--otlp-orphan-wait",
    "600",
];

#[test]
fn the_spool_is_emptied_once_its_traces_are_stored_and_rewritten_past_its_slack() {
    // The default slack: the stored trace's spans stay until the spool is emptied.
    let (dir, db) = database();
    let server = start(dir.path(), &db, WAITING);
    let (root, sent) = one_waiting_one_stored(&server.addr, &db);
    wait_for(&server.addr, &[RAG]);
    // The marker saying the RAG turn is stored is appended.
    let marked = wait_spool(&db, "longer", |s| s != sent);
    assert!(marked > sent, "{marked} <= {sent}");
    assert_eq!(post_json(&server.addr, &request_of(&root)).0, 200);
    wait_for(&server.addr, &[FOLLOW_UP]);
    wait_spool(&db, "emptied", |s| s == EMPTY_SPOOL);
    drop(server);

    // No slack: once the RAG turn is stored, the spool is rewritten with
    // only the follow-up's spans, while the server runs.
    let (dir, db) = database();
    let server = start(
        dir.path(),
        &db,
        &[WAITING, &["--otlp-spool-slack", "0"]].concat(),
    );
    let (root, sent) = one_waiting_one_stored(&server.addr, &db);
    wait_for(&server.addr, &[RAG]);
    let rewritten = wait_spool(&db, "smaller", |s| s < sent);
    assert!(rewritten > EMPTY_SPOOL, "the waiting spans are kept");
    // They are taken back from the rewritten spool after a kill -9.
    drop(server);
    let server = start(dir.path(), &db, WAITING);
    assert_eq!(post_json(&server.addr, &request_of(&root)).0, 200);
    wait_for(&server.addr, &[FOLLOW_UP]);
    wait_spool(&db, "emptied", |s| s == EMPTY_SPOOL);
    assert_eq!(ids_of(&server.addr, RAG).len(), 1);
    drop(server);
    as_the_file_import(dir.path(), &db, FOLLOW_UP);
}

#[test]
fn a_kill_in_the_middle_of_a_spool_rewrite_loses_no_acknowledged_span() {
    for step in ["written", "renamed"] {
        let (dir, db) = database();
        let log = dir.path().join("stderr.log");
        let server = start_with(
            dir.path(),
            &db,
            &[WAITING, &["--otlp-spool-slack", "0"]].concat(),
            &[("MEMTRACE_TEST_OTLP_STALL", step)],
            Stdio::from(std::fs::File::create(&log).unwrap()),
        );
        let (root, sent) = one_waiting_one_stored(&server.addr, &db);
        wait_stalled(&log, step);
        let new_spool = db.join("otlp-spool.log.new");
        match step {
            // The new spool is beside the old one, which is whole.
            "written" => assert!(new_spool.exists() && spool_size(&db) > sent),
            // The new spool replaced the old one.
            _ => assert!(!new_spool.exists() && spool_size(&db) < sent),
        }
        drop(server);
        let server = start(dir.path(), &db, WAITING);
        assert!(!new_spool.exists(), "{step}");
        assert_eq!(post_json(&server.addr, &request_of(&root)).0, 200);
        wait_for(&server.addr, &[RAG, FOLLOW_UP]);
        wait_spool(&db, "emptied", |s| s == EMPTY_SPOOL);
        assert_eq!(ids_of(&server.addr, RAG).len(), 1, "{step}");
        drop(server);
        as_the_file_import(dir.path(), &db, FOLLOW_UP);
        as_the_file_import(dir.path(), &db, RAG);
    }
}
