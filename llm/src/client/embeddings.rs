//! Reading an embeddings answer.

use serde_json::Value;

use crate::chat::excerpt;

/// The vectors of an embeddings answer, in the order of the inputs (by
/// each item's `index` when it has one).
pub(super) fn parse_embeddings(
    raw: &str,
    count: usize,
) -> std::result::Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_str(raw)
        .map_err(|e| format!("the answer is not JSON ({e}): {}", excerpt(raw, 200)))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("the answer has no `data` list: {}", excerpt(raw, 200)))?;
    if data.len() != count {
        return Err(format!(
            "the answer has {} vectors for {count} inputs",
            data.len()
        ));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for (i, item) in data.iter().enumerate() {
        let at = match item.get("index") {
            None => i,
            Some(x) => x
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < count)
                .ok_or_else(|| format!("data item {i} has a bad index {x}"))?,
        };
        let numbers = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("data item {i} has no `embedding` list"))?;
        let vector = numbers
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<Vec<f32>>>()
            .filter(|v| !v.is_empty() && v.iter().all(|x| x.is_finite()))
            .ok_or_else(|| format!("data item {i} is not a list of finite numbers"))?;
        if out[at].replace(vector).is_some() {
            return Err(format!("two vectors for input {at}"));
        }
    }
    let vectors: Vec<Vec<f32>> = out.into_iter().flatten().collect();
    if vectors.len() != count {
        return Err("some input has no vector".into());
    }
    if vectors.iter().any(|v| v.len() != vectors[0].len()) {
        return Err("the vectors differ in length".into());
    }
    Ok(vectors)
}
