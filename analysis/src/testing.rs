//! What the analyses' tests share: a fresh database, importing a built trace
//! into it, and the answering and judging ops every failed case ends with.

use memtrace_engine::{Engine, ImportOptions, InputFormat};
use memtrace_gen::builder::{TraceBuilder, VarRef};
use serde_json::{json, Value};

/// A fresh database in a temporary folder (kept alive by the folder).
pub(crate) fn temp_db() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::open(dir.path().join("db")).unwrap();
    (dir, db)
}

/// Imports a trace document into `db`.
pub(crate) fn import(db: &Engine, trace: &Value) {
    import_from(db, trace, "test");
}

/// Imports a trace document into `db` as if read from the file `source`.
pub(crate) fn import_from(db: &Engine, trace: &Value, source: &str) {
    db.import_reader(
        trace.to_string().as_bytes(),
        InputFormat::Json,
        source,
        &ImportOptions::default(),
    )
    .unwrap();
}

/// A `question-answering` op that reads `inputs` and writes the prediction
/// `predicted` of question `q`: the prediction and the op's id.
pub(crate) fn answer(
    b: &mut TraceBuilder,
    q: &str,
    predicted: &str,
    inputs: &[&VarRef],
) -> (VarRef, String) {
    let pred = b.variable(
        Some("prediction"),
        q,
        predicted,
        "prediction",
        None,
        json!({}),
    );
    let op = b.op(
        "question-answering",
        "evaluation",
        None,
        inputs,
        &[&pred],
        json!({}),
    );
    (pred, op)
}

/// An `llm-judge` op of question `q` that reads the query, the gold answers
/// and the prediction, and writes its response and then its score: the op's
/// id.
pub(crate) fn judge(
    b: &mut TraceBuilder,
    q: &str,
    query: &VarRef,
    pred: &VarRef,
    gold: &str,
    response: &str,
    score: &str,
) -> String {
    let gold = b.variable(
        Some("golden_answers"),
        q,
        gold,
        "golden_answers",
        None,
        json!({}),
    );
    let resp = b.variable(
        Some("judge_response"),
        q,
        response,
        "judge_response",
        None,
        json!({}),
    );
    let score = b.variable(
        Some("judge_score"),
        q,
        score,
        "judge_score",
        None,
        json!({}),
    );
    b.op_edges(
        "llm-judge",
        "evaluation",
        &[
            (query.full_node_id.clone(), resp.full_node_id.clone(), None),
            (gold.full_node_id.clone(), resp.full_node_id.clone(), None),
            (pred.full_node_id.clone(), resp.full_node_id.clone(), None),
            (resp.full_node_id.clone(), score.full_node_id.clone(), None),
        ],
        json!({}),
    )
}
