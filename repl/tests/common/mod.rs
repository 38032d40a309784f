// Helpers shared by the end-to-end tests of the `memtrace` binary.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memtrace"))
}

/// The fixtures the root package's tests read too.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// The fixtures only these tests read.
pub fn repl_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn sample() -> PathBuf {
    fixtures().join("sample_export.json")
}

pub const SAMPLE_GRAPH: &str = "graph-e02a1f3b041740d5b82569831ef2d06e";

/// `memtrace --db DB ARGS...` in `cwd`, with MEMTRACE_DB and COLUMNS cleared.
pub fn command(cwd: &Path, db: Option<&Path>, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(cwd)
        .env_remove("MEMTRACE_DB")
        .env_remove("COLUMNS");
    if let Some(db) = db {
        c.arg("--db").arg(db);
    }
    c.args(args);
    c
}

/// Runs `memtrace --db DB ARGS...` in `cwd` with MEMTRACE_DB cleared.
pub fn run(cwd: &Path, db: Option<&Path>, args: &[&str]) -> Output {
    command(cwd, db, args).output().expect("run memtrace")
}

/// Runs `memtrace --db DB ARGS...` with `input` on standard input.
pub fn run_with_input(cwd: &Path, db: Option<&Path>, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = command(cwd, db, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start memtrace");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    child.wait_with_output().expect("run memtrace")
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

/// Runs `memtrace gen ARGS... --out OUT` in `dir`: a set written to `dir/OUT`.
pub fn gen_set(dir: &Path, out: &str, args: &[&str]) -> PathBuf {
    let mut all = vec!["gen"];
    all.extend_from_slice(args);
    all.extend(["--out", out]);
    ok(run(dir, None, &all));
    dir.join(out)
}

/// A small generated set of the four systems (4 traces of 25 questions,
/// seed `seed`), imported into `t.db` in a new folder.
pub fn generated(seed: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--system",
        "all",
        "--traces",
        "4",
        "--seed",
        seed,
        "--sessions",
        "4..5",
        "--messages",
        "10..12",
        "--questions",
        "25",
    ];
    gen_set(dir.path(), "g", &args);
    let db = dir.path().join("t.db");
    ok(run(dir.path(), Some(&db), &["import", "g"]));
    (dir, db)
}
