//! Every statement that memtrace suggests to a person runs on the demo
//! database: the examples of the README and of every page of the book
//! (docs/src), the demo's "try" lines, the shell's `:help`, the examples of
//! `--help`, and the viewer's example buttons. A statement shown with its
//! error (the book's shell session) must fail with that error. Statements that need an LLM are planned (EXPLAIN), not
//! run: no endpoint is configured here.

mod common;
use common::*;

use std::path::Path;

use memtrace::query::{PATTERN_STATEMENTS, STATEMENTS};

/// One suggested statement, where it was found, and the error it is shown
/// with (if any).
#[derive(Debug, Clone)]
struct Suggested {
    from: String,
    text: String,
    params: Vec<String>,
    error: Option<String>,
}

impl Suggested {
    fn new(from: impl Into<String>, text: &str) -> Suggested {
        Suggested {
            from: from.into(),
            text: text.trim().trim_end_matches(';').trim().to_string(),
            params: Vec::new(),
            error: None,
        }
    }
}

fn starts_statement(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    STATEMENTS.contains(&first) || PATTERN_STATEMENTS.contains(&first)
}

/// Drops a `-- comment` that is outside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    let bytes = line.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'\'' => quoted = !quoted,
            b'-' if !quoted && bytes.get(i + 1) == Some(&b'-') => return &line[..i],
            _ => {}
        }
    }
    line
}

/// A page of the book: its path and its text.
macro_rules! page {
    ($name:literal) => {
        (
            concat!("docs/src/", $name),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/src/", $name)),
        )
    };
}

/// The pages of the book, each as (path, text); a test checks this list
/// against the book's SUMMARY.md.
const BOOK: &[(&str, &str)] = &[
    page!("getting-started.md"),
    page!("import.md"),
    page!("otlp.md"),
    page!("live.md"),
    page!("gen.md"),
    page!("shell.md"),
    page!("query-language.md"),
    page!("query-statements.md"),
    page!("query-output.md"),
    page!("cases.md"),
    page!("attribution.md"),
    page!("attribution-method.md"),
    page!("llm.md"),
    page!("patterns.md"),
    page!("viewer.md"),
    page!("viewer-api.md"),
    page!("mcp.md"),
    page!("limits.md"),
    page!("python.md"),
    page!("embedding.md"),
    page!("parquet.md"),
    page!("spark.md"),
    page!("internals.md"),
    page!("architecture.md"),
    page!("benchmarks.md"),
    page!("figures.md"),
];

/// A Markdown page's fenced blocks: (language, lines).
fn fenced(md: &str) -> Vec<(String, Vec<&str>)> {
    let mut out = Vec::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in md.lines() {
        let t = line.trim_start();
        if let Some(lang) = t.strip_prefix("```") {
            match current.take() {
                Some(block) => out.push(block),
                None => current = Some((lang.trim().to_string(), Vec::new())),
            }
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(line);
        }
    }
    out
}

/// Statements of the README and of every page of the book.
fn docs() -> Vec<Suggested> {
    let mut out = statements_of_markdown(
        "README.md",
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")),
    );
    for (page, text) in BOOK {
        out.extend(statements_of_markdown(page, text));
    }
    out
}

/// Statements of a Markdown page: every statement of its `sql` blocks, and
/// in its text blocks (a shell session, the demo's output) what follows a
/// `memtrace> ` prompt or stands on a line of its own, up to its `;`; a
/// statement followed by an `error:` line is expected to fail so.
fn statements_of_markdown(page: &str, md: &str) -> Vec<Suggested> {
    let mut out = Vec::new();
    for (lang, lines) in fenced(md) {
        match lang.as_str() {
            "sql" => {
                let text: Vec<&str> = lines.iter().map(|l| strip_comment(l)).collect();
                for stmt in text.join("\n").split(';') {
                    if starts_statement(stmt.trim()) {
                        out.push(Suggested::new(format!("{page} (sql)"), stmt));
                    }
                }
            }
            "text" => {
                let mut i = 0;
                while i < lines.len() {
                    let raw = lines[i];
                    if raw.starts_with("error: ") {
                        // The statement echoed and the caret under it.
                        i += 1;
                        while lines.get(i).is_some_and(|l| l.starts_with(' ')) {
                            i += 1;
                        }
                        continue;
                    }
                    let line = raw.trim();
                    let mut stmt = match line.strip_prefix("$ memtrace query \"") {
                        Some(rest) => match rest.split_once('"') {
                            Some((quoted, _)) => quoted.to_string(),
                            None => String::new(),
                        },
                        None => line.strip_prefix("memtrace> ").unwrap_or(line).to_string(),
                    };
                    if !starts_statement(&stmt) {
                        i += 1;
                        continue;
                    }
                    if !line.starts_with('$') {
                        while !stmt.trim_end().ends_with(';') && i + 1 < lines.len() {
                            i += 1;
                            stmt.push('\n');
                            stmt.push_str(lines[i]);
                        }
                    }
                    let mut s = Suggested::new(format!("{page} (shell)"), &stmt);
                    if let Some(e) = lines.get(i + 1).and_then(|l| l.strip_prefix("error: ")) {
                        s.error = Some(e.to_string());
                    }
                    out.push(s);
                    i += 1;
                }
            }
            _ => {}
        }
    }
    out
}

/// The shell's `:help` examples: the indented lines of its topics that
/// are statements.
fn shell_help() -> Vec<Suggested> {
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/src/shell/help.rs"))
        .lines()
        .map(|l| l.trim().trim_end_matches("\",").trim_end_matches('"'))
        .filter(|l| starts_statement(l) && l.ends_with(';'))
        .map(|l| Suggested::new(":help", l))
        .collect()
}

/// The viewer's example buttons.
fn viewer() -> Vec<Suggested> {
    let js = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/query-page.js"));
    let start = js
        .find("const EXAMPLES = [")
        .expect("the viewer lists its examples");
    let end = start + js[start..].find("];").expect("the list ends");
    js[start..end]
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            let inner = l.strip_prefix('\'')?.strip_suffix('\'')?;
            Some(Suggested::new("viewer", &inner.replace("\\'", "'")))
        })
        .collect()
}

/// `memtrace query "..."` examples of every `--help`, with their
/// `--param`s.
fn help_examples(dir: &Path) -> Vec<Suggested> {
    let mut out = Vec::new();
    for args in [
        &["--help"][..],
        &["query", "--help"],
        &["attribute", "--help"],
        &["patterns", "--help"],
        &["check", "--help"],
    ] {
        let text = stdout(&ok(run(dir, None, args)));
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("memtrace query \"") else {
                continue;
            };
            let Some((stmt, tail)) = rest.split_once('"') else {
                continue;
            };
            let mut s = Suggested::new(args.join(" "), &stmt.replace("\\$", "$"));
            let mut words = tail.split_whitespace();
            while let Some(w) = words.next() {
                if w == "--param" {
                    if let Some(p) = words.next() {
                        s.params.push(p.to_string());
                    }
                }
            }
            out.push(s);
        }
    }
    out
}

/// The demo's own "try" lines and the statements it shows with a prompt.
fn demo_lines(text: &str) -> Vec<Suggested> {
    text.lines()
        .map(|l| l.trim())
        .map(|l| l.strip_prefix("memtrace> ").unwrap_or(l))
        .filter(|l| starts_statement(l))
        .map(|l| Suggested::new("memtrace demo", l))
        .collect()
}

/// Whether a statement needs an LLM endpoint to run.
fn needs_llm(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("using llm") || t.contains("using hybrid")
}

#[test]
fn every_suggested_statement_runs_on_the_demo_database() {
    let dir = tempfile::tempdir().unwrap();
    let demo = stdout(&ok(run(dir.path(), None, &["demo"])));
    let db = dir.path().join("memtrace.db");
    let mut all = demo_lines(&demo);
    all.extend(docs());
    all.extend(shell_help());
    all.extend(viewer());
    all.extend(help_examples(dir.path()));
    // Each source must have given something, or the extraction broke.
    for from in [
        "memtrace demo",
        "README.md (sql)",
        "docs/src/getting-started.md (shell)",
        "docs/src/attribution.md (sql)",
        "docs/src/patterns.md (sql)",
        "docs/src/shell.md (shell)",
        "docs/src/query-output.md (shell)",
        ":help",
        "viewer",
        "--help",
        "query --help",
    ] {
        assert!(
            all.iter().any(|s| s.from == from),
            "no statement found in {from}"
        );
    }
    assert!(all.len() >= 40, "only {} statements found", all.len());
    // `:help params` sets $start with :param.
    let mut failures = Vec::new();
    for s in &all {
        let text = if needs_llm(&s.text) {
            format!("EXPLAIN {}", s.text)
        } else {
            s.text.clone()
        };
        let mut args = vec!["query".to_string(), text.clone()];
        if s.text.contains("$start") && s.params.is_empty() {
            args.extend(["--param".into(), "start=prediction:Q7".into()]);
        }
        for p in &s.params {
            args.extend(["--param".into(), p.clone()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(dir.path(), Some(&db), &args);
        let err = stderr(&o);
        match (&s.error, o.status.success()) {
            (None, true) => {}
            (None, false) => failures.push(format!("{} | {text}\n    {err}", s.from)),
            (Some(_), true) => failures.push(format!(
                "{} | {text}\n    shown failing, but it ran",
                s.from
            )),
            (Some(want), false) => {
                if !err.contains(want.as_str()) {
                    failures.push(format!(
                        "{} | {text}\n    shown with: {want}\n    gives: {err}",
                        s.from
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} suggested statements fail:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn the_extraction_finds_statements_in_each_kind_of_block() {
    let md = "text\n```sql\nFIND ops; -- a comment; with a semicolon\nSHOW\n  TRACES;\n```\n\
              ```text\nmemtrace> TRACE x\n  DEPTH 2;\nrow\nmemtrace> TRACE y WHERE z;\nerror: bad\n  TRACE y WHERE z;\n    ^\n$ memtrace query \"FIND v\" --format csv\nerror: worse\n  FIND v\n```\n\
              ```sh\nTRACE not_a_statement_here\n```\n";
    let found: Vec<(String, Option<String>)> = statements_of_markdown("x.md", md)
        .into_iter()
        .map(|s| (s.text, s.error))
        .collect();
    assert_eq!(
        found,
        vec![
            ("FIND ops".to_string(), None),
            ("SHOW\n  TRACES".to_string(), None),
            ("TRACE x\n  DEPTH 2".to_string(), None),
            ("TRACE y WHERE z".to_string(), Some("bad".to_string())),
            ("FIND v".to_string(), Some("worse".to_string())),
        ]
    );
    assert_eq!(strip_comment("FIND 'a--b' -- c"), "FIND 'a--b' ");
    assert!(starts_statement("TRACE x") && !starts_statement("trace  op_id"));
    assert!(needs_llm("ATTRIBUTE q USING hybrid") && !needs_llm("ATTRIBUTE q USING evidence"));
}

#[test]
fn every_page_of_the_book_is_read_for_statements() {
    // The pages SUMMARY.md links to, in its order: the list above must be
    // the same, so that a new page cannot go unchecked.
    let summary = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/src/SUMMARY.md"
    ));
    let linked: Vec<String> = summary
        .lines()
        .filter_map(|l| {
            let start = l.find("](")? + 2;
            let end = start + l[start..].find(')')?;
            Some(format!("docs/src/{}", &l[start..end]))
        })
        .collect();
    let listed: Vec<String> = BOOK.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(linked, listed);
}
