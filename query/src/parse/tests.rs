use crate::ast::strip_spans::without_spans;
use crate::ast::*;
use crate::keywords::KEYWORDS;
use crate::value::Value;
use crate::{parse_script, parse_statement};

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
                    e.contains(&format!(
                        "expected a pattern name, found '{word}' (a keyword cannot name a pattern)"
                    )),
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
    let AttributeTarget::Query(q) = &a.target else {
        panic!("not a subquery: {:?}", a.target)
    };
    let Subquery {
        query: CaseQuery::RunPattern(r),
        span,
    } = q.as_ref()
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
