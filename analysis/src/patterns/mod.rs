//! Failure patterns: statements saved by name with their history, the
//! built-in library, and running any of them over many traces at once.
//!
//! A saved pattern is a TRACE, FORWARD, MATCH or FIND statement with default
//! values for its parameters. Saves and drops are appended, never rewritten,
//! so every earlier definition stays readable (`SHOW PATTERN name HISTORY`).
//! Running patterns reads each matching trace once, in parallel (rayon), from
//! the trace cache; a pattern's rows in a trace are its hits there. Only
//! counts and a few example rows are kept per pattern, so memory stays bounded
//! by the cache's budget however many traces run.

pub mod builtin;
mod findings;
mod values;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use memtrace_engine::query::plan::{Pred, RunPatternPlan};
use memtrace_engine::query::{Params, Plan, Statement, Value};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::attrib::{CasePick, ErrorType};
use crate::error::{AnalysisError, BuiltinRefusal, Result};
pub use builtin::{builtin, Builtin, BUILTINS};
pub use findings::{Finding, TraceFindings};
use memtrace_engine::{
    columns_of, from_json, to_json, Cancel, Engine, EngineError, Sink, Snapshot, TraceId,
    TraceRecord,
};
pub use values::params_text;
pub(crate) use values::{int, no_such_param};

// ------------------------------------------------------------- storage

/// A pattern record as stored (JSON inside the storage record).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    action: String,
    author: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    statement: Option<String>,
    #[serde(default)]
    params: Vec<(String, serde_json::Value)>,
}

/// One save or drop of a pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternEvent {
    /// Its place among every pattern record of the database (1 for the first).
    pub seq: u64,
    /// The pattern.
    pub name: String,
    /// `save` or `drop`.
    pub action: String,
    /// The saved statement (saves only).
    pub statement: Option<String>,
    /// The saved defaults (saves only).
    pub params: Vec<(String, Value)>,
    /// Who saved or dropped it.
    pub author: String,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
}

/// A pattern as `SHOW PATTERNS` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternInfo {
    /// Its name.
    pub name: String,
    /// Built in (true) or saved.
    pub builtin: bool,
    /// The error type a built-in points to.
    pub error_type: Option<ErrorType>,
    /// Its parameters with their defaults.
    pub params: Vec<(String, Value)>,
    /// The saved statement, or what a built-in finds.
    pub definition: String,
    /// How many times it has been saved (0 for a built-in).
    pub version: u64,
    /// The latest save: when (ms since the epoch) and by whom.
    pub saved: Option<(u64, String)>,
}

fn events(db: &Engine) -> Result<Vec<PatternEvent>> {
    let mut out = Vec::new();
    for r in db.definitions()? {
        let seq = r.seq;
        let s: Stored = serde_json::from_str(&r.json)?;
        out.push(PatternEvent {
            seq,
            name: r.name,
            action: s.action,
            statement: s.statement,
            params: s
                .params
                .iter()
                .map(|(k, v)| (k.clone(), from_json(v)))
                .collect(),
            author: s.author,
            at_ms: r.at_ms,
        });
    }
    Ok(out)
}

fn unknown(name: &str, known: &[String]) -> AnalysisError {
    AnalysisError::UnknownPattern {
        name: name.to_string(),
        nearest: memtrace_engine::query::nearest(name, known.iter().map(String::as_str))
            .map(str::to_string),
    }
}

/// The text of `SAVE PATTERN name [WITH ...] AS statement`.
fn save_text(name: &str, params: &[(String, Value)], statement: &str) -> String {
    if params.is_empty() {
        format!("SAVE PATTERN {name} AS {statement}")
    } else {
        format!(
            "SAVE PATTERN {name} WITH {} AS {statement}",
            params_text(params)
        )
    }
}

/// Saved and built-in failure patterns: save, list, drop and run them over the traces.
pub trait Patterns {
    /// Every pattern: the built-in ones first, then the saved ones by name.
    fn patterns(&self) -> Result<Vec<PatternInfo>>;

    /// Every save and drop of one pattern, oldest first.
    fn pattern_history(&self, name: &str) -> Result<Vec<PatternEvent>>;

    /// Saves a pattern (a new version when the name is saved already): a
    /// TRACE, FORWARD, MATCH or FIND statement and a default for each of its
    /// parameters. The statement is checked (parsed and planned with the
    /// defaults) before anything is stored. Returns the new version's number.
    fn save_pattern(
        &self,
        name: &str,
        statement: &str,
        params: &[(String, Value)],
        author: &str,
    ) -> Result<u64>;

    /// Drops a saved pattern: appends a tombstone, so its history stays.
    fn drop_pattern(&self, name: &str, author: &str) -> Result<()>;

    /// Runs patterns over every trace (or those `opts.over` holds for), in
    /// parallel: per pattern the hits in all, per trace, and the first
    /// `opts.examples` hits. `progress` gets (traces done, traces in all).
    ///
    /// ```no_run
    /// use memtrace_analysis::patterns::{PatternSpec, RunOptions};
    /// use memtrace_analysis::prelude::*;
    /// let db = memtrace_analysis::open("memtrace.db")?;
    /// let opts = RunOptions { over: Some("trace.project_id = 'mem0'".into()), examples: 3 };
    /// let report = db.run_patterns(&[PatternSpec::named("noop_update")], &opts,
    ///     &memtrace_engine::Cancel::new(), &|_, _| {})?;
    /// println!("{} hits", report.patterns[0].hits);
    /// # Ok::<(), memtrace_analysis::AnalysisError>(())
    /// ```
    fn run_patterns(
        &self,
        specs: &[PatternSpec],
        opts: &RunOptions,
        cancel: &Cancel,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<PatternReport>;
}

impl Patterns for Engine {
    fn patterns(&self) -> Result<Vec<PatternInfo>> {
        let mut out: Vec<PatternInfo> = BUILTINS
            .iter()
            .map(|b| PatternInfo {
                name: b.name.to_string(),
                builtin: true,
                error_type: b.error_type,
                params: b
                    .params
                    .iter()
                    .map(|p| (p.name.to_string(), p.default.value()))
                    .collect(),
                definition: b.summary.to_string(),
                version: 0,
                saved: None,
            })
            .collect();
        let mut saved: BTreeMap<String, PatternInfo> = BTreeMap::new();
        for e in events(self)? {
            if e.action == "drop" {
                // A drop hides the pattern; the count of saves goes on.
                if let Some(p) = saved.get_mut(&e.name) {
                    p.definition.clear();
                }
                continue;
            }
            let version = saved.get(&e.name).map_or(0, |p| p.version) + 1;
            saved.insert(
                e.name.clone(),
                PatternInfo {
                    name: e.name,
                    builtin: false,
                    error_type: None,
                    params: e.params,
                    definition: e.statement.unwrap_or_default(),
                    version,
                    saved: Some((e.at_ms, e.author)),
                },
            );
        }
        out.extend(saved.into_values().filter(|p| !p.definition.is_empty()));
        Ok(out)
    }

    fn pattern_history(&self, name: &str) -> Result<Vec<PatternEvent>> {
        if builtin(name).is_some() {
            return Err(AnalysisError::BuiltinPattern {
                name: name.to_string(),
                refused: BuiltinRefusal::History,
            });
        }
        let all = events(self)?;
        let mine: Vec<PatternEvent> = all.iter().filter(|e| e.name == name).cloned().collect();
        if mine.is_empty() {
            let mut known: Vec<String> = all.into_iter().map(|e| e.name).collect();
            known.extend(BUILTINS.iter().map(|b| b.name.to_string()));
            return Err(unknown(name, &known));
        }
        Ok(mine)
    }

    fn save_pattern(
        &self,
        name: &str,
        statement: &str,
        params: &[(String, Value)],
        author: &str,
    ) -> Result<u64> {
        let text = save_text(name, params, statement);
        let plan = self.prepare(&text, &Params::new())?;
        let Plan::SavePattern(p) = plan else {
            return Err(AnalysisError::NotAPatternDefinition {
                pattern: None,
                statement: statement.to_string(),
            });
        };
        store_pattern(self, &p.name, &p.text, &p.params, author)
    }

    fn drop_pattern(&self, name: &str, author: &str) -> Result<()> {
        if builtin(name).is_some() {
            return Err(AnalysisError::BuiltinPattern {
                name: name.to_string(),
                refused: BuiltinRefusal::Drop,
            });
        }
        if !self.patterns()?.iter().any(|p| p.name == name) {
            let known: Vec<String> = self.patterns()?.into_iter().map(|p| p.name).collect();
            return Err(AnalysisError::UnknownSavedPattern {
                name: name.to_string(),
                nearest: memtrace_engine::query::nearest(name, known.iter().map(String::as_str))
                    .map(str::to_string),
            });
        }
        let stored = Stored {
            action: "drop".into(),
            author: author.into(),
            statement: None,
            params: Vec::new(),
        };
        append_pattern_event(self, name, &stored)
    }

    fn run_patterns(
        &self,
        specs: &[PatternSpec],
        opts: &RunOptions,
        cancel: &Cancel,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<PatternReport> {
        let started = Instant::now();
        let resolved: Vec<Resolved> = specs
            .iter()
            .map(|s| resolve_pattern(self, s))
            .collect::<Result<_>>()?;
        let over = match &opts.over {
            Some(text) => Some(over_pred(text)?),
            None => None,
        };
        let view = self.snapshot();
        let (traces, skipped) = pattern_traces(&view, over.as_ref())?;
        let per_trace = run_resolved(&view, &traces, &resolved, opts.examples, cancel, progress)?;
        let mut outcomes: Vec<PatternOutcome> = resolved
            .iter()
            .map(|r| PatternOutcome {
                name: r.name.clone(),
                builtin: r.builtin,
                error_type: r.error_type,
                params: r.params.clone(),
                columns: r.columns.clone(),
                hits: 0,
                per_trace: Vec::new(),
                examples: Vec::new(),
            })
            .collect();
        for ((id, record), hits) in traces.iter().zip(per_trace) {
            for (o, (n, rows)) in outcomes.iter_mut().zip(hits) {
                if n == 0 {
                    continue;
                }
                o.hits += n;
                o.per_trace.push(TraceHits {
                    trace: *id,
                    graph_id: record.graph_id.clone(),
                    system: record.project_id.clone(),
                    hits: n,
                });
                for row in rows {
                    if o.examples.len() < opts.examples {
                        o.examples.push(Example {
                            trace: *id,
                            graph_id: record.graph_id.clone(),
                            row,
                        });
                    }
                }
            }
        }
        Ok(PatternReport {
            traces: traces.len() as u64,
            skipped,
            seconds: started.elapsed().as_secs_f64(),
            patterns: outcomes,
        })
    }
}

pub(crate) fn store_pattern(
    db: &Engine,
    name: &str,
    statement: &str,
    params: &[(String, Value)],
    author: &str,
) -> Result<u64> {
    if builtin(name).is_some() {
        return Err(AnalysisError::BuiltinPattern {
            name: name.to_string(),
            refused: BuiltinRefusal::Save,
        });
    }
    let stored = Stored {
        action: "save".into(),
        author: author.into(),
        statement: Some(statement.into()),
        params: params
            .iter()
            .map(|(k, v)| (k.clone(), to_json(v)))
            .collect(),
    };
    append_pattern_event(db, name, &stored)?;
    Ok(db
        .pattern_history(name)?
        .iter()
        .filter(|e| e.action == "save")
        .count() as u64)
}

fn append_pattern_event(db: &Engine, name: &str, stored: &Stored) -> Result<()> {
    db.append_definition(name, serde_json::to_string(stored)?)?;
    Ok(())
}

/// Looks a pattern up and binds its parameters: `given` overrides the
/// defaults and may name only the pattern's own parameters.
pub(crate) fn resolve_pattern(db: &Engine, spec: &PatternSpec) -> Result<Resolved> {
    if let Some(b) = builtin(&spec.name) {
        if spec.statement.is_some() {
            return Err(AnalysisError::BuiltinPattern {
                name: spec.name.clone(),
                refused: BuiltinRefusal::Inline,
            });
        }
        let args = b.bind(&spec.params)?;
        return Ok(Resolved {
            name: spec.name.clone(),
            builtin: true,
            error_type: b.error_type,
            params: args.effective(b),
            columns: b.columns.iter().map(|c| c.to_string()).collect(),
            body: Body::Builtin(b, args),
        });
    }
    // An inline statement is checked as a save would check it.
    let (statement, defaults) = match &spec.statement {
        Some(s) => {
            let text = save_text(&spec.name, &spec.params, s);
            let Plan::SavePattern(p) = db.prepare(&text, &Params::new())? else {
                return Err(AnalysisError::NotAPatternDefinition {
                    pattern: Some(spec.name.clone()),
                    statement: s.clone(),
                });
            };
            (p.text, p.params)
        }
        None => {
            let info = db.patterns()?;
            let Some(p) = info.iter().find(|p| !p.builtin && p.name == spec.name) else {
                let known: Vec<String> = info.into_iter().map(|p| p.name).collect();
                return Err(unknown(&spec.name, &known));
            };
            (p.definition.clone(), p.params.clone())
        }
    };
    let mut params: Vec<(String, Value)> = defaults.clone();
    if spec.statement.is_none() {
        for (k, v) in &spec.params {
            match params.iter_mut().find(|(n, _)| n == k) {
                Some(slot) => slot.1 = v.clone(),
                None => {
                    return Err(no_such_param(
                        &format!("pattern {}", spec.name),
                        k,
                        defaults.iter().map(|(n, _)| n.as_str()),
                    ))
                }
            }
        }
    }
    let bound: Params = params.iter().cloned().collect();
    let stmt: Statement = memtrace_engine::query::parse_statement(&statement)?;
    let plan = db.plan(&stmt, &bound, &statement)?;
    Ok(Resolved {
        name: spec.name.clone(),
        builtin: false,
        error_type: None,
        params,
        columns: columns_of(&plan),
        body: Body::Saved(Box::new(plan)),
    })
}

/// Fills in a planned RUN PATTERN: the pattern's planned statement and
/// the result's columns (the trace first).
pub(crate) fn resolve_run_plan(db: &Engine, plan: &mut RunPatternPlan) -> Result<()> {
    let r = resolve_pattern(
        db,
        &PatternSpec {
            name: plan.name.clone(),
            params: plan.params.clone(),
            statement: None,
        },
    )?;
    plan.columns = std::iter::once("trace".to_string())
        .chain(r.columns.iter().cloned())
        .collect();
    plan.body = match r.body {
        Body::Saved(p) => Some(p),
        Body::Builtin(..) => None,
    };
    Ok(())
}

// ------------------------------------------------------------- running

/// A pattern to run: by name (built-in or saved), or inline with its own
/// statement (not stored).
#[derive(Debug, Clone, PartialEq)]
pub struct PatternSpec {
    /// Its name (for an inline statement, the label its results carry).
    pub name: String,
    /// Parameter values (names without `$`). For a named pattern they
    /// override its defaults; for an inline statement they are its defaults.
    pub params: Vec<(String, Value)>,
    /// An inline TRACE, FORWARD, MATCH or FIND statement.
    pub statement: Option<String>,
}

impl PatternSpec {
    /// A built-in or saved pattern by name, with its defaults.
    pub fn named(name: &str) -> PatternSpec {
        PatternSpec {
            name: name.to_string(),
            params: Vec::new(),
            statement: None,
        }
    }
}

/// How patterns run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Only the traces this condition on `trace.` fields holds for
    /// (e.g. `trace.project_id = 'mem0'`).
    pub over: Option<String>,
    /// Example hits kept per pattern.
    pub examples: usize,
}

/// Hits of one pattern in one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceHits {
    /// The trace.
    pub trace: TraceId,
    /// Its graph id.
    pub graph_id: String,
    /// Its memory system (`project_id`).
    pub system: Option<String>,
    /// Rows the pattern gave in it.
    pub hits: u64,
}

/// One example hit: its trace and its row.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// The trace.
    pub trace: TraceId,
    /// Its graph id.
    pub graph_id: String,
    /// The row, one value per column of the pattern.
    pub row: Vec<Value>,
}

/// What one pattern found over the traces it ran on.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternOutcome {
    /// The pattern.
    pub name: String,
    /// Built in or saved (or inline).
    pub builtin: bool,
    /// The error type a built-in points to.
    pub error_type: Option<ErrorType>,
    /// The parameter values it ran with.
    pub params: Vec<(String, Value)>,
    /// The columns of its hits.
    pub columns: Vec<String>,
    /// Hits in all.
    pub hits: u64,
    /// The traces with at least one hit, in trace order.
    pub per_trace: Vec<TraceHits>,
    /// The first hits, in trace order.
    pub examples: Vec<Example>,
}

/// The result of running patterns over the traces.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternReport {
    /// Traces the patterns ran on.
    pub traces: u64,
    /// Traces left out by the `over` condition.
    pub skipped: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// One outcome per pattern, in the order asked.
    pub patterns: Vec<PatternOutcome>,
}

/// What a resolved pattern runs.
pub(crate) enum Body {
    Builtin(&'static Builtin, builtin::Args),
    Saved(Box<Plan>),
}

/// A pattern looked up, its parameters bound.
pub(crate) struct Resolved {
    name: String,
    builtin: bool,
    error_type: Option<ErrorType>,
    params: Vec<(String, Value)>,
    columns: Vec<String>,
    body: Body,
}

/// The same plan limited to one trace.
fn scoped(plan: &Plan, trace: TraceId) -> Plan {
    let scope = Some(format!("#{trace}"));
    let mut p = plan.clone();
    match &mut p {
        Plan::Traverse(t) => t.scope = scope,
        Plan::Match(m) => m.scope = scope,
        Plan::Find(f) => f.scope = scope,
        _ => {}
    }
    p
}

/// One trace's hits: per pattern, the count and the first `keep` rows.
type Hits = Vec<(u64, Vec<Vec<Value>>)>;

fn trace_hits(
    view: &Snapshot<'_>,
    trace: TraceId,
    patterns: &[Resolved],
    keep: usize,
    cancel: &Cancel,
) -> Result<Hits> {
    let parts = builtin::TraceParts::new(view, trace, cancel);
    let mut out = Vec::with_capacity(patterns.len());
    for p in patterns {
        cancel.check()?;
        match &p.body {
            Body::Builtin(b, args) => {
                let mut rows = b.run(&parts, args)?;
                let n = rows.len() as u64;
                rows.truncate(keep);
                out.push((n, rows));
            }
            Body::Saved(plan) => {
                let plan = scoped(plan, trace);
                let mut n = 0u64;
                let mut rows = Vec::new();
                let ran = view.run(&plan, cancel, &mut |row| {
                    n += 1;
                    if rows.len() < keep {
                        rows.push(row);
                    }
                    Ok(true)
                });
                match ran {
                    Ok(()) => {}
                    // A start the trace does not have: no hits there.
                    Err(EngineError::UnknownNode { .. }) => {
                        n = 0;
                        rows.clear();
                    }
                    Err(e) => return Err(e.into()),
                }
                out.push((n, rows));
            }
        }
    }
    Ok(out)
}

/// The traces in scope, split into those the condition holds for and a
/// count of the rest.
fn pattern_traces(
    view: &Snapshot<'_>,
    over: Option<&Pred>,
) -> Result<(Vec<(TraceId, TraceRecord)>, u64)> {
    let mut keep = Vec::new();
    let mut skipped = 0;
    for (id, record) in view.traces()? {
        let ok = match over {
            Some(p) => view.trace_matches(id, &record, p)?,
            None => true,
        };
        if ok {
            keep.push((id, record));
        } else {
            skipped += 1;
        }
    }
    Ok((keep, skipped))
}

/// Runs resolved patterns over the traces in parallel; per trace (in
/// trace order) the hits of each pattern.
fn run_resolved(
    view: &Snapshot<'_>,
    traces: &[(TraceId, TraceRecord)],
    patterns: &[Resolved],
    keep: usize,
    cancel: &Cancel,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<Hits>> {
    let done = AtomicU64::new(0);
    let total = traces.len() as u64;
    traces
        .par_iter()
        .map(|(id, _)| {
            cancel.check()?;
            let hits = trace_hits(view, *id, patterns, keep, cancel)?;
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            Ok(hits)
        })
        .collect()
}

/// RUN PATTERN in the language: every hit as a row, the trace's graph id first.
pub(crate) fn run_pattern_rows(
    db: &Engine,
    view: &Snapshot<'_>,
    plan: &RunPatternPlan,
    cancel: &Cancel,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let resolved = resolve_pattern(
        db,
        &PatternSpec {
            name: plan.name.clone(),
            params: plan.params.clone(),
            statement: None,
        },
    )?;
    let (traces, _) = pattern_traces(view, plan.over.as_ref())?;
    let resolved = [resolved];
    let hits = run_resolved(view, &traces, &resolved, usize::MAX, cancel, &|_, _| {})?;
    for ((_, record), mut per) in traces.iter().zip(hits) {
        let (_, rows) = per.remove(0);
        for row in rows {
            let mut full = Vec::with_capacity(row.len() + 1);
            full.push(Value::Str(record.graph_id.clone()));
            full.extend(row);
            if !sink(full)? {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Why a resolved pattern's hits are not failed cases, or `None` when they
/// are: the five built-in patterns that follow the evidence, and a saved
/// FIND cases that neither groups nor merges its rows. Fills in a saved
/// FIND's case keys ([`memtrace_engine::query::plan::FindPlan::keep_case_keys`]).
fn cases_of(r: &mut Resolved) -> Option<String> {
    let why = match &mut r.body {
        Body::Builtin(b, _) if b.error_type.is_some() => return None,
        Body::Builtin(b, _) => format!(
            "the hits of built-in pattern {} ({}) are not failed cases",
            b.name,
            b.columns.join(", ")
        ),
        Body::Saved(plan) => match plan.as_mut() {
            Plan::Find(f) => match f.keep_case_keys() {
                Ok(()) => return None,
                Err(why) => format!("pattern {}: {why}", r.name),
            },
            Plan::Match(_) => format!(
                "the hits of pattern {} are MATCH bindings, not failed cases",
                r.name
            ),
            Plan::Traverse(_) => format!(
                "the hits of pattern {} are the rows of a traversal, not failed cases",
                r.name
            ),
            _ => format!("the hits of pattern {} are not failed cases", r.name),
        },
    };
    let evidence: Vec<&str> = BUILTINS
        .iter()
        .filter(|b| b.error_type.is_some())
        .map(|b| b.name)
        .collect();
    Some(format!(
        "{why}; ATTRIBUTE needs one failed case per hit: the built-in patterns {}, or a \
         saved FIND cases without GROUP BY, aggregates or DISTINCT",
        evidence.join(", ")
    ))
}

/// Checks, when planning `ATTRIBUTE (RUN PATTERN ...)`, that the
/// pattern's hits are failed cases; fills in the plan (the pattern's
/// planned statement, its columns) as for RUN PATTERN. The error, when
/// they are not, says why and what would do; the caller places it.
pub(crate) fn resolve_case_pattern(
    db: &Engine,
    plan: &mut RunPatternPlan,
) -> Result<std::result::Result<(), String>> {
    let mut r = resolve_pattern(
        db,
        &PatternSpec {
            name: plan.name.clone(),
            params: plan.params.clone(),
            statement: None,
        },
    )?;
    if let Some(why) = cases_of(&mut r) {
        return Ok(Err(why));
    }
    plan.columns = std::iter::once("trace".to_string())
        .chain(r.columns.iter().cloned())
        .collect();
    plan.body = match r.body {
        Body::Saved(p) => Some(p),
        Body::Builtin(..) => None,
    };
    Ok(Ok(()))
}

/// The failed cases a pattern's hits name, trace by trace (in trace
/// order, and in each trace in the order of its hits), for
/// `ATTRIBUTE (RUN PATTERN ...)`. The pattern is looked up again, as
/// RUN PATTERN does; one whose hits are not cases is an error.
pub(crate) fn pattern_case_picks(
    db: &Engine,
    view: &Snapshot<'_>,
    plan: &RunPatternPlan,
    cancel: &Cancel,
) -> Result<Vec<CasePick>> {
    let mut r = resolve_pattern(
        db,
        &PatternSpec {
            name: plan.name.clone(),
            params: plan.params.clone(),
            statement: None,
        },
    )?;
    if let Some(why) = cases_of(&mut r) {
        return Err(AnalysisError::HitsNotCases(why));
    }
    let (traces, _) = pattern_traces(view, plan.over.as_ref())?;
    let per_trace: Vec<Vec<CasePick>> = traces
        .par_iter()
        .map(|(id, _)| {
            cancel.check()?;
            match &r.body {
                Body::Builtin(b, args) => {
                    let parts = builtin::TraceParts::new(view, *id, cancel);
                    Ok(b.hit_cases(&parts, args)?
                        .into_iter()
                        .map(|origin| CasePick { trace: *id, origin })
                        .collect())
                }
                Body::Saved(body) => Ok(view.case_picks(&scoped(body, *id), cancel)?),
            }
        })
        .collect::<Result<_>>()?;
    Ok(per_trace.into_iter().flatten().collect())
}

/// Compiles a condition on `trace.` fields.
pub fn over_pred(text: &str) -> Result<Pred> {
    let statement = format!("RUN PATTERN p OVER TRACES WHERE {text}");
    let stmt = memtrace_engine::query::parse_statement(&statement).map_err(|e| {
        AnalysisError::TraceConditionSyntax {
            text: text.to_string(),
            reason: e.to_string(),
        }
    })?;
    match memtrace_engine::query::plan_text(&stmt, &Params::new(), &statement)? {
        Plan::RunPattern(RunPatternPlan { over: Some(p), .. }) => Ok(p),
        _ => Err(AnalysisError::NotATraceCondition(text.to_string())),
    }
}

#[cfg(test)]
mod tests;
