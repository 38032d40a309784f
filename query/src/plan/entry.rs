//! The entry points: a statement planned whole, binding its parameters.

use crate::ast::Statement;

use super::planner::{Planner, Result};
use super::types::{DescribePlan, Params, Plan};

/// Plans a statement, binding `params`.
pub fn plan(stmt: &Statement, params: &Params) -> Result<Plan> {
    plan_in(stmt, params, "", None)
}

/// Plans a statement parsed from `text` (for error positions), binding `params`.
pub fn plan_text(stmt: &Statement, params: &Params, text: &str) -> Result<Plan> {
    plan_in(stmt, params, text, None)
}

/// [`plan_text`], looking at `stopped` as it goes (every few hundred
/// expressions compiled): once it says so, planning ends with
/// [`QueryError::Stopped`](crate::QueryError::Stopped).
pub fn plan_until(
    stmt: &Statement,
    params: &Params,
    text: &str,
    stopped: &dyn Fn() -> bool,
) -> Result<Plan> {
    plan_in(stmt, params, text, Some(stopped))
}

fn plan_in(
    stmt: &Statement,
    params: &Params,
    text: &str,
    stopped: Option<&dyn Fn() -> bool>,
) -> Result<Plan> {
    let p = Planner::new(params, text).until(stopped);
    match stmt {
        Statement::Traverse(t) => p.traverse(t).map(Plan::Traverse),
        Statement::Match(m) => p.match_plan(m).map(Plan::Match),
        Statement::Find(f) => p.find(f).map(Plan::Find),
        Statement::ShowTraces => Ok(Plan::ShowTraces),
        Statement::Describe(d) => Ok(Plan::Describe(DescribePlan {
            target: p.start(&d.target)?,
            scope: p.in_trace(&d.in_trace)?,
        })),
        Statement::Attribute(a) => p.attribute(a).map(Plan::Attribute),
        Statement::Explain(inner) => Ok(Plan::Explain(Box::new(plan_in(
            inner, params, text, stopped,
        )?))),
        Statement::SavePattern(s) => p.save_pattern(s).map(Plan::SavePattern),
        Statement::RunPattern(r) => p.run_pattern(r).map(Plan::RunPattern),
        Statement::ShowPatterns => Ok(Plan::ShowPatterns),
        Statement::ShowPatternHistory(name) => Ok(Plan::ShowPatternHistory(name.clone())),
        Statement::DropPattern(name) => Ok(Plan::DropPattern(name.clone())),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::QueryError;

    #[test]
    fn planning_stops_when_asked_and_not_before() {
        let text = format!(
            "FIND vars WHERE {} RETURN count(*)",
            vec!["var.version >= 1"; 20_000].join(" AND ")
        );
        let stmt = crate::parse_statement(&text).unwrap();
        let looks = Cell::new(0);
        let stopped = || {
            looks.set(looks.get() + 1);
            looks.get() > 3
        };
        assert_eq!(
            plan_until(&stmt, &Params::new(), &text, &stopped).unwrap_err(),
            QueryError::Stopped
        );
        assert_eq!(looks.get(), 4, "it stopped at the first look that said so");
        assert!(plan_until(&stmt, &Params::new(), &text, &|| false).is_ok());
    }
}
