//! One trace read into memory for attribution: variables, ops in execution
//! order, and each op's inputs and outputs; values are read when first used.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{AnalysisError, Result};
use memtrace_engine::{Edge, Operation, TraceInfo, Variable};
use memtrace_engine::{LazyValues, TraceView};

/// Values of a trace read from the store on first use: an analysis reads
/// the values it looks at, not the megabytes of every version of a rolling
/// memory.
#[derive(Clone, Default)]
struct Deferred {
    reader: Option<LazyValues>,
    values: Vec<OnceLock<String>>,
    /// The first value that could not be read: its node id and why.
    failed: Arc<Mutex<Option<(String, String)>>>,
}

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let read = self.values.iter().filter(|v| v.get().is_some()).count();
        write!(f, "Deferred {{ read: {read} of {} }}", self.values.len())
    }
}

/// A trace in memory, indexed for following information through its ops.
#[derive(Debug, Clone)]
pub struct TraceModel {
    /// The trace.
    pub info: TraceInfo,
    /// Every variable version, in recorded order.
    pub vars: Vec<Variable>,
    /// Every op, in recorded (execution) order.
    pub ops: Vec<Operation>,
    /// Every edge, in recorded order.
    pub edges: Vec<Edge>,
    by_node_id: HashMap<String, usize>,
    by_op_id: HashMap<String, usize>,
    latest: HashMap<String, usize>,
    op_inputs: Vec<Vec<usize>>,
    op_outputs: Vec<Vec<usize>>,
    made_by: Vec<Vec<usize>>,
    read_by: Vec<Vec<usize>>,
    edges_from: Vec<Vec<(usize, usize)>>,
    deferred: Deferred,
}

fn push_once(list: &mut Vec<usize>, x: usize) {
    if !list.contains(&x) {
        list.push(x);
    }
}

impl TraceModel {
    /// Reads a whole trace.
    /// Values are read from the store when first asked for
    /// ([`TraceModel::value`]); a value that cannot be read then is reported
    /// by [`TraceModel::read_error`].
    pub fn load(view: &TraceView<'_>) -> Result<TraceModel> {
        let (vars, reader) = view.variables_lazy()?;
        let mut model = TraceModel::new(view.info(), vars, view.ops()?, view.edges()?);
        model.deferred = Deferred {
            values: (0..reader.len()).map(|_| OnceLock::new()).collect(),
            reader: Some(reader),
            failed: Arc::default(),
        };
        Ok(model)
    }

    /// The error of the first value that could not be read from the store
    /// (its variable then read as empty), if any. Analyses check it before
    /// they report, so that a verdict never rests on a value that was not
    /// there.
    pub fn read_error(&self) -> Result<()> {
        let failed = self
            .deferred
            .failed
            .lock()
            .map(|f| f.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        match failed {
            None => Ok(()),
            Some((node, reason)) => Err(AnalysisError::ValueUnreadable {
                trace: self.info.graph_id.clone(),
                node,
                reason,
            }),
        }
    }

    /// Indexes records already read.
    pub fn new(
        info: TraceInfo,
        vars: Vec<Variable>,
        ops: Vec<Operation>,
        edges: Vec<Edge>,
    ) -> TraceModel {
        let by_node_id: HashMap<String, usize> = vars
            .iter()
            .enumerate()
            .map(|(i, v)| (v.full_node_id.clone(), i))
            .collect();
        let by_op_id: HashMap<String, usize> = ops
            .iter()
            .enumerate()
            .map(|(i, o)| (o.op_id.clone(), i))
            .collect();
        let mut latest: HashMap<String, usize> = HashMap::new();
        for (i, v) in vars.iter().enumerate() {
            let keep = latest
                .get(&v.full_name)
                .is_none_or(|&j| vars[j].version < v.version);
            if keep {
                latest.insert(v.full_name.clone(), i);
            }
        }
        let mut op_inputs = vec![Vec::new(); ops.len()];
        let mut op_outputs = vec![Vec::new(); ops.len()];
        let mut made_by = vec![Vec::new(); vars.len()];
        let mut read_by = vec![Vec::new(); vars.len()];
        let mut edges_from = vec![Vec::new(); vars.len()];
        for (i, e) in edges.iter().enumerate() {
            let (Some(&o), Some(&s), Some(&t)) = (
                by_op_id.get(&e.op_id),
                by_node_id.get(&e.source_full_node_id),
                by_node_id.get(&e.target_full_node_id),
            ) else {
                continue;
            };
            push_once(&mut op_inputs[o], s);
            push_once(&mut op_outputs[o], t);
            push_once(&mut made_by[t], o);
            push_once(&mut read_by[s], o);
            edges_from[s].push((i, t));
        }
        for list in &mut read_by {
            list.sort_unstable();
        }
        TraceModel {
            info,
            vars,
            ops,
            edges,
            by_node_id,
            by_op_id,
            latest,
            op_inputs,
            op_outputs,
            made_by,
            read_by,
            edges_from,
            deferred: Deferred::default(),
        }
    }

    /// A variable by full node id (`name@version`), or by full name (its
    /// latest version).
    pub fn var(&self, reference: &str) -> Option<usize> {
        self.by_node_id
            .get(reference)
            .or_else(|| self.latest.get(reference))
            .copied()
    }

    /// An op's position by op id.
    pub fn op(&self, op_id: &str) -> Option<usize> {
        self.by_op_id.get(op_id).copied()
    }

    /// The variables an op read.
    pub fn inputs(&self, op: usize) -> &[usize] {
        &self.op_inputs[op]
    }

    /// The variables an op wrote.
    pub fn outputs(&self, op: usize) -> &[usize] {
        &self.op_outputs[op]
    }

    /// The ops that wrote a variable (usually one).
    pub fn made_by(&self, var: usize) -> &[usize] {
        &self.made_by[var]
    }

    /// The edges leaving a variable: (edge index, target variable).
    pub fn edges_from(&self, var: usize) -> &[(usize, usize)] {
        &self.edges_from[var]
    }

    /// The ops that read a variable, in execution order.
    pub fn read_by(&self, var: usize) -> &[usize] {
        &self.read_by[var]
    }

    /// A variable's value, as recorded (the repr of a Python value).
    pub fn value(&self, var: usize) -> &str {
        if let Some(v) = self.vars[var].value.as_deref() {
            return v;
        }
        let d = &self.deferred;
        let (Some(reader), Some(cell)) = (&d.reader, d.values.get(var)) else {
            return "";
        };
        cell.get_or_init(|| match reader.read(var) {
            Ok(v) => v.unwrap_or_default(),
            Err(e) => {
                if let Ok(mut failed) = d.failed.lock() {
                    failed.get_or_insert_with(|| {
                        (self.vars[var].full_node_id.clone(), e.to_string())
                    });
                }
                String::new()
            }
        })
    }

    /// A variable's class name, or else its name up to the first `:`.
    pub fn class(&self, var: usize) -> &str {
        let v = &self.vars[var];
        match v.class_name.as_deref() {
            Some(c) if !c.is_empty() => c,
            _ => v.name.split(':').next().unwrap_or(&v.name),
        }
    }

    /// Whether a variable is a conversation message.
    pub fn is_message(&self, var: usize) -> bool {
        let v = &self.vars[var];
        v.category.as_deref() == Some("message") || self.class(var) == "message"
    }
}

/// A trace of bare variables `(full name, category, value, metadata)`, for
/// the unit tests of the matching code.
#[cfg(test)]
pub(crate) fn test_model(vars: &[(&str, &str, &str, serde_json::Value)]) -> TraceModel {
    let info = TraceInfo {
        id: 1,
        graph_id: "g".into(),
        ..TraceInfo::default()
    };
    let vars = vars
        .iter()
        .enumerate()
        .map(|(i, (name, category, value, meta))| {
            let class = name.split_once(':').map(|c| c.0.to_string());
            Variable {
                trace: 1,
                id: i as u32,
                name: name.rsplit(':').next().unwrap_or(name).to_string(),
                class_name: class,
                version: 1,
                value: Some(value.to_string()),
                comment: None,
                category: Some(category.to_string()),
                session_id: None,
                created_at: None,
                filename: None,
                lineno: None,
                metadata: meta.clone(),
                full_name: name.to_string(),
                full_node_id: format!("{name}@1"),
            }
        })
        .collect();
    TraceModel::new(info, vars, Vec::new(), Vec::new())
}
