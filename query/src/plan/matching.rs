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

/// One pattern of a MATCH: its nodes and relationships, each with the
/// index of the variable it binds.
struct Chain<'p> {
    nodes: Vec<(usize, &'p NodePattern)>,
    rels: Vec<(Option<usize>, &'p RelPattern)>,
}

/// The MATCH steps planned so far, the variables they bind, and the WHERE
/// conditions still waiting for their variables.
struct PlannedSteps {
    bound: Vec<bool>,
    steps: Vec<MatchStep>,
    /// Each condition with the variables it uses.
    pending: Vec<(Vec<usize>, Pred)>,
}

impl PlannedSteps {
    /// Adds a filter step for every waiting condition whose variables are all bound.
    fn flush(&mut self) {
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].0.iter().all(|v| self.bound[*v]) {
                let (_, p) = self.pending.remove(i);
                self.steps.push(MatchStep::Filter(p));
            } else {
                i += 1;
            }
        }
    }
}

impl Planner<'_> {
    pub(super) fn match_plan(&self, m: &Match) -> Result<MatchPlan> {
        let mut vars: Vec<PatternVar> = Vec::new();
        let chains = self.pattern_chains(m, &mut vars)?;
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
        // Pushed-down conditions: each WHERE conjunct runs once its variables are bound.
        let mut pending: Vec<(Vec<usize>, Pred)> = Vec::new();
        if let Some(w) = &m.filter {
            for c in conjuncts(w) {
                let used = vars_used(&c, &vars);
                pending.push((used, self.pred(&c, &filter_scope)?));
            }
        }
        let mut planned = PlannedSteps {
            bound: vec![false; vars.len()],
            steps: Vec::new(),
            pending,
        };
        planned.flush();
        for chain in &chains {
            self.chain_steps(chain, &mut planned)?;
        }
        if let Some((_, p)) = planned.pending.into_iter().next() {
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
            steps: planned.steps,
            scope: self.in_trace(&m.in_trace)?,
            projection,
        })
    }

    /// Collects the variables of every pattern into `vars`: nodes by name
    /// (shared across patterns), then edges.
    fn pattern_chains<'m>(
        &self,
        m: &'m Match,
        vars: &mut Vec<PatternVar>,
    ) -> Result<Vec<Chain<'m>>> {
        let mut anon = 0;
        let mut chains = Vec::new();
        for p in &m.patterns {
            let mut nodes = vec![(self.node_var(vars, &mut anon, &p.first)?, &p.first)];
            let mut rels = Vec::new();
            for (r, n) in &p.steps {
                let rel = self.rel_var(vars, r)?;
                rels.push((rel, r));
                nodes.push((self.node_var(vars, &mut anon, n)?, n));
            }
            chains.push(Chain { nodes, rels });
        }
        Ok(chains)
    }

    /// The variable a node pattern binds: its named one (added on first use),
    /// or a fresh unnamed one.
    fn node_var(
        &self,
        vars: &mut Vec<PatternVar>,
        anon: &mut usize,
        n: &NodePattern,
    ) -> Result<usize> {
        match &n.var {
            Some(var) => {
                let name = &var.name;
                if let Some(i) = vars.iter().position(|v| &v.name == name) {
                    if vars[i].kind != VarKind::Node {
                        return Err(
                            self.err(var.span, format!("{name} names a relationship and a node"))
                        );
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
                *anon += 1;
                vars.push(PatternVar {
                    name: format!("_{anon}"),
                    kind: VarKind::Node,
                });
                Ok(vars.len() - 1)
            }
        }
    }

    /// The variable a relationship pattern binds, if it names one: a new
    /// one, for a single hop.
    fn rel_var(&self, vars: &mut Vec<PatternVar>, r: &RelPattern) -> Result<Option<usize>> {
        let Some(var) = &r.var else {
            return Ok(None);
        };
        let name = &var.name;
        if vars.iter().any(|v| &v.name == name) {
            return Err(self.err(
                var.span,
                format!("{name} is bound twice; a relationship variable names one edge"),
            ));
        }
        if r.hops.is_some() {
            return Err(self.err(
                var.span,
                format!(
                    "{name} names a variable-length relationship; only single hops can be named"
                ),
            ));
        }
        vars.push(PatternVar {
            name: name.clone(),
            kind: VarKind::Edge,
        });
        Ok(Some(vars.len() - 1))
    }

    /// The constraints a node pattern's label and properties set.
    fn node_constraints(&self, n: &NodePattern) -> Result<Vec<Constraint>> {
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
    }

    /// The constraints a relationship pattern's label and properties set.
    fn edge_constraints(&self, r: &RelPattern) -> Result<Vec<Constraint>> {
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
    }

    /// Plans the steps that bind one pattern: its anchor node first, then
    /// the nodes to the anchor's right, then those to its left.
    fn chain_steps(&self, chain: &Chain<'_>, planned: &mut PlannedSteps) -> Result<()> {
        let anchor = anchor_of(chain, &planned.bound);
        let (av, an) = chain.nodes[anchor];
        if !planned.bound[av] {
            planned.steps.push(MatchStep::Scan {
                var: av,
                constraints: self.node_constraints(an)?,
            });
            planned.bound[av] = true;
            planned.flush();
        } else if !an.props.is_empty() || an.label.is_some() {
            // Re-used variable with more constraints: check them as a filter.
            let text = an.to_string();
            planned.steps.push(MatchStep::Filter(Pred {
                expr: constraints_expr(av, self.node_constraints(an)?),
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
            let (min_hops, max_hops) = hop_range(rel.hops);
            let check = planned.bound[to];
            planned.steps.push(MatchStep::Expand {
                from,
                to,
                rel: rel_var,
                direction: if forward {
                    Direction::Forward
                } else {
                    Direction::Backward
                },
                edge_constraints: self.edge_constraints(rel)?,
                min_hops,
                max_hops,
                constraints: self.node_constraints(to_pat)?,
                check,
            });
            planned.bound[to] = true;
            if let Some(r) = rel_var {
                planned.bound[r] = true;
            }
            planned.flush();
        }
        Ok(())
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

/// Where a pattern starts: a node already bound, else the most constrained node.
fn anchor_of(chain: &Chain<'_>, bound: &[bool]) -> usize {
    chain
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
        })
}

/// The fewest and most hops a relationship crosses (`None`: no upper bound).
fn hop_range(hops: Option<Hops>) -> (u32, Option<u32>) {
    match hops {
        None => (1, Some(1)),
        Some(Hops::Exact(n)) => (n, Some(n)),
        Some(Hops::Range(a, b)) => (a.unwrap_or(1), b),
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
