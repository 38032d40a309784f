//! `memtrace demo`, the README's main job: the bundled sample, a small
//! generated set of all four memory systems, a few provenance queries,
//! attribution of every failed case, the summary, and the HTML report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use memtrace::attrib::{ErrorType, Method, Search, Setting, Verdict};
use memtrace::engine::Engine;
use memtrace::gen::set::{generate_set, GenSpec};
use memtrace::prelude::*;
use memtrace::{Cancel, ImportOptions, InputFormat, Params};

use crate::attribute::{attribute_all, render_evaluation, split_rows, trace_bar, SPLIT_HEADER};
use crate::error::{io, Result};
use crate::query::QueryFormat;
use crate::transfer::SAMPLE;
use memtrace_table as table;

/// The demo's generated set: one trace of each system, small conversations.
fn demo_spec() -> GenSpec {
    GenSpec {
        system: None,
        traces: 4,
        seed: 7,
        sessions: 12..=14,
        messages_per_session: 16..=18,
        questions: 120,
        ..GenSpec::default()
    }
}

/// Where the report goes: `memtrace-report` beside the database.
pub fn report_dir(db: &Path) -> PathBuf {
    let parent = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parent.join("memtrace-report")
}

fn heading(out: &mut dyn Write, text: &str) -> Result<()> {
    writeln!(out, "\n== {text}").map_err(io("standard output"))
}

/// Runs one statement and prints it with its rows.
fn show(db: &Engine, out: &mut dyn Write, statement: &str) -> Result<()> {
    writeln!(out, "\nmemtrace> {statement};").map_err(io("standard output"))?;
    let stmt = db
        .parse_script(statement)?
        .into_iter()
        .next()
        .ok_or_else(|| crate::error::CliError::Usage(format!("no statement in {statement}")))?;
    let plan = db.plan(&stmt, &Params::new(), statement)?;
    crate::query::print_result(
        db,
        &plan,
        QueryFormat::Table,
        &Cancel::new(),
        out,
        false,
        table::terminal_width(),
        crate::tree::TreeCaps::default(),
    )?;
    Ok(())
}

fn import_sample(db: &Engine, path: &Path, out: &mut dyn Write) -> Result<()> {
    let sample: serde_json::Value = serde_json::from_str(SAMPLE)?;
    let graph_id = sample["graph_id"].as_str().unwrap_or_default().to_string();
    let line = if db.trace(&graph_id).is_ok() {
        format!(
            "the bundled sample {graph_id} is already in {}",
            path.display()
        )
    } else {
        let t = db.import_reader(
            SAMPLE.as_bytes(),
            InputFormat::Json,
            "bundled sample",
            &ImportOptions::default(),
        )?;
        format!(
            "imported the bundled sample into {}: trace #{} {}",
            path.display(),
            t[0].trace,
            t[0].graph_id
        )
    };
    writeln!(out, "{line}").map_err(io("standard output"))
}

/// Generates the demo set into a temporary folder and imports it, unless
/// its traces are already stored. Returns the graph ids.
fn import_generated(db: &Engine, out: &mut dyn Write) -> Result<Vec<String>> {
    let spec = demo_spec();
    let tmp = std::env::temp_dir().join(format!("memtrace-demo-{}", std::process::id()));
    let started = Instant::now();
    let traces = generate_set(&spec, &tmp, true, |_, _| {})?;
    let ids: Vec<String> = traces.iter().map(|t| t.graph_id.clone()).collect();
    let mut imported = 0;
    for t in &traces {
        if db.trace(&t.graph_id).is_ok() {
            continue;
        }
        let file = tmp.join(&t.file);
        let f = std::fs::File::open(&file).map_err(io(file.display()))?;
        db.import_reader(
            std::io::BufReader::new(f),
            InputFormat::Json,
            &format!("memtrace demo ({})", t.file),
            &ImportOptions::default(),
        )?;
        imported += 1;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    let line = if imported == 0 {
        "the generated traces are already stored".to_string()
    } else {
        format!(
            "generated and imported {imported} trace(s) of four simulated memory systems (long_context, rag, mem0, evermemos) in {:.1} s",
            started.elapsed().as_secs_f64()
        )
    };
    writeln!(out, "{line}").map_err(io("standard output"))?;
    Ok(ids)
}

/// `memtrace demo`.
pub fn run(path: &Path) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let db = crate::opening::open(path)?;
    import_sample(&db, path, &mut out)?;
    let ids = import_generated(&db, &mut out)?;

    heading(&mut out, "What is stored")?;
    show(&db, &mut out, "SHOW TRACES")?;
    show(
        &db,
        &mut out,
        "FIND cases GROUP BY trace.project_id RETURN trace.project_id AS system, count(*) AS failed ORDER BY system",
    )?;

    let verdicts = attribute_every_case(&db, path, &mut out)?;
    let mem0 = ids.iter().find(|g| g.starts_with("mem0")).cloned();
    explain_one_case(&db, &mut out, &verdicts, mem0.as_ref())?;

    heading(&mut out, "Accuracy against the generated labels")?;
    let e = db.evaluate(Method::Evidence, None, &Cancel::new(), &mut |_| {})?;
    write!(out, "{}", render_evaluation(&e, 0)).map_err(io("standard output"))?;

    heading(&mut out, "Report")?;
    let dir = report_dir(path);
    let report = db.report(Method::Evidence, None)?;
    let (md, html) = report.write(&dir)?;
    writeln!(
        out,
        "wrote {} and {} (open the HTML page in a browser; it needs no network)",
        html.display(),
        md.display()
    )
    .map_err(io("standard output"))?;

    next_steps(&mut out, mem0.as_deref().unwrap_or("mem0-0002-s7"))?;
    Ok(ExitCode::SUCCESS)
}

/// Attributes every failed case with the evidence flow, and shows the verdicts by system and op.
fn attribute_every_case(db: &Engine, path: &Path, out: &mut dyn Write) -> Result<Vec<Verdict>> {
    heading(
        out,
        "Attribution of every failed case (evidence flow, no LLM)",
    )?;
    let bar = trace_bar("attributed");
    let started = Instant::now();
    let (verdicts, stored) = attribute_all(
        db,
        None,
        (Method::Evidence, Setting::Benchmark, Search::Sparse),
        &bar,
    )?;
    writeln!(
        out,
        "{} case(s) attributed in {:.2} s; {stored} new verdict(s) stored in {}",
        verdicts.len(),
        started.elapsed().as_secs_f64(),
        path.display()
    )
    .map_err(io("standard output"))?;
    write!(
        out,
        "{}",
        table::render(
            &SPLIT_HEADER,
            &split_rows(&verdicts),
            &[1, 2, 3, 4, 5, 6, 7]
        )
    )
    .map_err(io("standard output"))?;
    show(
        db,
        out,
        "FIND attributions GROUP BY trace.project_id, op_name RETURN trace.project_id AS system, op_name, count(*) AS cases ORDER BY count(*) DESC LIMIT 8",
    )?;

    Ok(verdicts)
}

/// One Mem0 case whose evidence reached memory, explained and followed.
fn explain_one_case(
    db: &Engine,
    out: &mut dyn Write,
    verdicts: &[Verdict],
    mem0: Option<&String>,
) -> Result<()> {
    let example = verdicts
        .iter()
        .filter(|v| Some(&v.graph_id) == mem0)
        .find(|v| {
            matches!(
                v.error_type,
                Some(ErrorType::UpdateError | ErrorType::RetrievalError)
            )
        });
    if let Some(v) = example {
        let case = db
            .failed_cases(Some(&v.graph_id))?
            .into_iter()
            .find(|c| c.id == v.case);
        if let Some(c) = case {
            heading(
                out,
                &format!(
                    "One failed answer, explained: {:?} (gold {:?}, answered {:?})",
                    c.query,
                    c.gold.join(" / "),
                    c.prediction
                ),
            )?;
            writeln!(
                out,
                "verdict: {} at {} ({}), confidence {:.2}\nreason:  {}",
                v.error_type.map_or("-", ErrorType::name),
                table::visible(v.op_id.as_deref().unwrap_or("-")),
                table::visible(v.op_name.as_deref().unwrap_or("-")),
                v.confidence,
                table::visible(&v.reason)
            )
            .map_err(io("standard output"))?;
            let name = c.id.trim_start_matches("query:");
            let name = name.split('@').next().unwrap_or(name);
            let g = &v.graph_id;
            show(
                db,
                out,
                &format!("TRACE prediction:{name} IN TRACE '{g}' DEPTH 3 RETURN ops"),
            )?;
            if let Some(ev) = c.source_evidence.last() {
                let ev = ev.split('@').next().unwrap_or(ev);
                show(
                    db,
                    out,
                    &format!(
                        "FORWARD '{ev}' IN TRACE '{g}' WHERE var.category = 'memory_entry' RETURN nodes LIMIT 5"
                    ),
                )?;
            }
        }
    }

    Ok(())
}

/// What to try next, with `example` as the trace to try it on.
fn next_steps(out: &mut dyn Write, example: &str) -> Result<()> {
    heading(out, "Next")?;
    writeln!(
        out,
        "Open the shell with `target/debug/memtrace` (or `memtrace` once installed) and try:\n  \
         FIND attributions WHERE error_type = 'UpdateError' RETURN trace, case, op_name, reason LIMIT 5;\n  \
         ATTRIBUTE CASES IN TRACE '{example}' USING evidence;\n  \
         FIND cases IN TRACE '{example}' RETURN query_id, query, prediction LIMIT 5;\n  \
         :help ATTRIBUTE\n\
         In a browser: memtrace serve, then open http://127.0.0.1:7878 (traces, failed cases, provenance graphs, labels).\n\
         Your own traces: memtrace import <files or folders>; then memtrace attribute, memtrace eval, memtrace report.\n\
         With an LLM endpoint (OPENAI_API_KEY, or MEMTRACE_LLM_BASE_URL for vLLM or Ollama): \
         memtrace attribute --using hybrid; memtrace feedback."
    )
    .map_err(io("standard output"))?;
    Ok(())
}
