//! How every side of the suite's query benchmark is measured, the same way
//! for memtrace, SQLite and DuckDB (`bench/peers/duckdb_peer.py` follows
//! the same steps in Python):
//!
//! - **open**: every file of the database is evicted from the page cache
//!   (see [`crate::cold`]), then the database is opened; that time is the
//!   `open-cold` figure.
//! - **cold**: for a bounded number of starts spread over the start list
//!   (`--cold`), and once for each query over all traces: close, evict,
//!   open, then time the first query.
//! - **warm**: for every start (or once, for a query over all traces) one
//!   untimed run, which fills the caches and gives the answer's digest, then
//!   the same number of timed runs on every side (`--warm`), each of which
//!   must return as many rows as the untimed one.
//! - **spread**: the closure from [`SPREAD_PER_TRACE`] variables of each
//!   trace, one untimed run each, then timed runs that take them in turn
//!   (as many as `--warm`, rounded up to whole passes). A warm figure
//!   repeats one start, and a processor learns the branches of a walk it
//!   repeats thousands of times; taken in turn, no query follows one from
//!   the same start, as in use.

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cold::{evict, Eviction};
use crate::error::{CliError, Result};

/// What one query of a workload asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Opening the database after its files were evicted.
    Open,
    /// The count of a start's full backward closure.
    Closure,
    /// The count of the full backward closure of each of the spread
    /// variables in turn (see the module's protocol).
    ClosureSpread,
    /// The count of a start's ancestors up to 3 hops back.
    Depth3,
    /// The closure's nodes as rows.
    Nodes,
    /// The first row of the closure's nodes.
    NodesLimit1,
    /// The closure's nodes, read a batch at a time where the side has a
    /// batch API (memtrace's `query_batches`; the peers read their rows as
    /// for [`Kind::Nodes`]).
    NodesBatches,
    /// The ops of the closure as rows.
    Ops,
    /// The ops of the closure, read a batch at a time (as
    /// [`Kind::NodesBatches`] reads the nodes).
    OpsBatches,
    /// The first row of the closure's ops.
    OpsLimit1,
    /// A two-edge pattern over all traces, counted.
    Match,
    /// Ops grouped by name over all traces, with their counts.
    FindGroup,
}

impl Kind {
    /// Whether the query starts from a node of one trace (else it reads all traces).
    pub fn per_start(self) -> bool {
        !matches!(self, Kind::Open | Kind::Match | Kind::FindGroup)
    }

    /// Whether any one row answers the query (so only row counts can agree).
    pub fn any_row(self) -> bool {
        matches!(self, Kind::NodesLimit1 | Kind::OpsLimit1)
    }
}

/// One row of the table: a query, cold or warm, with what each side runs.
#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    /// The row's name (the same on every side).
    pub name: &'static str,
    /// The query.
    pub kind: Kind,
    /// Cold (first query after close, eviction and open) or warm (repeated).
    pub cold: bool,
    /// What memtrace runs.
    #[serde(skip)]
    pub memtrace: &'static str,
    /// What the SQL peers run.
    #[serde(skip)]
    pub sql: &'static str,
}

const fn w(
    name: &'static str,
    kind: Kind,
    cold: bool,
    memtrace: &'static str,
    sql: &'static str,
) -> Workload {
    Workload {
        name,
        kind,
        cold,
        memtrace,
        sql,
    }
}

const OPEN: Workload = w(
    "open-cold",
    Kind::Open,
    true,
    "Database::open_read_only (as reading commands open it), files evicted",
    "open the file, files evicted",
);

/// The workloads of the generated sets, in table order.
pub const SUITE: &[Workload] = &[
    OPEN,
    w("closure-cold", Kind::Closure, true,
      "TRACE <prediction> RETURN count, first query after open",
      "recursive CTE (UNION), full closure, first query after open"),
    w("closure-warm", Kind::Closure, false,
      "TRACE <prediction> RETURN count, cached",
      "recursive CTE (UNION), full closure, repeated"),
    w("closure-spread-warm", Kind::ClosureSpread, false,
      "TRACE <variable> RETURN count from 20 variables per trace in turn, cached",
      "recursive CTE (UNION), full closure, from the same variables in turn"),
    w("closure-nodes-warm", Kind::Nodes, false,
      "TRACE <prediction> RETURN nodes (rows: node id, category, depth, op), cached",
      "recursive CTE joined to nodes (rows: node id, class), repeated"),
    w("depth3-cold", Kind::Depth3, true,
      "TRACE <prediction> DEPTH 3 RETURN count, first query after open",
      "recursive CTE bounded at 3 hops, first query after open"),
    w("depth3-warm", Kind::Depth3, false,
      "TRACE <prediction> DEPTH 3 RETURN count, cached",
      "recursive CTE bounded at 3 hops, repeated"),
    w("match-cold", Kind::Match, true,
      "MATCH (u)-[:retrieval]->(r:retrieved_memories)-[:evaluation]->(p:prediction) RETURN count(*), all traces, first query after open",
      "two-edge join with node classes and op kinds, first query after open"),
    w("match-warm", Kind::Match, false,
      "the same MATCH, cached",
      "the same join, repeated"),
    w("find-group-cold", Kind::FindGroup, true,
      "FIND ops GROUP BY op.name RETURN op.name, count(*), all traces, first query after open",
      "SELECT name, count(*) FROM ops GROUP BY name, first query after open"),
    w("find-group-warm", Kind::FindGroup, false,
      "the same FIND, cached",
      "the same SELECT, repeated"),
];

/// The workloads of the growth traces (one start whose closure has a known size), in table order.
pub const GROWTH: &[Workload] = &[
    OPEN,
    w(
        "closure-cold",
        Kind::Closure,
        true,
        "TRACE <prediction> RETURN count, first query after open",
        "recursive CTE (UNION), full closure, first query after open",
    ),
    w(
        "closure-warm",
        Kind::Closure,
        false,
        "TRACE <prediction> RETURN count, cached",
        "recursive CTE (UNION), full closure, repeated",
    ),
    w(
        "closure-spread-warm",
        Kind::ClosureSpread,
        false,
        "TRACE <variable> RETURN count from 20 variables of the trace in turn, cached",
        "recursive CTE (UNION), full closure, from the same variables in turn",
    ),
    w(
        "depth3-cold",
        Kind::Depth3,
        true,
        "TRACE <prediction> DEPTH 3 RETURN count, first query after open",
        "recursive CTE bounded at 3 hops, first query after open",
    ),
    w(
        "depth3-warm",
        Kind::Depth3,
        false,
        "TRACE <prediction> DEPTH 3 RETURN count, cached",
        "recursive CTE bounded at 3 hops, repeated",
    ),
    w(
        "closure-nodes-warm",
        Kind::Nodes,
        false,
        "TRACE <prediction> RETURN nodes, cached",
        "recursive CTE joined to nodes, repeated",
    ),
    w(
        "closure-nodes-batches-warm",
        Kind::NodesBatches,
        false,
        "TRACE <prediction> RETURN nodes read in batches (query_batches; only the id column read), cached",
        "the same nodes as closure-nodes-warm, repeated",
    ),
    w(
        "closure-nodes-limit1-warm",
        Kind::NodesLimit1,
        false,
        "TRACE <prediction> RETURN nodes LIMIT 1, cached",
        "recursive CTE joined to nodes, LIMIT 1, repeated",
    ),
    w(
        "closure-ops-warm",
        Kind::Ops,
        false,
        "TRACE <prediction> RETURN ops (rows: op id, name, kind, depth), cached",
        "ops whose edges end in the recursive CTE (rows: op id, name, kind), repeated",
    ),
    w(
        "closure-ops-batches-warm",
        Kind::OpsBatches,
        false,
        "TRACE <prediction> RETURN ops read in batches (query_batches; each level's ids copied as one slice), cached",
        "the same ops as closure-ops-warm, repeated",
    ),
    w(
        "closure-ops-limit1-warm",
        Kind::OpsLimit1,
        false,
        "TRACE <prediction> RETURN ops LIMIT 1, cached",
        "the same ops, LIMIT 1, repeated",
    ),
];

/// The workloads of a set by name (`suite` or `growth`).
pub fn workloads(set: &str) -> Result<&'static [Workload]> {
    match set {
        "suite" => Ok(SUITE),
        "growth" => Ok(GROWTH),
        other => Err(CliError::Usage(format!(
            "unknown workload set {other} (suite or growth)"
        ))),
    }
}

/// One query workload on one side: latencies and the answers every side must agree on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Figure {
    /// Workload name (the same on every side).
    pub name: String,
    /// Queries timed.
    pub queries: u64,
    /// Median latency, microseconds.
    pub median_us: f64,
    /// 95th percentile latency, microseconds.
    pub p95_us: f64,
    /// Total seconds timed.
    pub seconds: f64,
    /// Sum of the answers: counts, or rows (each start's answer counted once).
    pub checksum: u64,
    /// Order-independent digest of the answers' content (node ids, op ids,
    /// group names with their counts), compared across sides.
    #[serde(default)]
    pub digest: u64,
}

impl Figure {
    /// Median, 95th percentile and total of latencies in microseconds.
    pub fn from_samples(name: &str, mut us: Vec<f64>, checksum: u64, digest: u64) -> Figure {
        us.sort_by(f64::total_cmp);
        let pick = |q: f64| {
            if us.is_empty() {
                0.0
            } else {
                us[((us.len() - 1) as f64 * q).round() as usize]
            }
        };
        Figure {
            name: name.to_string(),
            queries: us.len() as u64,
            median_us: pick(0.5),
            p95_us: pick(0.95),
            seconds: us.iter().sum::<f64>() / 1e6,
            checksum,
            digest,
        }
    }
}

/// A statement a SQL peer times, with its query plan.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Plan {
    /// The workloads that run it, comma-separated.
    pub name: String,
    /// The SQL.
    pub sql: String,
    /// The plan's lines (EXPLAIN QUERY PLAN), indented by depth.
    pub lines: Vec<String>,
}

/// What one step measured (fields a step leaves out are zero or empty).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Measured {
    /// Seconds of the step's work.
    pub seconds: f64,
    /// Peak resident memory of the step's process.
    pub peak_rss_kib: u64,
    /// Bytes on disk written.
    pub disk_bytes: u64,
    /// Records written or starts traced.
    pub units: u64,
    /// Sum of answers, for steps without figures.
    pub checksum: u64,
    /// Query workloads measured by the query steps.
    #[serde(default)]
    pub figures: Vec<Figure>,
    /// Attribution: verdicts with the labelled error type, and with the labelled op.
    #[serde(default)]
    pub correct: (u64, u64),
    /// The statements a SQL peer timed, with their plans.
    #[serde(default)]
    pub plans: Vec<Plan>,
    /// What the cold starts' evictions did.
    #[serde(default)]
    pub eviction: Eviction,
    /// Digest of the start list (trace position and node id of each start),
    /// so that sides are known to trace back the same nodes.
    #[serde(default)]
    pub starts_digest: u64,
    /// What the side is (version, options), for the output.
    #[serde(default)]
    pub note: String,
}

/// A node traced back: the position of its trace among the side's traces
/// (in import order), the side's own key for the trace, and its full node id
/// (what every side starts from: the SQL peers look it up as memtrace does).
#[derive(Debug, Clone)]
pub struct Start {
    /// Position of the trace (0 for the first trace imported).
    pub pos: usize,
    /// The side's key of the trace.
    pub trace: i64,
    /// The full node id.
    pub node: String,
}

/// What a query answered: rows (or the count) and a digest of the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Answer {
    /// The count, or the number of rows.
    pub rows: u64,
    /// Order-independent digest of the content.
    pub digest: u64,
}

impl Answer {
    /// A count: its digest is itself.
    pub fn count(n: u64) -> Answer {
        Answer { rows: n, digest: n }
    }

    /// Rows of keys (node or op ids): the wrapping sum of their hashes.
    pub fn keys<'a>(keys: impl IntoIterator<Item = &'a str>) -> Answer {
        let mut a = Answer::default();
        for k in keys {
            a.rows += 1;
            a.digest = a.digest.wrapping_add(fnv1a(k.as_bytes()));
        }
        a
    }

    /// Groups with counts: the sum of the counts, and the wrapping sum of
    /// each group's name hash times its count (`None`, no name, hashes to 0).
    pub fn groups<'a>(groups: impl IntoIterator<Item = (Option<&'a str>, u64)>) -> Answer {
        let mut a = Answer::default();
        for (name, n) in groups {
            a.rows += n;
            let h = name.map(|s| fnv1a(s.as_bytes())).unwrap_or(0);
            a.digest = a.digest.wrapping_add(h.wrapping_mul(n));
        }
        a
    }
}

/// The first column of a query's rows (node or op ids), as both Rust
/// sides keep it while the rows stream: the texts appended to one buffer,
/// so that what is measured is the engine handing out rows, not one
/// allocation per row on the reader's side. Each side keeps its column
/// from one repetition to the next and empties it ([`reuse`](Self::reuse)), as a
/// reader that runs a query again reuses its buffer: a repetition does not
/// pay for growing it anew.
#[derive(Debug, Clone, Default)]
pub struct KeyColumn {
    text: String,
    ends: Vec<usize>,
}

impl KeyColumn {
    /// The column a run fills: `spare` emptied, its buffers kept (`spare`
    /// is left empty until the run's answer hands the column back).
    pub fn reuse(spare: &mut KeyColumn) -> KeyColumn {
        let mut keys = std::mem::take(spare);
        keys.text.clear();
        keys.ends.clear();
        keys
    }

    /// Appends one row's key.
    pub fn push(&mut self, key: &str) {
        self.text.push_str(key);
        self.ends.push(self.text.len());
    }

    /// Appends the keys that `run` holds one after the other, the `i`th
    /// ending at the `i`th of `ends` (offsets into `run`, in order) and
    /// starting where the one before ends, the first at the start of `run`.
    pub fn push_run(&mut self, run: &str, ends: impl Iterator<Item = usize>) {
        let base = self.text.len();
        self.text.push_str(run);
        self.ends.extend(ends.map(|e| base + e));
    }

    /// The keys, in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(self.ends.iter().copied())
            .map(|(a, b)| self.text.get(a..b).unwrap_or(""))
    }
}

/// FNV-1a, 64 bits (the Python peer computes the same).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The digest of a start list.
pub fn starts_digest(starts: &[Start]) -> u64 {
    starts.iter().fold(0u64, |acc, s| {
        acc.wrapping_mul(31)
            .wrapping_add(fnv1a(format!("{}\t{}", s.pos, s.node).as_bytes()))
    })
}

/// Variables per trace that the spread workload starts from.
pub const SPREAD_PER_TRACE: usize = 20;

/// The positions of `per_trace` variables spread evenly over `len` (all of
/// them when there are fewer).
pub fn spread_picks(len: usize, per_trace: usize) -> Vec<usize> {
    cold_picks(len, per_trace.min(len))
}

/// The positions in a start list of `len` that the cold samples use:
/// `samples` of them, spread evenly (repeating when the list is shorter).
pub fn cold_picks(len: usize, samples: usize) -> Vec<usize> {
    if len == 0 {
        return Vec::new();
    }
    (0..samples).map(|i| i * len / samples).collect()
}

/// One database as the benchmark drives it.
pub trait Side {
    /// What a query returns before it is summarised (outside the timing).
    type Out;
    /// Opens the database (it is closed).
    fn open(&mut self) -> Result<()>;
    /// Closes the database, dropping every cache of it in this process.
    fn close(&mut self);
    /// The database's files, to evict.
    fn files(&self) -> Result<Vec<PathBuf>>;
    /// The first `per_trace` predictions of every trace, traces in import order.
    fn starts(&mut self, per_trace: usize) -> Result<Vec<Start>>;
    /// `per_trace` variables of every trace (all when it has fewer),
    /// spread evenly over its variables ordered by full id (byte order, the
    /// same on every side), traces in import order.
    fn spread(&mut self, per_trace: usize) -> Result<Vec<Start>>;
    /// Runs one query (timed).
    fn run(&mut self, kind: Kind, start: Option<&Start>) -> Result<Self::Out>;
    /// What a query returned, as an answer (not timed). A side may keep
    /// what `out` holds to reuse in its next run (a [`KeyColumn`]'s
    /// buffers).
    fn answer(&mut self, kind: Kind, out: Self::Out) -> Result<Answer>;
}

/// How many cold samples and warm repetitions to take.
#[derive(Debug, Clone, Copy)]
pub struct Runs {
    /// Predictions traced back per trace.
    pub starts: usize,
    /// Cold samples per per-start workload.
    pub cold: usize,
    /// Timed warm repetitions.
    pub warm: usize,
}

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let start = Instant::now();
    let v = f()?;
    Ok((v, start.elapsed().as_secs_f64() * 1e6))
}

/// Samples of one workload as they are taken.
#[derive(Default)]
struct Acc {
    us: Vec<f64>,
    rows: u64,
    digest: u64,
}

impl Acc {
    fn add(&mut self, a: Answer) {
        self.rows += a.rows;
        self.digest = self.digest.wrapping_add(a.digest);
    }
}

/// Measures `workloads` on `side` by the protocol of this module. Returns
/// the figures (in the workloads' order), the start list's digest and
/// number, and what the evictions did.
pub fn measure<S: Side>(
    side: &mut S,
    workloads: &[Workload],
    runs: Runs,
) -> Result<(Vec<Figure>, u64, u64, Eviction)> {
    let mut ev = Eviction::default();
    let mut acc: Vec<Acc> = workloads.iter().map(|_| Acc::default()).collect();
    let open_at = workloads.iter().position(|w| w.kind == Kind::Open);
    // Every open is a cold open; each one is a sample of the open figure.
    let mut cold_open = |side: &mut S, acc: &mut [Acc]| -> Result<()> {
        side.close();
        // Listed anew each time: an open may write new files (RocksDB's
        // manifest, options and log).
        evict(&side.files()?, &mut ev)?;
        let ((), us) = timed(|| side.open())?;
        if let Some(i) = open_at {
            acc[i].us.push(us);
        }
        Ok(())
    };
    cold_open(side, &mut acc)?;
    let starts = side.starts(runs.starts)?;
    let digest = starts_digest(&starts);
    let picks = cold_picks(starts.len(), runs.cold);
    for (i, w) in workloads.iter().enumerate() {
        if !w.cold || w.kind == Kind::Open {
            continue;
        }
        let chosen: Vec<Option<&Start>> = if w.kind.per_start() {
            picks.iter().map(|&p| Some(&starts[p])).collect()
        } else {
            vec![None]
        };
        for start in chosen {
            cold_open(side, &mut acc)?;
            let (out, us) = timed(|| side.run(w.kind, start))?;
            acc[i].us.push(us);
            let a = side.answer(w.kind, out)?;
            acc[i].add(a);
        }
    }
    let spread = if workloads.iter().any(|w| w.kind == Kind::ClosureSpread) {
        side.spread(SPREAD_PER_TRACE)?
    } else {
        Vec::new()
    };
    for (i, w) in workloads.iter().enumerate() {
        if w.cold {
            continue;
        }
        if w.kind == Kind::ClosureSpread {
            measure_spread(side, w, &spread, runs.warm, &mut acc[i])?;
            continue;
        }
        let chosen: Vec<Option<&Start>> = if w.kind.per_start() {
            starts.iter().map(Some).collect()
        } else {
            vec![None]
        };
        for start in chosen {
            let out = side.run(w.kind, start)?;
            let first = side.answer(w.kind, out)?;
            for _ in 0..runs.warm {
                let (out, us) = timed(|| side.run(w.kind, start))?;
                acc[i].us.push(us);
                let again = side.answer(w.kind, out)?;
                if again.rows != first.rows {
                    return Err(CliError::Bench(format!(
                        "{}: a repetition answered {} rows, the first run {}",
                        w.name, again.rows, first.rows
                    )));
                }
            }
            acc[i].add(first);
        }
    }
    side.close();
    let figures = workloads
        .iter()
        .zip(acc)
        .map(|(w, a)| Figure::from_samples(w.name, a.us, a.rows, a.digest))
        .collect();
    Ok((figures, digest, starts.len() as u64, ev))
}

/// The spread workload: each start once untimed, then passes over all of
/// them in turn, each query timed, until `warm` queries (rounded up to a
/// whole pass) are taken.
fn measure_spread<S: Side>(
    side: &mut S,
    w: &Workload,
    spread: &[Start],
    warm: usize,
    acc: &mut Acc,
) -> Result<()> {
    let mut firsts = Vec::with_capacity(spread.len());
    for s in spread {
        let out = side.run(w.kind, Some(s))?;
        firsts.push(side.answer(w.kind, out)?);
    }
    let passes = warm.div_ceil(spread.len().max(1));
    for _ in 0..passes {
        for (s, first) in spread.iter().zip(&firsts) {
            let (out, us) = timed(|| side.run(w.kind, Some(s)))?;
            acc.us.push(us);
            let again = side.answer(w.kind, out)?;
            if again.rows != first.rows {
                return Err(CliError::Bench(format!(
                    "{} from {}: a pass answered {} rows, the first run {}",
                    w.name, s.node, again.rows, first.rows
                )));
            }
        }
    }
    for a in firsts {
        acc.add(a);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A side whose closure from node `x` counts `x.len()` nodes (one
    /// more from its second run on, when `drifts`), recording each run.
    struct Fake {
        ran: Vec<String>,
        drifts: bool,
    }

    fn start(node: &str) -> Start {
        Start {
            pos: 0,
            trace: 1,
            node: node.to_string(),
        }
    }

    impl Side for Fake {
        type Out = u64;
        fn open(&mut self) -> Result<()> {
            Ok(())
        }
        fn close(&mut self) {}
        fn files(&self) -> Result<Vec<PathBuf>> {
            Ok(Vec::new())
        }
        fn starts(&mut self, _: usize) -> Result<Vec<Start>> {
            Ok(vec![start("p")])
        }
        fn spread(&mut self, _: usize) -> Result<Vec<Start>> {
            Ok(["a", "bb", "ccc"].into_iter().map(start).collect())
        }
        fn run(&mut self, _: Kind, s: Option<&Start>) -> Result<u64> {
            let node = s.map(|s| s.node.clone()).unwrap_or_default();
            let again = self.ran.contains(&node);
            self.ran.push(node.clone());
            Ok(node.len() as u64 + u64::from(self.drifts && again))
        }
        fn answer(&mut self, _: Kind, out: u64) -> Result<Answer> {
            Ok(Answer::count(out))
        }
    }

    #[test]
    fn the_spread_workload_takes_its_starts_in_turn_in_whole_passes() {
        let wl = [w("spread", Kind::ClosureSpread, false, "", "")];
        let runs = Runs {
            starts: 1,
            cold: 0,
            warm: 5,
        };
        let mut side = Fake {
            ran: Vec::new(),
            drifts: false,
        };
        let (figures, _, _, _) = measure(&mut side, &wl, runs).unwrap();
        // One untimed pass, then 5 queries rounded up to two whole passes.
        assert_eq!(side.ran, ["a", "bb", "ccc"].repeat(3));
        assert_eq!(figures[0].queries, 6);
        // Each start's count once: 1 + 2 + 3.
        assert_eq!(figures[0].checksum, 6);
        let mut drifting = Fake {
            ran: Vec::new(),
            drifts: true,
        };
        let err = measure(&mut drifting, &wl, runs).unwrap_err().to_string();
        assert!(err.contains("spread from a"), "{err}");
    }

    #[test]
    fn spread_picks_are_distinct_and_even() {
        assert_eq!(
            spread_picks(100, 20),
            (0..100).step_by(5).collect::<Vec<_>>()
        );
        // Fewer variables than picks: each once.
        assert_eq!(spread_picks(3, 20), vec![0, 1, 2]);
        assert!(spread_picks(0, 20).is_empty());
    }

    #[test]
    fn cold_picks_spread_and_repeat() {
        assert_eq!(cold_picks(100, 4), vec![0, 25, 50, 75]);
        assert_eq!(cold_picks(1, 3), vec![0, 0, 0]);
        assert!(cold_picks(0, 3).is_empty());
    }

    #[test]
    fn digests_ignore_order() {
        let a = Answer::keys(["x", "y"]);
        let b = Answer::keys(["y", "x"]);
        assert_eq!(a, b);
        assert_eq!(a.rows, 2);
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        let g = Answer::groups([(Some("a"), 2), (None, 3)]);
        assert_eq!(g.rows, 5);
    }

    #[test]
    fn a_run_of_keys_is_the_same_column_as_its_keys_one_by_one() {
        let mut one_by_one = KeyColumn::default();
        for k in ["pre", "a", "", "bcd"] {
            one_by_one.push(k);
        }
        let mut runs = KeyColumn::default();
        runs.push("pre");
        runs.push_run("abcd", [1, 1, 4].into_iter());
        runs.push_run("", std::iter::empty());
        assert_eq!(
            runs.iter().collect::<Vec<_>>(),
            one_by_one.iter().collect::<Vec<_>>()
        );
        assert_eq!(Answer::keys(runs.iter()), Answer::keys(one_by_one.iter()));
    }

    #[test]
    fn workload_sets_start_with_open() {
        for set in ["suite", "growth"] {
            let w = workloads(set).unwrap();
            assert_eq!(w[0].kind, Kind::Open);
        }
        assert!(workloads("other").is_err());
    }
}
