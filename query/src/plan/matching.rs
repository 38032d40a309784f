//! MATCH: pattern variables, the steps that bind them from the most
//! constrained node of each pattern, and WHERE conditions pushed down to the
//! step where their variables are bound.

use crate::ast::{
    literal_value, CmpOp, Direction, Expr, Hops, Ident, Match, NodePattern, RelPattern,
};
use crate::error::QueryError;
use crate::keywords::nearest;
use crate::value::Value;

use super::exprs::{conjuncts, contains_agg, visit_fields};
use super::fields::{fields_of, Field, Subject};
use super::pexpr::Pexpr;
use super::planner::{Planner, Result, Scope};
use super::types::{Constraint, MatchPlan, MatchStep, PatternVar, Pred, VarKind};

impl Planner<'_> {
    pub(super) fn match_plan(&self, m: &Match) -> Result<MatchPlan> {
        // Collect variables: nodes by name (shared across patterns), edges.
        let mut vars: Vec<PatternVar> = Vec::new();
        let mut anon = 0;
        let mut node_var = |vars: &mut Vec<PatternVar>, n: &NodePattern| -> Result<usize> {
            match &n.var {
                Some(var) => {
                    let name = &var.name;
                    if let Some(i) = vars.iter().position(|v| &v.name == name) {
                        if vars[i].kind != VarKind::Node {
                            return Err(self
                                .err(var.span, format!("{name} names a relationship and a node")));
                        }
                        Ok(i)
                    } else {
                        vars.push(PatternVar {
                            name: name.clone(),
                            kind: VarKind::Node,
                        });
                        Ok(vars.len() - 1)
                    }
                }
                None => {
                    anon += 1;
                    vars.push(PatternVar {
                        name: format!("_{anon}"),
                        kind: VarKind::Node,
                    });
                    Ok(vars.len() - 1)
                }
            }
        };
        // Per pattern: node indices and rel indices.
        struct Chain<'p> {
            nodes: Vec<(usize, &'p NodePattern)>,
            rels: Vec<(Option<usize>, &'p RelPattern)>,
        }
        let mut chains = Vec::new();
        for p in &m.patterns {
            let mut nodes = vec![(node_var(&mut vars, &p.first)?, &p.first)];
            let mut rels = Vec::new();
            for (r, n) in &p.steps {
                let rel = match &r.var {
                    Some(var) => {
                        let name = &var.name;
                        if vars.iter().any(|v| &v.name == name) {
                            return Err(self.err(
                                var.span,
                                format!(
                                    "{name} is bound twice; a relationship variable names one edge"
                                ),
                            ));
                        }
                        if r.hops.is_some() {
                            return Err(self.err(
                                var.span,
                                format!("{name} names a variable-length relationship; only single hops can be named"),
                            ));
                        }
                        vars.push(PatternVar {
                            name: name.clone(),
                            kind: VarKind::Edge,
                        });
                        Some(vars.len() - 1)
                    }
                    None => None,
                };
                rels.push((rel, r));
                nodes.push((node_var(&mut vars, n)?, n));
            }
            chains.push(Chain { nodes, rels });
        }
        let scope = Scope {
            subjects: &[Subject::Trace],
            vars: &vars,
            aggregates: true,
            bare: None,
        };
        let filter_scope = Scope {
            aggregates: false,
            ..scope
        };
        // Constraints from labels and properties.
        let node_constraints = |n: &NodePattern| -> Result<Vec<Constraint>> {
            let mut out = Vec::new();
            if let Some(l) = &n.label {
                out.push(Constraint {
                    field: Field::Class,
                    value: Value::Str(l.clone()),
                });
            }
            for p in &n.props {
                out.push(Constraint {
                    field: self.prop_field(&p.key, fields_of(Subject::Var), "node")?,
                    value: self.prop_value(&p.value)?,
                });
            }
            Ok(out)
        };
        let edge_constraints = |r: &RelPattern| -> Result<Vec<Constraint>> {
            let mut out = Vec::new();
            if let Some(l) = &r.label {
                out.push(Constraint {
                    field: Field::Kind,
                    value: Value::Str(l.clone()),
                });
            }
            for p in &r.props {
                out.push(Constraint {
                    field: self.prop_field(&p.key, fields_of(Subject::Edge), "relationship")?,
                    value: self.prop_value(&p.value)?,
                });
            }
            Ok(out)
        };
        // Pushed-down conditions: each WHERE conjunct runs once its variables are bound.
        let mut pending: Vec<(Vec<usize>, Pred)> = Vec::new();
        if let Some(w) = &m.filter {
            for c in conjuncts(w) {
                let used = vars_used(&c, &vars);
                pending.push((used, self.pred(&c, &filter_scope)?));
            }
        }
        let mut bound = vec![false; vars.len()];
        let mut steps = Vec::new();
        let flush =
            |bound: &[bool], steps: &mut Vec<MatchStep>, pending: &mut Vec<(Vec<usize>, Pred)>| {
                let mut i = 0;
                while i < pending.len() {
                    if pending[i].0.iter().all(|v| bound[*v]) {
                        let (_, p) = pending.remove(i);
                        steps.push(MatchStep::Filter(p));
                    } else {
                        i += 1;
                    }
                }
            };
        flush(&bound, &mut steps, &mut pending);
        for chain in &chains {
            // Anchor: a node already bound, else the most constrained node.
            let anchor = chain
                .nodes
                .iter()
                .position(|(v, _)| bound[*v])
                .unwrap_or_else(|| {
                    let mut best = 0;
                    let mut best_score = -1i64;
                    for (i, (_, n)) in chain.nodes.iter().enumerate() {
                        let score = n.props.len() as i64 * 2 + i64::from(n.label.is_some()) * 3;
                        if score > best_score {
                            best = i;
                            best_score = score;
                        }
                    }
                    best
                });
            let (av, an) = chain.nodes[anchor];
            if !bound[av] {
                steps.push(MatchStep::Scan {
                    var: av,
                    constraints: node_constraints(an)?,
                });
                bound[av] = true;
                flush(&bound, &mut steps, &mut pending);
            } else if !an.props.is_empty() || an.label.is_some() {
                // Re-used variable with more constraints: check them as a filter.
                let text = an.to_string();
                steps.push(MatchStep::Filter(Pred {
                    expr: constraints_expr(av, node_constraints(an)?),
                    text,
                }));
            }
            // Expand rightwards from the anchor, then leftwards.
            let order: Vec<(usize, usize, usize, bool)> = (anchor..chain.rels.len())
                .map(|r| (r, r, r + 1, true))
                .chain((0..anchor).rev().map(|r| (r, r + 1, r, false)))
                .collect();
            for (ri, from_i, to_i, rightwards) in order {
                let (rel_var, rel) = chain.rels[ri];
                let (from, _) = chain.nodes[from_i];
                let (to, to_pat) = chain.nodes[to_i];
                // Written `(a)-[]->(b)`: edges from a to b. Walking the chain
                // rightwards over `->` follows edges forward.
                let forward = rightwards != rel.leftward;
                let (min_hops, max_hops) = match rel.hops {
                    None => (1, Some(1)),
                    Some(Hops::Exact(n)) => (n, Some(n)),
                    Some(Hops::Range(a, b)) => (a.unwrap_or(1), b),
                };
                let check = bound[to];
                steps.push(MatchStep::Expand {
                    from,
                    to,
                    rel: rel_var,
                    direction: if forward {
                        Direction::Forward
                    } else {
                        Direction::Backward
                    },
                    edge_constraints: edge_constraints(rel)?,
                    min_hops,
                    max_hops,
                    constraints: node_constraints(to_pat)?,
                    check,
                });
                bound[to] = true;
                if let Some(r) = rel_var {
                    bound[r] = true;
                }
                flush(&bound, &mut steps, &mut pending);
            }
        }
        if let Some((_, p)) = pending.into_iter().next() {
            return Err(QueryError::Other(format!(
                "WHERE {} uses a variable no pattern binds",
                p.text
            )));
        }
        let lead = if m.returns.items.iter().any(|i| contains_agg(&i.expr)) {
            None
        } else {
            Some(("trace", Pexpr::Field(Subject::Trace, Field::Id)))
        };
        let projection = self.projection(&m.returns, &[], &m.order_by, &m.limit, &scope, lead)?;
        Ok(MatchPlan {
            vars,
            steps,
            scope: self.in_trace(&m.in_trace)?,
            projection,
        })
    }

    fn prop_field(&self, key: &Ident, table: &[(&str, Field)], what: &str) -> Result<Field> {
        let (span, key) = (key.span, key.name.as_str());
        table
            .iter()
            .find(|(n, _)| *n == key)
            .map(|(_, f)| f.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                let hint = nearest(key, names.iter().copied())
                    .map(|k| format!(" (did you mean {k}?)"))
                    .unwrap_or_default();
                self.err(
                    span,
                    format!(
                        "unknown {what} property {key}{hint}; properties are {}",
                        names.join(", ")
                    ),
                )
            })
    }

    fn prop_value(&self, v: &Expr) -> Result<Value> {
        match v {
            Expr::Lit(l) => Ok(literal_value(l)),
            Expr::Param(p) => Ok(self.param(p)?.clone()),
            other => Err(QueryError::Other(format!(
                "a property value must be a literal or a parameter, not {other}"
            ))),
        }
    }
}

fn vars_used(e: &Expr, vars: &[PatternVar]) -> Vec<usize> {
    let mut out = Vec::new();
    visit_fields(e, &mut |p| {
        if let Some(i) = vars.iter().position(|v| v.name == p.parts[0]) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    });
    out
}

fn constraints_expr(var: usize, cs: Vec<Constraint>) -> Pexpr {
    let items: Vec<Pexpr> = cs
        .into_iter()
        .map(|c| {
            Pexpr::Cmp(
                CmpOp::Eq,
                Box::new(Pexpr::Field(Subject::Bound(var), c.field)),
                Box::new(Pexpr::Const(c.value)),
            )
        })
        .collect();
    Pexpr::And(items)
}

#[cfg(test)]
mod tests {
    use crate::plan::test_support::plan_err;

    #[test]
    fn pattern_variable_and_property_errors_point_at_them() {
        let e = plan_err("MATCH (a)-[a]->(b) RETURN a", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 12: a is bound twice"),
            "{e}"
        );
        let e = plan_err("MATCH (a)-[e]->(b), ( e ) RETURN a", &[]);
        assert!(
            e.starts_with(
                "invalid statement at line 1, column 23: e names a relationship and a node"
            ),
            "{e}"
        );
        let e = plan_err("MATCH (a)-[e*2]->(b) RETURN a", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 12: e names a variable-length"),
            "{e}"
        );
        let e = plan_err("MATCH (a {name: 'x', categry: 'y'}) RETURN a", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 22: unknown node property categry (did you mean category?)"),
            "{e}"
        );
    }
}
