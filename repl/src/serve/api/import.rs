//! Imports sent over HTTP, received into a file and imported from it.

use std::io::Read;

use memtrace::ImportOptions;
use serde_json::{json, Value};

use super::body::import_format;
use super::handler::Api;
use super::uploads::Upload;
use crate::serve::http::{ApiError, Reply, Target};

impl Api {
    /// Answers `POST /api/import` (at `url`) whose body was received whole
    /// into `upload`.
    pub fn import_upload(&self, url: &str, upload: &Upload) -> Reply {
        let target = match Target::parse(url) {
            Ok(t) => t,
            Err(e) => return e.reply(),
        };
        match self.import_file(&target, upload) {
            Ok(r) => r,
            Err(e) => e.reply(),
        }
    }

    pub(super) fn import(&self, t: &Target, body: &mut dyn Read) -> Result<Reply, ApiError> {
        import_format(t)?;
        let upload = self.uploads.write(body)?;
        self.import_file(t, &upload)
    }

    pub(super) fn import_file(&self, t: &Target, upload: &Upload) -> Result<Reply, ApiError> {
        let format = import_format(t)?;
        let source = t.param("source").unwrap_or("HTTP import");
        let force = t.param("force").is_some_and(|v| v != "0");
        let imported =
            self.db
                .import_file(&upload.path, format, source, &ImportOptions { force })?;
        let list: Vec<Value> = imported
            .iter()
            .map(|i| {
                json!({
                    "id": i.trace, "graph_id": i.graph_id, "format": i.format,
                    "variables": i.counts.variables, "ops": i.counts.ops, "edges": i.counts.edges,
                    "unchanged": i.unchanged,
                })
            })
            .collect();
        // Nothing new when every trace was already stored with this content.
        let status = if imported.iter().all(|i| i.unchanged) {
            200
        } else {
            201
        };
        self.structures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        Ok(Reply::json(status, &json!({"imported": list})))
    }
}
