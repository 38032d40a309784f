//! What planning reads off written expressions: positions, aggregates,
//! conjuncts and the field paths they use.

use crate::ast::{CallArg, Expr, FieldPath, Span, Test};

use super::pexpr::AggFunc;

/// Where an expression's first field or call was written, which errors
/// about the expression point at; the start of the text when it has none.
pub(super) fn expr_span(e: &Expr) -> Span {
    match e {
        Expr::Field(f) => f.span,
        Expr::Call { span, .. } => *span,
        Expr::Test(l, _) => expr_span(l),
        Expr::Not(x) => expr_span(x),
        Expr::And(v) | Expr::Or(v) | Expr::List(v) => v.first().map(expr_span).unwrap_or_default(),
        _ => Span::default(),
    }
}

pub(super) fn contains_agg(e: &Expr) -> bool {
    match e {
        Expr::Call { name, arg, .. } => {
            AggFunc::from_name(&name.to_ascii_lowercase()).is_some()
                || matches!(arg, CallArg::Expr { expr, .. } if contains_agg(expr))
        }
        Expr::Test(l, t) => {
            contains_agg(l)
                || match t {
                    Test::Cmp(_, r)
                    | Test::Contains(r)
                    | Test::StartsWith(r)
                    | Test::Regex { pattern: r, .. }
                    | Test::In { list: r, .. } => contains_agg(r),
                    Test::IsNull { .. } => false,
                }
        }
        Expr::Not(x) => contains_agg(x),
        Expr::And(v) | Expr::Or(v) | Expr::List(v) => v.iter().any(contains_agg),
        _ => false,
    }
}

pub(super) fn conjuncts(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::And(items) => items.iter().flat_map(conjuncts).collect(),
        other => vec![other.clone()],
    }
}

pub(super) fn visit_fields(e: &Expr, f: &mut dyn FnMut(&FieldPath)) {
    match e {
        Expr::Field(p) => f(p),
        Expr::Call {
            arg: CallArg::Expr { expr, .. },
            ..
        } => visit_fields(expr, f),
        Expr::Test(l, t) => {
            visit_fields(l, f);
            match t {
                Test::Cmp(_, r)
                | Test::Contains(r)
                | Test::StartsWith(r)
                | Test::Regex { pattern: r, .. }
                | Test::In { list: r, .. } => visit_fields(r, f),
                Test::IsNull { .. } => {}
            }
        }
        Expr::Not(x) => visit_fields(x, f),
        Expr::And(v) | Expr::Or(v) | Expr::List(v) => v.iter().for_each(|x| visit_fields(x, f)),
        _ => {}
    }
}

pub(super) fn only_subject(e: &Expr, subject: &str) -> bool {
    let mut all = true;
    let mut any = false;
    visit_fields(e, &mut |p| {
        any = true;
        all &= p.parts[0] == subject;
    });
    any && all
}
