//! Content-addressed, compressed value payloads.
//!
//! A value is keyed by the blake3 hash of its bytes, so a string that occurs in
//! many variables or traces (long-context snapshots repeat megabytes) is stored
//! once. The payload starts with one flag byte: 0 for raw UTF-8, 1 for LZ4
//! with the uncompressed size prepended.

use crate::error::StorageError;
use crate::records::ValueRef;

const RAW: u8 = 0;
const LZ4: u8 = 1;
/// Values shorter than this are stored raw: compression would not pay.
const MIN_COMPRESS: usize = 64;

/// Hash and length of a value.
pub fn value_ref(value: &str) -> ValueRef {
    ValueRef {
        hash: *blake3::hash(value.as_bytes()).as_bytes(),
        len: value.len() as u64,
    }
}

/// The stored payload of a value.
pub fn encode_value(value: &str) -> Vec<u8> {
    let bytes = value.as_bytes();
    if bytes.len() >= MIN_COMPRESS {
        let packed = lz4_flex::compress_prepend_size(bytes);
        if packed.len() + 1 < bytes.len() {
            let mut out = Vec::with_capacity(packed.len() + 1);
            out.push(LZ4);
            out.extend_from_slice(&packed);
            return out;
        }
    }
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.push(RAW);
    out.extend_from_slice(bytes);
    out
}

/// Decodes a stored payload back into the value.
pub fn decode_value(payload: &[u8]) -> Result<String, StorageError> {
    let bad = |reason: String| StorageError::Decode {
        what: "value",
        reason,
    };
    let (flag, body) = payload
        .split_first()
        .ok_or_else(|| bad("empty payload".into()))?;
    let bytes = match *flag {
        RAW => body.to_vec(),
        LZ4 => {
            let size = body
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .ok_or_else(|| bad("truncated size".into()))?;
            // LZ4 cannot expand more than 255-fold; a larger claim is damage.
            if size > body.len().saturating_mul(255) + 16 {
                return Err(bad(format!("implausible size {size}")));
            }
            let out = lz4_flex::decompress(&body[4..], size).map_err(|e| bad(e.to_string()))?;
            if out.len() != size {
                return Err(bad(format!("expected {size} bytes, got {}", out.len())));
            }
            out
        }
        other => return Err(bad(format!("unknown payload flag {other}"))),
    };
    String::from_utf8(bytes).map_err(|e| bad(e.to_string()))
}

/// A value hashed and encoded ahead of its trace's write (both take time
/// in proportion to its length, and values can be prepared on several
/// threads at once); see [`TraceWriter::stage_prepared`](crate::TraceWriter::stage_prepared).
#[derive(Debug, Clone)]
pub struct PreparedValue {
    r: ValueRef,
    payload: Vec<u8>,
}

impl PreparedValue {
    /// Hashes and encodes `value`, as [`value_ref`] and [`encode_value`] do.
    pub fn new(value: &str) -> PreparedValue {
        PreparedValue {
            r: value_ref(value),
            payload: encode_value(value),
        }
    }

    /// The reference the value is stored under.
    pub fn value_ref(&self) -> &ValueRef {
        &self.r
    }

    /// The reference and the encoded payload.
    pub(crate) fn into_parts(self) -> (ValueRef, Vec<u8>) {
        (self.r, self.payload)
    }
}

/// Hex form of a hash, for messages.
pub fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn values_round_trip(s in ".*") {
            prop_assert_eq!(decode_value(&encode_value(&s)).unwrap(), s);
        }

        #[test]
        fn prepared_values_match_the_one_step_encoding(s in ".*") {
            let p = PreparedValue::new(&s);
            prop_assert_eq!(p.value_ref(), &value_ref(&s));
            let (r, payload) = p.into_parts();
            prop_assert_eq!(r, value_ref(&s));
            prop_assert_eq!(decode_value(&payload).unwrap(), s);
        }

        #[test]
        fn repetitive_values_round_trip(unit in ".{1,8}", n in 0usize..2000) {
            let s = unit.repeat(n);
            prop_assert_eq!(decode_value(&encode_value(&s)).unwrap(), s);
        }
    }

    #[test]
    fn repetitive_values_shrink() {
        let s = "the user said hello. ".repeat(10_000);
        assert!(encode_value(&s).len() < s.len() / 10);
    }

    #[test]
    fn damaged_payloads_are_errors() {
        assert!(decode_value(&[]).is_err());
        assert!(decode_value(&[7, 1, 2]).is_err());
        assert!(decode_value(&[LZ4, 0xff, 0xff, 0xff, 0x7f, 1]).is_err());
        assert!(decode_value(&[RAW, 0xff]).is_err());
    }
}
