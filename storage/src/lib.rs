//! Keeps every record of every trace forever and finds it again fast: memtrace's append-only RocksDB store.
//!
//! Layout (one column family per record kind and per index, see [`cf`]):
//! records are keyed by a dense trace id and a per-trace local id, both
//! big-endian, so one prefix scan returns a trace's records in insertion
//! order (the "trace -> records" index is the key layout itself). String ids
//! from smartcomment are stored inside the records and indexed, never used as
//! physical keys. Values are stored once per distinct content, compressed.
//! A trace's adjacency is written once, at import, as one value (forward
//! and backward compressed sparse rows, see [`Adjacency`]), so a traversal
//! reads one value instead of one index entry per edge. Beside it, the
//! short texts that rows show (node ids, categories, op ids, names and
//! kinds) are stored as one value per trace ([`TraceTexts`]), and so is
//! what a query of one trace reads first ([`TraceHead`]: a copy of the
//! trace record and, for a small trace, its names and whole adjacency).
//! Nothing is overwritten; the one removal is dropping a whole trace, which
//! is logged.

#![deny(missing_docs)]

pub mod adjacency;
pub mod display_texts;
pub mod error;
pub mod head;
mod ids;
pub mod keys;
mod reader;
pub mod records;
pub mod store;
pub mod values;

pub use adjacency::{Adjacency, AdjacencyBlock, StoredAdjacency, BLOCK_VARS};
pub use display_texts::{
    CompleteRecords, Records, TextKind, TextRun, TextTable, TraceTexts, VarText,
};
pub use error::StorageError;
pub use head::{HeadNames, StoredNames, TraceHead, HEAD_BYTES, HEAD_VARS};
pub use ids::{LocalId, Result, TraceId};
pub use records::{
    AttributionRecord, CaseRecord, EdgeRecord, LogEvent, OpRecord, PatternRecord, SessionRecord,
    Shared, TraceRecord, ValueRef, VarRecord,
};
pub use store::{
    cf, content_digest, content_digest_pieces, dir_bytes, ReadView, Store, StoreOptions,
    TraceWriter, OLDEST_SCHEMA_VERSION, SCHEMA_VERSION,
};
pub use values::PreparedValue;
