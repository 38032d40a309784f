//! From text to [`Statement`]s, through the pest grammar.

use pest::iterators::{Pair, Pairs};
use pest::Parser;
use pest::Token;

use crate::ast::*;
use crate::error::QueryError;
use crate::grammar::{MemtraceParser, Rule};
use crate::node_ref::{from_pair as reference_from_pair, unquote};
use crate::value::Value;

type Result<T> = std::result::Result<T, QueryError>;

/// Parses one statement (a trailing `;` is allowed).
pub fn parse_statement(text: &str) -> Result<Statement> {
    check_text_nesting(text)?;
    let mut pairs =
        MemtraceParser::parse(Rule::query, text).map_err(|e| QueryError::from_pest(text, e))?;
    check_nesting(text, &pairs)?;
    let query = pairs.next().ok_or_else(empty)?;
    let stmt = query
        .into_inner()
        .find(|p| p.as_rule() == Rule::statement)
        .ok_or_else(empty)?;
    P { text }.statement(stmt)
}

/// Parses a script: statements separated by `;`, with `--` comments.
pub fn parse_script(text: &str) -> Result<Vec<Statement>> {
    check_text_nesting(text)?;
    let mut pairs = MemtraceParser::parse(Rule::statements, text)
        .map_err(|e| QueryError::from_pest(text, e))?;
    check_nesting(text, &pairs)?;
    let all = pairs.next().ok_or_else(empty)?;
    let p = P { text };
    all.into_inner()
        .filter(|x| x.as_rule() == Rule::statement)
        .map(|s| p.statement(s))
        .collect()
}

fn empty() -> QueryError {
    QueryError::Other("empty statement".into())
}

/// How deep expressions may nest (parentheses, lists, calls, NOTs). Parsing
/// recurses once a level, so deeper text could exhaust the stack and abort
/// the process; a debug build spends about 30 KB a level, and a thread has
/// 2 MB by default.
const MAX_NESTING: usize = 48;

/// Refuses a parsed statement whose expressions nest more than
/// [`MAX_NESTING`] deep, before the tree is built recursively.
fn check_nesting(text: &str, pairs: &Pairs<'_, Rule>) -> Result<()> {
    let mut depth = 0usize;
    for token in pairs.clone().tokens() {
        match token {
            Token::Start {
                rule: Rule::expr | Rule::list | Rule::negation,
                pos,
            } => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(too_deep(text, pos.pos()));
                }
            }
            Token::End {
                rule: Rule::expr | Rule::list | Rule::negation,
                ..
            } => depth -= 1,
            _ => {}
        }
    }
    Ok(())
}

fn too_deep(text: &str, offset: usize) -> QueryError {
    QueryError::at(
        text,
        offset,
        format!("expressions nest more than {MAX_NESTING} levels deep"),
    )
}

/// Refuses text that could make the grammar itself recurse too deep: the
/// brackets and NOTs open at any point, outside strings and comments, may be
/// at most `4 * MAX_NESTING` (an upper bound of the grammar's recursion,
/// looser than [`check_nesting`] as it is read without the grammar's context).
/// A NOT is open until the end of its bracket level, or a `,`, `;`, or an
/// AND / OR that follows an operand (after a keyword, `and` may be a name).
///
/// Whether `--` starts a comment depends on that context: it does not inside
/// a bare name (`a--b`) or after the arrow `<-`. Where it may go either way
/// (at the top level, right after a character other than a space, bracket,
/// comma, semicolon or quote), both readings are followed.
fn check_text_nesting(text: &str) -> Result<()> {
    let limit = 4 * MAX_NESTING;
    let b = text.as_bytes();
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // Where to read from, with how many NOTs are open at the top level.
    let mut todo = vec![(0usize, 0usize)];
    let mut seen = std::collections::HashSet::new();
    let mut line = None;
    while let Some((start, top_nots)) = todo.pop() {
        if !seen.insert((start, top_nots)) {
            continue;
        }
        // NOTs open at each bracket level; `open` counts brackets and NOTs.
        let mut levels = vec![top_nots];
        let mut open = top_nots;
        // Whether the last token may end an operand.
        let mut after_operand = false;
        let mut i = start;
        while i < b.len() {
            let c = b[i];
            match c {
                b'\'' => {
                    i += 1;
                    while i < b.len() {
                        if b[i] == b'\'' {
                            if b.get(i + 1) != Some(&b'\'') {
                                break;
                            }
                            i += 1;
                        }
                        i += 1;
                    }
                }
                b'-' if b.get(i + 1) == Some(&b'-') && b.get(i + 2) != Some(&b'>') => {
                    // The end of the line, remembered for the next `--` on it.
                    let eol = match line {
                        Some((from, eol)) if from <= i && i <= eol => eol,
                        _ => {
                            let eol = b[i..]
                                .iter()
                                .position(|&c| c == b'\n')
                                .map_or(b.len(), |n| i + n);
                            line = Some((i, eol));
                            eol
                        }
                    };
                    let comment = levels.len() > 1
                        || i == 0
                        || matches!(
                            b[i - 1],
                            b' ' | b'\t' | b'\r' | b'\n' | b')' | b']' | b'}' | b',' | b';' | b'\''
                        );
                    if comment {
                        i = eol;
                        continue;
                    }
                    todo.push((eol, levels[0]));
                    todo.push((i + 1, levels[0]));
                    break;
                }
                b' ' | b'\t' | b'\r' | b'\n' => {}
                b'(' | b'[' => {
                    levels.push(0);
                    open += 1;
                }
                b')' | b']' if levels.len() > 1 => {
                    open -= 1 + levels.pop().unwrap_or(0);
                }
                b',' | b';' => {
                    let last = levels.len() - 1;
                    open -= levels[last];
                    levels[last] = 0;
                }
                c if is_word(c) => {
                    let end = b[i..]
                        .iter()
                        .position(|&c| !is_word(c))
                        .map_or(b.len(), |n| i + n);
                    let word = &text[i..end];
                    let last = levels.len() - 1;
                    if word.eq_ignore_ascii_case("not") {
                        levels[last] += 1;
                        open += 1;
                        if open > limit {
                            return Err(too_deep(text, i));
                        }
                    } else if after_operand
                        && (word.eq_ignore_ascii_case("and") || word.eq_ignore_ascii_case("or"))
                    {
                        open -= levels[last];
                        levels[last] = 0;
                    }
                    after_operand = !crate::keywords::is_reserved(word)
                        || ["null", "true", "false"]
                            .iter()
                            .any(|k| word.eq_ignore_ascii_case(k));
                    i = end;
                    continue;
                }
                _ => {}
            }
            if !matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
                after_operand = matches!(c, b')' | b']' | b'\'');
            }
            if open > limit {
                return Err(too_deep(text, i));
            }
            i += 1;
        }
    }
    Ok(())
}

struct P<'t> {
    text: &'t str,
}

fn bug(what: &str) -> QueryError {
    QueryError::Other(format!("internal parser error: unexpected shape of {what}"))
}

impl P<'_> {
    fn err(&self, pair: &Pair<'_, Rule>, message: String) -> QueryError {
        QueryError::at(self.text, pair.as_span().start(), message)
    }

    fn statement(&self, pair: Pair<'_, Rule>) -> Result<Statement> {
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

    fn in_trace(&self, pair: Pair<'_, Rule>) -> Result<InTrace> {
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

    fn int<T: TryFrom<u64>>(&self, pair: &Pair<'_, Rule>, what: &str) -> Result<T> {
        pair.as_str()
            .parse::<u64>()
            .ok()
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| self.err(pair, format!("{what} {} is too large", pair.as_str())))
    }

    fn limit(&self, pair: Pair<'_, Rule>) -> Result<CountArg> {
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::int => return Ok(CountArg::Value(self.int(&p, "LIMIT")?)),
                Rule::param => return Ok(CountArg::Param(param_name(&p))),
                _ => {}
            }
        }
        Err(bug("LIMIT"))
    }

    fn clause_expr(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let e = pair
            .into_inner()
            .find(|p| p.as_rule() == Rule::expr)
            .ok_or_else(|| bug("clause"))?;
        self.expr(e)
    }

    fn traverse(&self, pair: Pair<'_, Rule>) -> Result<Traverse> {
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

    fn starts(&self, pair: Pair<'_, Rule>) -> Result<Vec<Start>> {
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

    fn attribute(&self, pair: Pair<'_, Rule>) -> Result<Attribute> {
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
                Rule::subquery => target = Some(AttributeTarget::Query(self.subquery(p)?)),
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
    fn subquery(&self, pair: Pair<'_, Rule>) -> Result<Subquery> {
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
    fn pattern_name(&self, pair: Pair<'_, Rule>) -> Result<String> {
        pair.into_inner()
            .find(|p| p.as_rule() == Rule::pattern_name)
            .map(|p| p.as_str().to_string())
            .ok_or_else(|| bug("pattern name"))
    }

    fn save_pattern(&self, pair: Pair<'_, Rule>) -> Result<SavePattern> {
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

    fn run_pattern(&self, pair: Pair<'_, Rule>) -> Result<RunPattern> {
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
    fn pattern_params(&self, pair: Pair<'_, Rule>) -> Result<Vec<(String, Value)>> {
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
    fn param_value(&self, pair: Pair<'_, Rule>) -> Result<Value> {
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

    fn props(&self, pair: Pair<'_, Rule>) -> Result<Vec<Property>> {
        let mut out = Vec::new();
        for prop in pair.into_inner() {
            let mut it = prop.into_inner();
            let key = ident(&it.next().ok_or_else(|| bug("property"))?);
            let v = it.next().ok_or_else(|| bug("property value"))?;
            let value = match v.as_rule() {
                Rule::param => Expr::Param(param_name(&v)),
                _ => Expr::Lit(self.literal(v)?),
            };
            out.push(Property { key, value });
        }
        Ok(out)
    }

    fn label(&self, pair: Pair<'_, Rule>) -> Result<String> {
        let inner = pair.into_inner().next().ok_or_else(|| bug("label"))?;
        Ok(match inner.as_rule() {
            Rule::string => unquote(inner),
            _ => inner.as_str().to_string(),
        })
    }

    fn node_pat(&self, pair: Pair<'_, Rule>) -> Result<NodePattern> {
        let mut n = NodePattern::default();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::ident => n.var = Some(ident(&p)),
                Rule::label => n.label = Some(self.label(p)?),
                Rule::props => n.props = self.props(p)?,
                _ => {}
            }
        }
        Ok(n)
    }

    fn rel(&self, pair: Pair<'_, Rule>) -> Result<RelPattern> {
        let side = pair
            .into_inner()
            .next()
            .ok_or_else(|| bug("relationship"))?;
        let mut r = RelPattern {
            leftward: side.as_rule() == Rule::rel_left,
            ..RelPattern::default()
        };
        if let Some(body) = side.into_inner().find(|p| p.as_rule() == Rule::rel_body) {
            for p in body.into_inner() {
                match p.as_rule() {
                    Rule::ident => r.var = Some(ident(&p)),
                    Rule::label => r.label = Some(self.label(p)?),
                    Rule::props => r.props = self.props(p)?,
                    Rule::hops => {
                        r.hops = Some(match p.into_inner().next() {
                            None => Hops::Range(None, None),
                            Some(h) if h.as_rule() == Rule::int => {
                                Hops::Exact(self.int(&h, "hop count")?)
                            }
                            Some(h) => {
                                // hop_range: int? ".." int?, told apart by position.
                                let text = h.as_str();
                                let dots = h.as_span().start() + text.find("..").unwrap_or(0);
                                let mut lo = None;
                                let mut hi = None;
                                for i in h.clone().into_inner() {
                                    let v: u32 = self.int(&i, "hop count")?;
                                    if i.as_span().start() < dots {
                                        lo = Some(v);
                                    } else {
                                        hi = Some(v);
                                    }
                                }
                                if let (Some(a), Some(b)) = (lo, hi) {
                                    if a > b {
                                        return Err(self.err(
                                            &h,
                                            format!("*{a}..{b} is empty: the lower bound is above the upper"),
                                        ));
                                    }
                                }
                                Hops::Range(lo, hi)
                            }
                        });
                    }
                    _ => {}
                }
            }
        }
        Ok(r)
    }

    fn pattern(&self, pair: Pair<'_, Rule>) -> Result<Pattern> {
        let mut it = pair.into_inner();
        let first = self.node_pat(it.next().ok_or_else(|| bug("pattern"))?)?;
        let mut steps = Vec::new();
        while let Some(r) = it.next() {
            let rel = self.rel(r)?;
            let node = self.node_pat(it.next().ok_or_else(|| bug("pattern step"))?)?;
            steps.push((rel, node));
        }
        Ok(Pattern { first, steps })
    }

    fn returns(&self, pair: Pair<'_, Rule>) -> Result<Returns> {
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

    fn order_by(&self, pair: Pair<'_, Rule>) -> Result<Vec<OrderItem>> {
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

    fn match_stmt(&self, pair: Pair<'_, Rule>) -> Result<Match> {
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

    fn find(&self, pair: Pair<'_, Rule>) -> Result<Find> {
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

    // ------------------------------------------------------------ expressions

    fn expr(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        match pair.as_rule() {
            Rule::expr => self.expr(pair.into_inner().next().ok_or_else(|| bug("expr"))?),
            Rule::or_expr | Rule::and_expr => {
                let or = pair.as_rule() == Rule::or_expr;
                let mut items = Vec::new();
                for p in pair.into_inner() {
                    if !matches!(p.as_rule(), Rule::kw_or | Rule::kw_and) {
                        items.push(self.expr(p)?);
                    }
                }
                Ok(match (items.len(), or) {
                    (1, _) => items.pop().ok_or_else(|| bug("expr"))?,
                    (_, true) => Expr::Or(items),
                    (_, false) => Expr::And(items),
                })
            }
            Rule::not_expr => self.expr(pair.into_inner().next().ok_or_else(|| bug("NOT"))?),
            Rule::negation => {
                let e = pair
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::not_expr)
                    .ok_or_else(|| bug("NOT"))?;
                Ok(Expr::Not(Box::new(self.expr(e)?)))
            }
            Rule::comparison => {
                let mut it = pair.into_inner();
                let left = self.operand(it.next().ok_or_else(|| bug("comparison"))?)?;
                match it.next() {
                    None => Ok(left),
                    Some(test) => Ok(Expr::Test(Box::new(left), self.test(test)?)),
                }
            }
            _ => Err(bug("expression")),
        }
    }

    fn test(&self, pair: Pair<'_, Rule>) -> Result<Test> {
        let t = pair.into_inner().next().ok_or_else(|| bug("test"))?;
        let rule = t.as_rule();
        let start = t.as_span().start();
        let mut negated = false;
        let mut op = None;
        let mut arg = None;
        let mut arg_span = Span::default();
        for p in t.into_inner() {
            match p.as_rule() {
                Rule::negated => negated = true,
                Rule::cmp_op => {
                    op = Some(match p.as_str() {
                        "=" => CmpOp::Eq,
                        "!=" | "<>" => CmpOp::Ne,
                        "<" => CmpOp::Lt,
                        "<=" => CmpOp::Le,
                        ">" => CmpOp::Gt,
                        _ => CmpOp::Ge,
                    })
                }
                Rule::operand => {
                    arg_span = operand_span(&p);
                    arg = Some(self.operand(p)?)
                }
                Rule::list => arg = Some(self.list(p)?),
                Rule::param => arg = Some(Expr::Param(param_name(&p))),
                _ => {}
            }
        }
        let arg = || arg.map(Box::new).ok_or_else(|| bug("test operand"));
        Ok(match rule {
            Rule::cmp => Test::Cmp(op.ok_or_else(|| bug("operator"))?, arg()?),
            Rule::contains => Test::Contains(arg()?),
            Rule::starts_with => Test::StartsWith(arg()?),
            Rule::regex => Test::Regex {
                pattern: arg()?,
                operator: Span {
                    start,
                    end: start + "=~".len(),
                },
                pattern_span: arg_span,
            },
            Rule::in_list => Test::In {
                negated,
                list: arg()?,
            },
            Rule::is_null => Test::IsNull { negated },
            _ => return Err(bug("test")),
        })
    }

    fn list(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let items = pair
            .into_inner()
            .map(|p| self.operand(p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Expr::List(items))
    }

    fn literal(&self, pair: Pair<'_, Rule>) -> Result<Literal> {
        let inner = match pair.as_rule() {
            Rule::literal => pair.into_inner().next().ok_or_else(|| bug("literal"))?,
            _ => pair,
        };
        Ok(match inner.as_rule() {
            Rule::string => Literal::Str(unquote(inner)),
            Rule::kw_true => Literal::Bool(true),
            Rule::kw_false => Literal::Bool(false),
            Rule::kw_null => Literal::Null,
            _ => {
                let s = inner.as_str();
                if s.contains(['.', 'e', 'E']) {
                    let x: f64 = s
                        .parse()
                        .map_err(|_| self.err(&inner, format!("{s} is not a number")))?;
                    if !x.is_finite() {
                        return Err(self.err(&inner, format!("{s} is too large")));
                    }
                    Literal::Float(x)
                } else {
                    Literal::Int(
                        s.parse()
                            .map_err(|_| self.err(&inner, format!("{s} is too large")))?,
                    )
                }
            }
        })
    }

    fn operand(&self, pair: Pair<'_, Rule>) -> Result<Expr> {
        let inner = match pair.as_rule() {
            Rule::operand => pair.into_inner().next().ok_or_else(|| bug("operand"))?,
            _ => pair,
        };
        match inner.as_rule() {
            Rule::literal => Ok(Expr::Lit(self.literal(inner)?)),
            Rule::param => Ok(Expr::Param(param_name(&inner))),
            Rule::list => self.list(inner),
            Rule::expr => self.expr(inner),
            Rule::field => {
                let span = span_of(&inner);
                let parts = inner
                    .into_inner()
                    .map(|p| match p.as_rule() {
                        Rule::string => unquote(p),
                        _ => p.as_str().to_string(),
                    })
                    .collect();
                Ok(Expr::Field(FieldPath { parts, span }))
            }
            Rule::call => {
                let span = span_of(&inner);
                let mut it = inner.into_inner();
                let name = it.next().ok_or_else(|| bug("call"))?.as_str().to_string();
                let mut distinct = false;
                let mut arg = CallArg::None;
                for p in it {
                    match p.as_rule() {
                        Rule::star => arg = CallArg::Star,
                        Rule::distinct => distinct = true,
                        Rule::expr => {
                            arg = CallArg::Expr {
                                distinct,
                                expr: Box::new(self.expr(p)?),
                            }
                        }
                        _ => {}
                    }
                }
                Ok(Expr::Call { name, arg, span })
            }
            _ => Err(bug("operand")),
        }
    }
}

fn param_name(p: &Pair<'_, Rule>) -> String {
    p.as_str().trim_start_matches('$').to_string()
}

/// Where a pair was read in the statement text.
fn span_of(p: &Pair<'_, Rule>) -> Span {
    let s = p.as_span();
    Span {
        start: s.start(),
        end: s.end(),
    }
}

/// A name and where it was written.
fn ident(p: &Pair<'_, Rule>) -> Ident {
    Ident {
        name: p.as_str().to_string(),
        span: span_of(p),
    }
}

/// Where the value an operand holds was written, inside any parentheses
/// around it.
fn operand_span(pair: &Pair<'_, Rule>) -> Span {
    let mut p = pair.clone();
    loop {
        let wraps_one = matches!(
            p.as_rule(),
            Rule::operand
                | Rule::expr
                | Rule::or_expr
                | Rule::and_expr
                | Rule::not_expr
                | Rule::comparison
        );
        let mut inner = p.clone().into_inner();
        match (inner.next(), inner.next()) {
            (Some(only), None) if wraps_one => p = only,
            _ => return span_of(&p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::spans::without_spans;
    use crate::ast::value_literal;
    use crate::keywords::KEYWORDS;

    /// Statements that must parse, print canonically, and parse back the same.
    const EXAMPLES: &[&str] = &[
        "TRACE answer:42 UNTIL op.kind = 'extraction'",
        "TRACE 'prediction:locomo-qa-1-7@1' DEPTH 5 RETURN ops",
        "FORWARD message:'U1:D1:3' WHERE var.category = 'memory_entry'",
        "trace answer:42@2, op-4ec49f11, $start in trace 'g1' depth 2..4 while not op.kind in ['update', 'x'] return paths limit 10",
        "MATCH (m:message)-[:extraction]->(f)-[*1..20]->(p:prediction) WHERE NOT f.value CONTAINS 'Paris' RETURN m, f, p",
        "MATCH (a:memory {category: 'memory_entry'})<-[e:update*]-(b), (b)-->(c) RETURN DISTINCT a.full_name AS n, count(*) ORDER BY n DESC, c.version LIMIT $k",
        "FIND ops WHERE op.category = 'retrieval' GROUP BY op.name RETURN op.name, count(*)",
        "FIND vars WHERE var.meta.evidence IS NOT NULL AND (var.version >= 2 OR var.name =~ '^Q[0-9]+$') RETURN count(DISTINCT var.full_name), min(var.version), max(var.created_at)",
        "FIND cases",
        "SHOW TRACES",
        "DESCRIBE prediction:Q1 IN TRACE 'g'",
        "EXPLAIN TRACE answer:42 UNTIL op.kind = 'extraction'",
        "ATTRIBUTE CASES IN TRACE 'locomo_3' USING evidence",
        "attribute cases using evidence",
        "ATTRIBUTE query:Q8 IN TRACE 'mem0-0001-s7' USING evidence",
        "ATTRIBUTE 'query:Q8@1', query:Q9, $case IN TRACE $t USING Evidence",
        "ATTRIBUTE cases:Q1, cases@2 USING evidence",
        "ATTRIBUTE using USING evidence",
        "ATTRIBUTE in IN TRACE 'g' USING in",
        "ATTRIBUTE using, cases USING using",
        "EXPLAIN ATTRIBUTE CASES USING evidence",
        "FIND attributions IN TRACE 'g' WHERE error_type = 'RetrievalError' AND attribution.confidence > 0.5",
        "FIND attributions GROUP BY error_type RETURN error_type, count(*)",
        "FIND traces WHERE trace.meta.'odd key' STARTS WITH 'x' AND trace.id != 'a' ORDER BY trace.id ASC",
        "MATCH (a)-[*3]->(b)-[*2..]->(c)<-[*..4]-(d) RETURN a",
        "FIND vars WHERE var.version IN [1, 2.5, -3, 1e-7, TRUE, NULL, 'x'] RETURN var.name",
        "FIND vars WHERE (var.version = 1) = TRUE AND NOT NOT var.name IS NULL",
        "SAVE PATTERN big WITH $min = 20, $cats = ['a', 'b'] AS FIND vars WHERE var.version >= $min AND var.category IN $cats",
        "save pattern Big_2 with $x = 2.0, $s = 'it''s', $n = -3, $f = -1.5e-7, $t = TRUE, $u = false, $z = null, $e = [] as trace $start depth 3 where op.kind = $s",
        "SAVE PATTERN chain AS MATCH (m:message)-[:extraction]->(f) WHERE f.value CONTAINS $word RETURN m, f LIMIT $k",
        "Save Pattern fwd AS FORWARD $start UNTIL var.category = 'x'",
        "RUN PATTERN big OVER TRACES WHERE trace.source = 'x' WITH $min = 5",
        "run pattern big",
        "Run Pattern big with $cats = ['x', 1, 2.5, NULL, TRUE], $min = -7",
        "RUN PATTERN big OVER TRACES WHERE trace.id IN $ids AND NOT trace.user_id STARTS WITH 'test'",
        "SHOW PATTERNS",
        "show patterns",
        "SHOW PATTERN big HISTORY",
        "drop pattern big",
    ];

    #[test]
    fn statements_that_store_something_are_known() {
        let writes = |q: &str| parse_script(q).unwrap()[0].writes();
        for q in [
            "ATTRIBUTE CASES USING evidence",
            "SAVE PATTERN p AS FIND ops RETURN op.name",
            "DROP PATTERN p",
        ] {
            assert!(writes(q), "{q}");
        }
        for q in [
            "TRACE v:a",
            "FORWARD v:a",
            "MATCH (a)-[:x]->(b) RETURN count(*)",
            "FIND ops RETURN op.name",
            "SHOW TRACES",
            "SHOW PATTERNS",
            "RUN PATTERN p",
            "EXPLAIN ATTRIBUTE CASES USING evidence",
        ] {
            assert!(!writes(q), "{q}");
        }
    }

    #[test]
    fn examples_round_trip() {
        for text in EXAMPLES {
            let stmt = parse_statement(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
            let printed = stmt.to_string();
            let again = parse_statement(&printed).unwrap_or_else(|e| panic!("{printed}\n{e}"));
            assert_eq!(
                without_spans(&stmt),
                without_spans(&again),
                "{text}\nprinted as {printed}"
            );
            assert_eq!(printed, again.to_string());
        }
    }

    fn err(text: &str) -> String {
        parse_statement(text).unwrap_err().to_string()
    }

    #[test]
    fn pattern_statements_print_canonically() {
        for (text, printed) in [
            (
                "save pattern big with $min = 20, $cats = ['a','b'] as find vars where var.version >= $min",
                "SAVE PATTERN big WITH $min = 20, $cats = ['a', 'b'] AS FIND vars WHERE var.version >= $min",
            ),
            (
                "Run Pattern big over traces where trace.source = 'x' with $min = 5",
                "RUN PATTERN big OVER TRACES WHERE trace.source = 'x' WITH $min = 5",
            ),
            ("run pattern big with $a=1", "RUN PATTERN big WITH $a = 1"),
            ("show   patterns", "SHOW PATTERNS"),
            ("show pattern Big_1 history", "SHOW PATTERN Big_1 HISTORY"),
            ("drop pattern big;", "DROP PATTERN big"),
        ] {
            let stmt = parse_statement(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
            assert_eq!(stmt.to_string(), printed);
        }
        // Names keep their case; keywords do not matter.
        assert_eq!(
            parse_statement("DROP PATTERN BigOne"),
            Ok(Statement::DropPattern("BigOne".into()))
        );
        assert_eq!(
            parse_statement("sHoW pAtTeRn bigone HiStOrY"),
            Ok(Statement::ShowPatternHistory("bigone".into()))
        );
        assert_eq!(
            parse_statement("SHOW PATTERNS"),
            Ok(Statement::ShowPatterns)
        );
        let script =
            parse_script("SAVE PATTERN a AS FIND vars; RUN PATTERN a;\nSHOW PATTERNS").unwrap();
        assert_eq!(script.len(), 3);
    }

    #[test]
    fn pattern_parameters_are_values_that_print_back() {
        let text = "SAVE PATTERN p WITH $f = 2.0, $n = -3, $g = 1e3, $s = 'it''s', $b = true, \
                    $z = NULL, $l = ['a', 1, -2.5, FALSE, NULL], $e = [] AS FIND vars";
        let Ok(Statement::SavePattern(s)) = parse_statement(text) else {
            panic!("not a SAVE PATTERN")
        };
        assert_eq!(s.name, "p");
        assert_eq!(
            s.params,
            vec![
                ("f".to_string(), Value::Float(2.0)),
                ("n".to_string(), Value::Int(-3)),
                ("g".to_string(), Value::Float(1000.0)),
                ("s".to_string(), Value::from("it's")),
                ("b".to_string(), Value::Bool(true)),
                ("z".to_string(), Value::Null),
                (
                    "l".to_string(),
                    Value::List(vec![
                        Value::from("a"),
                        Value::Int(1),
                        Value::Float(-2.5),
                        Value::Bool(false),
                        Value::Null
                    ])
                ),
                ("e".to_string(), Value::List(Vec::new())),
            ]
        );
        assert!(matches!(*s.body, Statement::Find(_)));
        assert_eq!(
            Statement::SavePattern(s).to_string(),
            "SAVE PATTERN p WITH $f = 2.0, $n = -3, $g = 1000.0, $s = 'it''s', $b = TRUE, \
             $z = NULL, $l = ['a', 1, -2.5, FALSE, NULL], $e = [] AS FIND vars"
        );
        let Ok(Statement::RunPattern(r)) =
            parse_statement("RUN PATTERN p OVER TRACES WHERE trace.id = $t WITH $k = 3")
        else {
            panic!("not a RUN PATTERN")
        };
        assert_eq!(r.name, "p");
        assert_eq!(
            r.over.map(|e| e.to_string()).as_deref(),
            Some("trace.id = $t")
        );
        assert_eq!(r.params, vec![("k".to_string(), Value::Int(3))]);
    }

    #[test]
    fn value_literals_read_back_as_the_same_values() {
        let values = [
            Value::Null,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::Float(2.0),
            Value::Float(-0.5),
            Value::Float(1e-7),
            Value::Float(1e300),
            Value::Float(f64::MAX),
            Value::from(""),
            Value::from("it's ''quoted''\n-- not a comment"),
            Value::List(vec![]),
            Value::List(vec![Value::from("a"), Value::Float(3.0), Value::Null]),
        ];
        for v in values {
            let text = format!("RUN PATTERN p WITH $v = {}", value_literal(&v));
            let Ok(Statement::RunPattern(r)) = parse_statement(&text) else {
                panic!("{text}")
            };
            assert_eq!(r.params, vec![("v".to_string(), v.clone())], "{text}");
            // A float stays a float.
            assert_eq!(
                std::mem::discriminant(&r.params[0].1),
                std::mem::discriminant(&v)
            );
        }
        assert_eq!(value_literal(&Value::Float(2.0)), "2.0");
        assert_eq!(value_literal(&Value::from("it's")), "'it''s'");
        assert_eq!(
            value_literal(&Value::List(vec![Value::Bool(true), Value::Int(-1)])),
            "[TRUE, -1]"
        );
        // No literal for what is not a finite number.
        assert_eq!(value_literal(&Value::Float(f64::NAN)), "NULL");
        assert_eq!(value_literal(&Value::Float(f64::INFINITY)), "NULL");
    }

    #[test]
    fn pattern_statement_errors_say_what_is_wrong() {
        // A missing name.
        let e = err("SAVE PATTERN AS FIND vars");
        assert!(
            e.starts_with("syntax error at line 1, column 14: expected a pattern name, found 'AS' (a keyword cannot name a pattern)"),
            "{e}"
        );
        let e = err("DROP PATTERN");
        assert!(
            e.starts_with("syntax error at line 1, column 13: expected a pattern name, found the end of the statement"),
            "{e}"
        );
        let e = err("RUN PATTERN 'big'");
        assert!(
            e.contains("column 13: expected a pattern name, found a string"),
            "{e}"
        );
        let e = err("SHOW PATTERN HISTORY");
        assert!(
            e.contains("column 14: expected a pattern name, found 'HISTORY'"),
            "{e}"
        );
        // A body that is not TRACE, FORWARD, MATCH or FIND.
        for (text, word) in [
            (
                "SAVE PATTERN p AS ATTRIBUTE CASES USING evidence",
                "ATTRIBUTE",
            ),
            ("SAVE PATTERN p AS SHOW TRACES", "SHOW"),
            ("SAVE PATTERN p AS EXPLAIN FIND vars", "EXPLAIN"),
            ("SAVE PATTERN p AS DESCRIBE x:1", "DESCRIBE"),
            ("SAVE PATTERN p AS SAVE PATTERN q AS FIND vars", "SAVE"),
            ("SAVE PATTERN p AS RUN PATTERN q", "RUN"),
        ] {
            let e = err(text);
            assert!(
                e.starts_with(&format!("syntax error at line 1, column 19: expected a TRACE, FORWARD, MATCH or FIND statement (what a pattern saves), found '{word}'")),
                "{e}"
            );
        }
        let e = err("SAVE PATTERN p AS FND vars");
        assert!(e.contains("found 'FND' (did you mean FIND?)"), "{e}");
        // A keyword as a name, in any case, in every statement that takes one.
        let e = err("SAVE PATTERN match AS MATCH (a) RETURN a");
        assert!(
            e.starts_with("syntax error at line 1, column 14: expected a pattern name, found 'match' (a keyword cannot name a pattern)"),
            "{e}"
        );
        for k in KEYWORDS {
            for word in [k.to_string(), k.to_ascii_lowercase()] {
                for text in [
                    format!("SAVE PATTERN {word} AS FIND vars"),
                    format!("RUN PATTERN {word}"),
                    format!("SHOW PATTERN {word} HISTORY"),
                    format!("DROP PATTERN {word}"),
                ] {
                    let e = err(&text);
                    assert!(
                        e.contains(&format!("expected a pattern name, found '{word}' (a keyword cannot name a pattern)")),
                        "{e}"
                    );
                }
            }
        }
        // Names that only start like a keyword are names.
        assert!(parse_statement("DROP PATTERN matches").is_ok());
        assert!(parse_statement("DROP PATTERN run_1").is_ok());
        // A parameter given twice.
        let text = "RUN PATTERN p WITH $a = 1, $b = 2, $a = 3";
        assert_eq!(
            err(text),
            "invalid statement at line 1, column 36: parameter $a is given twice; give each parameter one value\n  \
             RUN PATTERN p WITH $a = 1, $b = 2, $a = 3\n                                     ^"
        );
        let e = err("SAVE PATTERN p WITH $k = 1, $k = 1 AS FIND vars LIMIT $k");
        assert!(e.contains("column 29: parameter $k is given twice"), "{e}");
        // Values are literals or lists of literals.
        let e = err("SAVE PATTERN p WITH $a = var.x AS FIND vars");
        assert!(
            e.starts_with("syntax error at line 1, column 26: expected a value (a string, number, TRUE, FALSE, NULL, or a list of them such as ['a', 'b']), found 'var'"),
            "{e}"
        );
        let e = err("RUN PATTERN p WITH $a = $b");
        assert!(e.contains("column 25: expected a value (a string"), "{e}");
        let e = err("RUN PATTERN p WITH $a = [1, var.x]");
        assert!(
            e.contains("column 29: expected a value, found 'var'"),
            "{e}"
        );
        let e = err("RUN PATTERN p WITH $a = [[1]]");
        assert!(e.contains("column 26: expected a value, found '['"), "{e}");
        let e = err("RUN PATTERN p WITH $a 1");
        assert!(e.contains("column 23: expected '=', found '1'"), "{e}");
        let e = err("RUN PATTERN p WITH a = 1");
        assert!(
            e.contains("column 20: expected a $parameter, found 'a'"),
            "{e}"
        );
        let e = err("RUN PATTERN p WITH $a = 99999999999999999999");
        assert!(
            e.contains("column 25: 99999999999999999999 is too large"),
            "{e}"
        );
        // EXPLAIN does not take them.
        for text in [
            "EXPLAIN SAVE PATTERN p AS FIND vars",
            "EXPLAIN RUN PATTERN p",
            "EXPLAIN SHOW PATTERNS",
            "EXPLAIN SHOW PATTERN p HISTORY",
            "explain drop pattern p",
        ] {
            let e = err(text);
            assert!(
                e.contains("(EXPLAIN does not apply to SAVE PATTERN, RUN PATTERN, SHOW PATTERNS, SHOW PATTERN ... HISTORY or DROP PATTERN)"),
                "{e}"
            );
            assert!(!e.contains("did you mean"), "{e}");
        }
        let e = err("EXPLAIN SAVE PATTERN p AS FIND vars");
        assert!(
            e.starts_with("syntax error at line 1, column 9: expected MATCH, FIND, SHOW, DESCRIBE, ATTRIBUTE, TRACE or FORWARD, found 'SAVE'"),
            "{e}"
        );
        // What else may follow.
        let e = err("SHOW");
        assert!(
            e.contains("expected TRACES, PATTERN or PATTERNS, found the end"),
            "{e}"
        );
        let e = err("SHOW PATTERN p");
        assert!(e.contains("column 15: expected HISTORY"), "{e}");
        let e = err("RUN PATTERN p OVER PATTERNS WHERE trace.id = 'g'");
        assert!(
            e.contains("column 20: expected TRACES, found 'PATTERNS'") && !e.contains("EXPLAIN"),
            "{e}"
        );
        let e = err("RUN PATTERN p OVER TRACES trace.id = 'g'");
        assert!(e.contains("column 27: expected WHERE"), "{e}");
        let e = err("SAV PATTERN p AS FIND vars");
        assert!(
            e.contains("expected a statement (TRACE, FORWARD, MATCH, FIND, SHOW, DESCRIBE, ATTRIBUTE, EXPLAIN, SAVE, RUN, DROP), found 'SAV' (did you mean SAVE?)"),
            "{e}"
        );
        let e = err("SAVE PATTERN p FIND vars");
        assert!(
            e.contains("column 16: expected AS or WITH, found 'FIND'"),
            "{e}"
        );
    }

    #[test]
    fn scripts_split_on_semicolons_and_skip_comments() {
        let s = parse_script("-- a comment\nSHOW TRACES;\n\nFIND cases; -- trailing\n;").unwrap();
        assert_eq!(s.len(), 2);
        assert!(parse_script("").unwrap().is_empty());
        assert!(parse_script("SHOW TRACES FIND cases").is_err());
    }

    #[test]
    fn a_misspelt_keyword_is_named() {
        let e = parse_statement("TRACE answer:42 UNTILL op.kind = 'x'").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("did you mean UNTIL?"), "{msg}");
        assert!(msg.contains("line 1, column 17"), "{msg}");
        assert!(msg.ends_with("                ^"), "{msg}");
    }

    #[test]
    fn cases_is_the_keyword_only_before_in_or_using() {
        let all = |text: &str| match parse_statement(text).unwrap() {
            Statement::Attribute(a) => a.target == AttributeTarget::Cases,
            other => panic!("{other:?}"),
        };
        assert!(all("ATTRIBUTE CASES USING evidence"));
        assert!(all("ATTRIBUTE cases IN TRACE 'g' USING evidence"));
        assert!(!all("ATTRIBUTE cases:Q1 USING evidence"));
        assert!(!all("ATTRIBUTE cases, x USING evidence"));
        assert!(!all("ATTRIBUTE casesx USING evidence"));
        // FIND cases is unchanged.
        assert!(matches!(
            parse_statement("FIND cases"),
            Ok(Statement::Find(Find {
                kind: FindKind::Cases,
                ..
            }))
        ));
    }

    #[test]
    fn attribute_errors_point_at_the_word_and_suggest_the_keyword() {
        let e = parse_statement("ATTRIBUTE CASES USNG evidence")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1, column 17"), "{e}");
        assert!(e.contains("(did you mean USING?)"), "{e}");
        assert!(e.ends_with("                ^"), "{e}");
        let e = parse_statement("ATRIBUTE CASES USING evidence")
            .unwrap_err()
            .to_string();
        assert!(e.contains("(did you mean ATTRIBUTE?)"), "{e}");
        let e = parse_statement("ATTRIBUTE CASES IN TRACE 'g'")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected USING"), "{e}");
        let e = parse_statement("ATTRIBUTE USING evidence")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("syntax error at line 1, column 11: expected CASES, a variable or op reference or a subquery such as (FIND cases ...), found 'USING'"),
            "{e}"
        );
        let e = parse_statement("ATTRIBUTE IN TRACE 'g' USING evidence")
            .unwrap_err()
            .to_string();
        assert!(e.contains("column 11: expected CASES"), "{e}");
        // Cases named `in` and `using` are still cases.
        for text in [
            "ATTRIBUTE using USING evidence",
            "ATTRIBUTE in IN TRACE 'g' USING evidence",
            "ATTRIBUTE using, in USING in",
        ] {
            assert!(
                matches!(parse_statement(text), Ok(Statement::Attribute(_))),
                "{text}"
            );
        }
        let e = parse_statement("ATTRIBUTE CASES USING 'evidence'")
            .unwrap_err()
            .to_string();
        assert!(e.contains("an attribution method"), "{e}");
    }

    #[test]
    fn a_subquery_picks_the_cases_of_attribute_and_prints_back() {
        let text = "attribute (find cases where trace.project_id = 'Mem0' and case.query \
                    contains 'when' order by case.query_id desc limit 5) using hybrid";
        let Ok(Statement::Attribute(a)) = parse_statement(text) else {
            panic!("not an ATTRIBUTE")
        };
        let AttributeTarget::Query(q) = &a.target else {
            panic!("not a subquery: {:?}", a.target)
        };
        assert_eq!(q.span.start, text.find("find cases").unwrap());
        let CaseQuery::Find(f) = &q.query else {
            panic!("not a FIND: {:?}", q.query)
        };
        assert_eq!(f.kind, FindKind::Cases);
        assert_eq!(f.limit, Some(CountArg::Value(5)));
        assert_eq!(f.order_by.len(), 1);
        assert_eq!((a.in_trace, a.method.as_str()), (None, "hybrid"));
        let printed = parse_statement(text).unwrap().to_string();
        assert_eq!(
            printed,
            "ATTRIBUTE (FIND cases WHERE trace.project_id = 'Mem0' AND case.query CONTAINS 'when' \
             ORDER BY case.query_id DESC LIMIT 5) USING hybrid"
        );
        assert_eq!(parse_statement(&printed).unwrap().to_string(), printed);

        // A pattern's hits, with its trace condition and parameters.
        let text = "ATTRIBUTE ( RUN PATTERN stored_not_retrieved OVER TRACES WHERE \
                    trace.project_id = $p WITH $min_confidence = 0.5 ) USING evidence";
        let Ok(Statement::Attribute(a)) = parse_statement(text) else {
            panic!("not an ATTRIBUTE")
        };
        let AttributeTarget::Query(Subquery {
            query: CaseQuery::RunPattern(r),
            span,
        }) = &a.target
        else {
            panic!("not a RUN PATTERN subquery: {:?}", a.target)
        };
        assert_eq!(span.start, 12);
        assert_eq!(r.name, "stored_not_retrieved");
        assert_eq!(
            r.params,
            vec![("min_confidence".to_string(), Value::Float(0.5))]
        );
        assert_eq!(
            Statement::Attribute(a.clone()).to_string(),
            "ATTRIBUTE (RUN PATTERN stored_not_retrieved OVER TRACES WHERE trace.project_id = $p \
             WITH $min_confidence = 0.5) USING evidence"
        );
        // Under EXPLAIN, in a script, across lines and with comments.
        let script = parse_script(
            "EXPLAIN ATTRIBUTE (FIND cases) USING evidence;\n\
             ATTRIBUTE -- the cases\n  (RUN PATTERN p) -- of p\n USING llm;",
        )
        .unwrap();
        assert_eq!(
            script.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            [
                "EXPLAIN ATTRIBUTE (FIND cases) USING evidence",
                "ATTRIBUTE (RUN PATTERN p) USING llm"
            ]
        );
        // Any FIND parses (planning refuses those that are not of cases).
        assert!(parse_statement("ATTRIBUTE (FIND ops IN TRACE 'g') USING evidence").is_ok());
    }

    #[test]
    fn a_misplaced_or_unfinished_subquery_says_what_to_write() {
        let e = err("ATTRIBUTE (FIND cases) IN TRACE 'g' USING evidence");
        assert_eq!(
            e,
            "invalid statement at line 1, column 24: IN TRACE does not follow a subquery, which \
             picks its own traces; write it inside: ATTRIBUTE (FIND cases IN TRACE 'id' ...) \
             USING ...\n  ATTRIBUTE (FIND cases) IN TRACE 'g' USING evidence\n                         ^"
        );
        let e = err("ATTRIBUTE (RUN PATTERN p) IN TRACE 'g' USING evidence");
        assert!(
            e.contains("column 27: IN TRACE does not follow a subquery")
                && e.contains("(RUN PATTERN name OVER TRACES WHERE trace.id = 'id')"),
            "{e}"
        );
        let e = err("ATTRIBUTE (MATCH (a) RETURN a) USING evidence");
        assert!(
            e.starts_with(
                "syntax error at line 1, column 12: expected FIND or RUN, found 'MATCH' \
                 (ATTRIBUTE takes the cases of a subquery, which is a FIND cases or a RUN PATTERN)"
            ),
            "{e}"
        );
        let e = err("ATTRIBUTE (FND cases) USING evidence");
        assert!(e.contains("found 'FND' (did you mean FIND?)"), "{e}");
        let e = err("ATTRIBUTE FIND cases WHERE case.query CONTAINS 'x' USING evidence");
        assert!(
            e.contains("column 16:")
                && e.contains(
                    "(a subquery goes in parentheses: ATTRIBUTE (FIND cases ...) USING method)"
                ),
            "{e}"
        );
        let e = err("ATTRIBUTE RUN PATTERN p USING evidence");
        assert!(e.contains("(a subquery goes in parentheses"), "{e}");
        // A case named FIND is still a case.
        assert!(parse_statement("ATTRIBUTE FIND USING evidence").is_ok());
        let e = err("ATTRIBUTE (FIND cases USING evidence");
        assert!(
            e.contains("column 23:") && e.contains("')' (the end of the subquery)"),
            "{e}"
        );
        let e = err("ATTRIBUTE (FIND cases)");
        assert!(e.contains("column 23: expected IN or USING"), "{e}");
        let e = err("ATTRIBUTE () USING evidence");
        assert!(e.contains("column 12: expected FIND or RUN"), "{e}");
        let e = err("ATTRIBUTE (RUN PATTERN p WITH $a = 1, $a = 2) USING evidence");
        assert!(e.contains("parameter $a is given twice"), "{e}");
    }

    #[test]
    fn errors_name_what_was_expected() {
        let e = parse_statement("TRACE").unwrap_err().to_string();
        assert!(e.contains("expected a variable or op reference"), "{e}");
        let e = parse_statement("FIND widgets").unwrap_err().to_string();
        assert!(
            e.contains("vars, ops, edges, sessions, traces, cases or attributions"),
            "{e}"
        );
        let e = parse_statement("TRACE a DEPTH 5..2")
            .unwrap_err()
            .to_string();
        assert!(e.contains("lower bound is above the upper"), "{e}");
        let e = parse_statement("TRACE a LIMIT 99999999999999999999999")
            .unwrap_err()
            .to_string();
        assert!(e.contains("too large"), "{e}");
        let e = parse_statement("MATCH (a)-[:x]->(b) RETURN a\nORDER a")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2, column 7") && e.contains("BY"), "{e}");
    }
}
