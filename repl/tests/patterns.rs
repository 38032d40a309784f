// End-to-end tests of failure patterns through the binary: SAVE, RUN, SHOW
// and DROP PATTERN in `memtrace query`, `memtrace patterns` in its three
// formats, and `memtrace check` passing, failing and refusing bad files.

mod common;

use std::process::Output;

use common::*;

fn fail(o: Output) -> String {
    assert!(
        !o.status.success(),
        "memtrace should have failed: {}",
        stdout(&o)
    );
    stderr(&o)
}

#[test]
fn patterns_are_saved_run_listed_and_dropped_in_the_language() {
    let (dir, db) = generated("5");
    let cwd = dir.path();
    let q = |text: &str| run(cwd, Some(&db), &["query", text, "--format", "json"]);
    let o = json(&ok(q(
        "SAVE PATTERN many_versions WITH $v = 3 AS FIND vars WHERE var.version >= $v \
         GROUP BY var.full_name RETURN var.full_name AS unit, max(var.version) AS versions",
    )));
    assert_eq!(o["columns"][0], "pattern");
    assert_eq!(o["rows"][0][0], "many_versions");
    assert_eq!(o["rows"][0][1], 1);
    // Run with its default, then with another value: fewer units.
    let all = json(&ok(q("RUN PATTERN many_versions")));
    assert_eq!(
        all["columns"],
        serde_json::json!(["trace", "unit", "versions"])
    );
    let few = json(&ok(q("RUN PATTERN many_versions WITH $v = 50")));
    let (a, f) = (
        all["rows"].as_array().unwrap().len(),
        few["rows"].as_array().unwrap().len(),
    );
    assert!(a > f && f > 0, "{a} {f}");
    // OVER TRACES limits the traces.
    let mem0 = json(&ok(q(
        "RUN PATTERN many_versions OVER TRACES WHERE trace.project_id = 'mem0'",
    )));
    let rows = mem0["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|r| r[0].as_str().unwrap().starts_with("mem0")),
        "{mem0}"
    );
    // A second version, then a drop; the history keeps all three.
    ok(q(
        "SAVE PATTERN many_versions WITH $v = 4 AS FIND vars WHERE var.version >= $v",
    ));
    let shown = json(&ok(q("SHOW PATTERNS")));
    let mine: Vec<&serde_json::Value> = shown["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[0] == "many_versions")
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0][1], "saved");
    assert_eq!(mine[0][3], "$v = 4");
    assert_eq!(mine[0][5], 2);
    assert!(shown["rows"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r[0] == "evidence_never_stored" && r[2] == "ExtractionError"));
    ok(q("DROP PATTERN many_versions"));
    let h = json(&ok(q("SHOW PATTERN many_versions HISTORY")));
    let actions: Vec<&str> = h["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[2].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["save", "save", "drop"]);
    let e = fail(q("RUN PATTERN many_versions"));
    assert!(e.contains("no pattern many_versions"), "{e}");
    // A built-in runs from the language too, its rows led by the trace.
    let b = json(&ok(q("RUN PATTERN stored_not_retrieved")));
    assert_eq!(b["columns"][0], "trace");
    assert_eq!(b["columns"][3], "op_id");
    assert!(!b["rows"].as_array().unwrap().is_empty());
    // Errors: an unknown parameter, a built-in's name, a missing default.
    let e = fail(q("RUN PATTERN noop_update WITH $kind = 'x'"));
    assert!(
        e.contains("no parameter $kind; its parameters: $kinds"),
        "{e}"
    );
    let e = fail(q("SAVE PATTERN noop_update AS FIND ops"));
    assert!(e.contains("built-in pattern"), "{e}");
    let e = fail(q("SAVE PATTERN p AS FIND ops WHERE op.kind = $k"));
    assert!(e.contains("$k has no default"), "{e}");
}

#[test]
fn patterns_print_tables_json_and_csv_that_agree() {
    let (dir, db) = generated("5");
    let cwd = dir.path();
    let j = json(&ok(run(
        cwd,
        Some(&db),
        &[
            "patterns",
            "--builtin",
            "--format",
            "json",
            "--examples",
            "2",
        ],
    )));
    assert_eq!(j["traces"], 4);
    let patterns = j["patterns"].as_array().unwrap();
    assert_eq!(patterns.len(), 9);
    let total: u64 = patterns.iter().map(|p| p["hits"].as_u64().unwrap()).sum();
    assert!(total > 0);
    for p in patterns {
        let per: u64 = p["per_trace"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["hits"].as_u64().unwrap())
            .sum();
        assert_eq!(per, p["hits"].as_u64().unwrap(), "{}", p["name"]);
        let shown = p["examples"].as_array().unwrap().len() as u64;
        assert_eq!(shown, p["hits"].as_u64().unwrap().min(2));
    }
    // The error-type patterns split the failed cases that got a verdict.
    let by_type: u64 = patterns
        .iter()
        .filter(|p| !p["error_type"].is_null())
        .map(|p| p["hits"].as_u64().unwrap())
        .sum();
    let cases = json(&ok(run(
        cwd,
        Some(&db),
        &["query", "FIND cases RETURN count(*)", "--format", "json"],
    )));
    assert!(by_type <= cases["rows"][0][0].as_u64().unwrap() && by_type > 0);
    // CSV: one line per pattern and trace with hits.
    let csv = stdout(&ok(run(
        cwd,
        Some(&db),
        &["patterns", "--builtin", "--format", "csv"],
    )));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "pattern,trace,system,hits");
    let csv_total: u64 = lines[1..]
        .iter()
        .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(csv_total, total);
    // The table names each pattern and shows examples.
    let table = stdout(&ok(run(
        cwd,
        Some(&db),
        &["patterns", "stored_not_retrieved", "noop_update"],
    )));
    assert!(table.starts_with("2 pattern(s) over 4 trace(s)"), "{table}");
    assert!(table.contains("stored_not_retrieved: "), "{table}");
    // A parameter no pattern takes, and an unknown pattern, are errors.
    let e = fail(run(
        cwd,
        Some(&db),
        &["patterns", "noop_update", "--param", "nope=1"],
    ));
    assert!(e.contains("none of the patterns run takes $nope"), "{e}");
    let e = fail(run(cwd, Some(&db), &["patterns", "noop_updat"]));
    assert!(e.contains("did you mean noop_update?"), "{e}");
}

#[test]
fn check_fails_over_a_threshold_and_passes_within_it() {
    let (dir, db) = generated("5");
    let cwd = dir.path();
    // Every built-in with no hits allowed: the generated faults go over.
    let o = run(cwd, Some(&db), &["check", "--builtin", "--max-hits", "0"]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("check failed: "), "{e}");
    assert!(e.contains("stored_not_retrieved ("), "{e}");
    // A file with thresholds: an inline pattern and two built-ins.
    std::fs::write(
        cwd.join("ok.toml"),
        "max_hits = 100000\n\
         [[pattern]]\nname = \"stored_not_retrieved\"\n\
         [[pattern]]\nname = \"noop_update\"\nparams = { kinds = [\"update\"] }\n\
         [[pattern]]\nname = \"answers\"\nstatement = \"FIND vars WHERE var.class = $c\"\n\
         params = { c = \"prediction\" }\nmax_hits = 100000\n",
    )
    .unwrap();
    let o = ok(run(
        cwd,
        Some(&db),
        &["check", "--patterns", "ok.toml", "--format", "json"],
    ));
    assert!(
        stderr(&o).contains("check passed: 3 pattern(s)"),
        "{}",
        stderr(&o)
    );
    let j = json(&o);
    let answers = &j["patterns"][2];
    assert_eq!(answers["name"], "answers");
    assert_eq!(answers["hits"], 100);
    assert_eq!(answers["passed"], true);
    // The same file with a tight threshold on one pattern fails on it alone.
    std::fs::write(
        cwd.join("tight.toml"),
        "[[pattern]]\nname = \"answers\"\nstatement = \"FIND vars WHERE var.class = 'prediction'\"\n\
         max_hits = 99\n",
    )
    .unwrap();
    let o = run(cwd, Some(&db), &["check", "--patterns", "tight.toml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("answers (100 > 99)"), "{}", stderr(&o));
    assert!(stdout(&o).contains("OVER"), "{}", stdout(&o));
    // Bad files say where and why.
    std::fs::write(cwd.join("bad.toml"), "[[pattern]]\nnam = \"x\"\n").unwrap();
    let e = fail(run(cwd, Some(&db), &["check", "--patterns", "bad.toml"]));
    assert!(e.contains("bad.toml") && e.contains("nam"), "{e}");
    std::fs::write(cwd.join("empty.toml"), "max_hits = 1\n").unwrap();
    let e = fail(run(cwd, Some(&db), &["check", "--patterns", "empty.toml"]));
    assert!(e.contains("no [[pattern]] tables"), "{e}");
    let e = fail(run(
        cwd,
        Some(&db),
        &["check", "--patterns", "missing.toml"],
    ));
    assert!(e.contains("missing.toml"), "{e}");
    std::fs::write(
        cwd.join("badstmt.toml"),
        "[[pattern]]\nname = \"x\"\nstatement = \"FIND opz\"\n",
    )
    .unwrap();
    let e = fail(run(
        cwd,
        Some(&db),
        &["check", "--patterns", "badstmt.toml"],
    ));
    assert!(e.contains("opz"), "{e}");
    // A bad trace condition is an error, not a pass.
    let e = fail(run(
        cwd,
        Some(&db),
        &["check", "--builtin", "--over", "var.name = 'x'"],
    ));
    assert!(e.contains("var.name"), "{e}");
}
