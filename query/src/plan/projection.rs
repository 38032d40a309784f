//! How rows become output: RETURN, GROUP BY, ORDER BY and LIMIT planned
//! into a [`Projection`].

use crate::ast::{CountArg, Expr, OrderItem, Returns, SortDir};

use super::exprs::{contains_agg, expr_span};
use super::pexpr::Pexpr;
use super::planner::{Planner, Result, Scope};
use super::types::{Projection, ProjectionTexts};

impl Planner<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn projection(
        &self,
        returns: &Returns,
        group_by: &[Expr],
        order_by: &[OrderItem],
        limit: &Option<CountArg>,
        scope: &Scope<'_>,
        lead: Option<(&str, Pexpr)>,
    ) -> Result<Projection> {
        let has_agg = returns.items.iter().any(|i| contains_agg(&i.expr))
            || order_by.iter().any(|o| contains_agg(&o.expr));
        let aggregating = has_agg || !group_by.is_empty();
        self.implicit_groups.set(group_by.is_empty());
        let mut columns = Vec::new();
        let mut outputs = Vec::new();
        let mut aggs = Vec::new();
        let (group_keys, group_texts) = if aggregating {
            self.group_keys(returns, group_by, scope)?
        } else {
            if let Some((name, expr)) = lead {
                columns.push(name.to_string());
                outputs.push(expr);
            }
            (Vec::new(), Vec::new())
        };
        let group = aggregating.then_some(group_texts.as_slice());
        for item in &returns.items {
            columns.push(
                item.alias
                    .clone()
                    .unwrap_or_else(|| column_text(&item.expr)),
            );
            outputs.push(self.compile(&item.expr, scope, &mut aggs, group)?);
        }
        let mut order = Vec::new();
        let mut order_texts = Vec::new();
        for o in order_by {
            let text = o.expr.to_string();
            let desc = o.dir == SortDir::Desc;
            order_texts.push(format!("{text}{}", if desc { " DESC" } else { "" }));
            if let Some(i) = returned_column(o, &text, &columns, returns) {
                order.push((i, desc));
                continue;
            }
            if returns.distinct {
                return Err(self.err(
                    expr_span(&o.expr),
                    format!("with DISTINCT, ORDER BY may use only returned columns, and {text} is not one"),
                ));
            }
            outputs.push(self.compile(&o.expr, scope, &mut aggs, group)?);
            order.push((outputs.len() - 1, desc));
        }
        Ok(Projection {
            columns,
            outputs,
            group_keys,
            aggs,
            aggregating,
            distinct: returns.distinct,
            order,
            limit: self.count_arg(limit)?,
            texts: ProjectionTexts {
                group: group_texts,
                order: order_texts,
            },
            keys: 0,
        })
    }

    /// The group keys, compiled and as written: GROUP BY, or else every
    /// RETURN item without an aggregate.
    fn group_keys(
        &self,
        returns: &Returns,
        group_by: &[Expr],
        scope: &Scope<'_>,
    ) -> Result<(Vec<Pexpr>, Vec<String>)> {
        let keys: Vec<&Expr> = if group_by.is_empty() {
            returns
                .items
                .iter()
                .filter(|i| !contains_agg(&i.expr))
                .map(|i| &i.expr)
                .collect()
        } else {
            group_by.iter().collect()
        };
        let key_scope = Scope {
            aggregates: false,
            ..*scope
        };
        let mut group_keys = Vec::new();
        let mut group_texts = Vec::new();
        for k in keys {
            group_keys.push(self.compile(k, &key_scope, &mut Vec::new(), None)?);
            group_texts.push(k.to_string());
        }
        Ok((group_keys, group_texts))
    }
}

/// The output an ORDER BY item sorts by when it names a returned column
/// (by its name or as its expression is written); `text` is the item as written.
fn returned_column(
    o: &OrderItem,
    text: &str,
    columns: &[String],
    returns: &Returns,
) -> Option<usize> {
    // A one-part name is also looked up as written: printing quotes a
    // name spelled like a keyword (an alias `traces`, `cases`).
    let bare = match &o.expr {
        Expr::Field(f) if f.parts.len() == 1 => Some(f.parts[0].as_str()),
        _ => None,
    };
    columns
        .iter()
        .position(|c| *c == text || Some(c.as_str()) == bare)
        .or_else(|| {
            returns
                .items
                .iter()
                .position(|i| i.expr.to_string() == text)
                .map(|i| i + columns.len() - returns.items.len())
        })
}

/// A column's name when RETURN gives none: the expression as written, a
/// bare name (`trace`) without the parentheses that keep it apart from a
/// keyword in statement text.
fn column_text(e: &Expr) -> String {
    match e {
        Expr::Field(p) if p.parts.len() == 1 => p.parts[0].clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::test_support::plan_err;

    #[test]
    fn a_field_outside_the_groups_is_told_how_groups_were_made() {
        let e = plan_err(
            "FIND vars GROUP BY var.category RETURN var.name, count(*)",
            &[],
        );
        assert!(
            e.contains(": var.name must be in GROUP BY or inside an aggregate"),
            "{e}"
        );
        let e = plan_err(
            "FIND vars RETURN var.category, count(*) ORDER BY var.name",
            &[],
        );
        assert!(
            e.contains(
                ": var.name must be a group key (RETURN it without an aggregate, or GROUP BY it)"
            ),
            "{e}"
        );
    }

    #[test]
    fn one_group_of_all_rows_refuses_a_bare_field_where_it_is_written() {
        // Without GROUP BY and with only aggregates returned, every row is in
        // one group: a field outside an aggregate has no value there.
        for (text, field, column) in [
            (
                "FIND sessions RETURN count(*) ORDER BY session.id",
                "session.id",
                40,
            ),
            (
                "FIND sessions RETURN count(*) ORDER BY session.created_at",
                "session.created_at",
                40,
            ),
            (
                "FIND ops RETURN count(*) ORDER BY lower(op.name)",
                "op.name",
                41,
            ),
        ] {
            let e = plan_err(text, &[]);
            assert!(
                e.contains(&format!("column {column}: {field} must be a group key")),
                "{text}: {e}"
            );
            for internal in ["Id", "CreatedAt", "OpName", "is read outside"] {
                assert!(!e.contains(&format!("{internal} ")), "{text}: {e}");
            }
        }
    }
}
