//! `memtrace gen`: a set of generated traces with injected faults and labels.

use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memtrace::gen::set::{generate_set, GenSpec, MANIFEST};
use memtrace::gen::sim::{ErrorType, SimParams};
use memtrace::gen::style::Style;
use memtrace_table as table;

use crate::args::GenArgs;
use crate::error::Result;

/// Writes the set of generated traces the flags ask for.
pub fn run(args: GenArgs) -> Result<ExitCode> {
    let spec = GenSpec {
        system: args.system.system(),
        style: args.style.style(),
        traces: args.traces,
        seed: args.seed,
        sessions: args.sessions,
        messages_per_session: args.messages,
        questions: args.questions,
        params: SimParams {
            window_tokens: args.window_tokens,
            top_k: args.top_k,
            fault_rate: args.fault_rate,
            question_fault_rate: args.question_fault_rate,
            ..SimParams::default()
        },
    };
    generate(&spec, &args.out, args.force)
}

/// Writes a set of generated traces and prints what it holds.
fn generate(spec: &GenSpec, out: &std::path::Path, force: bool) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let bar = ProgressBar::with_draw_target(Some(spec.traces as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} traces {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let traces = generate_set(spec, out, force, |done, t| {
        bar.set_position(done as u64);
        bar.set_message(t.graph_id.clone());
    })?;
    bar.finish_and_clear();
    let failed: usize = traces.iter().map(|t| t.failed).sum();
    let bytes: u64 = traces.iter().map(|t| t.bytes).sum();
    let mut labels = [0usize; 5];
    for t in &traces {
        for (i, e) in ErrorType::ALL.iter().enumerate() {
            labels[i] += t.labels.get(e).copied().unwrap_or(0);
        }
    }
    let mix: Vec<String> = ErrorType::ALL
        .iter()
        .zip(labels)
        .map(|(e, n)| format!("{} {n}", e.name()))
        .collect();
    println!(
        "generated {} trace(s) in {} ({}, {:.1} s): {failed} failed question(s): {}",
        traces.len(),
        out.display(),
        table::bytes(bytes),
        started.elapsed().as_secs_f64(),
        mix.join(", ")
    );
    if spec.style != Some(Style::Classic) {
        let mut by_style: std::collections::BTreeMap<Style, (usize, usize)> = Default::default();
        for t in &traces {
            let e = by_style.entry(t.style).or_default();
            e.0 += 1;
            e.1 += t.failed;
        }
        let parts: Vec<String> = by_style
            .iter()
            .map(|(s, (n, f))| format!("{s} {n} trace(s), {f} failed"))
            .collect();
        println!("styles: {}", parts.join("; "));
    }
    println!("manifest: {}", out.join(MANIFEST).display());
    Ok(ExitCode::SUCCESS)
}
