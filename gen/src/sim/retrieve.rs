//! Retrieval for a question: the Long-Context window as it stands, or the
//! top units of a BM25 index over the store.

use memtrace_text::Bm25;
use serde_json::json;

use super::memory::{Form, Piece, State, Unit};
use super::plan::{fault_on, Fault, FaultKind};
use super::record::Rec;
use super::schedule::Sim;
use super::text::{py_list, py_str};
use super::types::{ErrorType, System};
use crate::builder::VarRef;
use crate::style::{self, Style};

impl Sim {
    /// What retrieval matches a unit by: its text, and for raw messages
    /// that still state a fact, the fact's topic and the session date (what
    /// a dense retriever would see in them).
    fn index_text(&self, unit: &Unit) -> String {
        let mut text = unit.text();
        for p in unit.all() {
            if let (true, Some(i), true) = (p.intact, p.item, p.form != Form::Fact) {
                let (fact, value) = self.items[i];
                text.push(' ');
                text.push_str(self.world.topic(fact));
                text.push(' ');
                text.push_str(&self.world.facts[fact].values[value].date);
            }
        }
        text
    }

    /// Retrieves the context of question `q`.
    pub(super) fn retrieve(
        &self,
        st: &mut State,
        slot: usize,
        q: usize,
        ideal: bool,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let needs = &self.needs[q];
        let chosen: Vec<usize> = if self.system == System::LongContext {
            Vec::new()
        } else if ideal {
            (0..st.units.len())
                .filter(|&u| needs.iter().any(|&i| st.units[u].holds(i)))
                .collect()
        } else {
            let miss = fault_on(faults, FaultKind::RetrievalMiss, None);
            if st.bm25.is_none() {
                let mut index = Bm25::new();
                let live: Vec<usize> = (0..st.units.len())
                    .filter(|&u| !st.units[u].deleted)
                    .collect();
                for &u in &live {
                    index.add(&self.index_text(&st.units[u]));
                }
                st.bm25 = Some((index, live));
            }
            let (index, live) = st.bm25.as_ref().expect("index built above");
            let text = &self.world.questions[q].text;
            let ranked = index.top(text, live.len());
            let mut out = Vec::new();
            let mut skipped = false;
            for (d, _) in ranked {
                let u = live[d];
                if miss.is_some() && needs.iter().any(|&i| st.units[u].holds(i)) {
                    skipped = true;
                    continue;
                }
                out.push(u);
                if out.len() >= self.params.top_k {
                    break;
                }
            }
            if let (true, Some(f)) = (skipped, miss) {
                st.fired[f] = true;
            }
            out
        };
        let mut context: Vec<Piece> = if self.system == System::LongContext {
            st.window.clone()
        } else {
            chosen
                .iter()
                .flat_map(|&u| st.units[u].all().cloned())
                .collect()
        };
        if self.system == System::LongContext {
            if let Some(f) = fault_on(faults, FaultKind::RetrievalMiss, None) {
                let before = context.len();
                context.retain(|p| !p.item.is_some_and(|i| needs.contains(&i)));
                if context.len() < before {
                    st.fired[f] = true;
                }
            }
        }
        for &i in needs {
            let in_store = if self.system == System::LongContext {
                st.window.iter().any(|p| p.intact && p.item == Some(i))
            } else {
                st.units.iter().any(|u| u.holds(i))
            };
            let got = context.iter().any(|p| p.intact && p.item == Some(i));
            if in_store && !got {
                let injected = fault_on(faults, FaultKind::RetrievalMiss, None);
                st.deviate(slot, i, ErrorType::Retrieval, injected);
            }
        }
        st.context_complete[q] = needs
            .iter()
            .all(|&i| context.iter().any(|p| p.intact && p.item == Some(i)));
        st.retrieved[q] = context;
        st.retrieved_units[q] = chosen;
        if let Some(rec) = rec {
            rec.retrieve(self, st, slot, q);
        }
    }
}

impl Rec<'_> {
    fn retrieve(&mut self, sim: &Sim, st: &State, slot: usize, q: usize) {
        if self.phase < 1 {
            self.phase = 1;
            self.b.session("memory_search", "session", json!({}));
        }
        let question = &sim.world.questions[q];
        let names: Vec<String> = sim
            .evidence(q)
            .iter()
            .map(|e| format!("message:{e}"))
            .collect();
        let classic = sim.style == Style::Classic;
        let (value, metadata) = if classic {
            (
                py_str(&question.text),
                json!({"evidence": names, "question_kind": question.kind.name()}),
            )
        } else {
            (
                style::py_repr_str(&question.text),
                json!({
                    "question_type": question.kind.name(),
                    "evidence": names,
                    "speaker_names": sim.world.speakers,
                }),
            )
        };
        let query = self.b.variable(
            Some("query"),
            &format!("Q{}", q + 1),
            &value,
            "message & query",
            None,
            metadata,
        );
        let mut units: Vec<VarRef> = Vec::new();
        if sim.system == System::LongContext {
            units.extend(self.context.clone());
        } else {
            for &u in &st.retrieved_units[q] {
                if let Some(Some(v)) = self.units.get(u) {
                    units.push(v.clone());
                }
            }
        }
        if sim.spec.context_at_answer {
            // Retrieval returns the units; the answer op assembles them.
            let outs: Vec<&VarRef> = units.iter().collect();
            let id = self.b.op(
                sim.system.retrieval_op(),
                "retrieval",
                None,
                &[&query],
                &outs,
                json!({"top_k": sim.params.top_k}),
            );
            self.queries.insert(q, query);
            self.retrieved_units.insert(q, units);
            self.done(slot, id);
            return;
        }
        let context_value = if classic {
            py_list(st.retrieved[q].iter().map(|p| p.text.as_str()))
        } else {
            sim.spec.encoding.blob(&Self::context_text(sim, st, q))
        };
        let context = self.b.variable(
            Some(if classic {
                "retrieved_memories"
            } else {
                "context"
            }),
            &format!("Q{}", q + 1),
            &context_value,
            "memory_context",
            None,
            json!({}),
        );
        let mut sources: Vec<VarRef> = vec![query.clone()];
        sources.extend(units);
        let inputs: Vec<&VarRef> = sources.iter().collect();
        let id = self.b.op(
            sim.system.retrieval_op(),
            "retrieval",
            None,
            &inputs,
            &[&context],
            json!({"top_k": sim.params.top_k}),
        );
        self.queries.insert(q, query);
        self.retrieved.insert(q, context);
        self.done(slot, id);
    }
}
