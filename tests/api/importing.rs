//! Importing: all-or-nothing readers, content checks, formats and the log a close leaves.

use super::*;

#[test]
fn json_lines_readers_are_all_or_nothing() {
    let (_d, db) = db();
    let mut a: Value = serde_json::from_str(SAMPLE).unwrap();
    a["graph_id"] = json!("line-1");
    let mut b = a.clone();
    b["graph_id"] = json!("line-2");
    let good = format!("{a}\n\n{b}\n");
    let t = db
        .import_reader(
            good.as_bytes(),
            InputFormat::JsonLines,
            "lines",
            &ImportOptions::default(),
        )
        .unwrap();
    assert_eq!(t.len(), 2);
    let mut c = a.clone();
    c["graph_id"] = json!("line-3");
    let bad = format!("{c}\n{{\"graph_id\": 1}}\n");
    let err = db
        .import_reader(
            bad.as_bytes(),
            InputFormat::JsonLines,
            "lines",
            &ImportOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("lines:2"), "{err}");
    assert_eq!(
        db.traces().unwrap().len(),
        2,
        "line 1 of the bad input was not stored"
    );
    let dup = format!("{c}\n{c}\n");
    assert!(db
        .import_reader(
            dup.as_bytes(),
            InputFormat::JsonLines,
            "dup",
            &ImportOptions::default()
        )
        .unwrap_err()
        .to_string()
        .contains("already appears on line 1"));
}

#[test]
fn generated_traces_import_with_their_cases_and_labels_replay() {
    use memtrace::gen::{generate_trace, GenSpec, Intervention, System};
    let spec = GenSpec {
        system: Some(System::Mem0),
        sessions: 4..=5,
        messages_per_session: 10..=12,
        questions: 30,
        seed: 21,
        ..GenSpec::default()
    };
    let t = generate_trace(&spec, 0);
    let (_dir, db) = db();
    let stored = import(&db, &t.document.to_string()).unwrap();
    assert_eq!(stored[0].graph_id, t.graph_id);
    let view = db.trace(&t.graph_id).unwrap();
    let cases = view.cases().unwrap();
    assert_eq!(cases.len(), t.recorded.labels.len());
    assert!(!cases.is_empty());
    for (case, label) in cases.iter().zip(&t.recorded.labels) {
        // The labelled op exists in the stored trace ...
        let op = case.final_op_id.as_deref().unwrap();
        assert!(view.op(op).unwrap().is_some(), "{op}");
        assert_eq!(
            case.final_error_type.as_deref(),
            Some(label.error_type.name())
        );
        // ... and repairing it (later ops ideal) rescues the answer.
        assert!(t.sim.replay(&Intervention::repair_then_ideal(label.slot))[label.question]);
    }
}

#[test]
fn a_large_file_read_again_is_the_same_content_and_other_content_is_refused() {
    let (dir, db) = db();
    // Over a mebibyte: the file is mapped and its digest taken while it is stored.
    let text = chain(6000);
    assert!(text.len() > 1 << 20, "{}", text.len());
    let file = dir.path().join("chain.json");
    // A byte order mark and whitespace around the object are not content.
    std::fs::write(&file, format!("\u{feff}  {text}\n")).unwrap();
    let first = import(&db, &text).unwrap();
    assert!(!first[0].unchanged);
    let import_file = |path: &std::path::Path| {
        db.import_paths(
            &[path.to_path_buf()],
            &ImportOptions::default(),
            &mut |_| {},
        )
        .into_iter()
        .next()
        .unwrap()
        .result
    };
    let again = import_file(&file).unwrap();
    assert!(again[0].unchanged, "{again:?}");
    assert_eq!(again[0].trace, first[0].trace);
    let other = dir.path().join("other.json");
    std::fs::write(&other, text.replace("\"x\"", "\"y\"")).unwrap();
    match import_file(&other) {
        Err(EngineError::AlreadyStored { compared, .. }) => assert!(compared),
        r => panic!("{r:?}"),
    }
    assert_eq!(db.traces().unwrap().len(), 1);
}

/// The write-ahead log files of the database at `path` that still hold
/// records, with their sizes.
fn logs_with_records(path: &std::path::Path) -> Vec<(String, u64)> {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .filter(|(_, len)| *len > 0)
        .collect()
}

#[test]
fn closing_after_imports_leaves_no_log_for_a_reader_to_replay() {
    // Several sessions of writes, each closed: no log with records is left
    // for a read-only open to replay (the storage crate's tests cover a
    // log left by families idle since a flush for the logs' size).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs.db");
    for round in 0..3 {
        let db = Database::open(&path).unwrap();
        let mut doc: Value = serde_json::from_str(SAMPLE).unwrap();
        doc["graph_id"] = json!(format!("round-{round}"));
        import(&db, &doc.to_string()).unwrap();
        drop(db);
        assert_eq!(logs_with_records(&path), Vec::new(), "after round {round}");
    }
    // A reader sees every round.
    let db = Database::open_read_only(&path).unwrap();
    assert_eq!(db.traces().unwrap().len(), 3);
}

/// Gives `head`, then fails: an input whose rest must not be read.
struct HeadOnly(std::io::Cursor<Vec<u8>>);

impl std::io::Read for HeadOnly {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 => Err(std::io::Error::other("read past the first bytes")),
            n => Ok(n),
        }
    }
}

#[test]
fn an_input_wrong_from_its_first_byte_is_refused_before_the_rest_is_read() {
    let (_dir, db) = db();
    let mut head = b"x".to_vec();
    head.resize(16 << 10, b' ');
    for format in [InputFormat::Json, InputFormat::JsonLines] {
        let err = db
            .import_reader(
                HeadOnly(std::io::Cursor::new(head.clone())),
                format,
                "big.json",
                &ImportOptions::default(),
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid at $: expected a smartcomment export object")
                && err.contains("found 'x' at line 1, column 1"),
            "{format:?}: {err}"
        );
    }
    // UTF-16 without a byte order mark is named as such, also through a reader.
    let utf16: Vec<u8> = SAMPLE.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let err = db
        .import_reader(
            &utf16[..],
            InputFormat::Json,
            "be.json",
            &ImportOptions::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("UTF-16 (big-endian, without a byte order mark)"),
        "{err}"
    );
    assert!(db.traces().unwrap().is_empty());
}

#[test]
fn a_file_imports_in_the_format_and_under_the_name_given() {
    let (dir, db) = db();
    let mut doc: Value = serde_json::from_str(SAMPLE).unwrap();
    let mut lines = String::new();
    for id in ["line-1", "line-2"] {
        doc["graph_id"] = json!(id);
        lines.push_str(&doc.to_string());
        lines.push('\n');
    }
    // The name says nothing of the format: the caller does.
    let file = dir.path().join("upload-7.tmp");
    std::fs::write(&file, &lines).unwrap();
    let opts = ImportOptions::default();
    let got = db
        .import_file(&file, InputFormat::JsonLines, "sent over HTTP", &opts)
        .unwrap();
    assert_eq!(got.len(), 2);
    let traces = db.traces().unwrap();
    let sources: Vec<&str> = traces.iter().map(|t| t.source.as_str()).collect();
    assert_eq!(sources, ["sent over HTTP:1", "sent over HTTP:2"]);
    // One export, and a bad one named by the name given.
    std::fs::write(&file, SAMPLE).unwrap();
    let got = db
        .import_file(&file, InputFormat::Json, "again", &opts)
        .unwrap();
    assert_eq!(got[0].graph_id, GRAPH);
    std::fs::write(&file, "[1]").unwrap();
    let e = db
        .import_file(&file, InputFormat::Json, "bad upload", &opts)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("bad upload: invalid at $"), "{e}");
}
