//! The parameters a statement reads (`$name`), found without planning it.

use crate::ast::{
    AttributeTarget, CallArg, CaseQuery, CountArg, Expr, InTrace, Start, Statement, Test, TextArg,
};

/// The parameters a statement reads (`$name` where a value is expected),
/// without the `$`, in the order they first appear, each once.
///
/// The names a `WITH` gives values to are not read: SAVE PATTERN reads the
/// parameters of its saved statement, RUN PATTERN those of its
/// `OVER TRACES WHERE` condition, EXPLAIN those of its statement.
pub fn statement_params(stmt: &Statement) -> Vec<String> {
    let mut out = Vec::new();
    statement_params_into(stmt, &mut out);
    out
}

fn add_param(out: &mut Vec<String>, name: &str) {
    if !out.iter().any(|n| n == name) {
        out.push(name.to_string());
    }
}

fn statement_params_into(stmt: &Statement, out: &mut Vec<String>) {
    let start = |s: &Start, out: &mut Vec<String>| {
        if let Start::Param(p) = s {
            add_param(out, p);
        }
    };
    let in_trace = |a: &Option<InTrace>, out: &mut Vec<String>| {
        if let Some(TextArg::Param(p)) = a.as_ref().map(|a| &a.trace) {
            add_param(out, p);
        }
    };
    let count_arg = |a: &Option<CountArg>, out: &mut Vec<String>| {
        if let Some(CountArg::Param(p)) = a {
            add_param(out, p);
        }
    };
    let exprs = |items: &mut dyn Iterator<Item = &Expr>, out: &mut Vec<String>| {
        for e in items {
            expr_params_into(e, out);
        }
    };
    match stmt {
        Statement::Traverse(t) => {
            t.starts.iter().for_each(|s| start(s, out));
            in_trace(&t.in_trace, out);
            exprs(
                &mut [&t.until, &t.while_, &t.filter].into_iter().flatten(),
                out,
            );
            count_arg(&t.limit, out);
        }
        Statement::Match(m) => {
            for p in &m.patterns {
                exprs(&mut p.first.props.iter().map(|p| &p.value), out);
                for (r, n) in &p.steps {
                    exprs(&mut r.props.iter().map(|p| &p.value), out);
                    exprs(&mut n.props.iter().map(|p| &p.value), out);
                }
            }
            in_trace(&m.in_trace, out);
            exprs(&mut m.filter.iter(), out);
            exprs(&mut m.returns.items.iter().map(|i| &i.expr), out);
            exprs(&mut m.order_by.iter().map(|o| &o.expr), out);
            count_arg(&m.limit, out);
        }
        Statement::Find(f) => {
            in_trace(&f.in_trace, out);
            exprs(&mut f.filter.iter(), out);
            exprs(&mut f.group_by.iter(), out);
            exprs(
                &mut f.returns.iter().flat_map(|r| &r.items).map(|i| &i.expr),
                out,
            );
            exprs(&mut f.order_by.iter().map(|o| &o.expr), out);
            count_arg(&f.limit, out);
        }
        Statement::Describe(d) => {
            start(&d.target, out);
            in_trace(&d.in_trace, out);
        }
        Statement::Attribute(a) => {
            match &a.target {
                AttributeTarget::Cases => {}
                AttributeTarget::Starts(starts) => starts.iter().for_each(|s| start(s, out)),
                AttributeTarget::Query(q) => match &q.query {
                    CaseQuery::Find(f) => statement_params_into(&Statement::Find(f.clone()), out),
                    CaseQuery::RunPattern(r) => exprs(&mut r.over.iter(), out),
                },
            }
            in_trace(&a.in_trace, out);
        }
        Statement::Explain(inner) => statement_params_into(inner, out),
        Statement::SavePattern(s) => statement_params_into(&s.body, out),
        Statement::RunPattern(r) => exprs(&mut r.over.iter(), out),
        Statement::ShowTraces
        | Statement::ShowPatterns
        | Statement::ShowPatternHistory(_)
        | Statement::DropPattern(_) => {}
    }
}

fn expr_params_into(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Param(p) => add_param(out, p),
        Expr::Lit(_) | Expr::Field(_) => {}
        Expr::List(items) | Expr::And(items) | Expr::Or(items) => {
            items.iter().for_each(|x| expr_params_into(x, out))
        }
        Expr::Call { arg, .. } => {
            if let CallArg::Expr { expr, .. } = arg {
                expr_params_into(expr, out);
            }
        }
        Expr::Test(left, test) => {
            expr_params_into(left, out);
            match test {
                Test::Cmp(_, r)
                | Test::Contains(r)
                | Test::StartsWith(r)
                | Test::Regex { pattern: r, .. }
                | Test::In { list: r, .. } => expr_params_into(r, out),
                Test::IsNull { .. } => {}
            }
        }
        Expr::Not(x) => expr_params_into(x, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_params_lists_what_a_statement_reads_in_order() {
        let params = |text: &str| statement_params(&crate::parse_statement(text).unwrap());
        assert_eq!(
            params("TRACE $s, a:1 IN TRACE $t DEPTH 2 UNTIL var.name = $u WHILE op.kind IN $k WHERE $u = 1 LIMIT $n"),
            ["s", "t", "u", "k", "n"]
        );
        assert_eq!(
            params("MATCH (a {name: $n})-[e {kind: $k}]->(b {category: $c}) IN TRACE $t WHERE a.version > $v RETURN a, $r ORDER BY $o LIMIT $l"),
            ["n", "k", "c", "t", "v", "r", "o", "l"]
        );
        assert_eq!(
            params("FIND vars IN TRACE $t WHERE var.name = $a OR var.name = $a GROUP BY f($g) RETURN count(DISTINCT $c) ORDER BY $o LIMIT $l"),
            ["t", "a", "g", "c", "o", "l"]
        );
        assert_eq!(
            params("FIND vars WHERE NOT var.name IN [$a, $b] AND var.x =~ $r AND var.y STARTS WITH $s AND var.z CONTAINS $c AND var.w IS NULL AND var.v NOT IN $b"),
            ["a", "b", "r", "s", "c"]
        );
        assert_eq!(
            params("SAVE PATTERN p WITH $a = 1 AS FIND vars WHERE var.version = $a"),
            ["a"]
        );
        assert_eq!(
            params("RUN PATTERN p OVER TRACES WHERE trace.id = $t WITH $a = 1"),
            ["t"]
        );
        assert_eq!(params("EXPLAIN DESCRIBE $d IN TRACE $t"), ["d", "t"]);
        assert_eq!(
            params("ATTRIBUTE $c, x:1 IN TRACE $t USING evidence"),
            ["c", "t"]
        );
        assert_eq!(
            params(
                "ATTRIBUTE (FIND cases IN TRACE $t WHERE case.query = $q LIMIT $n) USING evidence"
            ),
            ["t", "q", "n"]
        );
        assert_eq!(
            params(
                "ATTRIBUTE (RUN PATTERN p OVER TRACES WHERE trace.id = $t WITH $a = 1) USING llm"
            ),
            ["t"]
        );
        for text in [
            "SHOW PATTERNS",
            "SHOW TRACES",
            "DROP PATTERN p",
            "SHOW PATTERN p HISTORY",
            "RUN PATTERN p WITH $a = 1",
            "ATTRIBUTE CASES USING evidence",
        ] {
            assert!(params(text).is_empty(), "{text}");
        }
    }
}
