//! One kind of text of a table, and the texts of a run of records of it.

use super::format::ABSENT;

/// One kind of text of a [`TextTable`](crate::TextTable) (the ids, or the names, ...), for a
/// table of any number of kinds: the kind's texts, one after the other,
/// and where each record's ends. Consecutive records' texts follow each
/// other, so the texts of a run of records are one slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextKind<'a> {
    /// Every record's text of this kind, one after the other.
    pub(super) text: &'a str,
    /// Where the records' texts end, record `i`'s at `ends[i * stride +
    /// kind]`: the first kind's ends one after the other (`stride` 1), the
    /// others' the table's ends, every kind record after record.
    pub(super) ends: &'a [u32],
    pub(super) stride: usize,
    pub(super) kind: usize,
    /// Whether every record has a text of this kind.
    pub(super) complete: bool,
}

impl<'a> TextKind<'a> {
    /// How many records.
    pub fn len(&self) -> usize {
        self.ends.len() / self.stride.max(1)
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every record's text of this kind, one after the other (what
    /// [`range`](Self::range) and [`run`](Self::run) index).
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Record `i`'s stored end of this kind.
    #[inline]
    fn end(&self, i: usize) -> Option<u32> {
        self.ends
            .get(i.checked_mul(self.stride)?.checked_add(self.kind)?)
            .copied()
    }

    /// Where record `id`'s text lies in [`text`](Self::text): `[start,
    /// end)` byte offsets, on char boundaries; `Some(None)` when the
    /// record has no such text, `None` past the last record.
    #[inline]
    pub fn range(&self, id: u32) -> Option<Option<[u32; 2]>> {
        let i = id as usize;
        let b = self.end(i)?;
        let a = match i {
            0 => 0,
            _ => self.end(i - 1)? & !ABSENT,
        };
        // An absent text's end has `ABSENT` set, which puts it past any
        // text.
        Some((a <= b && b as usize <= self.text.len()).then_some([a, b]))
    }

    /// Record `id`'s text: `Some(None)` when it has none, `None` past the
    /// last record.
    pub fn get(&self, id: u32) -> Option<Option<&'a str>> {
        Some(
            self.range(id)?
                .and_then(|[a, b]| self.text.get(a as usize..b as usize)),
        )
    }

    /// The texts of records `lo..hi` as one [`TextRun`], when this is the
    /// table's first kind (the ids, whose ends lie one after the other)
    /// and each of the records has a text of it. `None` otherwise, or past
    /// the last record.
    pub fn run(&self, lo: u32, hi: u32) -> Option<TextRun<'a>> {
        if self.stride != 1 {
            return None;
        }
        let (lo, hi) = (lo as usize, hi as usize);
        let ends = self.ends.get(lo..hi)?;
        // A kind every record has needs no look for absent texts.
        if !self.complete && ends.iter().any(|e| e & ABSENT != 0) {
            return None;
        }
        let first = match lo {
            0 => 0,
            _ => self.end(lo - 1)? & !ABSENT,
        };
        let last = ends.last().copied().unwrap_or(first);
        Some(TextRun {
            text: self.text.get(first as usize..last as usize)?,
            ends,
            first,
        })
    }
}

/// The texts of a run of records, of one kind, one after the other: one
/// slice, and where each record's text ends in it. A reader that keeps
/// the texts copies the slice and the ends, with no lookup per record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextRun<'a> {
    /// The records' texts.
    text: &'a str,
    /// Where each record's text ends in the kind's whole text: none before
    /// `first` or before the one above it, none with [`ABSENT`] set.
    ends: &'a [u32],
    /// Where `text` starts in the kind's whole text.
    first: u32,
}

impl<'a> TextRun<'a> {
    /// The records' texts, one after the other.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the run has no records.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Where each record's text ends in [`text`](Self::text), in order:
    /// the first starts at 0, each other where the one before ends, and
    /// the last ends at the text's end. A slice mapped, so that a reader
    /// extending its own list of ends with them is one pass the compiler
    /// can vectorize.
    #[inline]
    pub fn ends(&self) -> impl ExactSizeIterator<Item = usize> + 'a {
        let first = self.first;
        // No end is before `first` (see `ends`): nothing wraps.
        self.ends
            .iter()
            .map(move |&e| e.wrapping_sub(first) as usize)
    }

    /// Record `i` of the run's texts (`None` past the last).
    pub fn get(&self, i: usize) -> Option<&'a str> {
        let b = self.ends.get(i)?.checked_sub(self.first)?;
        let a = match i {
            0 => 0,
            _ => self.ends.get(i - 1)?.checked_sub(self.first)?,
        };
        self.text.get(a as usize..b as usize)
    }
}
