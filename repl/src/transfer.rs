//! Moving traces in and out of a database from the command line and the
//! shell: import of files and folders with a progress bar, export to a file
//! or standard output, and the bundled sample.

use std::io::Write;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memtrace::engine::Engine;
use memtrace::prelude::*;
use memtrace::{ExportFormat, ImportOptions, Progress};

use crate::error::{io, CliError, Result};
use crate::formats::ExportAs;
use memtrace_table::{visible, visible_lines};

/// The sample export bundled with memtrace (a real smartcomment 0.1.2 recording).
pub const SAMPLE: &str = include_str!("../../tests/fixtures/sample_export.json");

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Imports `paths` into `db` with a progress bar on standard error, writing
/// a line per stored trace and a summary to `out` and each failure to
/// standard error (paths, ids and messages with their control characters
/// shown escaped). Returns (traces stored, files failed).
pub fn import_into(
    db: &Engine,
    paths: &[PathBuf],
    force: bool,
    out: &mut dyn Write,
) -> Result<(usize, usize)> {
    let bar = progress_bar();
    let mut done_before = 0u64;
    let mut current = 0u64;
    let mut name = String::new();
    let reports = db.import_paths(paths, &ImportOptions { force }, &mut |p| match p {
        Progress::Planned { bytes, .. } => bar.set_length(bytes),
        Progress::File { path, bytes } => {
            done_before += current;
            current = bytes;
            bar.set_position(done_before);
            name = visible(&path.display().to_string()).into_owned();
            bar.set_message(name.clone());
        }
        Progress::Storing => bar.set_message(format!("{name} (validated, writing)")),
        Progress::Read(n) => bar.set_position(done_before + n.min(current)),
        Progress::FileDone => bar.set_position(done_before + current),
    });
    bar.finish_and_clear();
    let (mut stored, mut same, mut failed) = (0usize, 0usize, 0usize);
    for r in &reports {
        match &r.result {
            Ok(traces) => {
                for t in traces {
                    if t.unchanged {
                        same += 1;
                        writeln!(
                            out,
                            "already stored {}: trace #{} {} holds the same content; nothing written",
                            visible(&r.path.display().to_string()),
                            t.trace,
                            visible(&t.graph_id)
                        )
                        .map_err(io("standard output"))?;
                        continue;
                    }
                    stored += 1;
                    writeln!(
                        out,
                        "imported {}: trace #{} {} ({} sessions, {} variables, {} ops, {} edges, {} cases)",
                        visible(&r.path.display().to_string()), t.trace, visible(&t.graph_id), t.counts.sessions, t.counts.variables, t.counts.ops, t.counts.edges, t.counts.cases
                    ).map_err(io("standard output"))?;
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: {}", visible_lines(&e.to_string()));
            }
        }
    }
    let skipped = if same > 0 {
        format!(", {same} already stored with the same content")
    } else {
        String::new()
    };
    writeln!(
        out,
        "{stored} trace(s) stored{skipped} from {} file(s); {failed} file(s) failed",
        reports.len() - failed
    )
    .map_err(io("standard output"))?;
    Ok((stored, failed))
}

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exported {
    /// The trace in a format.
    As(ExportAs),
    /// The MemTraceBench file with every failed case and its latest label.
    Labelled,
}

/// Writes a trace of `db` to `output` (beside it first, then renamed) or to
/// standard output.
pub fn export_to(db: &Engine, trace: &str, what: Exported, output: Option<PathBuf>) -> Result<()> {
    let view = db.trace(trace)?;
    let write = |w: &mut dyn Write| -> Result<()> {
        let format =
            match what {
                Exported::As(ExportAs::Smartcomment) => ExportFormat::Smartcomment,
                Exported::As(ExportAs::Dot) => ExportFormat::Dot,
                Exported::As(ExportAs::Mermaid) => ExportFormat::Mermaid,
                Exported::As(ExportAs::Parquet) => return Err(CliError::Usage(
                    "Parquet tables are written to a folder: memtrace export --format parquet DIR"
                        .into(),
                )),
                Exported::Labelled => {
                    // Indented as the plain export is.
                    let doc = db.export_labelled(trace)?;
                    let mut ser = serde_json::Serializer::with_formatter(
                        &mut *w,
                        serde_json::ser::PrettyFormatter::with_indent(b"  "),
                    );
                    serde::Serialize::serialize(&doc, &mut ser)?;
                    w.write_all(b"\n").map_err(io("output"))?;
                    return Ok(());
                }
            };
        view.export(format, w)?;
        Ok(())
    };
    match output {
        Some(path) => {
            // Write beside the target and rename, so a failed export leaves no half file.
            let mut tmp = path.clone().into_os_string();
            tmp.push(".partial");
            let tmp = PathBuf::from(tmp);
            let written = (|| -> Result<()> {
                let file = std::fs::File::create(&tmp).map_err(io(tmp.display()))?;
                let mut w = std::io::BufWriter::new(file);
                write(&mut w)?;
                w.flush().map_err(io(tmp.display()))?;
                std::fs::rename(&tmp, &path).map_err(io(path.display()))
            })();
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            write(&mut w)?;
            w.flush().map_err(io("standard output"))?;
        }
    }
    Ok(())
}

/// Writes the traces `options` selects as Parquet tables in `dir` and
/// prints what was written.
pub fn export_parquet_to(
    db: &Engine,
    dir: &std::path::Path,
    options: &memtrace::ParquetOptions,
    out: &mut dyn Write,
) -> Result<()> {
    let s = memtrace::columnar::export_parquet(db, dir, options)?;
    let rows: Vec<String> = memtrace::columnar::Table::ALL
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                s.rows.get(t.name()).copied().unwrap_or(0),
                t.name()
            )
        })
        .collect();
    writeln!(
        out,
        "{} trace(s) written to {} as Parquet ({} file(s), {}): {}",
        s.traces,
        dir.display(),
        s.files,
        memtrace_table::bytes(s.bytes),
        rows.join(", ")
    )
    .map_err(io("standard output"))
}
