//! The interactive shell: `memtrace` without a subcommand.
//!
//! Statements end with `;` and may span lines; lines that start with `:` are
//! the shell's own commands. On a terminal it edits lines with history,
//! completion, hints and colours, and Ctrl-C cancels the running statement;
//! with standard input from a pipe or file it reads the same input without
//! prompts.

pub(crate) mod help;
mod helper;
mod lex;
mod names;

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use clap::ValueEnum;
use memtrace::engine::{Engine, Plan};
use memtrace::{Cancel, EngineError, Params, Value};
use rustyline::config::{ColorMode, CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::Editor;

use crate::error::{CliError, Result};
use crate::formats::ExportAs;
use crate::query::{print_result, QueryFormat};
use memtrace_table::visible_lines;

use help::{META, QUERY_FORMATS};
use helper::{Known, ShellHelper};
use names::Names;

const PROMPT: &str = "memtrace> ";

/// A shell command, parsed.
#[derive(Debug, Clone, PartialEq)]
enum Meta {
    Help(Option<String>),
    Format(Option<QueryFormat>),
    Timing(Option<bool>),
    Open(PathBuf),
    Import(Vec<PathBuf>),
    Export { trace: String, file: PathBuf },
    Param(Option<(String, Value)>),
    Unset(String),
    Quit,
}

/// Splits a command line into words; `'...'` and `"..."` keep spaces.
fn split_args(text: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.get_or_insert_with(String::new).push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            None if c.is_whitespace() => out.extend(word.take()),
            None => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(q) = quote {
        return Err(format!("the quote {q} is not closed"));
    }
    out.extend(word.take());
    Ok(out)
}

/// Parses a line that starts with `:`.
fn parse_meta(line: &str) -> std::result::Result<Meta, String> {
    let words = split_args(line.trim())?;
    let (command, args) = words.split_first().ok_or("empty command")?;
    let usage = |name: &str| {
        let u = META
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, u)| *u);
        format!("usage: {name} {u}")
    };
    let one = |name: &str| -> std::result::Result<Option<&String>, String> {
        match args {
            [] => Ok(None),
            [a] => Ok(Some(a)),
            _ => Err(usage(name)),
        }
    };
    Ok(match command.as_str() {
        ":help" | ":h" | ":?" => Meta::Help(if args.is_empty() {
            None
        } else {
            Some(args.join(" "))
        }),
        ":format" => Meta::Format(match one(":format")? {
            None => None,
            Some(f) => Some(QueryFormat::from_str(f, true).map_err(|_| {
                format!(
                    "unknown format '{f}'; formats: {}",
                    QUERY_FORMATS.join(", ")
                )
            })?),
        }),
        ":timing" => Meta::Timing(match one(":timing")?.map(String::as_str) {
            None => None,
            Some("on") => Some(true),
            Some("off") => Some(false),
            Some(_) => return Err(usage(":timing")),
        }),
        ":open" => match args {
            [p] => Meta::Open(PathBuf::from(p)),
            _ => return Err(usage(":open")),
        },
        ":import" => {
            if args.is_empty() {
                return Err(usage(":import"));
            }
            Meta::Import(args.iter().map(PathBuf::from).collect())
        }
        ":export" => match args {
            [t, f] => Meta::Export {
                trace: t.clone(),
                file: PathBuf::from(f),
            },
            _ => return Err(usage(":export")),
        },
        ":param" => Meta::Param(match args {
            [] => None,
            _ => Some(crate::query::parse_param(&args.join(" "))?),
        }),
        ":unset" => match args {
            [n] => Meta::Unset(n.trim_start_matches('$').to_string()),
            _ => return Err(usage(":unset")),
        },
        ":quit" | ":q" | ":exit" => Meta::Quit,
        other => {
            let known: Vec<&str> = META.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "unknown command {other}; commands: {} (:help commands)",
                known.join(" ")
            ));
        }
    })
}

/// What handling one input asks of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Read the next input; `ok` is false when it failed.
    Next { ok: bool },
    /// Leave the shell.
    Quit,
}

/// The state of a shell session.
struct Session {
    path: PathBuf,
    db: Option<Arc<Engine>>,
    format: QueryFormat,
    timing: bool,
    params: Params,
    known: Arc<RwLock<Known>>,
    /// The token of the statement running now, for Ctrl-C.
    running: Arc<Mutex<Option<Cancel>>>,
    /// The thread that reads the names of the open database.
    loader: Option<(Cancel, JoinHandle<()>)>,
}

impl Session {
    /// A session on the database at `path`; a missing database is not an
    /// error (`:import` creates it).
    fn new(path: &Path) -> Result<Session> {
        let mut s = Session {
            path: path.to_path_buf(),
            db: None,
            format: QueryFormat::Table,
            timing: false,
            params: Params::new(),
            known: Arc::default(),
            running: Arc::default(),
            loader: None,
        };
        s.open(path)?;
        Ok(s)
    }

    /// Opens the database at `path` if there is one, and starts reading its
    /// names for completion.
    fn open(&mut self, path: &Path) -> Result<()> {
        self.close();
        self.path = path.to_path_buf();
        self.db = match crate::opening::open_existing(path) {
            Ok(db) => Some(Arc::new(db)),
            Err(EngineError::Storage(memtrace::StorageError::Missing(_))) => None,
            Err(e) => return Err(e.into()),
        };
        self.reload_names();
        Ok(())
    }

    /// Stops the thread that reads names, if one runs.
    fn stop_loader(&mut self) {
        if let Some((cancel, handle)) = self.loader.take() {
            cancel.cancel();
            let _ = handle.join();
        }
    }

    /// Stops the name reader and closes the database.
    fn close(&mut self) {
        self.stop_loader();
        self.db = None;
        let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
        known.names = Names::default();
        known.loading = false;
    }

    /// Reads the database's names again, in the background.
    fn reload_names(&mut self) {
        self.stop_loader();
        let Some(db) = self.db.clone() else { return };
        let cancel = Cancel::new();
        let known = Arc::clone(&self.known);
        let stop = cancel.clone();
        known.write().unwrap_or_else(|p| p.into_inner()).loading = true;
        let handle = std::thread::spawn(move || {
            let names = Names::load(&db, &stop);
            let mut known = known.write().unwrap_or_else(|p| p.into_inner());
            if let Ok(names) = names {
                known.names = names;
            }
            known.loading = false;
        });
        self.loader = Some((cancel, handle));
    }

    /// The first line the shell prints.
    fn banner(&self) -> String {
        let what = match &self.db {
            Some(db) => {
                let n = db.traces().map(|t| t.len()).unwrap_or(0);
                format!(
                    "{} ({n} trace{})",
                    self.path.display(),
                    if n == 1 { "" } else { "s" }
                )
            }
            None => format!(
                "no database at {} yet (:import PATH creates it, :open PATH opens another)",
                self.path.display()
            ),
        };
        format!(
            "memtrace {}: {what}\nEnd statements with ';'. :help shows the statements and commands, Tab completes, Ctrl-D leaves.",
            env!("CARGO_PKG_VERSION")
        )
    }

    /// Handles one input: a `:command`, or one or more statements.
    fn handle(&mut self, input: &str, out: &mut dyn Write, err: &mut dyn Write) -> Step {
        let trimmed = input.trim_start();
        if trimmed.starts_with(':') {
            let line = trimmed.lines().next().unwrap_or_default();
            return match parse_meta(line) {
                Ok(Meta::Quit) => Step::Quit,
                Ok(meta) => {
                    let ok = match self.command(meta, out) {
                        Ok(()) => true,
                        Err(e) => {
                            let _ = writeln!(err, "error: {}", visible_lines(&e.to_string()));
                            false
                        }
                    };
                    Step::Next { ok }
                }
                Err(e) => {
                    let _ = writeln!(err, "error: {}", visible_lines(&e.to_string()));
                    Step::Next { ok: false }
                }
            };
        }
        Step::Next {
            ok: self.statements(input, out, err),
        }
    }

    /// Runs the statements of `text` in order; stops at the first that fails.
    fn statements(&mut self, text: &str, out: &mut dyn Write, err: &mut dyn Write) -> bool {
        if !lex::has_statement(text) {
            return true;
        }
        let Some(db) = self.db.clone() else {
            let _ = writeln!(
                err,
                "error: no database at {}: :import PATH creates it, :open PATH opens another",
                self.path.display()
            );
            return false;
        };
        let statements = match db.parse_script(text) {
            Ok(s) => s,
            Err(e) => {
                let _ = writeln!(err, "error: {}", visible_lines(&e.to_string()));
                return false;
            }
        };
        let width = memtrace_table::terminal_width();
        for (i, stmt) in statements.iter().enumerate() {
            let cancel = Cancel::new();
            *self.running.lock().unwrap_or_else(|p| p.into_inner()) = Some(cancel.clone());
            let started = Instant::now();
            let done = db
                .plan_until(stmt, &self.params, text, &cancel)
                .and_then(|plan| {
                    // The drawings are of traversals; anything else is a table.
                    let format = match (&plan, self.format) {
                        (Plan::Traverse(_), f) => f,
                        (_, QueryFormat::Tree | QueryFormat::Dot | QueryFormat::Mermaid) => {
                            QueryFormat::Table
                        }
                        (_, f) => f,
                    };
                    print_result(
                        &db,
                        &plan,
                        format,
                        &cancel,
                        out,
                        i > 0,
                        width,
                        crate::tree::TreeCaps::default(),
                    )
                });
            *self.running.lock().unwrap_or_else(|p| p.into_inner()) = None;
            let _ = out.flush();
            let which = if statements.len() > 1 {
                format!("statement {}: ", i + 1)
            } else {
                String::new()
            };
            match done {
                Ok(()) => {
                    if self.timing {
                        let _ =
                            writeln!(out, "time: {:.3} ms", started.elapsed().as_secs_f64() * 1e3);
                    }
                }
                Err(EngineError::Cancelled) => {
                    let _ = writeln!(err, "{which}cancelled");
                    return false;
                }
                Err(e) => {
                    let _ = writeln!(err, "error: {which}{}", visible_lines(&e.to_string()));
                    return false;
                }
            }
        }
        true
    }

    /// Runs a shell command.
    fn command(&mut self, meta: Meta, out: &mut dyn Write) -> Result<()> {
        let w = |e| crate::error::io("output")(e);
        match meta {
            Meta::Help(topic) => {
                let text = help::text(topic.as_deref()).map_err(CliError::Usage)?;
                write!(out, "{text}").map_err(w)?;
            }
            Meta::Format(None) => {
                writeln!(out, "format: {}", format_name(self.format)).map_err(w)?
            }
            Meta::Format(Some(f)) => {
                self.format = f;
                writeln!(out, "format: {}", format_name(f)).map_err(w)?;
            }
            Meta::Timing(on) => {
                if let Some(on) = on {
                    self.timing = on;
                }
                writeln!(out, "timing: {}", if self.timing { "on" } else { "off" }).map_err(w)?;
            }
            Meta::Open(path) => {
                self.open(&path)?;
                writeln!(out, "{}", self.banner().lines().next().unwrap_or_default()).map_err(w)?;
            }
            Meta::Import(paths) => {
                let db = match self.db.clone() {
                    Some(db) => db,
                    None => {
                        let db = Arc::new(crate::opening::open(&self.path)?);
                        self.db = Some(Arc::clone(&db));
                        db
                    }
                };
                let (_, failed) = crate::transfer::import_into(&db, &paths, false, out)?;
                self.reload_names();
                if failed > 0 {
                    return Err(CliError::Usage(format!(
                        "{failed} file(s) failed to import; nothing of them was stored"
                    )));
                }
            }
            Meta::Export { trace, file } => {
                let db = self.db.clone().ok_or_else(|| {
                    CliError::Usage(format!("no database at {}", self.path.display()))
                })?;
                let format = match file.extension().and_then(|e| e.to_str()) {
                    Some("dot" | "gv") => ExportAs::Dot,
                    Some("mmd" | "mermaid") => ExportAs::Mermaid,
                    _ => ExportAs::Smartcomment,
                };
                crate::transfer::export_to(
                    &db,
                    &trace,
                    crate::transfer::Exported::As(format),
                    Some(file.clone()),
                )?;
                writeln!(out, "wrote {}", file.display()).map_err(w)?;
            }
            Meta::Param(None) => {
                let mut names: Vec<&String> = self.params.keys().collect();
                names.sort();
                if names.is_empty() {
                    writeln!(out, "no parameters set (:param NAME=VALUE)").map_err(w)?;
                }
                for n in names {
                    let v = memtrace::engine::to_json(&self.params[n]);
                    writeln!(out, "${n} = {v}").map_err(w)?;
                }
            }
            Meta::Param(Some((name, value))) => {
                self.params.insert(name, value);
                self.share_params();
            }
            Meta::Unset(name) => {
                if self.params.remove(&name).is_none() {
                    return Err(CliError::Usage(format!("no parameter ${name} is set")));
                }
                self.share_params();
            }
            Meta::Quit => {}
        }
        Ok(())
    }

    fn share_params(&self) {
        let mut names: Vec<String> = self.params.keys().cloned().collect();
        names.sort();
        self.known.write().unwrap_or_else(|p| p.into_inner()).params = names;
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

fn format_name(f: QueryFormat) -> String {
    f.to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// Where the history is kept: `MEMTRACE_HISTORY` (empty: nowhere), else
/// `memtrace/history` in the user's data folder.
fn history_path() -> Option<PathBuf> {
    match std::env::var_os("MEMTRACE_HISTORY") {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => dirs::data_dir().map(|d| d.join("memtrace").join("history")),
    }
}

/// Opens the shell on the database at `db`.
pub fn run(db: &Path) -> Result<ExitCode> {
    let session = Session::new(db)?;
    if std::io::stdin().is_terminal() {
        interactive(session)
    } else {
        piped(session)
    }
}

/// Reads statements and commands from standard input without prompts; the
/// exit status is 1 when any of them failed.
fn piped(mut session: Session) -> Result<ExitCode> {
    let stdin = std::io::stdin();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let mut buffer = String::new();
    let mut failed = false;
    for line in stdin.lock().lines() {
        let line = line.map_err(crate::error::io("standard input"))?;
        if !lex::has_statement(&buffer) && line.trim_start().starts_with(':') {
            buffer.clear();
            match session.handle(&line, &mut out, &mut err) {
                Step::Quit => return Ok(exit(failed)),
                Step::Next { ok } => failed |= !ok,
            }
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        if lex::is_complete(&buffer) {
            if let Step::Next { ok } = session.handle(&buffer, &mut out, &mut err) {
                failed |= !ok;
            }
            buffer.clear();
        }
    }
    if lex::has_statement(&buffer) {
        if let Step::Next { ok } = session.handle(&buffer, &mut out, &mut err) {
            failed |= !ok;
        }
    }
    Ok(exit(failed))
}

fn exit(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn interactive(mut session: Session) -> Result<ExitCode> {
    let colour = if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        ColorMode::Disabled
    } else {
        ColorMode::Enabled
    };
    let config = Config::builder()
        .auto_add_history(false)
        .history_ignore_space(true)
        .history_ignore_dups(true)
        .map_err(readline_err)?
        .max_history_size(10_000)
        .map_err(readline_err)?
        .completion_type(CompletionType::List)
        .color_mode(colour)
        .build();
    let mut editor: Editor<ShellHelper, FileHistory> =
        Editor::with_config(config).map_err(readline_err)?;
    editor.set_helper(Some(ShellHelper::new(Arc::clone(&session.known))));
    let history = history_path();
    if let Some(path) = &history {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        match editor.load_history(path) {
            Ok(()) => {}
            Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => eprintln!("warning: history {} not read: {e}", path.display()),
        }
    }
    // Ctrl-C while a statement runs cancels it; at the prompt the editor
    // reads it as a key and clears the line.
    let running = Arc::clone(&session.running);
    if let Err(e) = ctrlc::set_handler(move || {
        if let Some(c) = running.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            c.cancel();
        }
    }) {
        eprintln!("warning: Ctrl-C will end memtrace instead of cancelling a statement: {e}");
    }
    println!("{}", session.banner());
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    loop {
        match editor.readline(PROMPT) {
            Ok(input) => {
                if input.trim().is_empty() {
                    continue;
                }
                // Leaving is not worth recalling.
                let quitting = matches!(parse_meta(input.trim()), Ok(Meta::Quit));
                if !quitting {
                    let _ = editor.add_history_entry(input.as_str());
                }
                if let Some(path) = history.as_ref().filter(|_| !quitting) {
                    if let Err(e) = editor.append_history(path) {
                        eprintln!("warning: history {} not saved: {e}", path.display());
                    }
                }
                if session.handle(&input, &mut out, &mut err) == Step::Quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(readline_err(e)),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn readline_err(e: ReadlineError) -> CliError {
    CliError::Usage(format!("terminal: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_clear_errors() {
        assert_eq!(parse_meta(":help").unwrap(), Meta::Help(None));
        assert_eq!(
            parse_meta(":help match").unwrap(),
            Meta::Help(Some("match".into()))
        );
        assert_eq!(
            parse_meta(":format CSV").unwrap(),
            Meta::Format(Some(QueryFormat::Csv))
        );
        assert!(parse_meta(":format xml")
            .unwrap_err()
            .contains("formats: table, json, csv, tree, dot, mermaid"));
        assert_eq!(parse_meta(":timing on").unwrap(), Meta::Timing(Some(true)));
        assert_eq!(
            parse_meta(":timing maybe").unwrap_err(),
            "usage: :timing on|off"
        );
        assert_eq!(
            parse_meta(":import 'my runs/a.json' b.jsonl").unwrap(),
            Meta::Import(vec!["my runs/a.json".into(), "b.jsonl".into()])
        );
        assert_eq!(
            parse_meta(":export #1 out.dot").unwrap(),
            Meta::Export {
                trace: "#1".into(),
                file: "out.dot".into()
            }
        );
        assert_eq!(
            parse_meta(":export #1").unwrap_err(),
            "usage: :export TRACE FILE"
        );
        assert_eq!(
            parse_meta(":param k=3").unwrap(),
            Meta::Param(Some(("k".into(), Value::Int(3))))
        );
        assert_eq!(parse_meta(":unset $k").unwrap(), Meta::Unset("k".into()));
        assert_eq!(parse_meta(":q").unwrap(), Meta::Quit);
        assert!(parse_meta(":frobnicate")
            .unwrap_err()
            .starts_with("unknown command :frobnicate"));
        assert!(parse_meta(":open 'unclosed")
            .unwrap_err()
            .contains("not closed"));
    }

    fn run(session: &mut Session, input: &str) -> (Step, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let step = session.handle(input, &mut out, &mut err);
        (
            step,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn a_session_imports_queries_and_survives_errors() {
        let dir = tempfile::tempdir().unwrap();
        let sample = dir.path().join("sample.json");
        std::fs::write(&sample, crate::transfer::SAMPLE).unwrap();
        let mut s = Session::new(&dir.path().join("db")).unwrap();
        let (_, _, err) = run(&mut s, "SHOW TRACES;");
        assert!(err.contains("no database at"), "{err}");
        assert!(!dir.path().join("db").exists(), "a query creates nothing");
        let (step, out, err) = run(&mut s, &format!(":import {}", sample.display()));
        assert_eq!(step, Step::Next { ok: true }, "{err}");
        assert!(out.contains("trace(s) stored"), "{out}");
        let (step, _, err) = run(&mut s, "TRACE answer:42 UNTILL x;");
        assert_eq!(step, Step::Next { ok: false });
        assert!(
            err.contains("did you mean UNTIL?") && err.contains('^'),
            "{err}"
        );
        let (_, out, _) = run(&mut s, ":format csv");
        assert_eq!(out, "format: csv\n");
        let (step, out, err) = run(
            &mut s,
            "FIND ops\n  WHERE op.name = 'rag.answer'\n  RETURN op.name;",
        );
        assert_eq!(step, Step::Next { ok: true }, "{err}");
        assert_eq!(out, "op.name\r\nrag.answer\r\n");
        run(&mut s, ":param n=rag.answer");
        let (_, out, _) = run(&mut s, ":param");
        assert_eq!(out, "$n = \"rag.answer\"\n");
        let (_, out, _) = run(&mut s, "FIND ops WHERE op.name = $n RETURN count(*);");
        assert_eq!(out, "count(*)\r\n1\r\n");
        let (step, _, err) = run(&mut s, ":unset m");
        assert_eq!(step, Step::Next { ok: false });
        assert!(err.contains("no parameter $m"), "{err}");
        let (_, out, _) = run(&mut s, ":timing on");
        assert_eq!(out, "timing: on\n");
        let (_, out, _) = run(&mut s, "SHOW TRACES;");
        assert!(out.lines().last().unwrap().starts_with("time: "), "{out}");
        let (step, _, err) = run(&mut s, "SHOW TRACES; FIND nothing;");
        assert_eq!(step, Step::Next { ok: false });
        assert!(err.contains("error: syntax error"), "{err}");
        let export = dir.path().join("t.mmd");
        let (_, out, err) = run(&mut s, &format!(":export #1 {}", export.display()));
        assert!(out.starts_with("wrote "), "{err}");
        assert!(std::fs::read_to_string(&export)
            .unwrap()
            .starts_with("flowchart"));
        assert_eq!(run(&mut s, ":quit").0, Step::Quit);
    }
}
