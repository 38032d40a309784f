//! Builds smartcomment exports record by record, the way smartcomment's
//! tracer records a run: sessions, versioned variables, ops whose inputs
//! and outputs become edges (the `COMMENT:NONE@1` sentinel standing in for a
//! missing side), mutations with their version-lineage edge, explicit links
//! through the `__none_op__` op, and MemTraceBench annotations.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{json, Map, Value};

use memtrace_engine::civil_from_days;

/// A variable version recorded by the builder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarRef {
    /// `class_name:name` or `name`.
    pub full_name: String,
    /// Its version.
    pub version: u32,
    /// `full_name@version`.
    pub full_node_id: String,
}

/// The sentinel node's full node id.
pub const SENTINEL_NODE: &str = "COMMENT:NONE@1";
/// The sentinel op's id.
pub const SENTINEL_OP: &str = "__none_op__";
/// The sentinel session's id.
pub const SENTINEL_SESSION: &str = "__none__";

/// Builds one export object.
#[derive(Debug)]
pub struct TraceBuilder {
    graph_id: String,
    user_id: String,
    project_id: String,
    metadata: Value,
    created_at: String,
    clock_ms: i64,
    sessions: Vec<Value>,
    nodes: Vec<Value>,
    edges: Vec<Value>,
    ops: Vec<Value>,
    annotations: Vec<Value>,
    latest: HashMap<String, u32>,
    session: String,
    counter: u64,
    sentinels: bool,
}

/// Milliseconds at the start of a day given as days since 1970-01-01.
fn day_ms(day: i64) -> i64 {
    day * 86_400_000
}

fn stamp(ms: i64) -> String {
    let day = ms.div_euclid(86_400_000);
    let rest = ms.rem_euclid(86_400_000);
    let (h, m, s, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    format!("{} {h:02}:{m:02}:{s:02}.{milli:03}", civil_from_days(day))
}

/// A stable line number per op name, so records look like a real program's.
fn line_of(name: &str) -> i64 {
    let mut h: u32 = 2166136261;
    for b in name.bytes() {
        h = (h ^ b as u32).wrapping_mul(16777619);
    }
    (h % 900 + 10) as i64
}

impl TraceBuilder {
    /// Starts a trace whose clock begins on `start_day` (days since 1970-01-01).
    pub fn new(
        graph_id: &str,
        user_id: &str,
        project_id: &str,
        metadata: Value,
        start_day: i64,
    ) -> TraceBuilder {
        let clock_ms = day_ms(start_day) + 9 * 3_600_000;
        TraceBuilder {
            graph_id: graph_id.into(),
            user_id: user_id.into(),
            project_id: project_id.into(),
            metadata,
            created_at: stamp(clock_ms),
            clock_ms,
            sessions: Vec::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
            ops: Vec::new(),
            annotations: Vec::new(),
            latest: HashMap::new(),
            session: SENTINEL_SESSION.into(),
            counter: 0,
            sentinels: false,
        }
    }

    fn tick(&mut self) -> String {
        self.clock_ms += 7;
        stamp(self.clock_ms)
    }

    fn next_id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        // Deterministic, uuid-like hex ids.
        let mut x = self.counter.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (self.graph_id.len() as u64).rotate_left(17);
        x ^= x >> 29;
        format!("{prefix}-{x:016x}{:016x}", self.counter)
    }

    fn base(&mut self, filename: &str, lineno: i64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("created_at".into(), json!(self.tick()));
        m.insert("filename".into(), json!(filename));
        m.insert("lineno".into(), json!(lineno));
        m
    }

    fn ids(&self, m: &mut Map<String, Value>) {
        m.insert("graph_id".into(), json!(self.graph_id));
        m.insert("user_id".into(), json!(self.user_id));
        m.insert("project_id".into(), json!(self.project_id));
    }

    /// Moves the clock to a later day (never backwards).
    pub fn set_day(&mut self, day: i64) {
        let at = day_ms(day) + 9 * 3_600_000;
        if at > self.clock_ms {
            self.clock_ms = at;
        }
    }

    /// Opens a session; later records belong to it. Returns its id.
    pub fn session(&mut self, name: &str, category: &str, metadata: Value) -> String {
        let id = self.next_id("session");
        let mut m = self.base("memsim.py", line_of(name));
        m.insert("session_id".into(), json!(id));
        m.insert("session_name".into(), json!(name));
        self.ids(&mut m);
        m.insert("comment".into(), Value::Null);
        m.insert("category".into(), json!(category));
        m.insert("metadata".into(), metadata);
        m.insert(
            "trigger_point".into(),
            json!(format!("memsim.py:{}", line_of(name))),
        );
        self.sessions.push(Value::Object(m));
        self.session = id.clone();
        id
    }

    /// Records a variable; a full name seen before gets its next version.
    pub fn variable(
        &mut self,
        class: Option<&str>,
        name: &str,
        value: &str,
        category: &str,
        comment: Option<&str>,
        metadata: Value,
    ) -> VarRef {
        let full_name = match class {
            Some(c) if !c.is_empty() => format!("{c}:{name}"),
            _ => name.to_string(),
        };
        let version = self.latest.get(&full_name).map_or(1, |v| v + 1);
        self.latest.insert(full_name.clone(), version);
        let full_node_id = format!("{full_name}@{version}");
        let line = line_of(category);
        let session = self.session.clone();
        let mut m = self.base("memsim.py", line);
        m.insert("name".into(), json!(name));
        m.insert("version".into(), json!(version));
        m.insert("value".into(), json!(value));
        m.insert("comment".into(), comment.map_or(Value::Null, |c| json!(c)));
        m.insert("category".into(), json!(category));
        m.insert("graph_id".into(), json!(self.graph_id));
        m.insert("user_id".into(), json!(self.user_id));
        m.insert("class_name".into(), class.map_or(Value::Null, |c| json!(c)));
        m.insert("project_id".into(), json!(self.project_id));
        m.insert("session_id".into(), json!(session));
        m.insert("metadata".into(), metadata);
        m.insert("trigger_point".into(), json!(format!("memsim.py:{line}")));
        m.insert("full_name".into(), json!(full_name));
        m.insert("node_id".into(), json!(format!("{name}@{version}")));
        m.insert("full_node_id".into(), json!(full_node_id));
        self.nodes.push(Value::Object(m));
        VarRef {
            full_name,
            version,
            full_node_id,
        }
    }

    fn ensure_sentinels(&mut self) {
        if self.sentinels {
            return;
        }
        self.sentinels = true;
        let at = stamp(self.clock_ms);
        let common = |m: &mut Map<String, Value>, this: &TraceBuilder| {
            m.insert("graph_id".into(), json!(this.graph_id));
            m.insert("user_id".into(), json!(this.user_id));
            m.insert("project_id".into(), json!(this.project_id));
        };
        let mut s = Map::new();
        s.insert("created_at".into(), json!(at));
        s.insert("filename".into(), json!("<sentinel>"));
        s.insert("lineno".into(), json!(0));
        s.insert("session_id".into(), json!(SENTINEL_SESSION));
        s.insert("session_name".into(), json!("NONE sentinel"));
        common(&mut s, self);
        s.insert("comment".into(), Value::Null);
        s.insert("category".into(), json!("sentinel"));
        s.insert("metadata".into(), json!({}));
        s.insert("trigger_point".into(), json!("<sentinel>:0"));
        self.sessions.push(Value::Object(s));
        let mut o = Map::new();
        o.insert("created_at".into(), json!(at));
        o.insert("filename".into(), json!("<sentinel>"));
        o.insert("lineno".into(), json!(0));
        o.insert("op_id".into(), json!(SENTINEL_OP));
        o.insert("op_name".into(), json!("NONE sentinel"));
        o.insert("comment".into(), Value::Null);
        o.insert("category".into(), json!("sentinel"));
        common(&mut o, self);
        o.insert("session_id".into(), json!(SENTINEL_SESSION));
        o.insert("metadata".into(), json!({}));
        o.insert("trigger_point".into(), json!("<sentinel>:0"));
        self.ops.push(Value::Object(o));
        let mut n = Map::new();
        n.insert("created_at".into(), json!(at));
        n.insert("filename".into(), json!("<sentinel>"));
        n.insert("lineno".into(), json!(0));
        n.insert("name".into(), json!("NONE"));
        n.insert("version".into(), json!(1));
        n.insert("value".into(), json!("NONE"));
        n.insert("comment".into(), Value::Null);
        n.insert("category".into(), json!("sentinel"));
        n.insert("graph_id".into(), json!(self.graph_id));
        n.insert("user_id".into(), json!(self.user_id));
        n.insert("class_name".into(), json!("COMMENT"));
        n.insert("project_id".into(), json!(self.project_id));
        n.insert("session_id".into(), json!(SENTINEL_SESSION));
        n.insert("metadata".into(), json!({}));
        n.insert("trigger_point".into(), json!("<sentinel>:0"));
        n.insert("full_name".into(), json!("COMMENT:NONE"));
        n.insert("node_id".into(), json!("NONE@1"));
        n.insert("full_node_id".into(), json!(SENTINEL_NODE));
        self.nodes.push(Value::Object(n));
    }

    fn edge(
        &mut self,
        op_id: &str,
        category: &str,
        source: &str,
        target: &str,
        comment: Option<&str>,
        lineno: i64,
    ) {
        let id = self.next_id("edge");
        let mut m = self.base("memsim.py", lineno);
        m.insert("edge_id".into(), json!(id));
        self.ids(&mut m);
        m.insert("session_id".into(), json!(self.session));
        m.insert("op_id".into(), json!(op_id));
        m.insert("category".into(), json!(category));
        m.insert("source_full_node_id".into(), json!(source));
        m.insert("target_full_node_id".into(), json!(target));
        m.insert("comment".into(), comment.map_or(Value::Null, |c| json!(c)));
        m.insert("metadata".into(), json!({}));
        m.insert("trigger_point".into(), json!(format!("memsim.py:{lineno}")));
        self.edges.push(Value::Object(m));
    }

    /// Adds an op record in the current session; returns its id and line.
    fn push_op(
        &mut self,
        name: &str,
        category: &str,
        comment: Option<&str>,
        metadata: Value,
    ) -> (String, i64) {
        let id = self.next_id("op");
        let line = line_of(name);
        let mut m = self.base("memsim.py", line);
        m.insert("op_id".into(), json!(id));
        m.insert("op_name".into(), json!(name));
        m.insert("comment".into(), comment.map_or(Value::Null, |c| json!(c)));
        m.insert("category".into(), json!(category));
        self.ids(&mut m);
        m.insert("session_id".into(), json!(self.session));
        m.insert("metadata".into(), metadata);
        m.insert("trigger_point".into(), json!(format!("memsim.py:{line}")));
        self.ops.push(Value::Object(m));
        (id, line)
    }

    /// Records an op: an edge from every input to every output, the sentinel
    /// node standing in for a missing side. Returns the op id.
    pub fn op(
        &mut self,
        name: &str,
        category: &str,
        comment: Option<&str>,
        inputs: &[&VarRef],
        outputs: &[&VarRef],
        metadata: Value,
    ) -> String {
        if inputs.is_empty() || outputs.is_empty() {
            self.ensure_sentinels();
        }
        let (id, line) = self.push_op(name, category, comment, metadata);
        let sources: Vec<String> = if inputs.is_empty() {
            vec![SENTINEL_NODE.into()]
        } else {
            inputs.iter().map(|v| v.full_node_id.clone()).collect()
        };
        let targets: Vec<String> = if outputs.is_empty() {
            vec![SENTINEL_NODE.into()]
        } else {
            outputs.iter().map(|v| v.full_node_id.clone()).collect()
        };
        for s in &sources {
            for t in &targets {
                self.edge(&id, category, s, t, comment, line);
            }
        }
        id
    }

    /// Records a mutation of `target`: its next version, made by one op from
    /// the old version (a "Version lineage." edge) and `inputs`.
    #[allow(clippy::too_many_arguments)]
    pub fn mutate(
        &mut self,
        target: &VarRef,
        class: Option<&str>,
        name: &str,
        value: &str,
        category: &str,
        op_name: &str,
        op_category: &str,
        inputs: &[&VarRef],
    ) -> (VarRef, String) {
        let next = self.variable(class, name, value, category, None, json!({}));
        let (id, line) = self.push_op(op_name, op_category, None, json!({}));
        self.edge(
            &id,
            op_category,
            &target.full_node_id,
            &next.full_node_id,
            Some("Version lineage."),
            line,
        );
        for i in inputs {
            self.edge(
                &id,
                op_category,
                &i.full_node_id,
                &next.full_node_id,
                None,
                line,
            );
        }
        (next, id)
    }

    /// Records an op with explicit edges (source, target, comment) between
    /// recorded variables, for ops whose edges are not every input times
    /// every output. With no edges the sentinel stands in. Returns the op id.
    pub fn op_edges(
        &mut self,
        name: &str,
        category: &str,
        edges: &[(String, String, Option<&str>)],
        metadata: Value,
    ) -> String {
        if edges.is_empty() {
            self.ensure_sentinels();
        }
        let (id, line) = self.push_op(name, category, None, metadata);
        if edges.is_empty() {
            self.edge(&id, category, SENTINEL_NODE, SENTINEL_NODE, None, line);
        }
        for (s, t, c) in edges {
            self.edge(&id, category, s, t, *c, line);
        }
        id
    }

    /// Replaces the metadata of a recorded op.
    pub fn set_op_metadata(&mut self, op_id: &str, metadata: Value) {
        if let Some(Value::Object(op)) = self
            .ops
            .iter_mut()
            .rev()
            .find(|o| o["op_id"].as_str() == Some(op_id))
        {
            op.insert("metadata".into(), metadata);
        }
    }

    /// Replaces the trace's metadata.
    pub fn set_metadata(&mut self, metadata: Value) {
        self.metadata = metadata;
    }

    /// Records an explicit link made outside any op (through `__none_op__`).
    pub fn link(&mut self, source: &VarRef, target: &VarRef, comment: Option<&str>) {
        self.ensure_sentinels();
        self.edge(
            SENTINEL_OP,
            "link",
            &source.full_node_id.clone(),
            &target.full_node_id.clone(),
            comment,
            1,
        );
    }

    /// Adds a MemTraceBench annotation.
    pub fn annotate(&mut self, annotation: Value) {
        self.annotations.push(annotation);
    }

    /// The export object (with `data.annotations` when any were added).
    pub fn finish(self) -> Value {
        let mut data = Map::new();
        data.insert("nodes".into(), Value::Array(self.nodes));
        data.insert("edges".into(), Value::Array(self.edges));
        data.insert("operations".into(), Value::Array(self.ops));
        data.insert("sessions".into(), Value::Array(self.sessions));
        if !self.annotations.is_empty() {
            data.insert("annotations".into(), Value::Array(self.annotations));
        }
        json!({
            "graph_id": self.graph_id,
            "user_id": self.user_id,
            "project_id": self.project_id,
            "storage_path": null,
            "strict": false,
            "driver_type": "in_memory",
            "created_at": self.created_at,
            "metadata": self.metadata,
            "data": data,
        })
    }

    /// Writes the export object as JSON.
    pub fn write(self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer(&mut *out, &self.finish()).map_err(io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtrace_engine::{Engine, ExportFormat, ImportOptions, InputFormat};

    fn small() -> Value {
        let mut b = TraceBuilder::new("g-built", "u1", "mem0", json!({"system": "mem0"}), 19_723);
        b.session("memory_construction", "session", json!({"n": 1}));
        let msg = b.variable(
            Some("message"),
            "D1:1",
            "'I moved to Paris.'",
            "message",
            None,
            json!({"speaker": "Caroline"}),
        );
        let prompt = b.variable(
            None,
            "fact-extraction-system-prompt",
            "'Extract facts.'",
            "prompt",
            None,
            json!({}),
        );
        let fact = b.variable(
            Some("fact"),
            "f1",
            "'Caroline lives in Paris'",
            "memory_entry",
            None,
            json!({}),
        );
        b.op(
            "memory_system.extract_facts",
            "extraction",
            None,
            &[&msg, &prompt],
            &[&fact],
            json!({}),
        );
        let (fact2, _) = b.mutate(
            &fact,
            Some("fact"),
            "f1",
            "'Caroline lives in Lisbon'",
            "memory_entry",
            "memory_system.update_memory_decision",
            "update",
            &[&msg],
        );
        b.op(
            "memory_system.heartbeat",
            "update",
            None,
            &[],
            &[],
            json!({}),
        );
        b.set_day(19_730);
        b.session("memory_search", "session", json!({}));
        let q = b.variable(
            Some("query"),
            "q1",
            "'Where does Caroline live?'",
            "message & query",
            None,
            json!({"evidence": ["message:D1:1"]}),
        );
        let ans = b.variable(
            None,
            "prediction",
            "'Lisbon'",
            "prediction",
            None,
            json!({}),
        );
        b.op(
            "question-answering",
            "evaluation",
            None,
            &[&q, &fact2],
            &[&ans],
            json!({}),
        );
        b.link(&fact2, &ans, Some("grounded"));
        b.annotate(json!({"query_id": q.full_node_id, "query": "Where does Caroline live?", "golden_answers": ["Paris"], "prediction": "Lisbon", "source_evidence_ids": [msg.full_node_id], "final_error_type": "UpdateError", "final_op_id": null}));
        assert_eq!(fact2.full_node_id, "fact:f1@2");
        b.finish()
    }

    #[test]
    fn built_traces_import_and_export_unchanged() {
        let doc = small();
        let dir = tempfile::tempdir().unwrap();
        let db = Engine::open(dir.path().join("b.db")).unwrap();
        let t = db
            .import_reader(
                doc.to_string().as_bytes(),
                InputFormat::Json,
                "built",
                &ImportOptions::default(),
            )
            .unwrap();
        let c = t[0].counts;
        // 6 variables + the sentinel node; 4 ops + the sentinel op; 3 sessions with the sentinel's.
        assert_eq!((c.variables, c.ops, c.sessions, c.cases), (7, 5, 3, 1));
        // extract: 2 edges; mutation: lineage + 1 input; heartbeat: sentinel -> sentinel; QA: 2; link: 1.
        assert_eq!(c.edges, 2 + 2 + 1 + 2 + 1);
        let mut out = Vec::new();
        db.trace("g-built")
            .unwrap()
            .export(ExportFormat::Smartcomment, &mut out)
            .unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&out).unwrap(), doc);
    }

    #[test]
    fn mutations_carry_a_version_lineage_edge_and_time_moves_forward() {
        let doc = small();
        let edges = doc["data"]["edges"].as_array().unwrap();
        let lineage = edges
            .iter()
            .find(|e| e["comment"] == "Version lineage.")
            .unwrap();
        assert_eq!(
            (
                lineage["source_full_node_id"].as_str(),
                lineage["target_full_node_id"].as_str()
            ),
            (Some("fact:f1@1"), Some("fact:f1@2"))
        );
        let stamps: Vec<&str> = doc["data"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["category"] != "sentinel")
            .map(|n| n["created_at"].as_str().unwrap())
            .collect();
        assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");
        assert!(
            stamps.last().unwrap().starts_with("2024-01-08"),
            "{stamps:?}"
        );
    }

    #[test]
    fn stamps_are_valid_timestamps() {
        for ms in [0, 86_399_999, 1_700_000_000_123] {
            assert!(
                memtrace_engine::check_timestamp(&stamp(ms)).is_ok(),
                "{}",
                stamp(ms)
            );
        }
        assert_eq!(stamp(86_400_000 + 3_723_004), "1970-01-02 01:02:03.004");
    }
}
