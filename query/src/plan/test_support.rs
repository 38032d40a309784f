//! Helpers the planner's tests share: a statement planned from its text.

use crate::value::Value;

use super::entry::plan_text;
use super::types::{Params, Plan};

pub(super) fn plan_err(text: &str, params: &[(&str, Value)]) -> String {
    let stmt = crate::parse_statement(text).unwrap();
    let params: Params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    plan_text(&stmt, &params, text).unwrap_err().to_string()
}

pub(super) fn explain(text: &str, params: &[(&str, Value)]) -> Vec<String> {
    let stmt = crate::parse_statement(text).unwrap();
    let params: Params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    plan_text(&stmt, &params, text).unwrap().explain()
}

fn params_of(params: &[(&str, Value)]) -> Params {
    params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

pub(super) fn plan_of(text: &str, params: &[(&str, Value)]) -> Plan {
    let stmt = crate::parse_statement(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
    plan_text(&stmt, &params_of(params), text).unwrap_or_else(|e| panic!("{text}\n{e}"))
}
