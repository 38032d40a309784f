//! A world read by one system ([`Sim`]): its messages and items, the
//! chunks and episodes they are grouped in, the schedule of ops and the
//! fault plan.

use std::collections::BTreeMap;

use super::memory::Msg;
use super::plan::{Fault, FaultKind, Slot};
use super::types::{SimParams, System};
use crate::style::{self, MessageForm, Style, StyleSpec};
use crate::synth::Rng;
use crate::world::{MessageKind, World};

/// A world read by one system, with its schedule and fault plan.
#[derive(Debug, Clone)]
pub struct Sim {
    pub(super) system: System,
    pub(super) style: Style,
    pub(super) spec: StyleSpec,
    pub(super) world: World,
    pub(super) params: SimParams,
    pub(super) seed: u64,
    pub(super) msgs: Vec<Msg>,
    /// Items as (fact, value).
    pub(super) items: Vec<(usize, usize)>,
    /// Needed items per question.
    pub(super) needs: Vec<Vec<usize>>,
    /// Messages of each RAG chunk / EverMemOS episode.
    pub(super) groups: Vec<Vec<usize>>,
    pub(super) schedule: Vec<Slot>,
    pub(super) plan: Vec<Fault>,
    pub(super) first_question_slot: usize,
    /// The message that states each item.
    pub(super) item_msg: Vec<Option<usize>>,
}

fn chance(rng: &mut Rng, p: f64) -> bool {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p && p > 0.0
}

impl Sim {
    /// Prepares the run of `system` over `world`, planning faults from
    /// `seed`, recorded in the classic style.
    pub fn new(system: System, world: World, params: SimParams, seed: u64) -> Sim {
        Sim::with_style(system, world, params, seed, Style::Classic)
    }

    /// Prepares the run of `system` over `world`, planning faults from
    /// `seed`, recorded in `style`. The schedule and the fault plan do not
    /// depend on the style, except that a Long-Context run whose context is
    /// assembled at answer time has no retrieval to fault (its retrieval
    /// faults become answer faults).
    pub fn with_style(
        system: System,
        world: World,
        params: SimParams,
        seed: u64,
        style: Style,
    ) -> Sim {
        let spec = style.spec();
        let (items, item_of) = items_of(&world);
        let msgs = styled_messages(&world, &spec, &item_of, seed);
        let mut item_msg = vec![None; items.len()];
        for (m, msg) in msgs.iter().enumerate() {
            if let Some(i) = msg.item {
                item_msg[i] = Some(m);
            }
        }
        let needs = world
            .questions
            .iter()
            .map(|q| {
                q.needs
                    .iter()
                    .filter_map(|fv| item_of.get(fv).copied())
                    .collect()
            })
            .collect();
        let mut rng = Rng::new(seed ^ 0x51a1_0c0d_e5ee_d000);
        let groups = group_messages(&msgs, system, &params, &mut rng);
        let (schedule, first_question_slot) =
            schedule_of(system, &groups, msgs.len(), world.questions.len());
        let mut sim = Sim {
            system,
            style,
            spec,
            world,
            params,
            seed,
            msgs,
            items,
            needs,
            groups,
            schedule,
            plan: Vec::new(),
            first_question_slot,
            item_msg,
        };
        sim.plan = sim.plan_faults(&mut rng);
        sim
    }

    /// The system simulated.
    pub fn system(&self) -> System {
        self.system
    }

    /// The style the run is recorded in.
    pub fn style(&self) -> Style {
        self.style
    }

    /// The ids of the messages whose information question `q` needs, as
    /// its query's `metadata.evidence` names them: the world's evidence in
    /// the classic style; in the others exactly the messages that state the
    /// needed items (a knowledge-update question's superseded value is not
    /// required evidence).
    pub fn evidence(&self, q: usize) -> Vec<String> {
        if !self.spec.evidence_needed_only {
            return self.world.questions[q].evidence.clone();
        }
        self.needs[q]
            .iter()
            .filter_map(|&i| self.item_msg[i])
            .map(|m| self.msgs[m].id.clone())
            .collect()
    }

    /// The world read.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The schedule of ops in execution order.
    pub fn schedule(&self) -> &[Slot] {
        &self.schedule
    }

    /// The injected fault plan.
    pub fn plan(&self) -> &[Fault] {
        &self.plan
    }

    /// The items: (index into the world's facts, index into its values).
    pub fn items(&self) -> &[(usize, usize)] {
        &self.items
    }

    /// The items each question needs.
    pub fn needs(&self, question: usize) -> &[usize] {
        &self.needs[question]
    }

    /// The first slot of the question phase (after memory construction).
    pub fn first_question_slot(&self) -> usize {
        self.first_question_slot
    }

    pub(super) fn slot_index(&self, slot: Slot) -> Option<usize> {
        self.schedule.iter().position(|s| *s == slot)
    }

    fn plan_faults(&self, rng: &mut Rng) -> Vec<Fault> {
        let mut plan = Vec::new();
        let n = self.msgs.len();
        for (m, msg) in self.msgs.iter().enumerate() {
            let Some(item) = msg.item else { continue };
            if !chance(rng, self.params.fault_rate) {
                continue;
            }
            let group = self.groups.iter().position(|g| g.contains(&m));
            let later = |rng: &mut Rng, span: usize| (m + 1 + rng.below(span)).min(n - 1);
            let roll = rng.below(100);
            let (slot, kind) = match self.system {
                System::LongContext => {
                    if roll < 50 {
                        (Slot::MemoryUpdate(m), FaultKind::GarbleInput)
                    } else {
                        (Slot::MemoryUpdate(later(rng, 60)), FaultKind::GarbleStored)
                    }
                }
                System::Rag => match group {
                    Some(g) if roll >= 50 => (Slot::Add(g), FaultKind::GarbleInput),
                    _ => (Slot::BufferUpdate(m), FaultKind::DropInput),
                },
                System::Mem0 => match roll {
                    0..=29 => (Slot::ExtractFacts(m), FaultKind::DropInput),
                    30..=41 => (Slot::Decide(m), FaultKind::NoopUpdate),
                    42..=54 => (Slot::Decide(m), FaultKind::DegradeUpdate),
                    55..=79 => (Slot::Decide(later(rng, 150)), FaultKind::Delete),
                    _ => (Slot::Decide(later(rng, 150)), FaultKind::GarbleStored),
                },
                System::EverMemOs => match (group, roll) {
                    (Some(g), 0..=24) => (Slot::Finalize(g), FaultKind::DropInput),
                    (Some(g), 25..=49) => (Slot::ExtractMemory(g), FaultKind::OmitFromSummary),
                    (Some(g), 50..=74) => (Slot::ExtractMemory(g), FaultKind::OmitFromFacts),
                    (Some(g), _) => (Slot::ExtractMemory(g), FaultKind::OmitFromBoth),
                    (None, _) => (Slot::BufferUpdate(m), FaultKind::DropInput),
                },
            };
            if let Some(at) = self.slot_index(slot) {
                plan.push(Fault {
                    slot: at,
                    kind,
                    item: Some(item),
                    question: None,
                });
            }
        }
        for q in 0..self.world.questions.len() {
            if !chance(rng, self.params.question_fault_rate) {
                continue;
            }
            let (slot, kind) = if rng.below(2) == 0 {
                (Slot::Retrieve(q), FaultKind::RetrievalMiss)
            } else {
                (Slot::Answer(q), FaultKind::WrongAnswer)
            };
            // A whole context unit handed to the answer op cannot be half retrieved.
            let (slot, kind) = match (self.system, self.spec.context_at_answer, kind) {
                (System::LongContext, true, FaultKind::RetrievalMiss) => {
                    (Slot::Answer(q), FaultKind::WrongAnswer)
                }
                _ => (slot, kind),
            };
            if let Some(at) = self.slot_index(slot) {
                plan.push(Fault {
                    slot: at,
                    kind,
                    item: None,
                    question: Some(q),
                });
            }
        }
        plan.sort_by_key(|f| f.slot);
        plan
    }
}

/// The position of each item (fact, value) in the list of items.
type ItemPositions = BTreeMap<(usize, usize), usize>;

/// Every fact value as an item (fact, value), and the position of each.
fn items_of(world: &World) -> (Vec<(usize, usize)>, ItemPositions) {
    let mut items = Vec::new();
    let mut item_of = BTreeMap::new();
    for (f, fact) in world.facts.iter().enumerate() {
        for v in 0..fact.values.len() {
            item_of.insert((f, v), items.len());
            items.push((f, v));
        }
    }
    (items, item_of)
}

/// The world's messages as the style records them, each with the item it
/// states.
fn styled_messages(
    world: &World,
    spec: &StyleSpec,
    item_of: &ItemPositions,
    seed: u64,
) -> Vec<Msg> {
    let mut msgs = Vec::new();
    // Decorations of the styled messages come from a generator of their
    // own, so that the schedule and the fault plan stay those of the seed.
    let mut srng = Rng::new(seed ^ 0x57_11e5_c4a7_7e00);
    for (s, session) in world.sessions.iter().enumerate() {
        let time = format!("{:02}:{:02}:00", 8 + srng.below(14), srng.below(60));
        for m in &session.messages {
            let fv = match m.kind {
                MessageKind::Fact { fact, value } | MessageKind::Update { fact, value } => {
                    Some((fact, value))
                }
                _ => None,
            };
            let item = fv.and_then(|fv| item_of.get(&fv).copied());
            let name = &world.speakers[m.speaker];
            let stamp = format!("{}T{time}", session.date);
            let body = if spec.chatty {
                let other = &world.speakers[1 - m.speaker.min(1)];
                let (before, after) = style::chatter(srng.next_u64(), other, item.is_some());
                style::join_sentences([before.as_str(), m.text.as_str(), after.as_str()])
            } else {
                m.text.clone()
            };
            let text = match spec.message {
                MessageForm::Colon => format!("{name}: {body}"),
                MessageForm::Says => format!("Speaker {name} says: {body}\nTimestamp: {stamp}"),
            };
            let said = fv.and_then(|(f, v)| {
                world
                    .said_forms(f, v)
                    .into_iter()
                    .find(|form| m.text.contains(form))
                    .map(str::to_string)
            });
            msgs.push(Msg {
                id: m.id.clone(),
                session: s,
                speaker: m.speaker,
                text,
                body,
                info: item.map(|_| m.text.clone()),
                said,
                stamp,
                item,
                distractor: m.kind == MessageKind::Distractor,
            });
        }
    }
    msgs
}

/// The messages of each RAG chunk or EverMemOS episode; chunks and episodes
/// never cross a session.
fn group_messages(
    msgs: &[Msg],
    system: System,
    params: &SimParams,
    rng: &mut Rng,
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut limit = 0;
    for (i, m) in msgs.iter().enumerate() {
        if open.is_empty() {
            limit = match system {
                System::EverMemOs => 4 + rng.below(7),
                _ => params.chunk_messages.max(1),
            };
        }
        open.push(i);
        let last_of_session = msgs.get(i + 1).is_none_or(|n| n.session != m.session);
        if open.len() >= limit || last_of_session {
            groups.push(std::mem::take(&mut open));
        }
    }
    groups
}

/// The system's ops in order, and the slot of the first question's op.
fn schedule_of(
    system: System,
    groups: &[Vec<usize>],
    n_msgs: usize,
    nq: usize,
) -> (Vec<Slot>, usize) {
    let mut schedule = Vec::new();
    let mut group_of_end: BTreeMap<usize, usize> = BTreeMap::new();
    for (g, members) in groups.iter().enumerate() {
        if let Some(&last) = members.last() {
            group_of_end.insert(last, g);
        }
    }
    for m in 0..n_msgs {
        match system {
            System::LongContext => schedule.push(Slot::MemoryUpdate(m)),
            System::Rag => {
                schedule.push(Slot::BufferUpdate(m));
                if let Some(&g) = group_of_end.get(&m) {
                    schedule.push(Slot::Add(g));
                }
            }
            System::Mem0 => {
                schedule.push(Slot::ExtractFacts(m));
                schedule.push(Slot::Decide(m));
            }
            System::EverMemOs => {
                schedule.push(Slot::BufferUpdate(m));
                schedule.push(Slot::Boundary(m));
                if let Some(&g) = group_of_end.get(&m) {
                    schedule.push(Slot::Finalize(g));
                    schedule.push(Slot::ExtractMemory(g));
                }
            }
        }
    }
    let first_question_slot = schedule.len();
    for q in 0..nq {
        schedule.push(Slot::Retrieve(q));
    }
    for q in 0..nq {
        schedule.push(Slot::Answer(q));
        schedule.push(Slot::Judge(q));
    }
    (schedule, first_question_slot)
}

#[cfg(test)]
mod tests {
    use crate::sim::test_support::{sim, sim_in};
    use crate::sim::System;
    use crate::style::Style;

    #[test]
    fn styled_evidence_names_exactly_the_needed_messages() {
        let s = sim_in(System::Mem0, Style::Budgeted, 5);
        let c = sim(System::Mem0, 5);
        let mut narrower = 0;
        for (q, question) in s.world().questions.iter().enumerate() {
            let e = s.evidence(q);
            assert_eq!(e.len(), s.needs(q).len());
            assert_eq!(c.evidence(q), question.evidence);
            narrower += usize::from(e.len() < question.evidence.len());
        }
        assert!(
            narrower > 0,
            "knowledge-update questions need only the latest value"
        );
    }
}
