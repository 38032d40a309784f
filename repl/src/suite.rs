//! `memtrace bench suite`: generated sets of simulated memory-system traces
//! at several scales (10, 100, 1,000 traces by default); for each scale the
//! generation, the import beside raw RocksDB batched puts of the same bytes,
//! and backward provenance from predictions beside SQLite recursive CTEs over
//! the same edges. Every step runs in its own process, so its peak resident
//! memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};
use std::time::Instant;

use clap::Args;
use memtrace_engine::gen::set::{generate_set, GenSpec, MANIFEST};
use memtrace_engine::peer::{dir_bytes, RawPeer};
use memtrace_engine::{Database, EngineError, ImportOptions, InputFormat};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bench::peak_rss_kib;
use crate::error::{io, CliError, Result};
use crate::table;

/// Options of `memtrace bench suite`.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Scales, in traces, comma-separated.
    #[arg(long, default_value = "10,100,1000", value_delimiter = ',')]
    pub scales: Vec<usize>,
    /// Seed of the generated set.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Predictions traced back per trace.
    #[arg(long, default_value_t = 5)]
    pub starts: usize,
    /// Working folder (default: a new folder under the system's temp folder).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the generated set and databases.
    #[arg(long)]
    pub keep: bool,
}

/// One measured step of the suite (internal).
#[derive(Debug, Args)]
pub struct SuiteStepArgs {
    /// gen, import, raw, sqlite-load, trace-memtrace or trace-sqlite.
    pub which: String,
    /// The generated set's folder.
    #[arg(long)]
    pub set: PathBuf,
    /// Traces to use (the first N of the set).
    #[arg(long)]
    pub n: usize,
    /// The database (folder or SQLite file).
    #[arg(long)]
    pub db: PathBuf,
    /// Seed (for gen).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Predictions traced back per trace.
    #[arg(long, default_value_t = 5)]
    pub starts: usize,
}

/// What one step measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Measured {
    seconds: f64,
    peak_rss_kib: u64,
    disk_bytes: u64,
    /// Records written or traversals run.
    units: u64,
    /// Sum of ancestor counts (traversals), to check both sides agree.
    checksum: u64,
}

/// The first `n` files of a generated set, with their record counts.
fn set_files(set: &Path, n: usize) -> Result<Vec<(PathBuf, u64)>> {
    let path = set.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(io(path.display()))?;
    let manifest: Value = serde_json::from_str(&text)?;
    let traces = manifest["traces"].as_array().cloned().unwrap_or_default();
    if traces.len() < n {
        return Err(CliError::Bench(format!(
            "{} holds {} traces, {n} wanted",
            set.display(),
            traces.len()
        )));
    }
    Ok(traces
        .iter()
        .take(n)
        .map(|t| {
            let records = ["variables", "ops", "edges"]
                .iter()
                .map(|k| t[k].as_u64().unwrap_or(0))
                .sum();
            (set.join(t["file"].as_str().unwrap_or_default()), records)
        })
        .collect())
}

fn sqlite_err(e: rusqlite::Error) -> CliError {
    CliError::Bench(format!("SQLite: {e}"))
}

fn engine<E: Into<EngineError>>(e: E) -> CliError {
    CliError::Engine(e.into())
}

/// Runs one step in this process.
pub fn step(a: &SuiteStepArgs) -> Result<Measured> {
    let mut m = Measured::default();
    match a.which.as_str() {
        "gen" => {
            let spec = GenSpec {
                traces: a.n,
                seed: a.seed,
                ..GenSpec::default()
            };
            let start = Instant::now();
            let traces = generate_set(&spec, &a.set, true, |_, _| {})?;
            m.seconds = start.elapsed().as_secs_f64();
            m.units = traces.len() as u64;
            m.disk_bytes = traces.iter().map(|t| t.bytes).sum();
        }
        "import" => {
            let files = set_files(&a.set, a.n)?;
            let start = Instant::now();
            let db = Database::open(&a.db)?;
            for (file, _) in &files {
                let f = std::fs::File::open(file).map_err(io(file.display()))?;
                let t = db.import_reader(
                    std::io::BufReader::with_capacity(1 << 16, f),
                    InputFormat::Json,
                    &file.display().to_string(),
                    &ImportOptions::default(),
                )?;
                for t in t {
                    let c = t.counts;
                    m.units += (c.variables + c.ops + c.edges) as u64;
                }
            }
            m.seconds = start.elapsed().as_secs_f64();
            db.flush()?;
            drop(db);
            m.disk_bytes = dir_bytes(&a.db).map_err(engine)?;
        }
        "raw" => {
            let files = set_files(&a.set, a.n)?;
            let start = Instant::now();
            let peer = RawPeer::open(&a.db).map_err(engine)?;
            for (file, records) in &files {
                let bytes = std::fs::read(file).map_err(io(file.display()))?;
                let per = (bytes.len() / (*records).max(1) as usize).max(1);
                m.units += peer.put_batch(m.units, bytes.chunks(per)).map_err(engine)?;
            }
            m.seconds = start.elapsed().as_secs_f64();
            peer.flush().map_err(engine)?;
            drop(peer);
            m.disk_bytes = dir_bytes(&a.db).map_err(engine)?;
        }
        "sqlite-load" => {
            let files = set_files(&a.set, a.n)?;
            let start = Instant::now();
            let mut conn = rusqlite::Connection::open(&a.db).map_err(sqlite_err)?;
            conn.execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
                 CREATE TABLE nodes (trace INTEGER NOT NULL, id INTEGER NOT NULL, class TEXT,
                                     full_node_id TEXT NOT NULL, PRIMARY KEY (trace, id)) WITHOUT ROWID;
                 CREATE TABLE edges (trace INTEGER NOT NULL, src INTEGER NOT NULL,
                                     dst INTEGER NOT NULL, op TEXT NOT NULL);
                 CREATE INDEX edges_in ON edges (trace, dst, src);
                 CREATE INDEX nodes_class ON nodes (trace, class);",
            )
            .map_err(sqlite_err)?;
            for (t, (file, _)) in files.iter().enumerate() {
                let f = std::fs::File::open(file).map_err(io(file.display()))?;
                let doc: Value = serde_json::from_reader(std::io::BufReader::new(f))?;
                let tx = conn.transaction().map_err(sqlite_err)?;
                let mut ids = std::collections::HashMap::new();
                {
                    let mut node = tx
                        .prepare("INSERT INTO nodes VALUES (?1, ?2, ?3, ?4)")
                        .map_err(sqlite_err)?;
                    for (i, n) in doc["data"]["nodes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        let id = n["full_node_id"].as_str().unwrap_or_default().to_string();
                        node.execute(rusqlite::params![t, i, n["class_name"].as_str(), id])
                            .map_err(sqlite_err)?;
                        ids.insert(id, i);
                    }
                    let mut edge = tx
                        .prepare("INSERT INTO edges VALUES (?1, ?2, ?3, ?4)")
                        .map_err(sqlite_err)?;
                    for e in doc["data"]["edges"].as_array().into_iter().flatten() {
                        let end = |k: &str| {
                            e[k].as_str()
                                .and_then(|s| ids.get(s))
                                .copied()
                                .ok_or_else(|| {
                                    CliError::Bench(format!("{}: edge {k} unknown", file.display()))
                                })
                        };
                        edge.execute(rusqlite::params![
                            t,
                            end("source_full_node_id")?,
                            end("target_full_node_id")?,
                            e["op_id"].as_str()
                        ])
                        .map_err(sqlite_err)?;
                        m.units += 1;
                    }
                }
                tx.commit().map_err(sqlite_err)?;
            }
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
                .map_err(sqlite_err)?;
            m.seconds = start.elapsed().as_secs_f64();
            drop(conn);
            m.disk_bytes = std::fs::metadata(&a.db).map(|md| md.len()).unwrap_or(0);
        }
        "trace-memtrace" => {
            let db = Database::open_existing(&a.db)?;
            let mut starts = Vec::new();
            for t in db.traces()? {
                let view = db.trace_by_id(t.id)?;
                let found: Vec<u32> = view
                    .variables()?
                    .into_iter()
                    .filter(|v| v.class_name.as_deref() == Some("prediction"))
                    .take(a.starts)
                    .map(|v| v.id)
                    .collect();
                starts.push((t.id, found));
            }
            let start = Instant::now();
            for (trace, vars) in &starts {
                let view = db.trace_by_id(*trace)?;
                for v in vars {
                    m.checksum += view.ancestors(*v)?.len() as u64;
                    m.units += 1;
                }
            }
            m.seconds = start.elapsed().as_secs_f64();
        }
        "trace-sqlite" => {
            let conn = rusqlite::Connection::open(&a.db).map_err(sqlite_err)?;
            let mut starts = Vec::new();
            {
                let mut find = conn
                    .prepare(
                        "SELECT trace, id FROM nodes WHERE trace = ?1 AND class = 'prediction' ORDER BY id LIMIT ?2",
                    )
                    .map_err(sqlite_err)?;
                for t in 0..a.n {
                    let rows = find
                        .query_map(rusqlite::params![t, a.starts], |r| {
                            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                        })
                        .map_err(sqlite_err)?;
                    for r in rows {
                        starts.push(r.map_err(sqlite_err)?);
                    }
                }
            }
            let mut anc = conn
                .prepare(
                    "WITH RECURSIVE anc(n) AS (SELECT ?2 UNION SELECT e.src FROM edges e JOIN anc ON e.trace = ?1 AND e.dst = anc.n)
                     SELECT count(*) - 1 FROM anc",
                )
                .map_err(sqlite_err)?;
            let start = Instant::now();
            for (trace, id) in &starts {
                let n: i64 = anc
                    .query_row(rusqlite::params![trace, id], |r| r.get(0))
                    .map_err(sqlite_err)?;
                m.checksum += n as u64;
                m.units += 1;
            }
            m.seconds = start.elapsed().as_secs_f64();
        }
        other => return Err(CliError::Bench(format!("unknown suite step {other}"))),
    }
    m.peak_rss_kib = peak_rss_kib();
    Ok(m)
}

fn child(which: &str, set: &Path, n: usize, db: &Path, a: &SuiteArgs) -> Result<Measured> {
    let exe = std::env::current_exe().map_err(io("current executable"))?;
    let out = Process::new(exe)
        .args(["bench", "suite-step", which, "--set"])
        .arg(set)
        .args(["--n", &n.to_string(), "--db"])
        .arg(db)
        .args(["--seed", &a.seed.to_string()])
        .args(["--starts", &a.starts.to_string()])
        .output()
        .map_err(io("benchmark child"))?;
    if !out.status.success() {
        return Err(CliError::Bench(format!(
            "{which} step failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// Runs the suite and prints its table (Markdown).
pub fn suite(a: &SuiteArgs) -> Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; figures mean little (use cargo run --release)");
    }
    let Some(&max) = a.scales.iter().max() else {
        return Err(CliError::Bench("--scales is empty".into()));
    };
    if a.scales.contains(&0) {
        return Err(CliError::Bench("a scale must be at least 1 trace".into()));
    }
    let dir = a.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("memtrace-suite-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(io(dir.display()))?;
    let set = dir.join(format!("set-{max}-s{}", a.seed));
    eprintln!("generating {max} traces into {} ...", set.display());
    let gen = child("gen", &set, max, &set, a)?;
    eprintln!(
        "generated in {:.1} s, peak RSS {}",
        gen.seconds,
        table::bytes(gen.peak_rss_kib * 1024)
    );
    println!(
        "memtrace bench suite: seed {}, scales {:?}, {} predictions traced per trace",
        a.seed, a.scales, a.starts
    );
    println!();
    println!("| traces | step | seconds | rate | peak RSS | size / result |");
    println!("|---:|---|---:|---:|---:|---:|");
    // Rows are printed as they are measured, so a long run shows its progress.
    let print = |r: Vec<String>| println!("| {} |", r.join(" | "));
    print(vec![
        max.to_string(),
        "memtrace gen --system all (simulate, label, write)".into(),
        format!("{:.2}", gen.seconds),
        format!("{:.1} traces/s", gen.units as f64 / gen.seconds),
        table::bytes(gen.peak_rss_kib * 1024),
        format!("{} of JSON", table::bytes(gen.disk_bytes)),
    ]);
    let mut scales = a.scales.clone();
    scales.sort_unstable();
    scales.dedup();
    for n in scales {
        let mem = dir.join(format!("memtrace-{n}.db"));
        let raw = dir.join(format!("raw-{n}.db"));
        let sql = dir.join(format!("sqlite-{n}.db"));
        for p in [&mem, &raw] {
            let _ = std::fs::remove_dir_all(p);
        }
        let _ = std::fs::remove_file(&sql);
        eprintln!("scale {n}: import ...");
        let imp = child("import", &set, n, &mem, a)?;
        let peer = child("raw", &set, n, &raw, a)?;
        let load = child("sqlite-load", &set, n, &sql, a)?;
        eprintln!("scale {n}: traversals ...");
        let tm = child("trace-memtrace", &set, n, &mem, a)?;
        let ts = child("trace-sqlite", &set, n, &sql, a)?;
        let per = |m: &Measured, what: &str| format!("{:.0} {what}/s", m.units as f64 / m.seconds);
        let row = |name: &str, m: &Measured, rate: String, disk: String| {
            print(vec![
                n.to_string(),
                name.to_string(),
                format!("{:.2}", m.seconds),
                rate,
                table::bytes(m.peak_rss_kib * 1024),
                disk,
            ])
        };
        row(
            "memtrace import (parse, validate, index, one batch per trace)",
            &imp,
            per(&imp, "records"),
            table::bytes(imp.disk_bytes),
        );
        row(
            "peer: raw RocksDB batched puts of the same bytes",
            &peer,
            per(&peer, "records"),
            table::bytes(peer.disk_bytes),
        );
        row(
            "SQLite load of the same graph (nodes and edges, no values)",
            &load,
            per(&load, "edges"),
            table::bytes(load.disk_bytes),
        );
        row(
            &format!(
                "memtrace backward provenance of {} predictions per trace (index BFS)",
                a.starts
            ),
            &tm,
            per(&tm, "traversals"),
            format!("{} ancestors", tm.checksum),
        );
        row(
            "peer: SQLite recursive CTE, same starts",
            &ts,
            per(&ts, "traversals"),
            format!("{} ancestors", ts.checksum),
        );
        if (tm.units, tm.checksum) != (ts.units, ts.checksum) {
            return Err(CliError::Bench(format!(
                "memtrace and SQLite disagree at {n} traces: {} traversals / {} ancestors vs {} / {}",
                tm.units, tm.checksum, ts.units, ts.checksum
            )));
        }
        if !a.keep {
            for p in [&mem, &raw] {
                let _ = std::fs::remove_dir_all(p);
            }
            let _ = std::fs::remove_file(&sql);
        }
    }
    if !a.keep {
        let _ = std::fs::remove_dir_all(&set);
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(ExitCode::SUCCESS)
}
