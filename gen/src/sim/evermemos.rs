//! EverMemOS-like: boundary detection over the buffer, episodes closed
//! into memory cells, and episode summaries with atomic facts extracted
//! from them.

use serde_json::{json, Value};

use super::memory::{Piece, State, Unit};
use super::plan::{fault_on, Fault, FaultKind};
use super::record::Rec;
use super::schedule::Sim;
use super::text::py_list;
use super::types::ErrorType;
use crate::builder::VarRef;
use crate::style::Style;

impl Sim {
    /// The name of EverMemOS episode `g`'s memory cell.
    fn cell_name(&self, g: usize) -> String {
        format!("E{}", g + 1)
    }

    /// Decides whether an episode ends after message `m`.
    pub(super) fn boundary(&self, slot: usize, m: usize, rec: Option<&mut Rec>) {
        if let Some(rec) = rec {
            let ends = self.groups.iter().any(|g| g.last() == Some(&m));
            rec.boundary(self, slot, m, ends);
        }
    }

    /// Closes episode `g` into a memory cell.
    pub(super) fn finalize(
        &self,
        st: &mut State,
        slot: usize,
        g: usize,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let mut cell = std::mem::take(&mut st.buffer);
        for (fi, f) in faults
            .iter()
            .filter(|(_, f)| f.kind == FaultKind::DropInput)
        {
            if let Some(at) = cell.iter().position(|p| p.intact && p.item == f.item) {
                cell.remove(at);
                st.deviate(slot, f.item.unwrap_or(0), ErrorType::Extraction, Some(*fi));
            }
        }
        st.memcell = cell;
        if let Some(rec) = rec {
            rec.finalize(self, st, slot, g);
        }
    }

    /// Extracts the episode summary and atomic facts of episode `g`.
    pub(super) fn extract_memory(
        &self,
        st: &mut State,
        slot: usize,
        g: usize,
        ideal: bool,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let classic = self.style == Style::Classic;
        let cell = std::mem::take(&mut st.memcell);
        let mut summary = Vec::new();
        let mut facts = Vec::new();
        let mut chat = 0;
        if !classic {
            let date = self.groups[g]
                .first()
                .map(|&m| self.world.sessions[self.msgs[m].session].date.as_str())
                .unwrap_or_default();
            let [a, b] = &self.world.speakers;
            summary.push(Self::plain(format!("On {date}, {a} and {b} talked.")));
        }
        for p in &cell {
            let Some(item) = p.item.filter(|_| p.intact) else {
                chat += 1;
                if let Some(m) = p
                    .msg
                    .filter(|&m| !classic && p.item.is_none() && self.keeps_chat(m))
                {
                    summary.push(self.note(m, self.spec.summary));
                }
                continue;
            };
            let omit = |kind| fault_on(faults, kind, Some(item));
            let both = omit(FaultKind::OmitFromBoth);
            let no_summary = omit(FaultKind::OmitFromSummary).or(both);
            let no_facts = omit(FaultKind::OmitFromFacts).or(both);
            if let Some(f) = no_summary {
                st.deviate(slot, item, ErrorType::Extraction, Some(f));
            } else {
                summary.push(self.extracted(item, self.spec.summary));
            }
            if let Some(f) = no_facts {
                if no_summary != Some(f) {
                    st.deviate(slot, item, ErrorType::Extraction, Some(f));
                }
            } else {
                facts.push(self.extracted(item, self.spec.extraction));
            }
        }
        if chat > 0 && classic {
            summary.push(Self::plain(format!(
                "They also chatted about everyday things ({chat} messages)."
            )));
        }
        if let (Some(budget), false) = (self.spec.summary_budget, ideal) {
            summary = self.truncate(st, slot, summary, budget, ErrorType::Extraction);
        }
        let first = st.units.len();
        if self.spec.cell_in_place {
            // One cell, written over by this op: the episode and
            // the atomic facts replace the messages it held.
            let mut unit = Unit::new("memcell", self.cell_name(g), None, summary);
            unit.atomic = facts;
            st.units.push(unit);
        } else {
            st.units
                .push(Unit::new("episode", format!("E{}", g + 1), None, summary));
            for (j, p) in facts.into_iter().enumerate() {
                st.units.push(Unit::new(
                    "atomic_fact",
                    format!("E{}.{}", g + 1, j + 1),
                    p.item,
                    vec![p],
                ));
            }
        }
        if let Some(rec) = rec {
            rec.extract_memory(self, st, slot, g, first);
        }
    }
}

impl Rec<'_> {
    fn boundary(&mut self, sim: &Sim, slot: usize, m: usize, ends: bool) {
        let decision = if sim.style == Style::Classic {
            self.b.variable(
                Some("boundary"),
                &sim.msgs[m].id,
                if ends { "True" } else { "False" },
                "boundary_decision",
                None,
                json!({}),
            )
        } else {
            let reasoning = if ends {
                "The conversation moves on to something else; the episode ends here."
            } else {
                "The new message continues the current episode."
            };
            let value = sim
                .spec
                .encoding
                .value(&json!({"reasoning": reasoning, "should_end": ends}));
            self.b.variable(
                Some("boundary_detection_result"),
                &sim.msgs[m].id,
                &value,
                "llm_response",
                None,
                json!({}),
            )
        };
        let buffer = self.buffer.clone();
        let inputs: Vec<&VarRef> = buffer.iter().collect();
        let id = self.b.op(
            "evermemos.boundary_detection",
            "boundary_detection",
            None,
            &inputs,
            &[&decision],
            json!({}),
        );
        self.boundary = Some(decision);
        self.done(slot, id);
    }

    fn finalize(&mut self, sim: &Sim, st: &State, slot: usize, g: usize) {
        let n = self.op_ids.len();
        let cell = match (sim.style, sim.spec.cell_in_place) {
            (Style::Classic, _) => self.b.variable(
                Some("memcell"),
                &format!("M{n}"),
                &py_list(st.memcell.iter().map(|p| p.text.as_str())),
                "memcell",
                None,
                json!({}),
            ),
            (_, true) => {
                // The cell is a memory unit from here on; extraction writes
                // its next versions.
                let entries =
                    Value::Array(st.memcell.iter().map(|p| Self::entry(sim, p)).collect());
                let (class, name) =
                    Self::ident(sim, "memcell", &sim.cell_name(g), "memory-unit", true);
                let id = name
                    .strip_prefix("memory-unit-")
                    .unwrap_or(&name)
                    .to_string();
                let value = sim.spec.encoding.value(&json!({
                    "episode": null,
                    "event_id": id,
                    "original_data": entries,
                }));
                self.cell_data = entries;
                self.b
                    .variable(class, &name, &value, "memory_entry", None, json!({}))
            }
            (_, false) => {
                let entries =
                    Value::Array(st.memcell.iter().map(|p| Self::entry(sim, p)).collect());
                self.b.variable(
                    Some("memcell"),
                    &format!("M{n}"),
                    &sim.spec.encoding.value(&entries),
                    "memcell",
                    None,
                    json!({}),
                )
            }
        };
        let buffer = self.buffer.clone();
        let boundary = self.boundary.clone();
        let inputs: Vec<&VarRef> = buffer.iter().chain(boundary.iter()).collect();
        let id = self.b.op(
            "memory_system.finalize_memory_unit",
            "initialization",
            None,
            &inputs,
            &[&cell],
            json!({}),
        );
        self.memcell = Some(cell);
        self.done(slot, id);
    }

    fn extract_memory(&mut self, sim: &Sim, st: &State, slot: usize, g: usize, first: usize) {
        let prompt = self.prompt(
            "episode-memory-extraction-prompt",
            "Write the episode as a short narrative, then list its atomic facts with dates.",
        );
        let cell = self.memcell.clone();
        if sim.spec.cell_in_place && sim.style != Style::Classic {
            let (Some(cell), Some(unit)) = (cell, st.units.get(first)) else {
                return;
            };
            let texts =
                |ps: &[Piece]| -> Vec<String> { ps.iter().map(|p| p.text.clone()).collect() };
            let (class, name) = Self::unit_ident(sim, unit);
            let episode = self.b.variable(
                Some("episode_memory"),
                &sim.cell_name(g),
                &sim.spec.encoding.value(&json!({
                    "atomic_facts": texts(&unit.atomic),
                    "episode": texts(&unit.pieces).join(" "),
                })),
                "llm_response",
                None,
                json!({}),
            );
            let original = std::mem::take(&mut self.cell_data);
            let with_data = self.b.variable(
                class,
                &name,
                &Self::unit_value(sim, unit, &name, Some(&original)),
                "memory_entry",
                None,
                json!({}),
            );
            let done = self.b.variable(
                class,
                &name,
                &Self::unit_value(sim, unit, &name, None),
                "memory_entry",
                None,
                json!({}),
            );
            let edges: Vec<(String, String, Option<&str>)> = vec![
                (
                    cell.full_node_id.clone(),
                    episode.full_node_id.clone(),
                    None,
                ),
                (
                    prompt.full_node_id.clone(),
                    episode.full_node_id.clone(),
                    None,
                ),
                (
                    cell.full_node_id.clone(),
                    with_data.full_node_id.clone(),
                    Some("Version lineage."),
                ),
                (
                    episode.full_node_id.clone(),
                    with_data.full_node_id.clone(),
                    None,
                ),
                (
                    with_data.full_node_id.clone(),
                    done.full_node_id.clone(),
                    Some("Version lineage."),
                ),
            ];
            if self.units.len() <= first {
                self.units.resize(first + 1, None);
            }
            self.units[first] = Some(done);
            let id = self.b.op_edges(
                "memory_system.extract_memory",
                "extraction",
                &edges,
                json!({}),
            );
            self.done(slot, id);
            return;
        }
        let outputs: Vec<VarRef> = (first..st.units.len())
            .map(|u| self.unit_var(sim, st, u))
            .collect();
        let mut inputs: Vec<&VarRef> = cell.iter().collect();
        inputs.push(&prompt);
        let outs: Vec<&VarRef> = outputs.iter().collect();
        let id = self.b.op(
            "memory_system.extract_memory",
            "extraction",
            None,
            &inputs,
            &outs,
            json!({}),
        );
        self.done(slot, id);
    }
}
