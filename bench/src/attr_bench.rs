//! `memtrace bench attribution`: the evidence-flow attributor's accuracy and
//! time per case on generated traces of each simulated system and recording
//! style and, side by side, on MemTraceBench files that someone else recorded (for example the
//! dev split of an independent benchmark). A figure that holds on one and
//! not the other shows a rule that is too loose or too tight.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use memtrace::attrib::eval::{Evaluation, Score};
use memtrace::attrib::Method;
use memtrace::gen::set::{generate_trace, GenSpec};
use memtrace::gen::sim::System;
use memtrace::gen::style::Style;
use memtrace::prelude::*;
use memtrace::{Cancel, Database, ImportOptions};

use crate::error::{io, CliError, Result};
use memtrace_table as table;

/// Where the repository keeps the dev split, when run from a checkout.
const DEV_SPLIT: &str = "tests/fixtures/devsplit";

/// Options of `memtrace bench attribution`.
#[derive(Debug, Args)]
pub struct AttrBenchArgs {
    /// MemTraceBench files or folders to score beside the generated traces
    /// (default: the repository's dev split, tests/fixtures/devsplit, when it is there).
    pub files: Vec<PathBuf>,
    /// Generated traces per system (LoCoMo scale: 19 to 32 sessions, 200 questions); each
    /// recording style other than the classic one gets as many of every system.
    #[arg(long, default_value_t = 2)]
    pub traces: usize,
    /// Seed of the generated traces.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Runs of each evaluation; the run with the median time per case is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

/// One row: a set of traces and how the attributor did on it.
struct Row {
    set: String,
    eval: Evaluation,
}

fn evaluate(db: &Database, runs: usize) -> Result<Evaluation> {
    let mut all = Vec::new();
    for _ in 0..runs.max(1) {
        all.push(db.evaluate(Method::Evidence, None, &Cancel::new(), &mut |_| {})?);
    }
    all.sort_by_key(|e| e.median_micros);
    let mid = all.len() / 2;
    Ok(all.swap_remove(mid))
}

fn row_of(set: String, eval: Evaluation) -> Vec<String> {
    vec![
        set,
        eval.cases.to_string(),
        format!("{:.1}%", 100.0 * eval.error_type_accuracy),
        format!("{:.1}%", 100.0 * eval.op_id_accuracy),
        eval.total.no_verdict.to_string(),
        format!("{:.2}", eval.median_micros as f64 / 1000.0),
        format!("{:.2}", eval.p95_micros as f64 / 1000.0),
    ]
}

fn open_temp(dir: &Path, name: &str) -> Result<Database> {
    Ok(Database::open(dir.join(name))?)
}

/// Runs the benchmark and prints its table.
pub fn run(args: &AttrBenchArgs) -> Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; times mean little (use cargo run --release)");
    }
    let tmp = std::env::temp_dir().join(format!("memtrace-attr-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(io(tmp.display()))?;
    let result = measure(args, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    let rows = result?;
    let header = [
        "set",
        "cases",
        "error type",
        "op id",
        "no verdict",
        "ms/case median",
        "ms/case p95",
    ];
    let mut lines = Vec::new();
    for r in rows {
        let by_system: Vec<(String, Score)> = r
            .eval
            .by_system
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let set = r.set.clone();
        lines.push(row_of(r.set, r.eval));
        if set.starts_with("file") && by_system.len() > 1 {
            for (sys, s) in by_system {
                lines.push(vec![
                    format!("  {sys}"),
                    s.cases.to_string(),
                    format!("{:.1}%", 100.0 * s.error_type_accuracy),
                    format!("{:.1}%", 100.0 * s.op_id_accuracy),
                    s.no_verdict.to_string(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    print!("{}", table::render(&header, &lines, &[1, 2, 3, 4, 5, 6]));
    Ok(ExitCode::SUCCESS)
}

/// A database named `name` in `tmp` holding the traces of `spec`.
fn generated(tmp: &Path, name: &str, spec: &GenSpec) -> Result<Database> {
    let db = open_temp(tmp, name)?;
    for i in 0..spec.traces {
        let t = generate_trace(spec, i);
        db.import_reader(
            t.document.to_string().as_bytes(),
            memtrace::InputFormat::Json,
            &t.graph_id,
            &ImportOptions::default(),
        )?;
    }
    Ok(db)
}

fn measure(args: &AttrBenchArgs, tmp: &Path) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for system in System::ALL {
        let spec = GenSpec {
            system: Some(system),
            traces: args.traces,
            seed: args.seed,
            ..GenSpec::default()
        };
        let db = generated(tmp, &format!("gen-{}", system.name()), &spec)?;
        rows.push(Row {
            set: format!("generated {}", system.name()),
            eval: evaluate(&db, args.runs)?,
        });
    }
    // The other recording styles, each over every system in turn: what
    // real recorders vary (templates, rewrites, shared units, budgets).
    for style in Style::ALL.into_iter().filter(|s| *s != Style::Classic) {
        let spec = GenSpec {
            system: None,
            style: Some(style),
            traces: args.traces * System::ALL.len(),
            seed: args.seed,
            ..GenSpec::default()
        };
        let db = generated(tmp, &format!("style-{}", style.name()), &spec)?;
        rows.push(Row {
            set: format!("generated {} style (all systems)", style.name()),
            eval: evaluate(&db, args.runs)?,
        });
    }
    let files: Vec<PathBuf> = if args.files.is_empty() {
        let dev = PathBuf::from(DEV_SPLIT);
        if dev.is_dir() {
            vec![dev]
        } else {
            eprintln!("no files named and no {DEV_SPLIT} here: generated traces only");
            Vec::new()
        }
    } else {
        args.files.clone()
    };
    if !files.is_empty() {
        let db = open_temp(tmp, "files")?;
        let mut progress = |_: memtrace::Progress| {};
        let reports = db.import_paths(&files, &ImportOptions::default(), &mut progress);
        let mut imported = 0;
        for r in reports {
            match r.result {
                Ok(t) => imported += t.len(),
                Err(e) => return Err(CliError::Bench(format!("{}: {e}", r.path.display()))),
            }
        }
        if imported == 0 {
            return Err(CliError::Usage(format!(
                "no trace was imported from {}",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        rows.push(Row {
            set: format!(
                "files {}",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            eval: evaluate(&db, args.runs)?,
        });
    }
    Ok(rows)
}
