//! Synthetic smartcomment exports of any size, for benchmarks and crash
//! tests: a valid graph with sessions, versioned variables, ops and edges
//! (parallel edges and cycles included) and large values that repeat, as
//! long-context snapshots do. Deterministic for a seed. Each export is
//! written on one line, so several of them make a JSON Lines file.

use std::io::{self, Write};

/// What to generate.
#[derive(Debug, Clone)]
pub struct SynthSpec {
    /// The graph id.
    pub graph_id: String,
    /// Number of variable versions.
    pub variables: usize,
    /// Number of edges.
    pub edges: usize,
    /// Number of sessions.
    pub sessions: usize,
    /// Seed of the generator.
    pub seed: u64,
}

/// How many records of each kind were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SynthCounts {
    /// Sessions.
    pub sessions: usize,
    /// Variables.
    pub variables: usize,
    /// Operations.
    pub ops: usize,
    /// Edges.
    pub edges: usize,
}

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

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
    "and",
    "likes",
    "hiking",
    "with",
    "her",
    "dog",
    "memory",
    "fact",
    "updated",
    "retrieved",
    "answer",
    "question",
    "about",
    "job",
    "at",
    "a",
    "bakery",
    "since",
    "2021",
    "Caroline",
    "Melanie",
    "painting",
    "camping",
    "last",
    "week",
    "birthday",
    "gift",
    "book",
    "café",
    "über",
    "naïve",
];

const CLASSES: &[&str] = &[
    "message",
    "memory",
    "prompt",
    "llm_output",
    "query",
    "answer",
];

fn sentence(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len())]);
    }
    s.push('.');
    s
}

/// `s` as a JSON string literal, quotes included.
pub fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A smartcomment timestamp (`YYYY-MM-DD HH:MM:SS.mmm`) `ms` milliseconds
/// into the synthetic day.
pub fn stamp(ms: u64) -> String {
    let s = ms / 1000;
    format!(
        "2026-11-22 {:02}:{:02}:{:02}.{:03}",
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60,
        ms % 1000
    )
}

/// Writes one export object (no trailing newline).
pub fn write_export(spec: &SynthSpec, out: &mut dyn Write) -> io::Result<SynthCounts> {
    let mut rng = Rng::new(spec.seed);
    let g = json(&spec.graph_id);
    let sessions = spec.sessions.max(1);
    let variables = spec.variables.max(1);
    let ops = (spec.edges / 2).max(1);
    let snapshots: Vec<String> = (0..4)
        .map(|i| format!("[snapshot {i}] {}", sentence(&mut rng, 600)))
        .collect();
    let mut ms = 0u64;
    let common = |kind: &str, ms: u64, session: usize| {
        format!("\"created_at\":\"{}\",\"filename\":\"synth.py\",\"lineno\":{},\"graph_id\":{g},\"user_id\":\"bench\",\"project_id\":\"synthetic\",\"session_id\":\"session-{session:08x}\",\"metadata\":{{\"kind\":\"{kind}\",\"n\":{ms}}},\"trigger_point\":\"synth.py:{}\"", stamp(ms), ms % 500 + 1, ms % 500 + 1)
    };
    write!(out, "{{\"graph_id\":{g},\"user_id\":\"bench\",\"project_id\":\"synthetic\",\"storage_path\":null,\"strict\":false,\"driver_type\":\"in_memory\",\"created_at\":\"{}\",\"metadata\":{{\"seed\":{}}},\"data\":{{\"nodes\":[", stamp(0), spec.seed)?;
    let full_id = |i: usize| {
        format!(
            "{}:v{}@{}",
            CLASSES[(i / 3) % CLASSES.len()],
            i / 3,
            i % 3 + 1
        )
    };
    for i in 0..variables {
        if i > 0 {
            out.write_all(b",")?;
        }
        ms += 1;
        let class = CLASSES[(i / 3) % CLASSES.len()];
        let value = if i % 50 == 49 {
            snapshots[rng.below(snapshots.len())].clone()
        } else {
            let n = 5 + rng.below(40);
            sentence(&mut rng, n)
        };
        write!(out, "{{\"name\":\"v{}\",\"version\":{},\"value\":{},\"comment\":null,\"category\":\"{class}\",\"class_name\":\"{class}\",{},\"full_name\":\"{class}:v{}\",\"node_id\":\"v{}@{}\",\"full_node_id\":{}}}", i / 3, i % 3 + 1, json(&value), common("var", ms, i % sessions), i / 3, i / 3, i % 3 + 1, json(&full_id(i)))?;
    }
    out.write_all(b"],\"edges\":[")?;
    let (mut last_s, mut last_t) = (0, 0);
    for j in 0..spec.edges {
        if j > 0 {
            out.write_all(b",")?;
        }
        ms += 1;
        let (s, t) = if j % 10 == 9 {
            (last_s, last_t)
        } else {
            (rng.below(variables), rng.below(variables))
        };
        (last_s, last_t) = (s, t);
        let op = (j / 2) % ops;
        write!(out, "{{\"edge_id\":\"edge-{j:08x}\",\"op_id\":\"op-{op:08x}\",\"category\":\"update\",\"comment\":null,\"source_full_node_id\":{},\"target_full_node_id\":{},{}}}", json(&full_id(s)), json(&full_id(t)), common("edge", ms, op % sessions))?;
    }
    out.write_all(b"],\"operations\":[")?;
    for o in 0..ops {
        if o > 0 {
            out.write_all(b",")?;
        }
        ms += 1;
        write!(out, "{{\"op_id\":\"op-{o:08x}\",\"op_name\":\"memory_system.step_{}\",\"comment\":\"synthetic op\",\"category\":\"update\",{}}}", o % 7, common("op", ms, o % sessions))?;
    }
    out.write_all(b"],\"sessions\":[")?;
    for s in 0..sessions {
        if s > 0 {
            out.write_all(b",")?;
        }
        write!(out, "{{\"session_id\":\"session-{s:08x}\",\"session_name\":\"memory_construction\",\"comment\":null,\"category\":\"session\",{}}}", common("session", s as u64, s).replacen(&format!("\"session_id\":\"session-{s:08x}\","), "", 1))?;
    }
    out.write_all(b"]}}")?;
    Ok(SynthCounts {
        sessions,
        variables,
        ops,
        edges: spec.edges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes_and_valid_json() {
        let spec = SynthSpec {
            graph_id: "g".into(),
            variables: 200,
            edges: 400,
            sessions: 3,
            seed: 7,
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_export(&spec, &mut a).unwrap();
        write_export(&spec, &mut b).unwrap();
        assert_eq!(a, b);
        let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(v["data"]["nodes"].as_array().unwrap().len(), 200);
        assert_eq!(v["data"]["edges"].as_array().unwrap().len(), 400);
        assert_eq!(v["data"]["operations"].as_array().unwrap().len(), 200);
        assert!(!a.contains(&b'\n'));
    }
}
