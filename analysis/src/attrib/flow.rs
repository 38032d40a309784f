//! The evidence-flow attributor: follows each needed evidence item forward
//! from its message through the ops that carried it, finds where it was
//! lost, and names the earliest decisive faulty op with its error type.
//!
//! What it assumes, and nothing else: op categories as MemBase records them
//! (`extraction`, `update`, `retrieval`, `evaluation`), `memory_entry`
//! variables or variables a retrieval op reads or returns as memory units,
//! versions of one variable as its successive states, and text. No system,
//! op name or class name is assumed.
//!
//! 1. The item of each evidence message is the sentence(s) the question and
//!    gold answer point to ([`Matcher::item`]); a variable *holds* it when a
//!    local window of one of its string leaves covers most of its stems.
//! 2. Carriers: from the message, every variable that a construction op
//!    made from a carrier and that holds the item. A memory unit stays alive
//!    until a newer version replaces it or it is deleted; any other carrier
//!    until its last reader. The op after which no carrier is alive lost it:
//!    `DeletionError` when it deleted the last unit, `ExtractionError` when
//!    it is an extraction op or no memory unit ever held the item,
//!    `UpdateError` when a unit had held it (or an update op dropped what an
//!    extraction op had passed on).
//! 3. At question time: the retrieved set is what the retrieval ops that
//!    read the query return. An item held by a live unit that no retrieved
//!    variable holds is a `RetrievalError` of that retrieval op; retrieved
//!    but missing from the context the answering op read, a
//!    `RetrievalError` of the op that built that context. With every item
//!    in the context, the answering op is at fault (`ResponseError`).
//! 4. The earliest failure point over all items, in execution order, is
//!    the verdict.

use std::collections::HashMap;

use petgraph::algo::astar;
use petgraph::algo::dominators::simple_fast;
use petgraph::graph::{DiGraph, NodeIndex};

use super::case::FailedCase;
use super::choose::says_no_answer;
use super::evidence::{Evidence, EvidenceOrigin};
use super::holds::{Item, Matcher, DATED_OVERLAP, VALUE_OVERLAP};
use super::model::TraceModel;
use super::pyvalue::unrepr;
use super::text::{is_content, is_date_token, tokens};
use super::verdict::{ErrorType, Step};

/// How many steps of a chain a verdict keeps at each end.
const CHAIN_ENDS: usize = 4;

/// The findings of the attributor on one case, before they become a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The error type.
    pub error_type: ErrorType,
    /// The faulty op (position in the trace model).
    pub op: usize,
    /// How sure, 0 to 1.
    pub confidence: f64,
    /// Why, in words.
    pub reason: String,
    /// The chain behind it.
    pub chain: Vec<Step>,
    /// The steps the attributor was unsure of, in words (what the trace
    /// lacked, where a match was weak); empty when every step was clear.
    pub doubts: Vec<String>,
    /// Every verdict the weighed evidence allows, most likely first (the
    /// verdict itself first).
    pub alternatives: Vec<Alternative>,
}

/// A verdict the evidence allows, and how likely it is given the weights
/// of the chosen evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    /// The op.
    pub op: usize,
    /// The error type.
    pub error_type: ErrorType,
    /// Its share of the evidence's weight, 0 to 1.
    pub probability: f64,
}

/// Why a carrier stopped being alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// It is alive at question time.
    Alive,
    /// An op made a newer version of it.
    Replaced(usize),
    /// An op deleted it.
    Deleted(usize),
    /// Its last reader (or its maker, when nothing read it).
    Consumed(usize),
}

impl End {
    fn at(self) -> Option<usize> {
        match self {
            End::Alive => None,
            End::Replaced(o) | End::Deleted(o) | End::Consumed(o) => Some(o),
        }
    }
}

#[derive(Debug, Clone)]
struct Carrier {
    var: usize,
    made: Option<usize>,
    end: End,
    store: bool,
}

/// How one item fared.
#[derive(Debug, Clone)]
struct ItemFlow {
    carriers: Vec<Carrier>,
    /// Carriers as nodes, each edge the op that passed the item on.
    graph: DiGraph<usize, usize>,
    /// The op after which no carrier was alive, and the carrier (index)
    /// that held the item last.
    death: Option<(usize, usize)>,
}

/// What following a case's evidence found.
struct Analysis {
    items: Vec<Item>,
    flows: Vec<ItemFlow>,
    failures: Vec<Failure>,
    answer: Option<usize>,
    contexts: Vec<(usize, usize)>,
    doubts: Vec<String>,
    pseudo: bool,
}

/// Where one item failed to reach the answer.
#[derive(Debug, Clone)]
struct Failure {
    op: usize,
    error_type: ErrorType,
    item: usize,
    reason: String,
    confidence: f64,
    last: Option<(usize, &'static str)>,
}

/// One trace prepared for attribution; shared by all its cases.
pub struct Flow<'m> {
    model: &'m TraceModel,
    matcher: Matcher<'m>,
    /// Per variable, its next newer version (the first one with a greater
    /// version number), if any.
    newer: Vec<Option<usize>>,
}

fn category(model: &TraceModel, op: usize) -> &str {
    model.ops[op].category.as_deref().unwrap_or("")
}

fn op_name(model: &TraceModel, op: usize) -> &str {
    model.ops[op].op_name.as_deref().unwrap_or("")
}

fn is_retrieval(model: &TraceModel, op: usize) -> bool {
    category(model, op).eq_ignore_ascii_case("retrieval")
}

/// Ops of the question phase: what they make does not keep evidence alive.
fn is_question_op(model: &TraceModel, op: usize) -> bool {
    let c = category(model, op);
    c.eq_ignore_ascii_case("retrieval") || c.eq_ignore_ascii_case("evaluation")
}

fn is_judge(model: &TraceModel, op: usize) -> bool {
    op_name(model, op).to_ascii_lowercase().contains("judge")
}

/// The op that made a variable: the first op that wrote it.
fn maker(model: &TraceModel, var: usize) -> Option<usize> {
    model.made_by(var).iter().copied().min()
}

/// The op that answered a case: it reads the query and writes the
/// prediction (not the judge, not a retrieval).
pub fn answer_op(m: &TraceModel, case: &FailedCase) -> Option<usize> {
    let query = case.query_node.as_deref().and_then(|q| m.var(q))?;
    let candidates: Vec<usize> = m
        .read_by(query)
        .iter()
        .copied()
        .filter(|&o| !is_judge(m, o) && !is_retrieval(m, o))
        .collect();
    candidates
        .iter()
        .copied()
        .find(|&o| {
            m.outputs(o)
                .iter()
                .any(|&v| m.class(v) == "prediction" || m.value(v).contains(&case.prediction))
        })
        .or_else(|| candidates.last().copied())
}

fn is_prompt(model: &TraceModel, var: usize) -> bool {
    model.vars[var].category.as_deref() == Some("prompt")
}

/// The parts of a gold answer that compares two people (`No: A vs B`,
/// `Yes, both: A`), else the answer as one part.
fn answer_parts(gold: &str) -> Vec<String> {
    let g = gold.trim();
    let lower = g.to_ascii_lowercase();
    let body = ["yes, both:", "no:", "yes:"]
        .iter()
        .find(|p| lower.starts_with(*p))
        .map_or(g, |p| g[p.len()..].trim());
    body.split(" vs ")
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether a question asks for the latest value of something that changed.
fn asks_for_latest(model: &TraceModel, case: &FailedCase) -> bool {
    let kind = case
        .query_node
        .as_deref()
        .and_then(|q| model.var(q))
        .and_then(|q| {
            model.vars[q]
                .metadata
                .get("question_kind")
                .and_then(|k| k.as_str())
                .map(str::to_ascii_lowercase)
        });
    match kind {
        Some(k) => k.contains("update"),
        None => case.query.trim_end().ends_with("(now)"),
    }
}

/// The last carrier of a flow that is a memory unit alive at question time
/// (the message itself when there is none): where its chain ends.
fn last_live(flow: &ItemFlow) -> usize {
    flow.carriers
        .iter()
        .rposition(|c| c.store && c.end == End::Alive)
        .unwrap_or(0)
}

/// The position of the first op that read a variable (its place in time).
fn first_read(model: &TraceModel, var: usize) -> usize {
    model.read_by(var).first().copied().unwrap_or(usize::MAX)
}

impl<'m> Flow<'m> {
    /// Prepares a trace.
    pub fn new(model: &'m TraceModel) -> Flow<'m> {
        let mut versions: HashMap<&str, Vec<(u32, usize)>> = HashMap::new();
        for (i, v) in model.vars.iter().enumerate() {
            versions
                .entry(v.full_name.as_str())
                .or_default()
                .push((v.version, i));
        }
        let mut newer = vec![None; model.vars.len()];
        for list in versions.values_mut() {
            list.sort_unstable();
            // One pass: `j` only moves forward.
            let mut j = 0;
            for i in 0..list.len() {
                j = j.max(i + 1);
                while j < list.len() && list[j].0 <= list[i].0 {
                    j += 1;
                }
                newer[list[i].1] = list.get(j).map(|&(_, var)| var);
            }
        }
        Flow {
            model,
            matcher: Matcher::new(model),
            newer,
        }
    }

    /// The trace's matcher: its learned message template and stems.
    pub fn matcher(&self) -> &Matcher<'m> {
        &self.matcher
    }

    /// The token stems of a text as (stem, is a date) pairs.
    fn stems_of(&self, text: &str) -> Vec<(u32, bool)> {
        let mut out: Vec<(u32, bool)> = Vec::new();
        for t in tokens(text) {
            if !is_content(&t) {
                continue;
            }
            let id = self.matcher.content(&t).first().copied();
            if let Some(id) = id {
                if !out.iter().any(|x| x.0 == id) {
                    out.push((id, is_date_token(&t)));
                }
            }
        }
        out
    }

    /// The evidence items a case needs. For a question about the latest
    /// value, only each speaker's latest message is needed.
    pub fn items(&self, case: &FailedCase, evidence: &Evidence) -> Vec<Item> {
        let model = self.model;
        let gold = case.gold.first().map(String::as_str).unwrap_or("");
        let parts = answer_parts(gold);
        let asked: Vec<u32> = self
            .stems_of(&format!("{} {}", case.query, case.gold.join(" ")))
            .into_iter()
            .map(|x| x.0)
            .collect();
        let query_stems = self.stems_of(&case.query);
        let mut messages: Vec<usize> = evidence.items.clone();
        messages.dedup();
        let weight_of = |m: usize| -> f64 {
            evidence
                .items
                .iter()
                .position(|&x| x == m)
                .and_then(|i| evidence.weights.get(i).copied())
                .unwrap_or(1.0)
        };
        let body_stems = |m: usize| -> Vec<u32> {
            self.matcher
                .body(m)
                .map(|b| self.matcher.content(&b.text))
                .unwrap_or_else(|| self.matcher.content(&unrepr(model.value(m))))
        };

        let speaker_of = |m: usize| -> Option<String> {
            self.matcher
                .body(m)
                .and_then(|b| b.speaker.as_deref())
                .and_then(|s| tokens(s).into_iter().next())
        };
        // Chosen evidence is weighed, not all needed: which of several
        // statements is the latest is left to the weights.
        if evidence.origin == EvidenceOrigin::Source
            && asks_for_latest(model, case)
            && messages.len() > 1
        {
            let mut latest: HashMap<Option<String>, usize> = HashMap::new();
            for &m in &messages {
                let key = speaker_of(m);
                let keep = latest
                    .get(&key)
                    .is_none_or(|&old| first_read(model, m) >= first_read(model, old));
                if keep {
                    latest.insert(key, m);
                }
            }
            messages.retain(|m| latest.values().any(|v| v == m));
        }
        // People in the order the question names them, for `A vs B` answers.
        let query_tokens = tokens(&case.query);
        let mut speakers: Vec<(usize, String)> = messages
            .iter()
            .filter_map(|&m| speaker_of(m))
            .filter_map(|s| query_tokens.iter().position(|t| *t == s).map(|at| (at, s)))
            .collect();
        speakers.sort();
        speakers.dedup_by(|a, b| a.1 == b.1);
        messages
            .iter()
            .filter_map(|&m| {
                let mut item = self.matcher.item(m, &asked)?;
                let who = speaker_of(m);
                let part = if parts.len() > 1 {
                    who.as_ref()
                        .and_then(|w| speakers.iter().position(|(_, s)| s == w))
                        .and_then(|i| parts.get(i))
                        .cloned()
                        .unwrap_or_else(|| gold.to_string())
                } else {
                    parts.first().cloned().unwrap_or_else(|| gold.to_string())
                };
                let mut value: Vec<(u32, bool)> = self
                    .stems_of(&part)
                    .into_iter()
                    .filter(|x| Some(x.0) != item.speaker)
                    .collect();
                if part.trim().is_empty() {
                    // Without a gold answer, the answer is what the sentence
                    // says beyond what the question asks.
                    value = self
                        .stems_of(&item.text)
                        .into_iter()
                        .filter(|x| {
                            Some(x.0) != item.speaker && !query_stems.iter().any(|q| q.0 == x.0)
                        })
                        .collect();
                }
                // Dates the question names pin the fact down.
                let mut must: Vec<u32> = query_stems.iter().filter(|x| x.1).map(|x| x.0).collect();
                let mut value_ids: Vec<u32> = value.iter().map(|x| x.0).collect();
                let mut threshold = VALUE_OVERLAP;
                if !value.is_empty() && value.iter().all(|x| x.1) {
                    // A date answers "when": it must be there, and the value
                    // is what the question and the message share (half of it
                    // will do, the date pinning the fact), else what the
                    // question says.
                    must.append(&mut value_ids);
                    let said = body_stems(m);
                    let asked_here: Vec<u32> = query_stems
                        .iter()
                        .filter(|x| !x.1 && Some(x.0) != item.speaker)
                        .map(|x| x.0)
                        .collect();
                    value_ids = asked_here
                        .iter()
                        .copied()
                        .filter(|s| said.contains(s))
                        .collect();
                    if value_ids.is_empty() {
                        value_ids = asked_here;
                    } else {
                        threshold = DATED_OVERLAP;
                    }
                }
                item.value = value_ids;
                item.must = must;
                item.asked = query_stems.iter().map(|x| x.0).collect();
                item.threshold = threshold;
                item.weight = weight_of(m);
                Some(item)
            })
            .collect()
    }

    /// Whether a variable's value holds an item.
    pub fn holds(&self, var: usize, item: &Item) -> bool {
        self.matcher.holds(var, item)
    }

    /// Whether a variable is a memory unit: it persists until replaced or
    /// deleted.
    fn is_store(&self, var: usize) -> bool {
        let m = self.model;
        if m.vars[var].category.as_deref() == Some("memory_entry") {
            return true;
        }
        if m.read_by(var).iter().any(|&o| is_retrieval(m, o)) {
            return true;
        }
        // A variable a retrieval op returns that an earlier op made.
        let made = maker(m, var);
        made.is_some_and(|o| !is_retrieval(m, o))
            && m.made_by(var).iter().any(|&o| is_retrieval(m, o))
    }

    /// The newer version of `var` and the op that made it, if any.
    fn successor(&self, var: usize) -> Option<(usize, usize)> {
        let next = self.newer.get(var).copied().flatten()?;
        maker(self.model, next).map(|o| (o, next))
    }

    /// `var` and its later versions from `next` on, each made (before
    /// `until`) by an op that read the one before: (variable, maker). The
    /// first entry is `var` itself with its reader that made `next`.
    fn version_run(&self, var: usize, next: usize, until: usize) -> Vec<(usize, usize)> {
        let m = self.model;
        let Some(first) = maker(m, next) else {
            return Vec::new();
        };
        let mut run = vec![(var, first)];
        if m.vars[next].full_name != m.vars[var].full_name {
            run.push((next, first));
            return run;
        }
        let mut cur = var;
        let mut made = first;
        let mut at = next;
        loop {
            if made >= until || is_question_op(m, made) || !m.inputs(made).contains(&cur) {
                break;
            }
            run.push((at, made));
            match self.successor(at) {
                Some((op, v)) => {
                    cur = at;
                    made = op;
                    at = v;
                }
                None => break,
            }
        }
        run
    }

    /// How many versions of a run (see [`Flow::version_run`]) after the
    /// first hold the item, one after the other.
    fn held_along(&self, run: &[(usize, usize)], item: &Item) -> usize {
        let mut leaf = run
            .first()
            .and_then(|&(v, _)| self.matcher.holding_leaf(v, item));
        for (i, &(var, _)) in run.iter().enumerate().skip(1) {
            let kept = leaf.filter(|&l| self.matcher.carries_leaf(var, l));
            leaf = match kept {
                Some(l) => Some(l),
                None => match self.matcher.holding_leaf(var, item) {
                    Some(l) => Some(l),
                    None if var == item.message => None,
                    None => return i - 1,
                },
            };
        }
        run.len().saturating_sub(1)
    }

    /// The op that deleted `var`, if any.
    fn deletion(&self, var: usize) -> Option<usize> {
        let m = self.model;
        m.edges_from(var).iter().find_map(|&(e, t)| {
            let edge = &m.edges[e];
            let says =
                |s: Option<&str>| s.is_some_and(|c| c.to_ascii_lowercase().contains("delet"));
            let marker = says(Some(m.class(t))) || says(m.vars[t].category.as_deref());
            (says(edge.comment.as_deref()) || says(edge.category.as_deref()) || marker)
                .then(|| m.op(&edge.op_id))
                .flatten()
        })
    }

    /// Follows an item through the construction ops before `until`.
    fn follow(&self, item: &Item, until: usize) -> ItemFlow {
        let m = self.model;
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut graph: DiGraph<usize, usize> = DiGraph::new();
        let mut carriers = vec![Carrier {
            var: item.message,
            made: None,
            end: End::Alive,
            store: false,
        }];
        graph.add_node(item.message);
        index.insert(item.message, 0);
        let mut next = 0;
        while next < carriers.len() {
            let c = carriers[next].var;
            let from = NodeIndex::new(next);
            next += 1;
            for &op in m.read_by(c) {
                if op >= until || is_question_op(m, op) {
                    continue;
                }
                for &o in m.outputs(op) {
                    if let Some(&known) = index.get(&o) {
                        if carriers[known].made == Some(op) {
                            graph.update_edge(from, NodeIndex::new(known), op);
                        }
                        continue;
                    }
                    if maker(m, o) != Some(op) {
                        continue;
                    }
                    // A run of versions, each made from the one before,
                    // holds the item up to the version that lost it. A
                    // version that kept, verbatim, the line that held it in
                    // the version before still holds it, seen without
                    // decoding it.
                    let run = self.version_run(c, o, until);
                    let held = self.held_along(&run, item);
                    let mut prev = from;
                    for (i, &(var, made)) in run.iter().enumerate().take(held + 1).skip(1) {
                        if i > 1 && index.contains_key(&var) {
                            break;
                        }
                        index.insert(var, carriers.len());
                        let to = graph.add_node(var);
                        graph.add_edge(prev, to, made);
                        carriers.push(Carrier {
                            var,
                            made: Some(made),
                            end: End::Alive,
                            store: false,
                        });
                        prev = to;
                    }
                }
            }
        }
        let before = |o: Option<usize>| o.filter(|&o| o < until);
        let ends: Vec<(End, bool)> = carriers
            .iter()
            .map(|carrier| {
                let c = carrier.var;
                let store = self.is_store(c);
                let successor = self.successor(c).filter(|s| s.0 < until);
                let deleted = before(self.deletion(c));
                let end = if store {
                    match (successor.map(|s| s.0), deleted) {
                        (Some(s), Some(d)) if d < s => End::Deleted(d),
                        (Some(s), _) => End::Replaced(s),
                        (None, Some(d)) => End::Deleted(d),
                        (None, None) => End::Alive,
                    }
                } else {
                    let readers: Vec<usize> = m
                        .read_by(c)
                        .iter()
                        .copied()
                        .filter(|&o| o < until && !is_question_op(m, o))
                        .collect();
                    let lost_by_successor = successor.filter(|(_, t)| !index.contains_key(t));
                    let others: Vec<usize> = readers
                        .iter()
                        .copied()
                        .filter(|&o| Some(o) != lost_by_successor.map(|s| s.0))
                        .collect();
                    let last = if lost_by_successor.is_some() && !others.is_empty() {
                        others.last().copied()
                    } else {
                        readers.last().copied()
                    };
                    match (last, carrier.made) {
                        (Some(o), _) => End::Consumed(o),
                        (None, Some(made)) => End::Consumed(made),
                        // A message nothing read: it never entered the system.
                        (None, None) => End::Alive,
                    }
                };
                (end, store)
            })
            .collect();
        for (carrier, (end, store)) in carriers.iter_mut().zip(ends) {
            carrier.end = end;
            carrier.store = store;
        }
        // The first op after which no carrier is alive: carrier i is alive
        // from the op that made it to the op at its end.
        let death = match carriers[0].end.at() {
            // A message nothing read never entered the system: no op lost it.
            None => None,
            Some(first) => {
                let mut order: Vec<usize> = (1..carriers.len()).collect();
                order.sort_by_key(|&i| carriers[i].made);
                let mut until = Some(first);
                let mut holder = 0;
                for i in order {
                    let (Some(u), Some(made)) = (until, carriers[i].made) else {
                        break;
                    };
                    if made > u {
                        break;
                    }
                    match carriers[i].end.at() {
                        None => until = None,
                        Some(e) if e > u => {
                            until = Some(e);
                            holder = i;
                        }
                        Some(_) => {}
                    }
                }
                until.map(|op| (op, holder))
            }
        };
        ItemFlow {
            carriers,
            graph,
            death,
        }
    }

    /// The type of a death at `op`, carrier `holder` being lost there.
    fn death_type(&self, flow: &ItemFlow, op: usize, holder: usize) -> ErrorType {
        let m = self.model;
        if flow.carriers[holder].end == End::Deleted(op) {
            return ErrorType::DeletionError;
        }
        if category(m, op).eq_ignore_ascii_case("extraction") {
            return ErrorType::ExtractionError;
        }
        let stored = flow
            .carriers
            .iter()
            .any(|c| c.store && c.made.is_some_and(|o| o < op));
        if stored {
            return ErrorType::UpdateError;
        }
        ErrorType::ExtractionError
    }

    fn step(&self, op: usize, var: usize, what: &str) -> Step {
        let m = self.model;
        Step {
            op_id: m.ops[op].op_id.clone(),
            op_name: op_name(m, op).to_string(),
            var: m.vars[var].full_node_id.clone(),
            what: what.to_string(),
        }
    }

    /// The first step of a chain: the evidence message itself (no op).
    fn evidence_step(&self, item: &Item) -> Step {
        Step {
            op_id: String::new(),
            op_name: String::new(),
            var: self.model.vars[item.message].full_node_id.clone(),
            what: "evidence".into(),
        }
    }

    /// The chain of an item from its message to carrier `to`: the shortest
    /// path of carriers in the flow graph, runs of versions of one variable
    /// folded, ends kept. A step that is not on every route of the item to
    /// `to` (it does not dominate `to` in the flow graph) says so.
    fn chain(&self, flow: &ItemFlow, to: usize) -> Vec<Step> {
        let m = self.model;
        let dominators = simple_fast(&flow.graph, NodeIndex::new(0));
        let every_route: Vec<usize> = dominators
            .dominators(NodeIndex::new(to))
            .map(|d| d.map(|n| n.index()).collect())
            .unwrap_or_default();
        let held = |n: usize, versions: Option<usize>| {
            let mut what = match versions {
                Some(k) => format!("held ({k} versions)"),
                None => "held".to_string(),
            };
            if !every_route.contains(&n) {
                what.push_str(" on one of several routes");
            }
            what
        };
        let path = astar(
            &flow.graph,
            NodeIndex::new(0),
            |n| n.index() == to,
            |_| 1usize,
            |_| 0usize,
        )
        .map(|(_, p)| p)
        .unwrap_or_default();
        let mut steps: Vec<Step> = Vec::new();
        let mut folded = 0usize;
        for n in path.into_iter().skip(1) {
            let c = &flow.carriers[n.index()];
            let op = c.made.unwrap_or_default();
            let same_name = steps.last().is_some_and(|s: &Step| {
                s.var.rsplit_once('@').map(|x| x.0) == Some(m.vars[c.var].full_name.as_str())
            });
            if same_name {
                folded += 1;
                let last = steps.len() - 1;
                steps[last] = self.step(op, c.var, &held(n.index(), Some(folded + 1)));
            } else {
                folded = 0;
                steps.push(self.step(op, c.var, &held(n.index(), None)));
            }
        }
        if steps.len() > 2 * CHAIN_ENDS {
            let tail = steps.split_off(steps.len() - CHAIN_ENDS);
            steps.truncate(CHAIN_ENDS);
            steps.extend(tail);
        }
        steps
    }

    fn describe_item(&self, item: &Item) -> String {
        let m = self.model;
        let text = &item.text;
        let short: String = text.chars().take(80).collect();
        let cut = if short.len() < text.len() { "…" } else { "" };
        format!("{} ({short}{cut})", m.vars[item.message].full_node_id)
    }

    /// Where the answer's context comes from: the retrieval ops that read
    /// the query, what they returned, and the contexts the answering op
    /// read (variables that are neither the query, a prompt, a message nor
    /// a memory unit), each with the op that built it.
    fn question_side(
        &self,
        case: &FailedCase,
        answer: usize,
    ) -> (Vec<usize>, Vec<usize>, Vec<(usize, usize)>) {
        let m = self.model;
        let query = case.query_node.as_deref().and_then(|q| m.var(q));
        let retrievals: Vec<usize> = query
            .map(|q| {
                m.read_by(q)
                    .iter()
                    .copied()
                    .filter(|&o| is_retrieval(m, o))
                    .collect()
            })
            .unwrap_or_default();
        let mut retrieved: Vec<usize> = Vec::new();
        for &r in &retrievals {
            for &v in m.outputs(r) {
                if !retrieved.contains(&v) {
                    retrieved.push(v);
                }
            }
        }
        let contexts: Vec<(usize, usize)> = m
            .inputs(answer)
            .iter()
            .copied()
            .filter(|&v| {
                Some(v) != query && !is_prompt(m, v) && !m.is_message(v) && !self.is_store(v)
            })
            .filter_map(|v| maker(m, v).map(|o| (v, o)))
            .collect();
        (retrievals, retrieved, contexts)
    }

    /// Follows each evidence item of a case and finds where each failed.
    fn analyse(&self, case: &FailedCase, evidence: &Evidence) -> Analysis {
        let m = self.model;
        let items = self.items(case, evidence);
        let pseudo = evidence.origin == EvidenceOrigin::Pseudo;
        let answer = answer_op(m, case);
        let mut doubts: Vec<String> = Vec::new();
        if pseudo {
            doubts.push(
                "no source evidence was recorded: the evidence was chosen from the messages that \
                 best match the question (and the gold answer, when there is one), each weighed \
                 by how likely the answer needed it"
                    .into(),
            );
        }
        let textless = evidence
            .items
            .iter()
            .filter(|&&m| self.matcher.body(m).is_none_or(|b| b.text.is_empty()))
            .count();
        if textless > 0 && !pseudo {
            doubts.push(format!(
                "{textless} of {} evidence message(s) have no text to follow",
                evidence.items.len()
            ));
        }
        for it in items.iter().filter(|i| i.whole) {
            doubts.push(format!(
                "no sentence of {} matches the question; the whole message was followed",
                m.vars[it.message].full_node_id
            ));
        }
        let (retrievals, retrieved, contexts) = match answer {
            Some(a) => self.question_side(case, a),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        // Question time: the first retrieval for this question, else the
        // answering op, else the end of the trace.
        let until = retrievals
            .first()
            .copied()
            .or(answer)
            .unwrap_or(m.ops.len());
        if answer.is_some() && retrievals.is_empty() {
            doubts.push(
                "no retrieval op reads the query: what the store held was checked against the \
                 answering op's context only"
                    .into(),
            );
        }
        let flows: Vec<ItemFlow> = items.iter().map(|it| self.follow(it, until)).collect();
        // What the answering op read besides the query, prompts and messages.
        let query = case.query_node.as_deref().and_then(|q| m.var(q));
        let read: Vec<usize> = answer
            .map(|a| {
                m.inputs(a)
                    .iter()
                    .copied()
                    .filter(|&v| Some(v) != query && !is_prompt(m, v) && !m.is_message(v))
                    .collect()
            })
            .unwrap_or_default();
        let mut failures: Vec<Failure> = Vec::new();
        for (i, (item, flow)) in items.iter().zip(&flows).enumerate() {
            if let Some((op, holder)) = flow.death {
                let error_type = self.death_type(flow, op, holder);
                let outputs: Vec<&str> = m
                    .outputs(op)
                    .iter()
                    .map(|&v| m.vars[v].full_node_id.as_str())
                    .take(3)
                    .collect();
                let holder_var = flow.carriers[holder].var;
                let held_by = if holder == 0 {
                    "the message".to_string()
                } else {
                    m.vars[holder_var].full_node_id.clone()
                };
                let what = match error_type {
                    ErrorType::DeletionError => "deleted",
                    _ => "lost",
                };
                let reason = format!(
                    "{} was held by {held_by} until op {} ({}) {what} it: {}; {}",
                    self.describe_item(item),
                    m.ops[op].op_id,
                    op_name(m, op),
                    match outputs.as_slice() {
                        [] => "it wrote nothing".to_string(),
                        list => format!("its output {} does not hold it", list.join(", ")),
                    },
                    match error_type {
                        ErrorType::DeletionError => "a memory unit holding it was deleted",
                        ErrorType::UpdateError => "it had reached memory and an update lost it",
                        _ => "it never entered a memory unit",
                    }
                );
                let confidence = if error_type == ErrorType::DeletionError {
                    0.95
                } else {
                    0.9
                };
                failures.push(Failure {
                    op,
                    error_type,
                    item: i,
                    reason,
                    confidence,
                    last: Some((holder, what)),
                });
                continue;
            }
            let Some(answer) = answer else { continue };
            let live: Vec<usize> = flow
                .carriers
                .iter()
                .filter(|c| c.store && c.end == End::Alive && c.made.is_some())
                .map(|c| c.var)
                .collect();
            let in_context = if !contexts.is_empty() {
                contexts.iter().any(|&(v, _)| self.holds(v, item))
            } else if !read.is_empty() {
                read.iter().any(|&v| self.holds(v, item))
            } else {
                retrieved.iter().any(|&v| self.holds(v, item))
            };
            if in_context {
                continue;
            }
            let was_retrieved = retrieved.iter().find(|&&v| self.holds(v, item)).copied();
            let stored: Vec<&str> = live
                .iter()
                .map(|&v| m.vars[v].full_node_id.as_str())
                .take(3)
                .collect();
            let (op, reason, confidence) = match (was_retrieved, contexts.first()) {
                (Some(v), Some(&(ctx, builder))) => (
                    builder,
                    format!(
                        "{} was retrieved in {} but op {} ({}) left it out of the context {} it \
                         built",
                        self.describe_item(item),
                        m.vars[v].full_node_id,
                        m.ops[builder].op_id,
                        op_name(m, builder),
                        m.vars[ctx].full_node_id
                    ),
                    0.8,
                ),
                _ => {
                    let (op, context) = match (retrievals.first(), contexts.first()) {
                        (Some(&r), _) => (r, None),
                        (None, Some(&(ctx, builder))) => (builder, Some(ctx)),
                        (None, None) => (answer, None),
                    };
                    let into = match context {
                        Some(c) => format!(" of the context {}", m.vars[c].full_node_id),
                        None => " of what it retrieved for the question".to_string(),
                    };
                    if stored.is_empty() {
                        doubts.push(format!(
                            "{} is in no memory unit at question time, yet no op was seen to \
                             lose it",
                            m.vars[item.message].full_node_id
                        ));
                        (
                            op,
                            format!(
                                "{} is in no memory unit at question time, yet no op lost it; \
                                 op {} ({}) left it out{into}",
                                self.describe_item(item),
                                m.ops[op].op_id,
                                op_name(m, op),
                            ),
                            0.5,
                        )
                    } else {
                        (
                            op,
                            format!(
                                "{} was stored in {} but op {} ({}) left it out{into}",
                                self.describe_item(item),
                                stored.join(", "),
                                m.ops[op].op_id,
                                op_name(m, op),
                            ),
                            if retrievals.is_empty() { 0.6 } else { 0.85 },
                        )
                    }
                }
            };
            failures.push(Failure {
                op,
                error_type: ErrorType::RetrievalError,
                item: i,
                reason,
                confidence,
                last: None,
            });
        }
        Analysis {
            items,
            flows,
            failures,
            answer,
            contexts,
            doubts,
            pseudo,
        }
    }

    /// Where each evidence item of a case would fail if it alone were
    /// needed: (message, failure op and type), or no failure when it reaches
    /// the answer's context. For looking into how evidence is weighed.
    pub fn fates(
        &self,
        case: &FailedCase,
        evidence: &Evidence,
    ) -> Vec<(usize, Option<(usize, ErrorType)>)> {
        let a = self.analyse(case, evidence);
        a.items
            .iter()
            .enumerate()
            .map(|(i, it)| {
                let f = a
                    .failures
                    .iter()
                    .filter(|f| f.item == i)
                    .min_by_key(|f| f.op)
                    .map(|f| (f.op, f.error_type));
                (it.message, f)
            })
            .collect()
    }

    /// Attributes one case.
    pub fn attribute(&self, case: &FailedCase, evidence: &Evidence) -> Option<Finding> {
        let m = self.model;
        let Analysis {
            items,
            flows,
            failures,
            answer,
            contexts,
            mut doubts,
            pseudo,
        } = self.analyse(case, evidence);
        // Doubts about the trace make a verdict less sure; not knowing which
        // messages were needed is already in the weights.
        let weak = if doubts.len() > usize::from(pseudo) {
            0.85
        } else {
            1.0
        };
        // An answer that says it found nothing was not given the evidence:
        // a chosen message that reached its context is unlikely to be it.
        let reached = if pseudo && says_no_answer(&case.prediction) {
            NOT_GIVEN
        } else {
            1.0
        };
        let outcomes = weigh_outcomes(&items, &failures, reached);
        let best = outcomes.first().copied();
        // Chosen evidence: how sure, from how the weight of the outcomes is
        // spread and what kind of verdict it is.
        let sure = |error_type: ErrorType| -> Option<f64> {
            pseudo.then(|| {
                calibrated(&Spread {
                    first: best.map_or(0.0, |o| o.probability),
                    second: outcomes.get(1).map_or(0.0, |o| o.probability),
                    top_weight: items.iter().map(|i| i.weight).fold(0.0, f64::max),
                    said_nothing: says_no_answer(&case.prediction),
                    has_gold: case.gold.iter().any(|g| !g.trim().is_empty()),
                    error_type,
                })
            })
        };
        let alternatives: Vec<Alternative> = outcomes
            .iter()
            .filter_map(|o| match o.failure {
                Some(f) => Some(Alternative {
                    op: failures[f].op,
                    error_type: failures[f].error_type,
                    probability: o.probability,
                }),
                None => answer.map(|a| Alternative {
                    op: a,
                    error_type: ErrorType::ResponseError,
                    probability: o.probability,
                }),
            })
            .collect();
        if let Some(Outcome {
            failure: Some(fi),
            probability,
        }) = best
        {
            let f = &failures[fi];
            let flow = &flows[f.item];
            let mut chain = vec![self.evidence_step(&items[f.item])];
            match f.last {
                Some((holder, what)) => {
                    chain.extend(self.chain(flow, holder));
                    chain.push(self.step(f.op, flow.carriers[holder].var, what));
                }
                None => {
                    chain.extend(self.chain(flow, last_live(flow)));
                    let var = m
                        .outputs(f.op)
                        .first()
                        .copied()
                        .unwrap_or(items[f.item].message);
                    chain.push(self.step(f.op, var, "left out"));
                }
            }
            let mut reason = f.reason.clone();
            if pseudo {
                reason.push_str(&format!(
                    "; {} was chosen as evidence with weight {:.2}, and {:.0}% of the weight of \
                     the chosen evidence points to this op",
                    m.vars[items[f.item].message].full_node_id,
                    items[f.item].weight,
                    probability * 100.0
                ));
            }
            return Some(Finding {
                error_type: f.error_type,
                op: f.op,
                confidence: sure(f.error_type).unwrap_or(probability * f.confidence) * weak,
                reason,
                chain,
                doubts,
                alternatives,
            });
        }
        let answer = answer?;
        let probability = best.map_or(0.0, |o| o.probability);
        let held: Vec<&Item> = items
            .iter()
            .enumerate()
            .filter(|(i, _)| !failures.iter().any(|f| f.item == *i))
            .map(|(_, it)| it)
            .collect();
        let mut chain = Vec::new();
        for (item, flow) in items.iter().zip(&flows) {
            if held.iter().any(|h| h.message == item.message) {
                chain.push(self.evidence_step(item));
                chain.extend(self.chain(flow, last_live(flow)));
            }
        }
        if let Some(&(context, _)) = contexts.first() {
            chain.push(self.step(answer, context, "ignored"));
        }
        if items.is_empty() {
            doubts.push("no evidence item could be followed".into());
        }
        let what = if pseudo {
            "the chosen evidence it held"
        } else {
            "every needed evidence item"
        };
        let reason = format!(
            "the context of op {} ({}) holds {what} ({}), yet the answer is wrong",
            m.ops[answer].op_id,
            op_name(m, answer),
            held.iter()
                .map(|s| m.vars[s.message].full_node_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Some(Finding {
            error_type: ErrorType::ResponseError,
            op: answer,
            confidence: if items.is_empty() {
                0.3
            } else {
                sure(ErrorType::ResponseError).unwrap_or(0.7 * probability) * weak
            },
            reason,
            chain,
            doubts,
            alternatives,
        })
    }
}

/// What the confidence of a verdict on chosen evidence is read from.
struct Spread {
    /// The share of the evidence's weight that points to the verdict.
    first: f64,
    /// The share that points to the next likeliest verdict.
    second: f64,
    /// The weight of the likeliest candidate.
    top_weight: f64,
    /// Whether the answer said it found nothing.
    said_nothing: bool,
    /// Whether the case has a gold answer.
    has_gold: bool,
    /// The verdict's type.
    error_type: ErrorType,
}

/// Coefficients of [`calibrated`]: an intercept; the share of the weight,
/// the lead over the next verdict, the top weight, an answer that found
/// nothing, a gold answer; then one per error type in taxonomy order.
/// Fitted by logistic regression (L2 penalty 10) of whether the verdict
/// named the labelled op, on generated traces of every system and style in
/// the evaluation and production settings.
const CALIBRATION: [f64; 11] = [
    -3.259, 2.393, 1.131, 2.341, 0.246, -0.065, -0.204, -0.307, 0.028, 1.035, -0.551,
];

/// The probability that a verdict on chosen evidence names the right op.
fn calibrated(s: &Spread) -> f64 {
    let c = &CALIBRATION;
    let kind = ErrorType::ALL
        .iter()
        .position(|t| *t == s.error_type)
        .unwrap_or(0);
    let z = c[0]
        + c[1] * s.first
        + c[2] * (s.first - s.second)
        + c[3] * s.top_weight
        + c[4] * f64::from(u8::from(s.said_nothing))
        + c[5] * f64::from(u8::from(s.has_gold))
        + c[6 + kind];
    1.0 / (1.0 + (-z).exp())
}

/// How much less likely a chosen message that reached the answer's context
/// is to be the evidence when the answer says it found nothing.
const NOT_GIVEN: f64 = 0.1;

/// One way the case may have failed: a failure point (an index into the
/// failures), or none (every needed item reached the answer's context), and
/// how likely it is to be the verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Outcome {
    failure: Option<usize>,
    probability: f64,
}

/// The outcomes of a case, most likely first. Each item is needed with its
/// weight, independently of the others; the verdict is the earliest failure
/// point of a needed item, or the answering op when no needed item failed.
/// So a failure point is the verdict when its item is needed and no item
/// that failed earlier is; probabilities are taken given that at least one
/// item is needed. Failures at the same op with the same type add up.
fn weigh_outcomes(items: &[Item], failures: &[Failure], reached: f64) -> Vec<Outcome> {
    let failed = |i: usize| failures.iter().any(|f| f.item == i);
    let weight = |i: usize| {
        let w = items[i].weight.clamp(0.0, 1.0);
        if failed(i) {
            w
        } else {
            w * reached
        }
    };
    let mut order: Vec<usize> = (0..failures.len()).collect();
    order.sort_by_key(|&f| (failures[f].op, failures[f].item));
    let mut none_before = 1.0;
    let mut out: Vec<Outcome> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for f in order {
        let item = failures[f].item;
        if seen.contains(&item) {
            continue;
        }
        seen.push(item);
        let p = weight(item) * none_before;
        none_before *= 1.0 - weight(item);
        let same = out.iter_mut().find(|o| {
            o.failure.is_some_and(|g| {
                failures[g].op == failures[f].op && failures[g].error_type == failures[f].error_type
            })
        });
        match same {
            Some(o) => o.probability += p,
            None => out.push(Outcome {
                failure: Some(f),
                probability: p,
            }),
        }
    }
    let none_held: f64 = (0..items.len())
        .filter(|i| !seen.contains(i))
        .map(|i| 1.0 - weight(i))
        .product();
    out.push(Outcome {
        failure: None,
        probability: none_before * (1.0 - none_held),
    });
    let any: f64 = 1.0 - (0..items.len()).map(|i| 1.0 - weight(i)).product::<f64>();
    if any > 0.0 {
        for o in &mut out {
            o.probability /= any;
        }
    }
    // Most likely first; on a tie, the earlier failure point.
    out.sort_by(|a, b| {
        b.probability.total_cmp(&a.probability).then_with(|| {
            let at = |o: &Outcome| o.failure.map_or(usize::MAX, |f| failures[f].op);
            at(a).cmp(&at(b))
        })
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrib::{AttributeRequest, Method, Setting, Verdict};
    use crate::prelude::*;
    use memtrace_engine::{Cancel, ImportOptions, InputFormat};
    use memtrace_gen::builder::{TraceBuilder, VarRef};
    use serde_json::json;

    /// A Mem0-like memory system, built op by op.
    struct Mini {
        b: TraceBuilder,
        n: usize,
    }

    impl Mini {
        fn new() -> Mini {
            let mut b = TraceBuilder::new("mini", "u", "mini", json!({}), 19_000);
            b.session("memory_construction", "session", json!({}));
            Mini { b, n: 0 }
        }

        fn message(&mut self, name: &str, text: &str) -> VarRef {
            let speaker = text.split(':').next().unwrap_or("");
            self.b.variable(
                Some("message"),
                name,
                &format!("{text:?}"),
                "message",
                None,
                json!({ "speaker": speaker }),
            )
        }

        /// extract_facts: message -> facts (a Python list repr).
        fn extract(&mut self, msg: &VarRef, facts: &str) -> (VarRef, String) {
            let name = msg.full_name.trim_start_matches("message:").to_string();
            let f = self.b.variable(
                Some("facts"),
                &name,
                facts,
                "extracted_facts",
                None,
                json!({}),
            );
            let op = self.b.op(
                "extract_facts",
                "extraction",
                None,
                &[msg],
                &[&f],
                json!({}),
            );
            (f, op)
        }

        /// update_memory_decision: facts -> decision -> a new memory unit.
        fn add(&mut self, facts: &VarRef, stored: &str) -> (VarRef, String) {
            self.n += 1;
            let name = facts.full_name.trim_start_matches("facts:").to_string();
            let d = self.b.variable(
                Some("decision"),
                &name,
                &format!("[{{\"event\": \"ADD\", \"text\": {stored:?}}}]"),
                "memory_decision",
                None,
                json!({}),
            );
            let unit = self.b.variable(
                Some("memory"),
                &format!("m{}", self.n),
                &format!("{stored:?}"),
                "memory_entry",
                None,
                json!({}),
            );
            let op = self.b.op_edges(
                "update_memory_decision",
                "update",
                &[
                    (facts.full_node_id.clone(), d.full_node_id.clone(), None),
                    (
                        d.full_node_id.clone(),
                        unit.full_node_id.clone(),
                        Some("ADD"),
                    ),
                ],
                json!({}),
            );
            (unit, op)
        }

        /// A later decision that deletes `unit`.
        fn delete(&mut self, unit: &VarRef) -> String {
            let m = self.b.variable(
                Some("delete_marker"),
                unit.full_name.trim_start_matches("memory:"),
                "'DELETED'",
                "delete_marker",
                None,
                json!({}),
            );
            self.b.op_edges(
                "update_memory_decision",
                "update",
                &[(
                    unit.full_node_id.clone(),
                    m.full_node_id.clone(),
                    Some("DELETE"),
                )],
                json!({}),
            )
        }

        /// A later decision that rewrites `unit`.
        fn rewrite(&mut self, unit: &VarRef, value: &str) -> (VarRef, String) {
            let name = unit.full_name.trim_start_matches("memory:").to_string();
            self.b.mutate(
                unit,
                Some("memory"),
                &name,
                &format!("{value:?}"),
                "memory_entry",
                "update_memory_decision",
                "update",
                &[],
            )
        }

        /// A question: retrieval from `units` into a context holding
        /// `context`, an answer, and a judge that scores it 0.
        fn question(
            &mut self,
            q: &str,
            text: &str,
            gold: &str,
            evidence: &[&VarRef],
            units: &[&VarRef],
            context: &[&str],
        ) -> (String, String) {
            self.b.session("memory_evaluation", "session", json!({}));
            let ev: Vec<&str> = evidence.iter().map(|e| e.full_name.as_str()).collect();
            let query = self.b.variable(
                Some("query"),
                q,
                &format!("{text:?}"),
                "message & query",
                None,
                json!({ "evidence": ev }),
            );
            let ctx = self.b.variable(
                Some("retrieved_memories"),
                q,
                &format!("{context:?}"),
                "memory_context",
                None,
                json!({}),
            );
            let mut inputs = vec![&query];
            inputs.extend(units.iter().copied());
            let retrieve = self
                .b
                .op("search", "retrieval", None, &inputs, &[&ctx], json!({}));
            let pred = self.b.variable(
                Some("prediction"),
                q,
                "'The conversation does not say.'",
                "prediction",
                None,
                json!({}),
            );
            let qa = self.b.op(
                "question-answering",
                "evaluation",
                None,
                &[&query, &ctx],
                &[&pred],
                json!({}),
            );
            let gold = self.b.variable(
                Some("golden_answers"),
                q,
                &format!("[{gold:?}]"),
                "golden_answers",
                None,
                json!({}),
            );
            let resp = self.b.variable(
                Some("judge_response"),
                q,
                "'WRONG'",
                "judge_response",
                None,
                json!({}),
            );
            let score = self.b.variable(
                Some("judge_score"),
                q,
                "0.0",
                "judge_score",
                None,
                json!({}),
            );
            let edges = vec![
                (query.full_node_id.clone(), resp.full_node_id.clone(), None),
                (gold.full_node_id.clone(), resp.full_node_id.clone(), None),
                (pred.full_node_id.clone(), resp.full_node_id.clone(), None),
                (resp.full_node_id.clone(), score.full_node_id.clone(), None),
            ];
            self.b
                .op_edges("llm-judge", "evaluation", &edges, json!({}));
            (retrieve, qa)
        }

        fn verdicts(self) -> Vec<Verdict> {
            self.verdicts_in(Setting::Benchmark)
        }

        fn verdicts_in(self, setting: Setting) -> Vec<Verdict> {
            let dir = tempfile::tempdir().unwrap();
            let db = crate::open(dir.path().join("db")).unwrap();
            db.import_reader(
                self.b.finish().to_string().as_bytes(),
                InputFormat::Json,
                "test",
                &ImportOptions::default(),
            )
            .unwrap();
            let req = AttributeRequest {
                trace: None,
                cases: None,
                method: Method::Evidence,
                setting,
                search: Default::default(),
            };
            db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap()
        }
    }

    fn weighed(message: usize, weight: f64) -> Item {
        Item {
            message,
            stems: vec![1],
            span: 1,
            text: String::new(),
            whole: false,
            speaker: None,
            value: Vec::new(),
            must: Vec::new(),
            threshold: VALUE_OVERLAP,
            asked: Vec::new(),
            weight,
        }
    }

    fn failing(op: usize, item: usize, error_type: ErrorType) -> Failure {
        Failure {
            op,
            error_type,
            item,
            reason: String::new(),
            confidence: 0.9,
            last: None,
        }
    }

    #[test]
    fn needed_evidence_fails_at_its_earliest_point_and_weights_share_the_verdict() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Source evidence, all needed: the earliest failure point, surely.
        let items = [weighed(0, 1.0), weighed(1, 1.0)];
        let fails = [
            failing(7, 1, ErrorType::RetrievalError),
            failing(2, 0, ErrorType::ExtractionError),
        ];
        let o = weigh_outcomes(&items, &fails, 1.0);
        assert_eq!((o[0].failure, o[0].probability), (Some(1), 1.0));
        // A likely message lost late outweighs an unlikely one lost early:
        // 0.9 * 0.8 against 0.2, out of 1 - 0.8 * 0.1.
        let items = [weighed(0, 0.2), weighed(1, 0.9)];
        let o = weigh_outcomes(&items, &fails, 1.0);
        assert_eq!(o[0].failure, Some(0));
        assert!(close(o[0].probability, 0.72 / 0.92), "{o:?}");
        assert!(close(o[1].probability, 0.2 / 0.92), "{o:?}");
        assert!(close(o[2].probability, 0.0), "{o:?}");
        // One item failed, one reached the context: either may be the one needed.
        let items = [weighed(0, 0.5), weighed(1, 0.5)];
        let o = weigh_outcomes(&items, &[failing(3, 0, ErrorType::UpdateError)], 1.0);
        assert_eq!(o[0].failure, Some(0));
        assert!(close(o[0].probability, 0.5 / 0.75), "{o:?}");
        assert_eq!(o[1].failure, None);
        assert!(close(o[1].probability, 0.25 / 0.75), "{o:?}");
        // The answer said it found nothing: the one that reached the context
        // counts a tenth.
        let o = weigh_outcomes(&items, &[failing(3, 0, ErrorType::UpdateError)], 0.1);
        assert!(close(o[0].probability, 0.5 / 0.525), "{o:?}");
        // Two items lost at the same op add up: 0.25 + 0.125, against 0.5
        // for the one lost earlier, out of 1 - 0.5^3.
        let items = [weighed(0, 0.5), weighed(1, 0.5), weighed(2, 0.5)];
        let fails = [
            failing(4, 0, ErrorType::RetrievalError),
            failing(4, 1, ErrorType::RetrievalError),
            failing(1, 2, ErrorType::ExtractionError),
        ];
        let o = weigh_outcomes(&items, &fails, 1.0);
        assert_eq!(o[0].failure, Some(2));
        assert!(close(o[0].probability, 0.5 / 0.875), "{o:?}");
        assert_eq!(o[1].failure, Some(0));
        assert!(close(o[1].probability, 0.375 / 0.875), "{o:?}");
    }

    #[test]
    fn chosen_evidence_blames_where_the_answer_was_lost_not_where_small_talk_was() {
        // Small talk the extractor drops, and the fact, stored and then not
        // retrieved: with the evidence hidden, the fact is what the question
        // and its gold answer point to, and the retrieval is to blame.
        let build = || {
            let mut t = Mini::new();
            let chat = t.message("D1:1", "Lena: Hey Omar! How was your week? Anything new?");
            t.extract(&chat, "[]");
            let m = t.message("D1:2", VOLVO);
            let other = t.message("D1:3", "Lena: My cat Luna sleeps all day.");
            let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
            t.add(&f, FACT);
            let (g, _) = t.extract(&other, "['Lena has a cat named Luna']");
            let (lena, _) = t.add(&g, "Lena has a cat named Luna");
            let (retrieve, _) = t.question(
                "Q1",
                "What car does Omar drive?",
                "a blue Volvo",
                &[&m],
                &[&lena],
                &["Lena has a cat named Luna"],
            );
            (t, retrieve)
        };
        for setting in [Setting::Benchmark, Setting::Evaluation, Setting::Production] {
            let (t, retrieve) = build();
            let v = t.verdicts_in(setting);
            assert_eq!(v.len(), 1);
            assert_eq!(v[0].setting, Some(setting), "{setting}");
            assert_eq!(
                (v[0].error_type, v[0].op_id.as_deref()),
                (Some(ErrorType::RetrievalError), Some(retrieve.as_str())),
                "{setting}: {}",
                v[0].reason
            );
            if setting != Setting::Benchmark {
                assert!(
                    v[0].reason.contains("chosen as evidence with weight"),
                    "{}",
                    v[0].reason
                );
                assert!(v[0].confidence < 1.0);
            }
        }
    }

    #[test]
    fn a_value_gone_before_it_was_read_is_an_error_not_an_empty_text() {
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        t.extract(&m, &format!("[{FACT:?}]"));
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open(dir.path().join("db")).unwrap();
        db.import_reader(
            t.b.finish().to_string().as_bytes(),
            InputFormat::Json,
            "test",
            &ImportOptions::default(),
        )
        .unwrap();
        let view = db.trace("mini").unwrap();
        let model = TraceModel::load(&view).unwrap();
        assert!(model.read_error().is_ok());
        db.drop_trace("mini", "test").unwrap();
        let var = model.var("message:D1:1").expect("the message");
        assert_eq!(model.value(var), "");
        let err = model.read_error().unwrap_err().to_string();
        assert!(
            err.contains("message:D1:1@1") && err.contains("could not be read"),
            "{err}"
        );
    }

    const VOLVO: &str = "Omar: I drive a blue Volvo.";
    const FACT: &str = "Omar's car is a blue Volvo (since 2023-05-01)";

    fn one(v: Vec<Verdict>) -> (ErrorType, String, String) {
        assert_eq!(v.len(), 1, "{v:?}");
        let v = &v[0];
        (
            v.error_type.expect("a verdict"),
            v.op_id.clone().unwrap(),
            v.reason.clone(),
        )
    }

    #[test]
    fn a_fact_the_extractor_drops_is_an_extraction_error_of_that_op() {
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (_, op) = t.extract(&m, "[]");
        t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[],
            &[],
        );
        let (ty, at, reason) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::ExtractionError, op));
        assert!(reason.contains("message:D1:1@1"), "{reason}");
        assert!(reason.contains("never entered a memory unit"), "{reason}");
    }

    #[test]
    fn a_decision_that_stores_a_wrong_value_never_stored_the_fact() {
        // The fact was extracted, but the unit the decision wrote holds
        // another value: the fact never entered a memory unit, which
        // MemTrace calls an ExtractionError of that decision.
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        let (u, op) = t.add(&f, "Omar's car is a red Toyota (since 2023-05-01)");
        let ctx = ["Omar's car is a red Toyota (since 2023-05-01)"];
        t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&u],
            &ctx,
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::ExtractionError, op));
    }

    #[test]
    fn a_later_rewrite_of_a_unit_that_held_it_is_an_update_error() {
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        let (u, _) = t.add(&f, FACT);
        let (u2, op) = t.rewrite(&u, "Omar's car is a grey Fiat (since 2023-05-01)");
        let ctx = ["Omar's car is a grey Fiat (since 2023-05-01)"];
        t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&u2],
            &ctx,
        );
        let (ty, at, reason) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::UpdateError, op));
        assert!(reason.contains("memory:m1@1"), "{reason}");
    }

    #[test]
    fn a_chain_step_that_is_not_on_every_route_says_so() {
        // The message reaches the unit by two routes (two extractions, one
        // store op reading both): the dominators of the unit in the item's
        // flow are the message and the unit, not either extraction.
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        let f2 = t.b.variable(
            Some("summary"),
            "D1:1",
            &format!("{FACT:?}"),
            "summary",
            None,
            json!({}),
        );
        t.b.op("summarise", "extraction", None, &[&m], &[&f2], json!({}));
        let u = t.b.variable(
            Some("memory"),
            "m1",
            &format!("{FACT:?}"),
            "memory_entry",
            None,
            json!({}),
        );
        t.b.op("store", "update", None, &[&f, &f2], &[&u], json!({}));
        let (u2, op) = t.rewrite(&u, "Omar's car is a grey Fiat (since 2023-05-01)");
        let ctx = ["Omar's car is a grey Fiat (since 2023-05-01)"];
        t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&u2],
            &ctx,
        );
        let v = t.verdicts();
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].error_type, Some(ErrorType::UpdateError));
        assert_eq!(v[0].op_id.as_deref(), Some(op.as_str()));
        let whats: Vec<(&str, &str)> = v[0]
            .chain
            .iter()
            .map(|s| (s.var.as_str(), s.what.as_str()))
            .collect();
        assert_eq!(whats.len(), 4, "{whats:?}");
        assert_eq!(whats[0].1, "evidence");
        assert!(
            whats[1].1 == "held on one of several routes",
            "an extraction output is one route of two: {whats:?}"
        );
        assert_eq!(whats[2], ("memory:m1@1", "held"), "{whats:?}");
        assert_eq!(whats[3].1, "lost", "{whats:?}");
    }

    #[test]
    fn a_rolling_unit_loses_it_at_the_version_that_dropped_it() {
        // Many versions, each made from the one before: the verdict names
        // the version that dropped the fact, however the run is searched.
        let others = [
            "Lena's city is Denver",
            "Omar's hobby is chess",
            "Lena's pet is a cat named Luna",
            "Omar's job is nurse",
            "Lena's food is pho",
            "Omar's pet is a parrot named Kiwi",
            "Lena's job is accountant",
            "Omar's city is Prague",
            "Lena's hobby is yoga",
            "Omar's food is tacos",
            "Lena's car is a red Mini",
            "Omar's drink is tea",
        ];
        for lost_at in [1, 2, 5, 9, 12] {
            let mut t = Mini::new();
            let m = t.message("D1:1", VOLVO);
            let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
            let (mut unit, _) = t.add(&f, FACT);
            let mut kept = vec![FACT.to_string()];
            let mut dropped_by = String::new();
            for (i, other) in others.iter().enumerate() {
                if i + 1 == lost_at {
                    kept.retain(|k| k != FACT);
                }
                kept.push(other.to_string());
                let (next, op) = t.rewrite(&unit, &kept.join(". "));
                if i + 1 == lost_at {
                    dropped_by = op;
                }
                unit = next;
            }
            let ctx = [kept.join(". ")];
            let ctx: Vec<&str> = ctx.iter().map(String::as_str).collect();
            t.question(
                "Q1",
                "What car does Omar drive?",
                "a blue Volvo",
                &[&m],
                &[&unit],
                &ctx,
            );
            let (ty, at, _) = one(t.verdicts());
            assert_eq!(
                (ty, at),
                (ErrorType::UpdateError, dropped_by),
                "lost at {lost_at}"
            );
        }
    }

    #[test]
    fn deleting_the_unit_that_held_it_is_a_deletion_error() {
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        let (u, _) = t.add(&f, FACT);
        let op = t.delete(&u);
        t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[],
            &[],
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::DeletionError, op));
    }

    #[test]
    fn a_stored_fact_left_out_of_the_context_is_a_retrieval_error() {
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let other = t.message("D1:2", "Lena: My cat Luna sleeps all day.");
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        t.add(&f, FACT);
        let (g, _) = t.extract(&other, "['Lena has a cat named Luna']");
        let (lena, _) = t.add(&g, "Lena has a cat named Luna");
        let ctx = ["Lena has a cat named Luna"];
        let (retrieve, _) = t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&lena],
            &ctx,
        );
        let (ty, at, reason) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::RetrievalError, retrieve));
        assert!(reason.contains("stored in memory:m1@1"), "{reason}");
    }

    #[test]
    fn a_context_that_holds_the_answer_makes_it_a_response_error() {
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        let (u, _) = t.add(&f, FACT);
        let (_, qa) = t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&u],
            &[FACT],
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::ResponseError, qa));
    }

    #[test]
    fn paraphrased_evidence_is_followed_by_its_value_and_a_wrong_value_is_not() {
        // The message never says "blue Volvo" in those words; the stored fact does.
        let mut t = Mini::new();
        let m = t.message(
            "D1:1",
            "Omar: Finally got the Volvo, the blue one, last week!",
        );
        let (f, _) = t.extract(&m, "['Omar drives a Volvo that is blue']");
        let (u, _) = t.add(&f, "Omar drives a Volvo that is blue");
        let (_, qa) = t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&u],
            &["Omar drives a Volvo that is blue"],
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::ResponseError, qa));
        // Below the overlap threshold (one of two value tokens) it is not the same fact.
        let mut t = Mini::new();
        let m = t.message(
            "D1:1",
            "Omar: Finally got the Volvo, the blue one, last week!",
        );
        let (f, op) = t.extract(&m, "['Omar drives a Volvo']");
        t.add(&f, "Omar drives a Volvo");
        t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[],
            &[],
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::ExtractionError, op));
    }

    #[test]
    fn evidence_split_over_two_messages_fails_where_either_part_is_lost() {
        let mut t = Mini::new();
        let omar = t.message("D1:1", VOLVO);
        let lena = t.message("D1:2", "Lena: I bought a green Mini yesterday.");
        let (f, _) = t.extract(&omar, &format!("[{FACT:?}]"));
        let (u, _) = t.add(&f, FACT);
        let (_, lost) = t.extract(&lena, "[]");
        t.question(
            "Q1",
            "Do Omar and Lena have the same car now?",
            "No: a blue Volvo vs a green Mini",
            &[&omar, &lena],
            &[&u],
            &[FACT],
        );
        let (ty, at, reason) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::ExtractionError, lost));
        assert!(reason.contains("message:D1:2@1"), "{reason}");
    }

    #[test]
    fn a_masked_fault_is_not_decisive() {
        // The stale first value is dropped, but the question asks for the
        // latest value, which was stored and then left out by retrieval.
        let mut t = Mini::new();
        let old = t.message("D1:1", "Omar: I drive a red Toyota.");
        let new = t.message("D2:1", "Omar: Sold the Toyota, I drive a blue Volvo now.");
        t.extract(&old, "[]");
        let (f, _) = t.extract(&new, &format!("[{FACT:?}]"));
        t.add(&f, FACT);
        let (retrieve, _) = t.question(
            "Q1",
            "What car does Omar drive? (now)",
            "a blue Volvo",
            &[&old, &new],
            &[],
            &[],
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::RetrievalError, retrieve));
        // A fact kept by a second unit survives the loss of the first.
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        let (u, _) = t.add(&f, FACT);
        let (u2, _) = t.add(&f, "Omar owns a blue Volvo");
        t.delete(&u);
        let (_, qa) = t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&u2],
            &["Omar owns a blue Volvo"],
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!((ty, at), (ErrorType::ResponseError, qa));
    }

    #[test]
    fn signatures_split_a_comparison_between_the_people_asked_about() {
        assert_eq!(
            answer_parts("No: a blue Volvo vs a green Mini"),
            ["a blue Volvo", "a green Mini"]
        );
        assert_eq!(answer_parts("Yes, both: Paris"), ["Paris"]);
        assert_eq!(answer_parts("Paris"), ["Paris"]);
    }
}
