//! Writing the tables: which traces, how they are partitioned into Hive
//! folders, and the output folder that appears whole or not at all.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_schema::SchemaRef;
use memtrace_analysis::prelude::Attribute;
use memtrace_engine::{Engine, TraceInfo};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde::Serialize;

use crate::error::{io, ColumnarError, Result};
use crate::manifest::MANIFEST;
use crate::tables::{without, Table, TraceRecords};

/// How the files of each table are split into folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Partition {
    /// One file per table: `TABLE/part-0.parquet`.
    #[default]
    None,
    /// One folder per trace: `TABLE/trace=ID/part-0.parquet`; the files
    /// leave out the `trace` column, which the folder name carries.
    Trace,
    /// One folder per project: `TABLE/project_id=NAME/part-0.parquet`
    /// (`__HIVE_DEFAULT_PARTITION__` for traces without one); the traces
    /// table's files leave out `project_id`.
    Project,
}

impl Partition {
    /// The partition column, when there is one.
    pub fn column(self) -> Option<&'static str> {
        match self {
            Partition::None => None,
            Partition::Trace => Some("trace"),
            Partition::Project => Some("project_id"),
        }
    }
}

/// What to export, and how.
#[derive(Debug, Clone, Default)]
pub struct ParquetOptions {
    /// Only these traces (graph ids or `#ID`); every trace when empty.
    pub traces: Vec<String>,
    /// Only the traces of these projects (`project_id`); all when empty.
    pub projects: Vec<String>,
    /// How files are split into folders.
    pub partition: Partition,
    /// Replace the folder when it holds an earlier Parquet export (one with
    /// its manifest); any other non-empty folder is refused all the same.
    pub replace: bool,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParquetSummary {
    /// The folder written.
    pub dir: PathBuf,
    /// How it is partitioned.
    pub partition: Partition,
    /// Traces exported.
    pub traces: usize,
    /// Rows written to each table, by table name.
    pub rows: BTreeMap<&'static str, u64>,
    /// Parquet files written.
    pub files: usize,
    /// Bytes of Parquet written.
    pub bytes: u64,
}

/// The manifest written beside the tables.
#[derive(Serialize)]
struct Manifest<'a> {
    /// What wrote the folder.
    written_by: &'static str,
    /// The schema's version (raised when a column changes).
    schema_version: u32,
    partition: Partition,
    traces: usize,
    rows: &'a BTreeMap<&'static str, u64>,
}

/// The version of the tables' schema the manifest records.
pub const SCHEMA_VERSION: u32 = 1;

/// Exports the traces `options` selects from `db` to Parquet tables in
/// `dir`: one folder per table, partitioned as asked, and a manifest.
///
/// Everything is written into a new folder beside `dir` and renamed to
/// `dir` at the end, so `dir` holds a whole export or is left as it was.
/// `dir` may be missing or empty; a folder with files is refused unless
/// `options.replace` is set and it holds an earlier export.
pub fn export_parquet(
    db: &Engine,
    dir: impl AsRef<Path>,
    options: &ParquetOptions,
) -> Result<ParquetSummary> {
    let dir = dir.as_ref();
    let replacing = check_target(dir, options.replace)?;
    let traces = select(db, options)?;
    let tmp = sibling(dir, "partial")?;
    std::fs::create_dir(&tmp).map_err(io(&tmp))?;
    let written = write_all(db, &tmp, &traces, options.partition);
    let summary = match written {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if let Err(e) = commit(&tmp, dir, replacing) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    Ok(ParquetSummary {
        dir: dir.to_path_buf(),
        ..summary
    })
}

/// Checks the output folder; true when it holds an earlier export that is
/// to be replaced.
fn check_target(dir: &Path, replace: bool) -> Result<bool> {
    let shown = || dir.display().to_string();
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io(dir)(e)),
        Ok(m) if !m.is_dir() => return Err(ColumnarError::NotAFolder(shown())),
        Ok(_) => {}
    }
    let empty = std::fs::read_dir(dir).map_err(io(dir))?.next().is_none();
    if empty {
        return Ok(false);
    }
    if !dir.join(MANIFEST).is_file() {
        return Err(if replace {
            ColumnarError::NotAnExport(shown())
        } else {
            ColumnarError::NotEmpty(shown())
        });
    }
    if !replace {
        return Err(ColumnarError::NotEmpty(shown()));
    }
    Ok(true)
}

/// A new path beside `dir`, hidden, for a folder being written or removed.
fn sibling(dir: &Path, what: &str) -> Result<PathBuf> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| ColumnarError::NotAFolder(dir.display().to_string()))?;
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Ok(parent.join(format!(".{name}.{what}-{}-{nanos}", std::process::id())))
}

/// Puts the finished folder `tmp` in the place of `dir`.
fn commit(tmp: &Path, dir: &Path, replacing: bool) -> Result<()> {
    if !replacing {
        // An empty folder is replaced by the rename; a missing one is made.
        if dir.is_dir() {
            std::fs::remove_dir(dir).map_err(io(dir))?;
        }
        return std::fs::rename(tmp, dir).map_err(io(dir));
    }
    let old = sibling(dir, "old")?;
    std::fs::rename(dir, &old).map_err(io(dir))?;
    if let Err(e) = std::fs::rename(tmp, dir) {
        let _ = std::fs::rename(&old, dir);
        return Err(io(dir)(e));
    }
    std::fs::remove_dir_all(&old).map_err(io(&old))
}

/// The traces to export, in id order; unknown traces and projects are
/// errors before anything is written.
fn select(db: &Engine, options: &ParquetOptions) -> Result<Vec<TraceInfo>> {
    let all = db.traces()?;
    let mut wanted: Option<Vec<u32>> = None;
    if !options.traces.is_empty() {
        let mut ids = Vec::new();
        for t in &options.traces {
            ids.push(db.trace(t)?.id());
        }
        wanted = Some(ids);
    }
    for p in &options.projects {
        if !all.iter().any(|t| t.project_id.as_deref() == Some(p)) {
            return Err(ColumnarError::UnknownProject(p.clone()));
        }
    }
    Ok(all
        .into_iter()
        .filter(|t| wanted.as_ref().is_none_or(|w| w.contains(&t.id)))
        .filter(|t| {
            options.projects.is_empty()
                || t.project_id
                    .as_ref()
                    .is_some_and(|p| options.projects.contains(p))
        })
        .collect())
}

/// Reads everything exported of one trace.
fn read_trace(db: &Engine, info: &TraceInfo) -> Result<TraceRecords> {
    let view = db.trace_by_id(info.id)?;
    let selector = format!("#{}", info.id);
    Ok(TraceRecords {
        sessions: view.sessions()?,
        variables: view.variables()?,
        edges: view.edges()?,
        ops: view.ops()?,
        failed: db.failed_cases(Some(&selector))?,
        annotations: view.cases()?,
        verdicts: db.attributions(Some(&selector))?,
        header: view.record().header_json.clone(),
    })
}

/// A Hive folder name's value: bytes other than ASCII letters, digits,
/// `.`, `_` and `-` percent-encoded (as DuckDB, Arrow and Spark decode them).
pub fn hive_value(s: &str) -> String {
    if s.is_empty() {
        return HIVE_NULL.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The folder value Hive readers take for a missing (null) partition value.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// The folder (under each table's) that a trace's rows go to.
fn folder_of(partition: Partition, t: &TraceInfo) -> Option<String> {
    match partition {
        Partition::None => None,
        Partition::Trace => Some(format!("trace={}", t.id)),
        Partition::Project => Some(format!(
            "project_id={}",
            t.project_id
                .as_deref()
                .map_or(HIVE_NULL.to_string(), hive_value)
        )),
    }
}

/// One open file per table, for one partition.
struct Writers {
    files: Vec<(Table, PathBuf, ArrowWriter<File>)>,
}

impl Writers {
    fn open(root: &Path, folder: Option<&str>, partition: Partition) -> Result<Writers> {
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let mut files = Vec::new();
        for table in Table::ALL {
            let mut at = root.join(table.name());
            if let Some(f) = folder {
                at.push(f);
            }
            std::fs::create_dir_all(&at).map_err(io(&at))?;
            let path = at.join("part-0.parquet");
            let file = File::create(&path).map_err(io(&path))?;
            let schema = file_schema(table, partition)?;
            let w = ArrowWriter::try_new(file, schema, Some(props.clone())).map_err(|source| {
                ColumnarError::Parquet {
                    path: path.display().to_string(),
                    source,
                }
            })?;
            files.push((table, path, w));
        }
        Ok(Writers { files })
    }

    fn write(
        &mut self,
        records: &TraceRecords,
        info: &TraceInfo,
        partition: Partition,
        rows: &mut BTreeMap<&'static str, u64>,
    ) -> Result<()> {
        for (table, path, w) in &mut self.files {
            let mut batch = records.batch(*table, info)?;
            if let Some(col) = partition.column() {
                batch = without(&batch, col)?;
            }
            *rows.entry(table.name()).or_default() += batch.num_rows() as u64;
            w.write(&batch).map_err(|source| ColumnarError::Parquet {
                path: path.display().to_string(),
                source,
            })?;
        }
        Ok(())
    }

    /// Closes the files; returns how many and their bytes.
    fn close(self) -> Result<(usize, u64)> {
        let mut bytes = 0;
        let n = self.files.len();
        for (_, path, w) in self.files {
            w.close().map_err(|source| ColumnarError::Parquet {
                path: path.display().to_string(),
                source,
            })?;
            bytes += std::fs::metadata(&path).map_err(io(&path))?.len();
        }
        Ok((n, bytes))
    }
}

/// The schema of a table's files under a partitioning.
fn file_schema(table: Table, partition: Partition) -> Result<SchemaRef> {
    let full = table.schema();
    match partition.column() {
        Some(col) => {
            let empty = arrow_array::RecordBatch::new_empty(full);
            Ok(without(&empty, col)?.schema())
        }
        None => Ok(full),
    }
}

fn write_all(
    db: &Engine,
    root: &Path,
    traces: &[TraceInfo],
    partition: Partition,
) -> Result<ParquetSummary> {
    // Traces grouped by folder, so one partition's files are open at a time.
    let mut groups: BTreeMap<Option<String>, Vec<&TraceInfo>> = BTreeMap::new();
    for t in traces {
        groups.entry(folder_of(partition, t)).or_default().push(t);
    }
    if groups.is_empty() && partition == Partition::None {
        // No trace: the tables are still there, empty, with their schemas.
        groups.insert(None, Vec::new());
    }
    let mut rows: BTreeMap<&'static str, u64> = Table::ALL.iter().map(|t| (t.name(), 0)).collect();
    let (mut files, mut bytes) = (0, 0);
    for (folder, group) in &groups {
        let mut writers = Writers::open(root, folder.as_deref(), partition)?;
        for info in group {
            let records = read_trace(db, info)?;
            writers.write(&records, info, partition, &mut rows)?;
        }
        let (n, b) = writers.close()?;
        files += n;
        bytes += b;
    }
    let manifest = Manifest {
        written_by: concat!("memtrace ", env!("CARGO_PKG_VERSION")),
        schema_version: SCHEMA_VERSION,
        partition,
        traces: traces.len(),
        rows: &rows,
    };
    let path = root.join(MANIFEST);
    let text = serde_json::to_string_pretty(&manifest)? + "\n";
    std::fs::write(&path, text).map_err(io(&path))?;
    Ok(ParquetSummary {
        dir: root.to_path_buf(),
        partition,
        traces: traces.len(),
        rows,
        files,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hive_values_encode_what_a_folder_name_cannot_hold() {
        assert_eq!(hive_value("mem0"), "mem0");
        assert_eq!(hive_value("a-mem_2.1"), "a-mem_2.1");
        assert_eq!(hive_value("a/b=c d"), "a%2Fb%3Dc%20d");
        assert_eq!(hive_value("é"), "%C3%A9");
        assert_eq!(hive_value(""), HIVE_NULL);
    }

    #[test]
    fn the_target_folder_is_checked_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("out");
        assert!(!check_target(&missing, false).unwrap());
        std::fs::create_dir(&missing).unwrap();
        assert!(!check_target(&missing, false).unwrap());
        std::fs::write(missing.join("notes.txt"), "mine").unwrap();
        assert!(matches!(
            check_target(&missing, false),
            Err(ColumnarError::NotEmpty(_))
        ));
        assert!(matches!(
            check_target(&missing, true),
            Err(ColumnarError::NotAnExport(_))
        ));
        std::fs::write(missing.join(MANIFEST), "{}").unwrap();
        assert!(matches!(
            check_target(&missing, false),
            Err(ColumnarError::NotEmpty(_))
        ));
        assert!(check_target(&missing, true).unwrap());
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            check_target(&file, true),
            Err(ColumnarError::NotAFolder(_))
        ));
    }

    #[test]
    fn a_finished_folder_replaces_an_earlier_export_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("old.parquet"), "old").unwrap();
        let new = tmp.path().join("new");
        std::fs::create_dir(&new).unwrap();
        std::fs::write(new.join("fresh.parquet"), "new").unwrap();
        commit(&new, &dir, true).unwrap();
        assert!(dir.join("fresh.parquet").is_file());
        assert!(!dir.join("old.parquet").exists());
        // Nothing is left beside it.
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }
}
