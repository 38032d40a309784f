//! Traces whose answer is known to have a given size, for the suite's growth
//! workload: one smartcomment export per size in which the backward closure
//! of the single `prediction` node holds exactly `closure` nodes.
//!
//! The closure is laid out in layers about √closure wide and as many deep,
//! as a trace's history is (each layer derived from the one before it):
//! every node has two edges into the next layer (so every node reaches the
//! prediction, which the last layer feeds), every tenth node a parallel
//! edge, every twentieth an edge back into the layer before (a cycle).
//! Beside it, half as many nodes again that are not in the closure: a tangle
//! of their own, fed by edges out of the closure and by the prediction, so
//! that a query has to follow the edges rather than read the whole trace.
//! All edges into one node belong to one op (the step that wrote it).

use std::io::{self, Write};
use std::path::Path;

use memtrace::gen::set::MANIFEST;
use memtrace::gen::synth::{json, stamp, Rng};

use crate::error::{io, Result};

const CLASSES: &[&str] = &[
    "message",
    "memory",
    "retrieved_memories",
    "prompt",
    "llm_output",
    "query",
];
const KINDS: &[&str] = &["update", "retrieval", "llm", "transform"];
const WORDS: &[&str] = &[
    "the",
    "user",
    "said",
    "she",
    "moved",
    "to",
    "Paris",
    "in",
    "May",
    "likes",
    "hiking",
    "with",
    "her",
    "dog",
    "memory",
    "fact",
    "retrieved",
    "answer",
    "job",
    "bakery",
];

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrowthCounts {
    /// Variables (closure, prediction and the rest).
    pub variables: usize,
    /// Edges.
    pub edges: usize,
    /// Ops.
    pub ops: usize,
    /// Layers of the closure (its depth from the prediction).
    pub layers: usize,
}

/// The edges of a growth trace, as (source, target) node numbers; node
/// `closure` is the prediction. Returns them with the node count and layers.
pub fn edges(closure: usize, seed: u64) -> (Vec<(usize, usize)>, usize, usize) {
    let n = closure.max(1);
    let width = (n as f64).sqrt().ceil() as usize;
    let layers = n.div_ceil(width);
    let layer = |k: usize| (k * width)..((k + 1) * width).min(n);
    let pred = n;
    let others = n / 2;
    let first_other = n + 1;
    let mut rng = Rng::new(seed);
    let mut e = Vec::with_capacity(3 * n + 3 * others);
    for i in 0..n {
        let k = i / width;
        if k + 1 < layers {
            let next = layer(k + 1);
            for _ in 0..2 {
                e.push((i, next.start + rng.below(next.len())));
            }
            if i % 10 == 0 {
                // A parallel edge.
                let last = e[e.len() - 1];
                e.push(last);
            }
        } else {
            e.push((i, pred));
        }
        if k > 0 && i % 20 == 7 {
            // Back into the layer before: a cycle inside the closure.
            let prev = layer(k - 1);
            e.push((i, prev.start + rng.below(prev.len())));
        }
        if others > 0 && i % 4 == 0 {
            // Out of the closure into the other nodes.
            e.push((i, first_other + rng.below(others)));
        }
    }
    for j in 0..others {
        for _ in 0..2 {
            e.push((first_other + rng.below(others), first_other + j));
        }
    }
    if others > 0 {
        e.push((pred, first_other));
    }
    (e, n + 1 + others, layers)
}

/// Writes one export whose prediction's backward closure holds `closure` nodes.
pub fn write_export(
    graph_id: &str,
    closure: usize,
    seed: u64,
    out: &mut dyn Write,
) -> io::Result<GrowthCounts> {
    let (edges, nodes, layers) = edges(closure, seed);
    let pred = closure.max(1);
    let sessions = (nodes / 2000).max(1);
    let mut rng = Rng::new(seed ^ 0x5eed);
    let g = json(graph_id);
    let common = |kind: &str, ms: u64, session: usize| {
        format!("\"created_at\":\"{}\",\"filename\":\"growth.py\",\"lineno\":{},\"graph_id\":{g},\"user_id\":\"bench\",\"project_id\":\"growth\",\"session_id\":\"session-{session:08x}\",\"metadata\":{{\"kind\":\"{kind}\"}},\"trigger_point\":\"growth.py:{}\"", stamp(ms), ms % 500 + 1, ms % 500 + 1)
    };
    let name = |i: usize| -> (String, &str) {
        if i == pred {
            ("answer".to_string(), "prediction")
        } else if i < pred {
            (format!("c{i}"), CLASSES[i % CLASSES.len()])
        } else {
            (format!("u{i}"), CLASSES[i % CLASSES.len()])
        }
    };
    let full_id = |i: usize| {
        let (n, class) = name(i);
        format!("{class}:{n}@1")
    };
    write!(out, "{{\"graph_id\":{g},\"user_id\":\"bench\",\"project_id\":\"growth\",\"storage_path\":null,\"strict\":false,\"driver_type\":\"in_memory\",\"created_at\":\"{}\",\"metadata\":{{\"closure\":{closure}}},\"data\":{{\"nodes\":[", stamp(0))?;
    let mut ms = 0u64;
    for i in 0..nodes {
        if i > 0 {
            out.write_all(b",")?;
        }
        ms += 1;
        let (n, class) = name(i);
        let mut value = String::new();
        for w in 0..(4 + rng.below(12)) {
            if w > 0 {
                value.push(' ');
            }
            value.push_str(WORDS[rng.below(WORDS.len())]);
        }
        write!(out, "{{\"name\":\"{n}\",\"version\":1,\"value\":{},\"comment\":null,\"category\":\"{class}\",\"class_name\":\"{class}\",{},\"full_name\":\"{class}:{n}\",\"node_id\":\"{n}@1\",\"full_node_id\":{}}}", json(&value), common("var", ms, i % sessions), json(&full_id(i)))?;
    }
    out.write_all(b"],\"edges\":[")?;
    let mut targets = vec![false; nodes];
    for (j, &(s, t)) in edges.iter().enumerate() {
        if j > 0 {
            out.write_all(b",")?;
        }
        ms += 1;
        targets[t] = true;
        write!(out, "{{\"edge_id\":\"edge-{j:08x}\",\"op_id\":\"op-{t:08x}\",\"category\":\"{}\",\"comment\":null,\"source_full_node_id\":{},\"target_full_node_id\":{},{}}}", KINDS[t % KINDS.len()], json(&full_id(s)), json(&full_id(t)), common("edge", ms, t % sessions))?;
    }
    out.write_all(b"],\"operations\":[")?;
    let mut ops = 0;
    for (t, _) in targets.iter().enumerate().filter(|(_, x)| **x) {
        if ops > 0 {
            out.write_all(b",")?;
        }
        ops += 1;
        ms += 1;
        write!(out, "{{\"op_id\":\"op-{t:08x}\",\"op_name\":\"memory_system.step_{}\",\"comment\":\"growth op\",\"category\":\"{}\",{}}}", t % 7, KINDS[t % KINDS.len()], common("op", ms, t % sessions))?;
    }
    out.write_all(b"],\"sessions\":[")?;
    for s in 0..sessions {
        if s > 0 {
            out.write_all(b",")?;
        }
        write!(out, "{{\"session_id\":\"session-{s:08x}\",\"session_name\":\"memory_construction\",\"comment\":null,\"category\":\"session\",{}}}", common("session", s as u64, s).replacen(&format!("\"session_id\":\"session-{s:08x}\","), "", 1))?;
    }
    out.write_all(b"]}}")?;
    Ok(GrowthCounts {
        variables: nodes,
        edges: edges.len(),
        ops,
        layers,
    })
}

/// Writes a set of one growth trace into the folder `set` (the export and a
/// manifest that the suite's steps read), and returns what was written.
pub fn write_set(set: &Path, closure: usize, seed: u64) -> Result<GrowthCounts> {
    std::fs::create_dir_all(set).map_err(io(set.display()))?;
    let file = format!("growth-{closure}.json");
    let path = set.join(&file);
    let f = std::fs::File::create(&path).map_err(io(path.display()))?;
    let mut w = io::BufWriter::new(f);
    let c = write_export(&format!("growth-{closure}"), closure, seed, &mut w)
        .and_then(|c| w.flush().map(|()| c))
        .map_err(io(path.display()))?;
    let manifest = serde_json::json!({
        "traces": [{
            "file": file,
            "variables": c.variables,
            "ops": c.ops,
            "edges": c.edges,
        }]
    });
    let mpath = set.join(MANIFEST);
    std::fs::write(&mpath, serde_json::to_vec_pretty(&manifest)?).map_err(io(mpath.display()))?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn closure_of(edges: &[(usize, usize)], start: usize, max: Option<usize>) -> usize {
        let mut into: HashMap<usize, Vec<usize>> = HashMap::new();
        for &(s, t) in edges {
            into.entry(t).or_default().push(s);
        }
        let mut seen = HashSet::from([start]);
        let mut frontier = vec![start];
        let mut depth = 0;
        while !frontier.is_empty() && max.is_none_or(|m| depth < m) {
            depth += 1;
            let mut next = Vec::new();
            for n in frontier {
                for &s in into.get(&n).into_iter().flatten() {
                    if seen.insert(s) {
                        next.push(s);
                    }
                }
            }
            frontier = next;
        }
        seen.len() - 1
    }

    #[test]
    fn the_closure_has_the_size_asked_for() {
        for size in [1, 7, 1000, 2500] {
            let (e, nodes, layers) = edges(size, 3);
            assert_eq!(closure_of(&e, size, None), size, "size {size}");
            assert!(nodes > size);
            assert!(layers >= 1);
            assert!(closure_of(&e, size, Some(3)) <= size);
        }
    }

    #[test]
    fn the_export_is_valid_json_with_one_prediction() {
        let mut out = Vec::new();
        let c = write_export("g", 100, 1, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let nodes = v["data"]["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), c.variables);
        assert_eq!(v["data"]["edges"].as_array().unwrap().len(), c.edges);
        assert_eq!(v["data"]["operations"].as_array().unwrap().len(), c.ops);
        let predictions = nodes
            .iter()
            .filter(|n| n["class_name"] == "prediction")
            .count();
        assert_eq!(predictions, 1);
    }
}
