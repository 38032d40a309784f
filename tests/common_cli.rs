// Helpers shared by the end-to-end tests of the `memtrace` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memtrace"))
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

pub fn sample() -> PathBuf {
    fixtures().join("sample_export.json")
}

pub const SAMPLE_GRAPH: &str = "graph-e02a1f3b041740d5b82569831ef2d06e";

/// Runs `memtrace --db DB ARGS...` in `cwd` with MEMTRACE_DB cleared.
pub fn run(cwd: &Path, db: Option<&Path>, args: &[&str]) -> Output {
    let mut c = Command::new(bin());
    c.current_dir(cwd).env_remove("MEMTRACE_DB");
    if let Some(db) = db {
        c.arg("--db").arg(db);
    }
    c.args(args).output().expect("run memtrace")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "memtrace failed: {}\n{}",
        stdout(&o),
        stderr(&o)
    );
    o
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

/// A temporary folder with a database `t.db` holding the sample trace.
pub fn with_sample() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    ok(run(
        dir.path(),
        Some(&db),
        &["import", sample().to_str().unwrap()],
    ));
    (dir, db)
}
