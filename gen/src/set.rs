//! Generated sets: one MemTraceBench file per trace (a smartcomment export
//! with `data.annotations` for its failed questions) and a manifest with
//! counts, written one trace at a time, deterministic for a seed.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::builder::TraceBuilder;
use super::sim::{ErrorType, Recorded, Sim, SimParams, Slot, System};
use super::style::Style;
use super::world::{days_of, World, WorldSpec};
use crate::error::{GenError, Result};
use crate::synth::Rng;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenSpec {
    /// One system, or `None` for all four in turn.
    pub system: Option<System>,
    /// One recording style, or `None` for all in turn (each style over a
    /// whole round of the systems). The default is [`Style::Classic`].
    pub style: Option<Style>,
    /// Number of traces.
    pub traces: usize,
    /// Seed of the whole set.
    pub seed: u64,
    /// Sessions per conversation, drawn from this range.
    pub sessions: RangeInclusive<usize>,
    /// Messages per session, drawn from this range (scaled by the sessions).
    pub messages_per_session: RangeInclusive<usize>,
    /// Questions per trace.
    pub questions: usize,
    /// Sizes and fault rates of the systems.
    pub params: SimParams,
}

impl Default for GenSpec {
    /// LoCoMo scale: 19 to 32 sessions of 18 to 22 messages (about 350 to
    /// 700 messages), 200 questions.
    fn default() -> Self {
        GenSpec {
            system: None,
            style: Some(Style::Classic),
            traces: 1,
            seed: 1,
            sessions: 19..=32,
            messages_per_session: 18..=22,
            questions: 200,
            params: SimParams::default(),
        }
    }
}

impl GenSpec {
    /// One small trace of `system` (3 sessions of 6 messages, 12 questions):
    /// enough for failed cases of several error types, quick to build in tests.
    pub fn small(system: System) -> GenSpec {
        GenSpec {
            system: Some(system),
            sessions: 3..=3,
            messages_per_session: 6..=6,
            questions: 12,
            ..GenSpec::default()
        }
    }

    /// The system of trace `index`.
    pub fn system_of(&self, index: usize) -> System {
        self.system
            .unwrap_or(System::ALL[index % System::ALL.len()])
    }

    /// The style of trace `index`: with every style asked for, one style
    /// per round of the systems, so that each style meets each system.
    pub fn style_of(&self, index: usize) -> Style {
        self.style.unwrap_or_else(|| {
            let round = if self.system.is_some() {
                1
            } else {
                System::ALL.len()
            };
            Style::ALL[(index / round) % Style::ALL.len()]
        })
    }

    /// The seed of trace `index`.
    pub fn trace_seed(&self, index: usize) -> u64 {
        let mut rng = Rng::new(self.seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f));
        rng.next_u64()
    }

    fn world_spec(&self, seed: u64) -> WorldSpec {
        let (lo, hi) = (*self.sessions.start(), *self.sessions.end());
        let (mlo, mhi) = (
            *self.messages_per_session.start(),
            *self.messages_per_session.end(),
        );
        WorldSpec {
            sessions: lo..=hi,
            messages: lo * mlo..=(hi * mhi).max(lo * mlo),
            questions: self.questions,
            seed,
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(GenError::BadSpec(m.to_string()));
        if self.traces == 0 {
            return bad("--traces must be at least 1");
        }
        if self.sessions.is_empty() || *self.sessions.start() == 0 {
            return bad("--sessions must be a non-empty range of at least 1 (like 19..32)");
        }
        if self.messages_per_session.is_empty() || *self.messages_per_session.start() == 0 {
            return bad("--messages must be a non-empty range of at least 1 (like 18..22)");
        }
        for (name, rate) in [
            ("--fault-rate", self.params.fault_rate),
            ("--question-fault-rate", self.params.question_fault_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(GenError::BadSpec(format!(
                    "{name} must be between 0 and 1, not {rate}"
                )));
            }
        }
        if self.params.top_k == 0 || self.params.chunk_messages == 0 {
            return bad("--top-k and --chunk-messages must be at least 1");
        }
        Ok(())
    }
}

/// What one generated trace holds.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSummary {
    /// File name inside the output folder.
    pub file: String,
    /// Its graph id.
    pub graph_id: String,
    /// The system simulated.
    pub system: System,
    /// The style it is recorded in.
    pub style: Style,
    /// Conversation sessions.
    pub sessions: usize,
    /// Messages.
    pub messages: usize,
    /// Questions asked.
    pub questions: usize,
    /// Questions answered wrongly (= annotations).
    pub failed: usize,
    /// Variable versions, ops and edges in the export.
    pub variables: usize,
    /// Ops in the export.
    pub ops: usize,
    /// Edges in the export.
    pub edges: usize,
    /// Size of the file.
    pub bytes: u64,
    /// Faults planned, and how many changed something.
    pub faults: usize,
    /// Faults that changed something.
    pub faults_fired: usize,
    /// Labels per error type.
    pub labels: BTreeMap<ErrorType, usize>,
}

/// One generated trace: the export and what it holds.
#[derive(Debug, Clone)]
pub struct GeneratedTrace {
    /// The MemTraceBench document.
    pub document: Value,
    /// The simulation it came from (for replays).
    pub sim: Sim,
    /// The recorded run.
    pub recorded: Recorded,
    /// Its graph id.
    pub graph_id: String,
}

fn slot_op_name(system: System, slot: Slot) -> &'static str {
    match slot {
        Slot::MemoryUpdate(_) => "memory_system.memory_update",
        Slot::BufferUpdate(_) => "memory_system.message_buffer_update",
        Slot::Add(_) => "memory_system.add",
        Slot::ExtractFacts(_) => "memory_system.extract_facts",
        Slot::Decide(_) => "memory_system.update_memory_decision",
        Slot::Boundary(_) => "evermemos.boundary_detection",
        Slot::Finalize(_) => "memory_system.finalize_memory_unit",
        Slot::ExtractMemory(_) => "memory_system.extract_memory",
        Slot::Retrieve(_) => match system {
            System::LongContext | System::Rag => "memory_system.retrieve",
            System::Mem0 => "memory_system.search_vector_store",
            System::EverMemOs => "memory_system.hybrid_retrieval",
        },
        Slot::Answer(_) => "question-answering",
        Slot::Judge(_) => "llm-judge",
    }
}

/// Generates trace `index` of a set.
pub fn generate_trace(spec: &GenSpec, index: usize) -> GeneratedTrace {
    let system = spec.system_of(index);
    let style = spec.style_of(index);
    let seed = spec.trace_seed(index);
    let world = World::generate(&spec.world_spec(seed));
    let graph_id = match style {
        Style::Classic => format!("{}-{:04}-s{}", system.name(), index, spec.seed),
        _ => format!(
            "{}-{}-{:04}-s{}",
            system.name(),
            style.name(),
            index,
            spec.seed
        ),
    };
    let user = format!(
        "{}_{}",
        world.speakers[0].to_lowercase(),
        world.speakers[1].to_lowercase()
    );
    let start = world
        .sessions
        .first()
        .and_then(|s| days_of(&s.date))
        .unwrap_or(19_358);
    let sim = Sim::with_style(system, world, spec.params.clone(), seed, style);
    let mut b = TraceBuilder::new(&graph_id, &user, system.name(), json!({}), start);
    let recorded = sim.record(&mut b);
    b.set_metadata(trace_metadata(spec, index, seed, &sim, &recorded));
    annotate_failures(&mut b, &sim, &recorded);
    GeneratedTrace {
        document: b.finish(),
        sim,
        recorded,
        graph_id,
    }
}

/// The planned faults as the trace's metadata lists them: where each
/// struck, what it was meant to cause, and whether it changed anything.
fn fault_plan_json(sim: &Sim, recorded: &Recorded) -> Vec<Value> {
    let system = sim.system();
    let world = sim.world();
    sim.plan()
        .iter()
        .zip(&recorded.outcome.fired)
        .map(|(f, fired)| {
            let mut m = Map::new();
            m.insert(
                "op_id".into(),
                json!(recorded.op_ids.get(f.slot).cloned().unwrap_or_default()),
            );
            m.insert(
                "op_name".into(),
                json!(slot_op_name(system, sim.schedule()[f.slot])),
            );
            m.insert("fault".into(), json!(f.kind.name()));
            m.insert(
                "intended_error_type".into(),
                json!(f.kind.intended().name()),
            );
            if let Some(item) = f.item {
                let (fact, value) = sim.items()[item];
                m.insert("fact".into(), json!(world.fact_sentence(fact, value)));
                m.insert(
                    "message".into(),
                    json!(format!(
                        "message:{}",
                        world.facts[fact].values[value].message
                    )),
                );
            }
            if let Some(q) = f.question {
                m.insert("question".into(), json!(format!("query:Q{}", q + 1)));
            }
            m.insert("changed_something".into(), json!(fired));
            Value::Object(m)
        })
        .collect()
}

/// The trace's metadata: how it was generated, the world's size, the
/// system's parameters and the fault plan.
fn trace_metadata(
    spec: &GenSpec,
    index: usize,
    seed: u64,
    sim: &Sim,
    recorded: &Recorded,
) -> Value {
    let system = sim.system();
    let style = sim.style();
    let world = sim.world();
    let plan = fault_plan_json(sim, recorded);
    let mut metadata = json!({
        "generator": {
            "name": "memtrace gen",
            "version": 1,
            "set_seed": spec.seed,
            "trace_index": index,
            "trace_seed": seed,
        },
        "system": system.name(),
        "world": {
            "speakers": world.speakers,
            "sessions": world.sessions.len(),
            "messages": world.messages().count(),
            "questions": world.questions.len(),
            "facts": world.facts.len(),
        },
        "params": params_json(&spec.params),
        "labels": "counterfactual replay: the earliest op such that, with it and every earlier op as recorded and every later op ideal, the answer is wrong",
        "fault_plan": plan,
    });
    // Classic traces stay as they were before styles existed: no style key.
    if style != Style::Classic {
        if let Value::Object(m) = &mut metadata {
            m.insert("gen_style".into(), json!(style.name()));
            m.insert("gen_style_description".into(), json!(style.describe()));
        }
    }
    metadata
}

/// One annotation per wrongly answered question, with its label.
fn annotate_failures(b: &mut TraceBuilder, sim: &Sim, recorded: &Recorded) {
    let world = sim.world();
    for label in &recorded.labels {
        let q = &world.questions[label.question];
        b.annotate(json!({
            "query_id": format!("query:Q{}@1", label.question + 1),
            "query": q.text,
            "golden_answers": [q.gold],
            "prediction": recorded.predictions[label.question],
            "source_evidence_ids": sim.evidence(label.question).iter().map(|e| format!("message:{e}@1")).collect::<Vec<_>>(),
            "final_error_type": label.error_type.name(),
            "final_op_id": recorded.op_ids.get(label.slot).cloned().unwrap_or_default(),
            "question_kind": q.kind.name(),
        }));
    }
}

fn io_err(path: &Path, source: std::io::Error) -> GenError {
    GenError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The manifest file name inside an output folder.
pub const MANIFEST: &str = memtrace_engine::SET_MANIFEST;

/// Generates a whole set into `out` (created when missing), one file per
/// trace, then `manifest.json`. Refuses a folder that already holds a
/// manifest unless `force`. `progress` is called after each trace.
pub fn generate_set(
    spec: &GenSpec,
    out: &Path,
    force: bool,
    mut progress: impl FnMut(usize, &TraceSummary),
) -> Result<Vec<TraceSummary>> {
    spec.check()?;
    let manifest_path = out.join(MANIFEST);
    if manifest_path.exists() && !force {
        return Err(GenError::BadSpec(format!(
            "{} already holds a generated set (manifest.json); choose another --out or add --force to replace it",
            out.display()
        )));
    }
    fs::create_dir_all(out).map_err(|e| io_err(out, e))?;
    let mut summaries = Vec::with_capacity(spec.traces);
    for index in 0..spec.traces {
        let t = generate_trace(spec, index);
        let file = format!("{}.json", t.graph_id);
        let path = out.join(&file);
        let bytes = write_atomically(&path, &t.document)?;
        let data = &t.document["data"];
        let len = |k: &str| data[k].as_array().map_or(0, Vec::len);
        let mut labels = BTreeMap::new();
        for l in &t.recorded.labels {
            *labels.entry(l.error_type).or_insert(0) += 1;
        }
        let world = t.sim.world();
        let summary = TraceSummary {
            file,
            graph_id: t.graph_id.clone(),
            system: t.sim.system(),
            style: t.sim.style(),
            sessions: world.sessions.len(),
            messages: world.messages().count(),
            questions: world.questions.len(),
            failed: t.recorded.labels.len(),
            variables: len("nodes"),
            ops: len("operations"),
            edges: len("edges"),
            bytes,
            faults: t.sim.plan().len(),
            faults_fired: t.recorded.outcome.fired.iter().filter(|f| **f).count(),
            labels,
        };
        progress(index + 1, &summary);
        summaries.push(summary);
    }
    let manifest = manifest(spec, &summaries);
    write_atomically(&manifest_path, &manifest)?;
    Ok(summaries)
}

fn write_atomically(path: &Path, doc: &Value) -> Result<u64> {
    let tmp: PathBuf = path.with_extension("json.partial");
    let file = fs::File::create(&tmp).map_err(|e| io_err(&tmp, e))?;
    let mut w = BufWriter::new(file);
    serde_json::to_writer(&mut w, doc)?;
    w.write_all(b"\n").map_err(|e| io_err(&tmp, e))?;
    let file = w.into_inner().map_err(|e| io_err(&tmp, e.into_error()))?;
    file.sync_all().map_err(|e| io_err(&tmp, e))?;
    let bytes = file.metadata().map_err(|e| io_err(&tmp, e))?.len();
    fs::rename(&tmp, path).map_err(|e| io_err(path, e))?;
    Ok(bytes)
}

fn params_json(p: &SimParams) -> Value {
    json!({
        "window_tokens": p.window_tokens,
        "chunk_messages": p.chunk_messages,
        "top_k": p.top_k,
        "fault_rate": p.fault_rate,
        "question_fault_rate": p.question_fault_rate,
    })
}

fn label_counts(labels: &BTreeMap<ErrorType, usize>) -> Value {
    let mut m = Map::new();
    for t in ErrorType::ALL {
        m.insert(t.name().into(), json!(labels.get(&t).copied().unwrap_or(0)));
    }
    Value::Object(m)
}

/// The manifest of a generated set.
pub fn manifest(spec: &GenSpec, traces: &[TraceSummary]) -> Value {
    let mut by_system: BTreeMap<System, (usize, usize, usize, BTreeMap<ErrorType, usize>)> =
        BTreeMap::new();
    let mut all: BTreeMap<ErrorType, usize> = BTreeMap::new();
    for t in traces {
        let e = by_system.entry(t.system).or_default();
        e.0 += 1;
        e.1 += t.questions;
        e.2 += t.failed;
        for (k, n) in &t.labels {
            *e.3.entry(*k).or_insert(0) += n;
            *all.entry(*k).or_insert(0) += n;
        }
    }
    let mut systems = Map::new();
    for (s, (n, q, f, l)) in &by_system {
        systems.insert(
            s.name().into(),
            json!({"traces": n, "questions": q, "failed": f, "labels": label_counts(l)}),
        );
    }
    let mut manifest = json!({
        "generator": "memtrace gen",
        "format": "MemTraceBench (smartcomment export + data.annotations)",
        "seed": spec.seed,
        "system": spec.system.map_or("all", System::name),
        "sessions": [spec.sessions.start(), spec.sessions.end()],
        "messages_per_session": [spec.messages_per_session.start(), spec.messages_per_session.end()],
        "questions_per_trace": spec.questions,
        "params": params_json(&spec.params),
        "totals": {
            "traces": traces.len(),
            "questions": traces.iter().map(|t| t.questions).sum::<usize>(),
            "failed": traces.iter().map(|t| t.failed).sum::<usize>(),
            "variables": traces.iter().map(|t| t.variables).sum::<usize>(),
            "ops": traces.iter().map(|t| t.ops).sum::<usize>(),
            "edges": traces.iter().map(|t| t.edges).sum::<usize>(),
            "bytes": traces.iter().map(|t| t.bytes).sum::<u64>(),
            "labels": label_counts(&all),
        },
        "by_system": systems,
        "traces": traces.iter().map(|t| json!({
            "file": t.file,
            "graph_id": t.graph_id,
            "system": t.system.name(),
            "sessions": t.sessions,
            "messages": t.messages,
            "questions": t.questions,
            "failed": t.failed,
            "variables": t.variables,
            "ops": t.ops,
            "edges": t.edges,
            "bytes": t.bytes,
            "faults": t.faults,
            "faults_changed_something": t.faults_fired,
            "labels": label_counts(&t.labels),
        })).collect::<Vec<_>>(),
    });
    // A classic set's manifest stays as it was before styles existed.
    if spec.style != Some(Style::Classic) {
        let mut by_style: BTreeMap<Style, (usize, usize, BTreeMap<ErrorType, usize>)> =
            BTreeMap::new();
        for t in traces {
            let e = by_style.entry(t.style).or_default();
            e.0 += 1;
            e.1 += t.failed;
            for (k, n) in &t.labels {
                *e.2.entry(*k).or_insert(0) += n;
            }
        }
        let mut styles = Map::new();
        for (s, (n, f, l)) in &by_style {
            styles.insert(
                s.name().into(),
                json!({"traces": n, "failed": f, "labels": label_counts(l), "varies": s.describe()}),
            );
        }
        if let Value::Object(m) = &mut manifest {
            m.insert("style".into(), json!(spec.style.map_or("all", Style::name)));
            m.insert("by_style".into(), Value::Object(styles));
            if let Some(Value::Array(list)) = m.get_mut("traces") {
                for (entry, t) in list.iter_mut().zip(traces) {
                    if let Value::Object(e) = entry {
                        e.insert("style".into(), json!(t.style.name()));
                    }
                }
            }
        }
    }
    manifest
}
