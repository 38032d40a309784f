//! A trace's head: what a query scoped to one trace needs before it walks,
//! kept beside the trace's adjacency as one value, so that the first query
//! of a process on a small trace reads one value instead of the trace
//! record, the name index and the adjacency.
//!
//! It holds a copy of the trace record (written in the same batch as the
//! record, and like it never changed afterwards) and, for a trace of at
//! most [`HEAD_VARS`] variables, its variables' full node ids in sorted
//! order, to find a start by name, and its whole adjacency. A larger trace's
//! head holds the record only: its names are found in the name index, and
//! a walk of a few hops reads the adjacency blocks it reaches.
//!
//! Layout: `MTH2`, then the record (`u32` length, bincode), then a `u32`
//! count of names (`u32::MAX`: no names and no adjacency follow); with
//! names, the names section (below), and the adjacency value
//! ([`Adjacency::encode_narrow`](crate::Adjacency::encode_narrow), `u32`
//! length first). Integers are little-endian.
//!
//! The names section holds the sorted node ids front-coded, as a table
//! file's index does: each id is the length it shares with the id before
//! (an unsigned LEB128 varint), the length of the rest (another) and the
//! rest; every [`RESTART`]th id shares nothing, and where each of those
//! starts is kept (`u32`s), so that a lookup searches the restart points
//! and reads at most one run of ids. Ids of one trace share long prefixes
//! (`message:D12:`...), so the head a cold query reads is much smaller than
//! with the ids stored whole. Then each id's
//! variable, a `u16` (a head holds names for at most [`HEAD_VARS`]
//! variables). In bytes: the entries' length (`u32`), the entries, the
//! restart points, the variables.
//!
//! Heads written before (`MTH1`: the ids whole, as a [`TextTable<1>`](crate::TextTable), and
//! `u32` variables) are still read, and their ids searched as they lie.

use crate::adjacency::StoredAdjacency;
use crate::error::StorageError;
use crate::reader::Reader;
use crate::records::{decode, encode, TraceRecord};

/// The most variables a trace may have for its head to hold its names and
/// adjacency, so that a head stays small.
pub const HEAD_VARS: u32 = 4096;

/// The most bytes a head's names and adjacency may take, whatever the
/// number of variables (node ids of a few KiB each would otherwise make a
/// small trace's head larger than what it saves reading).
pub const HEAD_BYTES: usize = 256 << 10;

/// How many names follow one another between restart points.
pub const RESTART: usize = 16;

const MAGIC: &[u8; 4] = b"MTH2";
const MAGIC_V1: &[u8; 4] = b"MTH1";
const NO_NAMES: u32 = u32::MAX;

/// A trace's variables by full node id, sorted and front-coded as a head
/// stores them (see the module); the writer's side of [`StoredNames`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeadNames {
    /// The names section, as stored after the count.
    encoded: Vec<u8>,
    /// How many names.
    len: usize,
}

impl HeadNames {
    /// The names of `vars`, given as (full node id, local id) pairs. Of
    /// equal node ids, the variable added last is the one found, as in the
    /// name index. `None` when a variable does not fit a `u16` or the
    /// names reach 4 GiB.
    pub fn new<'s>(vars: impl IntoIterator<Item = (&'s str, u32)>) -> Option<HeadNames> {
        let mut pairs: Vec<(&[u8], u32)> = vars
            .into_iter()
            .map(|(id, var)| (id.as_bytes(), var))
            .collect();
        pairs.sort_unstable();
        HeadNames::in_order(&pairs)
    }

    /// The names as given, in the order given (sorted, from
    /// [`new`](Self::new)).
    fn in_order(pairs: &[(&[u8], u32)]) -> Option<HeadNames> {
        let mut entries = Vec::new();
        let mut restarts = Vec::with_capacity(pairs.len().div_ceil(RESTART));
        let mut prev: &[u8] = b"";
        for (i, &(id, _)) in pairs.iter().enumerate() {
            let shared = if i % RESTART == 0 {
                restarts.push(u32::try_from(entries.len()).ok()?);
                0
            } else {
                prev.iter().zip(id).take_while(|(a, b)| a == b).count()
            };
            put_varint(&mut entries, u32::try_from(shared).ok()?);
            put_varint(&mut entries, u32::try_from(id.len() - shared).ok()?);
            entries.extend_from_slice(&id[shared..]);
            prev = id;
        }
        let mut encoded =
            Vec::with_capacity(4 + entries.len() + 4 * restarts.len() + 2 * pairs.len());
        encoded.extend_from_slice(&u32::try_from(entries.len()).ok()?.to_le_bytes());
        encoded.extend_from_slice(&entries);
        for r in restarts {
            encoded.extend_from_slice(&r.to_le_bytes());
        }
        for &(_, var) in pairs {
            encoded.extend_from_slice(&u16::try_from(var).ok()?.to_le_bytes());
        }
        Some(HeadNames {
            encoded,
            len: pairs.len(),
        })
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the names take stored.
    pub fn bytes(&self) -> usize {
        self.encoded.len() + 4
    }
}

/// Appends `n` as an unsigned LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut n: u32) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// The varint at `at` in `bytes` and where it ends; `None` if cut short or
/// past a `u32`.
fn varint(bytes: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut n: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(at)?;
        at += 1;
        n |= u32::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return (shift < 28 || b < 0x10).then_some((n as usize, at));
        }
    }
    None
}

/// The name entry at `at` in `entries`: the length it shares with the
/// name before, its rest, and where the entry ends; `None` if cut short.
fn entry(entries: &[u8], at: usize) -> Option<(usize, &[u8], usize)> {
    let (shared, at) = varint(entries, at)?;
    let (rest, at) = varint(entries, at)?;
    let end = at.checked_add(rest)?;
    Some((shared, entries.get(at..end)?, end))
}

/// A small trace's names as its head stores them (the [`HeadNames`]
/// written at import), searched where they lie: reading a head decodes
/// none of them. The frame is checked when read (every entry whole, each
/// shares no more than the name before has, the restart points where the
/// runs start, every variable one of the trace's); the order is the
/// encoder's, so a lookup in names stored out of order may miss, but reads
/// nothing out of bounds and finds only variables of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNames {
    /// The node ids.
    ids: Ids,
    /// The variable of each name.
    vars: Box<[u16]>,
}

/// A head's node ids, in either stored layout.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ids {
    /// Front-coded (`MTH2`): the entries, one after the other, and where
    /// every [`RESTART`]th starts.
    Front {
        entries: Box<[u8]>,
        restarts: Box<[u32]>,
    },
    /// Whole (`MTH1`, read as it was stored): the ids one after the other,
    /// and where each ends.
    Whole { text: Box<[u8]>, ends: Box<[u32]> },
}

impl StoredNames {
    /// Reads the names section of a head at the start of `bytes` (`n`
    /// names, of a trace of `variables`); the names and what follows.
    fn read(bytes: &[u8], n: u32, variables: u32) -> Result<(StoredNames, &[u8]), StorageError> {
        if n != variables {
            return Err(damaged(format!("{n} names for {variables} variables")));
        }
        let n = n as usize;
        let mut r = Reader(bytes, "head");
        let len = r.u32()? as usize;
        let entries = r.take(len)?;
        let restarts: Box<[u32]> = words(r.take(4 * n.div_ceil(RESTART))?).collect();
        let vars = r.take(2 * n)?;
        let (mut at, mut last) = (0, 0);
        for i in 0..n {
            let cut = || damaged(format!("name {i} is cut short at byte {at} of {len}"));
            if i % RESTART == 0 && restarts[i / RESTART] as usize != at {
                return Err(damaged(format!(
                    "the restart point of name {i} is byte {}, its entry starts at byte {at}",
                    restarts[i / RESTART]
                )));
            }
            let (shared, rest, end) = entry(entries, at).ok_or_else(cut)?;
            if shared > last || (i % RESTART == 0 && shared != 0) {
                return Err(damaged(format!(
                    "name {i} shares {shared} bytes with the name before, of {last} bytes"
                )));
            }
            (at, last) = (end, shared + rest.len());
        }
        if at != len {
            return Err(damaged(format!("{} bytes after the names", len - at)));
        }
        let vars = halves(vars);
        if let Some(v) = vars.iter().find(|&&v| u32::from(v) >= variables) {
            return Err(damaged(format!("a name of variable {v}, past the last")));
        }
        let ids = Ids::Front {
            entries: entries.into(),
            restarts,
        };
        Ok((StoredNames { ids, vars }, r.0))
    }

    /// Reads the names section of an `MTH1` head (the ids whole, `u32`
    /// variables).
    fn read_v1(bytes: &[u8], n: u32, variables: u32) -> Result<(StoredNames, &[u8]), StorageError> {
        let mut r = Reader(bytes, "head");
        let count = r.u32()?;
        if count != n || n != variables {
            return Err(damaged(format!(
                "{count} names for {n}, and {variables} variables"
            )));
        }
        let len = r.u32()?;
        let text = r.take(len as usize)?;
        let ends = r.take(4 * n as usize)?;
        let has = r.take(n as usize)?;
        let vars = r.take(4 * n as usize)?;
        let ends: Box<[u32]> = words(ends).collect();
        let mut last = 0;
        for (i, &end) in ends.iter().enumerate() {
            if end < last || end > len {
                return Err(damaged(format!(
                    "name {i} ends at {end}, after {last} and in {len} bytes"
                )));
            }
            last = end;
        }
        if let Some(i) = has.iter().position(|&b| b & 1 == 0) {
            return Err(damaged(format!("name {i} is absent")));
        }
        let vars = words(vars)
            .map(|v| u16::try_from(v).ok().filter(|_| v < variables).ok_or(v))
            .collect::<Result<_, _>>()
            .map_err(|v| damaged(format!("a name of variable {v}, past the last")))?;
        let ids = Ids::Whole {
            text: text.into(),
            ends,
        };
        Ok((StoredNames { ids, vars }, r.0))
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// A cursor on the first name not below `key` (or past the last).
    fn seek(&self, key: &[u8]) -> Cursor<'_> {
        // Where to start reading: the first restart point (or id) whose
        // name is not below `key`; front-coded, the first such name is in
        // the run before it (or is it).
        let points = match &self.ids {
            Ids::Front { restarts, .. } => restarts.len(),
            Ids::Whole { ends, .. } => ends.len(),
        };
        let (mut lo, mut hi) = (0, points);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.ids.point(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let (at, next) = match &self.ids {
            Ids::Front { restarts, .. } => {
                let k = lo.saturating_sub(1);
                (restarts.get(k).map_or(0, |&a| a as usize), k * RESTART)
            }
            Ids::Whole { .. } => (0, lo),
        };
        let mut c = Cursor {
            names: self,
            at,
            next,
            name: Vec::new(),
            var: None,
        };
        while c.step() && c.name.as_slice() < key {}
        c
    }

    /// The variable with this full name and version (the last added, if
    /// several), as the name index finds it.
    pub fn version(&self, full_name: &str, version: u32) -> Option<u32> {
        let key = format!("{full_name}@{version}");
        let mut c = self.seek(key.as_bytes());
        let mut found = None;
        while let Some(var) = c.var.filter(|_| c.name == key.as_bytes()) {
            found = found.max(Some(var));
            c.step();
        }
        found
    }

    /// The latest version of a full name and its variable (of equal
    /// versions the last added), as the name index finds it.
    pub fn latest(&self, full_name: &str) -> Option<(u32, u32)> {
        let prefix = format!("{full_name}@");
        let mut c = self.seek(prefix.as_bytes());
        let mut found = None;
        while let Some(var) = c.var.filter(|_| c.name.starts_with(prefix.as_bytes())) {
            // The name's own versions: `@` then the version, no more.
            let digits = &c.name[prefix.len()..];
            if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                let version = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| d.parse().ok());
                found = found.max(version.map(|v: u32| (v, var)));
            }
            c.step();
        }
        found
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        2 * self.vars.len()
            + match &self.ids {
                Ids::Front { entries, restarts } => entries.len() + 4 * restarts.len(),
                Ids::Whole { text, ends } => text.len() + 4 * ends.len(),
            }
    }
}

impl Ids {
    /// Front-coded, the name at restart point `k` (it shares nothing);
    /// whole, id `k`. Empty past the last.
    fn point(&self, k: usize) -> &[u8] {
        match self {
            Ids::Front { entries, restarts } => restarts
                .get(k)
                .and_then(|&at| entry(entries, at as usize))
                .map_or(&[], |(_, rest, _)| rest),
            Ids::Whole { text, ends } => {
                let start = k.checked_sub(1).and_then(|j| ends.get(j)).copied();
                let end = ends.get(k).copied().unwrap_or(0);
                text.get(start.unwrap_or(0) as usize..end as usize)
                    .unwrap_or_default()
            }
        }
    }
}

/// Reads stored names in order from a restart point, rebuilding each.
struct Cursor<'n> {
    names: &'n StoredNames,
    /// Where the next entry starts.
    at: usize,
    /// The position of the next entry.
    next: usize,
    /// The current name.
    name: Vec<u8>,
    /// The current name's variable; `None` past the last.
    var: Option<u32>,
}

impl Cursor<'_> {
    /// Moves to the next name; `false` (and no current name) past the last.
    fn step(&mut self) -> bool {
        self.var = None;
        let Some(&var) = self.names.vars.get(self.next) else {
            return false;
        };
        match &self.names.ids {
            Ids::Front { entries, .. } => {
                let Some((shared, rest, end)) = entry(entries, self.at) else {
                    return false;
                };
                if shared > self.name.len() {
                    return false;
                }
                self.name.truncate(shared);
                self.name.extend_from_slice(rest);
                self.at = end;
            }
            Ids::Whole { .. } => {
                self.name.clear();
                self.name.extend_from_slice(self.names.ids.point(self.next));
            }
        }
        self.var = Some(u32::from(var));
        self.next += 1;
        true
    }
}

/// The little-endian `u32`s of `raw` (a whole number of them).
fn words(raw: &[u8]) -> impl Iterator<Item = u32> + '_ {
    raw.chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The little-endian `u16`s of `raw` (a whole number of them).
fn halves(raw: &[u8]) -> Box<[u16]> {
    raw.chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect()
}

/// A reader of a head's names section (of one layout).
type NamesReader = fn(&[u8], u32, u32) -> Result<(StoredNames, &[u8]), StorageError>;

/// A trace's head (see the module): the record, and for a small trace its
/// names and adjacency.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceHead {
    /// A copy of the trace record.
    pub record: TraceRecord,
    /// The variables by node id; `None` for a trace of more than [`HEAD_VARS`].
    pub names: Option<StoredNames>,
    /// The whole adjacency, as stored; present exactly when the names are.
    pub adjacency: Option<StoredAdjacency>,
}

fn damaged(reason: impl Into<String>) -> StorageError {
    StorageError::Decode {
        what: "head",
        reason: reason.into(),
    }
}

/// Encodes a head from its parts: the record, and for a small trace its
/// names and its adjacency's stored form.
pub fn encode_head(
    record: &TraceRecord,
    small: Option<(&HeadNames, &[u8])>,
) -> Result<Vec<u8>, StorageError> {
    let record = encode("trace", record)?;
    let extra = small.map_or(0, |(n, a)| n.bytes() + a.len() + 8);
    let mut out = Vec::with_capacity(12 + record.len() + extra);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&len32(record.len())?.to_le_bytes());
    out.extend_from_slice(&record);
    match small {
        None => out.extend_from_slice(&NO_NAMES.to_le_bytes()),
        Some((names, adjacency)) => {
            out.extend_from_slice(&len32(names.len())?.to_le_bytes());
            out.extend_from_slice(&names.encoded);
            out.extend_from_slice(&len32(adjacency.len())?.to_le_bytes());
            out.extend_from_slice(adjacency);
        }
    }
    Ok(out)
}

fn len32(n: usize) -> Result<u32, StorageError> {
    u32::try_from(n)
        .ok()
        .filter(|&n| n != NO_NAMES)
        .ok_or_else(|| StorageError::Encode {
            what: "head",
            reason: format!("{n} items or bytes, past 4 GiB"),
        })
}

impl TraceHead {
    /// Reads a head back, checking its frame: each name is present and
    /// names a variable of the trace, and the adjacency agrees with the
    /// record's counts. The names and the adjacency are kept as stored
    /// (see [`StoredNames`] and [`StoredAdjacency`]): a query that finds a
    /// start and walks a few hops builds neither.
    pub fn decode(bytes: &[u8]) -> Result<TraceHead, StorageError> {
        let (rest, read_names): (_, NamesReader) = match bytes.split_at_checked(4) {
            Some((m, rest)) if m == MAGIC => (rest, StoredNames::read),
            Some((m, rest)) if m == MAGIC_V1 => (rest, StoredNames::read_v1),
            _ => return Err(damaged("not a head value")),
        };
        let mut r = Reader(rest, "head");
        let len = r.u32()? as usize;
        let record: TraceRecord = decode("head", r.take(len)?)?;
        let n = r.u32()?;
        if n == NO_NAMES {
            if !r.0.is_empty() {
                return Err(damaged(format!("{} bytes after the record", r.0.len())));
            }
            return Ok(TraceHead {
                record,
                names: None,
                adjacency: None,
            });
        }
        let (names, tail) = read_names(r.0, n, record.counts.variables)?;
        r.0 = tail;
        let len = r.u32()? as usize;
        let stored = r.take(len)?;
        if !r.0.is_empty() {
            return Err(damaged(format!("{} bytes after the adjacency", r.0.len())));
        }
        let adjacency = StoredAdjacency::new(stored)?;
        let c = &record.counts;
        if adjacency.counts() != (c.variables, c.ops, c.edges) {
            let (v, o, e) = adjacency.counts();
            return Err(damaged(format!(
                "an adjacency of {v} variables, {o} ops and {e} edges; the record says {}, {} and {}",
                c.variables, c.ops, c.edges
            )));
        }
        Ok(TraceHead {
            record,
            names: Some(names),
            adjacency: Some(adjacency),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adjacency::Adjacency;
    use crate::display_texts::TextTable;
    use crate::records::Counts;
    use proptest::prelude::*;

    fn record(vars: u32, ops: u32, edges: u32) -> TraceRecord {
        TraceRecord {
            graph_id: "g".into(),
            user_id: None,
            project_id: None,
            created_at: None,
            header_json: "{}".into(),
            data_keys: vec![],
            data_extra: None,
            counts: Counts {
                variables: vars,
                ops,
                edges,
                ..Counts::default()
            },
            source: "s".into(),
            source_bytes: 0,
            format: "smartcomment".into(),
            imported_at_ms: 1,
        }
    }

    fn small(ids: &[&str]) -> (TraceRecord, HeadNames, Adjacency) {
        let n = ids.len() as u32;
        let adj = Adjacency::from_edges(n, 1, vec![0], vec![n - 1], vec![0]).unwrap();
        let names = HeadNames::new(ids.iter().copied().zip(0..)).unwrap();
        (record(n, 1, 1), names, adj)
    }

    /// The names as a head read back holds them.
    fn stored(names: &HeadNames) -> StoredNames {
        let n = names.len() as u32;
        let adj = Adjacency::from_edges(n, 1, vec![], vec![], vec![]).unwrap();
        let bytes = encode_head(&record(n, 1, 0), Some((names, &adj.encode_narrow()))).unwrap();
        TraceHead::decode(&bytes).unwrap().names.unwrap()
    }

    #[test]
    fn names_find_versions_as_the_name_index_does() {
        let (_, names, _) = small(&[
            "a:x@1", "a:x@10", "a:x@2", "a:x@y@3", "a:xy@4", "b@1", "a:x@2",
        ]);
        let names = stored(&names);
        assert_eq!(names.version("a:x", 10), Some(1));
        // Equal node ids: the last added.
        assert_eq!(names.version("a:x", 2), Some(6));
        assert_eq!(names.version("a:x", 3), None);
        assert_eq!(names.version("a:x@y", 3), Some(3));
        assert_eq!(names.latest("a:x"), Some((10, 1)));
        assert_eq!(names.latest("a:x@y"), Some((3, 3)));
        assert_eq!(names.latest("a:xy"), Some((4, 4)));
        assert_eq!(names.latest("a"), None);
        assert_eq!(names.latest("b"), Some((1, 5)));
        assert_eq!(names.latest("c"), None);
    }

    #[test]
    fn heads_round_trip_with_and_without_names() {
        let (rec, names, adj) = small(&["a@1", "b@1", "c@2"]);
        let bytes = encode_head(&rec, Some((&names, &adj.encode()))).unwrap();
        let back = TraceHead::decode(&bytes).unwrap();
        assert_eq!(back.record, rec);
        let found = back.names.unwrap();
        // Three entries of two length bytes and three of text, one restart
        // point, three u16 variables.
        assert_eq!((found.len(), found.bytes()), (3, 3 * 5 + 4 + 3 * 2));
        for (name, version, var) in [("a", 1, 0), ("b", 1, 1), ("c", 2, 2)] {
            assert_eq!(found.version(name, version), Some(var));
            assert_eq!(found.latest(name), Some((version, var)));
        }
        assert_eq!(back.adjacency.unwrap().decode().unwrap(), adj);
        let bare = TraceHead::decode(&encode_head(&rec, None).unwrap()).unwrap();
        assert_eq!((bare.names, bare.adjacency), (None, None));
    }

    #[test]
    fn names_past_the_variables_are_refused_and_out_of_order_ones_read_safely() {
        let (rec, _, adj) = small(&["a@1", "b@1", "c@2"]);
        let names = HeadNames::in_order(&[(b"a@1", 0), (b"b@1", 7), (b"c@2", 2)]).unwrap();
        let e = TraceHead::decode(&encode_head(&rec, Some((&names, &adj.encode()))).unwrap());
        assert!(e.unwrap_err().to_string().contains("past the last"));
        let unsorted = HeadNames::in_order(&[(b"b@1", 0), (b"a@1", 1), (b"c@1", 2)]).unwrap();
        // Out of order (only a damaged encoder writes them): not checked
        // when read, so a lookup may miss; it finds only the trace's own
        // variables and never reads out of bounds.
        let head = TraceHead::decode(&encode_head(&rec, Some((&unsorted, &adj.encode()))).unwrap())
            .unwrap();
        let names = head.names.unwrap();
        for name in ["a", "b", "c", "", "z"] {
            assert!(names.version(name, 1).is_none_or(|v| v < 3));
            assert!(names.latest(name).is_none_or(|(_, v)| v < 3));
        }
    }

    #[test]
    fn an_adjacency_that_disagrees_with_the_record_is_refused() {
        let (rec, names, _) = small(&["a@1", "b@1", "c@2"]);
        let other = Adjacency::from_edges(3, 1, vec![], vec![], vec![]).unwrap();
        let e = TraceHead::decode(&encode_head(&rec, Some((&names, &other.encode()))).unwrap());
        assert!(e.unwrap_err().to_string().contains("the record says"));
    }

    /// A head as `MTH1` stored it: the ids whole (a text table) in the
    /// order given, `u32` variables.
    fn encode_v1(record: &TraceRecord, ids: &[(&str, u32)], adjacency: &[u8]) -> Vec<u8> {
        let rec = encode("trace", record).unwrap();
        let mut out = MAGIC_V1.to_vec();
        out.extend_from_slice(&(rec.len() as u32).to_le_bytes());
        out.extend_from_slice(&rec);
        out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
        let mut table = TextTable::<1>::default();
        for (id, _) in ids {
            assert!(table.push([Some(id)]));
        }
        table.encode(&mut out);
        for (_, v) in ids {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(adjacency.len() as u32).to_le_bytes());
        out.extend_from_slice(adjacency);
        out
    }

    /// Names whose runs cross several restart points, some sharing long
    /// prefixes, some none, with equal ids across a restart point.
    fn many() -> Vec<String> {
        let mut ids: Vec<String> = (0..40)
            .map(|i| format!("message:D{}:{}@1", i / 7, i % 7))
            .collect();
        ids.extend((1..=3).map(|v| format!("fact:x@{v}")));
        ids.extend(["é@1", "z@1", "a@1"].map(String::from));
        ids.extend(std::iter::repeat_n("message:D2:3@1".to_string(), 20));
        ids
    }

    #[test]
    fn names_are_front_coded_with_restart_points_and_found_across_them() {
        let ids = many();
        let names = HeadNames::new(ids.iter().map(String::as_str).zip(0..)).unwrap();
        let whole: usize = ids.iter().map(String::len).sum::<usize>() + 4 * ids.len();
        assert!(
            names.bytes() * 2 < whole,
            "{} bytes front-coded, {whole} whole",
            names.bytes()
        );
        let stored = stored(&names);
        let Ids::Front { restarts, .. } = &stored.ids else {
            panic!("front-coded")
        };
        assert_eq!(restarts.len(), ids.len().div_ceil(RESTART));
        assert_eq!(stored.version("message:D5:4", 1), Some(39));
        assert_eq!(stored.version("message:D0:0", 1), Some(0));
        // Twenty-one equal ids, over two restart points: the last added.
        assert_eq!(
            stored.version("message:D2:3", 1),
            Some(ids.len() as u32 - 1)
        );
        assert_eq!(stored.latest("fact:x"), Some((3, 42)));
        assert_eq!(stored.latest("é"), Some((1, 43)));
        assert_eq!(stored.version("a", 1), Some(45));
        assert_eq!(stored.version("message:D5:7", 1), None);
        assert_eq!(stored.latest("zz"), None);
        assert_eq!(stored.latest(""), None);
    }

    #[test]
    fn heads_written_whole_before_are_read_and_agree() {
        let ids = many();
        let pairs: Vec<(&str, u32)> = ids.iter().map(String::as_str).zip(0..).collect();
        let n = ids.len() as u32;
        let adj = Adjacency::from_edges(n, 1, vec![0], vec![n - 1], vec![0]).unwrap();
        let rec = record(n, 1, 1);
        // Sorted, as the encoder of MTH1 wrote them.
        let mut sorted = pairs.clone();
        sorted.sort_unstable();
        let old = TraceHead::decode(&encode_v1(&rec, &sorted, &adj.encode_narrow())).unwrap();
        let names = HeadNames::new(pairs.iter().copied()).unwrap();
        let new =
            TraceHead::decode(&encode_head(&rec, Some((&names, &adj.encode_narrow()))).unwrap())
                .unwrap();
        assert_eq!((&old.record, &old.adjacency), (&new.record, &new.adjacency));
        let (old, new) = (old.names.unwrap(), new.names.unwrap());
        assert_eq!(old.len(), new.len());
        for id in ids
            .iter()
            .chain([&"message:D9:9@1".to_string(), &"".to_string()])
        {
            let (name, version) = id.rsplit_once('@').unwrap_or((id, "1"));
            let version = version.parse().unwrap();
            assert_eq!(
                old.version(name, version),
                new.version(name, version),
                "{id}"
            );
            assert_eq!(old.latest(name), new.latest(name), "{id}");
            assert!(new.version(name, version).is_some() == ids.contains(id));
        }
        // A damaged MTH1 head is refused as before.
        let mut past = sorted.clone();
        past[3].1 = n;
        let e = TraceHead::decode(&encode_v1(&rec, &past, &adj.encode_narrow()));
        assert!(e.unwrap_err().to_string().contains("past the last"));
    }

    #[test]
    fn damaged_runs_are_refused() {
        let ids = many();
        let names = HeadNames::new(ids.iter().map(String::as_str).zip(0..)).unwrap();
        let n = ids.len() as u32;
        let read = |section: &[u8]| {
            StoredNames::read(section, n, n)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        // The second name claims to share more than the first has.
        let mut long = names.encoded.clone();
        let (_, _, end) = entry(&long[4..], 0).unwrap();
        long[4 + end] = 100;
        assert!(read(&long).contains("shares 100 bytes"), "{}", read(&long));
        // A restart point that is not where its run starts.
        let mut moved = names.encoded.clone();
        let len = u32::from_le_bytes(moved[..4].try_into().unwrap()) as usize;
        moved[4 + len + 4] ^= 1;
        assert!(
            read(&moved).contains("restart point of name 16"),
            "{}",
            read(&moved)
        );
        // Fewer names than variables.
        let e = StoredNames::read(&names.encoded, n, n + 1).unwrap_err();
        assert!(e.to_string().contains("names for"));
    }

    proptest! {
        #[test]
        fn damaged_heads_are_errors_not_panics(cut: usize, at: usize, byte: u8) {
            let (rec, names, adj) = small(&["a@1", "b@1", "c@2", "é@3"]);
            let bytes = encode_head(&rec, Some((&names, &adj.encode()))).unwrap();
            let _ = TraceHead::decode(&bytes[..cut % (bytes.len() + 1)]);
            let mut flipped = bytes.clone();
            let i = at % flipped.len();
            flipped[i] ^= byte | 1;
            let _ = TraceHead::decode(&flipped);
            let ids = many();
            let pairs: Vec<(&str, u32)> = ids.iter().map(String::as_str).zip(0..).collect();
            let n = ids.len() as u32;
            let adj = Adjacency::from_edges(n, 1, vec![0], vec![n - 1], vec![0]).unwrap();
            let names = HeadNames::new(pairs.iter().copied()).unwrap();
            for bytes in [
                encode_head(&record(n, 1, 1), Some((&names, &adj.encode_narrow()))).unwrap(),
                encode_v1(&record(n, 1, 1), &pairs, &adj.encode_narrow()),
            ] {
                let mut flipped = bytes.clone();
                let i = at % flipped.len();
                flipped[i] ^= byte | 1;
                if let Ok(head) = TraceHead::decode(&flipped) {
                    // Read safely, finding only the trace's variables.
                    let names = head.names.unwrap();
                    for id in &ids {
                        let (name, _) = id.rsplit_once('@').unwrap();
                        prop_assert!(names.latest(name).is_none_or(|(_, v)| v < n));
                        prop_assert!(names.version(name, 1).is_none_or(|v| v < n));
                    }
                }
                let _ = TraceHead::decode(&bytes[..cut % (bytes.len() + 1)]);
            }
        }

        #[test]
        fn lookups_agree_with_a_scan(ids in proptest::collection::vec(("[ab@]{1,4}", 0u32..4), 1..80), probe in "[ab@]{1,4}", ver in 0u32..4, old: bool) {
            let texts: Vec<String> = ids.iter().map(|(n, v)| format!("{n}@{v}")).collect();
            let pairs: Vec<(&str, u32)> = texts.iter().map(String::as_str).zip(0..).collect();
            // Read from either layout: MTH1's whole ids, or front-coded.
            let names = if old {
                let n = pairs.len() as u32;
                let adj = Adjacency::from_edges(n, 1, vec![], vec![], vec![]).unwrap();
                let mut sorted = pairs.clone();
                sorted.sort_unstable();
                let bytes = encode_v1(&record(n, 1, 0), &sorted, &adj.encode_narrow());
                TraceHead::decode(&bytes).unwrap().names.unwrap()
            } else {
                stored(&HeadNames::new(pairs.iter().copied()).unwrap())
            };
            // What the name index answers: by (full name, version), last added wins.
            let scan_version = ids.iter().enumerate().filter(|(_, (n, v))| *n == probe && *v == ver).map(|(i, _)| i as u32).max();
            prop_assert_eq!(names.version(&probe, ver), scan_version);
            let scan_latest = ids.iter().enumerate().filter(|(_, (n, _))| *n == probe).map(|(i, (_, v))| (*v, i as u32)).max();
            prop_assert_eq!(names.latest(&probe), scan_latest);
        }
    }
}
