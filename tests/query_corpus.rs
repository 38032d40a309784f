//! The query corpus: statements of the query language with their expected
//! output, in sqllogictest-style text files under `tests/queries/*.slt`.
//!
//! The runner imports the fixture traces into a fresh database (in this order,
//! so that they are traces `#1` to `#6`):
//!
//! 1. `tests/fixtures/sample_export.json` (graph `graph-e02a1f3b041740d5b82569831ef2d06e`)
//! 2. `tests/fixtures/parity/cycles.json` (graph `parity-cycles-0001`)
//! 3. `tests/fixtures/parity/gen_evermemos.json` (graph `evermemos-0000-s11`)
//! 4. `tests/fixtures/parity/gen_long_context.json` (graph `long_context-0000-s11`)
//! 5. `tests/fixtures/parity/gen_mem0.json` (graph `mem0-0000-s11`)
//! 6. `tests/fixtures/parity/gen_rag.json` (graph `rag-0000-s11`)
//!
//! each with its path (as written above) as its import source, then runs every
//! record of every file through `Database::query_with` and compares.
//!
//! # Format
//!
//! ```text
//! # a comment (only between records)
//! query [rowsort]
//! [params k=v k2=v2]
//! <statement, may span lines>
//! ----
//! <column names, tab-separated>
//! <one line per row, values tab-separated>
//!
//! error
//! [params k=v]
//! <statement>
//! ----
//! <the full error text, as `Display` of the error shows it (what the CLI
//!  prints after `error: `), over as many lines as it has>
//! ```
//!
//! Records are separated by blank lines, so neither a statement nor an
//! expected block may hold an empty line. Values: text raw (except that `\`,
//! a newline, a tab and a carriage return are written `\\`, `\n`, `\t`, `\r`,
//! and the empty text `(empty)`), NULL as `NULL`, numbers and truth values as
//! JSON, lists and objects as compact JSON. `rowsort` sorts the result rows
//! (as rendered lines) before comparing, for statements whose row order is
//! not defined. Trailing spaces of a line are not significant.
//!
//! `params` gives `$parameters`, typed as the CLI's `--param` types them: a
//! whole number is an integer, a number with `.` a float, `true`/`false` a
//! truth value, `null` NULL, anything else text. A value with spaces is
//! written in double quotes (`k="a b"`), which are removed before typing.
//!
//! Every failure is reported (file:line, the statement, expected and got), and
//! the test fails at the end. `MEMTRACE_BLESS=1 cargo test --test query_corpus`
//! rewrites the expected blocks with what the engine answers now: for
//! maintainers, after checking by other means that the new answers are right
//! (the comments above the records say how each was checked).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use memtrace::{Cancel, Database, ImportOptions, InputFormat, Params, Value};

/// The fixtures, in import order (trace `#1` first).
const FIXTURES: [&str; 6] = [
    "tests/fixtures/sample_export.json",
    "tests/fixtures/parity/cycles.json",
    "tests/fixtures/parity/gen_evermemos.json",
    "tests/fixtures/parity/gen_long_context.json",
    "tests/fixtures/parity/gen_mem0.json",
    "tests/fixtures/parity/gen_rag.json",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Query { rowsort: bool },
    Error,
}

/// One record of a corpus file.
#[derive(Debug)]
struct Record {
    kind: Kind,
    /// 1-based line of the record's first line (`query` or `error`).
    line: usize,
    params: Vec<(String, Value)>,
    statement: String,
    expected: Vec<String>,
    /// Lines (0-based, half-open) of the expected block in the file, for bless.
    expected_lines: (usize, usize),
}

/// Types a parameter value as the CLI's `--param` does.
fn typed(value: &str) -> Value {
    if let Ok(n) = value.parse::<i64>() {
        return Value::Int(n);
    }
    if value.contains('.') {
        if let Ok(x) = value.parse::<f64>() {
            if x.is_finite() {
                return Value::Float(x);
            }
        }
    }
    match value {
        "true" | "TRUE" => Value::Bool(true),
        "false" | "FALSE" => Value::Bool(false),
        "null" | "NULL" => Value::Null,
        _ => Value::Str(value.to_string()),
    }
}

/// `k=v k2="a b"` as typed parameters.
fn parse_params(s: &str, at: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let (name, after) = rest
            .split_once('=')
            .unwrap_or_else(|| panic!("{at}: params: expected NAME=VALUE in {rest:?}"));
        let (value, after) = if let Some(q) = after.strip_prefix('"') {
            let end = q
                .find('"')
                .unwrap_or_else(|| panic!("{at}: params: unterminated \" in {rest:?}"));
            (&q[..end], &q[end + 1..])
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        out.push((
            name.trim().trim_start_matches('$').to_string(),
            typed(value),
        ));
        rest = after.trim_start();
    }
    out
}

fn parse_file(path: &Path, text: &str) -> Vec<Record> {
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        let at = format!("{}:{}", path.display(), i + 1);
        let mut words = line.split_whitespace();
        let kind = match (words.next(), words.next(), words.next()) {
            (Some("query"), None, None) => Kind::Query { rowsort: false },
            (Some("query"), Some("rowsort"), None) => Kind::Query { rowsort: true },
            (Some("error"), None, None) => Kind::Error,
            _ => panic!("{at}: expected `query [rowsort]` or `error`, found {line:?}"),
        };
        let start = i;
        i += 1;
        let mut params = Vec::new();
        if let Some(p) = lines.get(i).and_then(|l| l.strip_prefix("params ")) {
            params = parse_params(p, &at);
            i += 1;
        }
        let mut statement = Vec::new();
        while i < lines.len() && lines[i].trim_end() != "----" {
            if lines[i].trim().is_empty() {
                panic!("{at}: the statement ends without a `----` line");
            }
            statement.push(lines[i]);
            i += 1;
        }
        if i >= lines.len() {
            panic!("{at}: no `----` line");
        }
        if statement.is_empty() {
            panic!("{at}: no statement");
        }
        i += 1;
        let from = i;
        while i < lines.len() && !lines[i].trim().is_empty() {
            i += 1;
        }
        records.push(Record {
            kind,
            line: start + 1,
            params,
            statement: statement.join("\n"),
            expected: lines[from..i]
                .iter()
                .map(|l| l.trim_end().to_string())
                .collect(),
            expected_lines: (from, i),
        });
    }
    records
}

fn text_cell(s: &str) -> String {
    if s.is_empty() {
        return "(empty)".into();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "NULL".into(),
        serde_json::Value::String(s) => text_cell(s),
        other => text_cell(&other.to_string()),
    }
}

/// What the engine answers, as the lines of an expected block.
fn actual(db: &Database, r: &Record) -> Result<Vec<String>, String> {
    let params: Params = r.params.iter().cloned().collect();
    match db.query_with(&r.statement, &params, &Cancel::new()) {
        Ok(result) => {
            let mut rows: Vec<String> = result
                .rows
                .iter()
                .map(|row| row.iter().map(cell).collect::<Vec<_>>().join("\t"))
                .collect();
            if matches!(r.kind, Kind::Query { rowsort: true }) {
                rows.sort();
            }
            let mut out = vec![result.columns.join("\t")];
            out.extend(rows);
            Ok(out.into_iter().map(|l| l.trim_end().to_string()).collect())
        }
        Err(e) => Err(e
            .to_string()
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()),
    }
    .map_err(|lines: Vec<String>| lines.join("\n"))
}

fn open_db(dir: &Path) -> Database {
    let db = Database::open(dir.join("corpus.db")).expect("open the database");
    for f in FIXTURES {
        let text = std::fs::read(repo().join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        db.import_reader(&text[..], InputFormat::Json, f, &ImportOptions::default())
            .unwrap_or_else(|e| panic!("importing {f}: {e}"));
    }
    db
}

fn indent(lines: &[String]) -> String {
    if lines.is_empty() {
        return "    (nothing)\n".into();
    }
    lines.iter().map(|l| format!("    {l}\n")).collect()
}

#[test]
fn the_query_corpus_gives_the_expected_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(dir.path());
    let bless = std::env::var_os("MEMTRACE_BLESS").is_some_and(|v| v == "1");
    let qdir = repo().join("tests/queries");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&qdir)
        .unwrap_or_else(|e| panic!("{}: {e}", qdir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {}", qdir.display());
    let mut failures = String::new();
    let mut failed = 0;
    let mut total = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let records = parse_file(path, &text);
        assert!(!records.is_empty(), "{}: no records", path.display());
        let rel = path
            .strip_prefix(repo())
            .unwrap_or(path)
            .display()
            .to_string();
        let mut blessed: Vec<((usize, usize), Vec<String>)> = Vec::new();
        for r in &records {
            total += 1;
            let got = actual(&db, r);
            let (ok, got_lines, problem) = match (&r.kind, got) {
                (Kind::Query { .. }, Ok(lines)) => (lines == r.expected, lines, None),
                (Kind::Query { .. }, Err(e)) => {
                    let lines: Vec<String> = e.lines().map(String::from).collect();
                    (false, lines, Some("the statement failed"))
                }
                (Kind::Error, Err(e)) => {
                    let lines: Vec<String> = e.lines().map(String::from).collect();
                    (lines == r.expected, lines, None)
                }
                (Kind::Error, Ok(lines)) => (false, lines, Some("the statement did not fail")),
            };
            if bless {
                if problem.is_none() && !ok {
                    blessed.push((r.expected_lines, got_lines));
                } else if let Some(p) = problem {
                    let _ = writeln!(failures, "{rel}:{}: {p}; not blessed", r.line);
                    failed += 1;
                }
                continue;
            }
            if !ok {
                failed += 1;
                let _ = write!(
                    failures,
                    "\n{rel}:{}: {}\n  statement:\n{}  expected:\n{}  got:\n{}",
                    r.line,
                    problem.unwrap_or("wrong output"),
                    indent(&r.statement.lines().map(String::from).collect::<Vec<_>>()),
                    indent(&r.expected),
                    indent(&got_lines),
                );
            }
        }
        if bless && !blessed.is_empty() {
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            // From the last block up, so earlier line numbers stay valid.
            for ((from, to), new) in blessed.into_iter().rev() {
                lines.splice(from..to, new);
            }
            let mut out = lines.join("\n");
            out.push('\n');
            std::fs::write(path, out).unwrap();
        }
    }
    assert!(
        failed == 0,
        "{failed} of {total} corpus records failed{}:\n{failures}",
        if bless { " (and were not blessed)" } else { "" }
    );
    eprintln!("{total} corpus records passed");
}
