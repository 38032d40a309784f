//! How fast is memtrace, beside the peers a user would reach for? The `memtrace-bench` binary: import beside raw RocksDB puts, queries and patterns beside SQLite, attribution accuracy and time, LLM token use; build it with --release.

mod attr_bench;
mod cold;
mod duckdb_peer;
mod error;
mod growth;
mod import_bench;
mod llm_bench;
mod measure;
mod memtrace_side;
mod otlp_bench;
mod pattern_bench;
mod peer;
mod protocol;
mod sqlite_peer;
mod suite;
mod walk_split;

use std::process::ExitCode;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::Result;

/// memtrace's benchmarks: each figure beside a peer measured in the same run.
#[derive(Debug, Parser)]
#[command(
    name = "memtrace-bench",
    version,
    after_help = "Examples:\n  cargo run --release -p memtrace-bench -- import --variables 100000 --edges 200000\n  cargo run --release -p memtrace-bench -- suite\n  cargo run --release -p memtrace-bench -- attribution --traces 2 --runs 5\n  cargo run --release -p memtrace-bench -- walk-split --db <a growth database kept by suite --keep>"
)]
struct Cli {
    /// Which benchmark.
    #[command(subcommand)]
    which: BenchCommand,
}

/// The allocator of the command-line tool, so that memtrace's figures are
/// what its users get.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = Cli::parse();
    match run(args.which) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// Benchmarks.
#[derive(Debug, Subcommand)]
enum BenchCommand {
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
        /// A Python with smartcomment installed: its own import of the same export is measured
        /// as a third peer (skipped, with a note, when this Python cannot import smartcomment).
        #[arg(long, default_value = "python3")]
        python: PathBuf,
        /// How the export is written: `compact` (no whitespace), `indented` (two spaces a
        /// level, as `json.dump(..., indent=2)` writes it, the way smartcomment's sample program
        /// saves an export), or `both`, each measured in turn.
        #[arg(long, value_enum, default_value_t = import_bench::Layouts::Both)]
        layout: import_bench::Layouts,
    },
    /// Generated sets at several scales and growth traces of known closure size: generation;
    /// import beside raw RocksDB puts; provenance, MATCH and FIND cold and warm beside SQLite
    /// (and DuckDB when Python's duckdb module is installed).
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
    /// Where the time of `RETURN ops` goes beside `RETURN count`: the count query, the count's
    /// and the ops' walks alone, and the ops read by batches and by rows, taking turns in
    /// rounds; least and median times beside the count query's.
    WalkSplit(crate::walk_split::WalkSplitArgs),
    /// Spans per second taken by the OTLP/HTTP receiver (`memtrace collect`, several exporters
    /// posting protobuf batches), beside `memtrace import` of the same spans; needs the release
    /// `memtrace` binary beside this one (cargo build --release -p memtrace-repl).
    Otlp(crate::otlp_bench::OtlpBenchArgs),
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

/// Runs a benchmark command.
fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Suite(a) => suite::suite(&a),
        BenchCommand::Llm(a) => llm_bench::run(&a),
        BenchCommand::Patterns(a) => pattern_bench::run(&a),
        BenchCommand::Attribution(a) => attr_bench::run(&a),
        BenchCommand::WalkSplit(a) => walk_split::run(&a),
        BenchCommand::Otlp(a) => otlp_bench::run(&a),
        BenchCommand::PatternStep(a) => {
            let r = pattern_bench::step(&a)?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::SuiteStep(a) => {
            let r = suite::step(&a)?;
            println!("{}", serde_json::to_string(&r)?);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Step {
            which,
            file,
            db,
            records,
        } => import_bench::run_step(&which, &file, &db, records),
        BenchCommand::Import {
            variables,
            edges,
            sessions,
            runs,
            dir,
            python,
            layout,
        } => import_bench::run(variables, edges, sessions, runs, dir, &python, layout),
    }
}
