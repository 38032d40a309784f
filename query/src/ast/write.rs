//! Helpers of printing shared by statements and expressions.

use std::fmt::{self, Display, Formatter};

use crate::node_ref::quote;

/// Is `s` printable as an identifier (and not mistaken for a keyword)?
fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_') && !crate::keywords::is_reserved(s)
}

/// Writes a name bare when it reads back as a name, else quoted.
pub(super) fn write_name(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    if is_ident(s) {
        f.write_str(s)
    } else {
        f.write_str(&quote(s))
    }
}

/// Writes `items` separated by `sep`.
pub(super) fn join<T: Display>(f: &mut Formatter<'_>, items: &[T], sep: &str) -> fmt::Result {
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{it}")?;
    }
    Ok(())
}
