//! The partition functions' native half: an Arrow IPC stream of traces in,
//! an Arrow IPC stream of one result table out, worked through without
//! the GIL (see `memtrace/partition.py`, which wraps them).

use std::path::PathBuf;

use memtrace::columnar::partition::{self, Job, Output, PartitionOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::convert::{self, param_list, py_to_value};
use crate::error::{BindingError, Result};
use crate::run;

/// Reads a result table's name.
fn output(table: &str) -> Result<Output> {
    table.parse().map_err(BindingError::Value)
}

/// The inline pattern statements: a dict from name to a statement, or to a
/// (statement, dict of parameter defaults) pair.
fn statements(dict: Option<&Bound<'_, PyDict>>) -> Result<Vec<partition::InlinePattern>> {
    let mut out = Vec::new();
    let Some(dict) = dict else { return Ok(out) };
    for (k, v) in dict.iter() {
        let name: String = k.extract().map_err(|_| {
            BindingError::Type(format!("statements are keyed by pattern name, not {k}"))
        })?;
        let (text, defaults) = if let Ok(text) = v.extract::<String>() {
            (text, Vec::new())
        } else if let Ok((text, d)) = v.extract::<(String, Bound<'_, PyDict>)>() {
            let mut defaults = Vec::new();
            for (pk, pv) in d.iter() {
                let pname: String = pk.extract().map_err(|_| {
                    BindingError::Type(format!("pattern {name}: parameter names are strings"))
                })?;
                let pname = pname.strip_prefix('$').unwrap_or(&pname).to_string();
                let value = py_to_value(&pv, &format!("pattern {name}: ${pname}"))?;
                defaults.push((pname, value));
            }
            (text, defaults)
        } else {
            return Err(BindingError::Type(format!(
                "pattern {name}: give a statement, or a (statement, defaults) pair"
            )));
        };
        out.push((name, text, defaults));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The job that `table` names, from the arguments that go with it.
fn job(
    table: Output,
    method: &str,
    setting: Option<&str>,
    names: Option<Vec<String>>,
    statements: Option<&Bound<'_, PyDict>>,
    params: Option<&Bound<'_, PyDict>>,
) -> Result<Job> {
    Ok(match table {
        Output::Verdicts => Job::Verdicts {
            method: convert::method(method)?,
            setting: convert::setting(setting)?,
            search: Default::default(),
        },
        Output::PatternHits => Job::Patterns(partition::pattern_specs(
            &names.unwrap_or_default(),
            &self::statements(statements)?,
            &param_list(params)?,
        )?),
        Output::Cases => Job::Cases,
        Output::Stats => Job::Stats,
        // A table this binding does not know yet.
        other => {
            return Err(BindingError::Value(format!(
                "no partition function gives {}",
                other.name()
            )))
        }
    })
}

/// Runs the partition function that gives `table` over every batch of
/// `data` (an Arrow IPC stream) and returns an Arrow IPC stream of its
/// results, one batch per input batch.
#[pyfunction]
#[pyo3(signature = (table, data, content = "content".to_string(), source = None, scratch = None, threads = 1, method = "evidence", setting = None, names = None, statements = None, params = None))]
#[allow(clippy::too_many_arguments)]
pub fn run_partition<'py>(
    py: Python<'py>,
    table: &str,
    data: Vec<u8>,
    content: String,
    source: Option<String>,
    scratch: Option<PathBuf>,
    threads: usize,
    method: &str,
    setting: Option<&str>,
    names: Option<Vec<String>>,
    statements: Option<&Bound<'py, PyDict>>,
    params: Option<&Bound<'py, PyDict>>,
) -> Result<Bound<'py, PyBytes>> {
    let job = job(output(table)?, method, setting, names, statements, params)?;
    if threads == 0 {
        return Err(BindingError::Value("threads must be at least 1".into()));
    }
    let opts = PartitionOptions {
        content,
        source,
        scratch,
        threads,
    };
    let out = run::detached(py, None, move |cancel| {
        Ok(partition::run_ipc(&data, &job, &opts, cancel)?)
    })?;
    Ok(PyBytes::new(py, &out))
}

/// The schema of the result table `table`, as an Arrow IPC stream without
/// batches.
#[pyfunction]
pub fn partition_schema<'py>(py: Python<'py>, table: &str) -> Result<Bound<'py, PyBytes>> {
    let bytes = partition::schema_ipc(output(table)?)?;
    Ok(PyBytes::new(py, &bytes))
}
