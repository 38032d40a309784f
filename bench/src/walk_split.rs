//! Where the time of `RETURN ops` goes, beside `RETURN count` from the same
//! start, measured in turn in the same process: the count query, the
//! count's walk alone, the ops walk alone (each level's new ops found, no
//! row made), the ops read by batches and by rows as the suite reads them
//! (each id kept), and the ops by rows with each id only looked at (its
//! length taken, nothing copied), which parts what the rows cost the
//! engine from what keeping them costs the caller; then `RETURN nodes` by
//! batches and by rows, each id kept, as the suite reads them. Workloads take turns
//! round after round, so that a machine whose speed drifts slows each of
//! them alike; each round reports the least and the median time of its
//! runs and both beside the count query's.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use memtrace::engine::Direction;
use memtrace::{Cancel, Params};

use crate::error::{CliError, Result};
use crate::memtrace_side::{traversal, MemtraceSide};
use crate::protocol::{Kind, Side, Start};

/// Arguments of `walk-split`.
#[derive(Debug, Args)]
pub struct WalkSplitArgs {
    /// The database (made by `suite --keep`, or any memtrace database).
    #[arg(long)]
    pub db: PathBuf,
    /// Timed runs of each workload per round.
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Rounds, the workloads taking turns in each.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Print only how each workload compares with the count query across
    /// the rounds, not every round (with `--runs 1`, runs of every
    /// workload in turn, each compared with the count query's beside it).
    #[arg(long)]
    pub summary: bool,
}

/// The workloads, in the order each round runs them.
const WORKLOADS: [&str; 8] = [
    "count query",
    "count walk",
    "ops walk",
    "ops by batches",
    "ops rows unkept",
    "ops by rows",
    "nodes by batches",
    "nodes by rows",
];

/// Microseconds since `t`.
fn micros(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// Least and median of `times` (microseconds, sorted in place).
fn min_median(times: &mut [f64]) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let min = times.first().copied().unwrap_or(0.0);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    (min, median)
}

/// How a workload's least time of a round compares with the count
/// query's least of the same round, across the rounds: the ratios' tenth,
/// fiftieth and ninetieth percentiles (nearest rank) and how many rounds
/// were within twice the count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Tenth percentile of the ratios.
    pub p10: f64,
    /// Their median.
    pub median: f64,
    /// Ninetieth percentile.
    pub p90: f64,
    /// Rounds whose ratio was at most 2.
    pub within_2x: usize,
}

/// The [`Spread`] of each workload over `rounds` (each round's figures in
/// the order of [`WORKLOADS`], the count query's first). Empty when there
/// are no rounds.
pub fn spread(rounds: &[Vec<(f64, f64)>]) -> Vec<Spread> {
    let workloads = rounds.first().map_or(0, Vec::len);
    (0..workloads)
        .map(|w| {
            let mut ratios: Vec<f64> = rounds
                .iter()
                .filter_map(|r| Some(r.get(w)?.0 / r.first()?.0))
                .collect();
            ratios.sort_by(f64::total_cmp);
            let rank = |q: f64| {
                let i = (q * ratios.len() as f64).ceil() as usize;
                ratios.get(i.saturating_sub(1)).copied().unwrap_or(0.0)
            };
            Spread {
                p10: rank(0.1),
                median: rank(0.5),
                p90: rank(0.9),
                within_2x: ratios.iter().filter(|&&x| x <= 2.0).count(),
            }
        })
        .collect()
}

/// What `walk-split` measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// The start's full node id.
    pub start: String,
    /// Its trace's id.
    pub trace: i64,
    /// Nodes of the closure (the count and its walk agree on it).
    pub nodes: u64,
    /// Ops of the closure (every ops workload agrees on it).
    pub ops: u64,
    /// Per round, per workload of [`WORKLOADS`]: the least and the median
    /// time of its runs, in microseconds.
    pub rounds: Vec<Vec<(f64, f64)>>,
}

/// Measures the workloads on the database at `db`, from the first
/// `prediction` variable of its first trace that has one.
pub fn measure(db: &Path, runs: usize, rounds: usize) -> Result<Split> {
    if runs == 0 || rounds == 0 {
        return Err(CliError::Usage(
            "--runs and --rounds must be at least 1".into(),
        ));
    }
    if !db.is_dir() {
        return Err(CliError::Usage(format!(
            "{}: no database there",
            db.display()
        )));
    }
    let mut side = MemtraceSide::new(db.to_path_buf());
    side.open()?;
    let start: Start = side.starts(1)?.into_iter().next().ok_or_else(|| {
        CliError::Bench(format!(
            "{}: no trace holds a `prediction` variable to start from",
            db.display()
        ))
    })?;
    let trace = u32::try_from(start.trace)
        .map_err(|_| CliError::Bench(format!("trace id {} out of range", start.trace)))?;
    // The start's variable and the trace's graph (shared, so the snapshot
    // that found them can go before the timed runs borrow the side).
    let (var, graph) = {
        let snapshot = side.database()?.engine().snapshot();
        let var = snapshot
            .catalog(trace)?
            .var_by_node_id(&start.node)
            .ok_or_else(|| CliError::Bench(format!("{} not found in its trace", start.node)))?;
        (var, snapshot.graph(trace)?)
    };
    let cancel = Cancel::new();
    let count_walk = || graph.reach_count(&[var], Direction::Backward, 1, None, &cancel);
    let ops_walk = || -> Result<u64> {
        let mut ops = 0u64;
        graph.walk_new_ops(&[var], Direction::Backward, None, &cancel, |_, fresh| {
            ops += fresh.len() as u64;
            Ok(true)
        })?;
        Ok(ops)
    };
    let ops_query = traversal(&start, "RETURN ops");
    // `RETURN ops` by rows, each row's id looked at (its length summed)
    // and nothing kept: the rows' cost without the caller's copying.
    let rows_unkept = |side: &MemtraceSide| -> Result<u64> {
        let (mut rows, mut bytes) = (0u64, 0usize);
        side.database()?
            .query_each(&ops_query, &Params::new(), &cancel, &mut |row| {
                rows += 1;
                bytes += row.get(1).and_then(|c| c.as_str()).map_or(0, str::len);
                Ok(true)
            })?;
        std::hint::black_box(bytes);
        Ok(rows)
    };
    // One run of workload `w`: its count of nodes or ops, and the time it
    // took in microseconds (a query's answer is summarised untimed, as the
    // suite does).
    let mut once = |w: usize| -> Result<(u64, f64)> {
        let t = Instant::now();
        let kind = match w {
            0 => Kind::Closure,
            1 => return Ok((count_walk()?, micros(t))),
            2 => return Ok((ops_walk()?, micros(t))),
            3 => Kind::OpsBatches,
            4 => return Ok((rows_unkept(&side)?, micros(t))),
            5 => Kind::Ops,
            6 => Kind::NodesBatches,
            _ => Kind::Nodes,
        };
        let out = side.run(kind, Some(&start))?;
        let took = micros(t);
        Ok((side.answer(kind, out)?.rows, took))
    };
    // The answers agree before anything is timed.
    let answers: Vec<u64> = (0..WORKLOADS.len())
        .map(|w| Ok(once(w)?.0))
        .collect::<Result<_>>()?;
    let nodes_agree = answers[0] == answers[1] && answers[6..].iter().all(|&n| n == answers[0]);
    if !nodes_agree || answers[2..6].iter().any(|&n| n != answers[2]) {
        return Err(CliError::Bench(format!(
            "the workloads disagree: {answers:?} (nodes twice, ops four times, nodes twice)"
        )));
    }
    let mut measured = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut figures = Vec::with_capacity(WORKLOADS.len());
        for w in 0..WORKLOADS.len() {
            let mut times = (0..runs)
                .map(|_| Ok(once(w)?.1))
                .collect::<Result<Vec<f64>>>()?;
            figures.push(min_median(&mut times));
        }
        measured.push(figures);
    }
    Ok(Split {
        nodes: answers[0],
        ops: answers[2],
        start: start.node,
        trace: start.trace,
        rounds: measured,
    })
}

/// Runs `walk-split` and prints its table.
pub fn run(a: &WalkSplitArgs) -> Result<std::process::ExitCode> {
    let split = measure(&a.db, a.runs, a.rounds)?;
    println!(
        "walk split: {} in trace #{}, backward closure of {} nodes and {} ops; {} rounds of {} runs per workload",
        split.start, split.trace, split.nodes, split.ops, a.rounds, a.runs
    );
    if !a.summary {
        println!(
            "{:<7} {:<16} {:>12} {:>8} {:>12} {:>8}",
            "round", "workload", "least us", "x count", "median us", "x count"
        );
        for (round, figures) in (1..).zip(&split.rounds) {
            let (count_min, count_median) = figures.first().copied().unwrap_or((1.0, 1.0));
            for (name, (min, median)) in WORKLOADS.iter().zip(figures) {
                println!(
                    "{round:<7} {name:<16} {min:>12.1} {:>7.2}x {median:>12.1} {:>7.2}x",
                    min / count_min,
                    median / count_median
                );
            }
        }
    }
    println!(
        "across the {} rounds, each round's least beside the count query's least of the same round:",
        split.rounds.len()
    );
    println!(
        "{:<16} {:>8} {:>8} {:>8} {:>14}",
        "workload", "p10", "median", "p90", "within 2x"
    );
    for (name, s) in WORKLOADS.iter().zip(spread(&split.rounds)) {
        println!(
            "{name:<16} {:>7.2}x {:>7.2}x {:>7.2}x {:>7} of {}",
            s.p10,
            s.median,
            s.p90,
            s.within_2x,
            split.rounds.len()
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_and_median_of_runs() {
        let mut t = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(min_median(&mut t), (1.0, 3.0));
        let mut one = [7.5];
        assert_eq!(min_median(&mut one), (7.5, 7.5));
        assert_eq!(min_median(&mut []), (0.0, 0.0));
    }

    #[test]
    fn the_spread_compares_each_round_with_its_own_count() {
        // Ten rounds: the count takes 1, 2, ... 10 us; the other workload
        // 1.5x, 2.5x, ... 10.5x the count of its round.
        let rounds: Vec<Vec<(f64, f64)>> = (1..=10)
            .map(|r| {
                let count = f64::from(r);
                vec![(count, count), (count * (f64::from(r) + 0.5), 99.0)]
            })
            .collect();
        let s = spread(&rounds);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            Spread {
                p10: 1.0,
                median: 1.0,
                p90: 1.0,
                within_2x: 10
            }
        );
        assert_eq!(
            s[1],
            Spread {
                p10: 1.5,
                median: 5.5,
                p90: 9.5,
                within_2x: 1
            }
        );
        assert!(spread(&[]).is_empty());
    }

    #[test]
    fn every_workload_of_a_growth_trace_agrees_and_is_timed() {
        let dir = tempfile::tempdir().unwrap();
        let set = dir.path().join("set");
        crate::growth::write_set(&set, 300, 1).unwrap();
        let path = dir.path().join("db");
        let db = memtrace::Database::open(&path).unwrap();
        let file = set.join("growth-300.json");
        for report in db.import_paths(&[file], &memtrace::ImportOptions::default(), &mut |_| {}) {
            report.result.unwrap();
        }
        drop(db);
        let split = measure(&path, 2, 2).unwrap();
        assert_eq!(split.nodes, 300);
        assert!(split.ops > 0 && split.ops <= split.nodes, "{split:?}");
        assert_eq!(split.rounds.len(), 2);
        for figures in &split.rounds {
            assert_eq!(figures.len(), WORKLOADS.len());
            assert!(figures
                .iter()
                .all(|&(min, median)| min > 0.0 && min <= median));
        }
    }

    #[test]
    fn no_runs_or_no_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(measure(dir.path(), 0, 1), Err(CliError::Usage(_))));
        let missing = dir.path().join("nothing");
        let err = measure(&missing, 1, 1).unwrap_err().to_string();
        assert!(err.contains("no database"), "{err}");
    }
}
