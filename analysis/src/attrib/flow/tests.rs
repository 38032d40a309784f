use super::items::answer_parts;
use super::types::Failure;
use super::weighing::weigh_outcomes;
use crate::attrib::holds::{Item, VALUE_OVERLAP};
use crate::attrib::model::TraceModel;
use crate::attrib::verdict::ErrorType;
use crate::attrib::{AttributeRequest, Method, Setting, Verdict};
use crate::prelude::*;
use crate::testing::{answer, import, judge, temp_db};
use memtrace_engine::Cancel;
use memtrace_gen::builder::{TraceBuilder, VarRef};
use serde_json::json;

/// A Mem0-like memory system, built op by op.
struct Mini {
    b: TraceBuilder,
    n: usize,
}

impl Mini {
    fn new() -> Mini {
        let mut b = TraceBuilder::new("mini", "u", "mini", json!({}), 19_000);
        b.session("memory_construction", "session", json!({}));
        Mini { b, n: 0 }
    }

    fn message(&mut self, name: &str, text: &str) -> VarRef {
        let speaker = text.split(':').next().unwrap_or("");
        self.b.variable(
            Some("message"),
            name,
            &format!("{text:?}"),
            "message",
            None,
            json!({ "speaker": speaker }),
        )
    }

    /// extract_facts: message -> facts (a Python list repr).
    fn extract(&mut self, msg: &VarRef, facts: &str) -> (VarRef, String) {
        let name = msg.full_name.trim_start_matches("message:").to_string();
        let f = self.b.variable(
            Some("facts"),
            &name,
            facts,
            "extracted_facts",
            None,
            json!({}),
        );
        let op = self.b.op(
            "extract_facts",
            "extraction",
            None,
            &[msg],
            &[&f],
            json!({}),
        );
        (f, op)
    }

    /// update_memory_decision: facts -> decision -> a new memory unit.
    fn add(&mut self, facts: &VarRef, stored: &str) -> (VarRef, String) {
        self.n += 1;
        let name = facts.full_name.trim_start_matches("facts:").to_string();
        let d = self.b.variable(
            Some("decision"),
            &name,
            &format!("[{{\"event\": \"ADD\", \"text\": {stored:?}}}]"),
            "memory_decision",
            None,
            json!({}),
        );
        let unit = self.b.variable(
            Some("memory"),
            &format!("m{}", self.n),
            &format!("{stored:?}"),
            "memory_entry",
            None,
            json!({}),
        );
        let op = self.b.op_edges(
            "update_memory_decision",
            "update",
            &[
                (facts.full_node_id.clone(), d.full_node_id.clone(), None),
                (
                    d.full_node_id.clone(),
                    unit.full_node_id.clone(),
                    Some("ADD"),
                ),
            ],
            json!({}),
        );
        (unit, op)
    }

    /// A later decision that deletes `unit`.
    fn delete(&mut self, unit: &VarRef) -> String {
        let m = self.b.variable(
            Some("delete_marker"),
            unit.full_name.trim_start_matches("memory:"),
            "'DELETED'",
            "delete_marker",
            None,
            json!({}),
        );
        self.b.op_edges(
            "update_memory_decision",
            "update",
            &[(
                unit.full_node_id.clone(),
                m.full_node_id.clone(),
                Some("DELETE"),
            )],
            json!({}),
        )
    }

    /// A later decision that rewrites `unit`.
    fn rewrite(&mut self, unit: &VarRef, value: &str) -> (VarRef, String) {
        let name = unit.full_name.trim_start_matches("memory:").to_string();
        self.b.mutate(
            unit,
            Some("memory"),
            &name,
            &format!("{value:?}"),
            "memory_entry",
            "update_memory_decision",
            "update",
            &[],
        )
    }

    /// A question: retrieval from `units` into a context holding
    /// `context`, an answer, and a judge that scores it 0.
    fn question(
        &mut self,
        q: &str,
        text: &str,
        gold: &str,
        evidence: &[&VarRef],
        units: &[&VarRef],
        context: &[&str],
    ) -> (String, String) {
        self.b.session("memory_evaluation", "session", json!({}));
        let ev: Vec<&str> = evidence.iter().map(|e| e.full_name.as_str()).collect();
        let query = self.b.variable(
            Some("query"),
            q,
            &format!("{text:?}"),
            "message & query",
            None,
            json!({ "evidence": ev }),
        );
        let ctx = self.b.variable(
            Some("retrieved_memories"),
            q,
            &format!("{context:?}"),
            "memory_context",
            None,
            json!({}),
        );
        let mut inputs = vec![&query];
        inputs.extend(units.iter().copied());
        let retrieve = self
            .b
            .op("search", "retrieval", None, &inputs, &[&ctx], json!({}));
        let (pred, qa) = answer(
            &mut self.b,
            q,
            "'The conversation does not say.'",
            &[&query, &ctx],
        );
        judge(
            &mut self.b,
            q,
            &query,
            &pred,
            &format!("[{gold:?}]"),
            "'WRONG'",
            "0.0",
        );
        (retrieve, qa)
    }

    fn verdicts(self) -> Vec<Verdict> {
        self.verdicts_in(Setting::Benchmark)
    }

    fn verdicts_in(self, setting: Setting) -> Vec<Verdict> {
        let (_dir, db) = temp_db();
        import(&db, &self.b.finish());
        let req = AttributeRequest {
            trace: None,
            cases: None,
            method: Method::Evidence,
            setting,
            search: Default::default(),
        };
        db.attribute(&req, &Cancel::new(), &mut |_| {}).unwrap()
    }
}

fn weighed(message: usize, weight: f64) -> Item {
    Item {
        message,
        stems: vec![1],
        span: 1,
        text: String::new(),
        whole: false,
        speaker: None,
        value: Vec::new(),
        must: Vec::new(),
        threshold: VALUE_OVERLAP,
        asked: Vec::new(),
        weight,
    }
}

fn failing(op: usize, item: usize, error_type: ErrorType) -> Failure {
    Failure {
        op,
        error_type,
        item,
        reason: String::new(),
        confidence: 0.9,
        last: None,
    }
}

#[test]
fn needed_evidence_fails_at_its_earliest_point_and_weights_share_the_verdict() {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    // Source evidence, all needed: the earliest failure point, surely.
    let items = [weighed(0, 1.0), weighed(1, 1.0)];
    let fails = [
        failing(7, 1, ErrorType::RetrievalError),
        failing(2, 0, ErrorType::ExtractionError),
    ];
    let o = weigh_outcomes(&items, &fails, 1.0);
    assert_eq!((o[0].failure, o[0].probability), (Some(1), 1.0));
    // A likely message lost late outweighs an unlikely one lost early:
    // 0.9 * 0.8 against 0.2, out of 1 - 0.8 * 0.1.
    let items = [weighed(0, 0.2), weighed(1, 0.9)];
    let o = weigh_outcomes(&items, &fails, 1.0);
    assert_eq!(o[0].failure, Some(0));
    assert!(close(o[0].probability, 0.72 / 0.92), "{o:?}");
    assert!(close(o[1].probability, 0.2 / 0.92), "{o:?}");
    assert!(close(o[2].probability, 0.0), "{o:?}");
    // One item failed, one reached the context: either may be the one needed.
    let items = [weighed(0, 0.5), weighed(1, 0.5)];
    let o = weigh_outcomes(&items, &[failing(3, 0, ErrorType::UpdateError)], 1.0);
    assert_eq!(o[0].failure, Some(0));
    assert!(close(o[0].probability, 0.5 / 0.75), "{o:?}");
    assert_eq!(o[1].failure, None);
    assert!(close(o[1].probability, 0.25 / 0.75), "{o:?}");
    // The answer said it found nothing: the one that reached the context
    // counts a tenth.
    let o = weigh_outcomes(&items, &[failing(3, 0, ErrorType::UpdateError)], 0.1);
    assert!(close(o[0].probability, 0.5 / 0.525), "{o:?}");
    // Two items lost at the same op add up: 0.25 + 0.125, against 0.5
    // for the one lost earlier, out of 1 - 0.5^3.
    let items = [weighed(0, 0.5), weighed(1, 0.5), weighed(2, 0.5)];
    let fails = [
        failing(4, 0, ErrorType::RetrievalError),
        failing(4, 1, ErrorType::RetrievalError),
        failing(1, 2, ErrorType::ExtractionError),
    ];
    let o = weigh_outcomes(&items, &fails, 1.0);
    assert_eq!(o[0].failure, Some(2));
    assert!(close(o[0].probability, 0.5 / 0.875), "{o:?}");
    assert_eq!(o[1].failure, Some(0));
    assert!(close(o[1].probability, 0.375 / 0.875), "{o:?}");
}

#[test]
fn chosen_evidence_blames_where_the_answer_was_lost_not_where_small_talk_was() {
    // Small talk the extractor drops, and the fact, stored and then not
    // retrieved: with the evidence hidden, the fact is what the question
    // and its gold answer point to, and the retrieval is to blame.
    let build = || {
        let mut t = Mini::new();
        let chat = t.message("D1:1", "Lena: Hey Omar! How was your week? Anything new?");
        t.extract(&chat, "[]");
        let m = t.message("D1:2", VOLVO);
        let other = t.message("D1:3", "Lena: My cat Luna sleeps all day.");
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        t.add(&f, FACT);
        let (g, _) = t.extract(&other, "['Lena has a cat named Luna']");
        let (lena, _) = t.add(&g, "Lena has a cat named Luna");
        let (retrieve, _) = t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&lena],
            &["Lena has a cat named Luna"],
        );
        (t, retrieve)
    };
    for setting in [Setting::Benchmark, Setting::Evaluation, Setting::Production] {
        let (t, retrieve) = build();
        let v = t.verdicts_in(setting);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].setting, Some(setting), "{setting}");
        assert_eq!(
            (v[0].error_type, v[0].op_id.as_deref()),
            (Some(ErrorType::RetrievalError), Some(retrieve.as_str())),
            "{setting}: {}",
            v[0].reason
        );
        if setting != Setting::Benchmark {
            assert!(
                v[0].reason.contains("chosen as evidence with weight"),
                "{}",
                v[0].reason
            );
            assert!(v[0].confidence < 1.0);
        }
    }
}

#[test]
fn a_value_gone_before_it_was_read_is_an_error_not_an_empty_text() {
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    t.extract(&m, &format!("[{FACT:?}]"));
    let (_dir, db) = temp_db();
    import(&db, &t.b.finish());
    let view = db.trace("mini").unwrap();
    let model = TraceModel::load(&view).unwrap();
    assert!(model.read_error().is_ok());
    db.drop_trace("mini", "test").unwrap();
    let var = model.var("message:D1:1").expect("the message");
    assert_eq!(model.value(var), "");
    let err = model.read_error().unwrap_err().to_string();
    assert!(
        err.contains("message:D1:1@1") && err.contains("could not be read"),
        "{err}"
    );
}

const VOLVO: &str = "Omar: I drive a blue Volvo.";
const FACT: &str = "Omar's car is a blue Volvo (since 2023-05-01)";

fn one(v: Vec<Verdict>) -> (ErrorType, String, String) {
    assert_eq!(v.len(), 1, "{v:?}");
    let v = &v[0];
    (
        v.error_type.expect("a verdict"),
        v.op_id.clone().unwrap(),
        v.reason.clone(),
    )
}

#[test]
fn a_fact_the_extractor_drops_is_an_extraction_error_of_that_op() {
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let (_, op) = t.extract(&m, "[]");
    t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[],
        &[],
    );
    let (ty, at, reason) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::ExtractionError, op));
    assert!(reason.contains("message:D1:1@1"), "{reason}");
    assert!(reason.contains("never entered a memory unit"), "{reason}");
}

#[test]
fn a_decision_that_stores_a_wrong_value_never_stored_the_fact() {
    // The fact was extracted, but the unit the decision wrote holds
    // another value: the fact never entered a memory unit, which
    // MemTrace calls an ExtractionError of that decision.
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
    let (u, op) = t.add(&f, "Omar's car is a red Toyota (since 2023-05-01)");
    let ctx = ["Omar's car is a red Toyota (since 2023-05-01)"];
    t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[&u],
        &ctx,
    );
    let (ty, at, _) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::ExtractionError, op));
}

#[test]
fn a_later_rewrite_of_a_unit_that_held_it_is_an_update_error() {
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
    let (u, _) = t.add(&f, FACT);
    let (u2, op) = t.rewrite(&u, "Omar's car is a grey Fiat (since 2023-05-01)");
    let ctx = ["Omar's car is a grey Fiat (since 2023-05-01)"];
    t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[&u2],
        &ctx,
    );
    let (ty, at, reason) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::UpdateError, op));
    assert!(reason.contains("memory:m1@1"), "{reason}");
}

#[test]
fn a_chain_step_that_is_not_on_every_route_says_so() {
    // The message reaches the unit by two routes (two extractions, one
    // store op reading both): the dominators of the unit in the item's
    // flow are the message and the unit, not either extraction.
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
    let f2 = t.b.variable(
        Some("summary"),
        "D1:1",
        &format!("{FACT:?}"),
        "summary",
        None,
        json!({}),
    );
    t.b.op("summarise", "extraction", None, &[&m], &[&f2], json!({}));
    let u = t.b.variable(
        Some("memory"),
        "m1",
        &format!("{FACT:?}"),
        "memory_entry",
        None,
        json!({}),
    );
    t.b.op("store", "update", None, &[&f, &f2], &[&u], json!({}));
    let (u2, op) = t.rewrite(&u, "Omar's car is a grey Fiat (since 2023-05-01)");
    let ctx = ["Omar's car is a grey Fiat (since 2023-05-01)"];
    t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[&u2],
        &ctx,
    );
    let v = t.verdicts();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].error_type, Some(ErrorType::UpdateError));
    assert_eq!(v[0].op_id.as_deref(), Some(op.as_str()));
    let whats: Vec<(&str, &str)> = v[0]
        .chain
        .iter()
        .map(|s| (s.var.as_str(), s.what.as_str()))
        .collect();
    assert_eq!(whats.len(), 4, "{whats:?}");
    assert_eq!(whats[0].1, "evidence");
    assert!(
        whats[1].1 == "held on one of several routes",
        "an extraction output is one route of two: {whats:?}"
    );
    assert_eq!(whats[2], ("memory:m1@1", "held"), "{whats:?}");
    assert_eq!(whats[3].1, "lost", "{whats:?}");
}

#[test]
fn a_rolling_unit_loses_it_at_the_version_that_dropped_it() {
    // Many versions, each made from the one before: the verdict names
    // the version that dropped the fact, however the run is searched.
    let others = [
        "Lena's city is Denver",
        "Omar's hobby is chess",
        "Lena's pet is a cat named Luna",
        "Omar's job is nurse",
        "Lena's food is pho",
        "Omar's pet is a parrot named Kiwi",
        "Lena's job is accountant",
        "Omar's city is Prague",
        "Lena's hobby is yoga",
        "Omar's food is tacos",
        "Lena's car is a red Mini",
        "Omar's drink is tea",
    ];
    for lost_at in [1, 2, 5, 9, 12] {
        let mut t = Mini::new();
        let m = t.message("D1:1", VOLVO);
        let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
        let (mut unit, _) = t.add(&f, FACT);
        let mut kept = vec![FACT.to_string()];
        let mut dropped_by = String::new();
        for (i, other) in others.iter().enumerate() {
            if i + 1 == lost_at {
                kept.retain(|k| k != FACT);
            }
            kept.push(other.to_string());
            let (next, op) = t.rewrite(&unit, &kept.join(". "));
            if i + 1 == lost_at {
                dropped_by = op;
            }
            unit = next;
        }
        let ctx = [kept.join(". ")];
        let ctx: Vec<&str> = ctx.iter().map(String::as_str).collect();
        t.question(
            "Q1",
            "What car does Omar drive?",
            "a blue Volvo",
            &[&m],
            &[&unit],
            &ctx,
        );
        let (ty, at, _) = one(t.verdicts());
        assert_eq!(
            (ty, at),
            (ErrorType::UpdateError, dropped_by),
            "lost at {lost_at}"
        );
    }
}

#[test]
fn deleting_the_unit_that_held_it_is_a_deletion_error() {
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
    let (u, _) = t.add(&f, FACT);
    let op = t.delete(&u);
    t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[],
        &[],
    );
    let (ty, at, _) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::DeletionError, op));
}

#[test]
fn a_stored_fact_left_out_of_the_context_is_a_retrieval_error() {
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let other = t.message("D1:2", "Lena: My cat Luna sleeps all day.");
    let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
    t.add(&f, FACT);
    let (g, _) = t.extract(&other, "['Lena has a cat named Luna']");
    let (lena, _) = t.add(&g, "Lena has a cat named Luna");
    let ctx = ["Lena has a cat named Luna"];
    let (retrieve, _) = t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[&lena],
        &ctx,
    );
    let (ty, at, reason) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::RetrievalError, retrieve));
    assert!(reason.contains("stored in memory:m1@1"), "{reason}");
}

#[test]
fn a_context_that_holds_the_answer_makes_it_a_response_error() {
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
    let (u, _) = t.add(&f, FACT);
    let (_, qa) = t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[&u],
        &[FACT],
    );
    let (ty, at, _) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::ResponseError, qa));
}

#[test]
fn paraphrased_evidence_is_followed_by_its_value_and_a_wrong_value_is_not() {
    // The message never says "blue Volvo" in those words; the stored fact does.
    let mut t = Mini::new();
    let m = t.message(
        "D1:1",
        "Omar: Finally got the Volvo, the blue one, last week!",
    );
    let (f, _) = t.extract(&m, "['Omar drives a Volvo that is blue']");
    let (u, _) = t.add(&f, "Omar drives a Volvo that is blue");
    let (_, qa) = t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[&u],
        &["Omar drives a Volvo that is blue"],
    );
    let (ty, at, _) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::ResponseError, qa));
    // Below the overlap threshold (one of two value tokens) it is not the same fact.
    let mut t = Mini::new();
    let m = t.message(
        "D1:1",
        "Omar: Finally got the Volvo, the blue one, last week!",
    );
    let (f, op) = t.extract(&m, "['Omar drives a Volvo']");
    t.add(&f, "Omar drives a Volvo");
    t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[],
        &[],
    );
    let (ty, at, _) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::ExtractionError, op));
}

#[test]
fn evidence_split_over_two_messages_fails_where_either_part_is_lost() {
    let mut t = Mini::new();
    let omar = t.message("D1:1", VOLVO);
    let lena = t.message("D1:2", "Lena: I bought a green Mini yesterday.");
    let (f, _) = t.extract(&omar, &format!("[{FACT:?}]"));
    let (u, _) = t.add(&f, FACT);
    let (_, lost) = t.extract(&lena, "[]");
    t.question(
        "Q1",
        "Do Omar and Lena have the same car now?",
        "No: a blue Volvo vs a green Mini",
        &[&omar, &lena],
        &[&u],
        &[FACT],
    );
    let (ty, at, reason) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::ExtractionError, lost));
    assert!(reason.contains("message:D1:2@1"), "{reason}");
}

#[test]
fn a_masked_fault_is_not_decisive() {
    // The stale first value is dropped, but the question asks for the
    // latest value, which was stored and then left out by retrieval.
    let mut t = Mini::new();
    let old = t.message("D1:1", "Omar: I drive a red Toyota.");
    let new = t.message("D2:1", "Omar: Sold the Toyota, I drive a blue Volvo now.");
    t.extract(&old, "[]");
    let (f, _) = t.extract(&new, &format!("[{FACT:?}]"));
    t.add(&f, FACT);
    let (retrieve, _) = t.question(
        "Q1",
        "What car does Omar drive? (now)",
        "a blue Volvo",
        &[&old, &new],
        &[],
        &[],
    );
    let (ty, at, _) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::RetrievalError, retrieve));
    // A fact kept by a second unit survives the loss of the first.
    let mut t = Mini::new();
    let m = t.message("D1:1", VOLVO);
    let (f, _) = t.extract(&m, &format!("[{FACT:?}]"));
    let (u, _) = t.add(&f, FACT);
    let (u2, _) = t.add(&f, "Omar owns a blue Volvo");
    t.delete(&u);
    let (_, qa) = t.question(
        "Q1",
        "What car does Omar drive?",
        "a blue Volvo",
        &[&m],
        &[&u2],
        &["Omar owns a blue Volvo"],
    );
    let (ty, at, _) = one(t.verdicts());
    assert_eq!((ty, at), (ErrorType::ResponseError, qa));
}

#[test]
fn signatures_split_a_comparison_between_the_people_asked_about() {
    assert_eq!(
        answer_parts("No: a blue Volvo vs a green Mini"),
        ["a blue Volvo", "a green Mini"]
    );
    assert_eq!(answer_parts("Yes, both: Paris"), ["Paris"]);
    assert_eq!(answer_parts("Paris"), ["Paris"]);
}
