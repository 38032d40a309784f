//! The recorder: a run written through a [`TraceBuilder`] in the style of
//! the run. It keeps the variables later ops read (messages, prompts, the
//! rolling context and buffer, memory units, queries), and writes values as
//! the style encodes them; the ops themselves are recorded where each is run.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::memory::{Piece, State, Unit};
use super::schedule::Sim;
use super::text::py_str;
use super::types::System;
use crate::builder::{TraceBuilder, VarRef};
use crate::style::{self, Encoding, Style};

/// Writes the recorded run through a [`TraceBuilder`].
pub(super) struct Rec<'b> {
    pub(super) b: &'b mut TraceBuilder,
    pub(super) op_ids: Vec<String>,
    session: Option<usize>,
    pub(super) phase: u8,
    messages: BTreeMap<usize, VarRef>,
    pub(super) context: Option<VarRef>,
    pub(super) buffer: Option<VarRef>,
    pub(super) memcell: Option<VarRef>,
    /// The messages an EverMemOS cell kept in place was made from.
    pub(super) cell_data: Value,
    pub(super) facts: Option<VarRef>,
    pub(super) boundary: Option<VarRef>,
    pub(super) units: Vec<Option<VarRef>>,
    /// The text of each unit's latest recorded version.
    pub(super) unit_texts: Vec<Option<String>>,
    prompts: BTreeMap<&'static str, VarRef>,
    pub(super) queries: BTreeMap<usize, VarRef>,
    pub(super) retrieved: BTreeMap<usize, VarRef>,
    /// Context assembled at answer time: the unit versions retrieval returned.
    pub(super) retrieved_units: BTreeMap<usize, Vec<VarRef>>,
    pub(super) predictions: BTreeMap<usize, VarRef>,
    pub(super) prediction_text: BTreeMap<usize, String>,
}

impl<'b> Rec<'b> {
    /// A recorder writing through `b`.
    pub(super) fn new(b: &'b mut TraceBuilder) -> Rec<'b> {
        Rec {
            b,
            op_ids: Vec::new(),
            session: None,
            phase: 0,
            messages: BTreeMap::new(),
            context: None,
            buffer: None,
            memcell: None,
            cell_data: Value::Null,
            facts: None,
            boundary: None,
            units: Vec::new(),
            unit_texts: Vec::new(),
            prompts: BTreeMap::new(),
            queries: BTreeMap::new(),
            retrieved: BTreeMap::new(),
            retrieved_units: BTreeMap::new(),
            predictions: BTreeMap::new(),
            prediction_text: BTreeMap::new(),
        }
    }

    /// Notes `op_id` as the op of `slot`.
    pub(super) fn done(&mut self, slot: usize, op_id: String) {
        debug_assert_eq!(self.op_ids.len(), slot);
        self.op_ids.push(op_id);
    }

    /// Opens the construction session of message `m` when it starts.
    fn enter(&mut self, sim: &Sim, m: usize) {
        let s = sim.msgs[m].session;
        if self.session != Some(s) {
            self.session = Some(s);
            let ws = &sim.world.sessions[s];
            if let Some(day) = crate::world::days_of(&ws.date) {
                self.b.set_day(day);
            }
            self.b.session(
                "memory_construction",
                "session",
                json!({"conversation_session": ws.number, "date": ws.date}),
            );
        }
    }

    pub(super) fn prompt(&mut self, id: &'static str, text: &str) -> VarRef {
        if let Some(v) = self.prompts.get(id) {
            return v.clone();
        }
        let v = self.b.variable(
            None,
            id,
            &py_str(text),
            "prompt",
            None,
            json!({"prompt_id": id}),
        );
        self.prompts.insert(id, v.clone());
        v
    }

    /// A plain string as the style records it.
    pub(super) fn text(sim: &Sim, s: &str) -> String {
        match sim.spec.encoding {
            Encoding::Classic => py_str(s),
            _ => style::py_repr_str(s),
        }
    }

    /// The class and name of a variable that a uuid-naming style calls
    /// `<prefix>-<hex>` without a class (`hex` false: `<prefix>` alone).
    pub(super) fn ident(
        sim: &Sim,
        class: &'static str,
        name: &str,
        prefix: &str,
        hex: bool,
    ) -> (Option<&'static str>, String) {
        if !sim.spec.uuid_names {
            return (Some(class), name.to_string());
        }
        if !hex {
            return (None, prefix.to_string());
        }
        let dashed = sim.system != System::EverMemOs;
        let key = format!("{class}:{name}");
        (
            None,
            format!("{prefix}-{}", style::hex_id(&key, sim.seed, dashed)),
        )
    }

    pub(super) fn message(&mut self, sim: &Sim, m: usize) -> VarRef {
        self.enter(sim, m);
        let msg = &sim.msgs[m];
        let ws = &sim.world.sessions[msg.session];
        let name = &sim.world.speakers[msg.speaker];
        let (value, metadata) = if sim.style == Style::Classic {
            (
                py_str(&msg.text),
                json!({"speaker": name, "session": ws.number, "date": ws.date}),
            )
        } else {
            let mut meta = Map::new();
            if sim.spec.speaker_tag {
                let tag = if msg.speaker == 0 {
                    "speaker_a"
                } else {
                    "speaker_b"
                };
                meta.insert("speaker_tag".into(), json!(tag));
            }
            meta.insert("dia_id".into(), json!(msg.id));
            meta.insert("timestamp".into(), json!(msg.stamp));
            meta.insert(sim.spec.speaker_key.into(), json!(name));
            let value = match sim.spec.encoding {
                Encoding::Json => msg.text.clone(),
                _ => style::py_repr_str(&msg.text),
            };
            (value, Value::Object(meta))
        };
        let v = self
            .b
            .variable(Some("message"), &msg.id, &value, "message", None, metadata);
        self.messages.insert(m, v.clone());
        v
    }

    /// A new version of a rolling variable (context, buffer): created by the
    /// op the first time, mutated afterwards.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn roll(
        &mut self,
        which: Roll,
        class: Option<&str>,
        name: &str,
        value: &str,
        category: &str,
        op: &str,
        op_category: &str,
        inputs: &[&VarRef],
        metadata: Value,
    ) -> String {
        let current = match which {
            Roll::Context => self.context.clone(),
            Roll::Buffer => self.buffer.clone(),
        };
        let (next, id) = match current {
            Some(cur) => {
                let (next, id) =
                    self.b
                        .mutate(&cur, class, name, value, category, op, op_category, inputs);
                self.b.set_op_metadata(&id, metadata);
                (next, id)
            }
            None => {
                let next = self
                    .b
                    .variable(class, name, value, category, None, json!({}));
                let id = self.b.op(op, op_category, None, inputs, &[&next], metadata);
                (next, id)
            }
        };
        match which {
            Roll::Context => self.context = Some(next),
            Roll::Buffer => self.buffer = Some(next),
        }
        id
    }

    /// An EverMemOS buffer entry: the words of a message and who said them.
    pub(super) fn entry(sim: &Sim, p: &Piece) -> Value {
        let msg = p.msg.map(|m| &sim.msgs[m]);
        json!({
            "content": p.body,
            "message_id": msg.map_or("", |m| m.id.as_str()),
            "speaker_name": msg.map_or("", |m| sim.world.speakers[m.speaker].as_str()),
            "timestamp": msg.map_or("", |m| m.stamp.as_str()),
        })
    }

    fn stamp<'s>(sim: &'s Sim, p: &Piece) -> &'s str {
        p.msg.map_or("", |m| sim.msgs[m].stamp.as_str())
    }

    /// A unit's text as a context shows it.
    fn display(sim: &Sim, unit: &Unit) -> String {
        let texts: Vec<&str> = unit.all().map(|p| p.text.as_str()).collect();
        match unit.class {
            "chunk" => texts.join("\n"),
            "memory" => {
                let at = unit.pieces.last().map_or("", |p| Self::stamp(sim, p));
                format!("[{at}] {}", texts.join(" "))
            }
            _ => texts.join(" "),
        }
    }

    /// A memory unit's value as the style records it; `id` is its name.
    pub(super) fn unit_value(sim: &Sim, unit: &Unit, id: &str, original: Option<&Value>) -> String {
        if sim.style == Style::Classic {
            return py_str(&unit.text());
        }
        let texts = |ps: &[Piece]| -> Vec<String> { ps.iter().map(|p| p.text.clone()).collect() };
        let id = id.strip_prefix("memory-unit-").unwrap_or(id);
        let v = match unit.class {
            "chunk" => json!({
                "content": texts(&unit.pieces).join("\n"),
                "id": id,
                "timestamp": unit.pieces.first().map_or("", |p| Self::stamp(sim, p)),
            }),
            "memory" => {
                let mut m = Map::new();
                m.insert("id".into(), json!(id));
                m.insert(
                    sim.spec.unit_text_key.into(),
                    json!(texts(&unit.pieces).join(" ")),
                );
                m.insert(
                    "timestamp".into(),
                    json!(unit.pieces.last().map_or("", |p| Self::stamp(sim, p))),
                );
                Value::Object(m)
            }
            "episode" => json!({"episode": texts(&unit.pieces).join(" "), "event_id": id}),
            "atomic_fact" => json!({"atomic_fact": texts(&unit.pieces).join(" "), "event_id": id}),
            _ => json!({
                "atomic_facts": texts(&unit.atomic),
                "episode": texts(&unit.pieces).join(" "),
                "event_id": id,
                "original_data": original.cloned().unwrap_or(Value::Null),
            }),
        };
        sim.spec.encoding.value(&v)
    }

    pub(super) fn unit_ident(sim: &Sim, unit: &Unit) -> (Option<&'static str>, String) {
        Self::ident(sim, unit.class, &unit.name, "memory-unit", true)
    }

    pub(super) fn unit_var(&mut self, sim: &Sim, st: &State, u: usize) -> VarRef {
        let unit = &st.units[u];
        let (class, name) = Self::unit_ident(sim, unit);
        let value = Self::unit_value(sim, unit, &name, None);
        let v = self
            .b
            .variable(class, &name, &value, "memory_entry", None, json!({}));
        if self.units.len() <= u {
            self.units.resize(u + 1, None);
        }
        if self.unit_texts.len() <= u {
            self.unit_texts.resize(u + 1, None);
        }
        self.units[u] = Some(v.clone());
        self.unit_texts[u] = Some(unit.text());
        v
    }

    /// The context a question is answered from, as text: the Long-Context
    /// window, or the retrieved units one by one.
    pub(super) fn context_text(sim: &Sim, st: &State, q: usize) -> String {
        if sim.system == System::LongContext {
            let texts: Vec<&str> = st.retrieved[q].iter().map(|p| p.text.as_str()).collect();
            return texts.join("\n");
        }
        let parts: Vec<String> = st.retrieved_units[q]
            .iter()
            .enumerate()
            .map(|(i, &u)| {
                format!(
                    "### Memory {}:\n{}",
                    i + 1,
                    Self::display(sim, &st.units[u])
                )
            })
            .collect();
        parts.join("\n\n")
    }
}

/// The rolling variables of a run.
#[derive(Debug, Clone, Copy)]
pub(super) enum Roll {
    Context,
    Buffer,
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::sim::test_support::{nodes, recorded_doc, sim, sim_in};
    use crate::sim::System;
    use crate::style::Style;

    #[test]
    fn styled_messages_are_framed_as_the_style_says() {
        let s = sim_in(System::Rag, Style::Membase, 4);
        let (_, doc) = recorded_doc(&s);
        let messages: Vec<&Value> = nodes(&doc)
            .into_iter()
            .filter(|n| n["class_name"] == "message")
            .collect();
        assert!(!messages.is_empty());
        let mut longer = 0;
        for n in &messages {
            let v = n["value"].as_str().unwrap();
            let who = n["metadata"]["speakers"].as_str().unwrap();
            assert!(v.starts_with(&format!("Speaker {who} says: ")), "{v}");
            assert!(v.contains("\nTimestamp: 20"), "{v}");
            assert!(
                n["metadata"]["speaker"].is_null(),
                "the speaker is not under `speaker`"
            );
            let tag = n["metadata"]["speaker_tag"].as_str().unwrap();
            assert!(tag == "speaker_a" || tag == "speaker_b");
            longer += usize::from(v.matches(['.', '!', '?']).count() > 1);
        }
        assert!(
            longer * 3 > messages.len(),
            "many messages say more than one sentence"
        );
        let s = sim_in(System::Mem0, Style::Narrative, 4);
        let (_, doc) = recorded_doc(&s);
        let first = nodes(&doc)
            .into_iter()
            .find(|n| n["class_name"] == "message")
            .unwrap()
            .clone();
        assert!(first["metadata"]["speaker_name"].is_string(), "{first}");
        let classic = recorded_doc(&sim(System::Mem0, 4)).1;
        let first = nodes(&classic)
            .into_iter()
            .find(|n| n["class_name"] == "message")
            .unwrap()
            .clone();
        assert!(first["metadata"]["speaker"].is_string(), "{first}");
    }
}
