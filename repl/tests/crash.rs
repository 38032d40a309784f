//! Crash safety: an import killed with SIGKILL at random moments leaves every
//! trace either complete or absent, and the database always opens.

mod common;
use common::*;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use memtrace::engine::BULK_BYTES;
use memtrace::{Database, OpenOptions};

/// Opens a database that must already exist.
fn open_existing(db: impl AsRef<Path>) -> memtrace::Result<Database> {
    let existing = OpenOptions {
        create: false,
        ..OpenOptions::default()
    };
    Database::open_with(db, &existing)
}

const TRACES: usize = 4;
const VARIABLES: u32 = 1_000;
const EDGES: u32 = 2_000;
const SESSIONS: u32 = 10;
/// The huge trace has this many times the variables and edges of one of
/// the many.
const HUGE: u32 = 40;

/// A small deterministic generator for the kill moments.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn synth(dir: &Path, name: &str, traces: usize, variables: u32, edges: u32) -> std::path::PathBuf {
    let file = dir.join(name);
    let n = traces.to_string();
    let v = variables.to_string();
    let e = edges.to_string();
    let s = SESSIONS.to_string();
    ok(run(
        dir,
        None,
        &[
            "synth",
            "--traces",
            &n,
            "--variables",
            &v,
            "--edges",
            &e,
            "--sessions",
            &s,
            "-o",
            file.to_str().unwrap(),
        ],
    ));
    file
}

fn import_command(db: &Path, file: &Path) -> Command {
    let mut c = Command::new(bin());
    c.arg("--db")
        .arg(db)
        .arg("import")
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Opens the database and checks every stored trace against the generated counts.
fn check(db: &Path, variables: u32, edges: u32) -> usize {
    if !db.join("CURRENT").exists() {
        return 0; // killed before the database was created
    }
    let database =
        open_existing(db).unwrap_or_else(|e| panic!("database does not open after a kill: {e}"));
    let traces = database.traces().unwrap();
    for t in &traces {
        let c = t.counts;
        assert_eq!(
            (c.sessions, c.variables, c.ops, c.edges),
            (SESSIONS, variables, edges / 2, edges),
            "trace {} is incomplete",
            t.graph_id
        );
        let view = database.trace_by_id(t.id).unwrap();
        let vars = view.variables().unwrap();
        assert_eq!(vars.len() as u32, variables, "variables of {}", t.graph_id);
        assert!(
            vars.iter().all(|v| v.value.is_some()),
            "a value is missing in {}",
            t.graph_id
        );
        assert_eq!(
            view.edges().unwrap().len() as u32,
            edges,
            "edges of {}",
            t.graph_id
        );
        assert_eq!(view.ops().unwrap().len() as u32, edges / 2);
        assert_eq!(view.sessions().unwrap().len() as u32, SESSIONS);
    }
    drop(database);
    // The command-line tool opens it too.
    let o = Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(["traces", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "memtrace traces fails after a kill: {}",
        stderr(&o)
    );
    traces.len()
}

#[test]
fn killed_imports_leave_whole_traces_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let many = synth(dir.path(), "many.jsonl", TRACES, VARIABLES, EDGES);
    let big = synth(dir.path(), "big.json", 1, VARIABLES * 4, EDGES * 4);
    // A trace large enough to be written in bulk (table files ingested,
    // then its indexes in one batch).
    let huge = synth(dir.path(), "huge.json", 1, VARIABLES * HUGE, EDGES * HUGE);
    assert!(std::fs::metadata(&huge).unwrap().len() >= BULK_BYTES as u64);

    // How long an uninterrupted import takes here, to spread kills over it.
    let mut durations = Vec::new();
    for (file, expected, times) in [(&many, TRACES, 1), (&big, 1, 4), (&huge, 1, HUGE)] {
        let db = dir.path().join(format!("full-{}.db", durations.len()));
        let start = Instant::now();
        assert!(import_command(&db, file).status().unwrap().success());
        durations.push(start.elapsed());
        assert_eq!(check(&db, VARIABLES * times, EDGES * times), expected);
    }

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("kill moments seed: {seed}");
    let mut rng = Lcg(seed);
    let (mut partial, mut empty, mut whole) = (0, 0, 0);
    for round in 0..24 {
        let (file, full, v, e, expected) = if round % 6 == 5 {
            (&huge, durations[2], VARIABLES * HUGE, EDGES * HUGE, 1)
        } else if round % 3 == 2 {
            (&big, durations[1], VARIABLES * 4, EDGES * 4, 1)
        } else {
            (&many, durations[0], VARIABLES, EDGES, TRACES)
        };
        let db = dir.path().join(format!("kill-{round}.db"));
        // Some rounds import into a database that already holds a trace.
        if round % 4 == 1 {
            ok(run(
                dir.path(),
                Some(&db),
                &["import", sample().to_str().unwrap()],
            ));
        }
        let mut child = import_command(&db, file).spawn().unwrap();
        let wait = full.mul_f64(rng.next() * 1.1);
        std::thread::sleep(wait);
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let database_had_sample = round % 4 == 1;
        let n = if database_had_sample {
            // The sample has other counts; check the generated traces only.
            let database = open_existing(&db).unwrap();
            let generated: Vec<_> = database
                .traces()
                .unwrap()
                .into_iter()
                .filter(|t| t.graph_id.starts_with("synth-"))
                .collect();
            assert!(
                database.trace(SAMPLE_GRAPH).is_ok(),
                "the trace stored before the kill is intact"
            );
            for t in &generated {
                assert_eq!((t.counts.variables, t.counts.edges), (v, e));
                assert_eq!(
                    database.trace_by_id(t.id).unwrap().edges().unwrap().len() as u32,
                    e
                );
            }
            generated.len()
        } else {
            check(&db, v, e)
        };
        assert!(n <= expected);
        println!(
            "round {round}: killed after {wait:?} ({status}); {n} of {expected} traces stored"
        );
        match n {
            0 => empty += 1,
            n if n == expected => whole += 1,
            _ => partial += 1,
        }
        std::fs::remove_dir_all(&db).ok();
    }
    println!("rounds with no trace: {empty}, some traces: {partial}, all traces: {whole}");
    assert!(empty + partial + whole >= 20);
}
