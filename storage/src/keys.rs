//! Key encodings. All integers are big-endian so that byte order is numeric
//! order, and every variable-length string inside a key is length-prefixed so
//! that no string is a prefix of another's encoding by accident.

use crate::ids::{LocalId, TraceId};

/// Key of a trace record: the trace id.
pub fn trace_key(trace: TraceId) -> [u8; 4] {
    trace.to_be_bytes()
}

/// Key of one block of a trace's adjacency rows: the trace, `<` for the
/// backward rows or `>` for the forward ones, then the block number. It
/// sorts after the trace's whole adjacency value (its bare trace key) and
/// before the next trace's.
pub fn adjacency_block_key(trace: TraceId, backward: bool, block: u32) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[..4].copy_from_slice(&trace.to_be_bytes());
    k[4] = if backward { b'<' } else { b'>' };
    k[5..].copy_from_slice(&block.to_be_bytes());
    k
}

/// Key of a trace's head (see [`crate::TraceHead`]): the trace, then `!`.
/// It sorts right after the trace's whole adjacency value and before its
/// adjacency blocks, in the same column family.
pub fn head_key(trace: TraceId) -> [u8; 5] {
    let mut k = [0u8; 5];
    k[..4].copy_from_slice(&trace.to_be_bytes());
    k[4] = b'!';
    k
}

/// Key of a trace's display texts value (see [`crate::TraceTexts`]): the trace,
/// then `L`. It sorts after the trace's adjacency blocks and before the
/// next trace's keys, in the same column family.
pub fn texts_key(trace: TraceId) -> [u8; 5] {
    let mut k = [0u8; 5];
    k[..4].copy_from_slice(&trace.to_be_bytes());
    k[4] = b'L';
    k
}

/// Key of a per-trace record: trace id then local id.
pub fn record_key(trace: TraceId, local: LocalId) -> [u8; 8] {
    let mut k = [0u8; 8];
    k[..4].copy_from_slice(&trace.to_be_bytes());
    k[4..].copy_from_slice(&local.to_be_bytes());
    k
}

/// Splits a per-trace record key back into (trace, local).
pub fn split_record_key(key: &[u8]) -> Option<(TraceId, LocalId)> {
    if key.len() < 8 {
        return None;
    }
    Some((read_u32(&key[0..4])?, read_u32(&key[4..8])?))
}

/// Key of an attribution record: trace id, then a per-trace sequence number.
pub fn attribution_key(trace: TraceId, seq: u64) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(&trace.to_be_bytes());
    k[4..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// The sequence number of an attribution key.
pub fn split_attribution_key(key: &[u8]) -> Option<u64> {
    let bytes: [u8; 8] = key.get(4..12)?.try_into().ok()?;
    (key.len() == 12).then(|| u64::from_be_bytes(bytes))
}

/// Key of an adjacency entry: trace, the variable whose neighbours are
/// listed, then the edge (so parallel edges stay distinct).
pub fn adjacency_key(trace: TraceId, var: LocalId, edge: LocalId) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(&trace.to_be_bytes());
    k[4..8].copy_from_slice(&var.to_be_bytes());
    k[8..].copy_from_slice(&edge.to_be_bytes());
    k
}

/// Value of an adjacency entry: the other endpoint and the op.
pub fn adjacency_value(other: LocalId, op: LocalId) -> [u8; 8] {
    record_key(other, op)
}

/// Appends a length-prefixed string.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// Reads a length-prefixed string at the start of `bytes`; returns it and the rest.
pub fn read_str(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let len = read_u32(bytes.get(..4)?)? as usize;
    let body = bytes.get(4..4 + len)?;
    Some((std::str::from_utf8(body).ok()?, &bytes[4 + len..]))
}

/// Reads a big-endian u32 from exactly four bytes.
pub fn read_u32(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.try_into().ok()?))
}

/// Prefix of the name index for one full name (all traces).
pub fn name_prefix(full_name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(full_name.len() + 4);
    push_str(&mut k, full_name);
    k
}

/// Name index key: full name, trace, version -> local id of the variable.
pub fn name_key(full_name: &str, trace: TraceId, version: u32) -> Vec<u8> {
    let mut k = name_prefix(full_name);
    k.extend_from_slice(&trace.to_be_bytes());
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// Kinds of string ids indexed in the string-id index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum IdKind {
    /// A session id (`session-...`).
    Session = b's',
    /// An op id (`op-...`).
    Op = b'o',
    /// An edge id (`edge-...`).
    Edge = b'e',
    /// A trace's graph id; the local id is always 0.
    Graph = b'g',
}

/// String id index key prefix for one id (all traces).
pub fn string_id_prefix(kind: IdKind, id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(id.len() + 5);
    k.push(kind as u8);
    push_str(&mut k, id);
    k
}

/// String id index key: kind, id, trace -> local id.
pub fn string_id_key(kind: IdKind, id: &str, trace: TraceId) -> Vec<u8> {
    let mut k = string_id_prefix(kind, id);
    k.extend_from_slice(&trace.to_be_bytes());
    k
}

/// Kinds of records indexed by category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    /// Sessions.
    Session = b's',
    /// Variables.
    Variable = b'v',
    /// Operations.
    Op = b'o',
    /// Edges.
    Edge = b'e',
}

/// Category index prefix: kind and category (all traces).
pub fn category_prefix(kind: RecordKind, category: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(category.len() + 5);
    k.push(kind as u8);
    push_str(&mut k, category);
    k
}

/// Category index key: kind, category, trace, local -> ().
pub fn category_key(kind: RecordKind, category: &str, trace: TraceId, local: LocalId) -> Vec<u8> {
    let mut k = category_prefix(kind, category);
    k.extend_from_slice(&record_key(trace, local));
    k
}

/// Op name index key: op name, trace, local -> ().
pub fn op_name_key(op_name: &str, trace: TraceId, local: LocalId) -> Vec<u8> {
    let mut k = name_prefix(op_name);
    k.extend_from_slice(&record_key(trace, local));
    k
}

/// Value reference key: content hash then trace -> ().
pub fn value_ref_key(hash: &[u8; 32], trace: TraceId) -> [u8; 36] {
    let mut k = [0u8; 36];
    k[..32].copy_from_slice(hash);
    k[32..].copy_from_slice(&trace.to_be_bytes());
    k
}

/// The smallest key greater than every key starting with `prefix`, if any.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn record_keys_round_trip_and_sort_numerically(t1: u32, l1: u32, t2: u32, l2: u32) {
            let a = record_key(t1, l1);
            let b = record_key(t2, l2);
            prop_assert_eq!(split_record_key(&a), Some((t1, l1)));
            prop_assert_eq!(a.cmp(&b), (t1, l1).cmp(&(t2, l2)));
        }

        #[test]
        fn strings_round_trip(s in ".*", rest in proptest::collection::vec(any::<u8>(), 0..8)) {
            let mut k = Vec::new();
            push_str(&mut k, &s);
            k.extend_from_slice(&rest);
            let (got, tail) = read_str(&k).unwrap();
            prop_assert_eq!(got, s.as_str());
            prop_assert_eq!(tail, rest.as_slice());
        }

        #[test]
        fn name_prefix_never_matches_another_name(a in ".{0,6}", b in ".{0,6}", t: u32, v: u32) {
            prop_assume!(a != b);
            let key = name_key(&b, t, v);
            prop_assert!(!key.starts_with(&name_prefix(&a)));
        }

        #[test]
        fn prefix_end_bounds_every_extension(p in proptest::collection::vec(any::<u8>(), 0..6), tail in proptest::collection::vec(any::<u8>(), 0..6)) {
            let mut k = p.clone();
            k.extend_from_slice(&tail);
            match prefix_end(&p) {
                Some(end) => prop_assert!(k < end),
                None => prop_assert!(p.iter().all(|b| *b == 0xff)),
            }
        }
    }

    #[test]
    fn adjacency_keys_group_by_variable() {
        assert!(adjacency_key(1, 2, 9) < adjacency_key(1, 3, 0));
    }

    #[test]
    fn a_trace_keeps_its_adjacency_values_together() {
        let t = 7;
        assert!(trace_key(t).as_slice() < head_key(t).as_slice());
        assert!(head_key(t).as_slice() < adjacency_block_key(t, true, 0).as_slice());
        assert!(adjacency_block_key(t, false, u32::MAX).as_slice() < texts_key(t).as_slice());
        assert!(texts_key(t).as_slice() < trace_key(t + 1).as_slice());
        assert!(adjacency_key(1, 2, 1) < adjacency_key(1, 2, 2));
    }
}
