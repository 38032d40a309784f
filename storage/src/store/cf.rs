//! Column family names: one per record kind and per index.

/// Database metadata: schema version, id counters.
pub const META: &str = "meta";
/// Trace records, by trace id.
pub const TRACES: &str = "traces";
/// Session records, by (trace, local id).
pub const SESSIONS: &str = "sessions";
/// Variable records, by (trace, local id).
pub const VARIABLES: &str = "variables";
/// Operation records, by (trace, local id).
pub const OPS: &str = "operations";
/// Edge records, by (trace, local id).
pub const EDGES: &str = "edges";
/// Case annotations, by (trace, local id).
pub const CASES: &str = "cases";
/// Distinct value payloads, by content hash.
pub const VALUES: &str = "values";
/// Which traces use a value: (hash, trace).
pub const VALUE_REFS: &str = "value_refs";
/// A trace's whole adjacency as one value (see [`crate::Adjacency`]):
/// trace -> edges' ends and ops with their CSR lists. Schema version 2.
/// Beside it, its rows in blocks (see [`crate::keys::adjacency_block_key`])
/// and its display texts (see [`crate::keys::texts_key`]).
pub const ADJACENCY: &str = "adjacency";
/// Outgoing adjacency: (trace, source, edge) -> (target, op). Written
/// by schema version 1 only; read for the traces it stored.
pub const ADJ_OUT: &str = "idx_adj_out";
/// Incoming adjacency: (trace, target, edge) -> (source, op). Written
/// by schema version 1 only; read for the traces it stored.
pub const ADJ_IN: &str = "idx_adj_in";
/// Full name -> versions: (full name, trace, version) -> local id.
pub const VAR_NAME: &str = "idx_var_name";
/// smartcomment string ids: (kind, id, trace) -> local id.
pub const STRING_ID: &str = "idx_string_id";
/// Category -> ids: (kind, category, trace, local).
pub const CATEGORY: &str = "idx_category";
/// Op name -> ids: (op name, trace, local).
pub const OP_NAME: &str = "idx_op_name";
/// Append-only event log: sequence number -> event.
pub const LOG: &str = "log";
/// Attribution verdicts, appended after import: (trace, sequence number).
pub const ATTRIBUTIONS: &str = "attributions";
/// Answers of LLM endpoints, by a hash of what was asked (a cache that
/// makes a re-run cost nothing and reproduce its verdicts).
pub const LLM_CACHE: &str = "llm_cache";
/// Saved failure patterns, appended (saves and drops alike) under one
/// database-wide sequence number.
pub const PATTERNS: &str = "patterns";
/// Every column family, in creation order.
pub const ALL: [&str; 20] = [
    META,
    TRACES,
    SESSIONS,
    VARIABLES,
    OPS,
    EDGES,
    CASES,
    VALUES,
    VALUE_REFS,
    ADJ_OUT,
    ADJ_IN,
    VAR_NAME,
    STRING_ID,
    CATEGORY,
    OP_NAME,
    LOG,
    ATTRIBUTIONS,
    LLM_CACHE,
    PATTERNS,
    ADJACENCY,
];
/// Column families added after schema version 1 was first written: a
/// database made before them gets them, empty, when it is opened.
pub const ADDED: [&str; 4] = [ATTRIBUTIONS, LLM_CACHE, PATTERNS, ADJACENCY];
/// Column families whose keys start with the trace id.
pub const BY_TRACE: [&str; 9] = [
    SESSIONS,
    VARIABLES,
    OPS,
    EDGES,
    CASES,
    ADJ_OUT,
    ADJ_IN,
    ATTRIBUTIONS,
    ADJACENCY,
];
