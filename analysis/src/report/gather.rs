//! Gathering a report from the database: each failed case with the latest
//! stored verdict of the method and its label, tallied per memory system
//! and overall.

use std::collections::{BTreeMap, HashMap};

use super::types::{
    ratio, Accuracy, AnnotatedCause, Example, OpCount, Pattern, Report, Summary, TypeCount,
    MAX_EXAMPLES, MAX_OPS, MAX_PATTERNS, NO_OP, NO_SYSTEM, UNNAMED_OP,
};
use crate::attrib::case::{self, FailedCase};
use crate::attrib::{stored_verdicts, CaseOrigin};
use crate::attrib::{ErrorType, Method, StoredVerdict, TraceModel, Verdict};
use crate::error::Result;
use memtrace_engine::Case;
use memtrace_engine::Engine;
use memtrace_engine::{now_ms, EngineError, StorageError, TraceId};

fn nonempty(s: &Option<String>) -> Option<String> {
    s.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The label of a case: its own annotation, or else the annotation whose
/// `query_id` resolves to the case's query.
fn label_for(
    model: &TraceModel,
    annotations: &[Case],
    case: &FailedCase,
) -> Option<AnnotatedCause> {
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
    let label = AnnotatedCause {
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
    label: Option<AnnotatedCause>,
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

/// Diagnostic reports of attribution over the traces.
pub trait Reports {
    /// A diagnostic report of `method`'s verdicts over the failed cases of
    /// one trace (graph id or `#ID`), or of every trace.
    ///
    /// Each failed case counts with the latest verdict `method` stored for
    /// it, or as not attributed when there is none; cases the trace's
    /// annotations label are scored against their labels.
    fn report(&self, method: Method, trace: Option<&str>) -> Result<Report>;
}

impl Reports for Engine {
    fn report(&self, method: Method, trace: Option<&str>) -> Result<Report> {
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
                Err(EngineError::Storage(StorageError::NoSuchTrace(_))) => continue,
                Err(e) => return Err(e.into()),
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
            let latest = latest_verdicts(stored_verdicts(self, id)?, id, method);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_support::{fixture, verdict, XSS};
    use crate::AnalysisError;
    use memtrace_engine::EngineError;

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
            Err(AnalysisError::Engine(EngineError::UnknownTrace(_)))
        ));
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
}
