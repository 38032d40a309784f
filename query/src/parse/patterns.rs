//! The node and relationship patterns of MATCH.

use pest::iterators::Pair;

use crate::ast::{Expr, Hops, NodePattern, Pattern, Property, RelPattern};
use crate::grammar::Rule;
use crate::node_ref::unquote;

use super::reader::{bug, ident, param_name, Reader, Result};

impl Reader<'_> {
    pub(super) fn props(&self, pair: Pair<'_, Rule>) -> Result<Vec<Property>> {
        let mut out = Vec::new();
        for prop in pair.into_inner() {
            let mut it = prop.into_inner();
            let key = ident(&it.next().ok_or_else(|| bug("property"))?);
            let v = it.next().ok_or_else(|| bug("property value"))?;
            let value = match v.as_rule() {
                Rule::param => Expr::Param(param_name(&v)),
                _ => Expr::Lit(self.literal(v)?),
            };
            out.push(Property { key, value });
        }
        Ok(out)
    }

    pub(super) fn label(&self, pair: Pair<'_, Rule>) -> Result<String> {
        let inner = pair.into_inner().next().ok_or_else(|| bug("label"))?;
        Ok(match inner.as_rule() {
            Rule::string => unquote(inner),
            _ => inner.as_str().to_string(),
        })
    }

    pub(super) fn node_pat(&self, pair: Pair<'_, Rule>) -> Result<NodePattern> {
        let mut n = NodePattern::default();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::ident => n.var = Some(ident(&p)),
                Rule::label => n.label = Some(self.label(p)?),
                Rule::props => n.props = self.props(p)?,
                _ => {}
            }
        }
        Ok(n)
    }

    pub(super) fn rel(&self, pair: Pair<'_, Rule>) -> Result<RelPattern> {
        let side = pair
            .into_inner()
            .next()
            .ok_or_else(|| bug("relationship"))?;
        let mut r = RelPattern {
            leftward: side.as_rule() == Rule::rel_left,
            ..RelPattern::default()
        };
        if let Some(body) = side.into_inner().find(|p| p.as_rule() == Rule::rel_body) {
            for p in body.into_inner() {
                match p.as_rule() {
                    Rule::ident => r.var = Some(ident(&p)),
                    Rule::label => r.label = Some(self.label(p)?),
                    Rule::props => r.props = self.props(p)?,
                    Rule::hops => {
                        r.hops = Some(match p.into_inner().next() {
                            None => Hops::Range(None, None),
                            Some(h) if h.as_rule() == Rule::int => {
                                Hops::Exact(self.int(&h, "hop count")?)
                            }
                            Some(h) => {
                                // hop_range: int? ".." int?, told apart by position.
                                let text = h.as_str();
                                let dots = h.as_span().start() + text.find("..").unwrap_or(0);
                                let mut lo = None;
                                let mut hi = None;
                                for i in h.clone().into_inner() {
                                    let v: u32 = self.int(&i, "hop count")?;
                                    if i.as_span().start() < dots {
                                        lo = Some(v);
                                    } else {
                                        hi = Some(v);
                                    }
                                }
                                if let (Some(a), Some(b)) = (lo, hi) {
                                    if a > b {
                                        return Err(self.err(
                                            &h,
                                            format!("*{a}..{b} is empty: the lower bound is above the upper"),
                                        ));
                                    }
                                }
                                Hops::Range(lo, hi)
                            }
                        });
                    }
                    _ => {}
                }
            }
        }
        Ok(r)
    }

    pub(super) fn pattern(&self, pair: Pair<'_, Rule>) -> Result<Pattern> {
        let mut it = pair.into_inner();
        let first = self.node_pat(it.next().ok_or_else(|| bug("pattern"))?)?;
        let mut steps = Vec::new();
        while let Some(r) = it.next() {
            let rel = self.rel(r)?;
            let node = self.node_pat(it.next().ok_or_else(|| bug("pattern step"))?)?;
            steps.push((rel, node));
        }
        Ok(Pattern { first, steps })
    }
}
