//! `memtrace bench llm`: token use of the LLM attribution loop per case, on
//! generated traces against a scripted local server, beside a full dump of
//! the trace (what a tool that pastes the whole trace into one prompt sends).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use memtrace::attrib::agent::walker;
use memtrace::attrib::{AttributeRequest, Method, Verdict};
use memtrace::gen::set::{generate_set, GenSpec};
use memtrace::llm::chat::estimate_tokens;
use memtrace::llm::scripted::ScriptedServer;
use memtrace::llm::Config;
use memtrace::prelude::*;
use memtrace::{Cancel, Database, ExportFormat, ImportOptions, InputFormat};

use crate::error::{io, Result};
use memtrace_table as table;

/// Options of `memtrace bench llm`.
#[derive(Debug, Args)]
pub struct LlmBenchArgs {
    /// Traces to generate (the four systems in turn).
    #[arg(long, default_value_t = 8)]
    traces: usize,
    /// Seed of the set.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Working folder (default: a new folder under the system's temp folder, removed after).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Tokens per case of one method, per system.
#[derive(Default)]
struct Tally {
    tokens: Vec<u64>,
    calls: Vec<u64>,
}

fn tally(verdicts: &[Verdict]) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for v in verdicts {
        let c = v.cost.unwrap_or_default();
        for key in [v.system.clone().unwrap_or_else(|| "-".into()), "all".into()] {
            let t = out.entry(key).or_default();
            t.tokens.push(c.tokens_in + c.tokens_out);
            t.calls.push(u64::from(c.calls + c.cached_calls));
        }
    }
    for t in out.values_mut() {
        t.tokens.sort_unstable();
        t.calls.sort_unstable();
    }
    out
}

/// `memtrace bench llm`.
pub fn run(a: &LlmBenchArgs) -> Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; times mean little (use cargo run --release)");
    }
    let own = a.dir.is_none();
    let dir = a.dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("memtrace-bench-llm-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(io(dir.display()))?;
    let spec = GenSpec {
        system: None,
        traces: a.traces,
        seed: a.seed,
        ..GenSpec::default()
    };
    let gen_dir = dir.join("gen");
    let traces = generate_set(&spec, &gen_dir, true, |_, _| {})?;
    let db = Database::open(dir.join("bench.db"))?;
    let mut dump: BTreeMap<String, u64> = BTreeMap::new();
    for t in &traces {
        if db.trace(&t.graph_id).is_err() {
            let file = gen_dir.join(&t.file);
            let f = std::fs::File::open(&file).map_err(io(file.display()))?;
            db.import_reader(
                std::io::BufReader::new(f),
                InputFormat::Json,
                &t.file,
                &ImportOptions::default(),
            )?;
        }
        let mut bytes = Vec::new();
        db.trace(&t.graph_id)?
            .export(ExportFormat::Smartcomment, &mut bytes)?;
        dump.insert(
            t.graph_id.clone(),
            estimate_tokens(&String::from_utf8_lossy(&bytes)),
        );
    }
    let server = ScriptedServer::start(walker::script()).map_err(io("the scripted server"))?;
    let mut config = Config::new(server.base_url(), "walker");
    config.timeout = Duration::from_secs(30);
    db.set_llm_config(config);
    println!(
        "{} generated traces (seed {}), scripted model at {}",
        traces.len(),
        a.seed,
        server.base_url()
    );
    let mut results = Vec::new();
    for method in [Method::Llm, Method::Hybrid] {
        let started = Instant::now();
        let verdicts = db.attribute(
            &AttributeRequest {
                trace: None,
                cases: None,
                method,
                setting: Default::default(),
                search: Default::default(),
            },
            &Cancel::new(),
            &mut |_| {},
        )?;
        let secs = started.elapsed().as_secs_f64();
        let e = db.evaluate(method, None, &Cancel::new(), &mut |_| {})?;
        results.push((method, verdicts, secs, e));
    }
    // Full dump per case: the dump of the case's trace.
    let mut dumps: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for v in &results[0].1 {
        let d = dump.get(&v.graph_id).copied().unwrap_or(0);
        for key in [v.system.clone().unwrap_or_else(|| "-".into()), "all".into()] {
            dumps.entry(key).or_default().push(d);
        }
    }
    for d in dumps.values_mut() {
        d.sort_unstable();
    }
    let tallies: Vec<BTreeMap<String, Tally>> = results.iter().map(|r| tally(&r.1)).collect();
    let header = [
        "system",
        "cases",
        "full dump, median",
        "llm median",
        "llm p95",
        "llm calls",
        "hybrid median",
        "hybrid p95",
        "hybrid calls",
        "llm / dump",
    ];
    let mut rows = Vec::new();
    let none = Tally::default();
    for (system, d) in &dumps {
        let l = tallies[0].get(system).unwrap_or(&none);
        let h = tallies[1].get(system).unwrap_or(&none);
        let dm = quantile(d, 0.5);
        let lm = quantile(&l.tokens, 0.5);
        rows.push(vec![
            system.clone(),
            d.len().to_string(),
            dm.to_string(),
            lm.to_string(),
            quantile(&l.tokens, 0.95).to_string(),
            quantile(&l.calls, 0.5).to_string(),
            quantile(&h.tokens, 0.5).to_string(),
            quantile(&h.tokens, 0.95).to_string(),
            quantile(&h.calls, 0.5).to_string(),
            if dm == 0 {
                "–".into()
            } else {
                format!("{:.1}%", 100.0 * lm as f64 / dm as f64)
            },
        ]);
    }
    println!("\nTokens per case (prompt + completion, estimated as bytes / 4 on both sides)");
    print!(
        "{}",
        table::render(&header, &rows, &[1, 2, 3, 4, 5, 6, 7, 8, 9])
    );
    for (method, verdicts, secs, e) in &results {
        let mut c = memtrace::attrib::Cost::default();
        for v in verdicts {
            c.add(&v.cost.unwrap_or_default());
        }
        println!(
            "{method}: {} case(s) in {secs:.1} s; {} decided; {} call(s) sent, {} from the cache; \
             the scripted model's verdicts match the labels {:.1}% (type) / {:.1}% (op)",
            verdicts.len(),
            verdicts.iter().filter(|v| v.error_type.is_some()).count(),
            c.calls,
            c.cached_calls,
            100.0 * e.error_type_accuracy,
            100.0 * e.op_id_accuracy
        );
    }
    let tools = serde_json::to_string(&memtrace::attrib::agent::explore::tools())?;
    println!(
        "requests the server answered: {} (the evaluation runs after each method replayed the \
         cache). The scripted server counts message text only; the tool definitions add about \
         {} tokens per call on a real endpoint.",
        server.requests().len(),
        estimate_tokens(&tools)
    );
    drop(server);
    drop(db);
    if own {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(ExitCode::SUCCESS)
}
