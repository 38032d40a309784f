//! Property test of the round trip: any statement prints to text that parses
//! back to the same statement, and printing is canonical.
//!
//! The strategies below generate arbitrary [`Statement`]s covering every
//! variant and field of the AST. They respect what the grammar can express:
//!
//! - Identifiers (node and relationship variables, property keys, `AS`
//!   aliases, function names, the first part of a field path) match
//!   `[A-Za-z_][A-Za-z0-9_]*` and are not keywords ([`KEYWORDS`], any case):
//!   the printer writes them bare. Parameter names follow the same shape but
//!   may be keywords, since `$` sets them apart; so may the first part of a
//!   field path (`trace.id`), except NULL, TRUE and FALSE, which are read as
//!   literals (the printer parenthesises a path the grammar could read as a
//!   keyword: `(distinct.x)`, `(not)`).
//! - Labels and the later parts of a field path may be any text: the printer
//!   quotes what is not a plain identifier.
//! - `And` / `Or` hold two or more items; the parser folds a single one away.
//! - Any expression may be the left or right operand of a `Test` and an item
//!   of a list: the printer parenthesises what binds looser than an operand.
//!   The list of `[NOT] IN` is an `Expr::List` or an `Expr::Param`, as the
//!   grammar reads nothing else there (not even a parenthesised list).
//! - Property values are literals or parameters.
//! - `EXPLAIN` wraps a statement that is not itself an `EXPLAIN` nor a
//!   pattern statement (SAVE PATTERN, RUN PATTERN, SHOW PATTERNS, SHOW
//!   PATTERN ... HISTORY, DROP PATTERN).
//! - Pattern names are identifiers as above (not keywords). The body of a
//!   `SAVE PATTERN` is a TRACE / FORWARD, MATCH or FIND (any of the
//!   generators below, without `IN TRACE`, which the planner refuses but the
//!   grammar reads). A `WITH` names each parameter once, and its values are
//!   literals or lists of literals, as [`Value`]s.
//! - `Depth::Range(a, b)` and `Hops::Range(Some(a), Some(b))` have `a <= b`;
//!   `LIMIT` fits a u64, depths and hop counts a u32.
//! - `Traverse::starts`, `Match::patterns` and `Returns::items` are not empty.
//! - `NodeRef::Name`: the first `:`-separated part of the full name is bare
//!   (`[A-Za-z0-9_.#/-]+`, not starting with `--`), as in the proptest of
//!   `node_ref.rs` (a lone quoted part without a version reads back as a
//!   `NodeRef::Quoted`); later parts are any text; versions are >= 1.
//! - `ATTRIBUTE`: its method is an identifier or a keyword (nothing follows
//!   it, so a keyword there reads as a name). Its starts are as TRACE's, but
//!   a lone start is not the bare name `cases` without a version (any
//!   case), which reads as the keyword `CASES`; quoted, it reads back as a
//!   `NodeRef::Quoted`. A subquery target is any FIND (of any kind, with
//!   any clauses, the planner refuses what does not return cases) or any
//!   RUN PATTERN, and has no `IN TRACE` after it (the parser refuses one).
//! - Floats are finite. Spans are `0..0`, as in a statement built in code;
//!   a parsed statement is compared with its spans cleared.
//! - Expressions nest at most 48 levels deep (the parser refuses deeper
//!   text rather than overflow its stack); the strategies stay far below.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use crate::ast::strip_spans::without_spans;
use crate::ast::*;
use crate::keywords::KEYWORDS;
use crate::node_ref::NodeRef;
use crate::value::Value;
use crate::{parse_script, parse_statement};

/// Identifiers that come close to keywords without being one.
const NEAR_KEYWORDS: &[&str] = &[
    "notes",
    "order_id",
    "nullable",
    "in_",
    "is_x",
    "asc1",
    "descr",
    "true_",
    "falsey",
    "e",
    "E1",
    "_",
    "ORx",
    "andy",
    "byte",
    "tracer",
    "count",
    "x1",
    "cases_",
    "usingx",
    "attributes",
    "case",
    "attribution",
];

fn ident() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[A-Za-z_][A-Za-z0-9_]{0,7}"
            .prop_filter("not a keyword", |s| !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(s))),
        1 => proptest::sample::select(NEAR_KEYWORDS).prop_map(str::to_string),
    ]
}

/// A keyword in upper, lower or mixed case.
fn keyword() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(KEYWORDS),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(k, lower, mixed)| {
            if mixed {
                k.chars()
                    .enumerate()
                    .map(|(i, c)| {
                        if i % 2 == 0 {
                            c.to_ascii_lowercase()
                        } else {
                            c
                        }
                    })
                    .collect()
            } else if lower {
                k.to_ascii_lowercase()
            } else {
                k.to_string()
            }
        })
}

fn param_name() -> impl Strategy<Value = String> {
    prop_oneof![3 => ident(), 1 => keyword()]
}

/// Text with quotes, newlines, tabs, unicode, and the empty string.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        2 => "(?s).{0,10}",
        2 => "[a' \n\t:@.\\-é日🙂\\\\]{0,8}",
        1 => Just(String::new()),
        1 => Just("it's".to_string()),
        1 => Just("''".to_string()),
        1 => Just("line one\nline two\r\n".to_string()),
        1 => Just("-- not a comment".to_string()),
    ]
    .boxed()
}

/// A name the printer may have to quote: labels, later field parts.
fn name() -> BoxedStrategy<String> {
    prop_oneof![3 => ident(), 1 => keyword(), 2 => text()].boxed()
}

fn in_trace() -> impl Strategy<Value = InTrace> {
    prop_oneof![
        text().prop_map(TextArg::Text),
        param_name().prop_map(TextArg::Param)
    ]
    .prop_map(|trace| InTrace {
        trace,
        span: Span::default(),
    })
}

/// A name written in code, without a place in any text.
fn unplaced(name: String) -> Ident {
    Ident {
        name,
        span: Span::default(),
    }
}

fn count_arg() -> impl Strategy<Value = CountArg> {
    prop_oneof![
        prop_oneof![0u64..100, any::<u64>()].prop_map(CountArg::Value),
        param_name().prop_map(CountArg::Param),
    ]
}

fn bare_first() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.#/-][A-Za-z0-9_.#/-]{0,6}".prop_filter("not a comment", |s| !s.starts_with("--"))
}

fn node_ref() -> BoxedStrategy<NodeRef> {
    let rest = prop_oneof!["[A-Za-z0-9_.#/-]{1,6}", text()];
    prop_oneof![
        3 => (bare_first(), vec(rest, 0..4), option::of(prop_oneof![1u32..10, 1u32..=u32::MAX]))
            .prop_map(|(first, rest, version)| {
                let mut parts = vec![first];
                parts.extend(rest);
                NodeRef::Name {
                    full_name: parts.join(":"),
                    version,
                }
            }),
        1 => text().prop_map(NodeRef::Quoted),
    ]
    .boxed()
}

fn start() -> BoxedStrategy<Start> {
    prop_oneof![
        3 => node_ref().prop_map(Start::Ref),
        1 => param_name().prop_map(Start::Param),
    ]
    .boxed()
}

fn small_u32() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..20, any::<u32>()]
}

fn depth() -> impl Strategy<Value = Depth> {
    prop_oneof![
        small_u32().prop_map(Depth::Max),
        (small_u32(), small_u32()).prop_map(|(a, b)| Depth::Range(a.min(b), a.max(b))),
    ]
}

fn hops() -> impl Strategy<Value = Hops> {
    prop_oneof![
        small_u32().prop_map(Hops::Exact),
        (option::of(small_u32()), option::of(small_u32())).prop_map(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => Hops::Range(Some(a.min(b)), Some(a.max(b))),
            (a, b) => Hops::Range(a, b),
        }),
    ]
}

fn output() -> impl Strategy<Value = Output> {
    proptest::sample::select(vec![
        Output::Nodes,
        Output::Ops,
        Output::Edges,
        Output::Subgraph,
        Output::Paths,
        Output::Count,
    ])
}

fn find_kind() -> impl Strategy<Value = FindKind> {
    proptest::sample::select(vec![
        FindKind::Vars,
        FindKind::Ops,
        FindKind::Edges,
        FindKind::Sessions,
        FindKind::Traces,
        FindKind::Cases,
        FindKind::Attributions,
    ])
}

fn literal() -> BoxedStrategy<Literal> {
    prop_oneof![
        text().prop_map(Literal::Str),
        prop_oneof![-100i64..100, any::<i64>()].prop_map(Literal::Int),
        prop_oneof![
            -1e3f64..1e3,
            any::<f64>().prop_filter("finite", |x| x.is_finite())
        ]
        .prop_map(Literal::Float),
        any::<bool>().prop_map(Literal::Bool),
        Just(Literal::Null),
    ]
    .boxed()
}

fn field() -> BoxedStrategy<FieldPath> {
    // A keyword may start a path (`trace.id`), except the literals NULL, TRUE
    // and FALSE, which the grammar reads first.
    let keyword_head = keyword().prop_filter("not a literal", |k| {
        !["null", "true", "false"]
            .iter()
            .any(|l| k.eq_ignore_ascii_case(l))
    });
    prop_oneof![
        4 => (ident(), vec(name(), 0..3)),
        1 => (keyword_head, vec(name(), 0..3)),
    ]
    .prop_map(|(first, rest)| {
        let mut parts = vec![first];
        parts.extend(rest);
        FieldPath {
            parts,
            span: Span::default(),
        }
    })
    .boxed()
}

fn cmp_op() -> impl Strategy<Value = CmpOp> {
    proptest::sample::select(vec![
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ])
}

fn call(arg: impl Strategy<Value = CallArg>) -> impl Strategy<Value = Expr> {
    (ident(), arg).prop_map(|(name, arg)| Expr::Call {
        name,
        arg,
        span: Span::default(),
    })
}

fn expr() -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![
        3 => literal().prop_map(Expr::Lit),
        1 => param_name().prop_map(Expr::Param),
        3 => field().prop_map(Expr::Field),
        1 => call(prop_oneof![Just(CallArg::None), Just(CallArg::Star)]),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        let boxed = inner.clone().prop_map(Box::new);
        let in_list = prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Expr::List),
            param_name().prop_map(Expr::Param),
        ]
        .prop_map(Box::new);
        let test = prop_oneof![
            (cmp_op(), boxed.clone()).prop_map(|(op, r)| Test::Cmp(op, r)),
            boxed.clone().prop_map(Test::Contains),
            boxed.clone().prop_map(Test::StartsWith),
            boxed.clone().prop_map(|pattern| Test::Regex {
                pattern,
                operator: Span::default(),
                pattern_span: Span::default(),
            }),
            (any::<bool>(), in_list).prop_map(|(negated, list)| Test::In { negated, list }),
            any::<bool>().prop_map(|negated| Test::IsNull { negated }),
        ];
        prop_oneof![
            1 => vec(inner.clone(), 0..4).prop_map(Expr::List),
            1 => call(
                (any::<bool>(), boxed.clone())
                    .prop_map(|(distinct, expr)| CallArg::Expr { distinct, expr })
            ),
            3 => (boxed.clone(), test).prop_map(|(l, t)| Expr::Test(l, t)),
            1 => boxed.prop_map(Expr::Not),
            1 => vec(inner.clone(), 2..4).prop_map(Expr::And),
            1 => vec(inner, 2..4).prop_map(Expr::Or),
        ]
    })
    .boxed()
}

fn props() -> BoxedStrategy<Vec<Property>> {
    let value = prop_oneof![
        3 => literal().prop_map(Expr::Lit),
        1 => param_name().prop_map(Expr::Param),
    ];
    let prop = (ident(), value).prop_map(|(key, value)| Property {
        key: unplaced(key),
        value,
    });
    prop_oneof![Just(Vec::new()), vec(prop, 1..3)].boxed()
}

fn node_pattern() -> BoxedStrategy<NodePattern> {
    (option::of(ident()), option::of(name()), props())
        .prop_map(|(var, label, props)| NodePattern {
            var: var.map(unplaced),
            label,
            props,
        })
        .boxed()
}

fn rel_pattern() -> BoxedStrategy<RelPattern> {
    (
        any::<bool>(),
        option::of(ident()),
        option::of(name()),
        option::of(hops()),
        props(),
    )
        .prop_map(|(leftward, var, label, hops, props)| RelPattern {
            leftward,
            var: var.map(unplaced),
            label,
            hops,
            props,
        })
        .boxed()
}

fn pattern() -> BoxedStrategy<Pattern> {
    (node_pattern(), vec((rel_pattern(), node_pattern()), 0..3))
        .prop_map(|(first, steps)| Pattern { first, steps })
        .boxed()
}

fn returns() -> BoxedStrategy<Returns> {
    (
        any::<bool>(),
        vec(
            (expr(), option::of(ident())).prop_map(|(expr, alias)| ReturnItem { expr, alias }),
            1..4,
        ),
    )
        .prop_map(|(distinct, items)| Returns { distinct, items })
        .boxed()
}

fn order_by() -> BoxedStrategy<Vec<OrderItem>> {
    let dir = proptest::sample::select(vec![SortDir::Default, SortDir::Asc, SortDir::Desc]);
    vec(
        (expr(), dir).prop_map(|(expr, dir)| OrderItem { expr, dir }),
        0..3,
    )
    .boxed()
}

fn traverse() -> BoxedStrategy<Traverse> {
    (
        prop_oneof![Just(Direction::Backward), Just(Direction::Forward)],
        vec(start(), 1..4),
        option::of(in_trace()),
        option::of(depth()),
        option::of(expr()),
        option::of(expr()),
        option::of(expr()),
        option::of(output()),
        option::of(count_arg()),
    )
        .prop_map(
            |(direction, starts, in_trace, depth, until, while_, filter, output, limit)| Traverse {
                direction,
                starts,
                in_trace,
                depth,
                until,
                while_,
                filter,
                output,
                limit,
            },
        )
        .boxed()
}

fn match_stmt() -> BoxedStrategy<Match> {
    (
        vec(pattern(), 1..3),
        option::of(in_trace()),
        option::of(expr()),
        returns(),
        order_by(),
        option::of(count_arg()),
    )
        .prop_map(
            |(patterns, in_trace, filter, returns, order_by, limit)| Match {
                patterns,
                in_trace,
                filter,
                returns,
                order_by,
                limit,
            },
        )
        .boxed()
}

fn find() -> BoxedStrategy<Find> {
    (
        find_kind(),
        option::of(in_trace()),
        option::of(expr()),
        vec(expr(), 0..3),
        option::of(returns()),
        order_by(),
        option::of(count_arg()),
    )
        .prop_map(
            |(kind, in_trace, filter, group_by, returns, order_by, limit)| Find {
                kind,
                in_trace,
                filter,
                group_by,
                returns,
                order_by,
                limit,
            },
        )
        .boxed()
}

fn describe() -> BoxedStrategy<Describe> {
    (start(), option::of(in_trace()))
        .prop_map(|(target, in_trace)| Describe { target, in_trace })
        .boxed()
}

fn attribute() -> BoxedStrategy<Attribute> {
    let target = prop_oneof![
        1 => Just(AttributeTarget::Cases),
        3 => vec(start(), 1..4)
            .prop_filter("a lone `cases` reads as the keyword", |starts| {
                !matches!(
                    starts.as_slice(),
                    [Start::Ref(NodeRef::Name { full_name, version: None })]
                        if full_name.eq_ignore_ascii_case("cases")
                )
            })
            .prop_map(AttributeTarget::Starts),
        2 => prop_oneof![
            find().prop_map(CaseQuery::Find),
            (ident(), option::of(expr()), with_params())
                .prop_map(|(name, over, params)| CaseQuery::RunPattern(RunPattern { name, over, params })),
        ]
        .prop_map(|query| AttributeTarget::Query(Box::new(Subquery {
            query,
            span: Span::default(),
        }))),
    ];
    let setting = option::of(prop_oneof![
        Just("benchmark".to_string()),
        Just("production".to_string()),
        param_name(),
    ]);
    (target, option::of(in_trace()), param_name(), setting)
        .prop_map(|(target, in_trace, method, setting)| Attribute {
            in_trace: match target {
                AttributeTarget::Query(_) => None,
                _ => in_trace,
            },
            target,
            method,
            method_span: Span::default(),
            setting: setting.map(|s| (s, Span::default())),
        })
        .boxed()
}

/// A value a `WITH $p = ...` may give: a literal or a list of literals.
fn param_value() -> BoxedStrategy<Value> {
    let lit = literal().prop_map(|l| literal_value(&l));
    prop_oneof![
        3 => lit.clone(),
        1 => vec(lit, 0..4).prop_map(Value::List),
    ]
    .boxed()
}

/// The parameters of one `WITH`, each named once.
fn with_params() -> BoxedStrategy<Vec<(String, Value)>> {
    vec((param_name(), param_value()), 0..4)
        .prop_map(|mut params| {
            let mut seen = std::collections::HashSet::new();
            params.retain(|(name, _)| seen.insert(name.clone()));
            params
        })
        .boxed()
}

/// What a pattern saves: a TRACE / FORWARD, MATCH or FIND without IN TRACE.
fn pattern_body() -> BoxedStrategy<Statement> {
    prop_oneof![
        traverse().prop_map(|t| Statement::Traverse(Traverse {
            in_trace: None,
            ..t
        })),
        match_stmt().prop_map(|m| Statement::Match(Match {
            in_trace: None,
            ..m
        })),
        find().prop_map(|f| Statement::Find(Find {
            in_trace: None,
            ..f
        })),
    ]
    .boxed()
}

/// The statements about patterns, which EXPLAIN does not take.
fn pattern_statement() -> BoxedStrategy<Statement> {
    prop_oneof![
        3 => (ident(), with_params(), pattern_body()).prop_map(|(name, params, body)| {
            Statement::SavePattern(SavePattern {
                name,
                params,
                body: Box::new(body),
            })
        }),
        3 => (ident(), option::of(expr()), with_params())
            .prop_map(|(name, over, params)| Statement::RunPattern(RunPattern { name, over, params })),
        1 => Just(Statement::ShowPatterns),
        1 => ident().prop_map(Statement::ShowPatternHistory),
        1 => ident().prop_map(Statement::DropPattern),
    ]
    .boxed()
}

/// Any statement but `EXPLAIN` and the pattern statements.
fn plain_statement() -> BoxedStrategy<Statement> {
    prop_oneof![
        3 => traverse().prop_map(Statement::Traverse),
        3 => match_stmt().prop_map(Statement::Match),
        3 => find().prop_map(Statement::Find),
        1 => Just(Statement::ShowTraces),
        1 => describe().prop_map(Statement::Describe),
        2 => attribute().prop_map(Statement::Attribute),
    ]
    .boxed()
}

fn statement() -> BoxedStrategy<Statement> {
    prop_oneof![
        5 => plain_statement(),
        1 => plain_statement().prop_map(|s| Statement::Explain(Box::new(s))),
        2 => pattern_statement(),
    ]
    .boxed()
}

proptest! {
    /// (a) parse(print(s)) == s, and (b) print(parse(print(s))) == print(s).
    #[test]
    fn printed_statements_parse_back(s in statement()) {
        let printed = s.to_string();
        let parsed = match parse_statement(&printed) {
            Ok(p) => p,
            Err(e) => return Err(TestCaseError::fail(format!("{printed}\ndid not parse: {e}"))),
        };
        prop_assert_eq!(&without_spans(&parsed), &s, "printed as {}", printed);
        prop_assert_eq!(parsed.to_string(), printed);
    }

    /// (c) Printing is stable: the same tree prints the same text, with or
    /// without a trailing `;`, alone or within a script.
    #[test]
    fn printing_is_stable(s in statement(), t in statement()) {
        let printed = s.to_string();
        prop_assert_eq!(s.clone().to_string(), printed.clone());
        prop_assert_eq!(parse_statement(&format!("{printed};")).map(|p| p.to_string()), Ok(printed.clone()));
        let script = format!("{printed};\n{t};");
        let parsed = parse_script(&script).map_err(|e| TestCaseError::fail(format!("{script}\n{e}")))?;
        prop_assert_eq!(parsed.len(), 2);
        prop_assert_eq!(parsed[0].to_string(), printed);
        prop_assert_eq!(parsed[1].to_string(), t.to_string());
    }
}

/// Parses `text` on a thread with the default 2 MB stack, as a caller might.
fn parse_on_small_stack(text: String) -> Result<Statement, String> {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || parse_statement(&text).map_err(|e| e.to_string()))
        .expect("thread")
        .join()
        .expect("no panic")
}

#[test]
fn deep_nesting_is_refused_rather_than_overflowing_the_stack() {
    let deep =
        |open: &str, close: &str, n: usize| format!("{}x{}", open.repeat(n), close.repeat(n));
    let refused = [
        format!("FIND vars WHERE {}", deep("(", ")", 100_000)),
        format!("FIND vars WHERE {}", deep("(", "", 100_000)),
        format!("FIND vars WHERE {}", deep("[", "]", 5_000)),
        format!("FIND vars WHERE {}", deep("f(", ")", 5_000)),
        format!("FIND vars WHERE {}", deep("NOT ", "", 50_000)),
        format!("FIND vars WHERE {}", deep("NOT (", ")", 5_000)),
        format!("FIND vars WHERE {}", deep("NOT f(", ")", 5_000)),
        format!("FIND vars WHERE {}", deep("(", ")", 49)),
        // A quote in a comment does not hide what follows it...
        format!(
            "FIND vars WHERE x-- it's\n = {} -- '",
            deep("(", ")", 5_000)
        ),
        // ...nor does `--` inside a bare name or after an arrow.
        format!("TRACE a--b WHERE {}", deep("(", ")", 5_000)),
        format!("TRACE a---b WHERE {} -- '", deep("(", ")", 5_000)),
        format!("MATCH (a)<--(b) WHERE {} RETURN a", deep("(", ")", 5_000)),
    ];
    for text in refused {
        let e = parse_on_small_stack(text).unwrap_err();
        assert!(e.contains("nest more than 48 levels"), "{e}");
    }
    let accepted = [
        format!("FIND vars WHERE {}", deep("(", ")", 47)),
        format!("FIND vars WHERE {}", deep("NOT ", "", 47)),
        format!("FIND vars WHERE x = '{}'", "(".repeat(1_000)),
        "-- don't (\nFIND vars WHERE (x = 1) -- it's (((\n".to_string(),
        format!(
            "FIND vars WHERE {} RETURN {}",
            vec!["NOT x"; 300].join(" AND "),
            vec!["f(x)"; 300].join(", ")
        ),
        "TRACE a--b, c WHERE (x) -- (((".to_string(),
        // Many places where `--` may or may not start a comment.
        format!("TRACE {}", "a--".repeat(20_000)),
        format!("TRACE a{}", "-".repeat(20_000)),
    ];
    for text in accepted {
        if let Err(e) = parse_on_small_stack(text.clone()) {
            panic!("{text}\n{e}");
        }
    }
}

/// Fields named like keywords, reachable through parentheses, print back so
/// that they read as fields again.
#[test]
fn fields_named_like_keywords_round_trip() {
    for text in [
        "FIND vars RETURN (distinct.x), count((distinct))",
        "FIND vars WHERE (not) IS NULL AND NOT (not) AND (asc) = (desc) ORDER BY (asc) DESC",
        "FIND traces WHERE trace.id = 'a' AND not.x IS NULL RETURN (limit)",
    ] {
        let stmt = parse_statement(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
        let printed = stmt.to_string();
        let again = parse_statement(&printed).unwrap_or_else(|e| panic!("{printed}\n{e}"));
        assert_eq!(without_spans(&again), without_spans(&stmt), "{printed}");
        assert_eq!(again.to_string(), printed);
    }
}

/// `NOT (` is not also tried as a call to a function named NOT, so that
/// rejecting unclosed text does not take longer with each NOT.
#[test]
fn unclosed_nots_fail_fast() {
    let text = format!("FIND vars WHERE {}x", "NOT (h(NOT(".repeat(30));
    let started = std::time::Instant::now();
    assert!(parse_statement(&text).is_err());
    assert!(parse_script(&text).is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
