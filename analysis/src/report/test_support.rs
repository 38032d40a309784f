//! Helpers the report's tests share: a database of two traces with stored
//! verdicts, labels and a value that must be escaped.

use crate::attrib::{ErrorType, FailedCase, Method, Step, Verdict};
use crate::prelude::*;
use crate::testing::{answer, import, temp_db};
use memtrace_engine::Engine;
use memtrace_gen::builder::TraceBuilder;
use serde_json::json;

/// The ops of one question.
struct Question {
    add: String,
    search: String,
    qa: String,
}

/// A message stored by `memory.add`, missed by `memory.search`, a wrong
/// answer from `question-answering`, and an `llm-judge` scoring it.
fn question(b: &mut TraceBuilder, q: &str, text: &str, score: &str) -> Question {
    b.session("memory_construction", "session", json!({}));
    let msg = b.variable(
        Some("message"),
        q,
        "'Omar: I drive a blue Volvo.'",
        "message",
        None,
        json!({}),
    );
    let unit = b.variable(
        Some("memory"),
        q,
        "'Omar drives a Volvo'",
        "memory",
        None,
        json!({}),
    );
    let add = b.op(
        "memory.add",
        "construction",
        None,
        &[&msg],
        &[&unit],
        json!({}),
    );
    b.session("memory_search", "session", json!({}));
    let query = b.variable(
        Some("query"),
        q,
        &format!("'{text}'"),
        "message & query",
        None,
        json!({}),
    );
    let context = b.variable(
        Some("context"),
        q,
        "'Lena has a cat.'",
        "context",
        None,
        json!({}),
    );
    let search = b.op(
        "memory.search",
        "retrieval",
        None,
        &[&query, &unit],
        &[&context],
        json!({}),
    );
    b.session("memory_evaluation", "session", json!({}));
    let (pred, qa) = answer(b, q, "'a red Toyota'", &[&query, &context]);
    let gold = b.variable(
        Some("golden_answers"),
        q,
        "['a blue Volvo']",
        "golden_answers",
        None,
        json!({}),
    );
    let sc = b.variable(
        Some("judge_score"),
        q,
        score,
        "judge_score",
        None,
        json!({}),
    );
    let edges: Vec<(String, String, Option<&str>)> = vec![
        (query.full_node_id.clone(), sc.full_node_id.clone(), None),
        (gold.full_node_id.clone(), sc.full_node_id.clone(), None),
        (pred.full_node_id.clone(), sc.full_node_id.clone(), None),
    ];
    b.op_edges("llm-judge", "evaluation", &edges, json!({}));
    Question { add, search, qa }
}

pub(super) fn verdict(
    case: &FailedCase,
    error_type: Option<ErrorType>,
    op: Option<&str>,
    op_name: Option<&str>,
    reason: &str,
) -> Verdict {
    Verdict {
        error_type,
        op_id: op.map(str::to_string),
        op_name: op_name.map(str::to_string),
        confidence: 0.75,
        reason: reason.into(),
        setting: None,
        ..Verdict::undecided(case, Method::Evidence, 3)
    }
}

fn case<'a>(cases: &'a [FailedCase], id: &str) -> &'a FailedCase {
    cases.iter().find(|c| c.id == id).unwrap()
}

pub(super) const XSS: &str = "<script>alert(1)</script>";

/// `g-rag` (rag): four annotated cases, three with verdicts (one of them
/// twice), one labelled with a non-memory error. `g-mem0` (mem0): four
/// judge cases without labels, one with an undecided verdict and one
/// with a verdict of another method as well.
pub(super) fn fixture() -> (tempfile::TempDir, Engine) {
    use ErrorType::*;
    let (dir, db) = temp_db();

    let mut b = TraceBuilder::new("g-rag", "u", "rag", json!({}), 19_000);
    let r: Vec<Question> = (1..=4)
        .map(|i| question(&mut b, &format!("Q{i}"), "What car does Omar drive?", "0.0"))
        .collect();
    let labels = [
        ("RetrievalError", &r[0].search),
        ("RetrievalError", &r[1].search),
        ("ResponseError", &r[2].qa),
        ("JudgeError", &r[3].qa),
    ];
    for (i, (t, op)) in labels.iter().enumerate() {
        b.annotate(json!({
            "query_id": format!("query:Q{}@1", i + 1),
            "query": "What car does Omar drive?",
            "golden_answers": ["a blue Volvo"], "prediction": "a red Toyota",
            "final_error_type": t, "final_op_id": op,
        }));
    }
    import(&db, &b.finish());

    let mut b = TraceBuilder::new("g-mem0", "u", "mem0", json!({}), 19_000);
    let m: Vec<Question> = [
        ("Q1", XSS, "0"),
        ("Q2", "Where does Lena live?", "0"),
        ("Q3", "Which cat?", "0"),
        ("Q4", "Right answer", "1"),
        ("Q5", "Undecided?", "0"),
    ]
    .iter()
    .map(|(q, text, score)| question(&mut b, q, text, score))
    .collect();
    import(&db, &b.finish());

    let rag = db.failed_cases(Some("g-rag")).unwrap();
    let mem0 = db.failed_cases(Some("g-mem0")).unwrap();
    assert_eq!((rag.len(), mem0.len()), (4, 4));
    let mut first = verdict(
        case(&rag, "query:Q1@1"),
        Some(RetrievalError),
        Some(&r[0].search),
        Some("memory.search"),
        "stored, then not retrieved",
    );
    first.chain = vec![
        Step {
            op_id: r[0].add.clone(),
            op_name: "memory.add".into(),
            var: "memory:Q1@1".into(),
            what: "held".into(),
        },
        Step {
            op_id: r[0].search.clone(),
            op_name: "memory.search".into(),
            var: "context:Q1@1".into(),
            what: "left out".into(),
        },
    ];
    let verdicts = vec![
        first,
        verdict(
            case(&rag, "query:Q2@1"),
            Some(ResponseError),
            Some(&r[1].qa),
            Some("question-answering"),
            "older verdict",
        ),
        verdict(
            case(&rag, "query:Q3@1"),
            Some(RetrievalError),
            Some(&r[2].search),
            Some("memory.search"),
            "held | then\nlost",
        ),
        verdict(
            case(&mem0, "query:Q1@1"),
            Some(ExtractionError),
            Some(&m[0].add),
            Some("memory.add"),
            "never stored",
        ),
        verdict(
            case(&mem0, "query:Q2@1"),
            Some(ExtractionError),
            Some(&m[1].add),
            Some("memory.add"),
            "never stored",
        ),
        // No op name: the report reads it from the trace.
        verdict(
            case(&mem0, "query:Q3@1"),
            Some(UpdateError),
            Some(&m[2].search),
            None,
            "degraded",
        ),
        verdict(
            case(&mem0, "query:Q5@1"),
            None,
            None,
            None,
            "no evidence found",
        ),
    ];
    assert_eq!(db.store_verdicts(&verdicts, "tester").unwrap(), 7);
    // Later: a new verdict for rag Q2 (it wins), and one of another
    // method for mem0 Q3 (not counted).
    let newer = verdict(
        case(&rag, "query:Q2@1"),
        Some(RetrievalError),
        Some(&r[1].search),
        None,
        "newer verdict",
    );
    let mut other = verdict(
        case(&mem0, "query:Q3@1"),
        Some(DeletionError),
        Some(&m[2].qa),
        Some("question-answering"),
        "another method",
    );
    other.method = "other".into();
    assert_eq!(db.store_verdicts(&[newer, other], "tester").unwrap(), 2);
    (dir, db)
}
