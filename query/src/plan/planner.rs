//! The planner's state, where its errors point, and the binding of
//! parameters to the values a statement needs (trace ids, counts, starts).

use std::cell::Cell;

use crate::ast::{CountArg, InTrace, Span, Start, TextArg};
use crate::error::QueryError;
use crate::node_ref::{parse_node_ref, NodeRef};
use crate::value::Value;

use super::fields::Subject;
use super::types::{Params, PatternVar};

/// What planning returns: a plan or part of one, else a statement error.
pub(super) type Result<T> = std::result::Result<T, QueryError>;

/// Which subjects a context allows, and the MATCH variables in scope.
pub(super) struct Scope<'a> {
    pub(super) subjects: &'a [Subject],
    pub(super) vars: &'a [PatternVar],
    /// Where aggregates are allowed (RETURN, ORDER BY of a FIND/MATCH).
    pub(super) aggregates: bool,
    /// The subject whose fields may be written bare (`error_type` for
    /// `attribution.error_type`), in a FIND of its records.
    pub(super) bare: Option<Subject>,
}

/// Plans one statement; each part of the language adds its methods to it in
/// its own file.
pub(super) struct Planner<'a> {
    params: &'a Params,
    /// The statement's text, for error positions; empty when not known.
    pub(super) text: &'a str,
    /// The projection being planned groups by its RETURN items without an
    /// aggregate (no GROUP BY), which error messages then name.
    pub(super) implicit_groups: Cell<bool>,
    /// Says when planning is to stop (see [`super::plan_until`]).
    stopped: Option<&'a dyn Fn() -> bool>,
    /// Expressions compiled, to look at `stopped` every [`STOP_CHECK`].
    compiled: Cell<usize>,
}

/// Expressions compiled between two looks at whether planning is to stop.
const STOP_CHECK: usize = 256;

impl<'a> Planner<'a> {
    /// A planner binding `params`, its errors placed in `text`.
    pub(super) fn new(params: &'a Params, text: &'a str) -> Self {
        Planner {
            params,
            text,
            implicit_groups: Cell::new(false),
            stopped: None,
            compiled: Cell::new(0),
        }
    }

    /// The planner, stopping once `stopped` says so.
    pub(super) fn until(mut self, stopped: Option<&'a dyn Fn() -> bool>) -> Self {
        self.stopped = stopped;
        self
    }

    /// `Err(Stopped)` when planning is to stop (looked at every
    /// [`STOP_CHECK`] calls).
    pub(super) fn look(&self) -> Result<()> {
        let n = self.compiled.get() + 1;
        self.compiled.set(n);
        match self.stopped {
            Some(stopped) if n.is_multiple_of(STOP_CHECK) && stopped() => Err(QueryError::Stopped),
            _ => Ok(()),
        }
    }

    /// An error pointing at where `span` starts in the statement text.
    pub(super) fn err(&self, span: Span, message: String) -> QueryError {
        if self.text.is_empty() {
            QueryError::Other(message)
        } else {
            QueryError::at(self.text, span.start, message)
        }
    }

    /// An error about parameter `$name`, placed at its first use: a
    /// parameter is one value however often it is written, so the tree keeps
    /// no place for each use. Without a use in the text, an error without
    /// position.
    pub(super) fn param_err(&self, name: &str, message: String) -> QueryError {
        let found = regex::Regex::new(&format!(r"\${}\b", regex::escape(name)))
            .ok()
            .and_then(|re| re.find(self.text))
            .map(|m| m.start());
        match found {
            Some(at) => QueryError::at(self.text, at, message),
            None => QueryError::Other(message),
        }
    }

    pub(super) fn param(&self, name: &str) -> Result<&Value> {
        self.params.get(name).ok_or_else(|| {
            self.param_err(
                name,
                format!("parameter ${name} is not set (give it a value, e.g. --param {name}=...)"),
            )
        })
    }

    pub(super) fn in_trace(&self, a: &Option<InTrace>) -> Result<Option<String>> {
        match a.as_ref().map(|a| &a.trace) {
            None => Ok(None),
            Some(TextArg::Text(s)) => Ok(Some(s.clone())),
            Some(TextArg::Param(p)) => match self.param(p)? {
                Value::Str(s) => Ok(Some(s.clone())),
                other => Err(self.param_err(
                    p,
                    format!("parameter ${p} must be text (a trace id), not {other}"),
                )),
            },
        }
    }

    pub(super) fn count_arg(&self, a: &Option<CountArg>) -> Result<Option<u64>> {
        match a {
            None => Ok(None),
            Some(CountArg::Value(n)) => Ok(Some(*n)),
            Some(CountArg::Param(p)) => match self.param(p)? {
                Value::Int(n) if *n >= 0 => Ok(Some(*n as u64)),
                other => Err(self.param_err(
                    p,
                    format!(
                        "parameter ${p} must be a count (a whole number, 0 or more), not {other}"
                    ),
                )),
            },
        }
    }

    pub(super) fn start(&self, s: &Start) -> Result<NodeRef> {
        match s {
            Start::Ref(r) => Ok(r.clone()),
            Start::Param(p) => match self.param(p)? {
                Value::Str(s) => parse_node_ref(s).or_else(|_| Ok(NodeRef::Quoted(s.clone()))),
                other => Err(self.param_err(
                    p,
                    format!("parameter ${p} must be text naming a variable or op, not {other}"),
                )),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::test_support::plan_err;

    #[test]
    fn errors_about_parameters_point_at_them() {
        let e = plan_err("TRACE x IN TRACE $t LIMIT $n", &[("t", Value::Int(1))]);
        assert!(
            e.starts_with("invalid statement at line 1, column 18: parameter $t must be text"),
            "{e}"
        );
        let e = plan_err("TRACE x LIMIT $n", &[]);
        assert!(
            e.starts_with("invalid statement at line 1, column 15: parameter $n is not set"),
            "{e}"
        );
        // `$n` is not found inside `$nn`.
        let e = plan_err(
            "FIND vars WHERE var.name = $nn OR var.name = $n",
            &[("nn", Value::Int(1))],
        );
        assert!(
            e.starts_with("invalid statement at line 1, column 46: parameter $n is not set"),
            "{e}"
        );
    }
}
