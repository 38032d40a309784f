//! Answering a question from its context, and the LLM judge comparing the
//! prediction with the gold answer.

use serde_json::json;

use super::memory::State;
use super::plan::{fault_on, Fault, FaultKind};
use super::record::Rec;
use super::schedule::Sim;
use super::text::py_list;
use super::types::ErrorType;
use crate::builder::VarRef;
use crate::style::Encoding;
use crate::world::QuestionKind;

impl Sim {
    /// Answers question `q` from its context.
    pub(super) fn answer(
        &self,
        st: &mut State,
        slot: usize,
        q: usize,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let complete = st.context_complete[q];
        let wrong = fault_on(faults, FaultKind::WrongAnswer, None);
        st.correct[q] = complete && wrong.is_none();
        if complete {
            if let Some(f) = wrong {
                let item = self.needs[q].first().copied().unwrap_or(0);
                st.deviate(slot, item, ErrorType::Response, Some(f));
            }
        }
        if let Some(rec) = rec {
            let prediction = self.prediction(st, q, wrong.is_some());
            rec.answer(self, st, slot, q, &prediction);
        }
    }

    /// Judges the prediction for question `q`.
    pub(super) fn judge(&self, st: &State, slot: usize, q: usize, rec: Option<&mut Rec>) {
        if let Some(rec) = rec {
            rec.judge(self, slot, q, st.correct[q]);
        }
    }

    /// What the answer model says for question `q`.
    fn prediction(&self, st: &State, q: usize, faulty: bool) -> String {
        let question = &self.world.questions[q];
        if st.correct[q] {
            return question.gold.clone();
        }
        let Some(&need) = self.needs[q].first() else {
            return "The conversation does not say.".into();
        };
        let (fact, value) = self.items[need];
        if faulty && st.context_complete[q] {
            return match question.kind {
                QuestionKind::Temporal => "I am not sure; some time last year.".into(),
                QuestionKind::MultiHop if question.gold.starts_with("Yes") => "No.".into(),
                QuestionKind::MultiHop => "Yes, the same.".into(),
                _ => {
                    let wrong = self.world.wrong_sentence(fact, value, self.seed ^ q as u64);
                    format!("From what I recall: {wrong}.")
                }
            };
        }
        // A stale value of the same fact in the context is what the model repeats.
        let stale = st.retrieved[q].iter().find_map(|p| {
            let i = p.item?;
            (p.intact && self.items[i].0 == fact && i != need).then_some(i)
        });
        match stale {
            Some(i) => {
                let (f, v) = self.items[i];
                self.world.facts[f].values[v].value.clone()
            }
            None => "The conversation does not say.".into(),
        }
    }
}

impl Rec<'_> {
    fn answer(&mut self, sim: &Sim, st: &State, slot: usize, q: usize, prediction: &str) {
        if self.phase < 2 {
            self.phase = 2;
            self.b.session("memory_evaluation", "session", json!({}));
        }
        let prompt = self.prompt(
            "question-answering-prompt",
            "Answer the question from the memories below. Be brief.",
        );
        let out = self.b.variable(
            Some("prediction"),
            &format!("Q{}", q + 1),
            &Self::text(sim, prediction),
            "prediction",
            None,
            json!({}),
        );
        let query = self.queries.get(&q).cloned();
        let id = if sim.spec.context_at_answer {
            // The context is built here, from the units retrieval returned.
            let context = self.b.variable(
                Some("context"),
                &format!("Q{}", q + 1),
                &sim.spec.encoding.blob(&Self::context_text(sim, st, q)),
                "memory_context",
                None,
                json!({}),
            );
            let mut edges: Vec<(String, String, Option<&str>)> = Vec::new();
            for u in self.retrieved_units.get(&q).into_iter().flatten() {
                edges.push((
                    u.full_node_id.clone(),
                    context.full_node_id.clone(),
                    Some("The context is assembled from the retrieved memories."),
                ));
            }
            for v in query.iter().chain([&context, &prompt]) {
                edges.push((v.full_node_id.clone(), out.full_node_id.clone(), None));
            }
            self.b
                .op_edges("question-answering", "evaluation", &edges, json!({}))
        } else {
            let mut inputs: Vec<&VarRef> = Vec::new();
            let context = self.retrieved.get(&q).cloned();
            inputs.extend(query.iter());
            inputs.extend(context.iter());
            inputs.push(&prompt);
            self.b.op(
                "question-answering",
                "evaluation",
                None,
                &inputs,
                &[&out],
                json!({}),
            )
        };
        self.predictions.insert(q, out);
        self.prediction_text.insert(q, prediction.to_string());
        self.done(slot, id);
    }

    fn judge(&mut self, sim: &Sim, slot: usize, q: usize, correct: bool) {
        let question = &sim.world.questions[q];
        let gold_value = match sim.spec.encoding {
            Encoding::Classic => py_list(std::iter::once(question.gold.as_str())),
            enc => enc.value(&json!([question.gold])),
        };
        let gold = self.b.variable(
            Some("golden_answers"),
            &format!("Q{}", q + 1),
            &gold_value,
            "golden_answers",
            None,
            json!({}),
        );
        let response = self.b.variable(
            Some("judge_response"),
            &format!("Q{}", q + 1),
            &Self::text(
                sim,
                if correct {
                    "CORRECT: the prediction matches the gold answer."
                } else {
                    "WRONG: the prediction does not match the gold answer."
                },
            ),
            "judge_response",
            None,
            json!({}),
        );
        let score = self.b.variable(
            Some("judge_score"),
            &format!("Q{}", q + 1),
            if correct { "1.0" } else { "0.0" },
            "judge_score",
            None,
            json!({}),
        );
        let mut edges: Vec<(String, String, Option<&str>)> = Vec::new();
        for v in self
            .queries
            .get(&q)
            .iter()
            .copied()
            .chain(Some(&gold))
            .chain(self.predictions.get(&q))
        {
            edges.push((v.full_node_id.clone(), response.full_node_id.clone(), None));
        }
        edges.push((
            response.full_node_id.clone(),
            score.full_node_id.clone(),
            None,
        ));
        let id = self
            .b
            .op_edges("llm-judge", "evaluation", &edges, json!({}));
        self.done(slot, id);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use crate::sim::test_support::{edges_of, nodes, recorded_doc, sim_in};
    use crate::sim::{Slot, System};
    use crate::style::Style;

    #[test]
    fn answer_time_context_links_queries_to_units_and_assembles_in_the_answer_op() {
        for system in System::ALL {
            let s = sim_in(system, Style::Membase, 5);
            let (r, doc) = recorded_doc(&s);
            let cat: BTreeMap<&str, &str> = nodes(&doc)
                .into_iter()
                .map(|n| {
                    (
                        n["full_node_id"].as_str().unwrap(),
                        n["category"].as_str().unwrap(),
                    )
                })
                .collect();
            let q = 0;
            let retrieve = &r.op_ids[s.slot_index(Slot::Retrieve(q)).unwrap()];
            let answer = &r.op_ids[s.slot_index(Slot::Answer(q)).unwrap()];
            let found = edges_of(&doc, retrieve);
            assert!(!found.is_empty());
            for (src, dst) in &found {
                assert!(src.starts_with("query:"), "{src}");
                assert_eq!(
                    cat.get(dst).copied(),
                    Some("memory_entry"),
                    "{system:?}: {dst}"
                );
            }
            let qa = edges_of(&doc, answer);
            let context: BTreeSet<&str> = qa
                .iter()
                .map(|(_, d)| *d)
                .filter(|d| cat.get(d).copied() == Some("memory_context"))
                .collect();
            assert_eq!(
                context.len(),
                1,
                "{system:?}: the answer op builds one context"
            );
            let context = context.into_iter().next().unwrap();
            assert!(
                qa.iter().any(|(src, _)| *src == context),
                "the context is also read by the answer op"
            );
            assert!(
                qa.iter()
                    .any(|(src, dst)| *dst == context
                        && cat.get(src).copied() == Some("memory_entry"))
            );
        }
    }
}
