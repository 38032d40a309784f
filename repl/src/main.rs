//! The `memtrace` command-line tool and shell: import, query, export and inspect traces of LLM memory systems.

mod attr_bench;
mod attribute;
mod bench;
mod cli;
mod demo;
mod error;
mod llm_bench;
mod pattern_bench;
mod patterns;
mod query;
mod serve;
mod shell;
mod suite;
mod table;
mod tree;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes
    // away (`memtrace export ... | head`) instead of failing to print.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = cli::Cli::parse();
    let db = args.db.clone();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(hint) = serve::busy_hint(&db, &e) {
                eprintln!("{hint}");
            }
            ExitCode::from(1)
        }
    }
}
