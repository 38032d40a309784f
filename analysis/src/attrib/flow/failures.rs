//! Where each item of a case failed to reach the answer, and why.

use super::roles::{answer_op, is_prompt, is_retrieval, maker, op_name};
use super::types::{Analysis, End, Failure, Flow, ItemFlow};
use crate::attrib::case::FailedCase;
use crate::attrib::evidence::{Evidence, EvidenceOrigin};
use crate::attrib::holds::Item;
use crate::attrib::verdict::ErrorType;

impl<'m> Flow<'m> {
    /// Where the answer's context comes from: the retrieval ops that read
    /// the query, what they returned, and the contexts the answering op
    /// read (variables that are neither the query, a prompt, a message nor
    /// a memory unit), each with the op that built it.
    pub(super) fn question_side(
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
    pub(super) fn analyse(&self, case: &FailedCase, evidence: &Evidence) -> Analysis {
        let m = self.model;
        let items = self.items(case, evidence);
        let pseudo = evidence.origin == EvidenceOrigin::Pseudo;
        let answer = answer_op(m, case);
        let mut doubts = self.evidence_doubts(evidence, &items, pseudo);
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
        let question = QuestionSide {
            retrievals,
            retrieved,
            contexts,
            read,
        };
        let mut failures: Vec<Failure> = Vec::new();
        for (i, (item, flow)) in items.iter().zip(&flows).enumerate() {
            if let Some((op, holder)) = flow.death {
                failures.push(self.loss(i, item, flow, op, holder));
                continue;
            }
            let Some(answer) = answer else { continue };
            if let Some(failure) = self.left_out(i, item, flow, answer, &question, &mut doubts) {
                failures.push(failure);
            }
        }
        Analysis {
            items,
            flows,
            failures,
            answer,
            contexts: question.contexts,
            doubts,
            pseudo,
        }
    }

    /// What the evidence itself leaves unsure: chosen rather than recorded,
    /// messages without text, messages no sentence of which matches.
    fn evidence_doubts(&self, evidence: &Evidence, items: &[Item], pseudo: bool) -> Vec<String> {
        let m = self.model;
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
        doubts
    }

    /// The failure of item `index` lost at `op`, carrier `holder` holding it
    /// last.
    fn loss(
        &self,
        index: usize,
        item: &Item,
        flow: &ItemFlow,
        op: usize,
        holder: usize,
    ) -> Failure {
        let m = self.model;
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
        Failure {
            op,
            error_type,
            item: index,
            reason,
            confidence,
            last: Some((holder, what)),
        }
    }

    /// The failure of item `index`, which no op lost, when the answering op's
    /// context does not hold it: a retrieval error of the op that left it
    /// out. None when the context holds it.
    fn left_out(
        &self,
        index: usize,
        item: &Item,
        flow: &ItemFlow,
        answer: usize,
        question: &QuestionSide,
        doubts: &mut Vec<String>,
    ) -> Option<Failure> {
        let m = self.model;
        let QuestionSide {
            retrieved,
            contexts,
            read,
            ..
        } = question;
        let in_context = if !contexts.is_empty() {
            contexts.iter().any(|&(v, _)| self.holds(v, item))
        } else if !read.is_empty() {
            read.iter().any(|&v| self.holds(v, item))
        } else {
            retrieved.iter().any(|&v| self.holds(v, item))
        };
        if in_context {
            return None;
        }
        let was_retrieved = retrieved.iter().find(|&&v| self.holds(v, item)).copied();
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
            _ => self.left_out_of_retrieval(item, flow, answer, question, doubts),
        };
        Some(Failure {
            op,
            error_type: ErrorType::RetrievalError,
            item: index,
            reason,
            confidence,
            last: None,
        })
    }

    /// The op that left out of what it retrieved (or of the context it
    /// built) an item that no retrieved variable holds: the op, the reason
    /// and how sure.
    fn left_out_of_retrieval(
        &self,
        item: &Item,
        flow: &ItemFlow,
        answer: usize,
        question: &QuestionSide,
        doubts: &mut Vec<String>,
    ) -> (usize, String, f64) {
        let m = self.model;
        let QuestionSide {
            retrievals,
            contexts,
            ..
        } = question;
        let live: Vec<usize> = flow
            .carriers
            .iter()
            .filter(|c| c.store && c.end == End::Alive && c.made.is_some())
            .map(|c| c.var)
            .collect();
        let stored: Vec<&str> = live
            .iter()
            .map(|&v| m.vars[v].full_node_id.as_str())
            .take(3)
            .collect();
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
}

/// Where the answer's context comes from (see [`Flow::question_side`]), and
/// what else the answering op read.
struct QuestionSide {
    /// The retrieval ops that read the query.
    retrievals: Vec<usize>,
    /// What they returned.
    retrieved: Vec<usize>,
    /// The contexts the answering op read, each with the op that built it.
    contexts: Vec<(usize, usize)>,
    /// What the answering op read besides the query, prompts and messages.
    read: Vec<usize>,
}
