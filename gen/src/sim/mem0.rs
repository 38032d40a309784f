//! Mem0-like: facts extracted from each message, then ADD/UPDATE/DELETE
//! decisions against the memory units.

use serde_json::{json, Value};

use super::memory::{Form, Piece, State, Unit};
use super::plan::{fault_on, Fault, FaultKind};
use super::record::Rec;
use super::schedule::Sim;
use super::text::py_list;
use super::types::ErrorType;
use crate::builder::VarRef;
use crate::style::{Encoding, Style};

/// What a decision did to the memory units.
#[derive(Debug, Clone)]
enum Event {
    Add(usize),
    Update(usize),
    Delete(usize),
    Noop(String),
}

impl Sim {
    /// Extracts the facts of message `m`.
    pub(super) fn extract_facts(
        &self,
        st: &mut State,
        slot: usize,
        m: usize,
        ideal: bool,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        st.consumed = m + 1;
        let msg = &self.msgs[m];
        st.pending.clear();
        let classic = self.style == Style::Classic;
        if let Some(item) = msg.item {
            match fault_on(faults, FaultKind::DropInput, Some(item)) {
                Some(f) => st.deviate(slot, item, ErrorType::Extraction, Some(f)),
                None => {
                    let mut piece = self.extracted(item, self.spec.extraction);
                    if let Some(budget) = self.spec.fact_budget {
                        // The sentences after the informative one come
                        // along, then the budget cuts.
                        let msg = &self.msgs[m];
                        let info = msg.info.as_deref().unwrap_or_default();
                        if let Some((_, rest)) = msg.body.split_once(info) {
                            if !rest.trim().is_empty() && piece.form == Form::Sentence {
                                piece.text = format!("{} {}", piece.text, rest.trim());
                            }
                        }
                        if !ideal {
                            st.pending =
                                self.truncate(st, slot, vec![piece], budget, ErrorType::Extraction);
                        } else {
                            st.pending.push(piece);
                        }
                    } else {
                        st.pending.push(piece);
                    }
                }
            }
        } else if msg.distractor && classic {
            st.pending.push(Self::plain(format!(
                "{} mentioned something about another person: {}",
                self.world.speakers[msg.speaker],
                msg.text.split_once(": ").map_or("", |(_, t)| t)
            )));
        } else if msg.distractor || (!classic && self.keeps_chat(m)) {
            st.pending.push(self.note(m, self.spec.extraction));
        }
        if let Some(rec) = rec {
            rec.extract_facts(self, st, slot, m);
        }
    }

    /// Decides ADD/UPDATE/DELETE for the facts of message `m`.
    pub(super) fn decide(
        &self,
        st: &mut State,
        slot: usize,
        m: usize,
        ideal: bool,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let mut events = Vec::new();
        for piece in std::mem::take(&mut st.pending) {
            events.extend(self.decide_piece(st, slot, m, ideal, faults, piece));
        }
        self.fault_stored(st, slot, faults, &mut events);
        if let Some(rec) = rec {
            rec.decide(self, st, slot, m, &events);
        }
    }

    /// Files one extracted piece of message `m` into the memory units (a
    /// new unit, or an update of the unit that holds its fact), unless a
    /// fault loses it; returns what that did.
    fn decide_piece(
        &self,
        st: &mut State,
        slot: usize,
        m: usize,
        ideal: bool,
        faults: &[(usize, &Fault)],
        mut piece: Piece,
    ) -> Vec<Event> {
        let shared = self.spec.shared_units;
        // Shared units belong to one speaker and session.
        let owner = shared.then_some((self.msgs[m].speaker, self.msgs[m].session));
        let fact_of = |p: &Piece| p.item.map(|i| self.items[i].0);
        let mut events = Vec::new();
        let Some(item) = piece.item else {
            match open_unit(&st.units, owner).filter(|_| shared) {
                Some(u) => {
                    st.units[u].pieces.push(piece);
                    events.push(Event::Update(u));
                }
                None => events.push(add_unit(&mut st.units, owner, None, piece)),
            }
            return events;
        };
        // A new fact that the decision ignores or garbles never
        // reaches a memory unit: MemTrace calls that an
        // ExtractionError, in every style.
        let lost_new = ErrorType::Extraction;
        if let Some(f) = fault_on(faults, FaultKind::NoopUpdate, Some(item)) {
            st.deviate(slot, item, lost_new, Some(f));
            events.push(Event::Noop(piece.text.clone()));
            return events;
        }
        if let Some(f) = fault_on(faults, FaultKind::DegradeUpdate, Some(item)) {
            self.garble(&mut piece, slot);
            st.deviate(slot, item, lost_new, Some(f));
        }
        let fact = self.items[item].0;
        let existing = if shared {
            st.units
                .iter()
                .position(|u| !u.deleted && u.pieces.iter().any(|p| fact_of(p) == Some(fact)))
        } else {
            st.units
                .iter()
                .position(|u| !u.deleted && u.key == Some(fact))
        };
        match existing {
            Some(u)
                if !ideal
                    && (self.seed ^ m as u64).wrapping_mul(0x2545_f491_4f6c_dd1d) >> 61 < 2
                    && st.units[u].pieces.len() == 1 =>
            {
                // Mem0 sometimes replaces instead of updating: no loss.
                st.units[u].deleted = true;
                events.push(Event::Delete(u));
                events.push(add_unit(&mut st.units, owner, Some(fact), piece));
            }
            Some(u) if shared => {
                // The unit is mutated in place: the fact's sentence
                // is rewritten, the others stay.
                let unit = &mut st.units[u];
                if let Some(at) = unit.pieces.iter().position(|p| fact_of(p) == Some(fact)) {
                    unit.pieces[at] = piece;
                }
                events.push(Event::Update(u));
            }
            Some(u) => {
                st.units[u].pieces = vec![piece];
                events.push(Event::Update(u));
            }
            None => match open_unit(&st.units, owner).filter(|_| shared) {
                Some(u) => {
                    st.units[u].pieces.push(piece);
                    events.push(Event::Update(u));
                }
                None => events.push(add_unit(&mut st.units, owner, Some(fact), piece)),
            },
        }
        events
    }

    /// The faults that act on stored units after the decision: a deleted
    /// unit (with what else it held) or a garbled stored fact.
    fn fault_stored(
        &self,
        st: &mut State,
        slot: usize,
        faults: &[(usize, &Fault)],
        events: &mut Vec<Event>,
    ) {
        for (fi, f) in faults {
            let Some(item) = f.item else { continue };
            let Some(u) = st.units.iter().position(|u| u.holds(item)) else {
                continue;
            };
            match f.kind {
                FaultKind::Delete => {
                    st.units[u].deleted = true;
                    events.push(Event::Delete(u));
                    st.deviate(slot, item, ErrorType::Deletion, Some(*fi));
                    // What else the unit held goes with it.
                    let others: Vec<usize> = st.units[u]
                        .pieces
                        .iter()
                        .filter(|p| p.intact)
                        .filter_map(|p| p.item)
                        .filter(|&i| i != item)
                        .collect();
                    for i in others {
                        st.deviate(slot, i, ErrorType::Deletion, Some(*fi));
                    }
                }
                FaultKind::GarbleStored if self.style == Style::Classic => {
                    let mut p = self.fact_piece(item);
                    self.garble(&mut p, slot);
                    st.units[u].pieces = vec![p];
                    events.push(Event::Update(u));
                    st.deviate(slot, item, ErrorType::Update, Some(*fi));
                }
                FaultKind::GarbleStored => {
                    let mut pieces = std::mem::take(&mut st.units[u].pieces);
                    if let Some(p) = pieces.iter_mut().find(|p| p.intact && p.item == Some(item)) {
                        self.garble(p, slot);
                    }
                    st.units[u].pieces = pieces;
                    events.push(Event::Update(u));
                    st.deviate(slot, item, ErrorType::Update, Some(*fi));
                }
                _ => {}
            }
        }
    }
}

/// The newest unit of `owner` (speaker, session) with room left: with
/// shared units, it takes the next piece.
fn open_unit(units: &[Unit], owner: Option<(usize, usize)>) -> Option<usize> {
    units
        .iter()
        .rposition(|u| !u.deleted && u.owner == owner && u.pieces.len() < 3)
}

/// Adds a unit holding `piece` under `key`, owned by `owner` when units are
/// shared.
fn add_unit(
    units: &mut Vec<Unit>,
    owner: Option<(usize, usize)>,
    key: Option<usize>,
    piece: Piece,
) -> Event {
    let mut unit = Unit::new("memory", format!("m{}", units.len() + 1), key, vec![piece]);
    unit.owner = owner;
    units.push(unit);
    Event::Add(units.len() - 1)
}

impl Rec<'_> {
    fn extract_facts(&mut self, sim: &Sim, st: &State, slot: usize, m: usize) {
        let msg = self.message(sim, m);
        let prompt = self.prompt(
            "fact-extraction-system-prompt",
            "Extract the personal facts the speaker states about themselves, one per line.",
        );
        let (class, value, category) = match sim.spec.encoding {
            Encoding::Classic => (
                "facts",
                py_list(st.pending.iter().map(|p| p.text.as_str())),
                "extracted_facts",
            ),
            enc => {
                let texts: Vec<&str> = st.pending.iter().map(|p| p.text.as_str()).collect();
                ("extracted_facts", enc.value(&json!(texts)), "llm_response")
            }
        };
        let facts = self.b.variable(
            Some(class),
            &sim.msgs[m].id,
            &value,
            category,
            None,
            json!({}),
        );
        let id = self.b.op(
            "memory_system.extract_facts",
            "extraction",
            None,
            &[&msg, &prompt],
            &[&facts],
            json!({}),
        );
        self.facts = Some(facts);
        self.done(slot, id);
    }

    fn decide(&mut self, sim: &Sim, st: &State, slot: usize, m: usize, events: &[Event]) {
        let prompt = self.prompt(
            "memory-update-decision-prompt",
            "For each new fact decide ADD, UPDATE, DELETE or NONE against the related memories.",
        );
        let classic = sim.style == Style::Classic;
        // A styled record names each unit once per decision.
        let mut seen = std::collections::BTreeSet::new();
        let events: Vec<&Event> = events
            .iter()
            .filter(|e| match e {
                Event::Add(u) | Event::Update(u) if !classic => seen.insert(*u),
                _ => true,
            })
            .collect();
        let described = self.described_events(sim, st, &events, classic);
        let (class, value, category) = if classic {
            (
                "decision",
                Value::Array(described).to_string(),
                "memory_decision",
            )
        } else {
            (
                "update_action",
                sim.spec.encoding.value(&json!({"memory": described})),
                "llm_response",
            )
        };
        let decision = self.b.variable(
            Some(class),
            &sim.msgs[m].id,
            &value,
            category,
            None,
            json!({}),
        );
        let edges = self.decision_edges(sim, st, &events, &decision, &prompt, classic);
        let id = self.b.op_edges(
            "memory_system.update_memory_decision",
            "update",
            &edges,
            json!({}),
        );
        self.done(slot, id);
    }

    /// Each decision event as the recorded decision lists it.
    fn described_events(
        &self,
        sim: &Sim,
        st: &State,
        events: &[&Event],
        classic: bool,
    ) -> Vec<Value> {
        let unit_id = |u: usize| {
            if classic {
                st.units[u].name.clone()
            } else {
                let (_, name) = Self::unit_ident(sim, &st.units[u]);
                name.strip_prefix("memory-unit-")
                    .unwrap_or(&name)
                    .to_string()
            }
        };
        let mut described = Vec::new();
        for e in events {
            described.push(match e {
                Event::Add(u) => {
                    json!({"event": "ADD", "id": unit_id(*u), "text": st.units[*u].text()})
                }
                Event::Update(u) if !classic => {
                    let old = self.unit_texts.get(*u).cloned().flatten();
                    json!({"event": "UPDATE", "id": unit_id(*u), "old_memory": old, "text": st.units[*u].text()})
                }
                Event::Update(u) => {
                    json!({"event": "UPDATE", "id": unit_id(*u), "text": st.units[*u].text()})
                }
                Event::Delete(u) => json!({"event": "DELETE", "id": unit_id(*u)}),
                Event::Noop(t) => json!({"event": "NONE", "text": t}),
            });
        }
        described
    }

    /// The edges of the decision op: from the facts and the prompt to the
    /// decision, and from the decision to each unit it wrote or deleted.
    fn decision_edges(
        &mut self,
        sim: &Sim,
        st: &State,
        events: &[&Event],
        decision: &VarRef,
        prompt: &VarRef,
        classic: bool,
    ) -> Vec<(String, String, Option<&'static str>)> {
        let mut edges: Vec<(String, String, Option<&'static str>)> = Vec::new();
        if let Some(f) = &self.facts {
            edges.push((f.full_node_id.clone(), decision.full_node_id.clone(), None));
        }
        edges.push((
            prompt.full_node_id.clone(),
            decision.full_node_id.clone(),
            None,
        ));
        for e in events {
            match e {
                Event::Add(u) => {
                    let v = self.unit_var(sim, st, *u);
                    edges.push((decision.full_node_id.clone(), v.full_node_id, Some("ADD")));
                }
                Event::Update(u) => {
                    let old = self.units.get(*u).cloned().flatten();
                    let v = self.unit_var(sim, st, *u);
                    if let Some(old) = old {
                        edges.push((
                            old.full_node_id,
                            v.full_node_id.clone(),
                            Some("Version lineage."),
                        ));
                    }
                    edges.push((
                        decision.full_node_id.clone(),
                        v.full_node_id,
                        Some("UPDATE"),
                    ));
                }
                Event::Delete(u) => {
                    let old = self.units.get(*u).cloned().flatten();
                    let (name, category) = if classic {
                        (st.units[*u].name.clone(), "delete_marker")
                    } else {
                        (Self::unit_ident(sim, &st.units[*u]).1, "marker")
                    };
                    let marker = self.b.variable(
                        Some("delete_marker"),
                        &name,
                        "'DELETED'",
                        category,
                        None,
                        json!({}),
                    );
                    if let Some(old) = old {
                        edges.push((
                            old.full_node_id,
                            marker.full_node_id.clone(),
                            Some("DELETE"),
                        ));
                    }
                    edges.push((
                        decision.full_node_id.clone(),
                        marker.full_node_id,
                        Some("DELETE"),
                    ));
                }
                Event::Noop(_) => {}
            }
        }
        edges
    }
}
