//! Scoring an attribution method against labelled cases: error-type
//! accuracy, op-id exact match, per system, per generator style (traces of
//! `memtrace gen --style`) and per true error type, a confusion matrix, and
//! time per case.

use std::collections::BTreeMap;

use serde::Serialize;

use super::attribute::{attribute_with, AttributeRequest};
use super::setting::Setting;
use super::traces::views;
use super::verdict::{Cost, ErrorType, Method, RunProgress, Verdict};
use crate::error::Result;
use memtrace_engine::Cancel;
use memtrace_engine::Engine;

/// Counts and accuracies over a group of labelled cases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Score {
    /// Labelled cases in the group.
    pub cases: usize,
    /// Of those, how many got the right error type.
    pub error_type_correct: usize,
    /// Of those, how many named the labelled op exactly.
    pub op_id_correct: usize,
    /// Cases that got no verdict.
    pub no_verdict: usize,
    /// `error_type_correct / cases` (0 when there are none).
    pub error_type_accuracy: f64,
    /// `op_id_correct / cases` (0 when there are none).
    pub op_id_accuracy: f64,
}

impl Score {
    fn add(&mut self, type_ok: bool, op_ok: bool, none: bool) {
        self.cases += 1;
        self.error_type_correct += usize::from(type_ok);
        self.op_id_correct += usize::from(op_ok);
        self.no_verdict += usize::from(none);
        let n = self.cases as f64;
        self.error_type_accuracy = self.error_type_correct as f64 / n;
        self.op_id_accuracy = self.op_id_correct as f64 / n;
    }
}

/// A labelled case the method got wrong.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Miss {
    /// The trace's graph id.
    pub trace: String,
    /// The case.
    pub case: String,
    /// The question.
    pub query: String,
    /// The label.
    pub true_error_type: String,
    /// The labelled op and its name.
    pub true_op: String,
    /// The verdict's type (`-` for none).
    pub error_type: String,
    /// The verdict's op and its name.
    pub op: String,
    /// The verdict's reason.
    pub reason: String,
}

/// The confidence at or above which a verdict is called confident.
pub const CONFIDENT: f64 = 0.8;

/// The confidence bands [`Calibration::bands`] reports, highest first.
pub const BANDS: [f64; 6] = [0.9, 0.8, 0.7, 0.6, 0.5, 0.0];

/// The verdicts at or above one confidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Band {
    /// The lowest confidence in the band.
    pub at_least: f64,
    /// Labelled cases whose verdict has that confidence or more.
    pub cases: usize,
    /// Their share of all labelled cases.
    pub coverage: f64,
    /// Share of them naming the labelled op.
    pub op_id_accuracy: f64,
    /// Share of them with the labelled error type.
    pub error_type_accuracy: f64,
}

/// The most confident verdicts, as a share of all.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CoveragePoint {
    /// Share of labelled cases taken, most confident first.
    pub coverage: f64,
    /// How many cases that is.
    pub cases: usize,
    /// The confidence of the last case taken.
    pub min_confidence: f64,
    /// Share of the cases taken naming the labelled op.
    pub op_id_accuracy: f64,
    /// Share of the cases taken with the labelled error type.
    pub error_type_accuracy: f64,
}

/// Whether confidence means what it says: accuracy against coverage, and
/// per confidence band.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Calibration {
    /// Verdicts sorted by confidence, highest first, cut at each tenth of
    /// the labelled cases.
    pub coverage: Vec<CoveragePoint>,
    /// The verdicts at or above each of [`BANDS`].
    pub bands: Vec<Band>,
    /// The confident verdicts (confidence at or above [`CONFIDENT`]).
    pub confident: Band,
}

impl Calibration {
    /// Calibration of (confidence, op right, type right) per labelled case.
    pub fn of(mut scored: Vec<(f64, bool, bool)>) -> Calibration {
        let n = scored.len();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let share = |k: usize, d: usize| if d == 0 { 0.0 } else { k as f64 / d as f64 };
        let band = |at_least: f64| {
            let taken: Vec<&(f64, bool, bool)> =
                scored.iter().filter(|x| x.0 >= at_least - 1e-9).collect();
            Band {
                at_least,
                cases: taken.len(),
                coverage: share(taken.len(), n),
                op_id_accuracy: share(taken.iter().filter(|x| x.1).count(), taken.len()),
                error_type_accuracy: share(taken.iter().filter(|x| x.2).count(), taken.len()),
            }
        };
        let coverage = (1..=10)
            .filter_map(|tenth| {
                let k = (n * tenth).div_ceil(10);
                let taken = &scored[..k];
                let last = taken.last()?;
                Some(CoveragePoint {
                    coverage: share(k, n),
                    cases: k,
                    min_confidence: last.0,
                    op_id_accuracy: share(taken.iter().filter(|x| x.1).count(), k),
                    error_type_accuracy: share(taken.iter().filter(|x| x.2).count(), k),
                })
            })
            .collect();
        Calibration {
            coverage,
            bands: BANDS.iter().map(|&b| band(b)).collect(),
            confident: band(CONFIDENT),
        }
    }
}

/// How a method scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The method.
    pub method: String,
    /// Its version.
    pub version: String,
    /// What each case showed the method.
    pub setting: Setting,
    /// Labelled cases scored.
    pub cases: usize,
    /// Failed cases without a label (attributed, not scored).
    pub unlabelled: usize,
    /// Share of labelled cases with the right error type.
    pub error_type_accuracy: f64,
    /// Share of labelled cases naming the labelled op exactly.
    pub op_id_accuracy: f64,
    /// The whole score.
    pub total: Score,
    /// Per memory system (the trace's `project_id`).
    pub by_system: BTreeMap<String, Score>,
    /// Per generator style (`metadata.gen_style`), when some trace has one;
    /// generated traces without one are `classic`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_style: BTreeMap<String, Score>,
    /// Per generator style and memory system, keyed `style/system`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_style_system: BTreeMap<String, Score>,
    /// Per true error type.
    pub by_error_type: BTreeMap<String, Score>,
    /// true error type -> verdict's error type (`-` for none) -> cases.
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
    /// Median microseconds per case.
    pub median_micros: u64,
    /// Mean microseconds per case.
    pub mean_micros: f64,
    /// 95th percentile of microseconds per case.
    pub p95_micros: u64,
    /// Up to 50 misses, for a look at where the method fails.
    pub misses: Vec<Miss>,
    /// Accuracy against confidence.
    pub calibration: Calibration,
    /// LLM methods: the cost of every verdict (labelled or not) summed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// LLM methods: the mean cost per attributed case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_case: Option<Cost>,
    /// LLM methods: the summed cost per memory system.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub cost_by_system: BTreeMap<String, Cost>,
}

/// A case's label: error type and op id.
type ExpectedVerdict = (String, String);

/// Scores attribution against the labels that traces carry.
pub trait Evaluate {
    /// Runs `method` over the failed cases (of one trace or all) and scores
    /// its verdicts against the cases' labels (`final_error_type`,
    /// `final_op_id`). Nothing is stored. `progress` hears a
    /// [`RunProgress`] as attribution's does.
    fn evaluate(
        &self,
        method: Method,
        trace: Option<&str>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Evaluation>;

    /// As [`Engine::evaluate`], for the cases, method, setting and
    /// evidence search a request names: each case shows the method only
    /// what the setting lets it see (its annotated evidence hidden in the
    /// evaluation setting, and its gold answer too in production).
    fn evaluate_request(
        &self,
        req: &AttributeRequest<'_>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Evaluation>;

    /// One evaluation of `req` per setting, in the order given, over the
    /// same cases (the request's own setting is not used).
    fn evaluate_settings(
        &self,
        req: &AttributeRequest<'_>,
        settings: &[Setting],
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Vec<Evaluation>> {
        settings
            .iter()
            .map(|&setting| {
                self.evaluate_request(&AttributeRequest { setting, ..*req }, cancel, progress)
            })
            .collect()
    }
}

impl Evaluate for Engine {
    fn evaluate(
        &self,
        method: Method,
        trace: Option<&str>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Evaluation> {
        let req = AttributeRequest {
            trace,
            cases: None,
            method,
            setting: Setting::Benchmark,
            search: Default::default(),
        };
        self.evaluate_request(&req, cancel, progress)
    }

    fn evaluate_request(
        &self,
        req: &AttributeRequest<'_>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Evaluation> {
        let (method, setting, trace) = (req.method, req.setting, req.trace);
        let verdicts = attribute_with(self, req, cancel, progress)?;
        let mut labels: BTreeMap<(u32, String), ExpectedVerdict> = BTreeMap::new();
        let views = views(self, trace)?;
        let styles = styles(
            views
                .iter()
                .map(|v| (v.id(), v.record().header_json.as_str())),
        );
        for view in views {
            for c in view.cases()? {
                if let (Some(q), Some(t), Some(o)) = (c.query_id, c.final_error_type, c.final_op_id)
                {
                    labels.insert((view.id(), q), (t, o));
                }
            }
        }
        Ok(score(
            method,
            setting,
            &verdicts,
            &labels,
            &styles,
            |trace, op| op_name_of(self, trace, op),
        ))
    }
}

fn op_name_of(db: &Engine, trace: u32, op_id: &str) -> String {
    db.trace_by_id(trace)
        .ok()
        .and_then(|v| v.op(op_id).ok().flatten())
        .and_then(|o| o.op_name)
        .unwrap_or_default()
}

/// The generator style of each trace (by id), from the traces' top-level
/// JSON: `metadata.gen_style`, or `classic` for a trace that `memtrace gen`
/// wrote without one. Empty when no trace names a style, so that sets made
/// before styles existed are reported as they were.
fn styles<'a>(traces: impl Iterator<Item = (u32, &'a str)>) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    let mut named = false;
    for (id, header) in traces {
        let Ok(h) = serde_json::from_str::<serde_json::Value>(header) else {
            continue;
        };
        let meta = &h["metadata"];
        if let Some(s) = meta["gen_style"].as_str() {
            named = true;
            out.insert(id, s.to_string());
        } else if meta["generator"]["name"] == "memtrace gen" {
            out.insert(id, "classic".to_string());
        }
    }
    if !named {
        out.clear();
    }
    out
}

/// Scores verdicts against labels keyed by (trace, case), with the traces'
/// generator styles; `op_name` names a labelled op (trace, op id) for the
/// misses.
fn score(
    method: Method,
    setting: Setting,
    verdicts: &[Verdict],
    labels: &BTreeMap<(u32, String), ExpectedVerdict>,
    styles: &BTreeMap<u32, String>,
    op_name: impl Fn(u32, &str) -> String,
) -> Evaluation {
    let mut total = Score::default();
    let mut by_system: BTreeMap<String, Score> = BTreeMap::new();
    let mut by_style: BTreeMap<String, Score> = BTreeMap::new();
    let mut by_style_system: BTreeMap<String, Score> = BTreeMap::new();
    let mut by_error_type: BTreeMap<String, Score> = BTreeMap::new();
    let mut confusion: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut unlabelled = 0;
    let mut scored: Vec<(f64, bool, bool)> = Vec::new();
    for v in verdicts {
        let Some((true_type, true_op)) = labels.get(&(v.trace, v.case.clone())) else {
            unlabelled += 1;
            continue;
        };
        let got = v
            .error_type
            .map_or("-".to_string(), |t| t.name().to_string());
        let type_ok = &got == true_type
            || true_type
                .parse::<ErrorType>()
                .is_ok_and(|t| Some(t) == v.error_type);
        let op_ok = v.op_id.as_deref() == Some(true_op.as_str());
        let none = v.error_type.is_none();
        total.add(type_ok, op_ok, none);
        scored.push((if none { 0.0 } else { v.confidence }, op_ok, type_ok));
        let system = v.system.clone().unwrap_or_else(|| "-".into());
        if let Some(style) = styles.get(&v.trace) {
            by_style
                .entry(style.clone())
                .or_default()
                .add(type_ok, op_ok, none);
            by_style_system
                .entry(format!("{style}/{system}"))
                .or_default()
                .add(type_ok, op_ok, none);
        }
        by_system
            .entry(system)
            .or_default()
            .add(type_ok, op_ok, none);
        by_error_type
            .entry(true_type.clone())
            .or_default()
            .add(type_ok, op_ok, none);
        *confusion
            .entry(true_type.clone())
            .or_default()
            .entry(got.clone())
            .or_default() += 1;
        if (!type_ok || !op_ok) && misses.len() < 50 {
            misses.push(miss(v, true_type, true_op, got, &op_name));
        }
    }
    let (median_micros, mean_micros, p95_micros) = case_times(verdicts);
    let (cost, cost_per_case) = costs(verdicts);
    let cost_by_system = cost_by_system(verdicts);
    Evaluation {
        method: method.name().into(),
        version: method.version().into(),
        setting,
        cases: total.cases,
        unlabelled,
        error_type_accuracy: total.error_type_accuracy,
        op_id_accuracy: total.op_id_accuracy,
        total,
        by_system,
        by_style,
        by_style_system,
        by_error_type,
        confusion,
        median_micros,
        mean_micros,
        p95_micros,
        misses,
        calibration: Calibration::of(scored),
        cost,
        cost_per_case,
        cost_by_system,
    }
}

/// A wrong verdict as the evaluation lists it, beside the label it missed.
fn miss(
    v: &Verdict,
    true_type: &str,
    true_op: &str,
    got: String,
    op_name: impl Fn(u32, &str) -> String,
) -> Miss {
    Miss {
        trace: v.graph_id.clone(),
        case: v.case.clone(),
        query: v.query.clone(),
        true_error_type: true_type.to_string(),
        true_op: format!("{true_op} ({})", op_name(v.trace, true_op)),
        error_type: got,
        op: format!(
            "{} ({})",
            v.op_id.as_deref().unwrap_or("-"),
            v.op_name.as_deref().unwrap_or("-")
        ),
        reason: v.reason.clone(),
    }
}

/// The median, mean and 95th percentile of the time per case, in
/// microseconds (all 0 when there are no verdicts).
fn case_times(verdicts: &[Verdict]) -> (u64, f64, u64) {
    let mut micros: Vec<u64> = verdicts.iter().map(|v| v.micros).collect();
    micros.sort_unstable();
    let median_micros = if micros.is_empty() {
        0
    } else {
        micros[micros.len() / 2]
    };
    let p95_micros = if micros.is_empty() {
        0
    } else {
        micros[((micros.len() - 1) as f64 * 0.95).round() as usize]
    };
    let mean_micros = if micros.is_empty() {
        0.0
    } else {
        micros.iter().sum::<u64>() as f64 / micros.len() as f64
    };
    (median_micros, mean_micros, p95_micros)
}

/// The summed cost of the verdicts of each memory system.
fn cost_by_system(verdicts: &[Verdict]) -> BTreeMap<String, Cost> {
    let mut by_system: BTreeMap<String, Cost> = BTreeMap::new();
    for v in verdicts {
        if let Some(c) = &v.cost {
            let system = v.system.clone().unwrap_or_else(|| "-".into());
            by_system.entry(system).or_default().add(c);
        }
    }
    by_system
}

/// The summed cost of the verdicts that have one, and its mean per verdict.
fn costs(verdicts: &[Verdict]) -> (Option<Cost>, Option<Cost>) {
    let with: Vec<&Cost> = verdicts.iter().filter_map(|v| v.cost.as_ref()).collect();
    if with.is_empty() {
        return (None, None);
    }
    let mut sum = Cost::default();
    for c in &with {
        sum.add(c);
    }
    let n = with.len() as f64;
    let per = Cost {
        calls: (f64::from(sum.calls) / n).round() as u32,
        cached_calls: (f64::from(sum.cached_calls) / n).round() as u32,
        tokens_in: (sum.tokens_in as f64 / n).round() as u64,
        tokens_out: (sum.tokens_out as f64 / n).round() as u64,
        estimated: sum.estimated,
        seconds: (sum.seconds / n * 1000.0).round() / 1000.0,
    };
    sum.seconds = (sum.seconds * 1000.0).round() / 1000.0;
    (Some(sum), Some(per))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(case: &str, system: &str, t: Option<ErrorType>, op: &str, micros: u64) -> Verdict {
        Verdict {
            trace: 1,
            graph_id: "g".into(),
            system: Some(system.into()),
            case: case.into(),
            query: "q".into(),
            error_type: t,
            op_id: t.map(|_| op.to_string()),
            op_name: None,
            confidence: 0.9,
            reason: "r".into(),
            chain: Vec::new(),
            method: "evidence".into(),
            version: "1".into(),
            micros,
            model: None,
            cost: None,
            setting: None,
        }
    }

    #[test]
    fn scores_count_types_ops_systems_confusion_and_time() {
        let label = |t: &str, o: &str| (t.to_string(), o.to_string());
        let labels: BTreeMap<(u32, String), ExpectedVerdict> = [
            ((1, "a".to_string()), label("UpdateError", "op-1")),
            ((1, "b".to_string()), label("UpdateError", "op-2")),
            ((1, "c".to_string()), label("RetrievalError", "op-3")),
            ((1, "d".to_string()), label("ResponseError", "op-4")),
        ]
        .into_iter()
        .collect();
        let verdicts = vec![
            verdict("a", "mem0", Some(ErrorType::UpdateError), "op-1", 10),
            verdict("b", "mem0", Some(ErrorType::UpdateError), "op-9", 20),
            verdict("c", "rag", Some(ErrorType::ResponseError), "op-4", 30),
            verdict("d", "rag", None, "", 40),
            verdict("e", "rag", Some(ErrorType::ResponseError), "op-5", 50),
        ];
        let e = score(
            Method::Evidence,
            Setting::Benchmark,
            &verdicts,
            &labels,
            &BTreeMap::new(),
            |_, _| String::new(),
        );
        assert_eq!((e.cases, e.unlabelled), (4, 1));
        assert_eq!(e.total.error_type_correct, 2);
        assert_eq!(e.total.op_id_correct, 1);
        assert_eq!(e.total.no_verdict, 1);
        assert_eq!(e.error_type_accuracy, 0.5);
        assert_eq!(e.op_id_accuracy, 0.25);
        assert_eq!(e.by_system["mem0"].error_type_correct, 2);
        assert_eq!(e.by_system["rag"].cases, 2);
        assert_eq!(e.by_error_type["UpdateError"].op_id_correct, 1);
        assert_eq!(e.confusion["RetrievalError"]["ResponseError"], 1);
        assert_eq!(e.confusion["ResponseError"]["-"], 1);
        assert_eq!(e.median_micros, 30);
        assert_eq!(e.misses.len(), 3);
        assert!(e.by_style.is_empty(), "no trace has a style");

        let styles: BTreeMap<u32, String> = [(1, "membase".to_string())].into_iter().collect();
        let e = score(
            Method::Evidence,
            Setting::Benchmark,
            &verdicts,
            &labels,
            &styles,
            |_, _| String::new(),
        );
        assert_eq!(e.by_style["membase"].cases, 4);
        assert_eq!(e.by_style["membase"].error_type_correct, 2);
        assert_eq!(e.by_style_system["membase/rag"].cases, 2);
    }

    #[test]
    fn styles_come_from_the_trace_metadata() {
        let styled =
            r#"{"metadata": {"gen_style": "narrative", "generator": {"name": "memtrace gen"}}}"#;
        let classic = r#"{"metadata": {"generator": {"name": "memtrace gen"}}}"#;
        let other = r#"{"metadata": {"layer_type": "Mem0"}}"#;
        let s = styles([(1, styled), (2, classic), (3, other)].into_iter());
        assert_eq!(s.get(&1).map(String::as_str), Some("narrative"));
        assert_eq!(s.get(&2).map(String::as_str), Some("classic"));
        assert_eq!(s.get(&3), None);
        // Without any style named, sets are reported as before.
        assert!(styles([(2, classic), (3, other)].into_iter()).is_empty());
    }
}
