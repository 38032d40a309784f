//! The partition functions against the database's own analyses of the same
//! traces, imported the ordinary way.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, BinaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use memtrace_analysis::attrib::AttributeRequest;
use memtrace_analysis::patterns::RunOptions;
use memtrace_analysis::prelude::{Attribute, Patterns};
use memtrace_engine::{to_json, Cancel, EngineError, ImportOptions, InputFormat};

use super::*;
use crate::Table;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(rel)
}

/// Two labelled MemTraceBench traces, an OTLP request and a smartcomment export.
const GOOD: [&str; 4] = [
    "devsplit/rag-locomo_1.json",
    "devsplit/long_context-locomo_1.json",
    "otlp/rag_session.json",
    "sample_export.json",
];

/// A batch of files as Spark's binaryFile source reads them: path and content.
fn files_batch(files: &[&str]) -> RecordBatch {
    let paths: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    let contents: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(fixture(f)).unwrap())
        .collect();
    let schema = Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("content", DataType::Binary, true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(StringArray::from(paths)),
            Arc::new(BinaryArray::from_iter_values(contents)),
        ],
    )
    .unwrap()
}

/// The same files imported into a database the ordinary way, one at a time.
fn reference(files: &[&str]) -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let db = memtrace_analysis::open(dir.path().join("db")).unwrap();
    for f in files {
        let bytes = std::fs::read(fixture(f)).unwrap();
        db.import_reader(
            bytes.as_slice(),
            InputFormat::Json,
            f,
            &ImportOptions::default(),
        )
        .unwrap();
    }
    (dir, db)
}

fn evidence() -> Job {
    Job::Verdicts {
        method: Method::Evidence,
        setting: Setting::Benchmark,
        search: Search::Sparse,
    }
}

fn text(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let a = b.column_by_name(col).unwrap().as_string::<i32>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
        .collect()
}

fn opts() -> PartitionOptions {
    PartitionOptions::default()
}

#[test]
fn verdicts_equal_the_databases_own_row_for_row() {
    let batch = files_batch(&GOOD);
    let out = run_batch(&batch, &evidence(), &opts(), &Cancel::new()).unwrap();
    assert_eq!(out.schema(), Output::Verdicts.schema());
    let (_dir, db) = reference(&GOOD);
    let want = db
        .attribute(
            &AttributeRequest {
                trace: None,
                cases: None,
                method: Method::Evidence,
                setting: Setting::Benchmark,
                search: Search::Sparse,
            },
            &Cancel::new(),
            &mut |_| {},
        )
        .unwrap();
    assert!(want.len() > 20, "the fixtures have failed cases");
    assert_eq!(out.num_rows(), want.len());
    let graph = text(&out, "graph_id");
    let case = text(&out, "case_id");
    let error_type = text(&out, "error_type");
    let op = text(&out, "op_id");
    let reason = text(&out, "reason");
    let setting = text(&out, "setting");
    let confidence = out
        .column_by_name("confidence")
        .unwrap()
        .as_primitive::<Float64Type>();
    for (i, v) in want.iter().enumerate() {
        assert_eq!(graph[i].as_deref(), Some(v.graph_id.as_str()), "row {i}");
        assert_eq!(case[i].as_deref(), Some(v.case.as_str()), "row {i}");
        assert_eq!(
            error_type[i].as_deref(),
            v.error_type.map(|e| e.name()),
            "row {i}"
        );
        assert_eq!(op[i], v.op_id, "row {i}");
        assert_eq!(reason[i].as_deref(), Some(v.reason.as_str()), "row {i}");
        assert_eq!(confidence.value(i), v.confidence, "row {i}");
        assert_eq!(setting[i], v.setting.map(|s| s.to_string()), "row {i}");
    }
    // Each row's prediction is its case's, and the op kind is the op's category.
    let cases = db.failed_cases(None).unwrap();
    let prediction = text(&out, "prediction");
    for (i, c) in cases.iter().enumerate() {
        assert_eq!(
            prediction[i].as_deref(),
            Some(c.prediction.as_str()),
            "row {i}"
        );
    }
    let kinds = text(&out, "op_kind");
    for (i, v) in want.iter().enumerate() {
        let Some(op) = &v.op_id else { continue };
        let view = db.trace(&v.graph_id).unwrap();
        assert_eq!(kinds[i], view.op(op).unwrap().unwrap().category, "row {i}");
    }
    assert!(text(&out, "error").iter().all(Option::is_none));
    assert!(text(&out, "source")
        .iter()
        .all(|s| GOOD.contains(&s.as_deref().unwrap())));
}

#[test]
fn a_malformed_row_gives_an_error_row_naming_it_and_the_others_their_verdicts() {
    let files = [
        "devsplit/rag-locomo_1.json",
        "malformed/truncated.json",
        "malformed/non_utf8.json",
        "sample_export.json",
    ];
    let out = run_batch(&files_batch(&files), &evidence(), &opts(), &Cancel::new()).unwrap();
    let source = text(&out, "source");
    let error = text(&out, "error");
    let errors: Vec<usize> = (0..out.num_rows())
        .filter(|&i| error[i].is_some())
        .collect();
    assert_eq!(errors.len(), 2, "{error:?}");
    for (i, name) in errors
        .iter()
        .zip(["malformed/truncated.json", "malformed/non_utf8.json"])
    {
        assert_eq!(source[*i].as_deref(), Some(name));
        let e = error[*i].as_deref().unwrap();
        assert!(e.contains(name), "{e}");
        assert!(text(&out, "case_id")[*i].is_none());
    }
    // The error rows stand where their rows stood, between the others' verdicts.
    let good = (0..out.num_rows()).filter(|i| !errors.contains(i));
    let (_dir, db) = reference(&["devsplit/rag-locomo_1.json", "sample_export.json"]);
    let want = db.failed_cases(None).unwrap();
    assert_eq!(good.clone().count(), want.len());
    let case = text(&out, "case_id");
    for (i, c) in good.zip(&want) {
        assert_eq!(case[i].as_deref(), Some(c.id.as_str()));
    }
    let first_rag = source.iter().position(|s| s.as_deref() == Some(files[0]));
    assert_eq!(first_rag, Some(0));
    assert_eq!(errors[1], errors[0] + 1);
}

#[test]
fn the_same_batch_gives_the_same_rows_every_time() {
    let batch = files_batch(&GOOD[..2]);
    let a = run_batch(&batch, &evidence(), &opts(), &Cancel::new()).unwrap();
    let b = run_batch(&batch, &evidence(), &opts(), &Cancel::new()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn pattern_hits_equal_a_pattern_run_over_the_same_traces() {
    let specs = pattern_specs(&[], &[], &[]).unwrap();
    assert_eq!(specs.len(), BUILTINS.len());
    let job = Job::Patterns(specs.clone());
    let files = [
        "devsplit/rag-locomo_1.json",
        "otlp/rag_session.json",
        "sample_export.json",
    ];
    let out = run_batch(&files_batch(&files), &job, &opts(), &Cancel::new()).unwrap();
    let (_dir, db) = reference(&files);
    let run = RunOptions {
        over: None,
        examples: usize::MAX,
    };
    let report = db
        .run_patterns(&specs, &run, &Cancel::new(), &|_, _| {})
        .unwrap();
    let mut want: Vec<(String, String, String)> = Vec::new();
    for p in &report.patterns {
        for ex in &p.examples {
            let row: serde_json::Map<String, serde_json::Value> = p
                .columns
                .iter()
                .cloned()
                .zip(ex.row.iter().map(to_json))
                .collect();
            want.push((
                ex.graph_id.clone(),
                p.name.clone(),
                serde_json::Value::Object(row).to_string(),
            ));
        }
    }
    assert!(!want.is_empty(), "the fixtures have hits");
    let got: Vec<(String, String, String)> = text(&out, "graph_id")
        .into_iter()
        .zip(text(&out, "pattern"))
        .zip(text(&out, "row"))
        .map(|((g, p), r)| (g.unwrap(), p.unwrap(), r.unwrap()))
        .collect();
    // Ordered by row, then pattern, where the run orders by pattern, then trace.
    let mut sorted_want = want.clone();
    let order = |x: &(String, String, String)| {
        let t = files
            .iter()
            .position(|f| db.trace(&x.0).unwrap().info().source == *f)
            .unwrap();
        let p = specs.iter().position(|s| s.name == x.1).unwrap();
        (t, p)
    };
    sorted_want.sort_by_key(|x| order(x));
    assert_eq!(got, sorted_want);
    // A hit's number counts the hits of its pattern in its trace.
    let hit = out
        .column_by_name("hit")
        .unwrap()
        .as_primitive::<Int64Type>();
    assert_eq!(hit.value(0), 0);
    for i in 1..out.num_rows() {
        let same = got[i].0 == got[i - 1].0 && got[i].1 == got[i - 1].1;
        assert_eq!(hit.value(i), if same { hit.value(i - 1) + 1 } else { 0 });
    }
}

#[test]
fn pattern_specs_take_inline_statements_and_refuse_what_no_pattern_takes() {
    let statements = vec![(
        "big".to_string(),
        "FIND vars WHERE var.version > $v RETURN var.full_name".to_string(),
        vec![("v".to_string(), Value::Int(1))],
    )];
    let specs = pattern_specs(&[], &statements, &[("v".into(), Value::Int(3))]).unwrap();
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].params, vec![("v".to_string(), Value::Int(3))]);
    let err = pattern_specs(
        &["noop_update".into()],
        &[],
        &[("zzz".into(), Value::Int(1))],
    );
    assert!(err
        .unwrap_err()
        .to_string()
        .contains("none of the patterns run takes $zzz"));
    let err = pattern_specs(&["mine".into()], &[], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("no built-in pattern mine"), "{err}");
    // A statement that does not plan fails the batch, even an empty one.
    let bad = vec![("bad".to_string(), "FIND nothing".to_string(), Vec::new())];
    let job = Job::Patterns(pattern_specs(&[], &bad, &[]).unwrap());
    let err = run_batch(&files_batch(&[]), &job, &opts(), &Cancel::new()).unwrap_err();
    assert!(!err.to_string().is_empty());
}

#[test]
fn cases_and_stats_have_the_parquet_tables_columns_and_the_databases_counts() {
    // The columns both have are named and typed alike (the partition's lack the
    // database's own trace id).
    for (out, table) in [
        (Output::Cases, Table::Cases),
        (Output::Stats, Table::Traces),
    ] {
        let mine = out.schema();
        let theirs = table.schema();
        let mut shared = 0;
        for f in mine.fields() {
            if let Ok(g) = theirs.field_with_name(f.name()) {
                shared += 1;
                let item = |t: &DataType| match t {
                    DataType::List(i) => {
                        DataType::List(Arc::new(Field::new("item", i.data_type().clone(), true)))
                    }
                    t => t.clone(),
                };
                assert_eq!(item(f.data_type()), item(g.data_type()), "{}", f.name());
            }
        }
        assert!(shared >= 10, "{out:?}: {shared} shared columns");
    }
    let verdicts = Output::Verdicts.schema();
    for name in [
        "graph_id",
        "case_id",
        "query",
        "method",
        "version",
        "model",
        "error_type",
        "op_id",
        "op_name",
        "confidence",
        "reason",
        "chain",
    ] {
        let mine = verdicts.field_with_name(name).unwrap();
        let theirs = Table::Verdicts.schema();
        assert_eq!(
            mine.data_type(),
            theirs.field_with_name(name).unwrap().data_type(),
            "{name}"
        );
    }

    let files = [
        "devsplit/rag-locomo_1.json",
        "sample_export.json",
        "malformed/empty.json",
    ];
    let cases = run_batch(&files_batch(&files), &Job::Cases, &opts(), &Cancel::new()).unwrap();
    let (_dir, db) = reference(&files[..2]);
    let want = db.failed_cases(None).unwrap();
    assert_eq!(cases.num_rows(), want.len() + 1);
    let ids = text(&cases, "case_id");
    for (i, c) in want.iter().enumerate() {
        assert_eq!(ids[i].as_deref(), Some(c.id.as_str()));
    }
    let labels = text(&cases, "final_error_type");
    assert!(
        labels.iter().flatten().count() > 0,
        "the devsplit cases are labelled"
    );
    assert!(text(&cases, "error")[want.len()].is_some());

    let stats = run_batch(&files_batch(&files), &Job::Stats, &opts(), &Cancel::new()).unwrap();
    assert_eq!(stats.num_rows(), 3);
    let traces = db.traces().unwrap();
    let ops = stats
        .column_by_name("ops")
        .unwrap()
        .as_primitive::<Int64Type>();
    let failed = stats
        .column_by_name("failed_cases")
        .unwrap()
        .as_primitive::<Int64Type>();
    for (i, t) in traces.iter().enumerate() {
        assert_eq!(ops.value(i), i64::from(t.counts.ops));
        let n = db.failed_cases(Some(&t.graph_id)).unwrap().len();
        assert_eq!(failed.value(i), n as i64);
    }
    assert!(ops.is_null(2));
}

#[test]
fn json_lines_rows_and_several_traces_in_one_row_each_give_their_rows() {
    let out = run_batch(
        &files_batch(&["otlp/collector.jsonl"]),
        &Job::Stats,
        &opts(),
        &Cancel::new(),
    )
    .unwrap();
    let (_d, db) = {
        let dir = tempfile::tempdir().unwrap();
        let db = memtrace_analysis::open(dir.path().join("db")).unwrap();
        let bytes = std::fs::read(fixture("otlp/collector.jsonl")).unwrap();
        db.import_reader(
            bytes.as_slice(),
            InputFormat::JsonLines,
            "c",
            &ImportOptions::default(),
        )
        .unwrap();
        (dir, db)
    };
    let want: Vec<Option<String>> = db
        .traces()
        .unwrap()
        .into_iter()
        .map(|t| Some(t.graph_id))
        .collect();
    assert_eq!(text(&out, "graph_id"), want);
    assert!(text(&out, "error").iter().all(Option::is_none));
}

#[test]
fn ipc_streams_in_and_out_keep_each_batch_and_the_schema() {
    let mut input = Vec::new();
    {
        let b = files_batch(&["sample_export.json", "malformed/truncated.json"]);
        let mut w = StreamWriter::try_new(&mut input, &b.schema()).unwrap();
        w.write(&b).unwrap();
        w.write(&files_batch(&[])).unwrap();
        w.finish().unwrap();
    }
    let out = run_ipc(&input, &Job::Stats, &opts(), &Cancel::new()).unwrap();
    let batches: Vec<RecordBatch> = StreamReader::try_new(Cursor::new(out), None)
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[0].num_rows(), 2);
    assert_eq!(batches[1].num_rows(), 0);
    assert_eq!(batches[0].schema(), Output::Stats.schema());
    let empty =
        StreamReader::try_new(Cursor::new(schema_ipc(Output::Cases).unwrap()), None).unwrap();
    assert_eq!(empty.schema(), Output::Cases.schema());
    let err = run_ipc(b"not arrow", &Job::Stats, &opts(), &Cancel::new()).unwrap_err();
    assert!(err.to_string().starts_with("Arrow IPC stream"), "{err}");
}

#[test]
fn a_cancelled_run_stops_and_leaves_no_scratch_folder() {
    let scratch = tempfile::tempdir().unwrap();
    let opts = PartitionOptions {
        scratch: Some(scratch.path().to_path_buf()),
        ..PartitionOptions::default()
    };
    let cancel = Cancel::new();
    cancel.cancel();
    let err = run_batch(&files_batch(&GOOD[..1]), &evidence(), &opts, &cancel).unwrap_err();
    assert!(
        matches!(err, ColumnarError::Engine(EngineError::Cancelled)),
        "{err}"
    );
    run_batch(&files_batch(&GOOD[..1]), &Job::Stats, &opts, &Cancel::new()).unwrap();
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
}
