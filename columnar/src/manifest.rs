//! The name of the manifest an export writes beside its tables.

/// The file an export writes beside its tables: what wrote them, the
/// partitioning, and each table's row count. A folder holding it is one
/// that a later export may replace.
pub const MANIFEST: &str = "_memtrace_export.json";
