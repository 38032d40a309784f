//! `memtrace bench attribution`: the evidence-flow attributor's accuracy and
//! time per case on generated traces of each simulated system and recording
//! style and, side by side, on MemTraceBench files that someone else recorded (for example the
//! dev split of an independent benchmark). A figure that holds on one and
//! not the other shows a rule that is too loose or too tight.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use memtrace::attrib::choose::{says_no_answer, Features};
use memtrace::attrib::eval::{Evaluation, Score};
use memtrace::attrib::flow::{answer_op, Flow};
use memtrace::attrib::{
    AttributeRequest, Chooser, Method, RecallReport, Search, Setting, TraceModel, DEFAULT_K,
};
use memtrace::attrib::{Evidence, EvidenceOrigin};
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
    /// Also write, for every case with source evidence, the features of its candidate
    /// evidence messages and whether each is source evidence, as CSV (what the candidates'
    /// weighing is fitted on).
    #[arg(long)]
    pub features: Option<PathBuf>,
}

/// One row: a set of traces and how the attributor did on it in each
/// setting, with its pseudo-evidence recall.
struct Row {
    set: String,
    evals: Vec<Evaluation>,
    recall: RecallReport,
}

/// The evaluation of one setting whose time per case is the median of `runs`.
fn evaluate(db: &Database, setting: Setting, runs: usize) -> Result<Evaluation> {
    let mut all = Vec::new();
    for _ in 0..runs.max(1) {
        let req = AttributeRequest {
            trace: None,
            cases: None,
            method: Method::Evidence,
            setting,
            search: Search::Sparse,
        };
        all.push(db.evaluate_request(&req, &Cancel::new(), &mut |_| {})?);
    }
    all.sort_by_key(|e| e.median_micros);
    let mid = all.len() / 2;
    Ok(all.swap_remove(mid))
}

/// Appends the candidate features of every case of `db` that names its
/// source evidence to `out`, in the evaluation and production settings.
fn dump_features(db: &Database, set: &str, out: &mut String) -> Result<()> {
    for info in db.traces()? {
        let view = db.engine().trace_by_id(info.id)?;
        let model = TraceModel::load(&view)?;
        let flow = Flow::new(&model);
        let chooser = Chooser::new(&model, flow.matcher());
        let labels: Vec<(String, String, String)> = view
            .cases()?
            .into_iter()
            .filter_map(|c| Some((c.query_id?, c.final_error_type?, c.final_op_id?)))
            .collect();
        for case in db.failed_cases(Some(&format!("#{}", info.id)))? {
            let Some((_, true_type, true_op)) = labels.iter().find(|l| l.0 == case.id) else {
                continue;
            };
            let true_op = model.op(true_op).map_or(-1, |o| o as i64);
            let answer = answer_op(&model, &case).map_or(-1, |o| o as i64);
            let source: Vec<usize> = case
                .source_evidence
                .iter()
                .filter_map(|e| model.var(e))
                .collect();
            if source.is_empty() {
                continue;
            }
            for setting in [Setting::Evaluation, Setting::Production] {
                let mut c = case.clone();
                c.hide(setting);
                let candidates = chooser.candidates(&c);
                let all = Evidence {
                    items: candidates.iter().map(|x| x.message).collect(),
                    weights: vec![1.0; candidates.len()],
                    origin: EvidenceOrigin::Pseudo,
                };
                let fates = flow.fates(&c, &all);
                for cand in candidates {
                    let fate = fates.iter().find(|f| f.0 == cand.message).map_or(
                        "-2,none".to_string(),
                        |f| match f.1 {
                            Some((op, t)) => format!("{op},{t}"),
                            None => "-1,none".to_string(),
                        },
                    );
                    let label = u8::from(source.contains(&cand.message));
                    let values: Vec<String> = cand
                        .features
                        .values()
                        .iter()
                        .map(|x| format!("{x:.4}"))
                        .collect();
                    out.push_str(&format!(
                        "{set},{setting},{},{},{},{},{label},{fate},{true_op},{true_type},{answer},{},{},{}\n",
                        info.id,
                        case.id.replace(',', ";"),
                        source.len(),
                        model.vars[cand.message].full_node_id.replace(',', ";"),
                        u8::from(says_no_answer(&c.prediction)),
                        cand.says
                            .gold
                            .iter()
                            .map(|s| format!("g{s}"))
                            .chain(cand.says.question.iter().map(|s| format!("q{s}")))
                            .collect::<Vec<_>>()
                            .join(";"),
                        values.join(",")
                    ));
                }
            }
        }
    }
    Ok(())
}

fn row(db: &Database, set: String, runs: usize) -> Result<Row> {
    let evals = Setting::ALL
        .iter()
        .map(|&s| evaluate(db, s, runs))
        .collect::<Result<Vec<_>>>()?;
    Ok(Row {
        set,
        evals,
        recall: db.evidence_recall(DEFAULT_K, Search::Sparse)?,
    })
}

fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// The cells of one setting: op id, error type, confident share and
/// their accuracy, median ms.
fn setting_cells(e: &Evaluation) -> Vec<String> {
    vec![
        pct(e.op_id_accuracy),
        pct(e.error_type_accuracy),
        format!(
            "{} / {}",
            pct(e.calibration.confident.coverage),
            pct(e.calibration.confident.op_id_accuracy)
        ),
        format!("{:.2}", e.median_micros as f64 / 1000.0),
    ]
}

fn score_cells(s: Option<&Score>) -> Vec<String> {
    match s {
        Some(s) => vec![
            pct(s.op_id_accuracy),
            pct(s.error_type_accuracy),
            String::new(),
            String::new(),
        ],
        None => vec![String::new(); 4],
    }
}

/// One target: what it asks, what was measured, and whether it holds.
struct Target {
    what: String,
    measured: String,
    met: bool,
}

/// The targets checked on one set.
fn targets(r: &Row) -> Vec<Target> {
    let [bench, eval, prod] = [&r.evals[0], &r.evals[1], &r.evals[2]];
    let mut out = vec![
        Target {
            what: "evaluation: op id >= 85%".into(),
            measured: pct(eval.op_id_accuracy),
            met: eval.op_id_accuracy >= 0.85,
        },
        Target {
            what: "evaluation: error type >= 90%".into(),
            measured: pct(eval.error_type_accuracy),
            met: eval.error_type_accuracy >= 0.90,
        },
    ];
    let worst = eval
        .by_system
        .iter()
        .min_by(|a, b| a.1.op_id_accuracy.total_cmp(&b.1.op_id_accuracy));
    if let Some((name, s)) = worst {
        out.push(Target {
            what: "evaluation: every system >= 75% op id".into(),
            measured: format!("lowest {name} {}", pct(s.op_id_accuracy)),
            met: s.op_id_accuracy >= 0.75,
        });
    }
    let c = &prod.calibration.confident;
    out.extend([
        Target {
            what: "production: op id >= 60%".into(),
            measured: pct(prod.op_id_accuracy),
            met: prod.op_id_accuracy >= 0.60,
        },
        Target {
            what: "production: confidence >= 0.8 right >= 90%, covering >= 40%".into(),
            measured: format!(
                "{} right, {} covered",
                pct(c.op_id_accuracy),
                pct(c.coverage)
            ),
            met: c.op_id_accuracy >= 0.90 && c.coverage >= 0.40,
        },
        Target {
            what: "benchmark: op id >= 90%".into(),
            measured: pct(bench.op_id_accuracy),
            met: bench.op_id_accuracy >= 0.90,
        },
        Target {
            what: "sparse pseudo-evidence recall@8 >= 0.90".into(),
            measured: format!("{:.3}", r.recall.total.micro()),
            met: r.recall.total.micro() >= 0.90,
        },
    ]);
    let slowest = r.evals.iter().map(|e| e.median_micros).max().unwrap_or(0);
    out.push(Target {
        what: "<= 3 ms per case median in every setting".into(),
        measured: format!("{:.2} ms", slowest as f64 / 1000.0),
        met: slowest <= 3000,
    });
    out
}

fn open_temp(dir: &Path, name: &str) -> Result<Database> {
    Ok(Database::open(dir.join(name))?)
}

/// Runs the benchmark and prints its tables.
pub fn run(args: &AttrBenchArgs) -> Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; times mean little (use cargo run --release)");
    }
    let tmp = std::env::temp_dir().join(format!("memtrace-attr-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(io(tmp.display()))?;
    let result = measure(args, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    let rows = result?;
    let mut header = vec!["set".to_string(), "cases".to_string()];
    for s in Setting::ALL {
        header.extend([
            format!("{s} op id"),
            "type".into(),
            "confident / right".into(),
            "ms".into(),
        ]);
    }
    header.push("recall@8".into());
    let mut lines = Vec::new();
    for r in &rows {
        let mut line = vec![r.set.clone(), r.evals[0].cases.to_string()];
        for e in &r.evals {
            line.extend(setting_cells(e));
        }
        line.push(format!("{:.3}", r.recall.total.micro()));
        lines.push(line);
        if r.set.starts_with("file") && r.evals[0].by_system.len() > 1 {
            for (sys, s) in &r.evals[0].by_system {
                let mut line = vec![format!("  {sys}"), s.cases.to_string()];
                for e in &r.evals {
                    line.extend(score_cells(e.by_system.get(sys)));
                }
                line.push(
                    r.recall
                        .by_system
                        .get(sys)
                        .map_or(String::new(), |x| format!("{:.3}", x.micro())),
                );
                lines.push(line);
            }
        }
    }
    let head: Vec<&str> = header.iter().map(String::as_str).collect();
    let right: Vec<usize> = (1..head.len()).collect();
    println!(
        "Settings: benchmark hides nothing; evaluation hides the annotated evidence; production \
         hides the evidence and the gold answer. \"confident / right\": the share of cases with \
         confidence >= 0.8 and the op-id accuracy among them."
    );
    print!("{}", table::render(&head, &lines, &right));
    for r in &rows {
        println!("\nTargets on {}", r.set);
        let lines: Vec<Vec<String>> = targets(r)
            .into_iter()
            .map(|t| {
                vec![
                    t.what,
                    t.measured,
                    if t.met { "met" } else { "not met" }.into(),
                ]
            })
            .collect();
        print!(
            "{}",
            table::render(&["target", "measured", ""], &lines, &[])
        );
    }
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
    let mut features = format!(
        "set,setting,trace,case,sources,message,label,fate_op,fate_type,true_op,true_type,answer_op,refusal,says,{}\n",
        Features::NAMES.join(",")
    );
    let mut row = |db: &Database, set: String, runs: usize| -> Result<Row> {
        if args.features.is_some() {
            dump_features(db, &set, &mut features)?;
        }
        row(db, set, runs)
    };
    for system in System::ALL {
        let spec = GenSpec {
            system: Some(system),
            traces: args.traces,
            seed: args.seed,
            ..GenSpec::default()
        };
        let db = generated(tmp, &format!("gen-{}", system.name()), &spec)?;
        rows.push(row(&db, format!("generated {}", system.name()), args.runs)?);
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
        rows.push(row(
            &db,
            format!("generated {} style (all systems)", style.name()),
            args.runs,
        )?);
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
        rows.push(row(
            &db,
            format!(
                "files {}",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            args.runs,
        )?);
    }
    if let Some(path) = &args.features {
        std::fs::write(path, &features).map_err(io(path.display()))?;
    }
    Ok(rows)
}
