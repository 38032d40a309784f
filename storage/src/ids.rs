//! The ids every record is keyed by ([`TraceId`], [`LocalId`]) and the
//! crate's [`Result`] type.

use crate::error::StorageError;

/// A dense trace id, assigned at import, never reused.
pub type TraceId = u32;
/// A per-trace local id of a session, variable, op, edge or case, in insertion order.
pub type LocalId = u32;

/// Result type of this crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
