//! How expressions print back to text, with parentheses only where
//! precedence needs them.

use std::fmt::{self, Display, Formatter, Write};

use crate::node_ref::quote;

use super::expr::{CallArg, Expr, FieldPath, Literal, Test};
use super::write::write_name;

impl Display for Literal {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Str(s) => f.write_str(&quote(s)),
            Literal::Int(n) => write!(f, "{n}"),
            Literal::Float(x) => {
                // Debug keeps a fraction or exponent, so it reads back as a float.
                let mut s = String::new();
                write!(s, "{x:?}")?;
                f.write_str(&s)
            }
            Literal::Bool(true) => f.write_str("TRUE"),
            Literal::Bool(false) => f.write_str("FALSE"),
            Literal::Null => f.write_str("NULL"),
        }
    }
}

impl Display for FieldPath {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
                write_name(f, p)?;
            } else {
                f.write_str(p)?;
            }
        }
        Ok(())
    }
}

/// Binding strength, loosest first.
#[derive(PartialEq, PartialOrd, Clone, Copy)]
enum Prec {
    Or,
    And,
    Not,
    Test,
    Operand,
}

impl Expr {
    fn prec(&self) -> Prec {
        match self {
            Expr::Or(_) => Prec::Or,
            Expr::And(_) => Prec::And,
            Expr::Not(_) => Prec::Not,
            Expr::Test(..) => Prec::Test,
            _ => Prec::Operand,
        }
    }

    /// Writes `self`, in parentheses when it binds looser than `min`.
    fn write_at(&self, f: &mut Formatter<'_>, min: Prec) -> fmt::Result {
        if self.prec() < min {
            write!(f, "({self})")
        } else {
            write!(f, "{self}")
        }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Lit(l) => l.fmt(f),
            Expr::Param(p) => write!(f, "${p}"),
            Expr::Field(p) => {
                // A keyword heading a path reads as that keyword where one may
                // stand (`RETURN distinct.x`, `not IS NULL`): such a path goes in
                // parentheses, unless it is longer than the keyword and the
                // keyword cannot be taken for it (`trace.id`).
                let head = p.parts.first().map_or("", String::as_str);
                if crate::keywords::is_reserved(head)
                    && (p.parts.len() == 1 || head.eq_ignore_ascii_case("distinct"))
                {
                    write!(f, "({p})")
                } else {
                    p.fmt(f)
                }
            }
            Expr::List(items) => {
                // Items are operands: a test or a connective goes in parentheses.
                f.write_str("[")?;
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    e.write_at(f, Prec::Operand)?;
                }
                f.write_str("]")
            }
            Expr::Call { name, arg, .. } => {
                write!(f, "{name}(")?;
                match arg {
                    CallArg::None => {}
                    CallArg::Star => f.write_str("*")?,
                    CallArg::Expr { distinct, expr } => {
                        if *distinct {
                            f.write_str("DISTINCT ")?;
                        }
                        expr.fmt(f)?;
                    }
                }
                f.write_str(")")
            }
            Expr::Test(left, test) => {
                left.write_at(f, Prec::Operand)?;
                match test {
                    Test::Cmp(op, r) => {
                        write!(f, " {} ", op.symbol())?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::Contains(r) => {
                        f.write_str(" CONTAINS ")?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::StartsWith(r) => {
                        f.write_str(" STARTS WITH ")?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::Regex { pattern: r, .. } => {
                        f.write_str(" =~ ")?;
                        r.write_at(f, Prec::Operand)
                    }
                    Test::In { negated, list } => {
                        f.write_str(if *negated { " NOT IN " } else { " IN " })?;
                        list.write_at(f, Prec::Operand)
                    }
                    Test::IsNull { negated } => {
                        f.write_str(if *negated { " IS NOT NULL" } else { " IS NULL" })
                    }
                }
            }
            Expr::Not(e) => {
                f.write_str("NOT ")?;
                e.write_at(f, Prec::Not)
            }
            Expr::And(items) => {
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" AND ")?;
                    }
                    // A nested AND keeps its own parentheses, so it reads back as written.
                    e.write_at(f, Prec::Not)?;
                }
                Ok(())
            }
            Expr::Or(items) => {
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" OR ")?;
                    }
                    e.write_at(f, Prec::And)?;
                }
                Ok(())
            }
        }
    }
}
