//! The edges between spans' variables: what a parent hands down, what
//! earlier siblings and linked spans pass on, what flows through each span
//! from its inputs to its outputs, and what children give back to their
//! parent.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde_json::json;

use super::builder::Builder;
use super::read::Span;
use super::span_tree::SpanTree;
use super::span_vars::SpanVars;

/// At most this many earlier siblings pass their outputs to a later one
/// (the ones that ended last).
pub(super) const SIBLINGS: usize = 8;

/// The earlier siblings whose outputs flow into each span of `group`
/// (positions into `spans`, in span order): for each span, the siblings
/// that ended before it started and that no other such sibling followed
/// (started after they ended), the last-ended `SIBLINGS` of them.
pub(super) fn sibling_flows(spans: &[Span], group: &[usize]) -> Vec<(usize, Vec<usize>)> {
    let end = |i: usize| spans[i].end.max(spans[i].start);
    let mut out = Vec::new();
    // Spans already passed, by end time.
    let mut pending: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut frontier: Vec<usize> = Vec::new();
    // The latest (start, position) among spans that ended before the current one.
    let mut latest: Option<(u64, usize)> = None;
    for (pos, &c) in group.iter().enumerate() {
        let start = spans[c].start;
        while let Some(&Reverse((e, p))) = pending.peek() {
            if e > start {
                break;
            }
            pending.pop();
            frontier.push(p);
            let key = (spans[group[p]].start, p);
            if latest.is_none_or(|l| key > l) {
                latest = Some(key);
            }
        }
        if let Some((lstart, lpos)) = latest {
            // P is followed by Q when Q started at or after P ended (and Q
            // comes after P in span order).
            frontier.retain(|&p| {
                let s = &spans[group[p]];
                let pe = end(group[p]);
                !(lstart > pe || (lstart == pe && (s.start < pe || p < lpos)))
            });
        }
        let mut preds = frontier.clone();
        preds.sort_by_key(|&p| Reverse((end(group[p]), p)));
        preds.truncate(SIBLINGS);
        out.push((c, preds.into_iter().map(|p| group[p]).collect()));
        pending.push(Reverse((end(c), pos)));
    }
    out
}

/// The edges of every span: what flows into it lands on its primary input,
/// or else on every output; its inputs flow to its outputs (pairs only to
/// each other); and children whose outputs no later sibling received pass
/// them to their parent's outputs.
pub(super) fn span_edges(
    b: &mut Builder<'_>,
    vars: &[SpanVars],
    tree: &SpanTree,
    index: &HashMap<&str, usize>,
) {
    let spans = b.spans;
    let n = spans.len();
    let parent = &tree.parent;
    // What each span hands down to its children: its primary input, else
    // what its parent handed down.
    let mut carrier: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        carrier[i] = vars[i]
            .primary
            .or_else(|| parent[i].and_then(|p| (p < i).then(|| carrier[p]).flatten()));
    }
    // Earlier siblings, per parent and among the roots.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut received = vec![false; n];
    for group in tree.children.iter().chain(std::iter::once(&tree.roots)) {
        for (c, ps) in sibling_flows(spans, group) {
            for &p in &ps {
                received[p] = true;
            }
            preds[c] = ps;
        }
    }

    for i in 0..n {
        let s = &spans[i];
        let (start, end) = (s.start, s.end.max(s.start));
        let v = &vars[i];
        // What flows in lands on the primary input, or else on every output.
        let mut incoming: Vec<(usize, &str)> = Vec::new();
        if let Some(c) = parent[i].and_then(|p| carrier[p]) {
            incoming.push((c, "parent"));
        }
        for &p in &preds[i] {
            incoming.extend(vars[p].outputs.iter().map(|&o| (o, "sibling")));
        }
        for l in &s.links {
            if l.trace_id != s.trace_id {
                continue;
            }
            if let Some(&li) = index.get(l.span_id.as_str()) {
                if li != i {
                    incoming.extend(vars[li].outputs.iter().map(|&o| (o, "link")));
                }
            }
        }
        match v.primary {
            Some(p) => {
                for (src, flow) in incoming {
                    b.edge(i, src, p, flow, start);
                }
            }
            None => {
                for (src, flow) in incoming {
                    for &o in &v.outputs {
                        b.edge(i, src, o, flow, end);
                    }
                }
            }
        }
        for &inp in &v.inputs {
            for &o in &v.outputs {
                let pair = v.pairs.contains(&(inp, o));
                if pair || !(v.paired.contains(&inp) && v.paired.contains(&o)) {
                    b.edge(i, inp, o, "span", end);
                }
            }
        }
    }
    child_edges(b, vars, tree, &received);
}

/// Children whose outputs no later sibling received pass them to their
/// parent's outputs.
fn child_edges(b: &mut Builder<'_>, vars: &[SpanVars], tree: &SpanTree, received: &[bool]) {
    let spans = b.spans;
    for p in 0..spans.len() {
        let end = spans[p].end.max(spans[p].start);
        for &c in &tree.children[p] {
            if received[c] {
                continue;
            }
            for &o in &vars[c].outputs {
                for &po in &vars[p].outputs {
                    b.edge(p, o, po, "child", end);
                }
            }
        }
    }
}

/// An op with no edge at all reads smartcomment's NONE sentinel; true when
/// there is such an op (and the sentinel's session is wanted).
pub(super) fn none_sentinel(b: &mut Builder<'_>, vars: &[SpanVars]) -> bool {
    let spans = b.spans;
    let lonely: Vec<usize> = (0..spans.len()).filter(|&i| b.op_edges[i] == 0).collect();
    if lonely.is_empty() {
        return false;
    }
    b.node_ids.push("COMMENT:NONE@1".into());
    b.nodes.push(json!({
        "name": "NONE", "class_name": "COMMENT", "version": 1, "value": "NONE",
        "comment": null, "category": "sentinel", "session_id": "__none__",
        "created_at": null, "metadata": {},
    }));
    let none = b.nodes.len() - 1;
    for i in lonely {
        for &o in &vars[i].outputs {
            b.edge(i, none, o, "none", spans[i].end.max(spans[i].start));
        }
    }
    true
}
