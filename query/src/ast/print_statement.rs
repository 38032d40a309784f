//! How statements print back to text.

use std::fmt::{self, Display, Formatter};

use crate::node_ref::quote;
use crate::value::Value;

use super::pattern::{Hops, NodePattern, Pattern, Property, RelPattern};
use super::statement::{
    Attribute, AttributeTarget, CaseQuery, CountArg, Depth, Describe, Direction, Find, InTrace,
    Match, OrderItem, ReturnItem, Returns, RunPattern, SavePattern, SortDir, Start, Statement,
    TextArg, Traverse,
};
use super::values::value_literal;
use super::write::{join, write_name};

impl Display for Statement {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Traverse(t) => t.fmt(f),
            Statement::Match(m) => m.fmt(f),
            Statement::Find(x) => x.fmt(f),
            Statement::ShowTraces => f.write_str("SHOW TRACES"),
            Statement::Describe(d) => d.fmt(f),
            Statement::Attribute(a) => a.fmt(f),
            Statement::Explain(s) => write!(f, "EXPLAIN {s}"),
            Statement::SavePattern(s) => s.fmt(f),
            Statement::RunPattern(r) => r.fmt(f),
            Statement::ShowPatterns => f.write_str("SHOW PATTERNS"),
            Statement::ShowPatternHistory(name) => write!(f, "SHOW PATTERN {name} HISTORY"),
            Statement::DropPattern(name) => write!(f, "DROP PATTERN {name}"),
        }
    }
}

/// Writes ` WITH $a = v, $b = w`, or nothing for no parameters.
fn write_params(f: &mut Formatter<'_>, params: &[(String, Value)]) -> fmt::Result {
    for (i, (name, v)) in params.iter().enumerate() {
        f.write_str(if i == 0 { " WITH " } else { ", " })?;
        write!(f, "${name} = {}", value_literal(v))?;
    }
    Ok(())
}

impl Display for SavePattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "SAVE PATTERN {}", self.name)?;
        write_params(f, &self.params)?;
        write!(f, " AS {}", self.body)
    }
}

impl Display for RunPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "RUN PATTERN {}", self.name)?;
        if let Some(p) = &self.over {
            write!(f, " OVER TRACES WHERE {p}")?;
        }
        write_params(f, &self.params)
    }
}

impl Display for TextArg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            TextArg::Text(s) => f.write_str(&quote(s)),
            TextArg::Param(p) => write!(f, "${p}"),
        }
    }
}

impl Display for CountArg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CountArg::Value(n) => write!(f, "{n}"),
            CountArg::Param(p) => write!(f, "${p}"),
        }
    }
}

impl Display for Start {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Start::Ref(r) => r.fmt(f),
            Start::Param(p) => write!(f, "${p}"),
        }
    }
}

fn write_in_trace(f: &mut Formatter<'_>, t: &Option<InTrace>) -> fmt::Result {
    match t {
        Some(t) => write!(f, " IN TRACE {}", t.trace),
        None => Ok(()),
    }
}

fn write_limit(f: &mut Formatter<'_>, l: &Option<CountArg>) -> fmt::Result {
    match l {
        Some(l) => write!(f, " LIMIT {l}"),
        None => Ok(()),
    }
}

fn write_order(f: &mut Formatter<'_>, items: &[OrderItem]) -> fmt::Result {
    if items.is_empty() {
        return Ok(());
    }
    f.write_str(" ORDER BY ")?;
    join(f, items, ", ")
}

impl Display for Traverse {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self.direction {
            Direction::Backward => "TRACE ",
            Direction::Forward => "FORWARD ",
        })?;
        join(f, &self.starts, ", ")?;
        write_in_trace(f, &self.in_trace)?;
        match self.depth {
            Some(Depth::Max(n)) => write!(f, " DEPTH {n}")?,
            Some(Depth::Range(m, n)) => write!(f, " DEPTH {m}..{n}")?,
            None => {}
        }
        if let Some(p) = &self.until {
            write!(f, " UNTIL {p}")?;
        }
        if let Some(p) = &self.while_ {
            write!(f, " WHILE {p}")?;
        }
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        if let Some(o) = self.output {
            write!(f, " RETURN {}", o.keyword())?;
        }
        write_limit(f, &self.limit)
    }
}

fn write_props(f: &mut Formatter<'_>, props: &[Property]) -> fmt::Result {
    if props.is_empty() {
        return Ok(());
    }
    f.write_str(" {")?;
    for (i, p) in props.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{}: {}", p.key.name, p.value)?;
    }
    f.write_str("}")
}

impl Display for NodePattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        if let Some(v) = &self.var {
            f.write_str(&v.name)?;
        }
        if let Some(l) = &self.label {
            f.write_str(":")?;
            write_name(f, l)?;
        }
        write_props(f, &self.props)?;
        f.write_str(")")
    }
}

impl Display for RelPattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(if self.leftward { "<-" } else { "-" })?;
        let body = self.var.is_some()
            || self.label.is_some()
            || self.hops.is_some()
            || !self.props.is_empty();
        if body {
            f.write_str("[")?;
            if let Some(v) = &self.var {
                f.write_str(&v.name)?;
            }
            if let Some(l) = &self.label {
                f.write_str(":")?;
                write_name(f, l)?;
            }
            match self.hops {
                Some(Hops::Exact(n)) => write!(f, "*{n}")?,
                Some(Hops::Range(a, b)) => {
                    f.write_str("*")?;
                    if a.is_some() || b.is_some() {
                        if let Some(a) = a {
                            write!(f, "{a}")?;
                        }
                        f.write_str("..")?;
                        if let Some(b) = b {
                            write!(f, "{b}")?;
                        }
                    }
                }
                None => {}
            }
            write_props(f, &self.props)?;
            f.write_str("]")?;
        }
        f.write_str(if self.leftward { "-" } else { "->" })
    }
}

impl Display for Pattern {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.first.fmt(f)?;
        for (r, n) in &self.steps {
            write!(f, "{r}{n}")?;
        }
        Ok(())
    }
}

impl Display for ReturnItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if let Some(a) = &self.alias {
            write!(f, " AS {a}")?;
        }
        Ok(())
    }
}

impl Display for Returns {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(" RETURN ")?;
        if self.distinct {
            f.write_str("DISTINCT ")?;
        }
        join(f, &self.items, ", ")
    }
}

impl Display for OrderItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        match self.dir {
            SortDir::Default => Ok(()),
            SortDir::Asc => f.write_str(" ASC"),
            SortDir::Desc => f.write_str(" DESC"),
        }
    }
}

impl Display for Match {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("MATCH ")?;
        join(f, &self.patterns, ", ")?;
        write_in_trace(f, &self.in_trace)?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        self.returns.fmt(f)?;
        write_order(f, &self.order_by)?;
        write_limit(f, &self.limit)
    }
}

impl Display for Find {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "FIND {}", self.kind.keyword())?;
        write_in_trace(f, &self.in_trace)?;
        if let Some(p) = &self.filter {
            write!(f, " WHERE {p}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" GROUP BY ")?;
            join(f, &self.group_by, ", ")?;
        }
        if let Some(r) = &self.returns {
            r.fmt(f)?;
        }
        write_order(f, &self.order_by)?;
        write_limit(f, &self.limit)
    }
}

impl Display for Describe {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "DESCRIBE {}", self.target)?;
        write_in_trace(f, &self.in_trace)
    }
}

impl Display for CaseQuery {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            CaseQuery::Find(x) => x.fmt(f),
            CaseQuery::RunPattern(r) => r.fmt(f),
        }
    }
}

impl Display for Attribute {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str("ATTRIBUTE ")?;
        match &self.target {
            AttributeTarget::Cases => f.write_str("CASES")?,
            AttributeTarget::Starts(starts) => join(f, starts, ", ")?,
            AttributeTarget::Query(q) => write!(f, "({})", q.query)?,
        }
        write_in_trace(f, &self.in_trace)?;
        write!(f, " USING {}", self.method)?;
        if let Some((setting, _)) = &self.setting {
            write!(f, " SETTING {setting}")?;
        }
        Ok(())
    }
}
