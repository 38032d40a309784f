//! The list of stored traces, filtered, with their failed cases counted.

use memtrace::engine::Engine;
use memtrace::prelude::*;
use rmcp::ErrorData;
use serde_json::json;

use super::bounds::cut_value;
use super::errors::{analysis, engine};
use super::limits::NOTICE;
use super::params::ListTraces;
use super::results::TraceList;

/// The traces `a` picks, at most `limit` of them.
pub fn list(db: &Engine, a: ListTraces, limit: usize) -> Result<TraceList, ErrorData> {
    let all = db.traces().map_err(engine)?;
    let picked: Vec<_> = all
        .into_iter()
        .filter(|t| {
            a.project
                .as_ref()
                .is_none_or(|p| t.project_id.as_ref() == Some(p))
        })
        .filter(|t| {
            a.user
                .as_ref()
                .is_none_or(|u| t.user_id.as_ref() == Some(u))
        })
        .filter(|t| {
            a.graph_id_contains
                .as_ref()
                .is_none_or(|g| t.graph_id.contains(g.as_str()))
        })
        .collect();
    let failed_only = a.failed_only.unwrap_or(false);
    let mut out = Vec::new();
    let mut matched = 0;
    for t in picked {
        // Failed cases are counted only for the traces returned, and
        // for every trace when only those with failed cases are asked for.
        if !failed_only && out.len() >= limit {
            matched += 1;
            continue;
        }
        let failed = db
            .failed_cases(Some(&format!("#{}", t.id)))
            .map_err(analysis)?
            .len();
        if failed_only && failed == 0 {
            continue;
        }
        matched += 1;
        if out.len() < limit {
            out.push(json!({
                "id": t.id, "graph_id": t.graph_id, "project": t.project_id,
                "user": t.user_id, "created_at": t.created_at, "source": t.source,
                "sessions": t.counts.sessions, "variables": t.counts.variables,
                "ops": t.counts.ops, "edges": t.counts.edges, "failed_cases": failed,
            }));
        }
    }
    let data = out.into_iter().map(cut_value).collect();
    Ok(TraceList {
        notice: NOTICE.into(),
        matched,
        truncated: matched > limit,
        data,
    })
}
