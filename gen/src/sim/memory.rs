//! What the systems read and keep: messages as read, pieces of memory text
//! that carry items, memory units, and the state of a run.

use memtrace_text::Bm25;

use super::outcome::Deviation;
use super::types::ErrorType;

/// A message of the world as the system reads it.
#[derive(Debug, Clone)]
pub(super) struct Msg {
    pub(super) id: String,
    pub(super) session: usize,
    pub(super) speaker: usize,
    /// The message as its variable holds it, framing included.
    pub(super) text: String,
    /// What the speaker said: every sentence of it.
    pub(super) body: String,
    /// The informative sentence(s) (the world's text) of a message that
    /// states a fact.
    pub(super) info: Option<String>,
    /// The form the fact's value is said in, inside `info`.
    pub(super) said: Option<String>,
    /// When it was said, `YYYY-MM-DDTHH:MM:SS`.
    pub(super) stamp: String,
    pub(super) item: Option<usize>,
    pub(super) distractor: bool,
}

/// What a piece of memory text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
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

/// A piece of memory text; it carries its item while intact.
#[derive(Debug, Clone)]
pub(super) struct Piece {
    pub(super) item: Option<usize>,
    pub(super) intact: bool,
    pub(super) text: String,
    pub(super) form: Form,
    /// The message it comes from.
    pub(super) msg: Option<usize>,
    /// Raw pieces: what is left of the speaker's words; extracted pieces:
    /// the sentence they were made from; else the text.
    pub(super) body: String,
}

/// A memory unit: a chunk, a memory, an episode, an atomic fact or a cell.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    pub(super) class: &'static str,
    pub(super) name: String,
    pub(super) key: Option<usize>,
    pub(super) pieces: Vec<Piece>,
    pub(super) deleted: bool,
    /// Atomic facts held beside the pieces (EverMemOS cells kept in place).
    pub(super) atomic: Vec<Piece>,
    /// Shared Mem0 units: the speaker and session whose messages it gathers.
    pub(super) owner: Option<(usize, usize)>,
}

impl Unit {
    pub(super) fn new(
        class: &'static str,
        name: String,
        key: Option<usize>,
        pieces: Vec<Piece>,
    ) -> Unit {
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

    pub(super) fn all(&self) -> impl Iterator<Item = &Piece> {
        self.pieces.iter().chain(&self.atomic)
    }

    pub(super) fn text(&self) -> String {
        let parts: Vec<&str> = self.all().map(|p| p.text.as_str()).collect();
        parts.join(" ")
    }

    pub(super) fn holds(&self, item: usize) -> bool {
        !self.deleted && self.all().any(|p| p.intact && p.item == Some(item))
    }
}

/// The state of a run between two ops.
#[derive(Debug)]
pub(super) struct State {
    pub(super) consumed: usize,
    pub(super) window: Vec<Piece>,
    pub(super) window_words: usize,
    pub(super) buffer: Vec<Piece>,
    pub(super) memcell: Vec<Piece>,
    pub(super) pending: Vec<Piece>,
    pub(super) units: Vec<Unit>,
    pub(super) retrieved: Vec<Vec<Piece>>,
    pub(super) retrieved_units: Vec<Vec<usize>>,
    pub(super) correct: Vec<bool>,
    pub(super) deviations: Vec<Deviation>,
    pub(super) fired: Vec<bool>,
    pub(super) deaths: Vec<Option<(usize, ErrorType)>>,
    pub(super) context_complete: Vec<bool>,
    pub(super) bm25: Option<(Bm25, Vec<usize>)>,
}

impl State {
    /// Notes a deviation at `slot` on `item`, by planned fault `fault` if any.
    pub(super) fn deviate(
        &mut self,
        slot: usize,
        item: usize,
        error_type: ErrorType,
        fault: Option<usize>,
    ) {
        if let Some(f) = fault {
            self.fired[f] = true;
        }
        self.deviations.push(Deviation {
            slot,
            item,
            error_type,
            injected: fault.is_some(),
        });
    }
}
