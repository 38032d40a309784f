//! `memtrace bench`: measured figures beside a peer measured in the same run.
//! Each measured step runs in a child process so that its peak resident
//! memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};
use std::time::Instant;

use clap::Subcommand;
use memtrace_engine::peer::RawPeer;
use memtrace_engine::synth::{write_export, SynthSpec};
use memtrace_engine::{Database, ImportOptions, InputFormat};
use serde::{Deserialize, Serialize};

use crate::error::{io, CliError, Result};
use crate::table;

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Import a generated export, beside raw RocksDB batched puts of the same bytes.
    Import {
        /// Variables in the generated export.
        #[arg(long, default_value_t = 100_000)]
        variables: usize,
        /// Edges in the generated export.
        #[arg(long, default_value_t = 200_000)]
        edges: usize,
        /// Sessions in the generated export.
        #[arg(long, default_value_t = 100)]
        sessions: usize,
        /// Runs of each step; the median is reported.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Working folder (default: a new folder under the system's temp folder).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Generated sets at several scales: generation; import beside raw RocksDB puts;
    /// backward provenance beside SQLite recursive CTEs.
    Suite(crate::suite::SuiteArgs),
    /// Token use of LLM attribution per case against a scripted local server, beside a full
    /// dump of the trace.
    Llm(crate::llm_bench::LlmBenchArgs),
    /// The evidence-flow attributor's accuracy and time per case on generated traces of each
    /// system, beside MemTraceBench files recorded by someone else (default: the repository's
    /// dev split).
    Attribution(crate::attr_bench::AttrBenchArgs),
    /// The built-in failure-pattern library over a generated set, cold and warm, beside the
    /// same questions in SQLite.
    Patterns(crate::pattern_bench::PatternBenchArgs),
    /// One measured step of the pattern benchmark (internal).
    #[command(hide = true)]
    PatternStep(crate::pattern_bench::PatternStepArgs),
    /// One measured step of the suite (internal).
    #[command(hide = true)]
    SuiteStep(crate::suite::SuiteStepArgs),
    /// One measured step (internal).
    #[command(hide = true)]
    Step {
        /// `memtrace` or `raw`.
        which: String,
        /// The export file.
        file: PathBuf,
        /// The database folder to create.
        db: PathBuf,
        /// Number of records to split the bytes into (for `raw`).
        #[arg(long, default_value_t = 1)]
        records: u64,
    },
}

/// What one step measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    seconds: f64,
    peak_rss_kib: u64,
    disk_bytes: u64,
    records: u64,
}

/// Peak resident set size of this process, from /proc (0 where unavailable).
pub(crate) fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

fn step(which: &str, file: &Path, db: &Path, records: u64) -> Result<StepResult> {
    match which {
        "memtrace" => {
            let start = Instant::now();
            let database = Database::open(db)?;
            let f = std::fs::File::open(file).map_err(io(file.display()))?;
            let t = database.import_reader(
                std::io::BufReader::with_capacity(1 << 16, f),
                InputFormat::Json,
                &file.display().to_string(),
                &ImportOptions::default(),
            )?;
            let seconds = start.elapsed().as_secs_f64();
            let c = t[0].counts;
            database.flush()?;
            drop(database);
            Ok(StepResult {
                seconds,
                peak_rss_kib: peak_rss_kib(),
                disk_bytes: memtrace_engine::peer::dir_bytes(db)
                    .map_err(memtrace_engine::EngineError::from)?,
                records: (c.sessions + c.variables + c.ops + c.edges) as u64,
            })
        }
        "raw" => {
            let start = Instant::now();
            let bytes = std::fs::read(file).map_err(io(file.display()))?;
            let per = (bytes.len() as u64 / records.max(1)).max(1) as usize;
            let peer = RawPeer::open(db).map_err(memtrace_engine::EngineError::from)?;
            let n = peer
                .put_all(bytes.chunks(per), usize::MAX)
                .map_err(memtrace_engine::EngineError::from)?;
            let seconds = start.elapsed().as_secs_f64();
            peer.flush().map_err(memtrace_engine::EngineError::from)?;
            drop(peer);
            Ok(StepResult {
                seconds,
                peak_rss_kib: peak_rss_kib(),
                disk_bytes: memtrace_engine::peer::dir_bytes(db)
                    .map_err(memtrace_engine::EngineError::from)?,
                records: n,
            })
        }
        other => Err(CliError::Bench(format!("unknown step {other}"))),
    }
}

fn child(which: &str, file: &Path, db: &Path, records: u64) -> Result<StepResult> {
    let exe = std::env::current_exe().map_err(io("current executable"))?;
    let out = Process::new(exe)
        .args(["bench", "step", which])
        .arg(file)
        .arg(db)
        .args(["--records", &records.to_string()])
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

fn median(mut v: Vec<StepResult>) -> StepResult {
    v.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    v[v.len() / 2].clone()
}

/// Runs a benchmark command.
pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Suite(a) => crate::suite::suite(&a),
        BenchCommand::Llm(a) => crate::llm_bench::run(&a),
        BenchCommand::Patterns(a) => crate::pattern_bench::run(&a),
        BenchCommand::Attribution(a) => crate::attr_bench::run(&a),
        BenchCommand::PatternStep(a) => {
            let r = crate::pattern_bench::step(&a)?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::SuiteStep(a) => {
            let r = crate::suite::step(&a)?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Step {
            which,
            file,
            db,
            records,
        } => {
            let r = step(&which, &file, &db, records)?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Import {
            variables,
            edges,
            sessions,
            runs,
            dir,
        } => {
            if cfg!(debug_assertions) {
                eprintln!(
                    "warning: this is a debug build; figures mean little (use cargo run --release)"
                );
            }
            let dir = dir.unwrap_or_else(|| {
                std::env::temp_dir().join(format!("memtrace-bench-{}", std::process::id()))
            });
            std::fs::create_dir_all(&dir).map_err(io(dir.display()))?;
            let file = dir.join("export.json");
            let spec = SynthSpec {
                graph_id: "bench".into(),
                variables,
                edges,
                sessions,
                seed: 42,
            };
            let mut w =
                std::io::BufWriter::new(std::fs::File::create(&file).map_err(io(file.display()))?);
            let counts = write_export(&spec, &mut w).map_err(io(file.display()))?;
            std::io::Write::flush(&mut w).map_err(io(file.display()))?;
            drop(w);
            let size = std::fs::metadata(&file).map_err(io(file.display()))?.len();
            let records = (counts.sessions + counts.variables + counts.ops + counts.edges) as u64;
            eprintln!(
                "generated {} ({}): {} variables, {} edges, {} ops, {} sessions",
                file.display(),
                table::bytes(size),
                counts.variables,
                counts.edges,
                counts.ops,
                counts.sessions
            );
            let (mut ours, mut raw) = (Vec::new(), Vec::new());
            for i in 0..runs.max(1) {
                for (which, out) in [("memtrace", &mut ours), ("raw", &mut raw)] {
                    let db = dir.join(format!("{which}-{i}.db"));
                    let _ = std::fs::remove_dir_all(&db);
                    let r = child(which, &file, &db, records)?;
                    eprintln!("run {}: {which} {:.2} s", i + 1, r.seconds);
                    out.push(r);
                    let _ = std::fs::remove_dir_all(&db);
                }
            }
            let (ours, raw) = (median(ours), median(raw));
            let mb = size as f64 / 1e6;
            let row = |name: &str, r: &StepResult| {
                vec![
                    name.to_string(),
                    format!("{:.2}", r.seconds),
                    format!("{:.0}", records as f64 / r.seconds),
                    format!("{:.1}", mb / r.seconds),
                    table::bytes(r.peak_rss_kib * 1024),
                    table::bytes(r.disk_bytes),
                ]
            };
            println!("import of a generated export: {} variables, {} edges, {} ops, {} sessions, {} of JSON; median of {} runs", counts.variables, counts.edges, counts.ops, counts.sessions, table::bytes(size), runs.max(1));
            println!();
            println!("| step | seconds | records/s | MB/s | peak RSS | on disk |");
            println!("|---|---:|---:|---:|---:|---:|");
            for r in [
                row("memtrace import (parse, validate, index, one batch)", &ours),
                row("raw RocksDB batched puts of the same bytes", &raw),
            ] {
                println!("| {} |", r.join(" | "));
            }
            println!();
            println!(
                "memtrace import takes {:.2}x the time of the raw puts",
                ours.seconds / raw.seconds
            );
            let _ = std::fs::remove_file(&file);
            let _ = std::fs::remove_dir(&dir);
            Ok(ExitCode::SUCCESS)
        }
    }
}
