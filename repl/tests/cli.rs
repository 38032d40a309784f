//! End-to-end tests of the `memtrace` binary as a new user runs it.

mod common;
use common::*;

use std::process::Command;

#[test]
fn help_shows_examples_for_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let top = ok(run(dir.path(), None, &["--help"]));
    assert!(stdout(&top).contains("Examples:"));
    for sub in [
        "import",
        "export",
        "stats",
        "traces",
        "drop",
        "log",
        "demo",
        "query",
        "attribute",
        "eval",
        "report",
    ] {
        let o = ok(run(dir.path(), None, &[sub, "--help"]));
        assert!(
            stdout(&o).contains("Example"),
            "{sub} --help has no example:\n{}",
            stdout(&o)
        );
    }
}

#[test]
fn demo_uses_the_database_in_the_current_folder_and_can_be_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let first = ok(run(dir.path(), None, &["demo"]));
    assert!(
        dir.path().join("memtrace.db").join("CURRENT").is_file(),
        "default database is ./memtrace.db"
    );
    let text = stdout(&first);
    assert!(text.contains("imported the bundled sample"), "{text}");
    assert!(text.contains(SAMPLE_GRAPH));
    assert!(text.contains("generated and imported 4 trace(s)"), "{text}");
    for system in ["long_context", "rag", "mem0", "evermemos"] {
        assert!(text.contains(system), "{system} missing:\n{text}");
    }
    // Provenance queries with their answers, attribution, accuracy, report.
    assert!(text.contains("memtrace> TRACE prediction:"), "{text}");
    assert!(text.contains("memtrace> FORWARD "), "{text}");
    assert!(text.contains("new verdict(s) stored"), "{text}");
    assert!(
        text.contains("By memory system") && text.contains("Confusion"),
        "{text}"
    );
    let html = dir.path().join("memtrace-report").join("report.html");
    assert!(html.is_file(), "{text}");
    assert!(text.contains("report.html") && text.contains("ATTRIBUTE CASES IN TRACE"));
    assert!(!text.contains("error:"), "{text}");
    // Again: nothing is imported or stored twice.
    let again = stdout(&ok(run(dir.path(), None, &["demo"])));
    assert!(again.contains("already in"), "{again}");
    assert!(
        again.contains("the generated traces are already stored"),
        "{again}"
    );
    assert!(again.contains("; 0 new verdict(s) stored"), "{again}");
}

#[test]
fn import_then_export_gives_back_the_same_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let out = ok(run(
        dir.path(),
        Some(&db),
        &["import", sample().to_str().unwrap()],
    ));
    assert!(stdout(&out).contains("trace #1 graph-e02a1f3b041740d5b82569831ef2d06e (3 sessions, 9 variables, 4 ops, 8 edges, 0 cases)"), "{}", stdout(&out));
    let exported = json(&ok(run(dir.path(), Some(&db), &["export", SAMPLE_GRAPH])));
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sample()).unwrap()).unwrap();
    assert_eq!(exported, original);
    let file = dir.path().join("back.json");
    ok(run(
        dir.path(),
        Some(&db),
        &["export", "#1", "-o", file.to_str().unwrap()],
    ));
    let from_file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(from_file, original);
}

#[test]
fn dot_and_mermaid_draw_every_edge_with_its_op() {
    let (dir, db) = with_sample();
    let dot = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &["export", SAMPLE_GRAPH, "--format", "dot"],
    )));
    assert!(dot.starts_with("digraph"));
    assert_eq!(dot.matches(" -> ").count(), 8);
    assert!(
        dot.contains("n4 -> n5 [label=\"memory.append (mutation)\"]"),
        "{dot}"
    );
    assert!(dot.contains("memory_store@2\\n[memory_store]"), "{dot}");
    let mermaid = stdout(&ok(run(
        dir.path(),
        Some(&db),
        &["export", SAMPLE_GRAPH, "--format", "mermaid"],
    )));
    assert!(mermaid.starts_with("flowchart LR"));
    assert_eq!(mermaid.matches("-->|").count(), 8);
    assert!(
        mermaid.contains("n5 -->|\"rag.answer (generation)\"| n8"),
        "{mermaid}"
    );
}

#[test]
fn stats_and_traces_report_counts_in_table_and_json() {
    let (dir, db) = with_sample();
    let s = json(&ok(run(
        dir.path(),
        Some(&db),
        &["stats", "--format", "json"],
    )));
    for (k, v) in [
        ("traces", 1),
        ("sessions", 3),
        ("variables", 9),
        ("ops", 4),
        ("edges", 8),
        ("cases", 0),
    ] {
        assert_eq!(s[k], v, "{k}");
    }
    assert!(s["disk_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        s["imported_json_bytes"],
        std::fs::metadata(sample()).unwrap().len()
    );
    let t = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    let t = &t[0];
    assert_eq!(t["graph_id"], SAMPLE_GRAPH);
    assert_eq!(t["project_id"], "memtrace-demo");
    for (k, v) in [
        ("sessions", 3),
        ("variables", 9),
        ("ops", 4),
        ("edges", 8),
        ("cases", 0),
    ] {
        assert_eq!(t[k], v, "{k}");
    }
    let table = stdout(&ok(run(dir.path(), Some(&db), &["traces"])));
    assert!(
        table.contains("graph_id") && table.contains("#1") && table.contains("memtrace-demo"),
        "{table}"
    );
    let stats = stdout(&ok(run(dir.path(), Some(&db), &["stats"])));
    assert!(stats.contains("bytes on disk"), "{stats}");
}

#[test]
fn the_database_can_be_chosen_by_flag_or_environment() {
    let dir = tempfile::tempdir().unwrap();
    let env_db = dir.path().join("env.db");
    let o = Command::new(bin())
        .current_dir(dir.path())
        .env("MEMTRACE_DB", &env_db)
        .args(["import", sample().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(env_db.join("CURRENT").is_file());
    assert!(!dir.path().join("memtrace.db").exists());
    let flag_db = dir.path().join("flag.db");
    ok(run(
        dir.path(),
        Some(&flag_db),
        &["import", sample().to_str().unwrap()],
    ));
    assert!(flag_db.join("CURRENT").is_file());
}

#[test]
fn reading_a_missing_database_is_a_clear_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), None, &["stats"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no memtrace database at memtrace.db"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("memtrace.db").exists());
    let not_db = dir.path().join("file.txt");
    std::fs::write(&not_db, "hello").unwrap();
    let o = run(
        dir.path(),
        Some(&not_db),
        &["import", sample().to_str().unwrap()],
    );
    assert!(
        stderr(&o).contains("is not a memtrace database"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&not_db).unwrap(), "hello");
}

#[test]
fn duplicates_are_refused_unless_forced_and_selectors_say_which() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let s = sample();
    ok(run(dir.path(), Some(&db), &["import", s.to_str().unwrap()]));
    // The same content again is a no-op that says so.
    let again = ok(run(dir.path(), Some(&db), &["import", s.to_str().unwrap()]));
    assert!(
        stdout(&again).contains("trace #1 graph-e02a1f3b041740d5b82569831ef2d06e holds the same content; nothing written")
            && stdout(&again).contains("0 trace(s) stored, 1 already stored with the same content"),
        "{}",
        stdout(&again)
    );
    // Other content under the same graph id is refused.
    let other = dir.path().join("other.json");
    let text = std::fs::read_to_string(&s).unwrap();
    let mut changed: serde_json::Value = serde_json::from_str(&text).unwrap();
    changed["user_id"] = serde_json::json!("someone-else");
    std::fs::write(&other, changed.to_string()).unwrap();
    let refused = run(dir.path(), Some(&db), &["import", other.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("already stored (as #1) with other content; use --force"),
        "{}",
        stderr(&refused)
    );
    let forced = ok(run(
        dir.path(),
        Some(&db),
        &["import", "--force", s.to_str().unwrap()],
    ));
    assert!(stdout(&forced).contains("trace #2"), "{}", stdout(&forced));
    let ambiguous = run(dir.path(), Some(&db), &["export", SAMPLE_GRAPH]);
    assert!(
        stderr(&ambiguous).contains("names several traces (#1, #2)"),
        "{}",
        stderr(&ambiguous)
    );
    let unknown = run(dir.path(), Some(&db), &["export", "graph-nope"]);
    assert!(
        stderr(&unknown).contains("no trace graph-nope"),
        "{}",
        stderr(&unknown)
    );
    ok(run(dir.path(), Some(&db), &["export", "#2"]));
}

#[test]
fn importing_a_folder_again_resumes_an_interrupted_import() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let set = gen_set(
        dir.path(),
        "set",
        &[
            "--system",
            "rag",
            "--traces",
            "3",
            "--seed",
            "3",
            "--sessions",
            "2..2",
            "--messages",
            "4..4",
            "--questions",
            "4",
        ],
    );
    let mut files: Vec<_> = std::fs::read_dir(&set)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("manifest.json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    // An import stopped after its first file ...
    ok(run(
        dir.path(),
        Some(&db),
        &["import", files[0].to_str().unwrap()],
    ));
    // ... is resumed by importing the whole folder again.
    let resumed = ok(run(
        dir.path(),
        Some(&db),
        &["import", set.to_str().unwrap()],
    ));
    let out = stdout(&resumed);
    assert!(
        out.contains("2 trace(s) stored, 1 already stored with the same content from 3 file(s); 0 file(s) failed"),
        "{out}"
    );
    let traces = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    assert_eq!(traces.as_array().map(Vec::len), Some(3), "{traces}");
    // JSON Lines: stored lines are skipped, new ones stored.
    let lines = dir.path().join("all.jsonl");
    let mut text = String::new();
    for f in &files {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        text.push_str(&v.to_string());
        text.push('\n');
    }
    std::fs::write(&lines, text).unwrap();
    let db2 = dir.path().join("u.db");
    let first = dir.path().join("first.jsonl");
    std::fs::write(
        &first,
        std::fs::read_to_string(&lines)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    ok(run(
        dir.path(),
        Some(&db2),
        &["import", first.to_str().unwrap()],
    ));
    let out = stdout(&ok(run(
        dir.path(),
        Some(&db2),
        &["import", lines.to_str().unwrap()],
    )));
    assert!(
        out.contains("2 trace(s) stored, 1 already stored with the same content"),
        "{out}"
    );
}

#[test]
fn dropping_needs_confirmation_and_is_logged() {
    let (dir, db) = with_sample();
    let unconfirmed = run(dir.path(), Some(&db), &["drop", SAMPLE_GRAPH]);
    assert_eq!(unconfirmed.status.code(), Some(1));
    assert!(stderr(&unconfirmed).contains("pass --yes"));
    assert_eq!(
        json(&ok(run(
            dir.path(),
            Some(&db),
            &["traces", "--format", "json"]
        )))
        .as_array()
        .unwrap()
        .len(),
        1
    );
    ok(run(
        dir.path(),
        Some(&db),
        &["drop", SAMPLE_GRAPH, "--yes", "--reason", "test cleanup"],
    ));
    assert_eq!(
        json(&ok(run(
            dir.path(),
            Some(&db),
            &["traces", "--format", "json"]
        )))
        .as_array()
        .unwrap()
        .len(),
        0
    );
    let log = stdout(&ok(run(dir.path(), Some(&db), &["log"])));
    assert!(
        log.contains("import") && log.contains("drop") && log.contains("test cleanup"),
        "{log}"
    );
    // The same trace can come back after removal, under a new id.
    let back = ok(run(
        dir.path(),
        Some(&db),
        &["import", sample().to_str().unwrap()],
    ));
    assert!(stdout(&back).contains("trace #2"), "{}", stdout(&back));
}

#[test]
fn json_lines_files_import_one_trace_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let jsonl = dir.path().join("three.jsonl");
    ok(run(
        dir.path(),
        None,
        &[
            "synth",
            "--traces",
            "3",
            "--variables",
            "30",
            "--edges",
            "50",
            "-o",
            jsonl.to_str().unwrap(),
        ],
    ));
    let out = ok(run(
        dir.path(),
        Some(&db),
        &["import", jsonl.to_str().unwrap()],
    ));
    assert!(
        stdout(&out).contains("3 trace(s) stored from 1 file(s)"),
        "{}",
        stdout(&out)
    );
    let t = json(&ok(run(
        dir.path(),
        Some(&db),
        &["traces", "--format", "json"],
    )));
    assert_eq!(t.as_array().unwrap().len(), 3);
    assert_eq!(t[2]["variables"], 30);
    assert_eq!(t[2]["edges"], 50);
}

#[test]
fn export_with_labels_keeps_every_failed_case_and_imports_back() {
    use memtrace::attrib::{ErrorType, LabelInput};
    use memtrace::prelude::*;

    let (dir, db) = generated("5");
    let d = dir.path();
    let traces = json(&ok(run(d, Some(&db), &["traces", "--format", "json"])));
    let gid = traces[0]["graph_id"].as_str().unwrap().to_string();
    let cases_of = |db: &std::path::Path| {
        json(&ok(run(
            d,
            Some(db),
            &[
                "query",
                &format!(
                    "FIND cases IN TRACE '{gid}' RETURN case.query_id, case.query, \
                     case.golden_answers, case.prediction, case.evidence, case.error_type, \
                     case.op_id"
                ),
                "--format",
                "json",
            ],
        )))["rows"]
            .clone()
    };
    let before = cases_of(&db);
    let n = before.as_array().unwrap().len();
    assert!(n >= 2, "{before}");
    // Without labels, the file is the trace's export.
    let plain = dir.path().join("plain.json");
    let labelled = dir.path().join("labelled.json");
    for (file, extra) in [(&plain, None), (&labelled, Some("--labels"))] {
        let mut args = vec!["export", gid.as_str(), "-o", file.to_str().unwrap()];
        args.extend(extra);
        ok(run(d, Some(&db), &args));
    }
    assert_eq!(
        std::fs::read_to_string(&plain).unwrap(),
        std::fs::read_to_string(&labelled).unwrap()
    );
    // One case labelled by a person.
    let (case, op) = {
        let opened = memtrace::Database::open(&db).unwrap();
        let case = opened.failed_cases(Some(&gid)).unwrap()[1].id.clone();
        let op = opened.trace(&gid).unwrap().ops().unwrap()[2].op_id.clone();
        opened
            .add_label(
                &gid,
                &case,
                &LabelInput {
                    error_type: ErrorType::DeletionError,
                    op_id: &op,
                    reason: "seen",
                    author: "ana",
                },
            )
            .unwrap();
        (case, op)
    };
    ok(run(
        d,
        Some(&db),
        &["export", &gid, "--labels", "-o", labelled.to_str().unwrap()],
    ));
    let other = dir.path().join("other.db");
    ok(run(
        d,
        Some(&other),
        &["import", labelled.to_str().unwrap()],
    ));
    let after = cases_of(&other);
    assert_eq!(after.as_array().unwrap().len(), n, "every failed case");
    for (i, (was, is)) in before
        .as_array()
        .unwrap()
        .iter()
        .zip(after.as_array().unwrap())
        .enumerate()
    {
        if was[0] == case.as_str() {
            let (is, was) = (is.as_array().unwrap(), was.as_array().unwrap());
            assert_eq!(is[..5], was[..5], "case {i}");
            assert_eq!(is[5], "DeletionError");
            assert_eq!(is[6], op.as_str());
        } else {
            assert_eq!(is, was, "case {i}");
        }
    }
    // The label is kept only in the smartcomment format.
    let o = run(
        d,
        Some(&db),
        &["export", &gid, "--labels", "--format", "dot"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--labels writes a MemTraceBench file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_log_gives_iso_times_in_every_format() {
    let (dir, db) = with_sample();
    let d = dir.path();
    ok(run(
        d,
        Some(&db),
        &["drop", "#1", "--yes", "--reason", "a, \"b\""],
    ));
    let iso = |t: &str| {
        let b = t.as_bytes();
        t.len() == 24
            && b[4] == b'-'
            && b[10] == b'T'
            && b[19] == b'.'
            && t.ends_with('Z')
            && t.starts_with("20")
    };
    // The table: one line per event, the time as ISO-8601 UTC.
    let table = stdout(&ok(run(d, Some(&db), &["log"])));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[0].starts_with("seq  at  "), "{table}");
    assert!(!lines[0].contains("at_ms"), "{table}");
    for (line, action) in lines[2..].iter().zip(["import", "drop"]) {
        let at = line.split_whitespace().nth(1).unwrap();
        assert!(iso(at), "{at:?} in {table}");
        assert!(line.contains(action), "{table}");
    }
    // JSON: both times.
    let all = json(&ok(run(d, Some(&db), &["log", "--format", "json"])));
    let all = all.as_array().unwrap().clone();
    assert_eq!(all.len(), 2);
    for e in &all {
        assert!(iso(e["at"].as_str().unwrap()), "{e}");
        assert!(e["at_ms"].as_u64().unwrap() > 1_600_000_000_000, "{e}");
        assert_eq!(e["trace"], 1);
        assert_eq!(e["graph_id"], SAMPLE_GRAPH);
    }
    assert_eq!(all[1]["action"], "drop");
    assert_eq!(all[1]["detail"], "a, \"b\"");
    // JSON Lines: the same objects, one per line.
    let lines = stdout(&ok(run(d, Some(&db), &["log", "--format", "jsonl"])));
    let parsed: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed, all);
    // CSV: a header and the fields quoted where needed.
    let csv = stdout(&ok(run(d, Some(&db), &["log", "--format", "csv"])));
    let rows: Vec<&str> = csv.split("\r\n").collect();
    assert_eq!(rows[0], "seq,at,at_ms,action,trace,graph_id,detail");
    assert_eq!(
        rows[2],
        format!(
            "2,{},{},drop,1,{SAMPLE_GRAPH},\"a, \"\"b\"\"\"",
            all[1]["at"].as_str().unwrap(),
            all[1]["at_ms"]
        )
    );
    assert_eq!(rows.len(), 4, "{csv:?}");
}

#[test]
fn a_byte_order_mark_before_json_or_json_lines_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let db = d.join("t.db");
    let sample_text = std::fs::read_to_string(sample()).unwrap();
    let with_bom = d.join("bom.json");
    std::fs::write(&with_bom, format!("\u{feff}{sample_text}")).unwrap();
    let o = ok(run(d, Some(&db), &["import", with_bom.to_str().unwrap()]));
    assert!(
        stdout(&o).contains("trace #1 graph-e02a1f3b"),
        "{}",
        stdout(&o)
    );
    let original: serde_json::Value = serde_json::from_str(&sample_text).unwrap();
    assert_eq!(json(&ok(run(d, Some(&db), &["export", "#1"]))), original);
    // The mark is not content: the file without it is the same trace.
    let again = ok(run(d, Some(&db), &["import", sample().to_str().unwrap()]));
    assert!(
        stdout(&again).contains("already stored"),
        "{}",
        stdout(&again)
    );

    // JSON Lines: the mark before the first line.
    let line = |gid: &str| {
        let mut v = original.clone();
        v["graph_id"] = serde_json::json!(gid);
        v.to_string()
    };
    let lines = d.join("bom.jsonl");
    std::fs::write(
        &lines,
        format!("\u{feff}{}\n{}\n", line("bom-1"), line("bom-2")),
    )
    .unwrap();
    let o = ok(run(d, Some(&db), &["import", lines.to_str().unwrap()]));
    assert!(stdout(&o).contains("2 trace(s) stored"), "{}", stdout(&o));
    // A file with the mark and nothing else is empty, as an empty file is.
    let only = d.join("only.json");
    std::fs::write(&only, "\u{feff}").unwrap();
    let o = run(d, Some(&db), &["import", only.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("the input is empty"), "{}", stderr(&o));
    // UTF-16 is named as such.
    let utf16 = d.join("utf16.json");
    let mut bytes = vec![0xff, 0xfe];
    for unit in sample_text.encode_utf16() {
        bytes.extend(unit.to_le_bytes());
    }
    std::fs::write(&utf16, bytes).unwrap();
    let o = run(d, Some(&db), &["import", utf16.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("utf16.json: invalid at $: the input is UTF-16 (little-endian, with a byte order mark) text"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn python_nan_and_infinity_are_read_as_numbers_and_strings_stay_strings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let db = d.join("t.db");
    // Written by Python's json.dumps, which writes NaN, Infinity and -Infinity.
    let fixture = repl_fixtures().join("python_floats.json");
    let text = std::fs::read_to_string(&fixture).unwrap();
    assert!(text.contains(": NaN,") && text.contains(": -Infinity,"));
    ok(run(d, Some(&db), &["import", fixture.to_str().unwrap()]));
    // And as a line of JSON Lines.
    let lines = d.join("floats.jsonl");
    std::fs::write(
        &lines,
        text.replace('\n', " ")
            .replace("\"py-floats\"", "\"py-floats-2\"")
            + "\n",
    )
    .unwrap();
    ok(run(d, Some(&db), &["import", lines.to_str().unwrap()]));

    let q = "FIND traces RETURN trace.id, trace.meta.threshold, trace.meta.floor, \
             trace.meta.loss, trace.meta.label, trace.meta.note ORDER BY trace.id";
    // JSON: infinities as the numbers 1e+999 and -1e+999, NaN as null,
    // the strings as they were.
    let r = json(&ok(run(d, Some(&db), &["query", q, "--format", "json"])));
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let big: f64 = row[1].to_string().parse().unwrap();
        let small: f64 = row[2].to_string().parse().unwrap();
        assert!(row[1].is_number() && big == f64::INFINITY, "{row}");
        assert!(row[2].is_number() && small == f64::NEG_INFINITY, "{row}");
        assert!(row[3].is_null(), "{row}");
        assert_eq!(row[4], "NaN");
        assert_eq!(row[5], "Infinity and -Infinity are words here");
    }
    // A table shows them as Python writes them.
    let table = stdout(&ok(run(d, Some(&db), &["query", q])));
    assert!(
        table.contains("Infinity") && table.contains("-Infinity"),
        "{table}"
    );
    // They compare as numbers; CSV writes them as Python's float() reads them.
    let csv = stdout(&ok(run(
        d,
        Some(&db),
        &[
            "query",
            "FIND ops WHERE op.meta.max > 1000000000 RETURN op.meta.max, op.meta.score",
            "--format",
            "csv",
        ],
    )));
    assert_eq!(
        csv,
        "op.meta.max,op.meta.score\r\nInfinity,\r\nInfinity,\r\n"
    );
    // A string that says NaN stays a string, in values and in metadata.
    let r = json(&ok(run(
        d,
        Some(&db),
        &[
            "query",
            "FIND vars IN TRACE 'py-floats' RETURN var.value, var.meta.text, var.meta.weight",
            "--format",
            "json",
        ],
    )));
    assert_eq!(r["rows"][0][0], "'NaN'");
    assert_eq!(r["rows"][0][1], "NaN");
    assert_eq!(r["rows"][0][2].to_string(), "-1e+999");
    assert_eq!(r["rows"][1][0], "nan");
    // The export is JSON that any reader takes, with the same numbers.
    let exported = stdout(&ok(run(d, Some(&db), &["export", "py-floats"])));
    assert!(!exported.contains("NaN,") && !exported.contains("Infinity,"));
    let back: serde_json::Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(back["metadata"]["threshold"].to_string(), "1e+999");
    assert_eq!(back["metadata"]["floor"].to_string(), "-1e+999");
    assert!(back["metadata"]["loss"].is_null());
    assert_eq!(back["metadata"]["label"], "NaN");
    assert_eq!(
        back["data"]["sessions"][0]["metadata"]["budget"].to_string(),
        "1e+999"
    );
    assert_eq!(back["data"]["nodes"][0]["value"], "'NaN'");
}
