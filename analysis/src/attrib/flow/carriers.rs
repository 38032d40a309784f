//! Following one item forward: the variables that carried it, when each
//! stopped being alive, and the op after which none was.

use std::collections::HashMap;

use petgraph::graph::{DiGraph, NodeIndex};

use super::roles::{category, is_question_op, is_retrieval, maker};
use super::types::{Carrier, End, Flow, ItemFlow};
use crate::attrib::holds::Item;
use crate::attrib::verdict::ErrorType;

/// The last carrier of a flow that is a memory unit alive at question time
/// (the message itself when there is none): where its chain ends.
pub(super) fn last_live(flow: &ItemFlow) -> usize {
    flow.carriers
        .iter()
        .rposition(|c| c.store && c.end == End::Alive)
        .unwrap_or(0)
}

impl<'m> Flow<'m> {
    /// Whether a variable's value holds an item.
    pub fn holds(&self, var: usize, item: &Item) -> bool {
        self.matcher.holds(var, item)
    }

    /// Whether a variable is a memory unit: it persists until replaced or
    /// deleted.
    pub(super) fn is_store(&self, var: usize) -> bool {
        let m = self.model;
        if m.vars[var].category.as_deref() == Some("memory_entry") {
            return true;
        }
        if m.read_by(var).iter().any(|&o| is_retrieval(m, o)) {
            return true;
        }
        // A variable a retrieval op returns that an earlier op made.
        let made = maker(m, var);
        made.is_some_and(|o| !is_retrieval(m, o))
            && m.made_by(var).iter().any(|&o| is_retrieval(m, o))
    }

    /// The newer version of `var` and the op that made it, if any.
    pub(super) fn successor(&self, var: usize) -> Option<(usize, usize)> {
        let next = self.newer.get(var).copied().flatten()?;
        maker(self.model, next).map(|o| (o, next))
    }

    /// `var` and its later versions from `next` on, each made (before
    /// `until`) by an op that read the one before: (variable, maker). The
    /// first entry is `var` itself with its reader that made `next`.
    pub(super) fn version_run(&self, var: usize, next: usize, until: usize) -> Vec<(usize, usize)> {
        let m = self.model;
        let Some(first) = maker(m, next) else {
            return Vec::new();
        };
        let mut run = vec![(var, first)];
        if m.vars[next].full_name != m.vars[var].full_name {
            run.push((next, first));
            return run;
        }
        let mut cur = var;
        let mut made = first;
        let mut at = next;
        loop {
            if made >= until || is_question_op(m, made) || !m.inputs(made).contains(&cur) {
                break;
            }
            run.push((at, made));
            match self.successor(at) {
                Some((op, v)) => {
                    cur = at;
                    made = op;
                    at = v;
                }
                None => break,
            }
        }
        run
    }

    /// How many versions of a run (see [`Flow::version_run`]) after the
    /// first hold the item, one after the other.
    pub(super) fn held_along(&self, run: &[(usize, usize)], item: &Item) -> usize {
        let mut leaf = run
            .first()
            .and_then(|&(v, _)| self.matcher.holding_leaf(v, item));
        for (i, &(var, _)) in run.iter().enumerate().skip(1) {
            let kept = leaf.filter(|&l| self.matcher.carries_leaf(var, l));
            leaf = match kept {
                Some(l) => Some(l),
                None => match self.matcher.holding_leaf(var, item) {
                    Some(l) => Some(l),
                    None if var == item.message => None,
                    None => return i - 1,
                },
            };
        }
        run.len().saturating_sub(1)
    }

    /// The op that deleted `var`, if any.
    pub(super) fn deletion(&self, var: usize) -> Option<usize> {
        let m = self.model;
        m.edges_from(var).iter().find_map(|&(e, t)| {
            let edge = &m.edges[e];
            let says =
                |s: Option<&str>| s.is_some_and(|c| c.to_ascii_lowercase().contains("delet"));
            let marker = says(Some(m.class(t))) || says(m.vars[t].category.as_deref());
            (says(edge.comment.as_deref()) || says(edge.category.as_deref()) || marker)
                .then(|| m.op(&edge.op_id))
                .flatten()
        })
    }

    /// Follows an item through the construction ops before `until`.
    pub(super) fn follow(&self, item: &Item, until: usize) -> ItemFlow {
        let (mut carriers, graph, index) = self.collect_carriers(item, until);
        self.set_ends(&mut carriers, &index, until);
        let death = death_of(&carriers);
        ItemFlow {
            carriers,
            graph,
            death,
        }
    }

    /// Every variable that carried an item, starting from its message: the
    /// carriers, the graph of them with the ops that passed the item on, and
    /// each carrier's index by variable.
    fn collect_carriers(
        &self,
        item: &Item,
        until: usize,
    ) -> (Vec<Carrier>, DiGraph<usize, usize>, HashMap<usize, usize>) {
        let m = self.model;
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut graph: DiGraph<usize, usize> = DiGraph::new();
        let mut carriers = vec![Carrier {
            var: item.message,
            made: None,
            end: End::Alive,
            store: false,
        }];
        graph.add_node(item.message);
        index.insert(item.message, 0);
        let mut next = 0;
        while next < carriers.len() {
            let c = carriers[next].var;
            let from = NodeIndex::new(next);
            next += 1;
            for &op in m.read_by(c) {
                if op >= until || is_question_op(m, op) {
                    continue;
                }
                for &o in m.outputs(op) {
                    if let Some(&known) = index.get(&o) {
                        if carriers[known].made == Some(op) {
                            graph.update_edge(from, NodeIndex::new(known), op);
                        }
                        continue;
                    }
                    if maker(m, o) != Some(op) {
                        continue;
                    }
                    // A run of versions, each made from the one before,
                    // holds the item up to the version that lost it. A
                    // version that kept, verbatim, the line that held it in
                    // the version before still holds it, seen without
                    // decoding it.
                    let run = self.version_run(c, o, until);
                    let held = self.held_along(&run, item);
                    let mut prev = from;
                    for (i, &(var, made)) in run.iter().enumerate().take(held + 1).skip(1) {
                        if i > 1 && index.contains_key(&var) {
                            break;
                        }
                        index.insert(var, carriers.len());
                        let to = graph.add_node(var);
                        graph.add_edge(prev, to, made);
                        carriers.push(Carrier {
                            var,
                            made: Some(made),
                            end: End::Alive,
                            store: false,
                        });
                        prev = to;
                    }
                }
            }
        }
        (carriers, graph, index)
    }

    /// Sets why each carrier stopped being alive, and whether it is a
    /// memory unit.
    fn set_ends(&self, carriers: &mut [Carrier], index: &HashMap<usize, usize>, until: usize) {
        let ends: Vec<(End, bool)> = carriers
            .iter()
            .map(|carrier| self.end_of(carrier, index, until))
            .collect();
        for (carrier, (end, store)) in carriers.iter_mut().zip(ends) {
            carrier.end = end;
            carrier.store = store;
        }
    }

    /// Why a carrier stopped being alive before `until`, and whether it is
    /// a memory unit.
    fn end_of(
        &self,
        carrier: &Carrier,
        index: &HashMap<usize, usize>,
        until: usize,
    ) -> (End, bool) {
        let m = self.model;
        let before = |o: Option<usize>| o.filter(|&o| o < until);
        let c = carrier.var;
        let store = self.is_store(c);
        let successor = self.successor(c).filter(|s| s.0 < until);
        let deleted = before(self.deletion(c));
        let end = if store {
            match (successor.map(|s| s.0), deleted) {
                (Some(s), Some(d)) if d < s => End::Deleted(d),
                (Some(s), _) => End::Replaced(s),
                (None, Some(d)) => End::Deleted(d),
                (None, None) => End::Alive,
            }
        } else {
            let readers: Vec<usize> = m
                .read_by(c)
                .iter()
                .copied()
                .filter(|&o| o < until && !is_question_op(m, o))
                .collect();
            let lost_by_successor = successor.filter(|(_, t)| !index.contains_key(t));
            let others: Vec<usize> = readers
                .iter()
                .copied()
                .filter(|&o| Some(o) != lost_by_successor.map(|s| s.0))
                .collect();
            let last = if lost_by_successor.is_some() && !others.is_empty() {
                others.last().copied()
            } else {
                readers.last().copied()
            };
            match (last, carrier.made) {
                (Some(o), _) => End::Consumed(o),
                (None, Some(made)) => End::Consumed(made),
                // A message nothing read: it never entered the system.
                (None, None) => End::Alive,
            }
        };
        (end, store)
    }

    /// The type of a death at `op`, carrier `holder` being lost there.
    pub(super) fn death_type(&self, flow: &ItemFlow, op: usize, holder: usize) -> ErrorType {
        let m = self.model;
        if flow.carriers[holder].end == End::Deleted(op) {
            return ErrorType::DeletionError;
        }
        if category(m, op).eq_ignore_ascii_case("extraction") {
            return ErrorType::ExtractionError;
        }
        let stored = flow
            .carriers
            .iter()
            .any(|c| c.store && c.made.is_some_and(|o| o < op));
        if stored {
            return ErrorType::UpdateError;
        }
        ErrorType::ExtractionError
    }
}

/// The first op after which no carrier is alive, and the carrier that held
/// the item last: carrier i is alive from the op that made it to the op at
/// its end.
fn death_of(carriers: &[Carrier]) -> Option<(usize, usize)> {
    // A message nothing read never entered the system: no op lost it.
    let first = carriers[0].end.at()?;
    let mut order: Vec<usize> = (1..carriers.len()).collect();
    order.sort_by_key(|&i| carriers[i].made);
    let mut until = Some(first);
    let mut holder = 0;
    for i in order {
        let (Some(u), Some(made)) = (until, carriers[i].made) else {
            break;
        };
        if made > u {
            break;
        }
        match carriers[i].end.at() {
            None => until = None,
            Some(e) if e > u => {
                until = Some(e);
                holder = i;
            }
            Some(_) => {}
        }
    }
    until.map(|op| (op, holder))
}
