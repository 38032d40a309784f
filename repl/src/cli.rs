//! Runs a parsed command line: each subcommand's flags go to the file that carries it out.

use std::process::ExitCode;
use std::time::Duration;

use crate::args::{Cli, CollectArgs, Command, QueryArgs, ServeArgs};
use crate::error::Result;
use crate::serve::ServeOptions;

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let Some(command) = cli.command else {
        return crate::shell::run(&cli.db);
    };
    let db = &cli.db;
    match command {
        Command::Import { paths, force } => crate::import::run(db, &paths, force),
        Command::Export(a) => crate::export::run(db, a),
        Command::Stats { format } => crate::stats::run(db, format),
        Command::Traces { format } => crate::traces::run(db, format),
        Command::Drop { trace, yes, reason } => crate::drop_trace::run(db, &trace, yes, &reason),
        Command::Log { format } => crate::event_log::run(db, format),
        Command::Query(a) => query(db, a),
        Command::EvidenceRecall { k, method, format } => {
            crate::evidence_recall::run(db, k, method, format)
        }
        Command::Attribute(a) => crate::attribute::attribute(
            db,
            a.trace.as_deref(),
            (a.method, a.setting, a.search),
            a.format,
        ),
        Command::Eval(a) => crate::attribute::eval(
            db,
            a.trace.as_deref(),
            (a.method, a.search),
            a.format,
            a.misses,
            a.setting,
        ),
        Command::Report(a) => {
            crate::attribute::report(db, &a.out, a.trace.as_deref(), a.method, a.llm)
        }
        Command::Feedback(a) => {
            crate::attribute::feedback(db, &a.out, a.trace.as_deref(), a.method, a.examples)
        }
        Command::Serve(a) => crate::serve::serve(db, &viewer_options(a)),
        Command::Collect(a) => crate::serve::serve(db, &collector_options(a)),
        Command::Mcp { allow_writes } => {
            crate::mcp::run(db, &crate::mcp::McpOptions { allow_writes })
        }
        Command::Patterns(a) => crate::patterns::patterns(
            db,
            &a.names,
            a.builtin,
            a.over.as_deref(),
            &a.params,
            a.examples,
            a.format,
        ),
        Command::Check(a) => crate::patterns::check(
            db,
            a.patterns.as_deref(),
            a.builtin,
            a.max_hits,
            a.over.as_deref(),
            a.examples,
            a.format,
        ),
        Command::Demo => crate::demo::run(db),
        Command::Gen(a) => crate::generate::run(a),
        Command::Synth(a) => crate::synth::run(&a),
    }
}

/// `memtrace query`: statements from the argument, a file, or standard input.
fn query(db: &std::path::Path, a: QueryArgs) -> Result<ExitCode> {
    let source = match (a.text, a.file) {
        (Some(t), _) => crate::query::Source::Text(t),
        (None, Some(f)) => crate::query::Source::File(f),
        (None, None) => crate::query::Source::Stdin,
    };
    let caps = crate::tree::TreeCaps {
        depth: a.tree_depth as usize,
        width: a.tree_width as usize,
    };
    crate::query::run(db, &source, a.format, &a.params, a.timeout, caps)
}

/// `memtrace serve`: the viewer, with the OTLP receiver unless it is turned off.
fn viewer_options(a: ServeArgs) -> ServeOptions {
    ServeOptions {
        addr: a.addr,
        threads: a.threads,
        query_timeout: Duration::from_secs(a.query_timeout),
        idle_timeout: a.idle_timeout,
        header_timeout: a.header_timeout,
        max_connections: a.max_connections as usize,
        max_import: a.max_import,
        log: a.log,
        receiver: (!a.no_otlp).then(|| a.otlp.options(a.log)),
        viewer: true,
        create: false,
    }
}

/// `memtrace collect`: only the OTLP receiver, on a database it creates when missing.
fn collector_options(a: CollectArgs) -> ServeOptions {
    ServeOptions {
        addr: a.addr,
        threads: 2,
        query_timeout: Duration::from_secs(30),
        idle_timeout: a.idle_timeout,
        header_timeout: a.header_timeout,
        max_connections: a.max_connections as usize,
        // No import endpoint answers without the viewer.
        max_import: 0,
        log: a.log,
        receiver: Some(a.otlp.options(a.log)),
        viewer: false,
        create: true,
    }
}
