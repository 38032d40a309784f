//! The Parquet export through the embedding API: the tables hold the
//! database's own counts (read back with the parquet crate), verdicts only
//! where some are stored, cases found from judge ops as well as from
//! annotations, an empty database gives empty tables with their schemas,
//! and an unknown trace is an error that writes nothing.

use std::fs::File;
use std::path::{Path, PathBuf};

use memtrace::attrib::{AttributeRequest, Method};
use memtrace::columnar::{Table, MANIFEST};
use memtrace::prelude::*;
use memtrace::{
    Cancel, ColumnarError, Database, EngineError, ImportOptions, InputFormat, ParquetOptions,
    Partition,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn import(db: &Database, system: &str) {
    let path = format!(
        "{}/tests/fixtures/devsplit/{system}-locomo_1.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    db.import_reader(
        text.as_bytes(),
        InputFormat::Json,
        &path,
        &ImportOptions::default(),
    )
    .unwrap();
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Rows in every Parquet file of a table's folder, and the column names of
/// its first file.
fn rows(root: &Path, table: Table) -> (u64, Vec<String>) {
    let mut n = 0;
    let mut names = Vec::new();
    for f in files(&root.join(table.name())) {
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(&f).unwrap()).unwrap();
        n += b.metadata().file_metadata().num_rows() as u64;
        if names.is_empty() {
            names = b
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
        }
    }
    (n, names)
}

#[test]
fn the_tables_hold_what_the_database_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Database::open(tmp.path().join("t.db")).unwrap();
    import(&db, "mem0");
    import(&db, "rag");
    // Verdicts for the first trace only.
    let req = AttributeRequest {
        trace: Some("#1"),
        cases: None,
        method: Method::Evidence,
        setting: Default::default(),
        search: Default::default(),
    };
    let verdicts = db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap();
    let stored = db.store_verdicts(&verdicts, "test").unwrap();
    assert!(stored > 0);

    let out = tmp.path().join("pq");
    let options = ParquetOptions {
        partition: Partition::Trace,
        ..Default::default()
    };
    let summary = db.export_parquet(&out, &options).unwrap();
    let stats = db.stats().unwrap();
    let want = [
        (Table::Traces, stats.traces),
        (Table::Sessions, stats.sessions),
        (Table::Nodes, stats.variables),
        (Table::Edges, stats.edges),
        (Table::Ops, stats.ops),
        (Table::Cases, db.failed_cases(None).unwrap().len() as u64),
        (Table::Verdicts, stored as u64),
    ];
    for (table, n) in want {
        assert_eq!(rows(&out, table).0, n, "{table:?}");
        assert_eq!(summary.rows[table.name()], n, "{table:?}");
    }
    assert_eq!(summary.traces, 2);
    assert_eq!(summary.files, 14, "7 tables x 2 traces");
    // The second trace has an empty verdicts file, with the columns.
    let second = out.join("verdicts/trace=2/part-0.parquet");
    let b = ParquetRecordBatchReaderBuilder::try_new(File::open(second).unwrap()).unwrap();
    assert_eq!(b.metadata().file_metadata().num_rows(), 0);
    assert!(b.schema().field_with_name("error_type").is_ok());
    assert!(out.join(MANIFEST).is_file());
}

#[test]
fn an_empty_database_gives_empty_tables_and_an_unknown_trace_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Database::open(tmp.path().join("t.db")).unwrap();
    let out = tmp.path().join("pq");
    db.export_parquet(&out, &ParquetOptions::default()).unwrap();
    for table in Table::ALL {
        let (n, names) = rows(&out, table);
        assert_eq!(n, 0, "{table:?}");
        assert_eq!(names[..2], ["trace", "graph_id"], "{table:?}");
        assert_eq!(
            names.len(),
            table.schema().fields().len(),
            "{table:?}: every column is in the file"
        );
    }

    import(&db, "evermemos");
    let elsewhere = tmp.path().join("other");
    let err = db
        .export_parquet(
            &elsewhere,
            &ParquetOptions {
                traces: vec!["graph-none".into()],
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(err, ColumnarError::Engine(EngineError::UnknownTrace(ref t)) if t == "graph-none"),
        "{err}"
    );
    assert!(!elsewhere.exists());
    // The earlier export is not replaced without being asked to.
    let err = db
        .export_parquet(&out, &ParquetOptions::default())
        .unwrap_err();
    assert!(matches!(err, ColumnarError::NotEmpty(_)), "{err}");
    assert_eq!(rows(&out, Table::Traces).0, 0);
    let replaced = db
        .export_parquet(
            &out,
            &ParquetOptions {
                replace: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(replaced.rows["traces"], 1);
    assert_eq!(rows(&out, Table::Traces).0, 1);
    assert_eq!(rows(&out, Table::Cases).0, 10, "evermemos has 10 cases");
}

#[test]
fn cases_from_judge_ops_are_rows_too_without_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Database::open(tmp.path().join("t.db")).unwrap();
    // The Mem0 trace without its annotations: its failed cases are then the
    // llm-judge ops that scored 0.
    let path = format!(
        "{}/tests/fixtures/devsplit/mem0-locomo_1.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let data = doc["data"].as_object_mut().unwrap();
    assert!(data.remove("annotations").is_some());
    db.import_reader(
        doc.to_string().as_bytes(),
        InputFormat::Json,
        "unlabelled",
        &ImportOptions::default(),
    )
    .unwrap();
    let failed = db.failed_cases(None).unwrap();
    assert!(!failed.is_empty());

    let out = tmp.path().join("pq");
    db.export_parquet(&out, &ParquetOptions::default()).unwrap();
    let file = File::open(out.join("cases/part-0.parquet")).unwrap();
    let batches: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    let column = |name: &str| -> Vec<Option<String>> {
        use arrow_array::Array;
        let mut out = Vec::new();
        for b in &batches {
            let a = b.column_by_name(name).unwrap();
            let a = a
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap();
            out.extend((0..a.len()).map(|i| a.is_valid(i).then(|| a.value(i).to_string())));
        }
        out
    };
    let origins = column("origin");
    assert_eq!(origins.len(), failed.len());
    assert!(
        origins.iter().all(|o| o.as_deref() == Some("judge")),
        "{origins:?}"
    );
    let judges = column("judge_op_id");
    assert!(
        judges
            .iter()
            .all(|j| j.as_deref().is_some_and(|j| j.starts_with("op-"))),
        "{judges:?}"
    );
    assert!(column("final_error_type").iter().all(Option::is_none));
    let names: Vec<Option<String>> = failed.iter().map(|c| Some(c.id.clone())).collect();
    assert_eq!(column("case_id"), names);
}
