//! NaiveRAG: a message buffer (EverMemOS keeps one too) emitting chunks
//! into the store.

use serde_json::{json, Value};

use super::memory::{State, Unit};
use super::plan::{fault_on, Fault, FaultKind};
use super::record::{Rec, Roll};
use super::schedule::Sim;
use super::text::{py_list, words};
use super::types::{ErrorType, System};
use crate::builder::VarRef;
use crate::style::Encoding;

impl Sim {
    /// Appends message `m` to the buffer.
    pub(super) fn buffer_update(
        &self,
        st: &mut State,
        slot: usize,
        m: usize,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let piece = self.raw(m);
        st.consumed = m + 1;
        match fault_on(faults, FaultKind::DropInput, piece.item) {
            Some(f) if piece.item.is_some() => {
                st.deviate(
                    slot,
                    piece.item.unwrap_or(0),
                    ErrorType::Extraction,
                    Some(f),
                );
            }
            _ => st.buffer.push(piece),
        }
        if let Some(rec) = rec {
            rec.buffer_update(self, st, slot, m);
        }
    }

    /// Stores chunk `g`, made from the buffer.
    pub(super) fn add(
        &self,
        st: &mut State,
        slot: usize,
        g: usize,
        ideal: bool,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let mut pieces = std::mem::take(&mut st.buffer);
        for (fi, f) in faults
            .iter()
            .filter(|(_, f)| f.kind == FaultKind::GarbleInput)
        {
            if let Some(p) = pieces.iter_mut().find(|p| p.intact && p.item == f.item) {
                self.garble(p, slot);
                st.deviate(slot, f.item.unwrap_or(0), ErrorType::Extraction, Some(*fi));
            }
        }
        if let (Some(budget), false) = (self.spec.chunk_budget, ideal) {
            pieces = self.truncate(st, slot, pieces, budget, ErrorType::Extraction);
        }
        st.units
            .push(Unit::new("chunk", format!("C{}", g + 1), None, pieces));
        if let Some(rec) = rec {
            rec.add(self, st, slot);
        }
    }
}

impl Rec<'_> {
    fn buffer_update(&mut self, sim: &Sim, st: &State, slot: usize, m: usize) {
        let msg = self.message(sim, m);
        let (value, category) = match sim.spec.encoding {
            Encoding::Classic => (py_list(st.buffer.iter().map(|p| p.text.as_str())), "buffer"),
            enc => {
                let v = if sim.system == System::EverMemOs {
                    Value::Array(st.buffer.iter().map(|p| Self::entry(sim, p)).collect())
                } else {
                    let total: usize = st.buffer.iter().map(|p| words(&p.text)).sum();
                    json!({
                        "buffer_total_tokens": total,
                        "message_buffer": st.buffer.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(),
                    })
                };
                (enc.value(&v), "message_buffer")
            }
        };
        let (class, name) = Self::ident(sim, "buffer", "messages", "message-buffer", false);
        let id = self.roll(
            Roll::Buffer,
            class,
            &name,
            &value,
            category,
            "memory_system.message_buffer_update",
            "update",
            &[&msg],
            json!({}),
        );
        self.done(slot, id);
    }

    fn add(&mut self, sim: &Sim, st: &State, slot: usize) {
        let chunk = self.unit_var(sim, st, st.units.len() - 1);
        let buffer = self.buffer.clone();
        let inputs: Vec<&VarRef> = buffer.iter().collect();
        let metadata = match sim.spec.chunk_budget {
            Some(budget) => json!({"max_words": budget}),
            None => json!({}),
        };
        let id = self.b.op(
            "memory_system.add",
            "update",
            None,
            &inputs,
            &[&chunk],
            metadata,
        );
        self.done(slot, id);
    }
}
