//! Long-Context: one context unit mutated per message, trimmed to a token
//! window.

use serde_json::json;

use super::memory::State;
use super::plan::{fault_on, Fault, FaultKind};
use super::record::{Rec, Roll};
use super::schedule::Sim;
use super::text::{py_list, words};
use super::types::ErrorType;
use crate::style::{self, Encoding};

impl Sim {
    /// Appends message `m` to the context and trims it to the window.
    pub(super) fn memory_update(
        &self,
        st: &mut State,
        slot: usize,
        m: usize,
        ideal: bool,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let mut piece = self.raw(m);
        if let Some(f) = fault_on(faults, FaultKind::GarbleInput, piece.item) {
            self.garble(&mut piece, slot);
            st.deviate(
                slot,
                piece.item.unwrap_or(0),
                ErrorType::Extraction,
                Some(f),
            );
        }
        for (fi, f) in faults
            .iter()
            .filter(|(_, f)| f.kind == FaultKind::GarbleStored)
        {
            let Some(item) = f.item else { continue };
            if let Some(p) = st
                .window
                .iter_mut()
                .find(|p| p.intact && p.item == Some(item))
            {
                let old = words(&p.text);
                self.garble(p, slot);
                st.window_words = st.window_words + words(&p.text) - old;
                st.deviate(slot, item, ErrorType::Update, Some(*fi));
            }
        }
        st.consumed = m + 1;
        st.window_words += words(&piece.text);
        st.window.push(piece);
        let mut trimmed = 0;
        if !ideal {
            while st.window_words > self.params.window_tokens && st.window.len() > 1 {
                let p = st.window.remove(0);
                st.window_words -= words(&p.text);
                trimmed += 1;
                if let (true, Some(i)) = (p.intact, p.item) {
                    st.deviate(slot, i, ErrorType::Update, None);
                }
            }
        }
        if let Some(rec) = rec {
            rec.memory_update(self, st, slot, m, trimmed);
        }
    }
}

impl Rec<'_> {
    fn memory_update(&mut self, sim: &Sim, st: &State, slot: usize, m: usize, trimmed: usize) {
        let msg = self.message(sim, m);
        let value = match sim.spec.encoding {
            Encoding::Classic => py_list(st.window.iter().map(|p| p.text.as_str())),
            enc => {
                let texts: Vec<&str> = st.window.iter().map(|p| p.text.as_str()).collect();
                let joined = texts.join("\n");
                match enc {
                    Encoding::Json => joined,
                    _ => style::py_repr_str(&joined),
                }
            }
        };
        let (class, name) = Self::ident(sim, "memory_unit", "context", "memory-unit", false);
        let id = self.roll(
            Roll::Context,
            class,
            &name,
            &value,
            "memory_entry",
            "memory_system.memory_update",
            "update",
            &[&msg],
            json!({"trimmed_messages": trimmed, "window_words": st.window_words}),
        );
        self.done(slot, id);
    }
}
