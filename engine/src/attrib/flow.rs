//! The evidence-flow attributor: follows each needed evidence item forward
//! from its message through the ops that carried it, finds where it was
//! lost, and names the earliest decisive faulty op with its error type.
//!
//! An item is *carried* by a variable that an op made from a carrier and
//! whose value holds the item: the message text itself, normalised, or the
//! speaker together with enough of the answer's value tokens
//! ([`VALUE_OVERLAP`]). A carrier stays alive while it will still be read
//! (a memory unit: until a later version replaces it or it is deleted). The
//! op after which no carrier is alive is where the item died:
//! `DeletionError` when it deleted the last unit holding it, `UpdateError`
//! when a memory unit had held it (or an update op dropped what an
//! extraction op had passed it), `ExtractionError` otherwise. When no needed
//! item died, the answer op's context is checked: an item missing from it
//! is a `RetrievalError` of the op that made the context; with everything
//! there, the answer op is at fault (`ResponseError`).

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::case::FailedCase;
use super::evidence::{Evidence, EvidenceOrigin};
use super::model::TraceModel;
use super::pyvalue::{pieces, unrepr};
use super::text::{content_tokens, has_token, is_date_token, normalise, overlap, tokens};
use super::verdict::{ErrorType, Step};

/// Share of an answer's value tokens a piece must hold (with the speaker)
/// to carry an item that it does not quote word for word.
pub const VALUE_OVERLAP: f64 = 0.75;

/// The share that will do for a dated fact: the words both the question
/// and the message use, beside the date.
pub const DATED_OVERLAP: f64 = 0.5;

/// How many steps of a chain a verdict keeps at each end.
const CHAIN_ENDS: usize = 4;

/// What an item's signature looks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    /// The message variable.
    pub message: usize,
    /// The message text, normalised.
    pub text: String,
    /// The speaker, normalised to one token, when known.
    pub speaker: Option<String>,
    /// Value tokens of the answer this message supports.
    pub value: Vec<String>,
    /// Tokens a piece must hold besides (dates the question names or the
    /// answer is).
    pub must: Vec<String>,
    /// Share of `value` a piece must hold.
    pub threshold: f64,
}

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
}

/// Why a carrier stopped being alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// It is alive after the last op.
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
    /// The op after which no carrier was alive, and the carrier that held
    /// the item last.
    death: Option<(usize, usize)>,
}

/// One trace prepared for attribution; shared by all its cases.
pub struct Flow<'m> {
    model: &'m TraceModel,
    norm: Vec<OnceCell<Vec<Rc<str>>>>,
    /// Normalised pieces by their raw text: versions of a rolling memory
    /// repeat almost all pieces of the version before.
    seen: RefCell<HashMap<String, Rc<str>>>,
    /// Every message's text, normalised: a piece that quotes another
    /// message is that message's, whatever words it shares with ours.
    messages: HashSet<String>,
}

fn category(model: &TraceModel, op: usize) -> &str {
    model.ops[op].category.as_deref().unwrap_or("")
}

fn op_name(model: &TraceModel, op: usize) -> &str {
    model.ops[op].op_name.as_deref().unwrap_or("")
}

/// Ops of the question phase: what they make does not keep evidence alive.
fn is_question_op(model: &TraceModel, op: usize) -> bool {
    matches!(category(model, op), "retrieval" | "evaluation")
}

fn is_judge(model: &TraceModel, op: usize) -> bool {
    let n = op_name(model, op).to_ascii_lowercase();
    n.contains("judge")
}

/// The op that answered a case: it reads the query and writes the
/// prediction (not the judge, not a retrieval).
pub fn answer_op(m: &TraceModel, case: &FailedCase) -> Option<usize> {
    let query = case.query_node.as_deref().and_then(|q| m.var(q))?;
    let candidates: Vec<usize> = m
        .read_by(query)
        .iter()
        .copied()
        .filter(|&o| !is_judge(m, o) && category(m, o) != "retrieval")
        .collect();
    candidates
        .iter()
        .copied()
        .find(|&o| m.outputs(o).iter().any(|&v| m.class(v) == "prediction"))
        .or_else(|| candidates.last().copied())
}

fn is_prompt(model: &TraceModel, var: usize) -> bool {
    model.vars[var].category.as_deref() == Some("prompt")
}

/// The speaker of a message: its metadata, else a short `Name:` prefix.
fn speaker(model: &TraceModel, var: usize) -> Option<String> {
    let v = &model.vars[var];
    let named = v
        .metadata
        .get("speaker")
        .and_then(|s| s.as_str())
        .map(str::to_string)
        .or_else(|| {
            let text = unrepr(model.value(var));
            let (head, _) = text.split_once(": ")?;
            (!head.is_empty() && head.split_whitespace().count() <= 3).then(|| head.to_string())
        })?;
    tokens(&named).into_iter().next()
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

/// The position of the first op that read a variable (its place in time).
fn first_read(model: &TraceModel, var: usize) -> usize {
    model.read_by(var).first().copied().unwrap_or(usize::MAX)
}

/// The signatures of the evidence items a case needs. For a question about
/// the latest value, only each speaker's latest message is needed.
pub fn signatures(model: &TraceModel, case: &FailedCase, evidence: &Evidence) -> Vec<Signature> {
    let gold = case.gold.first().map(String::as_str).unwrap_or("");
    let parts = answer_parts(gold);
    let query_tokens = content_tokens(&case.query);
    let mut items: Vec<usize> = evidence.items.clone();
    items.dedup();
    if evidence.origin == EvidenceOrigin::Pseudo {
        // Pseudo-evidence is a ranking: keep the messages that state (part
        // of) the answer, else the best one.
        let wanted: Vec<Vec<String>> = parts.iter().map(|p| content_tokens(p)).collect();
        let states = |m: &usize| {
            let text = normalise(&unrepr(model.value(*m)));
            wanted
                .iter()
                .any(|w| !w.is_empty() && overlap(w, &text) >= VALUE_OVERLAP)
        };
        let stating: Vec<usize> = items.iter().copied().filter(states).collect();
        items = if stating.is_empty() {
            items.into_iter().take(1).collect()
        } else {
            stating
        };
    }
    if asks_for_latest(model, case) && items.len() > 1 {
        let mut latest: HashMap<Option<String>, usize> = HashMap::new();
        for &m in &items {
            let key = speaker(model, m);
            let keep = latest
                .get(&key)
                .is_none_or(|&old| first_read(model, m) >= first_read(model, old));
            if keep {
                latest.insert(key, m);
            }
        }
        items.retain(|m| latest.values().any(|v| v == m));
    }
    // People in the order the question names them, for `A vs B` answers.
    let mut speakers: Vec<(usize, String)> = items
        .iter()
        .filter_map(|&m| speaker(model, m))
        .filter_map(|s| {
            normalise(&case.query)
                .find(&format!(" {s} "))
                .map(|at| (at, s))
        })
        .collect();
    speakers.sort();
    speakers.dedup_by(|a, b| a.1 == b.1);
    items
        .iter()
        .map(|&m| {
            let text = unrepr(model.value(m));
            let who = speaker(model, m);
            let part = if parts.len() > 1 {
                who.as_ref()
                    .and_then(|w| speakers.iter().position(|(_, s)| s == w))
                    .and_then(|i| parts.get(i))
                    .cloned()
                    .unwrap_or_else(|| gold.to_string())
            } else {
                parts.first().cloned().unwrap_or_else(|| gold.to_string())
            };
            let mut value: Vec<String> = content_tokens(&part)
                .into_iter()
                .filter(|t| Some(t) != who.as_ref())
                .collect();
            // Dates the question names pin the fact down.
            let mut must: Vec<String> = query_tokens
                .iter()
                .filter(|t| is_date_token(t))
                .cloned()
                .collect();
            let mut threshold = VALUE_OVERLAP;
            if !value.is_empty() && value.iter().all(|t| is_date_token(t)) {
                // A date answers "when": it must be there, and the value is
                // what the question and the message share (half of it will
                // do, the date pinning the fact), else what the question says.
                must.append(&mut value);
                let said = content_tokens(&text);
                let asked = query_tokens
                    .iter()
                    .filter(|t| Some(*t) != who.as_ref() && !is_date_token(t));
                value = asked
                    .clone()
                    .filter(|t| said.contains(t))
                    .cloned()
                    .collect();
                if value.is_empty() {
                    value = asked.cloned().collect();
                } else {
                    threshold = DATED_OVERLAP;
                }
            }
            Signature {
                message: m,
                text: normalise(&text),
                speaker: who,
                value,
                must,
                threshold,
            }
        })
        .collect()
}

impl<'m> Flow<'m> {
    /// Prepares a trace.
    pub fn new(model: &'m TraceModel) -> Flow<'m> {
        let messages = (0..model.vars.len())
            .filter(|&v| model.is_message(v))
            .map(|v| normalise(&unrepr(model.value(v))))
            .collect();
        Flow {
            model,
            norm: (0..model.vars.len()).map(|_| OnceCell::new()).collect(),
            seen: RefCell::new(HashMap::new()),
            messages,
        }
    }

    fn pieces(&self, var: usize) -> &[Rc<str>] {
        self.norm[var].get_or_init(|| {
            let mut seen = self.seen.borrow_mut();
            pieces(self.model.value(var))
                .into_iter()
                .map(|p| match seen.get(&p) {
                    Some(n) => Rc::clone(n),
                    None => {
                        let n: Rc<str> = Rc::from(normalise(&p));
                        seen.insert(p, Rc::clone(&n));
                        n
                    }
                })
                .collect()
        })
    }

    /// Whether a variable's value holds an item.
    pub fn holds(&self, var: usize, sig: &Signature) -> bool {
        self.pieces(var).iter().any(|p| {
            (sig.text.len() > 2 && p.contains(sig.text.as_str()))
                || ((!sig.value.is_empty() || !sig.must.is_empty())
                    && !self.messages.contains(&**p)
                    && sig.speaker.as_deref().is_none_or(|s| has_token(p, s))
                    && sig.must.iter().all(|t| has_token(p, t))
                    && overlap(&sig.value, p) >= sig.threshold)
        })
    }

    /// Whether a variable is a memory unit: it persists until replaced or
    /// deleted.
    fn is_store(&self, var: usize) -> bool {
        let m = self.model;
        m.vars[var].category.as_deref() == Some("memory_entry")
            || m.read_by(var)
                .iter()
                .any(|&o| category(m, o) == "retrieval")
    }

    /// The op that made a newer version of `var`, if any read it to do so.
    fn successor(&self, var: usize) -> Option<(usize, usize)> {
        let m = self.model;
        let v = &m.vars[var];
        m.edges_from(var).iter().find_map(|&(e, t)| {
            let tv = &m.vars[t];
            (tv.full_name == v.full_name && tv.version > v.version)
                .then(|| m.op(&m.edges[e].op_id).map(|o| (o, t)))
                .flatten()
        })
    }

    /// The op that deleted `var`, if any.
    fn deletion(&self, var: usize) -> Option<usize> {
        let m = self.model;
        m.edges_from(var).iter().find_map(|&(e, t)| {
            let edge = &m.edges[e];
            let says_delete = edge
                .comment
                .as_deref()
                .is_some_and(|c| c.to_ascii_lowercase().contains("delete"));
            let marker = m.class(t).to_ascii_lowercase().contains("delete")
                || m.vars[t]
                    .category
                    .as_deref()
                    .is_some_and(|c| c.to_ascii_lowercase().contains("delete"));
            (says_delete || marker).then(|| m.op(&edge.op_id)).flatten()
        })
    }

    fn follow(&self, sig: &Signature) -> ItemFlow {
        let m = self.model;
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut carriers = vec![Carrier {
            var: sig.message,
            made: None,
            end: End::Alive,
            store: false,
        }];
        index.insert(sig.message, 0);
        let mut next = 0;
        while next < carriers.len() {
            let c = carriers[next].var;
            next += 1;
            for &op in m.read_by(c) {
                if is_question_op(m, op) {
                    continue;
                }
                for &o in m.outputs(op) {
                    if index.contains_key(&o) || !m.made_by(o).contains(&op) || !self.holds(o, sig)
                    {
                        continue;
                    }
                    index.insert(o, carriers.len());
                    carriers.push(Carrier {
                        var: o,
                        made: Some(op),
                        end: End::Alive,
                        store: false,
                    });
                }
            }
        }
        let ends: Vec<(End, bool)> = carriers
            .iter()
            .map(|carrier| {
                let c = carrier.var;
                let store = self.is_store(c);
                let successor = self.successor(c);
                let deleted = self.deletion(c);
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
                        .filter(|&o| !is_question_op(m, o))
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
                until.map(|op| (op, carriers[holder].var))
            }
        };
        ItemFlow { carriers, death }
    }

    /// The type of a death at `op`, the carrier lost there being `holder`.
    fn death_type(&self, flow: &ItemFlow, op: usize, holder: usize) -> ErrorType {
        let m = self.model;
        let held = flow.carriers.iter().find(|c| c.var == holder);
        if held.is_some_and(|c| c.end == End::Deleted(op)) {
            return ErrorType::DeletionError;
        }
        let stored = flow
            .carriers
            .iter()
            .any(|c| c.store && c.made.is_some_and(|o| o < op));
        if stored {
            return ErrorType::UpdateError;
        }
        let extracted = flow
            .carriers
            .iter()
            .any(|c| c.made.is_some_and(|o| category(m, o) == "extraction"));
        if category(m, op) == "update" && extracted {
            return ErrorType::UpdateError;
        }
        ErrorType::ExtractionError
    }

    fn answer_op(&self, case: &FailedCase) -> Option<usize> {
        answer_op(self.model, case)
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
    fn evidence_step(&self, sig: &Signature) -> Step {
        Step {
            op_id: String::new(),
            op_name: String::new(),
            var: self.model.vars[sig.message].full_node_id.clone(),
            what: "evidence".into(),
        }
    }

    /// The chain of an item: the ops that passed it on, runs of versions of
    /// one variable folded, ends kept.
    fn chain(&self, flow: &ItemFlow, upto: Option<usize>) -> Vec<Step> {
        let m = self.model;
        let mut made: Vec<&Carrier> = flow
            .carriers
            .iter()
            .filter(|c| c.made.is_some() && upto.is_none_or(|u| c.made.is_some_and(|o| o <= u)))
            .collect();
        made.sort_by_key(|c| c.made);
        let mut steps: Vec<Step> = Vec::new();
        let mut folded = 0usize;
        for c in made {
            let op = c.made.unwrap_or_default();
            let same_name = steps.last().is_some_and(|s: &Step| {
                s.var.rsplit_once('@').map(|x| x.0) == Some(m.vars[c.var].full_name.as_str())
            });
            if same_name {
                folded += 1;
                let last = steps.len() - 1;
                steps[last] = self.step(op, c.var, &format!("held ({} versions)", folded + 1));
            } else {
                folded = 0;
                steps.push(self.step(op, c.var, "held"));
            }
        }
        if steps.len() > 2 * CHAIN_ENDS {
            let tail = steps.split_off(steps.len() - CHAIN_ENDS);
            steps.truncate(CHAIN_ENDS);
            steps.extend(tail);
        }
        steps
    }

    fn describe_item(&self, sig: &Signature) -> String {
        let m = self.model;
        let text = unrepr(m.value(sig.message));
        let short: String = text.chars().take(80).collect();
        let cut = if short.len() < text.len() { "…" } else { "" };
        format!("{} ({short}{cut})", m.vars[sig.message].full_node_id)
    }

    /// Attributes one case.
    pub fn attribute(&self, case: &FailedCase, evidence: &Evidence) -> Option<Finding> {
        let m = self.model;
        let sigs = signatures(m, case, evidence);
        let pseudo = evidence.origin == EvidenceOrigin::Pseudo;
        let trust = if pseudo { 0.6 } else { 1.0 };
        let flows: Vec<ItemFlow> = sigs.iter().map(|s| self.follow(s)).collect();
        // The earliest death among the needed items.
        let earliest = flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.death.map(|(op, holder)| (op, holder, i)))
            .min_by_key(|d| d.0);
        if let Some((op, holder, i)) = earliest {
            let error_type = self.death_type(&flows[i], op, holder);
            let mut chain = vec![self.evidence_step(&sigs[i])];
            chain.extend(self.chain(&flows[i], Some(op)));
            let what = match error_type {
                ErrorType::DeletionError => "deleted",
                _ => "lost",
            };
            chain.push(self.step(op, holder, what));
            let outputs: Vec<&str> = m
                .outputs(op)
                .iter()
                .map(|&v| m.vars[v].full_node_id.as_str())
                .take(3)
                .collect();
            let held_by = if holder == sigs[i].message {
                "the message".to_string()
            } else {
                m.vars[holder].full_node_id.clone()
            };
            let reason = format!(
                "{} was held by {held_by} until op {} ({}) {what} it: {}; {}",
                self.describe_item(&sigs[i]),
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
            return Some(Finding {
                error_type,
                op,
                confidence: confidence * trust,
                reason,
                chain,
            });
        }
        let answer = self.answer_op(case)?;
        let query = case.query_node.as_deref().and_then(|q| m.var(q));
        let contexts: Vec<usize> = m
            .inputs(answer)
            .iter()
            .copied()
            .filter(|&v| Some(v) != query && !is_prompt(m, v) && !m.is_message(v))
            .collect();
        for (sig, flow) in sigs.iter().zip(&flows) {
            let alive: Vec<usize> = flow
                .carriers
                .iter()
                .filter(|c| c.end == End::Alive && c.made.is_some())
                .map(|c| c.var)
                .collect();
            let retrieved = contexts.iter().any(|&cv| {
                self.holds(cv, sig)
                    && m.made_by(cv)
                        .iter()
                        .any(|&op| m.inputs(op).iter().any(|i| alive.contains(i)))
            });
            if retrieved {
                continue;
            }
            let Some(&context) = contexts.first() else {
                continue;
            };
            let Some(&maker) = m.made_by(context).first() else {
                continue;
            };
            let mut chain = vec![self.evidence_step(sig)];
            chain.extend(self.chain(flow, None));
            chain.push(self.step(maker, context, "left out"));
            let stored: Vec<&str> = alive
                .iter()
                .map(|&v| m.vars[v].full_node_id.as_str())
                .take(3)
                .collect();
            let reason = if stored.is_empty() {
                format!(
                    "{} is in no memory unit at question time, yet no op lost it; op {} ({}) \
                     made the context {} without it",
                    self.describe_item(sig),
                    m.ops[maker].op_id,
                    op_name(m, maker),
                    m.vars[context].full_node_id
                )
            } else {
                format!(
                    "{} was stored in {} but op {} ({}) left it out of the context {}",
                    self.describe_item(sig),
                    stored.join(", "),
                    m.ops[maker].op_id,
                    op_name(m, maker),
                    m.vars[context].full_node_id
                )
            };
            let confidence = if stored.is_empty() { 0.5 } else { 0.85 };
            return Some(Finding {
                error_type: ErrorType::RetrievalError,
                op: maker,
                confidence: confidence * trust,
                reason,
                chain,
            });
        }
        let mut chain = Vec::new();
        for (sig, flow) in sigs.iter().zip(&flows) {
            chain.push(self.evidence_step(sig));
            chain.extend(self.chain(flow, None));
        }
        if let Some(&context) = contexts.first() {
            chain.push(self.step(answer, context, "ignored"));
        }
        let reason = format!(
            "the context of op {} ({}) holds every needed evidence item ({}), yet the answer \
             is wrong",
            m.ops[answer].op_id,
            op_name(m, answer),
            sigs.iter()
                .map(|s| m.vars[s.message].full_node_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Some(Finding {
            error_type: ErrorType::ResponseError,
            op: answer,
            confidence: if sigs.is_empty() { 0.3 } else { 0.7 * trust },
            reason,
            chain,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrib::{AttributeRequest, Method, Verdict};
    use crate::gen::builder::{TraceBuilder, VarRef};
    use crate::{Cancel, Database, ImportOptions, InputFormat};
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
            let dir = tempfile::tempdir().unwrap();
            let db = Database::open(dir.path().join("db")).unwrap();
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
            };
            db.attribute(&req, &Cancel::new(), &mut |_, _| {}).unwrap()
        }
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
    fn an_update_that_stores_the_wrong_value_is_an_update_error() {
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
        assert_eq!((ty, at), (ErrorType::UpdateError, op));
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
