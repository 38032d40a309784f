//! Statements typed into the query box, run read-only under the time limit.

use std::io::Read;

use memtrace::engine::Plan;
use memtrace::{Cancel, Params};
use serde_json::{json, Value};

use super::body::{json_body, only_fields, text_field};
use super::handler::Api;
use super::limits::MAX_ROWS;
use crate::serve::http::{ApiError, Reply};
use crate::timeout::with_timeout_on;

impl Api {
    pub(super) fn query(&self, body: &mut dyn Read, cancel: &Cancel) -> Result<Reply, ApiError> {
        let b = json_body(body)?;
        only_fields(&b, &["statement"])?;
        let text = text_field(&b, "statement", None)?;
        if text.trim().is_empty() {
            return Err(ApiError::bad("statement: empty"));
        }
        // The limit counts from here: parsing and planning are part of it.
        with_timeout_on(cancel, self.query_timeout, |cancel| {
            let plan = self.db.prepare_until(text, &Params::new(), cancel)?;
            let refused = match &plan {
                Plan::Attribute(_) => Some("ATTRIBUTE stores verdicts; run `memtrace attribute`"),
                Plan::SavePattern(_) | Plan::DropPattern(_) => {
                    Some("SAVE and DROP PATTERN change the database; run them in `memtrace` or `memtrace query`")
                }
                _ => None,
            };
            if let Some(why) = refused {
                return Err(ApiError::bad(format!(
                    "the viewer only reads: {why} (labels are the one thing it writes)"
                )));
            }
            let view_for_graph = match &plan {
                Plan::Traverse(p) => match &p.scope {
                    Some(scope) => Some(self.db.trace(scope)?),
                    None => None,
                },
                _ => None,
            };
            let mut rows: Vec<Value> = Vec::new();
            let mut truncated = false;
            let columns = self.db.run_plan(&plan, cancel, &mut |row| {
                if rows.len() >= MAX_ROWS {
                    truncated = true;
                    return Ok(false);
                }
                rows.push(Value::Array(
                    row.iter().map(memtrace::engine::to_json).collect(),
                ));
                Ok(true)
            })?;
            let graph = match &view_for_graph {
                Some(view) => self.traverse_graph(view, &plan, cancel)?,
                None => None,
            };
            Ok(Reply::ok(&json!({
                "columns": columns,
                "rows": rows,
                "truncated": truncated,
                "graph": graph,
            })))
        })
        .map_err(|e: ApiError| self.stopped(e))
    }

    /// A query's timeout error, saying which limit stopped it.
    pub(super) fn stopped(&self, e: ApiError) -> ApiError {
        if e.kind == "timeout" {
            ApiError {
                message: format!(
                    "the statement ran longer than {} s and was stopped (memtrace serve --query-timeout)",
                    self.query_timeout.as_secs_f64()
                ),
                ..e
            }
        } else {
            e
        }
    }
}
