//! A table of `N` short texts per record, kept compact and stored as one
//! value.

use super::format::{damaged, ABSENT};
use super::kind::{TextKind, TextRun};
use crate::error::StorageError;
use crate::reader::Reader;
use crate::records::{OpRecord, VarRecord};

/// `N` short texts per record, in a buffer per kind of text, so that a
/// reader of one kind (the ids) reads only that kind's bytes. A text is
/// present or absent (absent is not the same as empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextTable<const N: usize> {
    /// The texts of kind `k` of every record, one after the other.
    text: [String; N],
    /// Where each record's texts end in `text`, by kind, with [`ABSENT`]
    /// set when the record has no such text; each starts where the record
    /// before's ends. Every end is a char boundary of its text and no end
    /// is before the one above it: [`push`](Self::push) and
    /// [`decode`](Self::decode) keep that so. Presence lives in the ends
    /// themselves so that a lookup reads one place, not two.
    ends: Vec<[u32; N]>,
    /// The ends of the first kind (the ids) again, one after the other: a
    /// reader that copies a run of ids reads where each ends as one slice
    /// (see [`TextRun`]), where `ends` would have it pick every `N`th
    /// number; a row, which wants every kind of one record, reads `ends`.
    lead: Vec<u32>,
    /// How many records have no text of each kind: a run of a kind that
    /// every record has is cut without looking for absent ones.
    absent: [u32; N],
}

/// The texts of consecutive records of a [`TextTable`], record by record
/// (see [`TextTable::records`]).
#[derive(Debug, Clone)]
pub struct Records<'a, const N: usize> {
    text: &'a [String; N],
    ends: std::slice::Iter<'a, [u32; N]>,
    /// Where the next record's texts start (absent bits still set).
    start: [u32; N],
}

impl<'a, const N: usize> Iterator for Records<'a, N> {
    type Item = [Option<&'a str>; N];

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let ends = *self.ends.next()?;
        let mut out = [None; N];
        for (k, slot) in out.iter_mut().enumerate() {
            let (a, b) = ((self.start[k] & !ABSENT) as usize, ends[k] as usize);
            let text = &self.text[k];
            if a <= b && b <= text.len() {
                // SAFETY: as in `TextTable::get`: every end is a char
                // boundary of its text, and `a..b` is in bounds.
                *slot = Some(unsafe { text.get_unchecked(a..b) });
            }
        }
        self.start = ends;
        Some(out)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl<const N: usize> ExactSizeIterator for Records<'_, N> {}

/// [`Records`] of a table without absent texts (see
/// [`TextTable::complete_records`]).
#[derive(Debug, Clone)]
pub struct CompleteRecords<'a, const N: usize>(Records<'a, N>);

impl<'a, const N: usize> Iterator for CompleteRecords<'a, N> {
    type Item = [&'a str; N];

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let r = &mut self.0;
        let ends = *r.ends.next()?;
        let start = std::mem::replace(&mut r.start, ends);
        Some(std::array::from_fn(|k| {
            // SAFETY: no text of the table is absent (checked when this
            // was made), so no end has `ABSENT` set; every end is a char
            // boundary of its text, at most its length, and no end is
            // before the one above it (`push` and `decode` keep that so):
            // `start[k]..ends[k]` is in bounds and on char boundaries.
            unsafe { r.text[k].get_unchecked(start[k] as usize..ends[k] as usize) }
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<const N: usize> ExactSizeIterator for CompleteRecords<'_, N> {}

impl<const N: usize> Default for TextTable<N> {
    fn default() -> Self {
        TextTable {
            text: std::array::from_fn(|_| String::new()),
            ends: Vec::new(),
            lead: Vec::new(),
            absent: [0; N],
        }
    }
}

impl<const N: usize> TextTable<N> {
    /// Appends a record's texts; `false` (and nothing appended) when a
    /// kind's texts would reach 2 GiB.
    pub fn push(&mut self, texts: [Option<&str>; N]) -> bool {
        let mut end = [0u32; N];
        for (k, t) in texts.iter().enumerate() {
            let len = self.text[k].len() + t.map_or(0, str::len);
            match u32::try_from(len) {
                Ok(e) if e < ABSENT => end[k] = e | if t.is_some() { 0 } else { ABSENT },
                _ => return false,
            }
        }
        for (k, t) in texts.iter().enumerate() {
            self.text[k].push_str(t.unwrap_or(""));
            self.absent[k] += u32::from(t.is_none());
        }
        self.ends.push(end);
        if let Some(&first) = end.first() {
            self.lead.push(first);
        }
        true
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The texts of record `id`, `None` past the last.
    #[inline]
    pub fn get(&self, id: u32) -> Option<[Option<&str>; N]> {
        let i = id as usize;
        let ends = self.ends.get(i)?;
        let starts = match i {
            0 => [0; N],
            _ => *self.ends.get(i - 1)?,
        };
        let mut out = [None; N];
        for (k, slot) in out.iter_mut().enumerate() {
            let (a, b) = ((starts[k] & !ABSENT) as usize, ends[k] as usize);
            let text = &self.text[k];
            // An absent text's end has `ABSENT` set, which puts it past
            // any text.
            if a <= b && b <= text.len() {
                // SAFETY: every end is a char boundary of its text (pushed
                // after a whole `str`, or checked when decoded), 0 is one,
                // and `a..b` is in bounds (just checked). Slicing unchecked
                // keeps a lookup from reading the text itself: a reader
                // that wants one kind of text does not pay a cache miss for
                // the others.
                *slot = Some(unsafe { text.get_unchecked(a..b) });
            }
        }
        Some(out)
    }

    /// The texts of records `lo..hi`, in order, as [`get`](Self::get)
    /// gives each: each record's texts start where the one before's end,
    /// so a reader of consecutive records reads where each ends once, not
    /// twice. Stops at the last record.
    pub fn records(&self, lo: u32, hi: u32) -> Records<'_, N> {
        let (lo, hi) = (lo as usize, (hi as usize).min(self.ends.len()));
        let ends = self.ends.get(lo..hi).unwrap_or(&[]);
        let start = match lo {
            0 => [0; N],
            _ => self.ends.get(lo - 1).copied().unwrap_or([0; N]),
        };
        Records {
            text: &self.text,
            ends: ends.iter(),
            start,
        }
    }

    /// [`records`](Self::records) of a table in which every record has
    /// every kind of text (none absent): each record's texts as they are,
    /// with nothing to look at for presence. `None` when some text is
    /// absent.
    pub fn complete_records(&self, lo: u32, hi: u32) -> Option<CompleteRecords<'_, N>> {
        if self.absent.iter().any(|&a| a > 0) {
            return None;
        }
        Some(CompleteRecords(self.records(lo, hi)))
    }

    /// One kind of text of the table, read record by record or as runs
    /// (see [`TextKind`]); `None` past the last kind.
    pub fn kind(&self, k: usize) -> Option<TextKind<'_>> {
        let (ends, stride, kind) = match k {
            0 => (self.lead.as_slice(), 1, 0),
            _ => (self.ends.as_flattened(), N, k),
        };
        Some(TextKind {
            text: self.text.get(k)?,
            ends,
            stride,
            kind,
            complete: self.absent.get(k) == Some(&0),
        })
    }

    /// Where record `id`'s text of kind `k` lies (see
    /// [`TextKind::range`]); `None` past the last record or kind.
    #[inline]
    pub fn range(&self, id: u32, k: usize) -> Option<Option<[u32; 2]>> {
        self.kind(k)?.range(id)
    }

    /// The texts of kind `k` of records `lo..hi` as one run (see
    /// [`TextKind::run`]); `None` past the last kind.
    pub fn run(&self, k: usize, lo: u32, hi: u32) -> Option<TextRun<'_>> {
        self.kind(k)?.run(lo, hi)
    }

    /// Every record's text of kind `k`, one after the other (empty past
    /// the last kind).
    pub fn text(&self, k: usize) -> &str {
        self.text.get(k).map_or("", String::as_str)
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        self.text.iter().map(String::capacity).sum::<usize>()
            + self.ends.capacity() * 4 * N
            + self.lead.capacity() * 4
    }

    /// Frees what the table holds beyond its texts.
    pub fn shrink_to_fit(&mut self) {
        for t in &mut self.text {
            t.shrink_to_fit();
        }
        self.ends.shrink_to_fit();
        self.lead.shrink_to_fit();
    }

    /// Appends the table's encoding: the record count, each kind's text
    /// (its length first), the ends and the presence bits, integers as
    /// little-endian u32.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.ends.len() as u32).to_le_bytes());
        for t in &self.text {
            out.extend_from_slice(&(t.len() as u32).to_le_bytes());
            out.extend_from_slice(t.as_bytes());
        }
        for end in &self.ends {
            for e in end {
                out.extend_from_slice(&(e & !ABSENT).to_le_bytes());
            }
        }
        out.extend(self.ends.iter().map(|end| {
            (0..N).fold(0u8, |has, k| {
                has | if end[k] & ABSENT == 0 { 1 << k } else { 0 }
            })
        }));
    }

    /// Reads a table [`encode`](Self::encode) wrote at the start of
    /// `bytes`; the table and what follows it. Anything that is not such a
    /// table (short, not UTF-8, ends out of order, past their text or
    /// inside a character) is an error.
    pub fn decode(bytes: &[u8]) -> Result<(Self, &[u8]), StorageError> {
        let mut r = Reader(bytes, "labels");
        let count = r.u32()? as usize;
        let mut text: [String; N] = std::array::from_fn(|_| String::new());
        for t in &mut text {
            let len = r.u32()?;
            if len >= ABSENT {
                return Err(damaged(format!("a text of {len} bytes")));
            }
            let raw = r.take(len as usize)?;
            *t = std::str::from_utf8(raw)
                .map_err(|e| damaged(format!("a text is not UTF-8: {e}")))?
                .to_string();
        }
        let need = count
            .checked_mul(4 * N)
            .ok_or_else(|| damaged("too many records"))?;
        let raw_ends = r.take(need)?;
        let mut ends = Vec::with_capacity(count);
        let mut last = [0u32; N];
        for chunk in raw_ends.chunks_exact(4 * N) {
            let mut end = [0u32; N];
            for (k, e) in end.iter_mut().enumerate() {
                let b = &chunk[4 * k..4 * k + 4];
                *e = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                let at = *e as usize;
                if *e < last[k] || at > text[k].len() || !text[k].is_char_boundary(at) {
                    return Err(damaged(format!(
                        "record {} ends its text {k} at {at}, after {} and in {} bytes",
                        ends.len(),
                        last[k],
                        text[k].len()
                    )));
                }
            }
            last = end;
            ends.push(end);
        }
        let has = r.take(count)?;
        let mut absent = [0u32; N];
        for (end, &has) in ends.iter_mut().zip(has) {
            for (k, e) in end.iter_mut().enumerate() {
                if has & (1 << k) == 0 {
                    *e |= ABSENT;
                    absent[k] += 1;
                }
            }
        }
        let lead = ends.iter().filter_map(|end| end.first().copied()).collect();
        Ok((
            TextTable {
                text,
                ends,
                lead,
                absent,
            },
            r.0,
        ))
    }
}

impl TextTable<2> {
    /// Appends a variable's texts: its full node id (made in `scratch`)
    /// and category; `false` as [`push`](Self::push).
    pub fn push_variable(&mut self, v: &VarRecord, scratch: &mut String) -> bool {
        scratch.clear();
        v.push_full_node_id(scratch);
        self.push([Some(scratch), v.category.as_deref()])
    }
}

impl TextTable<3> {
    /// Appends an op's texts: its id, name and kind (`category`); `false`
    /// as [`push`](Self::push).
    pub fn push_op(&mut self, o: &OpRecord) -> bool {
        self.push([
            Some(o.op_id.as_str()),
            o.op_name.as_deref(),
            o.category.as_deref(),
        ])
    }
}
