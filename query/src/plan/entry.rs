//! The entry points: a statement planned whole, binding its parameters.

use crate::ast::Statement;

use super::planner::{Planner, Result};
use super::types::{DescribePlan, Params, Plan};

/// Plans a statement, binding `params`.
pub fn plan(stmt: &Statement, params: &Params) -> Result<Plan> {
    plan_in(stmt, params, "")
}

/// Plans a statement parsed from `text` (for error positions), binding `params`.
pub fn plan_text(stmt: &Statement, params: &Params, text: &str) -> Result<Plan> {
    plan_in(stmt, params, text)
}

fn plan_in(stmt: &Statement, params: &Params, text: &str) -> Result<Plan> {
    let p = Planner::new(params, text);
    match stmt {
        Statement::Traverse(t) => p.traverse(t).map(Plan::Traverse),
        Statement::Match(m) => p.match_plan(m).map(Plan::Match),
        Statement::Find(f) => p.find(f).map(Plan::Find),
        Statement::ShowTraces => Ok(Plan::ShowTraces),
        Statement::Describe(d) => Ok(Plan::Describe(DescribePlan {
            target: p.start(&d.target)?,
            scope: p.text_arg(&d.in_trace)?,
        })),
        Statement::Attribute(a) => p.attribute(a).map(Plan::Attribute),
        Statement::Explain(inner) => Ok(Plan::Explain(Box::new(plan_in(inner, params, text)?))),
        Statement::SavePattern(s) => p.save_pattern(s).map(Plan::SavePattern),
        Statement::RunPattern(r) => p.run_pattern(r).map(Plan::RunPattern),
        Statement::ShowPatterns => Ok(Plan::ShowPatterns),
        Statement::ShowPatternHistory(name) => Ok(Plan::ShowPatternHistory(name.clone())),
        Statement::DropPattern(name) => Ok(Plan::DropPattern(name.clone())),
    }
}
