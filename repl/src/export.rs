//! `memtrace export`: one trace as JSON, DOT or Mermaid, or every trace as Parquet tables.

use std::path::PathBuf;
use std::process::ExitCode;

use memtrace::ParquetOptions;

use crate::args::ExportArgs;
use crate::error::{CliError, Result};
use crate::formats::{ExportAs, PartitionBy};
use crate::transfer::{export_parquet_to, export_to, Exported};

/// Exports one trace, or with `--format parquet` every chosen trace into a folder.
pub fn run(db: &std::path::Path, args: ExportArgs) -> Result<ExitCode> {
    let ExportArgs {
        target,
        format,
        labels,
        output,
        traces,
        projects,
        partition,
        force,
    } = args;
    if format == ExportAs::Parquet {
        return export_parquet(
            db,
            target,
            output,
            ParquetOptions {
                traces,
                projects,
                partition: partition.unwrap_or(PartitionBy::None).into(),
                replace: force,
            },
            labels,
        );
    }
    let parquet_only = [
        (!traces.is_empty(), "--trace"),
        (!projects.is_empty(), "--project"),
        (partition.is_some(), "--partition"),
        (force, "--force"),
    ];
    if let Some((_, flag)) = parquet_only.iter().find(|(given, _)| *given) {
        return Err(CliError::Usage(format!(
            "{flag} goes with --format parquet; one trace is exported as it is named"
        )));
    }
    let Some(trace) = target else {
        return Err(CliError::Usage(
            "name the trace to export (its graph id or #ID; see `memtrace traces`)".into(),
        ));
    };
    export(db, &trace, format, labels, output)
}

fn export(
    db: &std::path::Path,
    trace: &str,
    format: ExportAs,
    labels: bool,
    output: Option<PathBuf>,
) -> Result<ExitCode> {
    let what = match (format, labels) {
        (ExportAs::Smartcomment, true) => Exported::Labelled,
        (_, true) => {
            return Err(CliError::Usage(
                "--labels writes a MemTraceBench file; it goes with --format smartcomment".into(),
            ))
        }
        (format, false) => Exported::As(format),
    };
    export_to(&crate::opening::open_read_only(db)?, trace, what, output)?;
    Ok(ExitCode::SUCCESS)
}

fn export_parquet(
    db: &std::path::Path,
    target: Option<String>,
    output: Option<PathBuf>,
    options: ParquetOptions,
    labels: bool,
) -> Result<ExitCode> {
    if labels {
        return Err(CliError::Usage(
            "--labels writes a MemTraceBench file; the Parquet cases table has the labels".into(),
        ));
    }
    let dir = match (target, output) {
        (Some(dir), None) => PathBuf::from(dir),
        (None, Some(dir)) => dir,
        (Some(_), Some(_)) => return Err(CliError::Usage(
            "name the folder once: memtrace export --format parquet DIR (--trace picks a trace)"
                .into(),
        )),
        (None, None) => {
            return Err(CliError::Usage(
                "name the folder to write: memtrace export --format parquet DIR".into(),
            ))
        }
    };
    let db = crate::opening::open_read_only(db)?;
    export_parquet_to(&db, &dir, &options, &mut std::io::stdout())?;
    Ok(ExitCode::SUCCESS)
}
