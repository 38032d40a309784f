//! The analyses' traits on the facade's [`Database`], each method handed to
//! the engine underneath, so `use memtrace::prelude::*` works on it.

use memtrace_analysis::attrib::eval::Evaluation;
use memtrace_analysis::attrib::{
    AttributeRequest, CaseContext, CasePick, Cost, FailedCase, Feedback, HumanVerdict, LabelInput,
    Method, RecallReport, RunProgress, Search, Setting, StoredVerdict, Verdict,
};
use memtrace_analysis::patterns::{
    PatternEvent, PatternInfo, PatternReport, PatternSpec, RunOptions,
};
use memtrace_analysis::prelude::{
    Advise, Attribute, Evaluate, Labels, LlmSettings, Patterns, Reports,
};
use memtrace_analysis::report::Report;
use memtrace_analysis::Result;
use memtrace_engine::query::Value;
use memtrace_engine::Cancel;

use crate::database::Database;

impl Attribute for Database {
    fn failed_cases(&self, trace: Option<&str>) -> Result<Vec<FailedCase>> {
        self.engine().failed_cases(trace)
    }

    fn evidence_recall(&self, k: usize, search: Search) -> Result<RecallReport> {
        self.engine().evidence_recall(k, search)
    }

    fn attribute(
        &self,
        req: &AttributeRequest<'_>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Vec<Verdict>> {
        self.engine().attribute(req, cancel, progress)
    }

    fn attribute_picked(
        &self,
        picks: &[CasePick],
        method: Method,
        setting: Setting,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Vec<Verdict>> {
        self.engine()
            .attribute_picked(picks, method, setting, cancel, progress)
    }

    fn store_verdicts(&self, verdicts: &[Verdict], author: &str) -> Result<usize> {
        self.engine().store_verdicts(verdicts, author)
    }

    fn attributions(&self, trace: Option<&str>) -> Result<Vec<StoredVerdict>> {
        self.engine().attributions(trace)
    }
}

impl Evaluate for Database {
    fn evaluate(
        &self,
        method: Method,
        trace: Option<&str>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Evaluation> {
        self.engine().evaluate(method, trace, cancel, progress)
    }

    fn evaluate_request(
        &self,
        req: &AttributeRequest<'_>,
        cancel: &Cancel,
        progress: &mut dyn FnMut(&RunProgress),
    ) -> Result<Evaluation> {
        self.engine().evaluate_request(req, cancel, progress)
    }
}

impl Advise for Database {
    fn write_summaries(&self, report: &mut Report, cancel: &Cancel) -> Result<Cost> {
        self.engine().write_summaries(report, cancel)
    }

    fn prompt_feedback(
        &self,
        method: Method,
        trace: Option<&str>,
        max_examples: usize,
        cancel: &Cancel,
    ) -> Result<Feedback> {
        self.engine()
            .prompt_feedback(method, trace, max_examples, cancel)
    }
}

impl Labels for Database {
    fn failed_case(&self, trace: &str, reference: &str) -> Result<CaseContext<'_>> {
        self.engine().failed_case(trace, reference)
    }

    fn add_label(&self, trace: &str, case: &str, input: &LabelInput<'_>) -> Result<HumanVerdict> {
        self.engine().add_label(trace, case, input)
    }

    fn labels(&self, trace: Option<&str>) -> Result<Vec<HumanVerdict>> {
        self.engine().labels(trace)
    }

    fn label_annotations(&self, trace: &str) -> Result<Vec<serde_json::Value>> {
        self.engine().label_annotations(trace)
    }

    fn case_annotations(&self, trace: &str) -> Result<Vec<serde_json::Value>> {
        self.engine().case_annotations(trace)
    }

    fn export_labelled(&self, trace: &str) -> Result<serde_json::Value> {
        self.engine().export_labelled(trace)
    }
}

impl Patterns for Database {
    fn patterns(&self) -> Result<Vec<PatternInfo>> {
        self.engine().patterns()
    }

    fn pattern_history(&self, name: &str) -> Result<Vec<PatternEvent>> {
        self.engine().pattern_history(name)
    }

    fn save_pattern(
        &self,
        name: &str,
        statement: &str,
        params: &[(String, Value)],
        author: &str,
    ) -> Result<u64> {
        self.engine().save_pattern(name, statement, params, author)
    }

    fn drop_pattern(&self, name: &str, author: &str) -> Result<()> {
        self.engine().drop_pattern(name, author)
    }

    fn run_patterns(
        &self,
        specs: &[PatternSpec],
        opts: &RunOptions,
        cancel: &Cancel,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<PatternReport> {
        self.engine().run_patterns(specs, opts, cancel, progress)
    }
}

impl Reports for Database {
    fn report(&self, method: Method, trace: Option<&str>) -> Result<Report> {
        self.engine().report(method, trace)
    }
}

impl LlmSettings for Database {
    fn set_llm_config(&self, config: memtrace_analysis::llm::Config) {
        self.engine().set_llm_config(config)
    }

    fn llm_config(&self) -> Result<memtrace_analysis::llm::Config> {
        self.engine().llm_config()
    }

    fn set_embeddings_config(&self, config: Option<memtrace_analysis::llm::Config>) {
        self.engine().set_embeddings_config(config)
    }

    fn embeddings_config(&self) -> Result<Option<memtrace_analysis::llm::Config>> {
        self.engine().embeddings_config()
    }
}
