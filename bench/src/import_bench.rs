//! Import beside raw RocksDB batched puts of the same bytes: measured figures beside a peer measured in the same run.
//! Each measured step runs in a child process so that its peak resident
//! memory is its own.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, ExitCode};
use std::time::Instant;

use crate::peer::RawPeer;
use memtrace::gen::synth::{write_export, SynthSpec};
use memtrace::{Database, ImportOptions};
use serde::{Deserialize, Serialize};

use crate::error::{io, CliError, Result};
use crate::measure::peak_rss_kib;
use memtrace_table as table;

/// What one step measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    seconds: f64,
    /// The child process from its start to its exit (opening, importing,
    /// flushing and closing), measured by the parent.
    #[serde(default)]
    process_seconds: f64,
    peak_rss_kib: u64,
    disk_bytes: u64,
    records: u64,
}

fn step(which: &str, file: &Path, db: &Path, records: u64) -> Result<StepResult> {
    match which {
        "memtrace" => {
            let start = Instant::now();
            let database = Database::open(db)?;
            // As `memtrace import FILE` imports it.
            let reports = database.import_paths(
                &[file.to_path_buf()],
                &ImportOptions::default(),
                &mut |_| {},
            );
            let seconds = start.elapsed().as_secs_f64();
            let t = match reports.into_iter().next().map(|r| r.result) {
                Some(Ok(t)) => t,
                Some(Err(e)) => return Err(e.into()),
                None => return Err(CliError::Bench("the import read no file".into())),
            };
            let c = t[0].counts;
            database.flush()?;
            drop(database);
            Ok(StepResult {
                seconds,
                process_seconds: 0.0,
                peak_rss_kib: peak_rss_kib(),
                disk_bytes: memtrace_storage::dir_bytes(db).map_err(memtrace::EngineError::from)?,
                records: (c.sessions + c.variables + c.ops + c.edges) as u64,
            })
        }
        "raw" => {
            let start = Instant::now();
            let bytes = std::fs::read(file).map_err(io(file.display()))?;
            let per = (bytes.len() as u64 / records.max(1)).max(1) as usize;
            let peer = RawPeer::open(db).map_err(memtrace::EngineError::from)?;
            let n = peer
                .put_all(bytes.chunks(per), usize::MAX)
                .map_err(memtrace::EngineError::from)?;
            let seconds = start.elapsed().as_secs_f64();
            peer.flush().map_err(memtrace::EngineError::from)?;
            drop(peer);
            Ok(StepResult {
                seconds,
                process_seconds: 0.0,
                peak_rss_kib: peak_rss_kib(),
                disk_bytes: memtrace_storage::dir_bytes(db).map_err(memtrace::EngineError::from)?,
                records: n,
            })
        }
        other => Err(CliError::Bench(format!("unknown step {other}"))),
    }
}

fn child(which: &str, file: &Path, db: &Path, records: u64) -> Result<StepResult> {
    let exe = std::env::current_exe().map_err(io("current executable"))?;
    let mut cmd = Process::new(exe);
    cmd.args(["step", which])
        .arg(file)
        .arg(db)
        .args(["--records", &records.to_string()]);
    timed(which, cmd)
}

/// Runs a step's process; its result, with the time from its start to its exit.
fn timed(which: &str, mut cmd: Process) -> Result<StepResult> {
    let start = Instant::now();
    let out = cmd.output().map_err(io("benchmark child"))?;
    let process_seconds = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(CliError::Bench(format!(
            "{which} step failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let mut r: StepResult = serde_json::from_slice(&out.stdout)?;
    r.process_seconds = process_seconds;
    Ok(r)
}

/// smartcomment's own import of an export (`ExecNetwork.import_graph` of
/// the parsed JSON, in memory: it stores nothing), as its users run it.
const SMARTCOMMENT_IMPORT: &str = r#"
import json, resource, sys, time
start = time.perf_counter()
from smartcomment.runtime.network import ExecNetwork
with open(sys.argv[1], encoding="utf-8") as f:
    net = ExecNetwork.import_graph(json.load(f))
seconds = time.perf_counter() - start
print(json.dumps({
    "seconds": seconds,
    "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "disk_bytes": 0,
    "records": net.node_count + net.edge_count,
}))
"#;

/// Whether `python` can import smartcomment.
fn has_smartcomment(python: &Path) -> bool {
    Process::new(python)
        .args(["-c", "import smartcomment"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn median(mut v: Vec<StepResult>) -> StepResult {
    v.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    v[v.len() / 2].clone()
}

/// Which layouts of the export `import` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Layouts {
    /// No whitespace between tokens.
    Compact,
    /// Two spaces a level, as Python's `json.dump(..., indent=2)` writes.
    Indented,
    /// Compact, then indented.
    Both,
}

impl Layouts {
    /// Whether the indented layout is measured.
    fn indented(self) -> bool {
        self != Layouts::Compact
    }

    /// Whether the compact layout is measured.
    fn compact(self) -> bool {
        self != Layouts::Indented
    }
}

/// Writes the JSON text `compact` (without whitespace between tokens, as
/// [`write_export`] writes it) to `out` with two spaces a level, as
/// Python's `json.dump(obj, f, indent=2)` writes it: a member or item a
/// line, `": "` after a key, an empty list or object as `[]` or `{}`.
pub fn indent_json(compact: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    let line = |out: &mut dyn std::io::Write, depth: usize| -> std::io::Result<()> {
        out.write_all(b"\n")?;
        for _ in 0..depth {
            out.write_all(b"  ")?;
        }
        Ok(())
    };
    let (mut depth, mut i) = (0usize, 0usize);
    while let Some(&c) = compact.get(i) {
        match c {
            b'"' => {
                // The string, through its closing quote (an escaped quote
                // or backslash is stepped over).
                let mut j = i + 1;
                while let Some(&d) = compact.get(j) {
                    j += if d == b'\\' { 2 } else { 1 };
                    if d == b'"' {
                        break;
                    }
                }
                let end = j.min(compact.len());
                out.write_all(&compact[i..end])?;
                i = end;
                continue;
            }
            b'{' | b'[' => {
                out.write_all(&[c])?;
                if matches!(compact.get(i + 1), Some(b'}' | b']')) {
                    out.write_all(&compact[i + 1..i + 2])?;
                    i += 2;
                    continue;
                }
                depth += 1;
                line(out, depth)?;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                line(out, depth)?;
                out.write_all(&[c])?;
            }
            b',' => {
                out.write_all(b",")?;
                line(out, depth)?;
            }
            b':' => out.write_all(b": ")?,
            _ => out.write_all(&[c])?,
        }
        i += 1;
    }
    Ok(())
}

/// Imports a generated export of the given size, in each layout asked
/// for, beside raw RocksDB batched puts of the same bytes (and
/// smartcomment's own import when `python` has it), each step in a child
/// process; prints the medians.
pub fn run(
    variables: usize,
    edges: usize,
    sessions: usize,
    runs: usize,
    dir: Option<PathBuf>,
    python: &Path,
    layouts: Layouts,
) -> Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!("warning: this is a debug build; figures mean little (use cargo run --release)");
    }
    let dir = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("memtrace-bench-{}", std::process::id()))
    });
    std::fs::create_dir_all(&dir).map_err(io(dir.display()))?;
    let file = dir.join("export.json");
    let spec = SynthSpec {
        graph_id: "bench".into(),
        variables,
        edges,
        sessions,
        seed: 42,
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).map_err(io(file.display()))?);
    let counts = write_export(&spec, &mut w).map_err(io(file.display()))?;
    std::io::Write::flush(&mut w).map_err(io(file.display()))?;
    drop(w);
    let mut files = Vec::new();
    if layouts.compact() {
        files.push(("compact", file.clone()));
    }
    if layouts.indented() {
        let indented = dir.join("export-indented.json");
        let compact = std::fs::read(&file).map_err(io(file.display()))?;
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(&indented).map_err(io(indented.display()))?,
        );
        indent_json(&compact, &mut w).map_err(io(indented.display()))?;
        std::io::Write::flush(&mut w).map_err(io(indented.display()))?;
        drop(w);
        files.push(("indented", indented));
    }
    eprintln!(
        "generated an export of {} variables, {} edges, {} ops, {} sessions",
        counts.variables, counts.edges, counts.ops, counts.sessions
    );
    let smartcomment = has_smartcomment(python);
    if !smartcomment {
        eprintln!(
            "note: {} cannot import smartcomment; its own import is not measured (pass --python)",
            python.display()
        );
    }
    for (layout, file) in &files {
        let size = std::fs::metadata(file).map_err(io(file.display()))?.len();
        measure_layout(
            layout,
            file,
            size,
            &counts,
            runs,
            smartcomment.then_some(python),
        )?;
        if *layout == "indented" {
            let _ = std::fs::remove_file(file);
        }
    }
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir(&dir);
    Ok(ExitCode::SUCCESS)
}

/// Measures the import of the export at `file` (`size` bytes, written in
/// `layout`), `runs` times each: memtrace, the raw puts, and
/// smartcomment's own import when `python` is given; prints the medians.
fn measure_layout(
    layout: &str,
    file: &Path,
    size: u64,
    counts: &memtrace::gen::synth::SynthCounts,
    runs: usize,
    python: Option<&Path>,
) -> Result<()> {
    let records = (counts.sessions + counts.variables + counts.ops + counts.edges) as u64;
    eprintln!(
        "{layout} export: {} ({})",
        file.display(),
        table::bytes(size)
    );
    let (mut ours, mut raw, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    let dir = file.parent().unwrap_or(Path::new("."));
    for i in 0..runs.max(1) {
        for (which, out) in [("memtrace", &mut ours), ("raw", &mut raw)] {
            let db = dir.join(format!("{which}-{i}.db"));
            let _ = std::fs::remove_dir_all(&db);
            let r = child(which, file, &db, records)?;
            eprintln!(
                "run {}: {which} {:.2} s (process {:.2} s)",
                i + 1,
                r.seconds,
                r.process_seconds
            );
            out.push(r);
            let _ = std::fs::remove_dir_all(&db);
        }
        if let Some(python) = python {
            let mut cmd = Process::new(python);
            cmd.args(["-c", SMARTCOMMENT_IMPORT]).arg(file);
            let r = timed("smartcomment", cmd)?;
            let expected = (counts.variables + counts.edges) as u64;
            if r.records != expected {
                return Err(CliError::Bench(format!(
                    "smartcomment read {} nodes and edges, the export holds {expected}",
                    r.records
                )));
            }
            eprintln!(
                "run {}: smartcomment {:.2} s (process {:.2} s)",
                i + 1,
                r.seconds,
                r.process_seconds
            );
            theirs.push(r);
        }
    }
    let (ours, raw) = (median(ours), median(raw));
    let theirs = (!theirs.is_empty()).then(|| median(theirs));
    let mb = size as f64 / 1e6;
    let row = |name: &str, r: &StepResult| {
        vec![
            name.to_string(),
            format!("{:.2}", r.seconds),
            format!("{:.2}", r.process_seconds),
            format!("{:.0}", records as f64 / r.seconds),
            format!("{:.1}", mb / r.seconds),
            table::bytes(r.peak_rss_kib * 1024),
            table::bytes(r.disk_bytes),
        ]
    };
    println!("import of a generated export, {layout}: {} variables, {} edges, {} ops, {} sessions, {} of JSON; median of {} runs", counts.variables, counts.edges, counts.ops, counts.sessions, table::bytes(size), runs.max(1));
    println!();
    println!("| step | seconds | whole process, seconds | records/s | MB/s | peak RSS | on disk |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut rows = vec![
        row("memtrace import (parse, validate, index, one batch)", &ours),
        row("raw RocksDB batched puts of the same bytes", &raw),
    ];
    if let Some(t) = &theirs {
        rows.push(row(
            "smartcomment's own import (ExecNetwork.import_graph, in memory)",
            t,
        ));
    }
    for r in rows {
        println!("| {} |", r.join(" | "));
    }
    println!();
    println!(
        "memtrace import takes {:.2}x the time of the raw puts ({:.0}%); whole processes {:.2}x",
        ours.seconds / raw.seconds,
        100.0 * raw.seconds / ours.seconds,
        ours.process_seconds / raw.process_seconds
    );
    if let Some(t) = &theirs {
        println!(
            "smartcomment's import takes {:.1}x the time of memtrace's; whole processes {:.1}x",
            t.seconds / ours.seconds,
            t.process_seconds / ours.process_seconds
        );
    }
    println!();
    Ok(())
}

/// One measured step, in this (child) process: prints what it measured as JSON.
pub fn run_step(which: &str, file: &Path, db: &Path, records: u64) -> Result<ExitCode> {
    let r = step(which, file, db, records)?;
    println!("{}", serde_json::to_string(&r)?);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_indented_export_is_what_a_pretty_writer_writes_and_reads_the_same() {
        let spec = SynthSpec {
            graph_id: "g \"quoted\" naïve".into(),
            variables: 60,
            edges: 90,
            sessions: 3,
            seed: 7,
        };
        let mut compact = Vec::new();
        write_export(&spec, &mut compact).unwrap();
        let mut indented = Vec::new();
        indent_json(&compact, &mut indented).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&compact).unwrap();
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        assert_eq!(String::from_utf8(indented.clone()).unwrap(), pretty);
        let again: serde_json::Value = serde_json::from_slice(&indented).unwrap();
        assert_eq!(again, value);
        // Empty lists and objects stay on their line.
        let mut out = Vec::new();
        indent_json(br#"{"a":[],"b":{},"c":[{"d":"x,y:[z]"}]}"#, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    {\n      \"d\": \"x,y:[z]\"\n    }\n  ]\n}"
        );
    }
}
