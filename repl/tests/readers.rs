//! A reader that lives long keeps its snapshot while writers import, drop
//! and compact: a reader opened before any writer (a notebook's database,
//! a statement streaming its rows to a pipe nobody reads for a while), and
//! writers in processes of their own.

mod common;
use common::*;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The table files of a database folder.
fn tables(db: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    v.sort();
    v
}

/// Every variable of every trace with its value, as rows of JSON.
const ALL: &str = "FIND vars RETURN trace, var.full_node_id, var.value";

#[test]
fn a_long_lived_reader_keeps_its_snapshot_while_writers_compact() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let set = gen_set(
        d,
        "g",
        &[
            "--system",
            "rag",
            "--traces",
            "14",
            "--seed",
            "4",
            "--questions",
            "5",
            "--sessions",
            "3..3",
            "--messages",
            "5..5",
        ],
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&set)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("manifest.json"))
        .collect();
    files.sort();
    let db = d.join("t.db");
    // One import a process: table files of their own, more than a reader
    // opens when it opens the database.
    let (first, later) = files.split_at(6);
    for f in first {
        ok(run(d, Some(&db), &["import", f.to_str().unwrap()]));
    }
    let snapshot = json(&ok(run(d, Some(&db), &["query", ALL, "--format", "json"])));
    let before = tables(&db);
    assert!(before.len() > 16, "{} table files", before.len());

    // A reader in this process that has read little so far...
    let notebook = memtrace::Database::open_read_only(&db).unwrap();
    assert_eq!(notebook.traces().unwrap().len(), first.len());
    // ...and one in a process of its own, paused on a full pipe in the
    // middle of its first statement.
    let script = d.join("read.mt");
    std::fs::write(
        &script,
        format!("FIND vars IN TRACE '#1' RETURN var.value, var.value, var.value;\n{ALL};\n"),
    )
    .unwrap();
    let mut streaming = command(
        d,
        Some(&db),
        &["query", "-f", script.to_str().unwrap(), "--format", "json"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));

    // Writers import, drop and import again: compactions take table files
    // of the readers' snapshot away.
    for (i, f) in later.iter().enumerate() {
        ok(run(d, Some(&db), &["import", f.to_str().unwrap()]));
        if i < 3 {
            let id = format!("#{}", i + 1);
            ok(run(
                d,
                Some(&db),
                &["drop", &id, "--yes", "--reason", "test"],
            ));
        }
    }
    let now = tables(&db);
    let gone = before.iter().filter(|f| !now.contains(f)).count();
    assert!(
        gone > 0,
        "no table file of the readers' time was compacted away"
    );
    let fresh = json(&ok(run(d, Some(&db), &["query", ALL, "--format", "json"])));
    assert_ne!(
        fresh["rows"], snapshot["rows"],
        "the writers changed what a new reader sees"
    );

    // Both readers read what was there when they opened, whole.
    let rows = notebook.query(ALL).unwrap().rows;
    assert_eq!(serde_json::json!(rows), snapshot["rows"]);
    let mut out = String::new();
    streaming
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let o = streaming.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let second = out.split("\n{\"columns\"").nth(1).expect("two results");
    let second: serde_json::Value =
        serde_json::from_str(&format!("{{\"columns\"{second}")).unwrap();
    assert_eq!(second["rows"], snapshot["rows"]);
}
