//! What Python writes that JSON does not allow, read as Python meant it: a
//! UTF-8 byte order mark before the document (editors on Windows and
//! `encoding="utf-8-sig"` write one), and the number tokens `NaN`,
//! `Infinity` and `-Infinity` that `json.dump` writes for float values by
//! default (`allow_nan=True`).
//!
//! The tokens are rewritten before the strict JSON parser reads the input,
//! and only outside string literals (the text `"NaN"` stays a string):
//! `Infinity` becomes `1e999` and `-Infinity` becomes `-1e999`, JSON
//! numbers too large for a double, which every JSON reader (Python's and
//! serde_json's included) reads back as plus or minus infinity; the stored
//! text keeps them as `1e+999` and `-1e+999`. `NaN` has no JSON form and
//! becomes `null`. Each rewrite is padded with spaces to the token's length
//! where it is shorter, so the positions of what follows on the line stay
//! as they were in the file (a `NaN` is one byte short of `null`).

use std::borrow::Cow;

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// `bytes` without a leading UTF-8 byte order mark.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// The tokens and what each becomes, as long as the token or shorter.
const TOKENS: [(&[u8], &[u8]); 3] = [
    (b"-Infinity", b"-1e999   "),
    (b"Infinity", b"1e999   "),
    (b"NaN", b"null"),
];

fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

/// `bytes` with `NaN`, `Infinity` and `-Infinity` outside string literals
/// rewritten as JSON (see the module's comment); borrowed when the input
/// holds none of them.
pub(crate) fn python_numbers(bytes: &[u8]) -> Cow<'_, [u8]> {
    if memchr::memmem::find(bytes, b"NaN").is_none()
        && memchr::memmem::find(bytes, b"Infinity").is_none()
    {
        return Cow::Borrowed(bytes);
    }
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    // Copied up to here (when rewriting).
    let mut copied = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip the string literal: to its closing quote, past escapes.
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                        None => {
                            i = bytes.len();
                            break;
                        }
                        Some(j) if bytes[i + j] == b'\\' => {
                            i += j + 2;
                            if i >= bytes.len() {
                                i = bytes.len();
                                break;
                            }
                        }
                        Some(j) => {
                            i += j + 1;
                            break;
                        }
                    }
                }
            }
            b'-' | b'I' | b'N' => {
                let before_ok = i == 0 || !word_byte(bytes[i - 1]);
                let found = TOKENS.iter().find(|(token, _)| {
                    bytes[i..].starts_with(token)
                        && bytes.get(i + token.len()).is_none_or(|b| !word_byte(*b))
                });
                match found {
                    Some((token, with)) if before_ok => {
                        let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len() + 16));
                        out.extend_from_slice(&bytes[copied..i]);
                        out.extend_from_slice(with);
                        i += token.len();
                        copied = i;
                    }
                    _ => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    match out {
        None => Cow::Borrowed(bytes),
        Some(mut out) => {
            out.extend_from_slice(&bytes[copied.min(bytes.len())..]);
            Cow::Owned(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(s: &str) -> String {
        String::from_utf8(python_numbers(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn tokens_outside_strings_become_json_and_strings_stay() {
        assert_eq!(
            rewritten(r#"{"a": NaN, "b": Infinity, "c": [-Infinity,NaN]}"#),
            r#"{"a": null, "b": 1e999   , "c": [-1e999   ,null]}"#
        );
        // In strings, escaped quotes included, nothing changes.
        for s in [
            r#"{"NaN": "NaN", "x": "say \"Infinity\" -Infinity"}"#,
            r#"["\\", "NaN\\\"NaN"]"#,
            r#"{"value": "'nan'"}"#,
        ] {
            assert!(matches!(python_numbers(s.as_bytes()), Cow::Borrowed(_)));
            assert_eq!(rewritten(s), s);
        }
        // A string after a rewritten token is still skipped whole.
        assert_eq!(
            rewritten(r#"[NaN, "NaN", Infinity, "a\"NaN"]"#),
            r#"[null, "NaN", 1e999   , "a\"NaN"]"#
        );
        // Only whole tokens: the JSON stays as wrong as it was.
        for s in ["[NaNx]", "[xNaN]", "[Infinity2]", "[1.NaN]", "[nan]"] {
            assert_eq!(rewritten(s), s);
        }
        assert_eq!(rewritten("[Infinity"), "[1e999   ");
        assert_eq!(rewritten("NaN"), "null");
        // An input that ends inside a string, after an escape, ends there.
        assert_eq!(rewritten("[NaN, \"a\\"), "[null, \"a\\");
    }

    #[test]
    fn what_is_rewritten_parses_as_the_numbers_python_meant() {
        let text = rewritten(r#"{"inf": Infinity, "ninf": -Infinity, "nan": NaN, "s": "NaN"}"#);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let big: f64 = v["inf"].to_string().parse().unwrap();
        assert!(big.is_infinite() && big > 0.0, "{v}");
        let small: f64 = v["ninf"].to_string().parse().unwrap();
        assert!(small.is_infinite() && small < 0.0, "{v}");
        assert!(v["nan"].is_null());
        assert_eq!(v["s"], "NaN");
        // Stored as text and read again, the numbers stay.
        let again: serde_json::Value = serde_json::from_str(&v.to_string()).unwrap();
        assert_eq!(again, v);
    }

    #[test]
    fn byte_order_marks() {
        assert_eq!(strip_bom(b"\xef\xbb\xbf{}"), b"{}");
        assert_eq!(strip_bom(b"{}"), b"{}");
    }
}
