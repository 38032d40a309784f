//! A fingerprint of the evidence-flow attributor's own source, computed at
//! compile time: stored findings carry it, so a build whose attributor
//! differs in any way recomputes them instead of reading stale ones.

/// FNV-1a over `bytes`, continuing from `hash`.
const fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The source files whose code decides an evidence-flow verdict.
const SOURCES: [&str; 29] = [
    include_str!("attribute/database.rs"),
    include_str!("attribute/evidence_flow.rs"),
    include_str!("attribute/llm.rs"),
    include_str!("attribute/mod.rs"),
    include_str!("attribute/runs.rs"),
    include_str!("attribute/search.rs"),
    include_str!("attribute/selection.rs"),
    include_str!("attribute/types.rs"),
    include_str!("case.rs"),
    include_str!("evidence.rs"),
    include_str!("flow/carriers.rs"),
    include_str!("flow/chain.rs"),
    include_str!("flow/failures.rs"),
    include_str!("flow/finding.rs"),
    include_str!("flow/items.rs"),
    include_str!("flow/mod.rs"),
    include_str!("flow/roles.rs"),
    include_str!("flow/types.rs"),
    include_str!("flow/weighing.rs"),
    include_str!("holds.rs"),
    include_str!("message.rs"),
    include_str!("model.rs"),
    include_str!("pyvalue.rs"),
    include_str!("text.rs"),
    include_str!("traces.rs"),
    include_str!("verdict.rs"),
    include_str!("../patterns/findings.rs"),
    include_str!("../../../text/src/lib.rs"),
    include_str!("../../../text/src/bm25.rs"),
];

const fn digest() -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < SOURCES.len() {
        hash = fnv(hash, SOURCES[i].as_bytes());
        // A separator, so that moving text between files changes the digest.
        hash = fnv(hash, &[0]);
        i += 1;
    }
    hash
}

/// The evidence-flow attributor's fingerprint (changes with any edit of
/// the code that decides its verdicts).
pub const ATTRIBUTOR_DIGEST: u64 = digest();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_the_bytes() {
        assert_eq!(fnv(0xcbf2_9ce4_8422_2325, b""), 0xcbf2_9ce4_8422_2325);
        // The published FNV-1a 64 value of "a".
        assert_eq!(fnv(0xcbf2_9ce4_8422_2325, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(fnv(7, b"ab"), fnv(7, b"ba"));
    }
}
