//! `memtrace bench suite`: generated sets of simulated memory-system traces
//! at several scales (10, 100, 1,000 traces by default); for each scale the
//! generation, the import beside raw RocksDB batched puts of the same bytes,
//! and queries (full and depth-3 provenance of predictions, cold and warm, a
//! MATCH and a FIND with GROUP BY) beside SQLite recursive CTEs and joins over
//! the same graph. Every step runs in its own process, so its peak resident
//! memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};
use std::time::Instant;

use crate::peer::RawPeer;
use clap::Args;
use memtrace::attrib::pyvalue::unrepr;
use memtrace::attrib::{Method, TraceModel};
use memtrace::gen::set::{generate_set, GenSpec};
use memtrace::prelude::*;
use memtrace::{Cancel, Database, EngineError, ImportOptions, InputFormat};
use memtrace_storage::dir_bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{io, CliError, Result};
use crate::measure::{peak_rss_kib, set_files, sqlite_err};
use memtrace_table as table;

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
    #[arg(long, default_value_t = 2)]
    pub starts: usize,
    /// Working folder (default: a new folder under the system's temp folder).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the generated set and databases.
    #[arg(long)]
    pub keep: bool,
}

/// Scales up to this many traces also measure attribution.
const ATTRIBUTE_MAX_TRACES: usize = 100;

/// One measured step of the suite (internal).
#[derive(Debug, Args)]
pub struct SuiteStepArgs {
    /// gen, import, raw, sqlite-load, query-memtrace or query-sqlite.
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
    #[arg(long, default_value_t = 2)]
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
    /// Query workloads measured by the query steps.
    #[serde(default)]
    figures: Vec<Figure>,
    /// Attribution: verdicts with the labelled error type, and with the labelled op.
    #[serde(default)]
    correct: (u64, u64),
}

/// One query workload: per-query latencies and a checksum both sides must agree on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Figure {
    /// Workload name (the same on both sides).
    name: String,
    /// Queries run.
    queries: u64,
    /// Median latency, microseconds.
    median_us: f64,
    /// 95th percentile latency, microseconds.
    p95_us: f64,
    /// Total seconds.
    seconds: f64,
    /// Sum of the answers (counts), compared across sides.
    checksum: u64,
}

impl Figure {
    fn from_samples(name: &str, mut us: Vec<f64>, checksum: u64) -> Figure {
        us.sort_by(f64::total_cmp);
        let pick = |q: f64| {
            if us.is_empty() {
                0.0
            } else {
                us[((us.len() - 1) as f64 * q).round() as usize]
            }
        };
        Figure {
            name: name.to_string(),
            queries: us.len() as u64,
            median_us: pick(0.5),
            p95_us: pick(0.95),
            seconds: us.iter().sum::<f64>() / 1e6,
            checksum,
        }
    }
}

/// The workloads, in the order the table shows them: (name, what memtrace runs, what SQLite runs).
const WORKLOADS: &[(&str, &str, &str)] = &[
    (
        "closure-cold",
        "TRACE <prediction> RETURN count, trace not in the cache (CSR built by one prefix scan)",
        "recursive CTE, full closure",
    ),
    (
        "closure-warm",
        "TRACE <prediction> RETURN count, cached",
        "recursive CTE, full closure",
    ),
    (
        "closure-nodes-warm",
        "TRACE <prediction> RETURN nodes (rows with node ids), cached",
        "recursive CTE joined to node ids",
    ),
    (
        "depth3-cold",
        "TRACE <prediction> DEPTH 3 RETURN count, not cached",
        "recursive CTE to depth 3",
    ),
    (
        "depth3-warm",
        "TRACE <prediction> DEPTH 3 RETURN count, cached",
        "recursive CTE to depth 3",
    ),
    (
        "match-cold",
        "MATCH (u)-[:retrieval]->(r:retrieved_memories)-[:evaluation]->(p:prediction) RETURN count(*), all traces, nothing cached",
        "two-edge join with node classes and op kinds, first run",
    ),
    (
        "match-warm",
        "the same MATCH, cached",
        "the same join, repeated",
    ),
    (
        "find-group-cold",
        "FIND ops GROUP BY op.name RETURN op.name, count(*), all traces, nothing cached",
        "SELECT name, count(*) FROM ops GROUP BY name, first run",
    ),
    (
        "find-group-warm",
        "the same FIND, cached",
        "the same SELECT, repeated",
    ),
];

const MATCH_QUERY: &str =
    "MATCH (u)-[:retrieval]->(r:retrieved_memories)-[:evaluation]->(p:prediction) RETURN count(*)";
const FIND_QUERY: &str = "FIND ops GROUP BY op.name RETURN op.name, count(*)";
/// The trace cache's budget in the query step: 4 GiB.
const CACHE_BUDGET: usize = 4 << 30;
/// Traces of the 10k-variable set (one per system).
const BIG_TRACES: usize = 4;
/// Warm repetitions of each traversal.
const WARM_RUNS: usize = 3;

/// Latencies and answer sums, one entry per workload.
type Samples = Vec<(Vec<f64>, u64)>;

/// Runs `run` once as the cold sample of workload `cold`, then [`WARM_RUNS`]
/// times as the warm sample of the workload after it (whose answer counts once).
fn cold_then_warm(
    samples: &mut Samples,
    cold: usize,
    mut run: impl FnMut() -> Result<u64>,
) -> Result<()> {
    let (n, us) = timed(&mut run)?;
    samples[cold].0.push(us);
    samples[cold].1 += n;
    for _ in 0..WARM_RUNS {
        let (n, us) = timed(&mut run)?;
        samples[cold + 1].0.push(us);
        samples[cold + 1].1 += n;
    }
    samples[cold + 1].1 /= WARM_RUNS as u64;
    Ok(())
}

fn figures(samples: Samples) -> Vec<Figure> {
    WORKLOADS
        .iter()
        .zip(samples)
        .map(|((name, _, _), (us, sum))| Figure::from_samples(name, us, sum))
        .collect()
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let start = Instant::now();
    let v = f()?;
    Ok((v, start.elapsed().as_secs_f64() * 1e6))
}

fn count_of(r: &memtrace::QueryResult, col: usize) -> u64 {
    r.rows
        .iter()
        .filter_map(|row| row.get(col).and_then(|v| v.as_u64()))
        .sum()
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
        "gen-big" => {
            let spec = GenSpec {
                traces: a.n,
                seed: a.seed,
                sessions: 32..=32,
                messages_per_session: 62..=62,
                questions: 600,
                ..GenSpec::default()
            };
            let traces = generate_set(&spec, &a.set, true, |_, _| {})?;
            m.units = traces.len() as u64;
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
                                     dst INTEGER NOT NULL, op TEXT NOT NULL, kind TEXT);
                 CREATE TABLE ops (trace INTEGER NOT NULL, op_id TEXT NOT NULL, name TEXT,
                                   kind TEXT, PRIMARY KEY (trace, op_id)) WITHOUT ROWID;
                 CREATE INDEX edges_in ON edges (trace, dst, src);
                 CREATE INDEX edges_out ON edges (trace, src, dst);
                 CREATE INDEX edges_kind ON edges (kind, trace, dst);
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
                    let mut op = tx
                        .prepare("INSERT INTO ops VALUES (?1, ?2, ?3, ?4)")
                        .map_err(sqlite_err)?;
                    let mut kinds = std::collections::HashMap::new();
                    for o in doc["data"]["operations"].as_array().into_iter().flatten() {
                        let id = o["op_id"].as_str().unwrap_or_default();
                        op.execute(rusqlite::params![
                            t,
                            id,
                            o["op_name"].as_str(),
                            o["category"].as_str()
                        ])
                        .map_err(sqlite_err)?;
                        kinds.insert(id.to_string(), o["category"].as_str().map(str::to_string));
                    }
                    let mut edge = tx
                        .prepare("INSERT INTO edges VALUES (?1, ?2, ?3, ?4, ?5)")
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
                        let op_id = e["op_id"].as_str().unwrap_or_default();
                        edge.execute(rusqlite::params![
                            t,
                            end("source_full_node_id")?,
                            end("target_full_node_id")?,
                            op_id,
                            kinds.get(op_id).cloned().flatten()
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
        "query-memtrace" => {
            let db = Database::open_existing(&a.db)?;
            // Warm means cached: a budget that holds every trace of the set
            // (the default, 256 MiB, holds about 200 LoCoMo-size traces).
            db.set_cache_budget(CACHE_BUDGET);
            // The first `starts` predictions of each trace, as in the SQLite step.
            let mut starts = Vec::new();
            for t in db.traces()? {
                let view = db.trace_by_id(t.id)?;
                for v in view
                    .variables()?
                    .into_iter()
                    .filter(|v| v.class_name.as_deref() == Some("prediction"))
                    .take(a.starts)
                {
                    starts.push((t.id, v.full_node_id));
                }
            }
            let quote = |s: &str| s.replace('\'', "''");
            let count = |q: &str| -> Result<u64> { Ok(count_of(&db.query(q)?, 1)) };
            let mut samples: Samples = vec![(Vec::new(), 0); WORKLOADS.len()];
            for (trace, node) in &starts {
                let closure = format!("TRACE '{}' IN TRACE '#{trace}' RETURN count", quote(node));
                let nodes = format!("TRACE '{}' IN TRACE '#{trace}' RETURN nodes", quote(node));
                let depth3 = format!(
                    "TRACE '{}' IN TRACE '#{trace}' DEPTH 3 RETURN count",
                    quote(node)
                );
                for (cold, warm, q) in [(0, 1, &closure), (3, 4, &depth3)] {
                    db.clear_cache();
                    let (n, us) = timed(|| count(q))?;
                    samples[cold].0.push(us);
                    samples[cold].1 += n;
                    for _ in 0..WARM_RUNS {
                        let (n, us) = timed(|| count(q))?;
                        samples[warm].0.push(us);
                        samples[warm].1 += n;
                    }
                }
                for _ in 0..WARM_RUNS {
                    let (r, us) = timed(|| Ok(db.query(&nodes)?))?;
                    samples[2].0.push(us);
                    samples[2].1 += r.rows.len() as u64;
                }
                m.units += 1;
            }
            // The warm repetitions repeat the answer; the checksum counts it once.
            for i in [1, 2, 4] {
                samples[i].1 /= WARM_RUNS as u64;
            }
            for (cold, q, col) in [(5, MATCH_QUERY, 0), (7, FIND_QUERY, 1)] {
                db.clear_cache();
                cold_then_warm(&mut samples, cold, || Ok(count_of(&db.query(q)?, col)))?;
            }
            m.figures = figures(samples);
        }
        "query-sqlite" => {
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
            let mut closure = conn
                .prepare(
                    "WITH RECURSIVE anc(n) AS (SELECT ?2 UNION SELECT e.src FROM edges e JOIN anc ON e.trace = ?1 AND e.dst = anc.n)
                     SELECT count(*) - 1 FROM anc",
                )
                .map_err(sqlite_err)?;
            let mut nodes = conn
                .prepare(
                    "WITH RECURSIVE anc(n) AS (SELECT ?2 UNION SELECT e.src FROM edges e JOIN anc ON e.trace = ?1 AND e.dst = anc.n)
                     SELECT nd.full_node_id FROM anc JOIN nodes nd ON nd.trace = ?1 AND nd.id = anc.n WHERE anc.n != ?2",
                )
                .map_err(sqlite_err)?;
            let mut depth3 = conn
                .prepare(
                    "WITH RECURSIVE anc(n, d) AS (SELECT ?2, 0 UNION SELECT e.src, anc.d + 1 FROM edges e JOIN anc ON e.trace = ?1 AND e.dst = anc.n WHERE anc.d < 3)
                     SELECT count(DISTINCT n) - 1 FROM anc",
                )
                .map_err(sqlite_err)?;
            let mut samples: Samples = vec![(Vec::new(), 0); WORKLOADS.len()];
            let one = |st: &mut rusqlite::Statement<'_>, t: i64, id: i64| -> Result<u64> {
                let n: i64 = st
                    .query_row(rusqlite::params![t, id], |r| r.get(0))
                    .map_err(sqlite_err)?;
                Ok(n as u64)
            };
            for &(t, id) in &starts {
                // SQLite keeps no per-query cache to empty, and its recursive
                // CTEs take long enough that repeating them would dominate the
                // suite: one run per start serves as its cold and warm figure.
                for (cold, warm, st) in [(0, 1, &mut closure), (3, 4, &mut depth3)] {
                    let (n, us) = timed(|| one(st, t, id))?;
                    samples[cold].0.push(us);
                    samples[cold].1 += n;
                    for _ in 0..WARM_RUNS {
                        samples[warm].0.push(us);
                        samples[warm].1 += n;
                    }
                }
                {
                    let (n, us) = timed(|| {
                        let rows = nodes
                            .query_map(rusqlite::params![t, id], |r| r.get::<_, String>(0))
                            .map_err(sqlite_err)?;
                        let mut n = 0u64;
                        for r in rows {
                            r.map_err(sqlite_err)?;
                            n += 1;
                        }
                        Ok(n)
                    })?;
                    for _ in 0..WARM_RUNS {
                        samples[2].0.push(us);
                        samples[2].1 += n;
                    }
                }
                m.units += 1;
            }
            for i in [1, 2, 4] {
                samples[i].1 /= WARM_RUNS as u64;
            }
            let join = "SELECT count(*) FROM edges e1
                   JOIN nodes r ON r.trace = e1.trace AND r.id = e1.dst AND r.class = 'retrieved_memories'
                   JOIN edges e2 ON e2.trace = e1.trace AND e2.src = e1.dst AND e2.kind = 'evaluation'
                   JOIN nodes p ON p.trace = e2.trace AND p.id = e2.dst AND p.class = 'prediction'
                 WHERE e1.kind = 'retrieval'";
            let group = "SELECT name, count(*) FROM ops GROUP BY name";
            for (cold, sql, col) in [(5, join, 0), (7, group, 1)] {
                let run = || -> Result<u64> {
                    let mut st = conn.prepare_cached(sql).map_err(sqlite_err)?;
                    let rows = st
                        .query_map([], |r| r.get::<_, i64>(col))
                        .map_err(sqlite_err)?;
                    let mut sum = 0u64;
                    for r in rows {
                        sum += r.map_err(sqlite_err)? as u64;
                    }
                    Ok(sum)
                };
                cold_then_warm(&mut samples, cold, run)?;
            }
            m.figures = figures(samples);
        }
        "attribute" => {
            let db = Database::open_existing(&a.db)?;
            let start = Instant::now();
            let e = db.evaluate(Method::Evidence, None, &Cancel::new(), &mut |_, _| {})?;
            m.seconds = start.elapsed().as_secs_f64();
            m.units = (e.cases + e.unlabelled) as u64;
            m.correct = (
                e.total.error_type_correct as u64,
                e.total.op_id_correct as u64,
            );
            m.figures = vec![Figure {
                name: "attribute".into(),
                queries: m.units,
                median_us: e.median_micros as f64,
                p95_us: e.p95_micros as f64,
                seconds: m.seconds,
                checksum: e.cases as u64,
            }];
        }
        "attribute-scan" => {
            // The peer: what a tool without the graph does, reading each
            // trace whole and searching every value for each evidence text.
            let db = Database::open_existing(&a.db)?;
            let start = Instant::now();
            let mut samples = Vec::new();
            let mut holders = 0u64;
            for info in db.traces()? {
                let t0 = Instant::now();
                let view = db.trace_by_id(info.id)?;
                let model = TraceModel::load(&view)?;
                let cases = memtrace::attrib::case::failed_cases(&model, &view.cases()?);
                let values: Vec<String> = (0..model.vars.len())
                    .map(|v| model.value(v).to_lowercase())
                    .collect();
                model.read_error()?;
                let load = t0.elapsed().as_secs_f64() * 1e6 / cases.len().max(1) as f64;
                for c in &cases {
                    let t = Instant::now();
                    for e in &c.source_evidence {
                        let Some(v) = model.var(e) else { continue };
                        let text = unrepr(model.value(v)).to_lowercase();
                        holders += values.iter().filter(|x| x.contains(&text)).count() as u64;
                    }
                    samples.push(load + t.elapsed().as_secs_f64() * 1e6);
                }
            }
            m.seconds = start.elapsed().as_secs_f64();
            m.units = samples.len() as u64;
            m.checksum = holders;
            m.figures = vec![Figure::from_samples("attribute-scan", samples, holders)];
        }
        other => return Err(CliError::Bench(format!("unknown suite step {other}"))),
    }
    m.peak_rss_kib = peak_rss_kib();
    Ok(m)
}

fn child(which: &str, set: &Path, n: usize, db: &Path, a: &SuiteArgs) -> Result<Measured> {
    let exe = std::env::current_exe().map_err(io("current executable"))?;
    let out = Process::new(exe)
        .args(["suite-step", which, "--set"])
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

/// Measures one scale: import beside its peers, then the query workloads.
/// `label` names the scale in the table's first column.
fn scale(a: &SuiteArgs, dir: &Path, set: &Path, n: usize, label: &str) -> Result<()> {
    let print = |r: Vec<String>| println!("| {} |", r.join(" | "));
    let mem = dir.join(format!("memtrace-{label}.db"));
    let raw = dir.join(format!("raw-{label}.db"));
    let sql = dir.join(format!("sqlite-{label}.db"));
    for p in [&mem, &raw] {
        let _ = std::fs::remove_dir_all(p);
    }
    let _ = std::fs::remove_file(&sql);
    eprintln!("scale {label}: import ...");
    let imp = child("import", set, n, &mem, a)?;
    let peer = child("raw", set, n, &raw, a)?;
    let load = child("sqlite-load", set, n, &sql, a)?;
    eprintln!("scale {label}: queries ...");
    let qm = child("query-memtrace", set, n, &mem, a)?;
    let qs = child("query-sqlite", set, n, &sql, a)?;
    let per = |m: &Measured, what: &str| format!("{:.0} {what}/s", m.units as f64 / m.seconds);
    let row = |name: &str, m: &Measured, rate: String, disk: String| {
        print(vec![
            label.to_string(),
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
        "SQLite load of the same graph (nodes, edges, ops; no values)",
        &load,
        per(&load, "edges"),
        table::bytes(load.disk_bytes),
    );
    for ((name, ours, theirs), (fm, fs)) in WORKLOADS.iter().zip(qm.figures.iter().zip(&qs.figures))
    {
        if fm.checksum != fs.checksum || fm.queries != fs.queries {
            return Err(CliError::Bench(format!(
                "{name} at {n} traces: memtrace answered {} over {} queries, SQLite {} over {}",
                fm.checksum, fm.queries, fs.checksum, fs.queries
            )));
        }
        let latency =
            |f: &Figure| format!("median {}, p95 {}", micros(f.median_us), micros(f.p95_us));
        print(vec![
            label.to_string(),
            format!("memtrace {name}: {ours}"),
            format!("{:.3}", fm.seconds),
            latency(fm),
            table::bytes(qm.peak_rss_kib * 1024),
            format!("{} ({})", fm.checksum, speedup(fm.median_us, fs.median_us)),
        ]);
        print(vec![
            label.to_string(),
            format!("peer: SQLite {name}: {theirs}"),
            format!("{:.3}", fs.seconds),
            latency(fs),
            table::bytes(qs.peak_rss_kib * 1024),
            fs.checksum.to_string(),
        ]);
    }
    if n <= ATTRIBUTE_MAX_TRACES {
        eprintln!("scale {label}: attribution ...");
        let at = child("attribute", set, n, &mem, a)?;
        let scan = child("attribute-scan", set, n, &mem, a)?;
        if let (Some(f), Some(p)) = (at.figures.first(), scan.figures.first()) {
            let (correct_types, correct_ops) = at.correct;
            let labelled = f.checksum.max(1) as f64;
            print(vec![
                label.to_string(),
                format!(
                    "memtrace attribution, evidence flow (no LLM): {} failed cases",
                    at.units
                ),
                format!("{:.3}", at.seconds),
                format!(
                    "median {}, p95 {} per case",
                    micros(f.median_us),
                    micros(f.p95_us)
                ),
                table::bytes(at.peak_rss_kib * 1024),
                format!(
                    "error type {:.1}%, op id {:.1}% of {} labelled ({})",
                    100.0 * correct_types as f64 / labelled,
                    100.0 * correct_ops as f64 / labelled,
                    f.checksum,
                    speedup(f.median_us, p.median_us)
                ),
            ]);
            print(vec![
                label.to_string(),
                "peer: read each trace whole and search every value for each evidence text (no verdict)".into(),
                format!("{:.3}", scan.seconds),
                format!("median {}, p95 {} per case", micros(p.median_us), micros(p.p95_us)),
                table::bytes(scan.peak_rss_kib * 1024),
                format!("{} holders found", p.checksum),
            ]);
        }
    }
    if !a.keep {
        for p in [&mem, &raw] {
            let _ = std::fs::remove_dir_all(p);
        }
        let _ = std::fs::remove_file(&sql);
    }
    Ok(())
}

/// How much faster memtrace's median is than SQLite's, or how much slower.
fn speedup(ours: f64, theirs: f64) -> String {
    let r = theirs / ours.max(0.001);
    if r >= 10.0 {
        format!("{r:.0}x faster")
    } else if r >= 1.0 {
        format!("{r:.1}x faster")
    } else {
        format!("{:.1}x slower", 1.0 / r.max(1e-9))
    }
}

fn micros(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else if us >= 100.0 {
        format!("{us:.0} us")
    } else {
        format!("{us:.1} us")
    }
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
        scale(a, &dir, &set, n, &n.to_string())?;
    }
    // A few traces of about 10,000 variables each, for the per-trace goals.
    let big = dir.join(format!("set-big-s{}", a.seed));
    eprintln!("generating {BIG_TRACES} traces of about 10k variables ...");
    child("gen-big", &big, BIG_TRACES, &big, a)?;
    scale(
        a,
        &dir,
        &big,
        BIG_TRACES,
        &format!("{BIG_TRACES} × 10k-var"),
    )?;
    if !a.keep {
        let _ = std::fs::remove_dir_all(&big);
    }
    if !a.keep {
        let _ = std::fs::remove_dir_all(&set);
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(ExitCode::SUCCESS)
}
