//! The plan types: what a checked statement becomes, and the parameter
//! values it is made of.

use std::collections::HashMap;

use crate::ast::{Direction, FindKind, Output};
use crate::node_ref::NodeRef;
use crate::value::Value;

use super::fields::{Field, Subject};
use super::pexpr::{AggFunc, Pexpr};

/// Parameter values by name (without the `$`).
pub type Params = HashMap<String, Value>;

/// A compiled condition with the text it was written as.
#[derive(Debug, Clone)]
pub struct Pred {
    /// The compiled expression.
    pub expr: Pexpr,
    /// The expression as the statement wrote it (canonical form).
    pub text: String,
}

/// What a statement does once planned.
#[derive(Debug, Clone)]
pub enum Plan {
    /// TRACE or FORWARD.
    Traverse(TraversePlan),
    /// MATCH.
    Match(MatchPlan),
    /// FIND.
    Find(FindPlan),
    /// SHOW TRACES.
    ShowTraces,
    /// DESCRIBE.
    Describe(DescribePlan),
    /// ATTRIBUTE.
    Attribute(AttributePlan),
    /// EXPLAIN: the plan of the inner statement, printed.
    Explain(Box<Plan>),
    /// SAVE PATTERN: checked, not yet stored.
    SavePattern(SavePatternPlan),
    /// RUN PATTERN: the engine looks the pattern up and fills `body` and `columns`.
    RunPattern(RunPatternPlan),
    /// SHOW PATTERNS.
    ShowPatterns,
    /// SHOW PATTERN name HISTORY.
    ShowPatternHistory(String),
    /// DROP PATTERN.
    DropPattern(String),
}

/// SAVE PATTERN, checked: the body plans with the defaults alone, every
/// parameter it uses has a default, every default is used, and it runs over
/// every trace (no IN TRACE).
#[derive(Debug, Clone)]
pub struct SavePatternPlan {
    /// The pattern's name, as written.
    pub name: String,
    /// The defaults, in written order.
    pub params: Vec<(String, Value)>,
    /// The saved statement printed canonically (what is stored).
    pub text: String,
    /// The saved statement planned with its defaults (proof that it runs).
    pub body: Box<Plan>,
}

/// RUN PATTERN, before and after the engine resolves the pattern.
#[derive(Debug, Clone)]
pub struct RunPatternPlan {
    /// The pattern's name, as written.
    pub name: String,
    /// `OVER TRACES WHERE p`: a predicate on `trace.` fields only.
    pub over: Option<Pred>,
    /// Parameter values given, in written order.
    pub params: Vec<(String, Value)>,
    /// The saved statement planned with the defaults and the values given;
    /// `None` until the engine resolves the pattern (and for built-in patterns).
    pub body: Option<Box<Plan>>,
    /// Result columns; empty until the engine resolves the pattern.
    pub columns: Vec<String>,
}

/// A traversal from one or more starts.
#[derive(Debug, Clone)]
pub struct TraversePlan {
    /// Backward (TRACE) or forward.
    pub direction: Direction,
    /// The starts, parameters substituted.
    pub starts: Vec<NodeRef>,
    /// Only this trace (graph id), else every trace that holds a start.
    pub scope: Option<String>,
    /// Rows at fewer hops than this are not returned (1 unless DEPTH m..n).
    pub min_depth: u32,
    /// No node beyond this many hops.
    pub max_depth: Option<u32>,
    /// Stop at what matches: returned, not expanded.
    pub until: Option<Pred>,
    /// Expand only through what matches.
    pub while_: Option<Pred>,
    /// Filters returned rows.
    pub filter: Option<Pred>,
    /// What is returned.
    pub output: Output,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// The result columns.
    pub columns: Vec<String>,
}

/// What a MATCH pattern variable binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarKind {
    /// A variable (node).
    Node,
    /// An edge (single-hop relationship).
    Edge,
}

/// One pattern variable.
#[derive(Debug, Clone)]
pub struct PatternVar {
    /// Its name (generated `_n` for anonymous nodes).
    pub name: String,
    /// Node or edge.
    pub kind: VarKind,
}

/// A required field value in a pattern (`{category: 'x'}` or the label).
#[derive(Debug, Clone)]
pub struct Constraint {
    /// The field.
    pub field: Field,
    /// The value it must equal.
    pub value: Value,
}

/// One step of a MATCH plan.
#[derive(Debug, Clone)]
pub enum MatchStep {
    /// Binds a node variable to every variable of the trace that fits.
    Scan {
        /// The pattern variable.
        var: usize,
        /// Class name and property constraints.
        constraints: Vec<Constraint>,
    },
    /// Follows edges from a bound node to bind (or check) another.
    Expand {
        /// The bound node.
        from: usize,
        /// The node reached (bound here, or checked when `check` is set).
        to: usize,
        /// The relationship variable, for single hops.
        rel: Option<usize>,
        /// Forward follows edges from source to target.
        direction: Direction,
        /// Constraints on each crossed edge (`kind` is its op's category).
        edge_constraints: Vec<Constraint>,
        /// Fewest hops.
        min_hops: u32,
        /// Most hops (`None`: as far as the graph goes).
        max_hops: Option<u32>,
        /// Constraints on the node reached.
        constraints: Vec<Constraint>,
        /// `to` is already bound: the step checks that it is reachable.
        check: bool,
    },
    /// Drops bindings for which the condition is not true.
    Filter(Pred),
}

/// A MATCH.
#[derive(Debug, Clone)]
pub struct MatchPlan {
    /// The pattern variables.
    pub vars: Vec<PatternVar>,
    /// The steps, in order.
    pub steps: Vec<MatchStep>,
    /// Only this trace.
    pub scope: Option<String>,
    /// What is returned.
    pub projection: Projection,
}

/// A FIND.
#[derive(Debug, Clone)]
pub struct FindPlan {
    /// What is listed.
    pub kind: FindKind,
    /// Only this trace.
    pub scope: Option<String>,
    /// Conditions on `trace.` fields only, checked before a trace is read.
    pub trace_filter: Option<Pred>,
    /// The remaining conditions.
    pub filter: Option<Pred>,
    /// What is returned.
    pub projection: Projection,
}

impl FindPlan {
    /// Makes every output row keep, right after its visible columns, the
    /// keys of the failed case it came from: [`Field::Key`] of the trace
    /// (its dense id) and of the case (its annotation's position, or its
    /// judge op id). This is how an ATTRIBUTE learns which cases, in which
    /// traces, its `FIND cases` subquery (or a saved pattern's) returned;
    /// doing it twice changes nothing.
    ///
    /// Fails, saying why, when the rows are not one case each: a FIND of
    /// something else, or one that groups (GROUP BY, an aggregate) or merges
    /// rows (RETURN DISTINCT).
    pub fn keep_case_keys(&mut self) -> std::result::Result<(), String> {
        if self.kind != FindKind::Cases {
            let what = match self.kind {
                FindKind::Vars => "variables",
                FindKind::Ops => "ops",
                FindKind::Edges => "edges",
                FindKind::Sessions => "sessions",
                FindKind::Traces => "traces",
                FindKind::Attributions => "stored verdicts",
                FindKind::Cases => "cases",
            };
            return Err(format!(
                "FIND {} returns {what}, not failed cases",
                self.kind.keyword()
            ));
        }
        let p = &mut self.projection;
        if p.aggregating {
            return Err(
                "its rows are groups (GROUP BY, or an aggregate such as count(*)), \
                        not cases"
                    .to_string(),
            );
        }
        if p.distinct {
            return Err("RETURN DISTINCT merges its rows, so they are not cases".to_string());
        }
        if p.keys == 0 {
            let visible = p.columns.len();
            p.outputs
                .insert(visible, Pexpr::Field(Subject::Trace, Field::Key));
            p.outputs
                .insert(visible + 1, Pexpr::Field(Subject::Case, Field::Key));
            for (i, _) in &mut p.order {
                if *i >= visible {
                    *i += 2;
                }
            }
            p.keys = 2;
        }
        Ok(())
    }
}

/// DESCRIBE.
#[derive(Debug, Clone)]
pub struct DescribePlan {
    /// The variable or op.
    pub target: NodeRef,
    /// Only this trace.
    pub scope: Option<String>,
}

/// ATTRIBUTE: attribute failed cases, store the verdicts, return them.
#[derive(Debug, Clone)]
pub struct AttributePlan {
    /// Which cases.
    pub cases: CaseSource,
    /// Only this trace (never with a subquery, which picks its own traces).
    pub scope: Option<String>,
    /// The method's name as written; the engine checks that it has it.
    pub method: String,
    /// Byte offset of the method's name in the statement text.
    pub method_at: usize,
    /// `SETTING name` as written (the engine checks it), and its byte
    /// offset; `None` is the benchmark setting (all a case holds).
    pub setting: Option<(String, usize)>,
    /// The result columns.
    pub columns: Vec<String>,
}

/// Which failed cases an ATTRIBUTE attributes.
#[derive(Debug, Clone)]
pub enum CaseSource {
    /// `CASES`: every failed case of the scope.
    All,
    /// The cases named (parameters substituted), looked up in the scope.
    Named(Vec<NodeRef>),
    /// The cases a subquery returns, each attributed in its own trace.
    Query {
        /// A [`Plan::Find`] of cases whose rows keep their case keys
        /// ([`FindPlan::keep_case_keys`]), or a [`Plan::RunPattern`], which
        /// the engine resolves and checks (its hits must be cases).
        plan: Box<Plan>,
        /// Byte offset of the subquery in the statement text.
        at: usize,
    },
}

/// An aggregate computed over each group.
#[derive(Debug, Clone)]
pub struct AggSpec {
    /// The function.
    pub func: AggFunc,
    /// `count(DISTINCT x)` and the like.
    pub distinct: bool,
    /// The argument; `None` for `count(*)`.
    pub arg: Option<Pexpr>,
    /// As written.
    pub text: String,
}

/// How rows become output: grouping, aggregates, columns, order, limit.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The visible column names.
    pub columns: Vec<String>,
    /// The output expressions: the visible columns, then hidden sort keys.
    /// When aggregating they read [`Pexpr::Group`] and [`Pexpr::Agg`].
    pub outputs: Vec<Pexpr>,
    /// Group keys, evaluated per input row (when aggregating).
    pub group_keys: Vec<Pexpr>,
    /// Aggregates (when aggregating).
    pub aggs: Vec<AggSpec>,
    /// Whether rows are grouped.
    pub aggregating: bool,
    /// `DISTINCT`.
    pub distinct: bool,
    /// Sort keys: output column index and descending.
    pub order: Vec<(usize, bool)>,
    /// At most this many rows.
    pub limit: Option<u64>,
    /// Texts for EXPLAIN: group keys, outputs, order.
    pub texts: ProjectionTexts,
    /// How many outputs right after the visible columns every output row
    /// keeps: the trace and case keys of an ATTRIBUTE's `FIND cases`
    /// subquery ([`FindPlan::keep_case_keys`]); 0 for any other projection.
    pub keys: usize,
}

/// The written forms of a projection's parts, for EXPLAIN.
#[derive(Debug, Clone, Default)]
pub struct ProjectionTexts {
    /// GROUP BY keys.
    pub group: Vec<String>,
    /// ORDER BY keys with direction.
    pub order: Vec<String>,
}
