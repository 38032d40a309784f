//! The short texts of a trace's records that rows show (its variables'
//! full node ids and categories, its ops' ids, names and kinds), kept as
//! compact tables and stored at import as one value per trace, so that a
//! query handing out rows reads them with one get instead of decoding
//! every record of the trace.

use crate::error::StorageError;
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

/// The bit of a stored end that marks its text absent; texts are shorter
/// than it.
const ABSENT: u32 = 1 << 31;

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

fn damaged(reason: impl Into<String>) -> StorageError {
    StorageError::Decode {
        what: "labels",
        reason: reason.into(),
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
    /// Appends a variable's label: its full node id (made in `scratch`)
    /// and category; `false` as [`push`](Self::push).
    pub fn push_variable(&mut self, v: &VarRecord, scratch: &mut String) -> bool {
        scratch.clear();
        v.push_full_node_id(scratch);
        self.push([Some(scratch), v.category.as_deref()])
    }
}

impl TextTable<3> {
    /// Appends an op's label: its id, name and kind (`category`); `false`
    /// as [`push`](Self::push).
    pub fn push_op(&mut self, o: &OpRecord) -> bool {
        self.push([
            Some(o.op_id.as_str()),
            o.op_name.as_deref(),
            o.category.as_deref(),
        ])
    }
}

/// Reads a stored value front to back; a short value is an error naming
/// what was being read.
pub(crate) struct Reader<'b>(pub(crate) &'b [u8], pub(crate) &'static str);

impl<'b> Reader<'b> {
    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'b [u8], StorageError> {
        if self.0.len() < n {
            return Err(StorageError::Decode {
                what: self.1,
                reason: format!("{n} bytes wanted, {} left", self.0.len()),
            });
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// The next little-endian `u32`.
    pub(crate) fn u32(&mut self) -> Result<u32, StorageError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// One kind of text of a [`TextTable`] (the ids, or the names, ...), for a
/// table of any number of kinds: the kind's texts, one after the other,
/// and where each record's ends. Consecutive records' texts follow each
/// other, so the texts of a run of records are one slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextKind<'a> {
    /// Every record's text of this kind, one after the other.
    text: &'a str,
    /// Where the records' texts end, record `i`'s at `ends[i * stride +
    /// kind]`: the first kind's ends one after the other (`stride` 1), the
    /// others' the table's ends, every kind record after record.
    ends: &'a [u32],
    stride: usize,
    kind: usize,
    /// Whether every record has a text of this kind.
    complete: bool,
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

/// A trace's labels: per variable its full node id, category and class,
/// per op its id, name and kind (`category`), by local id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLabels {
    /// Full node id (`class:name@version`), category.
    pub vars: TextTable<2>,
    /// Op id, name, kind.
    pub ops: TextTable<3>,
    /// Each variable's class (`class_name` as recorded), with which its
    /// name, class and version are read from its full node id (see
    /// [`var`](Self::var)); `None` for labels stored before classes were.
    pub classes: Option<TextTable<1>>,
}

impl Default for TraceLabels {
    /// No records yet, classes kept.
    fn default() -> Self {
        TraceLabels {
            vars: TextTable::default(),
            ops: TextTable::default(),
            classes: Some(TextTable::default()),
        }
    }
}

/// The first bytes of a stored [`TraceLabels`] value with classes.
const MAGIC: &[u8; 4] = b"MTL2";

/// The first bytes of a stored [`TraceLabels`] value without classes (as
/// stored before classes were).
const MAGIC_NO_CLASSES: &[u8; 4] = b"MTL1";

/// A variable's label fields, read from its full node id and its class
/// (see [`TraceLabels::var`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarText<'a> {
    /// `class:name@version` (`name@version` without a class).
    pub node_id: &'a str,
    /// `node_id` without `@version`.
    pub full_name: &'a str,
    /// The name.
    pub name: &'a str,
    /// The class as recorded (possibly empty).
    pub class: Option<&'a str>,
    /// The version.
    pub version: u32,
    /// The category.
    pub category: Option<&'a str>,
}

impl<'a> VarText<'a> {
    /// Splits a full node id by its class: `None` when the id is not
    /// `class:name@version` (or `name@version` for no or an empty class)
    /// with a version that prints back as written.
    pub fn split(
        node_id: &'a str,
        class: Option<&'a str>,
        category: Option<&'a str>,
    ) -> Option<Self> {
        let at = node_id.rfind('@')?;
        let (full_name, version) = (&node_id[..at], &node_id[at + 1..]);
        let parsed: u32 = version.parse().ok()?;
        // `parse` takes a leading `+` and zeros, which no id is written with.
        if version.starts_with('+') || (version.len() > 1 && version.starts_with('0')) {
            return None;
        }
        let name = match class.filter(|c| !c.is_empty()) {
            Some(c) => full_name.strip_prefix(c)?.strip_prefix(':')?,
            None => full_name,
        };
        Some(VarText {
            node_id,
            full_name,
            name,
            class,
            version: parsed,
            category,
        })
    }
}

impl TraceLabels {
    /// Appends a variable's label (full node id, made in `scratch`,
    /// category and, when kept, class); `false` (and nothing appended)
    /// when a kind's texts would reach 2 GiB.
    pub fn push_variable(&mut self, v: &VarRecord, scratch: &mut String) -> bool {
        if let Some(c) = &self.classes {
            // A class is part of its full node id, so its texts stay
            // shorter than the ids': checked first, nothing to undo.
            if c.text(0).len() + v.class_name.as_deref().map_or(0, str::len) >= ABSENT as usize {
                return false;
            }
        }
        if !self.vars.push_variable(v, scratch) {
            return false;
        }
        if let Some(c) = &mut self.classes {
            c.push([v.class_name.as_deref()]);
        }
        true
    }

    /// Variable `v`'s full node id split into name, class and version, with
    /// its category; `None` past the last variable, for labels without
    /// classes, or for an id its class does not split (never so for labels
    /// made by [`push_variable`](Self::push_variable)).
    pub fn var(&self, v: u32) -> Option<VarText<'_>> {
        let [class] = self.classes.as_ref()?.get(v)?;
        let [id, category] = self.vars.get(v)?;
        VarText::split(id?, class, category)
    }

    /// Frees what the tables hold beyond their texts.
    pub fn shrink_to_fit(&mut self) {
        self.vars.shrink_to_fit();
        self.ops.shrink_to_fit();
        if let Some(c) = &mut self.classes {
            c.shrink_to_fit();
        }
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.bytes());
        out.extend_from_slice(match self.classes {
            Some(_) => MAGIC,
            None => MAGIC_NO_CLASSES,
        });
        self.vars.encode(&mut out);
        self.ops.encode(&mut out);
        if let Some(c) = &self.classes {
            c.encode(&mut out);
        }
        out
    }

    /// Reads what [`encode`](Self::encode) wrote (or labels stored before
    /// classes were); anything else is an error.
    pub fn decode(bytes: &[u8]) -> Result<TraceLabels, StorageError> {
        let (with_classes, rest) = match (
            bytes.strip_prefix(MAGIC),
            bytes.strip_prefix(MAGIC_NO_CLASSES),
        ) {
            (Some(rest), _) => (true, rest),
            (None, Some(rest)) => (false, rest),
            (None, None) => return Err(damaged("not a labels value")),
        };
        let (vars, rest) = TextTable::decode(rest)?;
        let (ops, mut rest) = TextTable::decode(rest)?;
        let classes = match with_classes {
            true => {
                let (c, after) = TextTable::<1>::decode(rest)?;
                if c.len() != vars.len() {
                    return Err(damaged(format!(
                        "{} classes for {} variables",
                        c.len(),
                        vars.len()
                    )));
                }
                rest = after;
                Some(c)
            }
            false => None,
        };
        if !rest.is_empty() {
            return Err(damaged(format!("{} bytes after the tables", rest.len())));
        }
        Ok(TraceLabels { vars, ops, classes })
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        self.vars.bytes() + self.ops.bytes() + self.classes.as_ref().map_or(0, TextTable::bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts() -> impl Strategy<Value = Vec<[Option<String>; 3]>> {
        let one = proptest::option::of("\\PC{0,6}");
        proptest::collection::vec([one.clone(), one.clone(), one], 0..30)
    }

    fn table(rows: &[[Option<String>; 3]]) -> TextTable<3> {
        let mut t = TextTable::<3>::default();
        for r in rows {
            assert!(t.push([r[0].as_deref(), r[1].as_deref(), r[2].as_deref()]));
        }
        t
    }

    proptest! {
        #[test]
        fn a_table_gives_back_what_was_pushed_and_round_trips(rows in texts()) {
            let t = table(&rows);
            prop_assert_eq!(t.len(), rows.len());
            for (i, r) in rows.iter().enumerate() {
                let got = t.get(i as u32).unwrap();
                for k in 0..3 {
                    prop_assert_eq!(got[k], r[k].as_deref());
                }
            }
            prop_assert!(t.get(rows.len() as u32).is_none());
            let labels = TraceLabels { vars: TextTable::default(), ops: t, classes: None };
            prop_assert_eq!(TraceLabels::decode(&labels.encode()).unwrap(), labels);
        }

        #[test]
        fn ranges_slice_each_kinds_text_to_the_records_text_and_runs_are_one_slice(
            rows in texts(), from: usize, to: usize,
        ) {
            let t = table(&rows);
            for (i, r) in rows.iter().enumerate() {
                for (k, text) in r.iter().enumerate() {
                    let range = t.range(i as u32, k).unwrap();
                    let got = range.map(|[a, b]| &t.text(k)[a as usize..b as usize]);
                    prop_assert_eq!(got, text.as_deref());
                    let kind = t.kind(k).unwrap();
                    prop_assert_eq!(kind.get(i as u32), Some(text.as_deref()));
                    prop_assert_eq!(kind.len(), rows.len());
                    prop_assert_eq!(kind.text(), t.text(k));
                }
            }
            for k in 0..4 {
                prop_assert_eq!(t.range(rows.len() as u32, k), None);
            }
            prop_assert_eq!(t.text(3), "");
            let (lo, hi) = (from % (rows.len() + 1), to % (rows.len() + 1));
            let (lo, hi) = (lo.min(hi), lo.max(hi));
            for k in 0..3 {
                // The present texts of ids `lo..hi`, in order, are the text
                // from the first's start to the last's end.
                let present: Vec<[u32; 2]> =
                    (lo..hi).filter_map(|i| t.range(i as u32, k).unwrap()).collect();
                let joined: String = rows[lo..hi].iter().filter_map(|r| r[k].clone()).collect();
                if let (Some(first), Some(last)) = (present.first(), present.last()) {
                    prop_assert_eq!(&t.text(k)[first[0] as usize..last[1] as usize], joined);
                }
                // A run whose records all have the kind's text is one
                // slice, split where each starts.
                let all = rows[lo..hi].iter().all(|r| r[k].is_some());
                // Of the first kind (the ids), a run whose records all
                // have text is one slice, split where each ends; the other
                // kinds give none.
                let all = all && k == 0;
                match t.run(k, lo as u32, hi as u32) {
                    Some(run) => {
                        prop_assert!(all);
                        let ends: Vec<usize> = run.ends().collect();
                        prop_assert_eq!(ends.len(), run.len());
                        prop_assert_eq!(run.is_empty(), lo == hi);
                        prop_assert_eq!(ends.last().copied().unwrap_or(0), run.text().len());
                        let starts = std::iter::once(0).chain(ends.iter().copied());
                        let split: Vec<&str> =
                            starts.zip(&ends).map(|(a, &b)| &run.text()[a..b]).collect();
                        let expected: Vec<&str> =
                            rows[lo..hi].iter().map(|r| r[k].as_deref().unwrap()).collect();
                        let one_by_one: Vec<&str> =
                            (0..run.len()).filter_map(|i| run.get(i)).collect();
                        prop_assert_eq!(&split, &expected);
                        prop_assert_eq!(one_by_one, expected);
                        prop_assert_eq!(run.get(run.len()), None);
                    }
                    None => prop_assert!(!all),
                }
            }
            prop_assert!(t.run(0, 0, rows.len() as u32 + 1).is_none());
            prop_assert!(t.kind(3).is_none());
            prop_assert_eq!(t.kind(0).unwrap().get(rows.len() as u32), None);
            prop_assert!(t.run(3, 0, 0).is_none());
        }

        #[test]
        fn consecutive_records_read_together_are_each_records_texts(
            rows in texts(), from: usize, to: usize,
        ) {
            let t = table(&rows);
            let n = rows.len() + 3;
            let (lo, hi) = ((from % n) as u32, (to % n) as u32);
            let together: Vec<[Option<&str>; 3]> = t.records(lo, hi).collect();
            // Records past the last are left out; lo past hi is none.
            let one_by_one: Vec<[Option<&str>; 3]> =
                (lo..hi).map_while(|i| t.get(i)).collect();
            prop_assert_eq!(t.records(lo, hi).len(), one_by_one.len());
            prop_assert_eq!(&together, &one_by_one);
            // Without absent texts, the same records with nothing to look
            // at for presence; with one, none.
            let complete = rows.iter().all(|r| r.iter().all(Option::is_some));
            match t.complete_records(lo, hi) {
                Some(records) => {
                    prop_assert!(complete);
                    prop_assert_eq!(records.len(), one_by_one.len());
                    let present: Vec<[Option<&str>; 3]> = records.map(|r| r.map(Some)).collect();
                    prop_assert_eq!(present, one_by_one);
                }
                None => prop_assert!(!complete),
            }
        }

        #[test]
        fn a_table_without_absent_texts_reads_its_records_whole(
            rows in proptest::collection::vec(["\\PC{0,6}", "\\PC{0,6}", "\\PC{0,6}"], 0..30),
            from: usize, to: usize,
        ) {
            let rows: Vec<[Option<String>; 3]> = rows.into_iter().map(|r| r.map(Some)).collect();
            let t = table(&rows);
            let n = rows.len() + 2;
            let (lo, hi) = ((from % n) as u32, (to % n) as u32);
            let whole: Vec<[&str; 3]> = t.complete_records(lo, hi).unwrap().collect();
            let expected: Vec<[&str; 3]> = rows
                .iter()
                .skip(lo as usize)
                .take((hi as usize).saturating_sub(lo as usize))
                .map(|r| [0, 1, 2].map(|k| r[k].as_deref().unwrap()))
                .collect();
            prop_assert_eq!(whole, expected);
        }

        #[test]
        fn damaged_values_are_errors_not_panics(rows in texts(), cut: usize, at: usize, byte: u8) {
            let labels = TraceLabels { vars: TextTable::default(), ops: table(&rows), classes: None };
            let bytes = labels.encode();
            let _ = TraceLabels::decode(&bytes[..cut % (bytes.len() + 1)]);
            let mut changed = bytes.clone();
            let i = at % changed.len();
            changed[i] = byte;
            // A change that still decodes gives a table whose every text
            // can be read.
            if let Ok(l) = TraceLabels::decode(&changed) {
                for i in 0..l.ops.len() as u32 {
                    let _ = l.ops.get(i);
                }
            }
        }
    }

    #[test]
    fn ends_out_of_order_or_inside_a_character_are_refused() {
        let mut t = TextTable::<1>::default();
        assert!(t.push([Some("é")]));
        assert!(t.push([Some("ab")]));
        let mut bytes = Vec::new();
        t.encode(&mut bytes);
        // count, text length, text (2 + 2 bytes), ends 2 and 4.
        assert_eq!(&bytes[..8], &[2, 0, 0, 0, 4, 0, 0, 0]);
        let mut inside = bytes.clone();
        inside[12] = 1; // the first end inside "é"
        assert!(TextTable::<1>::decode(&inside).is_err());
        let mut back = bytes.clone();
        back[16] = 1; // the second end before the first
        assert!(TextTable::<1>::decode(&back).is_err());
        let (ok, rest) = TextTable::<1>::decode(&bytes).unwrap();
        assert!(rest.is_empty());
        assert_eq!(ok.get(0), Some([Some("é")]));
        assert_eq!(ok.get(1), Some([Some("ab")]));
    }

    #[test]
    fn absent_and_empty_texts_differ() {
        let mut t = TextTable::<2>::default();
        assert!(t.push([Some(""), None]));
        assert_eq!(t.get(0), Some([Some(""), None]));
    }

    #[test]
    fn the_stored_form_keeps_presence_apart_from_the_ends() {
        // Presence is a bit of each end in memory; stored, the ends are
        // plain and presence follows them a byte per record, as values
        // stored before were.
        let mut t = TextTable::<2>::default();
        assert!(t.push([Some("ab"), None]));
        assert!(t.push([None, Some("")]));
        assert!(t.push([Some("c"), Some("d")]));
        let mut bytes = Vec::new();
        t.encode(&mut bytes);
        let le = |n: u32| n.to_le_bytes();
        let mut want = Vec::new();
        want.extend(le(3));
        want.extend(le(3));
        want.extend(b"abc");
        want.extend(le(1));
        want.extend(b"d");
        for end in [[2, 0], [2, 0], [3, 1]] {
            want.extend(le(end[0]));
            want.extend(le(end[1]));
        }
        want.extend([0b01, 0b10, 0b11]);
        assert_eq!(bytes, want);
        let (back, rest) = TextTable::<2>::decode(&bytes).unwrap();
        assert!(rest.is_empty());
        assert_eq!(back, t);
        assert_eq!(back.get(1), Some([None, Some("")]));
    }

    fn var(name: &str, class: Option<&str>, version: u32, category: Option<&str>) -> VarRecord {
        VarRecord {
            name: name.into(),
            class_name: class.map(str::to_string),
            version,
            value: None,
            comment: None,
            category: category.map(str::to_string),
            session_id: None,
            session: None,
            node_id: None,
            common: crate::records::Common::default(),
        }
    }

    proptest! {
        #[test]
        fn a_variables_fields_read_from_its_label_are_its_records(
            vars in proptest::collection::vec(
                ("[a-z:@]{0,5}", proptest::option::of("[a-z:@]{0,4}"), any::<u32>(),
                 proptest::option::of("[a-z]{0,3}")),
                0..12,
            ),
        ) {
            let records: Vec<VarRecord> = vars
                .iter()
                .map(|(n, c, v, k)| var(n, c.as_deref(), *v, k.as_deref()))
                .collect();
            let mut labels = TraceLabels::default();
            let mut scratch = String::new();
            for r in &records {
                prop_assert!(labels.push_variable(r, &mut scratch));
            }
            let back = TraceLabels::decode(&labels.encode()).unwrap();
            prop_assert_eq!(&back, &labels);
            for (i, r) in records.iter().enumerate() {
                let t = back.var(i as u32).unwrap();
                prop_assert_eq!(t.node_id, r.full_node_id());
                prop_assert_eq!(t.full_name, r.full_name());
                prop_assert_eq!(t.name, r.name.as_str());
                prop_assert_eq!(t.class, r.class_name.as_deref());
                prop_assert_eq!(t.version, r.version);
                prop_assert_eq!(t.category, r.category.as_deref());
            }
            prop_assert!(back.var(records.len() as u32).is_none());
        }
    }

    #[test]
    fn labels_stored_before_classes_read_without_them() {
        let mut old = TraceLabels {
            classes: None,
            ..TraceLabels::default()
        };
        assert!(old.push_variable(&var("D1", Some("message"), 1, None), &mut String::new()));
        let bytes = old.encode();
        assert_eq!(&bytes[..4], b"MTL1");
        let back = TraceLabels::decode(&bytes).unwrap();
        assert_eq!(back.classes, None);
        assert_eq!(back.vars.get(0), Some([Some("message:D1@1"), None]));
        // Without its class, `message:D1@1` does not say its name.
        assert_eq!(back.var(0), None);
    }

    #[test]
    fn classes_that_do_not_fit_the_ids_are_refused_or_not_read() {
        let mut labels = TraceLabels::default();
        assert!(labels.push_variable(&var("a", Some("c"), 1, None), &mut String::new()));
        labels.classes = Some(TextTable::default());
        let err = TraceLabels::decode(&labels.encode()).unwrap_err();
        assert!(
            err.to_string().contains("0 classes for 1 variables"),
            "{err}"
        );
        // A class the id does not start with, or a version not as written,
        // splits nothing.
        assert_eq!(VarText::split("c:a@1", Some("d"), None), None);
        assert_eq!(VarText::split("c:a@01", Some("c"), None), None);
        assert_eq!(VarText::split("c:a@+1", Some("c"), None), None);
        assert_eq!(VarText::split("c:a", Some("c"), None), None);
        assert_eq!(
            VarText::split("c:a@1", Some("c"), None).map(|t| t.name),
            Some("a")
        );
        assert_eq!(
            VarText::split("c:a@0", Some(""), None).map(|t| t.name),
            Some("c:a")
        );
    }

    #[test]
    fn a_text_as_long_as_the_presence_bit_is_refused() {
        let mut bytes = Vec::new();
        bytes.extend(1u32.to_le_bytes());
        bytes.extend((1u32 << 31).to_le_bytes());
        let err = TextTable::<1>::decode(&bytes).unwrap_err();
        assert!(err.to_string().contains("2147483648 bytes"), "{err}");
    }
}
