//! Reading a stored value front to back.

use crate::error::StorageError;

/// Reads a stored value front to back; a short value is an error naming
/// what was being read.
pub(crate) struct Reader<'b>(pub(crate) &'b [u8], pub(crate) &'static str);

impl<'b> Reader<'b> {
    /// The next `n` bytes.
    pub(crate) fn take(&mut self, n: usize) -> Result<&'b [u8], StorageError> {
        if self.0.len() < n {
            return Err(StorageError::Decode {
                what: self.1,
                reason: format!("{n} bytes wanted, {} left", self.0.len()),
            });
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    /// The next little-endian `u32`.
    pub(crate) fn u32(&mut self) -> Result<u32, StorageError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}
