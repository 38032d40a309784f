//! The node and relationship patterns of MATCH.

use super::expr::Expr;
use super::span::Ident;

/// `key: value` in the braces of a node or relationship pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The field the value is required of.
    pub key: Ident,
    /// A literal or a parameter.
    pub value: Expr,
}

/// A node in a MATCH pattern: `(a:class {key: value})`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodePattern {
    /// The variable it binds.
    pub var: Option<Ident>,
    /// Its class name.
    pub label: Option<String>,
    /// Required field values.
    pub props: Vec<Property>,
}

/// How many hops a relationship pattern spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hops {
    /// `*n`.
    Exact(u32),
    /// `*`, `*m..`, `*..n`, `*m..n`.
    Range(Option<u32>, Option<u32>),
}

/// An edge in a MATCH pattern: `-[e:op_kind*1..3 {key: value}]->` or `<-[...]-`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RelPattern {
    /// `<-` instead of `->`.
    pub leftward: bool,
    /// The variable it binds (single hops only).
    pub var: Option<Ident>,
    /// The kind (category) of the op that made the edge.
    pub label: Option<String>,
    /// Variable length.
    pub hops: Option<Hops>,
    /// Required edge field values.
    pub props: Vec<Property>,
}

/// A chain of node and relationship patterns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pattern {
    /// The first node.
    pub first: NodePattern,
    /// Each relationship with the node it leads to.
    pub steps: Vec<(RelPattern, NodePattern)>,
}
