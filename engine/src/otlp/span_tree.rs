//! The spans of a trace in span order, and their tree: parents, children
//! and roots, a parent that is missing or in a cycle making a root.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};

use super::read::Span;

/// The spans in span order: by start, a longer span (a parent) before a
/// shorter one that starts with it, then by depth. Beside each, whether its
/// parent chain is broken by a cycle.
pub(super) fn in_span_order(mut spans: Vec<Span>) -> (Vec<Span>, Vec<bool>) {
    let index: HashMap<String, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id.clone(), i))
        .collect();
    let depth = depths(&spans, &index);
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].start, Reverse(spans[i].end), depth[i].0, i));
    let mut sorted = Vec::with_capacity(spans.len());
    let mut broken = Vec::with_capacity(spans.len());
    let mut taken: Vec<Option<Span>> = spans.drain(..).map(Some).collect();
    for &i in &order {
        if let Some(s) = taken[i].take() {
            sorted.push(s);
            broken.push(depth[i].1);
        }
    }
    (sorted, broken)
}

/// The span tree of a trace's spans in span order.
pub(super) struct SpanTree {
    /// Each span's parent in the trace; a parent that is missing (or in a
    /// cycle) makes the span a root.
    pub(super) parent: Vec<Option<usize>>,
    /// Each span's children, in span order.
    pub(super) children: Vec<Vec<usize>>,
    /// The spans without a parent, in span order.
    pub(super) roots: Vec<usize>,
}

impl SpanTree {
    /// The tree of `spans` (in span order, `broken` beside them as
    /// [`in_span_order`] gives them), `index` finding a span by its id.
    pub(super) fn new(spans: &[Span], broken: &[bool], index: &HashMap<&str, usize>) -> SpanTree {
        let n = spans.len();
        let parent: Vec<Option<usize>> = (0..n)
            .map(|i| {
                let p = spans[i].parent.as_deref()?;
                (!broken[i])
                    .then(|| index.get(p).copied())
                    .flatten()
                    .filter(|&p| p != i)
            })
            .collect();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for (i, p) in parent.iter().enumerate() {
            match *p {
                Some(p) => children[p].push(i),
                None => roots.push(i),
            }
        }
        SpanTree {
            parent,
            children,
            roots,
        }
    }

    /// Whether span `i` names a parent that is not in the trace (or is in
    /// a cycle).
    pub(super) fn parent_missing(&self, spans: &[Span], i: usize) -> bool {
        self.parent[i].is_none() && spans[i].parent.is_some()
    }
}

/// Each span's depth in the tree, and whether its parent chain is broken
/// by a cycle (the span is then read as a root).
fn depths(spans: &[Span], index: &HashMap<String, usize>) -> Vec<(usize, bool)> {
    let n = spans.len();
    let mut out: Vec<Option<(usize, bool)>> = vec![None; n];
    for i in 0..n {
        let mut path = Vec::new();
        let mut on_path = HashSet::new();
        let mut cur = i;
        let base = loop {
            if let Some(d) = out[cur] {
                break Some(d.0 + 1);
            }
            if !on_path.insert(cur) {
                // A cycle: the span where it closes becomes a root.
                out[cur] = Some((0, true));
                path.retain(|&p| p != cur);
                break Some(1);
            }
            path.push(cur);
            match spans[cur].parent.as_deref().and_then(|p| index.get(p)) {
                Some(&p) if p != cur => cur = p,
                _ => break None,
            }
        };
        // `path` runs from i up to the topmost span found.
        let base = base.unwrap_or(0);
        for (k, &p) in path.iter().rev().enumerate() {
            if out[p].is_none() {
                out[p] = Some((base + k, false));
            }
        }
    }
    out.into_iter().map(|d| d.unwrap_or((0, false))).collect()
}
