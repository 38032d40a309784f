//! Every file of the malformed-input corpus gives a clear error naming the
//! file, the JSON path and the reason, and leaves the database exactly as it was.

mod common;
use common::*;

/// (file, JSON path in the message, part of the reason)
const CORPUS: &[(&str, &str, &str)] = &[
    ("truncated.json", "data.edges[1]", "ends too early"),
    (
        "wrong_type_version.json",
        "data.nodes[2].version",
        "must be an integer >= 1, found the string \"1\"",
    ),
    (
        "wrong_type_value.json",
        "data.nodes[0].value",
        "must be a string or null, found a number",
    ),
    (
        "wrong_type_lineno.json",
        "data.operations[1].lineno",
        "must be an integer",
    ),
    (
        "missing_name.json",
        "data.nodes[1].name",
        "required field is missing",
    ),
    (
        "missing_graph_id.json",
        "at graph_id",
        "required field is missing",
    ),
    (
        "missing_edge_id.json",
        "data.edges[5].edge_id",
        "required field is missing",
    ),
    (
        "dangling_edge_target.json",
        "data.edges[3].target_full_node_id",
        "no node \"nope@1\"",
    ),
    (
        "dangling_edge_op.json",
        "data.edges[0].op_id",
        "no operation \"op-missing\"",
    ),
    (
        "dangling_edge_session.json",
        "data.edges[6].session_id",
        "no session \"session-missing\"",
    ),
    (
        "duplicate_node.json",
        "data.nodes[9].full_node_id",
        "duplicate id",
    ),
    (
        "duplicate_op.json",
        "data.operations[4].op_id",
        "duplicate id",
    ),
    (
        "duplicate_edge.json",
        "data.edges[8].edge_id",
        "duplicate id",
    ),
    (
        "duplicate_session.json",
        "data.sessions[3].session_id",
        "duplicate id",
    ),
    (
        "bad_timestamp.json",
        "data.nodes[4].created_at",
        "not a valid date",
    ),
    (
        "bad_timestamp_text.json",
        "data.sessions[1].created_at",
        "not a timestamp",
    ),
    ("version_zero.json", "data.nodes[3].version", "found 0"),
    (
        "computed_mismatch.json",
        "data.nodes[5].full_node_id",
        "memory_store@2",
    ),
    (
        "nodes_not_a_list.json",
        "data.nodes",
        "expected a list of records",
    ),
    (
        "record_not_an_object.json",
        "data.operations[0]",
        "expected a record object",
    ),
    (
        "annotation_bad_query.json",
        "data.annotations[0].query_id",
        "no node \"missing@1\"",
    ),
    (
        "annotation_bad_op.json",
        "data.annotations[0].final_op_id",
        "no operation \"op-nowhere\"",
    ),
    ("empty.json", "at $", "the input is empty"),
    (
        "not_an_object.json",
        "at $",
        "expected a smartcomment export object",
    ),
    ("trailing_garbage.json", "at $", "trailing characters"),
    (
        "non_utf8.json",
        "data.nodes[0]",
        "the input is not UTF-8: the byte 0xff at line 21, column 33",
    ),
    (
        "bad_utf8_key.json",
        "at $",
        "is not part of a UTF-8 character (in the key after \"graph_id\")",
    ),
    (
        "nan_name.json",
        "data.nodes[1].name",
        "must be a string, found NaN (Python's not-a-number",
    ),
    (
        "lone_surrogate.json",
        "data.nodes[0]",
        "\\ud800 at line 21, column 33 is a lone UTF-16 surrogate",
    ),
    (
        "utf16_no_bom.json",
        "at $",
        "the input is UTF-16 (little-endian, without a byte order mark) text",
    ),
    (
        "bad_second_line.jsonl",
        "bad_second_line.jsonl:2: invalid at data.edges[2].op_id",
        "must be a string, found a number",
    ),
];

/// Everything a user can observe about the stored traces.
fn state(
    dir: &std::path::Path,
    db: &std::path::Path,
) -> (serde_json::Value, Vec<String>, serde_json::Value, usize) {
    let traces = json(&ok(run(dir, Some(db), &["traces", "--format", "json"])));
    let mut exports = Vec::new();
    for t in traces.as_array().unwrap() {
        let sel = format!("#{}", t["id"]);
        exports.push(stdout(&ok(run(dir, Some(db), &["export", &sel]))));
    }
    let mut stats = json(&ok(run(dir, Some(db), &["stats", "--format", "json"])));
    stats.as_object_mut().unwrap().remove("disk_bytes");
    let log = stdout(&ok(run(dir, Some(db), &["log"]))).lines().count();
    (traces, exports, stats, log)
}

#[test]
fn every_malformed_file_is_rejected_clearly_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    ok(run(
        dir.path(),
        Some(&db),
        &["import", sample().to_str().unwrap()],
    ));
    let before = state(dir.path(), &db);
    let corpus = fixtures().join("malformed");
    for (file, path, reason) in CORPUS {
        let f = corpus.join(file);
        let out = run(dir.path(), Some(&db), &["import", f.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{file}: {err}");
        assert!(
            err.contains(file),
            "{file}: message does not name the file: {err}"
        );
        assert!(
            err.contains(path),
            "{file}: message does not name {path}: {err}"
        );
        assert!(
            err.contains(reason),
            "{file}: message does not say {reason:?}: {err}"
        );
        assert!(
            stdout(&out).contains("0 trace(s) stored"),
            "{file}: {}",
            stdout(&out)
        );
        assert_eq!(
            state(dir.path(), &db),
            before,
            "{file} changed the database"
        );
    }
}

#[test]
fn the_corpus_is_complete() {
    let mut files: Vec<String> = std::fs::read_dir(fixtures().join("malformed"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") || n.ends_with(".jsonl"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = CORPUS.iter().map(|(f, _, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed, "every corpus file has an expected error");
}

#[test]
fn a_folder_run_stores_the_good_files_and_reports_the_bad() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("nested")).unwrap();
    std::fs::copy(sample(), input.join("nested/good.json")).unwrap();
    for bad in [
        "truncated.json",
        "dangling_edge_op.json",
        "bad_second_line.jsonl",
    ] {
        std::fs::copy(fixtures().join("malformed").join(bad), input.join(bad)).unwrap();
    }
    std::fs::write(input.join("notes.txt"), "not a trace").unwrap();
    let out = run(dir.path(), Some(&db), &["import", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("1 trace(s) stored from 1 file(s); 3 file(s) failed"),
        "{}",
        stdout(&out)
    );
    let err = stderr(&out);
    for bad in [
        "truncated.json",
        "dangling_edge_op.json",
        "bad_second_line.jsonl:2",
    ] {
        assert!(err.contains(bad), "{err}");
    }
    let traces = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    assert_eq!(traces.as_array().unwrap().len(), 1);
    assert_eq!(traces[0]["graph_id"], SAMPLE_GRAPH);
}

/// An export of `n` variables in a chain, each with a value of `pad`
/// escaped newlines: over a mebibyte at the sizes below, where the reader
/// reads each list's halves on two threads.
fn large_export(n: usize, pad: usize) -> String {
    let value = "x\\n".repeat(pad);
    let nodes: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"name":"v{i}","version":1,"value":"{value}","session_id":"s1"}}"#))
        .collect();
    let edges: Vec<String> = (1..n)
        .map(|i| {
            format!(
                r#"{{"edge_id":"e{i}","op_id":"op-1","source_full_node_id":"v{}@1","target_full_node_id":"v{i}@1","session_id":"s1"}}"#,
                i - 1
            )
        })
        .collect();
    format!(
        r#"{{"graph_id":"large","data":{{"nodes":[{}],"edges":[{}],"operations":[{{"op_id":"op-1","session_id":"s1"}}],"sessions":[{{"session_id":"s1"}}]}}}}"#,
        nodes.join(","),
        edges.join(",")
    )
}

#[test]
fn a_large_export_is_read_whole_and_its_errors_are_named_as_in_a_small_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    ok(run(
        dir.path(),
        Some(&db),
        &["import", sample().to_str().unwrap()],
    ));
    let before = state(dir.path(), &db);
    let good = large_export(3000, 200);
    assert!(good.len() > 2 << 20, "{}", good.len());
    let cases = [
        (
            good.replacen(
                r#""edge_id":"e2900","op_id":"op-1""#,
                r#""edge_id":"e2900","op_id":7"#,
                1,
            ),
            "data.edges[2899].op_id",
            "must be a string, found a number",
        ),
        (
            good.replacen(
                r#""target_full_node_id":"v2999@1""#,
                r#""target_full_node_id":"v3000@1""#,
                1,
            ),
            "data.edges[2998].target_full_node_id",
            "no node \"v3000@1\" in the trace",
        ),
        (
            good.replacen(r#""name":"v2500","#, r#""name":"v2500",,"#, 1),
            "data.nodes[2500]",
            "line 1 column",
        ),
    ];
    for (i, (text, path, reason)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("bad-{i}.json"));
        std::fs::write(&f, text).unwrap();
        let out = run(dir.path(), Some(&db), &["import", f.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(path) && err.contains(reason), "{path}: {err}");
        assert_eq!(
            state(dir.path(), &db),
            before,
            "{path} changed the database"
        );
    }
    // The valid one is stored whole, and reads back as it was written.
    let f = dir.path().join("good.json");
    std::fs::write(&f, &good).unwrap();
    ok(run(dir.path(), Some(&db), &["import", f.to_str().unwrap()]));
    let traces = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    let t = traces
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["graph_id"] == "large")
        .expect("stored");
    assert_eq!(
        (t["variables"].as_u64(), t["edges"].as_u64()),
        (Some(3000), Some(2999))
    );
    let back = json(&ok(run(dir.path(), Some(&db), &["export", "large"])));
    let given: serde_json::Value = serde_json::from_str(&good).unwrap();
    assert_eq!(
        back["data"]["nodes"][2999]["value"],
        given["data"]["nodes"][2999]["value"]
    );
    assert_eq!(
        back["data"]["edges"][1500]["source_full_node_id"],
        "v1500@1"
    );
}

#[test]
fn a_file_wrong_at_its_first_byte_is_refused_without_reading_the_rest() {
    // A named pipe whose writer never closes it: the import can only end by
    // refusing what it read first.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    for name in ["wrong.json", "wrong.jsonl"] {
        let fifo = dir.path().join(name);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut child = command(dir.path(), Some(&db), &["import", fifo.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        let mut start = b"not json".to_vec();
        // More than the import looks at first, less than the pipe holds, so
        // that writing never waits for the reader.
        start.resize(16 << 10, b' ');
        std::io::Write::write_all(&mut writer, &start).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("{name}: the import read on, waiting for the rest of the file");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        drop(writer);
        let out = child.wait_with_output().unwrap();
        assert_eq!(status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "{name}: invalid at $: expected a smartcomment export object"
            )) && err.contains("found 'n' at line 1, column 1"),
            "{err}"
        );
    }
}
