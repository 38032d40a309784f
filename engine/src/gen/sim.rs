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
//!
//! A [`Style`] shapes the pieces and how they are recorded: a message may
//! say several sentences around its informative one, and a piece carries its
//! item exactly while that sentence (or a faithful rewrite of it, or the
//! canonical fact) is in it; garbling removes the sentence or puts a wrong
//! value in it, and a word budget either keeps it whole or drops it. Budgets
//! are the systems' own losses, absent from ideal runs like window trimming.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::builder::{TraceBuilder, VarRef};
use super::style::{self, Encoding, Extraction, MessageForm, Style, StyleSpec};
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
            | FaultKind::OmitFromBoth
            | FaultKind::NoopUpdate
            | FaultKind::DegradeUpdate => ErrorType::Extraction,
            FaultKind::GarbleStored => ErrorType::Update,
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
    /// The message as its variable holds it, framing included.
    text: String,
    /// What the speaker said: every sentence of it.
    body: String,
    /// The informative sentence(s) (the world's text) of a message that
    /// states a fact.
    info: Option<String>,
    /// The form the fact's value is said in, inside `info`.
    said: Option<String>,
    /// When it was said, `YYYY-MM-DDTHH:MM:SS`.
    stamp: String,
    item: Option<usize>,
    distractor: bool,
}

/// What a piece of memory text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// A whole message as it was said.
    Raw,
    /// A fact in a canonical sentence.
    Fact,
    /// The informative sentence, prefixed by its speaker.
    Sentence,
    /// The informative sentence retold in the third person.
    Reported,
    /// Anything else: small talk, a remark about someone else, a heading.
    Note,
}

#[derive(Debug, Clone)]
struct Piece {
    item: Option<usize>,
    intact: bool,
    text: String,
    form: Form,
    /// The message it comes from.
    msg: Option<usize>,
    /// Raw pieces: what is left of the speaker's words; extracted pieces:
    /// the sentence they were made from; else the text.
    body: String,
}

#[derive(Debug, Clone)]
struct Unit {
    class: &'static str,
    name: String,
    key: Option<usize>,
    pieces: Vec<Piece>,
    deleted: bool,
    /// Atomic facts held beside the pieces (EverMemOS cells kept in place).
    atomic: Vec<Piece>,
    /// Shared Mem0 units: the speaker and session whose messages it gathers.
    owner: Option<(usize, usize)>,
}

impl Unit {
    fn new(class: &'static str, name: String, key: Option<usize>, pieces: Vec<Piece>) -> Unit {
        Unit {
            class,
            name,
            key,
            pieces,
            deleted: false,
            atomic: Vec::new(),
            owner: None,
        }
    }

    fn all(&self) -> impl Iterator<Item = &Piece> {
        self.pieces.iter().chain(&self.atomic)
    }

    fn text(&self) -> String {
        let parts: Vec<&str> = self.all().map(|p| p.text.as_str()).collect();
        parts.join(" ")
    }

    fn holds(&self, item: usize) -> bool {
        !self.deleted && self.all().any(|p| p.intact && p.item == Some(item))
    }
}

/// A world read by one system, with its schedule and fault plan.
#[derive(Debug, Clone)]
pub struct Sim {
    system: System,
    style: Style,
    spec: StyleSpec,
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
    /// The message that states each item.
    item_msg: Vec<Option<usize>>,
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
        let mut items = Vec::new();
        let mut item_of = BTreeMap::new();
        for (f, fact) in world.facts.iter().enumerate() {
            for v in 0..fact.values.len() {
                item_of.insert((f, v), items.len());
                items.push((f, v));
            }
        }
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

    /// The name of EverMemOS episode `g`'s memory cell.
    fn cell_name(&self, g: usize) -> String {
        format!("E{}", g + 1)
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

    fn raw(&self, m: usize) -> Piece {
        let msg = &self.msgs[m];
        Piece {
            item: msg.item,
            intact: true,
            text: msg.text.clone(),
            form: Form::Raw,
            msg: Some(m),
            body: msg.body.clone(),
        }
    }

    fn fact_piece(&self, item: usize) -> Piece {
        let (f, v) = self.items[item];
        let text = self.world.fact_sentence(f, v);
        Piece {
            item: Some(item),
            intact: true,
            body: text.clone(),
            text,
            form: Form::Fact,
            msg: self.item_msg[item],
        }
    }

    /// A message framed as its variable holds it, with `body` as its words.
    fn frame(&self, m: usize, body: &str) -> String {
        let msg = &self.msgs[m];
        let name = &self.world.speakers[msg.speaker];
        match self.spec.message {
            MessageForm::Colon => format!("{name}: {body}"),
            MessageForm::Says => format!("Speaker {name} says: {body}\nTimestamp: {}", msg.stamp),
        }
    }

    /// A sentence of `speaker` as an extraction step keeps it.
    fn say(&self, speaker: usize, sentence: &str, form: Extraction) -> String {
        let name = &self.world.speakers[speaker];
        match form {
            Extraction::Canonical => sentence.to_string(),
            Extraction::Sentence => format!("{name}: {sentence}"),
            Extraction::Reported => format!("{name} said that {}", style::third_person(sentence)),
        }
    }

    /// What an extraction step in `form` keeps of the message stating `item`.
    fn extracted(&self, item: usize, form: Extraction) -> Piece {
        let Some(m) = self.item_msg[item].filter(|_| form != Extraction::Canonical) else {
            return self.fact_piece(item);
        };
        let msg = &self.msgs[m];
        let info = msg.info.clone().unwrap_or_default();
        Piece {
            item: Some(item),
            intact: true,
            text: self.say(msg.speaker, &info, form),
            form: match form {
                Extraction::Reported => Form::Reported,
                _ => Form::Sentence,
            },
            msg: Some(m),
            body: info,
        }
    }

    /// What an extraction step in `form` keeps of a message that states no
    /// fact (its words, its speaker).
    fn note(&self, m: usize, form: Extraction) -> Piece {
        let msg = &self.msgs[m];
        let form = if form == Extraction::Canonical {
            Extraction::Sentence
        } else {
            form
        };
        Piece {
            item: None,
            intact: true,
            text: self.say(msg.speaker, &msg.body, form),
            form: Form::Note,
            msg: Some(m),
            body: msg.body.clone(),
        }
    }

    /// A plain note (a heading, a count of messages).
    fn plain(text: String) -> Piece {
        Piece {
            item: None,
            intact: true,
            body: text.clone(),
            text,
            form: Form::Note,
            msg: None,
        }
    }

    /// Whether a chatty system keeps some small talk of message `m` in
    /// memory (decided per message, the same in every replay).
    fn keeps_chat(&self, m: usize) -> bool {
        let mut r = Rng::new(self.seed ^ (m as u64).wrapping_mul(0xa24b_aed4_963e_e407));
        r.below(100) < 30
    }

    /// Degrades a piece so that it no longer carries its item: a canonical
    /// fact gets a wrong value; a message loses its informative sentence
    /// (its small talk stays); an extracted sentence gets a wrong value.
    fn garble(&self, piece: &mut Piece, slot: usize) {
        piece.intact = false;
        let salt = self.seed ^ (slot as u64).wrapping_mul(31);
        let cut = |text: &str| {
            let cut: Vec<&str> = text.split_whitespace().take(3).collect();
            format!("{} …", cut.join(" "))
        };
        let first_word =
            |text: &str| format!("{} …", text.split_whitespace().next().unwrap_or_default());
        let msg = piece.msg.map(|m| &self.msgs[m]);
        piece.text = match (piece.form, piece.item) {
            (Form::Fact, Some(item)) => {
                let (f, v) = self.items[item];
                self.world.wrong_sentence(f, v, salt)
            }
            (Form::Raw, _) if self.style != Style::Classic => {
                let info = msg.and_then(|m| m.info.as_deref()).unwrap_or_default();
                let rest = piece.body.replacen(info, "", 1);
                let mut rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
                if rest.is_empty() || info.is_empty() {
                    rest = first_word(info);
                }
                piece.body = rest;
                self.frame(piece.msg.unwrap_or_default(), &piece.body)
            }
            (Form::Sentence | Form::Reported, Some(item)) => {
                let (f, v) = self.items[item];
                let said = msg.and_then(|m| m.said.as_deref()).unwrap_or_default();
                piece.body = if !said.is_empty() && piece.body.contains(said) {
                    piece
                        .body
                        .replacen(said, self.world.wrong_value(f, v, salt), 1)
                } else {
                    first_word(&piece.body)
                };
                let form = if piece.form == Form::Reported {
                    Extraction::Reported
                } else {
                    Extraction::Sentence
                };
                self.say(msg.map_or(0, |m| m.speaker), &piece.body, form)
            }
            _ => cut(&piece.text),
        };
    }

    /// Cuts a unit's pieces to `budget` words, as a system that embeds or
    /// summarises at most so many tokens does: pieces past the budget are
    /// lost; the piece the budget ends in is cut there, and when the cut
    /// falls inside its informative sentence the whole sentence goes (so a
    /// piece either keeps its item whole or loses it). Losses are
    /// deviations of `error_type` at `slot`.
    fn truncate(
        &self,
        st: &mut State,
        slot: usize,
        pieces: Vec<Piece>,
        budget: usize,
        error_type: ErrorType,
    ) -> Vec<Piece> {
        let mut used = 0;
        let mut kept = Vec::new();
        let mut full = false;
        for mut p in pieces {
            let lose = |st: &mut State, p: &Piece| {
                if let (true, Some(i)) = (p.intact, p.item) {
                    self.deviate(st, slot, i, error_type, None);
                }
            };
            if full {
                lose(st, &p);
                continue;
            }
            let n = words(&p.text);
            if used + n <= budget {
                used += n;
                kept.push(p);
                continue;
            }
            full = true;
            let room = budget - used;
            // The informative part, as word positions in the piece's text
            // (all of it when it cannot be told apart).
            let info = match p.form {
                Form::Raw => p.msg.and_then(|m| self.msgs[m].info.as_deref()),
                Form::Sentence => Some(p.body.as_str()),
                _ => None,
            };
            let span = (p.intact && p.item.is_some()).then(|| {
                info.and_then(|info| {
                    let at = p.text.find(info)?;
                    let start = words(&p.text[..at]);
                    Some((start, start + words(info)))
                })
                .unwrap_or((0, n))
            });
            let keep = match span {
                Some((start, end)) if room < end => room.min(start),
                _ => room,
            };
            if span.is_some_and(|(_, end)| keep < end) {
                lose(st, &p);
                p.intact = false;
            }
            if keep > 0 {
                p.text = format!("{} ...", style::first_words(&p.text, keep));
                p.body = p.text.clone();
                kept.push(p);
            }
        }
        kept
    }

    fn fresh_state(&self) -> State {
        let nq = self.world.questions.len();
        State {
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
        }
    }

    fn execute(&self, iv: &Intervention, mut rec: Option<&mut Rec>) -> Outcome {
        let mut st = self.fresh_state();
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
            .chain(st.units.iter().filter(|u| !u.deleted).flat_map(|u| u.all()));
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
                if let (Some(budget), false) = (self.spec.chunk_budget, ideal) {
                    pieces = self.truncate(st, slot, pieces, budget, ErrorType::Extraction);
                }
                st.units
                    .push(Unit::new("chunk", format!("C{}", g + 1), None, pieces));
                if let Some(rec) = rec {
                    rec.add(self, st, slot);
                }
            }
            Slot::ExtractFacts(m) => {
                st.consumed = m + 1;
                let msg = &self.msgs[m];
                st.pending.clear();
                let classic = self.style == Style::Classic;
                if let Some(item) = msg.item {
                    match fault_on(FaultKind::DropInput, Some(item)) {
                        Some(f) => self.deviate(st, slot, item, ErrorType::Extraction, Some(f)),
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
                                    st.pending = self.truncate(
                                        st,
                                        slot,
                                        vec![piece],
                                        budget,
                                        ErrorType::Extraction,
                                    );
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
            Slot::Decide(m) => {
                let shared = self.spec.shared_units;
                let owner = (self.msgs[m].speaker, self.msgs[m].session);
                let fact_of = |p: &Piece| p.item.map(|i| self.items[i].0);
                // Shared units: the newest unit of this speaker and session
                // with room left takes the next piece.
                let open = |units: &[Unit]| {
                    units
                        .iter()
                        .rposition(|u| !u.deleted && u.owner == Some(owner) && u.pieces.len() < 3)
                };
                let new_unit = |units: &mut Vec<Unit>, key: Option<usize>, piece: Piece| {
                    let mut unit =
                        Unit::new("memory", format!("m{}", units.len() + 1), key, vec![piece]);
                    if shared {
                        unit.owner = Some(owner);
                    }
                    units.push(unit);
                    Event::Add(units.len() - 1)
                };
                let mut events = Vec::new();
                for mut piece in std::mem::take(&mut st.pending) {
                    let Some(item) = piece.item else {
                        match open(&st.units).filter(|_| shared) {
                            Some(u) => {
                                st.units[u].pieces.push(piece);
                                events.push(Event::Update(u));
                            }
                            None => events.push(new_unit(&mut st.units, None, piece)),
                        }
                        continue;
                    };
                    // A new fact that the decision ignores or garbles never
                    // reaches a memory unit: MemTrace calls that an
                    // ExtractionError, in every style.
                    let lost_new = ErrorType::Extraction;
                    if let Some(f) = fault_on(FaultKind::NoopUpdate, Some(item)) {
                        self.deviate(st, slot, item, lost_new, Some(f));
                        events.push(Event::Noop(piece.text.clone()));
                        continue;
                    }
                    if let Some(f) = fault_on(FaultKind::DegradeUpdate, Some(item)) {
                        self.garble(&mut piece, slot);
                        self.deviate(st, slot, item, lost_new, Some(f));
                    }
                    let fact = self.items[item].0;
                    let existing = if shared {
                        st.units.iter().position(|u| {
                            !u.deleted && u.pieces.iter().any(|p| fact_of(p) == Some(fact))
                        })
                    } else {
                        st.units
                            .iter()
                            .position(|u| !u.deleted && u.key == Some(fact))
                    };
                    match existing {
                        Some(u)
                            if !ideal
                                && (self.seed ^ m as u64).wrapping_mul(0x2545_f491_4f6c_dd1d)
                                    >> 61
                                    < 2
                                && st.units[u].pieces.len() == 1 =>
                        {
                            // Mem0 sometimes replaces instead of updating: no loss.
                            st.units[u].deleted = true;
                            events.push(Event::Delete(u));
                            events.push(new_unit(&mut st.units, Some(fact), piece));
                        }
                        Some(u) if shared => {
                            // The unit is mutated in place: the fact's sentence
                            // is rewritten, the others stay.
                            let unit = &mut st.units[u];
                            if let Some(at) =
                                unit.pieces.iter().position(|p| fact_of(p) == Some(fact))
                            {
                                unit.pieces[at] = piece;
                            }
                            events.push(Event::Update(u));
                        }
                        Some(u) => {
                            st.units[u].pieces = vec![piece];
                            events.push(Event::Update(u));
                        }
                        None => match open(&st.units).filter(|_| shared) {
                            Some(u) => {
                                st.units[u].pieces.push(piece);
                                events.push(Event::Update(u));
                            }
                            None => events.push(new_unit(&mut st.units, Some(fact), piece)),
                        },
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
                            // What else the unit held goes with it.
                            let others: Vec<usize> = st.units[u]
                                .pieces
                                .iter()
                                .filter(|p| p.intact)
                                .filter_map(|p| p.item)
                                .filter(|&i| i != item)
                                .collect();
                            for i in others {
                                self.deviate(st, slot, i, ErrorType::Deletion, Some(*fi));
                            }
                        }
                        FaultKind::GarbleStored if self.style == Style::Classic => {
                            let mut p = self.fact_piece(item);
                            self.garble(&mut p, slot);
                            st.units[u].pieces = vec![p];
                            events.push(Event::Update(u));
                            self.deviate(st, slot, item, ErrorType::Update, Some(*fi));
                        }
                        FaultKind::GarbleStored => {
                            let mut pieces = std::mem::take(&mut st.units[u].pieces);
                            if let Some(p) =
                                pieces.iter_mut().find(|p| p.intact && p.item == Some(item))
                            {
                                self.garble(p, slot);
                            }
                            st.units[u].pieces = pieces;
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
            Slot::Finalize(g) => {
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
                    rec.finalize(self, st, slot, g);
                }
            }
            Slot::ExtractMemory(g) => {
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
                    let omit = |kind| fault_on(kind, Some(item));
                    let both = omit(FaultKind::OmitFromBoth);
                    let no_summary = omit(FaultKind::OmitFromSummary).or(both);
                    let no_facts = omit(FaultKind::OmitFromFacts).or(both);
                    if let Some(f) = no_summary {
                        self.deviate(st, slot, item, ErrorType::Extraction, Some(f));
                    } else {
                        summary.push(self.extracted(item, self.spec.summary));
                    }
                    if let Some(f) = no_facts {
                        if no_summary != Some(f) {
                            self.deviate(st, slot, item, ErrorType::Extraction, Some(f));
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
                        .flat_map(|&u| st.units[u].all().cloned())
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
                    rec.answer(self, st, slot, q, &prediction);
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
    /// The messages an EverMemOS cell kept in place was made from.
    cell_data: Value,
    facts: Option<VarRef>,
    boundary: Option<VarRef>,
    units: Vec<Option<VarRef>>,
    /// The text of each unit's latest recorded version.
    unit_texts: Vec<Option<String>>,
    prompts: BTreeMap<&'static str, VarRef>,
    queries: BTreeMap<usize, VarRef>,
    retrieved: BTreeMap<usize, VarRef>,
    /// Context assembled at answer time: the unit versions retrieval returned.
    retrieved_units: BTreeMap<usize, Vec<VarRef>>,
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

    /// A plain string as the style records it.
    fn text(sim: &Sim, s: &str) -> String {
        match sim.spec.encoding {
            Encoding::Classic => py_str(s),
            _ => style::py_repr_str(s),
        }
    }

    /// The class and name of a variable that a uuid-naming style calls
    /// `<prefix>-<hex>` without a class (`hex` false: `<prefix>` alone).
    fn ident(
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

    fn message(&mut self, sim: &Sim, m: usize) -> VarRef {
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
    fn roll(
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

    /// An EverMemOS buffer entry: the words of a message and who said them.
    fn entry(sim: &Sim, p: &Piece) -> Value {
        let msg = p.msg.map(|m| &sim.msgs[m]);
        json!({
            "content": p.body,
            "message_id": msg.map_or("", |m| m.id.as_str()),
            "speaker_name": msg.map_or("", |m| sim.world.speakers[m.speaker].as_str()),
            "timestamp": msg.map_or("", |m| m.stamp.as_str()),
        })
    }

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
    fn unit_value(sim: &Sim, unit: &Unit, id: &str, original: Option<&Value>) -> String {
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

    fn unit_ident(sim: &Sim, unit: &Unit) -> (Option<&'static str>, String) {
        Self::ident(sim, unit.class, &unit.name, "memory-unit", true)
    }

    fn unit_var(&mut self, sim: &Sim, st: &State, u: usize) -> VarRef {
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
        for e in &events {
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
        let id = self.b.op_edges(
            "memory_system.update_memory_decision",
            "update",
            &edges,
            json!({}),
        );
        self.done(slot, id);
    }

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

    /// The context a question is answered from, as text: the Long-Context
    /// window, or the retrieved units one by one.
    fn context_text(sim: &Sim, st: &State, q: usize) -> String {
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
    fn sim_in(system: System, style: Style, seed: u64) -> Sim {
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
        Sim::with_style(system, world, params, seed, style)
    }

    fn sim(system: System, seed: u64) -> Sim {
        sim_in(system, Style::Classic, seed)
    }

    fn record(sim: &Sim) -> Recorded {
        let mut b = TraceBuilder::new("t", "u", sim.system().name(), json!({}), 19_500);
        sim.record(&mut b)
    }

    fn recorded_doc(sim: &Sim) -> (Recorded, Value) {
        let mut b = TraceBuilder::new("t", "u", sim.system().name(), json!({}), 19_500);
        let r = sim.record(&mut b);
        (r, b.finish())
    }

    #[test]
    fn ideal_runs_answer_everything_and_recorded_replays_agree() {
        for style in Style::ALL {
            for system in System::ALL {
                let s = sim_in(system, style, 3);
                assert!(
                    s.replay(&Intervention::repair_then_ideal(0))
                        .iter()
                        .all(|c| *c),
                    "{style}/{system:?}: an ideal run answers every question"
                );
                let r = record(&s);
                assert_eq!(r.outcome.correct, s.replay(&Intervention::recorded()));
                assert_eq!(r.op_ids.len(), s.schedule().len(), "one op per slot");
                assert!(
                    r.outcome.correct.iter().any(|c| !c),
                    "{style}/{system:?}: some fail"
                );
                assert_eq!(
                    r.labels.len(),
                    r.outcome.correct.iter().filter(|c| !**c).count()
                );
            }
        }
    }

    #[test]
    fn labels_are_confirmed_by_counterfactual_replay() {
        for style in Style::ALL {
            let mut confirmed = 0;
            let mut earlier_checked = 0;
            // The classic style on two worlds, the others on one each.
            let seeds: &[u64] = if style == Style::Classic {
                &[1, 2]
            } else {
                &[1]
            };
            for system in System::ALL {
                for &seed in seeds {
                    let s = sim_in(system, style, seed);
                    let r = record(&s);
                    let step = (r.labels.len() / 12).max(1);
                    for label in r.labels.iter().step_by(step) {
                        let q = label.question;
                        assert!(
                            s.replay(&Intervention::repair_then_ideal(label.slot))[q],
                            "{style}/{system:?}/{seed} Q{q}: repairing op {} (earlier as recorded, later ideal) rescues",
                            label.slot
                        );
                        assert!(
                            !s.replay(&Intervention::recorded_through(label.slot))[q],
                            "{style}/{system:?}/{seed} Q{q}: op {} as recorded is decisive",
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
                                "{style}/{system:?}/{seed} Q{q}: earlier faulty op {j} is not decisive (label {})",
                                label.slot
                            );
                            earlier_checked += 1;
                        }
                        confirmed += 1;
                    }
                }
            }
            let (want, want_earlier) = if style == Style::Classic {
                (60, 20)
            } else {
                (30, 10)
            };
            assert!(confirmed > want, "{style}: {confirmed}");
            assert!(earlier_checked > want_earlier, "{style}: {earlier_checked}");
        }
    }

    #[test]
    fn all_five_error_types_and_masked_faults_occur_in_every_style() {
        for style in Style::ALL {
            let mut types = BTreeSet::new();
            let mut masked = 0;
            for system in System::ALL {
                for seed in 1..=3 {
                    let s = sim_in(system, style, seed);
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
            assert_eq!(types.len(), 5, "{style}: {types:?}");
            assert!(masked > 0, "{style}");
        }
    }

    #[test]
    fn same_seed_same_trace() {
        for style in Style::ALL {
            for system in System::ALL {
                let a = recorded_doc(&sim_in(system, style, 9)).1;
                let b = recorded_doc(&sim_in(system, style, 9)).1;
                assert_eq!(a, b, "{style}/{system:?}");
            }
        }
    }

    #[test]
    fn python_reprs() {
        assert_eq!(py_str("it's"), "'it\\'s'");
        assert_eq!(py_list(["a", "b"].into_iter()), "['a', 'b']");
    }

    fn nodes(doc: &Value) -> Vec<&Value> {
        doc["data"]["nodes"].as_array().unwrap().iter().collect()
    }

    fn edges_of<'d>(doc: &'d Value, op_id: &str) -> Vec<(&'d str, &'d str)> {
        doc["data"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["op_id"] == op_id)
            .map(|e| {
                (
                    e["source_full_node_id"].as_str().unwrap(),
                    e["target_full_node_id"].as_str().unwrap(),
                )
            })
            .collect()
    }

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

    #[test]
    fn garbling_removes_the_informative_sentence_and_rewrites_keep_it() {
        for style in [Style::Membase, Style::Narrative, Style::Budgeted] {
            let s = sim_in(System::LongContext, style, 6);
            let mut checked = 0;
            for (m, msg) in s.msgs.iter().enumerate() {
                let (Some(item), Some(info), Some(said)) = (msg.item, &msg.info, &msg.said) else {
                    continue;
                };
                let mut raw = s.raw(m);
                assert!(raw.text.contains(info.as_str()));
                s.garble(&mut raw, 7);
                assert!(!raw.intact);
                assert!(!raw.text.contains(info.as_str()), "{style}: {}", raw.text);
                assert!(!raw.text.contains(said.as_str()), "{style}: {}", raw.text);
                for form in [Extraction::Sentence, Extraction::Reported] {
                    let mut p = s.extracted(item, form);
                    assert!(p.intact && p.item == Some(item));
                    if !said.contains("my ") {
                        assert!(p.text.contains(said.as_str()), "{style}: {}", p.text);
                    }
                    s.garble(&mut p, 7);
                    assert!(!p.text.contains(said.as_str()), "{style}: {}", p.text);
                }
                checked += 1;
            }
            assert!(checked > 20, "{style}: {checked}");
        }
    }

    #[test]
    fn a_budget_keeps_an_informative_sentence_whole_or_not_at_all() {
        let s = sim_in(System::Rag, Style::Budgeted, 2);
        let mut lost = 0;
        for budget in [5, 12, 20, 33, 60, 90] {
            for start in [0, 8, 16, 24] {
                let mut st = s.fresh_state();
                let pieces: Vec<Piece> = (start..start + 8).map(|m| s.raw(m)).collect();
                let carried = pieces.iter().filter(|p| p.item.is_some()).count();
                let kept = s.truncate(&mut st, 0, pieces, budget, ErrorType::Extraction);
                let n: usize = kept.iter().map(|p| words(&p.text)).sum();
                assert!(n <= budget + 1, "{n} words for a budget of {budget}");
                let mut held = 0;
                for p in &kept {
                    let Some(info) = p.msg.and_then(|m| s.msgs[m].info.as_deref()) else {
                        continue;
                    };
                    assert_eq!(p.text.contains(info), p.intact, "{}", p.text);
                    held += usize::from(p.intact);
                }
                // Every item not held any more is a deviation of the op.
                assert_eq!(carried - held, st.deviations.len());
                lost += st.deviations.len();
            }
        }
        assert!(lost > 0);
    }

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

    #[test]
    fn cells_are_mutated_in_place_and_shared_units_hold_several_messages() {
        let s = sim_in(System::EverMemOs, Style::Narrative, 3);
        let (r, doc) = recorded_doc(&s);
        let slot = s
            .schedule()
            .iter()
            .position(|x| matches!(x, Slot::ExtractMemory(_)))
            .unwrap();
        let e = edges_of(&doc, &r.op_ids[slot]);
        let lineage: Vec<_> = doc["data"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["op_id"] == r.op_ids[slot].as_str() && x["comment"] == "Version lineage.")
            .collect();
        assert_eq!(lineage.len(), 2, "{e:?}");
        assert!(e.iter().any(|(_, d)| d.ends_with("@3")), "{e:?}");

        let s = sim_in(System::Mem0, Style::Narrative, 3);
        let mut st = s.fresh_state();
        for (slot, &what) in s.schedule().iter().enumerate().take(s.first_question_slot) {
            s.step(&mut st, slot, what, false, &[], None);
        }
        let shared = st
            .units
            .iter()
            .filter(|u| {
                u.pieces
                    .iter()
                    .filter_map(|p| p.msg)
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .count();
        assert!(shared > 0, "some units hold several messages");
    }

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
