//! The trace list and one trace's page: its sessions, ops and failed cases.

use std::collections::{BTreeSet, HashMap};

use memtrace::attrib::{case, StoredVerdict, HUMAN};
use memtrace::prelude::*;
use memtrace::{TraceId, TraceInfo, TraceView};
use serde_json::{json, Value};

use super::handler::Api;
use super::json::{trace_json, verdict_json};
use super::structure::SessionHead;
use crate::serve::http::{ApiError, Reply, Target};

impl Api {
    /// Failed cases per trace id (a trace's count is computed once: stored
    /// traces do not change).
    pub(super) fn failed_counts(
        &self,
        all: &[TraceInfo],
    ) -> Result<HashMap<TraceId, u64>, ApiError> {
        let missing: Vec<TraceId> = {
            let cache = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            all.iter()
                .map(|t| t.id)
                .filter(|id| !cache.contains_key(id))
                .collect()
        };
        let mut found = Vec::with_capacity(missing.len());
        for id in missing {
            found.push((id, self.failed_count(id)?));
        }
        let mut cache = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        cache.extend(found);
        Ok(cache.clone())
    }

    /// A trace's failed cases, counted without reading it whole when it
    /// can be: a trace with annotations has one case per annotation, and a
    /// trace without them and without judge ops has none.
    pub(super) fn failed_count(&self, id: TraceId) -> Result<u64, ApiError> {
        let view = self.db.trace_by_id(id)?;
        let annotated = u64::from(view.info().counts.cases);
        if annotated > 0 {
            return Ok(annotated);
        }
        let judged = view
            .ops()?
            .iter()
            .any(|o| o.op_name.as_deref().is_some_and(case::is_judge_name));
        if !judged {
            return Ok(0);
        }
        Ok(self.db.failed_cases(Some(&format!("#{id}")))?.len() as u64)
    }

    pub(super) fn traces(&self, t: &Target) -> Result<Reply, ApiError> {
        let all = self.db.traces()?;
        let failed_only = match t.param("failed") {
            None | Some("0") | Some("false") => false,
            Some("1") | Some("true") => true,
            Some(other) => {
                return Err(ApiError::bad(format!(
                    "failed: {other:?} is neither 1 nor 0"
                )))
            }
        };
        let counts = self.failed_counts(&all)?;
        let systems: BTreeSet<&str> = all.iter().filter_map(|t| t.project_id.as_deref()).collect();
        let users: BTreeSet<&str> = all.iter().filter_map(|t| t.user_id.as_deref()).collect();
        let list: Vec<Value> = all
            .iter()
            .filter(|x| {
                t.param("system")
                    .is_none_or(|s| x.project_id.as_deref() == Some(s))
            })
            .filter(|x| {
                t.param("user")
                    .is_none_or(|u| x.user_id.as_deref() == Some(u))
            })
            .filter(|x| !failed_only || counts.get(&x.id).copied().unwrap_or(0) > 0)
            .map(|x| trace_json(x, counts.get(&x.id).copied()))
            .collect();
        Ok(Reply::ok(&json!({
            "traces": list,
            "systems": systems,
            "users": users,
            "total": all.len(),
        })))
    }

    /// A trace's failed cases, each with its latest verdict.
    pub(super) fn cases(&self, trace: &str) -> Result<Reply, ApiError> {
        let view = self.db.trace(trace)?;
        Ok(Reply::ok(&json!({"cases": self.case_list(&view)?})))
    }

    pub(super) fn case_list(&self, view: &TraceView<'_>) -> Result<Vec<Value>, ApiError> {
        let sel = format!("#{}", view.id());
        let cases = self.db.failed_cases(Some(&sel))?;
        let stored = self.db.attributions(Some(&sel))?;
        Ok(cases
            .iter()
            .map(|c| {
                let mine: Vec<&StoredVerdict> =
                    stored.iter().filter(|s| s.verdict.case == c.id).collect();
                let verdict = mine
                    .iter()
                    .rev()
                    .find(|s| s.verdict.method != HUMAN)
                    .map(|s| verdict_json(s));
                json!({
                    "case": c.id,
                    "query": c.query,
                    "gold": c.gold,
                    "prediction": c.prediction,
                    "verdict": verdict,
                    "labels": mine.iter().filter(|s| s.verdict.method == HUMAN).count(),
                })
            })
            .collect())
    }

    pub(super) fn trace(&self, trace: &str, t: &Target) -> Result<Reply, ApiError> {
        let view = self.db.trace(trace)?;
        let info = view.info();
        let offset = t.number("offset", 0, 0..=u64::from(u32::MAX))? as usize;
        let limit = t.number("limit", 500, 1..=5000)? as usize;
        let s = self.structure(&view)?;
        let names: HashMap<String, SessionHead> = view
            .sessions()?
            .into_iter()
            .map(|x| (x.session_id, (x.session_name, x.category, x.created_at)))
            .collect();
        let mut sessions: Vec<Value> = Vec::new();
        let mut current: Option<(Option<String>, Vec<Value>)> = None;
        let flush = |cur: Option<(Option<String>, Vec<Value>)>, out: &mut Vec<Value>| {
            if let Some((sid, ops)) = cur {
                let (name, category, created_at) = sid
                    .as_ref()
                    .and_then(|id| names.get(id).cloned())
                    .unwrap_or((None, None, None));
                out.push(json!({
                    "session_id": sid, "name": name, "category": category,
                    "created_at": created_at, "ops": ops,
                }));
            }
        };
        for o in s.ops.iter().skip(offset).take(limit) {
            let same = current
                .as_ref()
                .is_some_and(|(sid, _)| *sid == o.session_id);
            if !same {
                flush(current.take(), &mut sessions);
                current = Some((o.session_id.clone(), Vec::new()));
            }
            if let Some((_, ops)) = current.as_mut() {
                ops.push(s.op_json(&o.op_id));
            }
        }
        flush(current, &mut sessions);
        let cases = self.case_list(&view)?;
        Ok(Reply::ok(&json!({
            "trace": trace_json(&info, Some(cases.len() as u64)),
            "ops_total": s.ops.len(),
            "offset": offset,
            "limit": limit,
            "sessions": sessions,
            "cases": cases,
        })))
    }
}
