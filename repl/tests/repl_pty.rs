// End-to-end tests of the interactive shell: the real binary driven through
// a pseudo-terminal, keys and all.

#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, ok, run};
use rexpect::reader::Options;
use rexpect::session::{spawn_with_options, PtySession};

/// A database of one small generated Mem0 trace, in a folder that also
/// serves as the user's home.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        ok(run(
            p,
            None,
            &[
                "gen",
                "--system",
                "mem0",
                "--traces",
                "1",
                "--sessions",
                "3",
                "--messages",
                "8",
                "--questions",
                "10",
                "--seed",
                "3",
                "--out",
                "g",
            ],
        ));
        ok(run(p, Some(&p.join("memtrace.db")), &["import", "g"]));
        Home { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn history(&self) -> PathBuf {
        self.path().join("data/memtrace/history")
    }

    /// Starts `memtrace` (no subcommand) in the home folder, as a user
    /// would: the database is `./memtrace.db`, history in the data folder.
    fn shell(&self) -> PtySession {
        let mut c = Command::new(bin());
        c.current_dir(self.path())
            .env("HOME", self.path())
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("TERM", "xterm")
            .env("COLUMNS", "120")
            .env_remove("MEMTRACE_DB")
            .env_remove("MEMTRACE_HISTORY")
            .env_remove("NO_COLOR");
        let opts = Options::new()
            .timeout_ms(Some(30_000))
            .strip_ansi_escape_codes(true);
        let mut s = spawn_with_options(c, opts).expect("start memtrace in a pty");
        s.exp_string("memtrace.db (1 trace)").expect("banner");
        s.exp_string("memtrace> ").expect("prompt");
        s
    }
}

/// Types `text` as keys (Enter is `\r`).
fn keys(s: &mut PtySession, text: &str) {
    s.send(text).unwrap();
    s.flush().unwrap();
}

fn quit(mut s: PtySession) {
    keys(&mut s, ":quit\r");
    s.exp_eof().expect("memtrace ends after :quit");
}

#[test]
fn a_query_typed_over_several_lines_prints_a_table() {
    let home = Home::new();
    let mut s = home.shell();
    keys(&mut s, "FIND vars\r");
    keys(&mut s, "  WHERE var.category = 'prediction'\r");
    keys(&mut s, "  RETURN var.category, count(*) AS n;\r");
    let out = s.exp_string("(1 row)").expect("the table");
    assert!(out.contains("var.category"), "{out}");
    assert!(out.contains("prediction") && out.contains("10"), "{out}");
    quit(s);
}

#[test]
fn tab_completes_a_category_from_the_database() {
    let home = Home::new();
    let mut s = home.shell();
    keys(&mut s, "FIND vars WHERE var.category = 'memory_en\t");
    s.exp_string("memory_entry'")
        .expect("the category completed");
    keys(&mut s, " RETURN count(*) AS entries;\r");
    let out = s.exp_string("(1 row)").expect("the query ran");
    assert!(out.contains("entries") && out.contains("43"), "{out}");
    quit(s);
}

#[test]
fn ctrl_c_cancels_a_long_query_and_keeps_the_shell() {
    let home = Home::new();
    let mut s = home.shell();
    // Three independent variable-length patterns: billions of combinations.
    keys(
        &mut s,
        "MATCH (a)-[*1..40]->(b), (c)-[*1..40]->(d), (e)-[*1..40]->(f) RETURN count(*);\r",
    );
    std::thread::sleep(std::time::Duration::from_millis(700));
    s.send_control('c').unwrap();
    s.exp_string("cancelled").expect("the query is cancelled");
    s.exp_string("memtrace> ").expect("back at the prompt");
    keys(&mut s, "SHOW TRACES;\r");
    s.exp_string("mem0-0000-s3")
        .expect("the shell still answers");
    quit(s);
}

#[test]
fn an_error_shows_the_caret_and_the_shell_goes_on() {
    let home = Home::new();
    let mut s = home.shell();
    keys(
        &mut s,
        "TRACE prediction:Q1 UNTILL op.kind = 'extraction';\r",
    );
    let out = s.exp_string("did you mean UNTIL?").expect("the error");
    assert!(out.contains("line 1, column 21"), "{out}");
    s.exp_string("^").expect("the caret");
    keys(&mut s, ":frobnicate\r");
    s.exp_string("unknown command :frobnicate")
        .expect("a command error");
    keys(&mut s, "FIND cases RETURN count(*) AS failed;\r");
    let out = s.exp_string("(1 row)").expect("the shell goes on");
    assert!(out.contains("failed"), "{out}");
    quit(s);
}

#[test]
fn history_survives_a_restart() {
    let home = Home::new();
    let mut s = home.shell();
    keys(
        &mut s,
        "FIND ops GROUP BY op.kind RETURN count(*) AS kinds;\r",
    );
    s.exp_string("(4 rows)").unwrap();
    quit(s);
    let saved = std::fs::read_to_string(home.history()).expect("history in the data folder");
    assert!(saved.contains("AS kinds;"), "{saved}");
    // A new session: Up brings the statement back, Enter runs it.
    let mut s = home.shell();
    keys(&mut s, "\x1b[A");
    s.exp_string("AS kinds;").expect("the statement recalled");
    keys(&mut s, "\r");
    let out = s.exp_string("(4 rows)").expect("it runs again");
    assert!(out.contains("kinds"), "{out}");
    quit(s);
}

#[test]
fn ctrl_d_leaves_the_shell() {
    let home = Home::new();
    let mut s = home.shell();
    s.send_control('d').unwrap();
    s.exp_eof().expect("memtrace ends on Ctrl-D");
}
