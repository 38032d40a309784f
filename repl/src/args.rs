//! The command line: the subcommands, their flags and their help.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use memtrace::gen::sim::System;
use memtrace::gen::style::Style;

use crate::formats::{ExportAs, Listing, PartitionBy, Records};

const AFTER_HELP: &str = "\
Without a subcommand memtrace opens its shell on the database: statements end with ';',
:help lists them and the shell's commands, Tab completes, Ctrl-C cancels, Ctrl-D leaves.

Examples:
  memtrace                                   the shell on ./memtrace.db
  memtrace demo                              import the bundled sample, show stats and traces
  memtrace import runs/ extra.jsonl          import files and folders (*.json, *.jsonl)
  memtrace traces --format json              list stored traces as JSON
  memtrace query \"TRACE prediction:Q7 DEPTH 3\" --format tree    provenance of an answer
  memtrace query -f checks.mt --format csv   run a script of statements
  memtrace export graph-e02a1f3b --format dot > trace.dot
  memtrace --db other.db stats               use another database (or set MEMTRACE_DB)";

/// memtrace: an embedded graph database for the execution traces of LLM memory systems.
#[derive(Debug, Parser)]
#[command(name = "memtrace", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// The database folder.
    #[arg(
        long,
        global = true,
        env = "MEMTRACE_DB",
        default_value = "memtrace.db"
    )]
    pub db: PathBuf,
    /// What to do; without a subcommand, the interactive shell opens.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import smartcomment exports, MemTraceBench files and JSON Lines, or folders of them.
    #[command(
        after_help = "Examples:\n  memtrace import trace.json\n  memtrace import memtracebench/ --force\n  memtrace --db runs.db import day1.jsonl day2.jsonl\n\nEach file is stored whole or not at all; the exit status is 1 when any file failed."
    )]
    Import {
        /// Files or folders (searched recursively for *.json and *.jsonl).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Store a trace again, as a new trace, when its graph id is already stored.
        #[arg(long)]
        force: bool,
    },
    /// Write a trace back as smartcomment JSON, or draw it as DOT or Mermaid; or write every
    /// trace as Parquet tables in a folder.
    #[command(
        after_help = "Examples:\n  memtrace export graph-e02a1f3b041740d5b82569831ef2d06e > back.json\n  memtrace export '#1' --format mermaid -o trace.mmd\n  memtrace export mem0-0002-s7 --labels -o labelled.json\n  memtrace export --format parquet out/\n  memtrace export --format parquet out/ --partition project --project mem0 --force\n\nWith --format parquet the argument is the folder to write: one folder per table (traces,\nsessions, nodes, edges, ops, cases, verdicts), and _memtrace_export.json. The folder is written\nbeside its place and renamed into it at the end, so it holds a whole export or is left as it was.\nIt may be missing or empty; with --force, an earlier Parquet export there is replaced. Any\nother folder with files in it is refused."
    )]
    Export(ExportArgs),
    /// Totals: traces, sessions, variables, ops, edges, cases, bytes.
    #[command(after_help = "Examples:\n  memtrace stats\n  memtrace stats --format json")]
    Stats {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Listing::Table)]
        format: Listing,
    },
    /// List stored traces with their counts.
    #[command(after_help = "Examples:\n  memtrace traces\n  memtrace traces --format json")]
    Traces {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Listing::Table)]
        format: Listing,
    },
    /// Remove a whole trace (the only deletion memtrace has; it is logged).
    #[command(after_help = "Example:\n  memtrace drop '#3' --yes --reason 'imported twice'")]
    Drop {
        /// The trace: its graph id, or #ID.
        trace: String,
        /// Confirm the removal.
        #[arg(long)]
        yes: bool,
        /// Why, for the log.
        #[arg(long, default_value = "dropped by the user")]
        reason: String,
    },
    /// Run a statement of the query language and print its rows.
    #[command(
        after_help = "Examples:\n  memtrace query \"SHOW TRACES\"\n  memtrace query \"TRACE prediction:Q1 DEPTH 3 RETURN nodes\"\n  memtrace query \"FORWARD message:D1:1 WHERE var.category = 'memory_entry'\" --format json\n  memtrace query \"FIND ops GROUP BY op.name RETURN op.name, count(*) ORDER BY count(*) DESC\" --format csv\n  memtrace query \"TRACE \\$start IN TRACE \\$t RETURN count\" --param start=prediction:Q7 --param t=mem0-0002-s7\n  memtrace query \"EXPLAIN MATCH (m:message)-[*1..20]->(p:prediction) RETURN m, p\"\n  memtrace query -f checks.mt                  several statements, ';'-separated, '--' comments\n  echo \"SHOW TRACES; FIND cases\" | memtrace query --format json   one JSON object per statement\n\nThe language is described in the book, docs/src/query-language.md."
    )]
    Query(QueryArgs),
    /// Recall@k of pseudo-evidence against the known source evidence of failed cases.
    #[command(
        after_help = "Examples:\n  memtrace evidence-recall\n  memtrace evidence-recall --k 4 --format json\n  memtrace evidence-recall --method hybrid   (an embeddings endpoint: MEMTRACE_EMBED_MODEL, see docs/src/cases.md)\n\nA case without source evidence gets pseudo-evidence: the k messages of its trace chosen from its\nquestion and gold answer (BM25 by default, or embeddings, or both fused), each weighed by how\nlikely the answer needed it. Over the cases whose source evidence is known (MemTraceBench\nsource_evidence_ids, or the query's metadata.evidence), this reports how many source items the\nchosen evidence finds, per memory system and in total."
    )]
    EvidenceRecall {
        /// Messages pseudo-evidence takes per case.
        #[arg(long, default_value_t = memtrace::attrib::DEFAULT_K)]
        k: usize,
        /// How evidence is searched for: sparse (BM25), dense (embeddings) or hybrid (both,
        /// fused by reciprocal rank).
        #[arg(long, default_value = "sparse", value_parser = crate::attribute::parse_search)]
        method: memtrace::attrib::Search,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Listing::Table)]
        format: Listing,
    },
    /// Attribute every failed case: name its earliest decisive faulty op and error type, and store the verdicts.
    #[command(
        after_help = "Examples:\n  memtrace attribute\n  memtrace attribute --trace mem0-0002-s7 --using evidence --format json\n  memtrace attribute --setting production   as if no case had its gold answer or evidence\n  memtrace attribute --using hybrid      (an LLM endpoint: see MEMTRACE_LLM_* in docs/src/llm.md)\n\nCases come from MemTraceBench annotations, else from llm-judge ops that scored 0. The\nevidence method follows each needed evidence message forward through the ops that carried it\nand names the op where it was lost, left out of the answer's context, or ignored. The llm method\nhas an LLM explore the trace with tools; hybrid gives it the evidence verdict to check. Verdicts are\nappended to the database (a verdict already stored is not stored again) and can be queried:\n  memtrace query \"FIND attributions GROUP BY error_type RETURN error_type, count(*)\""
    )]
    Attribute(AttributeArgs),
    /// Score an attribution method against the labelled failed cases (MemTraceBench labels).
    #[command(
        after_help = "Examples:\n  memtrace eval                        the three settings side by side\n  memtrace eval --setting production   one setting in detail, with a confusion matrix\n  memtrace eval --setting evaluation --format json\n  memtrace eval --setting benchmark --misses 10    ten cases it got wrong\n  memtrace eval --method hybrid --setting benchmark   with cost columns (calls, tokens, seconds)\n\nRuns the method over every failed case (nothing is stored) and compares each verdict with the\ncase's final_error_type and final_op_id: error-type accuracy and op-id exact match, per memory\nsystem and per true error type, and the median time per case. Each labelled set is scored in\nthree settings: benchmark (the case as recorded), evaluation (its annotated evidence hidden)\nand production (its evidence and gold answer hidden). Confidence is scored too: the accuracy of\nthe most confident verdicts at each share of the cases, and of the verdicts at or above each\nconfidence band; confident means 0.8 or more."
    )]
    Eval(EvalArgs),
    /// Write the diagnostic report per memory system, as Markdown and as a self-contained HTML page.
    #[command(
        after_help = "Examples:\n  memtrace report\n  memtrace report --out reports/today --trace mem0-0002-s7\n\nThe report reads the verdicts stored by `memtrace attribute` (the latest per case): how failures\nsplit by error type and by faulty op, the top failure patterns with example cases and their\nevidence chains, and the accuracy against labels where cases have them. Run `memtrace attribute`\nfirst. The HTML page needs no network."
    )]
    Report(ReportArgs),
    /// A local web viewer: traces, timelines, failed cases with their verdicts, provenance graphs, a query box, and labels.
    #[command(
        after_help = "Examples:\n  memtrace serve                         then open http://127.0.0.1:7878\n  memtrace --db runs.db serve --addr 127.0.0.1:8080\n  memtrace serve --addr 0.0.0.0:7878     other machines may connect (a warning says so)\n\nThe app is built into the binary and needs no network. It only reads, except for labels, which\nare appended with their author and time. The JSON API under /api/ is described in\ndocs/src/viewer-api.md. While it serves, commands that only read (traces, query, log, ...)\nwork beside it; commands that write cannot open the database: import through the server with\ncurl -H 'Content-Type: application/json' --data-binary @trace.json http://127.0.0.1:7878/api/import\n\nIt cannot be frozen: a client must send its headers within --header-timeout seconds and each part\nof a body within --idle-timeout; past --max-connections the slowest client is shed; at most\n--threads requests read the database at once (the page and /api/health answer regardless); a\nquery stops when its client goes away or after --query-timeout seconds; an import is at most\n--max-import bytes. docs/src/limits.md lists every limit.\n\nIt also receives OpenTelemetry traces on POST /v1/traces (OTLP/HTTP, protobuf or JSON): run\nyour app with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:7878. Each trace is stored once complete\n(see memtrace collect --help); --no-otlp turns the receiver off."
    )]
    Serve(ServeArgs),
    /// Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces) and store each trace once complete.
    #[command(
        after_help = "Examples:\n  memtrace collect                       then run your app with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318\n  memtrace --db live.db collect --otlp-quiet 2 --log\n\nThe receiver of `memtrace serve`, without the viewer, on the OTLP/HTTP port (4318). It creates\nthe database when it is missing. Protobuf and JSON bodies, gzip or not. Spans are written ahead\nto the database folder's otlp-spool.log before each 200, so a crash loses nothing acknowledged.\nA trace is stored once its root span came and --otlp-quiet seconds passed without a new span of\nit (--otlp-orphan-wait seconds when its root never came), and every trace held is stored at\nCtrl-C. A span that comes after its trace was stored has the trace stored again, whole, under\nthe same graph id, with the earlier one's verdicts and labels, and the earlier one dropped\n(`memtrace log` says so). The spool keeps only the spans of traces not yet stored."
    )]
    Collect(CollectArgs),
    /// A Model Context Protocol server on standard input and output, for coding agents.
    #[command(
        after_help = "Examples:\n  memtrace mcp                           what an MCP client starts (it speaks on stdin/stdout)\n  memtrace --db runs.db mcp --allow-writes\n  claude mcp add memtrace -- memtrace --db /abs/path/memtrace.db mcp\n\nTools: list_traces, query (a statement with a row and a time limit), explain, show_value,\nfailed_cases, attribute_case (evidence; llm and hybrid when an endpoint is configured),\nrun_pattern, describe (schema and language); with --allow-writes also execute (ATTRIBUTE,\nSAVE PATTERN, DROP PATTERN). Without --allow-writes it opens the database read-only at each\ncall, so it runs beside memtrace serve. docs/src/mcp.md tells how to register it with an agent."
    )]
    Mcp {
        /// Add the execute tool, which stores verdicts and patterns (the database is then held
        /// open to write, so memtrace serve cannot run beside it).
        #[arg(long)]
        allow_writes: bool,
    },
    /// Run failure patterns (built-in and saved) over every trace: hits per pattern and per trace, with examples.
    #[command(
        after_help = "Examples:\n  memtrace patterns\n  memtrace patterns empty_retrieval noop_update --examples 5\n  memtrace patterns --builtin --over \"trace.project_id = 'mem0'\" --format json\n  memtrace patterns unbounded_growth --param min_versions=50 --format csv\n\nWithout names, every built-in and saved pattern runs (SHOW PATTERNS lists them; save your own\nwith SAVE PATTERN in `memtrace query`). Traces are searched in parallel, each read once from the\ntrace cache; a pattern's rows in a trace are its hits there. The CSV has one line per pattern and\ntrace with hits."
    )]
    Patterns(PatternsArgs),
    /// Exit 1 when a failure pattern has more hits than its threshold: a check for a memory system's CI.
    #[command(
        after_help = "Examples:\n  memtrace check --builtin --max-hits 0\n  memtrace check --patterns ci/patterns.toml\n  memtrace check --patterns ci/patterns.toml --format json > check.json\n\nThe patterns file (TOML) lists the patterns to check, each with its own threshold:\n\n  max_hits = 0                          # for patterns that give none (default 0)\n  over = \"trace.project_id = 'mem0'\"        # optional: only these traces\n\n  [[pattern]]\n  name = \"empty_retrieval\"              # a built-in or saved pattern\n  max_hits = 10\n\n  [[pattern]]\n  name = \"big_units\"                    # an inline pattern, not stored\n  statement = \"FIND vars WHERE var.version > $v GROUP BY var.full_name RETURN var.full_name\"\n  params = { v = 100 }\n  max_hits = 0\n\nA pattern's own max_hits wins over --max-hits, which wins over the file's max_hits. Without\n--patterns, every built-in and saved pattern is checked (--builtin: only the built-in ones).\nExit status: 0 when every pattern is within its threshold, 1 when one is over (named on\nstandard error) or on an error."
    )]
    Check(CheckArgs),
    /// Ask the configured LLM for feedback on the prompts of the faulty ops, with suggested rewrites.
    #[command(
        after_help = "Examples:\n  memtrace feedback\n  memtrace feedback --method hybrid --out prompts.json\n\nReads the stored verdicts of the method (run `memtrace attribute` first), finds the prompts\n(variables of category prompt) that each faulty op read, and asks the LLM, prompt by prompt,\nwhat in it lets those failures happen and how to rewrite it. Writes JSON keyed\n`<prompt-id>@1` with the current text, the feedback, the suggested rewrite, and the cases\nthat motivated it. The endpoint comes from OPENAI_* / MEMTRACE_LLM_* or the config file."
    )]
    Feedback(FeedbackArgs),
    /// Show the event log of imports and removals.
    #[command(
        after_help = "Examples:\n  memtrace log\n  memtrace log --format jsonl\n\nTimes are ISO-8601 UTC; JSON, JSON Lines and CSV also give them in milliseconds since the\nUnix epoch (at_ms)."
    )]
    Log {
        /// Output format.
        #[arg(long, value_enum, default_value_t = Records::Table)]
        format: Records,
    },
    /// Import the bundled sample trace (once) and print stats and the traces.
    #[command(after_help = "Example:\n  memtrace demo\n  memtrace --db demo.db demo")]
    Demo,
    /// Generate traces of simulated memory systems with injected faults and labelled failures.
    #[command(
        after_help = "Examples:\n  memtrace gen --system all --traces 40 --seed 7 --out gen40\n  memtrace gen --system mem0 --traces 3 --sessions 4..6 --messages 10..12 --questions 20 --out small\n  memtrace gen --style all --traces 16 --seed 7 --out styled\n  memtrace import gen40/\n\nEach trace is one MemTraceBench file (a smartcomment export plus data.annotations for its failed\nquestions, labelled by counterfactual replay); manifest.json counts them. The same seed writes the same bytes.\nStyles vary how the runs are recorded (message framing, JSON or Python values, what extraction\nkeeps, shared and mutated units, where the context is assembled); the labels are found the same way."
    )]
    Gen(GenArgs),
    /// Write a synthetic export of a given size (for benchmarks and tests).
    #[command(hide = true)]
    Synth(SynthArgs),
}

/// The flags of `memtrace export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The trace: its graph id, or #ID. With --format parquet: the folder to write.
    #[arg(value_name = "TRACE|DIR")]
    pub target: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportAs::Smartcomment)]
    pub format: ExportAs,
    /// Write a MemTraceBench file whose data.annotations hold every failed case, each with
    /// its latest label where it has one (labels are added in `memtrace serve`).
    #[arg(long)]
    pub labels: bool,
    /// Write to this file instead of standard output (with --format parquet: this folder).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// With --format parquet: only this trace (graph id or #ID); repeat for more.
    #[arg(long = "trace", value_name = "TRACE")]
    pub traces: Vec<String>,
    /// With --format parquet: only the traces of this project_id; repeat for more.
    #[arg(long = "project", value_name = "PROJECT_ID")]
    pub projects: Vec<String>,
    /// With --format parquet: split each table's files into Hive folders by trace
    /// (trace=ID) or by project (project_id=NAME) [default: none].
    #[arg(long, value_enum)]
    pub partition: Option<PartitionBy>,
    /// With --format parquet: replace an earlier Parquet export in the folder.
    #[arg(long)]
    pub force: bool,
}

/// The flags of `memtrace query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The statement (or several, `;`-separated). Without it, statements
    /// are read from -f FILE or from standard input. It may start with
    /// `-` (a `--` comment, a negative number).
    #[arg(allow_hyphen_values = true)]
    pub text: Option<String>,
    /// Read the statements from this file (`;`-separated, `--` comments).
    #[arg(short = 'f', long = "file", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = crate::query::QueryFormat::Table)]
    pub format: crate::query::QueryFormat,
    /// A parameter for `$name` in the statement, as NAME=VALUE (repeatable).
    #[arg(long = "param", value_parser = crate::query::parse_param)]
    pub params: Vec<(String, memtrace::Value)>,
    /// Stop a statement that runs longer than this many seconds (each
    /// statement has its own limit; none by default).
    #[arg(long, value_parser = crate::query::parse_timeout)]
    pub timeout: Option<std::time::Duration>,
    /// With --format tree: levels drawn below each start (what lies
    /// deeper is counted on one line).
    #[arg(long, default_value_t = crate::tree::TreeCaps::default().depth as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub tree_depth: u32,
    /// With --format tree: branches drawn below each node (the others
    /// are counted on one line).
    #[arg(long, default_value_t = crate::tree::TreeCaps::default().width as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub tree_width: u32,
}

/// The flags of `memtrace attribute`.
#[derive(Debug, clap::Args)]
pub struct AttributeArgs {
    /// Only this trace (graph id or #ID).
    #[arg(long)]
    pub trace: Option<String>,
    /// The attribution method.
    #[arg(long = "using", default_value = "evidence", value_parser = crate::attribute::parse_method)]
    pub method: memtrace::attrib::Method,
    /// What each case shows the method: benchmark (all it holds), evaluation (its annotated
    /// evidence hidden) or production (its evidence and gold answer hidden).
    #[arg(long, default_value = "benchmark", value_parser = crate::attribute::parse_setting)]
    pub setting: memtrace::attrib::Setting,
    /// How a case without source evidence has its evidence searched for: sparse (BM25),
    /// dense (embeddings) or hybrid.
    #[arg(long, default_value = "sparse", value_parser = crate::attribute::parse_search)]
    pub search: memtrace::attrib::Search,
    /// Output format: a summary table, or every verdict as JSON.
    #[arg(long, value_enum, default_value_t = Listing::Table)]
    pub format: Listing,
}

/// The flags of `memtrace eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The attribution method.
    #[arg(long, default_value = "evidence", value_parser = crate::attribute::parse_method)]
    pub method: memtrace::attrib::Method,
    /// Only this trace (graph id or #ID).
    #[arg(long)]
    pub trace: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Listing::Table)]
    pub format: Listing,
    /// Show this many misses (cases it got wrong) after the tables.
    #[arg(long, default_value_t = 0)]
    pub misses: usize,
    /// Score one setting in detail (benchmark, evaluation or production) instead of all three
    /// side by side.
    #[arg(long, value_parser = crate::attribute::parse_setting)]
    pub setting: Option<memtrace::attrib::Setting>,
    /// How a case without source evidence has its evidence searched for: sparse (BM25),
    /// dense (embeddings) or hybrid.
    #[arg(long, default_value = "sparse", value_parser = crate::attribute::parse_search)]
    pub search: memtrace::attrib::Search,
}

/// The flags of `memtrace report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Folder for report.md and report.html (created when missing).
    #[arg(long, default_value = "memtrace-report")]
    pub out: PathBuf,
    /// Only this trace (graph id or #ID).
    #[arg(long)]
    pub trace: Option<String>,
    /// Whose verdicts to report.
    #[arg(long, default_value = "evidence", value_parser = crate::attribute::parse_method)]
    pub method: memtrace::attrib::Method,
    /// Add a summary of each system's failure patterns written by the configured LLM
    /// (see the book's page on LLM attribution, docs/src/llm.md).
    #[arg(long)]
    pub llm: bool,
}

/// The flags of `memtrace serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (HOST:PORT; port 0 picks a free port). Loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub addr: String,
    /// Requests that read or query the database at once; more wait up to 10 s, then get 503.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Stop a query after this many seconds.
    #[arg(long, default_value_t = 30)]
    pub query_timeout: u64,
    /// Disconnect a client that sends nothing for this many seconds within a request body (408); a small body (a query, a label) must arrive whole within it.
    #[arg(long, default_value = "20", value_parser = crate::query::parse_timeout)]
    pub idle_timeout: std::time::Duration,
    /// Disconnect a client that has not sent a request's headers this many seconds after the connection began to wait for them (also between requests).
    #[arg(long, default_value = "10", value_parser = crate::query::parse_timeout)]
    pub header_timeout: std::time::Duration,
    /// Connections open at once; one more sheds the slowest that is not being answered.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Largest body of POST /api/import (bytes, or with K, M or G); larger ones get 413.
    #[arg(long, default_value = "1G", value_parser = crate::serve::parse_size)]
    pub max_import: u64,
    /// Print one line per request on standard error.
    #[arg(long)]
    pub log: bool,
    /// Do not receive OpenTelemetry traces on /v1/traces.
    #[arg(long)]
    pub no_otlp: bool,
    #[command(flatten)]
    pub otlp: OtlpArgs,
}

/// The flags of `memtrace collect`.
#[derive(Debug, clap::Args)]
pub struct CollectArgs {
    /// Address to listen on (HOST:PORT; port 0 picks a free port). Loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:4318")]
    pub addr: String,
    /// Disconnect a client that sends nothing for this many seconds within a request body (408).
    #[arg(long, default_value = "20", value_parser = crate::query::parse_timeout)]
    pub idle_timeout: std::time::Duration,
    /// Disconnect a client that has not sent a request's headers this many seconds after the connection began to wait for them (also between requests).
    #[arg(long, default_value = "10", value_parser = crate::query::parse_timeout)]
    pub header_timeout: std::time::Duration,
    /// Connections open at once; one more sheds the slowest that is not being answered.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Print one line per request and per stored trace on standard error.
    #[arg(long)]
    pub log: bool,
    #[command(flatten)]
    pub otlp: OtlpArgs,
}

/// The flags of `memtrace patterns`.
#[derive(Debug, clap::Args)]
pub struct PatternsArgs {
    /// Patterns to run, by name (default: every built-in and saved pattern).
    pub names: Vec<String>,
    /// Without names: only the built-in patterns.
    #[arg(long)]
    pub builtin: bool,
    /// Only the traces this condition on trace fields holds for, e.g. "trace.project_id = 'mem0'".
    #[arg(long)]
    pub over: Option<String>,
    /// A parameter value for the patterns that take it, as NAME=VALUE (repeatable).
    #[arg(long = "param", value_parser = crate::query::parse_param)]
    pub params: Vec<(String, memtrace::Value)>,
    /// Example hits kept per pattern.
    #[arg(long, default_value_t = 3)]
    pub examples: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = crate::patterns::PatternFormat::Table)]
    pub format: crate::patterns::PatternFormat,
}

/// The flags of `memtrace check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A TOML file of patterns and thresholds.
    #[arg(long, conflicts_with = "builtin")]
    pub patterns: Option<PathBuf>,
    /// Check only the built-in patterns.
    #[arg(long)]
    pub builtin: bool,
    /// The threshold: most hits allowed (for patterns without their own).
    #[arg(long)]
    pub max_hits: Option<u64>,
    /// Only the traces this condition on trace fields holds for (wins over the file's).
    #[arg(long)]
    pub over: Option<String>,
    /// Example hits kept per pattern.
    #[arg(long, default_value_t = 3)]
    pub examples: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = crate::patterns::PatternFormat::Table)]
    pub format: crate::patterns::PatternFormat,
}

/// The flags of `memtrace feedback`.
#[derive(Debug, clap::Args)]
pub struct FeedbackArgs {
    /// Whose verdicts to read.
    #[arg(long, default_value = "evidence", value_parser = crate::attribute::parse_method)]
    pub method: memtrace::attrib::Method,
    /// Only this trace (graph id or #ID).
    #[arg(long)]
    pub trace: Option<String>,
    /// The JSON file to write.
    #[arg(long, default_value = "memtrace-feedback.json")]
    pub out: PathBuf,
    /// Example cases shown to the model per prompt.
    #[arg(long, default_value_t = 8)]
    pub examples: usize,
}

/// The flags of `memtrace gen`.
#[derive(Debug, clap::Args)]
pub struct GenArgs {
    /// Which memory system to simulate; `all` cycles through the four.
    #[arg(long, value_enum, default_value_t = GenSystem::All)]
    pub system: GenSystem,
    /// How the runs are recorded; `all` cycles through the styles, one per round of systems.
    #[arg(long, value_enum, default_value_t = GenStyle::Classic)]
    pub style: GenStyle,
    /// Number of traces.
    #[arg(long, default_value_t = 1)]
    pub traces: usize,
    /// Seed of the whole set.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output folder (created when missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Sessions per conversation, `N` or `LOW..HIGH`.
    #[arg(long, default_value = "19..32", value_parser = parse_range)]
    pub sessions: std::ops::RangeInclusive<usize>,
    /// Messages per session, `N` or `LOW..HIGH`.
    #[arg(long, default_value = "18..22", value_parser = parse_range)]
    pub messages: std::ops::RangeInclusive<usize>,
    /// Questions per trace.
    #[arg(long, default_value_t = 200)]
    pub questions: usize,
    /// Probability that a fact gets a fault during memory construction.
    #[arg(long, default_value_t = 0.15)]
    pub fault_rate: f64,
    /// Probability that a question gets a retrieval or answer fault.
    #[arg(long, default_value_t = 0.06)]
    pub question_fault_rate: f64,
    /// Long-Context window, in words.
    #[arg(long, default_value_t = 4000)]
    pub window_tokens: usize,
    /// Units retrieved per question (RAG, Mem0, EverMemOS).
    #[arg(long, default_value_t = 5)]
    pub top_k: usize,
    /// Replace a set already in the output folder.
    #[arg(long)]
    pub force: bool,
}

/// The flags of `memtrace synth`.
#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    /// Variables per trace.
    #[arg(long, default_value_t = 1000)]
    pub variables: usize,
    /// Edges per trace.
    #[arg(long, default_value_t = 2000)]
    pub edges: usize,
    /// Sessions per trace.
    #[arg(long, default_value_t = 10)]
    pub sessions: usize,
    /// Number of traces, one per line.
    #[arg(long, default_value_t = 1)]
    pub traces: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// The OTLP/HTTP receiver's settings (`memtrace serve`, `memtrace collect`).
#[derive(Debug, clap::Args)]
pub struct OtlpArgs {
    /// OTLP: store a trace this many seconds after its root span and its last span came.
    #[arg(long, default_value = "5", value_parser = crate::query::parse_timeout)]
    otlp_quiet: std::time::Duration,
    /// OTLP: store a trace whose root span never came after this many seconds without a new span.
    #[arg(long, default_value = "60", value_parser = crate::query::parse_timeout)]
    otlp_orphan_wait: std::time::Duration,
    /// OTLP: largest request body in MiB, as sent and once decompressed (413 past it).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=1024))]
    otlp_max_body: u64,
    /// OTLP: MiB of spans held for traces not yet stored; past it, requests get 503 with Retry-After.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=65536))]
    otlp_max_pending: u64,
    /// OTLP: MiB of stored traces' spans the spool may hold beyond twice the spans not yet stored, before it is rewritten without them.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(0..=65536))]
    otlp_spool_slack: u64,
}

impl OtlpArgs {
    pub fn options(&self, log: bool) -> crate::receiver::ReceiverOptions {
        crate::receiver::ReceiverOptions {
            quiet: self.otlp_quiet,
            orphan: self.otlp_orphan_wait,
            max_body: (self.otlp_max_body << 20) as usize,
            max_pending: (self.otlp_max_pending << 20) as usize,
            spool_slack: self.otlp_spool_slack << 20,
            log,
        }
    }
}

/// The systems `memtrace gen` can simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenSystem {
    /// All four, in turn.
    All,
    /// Long-Context: one context unit mutated per message, trimmed to a window.
    LongContext,
    /// RAG: message buffer, chunks, BM25 top-k.
    Rag,
    /// Mem0-like: fact extraction, ADD/UPDATE/DELETE decisions, search.
    Mem0,
    /// EverMemOS-like: buffer, boundaries, memory cells, episodes and facts.
    Evermemos,
}

impl GenSystem {
    pub fn system(self) -> Option<System> {
        match self {
            GenSystem::All => None,
            GenSystem::LongContext => Some(System::LongContext),
            GenSystem::Rag => Some(System::Rag),
            GenSystem::Mem0 => Some(System::Mem0),
            GenSystem::Evermemos => Some(System::EverMemOs),
        }
    }
}

/// The recording styles of `memtrace gen`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenStyle {
    /// All styles, in turn (one per round of the four systems).
    All,
    /// `Name: text` messages, Python string reprs, canonical facts, the context built by retrieval.
    Classic,
    /// `Speaker <name> says:` messages with a Timestamp line, JSON units, speaker-prefixed
    /// sentences, cells mutated in place, the context assembled at answer time.
    Membase,
    /// Third-person rewrites, units shared by several messages, Python dict reprs,
    /// summaries cut at a word budget.
    Narrative,
    /// RAG chunks cut at a word budget, JSON units with a `content` field, shared units,
    /// the context assembled at answer time.
    Budgeted,
}

impl GenStyle {
    pub fn style(self) -> Option<Style> {
        match self {
            GenStyle::All => None,
            GenStyle::Classic => Some(Style::Classic),
            GenStyle::Membase => Some(Style::Membase),
            GenStyle::Narrative => Some(Style::Narrative),
            GenStyle::Budgeted => Some(Style::Budgeted),
        }
    }
}

/// Parses `N` or `LOW..HIGH` (also `LOW..=HIGH`).
pub fn parse_range(text: &str) -> std::result::Result<std::ops::RangeInclusive<usize>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<usize>()
            .map_err(|_| format!("'{t}' is not a whole number (write N or LOW..HIGH, like 19..32)"))
    };
    match text.split_once("..") {
        Some((lo, hi)) => {
            let (lo, hi) = (num(lo)?, num(hi.trim_start_matches('='))?);
            if lo > hi {
                return Err(format!("{lo}..{hi} is empty: the low end comes first"));
            }
            Ok(lo..=hi)
        }
        None => {
            let n = num(text)?;
            Ok(n..=n)
        }
    }
}
