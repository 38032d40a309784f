//! Statements and their clauses.

use pest::iterators::Pair;

use crate::ast::{
    literal_value, Attribute, AttributeTarget, CaseQuery, CountArg, Depth, Describe, Direction,
    Expr, Find, FindKind, InTrace, Match, OrderItem, Output, ReturnItem, Returns, RunPattern,
    SavePattern, SortDir, Start, Statement, Subquery, TextArg, Traverse,
};
use crate::error::QueryError;
use crate::grammar::Rule;
use crate::node_ref::{from_pair as reference_from_pair, unquote};
use crate::value::Value;

use super::reader::{bug, param_name, span_of, Reader, Result};

impl Reader<'_> {
    pub(super) fn statement(&self, pair: Pair<'_, Rule>) -> Result<Statement> {
        let inner = match pair.as_rule() {
            Rule::statement => pair.into_inner().next().ok_or_else(|| bug("statement"))?,
            _ => pair,
        };
        match inner.as_rule() {
            Rule::explain => {
                let s = inner
                    .into_inner()
                    .find(|p| p.as_rule() != Rule::kw_explain)
                    .ok_or_else(|| bug("EXPLAIN"))?;
                Ok(Statement::Explain(Box::new(self.statement(s)?)))
            }
            Rule::traverse => self.traverse(inner).map(Statement::Traverse),
            Rule::match_stmt => self.match_stmt(inner).map(Statement::Match),
            Rule::find => self.find(inner).map(Statement::Find),
            Rule::attribute => self.attribute(inner).map(Statement::Attribute),
            Rule::show_traces => Ok(Statement::ShowTraces),
            Rule::save_pattern => self.save_pattern(inner).map(Statement::SavePattern),
            Rule::run_pattern => self.run_pattern(inner).map(Statement::RunPattern),
            Rule::show_patterns => Ok(Statement::ShowPatterns),
            Rule::show_history => self.pattern_name(inner).map(Statement::ShowPatternHistory),
            Rule::drop_pattern => self.pattern_name(inner).map(Statement::DropPattern),
            Rule::describe => {
                let mut target = None;
                let mut in_trace = None;
                for p in inner.into_inner() {
                    match p.as_rule() {
                        Rule::param => target = Some(Start::Param(param_name(&p))),
                        Rule::reference => {
                            target = Some(Start::Ref(reference_from_pair(self.text, p)?))
                        }
                        Rule::in_trace => in_trace = Some(self.in_trace(p)?),
                        _ => {}
                    }
                }
                Ok(Statement::Describe(Describe {
                    target: target.ok_or_else(|| bug("DESCRIBE"))?,
                    in_trace,
                }))
            }
            _ => Err(bug("statement")),
        }
    }

    pub(super) fn in_trace(&self, pair: Pair<'_, Rule>) -> Result<InTrace> {
        let span = span_of(&pair);
        for p in pair.into_inner() {
            let trace = match p.as_rule() {
                Rule::string => TextArg::Text(unquote(p)),
                Rule::param => TextArg::Param(param_name(&p)),
                _ => continue,
            };
            return Ok(InTrace { trace, span });
        }
        Err(bug("IN TRACE"))
    }

    pub(super) fn int<T: TryFrom<u64>>(&self, pair: &Pair<'_, Rule>, what: &str) -> Result<T> {
        pair.as_str()
            .parse::<u64>()
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| self.err(pair, format!("{what} {} is too large", pair.as_str())))
    }

    pub(super) fn limit(&self, pair: Pair<'_, Rule>) -> Result<CountArg> {
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::int => return Ok(CountArg::Value(self.int(&p, "LIMIT")?)),
                Rule::param => return Ok(CountArg::Param(param_name(&p))),
                _ => {}
            }
        }
        Err(bug("LIMIT"))
    }

    pub(super) fn clause_expr(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let e = pair
            .into_inner()
            .find(|p| p.as_rule() == Rule::expr)
            .ok_or_else(|| bug("clause"))?;
        self.expr(e)
    }

    pub(super) fn traverse(&self, pair: Pair<'_, Rule>) -> Result<Traverse> {
        let mut t = Traverse {
            direction: Direction::Backward,
            starts: Vec::new(),
            in_trace: None,
            depth: None,
            until: None,
            while_: None,
            filter: None,
            output: None,
            limit: None,
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::direction => {
                    let kw = p.into_inner().next().ok_or_else(|| bug("direction"))?;
                    t.direction = if kw.as_rule() == Rule::kw_forward {
                        Direction::Forward
                    } else {
                        Direction::Backward
                    };
                }
                Rule::starts => t.starts = self.starts(p)?,
                Rule::in_trace => t.in_trace = Some(self.in_trace(p)?),
                Rule::depth => {
                    let d = p
                        .into_inner()
                        .find(|x| x.as_rule() != Rule::kw_depth)
                        .ok_or_else(|| bug("DEPTH"))?;
                    t.depth = Some(match d.as_rule() {
                        Rule::depth_range => {
                            let ints: Vec<Pair<'_, Rule>> = d.clone().into_inner().collect();
                            let (a, b) = match ints.as_slice() {
                                [a, b] => (self.int(a, "DEPTH")?, self.int(b, "DEPTH")?),
                                _ => return Err(bug("DEPTH range")),
                            };
                            if a > b {
                                return Err(self.err(
                                    &d,
                                    format!("DEPTH {a}..{b} is empty: the lower bound is above the upper"),
                                ));
                            }
                            Depth::Range(a, b)
                        }
                        _ => Depth::Max(self.int(&d, "DEPTH")?),
                    });
                }
                Rule::until => t.until = Some(self.clause_expr(p)?),
                Rule::while_clause => t.while_ = Some(self.clause_expr(p)?),
                Rule::where_clause => t.filter = Some(self.clause_expr(p)?),
                Rule::return_kind => {
                    let o = p
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::output)
                        .ok_or_else(|| bug("RETURN"))?;
                    t.output = Some(match o.as_str().to_ascii_lowercase().as_str() {
                        "nodes" => Output::Nodes,
                        "ops" => Output::Ops,
                        "edges" => Output::Edges,
                        "subgraph" => Output::Subgraph,
                        "paths" => Output::Paths,
                        _ => Output::Count,
                    });
                }
                Rule::limit => t.limit = Some(self.limit(p)?),
                _ => {}
            }
        }
        Ok(t)
    }

    pub(super) fn starts(&self, pair: Pair<'_, Rule>) -> Result<Vec<Start>> {
        let mut out = Vec::new();
        for s in pair.into_inner() {
            let s = s.into_inner().next().ok_or_else(|| bug("start"))?;
            out.push(match s.as_rule() {
                Rule::param => Start::Param(param_name(&s)),
                _ => Start::Ref(reference_from_pair(self.text, s)?),
            });
        }
        Ok(out)
    }

    pub(super) fn attribute(&self, pair: Pair<'_, Rule>) -> Result<Attribute> {
        let mut target = None;
        let mut in_trace = None;
        let mut method = None;
        let mut setting = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::all_cases => target = Some(AttributeTarget::Cases),
                Rule::no_target => {
                    let at = p.as_span().start();
                    let word: String = self.text[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    return Err(QueryError::syntax_at(
                        self.text,
                        at,
                        format!(
                            "expected CASES, a variable or op reference or a subquery \
                             such as (FIND cases ...), found '{word}'"
                        ),
                    ));
                }
                Rule::starts => target = Some(AttributeTarget::Starts(self.starts(p)?)),
                Rule::subquery => {
                    target = Some(AttributeTarget::Query(Box::new(self.subquery(p)?)))
                }
                Rule::in_trace => {
                    if let Some(AttributeTarget::Query(q)) = &target {
                        let how = match q.query {
                            CaseQuery::Find(_) => {
                                "write it inside: ATTRIBUTE (FIND cases IN TRACE 'id' ...) USING ..."
                            }
                            CaseQuery::RunPattern(_) => {
                                "pick the trace inside: ATTRIBUTE (RUN PATTERN name OVER TRACES \
                                 WHERE trace.id = 'id') USING ..."
                            }
                        };
                        return Err(self.err(
                            &p,
                            format!("IN TRACE does not follow a subquery, which picks its own traces; {how}"),
                        ));
                    }
                    in_trace = Some(self.in_trace(p)?)
                }
                Rule::method => {
                    method = Some((p.as_str().to_string(), span_of(&p)));
                }
                Rule::setting => {
                    setting = p
                        .into_inner()
                        .find(|x| x.as_rule() == Rule::setting_name)
                        .map(|x| (x.as_str().to_string(), span_of(&x)));
                }
                _ => {}
            }
        }
        let (method, method_span) = method.ok_or_else(|| bug("USING"))?;
        Ok(Attribute {
            target: target.ok_or_else(|| bug("ATTRIBUTE"))?,
            in_trace,
            method,
            method_span,
            setting,
        })
    }

    /// `( FIND ... )` or `( RUN PATTERN ... )` after ATTRIBUTE.
    pub(super) fn subquery(&self, pair: Pair<'_, Rule>) -> Result<Subquery> {
        let inner = pair
            .into_inner()
            .find(|p| matches!(p.as_rule(), Rule::find | Rule::run_pattern))
            .ok_or_else(|| bug("subquery"))?;
        let span = span_of(&inner);
        let query = match inner.as_rule() {
            Rule::find => CaseQuery::Find(self.find(inner)?),
            _ => CaseQuery::RunPattern(self.run_pattern(inner)?),
        };
        Ok(Subquery { query, span })
    }

    /// The name of a pattern statement (the grammar keeps keywords out of it).
    pub(super) fn pattern_name(&self, pair: Pair<'_, Rule>) -> Result<String> {
        pair.into_inner()
            .find(|p| p.as_rule() == Rule::pattern_name)
            .map(|p| p.as_str().to_string())
            .ok_or_else(|| bug("pattern name"))
    }

    pub(super) fn save_pattern(&self, pair: Pair<'_, Rule>) -> Result<SavePattern> {
        let mut name = None;
        let mut params = Vec::new();
        let mut body = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::pattern_name => name = Some(p.as_str().to_string()),
                Rule::pattern_params => params = self.pattern_params(p)?,
                Rule::pattern_body => {
                    let s = p.into_inner().next().ok_or_else(|| bug("pattern body"))?;
                    body = Some(Box::new(self.statement(s)?));
                }
                _ => {}
            }
        }
        Ok(SavePattern {
            name: name.ok_or_else(|| bug("SAVE PATTERN"))?,
            params,
            body: body.ok_or_else(|| bug("SAVE PATTERN"))?,
        })
    }

    pub(super) fn run_pattern(&self, pair: Pair<'_, Rule>) -> Result<RunPattern> {
        let mut name = None;
        let mut over = None;
        let mut params = Vec::new();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::pattern_name => name = Some(p.as_str().to_string()),
                Rule::over_traces => over = Some(self.clause_expr(p)?),
                Rule::pattern_params => params = self.pattern_params(p)?,
                _ => {}
            }
        }
        Ok(RunPattern {
            name: name.ok_or_else(|| bug("RUN PATTERN"))?,
            over,
            params,
        })
    }

    /// `WITH $a = value, ...`: each parameter once.
    pub(super) fn pattern_params(&self, pair: Pair<'_, Rule>) -> Result<Vec<(String, Value)>> {
        let mut out: Vec<(String, Value)> = Vec::new();
        for item in pair
            .into_inner()
            .filter(|p| p.as_rule() == Rule::pattern_param)
        {
            let mut name = None;
            let mut value = None;
            for p in item.into_inner() {
                match p.as_rule() {
                    Rule::param => {
                        let n = param_name(&p);
                        if out.iter().any(|(seen, _)| *seen == n) {
                            return Err(self.err(
                                &p,
                                format!(
                                    "parameter ${n} is given twice; give each parameter one value"
                                ),
                            ));
                        }
                        name = Some(n);
                    }
                    Rule::param_value => value = Some(self.param_value(p)?),
                    _ => {}
                }
            }
            match (name, value) {
                (Some(n), Some(v)) => out.push((n, v)),
                _ => return Err(bug("WITH parameter")),
            }
        }
        Ok(out)
    }

    /// A literal or a list of literals, as a value.
    pub(super) fn param_value(&self, pair: Pair<'_, Rule>) -> Result<Value> {
        let inner = pair.into_inner().next().ok_or_else(|| bug("value"))?;
        match inner.as_rule() {
            Rule::value_list => inner
                .into_inner()
                .map(|l| self.literal(l).map(|l| literal_value(&l)))
                .collect::<Result<Vec<_>>>()
                .map(Value::List),
            _ => self.literal(inner).map(|l| literal_value(&l)),
        }
    }

    pub(super) fn returns(&self, pair: Pair<'_, Rule>) -> Result<Returns> {
        let mut r = Returns {
            distinct: false,
            items: Vec::new(),
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::distinct => r.distinct = true,
                Rule::ret_item => {
                    let mut expr = None;
                    let mut alias = None;
                    for x in p.into_inner() {
                        match x.as_rule() {
                            Rule::expr => expr = Some(self.expr(x)?),
                            Rule::ident => alias = Some(x.as_str().to_string()),
                            _ => {}
                        }
                    }
                    r.items.push(ReturnItem {
                        expr: expr.ok_or_else(|| bug("RETURN item"))?,
                        alias,
                    });
                }
                _ => {}
            }
        }
        Ok(r)
    }

    pub(super) fn order_by(&self, pair: Pair<'_, Rule>) -> Result<Vec<OrderItem>> {
        let mut out = Vec::new();
        for item in pair
            .into_inner()
            .filter(|p| p.as_rule() == Rule::order_item)
        {
            let mut expr = None;
            let mut dir = SortDir::Default;
            for x in item.into_inner() {
                match x.as_rule() {
                    Rule::expr => expr = Some(self.expr(x)?),
                    Rule::asc => dir = SortDir::Asc,
                    Rule::desc => dir = SortDir::Desc,
                    _ => {}
                }
            }
            out.push(OrderItem {
                expr: expr.ok_or_else(|| bug("ORDER BY item"))?,
                dir,
            });
        }
        Ok(out)
    }

    pub(super) fn match_stmt(&self, pair: Pair<'_, Rule>) -> Result<Match> {
        let mut m = Match {
            patterns: Vec::new(),
            in_trace: None,
            filter: None,
            returns: Returns {
                distinct: false,
                items: Vec::new(),
            },
            order_by: Vec::new(),
            limit: None,
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::pattern => m.patterns.push(self.pattern(p)?),
                Rule::in_trace => m.in_trace = Some(self.in_trace(p)?),
                Rule::where_clause => m.filter = Some(self.clause_expr(p)?),
                Rule::return_items => m.returns = self.returns(p)?,
                Rule::order_by => m.order_by = self.order_by(p)?,
                Rule::limit => m.limit = Some(self.limit(p)?),
                _ => {}
            }
        }
        Ok(m)
    }

    pub(super) fn find(&self, pair: Pair<'_, Rule>) -> Result<Find> {
        let mut f = Find {
            kind: FindKind::Vars,
            in_trace: None,
            filter: None,
            group_by: Vec::new(),
            returns: None,
            order_by: Vec::new(),
            limit: None,
        };
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::find_kind => {
                    f.kind = match p.as_str().to_ascii_lowercase().as_str() {
                        "vars" => FindKind::Vars,
                        "ops" => FindKind::Ops,
                        "edges" => FindKind::Edges,
                        "sessions" => FindKind::Sessions,
                        "traces" => FindKind::Traces,
                        "cases" => FindKind::Cases,
                        _ => FindKind::Attributions,
                    }
                }
                Rule::in_trace => f.in_trace = Some(self.in_trace(p)?),
                Rule::where_clause => f.filter = Some(self.clause_expr(p)?),
                Rule::group_by => {
                    for e in p.into_inner().filter(|x| x.as_rule() == Rule::expr) {
                        f.group_by.push(self.expr(e)?);
                    }
                }
                Rule::return_items => f.returns = Some(self.returns(p)?),
                Rule::order_by => f.order_by = self.order_by(p)?,
                Rule::limit => f.limit = Some(self.limit(p)?),
                _ => {}
            }
        }
        Ok(f)
    }
}
