//! From a checked [`Statement`](crate::ast::Statement) to a logical
//! [`Plan`] the engine runs, and the plan's printed form (what EXPLAIN shows).
//!
//! Planning resolves field names (with a "did you mean" for typos), binds
//! parameters, compiles regular expressions, splits aggregates from group
//! keys, pushes MATCH conditions down to the step where their variables are
//! bound, and picks the most constrained node of each pattern as its anchor.

// The files, each built only on those above it (methods of `Planner` are
// added file by file, and call only methods of files above):
//   fields      `Subject`, `Field` and the field names of each subject
//   inset       the literal list of an IN, indexed for lookups
//   pexpr       compiled expressions, their functions and aggregates
//   types       the plan types and `Params`
//   params      the parameters a statement reads
//   exprs       what planning reads off written expressions
//   planner     the planner's state, its errors, parameter binding
//   compile     field resolution and expression compilation
//   projection  RETURN, GROUP BY, ORDER BY and LIMIT
//   traverse    TRACE and FORWARD
//   find        FIND
//   matching    MATCH
//   patterns    SAVE PATTERN and RUN PATTERN
//   attribute   ATTRIBUTE
//   entry       `plan`, `plan_text` and `plan_until`
//   explain     the printed form (on `types` alone)
mod attribute;
mod compile;
mod entry;
mod explain;
mod exprs;
mod fields;
mod find;
pub(crate) mod inset;
mod matching;
mod params;
mod patterns;
pub(crate) mod pexpr;
mod planner;
mod projection;
#[cfg(test)]
mod test_support;
mod traverse;
mod types;

pub use attribute::{attribute_columns, SUBQUERIES};
pub use entry::{plan, plan_text, plan_until};
pub use fields::{field_names, Field, Subject, SUBJECTS};
pub use params::statement_params;
pub use traverse::traverse_columns;
pub use types::{
    AggSpec, AttributePlan, CaseSource, Constraint, DescribePlan, FindPlan, MatchPlan, MatchStep,
    Params, PatternVar, Plan, Pred, Projection, ProjectionTexts, RunPatternPlan, SavePatternPlan,
    TraversePlan, VarKind,
};
