//! DuckDB as a second peer of the query benchmark, when Python's `duckdb`
//! module is installed (`pip install duckdb`; never required). The suite
//! writes its SQLite copy of the graph as CSV, and `bench/peers/duckdb_peer.py`
//! (embedded in this binary and written to the working folder) loads it into
//! a DuckDB file and times the same workloads by the same protocol
//! ([`crate::protocol`]), printing JSON that becomes the same figures.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde::Deserialize;

use crate::cold::Eviction;
use crate::error::{io, CliError, Result};
use crate::measure::sqlite_err;
use crate::protocol::{Figure, Measured, Runs, Workload, SPREAD_PER_TRACE};

/// The peer's script.
const SCRIPT: &str = include_str!("../peers/duckdb_peer.py");

/// The Python interpreter that runs the peer.
const PYTHON: &str = "python3";

/// The DuckDB peer: its script, written to the working folder.
#[derive(Debug)]
pub struct DuckPeer {
    script: PathBuf,
    /// DuckDB's version.
    pub version: String,
    /// Whether recursive CTEs can use `USING KEY`.
    pub using_key: bool,
}

#[derive(Deserialize)]
struct Check {
    version: String,
    using_key: bool,
}

#[derive(Deserialize)]
struct RawFigure {
    name: String,
    us: Vec<f64>,
    rows: u64,
    digest: u64,
}

#[derive(Deserialize)]
struct RawQuery {
    peak_rss_kib: u64,
    units: u64,
    starts_digest: u64,
    eviction: Eviction,
    note: String,
    figures: Vec<RawFigure>,
}

impl DuckPeer {
    /// The peer, or why it cannot run (no Python, no `duckdb` module).
    pub fn find(dir: &Path) -> std::result::Result<DuckPeer, String> {
        let probe = Command::new(PYTHON)
            .args(["-c", "import duckdb"])
            .output()
            .map_err(|e| format!("{PYTHON} could not be run ({e})"))?;
        if !probe.status.success() {
            let err = String::from_utf8_lossy(&probe.stderr);
            let last = err.lines().last().unwrap_or("import failed").trim();
            return Err(format!("{PYTHON} -c 'import duckdb' failed: {last}"));
        }
        let script = dir.join("duckdb_peer.py");
        std::fs::write(&script, SCRIPT).map_err(|e| format!("{}: {e}", script.display()))?;
        let out = run_script(&script, &["check"]).map_err(|e| e.to_string())?;
        let c: Check = serde_json::from_slice(&out).map_err(|e| e.to_string())?;
        Ok(DuckPeer {
            script,
            version: c.version,
            using_key: c.using_key,
        })
    }

    /// Loads the CSV files in `csv` into a new DuckDB file at `db`.
    pub fn load(&self, csv: &Path, db: &Path) -> Result<Measured> {
        let _ = std::fs::remove_file(db);
        let out = run_script(
            &self.script,
            &[
                "load",
                "--csv",
                &csv.display().to_string(),
                "--db",
                &db.display().to_string(),
            ],
        )?;
        Ok(serde_json::from_slice(&out)?)
    }

    /// Times `workloads` on the DuckDB file at `db`.
    pub fn query(&self, db: &Path, workloads: &[Workload], runs: Runs) -> Result<Measured> {
        let list = serde_json::to_string(workloads)?;
        let out = run_script(
            &self.script,
            &[
                "query",
                "--db",
                &db.display().to_string(),
                "--workloads",
                &list,
                "--starts",
                &runs.starts.to_string(),
                "--cold",
                &runs.cold.to_string(),
                "--warm",
                &runs.warm.to_string(),
                "--spread",
                &SPREAD_PER_TRACE.to_string(),
            ],
        )?;
        let raw: RawQuery = serde_json::from_slice(&out)?;
        Ok(Measured {
            peak_rss_kib: raw.peak_rss_kib,
            units: raw.units,
            starts_digest: raw.starts_digest,
            eviction: raw.eviction,
            note: raw.note,
            figures: raw
                .figures
                .into_iter()
                .map(|f| Figure::from_samples(&f.name, f.us, f.rows, f.digest))
                .collect(),
            ..Measured::default()
        })
    }
}

fn run_script(script: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new(PYTHON)
        .arg(script)
        .args(args)
        .output()
        .map_err(io(format!("{PYTHON} {}", script.display())))?;
    if !out.status.success() {
        return Err(CliError::Bench(format!(
            "DuckDB peer ({}) failed: {}",
            args.first().unwrap_or(&""),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out.stdout)
}

/// Writes the tables of the SQLite copy at `sqlite` as `nodes.csv`,
/// `edges.csv` and `ops.csv` in `out` (header line; text quoted, NULL empty).
pub fn write_csv(sqlite: &Path, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).map_err(io(out.display()))?;
    let conn = Connection::open(sqlite).map_err(sqlite_err)?;
    for (table, cols) in [
        ("nodes", "trace, id, class, full_node_id"),
        ("edges", "trace, src, dst, op, kind"),
        ("ops", "trace, op_id, name, kind"),
    ] {
        let path = out.join(format!("{table}.csv"));
        let file = std::fs::File::create(&path).map_err(io(path.display()))?;
        let mut w = BufWriter::new(file);
        let werr = io(path.display());
        let mut line = cols.replace(' ', "");
        line.push('\n');
        let mut st = conn
            .prepare(&format!("SELECT {cols} FROM {table}"))
            .map_err(sqlite_err)?;
        let n = st.column_count();
        let mut rows = st.query([]).map_err(sqlite_err)?;
        while let Some(r) = rows.next().map_err(sqlite_err)? {
            for i in 0..n {
                if i > 0 {
                    line.push(',');
                }
                match r.get_ref(i).map_err(sqlite_err)? {
                    ValueRef::Null => {}
                    ValueRef::Integer(v) => line.push_str(&v.to_string()),
                    ValueRef::Real(v) => line.push_str(&v.to_string()),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        line.push('"');
                        line.push_str(&String::from_utf8_lossy(t).replace('"', "\"\""));
                        line.push('"');
                    }
                }
            }
            line.push('\n');
            if line.len() > 1 << 16 {
                w.write_all(line.as_bytes()).map_err(io(path.display()))?;
                line.clear();
            }
        }
        w.write_all(line.as_bytes()).map_err(io(path.display()))?;
        w.flush().map_err(werr)?;
    }
    Ok(())
}
