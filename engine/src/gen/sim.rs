//! Four simulated memory systems (Long-Context, RAG, Mem0-like,
//! EverMemOS-like) reading a synthetic world, with injected faults, natural
//! failures, counterfactual replay and labels.
//!
//! A run is a fixed schedule of operations ("slots"): the memory
//! construction ops of the system, then per question a retrieval, a
//! question-answering and an llm-judge op. The schedule depends only on the
//! world, so the same slot can be run as recorded (the system's policy, with
//! its injected faults and natural failures) or ideally (lossless and
//! complete) in a counterfactual [`Intervention`].
//!
//! Information is followed as *items*: one item per fact value of the world.
//! Memory holds items in pieces of text; a degraded piece no longer carries
//! its item. The label of a failed question is the earliest op `k` such that
//! with every op up to `k` as recorded and every later op ideal the answer is
//! wrong (while with `k` repaired it is right): the op after which the needed
//! information can no longer reach the answer. The recorded run finds it by
//! watching, after each op, which items still live anywhere (pending input,
//! buffers, memory units, retrieved context); tests confirm each label by
//! actually replaying the interventions.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::builder::{TraceBuilder, VarRef};
use super::world::{MessageKind, QuestionKind, World};
use crate::synth::Rng;
use crate::text::Bm25;

/// A simulated memory system, named as MemBase names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum System {
    /// One context unit mutated per message, trimmed to a token window.
    LongContext,
    /// A message buffer emitting chunks, BM25 top-k retrieval.
    Rag,
    /// Fact extraction, ADD/UPDATE/DELETE decisions, vector-store search.
    Mem0,
    /// Buffer, boundary detection, memory cells, episodes and atomic facts.
    EverMemOs,
}

impl System {
    /// The four systems, in the order `--system all` cycles through them.
    pub const ALL: [System; 4] = [
        System::LongContext,
        System::Rag,
        System::Mem0,
        System::EverMemOs,
    ];

    /// The name used on the command line and as the trace's `project_id`.
    pub fn name(self) -> &'static str {
        match self {
            System::LongContext => "long_context",
            System::Rag => "rag",
            System::Mem0 => "mem0",
            System::EverMemOs => "evermemos",
        }
    }

    /// The system of a name given by [`System::name`].
    pub fn parse(name: &str) -> Option<System> {
        System::ALL.into_iter().find(|s| s.name() == name)
    }

    fn retrieval_op(self) -> &'static str {
        match self {
            System::LongContext | System::Rag => "memory_system.retrieve",
            System::Mem0 => "memory_system.search_vector_store",
            System::EverMemOs => "memory_system.hybrid_retrieval",
        }
    }
}

/// The five error types of the MemTrace taxonomy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorType {
    /// The information never enters any memory unit.
    Extraction,
    /// A unit had it; a later update removed or degraded it.
    Update,
    /// A unit holding it was explicitly removed.
    Deletion,
    /// The store holds it; retrieval left it out of the context.
    Retrieval,
    /// The context holds all evidence; the answer is still wrong.
    Response,
}

impl ErrorType {
    /// All five, in taxonomy order.
    pub const ALL: [ErrorType; 5] = [
        ErrorType::Extraction,
        ErrorType::Update,
        ErrorType::Deletion,
        ErrorType::Retrieval,
        ErrorType::Response,
    ];

    /// The label as MemTraceBench writes it (`ExtractionError`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorType::Extraction => "ExtractionError",
            ErrorType::Update => "UpdateError",
            ErrorType::Deletion => "DeletionError",
            ErrorType::Retrieval => "RetrievalError",
            ErrorType::Response => "ResponseError",
        }
    }
}

/// Sizes and rates of the simulated systems.
#[derive(Debug, Clone, PartialEq)]
pub struct SimParams {
    /// Long-Context window, in words.
    pub window_tokens: usize,
    /// RAG messages per chunk.
    pub chunk_messages: usize,
    /// Units retrieved per question (RAG, Mem0, EverMemOS).
    pub top_k: usize,
    /// Probability that a fact value gets a fault during memory construction.
    pub fault_rate: f64,
    /// Probability that a question gets a retrieval or response fault.
    pub question_fault_rate: f64,
}

impl Default for SimParams {
    fn default() -> Self {
        SimParams {
            window_tokens: 4000,
            chunk_messages: 6,
            top_k: 5,
            fault_rate: 0.15,
            question_fault_rate: 0.06,
        }
    }
}

/// What an injected fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The op drops the item of its input message.
    DropInput,
    /// The op stores its input message cut off, so the item is lost.
    GarbleInput,
    /// The op corrupts an item already stored in a memory unit.
    GarbleStored,
    /// An update decision ignores a new fact.
    NoopUpdate,
    /// An update decision stores a new fact with a wrong value.
    DegradeUpdate,
    /// An update decision deletes the unit holding an item.
    Delete,
    /// Episode extraction leaves the item out of the episode summary only.
    OmitFromSummary,
    /// Episode extraction leaves the item out of the atomic facts only.
    OmitFromFacts,
    /// Episode extraction leaves the item out of both.
    OmitFromBoth,
    /// Retrieval leaves out the units holding the question's items.
    RetrievalMiss,
    /// The answer is wrong although the context holds the evidence.
    WrongAnswer,
}

impl FaultKind {
    /// The name written into the fault plan.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::DropInput => "drop_input",
            FaultKind::GarbleInput => "garble_input",
            FaultKind::GarbleStored => "garble_stored",
            FaultKind::NoopUpdate => "noop_update",
            FaultKind::DegradeUpdate => "degrade_update",
            FaultKind::Delete => "delete",
            FaultKind::OmitFromSummary => "omit_from_summary",
            FaultKind::OmitFromFacts => "omit_from_facts",
            FaultKind::OmitFromBoth => "omit_from_both",
            FaultKind::RetrievalMiss => "retrieval_miss",
            FaultKind::WrongAnswer => "wrong_answer",
        }
    }

    /// The error type the fault is meant to cause where it is decisive.
    pub fn intended(self) -> ErrorType {
        match self {
            FaultKind::DropInput
            | FaultKind::GarbleInput
            | FaultKind::OmitFromSummary
            | FaultKind::OmitFromFacts
            | FaultKind::OmitFromBoth => ErrorType::Extraction,
            FaultKind::GarbleStored | FaultKind::NoopUpdate | FaultKind::DegradeUpdate => {
                ErrorType::Update
            }
            FaultKind::Delete => ErrorType::Deletion,
            FaultKind::RetrievalMiss => ErrorType::Retrieval,
            FaultKind::WrongAnswer => ErrorType::Response,
        }
    }
}

/// One planned fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The slot (op in execution order) it is injected at.
    pub slot: usize,
    /// What it does.
    pub kind: FaultKind,
    /// The item it targets (construction faults).
    pub item: Option<usize>,
    /// The question it targets (retrieval and response faults).
    pub question: Option<usize>,
}

/// Which ops of a replay run ideally instead of as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intervention {
    /// Ops from this slot on run ideally.
    pub ideal_from: Option<usize>,
    /// These ops run ideally (repaired).
    pub repaired: Vec<usize>,
}

impl Intervention {
    /// Every op as recorded.
    pub fn recorded() -> Intervention {
        Intervention::default()
    }

    /// Ops before `slot` as recorded, `slot` repaired, later ops ideal.
    pub fn repair_then_ideal(slot: usize) -> Intervention {
        Intervention {
            ideal_from: Some(slot),
            repaired: Vec::new(),
        }
    }

    /// Ops up to and including `slot` as recorded, later ops ideal.
    pub fn recorded_through(slot: usize) -> Intervention {
        Intervention {
            ideal_from: Some(slot + 1),
            repaired: Vec::new(),
        }
    }

    fn ideal(&self, slot: usize) -> bool {
        self.ideal_from.is_some_and(|f| slot >= f) || self.repaired.contains(&slot)
    }
}

/// One op of the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Long-Context: append message `m` to the context, trim to the window.
    MemoryUpdate(usize),
    /// RAG, EverMemOS: append message `m` to the buffer.
    BufferUpdate(usize),
    /// RAG: store chunk `c` made from the buffer.
    Add(usize),
    /// Mem0: extract facts from message `m`.
    ExtractFacts(usize),
    /// Mem0: decide ADD/UPDATE/DELETE for the facts of message `m`.
    Decide(usize),
    /// EverMemOS: decide whether an episode ends after message `m`.
    Boundary(usize),
    /// EverMemOS: close episode `e` into a memory cell.
    Finalize(usize),
    /// EverMemOS: extract the episode summary and atomic facts of episode `e`.
    ExtractMemory(usize),
    /// Retrieval for question `q`.
    Retrieve(usize),
    /// Question answering for question `q`.
    Answer(usize),
    /// LLM judge for question `q`.
    Judge(usize),
}

/// The label of a failed question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// The question.
    pub question: usize,
    /// The earliest decisive op.
    pub slot: usize,
    /// Its error type.
    pub error_type: ErrorType,
}

/// A local deviation from ideal behaviour: at `slot`, `item` (or the
/// question's context) was lost or degraded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deviation {
    /// Where.
    pub slot: usize,
    /// Which item.
    pub item: usize,
    /// How it is typed.
    pub error_type: ErrorType,
    /// Whether an injected fault (not the system's own behaviour) did it.
    pub injected: bool,
}

/// The outcome of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Per question: was the prediction right?
    pub correct: Vec<bool>,
    /// Local deviations from ideal behaviour, in execution order.
    pub deviations: Vec<Deviation>,
    /// Per planned fault: did it change anything?
    pub fired: Vec<bool>,
    /// Per item: the op after which it lived nowhere (construction only).
    pub deaths: Vec<Option<(usize, ErrorType)>>,
    /// Per question: did the retrieved context hold every needed item?
    pub context_complete: Vec<bool>,
}

#[derive(Debug, Clone)]
struct Msg {
    id: String,
    session: usize,
    speaker: usize,
    text: String,
    item: Option<usize>,
    distractor: bool,
}

#[derive(Debug, Clone)]
struct Piece {
    item: Option<usize>,
    intact: bool,
    text: String,
}

#[derive(Debug, Clone)]
struct Unit {
    class: &'static str,
    name: String,
    key: Option<usize>,
    pieces: Vec<Piece>,
    deleted: bool,
}

impl Unit {
    fn text(&self) -> String {
        let parts: Vec<&str> = self.pieces.iter().map(|p| p.text.as_str()).collect();
        parts.join(" ")
    }

    fn holds(&self, item: usize) -> bool {
        !self.deleted && self.pieces.iter().any(|p| p.intact && p.item == Some(item))
    }
}

/// A world read by one system, with its schedule and fault plan.
#[derive(Debug, Clone)]
pub struct Sim {
    system: System,
    world: World,
    params: SimParams,
    seed: u64,
    msgs: Vec<Msg>,
    /// Items as (fact, value).
    items: Vec<(usize, usize)>,
    /// Needed items per question.
    needs: Vec<Vec<usize>>,
    /// Messages of each RAG chunk / EverMemOS episode.
    groups: Vec<Vec<usize>>,
    schedule: Vec<Slot>,
    plan: Vec<Fault>,
    first_question_slot: usize,
}

fn chance(rng: &mut Rng, p: f64) -> bool {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p && p > 0.0
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// A Python-style `repr` of a string, as smartcomment stores values.
pub fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn py_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let parts: Vec<String> = items.map(py_str).collect();
    format!("[{}]", parts.join(", "))
}

impl Sim {
    /// Prepares the run of `system` over `world`, planning faults from `seed`.
    pub fn new(system: System, world: World, params: SimParams, seed: u64) -> Sim {
        let mut items = Vec::new();
        let mut item_of = BTreeMap::new();
        for (f, fact) in world.facts.iter().enumerate() {
            for v in 0..fact.values.len() {
                item_of.insert((f, v), items.len());
                items.push((f, v));
            }
        }
        let mut msgs = Vec::new();
        for (s, session) in world.sessions.iter().enumerate() {
            for m in &session.messages {
                let item = match m.kind {
                    MessageKind::Fact { fact, value } | MessageKind::Update { fact, value } => {
                        item_of.get(&(fact, value)).copied()
                    }
                    _ => None,
                };
                msgs.push(Msg {
                    id: m.id.clone(),
                    session: s,
                    speaker: m.speaker,
                    text: format!("{}: {}", world.speakers[m.speaker], m.text),
                    item,
                    distractor: m.kind == MessageKind::Distractor,
                });
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
        // Chunks and episodes never cross a session.
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
        let mut schedule = Vec::new();
        let mut group_of_end: BTreeMap<usize, usize> = BTreeMap::new();
        for (g, members) in groups.iter().enumerate() {
            if let Some(&last) = members.last() {
                group_of_end.insert(last, g);
            }
        }
        for m in 0..msgs.len() {
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
        let nq = world.questions.len();
        for q in 0..nq {
            schedule.push(Slot::Retrieve(q));
        }
        for q in 0..nq {
            schedule.push(Slot::Answer(q));
            schedule.push(Slot::Judge(q));
        }
        let mut sim = Sim {
            system,
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
        };
        sim.plan = sim.plan_faults(&mut rng);
        sim
    }

    /// The system simulated.
    pub fn system(&self) -> System {
        self.system
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

    fn slot_index(&self, slot: Slot) -> Option<usize> {
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

    /// Replays the run under an intervention: which questions are answered right.
    pub fn replay(&self, intervention: &Intervention) -> Vec<bool> {
        self.execute(intervention, None).correct
    }

    /// Runs every op as recorded and records the trace.
    pub fn record(&self, builder: &mut TraceBuilder) -> Recorded {
        let mut rec = Rec::new(builder);
        let outcome = self.execute(&Intervention::recorded(), Some(&mut rec));
        let op_ids = rec.op_ids;
        let mut predictions = vec![String::new(); self.world.questions.len()];
        for (q, p) in rec.prediction_text {
            predictions[q] = p;
        }
        let labels = self.labels(&outcome);
        Recorded {
            outcome,
            op_ids,
            labels,
            predictions,
        }
    }

    /// Labels of the failed questions of a recorded outcome.
    pub fn labels(&self, outcome: &Outcome) -> Vec<Label> {
        let mut labels = Vec::new();
        for (q, &right) in outcome.correct.iter().enumerate() {
            if right {
                continue;
            }
            let death = self.needs[q]
                .iter()
                .filter_map(|&i| outcome.deaths[i])
                .min_by_key(|(slot, _)| *slot);
            let (slot, error_type) = match death {
                Some(d) => d,
                None if !outcome.context_complete[q] => (
                    self.slot_index(Slot::Retrieve(q)).unwrap_or(0),
                    ErrorType::Retrieval,
                ),
                None => (
                    self.slot_index(Slot::Answer(q)).unwrap_or(0),
                    ErrorType::Response,
                ),
            };
            labels.push(Label {
                question: q,
                slot,
                error_type,
            });
        }
        labels
    }

    /// What retrieval matches a unit by: its text, and for raw messages
    /// that still state a fact, the fact's topic and the session date (what
    /// a dense retriever would see in them).
    fn index_text(&self, unit: &Unit) -> String {
        let mut text = unit.text();
        for p in &unit.pieces {
            if let (true, Some(i), true) = (p.intact, p.item, p.text.contains(": ")) {
                let (fact, value) = self.items[i];
                text.push(' ');
                text.push_str(self.world.topic(fact));
                text.push(' ');
                text.push_str(&self.world.facts[fact].values[value].date);
            }
        }
        text
    }

    fn raw(&self, m: usize) -> Piece {
        let msg = &self.msgs[m];
        Piece {
            item: msg.item,
            intact: true,
            text: msg.text.clone(),
        }
    }

    fn fact_piece(&self, item: usize) -> Piece {
        let (f, v) = self.items[item];
        Piece {
            item: Some(item),
            intact: true,
            text: self.world.fact_sentence(f, v),
        }
    }

    fn garble(&self, piece: &mut Piece, slot: usize) {
        piece.intact = false;
        piece.text = match piece.item {
            Some(item) if !piece.text.contains(": ") => {
                let (f, v) = self.items[item];
                self.world
                    .wrong_sentence(f, v, self.seed ^ (slot as u64).wrapping_mul(31))
            }
            _ => {
                let cut: Vec<&str> = piece.text.split_whitespace().take(3).collect();
                format!("{} …", cut.join(" "))
            }
        };
    }

    fn execute(&self, iv: &Intervention, mut rec: Option<&mut Rec>) -> Outcome {
        let nq = self.world.questions.len();
        let mut st = State {
            consumed: 0,
            window: Vec::new(),
            window_words: 0,
            buffer: Vec::new(),
            memcell: Vec::new(),
            pending: Vec::new(),
            units: Vec::new(),
            retrieved: vec![Vec::new(); nq],
            retrieved_units: vec![Vec::new(); nq],
            correct: vec![false; nq],
            deviations: Vec::new(),
            fired: vec![false; self.plan.len()],
            deaths: vec![None; self.items.len()],
            context_complete: vec![false; nq],
            bm25: None,
        };
        let mut alive = self.alive(&st);
        for (slot, &what) in self.schedule.iter().enumerate() {
            let ideal = iv.ideal(slot);
            let faults: Vec<(usize, &Fault)> = if ideal {
                Vec::new()
            } else {
                self.plan
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.slot == slot)
                    .collect()
            };
            let before = st.deviations.len();
            self.step(&mut st, slot, what, ideal, &faults, rec.as_deref_mut());
            if slot < self.first_question_slot {
                let now = self.alive(&st);
                for (i, (&was, &is)) in alive.iter().zip(&now).enumerate() {
                    if was && !is && st.deaths[i].is_none() {
                        let typed = st.deviations[before..]
                            .iter()
                            .rev()
                            .find(|d| d.item == i)
                            .map_or(ErrorType::Update, |d| d.error_type);
                        st.deaths[i] = Some((slot, typed));
                    }
                }
                alive = now;
            }
        }
        Outcome {
            correct: st.correct,
            deviations: st.deviations,
            fired: st.fired,
            deaths: st.deaths,
            context_complete: st.context_complete,
        }
    }

    /// Items that live somewhere: in unread messages, buffers, memory units.
    fn alive(&self, st: &State) -> Vec<bool> {
        let mut alive = vec![false; self.items.len()];
        for m in &self.msgs[st.consumed.min(self.msgs.len())..] {
            if let Some(i) = m.item {
                alive[i] = true;
            }
        }
        let held = st
            .window
            .iter()
            .chain(&st.buffer)
            .chain(&st.memcell)
            .chain(&st.pending)
            .chain(
                st.units
                    .iter()
                    .filter(|u| !u.deleted)
                    .flat_map(|u| u.pieces.iter()),
            );
        for p in held {
            if let (true, Some(i)) = (p.intact, p.item) {
                alive[i] = true;
            }
        }
        alive
    }

    fn deviate(
        &self,
        st: &mut State,
        slot: usize,
        item: usize,
        error_type: ErrorType,
        fault: Option<usize>,
    ) {
        if let Some(f) = fault {
            st.fired[f] = true;
        }
        st.deviations.push(Deviation {
            slot,
            item,
            error_type,
            injected: fault.is_some(),
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        st: &mut State,
        slot: usize,
        what: Slot,
        ideal: bool,
        faults: &[(usize, &Fault)],
        rec: Option<&mut Rec>,
    ) {
        let fault_on = |kind: FaultKind, item: Option<usize>| {
            faults
                .iter()
                .find(|(_, f)| f.kind == kind && (item.is_none() || f.item == item))
                .map(|(i, _)| *i)
        };
        match what {
            Slot::MemoryUpdate(m) => {
                let mut piece = self.raw(m);
                if let Some(f) = fault_on(FaultKind::GarbleInput, piece.item) {
                    self.garble(&mut piece, slot);
                    self.deviate(
                        st,
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
                        self.deviate(st, slot, item, ErrorType::Update, Some(*fi));
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
                            self.deviate(st, slot, i, ErrorType::Update, None);
                        }
                    }
                }
                if let Some(rec) = rec {
                    rec.memory_update(self, st, slot, m, trimmed);
                }
            }
            Slot::BufferUpdate(m) => {
                let piece = self.raw(m);
                st.consumed = m + 1;
                match fault_on(FaultKind::DropInput, piece.item) {
                    Some(f) if piece.item.is_some() => {
                        self.deviate(
                            st,
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
            Slot::Add(g) => {
                let mut pieces = std::mem::take(&mut st.buffer);
                for (fi, f) in faults
                    .iter()
                    .filter(|(_, f)| f.kind == FaultKind::GarbleInput)
                {
                    if let Some(p) = pieces.iter_mut().find(|p| p.intact && p.item == f.item) {
                        self.garble(p, slot);
                        self.deviate(
                            st,
                            slot,
                            f.item.unwrap_or(0),
                            ErrorType::Extraction,
                            Some(*fi),
                        );
                    }
                }
                st.units.push(Unit {
                    class: "chunk",
                    name: format!("C{}", g + 1),
                    key: None,
                    pieces,
                    deleted: false,
                });
                if let Some(rec) = rec {
                    rec.add(self, st, slot);
                }
            }
            Slot::ExtractFacts(m) => {
                st.consumed = m + 1;
                let msg = &self.msgs[m];
                st.pending.clear();
                if let Some(item) = msg.item {
                    match fault_on(FaultKind::DropInput, Some(item)) {
                        Some(f) => self.deviate(st, slot, item, ErrorType::Extraction, Some(f)),
                        None => st.pending.push(self.fact_piece(item)),
                    }
                } else if msg.distractor {
                    st.pending.push(Piece {
                        item: None,
                        intact: true,
                        text: format!(
                            "{} mentioned something about another person: {}",
                            self.world.speakers[msg.speaker],
                            msg.text.split_once(": ").map_or("", |(_, t)| t)
                        ),
                    });
                }
                if let Some(rec) = rec {
                    rec.extract_facts(self, st, slot, m);
                }
            }
            Slot::Decide(m) => {
                let mut events = Vec::new();
                for mut piece in std::mem::take(&mut st.pending) {
                    let Some(item) = piece.item else {
                        st.units.push(Unit {
                            class: "memory",
                            name: format!("m{}", st.units.len() + 1),
                            key: None,
                            pieces: vec![piece],
                            deleted: false,
                        });
                        events.push(Event::Add(st.units.len() - 1));
                        continue;
                    };
                    if let Some(f) = fault_on(FaultKind::NoopUpdate, Some(item)) {
                        self.deviate(st, slot, item, ErrorType::Update, Some(f));
                        events.push(Event::Noop(piece.text.clone()));
                        continue;
                    }
                    if let Some(f) = fault_on(FaultKind::DegradeUpdate, Some(item)) {
                        self.garble(&mut piece, slot);
                        self.deviate(st, slot, item, ErrorType::Update, Some(f));
                    }
                    let fact = self.items[item].0;
                    let existing = st
                        .units
                        .iter()
                        .position(|u| !u.deleted && u.key == Some(fact));
                    match existing {
                        Some(u)
                            if !ideal
                                && (self.seed ^ m as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)
                                    >> 61
                                    < 2 =>
                        {
                            // Mem0 sometimes replaces instead of updating: no loss.
                            st.units[u].deleted = true;
                            events.push(Event::Delete(u));
                            st.units.push(Unit {
                                class: "memory",
                                name: format!("m{}", st.units.len() + 1),
                                key: Some(fact),
                                pieces: vec![piece],
                                deleted: false,
                            });
                            events.push(Event::Add(st.units.len() - 1));
                        }
                        Some(u) => {
                            st.units[u].pieces = vec![piece];
                            events.push(Event::Update(u));
                        }
                        None => {
                            st.units.push(Unit {
                                class: "memory",
                                name: format!("m{}", st.units.len() + 1),
                                key: Some(fact),
                                pieces: vec![piece],
                                deleted: false,
                            });
                            events.push(Event::Add(st.units.len() - 1));
                        }
                    }
                }
                for (fi, f) in faults {
                    let Some(item) = f.item else { continue };
                    let Some(u) = st.units.iter().position(|u| u.holds(item)) else {
                        continue;
                    };
                    match f.kind {
                        FaultKind::Delete => {
                            st.units[u].deleted = true;
                            events.push(Event::Delete(u));
                            self.deviate(st, slot, item, ErrorType::Deletion, Some(*fi));
                        }
                        FaultKind::GarbleStored => {
                            let mut p = self.fact_piece(item);
                            self.garble(&mut p, slot);
                            st.units[u].pieces = vec![p];
                            events.push(Event::Update(u));
                            self.deviate(st, slot, item, ErrorType::Update, Some(*fi));
                        }
                        _ => {}
                    }
                }
                if let Some(rec) = rec {
                    rec.decide(self, st, slot, m, &events);
                }
            }
            Slot::Boundary(m) => {
                if let Some(rec) = rec {
                    let ends = self.groups.iter().any(|g| g.last() == Some(&m));
                    rec.boundary(self, slot, m, ends);
                }
            }
            Slot::Finalize(_) => {
                let mut cell = std::mem::take(&mut st.buffer);
                for (fi, f) in faults
                    .iter()
                    .filter(|(_, f)| f.kind == FaultKind::DropInput)
                {
                    if let Some(at) = cell.iter().position(|p| p.intact && p.item == f.item) {
                        cell.remove(at);
                        self.deviate(
                            st,
                            slot,
                            f.item.unwrap_or(0),
                            ErrorType::Extraction,
                            Some(*fi),
                        );
                    }
                }
                st.memcell = cell;
                if let Some(rec) = rec {
                    rec.finalize(self, st, slot);
                }
            }
            Slot::ExtractMemory(g) => {
                let cell = std::mem::take(&mut st.memcell);
                let mut summary = Vec::new();
                let mut facts = Vec::new();
                let mut chat = 0;
                for p in &cell {
                    let Some(item) = p.item.filter(|_| p.intact) else {
                        chat += 1;
                        continue;
                    };
                    let omit = |kind| fault_on(kind, Some(item));
                    let both = omit(FaultKind::OmitFromBoth);
                    let no_summary = omit(FaultKind::OmitFromSummary).or(both);
                    let no_facts = omit(FaultKind::OmitFromFacts).or(both);
                    if let Some(f) = no_summary {
                        self.deviate(st, slot, item, ErrorType::Extraction, Some(f));
                    } else {
                        summary.push(self.fact_piece(item));
                    }
                    if let Some(f) = no_facts {
                        if no_summary != Some(f) {
                            self.deviate(st, slot, item, ErrorType::Extraction, Some(f));
                        }
                    } else {
                        facts.push(self.fact_piece(item));
                    }
                }
                if chat > 0 {
                    summary.push(Piece {
                        item: None,
                        intact: true,
                        text: format!("They also chatted about everyday things ({chat} messages)."),
                    });
                }
                let first = st.units.len();
                st.units.push(Unit {
                    class: "episode",
                    name: format!("E{}", g + 1),
                    key: None,
                    pieces: summary,
                    deleted: false,
                });
                for (j, p) in facts.into_iter().enumerate() {
                    st.units.push(Unit {
                        class: "atomic_fact",
                        name: format!("E{}.{}", g + 1, j + 1),
                        key: p.item,
                        pieces: vec![p],
                        deleted: false,
                    });
                }
                if let Some(rec) = rec {
                    rec.extract_memory(self, st, slot, g, first);
                }
            }
            Slot::Retrieve(q) => {
                let needs = &self.needs[q];
                let chosen: Vec<usize> = if self.system == System::LongContext {
                    Vec::new()
                } else if ideal {
                    (0..st.units.len())
                        .filter(|&u| needs.iter().any(|&i| st.units[u].holds(i)))
                        .collect()
                } else {
                    let miss = fault_on(FaultKind::RetrievalMiss, None);
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
                        .flat_map(|&u| st.units[u].pieces.iter().cloned())
                        .collect()
                };
                if self.system == System::LongContext {
                    if let Some(f) = fault_on(FaultKind::RetrievalMiss, None) {
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
                        let injected = fault_on(FaultKind::RetrievalMiss, None);
                        self.deviate(st, slot, i, ErrorType::Retrieval, injected);
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
            Slot::Answer(q) => {
                let complete = st.context_complete[q];
                let wrong = fault_on(FaultKind::WrongAnswer, None);
                st.correct[q] = complete && wrong.is_none();
                if complete {
                    if let Some(f) = wrong {
                        let item = self.needs[q].first().copied().unwrap_or(0);
                        self.deviate(st, slot, item, ErrorType::Response, Some(f));
                    }
                }
                if let Some(rec) = rec {
                    let prediction = self.prediction(st, q, wrong.is_some());
                    rec.answer(self, slot, q, &prediction);
                }
            }
            Slot::Judge(q) => {
                if let Some(rec) = rec {
                    rec.judge(self, slot, q, st.correct[q]);
                }
            }
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

#[derive(Debug)]
struct State {
    consumed: usize,
    window: Vec<Piece>,
    window_words: usize,
    buffer: Vec<Piece>,
    memcell: Vec<Piece>,
    pending: Vec<Piece>,
    units: Vec<Unit>,
    retrieved: Vec<Vec<Piece>>,
    retrieved_units: Vec<Vec<usize>>,
    correct: Vec<bool>,
    deviations: Vec<Deviation>,
    fired: Vec<bool>,
    deaths: Vec<Option<(usize, ErrorType)>>,
    context_complete: Vec<bool>,
    bm25: Option<(Bm25, Vec<usize>)>,
}

#[derive(Debug, Clone)]
enum Event {
    Add(usize),
    Update(usize),
    Delete(usize),
    Noop(String),
}

/// A recorded run: its outcome, the op id of each slot and the labels.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// What happened.
    pub outcome: Outcome,
    /// The smartcomment op id of each slot.
    pub op_ids: Vec<String>,
    /// Labels of the failed questions.
    pub labels: Vec<Label>,
    /// What the answer model said, per question.
    pub predictions: Vec<String>,
}

/// Writes the recorded run through a [`TraceBuilder`].
struct Rec<'b> {
    b: &'b mut TraceBuilder,
    op_ids: Vec<String>,
    session: Option<usize>,
    phase: u8,
    messages: BTreeMap<usize, VarRef>,
    context: Option<VarRef>,
    buffer: Option<VarRef>,
    memcell: Option<VarRef>,
    facts: Option<VarRef>,
    boundary: Option<VarRef>,
    units: Vec<Option<VarRef>>,
    prompts: BTreeMap<&'static str, VarRef>,
    queries: BTreeMap<usize, VarRef>,
    retrieved: BTreeMap<usize, VarRef>,
    predictions: BTreeMap<usize, VarRef>,
    prediction_text: BTreeMap<usize, String>,
}

impl<'b> Rec<'b> {
    fn new(b: &'b mut TraceBuilder) -> Rec<'b> {
        Rec {
            b,
            op_ids: Vec::new(),
            session: None,
            phase: 0,
            messages: BTreeMap::new(),
            context: None,
            buffer: None,
            memcell: None,
            facts: None,
            boundary: None,
            units: Vec::new(),
            prompts: BTreeMap::new(),
            queries: BTreeMap::new(),
            retrieved: BTreeMap::new(),
            predictions: BTreeMap::new(),
            prediction_text: BTreeMap::new(),
        }
    }

    fn done(&mut self, slot: usize, op_id: String) {
        debug_assert_eq!(self.op_ids.len(), slot);
        self.op_ids.push(op_id);
    }

    /// Opens the construction session of message `m` when it starts.
    fn enter(&mut self, sim: &Sim, m: usize) {
        let s = sim.msgs[m].session;
        if self.session != Some(s) {
            self.session = Some(s);
            let ws = &sim.world.sessions[s];
            if let Some(day) = super::world::days_of(&ws.date) {
                self.b.set_day(day);
            }
            self.b.session(
                "memory_construction",
                "session",
                json!({"conversation_session": ws.number, "date": ws.date}),
            );
        }
    }

    fn prompt(&mut self, id: &'static str, text: &str) -> VarRef {
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

    fn message(&mut self, sim: &Sim, m: usize) -> VarRef {
        self.enter(sim, m);
        let msg = &sim.msgs[m];
        let ws = &sim.world.sessions[msg.session];
        let v = self.b.variable(
            Some("message"),
            &msg.id,
            &py_str(&msg.text),
            "message",
            None,
            json!({"speaker": sim.world.speakers[msg.speaker], "session": ws.number, "date": ws.date}),
        );
        self.messages.insert(m, v.clone());
        v
    }

    /// A new version of a rolling variable (context, buffer): created by the
    /// op the first time, mutated afterwards.
    #[allow(clippy::too_many_arguments)]
    fn roll(
        &mut self,
        which: Roll,
        class: &str,
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
                let (next, id) = self.b.mutate(
                    &cur,
                    Some(class),
                    name,
                    value,
                    category,
                    op,
                    op_category,
                    inputs,
                );
                self.b.set_op_metadata(&id, metadata);
                (next, id)
            }
            None => {
                let next = self
                    .b
                    .variable(Some(class), name, value, category, None, json!({}));
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

    fn memory_update(&mut self, sim: &Sim, st: &State, slot: usize, m: usize, trimmed: usize) {
        let msg = self.message(sim, m);
        let value = py_list(st.window.iter().map(|p| p.text.as_str()));
        let id = self.roll(
            Roll::Context,
            "memory_unit",
            "context",
            &value,
            "memory_entry",
            "memory_system.memory_update",
            "update",
            &[&msg],
            json!({"trimmed_messages": trimmed, "window_words": st.window_words}),
        );
        self.done(slot, id);
    }

    fn buffer_update(&mut self, sim: &Sim, st: &State, slot: usize, m: usize) {
        let msg = self.message(sim, m);
        let value = py_list(st.buffer.iter().map(|p| p.text.as_str()));
        let id = self.roll(
            Roll::Buffer,
            "buffer",
            "messages",
            &value,
            "buffer",
            "memory_system.message_buffer_update",
            "update",
            &[&msg],
            json!({}),
        );
        self.done(slot, id);
    }

    fn unit_var(&mut self, st: &State, u: usize) -> VarRef {
        let unit = &st.units[u];
        let value = match unit.class {
            "chunk" | "episode" => py_str(&unit.text()),
            _ => py_str(&unit.text()),
        };
        let v = self.b.variable(
            Some(unit.class),
            &unit.name,
            &value,
            "memory_entry",
            None,
            json!({}),
        );
        if self.units.len() <= u {
            self.units.resize(u + 1, None);
        }
        self.units[u] = Some(v.clone());
        v
    }

    fn add(&mut self, _sim: &Sim, st: &State, slot: usize) {
        let chunk = self.unit_var(st, st.units.len() - 1);
        let buffer = self.buffer.clone();
        let inputs: Vec<&VarRef> = buffer.iter().collect();
        let id = self.b.op(
            "memory_system.add",
            "update",
            None,
            &inputs,
            &[&chunk],
            json!({}),
        );
        self.done(slot, id);
    }

    fn extract_facts(&mut self, sim: &Sim, st: &State, slot: usize, m: usize) {
        let msg = self.message(sim, m);
        let prompt = self.prompt(
            "fact-extraction-system-prompt",
            "Extract the personal facts the speaker states about themselves, one per line.",
        );
        let facts = self.b.variable(
            Some("facts"),
            &sim.msgs[m].id,
            &py_list(st.pending.iter().map(|p| p.text.as_str())),
            "extracted_facts",
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
        let mut described = Vec::new();
        for e in events {
            described.push(match e {
                Event::Add(u) => {
                    json!({"event": "ADD", "id": st.units[*u].name, "text": st.units[*u].text()})
                }
                Event::Update(u) => {
                    json!({"event": "UPDATE", "id": st.units[*u].name, "text": st.units[*u].text()})
                }
                Event::Delete(u) => json!({"event": "DELETE", "id": st.units[*u].name}),
                Event::Noop(t) => json!({"event": "NONE", "text": t}),
            });
        }
        let decision = self.b.variable(
            Some("decision"),
            &sim.msgs[m].id,
            &Value::Array(described).to_string(),
            "memory_decision",
            None,
            json!({}),
        );
        let mut edges: Vec<(String, String, Option<&str>)> = Vec::new();
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
                    let v = self.unit_var(st, *u);
                    edges.push((decision.full_node_id.clone(), v.full_node_id, Some("ADD")));
                }
                Event::Update(u) => {
                    let old = self.units.get(*u).cloned().flatten();
                    let v = self.unit_var(st, *u);
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
                    let marker = self.b.variable(
                        Some("delete_marker"),
                        &st.units[*u].name,
                        "'DELETED'",
                        "delete_marker",
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
        let id = self.b.op_edges(
            "memory_system.update_memory_decision",
            "update",
            &edges,
            json!({}),
        );
        self.done(slot, id);
    }

    fn boundary(&mut self, sim: &Sim, slot: usize, m: usize, ends: bool) {
        let decision = self.b.variable(
            Some("boundary"),
            &sim.msgs[m].id,
            if ends { "True" } else { "False" },
            "boundary_decision",
            None,
            json!({}),
        );
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

    fn finalize(&mut self, _sim: &Sim, st: &State, slot: usize) {
        let n = self.op_ids.len();
        let cell = self.b.variable(
            Some("memcell"),
            &format!("M{n}"),
            &py_list(st.memcell.iter().map(|p| p.text.as_str())),
            "memcell",
            None,
            json!({}),
        );
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

    fn extract_memory(&mut self, _sim: &Sim, st: &State, slot: usize, _g: usize, first: usize) {
        let prompt = self.prompt(
            "episode-memory-extraction-prompt",
            "Write the episode as a short narrative, then list its atomic facts with dates.",
        );
        let outputs: Vec<VarRef> = (first..st.units.len())
            .map(|u| self.unit_var(st, u))
            .collect();
        let cell = self.memcell.clone();
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

    fn retrieve(&mut self, sim: &Sim, st: &State, slot: usize, q: usize) {
        if self.phase < 1 {
            self.phase = 1;
            self.b.session("memory_search", "session", json!({}));
        }
        let question = &sim.world.questions[q];
        let names: Vec<String> = question
            .evidence
            .iter()
            .map(|e| format!("message:{e}"))
            .collect();
        let query = self.b.variable(
            Some("query"),
            &format!("Q{}", q + 1),
            &py_str(&question.text),
            "message & query",
            None,
            json!({"evidence": names, "question_kind": question.kind.name()}),
        );
        let context = self.b.variable(
            Some("retrieved_memories"),
            &format!("Q{}", q + 1),
            &py_list(st.retrieved[q].iter().map(|p| p.text.as_str())),
            "memory_context",
            None,
            json!({}),
        );
        let mut sources: Vec<VarRef> = vec![query.clone()];
        if sim.system == System::LongContext {
            sources.extend(self.context.clone());
        } else {
            for &u in &st.retrieved_units[q] {
                if let Some(Some(v)) = self.units.get(u) {
                    sources.push(v.clone());
                }
            }
        }
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

    fn answer(&mut self, sim: &Sim, slot: usize, q: usize, prediction: &str) {
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
            &py_str(prediction),
            "prediction",
            None,
            json!({}),
        );
        let mut inputs: Vec<&VarRef> = Vec::new();
        let query = self.queries.get(&q).cloned();
        let context = self.retrieved.get(&q).cloned();
        inputs.extend(query.iter());
        inputs.extend(context.iter());
        inputs.push(&prompt);
        let _ = sim;
        let id = self.b.op(
            "question-answering",
            "evaluation",
            None,
            &inputs,
            &[&out],
            json!({}),
        );
        self.predictions.insert(q, out);
        self.prediction_text.insert(q, prediction.to_string());
        self.done(slot, id);
    }

    fn judge(&mut self, sim: &Sim, slot: usize, q: usize, correct: bool) {
        let question = &sim.world.questions[q];
        let gold = self.b.variable(
            Some("golden_answers"),
            &format!("Q{}", q + 1),
            &py_list(std::iter::once(question.gold.as_str())),
            "golden_answers",
            None,
            json!({}),
        );
        let response = self.b.variable(
            Some("judge_response"),
            &format!("Q{}", q + 1),
            &py_str(if correct {
                "CORRECT: the prediction matches the gold answer."
            } else {
                "WRONG: the prediction does not match the gold answer."
            }),
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

#[derive(Debug, Clone, Copy)]
enum Roll {
    Context,
    Buffer,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::world::WorldSpec;
    use std::collections::BTreeSet;

    /// A smaller world with more faults, so that every test sees many labels.
    fn sim(system: System, seed: u64) -> Sim {
        let world = World::generate(&WorldSpec {
            sessions: 6..=9,
            messages: 120..=180,
            questions: 60,
            seed,
        });
        let params = SimParams {
            window_tokens: 900,
            fault_rate: 0.35,
            question_fault_rate: 0.15,
            ..SimParams::default()
        };
        Sim::new(system, world, params, seed)
    }

    fn record(sim: &Sim) -> Recorded {
        let mut b = TraceBuilder::new("t", "u", sim.system().name(), json!({}), 19_500);
        sim.record(&mut b)
    }

    #[test]
    fn ideal_runs_answer_everything_and_recorded_replays_agree() {
        for system in System::ALL {
            let s = sim(system, 3);
            assert!(
                s.replay(&Intervention::repair_then_ideal(0))
                    .iter()
                    .all(|c| *c),
                "{system:?}: an ideal run answers every question"
            );
            let r = record(&s);
            assert_eq!(r.outcome.correct, s.replay(&Intervention::recorded()));
            assert_eq!(r.op_ids.len(), s.schedule().len(), "one op per slot");
            assert!(
                r.outcome.correct.iter().any(|c| !c),
                "{system:?}: some fail"
            );
            assert_eq!(
                r.labels.len(),
                r.outcome.correct.iter().filter(|c| !**c).count()
            );
        }
    }

    #[test]
    fn labels_are_confirmed_by_counterfactual_replay() {
        let mut confirmed = 0;
        let mut earlier_checked = 0;
        for system in System::ALL {
            for seed in [1, 2] {
                let s = sim(system, seed);
                let r = record(&s);
                let step = (r.labels.len() / 12).max(1);
                for label in r.labels.iter().step_by(step) {
                    let q = label.question;
                    assert!(
                        s.replay(&Intervention::repair_then_ideal(label.slot))[q],
                        "{system:?}/{seed} Q{q}: repairing op {} (earlier as recorded, later ideal) rescues",
                        label.slot
                    );
                    assert!(
                        !s.replay(&Intervention::recorded_through(label.slot))[q],
                        "{system:?}/{seed} Q{q}: op {} as recorded is decisive",
                        label.slot
                    );
                    let earlier: BTreeSet<usize> = r
                        .outcome
                        .deviations
                        .iter()
                        .filter(|d| d.slot < label.slot)
                        .filter(|d| d.injected || s.needs(q).contains(&d.item))
                        .map(|d| d.slot)
                        .collect();
                    for j in earlier {
                        assert!(
                            s.replay(&Intervention::recorded_through(j))[q],
                            "{system:?}/{seed} Q{q}: earlier faulty op {j} is not decisive (label {})",
                            label.slot
                        );
                        earlier_checked += 1;
                    }
                    confirmed += 1;
                }
            }
        }
        assert!(confirmed > 60, "{confirmed}");
        assert!(earlier_checked > 20, "{earlier_checked}");
    }

    #[test]
    fn all_five_error_types_and_masked_faults_occur() {
        let mut types = BTreeSet::new();
        let mut masked = 0;
        for system in System::ALL {
            for seed in 1..=3 {
                let s = sim(system, seed);
                let r = record(&s);
                types.extend(r.labels.iter().map(|l| l.error_type));
                // A fault that changed something on an item a question needs,
                // while that question is answered right or labelled elsewhere.
                for d in r.outcome.deviations.iter().filter(|d| d.injected) {
                    for (q, needs) in s.needs.iter().enumerate() {
                        if !needs.contains(&d.item) || d.slot >= s.first_question_slot {
                            continue;
                        }
                        let label = r.labels.iter().find(|l| l.question == q);
                        if label.is_none_or(|l| l.slot != d.slot) {
                            masked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(types.len(), 5, "{types:?}");
        assert!(masked > 0);
    }

    #[test]
    fn same_seed_same_trace() {
        for system in System::ALL {
            let a = {
                let s = sim(system, 9);
                let mut b = TraceBuilder::new("t", "u", "p", json!({}), 19_500);
                s.record(&mut b);
                b.finish()
            };
            let b = {
                let s = sim(system, 9);
                let mut b = TraceBuilder::new("t", "u", "p", json!({}), 19_500);
                s.record(&mut b);
                b.finish()
            };
            assert_eq!(a, b);
        }
    }

    #[test]
    fn python_reprs() {
        assert_eq!(py_str("it's"), "'it\\'s'");
        assert_eq!(py_list(["a", "b"].into_iter()), "['a', 'b']");
    }
}
