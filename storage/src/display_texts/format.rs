//! What every part of a stored texts value shares: the bit that marks a
//! text absent, and the error for a damaged value.

use crate::error::StorageError;

/// The bit of a stored end that marks its text absent; texts are shorter
/// than it.
pub(super) const ABSENT: u32 = 1 << 31;

/// The error for a stored texts value that cannot be read.
pub(super) fn damaged(reason: impl Into<String>) -> StorageError {
    StorageError::Decode {
        what: "labels",
        reason: reason.into(),
    }
}
