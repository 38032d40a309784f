//! How the systems make pieces of memory text in the style of the run (raw
//! messages, canonical facts, extracted sentences, notes), and how faults
//! and word budgets degrade them.

use super::memory::{Form, Piece, State};
use super::schedule::Sim;
use super::text::words;
use super::types::ErrorType;
use crate::style::{self, Extraction, MessageForm, Style};
use crate::synth::Rng;

impl Sim {
    pub(super) fn raw(&self, m: usize) -> Piece {
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

    pub(super) fn fact_piece(&self, item: usize) -> Piece {
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
    pub(super) fn extracted(&self, item: usize, form: Extraction) -> Piece {
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
    pub(super) fn note(&self, m: usize, form: Extraction) -> Piece {
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
    pub(super) fn plain(text: String) -> Piece {
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
    pub(super) fn keeps_chat(&self, m: usize) -> bool {
        let mut r = Rng::new(self.seed ^ (m as u64).wrapping_mul(0xa24b_aed4_963e_e407));
        r.below(100) < 30
    }

    /// Degrades a piece so that it no longer carries its item: a canonical
    /// fact gets a wrong value; a message loses its informative sentence
    /// (its small talk stays); an extracted sentence gets a wrong value.
    pub(super) fn garble(&self, piece: &mut Piece, slot: usize) {
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
    pub(super) fn truncate(
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
                    st.deviate(slot, i, error_type, None);
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
}

#[cfg(test)]
mod tests {
    use crate::sim::memory::Piece;
    use crate::sim::test_support::sim_in;
    use crate::sim::text::words;
    use crate::sim::{ErrorType, System};
    use crate::style::{Extraction, Style};

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
}
