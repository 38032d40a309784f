//! A plan's printed form: the operator tree EXPLAIN shows.

use std::fmt::{self, Display, Formatter};

use crate::ast::{value_literal, Direction, FindKind};
use crate::node_ref::NodeRef;
use crate::value::Value;

use super::types::{
    AttributePlan, CaseSource, Constraint, FindPlan, MatchPlan, MatchStep, Plan, Projection,
    RunPatternPlan, SavePatternPlan, TraversePlan,
};

/// Writes a plan as an indented operator tree, the innermost (first to run) last.
struct Tree {
    lines: Vec<String>,
    /// Added to every depth: a plan inside another one's line.
    base: usize,
}

impl Tree {
    fn push(&mut self, depth: usize, text: String) {
        let depth = depth + self.base;
        let prefix = if depth == 0 {
            String::new()
        } else {
            format!("{}└─ ", "   ".repeat(depth - 1))
        };
        self.lines.push(format!("{prefix}{text}"));
    }
}

fn constraint_text(cs: &[Constraint]) -> String {
    cs.iter()
        .map(|c| {
            let v = match &c.value {
                Value::Str(s) => crate::node_ref::quote(s),
                other => other.to_string(),
            };
            format!("{} = {v}", format!("{:?}", c.field).to_ascii_lowercase())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Plan {
    /// The plan as lines of an operator tree (what EXPLAIN returns).
    pub fn explain(&self) -> Vec<String> {
        let mut t = Tree {
            lines: Vec::new(),
            base: 0,
        };
        self.explain_into(&mut t);
        t.lines
    }

    fn projection_lines(t: &mut Tree, p: &Projection, depth: &mut usize) {
        if let Some(n) = p.limit {
            t.push(*depth, format!("Limit {n}"));
            *depth += 1;
        }
        if !p.order.is_empty() {
            t.push(*depth, format!("Sort by {}", p.texts.order.join(", ")));
            *depth += 1;
        }
        if p.distinct {
            t.push(*depth, "Distinct".into());
            *depth += 1;
        }
        t.push(*depth, format!("Project {}", p.columns.join(", ")));
        *depth += 1;
        if p.aggregating {
            let aggs: Vec<&str> = p.aggs.iter().map(|a| a.text.as_str()).collect();
            let keys = if p.texts.group.is_empty() {
                "one group".to_string()
            } else {
                format!("group by {}", p.texts.group.join(", "))
            };
            t.push(*depth, format!("Aggregate {}; {keys}", aggs.join(", ")));
            *depth += 1;
        }
    }

    fn explain_into(&self, t: &mut Tree) {
        match self {
            Plan::Explain(inner) => inner.explain_into(t),
            Plan::SavePattern(s) => save_pattern_lines(t, s),
            Plan::RunPattern(r) => run_pattern_lines(t, r),
            Plan::ShowPatterns => t.push(0, "Show patterns".into()),
            Plan::ShowPatternHistory(name) => t.push(0, format!("Show history of pattern {name}")),
            Plan::DropPattern(name) => t.push(0, format!("Drop pattern {name}")),
            Plan::ShowTraces => t.push(0, "Scan trace records".into()),
            Plan::Describe(d) => {
                t.push(0, "Describe: op subgraphs grouped by edge category".into());
                t.push(1, format!("Resolve {} {}", d.target, scope_text(&d.scope)));
            }
            Plan::Attribute(a) => attribute_lines(t, a),
            Plan::Traverse(p) => traverse_lines(t, p),
            Plan::Find(f) => find_lines(t, f),
            Plan::Match(m) => match_lines(t, m),
        }
    }
}

/// A plan shown inside another one's line, `levels` deeper.
fn nested_lines(t: &mut Tree, levels: usize, plan: &Plan) {
    t.base += levels;
    plan.explain_into(t);
    t.base -= levels;
}

fn save_pattern_lines(t: &mut Tree, s: &SavePatternPlan) {
    let n = s.params.len();
    let params = if n == 0 {
        "no parameters".to_string()
    } else {
        format!(
            "{n} parameter{}: {}",
            if n == 1 { "" } else { "s" },
            params_text(&s.params)
        )
    };
    t.push(0, format!("Save pattern {} ({params})", s.name));
    nested_lines(t, 1, &s.body);
}

fn run_pattern_lines(t: &mut Tree, r: &RunPatternPlan) {
    let mut line = format!("Run pattern {}", r.name);
    match &r.over {
        Some(p) => line.push_str(&format!(" over traces where {}", p.text)),
        None => line.push_str(" over every trace"),
    }
    if !r.params.is_empty() {
        line.push_str(&format!(" with {}", params_text(&r.params)));
    }
    t.push(0, line);
    if let Some(body) = &r.body {
        nested_lines(t, 1, body);
    }
}

fn attribute_lines(t: &mut Tree, a: &AttributePlan) {
    t.push(0, format!("Project {}", a.columns.join(", ")));
    t.push(
        1,
        "Store verdicts as 'query' (a finding already stored is skipped)".into(),
    );
    let traces = match &a.scope {
        Some(s) => format!("of trace '{s}'"),
        None => "of every trace".to_string(),
    };
    let cases = match &a.cases {
        CaseSource::All => {
            format!("Every failed case {traces} (annotations, else llm-judge ops that scored 0)")
        }
        CaseSource::Named(refs) => {
            let names: Vec<String> = refs.iter().map(|r| r.to_string()).collect();
            format!(
                "Failed cases {} (query variable, node id or judge op id) {traces}",
                names.join(", ")
            )
        }
        CaseSource::Query { plan, .. } => {
            t.push(
                2,
                format!("Attribute each case in its own trace using {}", a.method),
            );
            t.push(
                3,
                match plan.as_ref() {
                    Plan::RunPattern(_) => {
                        "The failed cases the pattern's hits name, each once, \
                         in trace order"
                    }
                    _ => "The failed cases of the subquery's rows, each once, in its order",
                }
                .to_string(),
            );
            nested_lines(t, 4, plan);
            return;
        }
    };
    let setting = match &a.setting {
        Some((s, _)) => format!(" in the {s} setting"),
        None => String::new(),
    };
    t.push(
        2,
        format!("Attribute each case using {}{setting}", a.method),
    );
    t.push(3, cases);
}

fn traverse_lines(t: &mut Tree, p: &TraversePlan) {
    let mut depth = 0;
    if let Some(n) = p.limit {
        t.push(depth, format!("Limit {n}"));
        depth += 1;
    }
    t.push(
        depth,
        format!("Project {}: {}", p.output.keyword(), p.columns.join(", ")),
    );
    depth += 1;
    if let Some(f) = &p.filter {
        t.push(depth, format!("Filter {}", f.text));
        depth += 1;
    }
    t.push(depth, walk_text(p));
    depth += 1;
    let starts: Vec<String> = p.starts.iter().map(start_text).collect();
    t.push(
        depth,
        format!(
            "Resolve starts {} {}",
            starts.join(", "),
            scope_text(&p.scope)
        ),
    );
}

/// The walk line of a traversal: direction, depth range, WHILE and UNTIL.
fn walk_text(p: &TraversePlan) -> String {
    let dir = match p.direction {
        Direction::Backward => "backward (incoming edges)",
        Direction::Forward => "forward (outgoing edges)",
    };
    let hops = match (p.min_depth, p.max_depth) {
        (1, None) => "any depth".to_string(),
        (1, Some(n)) => format!("depth 1..{n}"),
        (m, None) => format!("depth {m}.."),
        (m, Some(n)) => format!("depth {m}..{n}"),
    };
    let mut walk = format!("Walk {dir} over cached CSR adjacency, {hops}");
    if let Some(w) = &p.while_ {
        walk.push_str(&format!(", through {}", w.text));
    }
    if let Some(u) = &p.until {
        walk.push_str(&format!(", stop at {}", u.text));
    }
    walk
}

fn find_lines(t: &mut Tree, f: &FindPlan) {
    let mut depth = 0;
    Plan::projection_lines(t, &f.projection, &mut depth);
    if let Some(w) = &f.filter {
        t.push(depth, format!("Filter {}", w.text));
        depth += 1;
    }
    let scan = match f.kind {
        FindKind::Cases => "Scan cases of each trace (its annotations, else its \
                            llm-judge ops that scored 0)"
            .to_string(),
        FindKind::Attributions => {
            "Scan stored attributions of each trace, oldest first".to_string()
        }
        kind => format!("Scan {} of each trace (cached catalog)", kind.keyword()),
    };
    t.push(depth, scan);
    depth += 1;
    let mut traces = match &f.scope {
        Some(s) => format!("Trace '{s}'"),
        None => "Every trace".to_string(),
    };
    if let Some(w) = &f.trace_filter {
        traces.push_str(&format!(" where {}", w.text));
    }
    t.push(depth, traces);
}

fn match_lines(t: &mut Tree, m: &MatchPlan) {
    let mut depth = 0;
    Plan::projection_lines(t, &m.projection, &mut depth);
    for step in m.steps.iter().rev() {
        t.push(depth, match_step_text(m, step));
        depth += 1;
    }
    t.push(
        depth,
        match &m.scope {
            Some(s) => format!("Trace '{s}'"),
            None => "Every trace".to_string(),
        },
    );
}

/// One MATCH step's line: a filter, a scan, or an expansion along edges.
fn match_step_text(m: &MatchPlan, step: &MatchStep) -> String {
    let name = |i: usize| m.vars[i].name.clone();
    match step {
        MatchStep::Filter(p) => format!("Filter {}", p.text),
        MatchStep::Scan { var, constraints } => {
            let c = constraint_text(constraints);
            format!(
                "Scan vars as ({}){}",
                name(*var),
                if c.is_empty() {
                    String::new()
                } else {
                    format!(" where {c}")
                }
            )
        }
        MatchStep::Expand {
            from,
            to,
            rel,
            direction,
            edge_constraints,
            min_hops,
            max_hops,
            constraints,
            check,
        } => {
            let dir = match direction {
                Direction::Forward => "forward",
                Direction::Backward => "backward",
            };
            let hops = match (min_hops, max_hops) {
                (1, Some(1)) => "1 hop".to_string(),
                (a, Some(b)) if a == b => format!("{a} hops"),
                (a, Some(b)) => format!("{a}..{b} hops"),
                (a, None) => format!("{a}.. hops"),
            };
            let mut s = format!(
                "{} ({}) {dir} {hops} to ({})",
                if *check { "Check" } else { "Expand" },
                name(*from),
                name(*to)
            );
            if let Some(r) = rel {
                s.push_str(&format!(" binding [{}]", name(*r)));
            }
            let ec = constraint_text(edge_constraints);
            if !ec.is_empty() {
                s.push_str(&format!(", edges where {ec}"));
            }
            let nc = constraint_text(constraints);
            if !nc.is_empty() {
                s.push_str(&format!(", nodes where {nc}"));
            }
            s
        }
    }
}

/// `$a = 1, $b = 'x'`.
fn params_text(params: &[(String, Value)]) -> String {
    params
        .iter()
        .map(|(n, v)| format!("${n} = {}", value_literal(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn start_text(r: &NodeRef) -> String {
    match r {
        NodeRef::Name { version: None, .. } => format!("{r} (latest version, or an op id)"),
        NodeRef::Name { .. } => r.to_string(),
        NodeRef::Quoted(_) => format!("{r} (node id, full name or op id)"),
    }
}

fn scope_text(scope: &Option<String>) -> String {
    match scope {
        Some(s) => format!("in trace '{s}'"),
        None => "in every trace that holds them".to_string(),
    }
}

impl Display for Plan {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for line in self.explain() {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::test_support::plan_of;

    #[test]
    fn pattern_plans_explain_themselves() {
        assert_eq!(
            plan_of(
                "SAVE PATTERN big WITH $min = 20 AS FIND vars WHERE var.version >= $min",
                &[]
            )
            .explain(),
            [
                "Save pattern big (1 parameter: $min = 20)",
                "└─ Project trace, node, category, session",
                "   └─ Filter var.version >= $min",
                "      └─ Scan vars of each trace (cached catalog)",
                "         └─ Every trace",
            ]
        );
        assert_eq!(
            plan_of("SAVE PATTERN p AS FIND traces", &[]).explain()[0],
            "Save pattern p (no parameters)"
        );
        assert_eq!(
            plan_of(
                "SAVE PATTERN p WITH $a = 1.0, $b = 'it''s' AS FIND vars WHERE var.version = $a OR var.name = $b",
                &[]
            )
            .explain()[0],
            "Save pattern p (2 parameters: $a = 1.0, $b = 'it''s')"
        );
        let run = plan_of(
            "RUN PATTERN big OVER TRACES WHERE trace.source = 'x' WITH $min = 5, $c = ['a']",
            &[],
        );
        assert_eq!(
            run.explain(),
            ["Run pattern big over traces where trace.source = 'x' with $min = 5, $c = ['a']"]
        );
        // Once the engine has resolved the pattern, its plan shows below.
        let Plan::RunPattern(mut r) = run else {
            panic!("not a RUN PATTERN plan")
        };
        r.body = Some(Box::new(plan_of("FIND traces LIMIT 2", &[])));
        assert_eq!(
            Plan::RunPattern(r).explain(),
            [
                "Run pattern big over traces where trace.source = 'x' with $min = 5, $c = ['a']",
                "└─ Limit 2",
                "   └─ Project trace, user_id, project_id, created_at",
                "      └─ Scan traces of each trace (cached catalog)",
                "         └─ Every trace",
            ]
        );
        assert_eq!(
            plan_of("RUN PATTERN p", &[]).explain(),
            ["Run pattern p over every trace"]
        );
        assert_eq!(plan_of("SHOW PATTERNS", &[]).explain(), ["Show patterns"]);
        assert_eq!(
            plan_of("SHOW PATTERN big HISTORY", &[]).explain(),
            ["Show history of pattern big"]
        );
        assert_eq!(
            plan_of("DROP PATTERN big", &[]).explain(),
            ["Drop pattern big"]
        );
    }
}
