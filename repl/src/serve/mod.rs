//! `memtrace serve`: a local web viewer and annotation tool over one
//! database: traces, timelines, failed cases with their verdicts side by
//! side, provenance graphs, a query box, and labels that people append.

mod api;
mod assets;
mod http;
mod otlp;
mod server;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use memtrace::engine::Engine;

pub use api::Api;
use api::Uploads;
use server::{Limits, Server};

use crate::error::{CliError, Result};
use crate::receiver::{Receiver, ReceiverOptions, Sink};

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (`127.0.0.1:7878`; port 0 picks a free one).
    pub addr: String,
    /// Requests that read or query the database at once.
    pub threads: usize,
    /// A query running longer than this is stopped.
    pub query_timeout: Duration,
    /// A client that sends nothing for this long within a body is
    /// disconnected (408); a small body must arrive whole within it.
    pub idle_timeout: Duration,
    /// A client must send a request's headers within this long (counted
    /// from when the connection waits for them, so also between requests).
    pub header_timeout: Duration,
    /// Open connections at once; past it, the slowest is shed.
    pub max_connections: usize,
    /// Bytes an import's body may have (413 past it).
    pub max_import: u64,
    /// Print one line per request on standard error.
    pub log: bool,
    /// The OTLP/HTTP receiver on `/v1/traces`, when it receives.
    pub receiver: Option<ReceiverOptions>,
    /// Whether the viewer answers (`memtrace collect`: only the receiver).
    pub viewer: bool,
    /// Create the database when it is missing (`memtrace collect`).
    pub create: bool,
}

/// OTLP requests written ahead at once.
const OTLP_PLACES: usize = 8;

/// How long a request waits for a free place before it gets 503.
const QUEUE_WAIT: Duration = Duration::from_secs(10);
/// Connections kept beyond the limit for when all open ones are answered.
const RESERVE: usize = 16;
/// How long Ctrl-C waits for the answers under way.
const DRAIN: Duration = Duration::from_secs(5);

/// Reads a size in bytes: a whole number, with `K`, `M` or `G` after it
/// for KiB, MiB or GiB (`512M`, `2G`).
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let (number, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => {
            return Err(format!(
                "{text:?} is not a size (such as 1048576, 512M or 2G)"
            ))
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{text:?} is not a size above zero (such as 1048576, 512M or 2G)"))
}

fn resolve(addr: &str) -> Result<SocketAddr> {
    addr.to_socket_addrs()
        .map_err(|e| {
            CliError::Usage(format!(
                "--addr {addr}: {e} (give HOST:PORT, such as 127.0.0.1:7878)"
            ))
        })?
        .next()
        .ok_or_else(|| CliError::Usage(format!("--addr {addr}: names no address")))
}

/// The file in the database folder that says a server holds it.
const SERVE_FILE: &str = "serve.json";

/// When an error says another process holds the database and that process
/// is `memtrace serve`, how to reach the data through it instead.
pub fn busy_hint(db_path: &Path, err: &CliError) -> Option<String> {
    let CliError::Engine(memtrace::EngineError::Storage(memtrace::StorageError::InUse(_))) = err
    else {
        return None;
    };
    let text = std::fs::read_to_string(db_path.join(SERVE_FILE)).ok()?;
    let info: serde_json::Value = serde_json::from_str(&text).ok()?;
    let url = info.get("url")?.as_str()?;
    let pid = info
        .get("pid")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    Some(format!(
        "hint: memtrace serve (pid {pid}) holds it and answers at {url}; use the viewer, or its API: \
         curl -H 'Content-Type: application/json' --data-binary @trace.json {url}/api/import"
    ))
}

impl Sink for Api {
    fn db(&self) -> &Engine {
        Api::db(self)
    }

    fn changed(&self) {
        self.forget();
    }
}

/// Serves the database at `db_path` until Ctrl-C.
pub fn serve(db_path: &Path, opts: &ServeOptions) -> Result<ExitCode> {
    let addr = resolve(&opts.addr)?;
    let name = if opts.viewer {
        "memtrace serve"
    } else {
        "memtrace collect"
    };
    let db = if opts.create {
        crate::opening::open(db_path)?
    } else {
        crate::opening::open_existing(db_path)?
    };
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: serving on {addr}, which other machines may reach: anyone who can connect can read every trace and add labels (there is no login); the default, 127.0.0.1, keeps it to this machine"
        );
    }
    let workers = opts.threads.max(1);
    let limits = Limits {
        workers,
        imports: 2,
        header: opts.header_timeout,
        idle: opts.idle_timeout,
        queue_wait: QUEUE_WAIT,
        connections: opts.max_connections.max(1),
        reserve: RESERVE,
        drain: DRAIN,
    };
    let uploads = Uploads::in_db(db_path, opts.max_import);
    uploads.clear().map_err(|e| {
        CliError::Usage(format!(
            "cannot prepare {} for uploads: {e}",
            uploads.dir.display()
        ))
    })?;
    let runtime = runtime(workers + limits.imports)?;
    let api = Arc::new(Api::new(
        db,
        db_path.display().to_string(),
        opts.query_timeout,
        uploads.clone(),
    ));
    let receiver = match &opts.receiver {
        Some(ro) => Some(start_receiver(db_path, &api, ro)?),
        None => None,
    };
    let endpoint = receiver.as_ref().map(|r| {
        Arc::new(otlp::Endpoint::new(
            r.clone(),
            OTLP_PLACES,
            opts.idle_timeout,
        ))
    });
    let server = runtime
        .block_on(Server::bind(
            addr,
            api.clone(),
            limits,
            opts.log,
            endpoint,
            opts.viewer,
        ))
        .map_err(|e| CliError::Usage(format!("cannot listen on {addr}: {e}")))?;
    let local = server
        .local_addr()
        .map_err(|e| CliError::Usage(format!("cannot listen on {addr}: {e}")))?;
    let serve_file = db_path.join(SERVE_FILE);
    let note = serde_json::json!({"url": format!("http://{local}"), "pid": std::process::id()});
    if let Err(e) = std::fs::write(&serve_file, note.to_string()) {
        eprintln!("warning: cannot write {}: {e}", serve_file.display());
    }
    announce(
        name,
        local,
        db_path,
        opts.viewer,
        workers,
        receiver.as_deref(),
    );
    runtime.block_on(server.run());
    // Work that a dropped answer left running stops at its next check.
    runtime.shutdown_timeout(DRAIN);
    if let Some(r) = &receiver {
        let held = r.counters().pending;
        if held > 0 {
            eprintln!("{name}: storing the {held} trace(s) held");
        }
        r.finish();
    }
    let _ = std::fs::remove_file(&serve_file);
    let _ = std::fs::remove_dir_all(&uploads.dir);
    api.db().flush()?;
    eprintln!("{name}: stopped");
    Ok(ExitCode::SUCCESS)
}

/// The server's runtime: two threads carry the connections, and the database work runs on its
/// blocking threads, `places` of them and a few more for the runtime's own file writes of uploads.
fn runtime(places: usize) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(places + 16)
        .thread_name("memtrace-serve")
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the server's runtime: {e}")))
}

/// The OTLP receiver, storing complete traces through the API's database.
fn start_receiver(
    db_path: &Path,
    api: &Arc<Api>,
    options: &ReceiverOptions,
) -> Result<Arc<Receiver>> {
    let receiver = Receiver::start(db_path, api.clone() as Arc<dyn Sink>, options.clone())
        .map_err(|e| {
            CliError::Usage(format!(
                "cannot open the OTLP spool in {}: {e}",
                db_path.display()
            ))
        })?;
    Ok(Arc::new(receiver))
}

/// Says where the server listens and what it does there.
fn announce(
    name: &str,
    local: SocketAddr,
    db_path: &Path,
    viewer: bool,
    workers: usize,
    receiver: Option<&Receiver>,
) {
    println!("{name}: listening on http://{local}");
    if viewer {
        eprintln!(
            "serving {} to http://{local}, {workers} requests at once; Ctrl-C stops",
            db_path.display()
        );
    } else {
        eprintln!(
            "receiving OpenTelemetry traces into {}; Ctrl-C stops (and stores every trace held)",
            db_path.display()
        );
    }
    if let Some(r) = receiver {
        let o = r.options();
        eprintln!(
            "OTLP/HTTP: export with OTEL_EXPORTER_OTLP_ENDPOINT=http://{local} (spans to http://{local}{}); a trace is stored {} s after its root span and its last span came",
            otlp::PATH,
            o.quiet.as_secs_f64()
        );
    }
}

#[cfg(test)]
mod tests;
