//! What an attribution is asked for, and what an evidence search's recall
//! check reports.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::attrib::dense::Search;
use crate::attrib::evidence::Recall;
use crate::attrib::setting::Setting;
use crate::attrib::verdict::Method;

/// What to attribute.
#[derive(Debug, Clone, Copy)]
pub struct AttributeRequest<'a> {
    /// One trace (graph id or `#ID`), or every trace.
    pub trace: Option<&'a str>,
    /// Case references (the query's full name or full node id, the case
    /// name, or a judge op id), or every failed case.
    pub cases: Option<&'a [String]>,
    /// The method.
    pub method: Method,
    /// What each case shows the method: [`Setting::Benchmark`] uses all it
    /// holds; the others hide its annotated evidence, or that and its gold
    /// answer, as if they had never been recorded.
    pub setting: Setting,
    /// How a case without source evidence has its evidence searched for:
    /// BM25 (the default, needing nothing), or with an embeddings endpoint.
    pub search: Search,
}

/// Recall@k of pseudo-evidence, over all traces and per memory system.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecallReport {
    /// Messages pseudo-evidence takes per case.
    pub k: usize,
    /// How the messages were searched for.
    pub search: Search,
    /// Over every trace.
    pub total: Recall,
    /// Per memory system (`project_id`; `-` when a trace has none).
    pub by_system: BTreeMap<String, Recall>,
}
