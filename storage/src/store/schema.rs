//! What a database records about itself: its schema version, the keys of
//! its metadata, and the digest of what each trace was imported from.

use crate::ids::TraceId;
use crate::keys;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 3;

/// The oldest schema version this build opens. Version 1 kept adjacency as
/// two index entries per edge ([`cf::ADJ_OUT`](crate::cf::ADJ_OUT), [`cf::ADJ_IN`](crate::cf::ADJ_IN)); version 2
/// keeps it as one value per trace ([`cf::ADJACENCY`](crate::cf::ADJACENCY)); version 3 adds each
/// variable's class to a trace's display texts ([`TraceTexts`](crate::TraceTexts)), so that a query
/// reads names, classes and versions without the variables' records.
/// Traces stored under an older version are still read as it stored them;
/// opening such a database records the current version, since traces
/// imported from then on are stored in a form an older build cannot read.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// The schema version the database was written with, a big-endian `u32`.
pub(super) const META_SCHEMA: &[u8] = b"schema_version";
/// The id the next trace gets, a big-endian `u32`.
pub(super) const META_NEXT_TRACE: &[u8] = b"next_trace";
/// Present when [`META_HASH_GRAPH_IDS`] is kept up to date: written when a
/// database is created, or by the first writing open of an older one.
pub(super) const META_HASH_IDS_TRACKED: &[u8] = b"hash_graph_ids_tracked";
/// Present once some trace was stored under a graph id that starts with
/// `#`, which a `#ID` selector could also mean. Never removed.
pub(super) const META_HASH_GRAPH_IDS: &[u8] = b"hash_graph_ids";
/// The smallest id of a trace stored with a head (see [`TraceHead`](crate::TraceHead)), as a
/// big-endian `u32`: a trace below it was stored before heads were, and
/// its head is not looked for.
pub(super) const META_HEADS_FROM: &[u8] = b"heads_from";
/// Prefix of a trace's content digest in [`cf::META`](crate::cf::META) (then the trace id).
pub(super) const META_CONTENT: &[u8] = b"content:";
/// Prefix of the OTLP requests a trace was made from, when it keeps them
/// (see [`TraceWriter::keep_otlp_requests`](crate::TraceWriter::keep_otlp_requests)), in [`cf::META`](crate::cf::META) (then the trace id).
pub(super) const META_OTLP: &[u8] = b"otlp:";

/// Where the OTLP requests a trace keeps are kept.
pub(super) fn otlp_key(trace: TraceId) -> Vec<u8> {
    let mut k = META_OTLP.to_vec();
    k.extend_from_slice(&keys::trace_key(trace));
    k
}

/// Marks a trace whose table files are being ingested (see
/// [`BULK_BYTES`](crate::store::BULK_BYTES)); the final batch of its import removes the mark, and an
/// open to write removes what a mark's trace left behind.
pub(super) const META_INGESTING: &[u8] = b"ingesting:";

/// Where the mark of a trace being ingested is kept.
pub(super) fn ingesting_key(trace: TraceId) -> Vec<u8> {
    let mut k = META_INGESTING.to_vec();
    k.extend_from_slice(&trace.to_be_bytes());
    k
}

/// Where a trace's content digest is kept.
pub(super) fn content_key(trace: TraceId) -> Vec<u8> {
    let mut k = META_CONTENT.to_vec();
    k.extend_from_slice(&keys::trace_key(trace));
    k
}

/// The digest memtrace keeps of what a trace was imported from (blake3 of
/// the export's bytes), to tell an import of the same content again (a
/// no-op) from another trace under the same graph id.
pub fn content_digest(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

/// [`content_digest`] of bytes handed over in pieces, in their order (the
/// same digest as of the pieces joined).
pub fn content_digest_pieces<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for piece in pieces {
        h.update(piece);
    }
    *h.finalize().as_bytes()
}
