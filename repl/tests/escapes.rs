//! A trace cannot take over the terminal: ids and values that hold escape
//! sequences (ESC ]0;...BEL sets a terminal's title, ESC [31m colours what
//! follows), NUL, C1 controls or bidirectional overrides are shown escaped
//! (`\u{1b}`) in every human-readable output, and kept exactly in JSON and
//! CSV. The fixture `control_chars.json` holds them in its graph id, user,
//! system, session, op id, op name, comment, node names, values, category,
//! edge ids and annotation.

mod common;

use std::path::Path;
use std::process::Output;

use common::*;

/// The fixture's graph id, as stored.
const GRAPH: &str = "ctl-\u{1b}]0;pwned\u{7}-trace";
/// How a table or a message shows it.
const GRAPH_SHOWN: &str = "ctl-\\u{1b}]0;pwned\\u{7}-trace";

/// Fails when `text` holds a character that acts on a terminal: a C0
/// control other than the line break, DEL, a C1 control, or a
/// bidirectional-text control.
fn assert_no_raw_control(what: &str, text: &[u8]) {
    let s = std::str::from_utf8(text).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"));
    for c in s.chars() {
        let raw = (c < ' ' && c != '\n')
            || ('\u{7f}'..='\u{9f}').contains(&c)
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
            || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}');
        assert!(!raw, "{what}: a raw {c:?} in\n{s}");
    }
}

/// Both streams of a run, checked.
fn shown(what: &str, o: &Output) -> String {
    assert_no_raw_control(&format!("{what} (stdout)"), &o.stdout);
    assert_no_raw_control(&format!("{what} (stderr)"), &o.stderr);
    format!("{}{}", stdout(o), stderr(o))
}

fn imported() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let fixture = repl_fixtures().join("control_chars.json");
    let o = ok(run(
        dir.path(),
        Some(&db),
        &["import", fixture.to_str().unwrap()],
    ));
    let text = shown("import", &o);
    assert!(text.contains(GRAPH_SHOWN), "{text}");
    (dir, db)
}

fn check(dir: &Path, db: &Path, args: &[&str], expect: &[&str]) -> String {
    let o = run(dir, Some(db), args);
    let text = shown(&args.join(" "), &o);
    for e in expect {
        assert!(text.contains(e), "{args:?} does not show {e:?}:\n{text}");
    }
    text
}

#[test]
fn every_human_readable_output_shows_control_characters_escaped() {
    let (dir, db) = imported();
    let d = dir.path();
    let osc = "\\u{1b}]0;pwned\\u{7}";
    let red = "\\u{1b}[31m";
    check(
        d,
        &db,
        &["traces"],
        &[GRAPH_SHOWN, &format!("u{red}"), "sys\\u{0}tem"],
    );
    check(
        d,
        &db,
        &[
            "query",
            "FIND vars RETURN var.full_node_id, var.value, var.category",
        ],
        &[
            "query:q\\u{0}@1",
            &format!("'Where{osc} does she live?'"),
            &format!("prediction{red}"),
        ],
    );
    check(
        d,
        &db,
        &["query", "FIND ops RETURN op.id, op.name, op.comment"],
        &[&format!("op-{osc}"), &format!("rag.{red}answer")],
    );
    check(
        d,
        &db,
        &[
            "query",
            "FIND edges RETURN edge.id, edge.session; SHOW TRACES; FIND cases",
        ],
        &["e1\\u{0}", &format!("s{red}1"), GRAPH_SHOWN],
    );
    check(
        d,
        &db,
        &["query", "FIND traces RETURN trace.meta.note"],
        &["c1 \\u{9b} and bidi \\u{202e}"],
    );
    check(
        d,
        &db,
        &["query", "DESCRIBE answer:42"],
        &[&format!("rag.{red}answer")],
    );
    check(
        d,
        &db,
        &["query", "TRACE answer:42", "--format", "tree"],
        &[
            &format!("[rag.{red}answer] message:{red}ctx@1"),
            GRAPH_SHOWN,
        ],
    );
    // DOT shows the escape: its backslash is escaped in the file.
    for args in [
        ["query", "TRACE answer:42", "--format", "dot"],
        ["export", "#1", "--format", "dot"],
    ] {
        check(d, &db, &args, &["\\\\u{1b}[31m", "q\\\\u{0}@1"]);
    }
    for args in [
        ["query", "TRACE answer:42", "--format", "mermaid"],
        ["export", "#1", "--format", "mermaid"],
    ] {
        check(d, &db, &args, &[&format!("rag.{red}answer"), "q\\u{0}@1"]);
    }
    check(d, &db, &["log"], &[GRAPH_SHOWN]);
    check(d, &db, &["attribute"], &["sys\\u{0}tem"]);
    check(
        d,
        &db,
        &["eval", "--misses", "5"],
        &[&format!("op-{osc}"), GRAPH_SHOWN],
    );
    check(d, &db, &["patterns", "--builtin"], &[GRAPH_SHOWN]);
    check(
        d,
        &db,
        &["check", "--builtin", "--max-hits", "0"],
        &["check failed"],
    );
    check(d, &db, &["evidence-recall"], &["sys\\u{0}tem"]);
    // Errors that quote what was asked for.
    check(
        d,
        &db,
        &["export", "x\u{1b}[31m"],
        &[&format!("error: no trace x{red}")],
    );
    check(
        d,
        &db,
        &["query", "TRACE $p", "--param", "p=q:\u{1b}]0;x\u{7}"],
        &["q:\\u{1b}]0;x\\u{7}"],
    );
    // The shell, without a terminal, in a table and as a tree.
    let o = run_with_input(
        d,
        Some(&db),
        &[],
        "FIND ops RETURN op.id, op.name;\n:format tree\nTRACE answer:42;\nTRACE 'x\u{1b}[31m';\n",
    );
    let text = shown("the shell", &o);
    for e in [
        format!("op-{osc}"),
        format!("[rag.{red}answer] query:q\\u{{0}}@1"),
        format!("x{red}"),
    ] {
        assert!(text.contains(&e), "the shell does not show {e:?}:\n{text}");
    }
    // The report's Markdown and HTML pages.
    ok(run(d, Some(&db), &["report", "--out", "rep"]));
    for page in ["report.md", "report.html"] {
        let bytes = std::fs::read(d.join("rep").join(page)).unwrap();
        assert_no_raw_control(page, &bytes);
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("\\u{1b}"), "{page}:\n{text}");
    }
    // A removal names the trace and its reason, and the log shows it.
    check(
        d,
        &db,
        &["drop", "#1"],
        &[&format!("would remove trace #1 {GRAPH_SHOWN}")],
    );
    check(
        d,
        &db,
        &["drop", "#1", "--yes", "--reason", "bad \u{1b}[2J"],
        &["bad \\u{1b}[2J"],
    );
    check(d, &db, &["log"], &["bad \\u{1b}[2J"]);
}

#[test]
fn json_and_csv_keep_the_exact_values() {
    let (dir, db) = imported();
    let d = dir.path();
    let o = ok(run(d, Some(&db), &["traces", "--format", "json"]));
    assert_eq!(json(&o)[0]["graph_id"], GRAPH);
    assert_eq!(json(&o)[0]["project_id"], "sys\0tem");
    let o = ok(run(
        d,
        Some(&db),
        &["query", "FIND ops RETURN op.id", "--format", "json"],
    ));
    assert_eq!(json(&o)["rows"][0][0], "op-\u{1b}]0;pwned\u{7}");
    let o = ok(run(
        d,
        Some(&db),
        &["query", "FIND ops RETURN op.name", "--format", "csv"],
    ));
    assert_eq!(stdout(&o), "op.name\r\nrag.\u{1b}[31manswer\r\n");
    // The export is the JSON that was imported.
    let o = ok(run(d, Some(&db), &["export", "#1"]));
    let back = json(&o);
    let fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repl_fixtures().join("control_chars.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        back["data"]["nodes"][0]["name"],
        fixture["data"]["nodes"][0]["name"]
    );
    assert_eq!(back["graph_id"], GRAPH);
}
