//! The variables of one span: what it read (its input value, messages,
//! prompt, tool parameters, documents) and what it wrote (its output,
//! messages, documents, embeddings), and which inputs pair with which
//! outputs.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::builder::Builder;
use super::eval::{indexed, json_or_value};
use super::values::{nest, text};

/// Attribute families that become variables; what they leave in op metadata.
const VARIABLE_KEYS: &[&str] = &[
    "input.value",
    "input.mime_type",
    "output.value",
    "output.mime_type",
    "reranker.query",
    "llm.prompt_template.template",
    "llm.prompt_template.variables",
    "llm.prompt_template.version",
    "tool.parameters",
];

/// Attribute lists whose items become variables.
const VARIABLE_LISTS: &[&str] = &[
    "llm.input_messages",
    "llm.output_messages",
    "retrieval.documents",
    "reranker.input_documents",
    "reranker.output_documents",
    "embedding.embeddings",
];

/// Whether an attribute key becomes a variable (and stays out of op metadata).
pub(super) fn is_variable_key(key: &str) -> bool {
    VARIABLE_KEYS.contains(&key)
        || VARIABLE_LISTS.iter().any(|p| {
            key.strip_prefix(p)
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
}

/// The variables made for one span.
#[derive(Default)]
pub(super) struct SpanVars {
    pub(super) inputs: Vec<usize>,
    pub(super) outputs: Vec<usize>,
    /// Where what flows into the span lands, when it has inputs.
    pub(super) primary: Option<usize>,
    /// The main output (`output.value`, else the last output message).
    pub(super) answer: Option<usize>,
    /// (input, output) pairs that replace the all-to-all rule for the
    /// inputs and outputs they name (an embedding's text and its vector, a
    /// reranker's document in and out).
    pub(super) pairs: Vec<(usize, usize)>,
    /// The inputs and outputs named by `pairs`.
    pub(super) paired: HashSet<usize>,
}

/// A chat message's text (its content, its parts, or its tool calls) and
/// its other fields as metadata.
fn message(group: &Map<String, Value>) -> (Option<String>, Map<String, Value>) {
    let content = group.get("message.content").and_then(text).or_else(|| {
        let parts: Vec<String> = indexed(group, "message.contents")
            .values()
            .filter_map(|c| c.get("message_content.text").and_then(text))
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    });
    let content = content.or_else(|| {
        let calls: Vec<String> = indexed(group, "message.tool_calls")
            .values()
            .filter_map(|c| {
                let name = c.get("tool_call.function.name").and_then(text)?;
                let args = c
                    .get("tool_call.function.arguments")
                    .and_then(text)
                    .unwrap_or_default();
                Some(format!("{name}({args})"))
            })
            .collect();
        (!calls.is_empty()).then(|| calls.join("\n"))
    });
    let meta = nest(
        group
            .iter()
            .filter(|(k, _)| *k != "message.content")
            .map(|(k, v)| {
                (
                    k.strip_prefix("message.").unwrap_or(k).to_string(),
                    v.clone(),
                )
            }),
    );
    (content, meta)
}

/// A document's id, content and metadata (its score, metadata and
/// position in its list).
fn document(
    group: &Map<String, Value>,
    position: usize,
) -> (Option<String>, Option<String>, Map<String, Value>) {
    let id = group.get("document.id").and_then(text);
    let content = group.get("document.content").and_then(text);
    let mut meta = Map::new();
    if let Some(s) = group.get("document.score") {
        meta.insert("score".into(), s.clone());
    }
    if let Some(m) = group.get("document.metadata") {
        meta.insert("metadata".into(), json_or_value(m));
    }
    meta.insert("position".into(), position.into());
    (id, content, meta)
}

/// Makes the variables of span `i`: its inputs first, then its outputs.
pub(super) fn span_vars(b: &mut Builder<'_>, i: usize) -> SpanVars {
    let mut v = SpanVars::default();
    attribute_inputs(b, i, &mut v);
    let listed = list_inputs(b, i, &mut v);
    v.primary = v
        .primary
        .or(listed.last_user)
        .or_else(|| v.inputs.first().copied());
    outputs(b, i, &mut v, &listed);
    status_output(b, i, &mut v);
    v
}

/// The inputs of the lists of span `i` that its outputs pair with.
struct ListedInputs {
    /// The last user message, where what flows in lands when the span has
    /// no `input.value`.
    last_user: Option<usize>,
    /// Each embedding's text, by its place in the list.
    embedding_texts: HashMap<usize, usize>,
    /// Each reranker input document, by its document id.
    documents_in: HashMap<String, usize>,
}

/// The MIME type that attribute `key` of `a` names, as metadata.
fn mime(a: &Map<String, Value>, key: &str) -> Map<String, Value> {
    let mut m = Map::new();
    if let Some(t) = a.get(key) {
        m.insert("mime_type".into(), t.clone());
    }
    m
}

/// The inputs span `i` holds as single attributes: its input value, a
/// reranker's query, a prompt template and its variables, a tool's
/// parameters.
fn attribute_inputs(b: &mut Builder<'_>, i: usize, v: &mut SpanVars) {
    let span = &b.spans[i];
    let a = &span.attrs;
    let start = span.start;
    let name = span.name.clone();
    if let Some(x) = a.get("input.value") {
        let id = b.var(
            i,
            "input",
            &name,
            text(x),
            "input",
            start,
            mime(a, "input.mime_type"),
        );
        v.inputs.push(id);
        v.primary = Some(id);
    }
    if let Some(x) = a.get("reranker.query") {
        v.inputs
            .push(b.var(i, "query", &name, text(x), "query", start, Map::new()));
    }
    if let Some(x) = a.get("llm.prompt_template.template") {
        let mut meta = Map::new();
        if let Some(ver) = a.get("llm.prompt_template.version") {
            meta.insert("version".into(), ver.clone());
        }
        v.inputs
            .push(b.var(i, "prompt_template", &name, text(x), "prompt", start, meta));
    }
    if let Some(x) = a.get("llm.prompt_template.variables") {
        v.inputs.push(b.var(
            i,
            "prompt_variables",
            &name,
            text(x),
            "prompt_variables",
            start,
            Map::new(),
        ));
    }
    if let Some(x) = a.get("tool.parameters") {
        let tool = a
            .get("tool.name")
            .and_then(text)
            .unwrap_or_else(|| name.clone());
        v.inputs.push(b.var(
            i,
            "tool_parameters",
            &tool,
            text(x),
            "tool_schema",
            start,
            Map::new(),
        ));
    }
}

/// The inputs span `i` holds as lists: its input messages, the texts of
/// its embeddings, a reranker's input documents.
fn list_inputs(b: &mut Builder<'_>, i: usize, v: &mut SpanVars) -> ListedInputs {
    let span = &b.spans[i];
    let a = &span.attrs;
    let start = span.start;
    let name = span.name.clone();
    let mut last_user = None;
    for (n, g) in indexed(a, "llm.input_messages") {
        let (content, meta) = message(&g);
        let user = meta.get("role").and_then(Value::as_str) == Some("user");
        let id = b.var(
            i,
            "message",
            &format!("{name}:{n}"),
            content,
            "message",
            start,
            meta,
        );
        if user {
            last_user = Some(id);
        }
        v.inputs.push(id);
    }
    let mut texts = HashMap::new();
    for (n, g) in indexed(a, "embedding.embeddings") {
        if let Some(t) = g.get("embedding.text") {
            let id = b.var(
                i,
                "embedding_text",
                &format!("{name}:{n}"),
                text(t),
                "embedding_text",
                start,
                Map::new(),
            );
            v.inputs.push(id);
            texts.insert(n, id);
        }
    }
    let mut docs_in: HashMap<String, usize> = HashMap::new();
    for (n, g) in indexed(a, "reranker.input_documents") {
        let (doc_id, content, meta) = document(&g, n);
        let var_name = doc_id.clone().unwrap_or_else(|| format!("{name}:in:{n}"));
        let id = b.var(i, "document", &var_name, content, "document", start, meta);
        v.inputs.push(id);
        if let Some(d) = doc_id {
            docs_in.insert(d, id);
        }
    }
    ListedInputs {
        last_user,
        embedding_texts: texts,
        documents_in: docs_in,
    }
}

/// The outputs of span `i`: its output value, output messages, retrieved
/// and reranked documents and embeddings, the last two paired with the
/// inputs they came from.
fn outputs(b: &mut Builder<'_>, i: usize, v: &mut SpanVars, listed: &ListedInputs) {
    let span = &b.spans[i];
    let a = &span.attrs;
    let end = span.end.max(span.start);
    let name = span.name.clone();
    let (texts, docs_in) = (&listed.embedding_texts, &listed.documents_in);
    if let Some(x) = a.get("output.value") {
        let id = b.var(
            i,
            "output",
            &name,
            text(x),
            "output",
            end,
            mime(a, "output.mime_type"),
        );
        v.outputs.push(id);
        v.answer = Some(id);
    }
    let mut last_out = None;
    for (n, g) in indexed(a, "llm.output_messages") {
        let (content, meta) = message(&g);
        let id = b.var(
            i,
            "output_message",
            &format!("{name}:{n}"),
            content,
            "output_message",
            end,
            meta,
        );
        v.outputs.push(id);
        last_out = Some(id);
    }
    v.answer = v.answer.or(last_out);
    for (n, g) in indexed(a, "retrieval.documents") {
        let (doc_id, content, meta) = document(&g, n);
        let var_name = doc_id.unwrap_or_else(|| format!("{name}:{n}"));
        v.outputs
            .push(b.var(i, "document", &var_name, content, "document", end, meta));
    }
    for (n, g) in indexed(a, "reranker.output_documents") {
        let (doc_id, content, meta) = document(&g, n);
        let source = doc_id.as_ref().and_then(|d| docs_in.get(d).copied());
        let var_name = doc_id.unwrap_or_else(|| format!("{name}:out:{n}"));
        let id = b.var(i, "document", &var_name, content, "document", end, meta);
        v.outputs.push(id);
        if let Some(s) = source {
            v.pairs.push((s, id));
            v.paired.insert(id);
        }
    }
    // Reranker inputs are paired only when some output names them.
    for &(s, _) in &v.pairs {
        v.paired.insert(s);
    }
    for (n, g) in indexed(a, "embedding.embeddings") {
        if let Some(vec) = g.get("embedding.vector") {
            let mut meta = Map::new();
            if let Value::Array(xs) = vec {
                meta.insert("dimensions".into(), xs.len().into());
            }
            let id = b.var(
                i,
                "embedding",
                &format!("{name}:{n}"),
                text(vec),
                "embedding",
                end,
                meta,
            );
            v.outputs.push(id);
            if let Some(&t) = texts.get(&n) {
                v.pairs.push((t, id));
                v.paired.insert(t);
                v.paired.insert(id);
            }
        }
    }
}

/// Every span has an output, so that its op has edges to induce: a span
/// without one gets how it ended.
fn status_output(b: &mut Builder<'_>, i: usize, v: &mut SpanVars) {
    if !v.outputs.is_empty() {
        return;
    }
    let span = &b.spans[i];
    let end = span.end.max(span.start);
    let name = span.name.clone();
    let status = match &span.status_message {
        Some(m) => format!("{}: {m}", span.status),
        None => span.status.to_string(),
    };
    let mut meta = Map::new();
    meta.insert("synthesized".into(), true.into());
    v.outputs
        .push(b.var(i, "status", &name, Some(status), "status", end, meta));
}
