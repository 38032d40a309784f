//! `memtrace bench patterns`: the whole built-in pattern library over a
//! generated set (1,000 LoCoMo-size traces of the four systems by default),
//! cold and warm, beside the same questions asked of SQLite in SQL over the
//! same graph. Every step runs in its own process, so its peak resident
//! memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};
use std::time::Instant;

use clap::Args;
use memtrace::patterns::{PatternSpec, RunOptions, BUILTINS};
use memtrace::prelude::*;
use memtrace::{Cancel, Database};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{io, CliError, Result};
use crate::measure::{peak_rss_kib, set_files, sqlite_err};
use memtrace_table as table;

/// Options of `memtrace bench patterns`.
#[derive(Debug, Args)]
pub struct PatternBenchArgs {
    /// Traces in the generated set.
    #[arg(long, default_value_t = 1000)]
    pub traces: usize,
    /// Seed of the generated set.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Warm runs of the whole library; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Working folder (default: a new folder under the system's temp folder).
    /// A set or database already there is reused.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the working folder.
    #[arg(long)]
    pub keep: bool,
}

/// One measured step (internal).
#[derive(Debug, Args)]
pub struct PatternStepArgs {
    /// sqlite-load, memtrace or sqlite.
    pub which: String,
    /// The generated set's folder.
    #[arg(long)]
    pub set: PathBuf,
    /// The database (folder or SQLite file).
    #[arg(long)]
    pub db: PathBuf,
    /// Traces to load (the first N of the set).
    #[arg(long)]
    pub n: usize,
    /// Warm runs.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

/// What one step measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stepped {
    /// The whole library, first run (cold), seconds.
    cold: f64,
    /// The whole library, warm runs, seconds each.
    warm: Vec<f64>,
    /// Per pattern: name, hits, seconds of a first (cold) run alone (SQLite
    /// only), seconds of a warm run alone.
    patterns: Vec<(String, u64, f64, f64)>,
    peak_rss_kib: u64,
    disk_bytes: u64,
    traces: u64,
}

/// The cache budget of the memtrace step: enough for every trace's graph,
/// catalog, ops and findings, so that warm means cached.
const CACHE_BUDGET: usize = 6 << 30;

/// Values this short are copied into SQLite (the empty-result question
/// reads them); longer ones are represented by hash and length, as memtrace
/// keeps them in its catalog.
const SHORT: usize = 16;

/// The questions SQLite answers, with the built-in each mirrors. The
/// evidence-flow patterns have no SQL form: they follow text through values.
const SQL: &[(&str, &str)] = &[
    (
        "noop_update",
        "WITH seq AS (
           SELECT trace, id, version, category, hash,
                  LAG(id) OVER w AS prev_id, LAG(hash) OVER w AS prev_hash
           FROM vars WINDOW w AS (PARTITION BY trace, full_name ORDER BY version))
         SELECT count(*) FROM seq v
         WHERE v.version >= 2 AND v.prev_id IS NOT NULL AND v.prev_hash IS v.hash
           AND (v.category IS NULL OR v.category <> 'sentinel')
           AND EXISTS (SELECT 1 FROM edges e JOIN ops o ON o.trace = e.trace AND o.id = e.op
                       WHERE e.trace = v.trace AND e.dst = v.id AND o.category = 'update')",
    ),
    (
        "empty_retrieval",
        "WITH outs AS (
           SELECT DISTINCT e.trace, e.op, e.dst FROM edges e
           JOIN ops o ON o.trace = e.trace AND o.id = e.op
           JOIN vars v ON v.trace = e.trace AND v.id = e.dst
           WHERE o.category = 'retrieval' AND (v.category IS NULL OR v.category <> 'sentinel'))
         SELECT count(*) FROM (
           SELECT outs.trace, outs.op FROM outs JOIN vars v ON v.trace = outs.trace AND v.id = outs.dst
           GROUP BY outs.trace, outs.op
           HAVING sum(CASE WHEN v.hash IS NULL THEN 0
                           WHEN v.short IS NULL THEN 1
                           WHEN trim(v.short, ' ' || char(9, 10, 13)) IN
                                ('', '[]', '{}', '()', 'None', 'null', '''''', '\"\"', '[[]]') THEN 0
                           ELSE 1 END) = 0)",
    ),
    (
        "unbounded_growth",
        "WITH s AS (
           SELECT trace, full_name, len,
                  LAG(len) OVER (PARTITION BY trace, full_name ORDER BY version) AS prev
           FROM vars WHERE category IS NULL OR category <> 'sentinel')
         SELECT count(*) FROM (
           SELECT trace, full_name FROM s GROUP BY trace, full_name
           HAVING count(*) >= 20
              AND sum(CASE WHEN prev IS NOT NULL AND len < prev THEN 1 ELSE 0 END) = 0
              AND max(len) >= 4.0 * max(min(len), 1))",
    ),
];

fn secs<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let start = Instant::now();
    let v = f()?;
    Ok((v, start.elapsed().as_secs_f64()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Loads the generated set into SQLite: variables (with value hash, length
/// and short values), ops and edges, indexed for the questions.
fn sqlite_load(set: &Path, n: usize, db: &Path) -> Result<u64> {
    let mut conn = rusqlite::Connection::open(db).map_err(sqlite_err)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
         CREATE TABLE vars (trace INTEGER NOT NULL, id INTEGER NOT NULL, full_name TEXT NOT NULL,
                            version INTEGER NOT NULL, category TEXT, len INTEGER NOT NULL,
                            hash INTEGER, short TEXT, PRIMARY KEY (trace, id)) WITHOUT ROWID;
         CREATE TABLE ops (trace INTEGER NOT NULL, id INTEGER NOT NULL, op_id TEXT NOT NULL,
                           name TEXT, category TEXT, PRIMARY KEY (trace, id)) WITHOUT ROWID;
         CREATE TABLE edges (trace INTEGER NOT NULL, src INTEGER NOT NULL, dst INTEGER NOT NULL,
                             op INTEGER NOT NULL);
         CREATE INDEX vars_name ON vars (trace, full_name, version);
         CREATE INDEX edges_in ON edges (trace, dst, op);
         CREATE INDEX edges_op ON edges (trace, op, dst);",
    )
    .map_err(sqlite_err)?;
    let mut traces = 0;
    for (t, (file, _)) in set_files(set, n)?.iter().enumerate() {
        let f = std::fs::File::open(file).map_err(io(file.display()))?;
        let doc: Value = serde_json::from_reader(std::io::BufReader::new(f))?;
        let tx = conn.transaction().map_err(sqlite_err)?;
        {
            let mut ids = std::collections::HashMap::new();
            let mut var = tx
                .prepare("INSERT INTO vars VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
                .map_err(sqlite_err)?;
            for (i, n) in doc["data"]["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let class = n["class_name"].as_str().unwrap_or_default();
                let name = n["name"].as_str().unwrap_or_default();
                let full_name = if class.is_empty() {
                    name.to_string()
                } else {
                    format!("{class}:{name}")
                };
                let value = n["value"].as_str();
                let hash = value.map(|v| {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    v.hash(&mut h);
                    h.finish() as i64
                });
                let short = value.filter(|v| v.len() <= SHORT);
                var.execute(rusqlite::params![
                    t,
                    i,
                    full_name,
                    n["version"].as_u64().unwrap_or(1),
                    n["category"].as_str(),
                    value.map_or(0, str::len),
                    hash,
                    short
                ])
                .map_err(sqlite_err)?;
                ids.insert(
                    n["full_node_id"].as_str().unwrap_or_default().to_string(),
                    i,
                );
            }
            let mut op = tx
                .prepare("INSERT INTO ops VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(sqlite_err)?;
            let mut ops = std::collections::HashMap::new();
            for (i, o) in doc["data"]["operations"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let id = o["op_id"].as_str().unwrap_or_default();
                op.execute(rusqlite::params![
                    t,
                    i,
                    id,
                    o["op_name"].as_str(),
                    o["category"].as_str()
                ])
                .map_err(sqlite_err)?;
                ops.insert(id.to_string(), i);
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
                let op = e["op_id"]
                    .as_str()
                    .and_then(|s| ops.get(s))
                    .copied()
                    .ok_or_else(|| {
                        CliError::Bench(format!("{}: edge op unknown", file.display()))
                    })?;
                edge.execute(rusqlite::params![
                    t,
                    end("source_full_node_id")?,
                    end("target_full_node_id")?,
                    op
                ])
                .map_err(sqlite_err)?;
            }
        }
        tx.commit().map_err(sqlite_err)?;
        traces += 1;
    }
    conn.execute_batch("ANALYZE; PRAGMA wal_checkpoint(TRUNCATE);")
        .map_err(sqlite_err)?;
    Ok(traces)
}

/// Runs one step in this process.
pub fn step(a: &PatternStepArgs) -> Result<Stepped> {
    let mut m = Stepped::default();
    match a.which.as_str() {
        "sqlite-load" => {
            let (n, s) = secs(|| sqlite_load(&a.set, a.n, &a.db))?;
            m.traces = n;
            m.cold = s;
            m.disk_bytes = std::fs::metadata(&a.db).map(|md| md.len()).unwrap_or(0);
        }
        "memtrace" => {
            let db = Database::open_with(
                &a.db,
                &memtrace::OpenOptions {
                    create: false,
                    ..Default::default()
                },
            )?;
            db.engine().set_cache_budget(CACHE_BUDGET);
            let all: Vec<PatternSpec> = BUILTINS
                .iter()
                .map(|b| PatternSpec::named(b.name))
                .collect();
            let opts = RunOptions {
                over: None,
                examples: 3,
            };
            let cancel = Cancel::new();
            let run = |specs: &[PatternSpec]| -> Result<Vec<u64>> {
                let r = db.run_patterns(specs, &opts, &cancel, &|_, _| {})?;
                Ok(r.patterns.iter().map(|p| p.hits).collect())
            };
            // Cold: an empty cache, so every trace is read and every failed
            // case attributed; then the same run warm.
            let (hits, cold) = secs(|| run(&all))?;
            m.cold = cold;
            for _ in 0..a.runs.max(1) {
                let (again, s) = secs(|| run(&all))?;
                if again != hits {
                    return Err(CliError::Bench("a warm run found other hits".into()));
                }
                m.warm.push(s);
            }
            m.traces = db.traces()?.len() as u64;
            // Each pattern alone, warm (the cache now holds every trace).
            for (spec, n) in all.iter().zip(&hits) {
                let one = std::slice::from_ref(spec);
                let (_, warm) = secs(|| run(one))?;
                m.patterns.push((spec.name.clone(), *n, 0.0, warm));
            }
        }
        "sqlite" => {
            let conn = rusqlite::Connection::open(&a.db).map_err(sqlite_err)?;
            let ask = |sql: &str| -> Result<u64> {
                conn.query_row(sql, [], |r| r.get::<_, i64>(0))
                    .map(|n| n.max(0) as u64)
                    .map_err(sqlite_err)
            };
            let mut cold = 0.0;
            let mut firsts = Vec::new();
            for (name, sql) in SQL {
                let (n, s) = secs(|| ask(sql))?;
                cold += s;
                firsts.push((name.to_string(), n, s));
            }
            m.cold = cold;
            let mut warm_each = vec![Vec::new(); SQL.len()];
            for _ in 0..a.runs.max(1) {
                let mut total = 0.0;
                for (i, (_, sql)) in SQL.iter().enumerate() {
                    let (_, s) = secs(|| ask(sql))?;
                    total += s;
                    warm_each[i].push(s);
                }
                m.warm.push(total);
            }
            m.patterns = firsts
                .into_iter()
                .zip(warm_each)
                .map(|((name, n, c), w)| (name, n, c, median(w)))
                .collect();
        }
        other => return Err(CliError::Bench(format!("unknown pattern step {other}"))),
    }
    m.peak_rss_kib = peak_rss_kib();
    Ok(m)
}

fn child(args: &[&str], paths: &[(&str, &Path)]) -> Result<String> {
    let exe = std::env::current_exe().map_err(io("current executable"))?;
    let mut cmd = Process::new(exe);
    cmd.args(args);
    for (flag, p) in paths {
        cmd.arg(flag).arg(p);
    }
    let out = cmd.output().map_err(io("benchmark child"))?;
    if !out.status.success() {
        return Err(CliError::Bench(format!(
            "{} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn pattern_child(which: &str, set: &Path, db: &Path, n: usize, runs: usize) -> Result<Stepped> {
    let out = child(
        &[
            "pattern-step",
            which,
            "--n",
            &n.to_string(),
            "--runs",
            &runs.to_string(),
        ],
        &[("--set", set), ("--db", db)],
    )?;
    Ok(serde_json::from_str(&out)?)
}

/// `memtrace bench patterns`.
pub fn run(a: &PatternBenchArgs) -> Result<ExitCode> {
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("memtrace-patterns-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(io(dir.display()))?;
    let set = dir.join(format!("set-{}-s{}", a.traces, a.seed));
    let mem = dir.join(format!("memtrace-{}.db", a.traces));
    let sql = dir.join(format!("sqlite-{}.db", a.traces));
    let n = a.traces.to_string();
    let seed = a.seed.to_string();
    if !set.join("manifest.json").exists() {
        eprintln!("generating {} traces ...", a.traces);
        child(
            &["suite-step", "gen", "--n", &n, "--seed", &seed],
            &[("--set", &set), ("--db", &dir)],
        )?;
    }
    if !mem.exists() {
        eprintln!("importing into memtrace ...");
        child(
            &["suite-step", "import", "--n", &n],
            &[("--set", &set), ("--db", &mem)],
        )?;
    }
    if !sql.exists() {
        eprintln!("loading into SQLite ...");
        pattern_child("sqlite-load", &set, &sql, a.traces, a.runs)?;
    }
    eprintln!("running the built-in library in memtrace ...");
    let ours = pattern_child("memtrace", &set, &mem, a.traces, a.runs)?;
    eprintln!("asking SQLite ...");
    let theirs = pattern_child("sqlite", &set, &sql, a.traces, a.runs)?;
    // The questions both sides answer must have the same answers.
    for (name, n, _, _) in &theirs.patterns {
        let mine = ours.patterns.iter().find(|p| &p.0 == name).map(|p| p.1);
        if mine != Some(*n) {
            return Err(CliError::Bench(format!(
                "{name}: memtrace found {mine:?} hits, SQLite {n}"
            )));
        }
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "Built-in pattern library over {} generated traces (seed {}), {cpus} cores\n",
        ours.traces, a.seed
    );
    println!("| run | memtrace, seconds | SQLite, seconds | peak RSS memtrace / SQLite |");
    println!("|---|---:|---:|---:|");
    let rss = format!(
        "{} / {}",
        table::bytes(ours.peak_rss_kib * 1024),
        table::bytes(theirs.peak_rss_kib * 1024)
    );
    println!(
        "| whole library ({} patterns; SQLite: the {} with an SQL form), cold | {:.3} | {:.3} | {rss} |",
        BUILTINS.len(),
        SQL.len(),
        ours.cold,
        theirs.cold
    );
    println!(
        "| the same, warm (median of {}) | {:.3} | {:.3} | |",
        ours.warm.len(),
        median(ours.warm.clone()),
        median(theirs.warm.clone())
    );
    println!("\n| pattern | hits | memtrace warm, alone | SQLite first run | SQLite warm |");
    println!("|---|---:|---:|---:|---:|");
    for (name, hits, _, warm) in &ours.patterns {
        let peer = theirs.patterns.iter().find(|p| &p.0 == name);
        let (pc, pw) = match peer {
            Some(p) => (format!("{:.3}", p.2), format!("{:.3}", p.3)),
            None => ("no SQL form".into(), String::new()),
        };
        println!("| {name} | {hits} | {warm:.3} | {pc} | {pw} |");
    }
    println!(
        "\nSQLite file: {}; memtrace step cache budget: {}",
        table::bytes(theirs_disk(&sql)),
        table::bytes(CACHE_BUDGET as u64)
    );
    if !a.keep && a.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(ExitCode::SUCCESS)
}

fn theirs_disk(sql: &Path) -> u64 {
    std::fs::metadata(sql).map(|m| m.len()).unwrap_or(0)
}
