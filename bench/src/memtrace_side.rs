//! memtrace as one side of the query benchmark: every query goes through
//! the query language, so parsing, planning and start resolution are in
//! every figure. Counts and groups are collected (`Database::query`); rows
//! of nodes and ops are read as they are lent (`Database::query_each`),
//! each row's id kept in a [`KeyColumn`] as the SQLite peer keeps its
//! first column.

use std::path::PathBuf;

use memtrace::{Cancel, Column, Database, Params, QueryResult};

use crate::cold::files_under;
use crate::error::{CliError, Result};
use crate::protocol::{spread_picks, Answer, KeyColumn, Kind, Side, Start};

/// The MATCH of the suite.
pub const MATCH_QUERY: &str =
    "MATCH (u)-[:retrieval]->(r:retrieved_memories)-[:evaluation]->(p:prediction) RETURN count(*)";
/// The FIND with GROUP BY of the suite.
pub const FIND_QUERY: &str = "FIND ops GROUP BY op.name RETURN op.name, count(*)";
/// The trace cache's budget: 4 GiB, so that every trace of the largest set
/// stays cached (the default, 256 MiB, holds about 200 LoCoMo-size traces).
const CACHE_BUDGET: usize = 4 << 30;

/// A memtrace database, opened and closed by the protocol.
pub struct MemtraceSide {
    path: PathBuf,
    db: Option<Database>,
    /// The key column of the last answered run, reused by the next.
    spare: KeyColumn,
}

impl MemtraceSide {
    /// The database at `path` (not opened yet).
    pub fn new(path: PathBuf) -> MemtraceSide {
        MemtraceSide {
            path,
            db: None,
            spare: KeyColumn::default(),
        }
    }

    /// The open database.
    pub(crate) fn database(&self) -> Result<&Database> {
        self.db()
    }

    fn db(&self) -> Result<&Database> {
        self.db
            .as_ref()
            .ok_or_else(|| CliError::Bench("memtrace: the database is not open".into()))
    }
}

fn count_of(r: &QueryResult, col: usize) -> u64 {
    r.rows
        .iter()
        .filter_map(|row| row.get(col).and_then(|v| v.as_u64()))
        .sum()
}

/// What a memtrace query gave.
pub enum Out {
    /// A collected result (counts, groups).
    Result(QueryResult),
    /// The id column of rows read as they were lent (nodes, ops).
    Keys(KeyColumn),
}

fn quote(s: &str) -> String {
    s.replace('\'', "''")
}

/// The traversal from `start` in its trace, `tail` its clauses after the
/// start (`RETURN ops`, `DEPTH 3 RETURN count`, ...).
pub(crate) fn traversal(start: &Start, tail: &str) -> String {
    format!(
        "TRACE '{}' IN TRACE '#{}' {tail}",
        quote(&start.node),
        start.trace
    )
}

impl Side for MemtraceSide {
    type Out = Out;

    fn open(&mut self) -> Result<()> {
        // Queries only read: open as every reading command does.
        let db = Database::open_read_only(&self.path)?;
        db.engine().set_cache_budget(CACHE_BUDGET);
        self.db = Some(db);
        Ok(())
    }

    fn close(&mut self) {
        self.db = None;
    }

    fn files(&self) -> Result<Vec<PathBuf>> {
        files_under(&self.path)
    }

    fn starts(&mut self, per_trace: usize) -> Result<Vec<Start>> {
        let db = self.db()?;
        let mut starts = Vec::new();
        for (pos, t) in db.traces()?.into_iter().enumerate() {
            let view = db.engine().trace_by_id(t.id)?;
            for v in view
                .variables()?
                .into_iter()
                .filter(|v| v.class_name.as_deref() == Some("prediction"))
                .take(per_trace)
            {
                starts.push(Start {
                    pos,
                    trace: i64::from(t.id),
                    node: v.full_node_id,
                });
            }
        }
        Ok(starts)
    }

    fn spread(&mut self, per_trace: usize) -> Result<Vec<Start>> {
        let db = self.db()?;
        let mut starts = Vec::new();
        for (pos, t) in db.traces()?.into_iter().enumerate() {
            let mut ids: Vec<String> = db
                .engine()
                .trace_by_id(t.id)?
                .variables()?
                .into_iter()
                .map(|v| v.full_node_id)
                .collect();
            ids.sort_unstable();
            for p in spread_picks(ids.len(), per_trace) {
                starts.push(Start {
                    pos,
                    trace: i64::from(t.id),
                    node: std::mem::take(&mut ids[p]),
                });
            }
        }
        Ok(starts)
    }

    fn run(&mut self, kind: Kind, start: Option<&Start>) -> Result<Out> {
        let keys = KeyColumn::reuse(&mut self.spare);
        let db = self.db()?;
        let trace = |tail: &str| -> Result<String> {
            let s = start.ok_or_else(|| CliError::Bench("a traversal needs a start".into()))?;
            Ok(traversal(s, tail))
        };
        let rows = |text: String, batches: bool| -> Result<Out> {
            // Nodes and ops rows: trace, then the node's or op's id.
            let mut keys = keys;
            let (params, cancel) = (Params::new(), Cancel::new());
            if batches {
                // A batch at a time, only its id column read: ids lent as
                // one run of text (a level's ops recorded one after the
                // other) are copied as one slice, others one by one.
                db.query_batches(&text, &params, &cancel, &mut |b| {
                    let Some(ids) = b.columns().get(1) else {
                        return Ok(true);
                    };
                    match (ids.joined(), ids) {
                        (Some(run), _) => keys.push_run(run.text(), run.ends()),
                        (None, Column::Text(t)) => {
                            t.iter().for_each(|s| keys.push(s.unwrap_or("")))
                        }
                        (None, _) => (0..b.len()).for_each(|i| keys.push(ids.str(i).unwrap_or(""))),
                    }
                    Ok(true)
                })?;
            } else {
                db.query_each(&text, &params, &cancel, &mut |row| {
                    keys.push(row.get(1).and_then(|c| c.as_str()).unwrap_or(""));
                    Ok(true)
                })?;
            }
            Ok(Out::Keys(keys))
        };
        let text = match kind {
            Kind::Open => return Err(CliError::Bench("open is not a query".into())),
            Kind::Closure | Kind::ClosureSpread => trace("RETURN count")?,
            Kind::Depth3 => trace("DEPTH 3 RETURN count")?,
            Kind::Nodes => return rows(trace("RETURN nodes")?, false),
            Kind::NodesLimit1 => return rows(trace("RETURN nodes LIMIT 1")?, false),
            Kind::Ops => return rows(trace("RETURN ops")?, false),
            Kind::OpsLimit1 => return rows(trace("RETURN ops LIMIT 1")?, false),
            Kind::OpsBatches => return rows(trace("RETURN ops")?, true),
            Kind::NodesBatches => return rows(trace("RETURN nodes")?, true),
            Kind::Match => MATCH_QUERY.to_string(),
            Kind::FindGroup => FIND_QUERY.to_string(),
        };
        Ok(Out::Result(db.query(&text)?))
    }

    fn answer(&mut self, kind: Kind, out: Out) -> Result<Answer> {
        fn col(row: &[serde_json::Value], i: usize) -> Option<&str> {
            row.get(i).and_then(|v| v.as_str())
        }
        let out = match out {
            Out::Keys(keys) => {
                let a = Answer::keys(keys.iter());
                self.spare = keys;
                return Ok(a);
            }
            Out::Result(r) => r,
        };
        Ok(match kind {
            Kind::Closure | Kind::ClosureSpread | Kind::Depth3 => Answer::count(count_of(&out, 1)),
            Kind::Match => Answer::count(count_of(&out, 0)),
            Kind::Nodes
            | Kind::NodesBatches
            | Kind::NodesLimit1
            | Kind::Ops
            | Kind::OpsBatches
            | Kind::OpsLimit1 => Answer::keys(out.rows.iter().filter_map(|r| col(r, 1))),
            Kind::FindGroup => Answer::groups(
                out.rows
                    .iter()
                    .map(|r| (col(r, 0), r.get(1).and_then(|v| v.as_u64()).unwrap_or(0))),
            ),
            Kind::Open => Answer::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traversal_quotes_its_start() {
        let start = Start {
            pos: 0,
            trace: 7,
            node: "prediction:it's@1".into(),
        };
        assert_eq!(
            traversal(&start, "RETURN ops"),
            "TRACE 'prediction:it''s@1' IN TRACE '#7' RETURN ops"
        );
    }
}
