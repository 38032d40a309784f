//! Diagnostic reports: per memory system, how many failed cases an
//! attribution method explained, with which error types and faulty ops,
//! how often it agrees with the labels, and the most common failure
//! patterns with examples. Written as Markdown and as one self-contained
//! HTML page with inline SVG charts.
//!
//! ```no_run
//! use memtrace_engine::{attrib::Method, Database};
//! let db = Database::open("memtrace.db")?;
//! let report = db.report(Method::Evidence, None)?;
//! let (md, html) = report.write(std::path::Path::new("report"))?;
//! println!("{} {}", md.display(), html.display());
//! # Ok::<(), memtrace_engine::EngineError>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use crate::attrib::case::{self, CaseOrigin, FailedCase};
use crate::attrib::{ErrorType, Method, Step, StoredVerdict, TraceModel, Verdict};
use crate::db::Database;
use crate::error::{EngineError, Result};
use crate::gen::world::civil_from_days;
use crate::model::Case;
use crate::TraceId;

/// Most failure patterns a summary keeps.
pub const MAX_PATTERNS: usize = 8;
/// Most example cases a failure pattern keeps.
pub const MAX_EXAMPLES: usize = 3;
/// Most faulty op names a summary lists one by one; the rest are summed.
pub const MAX_OPS: usize = 12;
/// Characters of a value shown before it is cut with `…`.
pub const MAX_CHARS: usize = 300;
/// Steps of an evidence chain shown per example.
const MAX_STEPS: usize = 30;

/// The system name of traces without a `project_id`.
pub const NO_SYSTEM: &str = "-";
/// The op name of a verdict that names no op.
pub const NO_OP: &str = "(no op)";
/// The op name of a verdict whose op has no name (or is not in the trace).
pub const UNNAMED_OP: &str = "(unnamed op)";

/// The label a trace's annotations give a case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    /// `final_error_type` as written (one of the five types, or a
    /// non-memory label such as a judge error).
    pub error_type: Option<String>,
    /// `final_op_id`.
    pub op_id: Option<String>,
}

impl Label {
    /// The labelled error type when it is one of the five memory error types.
    pub fn memory_type(&self) -> Option<ErrorType> {
        self.error_type.as_deref().and_then(|t| t.parse().ok())
    }
}

/// How many cases fall under one error type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeCount {
    /// The error type.
    pub error_type: ErrorType,
    /// Attributed cases with that type.
    pub cases: usize,
}

/// How many cases a faulty op name accounts for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpCount {
    /// The op name ([`NO_OP`] or [`UNNAMED_OP`] when there is none).
    pub op_name: String,
    /// Attributed cases whose faulty op has that name.
    pub cases: usize,
}

/// Agreement of the verdicts with the labels.
///
/// Only labels naming one of the five memory error types count; other
/// labels (judge or annotation errors) are left out, as MemTraceBench's
/// scoring does. Accuracy is over the labelled cases that have a verdict;
/// a verdict that names no error type counts as wrong.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Accuracy {
    /// Failed cases labelled with a memory error type.
    pub labelled: usize,
    /// Failed cases with a label that is not a memory error type (left out).
    pub non_memory: usize,
    /// Labelled cases with a verdict: the denominator of error-type accuracy.
    pub scored: usize,
    /// Of those, verdicts naming the labelled error type.
    pub type_correct: usize,
    /// Scored cases whose label names an op: the denominator of op-id match.
    pub op_labelled: usize,
    /// Of those, verdicts naming exactly the labelled op id.
    pub op_correct: usize,
    /// `type_correct / scored`, when anything was scored.
    pub error_type_accuracy: Option<f64>,
    /// `op_correct / op_labelled`, when any scored label names an op.
    pub op_id_accuracy: Option<f64>,
}

/// One example case of a failure pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Example {
    /// The trace.
    pub trace: TraceId,
    /// The trace's graph id.
    pub graph_id: String,
    /// The case's name.
    pub case: String,
    /// The question.
    pub query: String,
    /// The gold answer(s).
    pub gold: Vec<String>,
    /// The system's answer.
    pub prediction: String,
    /// The faulty op the verdict names.
    pub op_id: Option<String>,
    /// Its name.
    pub op_name: String,
    /// The verdict's confidence.
    pub confidence: f64,
    /// The verdict's reason.
    pub reason: String,
    /// The verdict's evidence chain.
    pub chain: Vec<Step>,
    /// The case's label, when the trace has one.
    pub label: Option<Label>,
}

/// A failure pattern: an error type at a faulty op name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pattern {
    /// The error type.
    pub error_type: ErrorType,
    /// The faulty op's name.
    pub op_name: String,
    /// Attributed cases with this pattern.
    pub cases: usize,
    /// Up to [`MAX_EXAMPLES`] of them, in database order.
    pub examples: Vec<Example>,
}

/// The figures of one memory system, or of all of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The system (`project_id`; [`NO_SYSTEM`] when a trace has none), or
    /// `all` for the overall summary.
    pub system: String,
    /// Traces read.
    pub traces: usize,
    /// Failed cases.
    pub failed: usize,
    /// Failed cases with a stored verdict of the method.
    pub attributed: usize,
    /// Of those, verdicts that name no error type (no verdict reached).
    pub undecided: usize,
    /// Failed cases without a stored verdict of the method.
    pub not_attributed: usize,
    /// Attributed cases per error type, all five in taxonomy order.
    pub by_error_type: Vec<TypeCount>,
    /// Attributed cases per faulty op name, most first, at most [`MAX_OPS`].
    pub by_op: Vec<OpCount>,
    /// Attributed cases whose op name is beyond the listed ones.
    pub other_ops: usize,
    /// Agreement with the labels.
    pub accuracy: Accuracy,
    /// The most common patterns, most first, at most [`MAX_PATTERNS`].
    pub patterns: Vec<Pattern>,
    /// A summary of the failure patterns written by an LLM
    /// ([`Database::write_summaries`]), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
}

impl Summary {
    /// Attributed cases whose verdict names an error type.
    pub fn decided(&self) -> usize {
        self.attributed - self.undecided
    }
}

/// A diagnostic report over the failed cases of a database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The database folder.
    pub database: String,
    /// The attribution method whose verdicts are reported.
    pub method: String,
    /// The method's current version (stored verdicts may be older).
    pub method_version: String,
    /// The trace selector, when the report covers one trace.
    pub trace: Option<String>,
    /// When the report was made, in milliseconds since the Unix epoch.
    pub generated_at_ms: u64,
    /// Every system together.
    pub overall: Summary,
    /// Per memory system, by name.
    pub systems: Vec<Summary>,
    /// The model that wrote the summaries, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written_by: Option<String>,
}

fn nonempty(s: &Option<String>) -> Option<String> {
    s.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The label of a case: its own annotation, or else the annotation whose
/// `query_id` resolves to the case's query.
fn label_for(model: &TraceModel, annotations: &[Case], case: &FailedCase) -> Option<Label> {
    let annotation = match case.origin {
        CaseOrigin::Annotation(i) => annotations.get(i),
        CaseOrigin::Judge(_) => annotations.iter().find(|a| {
            a.query_id.as_deref().is_some_and(|q| {
                let resolved = model.var(q).map(|v| model.vars[v].full_node_id.as_str());
                let resolved = resolved.unwrap_or(q);
                case.query_node.as_deref() == Some(resolved) || case.id == resolved
            })
        }),
    }?;
    let label = Label {
        error_type: nonempty(&annotation.final_error_type),
        op_id: nonempty(&annotation.final_op_id),
    };
    (label.error_type.is_some() || label.op_id.is_some()).then_some(label)
}

/// The latest verdict of `method` per case of trace `id`.
fn latest_verdicts(
    stored: Vec<StoredVerdict>,
    id: TraceId,
    method: Method,
) -> HashMap<String, StoredVerdict> {
    let mut latest: HashMap<String, StoredVerdict> = HashMap::new();
    for s in stored {
        if s.verdict.trace != id || s.verdict.method != method.name() {
            continue;
        }
        if latest
            .get(&s.verdict.case)
            .is_none_or(|old| old.seq < s.seq)
        {
            latest.insert(s.verdict.case.clone(), s);
        }
    }
    latest
}

/// The faulty op's name: as the verdict gives it, else as the trace has it.
fn op_name(model: &TraceModel, v: &Verdict) -> String {
    let Some(op_id) = v.op_id.as_deref() else {
        return NO_OP.into();
    };
    v.op_name
        .as_deref()
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| {
            model
                .op(op_id)
                .and_then(|o| model.ops[o].op_name.clone())
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| UNNAMED_OP.into())
}

/// One failed case with what the report needs to know about it.
struct Row<'a> {
    case: &'a FailedCase,
    verdict: Option<&'a Verdict>,
    op_name: String,
    label: Option<Label>,
}

#[derive(Default)]
struct Tally {
    traces: usize,
    failed: usize,
    attributed: usize,
    undecided: usize,
    types: [usize; 5],
    ops: BTreeMap<String, usize>,
    patterns: BTreeMap<(ErrorType, String), (usize, Vec<Example>)>,
    accuracy: Accuracy,
}

fn type_index(t: ErrorType) -> usize {
    ErrorType::ALL.iter().position(|&x| x == t).unwrap_or(0)
}

fn ratio(n: usize, d: usize) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

impl Tally {
    fn add(&mut self, row: &Row<'_>) {
        self.failed += 1;
        if let Some(label) = &row.label {
            match label.memory_type() {
                Some(t) => {
                    self.accuracy.labelled += 1;
                    if let Some(v) = row.verdict {
                        self.accuracy.scored += 1;
                        self.accuracy.type_correct += usize::from(v.error_type == Some(t));
                        if let Some(op) = &label.op_id {
                            self.accuracy.op_labelled += 1;
                            self.accuracy.op_correct +=
                                usize::from(v.op_id.as_deref() == Some(op.as_str()));
                        }
                    }
                }
                None => self.accuracy.non_memory += 1,
            }
        }
        let Some(v) = row.verdict else {
            return;
        };
        self.attributed += 1;
        let Some(t) = v.error_type else {
            self.undecided += 1;
            return;
        };
        self.types[type_index(t)] += 1;
        *self.ops.entry(row.op_name.clone()).or_default() += 1;
        let (count, examples) = self.patterns.entry((t, row.op_name.clone())).or_default();
        *count += 1;
        if examples.len() < MAX_EXAMPLES {
            examples.push(Example {
                trace: row.case.trace,
                graph_id: row.case.graph_id.clone(),
                case: row.case.id.clone(),
                query: row.case.query.clone(),
                gold: row.case.gold.clone(),
                prediction: row.case.prediction.clone(),
                op_id: v.op_id.clone(),
                op_name: row.op_name.clone(),
                confidence: v.confidence,
                reason: v.reason.clone(),
                chain: v.chain.clone(),
                label: row.label.clone(),
            });
        }
    }

    fn finish(self, system: String) -> Summary {
        let mut ops: Vec<OpCount> = self
            .ops
            .into_iter()
            .map(|(op_name, cases)| OpCount { op_name, cases })
            .collect();
        // Stable: equal counts stay in name order.
        ops.sort_by_key(|o| std::cmp::Reverse(o.cases));
        let other_ops = ops.iter().skip(MAX_OPS).map(|o| o.cases).sum();
        ops.truncate(MAX_OPS);
        let mut patterns: Vec<Pattern> = self
            .patterns
            .into_iter()
            .map(|((error_type, op_name), (cases, examples))| Pattern {
                error_type,
                op_name,
                cases,
                examples,
            })
            .collect();
        // Stable: equal counts stay in taxonomy, then op name, order.
        patterns.sort_by_key(|p| std::cmp::Reverse(p.cases));
        patterns.truncate(MAX_PATTERNS);
        let mut accuracy = self.accuracy;
        accuracy.error_type_accuracy = ratio(accuracy.type_correct, accuracy.scored);
        accuracy.op_id_accuracy = ratio(accuracy.op_correct, accuracy.op_labelled);
        Summary {
            system,
            traces: self.traces,
            failed: self.failed,
            attributed: self.attributed,
            undecided: self.undecided,
            not_attributed: self.failed - self.attributed,
            by_error_type: ErrorType::ALL
                .into_iter()
                .map(|t| TypeCount {
                    error_type: t,
                    cases: self.types[type_index(t)],
                })
                .collect(),
            by_op: ops,
            other_ops,
            accuracy,
            patterns,
            written: None,
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Database {
    /// A diagnostic report of `method`'s verdicts over the failed cases of
    /// one trace (graph id or `#ID`), or of every trace.
    ///
    /// Each failed case counts with the latest verdict `method` stored for
    /// it, or as not attributed when there is none; cases the trace's
    /// annotations label are scored against their labels.
    pub fn report(&self, method: Method, trace: Option<&str>) -> Result<Report> {
        let ids: Vec<TraceId> = match trace {
            Some(t) => vec![self.trace(t)?.id()],
            None => self.traces()?.into_iter().map(|t| t.id).collect(),
        };
        let mut overall = Tally::default();
        let mut systems: BTreeMap<String, Tally> = BTreeMap::new();
        for id in ids {
            let view = match self.trace_by_id(id) {
                Ok(view) => view,
                // Dropped since it was listed.
                Err(EngineError::Storage(memtrace_storage::StorageError::NoSuchTrace(_))) => {
                    continue
                }
                Err(e) => return Err(e),
            };
            let model = TraceModel::load(&view)?;
            let annotations = view.cases()?;
            let cases = case::failed_cases(&model, &annotations);
            model.read_error()?;
            let system = nonempty(&model.info.project_id).unwrap_or_else(|| NO_SYSTEM.into());
            let tally = systems.entry(system).or_default();
            tally.traces += 1;
            overall.traces += 1;
            if cases.is_empty() {
                continue;
            }
            let latest = latest_verdicts(self.stored_verdicts(id)?, id, method);
            for case in &cases {
                let verdict = latest.get(&case.id).map(|s| &s.verdict);
                let row = Row {
                    case,
                    verdict,
                    op_name: verdict.map_or_else(|| NO_OP.into(), |v| op_name(&model, v)),
                    label: label_for(&model, &annotations, case),
                };
                tally.add(&row);
                overall.add(&row);
            }
        }
        Ok(Report {
            database: self.path().display().to_string(),
            method: method.name().into(),
            method_version: method.version().into(),
            trace: trace.map(str::to_string),
            generated_at_ms: now_ms(),
            overall: overall.finish("all".into()),
            systems: systems
                .into_iter()
                .map(|(name, tally)| tally.finish(name))
                .collect(),
            written_by: None,
        })
    }
}

// ---------------------------------------------------------------- text helpers

/// `s` cut to `max` characters, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// A value for a Markdown table cell or line: cut, one line, with the
/// characters that would change the table or the formatting escaped.
fn md(s: &str) -> String {
    md_cut(s, MAX_CHARS)
}

/// As [`md`], cut at `max` characters.
fn md_cut(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len());
    let s = cut(s, max);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => out.push_str("<br>"),
            '|' | '\\' | '`' | '*' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text escaped for HTML element content and quoted attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A value for HTML: cut, then escaped.
fn hv(s: &str) -> String {
    esc(&cut(s, MAX_CHARS))
}

fn percent(n: usize, d: usize) -> String {
    match ratio(n, d) {
        Some(r) => format!("{:.0}%", 100.0 * r),
        None => "–".into(),
    }
}

fn score(n: usize, d: usize) -> String {
    match ratio(n, d) {
        Some(r) => format!("{:.1}% ({n}/{d})", 100.0 * r),
        None => "–".into(),
    }
}

fn golds(gold: &[String]) -> String {
    gold.join(" · ")
}

/// `YYYY-MM-DD HH:MM UTC`.
fn utc(ms: u64) -> String {
    let ms = ms as i64;
    let day = ms.div_euclid(86_400_000);
    let minute = ms.rem_euclid(86_400_000) / 60_000;
    format!(
        "{} {:02}:{:02} UTC",
        civil_from_days(day),
        minute / 60,
        minute % 60
    )
}

/// What the label says and whether the verdict agrees, in words.
fn label_text(label: &Label, ex: &Example, verdict_type: ErrorType) -> String {
    let t = label.error_type.as_deref().unwrap_or("no error type");
    let op = label.op_id.as_deref().unwrap_or("no op");
    let mut out = format!("{t} at {op}");
    match label.memory_type() {
        Some(lt) => {
            let type_ok = if lt == verdict_type {
                "agrees"
            } else {
                "differs"
            };
            out.push_str(&format!(" (type {type_ok}"));
            if let Some(lop) = &label.op_id {
                let op_ok = if ex.op_id.as_deref() == Some(lop.as_str()) {
                    "agrees"
                } else {
                    "differs"
                };
                out.push_str(&format!(", op {op_ok}"));
            }
            out.push(')');
        }
        None => out.push_str(" (not a memory error type; left out of accuracy)"),
    }
    out
}

const CASES_NOTE: &str =
    "Failed cases come from a trace's annotations, else from the judge ops that scored 0. \
A case is attributed when the method stored a verdict for it (the latest one counts); \
undecided verdicts name no error type. Accuracy compares verdicts with labels naming one \
of the five memory error types, over the labelled cases that have a verdict.";

fn scope(report: &Report) -> String {
    match &report.trace {
        Some(t) => format!("trace {t}"),
        None => format!("all ({})", report.overall.traces),
    }
}

// ---------------------------------------------------------------- Markdown

impl Report {
    /// The report as Markdown: an overall table, then a section per system
    /// with its tables and its failure patterns with examples.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = self.write_markdown(&mut out);
        out
    }

    fn write_markdown(&self, out: &mut String) -> fmt::Result {
        writeln!(out, "# memtrace diagnostic report\n")?;
        writeln!(out, "- Database: {}", md(&self.database))?;
        writeln!(
            out,
            "- Method: {} (version {})",
            md(&self.method),
            md(&self.method_version)
        )?;
        writeln!(out, "- Traces: {}", md(&scope(self)))?;
        writeln!(out, "- Generated: {}\n", utc(self.generated_at_ms))?;
        writeln!(out, "{CASES_NOTE}\n")?;

        writeln!(out, "## Overall\n")?;
        write!(
            out,
            "| system | traces | failed | attributed | undecided | not attributed |"
        )?;
        for t in ErrorType::ALL {
            write!(out, " {t} |")?;
        }
        writeln!(out, " error-type accuracy | op-id match |")?;
        writeln!(out, "|---|{}", "---:|".repeat(12))?;
        let rows = self.systems.iter().map(|s| (md(&s.system), s));
        for (name, s) in rows.chain(std::iter::once(("**all**".into(), &self.overall))) {
            write!(
                out,
                "| {name} | {} | {} | {} | {} | {} |",
                s.traces, s.failed, s.attributed, s.undecided, s.not_attributed
            )?;
            for c in &s.by_error_type {
                write!(out, " {} |", c.cases)?;
            }
            writeln!(
                out,
                " {} | {} |",
                score(s.accuracy.type_correct, s.accuracy.scored),
                score(s.accuracy.op_correct, s.accuracy.op_labelled)
            )?;
        }
        writeln!(out)?;
        writeln!(out, "### Top failure patterns (all systems)\n")?;
        md_patterns_table(out, &self.overall)?;
        if !self.overall.patterns.is_empty() {
            writeln!(out, "Examples are under each system.\n")?;
        }
        for s in &self.systems {
            md_system(out, s, self.written_by.as_deref())?;
        }
        Ok(())
    }
}

fn md_patterns_table(out: &mut String, s: &Summary) -> fmt::Result {
    if s.patterns.is_empty() {
        return writeln!(out, "No attributed case names an error type.\n");
    }
    writeln!(
        out,
        "| # | error type | faulty op | cases | share of decided |"
    )?;
    writeln!(out, "|---:|---|---|---:|---:|")?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            i + 1,
            p.error_type,
            md(&p.op_name),
            p.cases,
            percent(p.cases, s.decided())
        )?;
    }
    writeln!(out)
}

fn md_system(out: &mut String, s: &Summary, written_by: Option<&str>) -> fmt::Result {
    writeln!(out, "## System: {}\n", md(&s.system))?;
    if let Some(text) = &s.written {
        writeln!(
            out,
            "### Written summary\n\n*Written by the model {}, from the figures and examples \
             below; check it against them.*\n",
            md(written_by.unwrap_or("?"))
        )?;
        for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
            writeln!(out, "> {}\n", md_cut(&para.replace('\n', " "), 4000))?;
        }
    }
    writeln!(out, "| measure | value |\n|---|---:|")?;
    writeln!(out, "| traces | {} |", s.traces)?;
    writeln!(out, "| failed cases | {} |", s.failed)?;
    writeln!(
        out,
        "| attributed | {} ({}) |",
        s.attributed,
        percent(s.attributed, s.failed)
    )?;
    writeln!(out, "| undecided | {} |", s.undecided)?;
    writeln!(out, "| not attributed | {} |\n", s.not_attributed)?;

    writeln!(out, "### Error types\n")?;
    writeln!(
        out,
        "| error type | cases | share of decided |\n|---|---:|---:|"
    )?;
    for c in &s.by_error_type {
        writeln!(
            out,
            "| {} | {} | {} |",
            c.error_type,
            c.cases,
            percent(c.cases, s.decided())
        )?;
    }
    writeln!(out)?;

    writeln!(out, "### Faulty ops\n")?;
    if s.by_op.is_empty() {
        writeln!(out, "No attributed case names an error type.\n")?;
    } else {
        writeln!(out, "| op | cases | share of decided |\n|---|---:|---:|")?;
        for o in &s.by_op {
            writeln!(
                out,
                "| {} | {} | {} |",
                md(&o.op_name),
                o.cases,
                percent(o.cases, s.decided())
            )?;
        }
        if s.other_ops > 0 {
            writeln!(
                out,
                "| (other ops) | {} | {} |",
                s.other_ops,
                percent(s.other_ops, s.decided())
            )?;
        }
        writeln!(out)?;
    }

    writeln!(out, "### Accuracy against labels\n")?;
    let a = &s.accuracy;
    if a.labelled == 0 {
        write!(
            out,
            "No case of this system is labelled with a memory error type."
        )?;
    } else {
        writeln!(out, "| measure | value |\n|---|---:|")?;
        writeln!(out, "| labelled cases | {} |", a.labelled)?;
        writeln!(out, "| labelled and attributed | {} |", a.scored)?;
        writeln!(
            out,
            "| error-type accuracy | {} |",
            score(a.type_correct, a.scored)
        )?;
        write!(
            out,
            "| op-id exact match | {} |",
            score(a.op_correct, a.op_labelled)
        )?;
    }
    if a.non_memory > 0 {
        write!(
            out,
            "\n\n{} case(s) with a label that is not a memory error type are left out.",
            a.non_memory
        )?;
    }
    writeln!(out, "\n")?;

    writeln!(out, "### Top failure patterns\n")?;
    md_patterns_table(out, s)?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "#### {}. {} at {}: {} case(s)\n",
            i + 1,
            p.error_type,
            md(&p.op_name),
            p.cases
        )?;
        for (j, ex) in p.examples.iter().enumerate() {
            md_example(out, p, j, ex)?;
        }
    }
    Ok(())
}

fn md_example(out: &mut String, p: &Pattern, j: usize, ex: &Example) -> fmt::Result {
    writeln!(out, "Example {} of {}:\n", j + 1, p.examples.len())?;
    writeln!(out, "| field | value |\n|---|---|")?;
    writeln!(out, "| trace | {} (#{}) |", md(&ex.graph_id), ex.trace)?;
    writeln!(out, "| case | {} |", md(&ex.case))?;
    writeln!(out, "| query | {} |", md(&ex.query))?;
    writeln!(out, "| gold | {} |", md(&golds(&ex.gold)))?;
    writeln!(out, "| prediction | {} |", md(&ex.prediction))?;
    writeln!(
        out,
        "| verdict | {} at {} ({}), confidence {:.2} |",
        p.error_type,
        md(ex.op_id.as_deref().unwrap_or(NO_OP)),
        md(&ex.op_name),
        ex.confidence
    )?;
    writeln!(out, "| reason | {} |", md(&ex.reason))?;
    if let Some(label) = &ex.label {
        writeln!(
            out,
            "| label | {} |",
            md(&label_text(label, ex, p.error_type))
        )?;
    }
    writeln!(out)?;
    if ex.chain.is_empty() {
        return writeln!(out, "The verdict records no evidence chain.\n");
    }
    writeln!(out, "Evidence chain:\n")?;
    writeln!(
        out,
        "| step | op id | op | variable | what |\n|---:|---|---|---|---|"
    )?;
    for (k, step) in ex.chain.iter().take(MAX_STEPS).enumerate() {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            k + 1,
            md(&step.op_id),
            md(&step.op_name),
            md(&step.var),
            md(&step.what)
        )?;
    }
    if ex.chain.len() > MAX_STEPS {
        writeln!(
            out,
            "| … | {} more steps | | | |",
            ex.chain.len() - MAX_STEPS
        )?;
    }
    writeln!(out)
}

// ---------------------------------------------------------------- HTML

/// Fill and text colour of an error type (Okabe–Ito, safe for colour-blind readers).
fn colours(t: ErrorType) -> (&'static str, &'static str) {
    match t {
        ErrorType::ExtractionError => ("#E69F00", "#000000"),
        ErrorType::UpdateError => ("#56B4E9", "#000000"),
        ErrorType::DeletionError => ("#D55E00", "#FFFFFF"),
        ErrorType::RetrievalError => ("#0072B2", "#FFFFFF"),
        ErrorType::ResponseError => ("#CC79A7", "#000000"),
    }
}

const UNDECIDED: (&str, &str) = ("#999999", "#000000");
const NOT_ATTRIBUTED: (&str, &str) = ("#E8E8E8", "#000000");
const OP_BAR: (&str, &str) = ("#4D4D4D", "#FFFFFF");

/// One bar or bar segment: label, count, fill and text colour.
struct Bar {
    label: String,
    count: usize,
    colour: (&'static str, &'static str),
}

const CHART_W: f64 = 720.0;
const LABEL_W: f64 = 210.0;
const BAR_W: f64 = 400.0;

/// A horizontal bar chart, one bar per row, each labelled with its count.
fn bar_chart(title: &str, bars: &[Bar]) -> String {
    let row = 24.0;
    let height = bars.len() as f64 * row + 8.0;
    let max = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {CHART_W} {height}\" width=\"{CHART_W}\" height=\"{height}\" role=\"img\" aria-label=\"{t}\"><title>{t}</title>",
        t = esc(title)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = 4.0 + i as f64 * row;
        let w = (b.count as f64 / max * BAR_W).max(if b.count > 0 { 1.0 } else { 0.0 });
        let _ = write!(
            out,
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{label}</text>\
             <rect x=\"{LABEL_W}\" y=\"{ry}\" width=\"{w:.1}\" height=\"{h}\" fill=\"{fill}\" stroke=\"#555\" stroke-width=\"0.5\"><title>{full}: {n}</title></rect>\
             <text x=\"{cx:.1}\" y=\"{ty}\">{n}</text>",
            lx = LABEL_W - 8.0,
            ty = y + 15.0,
            label = esc(&cut(&b.label, 30)),
            ry = y + 3.0,
            h = row - 8.0,
            fill = b.colour.0,
            full = esc(&cut(&b.label, MAX_CHARS)),
            n = b.count,
            cx = LABEL_W + w + 6.0,
        );
    }
    out.push_str("</svg>");
    out
}

/// One stacked bar per system: its failed cases by error type, undecided
/// and not attributed, with the counts written out under each bar.
fn stacked_chart(systems: &[Summary]) -> String {
    let row = 44.0;
    let height = systems.len() as f64 * row + 8.0;
    let max = systems.iter().map(|s| s.failed).max().unwrap_or(0).max(1) as f64;
    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {CHART_W} {height}\" width=\"{CHART_W}\" height=\"{height}\" role=\"img\" aria-label=\"Failed cases per system by error type\"><title>Failed cases per system by error type</title>"
    );
    for (i, s) in systems.iter().enumerate() {
        let y = 4.0 + i as f64 * row;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            LABEL_W - 8.0,
            y + 15.0,
            esc(&cut(&s.system, 30))
        );
        let mut parts: Vec<Bar> = s
            .by_error_type
            .iter()
            .map(|c| Bar {
                label: c.error_type.name().into(),
                count: c.cases,
                colour: colours(c.error_type),
            })
            .collect();
        parts.push(Bar {
            label: "undecided".into(),
            count: s.undecided,
            colour: UNDECIDED,
        });
        parts.push(Bar {
            label: "not attributed".into(),
            count: s.not_attributed,
            colour: NOT_ATTRIBUTED,
        });
        let mut x = LABEL_W;
        let mut words = Vec::new();
        for p in parts.iter().filter(|p| p.count > 0) {
            let w = p.count as f64 / max * BAR_W;
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"16\" fill=\"{}\" stroke=\"#555\" stroke-width=\"0.5\"><title>{}: {}</title></rect>",
                y + 3.0,
                p.colour.0,
                esc(&p.label),
                p.count
            );
            if w >= 22.0 {
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{}\" class=\"in\">{}</text>",
                    x + w / 2.0,
                    y + 15.0,
                    p.colour.1,
                    p.count
                );
            }
            x += w;
            words.push(format!("{} {}", p.label, p.count));
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{} failed</text>",
            x + 6.0,
            y + 15.0,
            s.failed
        );
        let words = if words.is_empty() {
            "no failed cases".to_string()
        } else {
            words.join(" · ")
        };
        let _ = write!(
            out,
            "<text x=\"{LABEL_W}\" y=\"{:.1}\" class=\"small\">{}</text>",
            y + 32.0,
            esc(&words)
        );
    }
    out.push_str("</svg>");
    out
}

fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">");
    let mut item = |name: &str, fill: &str| {
        let _ = write!(
            out,
            "<span><i class=\"sw\" style=\"background:{fill}\"></i>{}</span>",
            esc(name)
        );
    };
    for t in ErrorType::ALL {
        item(t.name(), colours(t).0);
    }
    item("undecided", UNDECIDED.0);
    item("not attributed", NOT_ATTRIBUTED.0);
    out.push_str("</p>");
    out
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#1a1a1a;line-height:1.4}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:.6em 0 1.2em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}\
.meta{color:#444}.note{color:#555;font-size:.9em}\
svg.chart{display:block;max-width:100%;height:auto;margin:.4em 0 1em;font-size:12px}svg.chart{fill:#1a1a1a}svg.chart text.in{font-size:11px}svg.chart text.small{font-size:11px;fill:#444}\
.legend span{display:inline-block;margin-right:1.2em}i.sw{display:inline-block;width:.9em;height:.9em;margin-right:.35em;border:1px solid #555;vertical-align:-.1em}\
details{border:1px solid #ddd;border-radius:4px;padding:.4em .8em;margin:.4em 0}summary{cursor:pointer}\
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}dd{margin:0;white-space:pre-wrap;word-break:break-word}\
code{background:#f3f3f3;padding:0 .2em}ol.chain li{margin:.15em 0}";

impl Report {
    /// The report as one self-contained HTML page: inline CSS and SVG
    /// charts, no scripts, nothing loaded from elsewhere. Every value from
    /// the data is escaped.
    pub fn html(&self) -> String {
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = self.write_html(&mut out);
        out
    }

    fn write_html(&self, out: &mut String) -> fmt::Result {
        writeln!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
        )?;
        writeln!(
            out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        )?;
        writeln!(
            out,
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        )?;
        writeln!(out, "<title>memtrace report: {}</title>", esc(&self.method))?;
        writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>")?;
        writeln!(out, "<h1>memtrace diagnostic report</h1>")?;
        writeln!(
            out,
            "<p class=\"meta\">Database <code>{}</code> · method <b>{}</b> (version {}) · traces: {} · generated {}</p>",
            hv(&self.database),
            esc(&self.method),
            esc(&self.method_version),
            hv(&scope(self)),
            utc(self.generated_at_ms)
        )?;
        writeln!(out, "<p class=\"note\">{}</p>", esc(CASES_NOTE))?;
        if !self.systems.is_empty() {
            write!(out, "<p>Systems:")?;
            for (i, s) in self.systems.iter().enumerate() {
                write!(out, " <a href=\"#system-{}\">{}</a>", i + 1, hv(&s.system))?;
            }
            writeln!(out, "</p>")?;
        }

        writeln!(out, "<h2>Overall</h2>")?;
        writeln!(out, "{}", legend())?;
        writeln!(out, "{}", stacked_chart(&self.systems))?;
        self.html_overview(out)?;
        writeln!(out, "<h3>Top failure patterns (all systems)</h3>")?;
        html_patterns_table(out, &self.overall)?;
        for (i, s) in self.systems.iter().enumerate() {
            html_system(out, i + 1, s, self.written_by.as_deref())?;
        }
        writeln!(out, "</body>\n</html>")
    }

    fn html_overview(&self, out: &mut String) -> fmt::Result {
        write!(
            out,
            "<table>\n<tr><th>system</th><th class=\"n\">traces</th><th class=\"n\">failed</th><th class=\"n\">attributed</th><th class=\"n\">undecided</th><th class=\"n\">not attributed</th>"
        )?;
        for t in ErrorType::ALL {
            write!(out, "<th class=\"n\">{t}</th>")?;
        }
        writeln!(
            out,
            "<th class=\"n\">error-type accuracy</th><th class=\"n\">op-id match</th></tr>"
        )?;
        let rows = self.systems.iter().map(|s| (hv(&s.system), s));
        for (name, s) in rows.chain(std::iter::once(("<b>all</b>".into(), &self.overall))) {
            write!(
                out,
                "<tr><td>{name}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                s.traces, s.failed, s.attributed, s.undecided, s.not_attributed
            )?;
            for c in &s.by_error_type {
                write!(out, "<td class=\"n\">{}</td>", c.cases)?;
            }
            writeln!(
                out,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                score(s.accuracy.type_correct, s.accuracy.scored),
                score(s.accuracy.op_correct, s.accuracy.op_labelled)
            )?;
        }
        writeln!(out, "</table>")
    }
}

fn html_patterns_table(out: &mut String, s: &Summary) -> fmt::Result {
    if s.patterns.is_empty() {
        return writeln!(out, "<p>No attributed case names an error type.</p>");
    }
    writeln!(
        out,
        "<table>\n<tr><th class=\"n\">#</th><th>error type</th><th>faulty op</th><th class=\"n\">cases</th><th class=\"n\">share of decided</th></tr>"
    )?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "<tr><td class=\"n\">{}</td><td><i class=\"sw\" style=\"background:{}\"></i>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            i + 1,
            colours(p.error_type).0,
            p.error_type,
            hv(&p.op_name),
            p.cases,
            percent(p.cases, s.decided())
        )?;
    }
    writeln!(out, "</table>")
}

fn html_system(out: &mut String, n: usize, s: &Summary, written_by: Option<&str>) -> fmt::Result {
    writeln!(out, "<h2 id=\"system-{n}\">System: {}</h2>", hv(&s.system))?;
    if let Some(text) = &s.written {
        writeln!(
            out,
            "<h3>Written summary</h3>\n<p class=\"note\">Written by the model {}, from the \
             figures and examples below; check it against them.</p>",
            hv(written_by.unwrap_or("?"))
        )?;
        for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
            writeln!(out, "<blockquote>{}</blockquote>", esc(&cut(para, 4000)))?;
        }
    }
    writeln!(
        out,
        "<table>\n<tr><th>traces</th><th>failed cases</th><th>attributed</th><th>undecided</th><th>not attributed</th></tr>\n<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} ({})</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n</table>",
        s.traces,
        s.failed,
        s.attributed,
        percent(s.attributed, s.failed),
        s.undecided,
        s.not_attributed
    )?;

    writeln!(out, "<h3>Error types</h3>")?;
    let mut bars: Vec<Bar> = s
        .by_error_type
        .iter()
        .map(|c| Bar {
            label: c.error_type.name().into(),
            count: c.cases,
            colour: colours(c.error_type),
        })
        .collect();
    if s.undecided > 0 {
        bars.push(Bar {
            label: "undecided".into(),
            count: s.undecided,
            colour: UNDECIDED,
        });
    }
    if s.not_attributed > 0 {
        bars.push(Bar {
            label: "not attributed".into(),
            count: s.not_attributed,
            colour: NOT_ATTRIBUTED,
        });
    }
    writeln!(
        out,
        "{}",
        bar_chart(&format!("Error types of {}", cut(&s.system, 60)), &bars)
    )?;

    writeln!(out, "<h3>Faulty ops</h3>")?;
    if s.by_op.is_empty() {
        writeln!(out, "<p>No attributed case names an error type.</p>")?;
    } else {
        let mut bars: Vec<Bar> = s
            .by_op
            .iter()
            .map(|o| Bar {
                label: o.op_name.clone(),
                count: o.cases,
                colour: OP_BAR,
            })
            .collect();
        if s.other_ops > 0 {
            bars.push(Bar {
                label: "(other ops)".into(),
                count: s.other_ops,
                colour: OP_BAR,
            });
        }
        writeln!(
            out,
            "{}",
            bar_chart(&format!("Faulty ops of {}", cut(&s.system, 60)), &bars)
        )?;
    }

    writeln!(out, "<h3>Accuracy against labels</h3>")?;
    let a = &s.accuracy;
    if a.labelled == 0 {
        writeln!(
            out,
            "<p>No case of this system is labelled with a memory error type.</p>"
        )?;
    } else {
        writeln!(
            out,
            "<table>\n<tr><th>labelled cases</th><th>labelled and attributed</th><th>error-type accuracy</th><th>op-id exact match</th></tr>\n<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n</table>",
            a.labelled,
            a.scored,
            score(a.type_correct, a.scored),
            score(a.op_correct, a.op_labelled)
        )?;
    }
    if a.non_memory > 0 {
        writeln!(
            out,
            "<p class=\"note\">{} case(s) with a label that is not a memory error type are left out.</p>",
            a.non_memory
        )?;
    }

    writeln!(out, "<h3>Top failure patterns</h3>")?;
    html_patterns_table(out, s)?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "<h4>{}. {} at {}: {} case(s)</h4>",
            i + 1,
            p.error_type,
            hv(&p.op_name),
            p.cases
        )?;
        for ex in &p.examples {
            html_example(out, p, ex)?;
        }
    }
    Ok(())
}

fn html_example(out: &mut String, p: &Pattern, ex: &Example) -> fmt::Result {
    writeln!(
        out,
        "<details>\n<summary>{} <span class=\"note\">({} #{}, {})</span></summary>\n<dl>",
        esc(&cut(&ex.query, 120)),
        hv(&ex.graph_id),
        ex.trace,
        hv(&ex.case)
    )?;
    let mut field = |name: &str, value: &str| writeln!(out, "<dt>{name}</dt><dd>{value}</dd>");
    field("query", &hv(&ex.query))?;
    field("gold", &hv(&golds(&ex.gold)))?;
    field("prediction", &hv(&ex.prediction))?;
    field(
        "verdict",
        &format!(
            "{} at <code>{}</code> ({}), confidence {:.2}",
            p.error_type,
            hv(ex.op_id.as_deref().unwrap_or(NO_OP)),
            hv(&ex.op_name),
            ex.confidence
        ),
    )?;
    field("reason", &hv(&ex.reason))?;
    if let Some(label) = &ex.label {
        field("label", &hv(&label_text(label, ex, p.error_type)))?;
    }
    writeln!(out, "</dl>")?;
    if ex.chain.is_empty() {
        writeln!(
            out,
            "<p class=\"note\">The verdict records no evidence chain.</p>"
        )?;
    } else {
        writeln!(out, "<p>Evidence chain:</p>\n<ol class=\"chain\">")?;
        for step in ex.chain.iter().take(MAX_STEPS) {
            writeln!(
                out,
                "<li><b>{}</b> by <code>{}</code> ({}) on <code>{}</code></li>",
                hv(&step.what),
                hv(&step.op_id),
                hv(&step.op_name),
                hv(&step.var)
            )?;
        }
        if ex.chain.len() > MAX_STEPS {
            writeln!(out, "<li>… {} more steps</li>", ex.chain.len() - MAX_STEPS)?;
        }
        writeln!(out, "</ol>")?;
    }
    writeln!(out, "</details>")
}

// ---------------------------------------------------------------- files

fn io_err(path: &Path, source: io::Error) -> EngineError {
    EngineError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Writes `text` to `path` through a temporary file in the same folder,
/// renamed over `path` once complete.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp, e));
    }
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_err(path, e)
    })
}

impl Report {
    /// Writes `report.md` and `report.html` into `dir`, creating it when
    /// missing; each file is written under a temporary name and renamed, so
    /// a reader never sees half a report. Returns the two paths.
    pub fn write(&self, dir: &Path) -> Result<(PathBuf, PathBuf)> {
        match fs::metadata(dir) {
            Ok(m) if !m.is_dir() => {
                return Err(io_err(
                    dir,
                    io::Error::new(
                        io::ErrorKind::NotADirectory,
                        "exists and is not a directory",
                    ),
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?
            }
            Err(e) => return Err(io_err(dir, e)),
        }
        let md = dir.join("report.md");
        let html = dir.join("report.html");
        write_atomic(&md, &self.markdown())?;
        write_atomic(&html, &self.html())?;
        Ok((md, html))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrib::FailedCase;
    use crate::gen::builder::TraceBuilder;
    use crate::{ImportOptions, InputFormat};
    use serde_json::json;

    /// The ops of one question.
    struct Question {
        add: String,
        search: String,
        qa: String,
    }

    /// A message stored by `memory.add`, missed by `memory.search`, a wrong
    /// answer from `question-answering`, and an `llm-judge` scoring it.
    fn question(b: &mut TraceBuilder, q: &str, text: &str, score: &str) -> Question {
        b.session("memory_construction", "session", json!({}));
        let msg = b.variable(
            Some("message"),
            q,
            "'Omar: I drive a blue Volvo.'",
            "message",
            None,
            json!({}),
        );
        let unit = b.variable(
            Some("memory"),
            q,
            "'Omar drives a Volvo'",
            "memory",
            None,
            json!({}),
        );
        let add = b.op(
            "memory.add",
            "construction",
            None,
            &[&msg],
            &[&unit],
            json!({}),
        );
        b.session("memory_search", "session", json!({}));
        let query = b.variable(
            Some("query"),
            q,
            &format!("'{text}'"),
            "message & query",
            None,
            json!({}),
        );
        let context = b.variable(
            Some("context"),
            q,
            "'Lena has a cat.'",
            "context",
            None,
            json!({}),
        );
        let search = b.op(
            "memory.search",
            "retrieval",
            None,
            &[&query, &unit],
            &[&context],
            json!({}),
        );
        b.session("memory_evaluation", "session", json!({}));
        let pred = b.variable(
            Some("prediction"),
            q,
            "'a red Toyota'",
            "prediction",
            None,
            json!({}),
        );
        let qa = b.op(
            "question-answering",
            "evaluation",
            None,
            &[&query, &context],
            &[&pred],
            json!({}),
        );
        let gold = b.variable(
            Some("golden_answers"),
            q,
            "['a blue Volvo']",
            "golden_answers",
            None,
            json!({}),
        );
        let sc = b.variable(
            Some("judge_score"),
            q,
            score,
            "judge_score",
            None,
            json!({}),
        );
        let edges: Vec<(String, String, Option<&str>)> = vec![
            (query.full_node_id.clone(), sc.full_node_id.clone(), None),
            (gold.full_node_id.clone(), sc.full_node_id.clone(), None),
            (pred.full_node_id.clone(), sc.full_node_id.clone(), None),
        ];
        b.op_edges("llm-judge", "evaluation", &edges, json!({}));
        Question { add, search, qa }
    }

    fn import(db: &Database, trace: serde_json::Value) {
        db.import_reader(
            trace.to_string().as_bytes(),
            InputFormat::Json,
            "test",
            &ImportOptions::default(),
        )
        .unwrap();
    }

    fn verdict(
        case: &FailedCase,
        error_type: Option<ErrorType>,
        op: Option<&str>,
        op_name: Option<&str>,
        reason: &str,
    ) -> Verdict {
        Verdict {
            trace: case.trace,
            graph_id: case.graph_id.clone(),
            system: case.system.clone(),
            case: case.id.clone(),
            query: case.query.clone(),
            error_type,
            op_id: op.map(str::to_string),
            op_name: op_name.map(str::to_string),
            confidence: 0.75,
            reason: reason.into(),
            chain: Vec::new(),
            method: Method::Evidence.name().into(),
            version: Method::Evidence.version().into(),
            micros: 3,
            model: None,
            cost: None,
        }
    }

    fn case<'a>(cases: &'a [FailedCase], id: &str) -> &'a FailedCase {
        cases.iter().find(|c| c.id == id).unwrap()
    }

    const XSS: &str = "<script>alert(1)</script>";

    /// `g-rag` (rag): four annotated cases, three with verdicts (one of them
    /// twice), one labelled with a non-memory error. `g-mem0` (mem0): four
    /// judge cases without labels, one with an undecided verdict and one
    /// with a verdict of another method as well.
    fn fixture() -> (tempfile::TempDir, Database) {
        use ErrorType::*;
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path().join("db")).unwrap();

        let mut b = TraceBuilder::new("g-rag", "u", "rag", json!({}), 19_000);
        let r: Vec<Question> = (1..=4)
            .map(|i| question(&mut b, &format!("Q{i}"), "What car does Omar drive?", "0.0"))
            .collect();
        let labels = [
            ("RetrievalError", &r[0].search),
            ("RetrievalError", &r[1].search),
            ("ResponseError", &r[2].qa),
            ("JudgeError", &r[3].qa),
        ];
        for (i, (t, op)) in labels.iter().enumerate() {
            b.annotate(json!({
                "query_id": format!("query:Q{}@1", i + 1),
                "query": "What car does Omar drive?",
                "golden_answers": ["a blue Volvo"], "prediction": "a red Toyota",
                "final_error_type": t, "final_op_id": op,
            }));
        }
        import(&db, b.finish());

        let mut b = TraceBuilder::new("g-mem0", "u", "mem0", json!({}), 19_000);
        let m: Vec<Question> = [
            ("Q1", XSS, "0"),
            ("Q2", "Where does Lena live?", "0"),
            ("Q3", "Which cat?", "0"),
            ("Q4", "Right answer", "1"),
            ("Q5", "Undecided?", "0"),
        ]
        .iter()
        .map(|(q, text, score)| question(&mut b, q, text, score))
        .collect();
        import(&db, b.finish());

        let rag = db.failed_cases(Some("g-rag")).unwrap();
        let mem0 = db.failed_cases(Some("g-mem0")).unwrap();
        assert_eq!((rag.len(), mem0.len()), (4, 4));
        let mut first = verdict(
            case(&rag, "query:Q1@1"),
            Some(RetrievalError),
            Some(&r[0].search),
            Some("memory.search"),
            "stored, then not retrieved",
        );
        first.chain = vec![
            Step {
                op_id: r[0].add.clone(),
                op_name: "memory.add".into(),
                var: "memory:Q1@1".into(),
                what: "held".into(),
            },
            Step {
                op_id: r[0].search.clone(),
                op_name: "memory.search".into(),
                var: "context:Q1@1".into(),
                what: "left out".into(),
            },
        ];
        let verdicts = vec![
            first,
            verdict(
                case(&rag, "query:Q2@1"),
                Some(ResponseError),
                Some(&r[1].qa),
                Some("question-answering"),
                "older verdict",
            ),
            verdict(
                case(&rag, "query:Q3@1"),
                Some(RetrievalError),
                Some(&r[2].search),
                Some("memory.search"),
                "held | then\nlost",
            ),
            verdict(
                case(&mem0, "query:Q1@1"),
                Some(ExtractionError),
                Some(&m[0].add),
                Some("memory.add"),
                "never stored",
            ),
            verdict(
                case(&mem0, "query:Q2@1"),
                Some(ExtractionError),
                Some(&m[1].add),
                Some("memory.add"),
                "never stored",
            ),
            // No op name: the report reads it from the trace.
            verdict(
                case(&mem0, "query:Q3@1"),
                Some(UpdateError),
                Some(&m[2].search),
                None,
                "degraded",
            ),
            verdict(
                case(&mem0, "query:Q5@1"),
                None,
                None,
                None,
                "no evidence found",
            ),
        ];
        assert_eq!(db.store_verdicts(&verdicts, "tester").unwrap(), 7);
        // Later: a new verdict for rag Q2 (it wins), and one of another
        // method for mem0 Q3 (not counted).
        let newer = verdict(
            case(&rag, "query:Q2@1"),
            Some(RetrievalError),
            Some(&r[1].search),
            None,
            "newer verdict",
        );
        let mut other = verdict(
            case(&mem0, "query:Q3@1"),
            Some(DeletionError),
            Some(&m[2].qa),
            Some("question-answering"),
            "another method",
        );
        other.method = "other".into();
        assert_eq!(db.store_verdicts(&[newer, other], "tester").unwrap(), 2);
        (dir, db)
    }

    fn types(s: &Summary) -> Vec<usize> {
        s.by_error_type.iter().map(|c| c.cases).collect()
    }

    fn patterns(s: &Summary) -> Vec<(ErrorType, &str, usize)> {
        s.patterns
            .iter()
            .map(|p| (p.error_type, p.op_name.as_str(), p.cases))
            .collect()
    }

    #[test]
    fn report_counts_verdicts_labels_and_patterns_per_system() {
        use ErrorType::*;
        let (_dir, db) = fixture();
        let report = db.report(Method::Evidence, None).unwrap();
        assert_eq!(report.method, "evidence");
        assert_eq!(report.trace, None);
        let names: Vec<&str> = report.systems.iter().map(|s| s.system.as_str()).collect();
        assert_eq!(names, ["mem0", "rag"]);
        let (mem0, rag, all) = (&report.systems[0], &report.systems[1], &report.overall);

        // rag: Q4 has no verdict; Q2's later verdict wins.
        assert_eq!(
            (
                rag.traces,
                rag.failed,
                rag.attributed,
                rag.undecided,
                rag.not_attributed
            ),
            (1, 4, 3, 0, 1)
        );
        assert_eq!(types(rag), [0, 0, 0, 3, 0]);
        assert_eq!(patterns(rag), [(RetrievalError, "memory.search", 3)]);
        let examples: Vec<(&str, &str)> = rag.patterns[0]
            .examples
            .iter()
            .map(|e| (e.case.as_str(), e.reason.as_str()))
            .collect();
        assert_eq!(
            examples,
            [
                ("query:Q1@1", "stored, then not retrieved"),
                ("query:Q2@1", "newer verdict"),
                ("query:Q3@1", "held | then\nlost"),
            ]
        );
        let ex = &rag.patterns[0].examples[0];
        assert_eq!(ex.query, "What car does Omar drive?");
        assert_eq!(ex.gold, ["a blue Volvo"]);
        assert_eq!(ex.prediction, "a red Toyota");
        assert_eq!(ex.chain.len(), 2);
        assert_eq!(
            ex.label.as_ref().unwrap().error_type.as_deref(),
            Some("RetrievalError")
        );
        // Q1 and Q2 right in type and op, Q3 wrong in both; Q4's judge
        // label is left out.
        let a = &rag.accuracy;
        assert_eq!(
            (
                a.labelled,
                a.non_memory,
                a.scored,
                a.type_correct,
                a.op_labelled,
                a.op_correct
            ),
            (3, 1, 3, 2, 3, 2)
        );
        assert!((a.error_type_accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-9);
        assert!((a.op_id_accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-9);

        // mem0: judge cases (Q4 scored 1), one undecided, no labels; the
        // other method's verdict does not count.
        assert_eq!(
            (
                mem0.failed,
                mem0.attributed,
                mem0.undecided,
                mem0.not_attributed
            ),
            (4, 4, 1, 0)
        );
        assert_eq!(types(mem0), [2, 1, 0, 0, 0]);
        assert_eq!(
            patterns(mem0),
            [
                (ExtractionError, "memory.add", 2),
                (UpdateError, "memory.search", 1)
            ]
        );
        assert_eq!(mem0.patterns[0].examples[0].query, XSS);
        assert_eq!(mem0.accuracy, Accuracy::default());

        // Overall.
        assert_eq!(
            (
                all.system.as_str(),
                all.traces,
                all.failed,
                all.attributed,
                all.undecided,
                all.not_attributed
            ),
            ("all", 2, 8, 7, 1, 1)
        );
        assert_eq!(all.decided(), 6);
        assert_eq!(types(all), [2, 1, 0, 3, 0]);
        assert_eq!(
            patterns(all),
            [
                (RetrievalError, "memory.search", 3),
                (ExtractionError, "memory.add", 2),
                (UpdateError, "memory.search", 1),
            ]
        );
        let ops: Vec<(&str, usize)> = all
            .by_op
            .iter()
            .map(|o| (o.op_name.as_str(), o.cases))
            .collect();
        assert_eq!(ops, [("memory.search", 4), ("memory.add", 2)]);
        assert_eq!(all.other_ops, 0);
        assert_eq!((all.accuracy.scored, all.accuracy.type_correct), (3, 2));

        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["systems"][1]["accuracy"]["op_correct"], 2);
    }

    #[test]
    fn report_of_one_trace_and_of_an_unknown_one() {
        let (_dir, db) = fixture();
        let report = db.report(Method::Evidence, Some("g-mem0")).unwrap();
        assert_eq!(report.trace.as_deref(), Some("g-mem0"));
        assert_eq!(report.systems.len(), 1);
        assert_eq!(report.overall.failed, 4);
        assert!(report.markdown().contains("- Traces: trace g-mem0"));
        assert!(matches!(
            db.report(Method::Evidence, Some("nope")),
            Err(EngineError::UnknownTrace(_))
        ));
    }

    #[test]
    fn markdown_has_the_tables_and_examples_with_cells_escaped() {
        let (_dir, db) = fixture();
        let text = db.report(Method::Evidence, None).unwrap().markdown();
        assert!(text.starts_with("# memtrace diagnostic report\n"), "{text}");
        assert!(text.contains("- Method: evidence (version 2)"), "{text}");
        assert!(
            text.contains("| mem0 | 1 | 4 | 4 | 1 | 0 | 2 | 1 | 0 | 0 | 0 | – | – |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| rag | 1 | 4 | 3 | 0 | 1 | 0 | 0 | 0 | 3 | 0 | 66.7% (2/3) | 66.7% (2/3) |"
            ),
            "{text}"
        );
        assert!(text.contains("| **all** | 2 | 8 | 7 | 1 | 1 |"), "{text}");
        assert!(text.contains("## System: rag"), "{text}");
        assert!(
            text.contains("| 1 | RetrievalError | memory.search | 3 | 100% |"),
            "{text}"
        );
        assert!(
            text.contains("#### 1. RetrievalError at memory.search: 3 case(s)"),
            "{text}"
        );
        assert!(
            text.contains("| reason | held \\| then<br>lost |"),
            "{text}"
        );
        assert!(text.contains("| 2 | "), "{text}");
        assert!(text.contains("| left out |"), "{text}");
        assert!(text.contains("RetrievalError at"), "{text}");
        assert!(text.contains("(type agrees, op agrees)"), "{text}");
        assert!(text.contains("(type differs, op differs)"), "{text}");
        assert!(
            text.contains("1 case(s) with a label that is not a memory error type"),
            "{text}"
        );
        assert!(
            text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{text}"
        );
        assert!(!text.contains("<script"), "{text}");
        // Every table row has as many cells as its header.
        for block in text.split("\n\n") {
            let rows: Vec<&str> = block.lines().filter(|l| l.starts_with('|')).collect();
            if let Some(head) = rows.first() {
                let cells = |l: &str| l.replace("\\|", "").matches('|').count();
                assert!(rows.iter().all(|r| cells(r) == cells(head)), "{block}");
            }
        }
    }

    #[test]
    fn html_is_self_contained_with_every_value_escaped() {
        let (_dir, db) = fixture();
        let html = db.report(Method::Evidence, None).unwrap().html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "{html}"
        );
        assert!(
            !html.contains("src=") && !html.contains("@import"),
            "{html}"
        );
        // Charts: the stacked overview and two per system, with counts in text.
        assert_eq!(html.matches("<svg").count(), 5, "{html}");
        assert!(
            html.contains("RetrievalError 3 · not attributed 1"),
            "{html}"
        );
        assert!(html.contains(">memory.search</text>"), "{html}");
        // The same colour for an error type everywhere, and in the legend.
        let retrieval = colours(ErrorType::RetrievalError).0;
        assert!(html.contains(&format!(
            "<span><i class=\"sw\" style=\"background:{retrieval}\"></i>RetrievalError</span>"
        )));
        assert!(html.contains(&format!(
            "<td><i class=\"sw\" style=\"background:{retrieval}\"></i>RetrievalError</td>"
        )));
        assert!(html.matches(&format!("fill=\"{retrieval}\"")).count() >= 3);
        // Examples fold out, with their chain as a list.
        assert_eq!(html.matches("<details>").count(), 6, "{html}");
        assert!(
            html.contains("<ol class=\"chain\">\n<li><b>held</b> by <code>"),
            "{html}"
        );
        assert!(html.contains("held | then\nlost"), "{html}");
    }

    #[test]
    fn write_puts_both_files_in_a_new_folder_and_names_a_bad_path() {
        let (dir, db) = fixture();
        let report = db.report(Method::Evidence, None).unwrap();
        let out = dir.path().join("out/nested");
        let (md, html) = report.write(&out).unwrap();
        assert_eq!(
            (md.clone(), html.clone()),
            (out.join("report.md"), out.join("report.html"))
        );
        assert_eq!(fs::read_to_string(&md).unwrap(), report.markdown());
        assert_eq!(fs::read_to_string(&html).unwrap(), report.html());
        // Again, over the old files; no temporary file stays behind.
        report.write(&out).unwrap();
        let mut names: Vec<String> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["report.html", "report.md"]);

        let file = dir.path().join("a-file");
        fs::write(&file, "x").unwrap();
        let err = report.write(&file).unwrap_err();
        assert!(
            matches!(&err, EngineError::Io { path, .. } if path == &file.display().to_string())
        );
        assert!(err.to_string().contains("is not a directory"), "{err}");
        let err = report.write(&file.join("below")).unwrap_err();
        assert!(err.to_string().contains("a-file"), "{err}");
    }

    fn synthetic(n: usize, op: &str, t: ErrorType) -> (FailedCase, Verdict) {
        let case = FailedCase {
            trace: 1,
            graph_id: "g".into(),
            system: Some("s".into()),
            id: format!("{op}-{n}"),
            query_node: None,
            query: "q".into(),
            gold: vec!["a".into()],
            prediction: "b".into(),
            judge_response: None,
            source_evidence: Vec::new(),
            origin: CaseOrigin::Judge(format!("j{n}")),
        };
        let v = verdict(&case, Some(t), Some(op), Some(op), "r");
        (case, v)
    }

    #[test]
    fn patterns_rank_by_count_then_taxonomy_and_stay_bounded() {
        let mut tally = Tally::default();
        let mut rows = Vec::new();
        // op01 once, op02 twice, ... op14 fourteen times; ties broken by
        // error type: op14 also once as an ExtractionError.
        for i in 1..=14 {
            for n in 0..i {
                rows.push(synthetic(
                    n,
                    &format!("op{i:02}"),
                    ErrorType::RetrievalError,
                ));
            }
        }
        rows.push(synthetic(99, "op14", ErrorType::ExtractionError));
        for (case, v) in &rows {
            tally.add(&Row {
                case,
                verdict: Some(v),
                op_name: v.op_name.clone().unwrap(),
                label: None,
            });
        }
        let s = tally.finish("s".into());
        assert_eq!(s.patterns.len(), MAX_PATTERNS);
        let top: Vec<(ErrorType, &str, usize)> = patterns(&s);
        assert_eq!(top[0], (ErrorType::RetrievalError, "op14", 14));
        assert_eq!(top[7], (ErrorType::RetrievalError, "op07", 7));
        assert!(s
            .patterns
            .iter()
            .all(|p| p.examples.len() == MAX_EXAMPLES.min(p.cases)));
        assert_eq!(s.by_op.len(), MAX_OPS);
        assert_eq!(
            (s.by_op[0].op_name.as_str(), s.by_op[0].cases),
            ("op14", 15)
        );
        assert_eq!(s.other_ops, 1 + 2);

        // Equal counts: taxonomy order, then op name.
        let mut tally = Tally::default();
        let rows = [
            synthetic(1, "b", ErrorType::ResponseError),
            synthetic(2, "a", ErrorType::ResponseError),
            synthetic(3, "z", ErrorType::ExtractionError),
        ];
        for (case, v) in &rows {
            tally.add(&Row {
                case,
                verdict: Some(v),
                op_name: v.op_name.clone().unwrap(),
                label: None,
            });
        }
        assert_eq!(
            patterns(&tally.finish("s".into())),
            [
                (ErrorType::ExtractionError, "z", 1),
                (ErrorType::ResponseError, "a", 1),
                (ErrorType::ResponseError, "b", 1),
            ]
        );
    }

    #[test]
    fn long_values_are_cut_and_cells_stay_on_one_line() {
        let long = "é".repeat(MAX_CHARS + 5);
        let c = cut(&long, MAX_CHARS);
        assert_eq!(c.chars().count(), MAX_CHARS + 1);
        assert!(c.ends_with('…'));
        assert_eq!(cut("short", MAX_CHARS), "short");
        assert_eq!(
            md("a|b\r\nc\\d <x> [l](u) *e*"),
            "a\\|b<br>c\\\\d &lt;x&gt; \\[l\\](u) \\*e\\*"
        );
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(utc(86_400_000 + 61 * 60_000), "1970-01-02 01:01 UTC");
    }
}
