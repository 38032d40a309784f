//! End-to-end tests of `memtrace query`: formats, parameters, errors, exit codes.

mod common;

use common::*;

const ANSWER: &str = "str:663d79858dc5e938f2b614b6b560fc10a2aeeb24@1";

#[test]
fn json_rows_carry_the_trace_and_full_node_ids() {
    let (dir, db) = with_sample();
    let q = format!("TRACE '{ANSWER}' DEPTH 1 RETURN nodes");
    let o = ok(run(
        dir.path(),
        Some(&db),
        &["query", &q, "--format", "json"],
    ));
    let v = json(&o);
    assert_eq!(
        v["columns"],
        serde_json::json!(["trace", "node", "category", "depth", "via_op"])
    );
    let rows = v["rows"].as_array().unwrap();
    let mut nodes: Vec<&str> = rows.iter().map(|r| r[1].as_str().unwrap()).collect();
    nodes.sort_unstable();
    assert_eq!(
        nodes,
        [
            "memory_store@2",
            "retrieved:list:7f3c311ff07f7757a701259feebe1c535d5f8fbc@1",
            "str:05e8691f5383ac46bd377f51116e408b07624d1e@1"
        ]
    );
    assert!(rows.iter().all(|r| r[0] == SAMPLE_GRAPH && r[3] == 1));
}

#[test]
fn csv_and_table_show_the_same_rows() {
    let (dir, db) = with_sample();
    let q = "FIND ops GROUP BY op.kind RETURN op.kind AS kind, count(*) AS n ORDER BY kind";
    let csv = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &["query", q, "--format", "csv"],
    )));
    assert_eq!(
        csv,
        "kind,n\r\ngeneration,1\r\nllm_call,1\r\nmutation,1\r\nsentinel,1\r\n"
    );
    let table = stdout(&ok(run(dir.path(), Some(&db), &["query", q])));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["kind", "n"]
    );
    assert!(lines[2].starts_with("generation"), "{table}");
    assert_eq!(*lines.last().unwrap(), "(4 rows)");
}

#[test]
fn parameters_fill_starts_and_values() {
    let (dir, db) = with_sample();
    let o = ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            "TRACE $start IN TRACE $t WHERE var.category = $cat RETURN count",
            "--param",
            &format!("start={ANSWER}"),
            "--param",
            &format!("t={SAMPLE_GRAPH}"),
            "--param",
            "cat=prompt",
            "--format",
            "json",
        ],
    ));
    assert_eq!(json(&o)["rows"], serde_json::json!([[SAMPLE_GRAPH, 1]]));
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "TRACE $start RETURN count"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("parameter $start is not set"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_syntax_error_shows_the_caret_and_the_nearest_keyword_and_fails() {
    let (dir, db) = with_sample();
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "TRACE answer:42 UNTILL op.kind = 'extraction'"],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("line 1, column 17"), "{err}");
    assert!(err.contains("did you mean UNTIL?"), "{err}");
    assert!(err.contains("\n                  ^"), "{err}");
    assert!(stdout(&o).is_empty(), "no half result on stdout");
}

#[test]
fn a_start_that_does_not_exist_is_an_error_not_an_empty_result() {
    let (dir, db) = with_sample();
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "TRACE answer:42 --format json"],
    );
    assert!(!o.status.success());
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "TRACE answer:42", "--format", "json"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no trace holds a variable or op answer:42"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
    let o = run(
        dir.path(),
        Some(&db),
        &[
            "query",
            &format!("TRACE answer:42 IN TRACE '{SAMPLE_GRAPH}'"),
        ],
    );
    assert!(
        stderr(&o).contains("no variable or op answer:42"),
        "{}",
        stderr(&o)
    );
    let o = run(dir.path(), Some(&db), &["query", "SHOW TRACES IN"]);
    assert!(!o.status.success());
}

#[test]
fn querying_a_missing_database_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("absent.db");
    let o = run(dir.path(), Some(&db), &["query", "SHOW TRACES"]);
    assert!(!o.status.success());
    assert!(!db.exists());
}

#[test]
fn explain_prints_the_plan_without_running_it() {
    let (dir, db) = with_sample();
    let o = ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            "EXPLAIN TRACE answer:42 UNTIL op.kind = 'extraction' RETURN ops LIMIT 3",
            "--format",
            "json",
        ],
    ));
    let v = json(&o);
    let lines: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap())
        .collect();
    assert_eq!(lines[0], "Limit 3");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("stop at op.kind = 'extraction'")),
        "{lines:?}"
    );
    assert!(
        lines.last().unwrap().contains("Resolve starts answer:42"),
        "{lines:?}"
    );
}

#[test]
fn query_help_has_examples() {
    let dir = tempfile::tempdir().unwrap();
    let o = ok(run(dir.path(), None, &["query", "--help"]));
    assert!(stdout(&o).contains("Examples:"));
    assert!(stdout(&o).contains("--format"));
}

#[test]
fn scripts_run_from_a_file_or_standard_input_statement_by_statement() {
    let (dir, db) = with_sample();
    let script = dir.path().join("checks.mt");
    std::fs::write(
        &script,
        "-- counts\nFIND ops RETURN count(*) AS n;\n\nFIND vars\n  WHERE var.category = 'prompt'\n  RETURN var.node_id; -- trailing\n",
    )
    .unwrap();
    let o = ok(run(
        dir.path(),
        Some(&db),
        &["query", "-f", script.to_str().unwrap(), "--format", "csv"],
    ));
    assert_eq!(
        stdout(&o),
        "n\r\n4\r\n\r\nvar.node_id\r\nprompt:str:3f054e1126c996b7d7b3a51f8b508abce3d7333c@1\r\n"
    );

    // Standard input, JSON: one object per statement.
    let o = ok(run_with_input(
        dir.path(),
        Some(&db),
        &["query", "--format", "json"],
        "SHOW TRACES; FIND ops RETURN count(*)",
    ));
    let values: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&o.stdout)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(values.len(), 2);
    assert_eq!(values[0]["rows"][0][0], SAMPLE_GRAPH);
    assert_eq!(values[1]["rows"], serde_json::json!([[4]]));
}

#[test]
fn a_failing_statement_stops_the_script_and_says_which() {
    let (dir, db) = with_sample();
    let o = run(
        dir.path(),
        Some(&db),
        &[
            "query",
            "FIND ops RETURN count(*); FIND vars WHERE var.nope = 1; SHOW TRACES",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("(1 row)"),
        "the first ran: {}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains(SAMPLE_GRAPH), "the third did not run");
    let err = stderr(&o);
    assert!(err.contains("statement 2"), "{err}");
    assert!(err.contains("unknown field var.nope"), "{err}");
    // A script that does not parse runs nothing.
    let o = run(dir.path(), Some(&db), &["query", "SHOW TRACES; FIND varz"]);
    assert!(!o.status.success());
    assert!(stdout(&o).is_empty());
    assert!(stderr(&o).contains("did you mean vars?"), "{}", stderr(&o));
    // Only comments: nothing to run.
    let blank = dir.path().join("blank.mt");
    std::fs::write(&blank, "-- nothing yet\n\n").unwrap();
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "-f", blank.to_str().unwrap()],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no statement to run"), "{}", stderr(&o));
}

#[test]
fn tree_format_draws_the_provenance_with_op_names_on_the_branches() {
    let (dir, db) = with_sample();
    let q = format!("TRACE '{ANSWER}'");
    let o = ok(run(
        dir.path(),
        Some(&db),
        &["query", &q, "--format", "tree"],
    ));
    let expected = format!(
        "{ANSWER}   (trace {SAMPLE_GRAPH})\n\
         ├── [rag.answer] str:05e8691f5383ac46bd377f51116e408b07624d1e@1\n\
         ├── [rag.answer] retrieved:list:7f3c311ff07f7757a701259feebe1c535d5f8fbc@1\n\
         └── [rag.answer] memory_store@2\n    \
         ├── [memory.append] memory_store@1\n    \
         └── [memory.append] llm_output:str:23bdc09b3c7ac90ce55630f1b5ea7181c74a6e2c@1\n        \
         ├── [llm.generate] prompt:str:3f054e1126c996b7d7b3a51f8b508abce3d7333c@1\n        \
         └── [llm.generate] float:38f6d7875e3195bdaee448d2cb6917f3ae4994af@1\n"
    );
    assert_eq!(stdout(&o), expected);
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "SHOW TRACES", "--format", "tree"],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("the tree format draws TRACE and FORWARD results"));
}

#[test]
fn dot_and_mermaid_draw_the_result_subgraph_with_op_names() {
    let (dir, db) = with_sample();
    let dot = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &["query", "TRACE memory_store@2", "--format", "dot"],
    )));
    assert!(dot.starts_with("digraph provenance {"), "{dot}");
    assert_eq!(dot.matches(" -> ").count(), 4, "{dot}");
    assert_eq!(dot.matches("[label=\"memory.append\"]").count(), 2, "{dot}");
    assert_eq!(dot.matches("[label=\"llm.generate\"]").count(), 2, "{dot}");
    assert!(dot.contains("n0 [label=\"memory_store@2\"]"), "{dot}");
    let mermaid = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            "TRACE memory_store@2 DEPTH 1",
            "--format",
            "mermaid",
        ],
    )));
    assert!(mermaid.starts_with("flowchart LR\n"), "{mermaid}");
    assert_eq!(
        mermaid.matches("-->|\"memory.append\"|").count(),
        2,
        "{mermaid}"
    );
    assert!(
        !mermaid.contains("llm.generate"),
        "DEPTH 1 stops before: {mermaid}"
    );
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "FIND ops", "--format", "dot"],
    );
    assert!(!o.status.success());
}

#[test]
fn tables_fit_the_width_in_columns() {
    let (dir, db) = with_sample();
    let q = "FIND vars WHERE var.class = 'prompt' RETURN var.node_id, var.value";
    let wide = stdout(&ok(run(dir.path(), Some(&db), &["query", q])));
    assert!(wide.lines().any(|l| l.chars().count() > 60), "{wide}");
    let o = ok(command(dir.path(), Some(&db), &["query", q])
        .env("COLUMNS", "60")
        .output()
        .unwrap());
    let narrow = stdout(&o);
    for line in narrow.lines() {
        assert!(line.chars().count() <= 60, "{line:?} is wider than 60");
    }
    assert!(narrow.contains('…'), "{narrow}");
    assert!(narrow.ends_with("(1 row)\n"), "{narrow}");
}

#[test]
fn the_shell_reads_statements_and_commands_from_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fresh.db");
    let input = format!(
        "-- a new database: nothing to query yet\n\
         SHOW TRACES;\n\
         :import {}\n\
         :format csv\n\
         FIND ops\n  WHERE op.name = 'rag.answer'\n  RETURN op.name;\n\
         :param k=llm.generate\n\
         FIND ops WHERE op.name = $k RETURN count(*) AS n;\n\
         TRACE answer:42 UNTILL x;\n\
         :format tree\n\
         TRACE '{ANSWER}' DEPTH 1;\n\
         SHOW TRACES\n",
        sample().display()
    );
    let o = run_with_input(dir.path(), Some(&db), &[], &input);
    let (out, err) = (stdout(&o), stderr(&o));
    // The two failures make the exit status 1; everything else ran.
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("no database at"), "{err}");
    assert!(
        err.contains("did you mean UNTIL?") && err.contains('^'),
        "{err}"
    );
    assert!(
        !out.contains("memtrace> "),
        "no prompts without a terminal: {out}"
    );
    assert!(out.contains("1 trace(s) stored"), "{out}");
    assert!(
        out.contains("format: csv\nop.name\r\nrag.answer\r\n"),
        "{out}"
    );
    assert!(out.contains("n\r\n1\r\n"), "{out}");
    assert!(out.contains("├── [rag.answer]"), "{out}");
    // The last statement has no ';' but the input ended: it runs, as a
    // table, since tree draws only traversals.
    assert!(out.trim_end().ends_with("(1 row)"), "{out}");
    assert!(out.contains(SAMPLE_GRAPH));
}

#[test]
fn the_shell_leaves_at_quit_and_reports_unknown_commands() {
    let (dir, db) = with_sample();
    let o = run_with_input(
        dir.path(),
        Some(&db),
        &[],
        ":timing on\n:nope\n:help find\n:quit\nSHOW TRACES;\n",
    );
    assert_eq!(o.status.code(), Some(1));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("timing: on"), "{out}");
    assert!(err.contains("unknown command :nope"), "{err}");
    assert!(out.contains("FIND: records across all traces"), "{out}");
    assert!(
        !out.contains(SAMPLE_GRAPH),
        "nothing runs after :quit: {out}"
    );
}

#[test]
fn a_statement_over_its_time_limit_is_stopped_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let set = gen_set(
        dir.path(),
        "set",
        &["--system", "all", "--traces", "4", "--seed", "7"],
    );
    ok(run(
        dir.path(),
        Some(&db),
        &["import", set.to_str().unwrap()],
    ));
    // Every path of up to 30 edges between any two variables: far longer
    // than the limit (hundreds of milliseconds against 20).
    let heavy = "MATCH (a)-[*1..30]->(b) RETURN count(*)";
    let o = run(
        dir.path(),
        Some(&db),
        &["query", heavy, "--timeout", "0.02"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the statement ran longer than 0.02 s and was stopped (--timeout)"),
        "{}",
        stderr(&o)
    );
    // Within its limit a statement answers as without one.
    let quick = ok(run(
        dir.path(),
        Some(&db),
        &[
            "query",
            "SHOW TRACES",
            "--timeout",
            "30",
            "--format",
            "json",
        ],
    ));
    assert_eq!(json(&quick)["rows"].as_array().map(Vec::len), Some(4));
    let bad = run(
        dir.path(),
        Some(&db),
        &["query", "SHOW TRACES", "--timeout", "soon"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("not a number of seconds above zero"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn a_statement_may_start_with_a_dash() {
    let (dir, db) = with_sample();
    // A leading `--` comment, before or after the options: the statement,
    // not an option.
    for args in [
        &[
            "query",
            "-- how many ops\nFIND ops RETURN count(*) AS n",
            "--format",
            "csv",
        ][..],
        &[
            "query",
            "--format",
            "csv",
            "-- how many ops\nFIND ops RETURN count(*) AS n",
        ][..],
    ] {
        let o = ok(run(dir.path(), Some(&db), args));
        assert_eq!(stdout(&o), "n\r\n4\r\n", "{args:?}");
    }
    // A statement that starts with a minus is read, and refused, as a statement.
    let o = run(dir.path(), Some(&db), &["query", "-1"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("line 1, column 1"), "{err}");
    assert!(!err.contains("unexpected argument"), "{err}");
}

/// One generated trace of some two thousand variables, in `t.db`.
fn one_generated_trace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    gen_set(
        dir.path(),
        "g",
        &["--system", "rag", "--traces", "1", "--seed", "5"],
    );
    let db = dir.path().join("t.db");
    ok(run(dir.path(), Some(&db), &["import", "g"]));
    (dir, db)
}

#[test]
fn a_time_limit_stops_a_long_condition_in_the_middle_of_a_trace() {
    // 20,000 terms on each of the trace's variables: evaluated whole, one
    // trace of them takes far longer than the limit (the work was looked
    // at between traces and every 4,096 rows only).
    let (dir, db) = one_generated_trace();
    let chain = dir.path().join("chain.mt");
    std::fs::write(
        &chain,
        format!(
            "FIND vars WHERE {} RETURN count(*)",
            vec!["var.version >= 1"; 20_000].join(" AND ")
        ),
    )
    .unwrap();
    let start = std::time::Instant::now();
    let o = run(
        dir.path(),
        Some(&db),
        &["query", "-f", chain.to_str().unwrap(), "--timeout", "2"],
    );
    let took = start.elapsed();
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("ran longer than 2 s and was stopped (--timeout)"),
        "{}",
        stderr(&o)
    );
    assert!(
        took < std::time::Duration::from_secs(10),
        "a 2 s limit took {took:?}"
    );
}

/// An export of one chain v0 -> v1 -> ... -> vN, each step by an op of its own.
fn chain_export(n: usize) -> String {
    let nodes: Vec<String> = (0..=n)
        .map(|i| format!(r#"{{"name":"v{i}","version":1,"value":"'x'","session_id":"s1"}}"#))
        .collect();
    let ops: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"op_id":"op-{i}","op_name":"step","session_id":"s1"}}"#))
        .collect();
    let edges: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"edge_id":"e{i}","op_id":"op-{i}","session_id":"s1","source_full_node_id":"v{i}@1","target_full_node_id":"v{}@1"}}"#,
                i + 1
            )
        })
        .collect();
    format!(
        r#"{{"graph_id":"chain","data":{{"nodes":[{}],"edges":[{}],"operations":[{}],"sessions":[{{"session_id":"s1"}}]}}}}"#,
        nodes.join(","),
        edges.join(","),
        ops.join(",")
    )
}

/// Runs memtrace and waits at most `limit` for it.
fn run_within(
    dir: &std::path::Path,
    db: &std::path::Path,
    args: &[&str],
    limit: std::time::Duration,
) -> std::process::Output {
    let child = command(dir, Some(db), args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: killing our own child process.
            unsafe { libc::kill(id as i32, libc::SIGKILL) };
            panic!("memtrace {args:?} ran longer than {limit:?}");
        }
    }
}

#[test]
fn the_tree_of_a_long_chain_is_drawn_in_bounded_lines_with_what_is_left_counted() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000;
    let file = dir.path().join("chain.json");
    std::fs::write(&file, chain_export(n)).unwrap();
    let db = dir.path().join("t.db");
    ok(run(
        dir.path(),
        Some(&db),
        &["import", file.to_str().unwrap()],
    ));
    let q = format!("TRACE 'v{n}@1'");
    let limit = std::time::Duration::from_secs(120);
    let o = ok(run_within(
        dir.path(),
        &db,
        &["query", &q, "--format", "tree"],
        limit,
    ));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("v{n}@1   (trace chain)"));
    assert_eq!(lines[1], format!("└── [step] v{}@1", n - 1));
    assert_eq!(lines.len(), 1 + 32 + 1, "{text}");
    assert_eq!(
        lines.last().unwrap().trim_start(),
        format!("└── ... {} more below (--tree-depth)", n - 32)
    );
    // The caps are settings; the first lines are the same at any depth.
    let o = ok(run_within(
        dir.path(),
        &db,
        &["query", &q, "--format", "tree", "--tree-depth", "3"],
        limit,
    ));
    let shallow: Vec<String> = stdout(&o).lines().map(String::from).collect();
    assert_eq!(shallow.len(), 1 + 3 + 1);
    assert_eq!(
        shallow[..4],
        lines[..4].iter().map(|l| l.to_string()).collect::<Vec<_>>()[..]
    );
    assert!(shallow[4].ends_with(&format!("... {} more below (--tree-depth)", n - 3)));
    let o = run(
        dir.path(),
        Some(&db),
        &["query", &q, "--format", "tree", "--tree-width", "0"],
    );
    assert!(!o.status.success());
}
