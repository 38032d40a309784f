//! The `memtrace` command-line tool and shell: import, query, export and inspect traces of LLM memory systems.

mod args;
mod attribute;
mod cli;
mod demo;
mod drop_trace;
mod error;
mod event_log;
mod evidence_recall;
mod export;
mod formats;
mod generate;
mod import;
mod mcp;
mod opening;
mod patterns;
mod query;
mod receiver;
mod serve;
mod shell;
mod stats;
mod synth;
mod timeout;
mod traces;
mod transfer;
mod tree;

use std::process::ExitCode;

/// The allocator: records are decoded into many small strings, which this allocator makes and
/// frees faster than the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::Parser;

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes
    // away (`memtrace export ... | head`) instead of failing to print.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = args::Cli::parse();
    let db = args.db.clone();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", memtrace_table::visible_lines(&e.to_string()));
            if let Some(hint) = serve::busy_hint(&db, &e) {
                eprintln!("{hint}");
            }
            ExitCode::from(1)
        }
    }
}
