//! Where a node of the tree was written in the statement text.

/// The bytes `start..end` of the statement text a node was read from, so
/// errors can point at it; `0..0` in a statement built rather than parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// A name the statement binds or refers to (a pattern variable, a
/// property key), with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// The name as written.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}
