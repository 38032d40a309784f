//! The built-in failure patterns: one analysis per pattern, each run on one
//! trace at a time from the trace cache, each hit a row.
//!
//! Five patterns name the failed cases whose evidence-flow verdict is one of
//! the five error types; four more are smells read from the graph and the
//! value references alone (a value is read only when it is a few bytes).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use memtrace_engine::query::Value;
use memtrace_engine::{Snapshot, TraceId, VarRecord};

use super::findings::{Finding, TraceFindings};
use super::values::{int, no_such_param};
use crate::attrib::{CaseOrigin, ErrorType};
use crate::error::{AnalysisError, Result};
use memtrace_engine::lazy;
use memtrace_engine::{Cancel, TraceGraph};
use memtrace_engine::{TraceCatalog, TraceOps};

/// A parameter's default, which also fixes its type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Default {
    /// A whole number, at least 0.
    Count(i64),
    /// A number.
    Number(f64),
    /// A list of words (a single word is read as a list of one).
    Words(&'static [&'static str]),
}

impl Default {
    /// The default as a query value.
    pub fn value(self) -> Value {
        match self {
            Default::Count(n) => Value::Int(n),
            Default::Number(x) => Value::Float(x),
            Default::Words(w) => Value::List(w.iter().map(|s| Value::Str(s.to_string())).collect()),
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Default::Count(_) => "a whole number of at least 0",
            Default::Number(_) => "a number",
            Default::Words(_) => "a list of strings, like ['a', 'b']",
        }
    }
}

/// One parameter of a built-in pattern.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name, without `$`.
    pub name: &'static str,
    /// Its default.
    pub default: Default,
    /// What it sets.
    pub doc: &'static str,
}

/// A built-in pattern.
#[derive(Clone, Copy)]
pub struct Builtin {
    /// Its name.
    pub name: &'static str,
    /// The error type it points to, for the five that follow the evidence.
    pub error_type: Option<ErrorType>,
    /// What a hit is, in one sentence.
    pub summary: &'static str,
    /// Its parameters.
    pub params: &'static [Param],
    /// The columns of a hit (the trace comes first and is not listed).
    pub columns: &'static [&'static str],
    run: fn(&TraceParts<'_>, &Args) -> Result<Vec<Vec<Value>>>,
}

impl std::fmt::Debug for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builtin").field("name", &self.name).finish()
    }
}

/// Parameter values checked against a built-in's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    values: HashMap<&'static str, Value>,
}

impl Args {
    fn count(&self, name: &str) -> u64 {
        match self.values.get(name) {
            Some(Value::Int(n)) => (*n).max(0) as u64,
            _ => 0,
        }
    }

    fn number(&self, name: &str) -> f64 {
        match self.values.get(name) {
            Some(Value::Int(n)) => *n as f64,
            Some(Value::Float(x)) => *x,
            _ => 0.0,
        }
    }

    fn words(&self, name: &str) -> Vec<String> {
        match self.values.get(name) {
            Some(Value::List(items)) => items
                .iter()
                .filter_map(|v| match v {
                    Value::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The values in the built-in's parameter order, defaults filled in.
    pub fn effective(&self, b: &Builtin) -> Vec<(String, Value)> {
        b.params
            .iter()
            .map(|p| {
                let v = self.values.get(p.name).cloned().unwrap_or(Value::Null);
                (p.name.to_string(), v)
            })
            .collect()
    }
}

impl Builtin {
    /// Checks the values given (names without `$`) and fills in defaults.
    pub fn bind(&self, given: &[(String, Value)]) -> Result<Args> {
        let mut values: HashMap<&'static str, Value> = self
            .params
            .iter()
            .map(|p| (p.name, p.default.value()))
            .collect();
        for (name, v) in given {
            let Some(p) = self.params.iter().find(|p| p.name == name) else {
                return Err(no_such_param(
                    &format!("built-in pattern {}", self.name),
                    name,
                    self.params.iter().map(|p| p.name),
                ));
            };
            let fits = match (p.default, v) {
                (Default::Count(_), Value::Int(n)) => *n >= 0,
                (Default::Number(_), Value::Int(_) | Value::Float(_)) => true,
                (Default::Words(_), Value::Str(_)) => true,
                (Default::Words(_), Value::List(items)) => {
                    items.iter().all(|i| matches!(i, Value::Str(_)))
                }
                _ => false,
            };
            if !fits {
                return Err(AnalysisError::ParameterKind {
                    pattern: self.name.to_string(),
                    name: name.to_string(),
                    expected: p.default.kind().to_string(),
                    given: memtrace_engine::query::ast::value_literal(v),
                });
            }
            let v = match v {
                Value::Str(s) => Value::List(vec![Value::Str(s.clone())]),
                other => other.clone(),
            };
            values.insert(p.name, v);
        }
        Ok(Args { values })
    }

    /// The hits of this pattern in one trace.
    pub(crate) fn run(&self, t: &TraceParts<'_>, args: &Args) -> Result<Vec<Vec<Value>>> {
        (self.run)(t, args)
    }

    /// The failed cases this pattern's hits in one trace are, in the order
    /// of the hits; an error for the patterns whose hits are not cases
    /// (all but the five that follow the evidence).
    pub(crate) fn hit_cases(&self, t: &TraceParts<'_>, args: &Args) -> Result<Vec<CaseOrigin>> {
        match self.error_type {
            Some(ty) => Ok(with_error_type(t, args, ty)?
                .map(|f| f.origin.clone())
                .collect()),
            None => Err(AnalysisError::HitsNotCases(format!(
                "the hits of built-in pattern {} are not failed cases",
                self.name
            ))),
        }
    }
}

/// One trace's cached parts, loaded on first use.
pub(crate) struct TraceParts<'a> {
    view: &'a Snapshot<'a>,
    id: TraceId,
    cancel: &'a Cancel,
    catalog: OnceLock<Arc<TraceCatalog>>,
    ops: OnceLock<Arc<TraceOps>>,
    graph: OnceLock<Arc<TraceGraph>>,
    findings: OnceLock<Arc<TraceFindings>>,
}

impl<'a> TraceParts<'a> {
    /// Nothing loaded yet.
    pub(crate) fn new(view: &'a Snapshot<'a>, id: TraceId, cancel: &'a Cancel) -> Self {
        TraceParts {
            view,
            id,
            cancel,
            catalog: OnceLock::new(),
            ops: OnceLock::new(),
            graph: OnceLock::new(),
            findings: OnceLock::new(),
        }
    }

    fn catalog(&self) -> Result<&TraceCatalog> {
        Ok(lazy(&self.catalog, || self.view.catalog(self.id))?)
    }

    fn ops(&self) -> Result<&TraceOps> {
        Ok(lazy(&self.ops, || self.view.ops(self.id))?)
    }

    fn graph(&self) -> Result<&TraceGraph> {
        Ok(lazy(&self.graph, || self.view.graph(self.id))?)
    }

    fn findings(&self) -> Result<&TraceFindings> {
        if let Some(f) = self.findings.get() {
            return Ok(f);
        }
        let f = TraceFindings::cached(self.view, self.id, self.cancel)?;
        Ok(self.findings.get_or_init(|| f))
    }

    fn op_id(&self, op: u32) -> Result<(Value, Value)> {
        Ok(match self.ops()?.op(op) {
            Some(o) => (Value::Str(o.op_id.clone()), o.op_name.clone().into()),
            None => (Value::Null, Value::Null),
        })
    }

    /// Whether `op`'s category is one of `kinds` (every op when `kinds` is empty).
    fn op_is(&self, op: u32, kinds: &[String]) -> Result<bool> {
        if kinds.is_empty() {
            return Ok(true);
        }
        Ok(self
            .ops()?
            .op(op)
            .and_then(|o| o.category.as_deref())
            .is_some_and(|c| kinds.iter().any(|k| k == c)))
    }
}

fn is_sentinel(v: &VarRecord) -> bool {
    v.category.as_deref() == Some("sentinel")
}

fn len_of(v: &VarRecord) -> u64 {
    v.value.as_ref().map_or(0, |r| r.len)
}

// ------------------------------------------------------------ the library

/// The findings of the failed cases whose evidence-flow verdict has the
/// error type `ty`, with at least `$min_confidence`.
fn with_error_type<'t>(
    t: &'t TraceParts<'_>,
    args: &Args,
    ty: ErrorType,
) -> Result<impl Iterator<Item = &'t Finding>> {
    let min = args.number("min_confidence");
    Ok(t.findings()?
        .findings
        .iter()
        .filter(move |f| f.error_type == Some(ty) && f.confidence >= min))
}

/// The five patterns that follow the evidence: the failed cases whose
/// evidence-flow verdict has their error type.
fn by_error_type(t: &TraceParts<'_>, args: &Args, ty: ErrorType) -> Result<Vec<Vec<Value>>> {
    Ok(with_error_type(t, args, ty)?
        .map(|f| {
            vec![
                Value::Str(f.case.clone()),
                Value::Str(f.query.clone()),
                f.op_id.clone().into(),
                f.op_name.clone().into(),
                Value::Float(f.confidence),
                Value::Str(f.reason.clone()),
            ]
        })
        .collect())
}

fn extraction(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    by_error_type(t, a, ErrorType::ExtractionError)
}
fn update(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    by_error_type(t, a, ErrorType::UpdateError)
}
fn deletion(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    by_error_type(t, a, ErrorType::DeletionError)
}
fn retrieval(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    by_error_type(t, a, ErrorType::RetrievalError)
}
fn response(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    by_error_type(t, a, ErrorType::ResponseError)
}

/// A version written by an op of the given kinds whose value is byte for
/// byte the value of the version before it.
fn noop_update(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    let kinds = a.words("kinds");
    let catalog = t.catalog()?;
    let graph = t.graph()?;
    let vars = catalog.variables();
    // Each full name's versions, oldest first: a version and the one
    // before it, in local-id order so that hits keep the recorded order.
    let mut pairs: Vec<(u32, u32)> = Vec::new();
    for run in catalog.version_runs() {
        pairs.extend(run.windows(2).map(|w| (w[1], w[0])));
    }
    pairs.sort_unstable();
    let mut out = Vec::new();
    for (local, prev) in pairs {
        let (Some(v), Some(before)) = (vars.get(local as usize), vars.get(prev as usize)) else {
            continue;
        };
        if v.version < 2 || is_sentinel(v) || before.value != v.value {
            continue;
        }
        // The op that wrote this version (the first of the kinds asked for).
        let mut writer = None;
        for &e in graph.incoming(local) {
            if let Some(op) = graph.op(e) {
                if t.op_is(op, &kinds)? {
                    writer = Some(op);
                    break;
                }
            }
        }
        let Some(op) = writer else {
            continue;
        };
        let (op_id, op_name) = t.op_id(op)?;
        out.push(vec![
            op_id,
            op_name,
            Value::Str(v.full_node_id()),
            Value::Str(before.full_node_id()),
            int(len_of(v)),
        ]);
    }
    Ok(out)
}

/// What an empty retrieval result looks like, once trimmed.
const EMPTY: [&str; 9] = ["", "[]", "{}", "()", "None", "null", "''", "\"\"", "[[]]"];
/// Values longer than this are not empty; shorter ones are read to check.
const EMPTY_MAX_BYTES: u64 = 16;

/// An op of the given kinds whose every output is empty.
fn empty_retrieval(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    let kinds = a.words("kinds");
    let catalog = t.catalog()?;
    let graph = t.graph()?;
    let mut out = Vec::new();
    for op in 0..t.ops()?.ops().len() as u32 {
        if !t.op_is(op, &kinds)? {
            continue;
        }
        let mut outputs: Vec<u32> = Vec::new();
        for &e in graph.op_edges(op) {
            if let Some(target) = graph.target(e) {
                let sentinel = catalog.variable(target).is_none_or(is_sentinel);
                if !sentinel && !outputs.contains(&target) {
                    outputs.push(target);
                }
            }
        }
        if outputs.is_empty() {
            continue;
        }
        let mut shown = None;
        let mut all_empty = true;
        for &o in &outputs {
            let Some(v) = catalog.variable(o) else {
                continue;
            };
            let text = match &v.value {
                None => String::new(),
                Some(r) if r.len <= EMPTY_MAX_BYTES => t.view.value(r)?,
                Some(_) => {
                    all_empty = false;
                    break;
                }
            };
            if !EMPTY.contains(&text.trim()) {
                all_empty = false;
                break;
            }
            shown.get_or_insert((v.full_node_id(), text));
        }
        if !all_empty {
            continue;
        }
        if let Some((node, text)) = shown {
            let (op_id, op_name) = t.op_id(op)?;
            out.push(vec![op_id, op_name, Value::Str(node), Value::Str(text)]);
        }
    }
    Ok(out)
}

/// A unit with many versions whose value never shrinks and ends up many
/// times its first size.
fn unbounded_growth(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    let min_versions = a.count("min_versions").max(2);
    let factor = a.number("factor");
    let categories = a.words("categories");
    let catalog = t.catalog()?;
    let vars = catalog.variables();
    // Names that reach the version count, each once.
    let mut names: BTreeSet<String> = BTreeSet::new();
    for v in vars {
        if u64::from(v.version) >= min_versions
            && !is_sentinel(v)
            && (categories.is_empty()
                || v.category
                    .as_deref()
                    .is_some_and(|c| categories.iter().any(|k| k == c)))
        {
            names.insert(v.full_name());
        }
    }
    let mut out = Vec::new();
    for name in names {
        let versions = catalog.versions(&name);
        if (versions.len() as u64) < min_versions {
            continue;
        }
        let lens: Vec<u64> = versions
            .iter()
            .map(|&l| len_of(&vars[l as usize]))
            .collect();
        let never_shrinks = lens.windows(2).all(|w| w[1] >= w[0]);
        let (first, last) = (lens[0], lens[lens.len() - 1]);
        if never_shrinks && last as f64 >= factor * first.max(1) as f64 {
            out.push(vec![
                Value::Str(name),
                int(versions.len() as u64),
                int(first),
                int(last),
            ]);
        }
    }
    Ok(out)
}

/// A prompt read by several distinct ops that the evidence flow names as
/// the faulty op of a failed case.
fn shared_failing_prompt(t: &TraceParts<'_>, a: &Args) -> Result<Vec<Vec<Value>>> {
    let min_ops = a.count("min_ops").max(1);
    let categories = a.words("categories");
    let findings = t.findings()?;
    let ops = t.ops()?;
    let graph = t.graph()?;
    let catalog = t.catalog()?;
    // Faulty op -> the cases that blame it.
    let mut faulty: BTreeMap<u32, usize> = BTreeMap::new();
    for f in &findings.findings {
        if f.error_type.is_none() {
            continue;
        }
        if let Some(op) = f.op_id.as_deref().and_then(|id| ops.op_by_id(id)) {
            *faulty.entry(op).or_default() += 1;
        }
    }
    // Prompt version -> the faulty ops that read it, and their cases.
    let mut readers: BTreeMap<u32, (Vec<u32>, usize)> = BTreeMap::new();
    for (&op, &cases) in &faulty {
        let mut seen: Vec<u32> = Vec::new();
        for &e in graph.op_edges(op) {
            let Some(source) = graph.source(e) else {
                continue;
            };
            let is_prompt = catalog.variable(source).is_some_and(|v| {
                v.category
                    .as_deref()
                    .is_some_and(|c| categories.iter().any(|k| k == c))
            });
            if is_prompt && !seen.contains(&source) {
                seen.push(source);
                let entry = readers.entry(source).or_default();
                entry.0.push(op);
                entry.1 += cases;
            }
        }
    }
    let mut out = Vec::new();
    for (prompt, (readers, cases)) in readers {
        if (readers.len() as u64) < min_ops {
            continue;
        }
        let Some(v) = catalog.variable(prompt) else {
            continue;
        };
        let mut ids = Vec::with_capacity(readers.len());
        for op in &readers {
            ids.push(t.op_id(*op)?.0);
        }
        out.push(vec![
            Value::Str(v.full_node_id()),
            int(readers.len() as u64),
            int(cases as u64),
            Value::List(ids),
        ]);
    }
    Ok(out)
}

const CONFIDENCE: &[Param] = &[Param {
    name: "min_confidence",
    default: Default::Number(0.0),
    doc: "only verdicts at least this confident (0 to 1)",
}];

const CASE_COLUMNS: &[&str] = &["case", "query", "op_id", "op_name", "confidence", "reason"];

/// Every built-in pattern, in the order they are listed and run.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "evidence_never_stored",
        error_type: Some(ErrorType::ExtractionError),
        summary: "a failed case whose evidence never entered any memory unit: the extraction \
                  op that read it kept nothing of it (ExtractionError)",
        params: CONFIDENCE,
        columns: CASE_COLUMNS,
        run: extraction,
    },
    Builtin {
        name: "stored_then_overwritten",
        error_type: Some(ErrorType::UpdateError),
        summary: "a failed case whose evidence was stored in a unit, then lost or degraded by a \
                  later update of that unit (UpdateError)",
        params: CONFIDENCE,
        columns: CASE_COLUMNS,
        run: update,
    },
    Builtin {
        name: "evidence_deleted",
        error_type: Some(ErrorType::DeletionError),
        summary: "a failed case whose evidence was stored, then its unit explicitly deleted \
                  (DeletionError)",
        params: CONFIDENCE,
        columns: CASE_COLUMNS,
        run: deletion,
    },
    Builtin {
        name: "stored_not_retrieved",
        error_type: Some(ErrorType::RetrievalError),
        summary: "a failed case whose evidence was in memory when the question came, but the \
                  retrieval left it out of the context (RetrievalError)",
        params: CONFIDENCE,
        columns: CASE_COLUMNS,
        run: retrieval,
    },
    Builtin {
        name: "retrieved_answered_wrong",
        error_type: Some(ErrorType::ResponseError),
        summary: "a failed case whose context held the evidence, and the answering op still \
                  answered wrong (ResponseError)",
        params: CONFIDENCE,
        columns: CASE_COLUMNS,
        run: response,
    },
    Builtin {
        name: "noop_update",
        error_type: None,
        summary: "an update that changes nothing: a version, written by an op of the given \
                  kinds, whose value is exactly the previous version's",
        params: &[Param {
            name: "kinds",
            default: Default::Words(&["update"]),
            doc: "op categories that count as updates ([] for every op)",
        }],
        columns: &["op_id", "op_name", "var", "previous", "bytes"],
        run: noop_update,
    },
    Builtin {
        name: "empty_retrieval",
        error_type: None,
        summary: "a retrieval that returned nothing: an op of the given kinds whose every \
                  output is empty ('', [], {}, None, null)",
        params: &[Param {
            name: "kinds",
            default: Default::Words(&["retrieval"]),
            doc: "op categories that count as retrievals",
        }],
        columns: &["op_id", "op_name", "output", "value"],
        run: empty_retrieval,
    },
    Builtin {
        name: "unbounded_growth",
        error_type: None,
        summary: "a memory unit that grows without bound: at least $min_versions versions, \
                  never shorter than the version before, the last at least $factor times the \
                  first",
        params: &[
            Param {
                name: "min_versions",
                default: Default::Count(20),
                doc: "versions a unit needs before it counts",
            },
            Param {
                name: "factor",
                default: Default::Number(4.0),
                doc: "how many times its first size the last version must be",
            },
            Param {
                name: "categories",
                default: Default::Words(&[]),
                doc: "variable categories to look at ([] for every category)",
            },
        ],
        columns: &["unit", "versions", "first_bytes", "last_bytes"],
        run: unbounded_growth,
    },
    Builtin {
        name: "shared_failing_prompt",
        error_type: None,
        summary: "a prompt read by at least $min_ops distinct ops that the evidence flow names \
                  as the faulty op of a failed case",
        params: &[
            Param {
                name: "min_ops",
                default: Default::Count(2),
                doc: "distinct faulty ops that must read the prompt",
            },
            Param {
                name: "categories",
                default: Default::Words(&["prompt"]),
                doc: "variable categories that are prompts",
            },
        ],
        columns: &["prompt", "failing_ops", "cases", "ops"],
        run: shared_failing_prompt,
    },
];

/// The built-in pattern of that name.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}
