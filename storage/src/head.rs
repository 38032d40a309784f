//! A trace's head: what a query scoped to one trace needs before it walks,
//! kept beside the trace's adjacency as one value, so that the first query
//! of a process on a small trace reads one value where it read three (the
//! trace record, the name index, the adjacency).
//!
//! It holds a copy of the trace record (written in the same batch as the
//! record, and like it never changed afterwards) and, for a trace of at
//! most [`HEAD_VARS`] variables, its variables' full node ids in sorted
//! order, to find a start by name, and its whole adjacency. A larger trace's
//! head holds the record only: its names are found in the name index, and
//! a walk of a few hops reads the adjacency blocks it reaches.
//!
//! Layout: `MTH1`, then the record (`u32` length, bincode), then a `u32`
//! count of names (`u32::MAX`: no names and no adjacency follow); with
//! names, the sorted node ids (a [`TextTable<1>`]), each one's variable
//! (`u32` each), and the adjacency value ([`Adjacency::encode_narrow`](crate::Adjacency::encode_narrow),
//! `u32` length first). Integers are little-endian.

use crate::adjacency::StoredAdjacency;
use crate::error::StorageError;
use crate::labels::{Reader, TextTable};
use crate::records::{decode, encode, TraceRecord};

/// The most variables a trace may have for its head to hold its names and
/// adjacency (a few tens of KiB for smartcomment traces of this size).
pub const HEAD_VARS: u32 = 4096;

/// The most bytes a head's names and adjacency may take, whatever the
/// number of variables (node ids of a few KiB each would otherwise make a
/// small trace's head larger than what it saves reading).
pub const HEAD_BYTES: usize = 256 << 10;

const MAGIC: &[u8; 4] = b"MTH1";
const NO_NAMES: u32 = u32::MAX;

/// A trace's variables by full node id: sorted, each with its local id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeadNames {
    /// The full node ids (`full_name@version`), in byte order.
    ids: TextTable<1>,
    /// The variable of each node id, in the same order.
    vars: Vec<u32>,
}

impl HeadNames {
    /// The names of `vars`, given as (full node id, local id) pairs. Of
    /// equal node ids, the variable added last is the one found, as in the
    /// name index.
    pub fn new<'s>(vars: impl IntoIterator<Item = (&'s str, u32)>) -> Option<HeadNames> {
        let mut pairs: Vec<(&str, u32)> = vars.into_iter().collect();
        pairs.sort_unstable();
        let mut names = HeadNames::default();
        for (id, var) in pairs {
            if !names.ids.push([Some(id)]) {
                return None;
            }
            names.vars.push(var);
        }
        Some(names)
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        self.ids.bytes() + self.vars.capacity() * 4
    }
}

/// A small trace's names as its head stores them (the [`HeadNames`]
/// written at import), searched where they lie: reading a head decodes
/// none of them. Their order is the encoder's; a lookup in names stored
/// out of order may miss, but reads nothing out of bounds and finds only
/// variables of the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredNames {
    /// The texts, one after the other.
    text: Box<[u8]>,
    /// Where each node id ends in `text`, little-endian `u32`s as stored.
    ends: Box<[u8]>,
    /// The variable of each node id, little-endian `u32`s as stored.
    vars: Box<[u8]>,
}

impl StoredNames {
    /// Reads the names section of a head at the start of `bytes` (`n`
    /// names, of a trace of `variables`); the names and what follows. The
    /// ends must rise within the text, every name be present and every
    /// variable be one of the trace's.
    fn read(bytes: &[u8], n: u32, variables: u32) -> Result<(StoredNames, &[u8]), StorageError> {
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
        let mut last = 0;
        for (i, end) in words(ends).enumerate() {
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
        if let Some(v) = words(vars).find(|&v| v >= variables) {
            return Err(damaged(format!("a name of variable {v}, past the last")));
        }
        let names = StoredNames {
            text: text.into(),
            ends: ends.into(),
            vars: vars.into(),
        };
        Ok((names, r.0))
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.vars.len() / 4
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    fn word(list: &[u8], i: usize) -> u32 {
        list.get(4 * i..4 * i + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Node id `i`, as bytes (its order is byte order).
    fn id(&self, i: usize) -> &[u8] {
        let start = match i {
            0 => 0,
            _ => Self::word(&self.ends, i - 1),
        };
        let end = Self::word(&self.ends, i);
        self.text
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    fn var(&self, i: usize) -> u32 {
        Self::word(&self.vars, i)
    }

    /// The first position whose node id is not below `key`.
    fn lower_bound(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.id(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The variable with this full name and version (the last added, if
    /// several), as the name index finds it.
    pub fn version(&self, full_name: &str, version: u32) -> Option<u32> {
        let key = format!("{full_name}@{version}");
        let at = self.lower_bound(key.as_bytes());
        (at..self.len())
            .take_while(|&i| self.id(i) == key.as_bytes())
            .map(|i| self.var(i))
            .max()
    }

    /// The latest version of a full name and its variable (of equal
    /// versions the last added), as the name index finds it.
    pub fn latest(&self, full_name: &str) -> Option<(u32, u32)> {
        let prefix = format!("{full_name}@");
        let at = self.lower_bound(prefix.as_bytes());
        (at..self.len())
            .map(|i| (self.id(i), self.var(i)))
            .take_while(|(id, _)| id.starts_with(prefix.as_bytes()))
            .filter_map(|(id, var)| {
                let digits = &id[prefix.len()..];
                // The name's own versions: `@` then the version, no more.
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return None;
                }
                Some((std::str::from_utf8(digits).ok()?.parse::<u32>().ok()?, var))
            })
            .max()
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        self.text.len() + self.ends.len() + self.vars.len()
    }
}

/// The little-endian `u32`s of `raw` (a whole number of them).
fn words(raw: &[u8]) -> impl Iterator<Item = u32> + '_ {
    raw.chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

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
            names.ids.encode(&mut out);
            for v in &names.vars {
                out.extend_from_slice(&v.to_le_bytes());
            }
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
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| damaged("not a head value"))?;
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
        let (names, tail) = StoredNames::read(r.0, n, record.counts.variables)?;
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
        assert_eq!((found.len(), found.bytes()), (3, 3 * 3 + 2 * 4 * 3));
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
        let (rec, mut names, adj) = small(&["a@1", "b@1", "c@2"]);
        names.vars[1] = 7;
        let e = TraceHead::decode(&encode_head(&rec, Some((&names, &adj.encode()))).unwrap());
        assert!(e.unwrap_err().to_string().contains("past the last"));
        let mut unsorted = HeadNames::default();
        for (id, v) in [("b@1", 0), ("a@1", 1), ("c@1", 2)] {
            unsorted.ids.push([Some(id)]);
            unsorted.vars.push(v);
        }
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
        }

        #[test]
        fn lookups_agree_with_a_scan(ids in proptest::collection::vec(("[ab@]{1,3}", 0u32..4), 1..24), probe in "[ab@]{1,3}", ver in 0u32..4) {
            let texts: Vec<String> = ids.iter().map(|(n, v)| format!("{n}@{v}")).collect();
            let names = stored(&HeadNames::new(texts.iter().map(String::as_str).zip(0..)).unwrap());
            // What the name index answers: by (full name, version), last added wins.
            let scan_version = ids.iter().enumerate().filter(|(_, (n, v))| *n == probe && *v == ver).map(|(i, _)| i as u32).max();
            prop_assert_eq!(names.version(&probe, ver), scan_version);
            let scan_latest = ids.iter().enumerate().filter(|(_, (n, _))| *n == probe).map(|(i, (_, v))| (*v, i as u32)).max();
            prop_assert_eq!(names.latest(&probe), scan_latest);
        }
    }
}
