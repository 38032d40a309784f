//! SQLite (rusqlite, bundled library) as a peer of the query benchmark, set
//! up as a competent user would: the same graph in three tables (nodes,
//! edges, ops) with indexes by target, by source, by op kind, by node class
//! and by full node id, `ANALYZE` and `PRAGMA optimize` after loading, and
//! recursive CTEs that find their start by its full node id (the text the
//! memtrace side is given) and look the CTE's rows up in the edges' index. Every
//! statement's plan (EXPLAIN QUERY PLAN) is kept for the output, and a
//! recursive statement whose plan reads the edges other than by an index
//! lookup of their target stops the run: without statistics, bundled SQLite
//! 3.50 searched `edges_out` by trace alone, so that each ancestor read every
//! edge of its trace (1.4 to 2 s per closure of a 10k-variable trace).

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::{params, Connection};
use serde_json::Value;

use crate::error::{io, CliError, Result};
use crate::measure::{set_files, sqlite_err};
use crate::protocol::{spread_picks, Answer, KeyColumn, Kind, Measured, Plan, Side, Start};

/// The schema, as created before loading.
const SCHEMA: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
     CREATE TABLE nodes (trace INTEGER NOT NULL, id INTEGER NOT NULL, class TEXT,
                         full_node_id TEXT NOT NULL, PRIMARY KEY (trace, id)) WITHOUT ROWID;
     CREATE TABLE edges (trace INTEGER NOT NULL, src INTEGER NOT NULL,
                         dst INTEGER NOT NULL, op TEXT NOT NULL, kind TEXT);
     CREATE TABLE ops (trace INTEGER NOT NULL, op_id TEXT NOT NULL, name TEXT,
                       kind TEXT, PRIMARY KEY (trace, op_id)) WITHOUT ROWID;
     CREATE INDEX edges_in ON edges (trace, dst, src);
     CREATE INDEX edges_out ON edges (trace, src, dst);
     CREATE INDEX edges_kind ON edges (kind, trace, dst);
     CREATE INDEX nodes_class ON nodes (trace, class);
     CREATE INDEX nodes_name ON nodes (trace, full_node_id);";

/// Loads the first `n` traces of the set at `set` into a new SQLite file at
/// `db`: nodes (class, full node id), edges (source, target, op, op kind)
/// and ops (name, kind); then `ANALYZE` and `PRAGMA optimize`, in the time.
pub fn load(set: &Path, n: usize, db: &Path) -> Result<Measured> {
    let mut m = Measured::default();
    let files = set_files(set, n)?;
    let start = Instant::now();
    let mut conn = Connection::open(db).map_err(sqlite_err)?;
    conn.execute_batch(SCHEMA).map_err(sqlite_err)?;
    for (t, (file, _)) in files.iter().enumerate() {
        let f = std::fs::File::open(file).map_err(io(file.display()))?;
        let doc: Value = serde_json::from_reader(BufReader::new(f))?;
        let tx = conn.transaction().map_err(sqlite_err)?;
        let mut ids = HashMap::new();
        {
            let mut node = tx
                .prepare("INSERT INTO nodes VALUES (?1, ?2, ?3, ?4)")
                .map_err(sqlite_err)?;
            for (i, nd) in doc["data"]["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let id = nd["full_node_id"].as_str().ok_or_else(|| {
                    CliError::Bench(format!("{}: a node has no full_node_id", file.display()))
                })?;
                node.execute(params![t, i, nd["class_name"].as_str(), id])
                    .map_err(sqlite_err)?;
                ids.insert(id.to_string(), i);
            }
            let mut op = tx
                .prepare("INSERT INTO ops VALUES (?1, ?2, ?3, ?4)")
                .map_err(sqlite_err)?;
            let mut kinds = HashMap::new();
            for o in doc["data"]["operations"].as_array().into_iter().flatten() {
                let id = o["op_id"].as_str().ok_or_else(|| {
                    CliError::Bench(format!("{}: an op has no op_id", file.display()))
                })?;
                op.execute(params![
                    t,
                    id,
                    o["op_name"].as_str(),
                    o["category"].as_str()
                ])
                .map_err(sqlite_err)?;
                kinds.insert(id.to_string(), o["category"].as_str().map(str::to_string));
            }
            let mut edge = tx
                .prepare("INSERT INTO edges VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(sqlite_err)?;
            for e in doc["data"]["edges"].as_array().into_iter().flatten() {
                let end = |k: &str| {
                    e[k].as_str()
                        .and_then(|s| ids.get(s))
                        .copied()
                        .ok_or_else(|| {
                            CliError::Bench(format!("{}: edge {k} unknown", file.display()))
                        })
                };
                let op_id = e["op_id"].as_str().unwrap_or_default();
                edge.execute(params![
                    t,
                    end("source_full_node_id")?,
                    end("target_full_node_id")?,
                    op_id,
                    kinds.get(op_id).cloned().flatten()
                ])
                .map_err(sqlite_err)?;
                m.units += 1;
            }
        }
        tx.commit().map_err(sqlite_err)?;
    }
    // What a user does once the data is in: statistics for the planner.
    conn.execute_batch("ANALYZE; PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE);")
        .map_err(sqlite_err)?;
    m.seconds = start.elapsed().as_secs_f64();
    drop(conn);
    m.disk_bytes = std::fs::metadata(db).map(|md| md.len()).unwrap_or(0);
    Ok(m)
}

/// The start of a traversal: the node whose full node id is ?2 in trace ?1,
/// looked up in `nodes_name`, as memtrace is given it (by its name, not by
/// a key only the peer knows); of equal ids, the one added last, as
/// memtrace's name index finds.
macro_rules! start {
    () => {
        "(SELECT max(id) FROM nodes WHERE trace = ?1 AND full_node_id = ?2)"
    };
}

/// The closure of the start ?2 in trace ?1: the CTE is the outer loop, and
/// each of its rows looks up the edges ending at it in `edges_in` (trace,
/// dst, src).
const CLOSURE_CTE: &str = concat!(
    "WITH RECURSIVE anc(n) AS (
  SELECT ",
    start!(),
    " UNION SELECT e.src FROM anc JOIN edges e ON e.trace = ?1 AND e.dst = anc.n)"
);

/// The SQL of a workload's query, without LIMIT.
pub fn sql(kind: Kind) -> Option<String> {
    Some(match kind {
        Kind::Open => return None,
        Kind::Closure | Kind::ClosureSpread => {
            format!("{CLOSURE_CTE}\nSELECT count(*) - 1 FROM anc")
        }
        Kind::Depth3 => concat!(
            "WITH RECURSIVE anc(n, d) AS (
  SELECT ",
            start!(),
            ", 0 UNION SELECT e.src, anc.d + 1 FROM anc JOIN edges e ON e.trace = ?1 AND e.dst = anc.n WHERE anc.d < 3)
SELECT count(DISTINCT n) - 1 FROM anc"
        )
        .to_string(),
        Kind::Nodes | Kind::NodesBatches | Kind::NodesLimit1 => format!(
            "{CLOSURE_CTE}\nSELECT nd.full_node_id, nd.class FROM anc JOIN nodes nd ON nd.trace = ?1 AND nd.id = anc.n WHERE anc.n != {}{}",
            start!(),
            limit(kind)
        ),
        Kind::Ops | Kind::OpsBatches | Kind::OpsLimit1 => format!(
            "{CLOSURE_CTE}\nSELECT o.op_id, o.name, o.kind FROM ops o WHERE o.trace = ?1 AND o.op_id IN (
  SELECT e.op FROM anc JOIN edges e ON e.trace = ?1 AND e.dst = anc.n){}",
            limit(kind)
        ),
        Kind::Match => "SELECT count(*) FROM edges e1
  JOIN nodes r ON r.trace = e1.trace AND r.id = e1.dst AND r.class = 'retrieved_memories'
  JOIN edges e2 ON e2.trace = e1.trace AND e2.src = e1.dst AND e2.kind = 'evaluation'
  JOIN nodes p ON p.trace = e2.trace AND p.id = e2.dst AND p.class = 'prediction'
WHERE e1.kind = 'retrieval'"
            .to_string(),
        Kind::FindGroup => "SELECT name, count(*) FROM ops GROUP BY name".to_string(),
    })
}

fn limit(kind: Kind) -> &'static str {
    if kind.any_row() {
        " LIMIT 1"
    } else {
        ""
    }
}

/// What a statement returned.
pub enum Rows {
    /// A count.
    Count(u64),
    /// The first column of each row (a node or op id).
    Keys(KeyColumn),
    /// Groups and their counts.
    Groups(Vec<(Option<String>, u64)>),
}

/// A SQLite database, opened and closed by the protocol.
pub struct SqliteSide {
    path: PathBuf,
    conn: Option<Connection>,
    /// The key column of the last answered run, reused by the next.
    spare: KeyColumn,
}

impl SqliteSide {
    /// The database file at `path` (not opened yet).
    pub fn new(path: PathBuf) -> SqliteSide {
        SqliteSide {
            path,
            conn: None,
            spare: KeyColumn::default(),
        }
    }

    fn conn(&self) -> Result<&Connection> {
        self.conn
            .as_ref()
            .ok_or_else(|| CliError::Bench("SQLite: the database is not open".into()))
    }

    /// The plan of every statement of `kinds` (EXPLAIN QUERY PLAN, with the
    /// parameters of `start`), named by the workloads that run it; fails when a recursive statement's plan scans
    /// the edges instead of searching an index.
    pub fn plans(&self, kinds: &[(&str, Kind)], start: Option<&Start>) -> Result<Vec<Plan>> {
        let conn = self.conn()?;
        let mut plans: Vec<Plan> = Vec::new();
        for &(name, kind) in kinds {
            let Some(sql) = sql(kind) else { continue };
            if let Some(p) = plans.iter_mut().find(|p| p.sql == sql) {
                p.name = format!("{}, {name}", p.name);
                continue;
            }
            let mut st = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .map_err(sqlite_err)?;
            let values: [rusqlite::types::Value; 2] = match start {
                Some(s) => [s.trace.into(), s.node.clone().into()],
                None => [0.into(), String::new().into()],
            };
            let bound = &values[..st.parameter_count().min(2)];
            let rows = st
                .query_map(rusqlite::params_from_iter(bound), |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(sqlite_err)?;
            let mut depth: HashMap<i64, usize> = HashMap::new();
            let mut lines = Vec::new();
            for row in rows {
                let (id, parent, detail) = row.map_err(sqlite_err)?;
                let d = depth.get(&parent).map_or(0, |d| d + 1);
                depth.insert(id, d);
                lines.push(format!("{}{detail}", "  ".repeat(d)));
            }
            // A recursive statement must look up what it reads: (what a
            // line reads whole, what that would cost).
            let recursive = sql.contains("RECURSIVE");
            let whole = lines.iter().filter(|_| recursive).find_map(|l| {
                if reads_nodes_whole(l) {
                    Some((
                        l,
                        "the nodes without looking them up",
                        "the start's name would be searched for in every node",
                    ))
                } else if reads_edges_whole(l) {
                    Some((
                        l,
                        "the edges without looking up their target",
                        "each ancestor would read every edge of the trace",
                    ))
                } else {
                    None
                }
            });
            if let Some((bad, what, cost)) = whole {
                return Err(CliError::Bench(format!(
                    "SQLite's plan for {name} reads {what} ({}): {cost}. Plan:\n{}",
                    bad.trim(),
                    lines.join("\n")
                )));
            }
            plans.push(Plan {
                name: name.to_string(),
                sql,
                lines,
            });
        }
        Ok(plans)
    }
}

/// Whether a plan line reads the edges table (alias `e`, or by its name)
/// other than by an index lookup on the target: a `SCAN`, or a `SEARCH` on
/// the trace alone (`edges_out (trace=?)`, the plan bundled SQLite 3.50
/// chose without statistics, which made each ancestor read every edge of
/// the trace).
fn reads_edges_whole(line: &str) -> bool {
    let mut words = line.split_whitespace();
    match (words.next(), words.next()) {
        (Some("SCAN"), Some("e" | "edges")) => true,
        (Some("SEARCH"), Some("e" | "edges")) => !line.contains("dst=?"),
        _ => false,
    }
}

/// Whether a plan line reads the nodes table (alias `nd`, or by its name)
/// other than by an index lookup of a node's id or full node id: a `SCAN`,
/// or a `SEARCH` on the trace alone (every node of the trace read to find
/// the start).
fn reads_nodes_whole(line: &str) -> bool {
    let mut words = line.split_whitespace();
    match (words.next(), words.next()) {
        (Some("SCAN"), Some("nd" | "nodes")) => true,
        // `full_node_id=?` ends as `id=?` does.
        (Some("SEARCH"), Some("nd" | "nodes")) => !line.contains("id=?"),
        _ => false,
    }
}

/// The keys of the traces that hold nodes, in import order.
fn trace_keys(conn: &Connection) -> Result<Vec<i64>> {
    let mut st = conn
        .prepare("SELECT DISTINCT trace FROM nodes ORDER BY trace")
        .map_err(sqlite_err)?;
    let rows = st.query_map([], |r| r.get(0)).map_err(sqlite_err)?;
    rows.collect::<std::result::Result<_, _>>()
        .map_err(sqlite_err)
}

impl Side for SqliteSide {
    type Out = Rows;

    fn open(&mut self) -> Result<()> {
        let conn = Connection::open(&self.path).map_err(sqlite_err)?;
        // The first prepare reads the schema: part of opening.
        if let Some(q) = sql(Kind::Closure) {
            conn.prepare_cached(&q).map_err(sqlite_err)?;
        }
        self.conn = Some(conn);
        Ok(())
    }

    fn close(&mut self) {
        self.conn = None;
    }

    fn files(&self) -> Result<Vec<PathBuf>> {
        let mut files = vec![self.path.clone()];
        for tail in ["-wal", "-shm"] {
            let mut p = self.path.clone().into_os_string();
            p.push(tail);
            files.push(PathBuf::from(p));
        }
        Ok(files)
    }

    fn starts(&mut self, per_trace: usize) -> Result<Vec<Start>> {
        let conn = self.conn()?;
        let traces = trace_keys(conn)?;
        let mut find = conn
            .prepare(
                "SELECT full_node_id FROM nodes WHERE trace = ?1 AND class = 'prediction' ORDER BY id LIMIT ?2",
            )
            .map_err(sqlite_err)?;
        let mut starts = Vec::new();
        for (pos, t) in traces.into_iter().enumerate() {
            let rows = find
                .query_map(params![t, per_trace as i64], |r| {
                    Ok(Start {
                        pos,
                        trace: t,
                        node: r.get(0)?,
                    })
                })
                .map_err(sqlite_err)?;
            for r in rows {
                starts.push(r.map_err(sqlite_err)?);
            }
        }
        Ok(starts)
    }

    fn spread(&mut self, per_trace: usize) -> Result<Vec<Start>> {
        let conn = self.conn()?;
        let traces = trace_keys(conn)?;
        let mut all = conn
            .prepare("SELECT full_node_id FROM nodes WHERE trace = ?1 ORDER BY full_node_id")
            .map_err(sqlite_err)?;
        let mut starts = Vec::new();
        for (pos, t) in traces.into_iter().enumerate() {
            let nodes: Vec<String> = all
                .query_map(params![t], |r| r.get(0))
                .map_err(sqlite_err)?
                .collect::<std::result::Result<_, _>>()
                .map_err(sqlite_err)?;
            for p in spread_picks(nodes.len(), per_trace) {
                starts.push(Start {
                    pos,
                    trace: t,
                    node: nodes[p].clone(),
                });
            }
        }
        Ok(starts)
    }

    fn run(&mut self, kind: Kind, start: Option<&Start>) -> Result<Rows> {
        let mut keys = KeyColumn::reuse(&mut self.spare);
        let conn = self.conn()?;
        let text = sql(kind).ok_or_else(|| CliError::Bench("open is not a query".into()))?;
        let mut st = conn.prepare_cached(&text).map_err(sqlite_err)?;
        let need = || start.ok_or_else(|| CliError::Bench("a traversal needs a start".into()));
        Ok(match kind {
            Kind::Closure | Kind::ClosureSpread | Kind::Depth3 => {
                let s = need()?;
                let n: i64 = st
                    .query_row(params![s.trace, s.node], |r| r.get(0))
                    .map_err(sqlite_err)?;
                Rows::Count(n as u64)
            }
            Kind::Nodes
            | Kind::NodesBatches
            | Kind::NodesLimit1
            | Kind::Ops
            | Kind::OpsBatches
            | Kind::OpsLimit1 => {
                let s = need()?;
                // Each row's first column read in place and kept, as the
                // memtrace side keeps the id it is lent.
                let mut rows = st.query(params![s.trace, s.node]).map_err(sqlite_err)?;
                while let Some(r) = rows.next().map_err(sqlite_err)? {
                    let key = r.get_ref(0).map_err(sqlite_err)?;
                    keys.push(
                        key.as_str()
                            .map_err(|e| CliError::Bench(format!("SQLite: {e}")))?,
                    );
                }
                Rows::Keys(keys)
            }
            Kind::Match => {
                let n: i64 = st.query_row([], |r| r.get(0)).map_err(sqlite_err)?;
                Rows::Count(n as u64)
            }
            Kind::FindGroup => {
                let rows = st
                    .query_map([], |r| {
                        Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?))
                    })
                    .map_err(sqlite_err)?;
                let mut groups = Vec::new();
                for r in rows {
                    let (name, n) = r.map_err(sqlite_err)?;
                    groups.push((name, n as u64));
                }
                Rows::Groups(groups)
            }
            Kind::Open => return Err(CliError::Bench("open is not a query".into())),
        })
    }

    fn answer(&mut self, _kind: Kind, out: Rows) -> Result<Answer> {
        Ok(match out {
            Rows::Count(n) => Answer::count(n),
            Rows::Keys(keys) => {
                let a = Answer::keys(keys.iter());
                self.spare = keys;
                a
            }
            Rows::Groups(g) => Answer::groups(g.iter().map(|(k, n)| (k.as_deref(), *n))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_every_edge_is_recognised() {
        assert!(reads_edges_whole("    SCAN e"));
        assert!(reads_edges_whole("SCAN e USING COVERING INDEX edges_in"));
        assert!(reads_edges_whole("SCAN edges"));
        assert!(reads_edges_whole(
            "  SEARCH e USING COVERING INDEX edges_out (trace=?)"
        ));
        assert!(!reads_edges_whole("SCAN anc"));
        assert!(!reads_edges_whole(
            "SEARCH e USING COVERING INDEX edges_in (trace=? AND dst=?)"
        ));
        assert!(!reads_edges_whole("BLOOM FILTER ON e (trace=? AND dst=?)"));
    }

    #[test]
    fn reading_every_node_is_recognised() {
        assert!(reads_nodes_whole("SCAN nodes"));
        assert!(reads_nodes_whole("  SCAN nd"));
        assert!(reads_nodes_whole(
            "SEARCH nodes USING COVERING INDEX nodes_class (trace=?)"
        ));
        assert!(!reads_nodes_whole(
            "SEARCH nodes USING COVERING INDEX nodes_name (trace=? AND full_node_id=?)"
        ));
        assert!(!reads_nodes_whole(
            "SEARCH nd USING PRIMARY KEY (trace=? AND id=?)"
        ));
        assert!(!reads_nodes_whole("SCAN anc"));
    }

    /// A chain `a <- b <- c <- d <- e` (each edge from the earlier node) in
    /// trace 7, with a second `c` added last, loaded with the suite's schema.
    fn chain(dir: &Path) -> PathBuf {
        let path = dir.join("peer.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        for (id, name) in ["a", "b", "c", "d", "e", "c"].iter().enumerate() {
            conn.execute(
                "INSERT INTO nodes VALUES (7, ?1, 'x', ?2)",
                params![id as i64, name],
            )
            .unwrap();
        }
        for (src, dst) in [(0, 1), (1, 2), (2, 3), (3, 4), (0, 5)] {
            conn.execute(
                "INSERT INTO edges VALUES (7, ?1, ?2, 'op', 'k')",
                params![src, dst],
            )
            .unwrap();
        }
        conn.execute_batch("ANALYZE").unwrap();
        path
    }

    #[test]
    fn a_traversal_starts_from_the_name_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let mut side = SqliteSide::new(chain(dir.path()));
        side.open().unwrap();
        let start = |node: &str| Start {
            pos: 0,
            trace: 7,
            node: node.to_string(),
        };
        let count = |side: &mut SqliteSide, kind: Kind, node: &str| match side
            .run(kind, Some(&start(node)))
            .unwrap()
        {
            Rows::Count(n) => n,
            _ => panic!("not a count"),
        };
        assert_eq!(count(&mut side, Kind::Closure, "e"), 4);
        assert_eq!(count(&mut side, Kind::Depth3, "e"), 3);
        // Of the two `c`, the one added last (id 5, whose only ancestor is `a`).
        assert_eq!(count(&mut side, Kind::Closure, "c"), 1);
        assert_eq!(count(&mut side, Kind::Closure, "b"), 1);
        match side.run(Kind::Nodes, Some(&start("d"))).unwrap() {
            Rows::Keys(keys) => {
                let mut got: Vec<&str> = keys.iter().collect();
                got.sort_unstable();
                assert_eq!(got, ["a", "b", "c"]);
            }
            _ => panic!("not keys"),
        }
        let kinds = [
            ("closure", Kind::Closure),
            ("depth3", Kind::Depth3),
            ("nodes", Kind::Nodes),
        ];
        let plans = side.plans(&kinds, Some(&start("e"))).unwrap();
        assert!(plans
            .iter()
            .all(|p| p.lines.iter().any(|l| l.contains("nodes_name"))));
    }

    #[test]
    fn a_start_found_without_the_name_index_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = chain(dir.path());
        Connection::open(&path)
            .unwrap()
            .execute_batch("DROP INDEX nodes_name; ANALYZE")
            .unwrap();
        let mut side = SqliteSide::new(path);
        side.open().unwrap();
        let start = Start {
            pos: 0,
            trace: 7,
            node: "e".to_string(),
        };
        let Err(CliError::Bench(why)) = side.plans(&[("depth3", Kind::Depth3)], Some(&start))
        else {
            panic!("the plan was accepted")
        };
        assert!(
            why.contains("reads the nodes without looking them up"),
            "{why}"
        );
    }

    #[test]
    fn every_query_has_sql_but_open() {
        assert!(sql(Kind::Open).is_none());
        assert!(sql(Kind::NodesLimit1).is_some_and(|s| s.ends_with("LIMIT 1")));
        assert!(sql(Kind::Nodes).is_some_and(|s| !s.contains("LIMIT")));
    }
}
