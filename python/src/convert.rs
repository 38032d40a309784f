//! Values between Python and memtrace: JSON results to Python objects, and
//! Python parameters to query values.

use memtrace::attrib::{Method, Setting};
use memtrace::query::{Params, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::error::{BindingError, Result};

/// A JSON value as the Python object `json.loads` would make of it (an
/// infinity, stored as `1e+999`, becomes `float('inf')`).
pub fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        serde_json::Value::Null => py.None().into_bound(py),
        serde_json::Value::Bool(b) => b.into_bound_py_any(py)?,
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_bound_py_any(py)?
            } else if let Some(u) = n.as_u64() {
                u.into_bound_py_any(py)?
            } else {
                let text = n.to_string();
                if text.contains(['.', 'e', 'E']) {
                    text.parse::<f64>()
                        .unwrap_or(f64::NAN)
                        .into_bound_py_any(py)?
                } else {
                    // An integer beyond 64 bits: Python's int reads it whole.
                    py.get_type::<PyInt>().call1((text,))?
                }
            }
        }
        serde_json::Value::String(s) => s.into_bound_py_any(py)?,
        serde_json::Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        serde_json::Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// Anything serializable, as Python objects (through its JSON form).
pub fn to_py<'py, T: serde::Serialize>(py: Python<'py>, v: &T) -> Result<Bound<'py, PyAny>> {
    let json = serde_json::to_value(v).map_err(memtrace::EngineError::from)?;
    Ok(json_to_py(py, &json)?)
}

/// Rows as a list of dicts keyed by the column names.
pub fn rows_to_py<'py>(
    py: Python<'py>,
    columns: &[String],
    rows: &[Vec<serde_json::Value>],
) -> PyResult<Bound<'py, PyList>> {
    let keys: Vec<Bound<'py, PyString>> = columns.iter().map(|c| PyString::new(py, c)).collect();
    let list = PyList::empty(py);
    for row in rows {
        let dict = PyDict::new(py);
        for (k, v) in keys.iter().zip(row) {
            dict.set_item(k, json_to_py(py, v)?)?;
        }
        list.append(dict)?;
    }
    Ok(list)
}

/// A Python value as a query value: None, bool, int, float, str, or a list
/// or tuple of them. `what` names it in errors.
pub fn py_to_value(v: &Bound<'_, PyAny>, what: &str) -> Result<Value> {
    if v.is_none() {
        return Ok(Value::Null);
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(v.extract::<bool>()?));
    }
    if v.is_instance_of::<PyInt>() {
        return v
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| BindingError::Value(format!("{what}: {v} does not fit in 64 bits")));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(v.extract::<f64>()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Value::Str(v.extract::<String>()?));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in v.try_iter()?.enumerate() {
            items.push(py_to_value(&item?, &format!("{what}[{i}]"))?);
        }
        return Ok(Value::List(items));
    }
    let type_name = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    Err(BindingError::Type(format!(
        "{what}: a value of type {type_name} cannot be a query value \
         (None, bool, int, float, str, or a list of them)"
    )))
}

/// Query parameters from a dict of names (with or without the `$`) to values.
pub fn params(dict: Option<&Bound<'_, PyDict>>) -> Result<Params> {
    let mut out = Params::new();
    let Some(dict) = dict else {
        return Ok(out);
    };
    for (k, v) in dict.iter() {
        let name: String = k
            .extract()
            .map_err(|_| BindingError::Type(format!("parameter names are strings, not {k}")))?;
        let name = name.strip_prefix('$').unwrap_or(&name).to_string();
        if name.is_empty() {
            return Err(BindingError::Value("a parameter name is empty".into()));
        }
        let value = py_to_value(&v, &format!("parameter ${name}"))?;
        out.insert(name, value);
    }
    Ok(out)
}

/// Pattern parameters: as [`params`], in a stable order.
pub fn param_list(dict: Option<&Bound<'_, PyDict>>) -> Result<Vec<(String, Value)>> {
    let mut list: Vec<(String, Value)> = params(dict)?.into_iter().collect();
    list.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(list)
}

/// An attribution method by name.
pub fn method(name: &str) -> Result<Method> {
    name.parse().map_err(BindingError::Value)
}

/// Reads a setting name (`None` is the benchmark setting: all a case holds).
pub fn setting(name: Option<&str>) -> Result<Setting> {
    name.map_or(Ok(Setting::Benchmark), |n| {
        n.parse().map_err(BindingError::Value)
    })
}
