//! Node references: how a statement names a variable or an operation.

use std::fmt;

use pest::iterators::Pair;
use pest::Parser;

use crate::error::QueryError;
use crate::grammar::{MemtraceParser, Rule};

/// A reference to a variable (or, quoted, to a full node id or op id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRef {
    /// A full name, with a version or meaning the latest one.
    Name {
        /// `class_name:name`, or `name`.
        full_name: String,
        /// The version, when given with `@N`.
        version: Option<u32>,
    },
    /// A quoted id: a full node id (`name@version`), a full name or an op id.
    Quoted(String),
}

pub(crate) fn unquote(pair: pest::iterators::Pair<'_, Rule>) -> String {
    // string -> inner
    let inner = pair.into_inner().next().map(|p| p.as_str()).unwrap_or("");
    inner.replace("''", "'")
}

pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn is_bare(s: &str) -> bool {
    // A leading `--` would read as a comment.
    !s.is_empty()
        && !s.starts_with("--")
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '#'))
}

/// Parses a node reference such as `answer:42`, `answer:42@2`,
/// `message:'U1:D1:3'` or `'llm_output:str:23bd@1'`.
pub fn parse_node_ref(text: &str) -> Result<NodeRef, QueryError> {
    let mut pairs =
        MemtraceParser::parse(Rule::node_ref, text).map_err(|e| QueryError::from_pest(text, e))?;
    let reference = pairs
        .next()
        .and_then(|p| p.into_inner().next())
        .ok_or_else(|| QueryError::Other("empty reference".into()))?;
    from_pair(text, reference)
}

/// Builds a [`NodeRef`] from a parsed `reference` rule.
pub(crate) fn from_pair(text: &str, reference: Pair<'_, Rule>) -> Result<NodeRef, QueryError> {
    let reference = match reference.as_rule() {
        Rule::reference => match reference.into_inner().next() {
            Some(r) => r,
            None => return Err(QueryError::Other("empty reference".into())),
        },
        _ => reference,
    };
    match reference.as_rule() {
        Rule::quoted_id => {
            let s = reference
                .into_inner()
                .next()
                .map(unquote)
                .unwrap_or_default();
            Ok(NodeRef::Quoted(s))
        }
        _ => {
            let mut parts = Vec::new();
            let mut version = None;
            for p in reference.into_inner() {
                match p.as_rule() {
                    Rule::name_part => {
                        let Some(inner) = p.into_inner().next() else {
                            continue;
                        };
                        parts.push(match inner.as_rule() {
                            Rule::string => unquote(inner),
                            _ => inner.as_str().to_string(),
                        });
                    }
                    Rule::version => {
                        let at = p.as_span().start();
                        let digits = p.into_inner().next().map(|d| d.as_str()).unwrap_or("");
                        let v: u32 = digits.parse().map_err(|_| {
                            QueryError::at(text, at, format!("version {digits} is out of range"))
                        })?;
                        if v == 0 {
                            return Err(QueryError::at(text, at, "versions start at 1".into()));
                        }
                        version = Some(v);
                    }
                    _ => {}
                }
            }
            Ok(NodeRef::Name {
                full_name: parts.join(":"),
                version,
            })
        }
    }
}

impl fmt::Display for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeRef::Quoted(s) => f.write_str(&quote(s)),
            NodeRef::Name { full_name, version } => {
                // Each ':'-separated part is printed bare when it can be, else
                // quoted. A lone quoted part without a version reads back as a
                // quoted id, which resolves to the same variable.
                let shown: Vec<String> = full_name
                    .split(':')
                    .map(|p| if is_bare(p) { p.to_string() } else { quote(p) })
                    .collect();
                f.write_str(&shown.join(":"))?;
                if let Some(v) = version {
                    write!(f, "@{v}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn name(full_name: &str, version: Option<u32>) -> NodeRef {
        NodeRef::Name {
            full_name: full_name.into(),
            version,
        }
    }

    #[test]
    fn the_documented_forms_parse() {
        assert_eq!(
            parse_node_ref("answer:42").unwrap(),
            name("answer:42", None)
        );
        assert_eq!(
            parse_node_ref("answer:42@2").unwrap(),
            name("answer:42", Some(2))
        );
        assert_eq!(
            parse_node_ref("message:'U1:D1:3'").unwrap(),
            name("message:U1:D1:3", None)
        );
        assert_eq!(
            parse_node_ref("'llm_output:str:23bd@1'").unwrap(),
            NodeRef::Quoted("llm_output:str:23bd@1".into())
        );
        assert_eq!(
            parse_node_ref("  op-4ec49f11  ").unwrap(),
            name("op-4ec49f11", None)
        );
        assert_eq!(
            parse_node_ref("'it''s'").unwrap(),
            NodeRef::Quoted("it's".into())
        );
    }

    #[test]
    fn errors_point_at_the_offending_character() {
        let err = parse_node_ref("answer:42@x").unwrap_err();
        match err {
            QueryError::Syntax {
                line,
                column,
                snippet,
                ..
            } => {
                assert_eq!((line, column), (1, 11));
                assert!(snippet.ends_with("          ^"), "{snippet}");
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_node_ref("answer:42@0").is_err());
        assert!(parse_node_ref("").is_err());
        assert!(parse_node_ref("'unterminated").is_err());
    }

    proptest! {
        #[test]
        fn printing_and_parsing_round_trip(first in "[a-z0-9_.][a-z0-9_.-]{0,5}", rest in proptest::collection::vec("[a-z0-9_.-]{1,6}|[^']{0,6}", 0..4), version in proptest::option::of(1u32..1000)) {
            let mut parts = vec![first];
            parts.extend(rest);
            let r = name(&parts.join(":"), version);
            let printed = r.to_string();
            let parsed = parse_node_ref(&printed);
            match parsed {
                Ok(p) => prop_assert_eq!(p, r, "printed as {}", printed),
                Err(e) => prop_assert!(false, "{} did not parse: {}", printed, e),
            }
        }

        #[test]
        fn quoted_ids_round_trip(s in ".*") {
            let r = NodeRef::Quoted(s);
            prop_assert_eq!(parse_node_ref(&r.to_string()).unwrap(), r);
        }
    }
}
