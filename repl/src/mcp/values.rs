//! One variable's value, a page at a time, fenced as data; an op id gives the op.

use memtrace::attrib::agent::explore::Fence;
use memtrace::engine::Engine;
use rmcp::ErrorData;
use serde_json::{json, Value};

use super::bounds::cut_value;
use super::errors::engine;
use super::limits::NOTICE;
use super::params::ShowValue;
use super::results::ValuePage;

/// The page of at most `max` characters from `offset` of the value `a` names.
pub fn show(db: &Engine, a: ShowValue, offset: usize, max: usize) -> Result<ValuePage, ErrorData> {
    let view = db.trace(&a.trace).map_err(engine)?;
    let graph_id = view.info().graph_id.clone();
    let var = match view.resolve(&a.node).map_err(engine)? {
        memtrace::Node::Variable(v) => v,
        memtrace::Node::Operation(o) => {
            let data = cut_value(serde_json::to_value(&o).unwrap_or(Value::Null));
            return Ok(ValuePage {
                notice: NOTICE.into(),
                data,
                value_chars: 0,
                offset: 0,
                next_offset: None,
            });
        }
    };
    let value = var.value.clone().unwrap_or_default();
    let chars = value.chars().count();
    let page: String = value.chars().skip(offset).take(max).collect();
    let end = offset + page.chars().count();
    let ops = |edges: Vec<memtrace::Edge>| -> Vec<String> {
        let mut ids: Vec<String> = Vec::new();
        for e in edges {
            if !ids.contains(&e.op_id) {
                ids.push(e.op_id);
            }
        }
        ids
    };
    let versions: Vec<String> = view
        .variable_versions(&var.full_name)
        .map_err(engine)?
        .into_iter()
        .map(|v| v.full_node_id)
        .collect();
    let fence = Fence::new(&graph_id, &var.full_node_id);
    Ok(ValuePage {
        notice: format!(
            "{NOTICE} The value's text is also between <{t}> and </{t}> markers.",
            t = fence.tag()
        ),
        data: json!({
            "trace": graph_id,
            "id": var.full_node_id,
            "category": var.category,
            "class": var.class_name,
            "comment": var.comment,
            "metadata": var.metadata,
            "value": fence.wrap(&page),
            "versions": versions,
            "written_by": ops(view.edges_in(&var).map_err(engine)?),
            "read_by": ops(view.edges_out(&var).map_err(engine)?),
        }),
        value_chars: chars,
        offset,
        next_offset: (end < chars).then_some(end),
    })
}
