//! `memtrace-bench suite`: generated sets of simulated memory-system traces
//! at several scales (10, 100, 1,000 traces by default), four traces of
//! about 10,000 variables, and growth traces whose answer is known to hold
//! 1k, 10k and 100k nodes. For each: the import beside raw RocksDB batched
//! puts of the same bytes, and queries (provenance of predictions, cold and
//! warm, a MATCH and a FIND with GROUP BY) beside SQLite and, when Python's
//! `duckdb` is installed, DuckDB over the same graph, all measured by one
//! protocol ([`crate::protocol`]). Every step runs in its own process, so
//! its peak resident memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};
use std::time::Instant;

use clap::Args;
use memtrace::attrib::pyvalue::unrepr;
use memtrace::attrib::{Method, TraceModel};
use memtrace::gen::set::{generate_set, GenSpec};
use memtrace::prelude::*;
use memtrace::{Cancel, Database, EngineError, ImportOptions};
use memtrace_storage::dir_bytes;
use memtrace_table as table;

use crate::duckdb_peer::{write_csv, DuckPeer};
use crate::error::{io, CliError, Result};
use crate::measure::{peak_rss_kib, set_files};
use crate::memtrace_side::MemtraceSide;
use crate::peer::RawPeer;
use crate::protocol::{measure, workloads, Figure, Kind, Measured, Plan, Runs, Workload};
use crate::sqlite_peer::SqliteSide;

/// Options of `memtrace-bench suite`.
#[derive(Debug, Args)]
pub struct SuiteArgs {
    /// Scales, in traces, comma-separated.
    #[arg(long, default_value = "10,100,1000", value_delimiter = ',')]
    pub scales: Vec<usize>,
    /// Seed of the generated sets.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Predictions traced back per trace.
    #[arg(long, default_value_t = 2)]
    pub starts: usize,
    /// Cold samples per traversal workload and scale (each one: close the
    /// database, evict its files from the page cache, reopen, first query),
    /// spread over the starts.
    #[arg(long, default_value_t = 20)]
    pub cold: usize,
    /// Timed warm repetitions of every warm query, on every side (after one
    /// untimed run).
    #[arg(long, default_value_t = 3)]
    pub warm: usize,
    /// Growth workload: closure sizes, in nodes, comma-separated (0 for none).
    #[arg(long, default_value = "1000,10000,100000", value_delimiter = ',')]
    pub growth: Vec<usize>,
    /// Leave the four traces of about 10,000 variables out.
    #[arg(long)]
    pub no_big: bool,
    /// Leave DuckDB out even when Python's duckdb module is installed.
    #[arg(long)]
    pub no_duckdb: bool,
    /// Working folder (default: a new folder under the system's temp folder).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the generated sets and databases.
    #[arg(long)]
    pub keep: bool,
}

/// Scales up to this many traces also measure attribution.
const ATTRIBUTE_MAX_TRACES: usize = 100;
/// Traces of the 10k-variable set (one per system).
const BIG_TRACES: usize = 4;
/// Cold samples of a growth trace (one start, each sample a reopen).
const GROWTH_COLD: usize = 5;
/// How many times as often a growth trace repeats each warm query: it has
/// one start where a generated set has tens, and a median of three
/// samples moved by half between runs.
const GROWTH_WARM_FACTOR: usize = 5;

/// One measured step of the suite (internal).
#[derive(Debug, Args)]
pub struct SuiteStepArgs {
    /// gen, gen-big, import, raw, sqlite-load, query-memtrace, query-sqlite,
    /// attribute or attribute-scan.
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
    /// The workloads: suite or growth.
    #[arg(long, default_value = "suite")]
    pub workloads: String,
    /// Cold samples per traversal workload.
    #[arg(long, default_value_t = 20)]
    pub cold: usize,
    /// Timed warm repetitions.
    #[arg(long, default_value_t = 3)]
    pub warm: usize,
    /// Only these workloads (names, comma-separated; `open-cold` is always
    /// measured, as every cold query opens): to time one workload while
    /// working on it. All of the set when not given.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

impl SuiteStepArgs {
    fn runs(&self) -> Runs {
        Runs {
            starts: self.starts,
            cold: self.cold,
            warm: self.warm,
        }
    }

    /// The workloads of the step: the named set, narrowed by `--only`.
    fn workloads(&self) -> Result<Vec<Workload>> {
        let all = workloads(&self.workloads)?;
        if let Some(bad) = self
            .only
            .iter()
            .find(|n| !all.iter().any(|w| w.name == **n))
        {
            let names: Vec<&str> = all.iter().map(|w| w.name).collect();
            return Err(CliError::Usage(format!(
                "no workload {bad} in the {} set (it has {})",
                self.workloads,
                names.join(", ")
            )));
        }
        Ok(all
            .iter()
            .filter(|w| {
                self.only.is_empty()
                    || w.kind == Kind::Open
                    || self.only.iter().any(|n| n == w.name)
            })
            .cloned()
            .collect())
    }
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
            // As `memtrace import` does: the files in order, each read on a
            // second thread one file ahead of the one being written.
            let paths: Vec<PathBuf> = files.into_iter().map(|(f, _)| f).collect();
            for report in db.import_paths(&paths, &ImportOptions::default(), &mut |_| {}) {
                for t in report.result? {
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
        "sqlite-load" => m = crate::sqlite_peer::load(&a.set, a.n, &a.db)?,
        "query-memtrace" => {
            let mut side = MemtraceSide::new(a.db.clone());
            let (figures, digest, units, ev) = measure(&mut side, &a.workloads()?, a.runs())?;
            m.figures = figures;
            m.starts_digest = digest;
            m.units = units;
            m.eviction = ev;
        }
        "query-sqlite" => {
            let wl = &a.workloads()?;
            let mut side = SqliteSide::new(a.db.clone());
            {
                use crate::protocol::Side;
                side.open()?;
                let first = side.starts(1)?;
                let kinds: Vec<(&str, Kind)> = wl.iter().map(|w| (w.name, w.kind)).collect();
                m.plans = side.plans(&kinds, first.first())?;
                side.close();
            }
            let (figures, digest, units, ev) = measure(&mut side, wl, a.runs())?;
            m.figures = figures;
            m.starts_digest = digest;
            m.units = units;
            m.eviction = ev;
            m.note = format!("SQLite {} (bundled)", rusqlite::version());
        }
        "attribute" => {
            let db = Database::open_with(
                &a.db,
                &memtrace::OpenOptions {
                    create: false,
                    ..Default::default()
                },
            )?;
            let start = Instant::now();
            let e = db.evaluate(Method::Evidence, None, &Cancel::new(), &mut |_| {})?;
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
                digest: 0,
            }];
        }
        "attribute-scan" => {
            // The peer: what a tool without the graph does, reading each
            // trace whole and searching every value for each evidence text.
            let db = Database::open_with(
                &a.db,
                &memtrace::OpenOptions {
                    create: false,
                    ..Default::default()
                },
            )?;
            let start = Instant::now();
            let mut samples = Vec::new();
            let mut holders = 0u64;
            for info in db.traces()? {
                let t0 = Instant::now();
                let view = db.engine().trace_by_id(info.id)?;
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
            m.figures = vec![Figure::from_samples("attribute-scan", samples, holders, 0)];
        }
        other => return Err(CliError::Bench(format!("unknown suite step {other}"))),
    }
    m.peak_rss_kib = peak_rss_kib();
    Ok(m)
}

/// How a scale's steps are run: its workloads and runs.
struct StepOpts<'a> {
    seed: u64,
    workloads: &'a str,
    runs: Runs,
}

fn child(which: &str, set: &Path, n: usize, db: &Path, o: &StepOpts<'_>) -> Result<Measured> {
    let exe = std::env::current_exe().map_err(io("current executable"))?;
    let out = Process::new(exe)
        .args(["suite-step", which, "--set"])
        .arg(set)
        .args(["--n", &n.to_string(), "--db"])
        .arg(db)
        .args(["--seed", &o.seed.to_string()])
        .args(["--starts", &o.runs.starts.to_string()])
        .args(["--cold", &o.runs.cold.to_string()])
        .args(["--warm", &o.runs.warm.to_string()])
        .args(["--workloads", o.workloads])
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

/// What the suite gathers for the notes after its table.
#[derive(Default)]
struct Notes {
    /// SQLite's statements with their plans, and the scales that had each.
    plans: Vec<(Plan, Vec<String>)>,
    /// How each side's cold starts went, per scale.
    cold: Vec<String>,
    /// What each peer was (versions).
    peers: Vec<String>,
}

/// One scale of the suite: a set, how many of its traces, the workloads.
struct Scale<'a> {
    set: &'a Path,
    n: usize,
    /// The table's first column.
    label: String,
    /// What the set is, when the label does not say (growth traces).
    about: String,
    workloads: &'a str,
    runs: Runs,
    attribution: bool,
}

fn print_row(r: Vec<String>) {
    println!("| {} |", r.join(" | "));
}

/// A side's query figures, by workload.
struct Side<'a> {
    name: &'static str,
    m: &'a Measured,
}

/// Checks that every side traced the same starts and gave the same answers.
fn agree(sc: &Scale<'_>, wl: &[Workload], sides: &[Side<'_>]) -> Result<()> {
    let Some((first, rest)) = sides.split_first() else {
        return Ok(());
    };
    for s in rest {
        if s.m.starts_digest != first.m.starts_digest || s.m.units != first.m.units {
            return Err(CliError::Bench(format!(
                "{}: {} traced {} starts, {} {}: not the same nodes",
                sc.label, first.name, first.m.units, s.name, s.m.units
            )));
        }
        for (w, (a, b)) in wl.iter().zip(first.m.figures.iter().zip(&s.m.figures)) {
            let same_digest = w.kind.any_row() || a.digest == b.digest;
            if a.name != b.name
                || a.checksum != b.checksum
                || a.queries != b.queries
                || !same_digest
            {
                return Err(CliError::Bench(format!(
                    "{} at {}: {} answered {} (digest {:x}) over {} queries, {} {} (digest {:x}) over {}",
                    w.name,
                    sc.label,
                    first.name,
                    a.checksum,
                    a.digest,
                    a.queries,
                    s.name,
                    b.checksum,
                    b.digest,
                    b.queries
                )));
            }
        }
    }
    Ok(())
}

/// Measures one scale: import beside its peers, then the query workloads;
/// prints its rows.
fn scale(
    a: &SuiteArgs,
    dir: &Path,
    sc: &Scale<'_>,
    duck: Option<&DuckPeer>,
    notes: &mut Notes,
) -> Result<()> {
    let tag: String = sc
        .label
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let mem = dir.join(format!("memtrace-{tag}.db"));
    let raw = dir.join(format!("raw-{tag}.db"));
    let sql = dir.join(format!("sqlite-{tag}.db"));
    let csv = dir.join(format!("csv-{tag}"));
    let duckdb = dir.join(format!("duckdb-{tag}.duckdb"));
    let remove = || {
        for p in [&mem, &raw, &csv] {
            let _ = std::fs::remove_dir_all(p);
        }
        for p in [&sql, &duckdb] {
            let _ = std::fs::remove_file(p);
        }
    };
    remove();
    let o = StepOpts {
        seed: a.seed,
        workloads: sc.workloads,
        runs: sc.runs,
    };
    let (set, n) = (sc.set, sc.n);
    eprintln!("{}: import ...", sc.label);
    let imp = child("import", set, n, &mem, &o)?;
    let peer = child("raw", set, n, &raw, &o)?;
    let load = child("sqlite-load", set, n, &sql, &o)?;
    let dload = match duck {
        Some(d) => {
            write_csv(&sql, &csv)?;
            Some(d.load(&csv, &duckdb)?)
        }
        None => None,
    };
    eprintln!("{}: queries ...", sc.label);
    let qm = child("query-memtrace", set, n, &mem, &o)?;
    let qs = child("query-sqlite", set, n, &sql, &o)?;
    let wl = workloads(sc.workloads)?;
    let qd = match duck {
        Some(d) => Some(d.query(&duckdb, wl, sc.runs)?),
        None => None,
    };
    let mut sides = vec![
        Side {
            name: "memtrace",
            m: &qm,
        },
        Side {
            name: "SQLite",
            m: &qs,
        },
    ];
    if let Some(q) = &qd {
        sides.push(Side {
            name: "DuckDB",
            m: q,
        });
    }
    agree(sc, wl, &sides)?;
    // The growth traces are labelled by the closure they really hold.
    let label = match wl.iter().position(|w| w.kind == Kind::Closure && !w.cold) {
        Some(i) if sc.workloads == "growth" => {
            format!("growth: closure {}", qm.figures[i].checksum)
        }
        _ => sc.label.clone(),
    };
    let per = |m: &Measured, what: &str| format!("{:.0} {what}/s", m.units as f64 / m.seconds);
    let row = |name: &str, m: &Measured, rate: String, disk: String| {
        print_row(vec![
            label.clone(),
            name.to_string(),
            format!("{:.2}", m.seconds),
            rate,
            table::bytes(m.peak_rss_kib * 1024),
            disk,
        ])
    };
    row(
        &format!(
            "memtrace import (parse, validate, index, one batch per trace){}",
            sc.about
        ),
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
        "peer: SQLite load of the same graph (nodes, edges, ops; no values; indexes, ANALYZE)",
        &load,
        per(&load, "edges"),
        table::bytes(load.disk_bytes),
    );
    if let Some(d) = &dload {
        row(
            "peer: DuckDB load of the same graph from CSV (sorted by trace and target)",
            d,
            per(d, "edges"),
            table::bytes(d.disk_bytes),
        );
    }
    let latency = |f: &Figure| format!("median {}, p95 {}", micros(f.median_us), micros(f.p95_us));
    // Warm answers count each start once; cold ones each sample. One start
    // (growth) shows its answer; several, the sum and over how many.
    let one = sc.runs.starts == 1 && qm.units == 1;
    let answer = |w: &Workload, f: &Figure| {
        let starts = if w.cold { f.queries } else { qm.units };
        let each = f.checksum / starts.max(1);
        let rows = match w.kind {
            Kind::Closure | Kind::ClosureSpread | Kind::Depth3 | Kind::Match => "",
            Kind::NodesLimit1 | Kind::OpsLimit1 if one => " row",
            _ => " rows",
        };
        match w.kind {
            Kind::Open => format!("{} opens", f.queries),
            Kind::Match | Kind::FindGroup => format!("{}{rows}", f.checksum),
            // Each spread start's closure once, summed.
            Kind::ClosureSpread => format!("{} nodes from all the spread starts", f.checksum),
            _ if one => format!("{each}{rows}"),
            _ => format!(
                "{}{rows}, sum over {starts} {} (mean {each})",
                f.checksum,
                if w.cold { "cold samples" } else { "starts" }
            ),
        }
    };
    for (i, w) in wl.iter().enumerate() {
        let fm = &qm.figures[i];
        let ratios: Vec<String> = sides[1..]
            .iter()
            .map(|s| versus(fm.median_us, s.m.figures[i].median_us, s.name))
            .collect();
        print_row(vec![
            label.clone(),
            format!("memtrace {}: {}", w.name, w.memtrace),
            format!("{:.3}", fm.seconds),
            latency(fm),
            table::bytes(qm.peak_rss_kib * 1024),
            format!("{}; {}", answer(w, fm), ratios.join(", ")),
        ]);
        for s in &sides[1..] {
            let f = &s.m.figures[i];
            let what = match (w.kind, s.name) {
                (Kind::Open, "SQLite") => {
                    "Connection::open + first prepare (reads the schema), files evicted"
                }
                (Kind::Open, _) => "duckdb.connect, files evicted",
                _ => w.sql,
            };
            print_row(vec![
                label.clone(),
                format!("peer: {} {}: {what}", s.name, w.name),
                format!("{:.3}", f.seconds),
                latency(f),
                table::bytes(s.m.peak_rss_kib * 1024),
                answer(w, f),
            ]);
        }
    }
    for s in &sides {
        let e = &s.m.eviction;
        notes.cold.push(format!(
            "{label}, {}: {} cold opens; each evicted up to {} files ({}); at most {} still resident after an eviction (mincore)",
            s.name,
            e.times,
            e.files,
            table::bytes(e.bytes),
            table::bytes(e.resident_after)
        ));
        if !s.m.note.is_empty() && !notes.peers.contains(&s.m.note) {
            notes.peers.push(s.m.note.clone());
        }
    }
    for p in &qs.plans {
        match notes.plans.iter_mut().find(|(q, _)| q == p) {
            Some((_, scales)) => scales.push(label.clone()),
            None => notes.plans.push((p.clone(), vec![label.clone()])),
        }
    }
    if sc.attribution {
        attribution(&label, set, n, &mem, &o)?;
    }
    if !a.keep {
        remove();
    }
    Ok(())
}

/// Attribution on a scale's database, beside the scan a tool without the graph makes.
fn attribution(label: &str, set: &Path, n: usize, mem: &Path, o: &StepOpts<'_>) -> Result<()> {
    eprintln!("{label}: attribution ...");
    let at = child("attribute", set, n, mem, o)?;
    let scan = child("attribute-scan", set, n, mem, o)?;
    if let (Some(f), Some(p)) = (at.figures.first(), scan.figures.first()) {
        let (correct_types, correct_ops) = at.correct;
        let labelled = f.checksum.max(1) as f64;
        print_row(vec![
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
                versus(f.median_us, p.median_us, "the scan")
            ),
        ]);
        print_row(vec![
            label.to_string(),
            "peer: read each trace whole and search every value for each evidence text (no verdict)".into(),
            format!("{:.3}", scan.seconds),
            format!("median {}, p95 {} per case", micros(p.median_us), micros(p.p95_us)),
            table::bytes(scan.peak_rss_kib * 1024),
            format!("{} holders found", p.checksum),
        ]);
    }
    Ok(())
}

/// How much faster memtrace's median is than a peer's, or how much slower.
fn versus(ours: f64, theirs: f64, peer: &str) -> String {
    let r = theirs / ours.max(0.001);
    if r >= 10.0 {
        format!("{r:.0}x faster than {peer}")
    } else if r >= 1.0 {
        format!("{r:.1}x faster than {peer}")
    } else {
        format!("{:.1}x slower than {peer}", 1.0 / r.max(1e-9))
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

/// Runs the suite and prints its table (Markdown), then how cold was
/// produced and SQLite's query plans.
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
    if a.cold == 0 || a.warm == 0 {
        return Err(CliError::Usage(
            "--cold and --warm must be at least 1".into(),
        ));
    }
    let dir = a.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("memtrace-suite-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(io(dir.display()))?;
    let duck = if a.no_duckdb {
        println!("DuckDB peer skipped: --no-duckdb");
        None
    } else {
        match DuckPeer::find(&dir) {
            Ok(d) => {
                eprintln!(
                    "DuckDB peer: DuckDB {}, USING KEY {}",
                    d.version,
                    if d.using_key {
                        "supported"
                    } else {
                        "not supported"
                    }
                );
                Some(d)
            }
            Err(why) => {
                println!("DuckDB peer skipped: {why} (pip install duckdb to enable it)");
                None
            }
        }
    };
    let set = dir.join(format!("set-{max}-s{}", a.seed));
    eprintln!("generating {max} traces into {} ...", set.display());
    let gen_opts = StepOpts {
        seed: a.seed,
        workloads: "suite",
        runs: Runs {
            starts: a.starts,
            cold: a.cold,
            warm: a.warm,
        },
    };
    let gen = child("gen", &set, max, &set, &gen_opts)?;
    eprintln!(
        "generated in {:.1} s, peak RSS {}",
        gen.seconds,
        table::bytes(gen.peak_rss_kib * 1024)
    );
    println!(
        "memtrace bench suite: seed {}, scales {:?}, {} predictions traced per trace, cold samples {} per traversal (growth: {GROWTH_COLD}), {} warm repetitions on every side (growth: {})",
        a.seed, a.scales, a.starts, a.cold, a.warm, a.warm.saturating_mul(GROWTH_WARM_FACTOR)
    );
    println!();
    println!("| traces | step | seconds | rate | peak RSS | size / result |");
    println!("|---:|---|---:|---:|---:|---:|");
    // Rows are printed as they are measured, so a long run shows its progress.
    print_row(vec![
        max.to_string(),
        "memtrace gen --system all (simulate, label, write)".into(),
        format!("{:.2}", gen.seconds),
        format!("{:.1} traces/s", gen.units as f64 / gen.seconds),
        table::bytes(gen.peak_rss_kib * 1024),
        format!("{} of JSON", table::bytes(gen.disk_bytes)),
    ]);
    let mut notes = Notes::default();
    let mut scales = a.scales.clone();
    scales.sort_unstable();
    scales.dedup();
    for n in scales {
        let sc = Scale {
            set: &set,
            n,
            label: n.to_string(),
            about: String::new(),
            workloads: "suite",
            runs: gen_opts.runs,
            attribution: n <= ATTRIBUTE_MAX_TRACES,
        };
        scale(a, &dir, &sc, duck.as_ref(), &mut notes)?;
    }
    if !a.no_big {
        // A few traces of about 10,000 variables each, for the per-trace goals.
        let big = dir.join(format!("set-big-s{}", a.seed));
        eprintln!("generating {BIG_TRACES} traces of about 10k variables ...");
        child("gen-big", &big, BIG_TRACES, &big, &gen_opts)?;
        let sc = Scale {
            set: &big,
            n: BIG_TRACES,
            label: format!("{BIG_TRACES} × 10k-var"),
            about: String::new(),
            workloads: "suite",
            runs: gen_opts.runs,
            attribution: true,
        };
        scale(a, &dir, &sc, duck.as_ref(), &mut notes)?;
        if !a.keep {
            let _ = std::fs::remove_dir_all(&big);
        }
    }
    let mut sizes: Vec<usize> = a.growth.iter().copied().filter(|&s| s > 0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let gset = dir.join(format!("growth-{size}-s{}", a.seed));
        eprintln!("writing a growth trace whose closure holds {size} nodes ...");
        let c = crate::growth::write_set(&gset, size, a.seed)?;
        let sc = Scale {
            set: &gset,
            n: 1,
            label: format!("growth-{size}"),
            about: format!(
                ": one trace of {} variables, {} edges, {} ops, the closure {} layers deep",
                c.variables, c.edges, c.ops, c.layers
            ),
            workloads: "growth",
            runs: Runs {
                starts: 1,
                cold: GROWTH_COLD.min(a.cold),
                warm: a.warm.saturating_mul(GROWTH_WARM_FACTOR),
            },
            attribution: false,
        };
        scale(a, &dir, &sc, duck.as_ref(), &mut notes)?;
        if !a.keep {
            let _ = std::fs::remove_dir_all(&gset);
        }
    }
    print_notes(&notes);
    if !a.keep {
        let _ = std::fs::remove_dir_all(&set);
        let _ = std::fs::remove_file(dir.join("duckdb_peer.py"));
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_notes(notes: &Notes) {
    println!();
    println!("Peers: {}.", notes.peers.join("; "));
    println!();
    println!("How cold was produced: before every cold open, each side's database was closed (memtrace: Database dropped, with its trace cache and RocksDB's block cache; SQLite: connection closed; DuckDB: connection closed) and every file of it written back and evicted from the OS page cache (fsync, then posix_fadvise(POSIX_FADV_DONTNEED); memtrace: every file under the database folder; SQLite: the file and its -wal and -shm; DuckDB: the file and its .wal). Residency was then measured with mincore. The open is timed alone (open-cold); the first query after it is the cold figure. Warm figures: one untimed run per start, then the same number of timed runs on every side.");
    println!();
    for line in &notes.cold {
        println!("- {line}");
    }
    println!();
    println!("Starts: every side is given the start as its full node id in its trace (memtrace in the query's text; the SQL peers as a parameter, looked up in the nodes' index by name, SQLite's `nodes_name`), so every figure of a traversal includes finding its start.");
    println!();
    println!("SQLite EXPLAIN QUERY PLAN of every timed statement (a recursive statement whose plan reads the edges other than by an index lookup of their target, or the nodes other than by a lookup of an id or a name, stops the run):");
    for (p, scales) in &notes.plans {
        println!();
        println!("{} (at {}):", p.name, scales.join(", "));
        println!("```sql");
        println!("{}", p.sql);
        println!("```");
        println!("```text");
        for l in &p.lines {
            println!("{l}");
        }
        println!("```");
    }
}
