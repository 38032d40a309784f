//! Statements with their spans cleared, for tests that compare trees read
//! from different texts (a statement and its printed form).

use super::*;

/// `stmt` with every span set to `0..0`, as in a statement built in code.
pub(crate) fn without_spans(stmt: &Statement) -> Statement {
    let mut stmt = stmt.clone();
    stmt.clear_spans();
    stmt
}

/// Sets every span in a tree to `0..0`.
trait ClearSpans {
    fn clear_spans(&mut self);
}

impl<T: ClearSpans> ClearSpans for Option<T> {
    fn clear_spans(&mut self) {
        if let Some(x) = self {
            x.clear_spans();
        }
    }
}

impl<T: ClearSpans> ClearSpans for Vec<T> {
    fn clear_spans(&mut self) {
        self.iter_mut().for_each(ClearSpans::clear_spans);
    }
}

impl<T: ClearSpans> ClearSpans for Box<T> {
    fn clear_spans(&mut self) {
        self.as_mut().clear_spans();
    }
}

impl ClearSpans for Span {
    fn clear_spans(&mut self) {
        *self = Span::default();
    }
}

impl ClearSpans for Statement {
    fn clear_spans(&mut self) {
        match self {
            Statement::Traverse(t) => {
                t.in_trace.clear_spans();
                t.until.clear_spans();
                t.while_.clear_spans();
                t.filter.clear_spans();
            }
            Statement::Match(m) => {
                m.patterns.clear_spans();
                m.in_trace.clear_spans();
                m.filter.clear_spans();
                m.returns.clear_spans();
                m.order_by.clear_spans();
            }
            Statement::Find(f) => f.clear_spans(),
            Statement::Describe(d) => d.in_trace.clear_spans(),
            Statement::Attribute(a) => {
                if let AttributeTarget::Query(q) = &mut a.target {
                    q.span.clear_spans();
                    match &mut q.query {
                        CaseQuery::Find(f) => f.clear_spans(),
                        CaseQuery::RunPattern(r) => r.over.clear_spans(),
                    }
                }
                a.in_trace.clear_spans();
                a.method_span.clear_spans();
                if let Some((_, span)) = &mut a.setting {
                    span.clear_spans();
                }
            }
            Statement::Explain(s) => s.clear_spans(),
            Statement::SavePattern(s) => s.body.clear_spans(),
            Statement::RunPattern(r) => r.over.clear_spans(),
            Statement::ShowTraces
            | Statement::ShowPatterns
            | Statement::ShowPatternHistory(_)
            | Statement::DropPattern(_) => {}
        }
    }
}

impl ClearSpans for Find {
    fn clear_spans(&mut self) {
        self.in_trace.clear_spans();
        self.filter.clear_spans();
        self.group_by.clear_spans();
        self.returns.clear_spans();
        self.order_by.clear_spans();
    }
}

impl ClearSpans for InTrace {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
    }
}

impl ClearSpans for Ident {
    fn clear_spans(&mut self) {
        self.span.clear_spans();
    }
}

impl ClearSpans for Property {
    fn clear_spans(&mut self) {
        self.key.clear_spans();
        self.value.clear_spans();
    }
}

impl ClearSpans for NodePattern {
    fn clear_spans(&mut self) {
        self.var.clear_spans();
        self.props.clear_spans();
    }
}

impl ClearSpans for RelPattern {
    fn clear_spans(&mut self) {
        self.var.clear_spans();
        self.props.clear_spans();
    }
}

impl ClearSpans for Pattern {
    fn clear_spans(&mut self) {
        self.first.clear_spans();
        for (rel, node) in &mut self.steps {
            rel.clear_spans();
            node.clear_spans();
        }
    }
}

impl ClearSpans for Returns {
    fn clear_spans(&mut self) {
        for item in &mut self.items {
            item.expr.clear_spans();
        }
    }
}

impl ClearSpans for OrderItem {
    fn clear_spans(&mut self) {
        self.expr.clear_spans();
    }
}

impl ClearSpans for Expr {
    fn clear_spans(&mut self) {
        match self {
            Expr::Lit(_) | Expr::Param(_) => {}
            Expr::Field(f) => f.span.clear_spans(),
            Expr::List(items) | Expr::And(items) | Expr::Or(items) => items.clear_spans(),
            Expr::Call { arg, span, .. } => {
                span.clear_spans();
                if let CallArg::Expr { expr, .. } = arg {
                    expr.clear_spans();
                }
            }
            Expr::Test(left, test) => {
                left.clear_spans();
                match test {
                    Test::Cmp(_, r) | Test::Contains(r) | Test::StartsWith(r) => r.clear_spans(),
                    Test::In { list, .. } => list.clear_spans(),
                    Test::Regex {
                        pattern,
                        operator,
                        pattern_span,
                    } => {
                        pattern.clear_spans();
                        operator.clear_spans();
                        pattern_span.clear_spans();
                    }
                    Test::IsNull { .. } => {}
                }
            }
            Expr::Not(x) => x.clear_spans(),
        }
    }
}
