//! The ops of a run (slots), the faults planned into them, and the
//! interventions under which a replay runs some ops ideally.

use super::types::ErrorType;

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

    /// Whether op `slot` runs ideally.
    pub(super) fn ideal(&self, slot: usize) -> bool {
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

/// The index in the plan of the first of `faults` (with their indices) of
/// `kind` on `item` (on any item for `None`).
pub(super) fn fault_on(
    faults: &[(usize, &Fault)],
    kind: FaultKind,
    item: Option<usize>,
) -> Option<usize> {
    faults
        .iter()
        .find(|(_, f)| f.kind == kind && (item.is_none() || f.item == item))
        .map(|(i, _)| *i)
}
