//! The API over one database: its state and the table of its routes.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memtrace::engine::Engine;
use memtrace::{Cancel, TraceId, TraceView};
use serde_json::json;

use super::limits::STRUCTURES;
use super::structure::Structure;
use super::uploads::Uploads;
use crate::serve::assets;
use crate::serve::http::{ApiError, Reply, Target};

/// The API over one open database.
pub struct Api {
    pub(super) db: Engine,
    pub(super) name: String,
    pub(super) query_timeout: Duration,
    pub(super) uploads: Uploads,
    pub(super) structures: Mutex<Vec<(TraceId, Arc<Structure>)>>,
    pub(super) failed: Mutex<HashMap<TraceId, u64>>,
}

impl Api {
    /// The API over `db`, which it names `name` in `/api/health`; imports
    /// are received into `uploads`.
    pub fn new(db: Engine, name: String, query_timeout: Duration, uploads: Uploads) -> Api {
        Api {
            db,
            name,
            query_timeout,
            uploads,
            structures: Mutex::new(Vec::new()),
            failed: Mutex::new(HashMap::new()),
        }
    }

    /// Where imports are received.
    pub fn uploads(&self) -> &Uploads {
        &self.uploads
    }

    /// The database served.
    pub fn db(&self) -> &Engine {
        &self.db
    }

    /// Forgets what it keeps of traces (after traces were stored or dropped
    /// beside it).
    pub fn forget(&self) {
        self.structures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Answers one request. `body` is read only by the endpoints that take one.
    #[cfg(test)]
    pub fn handle(&self, method: &str, url: &str, body: &mut dyn Read) -> Reply {
        self.handle_until(method, url, body, &Cancel::new())
    }

    /// [`handle`](Self::handle), with a token that stops a query or a graph
    /// walk when it fires (the server fires it when the client goes away).
    pub fn handle_until(
        &self,
        method: &str,
        url: &str,
        body: &mut dyn Read,
        cancel: &Cancel,
    ) -> Reply {
        let target = match Target::parse(url) {
            Ok(t) => t,
            Err(e) => return e.reply(),
        };
        match self.route(method, &target, body, cancel) {
            Ok(r) => r,
            Err(e) => e.reply(),
        }
    }

    fn route(
        &self,
        method: &str,
        t: &Target,
        body: &mut dyn Read,
        cancel: &Cancel,
    ) -> Result<Reply, ApiError> {
        let seg: Vec<&str> = t.segments.iter().map(String::as_str).collect();
        let get = |allowed: &str| -> Result<(), ApiError> {
            if method == "GET" || method == "HEAD" {
                Ok(())
            } else {
                Err(ApiError::method(method, &t.path, allowed))
            }
        };
        let post = || -> Result<(), ApiError> {
            if method == "POST" {
                Ok(())
            } else {
                Err(ApiError::method(method, &t.path, "POST"))
            }
        };
        match seg.as_slice() {
            [] | ["index.html"] => {
                get("GET")?;
                Ok(assets::page("index.html"))
            }
            [file] if assets::has(file) => {
                get("GET")?;
                Ok(assets::page(file))
            }
            ["api", "health"] => {
                get("GET")?;
                Ok(Reply::ok(&json!({
                    "ok": true,
                    "db": self.name,
                    "version": env!("CARGO_PKG_VERSION"),
                    "traces": self.db.traces()?.len(),
                })))
            }
            ["api", "traces"] => {
                get("GET")?;
                self.traces(t)
            }
            ["api", "traces", trace] => {
                get("GET")?;
                self.trace(trace, t)
            }
            ["api", "traces", trace, "cases"] => {
                get("GET")?;
                self.cases(trace)
            }
            ["api", "traces", trace, "cases", case] => {
                get("GET")?;
                self.case(trace, case)
            }
            ["api", "traces", trace, "cases", case, "labels"] => match method {
                "POST" => self.add_label(trace, case, body),
                "GET" | "HEAD" => self.case_labels(trace, case),
                _ => Err(ApiError::method(method, &t.path, "GET, POST")),
            },
            ["api", "traces", trace, "annotations"] => {
                get("GET")?;
                self.annotations(trace, t)
            }
            ["api", "traces", trace, "graph"] => {
                get("GET")?;
                self.graph(trace, t, cancel)
            }
            ["api", "traces", trace, "expand"] => {
                get("GET")?;
                self.expand(trace, t)
            }
            ["api", "traces", trace, "nodes", node] => {
                get("GET")?;
                self.node(trace, node)
            }
            ["api", "labels"] => {
                get("GET")?;
                self.labels(t)
            }
            ["api", "query"] => {
                post()?;
                self.query(body, cancel)
            }
            ["api", "import"] => {
                post()?;
                self.import(t, body)
            }
            ["api", ..] => Err(ApiError::not_found(format!(
                "no endpoint {} (the endpoints are listed in docs/src/viewer-api.md)",
                t.path
            ))),
            _ => Err(ApiError::not_found(format!("no page {}", t.path))),
        }
    }

    pub(super) fn structure(&self, view: &TraceView<'_>) -> Result<Arc<Structure>, ApiError> {
        let id = view.id();
        {
            let cache = self.structures.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, s)) = cache.iter().find(|(t, _)| *t == id) {
                return Ok(s.clone());
            }
        }
        let s = Arc::new(Structure::load(view)?);
        let mut cache = self.structures.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= STRUCTURES {
            cache.remove(0);
        }
        cache.push((id, s.clone()));
        Ok(s)
    }
}
