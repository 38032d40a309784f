//! The chain of steps a verdict shows: from the evidence message through
//! the variables that carried it.

use petgraph::algo::astar;
use petgraph::algo::dominators::simple_fast;
use petgraph::graph::NodeIndex;

use super::roles::op_name;
use super::types::{Flow, ItemFlow};
use crate::attrib::holds::Item;
use crate::attrib::verdict::Step;

/// How many steps of a chain a verdict keeps at each end.
const CHAIN_ENDS: usize = 4;

impl<'m> Flow<'m> {
    /// A step of a chain: `op` did `what` to `var`.
    pub(super) fn step(&self, op: usize, var: usize, what: &str) -> Step {
        let m = self.model;
        Step {
            op_id: m.ops[op].op_id.clone(),
            op_name: op_name(m, op).to_string(),
            var: m.vars[var].full_node_id.clone(),
            what: what.to_string(),
        }
    }

    /// The first step of a chain: the evidence message itself (no op).
    pub(super) fn evidence_step(&self, item: &Item) -> Step {
        Step {
            op_id: String::new(),
            op_name: String::new(),
            var: self.model.vars[item.message].full_node_id.clone(),
            what: "evidence".into(),
        }
    }

    /// The chain of an item from its message to carrier `to`: the shortest
    /// path of carriers in the flow graph, runs of versions of one variable
    /// folded, ends kept. A step that is not on every route of the item to
    /// `to` (it does not dominate `to` in the flow graph) says so.
    pub(super) fn chain(&self, flow: &ItemFlow, to: usize) -> Vec<Step> {
        let m = self.model;
        let dominators = simple_fast(&flow.graph, NodeIndex::new(0));
        let every_route: Vec<usize> = dominators
            .dominators(NodeIndex::new(to))
            .map(|d| d.map(|n| n.index()).collect())
            .unwrap_or_default();
        let held = |n: usize, versions: Option<usize>| {
            let mut what = match versions {
                Some(k) => format!("held ({k} versions)"),
                None => "held".to_string(),
            };
            if !every_route.contains(&n) {
                what.push_str(" on one of several routes");
            }
            what
        };
        let path = astar(
            &flow.graph,
            NodeIndex::new(0),
            |n| n.index() == to,
            |_| 1usize,
            |_| 0usize,
        )
        .map(|(_, p)| p)
        .unwrap_or_default();
        let mut steps: Vec<Step> = Vec::new();
        let mut folded = 0usize;
        for n in path.into_iter().skip(1) {
            let c = &flow.carriers[n.index()];
            let op = c.made.unwrap_or_default();
            let same_name = steps.last().is_some_and(|s: &Step| {
                s.var.rsplit_once('@').map(|x| x.0) == Some(m.vars[c.var].full_name.as_str())
            });
            if same_name {
                folded += 1;
                let last = steps.len() - 1;
                steps[last] = self.step(op, c.var, &held(n.index(), Some(folded + 1)));
            } else {
                folded = 0;
                steps.push(self.step(op, c.var, &held(n.index(), None)));
            }
        }
        if steps.len() > 2 * CHAIN_ENDS {
            let tail = steps.split_off(steps.len() - CHAIN_ENDS);
            steps.truncate(CHAIN_ENDS);
            steps.extend(tail);
        }
        steps
    }

    /// An item in words: its message and the start of its text.
    pub(super) fn describe_item(&self, item: &Item) -> String {
        let m = self.model;
        let text = &item.text;
        let short: String = text.chars().take(80).collect();
        let cut = if short.len() < text.len() { "…" } else { "" };
        format!("{} ({short}{cut})", m.vars[item.message].full_node_id)
    }
}
