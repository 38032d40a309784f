//! `memtrace attribute` and `memtrace eval`: run an attribution method over
//! failed cases, store its verdicts, and score it against labels.

use std::path::Path;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memtrace::attrib::eval::{Calibration, CONFIDENT};
use memtrace::attrib::eval::{Evaluation, Score};
use memtrace::attrib::{
    AttributeRequest, ErrorType, Method, RunProgress, Search, Setting, Verdict,
};
use memtrace::engine::Engine;
use memtrace::prelude::*;
use memtrace::Cancel;

use crate::error::Result;
use crate::formats::Listing;
use memtrace_table as table;

/// Who verdicts stored by the command line are from.
pub const AUTHOR: &str = "memtrace attribute";

fn trace_template(what: &str) -> String {
    format!("{{spinner}} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} traces {what}")
}

fn case_template(what: &str) -> String {
    format!(
        "{{spinner}} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} cases {what}, {{msg}}, about {{eta}} left"
    )
}

/// A progress bar on standard error (hidden when it is not a terminal),
/// drawn with `template`.
fn bar_with(template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// A progress bar over the traces, on standard error.
pub fn trace_bar(what: &str) -> ProgressBar {
    bar_with(&trace_template(what))
}

/// A progress bar over the cases of an LLM run, on standard error: cases
/// with a verdict of the cases expected (estimated from the traces read so
/// far), the calls and tokens spent so far, and the time left.
pub fn case_bar(what: &str) -> ProgressBar {
    bar_with(&case_template(what))
}

/// What an LLM run has spent so far, for its progress bar.
pub fn spent(p: &RunProgress) -> String {
    let c = &p.cost;
    format!(
        "{} call(s) ({} answered from the cache), {} tokens in, {} out{}",
        c.calls,
        c.cached_calls,
        c.tokens_in,
        c.tokens_out,
        if c.estimated { " (some estimated)" } else { "" }
    )
}

/// The progress bar of a run with `method`: over traces for the evidence
/// method, over cases with what they cost for the LLM methods.
pub fn run_bar(method: Method, what: &str) -> ProgressBar {
    if method.needs_llm() {
        case_bar(what)
    } else {
        trace_bar(what)
    }
}

/// Moves `bar` (made by [`run_bar`] for `method`) to `p`.
pub fn show_progress(bar: &ProgressBar, method: Method, p: &RunProgress) {
    if method.needs_llm() {
        bar.set_length(p.cases_expected().max(p.cases_done) as u64);
        bar.set_position(p.cases_done as u64);
        bar.set_message(spent(p));
    } else {
        bar.set_length(p.traces as u64);
        bar.set_position(p.traces_read as u64);
    }
}

/// A token that Ctrl-C cancels, for the LLM methods: the run stops at the
/// next request and says so; the answers received so far stay cached, so a
/// re-run resumes at no cost. (The evidence method keeps Ctrl-C's default.)
fn cancel_token(method: Method) -> Cancel {
    let cancel = Cancel::new();
    if method.needs_llm() {
        let c = cancel.clone();
        if ctrlc::set_handler(move || c.cancel()).is_err() {
            eprintln!("warning: Ctrl-C will end memtrace at once instead of stopping the run");
        }
    }
    cancel
}

/// The error of an LLM run: a cancellation says that nothing is lost.
fn llm_run_error(method: Method) -> impl Fn(memtrace::AnalysisError) -> crate::error::CliError {
    move |e| {
        if e.is_cancelled() && method.needs_llm() {
            crate::error::CliError::LlmCancelled
        } else {
            e.into()
        }
    }
}

/// Reads a method name.
pub fn parse_method(s: &str) -> std::result::Result<Method, String> {
    s.parse()
}

/// Reads a setting name.
pub fn parse_setting(s: &str) -> std::result::Result<Setting, String> {
    s.parse()
}

/// Reads an evidence search name.
pub fn parse_search(s: &str) -> std::result::Result<Search, String> {
    s.parse()
}

/// Attributes every failed case (of one trace or all), stores the verdicts
/// and returns them with how many were new.
pub fn attribute_all(
    db: &Engine,
    trace: Option<&str>,
    (method, setting, search): (Method, Setting, Search),
    bar: &ProgressBar,
) -> Result<(Vec<Verdict>, usize)> {
    let cancel = cancel_token(method);
    let verdicts = db
        .attribute(
            &AttributeRequest {
                trace,
                cases: None,
                method,
                setting,
                search,
            },
            &cancel,
            &mut |p| show_progress(bar, method, p),
        )
        .map_err(llm_run_error(method))?;
    bar.finish_and_clear();
    let stored = db.store_verdicts(&verdicts, AUTHOR)?;
    Ok((verdicts, stored))
}

/// Counts verdicts per system and error type, as table rows.
pub fn split_rows(verdicts: &[Verdict]) -> Vec<Vec<String>> {
    let mut systems: Vec<String> = verdicts
        .iter()
        .map(|v| v.system.clone().unwrap_or_else(|| "-".into()))
        .collect();
    systems.sort();
    systems.dedup();
    let mut rows = Vec::new();
    for s in systems.iter().map(Some).chain([None]) {
        let of: Vec<&Verdict> = verdicts
            .iter()
            .filter(|v| s.is_none_or(|s| v.system.as_deref().unwrap_or("-") == s))
            .collect();
        let mut row = vec![
            s.cloned().unwrap_or_else(|| "all".into()),
            of.len().to_string(),
        ];
        for t in ErrorType::ALL {
            row.push(
                of.iter()
                    .filter(|v| v.error_type == Some(t))
                    .count()
                    .to_string(),
            );
        }
        row.push(
            of.iter()
                .filter(|v| v.error_type.is_none())
                .count()
                .to_string(),
        );
        rows.push(row);
    }
    rows
}

/// The header of [`split_rows`].
pub const SPLIT_HEADER: [&str; 8] = [
    "system",
    "cases",
    "Extraction",
    "Update",
    "Deletion",
    "Retrieval",
    "Response",
    "no verdict",
];

/// `memtrace attribute`.
pub fn attribute(
    db: &Path,
    trace: Option<&str>,
    (method, setting, search): (Method, Setting, Search),
    format: Listing,
) -> Result<ExitCode> {
    let db = crate::opening::open_existing(db)?;
    if method.needs_llm() {
        announce_llm(&db)?;
    }
    let bar = run_bar(method, "attributed");
    let (verdicts, stored) = attribute_all(&db, trace, (method, setting, search), &bar)?;
    match format {
        Listing::Json => println!("{}", serde_json::to_string_pretty(&verdicts)?),
        Listing::Table => {
            let rows = split_rows(&verdicts);
            print!(
                "{}",
                table::render(&SPLIT_HEADER, &rows, &[1, 2, 3, 4, 5, 6, 7])
            );
            let shown = match setting {
                Setting::Benchmark => String::new(),
                s => format!(" in the {s} setting ({} hidden)", s.hides()),
            };
            println!(
                "{} case(s) attributed with method {method} (version {}){shown}; {stored} new verdict(s) stored.",
                verdicts.len(),
                method.version()
            );
            println!(
                "See them with: memtrace query \"FIND attributions GROUP BY error_type RETURN error_type, count(*)\""
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn score_row(name: &str, s: &Score) -> Vec<String> {
    vec![
        name.to_string(),
        s.cases.to_string(),
        pct(s.error_type_accuracy),
        pct(s.op_id_accuracy),
        s.no_verdict.to_string(),
    ]
}

/// The columns of a table of scores.
const SCORE_HEADER: [&str; 5] = ["", "cases", "error type", "op id", "no verdict"];

/// The evaluation as text tables.
pub fn render_evaluation(e: &Evaluation, misses: usize) -> String {
    let mut out = String::new();
    out.push_str("By memory system\n");
    if let Some(total) = &e.cost {
        out.push_str(&render_systems_with_cost(e, total));
    } else {
        let mut rows: Vec<Vec<String>> = e.by_system.iter().map(|(s, x)| score_row(s, x)).collect();
        rows.push(score_row("all", &e.total));
        out.push_str(&table::render(&SCORE_HEADER, &rows, &[1, 2, 3, 4]));
    }
    if !e.by_style.is_empty() {
        out.push_str(&render_styles(e));
    }
    let rows: Vec<Vec<String>> = e
        .by_error_type
        .iter()
        .map(|(s, x)| score_row(s, x))
        .collect();
    out.push_str("\nBy true error type\n");
    out.push_str(&table::render(&SCORE_HEADER, &rows, &[1, 2, 3, 4]));
    out.push_str(&render_confusion(e));
    out.push_str(&format!(
        "\n{} labelled case(s), {} unlabelled; error type {}, op id {}; median {:.2} ms per case (mean {:.2} ms)\n",
        e.cases,
        e.unlabelled,
        pct(e.error_type_accuracy),
        pct(e.op_id_accuracy),
        e.median_micros as f64 / 1000.0,
        e.mean_micros / 1000.0
    ));
    if let (Some(c), Some(per)) = (&e.cost, &e.cost_per_case) {
        out.push_str(&format!(
            "cost: {}. Per case: {} calls, {} tokens in, {} out, {:.2} s\n",
            cost_line(c),
            per.calls + per.cached_calls,
            per.tokens_in,
            per.tokens_out,
            per.seconds
        ));
    }
    if e.cases > 0 {
        out.push_str(&render_calibration(&e.calibration));
    }
    out.push_str(&render_misses(e, misses));
    out
}

/// The scores per memory system of an LLM method, with what each system's
/// verdicts cost.
fn render_systems_with_cost(e: &Evaluation, total: &memtrace::attrib::Cost) -> String {
    let mut names: Vec<&String> = e.by_system.keys().collect();
    names.extend(e.cost_by_system.keys());
    names.sort();
    names.dedup();
    let mut wide = Vec::new();
    for name in names {
        let mut r = e.by_system.get(name).map_or_else(
            || vec![name.clone(), "0".into(), "–".into(), "–".into(), "0".into()],
            |x| score_row(name, x),
        );
        r.extend(cost_cells(e.cost_by_system.get(name)));
        wide.push(r);
    }
    let mut all = score_row("all", &e.total);
    all.extend(cost_cells(Some(total)));
    wide.push(all);
    let header = [
        "",
        "cases",
        "error type",
        "op id",
        "no verdict",
        "calls",
        "cached",
        "tokens in",
        "tokens out",
        "seconds",
    ];
    table::render(&header, &wide, &[1, 2, 3, 4, 5, 6, 7, 8, 9])
}

/// The scores per generator style, alone and with each memory system, for
/// traces of `memtrace gen --style`.
fn render_styles(e: &Evaluation) -> String {
    let mut out = String::new();
    let mut rows: Vec<Vec<String>> = e.by_style.iter().map(|(s, x)| score_row(s, x)).collect();
    rows.push(score_row("all", &e.total));
    out.push_str("\nBy generator style\n");
    out.push_str(&table::render(&SCORE_HEADER, &rows, &[1, 2, 3, 4]));
    let rows: Vec<Vec<String>> = e
        .by_style_system
        .iter()
        .map(|(s, x)| score_row(s, x))
        .collect();
    out.push_str("\nBy generator style and memory system\n");
    out.push_str(&table::render(&SCORE_HEADER, &rows, &[1, 2, 3, 4]));
    out
}

/// The confusion matrix: labelled error types against the verdicts given.
fn render_confusion(e: &Evaluation) -> String {
    let mut predicted: Vec<&String> = e.confusion.values().flat_map(|m| m.keys()).collect();
    predicted.sort();
    predicted.dedup();
    let mut head: Vec<&str> = vec!["true \\ verdict"];
    head.extend(predicted.iter().map(|s| s.as_str()));
    let rows: Vec<Vec<String>> = e
        .confusion
        .iter()
        .map(|(t, m)| {
            let mut r = vec![t.clone()];
            r.extend(
                predicted
                    .iter()
                    .map(|p| m.get(*p).copied().unwrap_or(0).to_string()),
            );
            r
        })
        .collect();
    let right: Vec<usize> = (1..head.len()).collect();
    format!(
        "\nConfusion (rows: label, columns: verdict)\n{}",
        table::render(&head, &rows, &right)
    )
}

/// The cost columns of an evaluation table.
fn cost_cells(c: Option<&memtrace::attrib::Cost>) -> Vec<String> {
    match c {
        Some(c) => vec![
            c.calls.to_string(),
            c.cached_calls.to_string(),
            c.tokens_in.to_string(),
            c.tokens_out.to_string(),
            format!("{:.1}", c.seconds),
        ],
        None => vec!["0".into(), "0".into(), "0".into(), "0".into(), "0.0".into()],
    }
}

/// `memtrace eval`.
pub fn eval(
    db: &Path,
    trace: Option<&str>,
    (method, search): (Method, Search),
    format: Listing,
    misses: usize,
    setting: Option<Setting>,
) -> Result<ExitCode> {
    let db = crate::opening::open_existing(db)?;
    if method.needs_llm() {
        announce_llm(&db)?;
    }
    let settings: Vec<Setting> = match setting {
        Some(s) => vec![s],
        None => Setting::ALL.to_vec(),
    };
    let bar = run_bar(method, "evaluated");
    let cancel = cancel_token(method);
    let all = db
        .evaluate_settings(
            &AttributeRequest {
                trace,
                cases: None,
                method,
                setting: Setting::Benchmark,
                search,
            },
            &settings,
            &cancel,
            &mut |p| show_progress(&bar, method, p),
        )
        .map_err(llm_run_error(method))?;
    bar.finish_and_clear();
    let cases = all.first().map_or(0, |e| e.cases);
    match (format, setting) {
        (Listing::Json, Some(_)) => println!("{}", serde_json::to_string_pretty(&all[0])?),
        (Listing::Json, None) => {
            let by_name: serde_json::Map<String, serde_json::Value> = all
                .iter()
                .map(|e| Ok((e.setting.name().to_string(), serde_json::to_value(e)?)))
                .collect::<Result<_>>()?;
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "settings": by_name }))?
            );
        }
        (Listing::Table, Some(_)) => print!("{}", render_evaluation(&all[0], misses)),
        (Listing::Table, None) => print!("{}", render_settings(&all, misses)),
    }
    if cases == 0 && format == Listing::Table {
        println!("(no labelled case: labels come from MemTraceBench annotations)");
    }
    Ok(ExitCode::SUCCESS)
}

/// Cells of one score in one setting: op id and error type.
fn setting_cells(s: Option<&Score>) -> [String; 2] {
    match s {
        Some(s) => [pct(s.op_id_accuracy), pct(s.error_type_accuracy)],
        None => ["–".into(), "–".into()],
    }
}

/// A table of scores keyed by name (systems or error types), one pair of
/// columns per setting.
fn settings_table(
    all: &[Evaluation],
    first: &str,
    pick: impl Fn(&Evaluation) -> Vec<(String, Score)>,
) -> String {
    let mut names: Vec<String> = all.iter().flat_map(&pick).map(|x| x.0).collect();
    names.sort();
    names.dedup();
    let mut header: Vec<String> = vec![first.to_string(), "cases".to_string()];
    for e in all {
        header.push(format!("{} op id", e.setting));
        header.push("type".to_string());
    }
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|name| {
            let mut row = vec![name.clone()];
            let cases = all
                .iter()
                .find_map(|e| pick(e).into_iter().find(|x| &x.0 == name))
                .map_or(0, |x| x.1.cases);
            row.push(cases.to_string());
            for e in all {
                let s = pick(e).into_iter().find(|x| &x.0 == name).map(|x| x.1);
                row.extend(setting_cells(s.as_ref()));
            }
            row
        })
        .collect();
    let head: Vec<&str> = header.iter().map(String::as_str).collect();
    let right: Vec<usize> = (1..head.len()).collect();
    table::render(&head, &rows, &right)
}

/// The confidence table of several settings: the confident verdicts, and
/// the accuracy of the most confident share of the cases.
fn confidence_table(all: &[Evaluation]) -> String {
    let header = [
        "setting",
        "confident",
        "coverage",
        "op id",
        "type",
        "top 20%",
        "top 40%",
        "top 60%",
        "top 80%",
        "all",
    ];
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|e| {
            let c = &e.calibration;
            let mut row = vec![
                e.setting.name().to_string(),
                c.confident.cases.to_string(),
                pct(c.confident.coverage),
                pct(c.confident.op_id_accuracy),
                pct(c.confident.error_type_accuracy),
            ];
            for tenth in [2, 4, 6, 8, 10] {
                row.push(
                    c.coverage
                        .get(tenth - 1)
                        .map_or("–".into(), |p| pct(p.op_id_accuracy)),
                );
            }
            row
        })
        .collect();
    table::render(&header, &rows, &[1, 2, 3, 4, 5, 6, 7, 8, 9])
}

/// The three settings side by side.
pub fn render_settings(all: &[Evaluation], misses: usize) -> String {
    let mut out = String::new();
    for e in all {
        out.push_str(&format!("{}: {} hidden\n", e.setting, e.setting.hides()));
    }
    out.push_str("\nBy memory system (op id, error type)\n");
    out.push_str(&settings_table(all, "system", |e| {
        let mut v: Vec<(String, Score)> = e
            .by_system
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect();
        v.push(("all".into(), e.total.clone()));
        v
    }));
    if all.iter().any(|e| !e.by_style.is_empty()) {
        out.push_str("\nBy generator style\n");
        out.push_str(&settings_table(all, "style", |e| {
            e.by_style
                .iter()
                .map(|(k, s)| (k.clone(), s.clone()))
                .collect()
        }));
    }
    out.push_str("\nBy true error type\n");
    out.push_str(&settings_table(all, "error type", |e| {
        e.by_error_type
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
    }));
    out.push_str(&format!(
        "\nConfidence: confident verdicts (confidence {CONFIDENT} or more) and the op-id accuracy \
         of the most confident share of the cases\n"
    ));
    out.push_str(&confidence_table(all));
    out.push('\n');
    for e in all {
        out.push_str(&format!(
            "{}: {} labelled case(s); error type {}, op id {}; median {:.2} ms per case\n",
            e.setting,
            e.cases,
            pct(e.error_type_accuracy),
            pct(e.op_id_accuracy),
            e.median_micros as f64 / 1000.0,
        ));
    }
    if misses > 0 {
        for e in all {
            out.push_str(&render_misses(e, misses));
        }
    }
    out
}

/// The calibration of one setting: accuracy against coverage and per band.
fn render_calibration(c: &Calibration) -> String {
    let header = [
        "most confident",
        "cases",
        "confidence from",
        "op id",
        "type",
    ];
    let rows: Vec<Vec<String>> = c
        .coverage
        .iter()
        .map(|p| {
            vec![
                pct(p.coverage),
                p.cases.to_string(),
                format!("{:.2}", p.min_confidence),
                pct(p.op_id_accuracy),
                pct(p.error_type_accuracy),
            ]
        })
        .collect();
    let mut out = String::from("\nAccuracy against coverage (verdicts sorted by confidence)\n");
    out.push_str(&table::render(&header, &rows, &[0, 1, 2, 3, 4]));
    let header = ["confidence", "cases", "coverage", "op id", "type"];
    let rows: Vec<Vec<String>> = c
        .bands
        .iter()
        .map(|b| {
            vec![
                format!(">= {:.1}", b.at_least),
                b.cases.to_string(),
                pct(b.coverage),
                pct(b.op_id_accuracy),
                pct(b.error_type_accuracy),
            ]
        })
        .collect();
    out.push_str("\nAccuracy at or above each confidence\n");
    out.push_str(&table::render(&header, &rows, &[1, 2, 3, 4]));
    out
}

/// Up to `n` misses of one evaluation.
fn render_misses(e: &Evaluation, n: usize) -> String {
    let mut out = String::new();
    if n == 0 || e.misses.is_empty() {
        return out;
    }
    out.push_str(&format!("\nMisses ({} setting)\n", e.setting));
    for m in e.misses.iter().take(n) {
        let v = |s: &str| table::visible(s).into_owned();
        out.push_str(&format!(
            "- {} {} {:?}\n  label:   {} at {}\n  verdict: {} at {}\n  reason:  {}\n",
            v(&m.trace),
            v(&m.case),
            m.query,
            v(&m.true_error_type),
            v(&m.true_op),
            v(&m.error_type),
            v(&m.op),
            v(&m.reason)
        ));
    }
    out
}

/// Says on standard error which endpoint an LLM method will use (never
/// the key), or fails early when none is configured.
fn announce_llm(db: &Engine) -> Result<()> {
    let c = db.llm_config()?;
    eprintln!("LLM: {}", c.describe());
    Ok(())
}

/// A one-line account of what LLM calls cost.
pub fn cost_line(c: &memtrace::attrib::Cost) -> String {
    format!(
        "{} call(s) sent, {} answered from the cache, {} tokens in, {} out{}, {:.1} s",
        c.calls,
        c.cached_calls,
        c.tokens_in,
        c.tokens_out,
        if c.estimated {
            " (partly estimated)"
        } else {
            ""
        },
        c.seconds
    )
}

/// `memtrace report`.
pub fn report(
    db: &Path,
    out: &Path,
    trace: Option<&str>,
    method: Method,
    llm: bool,
) -> Result<ExitCode> {
    let db = crate::opening::open_existing(db)?;
    let mut report = db.report(method, trace)?;
    if llm {
        announce_llm(&db)?;
        let cost = db.write_summaries(&mut report, &Cancel::new())?;
        println!("written summaries: {}", cost_line(&cost));
    }
    let (md, html) = report.write(out)?;
    let o = &report.overall;
    println!(
        "{} failed case(s), {} attributed with method {method}, {} not attributed",
        o.failed, o.attributed, o.not_attributed
    );
    println!("wrote {} and {}", html.display(), md.display());
    if o.attributed == 0 && o.failed > 0 {
        println!("(no stored verdict yet: run `memtrace attribute --using {method}` first)");
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` beside `path` and renames it into place, so a failure
/// leaves no half file.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = std::path::PathBuf::from(tmp);
    let written = std::fs::write(&tmp, text)
        .map_err(crate::error::io(tmp.display()))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(crate::error::io(path.display())));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `memtrace feedback`.
pub fn feedback(
    db: &Path,
    out: &Path,
    trace: Option<&str>,
    method: Method,
    examples: usize,
) -> Result<ExitCode> {
    let db = crate::opening::open_existing(db)?;
    announce_llm(&db)?;
    let f = db.prompt_feedback(method, trace, examples, &Cancel::new())?;
    let json = serde_json::to_string_pretty(&f.prompts)?;
    write_atomic(out, &json)?;
    for (key, p) in &f.prompts {
        let state = match &p.error {
            None => "rewrite suggested".to_string(),
            Some(e) => format!("no suggestion: {e}"),
        };
        println!(
            "{}: {} case(s) via {}; {}",
            table::visible(key),
            p.cases.len(),
            table::visible(&p.ops.join(", ")),
            table::visible(&state)
        );
    }
    for (op, n) in &f.ops_without_prompt {
        println!(
            "{}: {n} case(s), but the op reads no prompt variable",
            table::visible(op)
        );
    }
    if f.prompts.is_empty() {
        println!(
            "no prompt to give feedback on: no stored {method} verdict names an op that reads a \
             prompt (run `memtrace attribute --using {method}` first)"
        );
    }
    println!("cost: {}", cost_line(&f.cost));
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bars_templates_parse_and_say_what_was_spent() {
        for t in [trace_template("attributed"), case_template("attributed")] {
            assert!(ProgressStyle::with_template(&t).is_ok(), "{t}");
        }
        let p = RunProgress {
            cost: memtrace::attrib::Cost {
                calls: 3,
                cached_calls: 1,
                tokens_in: 1200,
                tokens_out: 80,
                estimated: true,
                seconds: 1.0,
            },
            ..RunProgress::default()
        };
        assert_eq!(
            spent(&p),
            "3 call(s) (1 answered from the cache), 1200 tokens in, 80 out (some estimated)"
        );
    }
}
