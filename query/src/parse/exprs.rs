//! Expressions, from `OR` down to operands.

use pest::iterators::Pair;

use crate::ast::{CallArg, CmpOp, Expr, FieldPath, Literal, Span, Test};
use crate::grammar::Rule;
use crate::node_ref::unquote;

use super::reader::{bug, operand_span, param_name, span_of, Reader, Result};

impl Reader<'_> {
    pub(super) fn expr(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        match pair.as_rule() {
            Rule::expr => self.expr(pair.into_inner().next().ok_or_else(|| bug("expr"))?),
            Rule::or_expr | Rule::and_expr => {
                let or = pair.as_rule() == Rule::or_expr;
                let mut items = Vec::new();
                for p in pair.into_inner() {
                    if !matches!(p.as_rule(), Rule::kw_or | Rule::kw_and) {
                        items.push(self.expr(p)?);
                    }
                }
                Ok(match (items.len(), or) {
                    (1, _) => items.pop().ok_or_else(|| bug("expr"))?,
                    (_, true) => Expr::Or(items),
                    (_, false) => Expr::And(items),
                })
            }
            Rule::not_expr => self.expr(pair.into_inner().next().ok_or_else(|| bug("NOT"))?),
            Rule::negation => {
                let e = pair
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::not_expr)
                    .ok_or_else(|| bug("NOT"))?;
                Ok(Expr::Not(Box::new(self.expr(e)?)))
            }
            Rule::comparison => {
                let mut it = pair.into_inner();
                let left = self.operand(it.next().ok_or_else(|| bug("comparison"))?)?;
                match it.next() {
                    None => Ok(left),
                    Some(test) => Ok(Expr::Test(Box::new(left), self.test(test)?)),
                }
            }
            _ => Err(bug("expression")),
        }
    }

    pub(super) fn test(&self, pair: Pair<'_, Rule>) -> Result<Test> {
        let t = pair.into_inner().next().ok_or_else(|| bug("test"))?;
        let rule = t.as_rule();
        let start = t.as_span().start();
        let mut negated = false;
        let mut op = None;
        let mut arg = None;
        let mut arg_span = Span::default();
        for p in t.into_inner() {
            match p.as_rule() {
                Rule::negated => negated = true,
                Rule::cmp_op => {
                    op = Some(match p.as_str() {
                        "=" => CmpOp::Eq,
                        "!=" | "<>" => CmpOp::Ne,
                        "<" => CmpOp::Lt,
                        "<=" => CmpOp::Le,
                        ">" => CmpOp::Gt,
                        _ => CmpOp::Ge,
                    })
                }
                Rule::operand => {
                    arg_span = operand_span(&p);
                    arg = Some(self.operand(p)?)
                }
                Rule::list => arg = Some(self.list(p)?),
                Rule::param => arg = Some(Expr::Param(param_name(&p))),
                _ => {}
            }
        }
        let arg = || arg.map(Box::new).ok_or_else(|| bug("test operand"));
        Ok(match rule {
            Rule::cmp => Test::Cmp(op.ok_or_else(|| bug("operator"))?, arg()?),
            Rule::contains => Test::Contains(arg()?),
            Rule::starts_with => Test::StartsWith(arg()?),
            Rule::regex => Test::Regex {
                pattern: arg()?,
                operator: Span {
                    start,
                    end: start + "=~".len(),
                },
                pattern_span: arg_span,
            },
            Rule::in_list => Test::In {
                negated,
                list: arg()?,
            },
            Rule::is_null => Test::IsNull { negated },
            _ => return Err(bug("test")),
        })
    }

    pub(super) fn list(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let items = pair
            .into_inner()
            .map(|p| self.operand(p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Expr::List(items))
    }

    pub(super) fn literal(&self, pair: Pair<'_, Rule>) -> Result<Literal> {
        let inner = match pair.as_rule() {
            Rule::literal => pair.into_inner().next().ok_or_else(|| bug("literal"))?,
            _ => pair,
        };
        Ok(match inner.as_rule() {
            Rule::string => Literal::Str(unquote(inner)),
            Rule::kw_true => Literal::Bool(true),
            Rule::kw_false => Literal::Bool(false),
            Rule::kw_null => Literal::Null,
            _ => {
                let s = inner.as_str();
                if s.contains(['.', 'e', 'E']) {
                    let x: f64 = s
                        .parse()
                        .map_err(|_| self.err(&inner, format!("{s} is not a number")))?;
                    if !x.is_finite() {
                        return Err(self.err(&inner, format!("{s} is too large")));
                    }
                    Literal::Float(x)
                } else {
                    Literal::Int(
                        s.parse()
                            .map_err(|_| self.err(&inner, format!("{s} is too large")))?,
                    )
                }
            }
        })
    }

    pub(super) fn operand(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let inner = match pair.as_rule() {
            Rule::operand => pair.into_inner().next().ok_or_else(|| bug("operand"))?,
            _ => pair,
        };
        match inner.as_rule() {
            Rule::literal => Ok(Expr::Lit(self.literal(inner)?)),
            Rule::param => Ok(Expr::Param(param_name(&inner))),
            Rule::list => self.list(inner),
            Rule::expr => self.expr(inner),
            Rule::field => {
                let span = span_of(&inner);
                let parts = inner
                    .into_inner()
                    .map(|p| match p.as_rule() {
                        Rule::string => unquote(p),
                        _ => p.as_str().to_string(),
                    })
                    .collect();
                Ok(Expr::Field(FieldPath { parts, span }))
            }
            Rule::call => {
                let span = span_of(&inner);
                let mut it = inner.into_inner();
                let name = it.next().ok_or_else(|| bug("call"))?.as_str().to_string();
                let mut distinct = false;
                let mut arg = CallArg::None;
                for p in it {
                    match p.as_rule() {
                        Rule::star => arg = CallArg::Star,
                        Rule::distinct => distinct = true,
                        Rule::expr => {
                            arg = CallArg::Expr {
                                distinct,
                                expr: Box::new(self.expr(p)?),
                            }
                        }
                        _ => {}
                    }
                }
                Ok(Expr::Call { name, arg, span })
            }
            _ => Err(bug("operand")),
        }
    }
}
