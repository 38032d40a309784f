//! Helpers the simulation's tests share: small worlds with many faults,
//! recorded runs, and readers of the recorded documents.

use serde_json::{json, Value};

use super::outcome::Recorded;
use super::schedule::Sim;
use super::types::{SimParams, System};
use crate::builder::TraceBuilder;
use crate::style::Style;
use crate::world::{World, WorldSpec};

/// A smaller world with more faults, so that every test sees many labels.
pub(super) fn sim_in(system: System, style: Style, seed: u64) -> Sim {
    let world = World::generate(&WorldSpec {
        sessions: 6..=9,
        messages: 120..=180,
        questions: 60,
        seed,
    });
    let params = SimParams {
        window_tokens: 900,
        fault_rate: 0.35,
        question_fault_rate: 0.15,
        ..SimParams::default()
    };
    Sim::with_style(system, world, params, seed, style)
}

pub(super) fn sim(system: System, seed: u64) -> Sim {
    sim_in(system, Style::Classic, seed)
}

pub(super) fn record(sim: &Sim) -> Recorded {
    let mut b = TraceBuilder::new("t", "u", sim.system().name(), json!({}), 19_500);
    sim.record(&mut b)
}

pub(super) fn recorded_doc(sim: &Sim) -> (Recorded, Value) {
    let mut b = TraceBuilder::new("t", "u", sim.system().name(), json!({}), 19_500);
    let r = sim.record(&mut b);
    (r, b.finish())
}

pub(super) fn nodes(doc: &Value) -> Vec<&Value> {
    doc["data"]["nodes"].as_array().unwrap().iter().collect()
}

pub(super) fn edges_of<'d>(doc: &'d Value, op_id: &str) -> Vec<(&'d str, &'d str)> {
    doc["data"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["op_id"] == op_id)
        .map(|e| {
            (
                e["source_full_node_id"].as_str().unwrap(),
                e["target_full_node_id"].as_str().unwrap(),
            )
        })
        .collect()
}
