//! A trace's adjacency as one stored value: the edges' ends and ops, and
//! the compressed sparse rows (CSR) that list, per variable and per op, the
//! edges that touch it. Traces are immutable once stored, so this is
//! written once, at import, and read back with one get: no per-edge index
//! entries to scan.
//!
//! Layout (all integers little-endian `u32`): a magic, then the counts
//! `vars`, `ops`, `edges`, then sections.
//! - `MTA2` (written now): `source[edges]`, `target[edges]`, `op[edges]`.
//!   The CSR lists are rebuilt from them when the value is read (a counting
//!   sort, linear in the edges): the value is less than half the size, so a
//!   cold read moves less than half the bytes.
//! - `MTA3` (written in a small trace's head, see [`crate::TraceHead`]):
//!   as `MTA2` with each id a little-endian `u16`, for a trace of fewer
//!   than 65,536 variables and ops; half the bytes to read and decompress.
//! - `MTA1` (written before, still read): the same three sections, then
//!   `out_off[vars + 1]`, `out_edges[edges]`, `in_off[vars + 1]`,
//!   `in_edges[edges]`, `op_off[ops + 1]`, `op_edges[edges]`.
//!
//! Beside the whole value, each direction's rows are stored in blocks of
//! [`BLOCK_VARS`] variables ([`AdjacencyBlock`], `MTB1`), so that a walk of
//! a few hops on a trace that is not in memory reads the blocks it reaches
//! rather than every edge. Traces stored before blocks existed have none;
//! their walks load the whole value.

use crate::error::StorageError;
use crate::Result;

/// The layout written now: the ends only.
const MAGIC: &[u8; 4] = b"MTA2";
/// The layout of the ends in `u16`s (a small trace's head).
const MAGIC_NARROW: &[u8; 4] = b"MTA3";
/// The earlier layout, with the CSR lists stored too.
const MAGIC_WITH_ROWS: &[u8; 4] = b"MTA1";

/// One trace's adjacency: per edge its source, target and op; per variable
/// the edges leaving and entering it; per op the edges it induced. Each list
/// is in recorded edge order; the edges of `v` are `edges[off[v]..off[v + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Adjacency {
    /// Number of variables (ids `0..vars`).
    pub vars: u32,
    /// Number of ops (ids `0..ops`).
    pub ops: u32,
    /// Source variable of each edge.
    pub source: Vec<u32>,
    /// Target variable of each edge.
    pub target: Vec<u32>,
    /// Op that induced each edge.
    pub op: Vec<u32>,
    /// Offsets into `out_edges`, `vars + 1` of them.
    pub out_off: Vec<u32>,
    /// Edges grouped by source.
    pub out_edges: Vec<u32>,
    /// Offsets into `in_edges`, `vars + 1` of them.
    pub in_off: Vec<u32>,
    /// Edges grouped by target.
    pub in_edges: Vec<u32>,
    /// Offsets into `op_edges`, `ops + 1` of them.
    pub op_off: Vec<u32>,
    /// Edges grouped by op.
    pub op_edges: Vec<u32>,
}

fn damaged(reason: String) -> StorageError {
    StorageError::Decode {
        what: "adjacency",
        reason,
    }
}

/// Counting sort of ids by a key (`keys[i]` is id `i`'s): offsets (`groups
/// + 1` of them) and the ids grouped by key, each group in id order. Every
/// key must be below `groups` (the keys of a checked [`Adjacency`] are).
pub fn group(groups: u32, keys: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let mut off = vec![0u32; groups as usize + 1];
    for &k in keys {
        off[k as usize + 1] += 1;
    }
    for i in 1..off.len() {
        off[i] += off[i - 1];
    }
    let mut next = off.clone();
    let mut edges = vec![0u32; keys.len()];
    for (e, &k) in keys.iter().enumerate() {
        let slot = &mut next[k as usize];
        edges[*slot as usize] = e as u32;
        *slot += 1;
    }
    (off, edges)
}

/// Variables per stored block of adjacency rows (see [`AdjacencyBlock`]).
pub const BLOCK_VARS: u32 = 256;
/// The layout of a block value.
const BLOCK_MAGIC: &[u8; 4] = b"MTB1";

/// The rows of one direction of a trace's adjacency for the variables
/// `first..first + n` (a block of [`BLOCK_VARS`]), stored beside the whole
/// value so that a walk of a few hops reads the blocks it reaches instead
/// of every edge. Row `v` lists the edges entering `v` (backward) or
/// leaving it (forward), in recorded order, with each edge's far end.
///
/// Layout (little-endian `u32`): `MTB1`, `first`, `n`, `m` (edges listed),
/// then `off[n + 1]` (from 0 to `m`), `edges[m]`, `far[m]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AdjacencyBlock {
    /// The first variable of the block.
    pub first: u32,
    /// Offsets into `edges` and `far`, one per variable and one more.
    pub off: Vec<u32>,
    /// The edges of each row.
    pub edges: Vec<u32>,
    /// The far end of each edge of `edges` (its source going backward, its
    /// target going forward).
    pub far: Vec<u32>,
}

impl AdjacencyBlock {
    /// The block that holds variable `v`.
    pub fn of(v: u32) -> u32 {
        v / BLOCK_VARS
    }

    /// The row of variable `v`: its edges and their far ends; `None` when
    /// `v` is not in this block.
    pub fn row(&self, v: u32) -> Option<(&[u32], &[u32])> {
        let i = v.checked_sub(self.first)? as usize;
        let (a, b) = (*self.off.get(i)? as usize, *self.off.get(i + 1)? as usize);
        Some((self.edges.get(a..b)?, self.far.get(a..b)?))
    }

    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let words = 4 + self.off.len() + 2 * self.edges.len();
        let mut out = Vec::with_capacity(4 * words);
        out.extend_from_slice(BLOCK_MAGIC);
        let n = self.off.len().saturating_sub(1) as u32;
        for w in [self.first, n, self.edges.len() as u32] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for section in [&self.off, &self.edges, &self.far] {
            for &w in section.iter() {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    /// Reads a stored block back. Offsets must rise from 0 to the number of
    /// edges, and every edge and far end must be below `edges` and `vars`.
    pub fn decode(bytes: &[u8], vars: u32, edges: u32) -> Result<AdjacencyBlock> {
        let bad = |why: String| damaged(format!("block: {why}"));
        if bytes.get(..4) != Some(BLOCK_MAGIC.as_slice()) {
            return Err(bad("not an adjacency block (bad magic)".into()));
        }
        let body = &bytes[4..];
        if !body.len().is_multiple_of(4) || body.len() < 12 {
            return Err(bad(format!(
                "{} bytes, not a whole header and words",
                bytes.len()
            )));
        }
        let words: Vec<u32> = body
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let (first, n, m) = (words[0], words[1] as usize, words[2] as usize);
        if words.len() != 3 + n + 1 + 2 * m {
            return Err(bad(format!(
                "{} words for {n} rows and {m} edges",
                words.len()
            )));
        }
        if u64::from(first) + n as u64 > u64::from(vars) {
            return Err(bad(format!(
                "rows {first}..{} but there are {vars} variables",
                u64::from(first) + n as u64
            )));
        }
        let off = words[3..4 + n].to_vec();
        let list = words[4 + n..4 + n + m].to_vec();
        let far = words[4 + n + m..].to_vec();
        if off.first() != Some(&0)
            || off.last().map(|&l| l as usize) != Some(m)
            || off.windows(2).any(|w| w[0] > w[1])
        {
            return Err(bad("offsets do not rise from 0 to the edges listed".into()));
        }
        if let Some(e) = list.iter().find(|&&e| e >= edges) {
            return Err(bad(format!("edge {e}, but there are {edges} edges")));
        }
        if let Some(v) = far.iter().find(|&&v| v >= vars) {
            return Err(bad(format!("far end {v}, but there are {vars} variables")));
        }
        Ok(AdjacencyBlock {
            first,
            off,
            edges: list,
            far,
        })
    }
}

impl Adjacency {
    /// Builds the adjacency of `vars` variables and `ops` ops from each
    /// edge's `source`, `target` and `op` (edge `i` is the `i`-th entry).
    ///
    /// Fails when the three lists differ in length, when there are more
    /// edges than ids, or when an entry names an id out of range.
    pub fn from_edges(
        vars: u32,
        ops: u32,
        source: Vec<u32>,
        target: Vec<u32>,
        op: Vec<u32>,
    ) -> Result<Adjacency> {
        if source.len() != target.len() || source.len() != op.len() {
            return Err(damaged(format!(
                "{} sources, {} targets and {} ops for the edges",
                source.len(),
                target.len(),
                op.len()
            )));
        }
        if u32::try_from(source.len()).is_err() {
            return Err(StorageError::IdsExhausted("edges"));
        }
        for (e, ((&s, &t), &o)) in source.iter().zip(&target).zip(&op).enumerate() {
            if s >= vars || t >= vars || o >= ops {
                return Err(damaged(format!(
                    "edge {e} is ({s}, {t}, op {o}), but there are {vars} variables and {ops} ops"
                )));
            }
        }
        let (out_off, out_edges) = group(vars, &source);
        let (in_off, in_edges) = group(vars, &target);
        let (op_off, op_edges) = group(ops, &op);
        Ok(Adjacency {
            vars,
            ops,
            source,
            target,
            op,
            out_off,
            out_edges,
            in_off,
            in_edges,
            op_off,
            op_edges,
        })
    }

    /// Number of edges.
    pub fn edges(&self) -> u32 {
        self.source.len() as u32
    }

    /// The rows of one direction cut into blocks of [`BLOCK_VARS`]
    /// variables: backward lists each variable's incoming edges with their
    /// sources, forward its outgoing edges with their targets.
    pub fn blocks(&self, backward: bool) -> Vec<AdjacencyBlock> {
        let (off, list, far_of) = if backward {
            (&self.in_off, &self.in_edges, &self.source)
        } else {
            (&self.out_off, &self.out_edges, &self.target)
        };
        (0..self.vars.div_ceil(BLOCK_VARS))
            .map(|b| {
                let first = b * BLOCK_VARS;
                let last = (first + BLOCK_VARS).min(self.vars);
                let (a, z) = (off[first as usize], off[last as usize]);
                let edges = list[a as usize..z as usize].to_vec();
                AdjacencyBlock {
                    first,
                    off: off[first as usize..=last as usize]
                        .iter()
                        .map(|&o| o - a)
                        .collect(),
                    far: edges.iter().map(|&e| far_of[e as usize]).collect(),
                    edges,
                }
            })
            .collect()
    }

    fn sections(&self) -> [&Vec<u32>; 9] {
        [
            &self.source,
            &self.target,
            &self.op,
            &self.out_off,
            &self.out_edges,
            &self.in_off,
            &self.in_edges,
            &self.op_off,
            &self.op_edges,
        ]
    }

    /// A stored form's magic and counts, in a buffer with room for `body`
    /// more bytes.
    fn header(&self, magic: &[u8; 4], body: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + body);
        out.extend_from_slice(magic);
        for n in [self.vars, self.ops, self.edges()] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out
    }

    /// The stored form (see the module's layout): the ends only.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.header(MAGIC, 12 * self.source.len());
        for section in [&self.source, &self.target, &self.op] {
            for &w in section.iter() {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    /// The stored form with ids in `u16`s (`MTA3`), when every id fits;
    /// else the form of [`encode`](Self::encode).
    pub fn encode_narrow(&self) -> Vec<u8> {
        if self.vars > u32::from(u16::MAX) + 1 || self.ops > u32::from(u16::MAX) + 1 {
            return self.encode();
        }
        let mut out = self.header(MAGIC_NARROW, 6 * self.source.len());
        for section in [&self.source, &self.target, &self.op] {
            for &w in section.iter() {
                // Below vars or ops, so below 65,536.
                out.extend_from_slice(&(w as u16).to_le_bytes());
            }
        }
        out
    }

    /// The earlier stored form, with the CSR lists (`MTA1`), which
    /// [`decode`](Self::decode) still reads.
    pub fn encode_with_rows(&self) -> Vec<u8> {
        let words: usize = self.sections().iter().map(|s| s.len()).sum();
        let mut out = self.header(MAGIC_WITH_ROWS, 4 * words);
        for section in self.sections() {
            for &w in section.iter() {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out
    }

    /// Reads either stored form back, checking every id and offset, so that
    /// a damaged value is an error and never an out-of-range access later.
    pub fn decode(bytes: &[u8]) -> Result<Adjacency> {
        let f = Frame::read(bytes)?;
        let (vars, ops, width, with_rows) = (f.vars, f.ops, f.width, f.with_rows);
        let (v, o, e) = (vars as usize, ops as usize, f.edges as usize);
        let body = &bytes[16..];
        // Each section read on its own: a slice of known length, which the
        // compiler turns into a plain copy.
        let mut rest = body;
        let mut next = |n: usize| -> Vec<u32> {
            let (section, tail) = rest.split_at(width * n);
            rest = tail;
            match width {
                2 => section
                    .chunks_exact(2)
                    .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                    .collect(),
                _ => section
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            }
        };
        let (source, target, op) = (next(e), next(e), next(e));
        if !with_rows {
            // The rows are rebuilt; from_edges checks every id.
            return Adjacency::from_edges(vars, ops, source, target, op);
        }
        let a = Adjacency {
            vars,
            ops,
            source,
            target,
            op,
            out_off: next(v + 1),
            out_edges: next(e),
            in_off: next(v + 1),
            in_edges: next(e),
            op_off: next(o + 1),
            op_edges: next(e),
        };
        a.check()?;
        Ok(a)
    }

    /// Every id in range and every offset list a valid partition of the edges.
    fn check(&self) -> Result<()> {
        let below =
            |what: &str, list: &[u32], bound: u32| match list.iter().position(|&x| x >= bound) {
                Some(i) => Err(damaged(format!(
                    "{what} {i} is {}, not below {bound}",
                    list[i]
                ))),
                None => Ok(()),
            };
        below("edge source", &self.source, self.vars)?;
        below("edge target", &self.target, self.vars)?;
        below("edge op", &self.op, self.ops)?;
        let edges = self.edges();
        for (what, off, list) in [
            ("outgoing", &self.out_off, &self.out_edges),
            ("incoming", &self.in_off, &self.in_edges),
            ("per-op", &self.op_off, &self.op_edges),
        ] {
            if off.first() != Some(&0)
                || off.last() != Some(&edges)
                || off.windows(2).any(|w| w[0] > w[1])
            {
                return Err(damaged(format!(
                    "{what} offsets do not partition {edges} edges"
                )));
            }
            below(what, list, edges)?;
        }
        Ok(())
    }

    /// The edges entering (`outgoing == false`) or leaving a variable, as
    /// (edge, other end, op), in recorded order; empty for an unknown id.
    pub fn adjacent(&self, var: u32, outgoing: bool) -> Vec<(u32, u32, u32)> {
        let (off, list, ends) = if outgoing {
            (&self.out_off, &self.out_edges, &self.target)
        } else {
            (&self.in_off, &self.in_edges, &self.source)
        };
        let (Some(&a), Some(&b)) = (off.get(var as usize), off.get(var as usize + 1)) else {
            return Vec::new();
        };
        // The fields are public: ids out of range are skipped, never a panic.
        list.get(a as usize..b as usize)
            .unwrap_or_default()
            .iter()
            .filter_map(|&e| Some((e, *ends.get(e as usize)?, *self.op.get(e as usize)?)))
            .collect()
    }

    /// Bytes held on the heap, plus the struct itself.
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .sections()
                .iter()
                .map(|a| a.capacity() * std::mem::size_of::<u32>())
                .sum::<usize>()
    }
}

/// The frame of a stored adjacency value: its form and counts, read from
/// its header and checked against the length of its body.
struct Frame {
    with_rows: bool,
    /// Bytes per id.
    width: usize,
    vars: u32,
    ops: u32,
    edges: u32,
}

impl Frame {
    fn read(bytes: &[u8]) -> Result<Frame> {
        let header = bytes
            .get(..16)
            .ok_or_else(|| damaged(format!("{} bytes, shorter than its header", bytes.len())))?;
        let (with_rows, width) = match &header[..4] {
            m if m == MAGIC => (false, 4),
            m if m == MAGIC_NARROW => (false, 2),
            m if m == MAGIC_WITH_ROWS => (true, 4),
            _ => return Err(damaged("not an adjacency value (bad magic)".into())),
        };
        let word =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        let (vars, ops, edges) = (word(4), word(8), word(12));
        let (v, o, e) = (u64::from(vars), u64::from(ops), u64::from(edges));
        let words = if with_rows {
            6 * e + 2 * (v + 1) + o + 1
        } else {
            3 * e
        };
        let body = (bytes.len() - 16) as u64;
        if body != width as u64 * words {
            return Err(damaged(format!(
                "{body} bytes of body for {vars} variables, {ops} ops and {edges} edges; {} expected",
                width as u64 * words
            )));
        }
        Ok(Frame {
            with_rows,
            width,
            vars,
            ops,
            edges,
        })
    }
}

/// A stored adjacency value kept as its bytes: its ends read in place.
/// A small trace's head holds one; a walk of a few hops from a cold trace
/// scans its edges level by level ([`scan`](Self::scan)) instead of
/// building every row of the trace first, and the whole [`Adjacency`] is
/// built only when asked for ([`decode`](Self::decode)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAdjacency {
    bytes: Box<[u8]>,
    vars: u32,
    ops: u32,
    edges: u32,
    /// Bytes per id: 2 (`MTA3`) or 4.
    width: usize,
}

impl StoredAdjacency {
    /// Keeps a stored form (any that [`Adjacency::decode`] reads), checking
    /// its magic and that its length fits its counts; the ids are checked
    /// as they are read.
    pub fn new(bytes: &[u8]) -> Result<StoredAdjacency> {
        let f = Frame::read(bytes)?;
        Ok(StoredAdjacency {
            bytes: bytes.into(),
            vars: f.vars,
            ops: f.ops,
            edges: f.edges,
            width: f.width,
        })
    }

    /// Its variables, ops and edges.
    pub fn counts(&self) -> (u32, u32, u32) {
        (self.vars, self.ops, self.edges)
    }

    /// Bytes held on the heap.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The whole adjacency, every row built (see [`Adjacency::decode`]).
    pub fn decode(&self) -> Result<Adjacency> {
        Adjacency::decode(&self.bytes)
    }

    /// Every edge whose near end (its target going `backward`, else its
    /// source) is set in the bitmap `marked` (bit `v % 64` of word
    /// `v / 64`): `found(near, edge, far)` for each, in edge order. A far
    /// end that is not a variable of the trace is an error.
    pub fn scan(
        &self,
        backward: bool,
        marked: &[u64],
        mut found: impl FnMut(u32, u32, u32),
    ) -> Result<()> {
        let n = self.edges as usize * self.width;
        // Both sections lie within the body: `new` checked its length.
        let sources = self.bytes.get(16..16 + n).unwrap_or_default();
        let targets = self.bytes.get(16 + n..16 + 2 * n).unwrap_or_default();
        let (near, far) = if backward {
            (targets, sources)
        } else {
            (sources, targets)
        };
        let mut bad = None;
        let mut each = |e: usize, a: u32, b: u32| {
            let hit = marked
                .get(a as usize / 64)
                .is_some_and(|w| w & (1 << (a % 64)) != 0);
            if hit {
                if b >= self.vars {
                    bad.get_or_insert((e, b));
                } else {
                    found(a, e as u32, b);
                }
            }
        };
        if self.width == 2 {
            let ids = |c: &[u8]| u32::from(u16::from_le_bytes([c[0], c[1]]));
            for (e, (a, b)) in near.chunks_exact(2).zip(far.chunks_exact(2)).enumerate() {
                each(e, ids(a), ids(b));
            }
        } else {
            let ids = |c: &[u8]| u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            for (e, (a, b)) in near.chunks_exact(4).zip(far.chunks_exact(4)).enumerate() {
                each(e, ids(a), ids(b));
            }
        }
        match bad {
            Some((e, v)) => Err(damaged(format!(
                "edge {e} has end {v}, but there are {} variables",
                self.vars
            ))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rows_list_edges_in_recorded_order() {
        // 0 -> 1 (op 0), 0 -> 2 (op 1), 1 -> 2 (op 0), 2 -> 2 (op 1)
        let a = Adjacency::from_edges(3, 2, vec![0, 0, 1, 2], vec![1, 2, 2, 2], vec![0, 1, 0, 1])
            .unwrap();
        assert_eq!(a.out_off, vec![0, 2, 3, 4]);
        assert_eq!(a.out_edges, vec![0, 1, 2, 3]);
        assert_eq!(a.in_off, vec![0, 0, 1, 4]);
        assert_eq!(a.in_edges, vec![0, 1, 2, 3]);
        assert_eq!(a.op_off, vec![0, 2, 4]);
        assert_eq!(a.op_edges, vec![0, 2, 1, 3]);
    }

    #[test]
    fn ids_out_of_range_and_mismatched_lists_are_refused() {
        assert!(Adjacency::from_edges(2, 1, vec![0], vec![2], vec![0]).is_err());
        assert!(Adjacency::from_edges(2, 1, vec![0], vec![1], vec![1]).is_err());
        assert!(Adjacency::from_edges(2, 1, vec![0, 1], vec![1], vec![0]).is_err());
    }

    #[test]
    fn damaged_values_are_errors_not_panics() {
        let a = Adjacency::from_edges(3, 1, vec![0, 1], vec![1, 2], vec![0, 0]).unwrap();
        for good in [a.encode(), a.encode_narrow(), a.encode_with_rows()] {
            damaged_forms_of(&good);
        }
        // The compact form is less than half the size of the one with rows.
        let big = Adjacency::from_edges(
            100,
            10,
            (0..300).map(|i| i % 100).collect(),
            (0..300).map(|i| (i * 7) % 100).collect(),
            (0..300).map(|i| i % 10).collect(),
        )
        .unwrap();
        assert!(2 * big.encode().len() < big.encode_with_rows().len());
        // Ids in u16s: half the ends' bytes; past 65,536 ids, the u32 form.
        assert_eq!(
            2 * (big.encode_narrow().len() - 16),
            big.encode().len() - 16
        );
        let wide = Adjacency::from_edges(70_000, 1, vec![69_999], vec![0], vec![0]).unwrap();
        assert_eq!(wide.encode_narrow(), wide.encode());
        assert_eq!(Adjacency::decode(&wide.encode_narrow()).unwrap(), wide);
    }

    fn damaged_forms_of(good: &[u8]) {
        let good = good.to_vec();
        assert!(Adjacency::decode(&good).is_ok());
        assert!(Adjacency::decode(&good[..10]).is_err());
        assert!(Adjacency::decode(&good[..good.len() - 4]).is_err());
        let mut magic = good.clone();
        magic[0] = b'X';
        assert!(Adjacency::decode(&magic).is_err());
        // Each word of the body, made too large, is caught.
        for at in (16..good.len()).step_by(4) {
            let mut bad = good.clone();
            bad[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
            assert!(Adjacency::decode(&bad).is_err(), "word at byte {at}");
        }
    }

    fn graph() -> impl Strategy<Value = (u32, u32, Vec<(u32, u32, u32)>)> {
        (1u32..40, 1u32..8).prop_flat_map(|(vars, ops)| {
            (
                Just(vars),
                Just(ops),
                proptest::collection::vec((0..vars, 0..vars, 0..ops), 0..120),
            )
        })
    }

    fn adjacency_of(vars: u32, ops: u32, edges: &[(u32, u32, u32)]) -> Adjacency {
        Adjacency::from_edges(
            vars,
            ops,
            edges.iter().map(|e| e.0).collect(),
            edges.iter().map(|e| e.1).collect(),
            edges.iter().map(|e| e.2).collect(),
        )
        .unwrap()
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics() {
        let a = adjacency_of(600, 1, &[(0, 599, 0), (599, 300, 0), (300, 0, 0)]);
        let blocks = a.blocks(true);
        assert_eq!(blocks.len(), 3);
        let good = blocks[2].encode();
        assert_eq!(AdjacencyBlock::decode(&good, 600, 3).unwrap(), blocks[2]);
        assert!(AdjacencyBlock::decode(&good[..good.len() - 4], 600, 3).is_err());
        assert!(AdjacencyBlock::decode(&good[..8], 600, 3).is_err());
        assert!(
            AdjacencyBlock::decode(&good, 599, 3).is_err(),
            "rows past the variables"
        );
        assert!(
            AdjacencyBlock::decode(&good, 600, 0).is_err(),
            "edges past the edges"
        );
        let mut magic = good.clone();
        magic[3] = b'0';
        assert!(AdjacencyBlock::decode(&magic, 600, 3).is_err());
        for at in (16..good.len()).step_by(4) {
            let mut bad = good.clone();
            bad[at..at + 4].copy_from_slice(&100_000u32.to_le_bytes());
            assert!(
                AdjacencyBlock::decode(&bad, 600, 3).is_err(),
                "word at byte {at}"
            );
        }
        assert_eq!(blocks[2].row(599), Some((&[0u32][..], &[0u32][..])));
        assert_eq!(blocks[2].row(10), None, "not in the block");
    }

    fn wide_graph() -> impl Strategy<Value = (u32, Vec<(u32, u32, u32)>)> {
        (1u32..800).prop_flat_map(|vars| {
            (
                Just(vars),
                proptest::collection::vec((0..vars, 0..vars, 0..3u32), 0..200),
            )
        })
    }

    proptest! {
        #[test]
        fn blocks_hold_each_row_with_its_far_ends((vars, edges) in wide_graph()) {
            let a = adjacency_of(vars, 3, &edges);
            for backward in [true, false] {
                let blocks = a.blocks(backward);
                prop_assert_eq!(blocks.len() as u32, vars.div_ceil(BLOCK_VARS));
                for b in &blocks {
                    let back = AdjacencyBlock::decode(&b.encode(), vars, a.edges()).unwrap();
                    prop_assert_eq!(&back, b);
                }
                for v in 0..vars {
                    let (list, far) = blocks[AdjacencyBlock::of(v) as usize].row(v).unwrap();
                    let want: Vec<u32> = (0..a.edges())
                        .filter(|&e| if backward { a.target[e as usize] == v } else { a.source[e as usize] == v })
                        .collect();
                    prop_assert_eq!(list, &want[..]);
                    let ends: Vec<u32> = want
                        .iter()
                        .map(|&e| if backward { a.source[e as usize] } else { a.target[e as usize] })
                        .collect();
                    prop_assert_eq!(far, &ends[..]);
                }
            }
        }

        #[test]
        fn stored_scans_find_the_rows_of_the_marked((vars, ops, edges) in graph(), marks in proptest::collection::vec(any::<u32>(), 0..6)) {
            let a = adjacency_of(vars, ops, &edges);
            let mut marked = vec![0u64; (vars as usize).div_ceil(64)];
            for m in &marks {
                let v = m % vars;
                marked[v as usize / 64] |= 1 << (v % 64);
            }
            for form in [a.encode(), a.encode_narrow(), a.encode_with_rows()] {
                let stored = StoredAdjacency::new(&form).unwrap();
                prop_assert_eq!(stored.counts(), (vars, ops, a.edges()));
                prop_assert_eq!(stored.bytes(), form.len());
                prop_assert_eq!(&stored.decode().unwrap(), &a);
                for backward in [true, false] {
                    let mut got = Vec::new();
                    stored.scan(backward, &marked, |n, e, f| got.push((n, e, f))).unwrap();
                    // Every marked variable's row, each edge once, in edge order.
                    let want: Vec<(u32, u32, u32)> = (0..a.edges())
                        .map(|e| (e, a.source[e as usize], a.target[e as usize]))
                        .map(|(e, s, t)| if backward { (t, e, s) } else { (s, e, t) })
                        .filter(|(n, _, _)| marked[*n as usize / 64] & (1 << (n % 64)) != 0)
                        .collect();
                    prop_assert_eq!(got, want);
                }
            }
        }

        #[test]
        fn damaged_stored_forms_are_errors_not_panics(cut: usize, at: usize, byte: u8) {
            let a = adjacency_of(5, 2, &[(0, 1, 0), (1, 4, 1), (4, 2, 0), (3, 3, 1)]);
            let all = vec![u64::MAX];
            for good in [a.encode(), a.encode_narrow(), a.encode_with_rows()] {
                let _ = StoredAdjacency::new(&good[..cut % (good.len() + 1)]);
                let mut flipped = good.clone();
                let i = at % flipped.len();
                flipped[i] ^= byte | 1;
                if let Ok(s) = StoredAdjacency::new(&flipped) {
                    // Rows are built only for counts a reader checked
                    // (a head's against its record): a damaged count of
                    // variables would size them.
                    if s.counts() == (5, 2, 4) {
                        let _ = s.decode();
                    }
                    for backward in [true, false] {
                        let mut far_ends = Vec::new();
                        // A far end out of range is an error, never handed on.
                        if s.scan(backward, &all, |_, _, f| far_ends.push(f)).is_ok() {
                            prop_assert!(far_ends.iter().all(|&f| f < s.counts().0));
                        }
                    }
                }
            }
        }

        #[test]
        fn encoding_round_trips((vars, ops, edges) in graph()) {
            let (s, t, o) = edges.iter().fold((vec![], vec![], vec![]), |(mut s, mut t, mut o), e| {
                s.push(e.0);
                t.push(e.1);
                o.push(e.2);
                (s, t, o)
            });
            let a = Adjacency::from_edges(vars, ops, s, t, o).unwrap();
            prop_assert_eq!(Adjacency::decode(&a.encode()).unwrap(), a.clone());
            prop_assert_eq!(Adjacency::decode(&a.encode_with_rows()).unwrap(), a.clone());
            prop_assert_eq!(Adjacency::decode(&a.encode_narrow()).unwrap(), a.clone());
            for v in 0..vars {
                let out = &a.out_edges[a.out_off[v as usize] as usize..a.out_off[v as usize + 1] as usize];
                let want: Vec<u32> = (0..a.edges()).filter(|&e| a.source[e as usize] == v).collect();
                prop_assert_eq!(out, &want[..]);
            }
        }
    }
}
