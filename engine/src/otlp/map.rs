//! One OpenTelemetry trace as a smartcomment export (plus `data.annotations`
//! for failed evaluations): spans become ops, their inputs and outputs
//! variables, and the span tree, span order and links become edges. The
//! book's page on OpenTelemetry traces (docs/src/otlp.md) is the contract; the
//! names of the rules below are the names used there.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::eval::{self, indexed, json_or_value, Evaluation, Scope};
use super::read::Span;

/// At most this many earlier siblings pass their outputs to a later one
/// (the ones that ended last).
pub(crate) const SIBLINGS: usize = 8;

/// The graph id of an OpenTelemetry trace.
pub(crate) fn graph_id(trace_id: &str) -> String {
    format!("otel-{trace_id}")
}

/// The op id of a span.
pub(crate) fn op_id(span_id: &str) -> String {
    format!("span-{span_id}")
}

/// Nanoseconds since the Unix epoch as ISO-8601 UTC with microseconds.
pub(crate) fn iso(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let micros = ns % 1_000_000_000 / 1000;
    let day = i64::try_from(secs / 86_400).unwrap_or(i64::MAX);
    let rest = secs % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}.{micros:06}Z",
        crate::timestamp::civil_from_days(day),
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// Span attributes nested at their dots (`llm.model_name` under `llm`, then
/// `model_name`), so that queries reach them as `op.meta.attributes.llm.model_name`.
/// A key that clashes with another (`a` and `a.b` both set), or that has an
/// empty part, is kept whole under `_flat`.
pub(crate) fn nest(pairs: impl IntoIterator<Item = (String, Value)>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut flat = Map::new();
    for (key, value) in pairs {
        if !insert_nested(&mut out, &key, value.clone()) {
            flat.insert(key, value);
        }
    }
    if !flat.is_empty() {
        out.insert("_flat".into(), Value::Object(flat));
    }
    out
}

fn insert_nested(root: &mut Map<String, Value>, key: &str, value: Value) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return false;
    }
    let mut cur = root;
    for p in &parts[..parts.len() - 1] {
        let next = cur
            .entry(p.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        match next {
            Value::Object(m) => cur = m,
            _ => return false,
        }
    }
    let last = parts[parts.len() - 1];
    if cur.contains_key(last) {
        return false;
    }
    cur.insert(last.to_string(), value);
    true
}

/// A value as variable text: strings as they are, anything else as JSON.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

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

const VARIABLE_LISTS: &[&str] = &[
    "llm.input_messages",
    "llm.output_messages",
    "retrieval.documents",
    "reranker.input_documents",
    "reranker.output_documents",
    "embedding.embeddings",
];

fn is_variable_key(key: &str) -> bool {
    VARIABLE_KEYS.contains(&key)
        || VARIABLE_LISTS.iter().any(|p| {
            key.strip_prefix(p)
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
}

/// The op category of a span: `openinference.span.kind` lowercased, else
/// the kind of GenAI operation, else `span`.
pub(crate) fn category(span: &Span) -> String {
    if let Some(Value::String(k)) = span.attrs.get("openinference.span.kind") {
        if !k.trim().is_empty() {
            return k.trim().to_ascii_lowercase();
        }
    }
    if let Some(Value::String(op)) = span.attrs.get("gen_ai.operation.name") {
        return match op.as_str() {
            "chat" | "text_completion" | "generate_content" => "llm".into(),
            "embeddings" => "embedding".into(),
            "execute_tool" => "tool".into(),
            "invoke_agent" | "create_agent" => "agent".into(),
            other => other.to_ascii_lowercase(),
        };
    }
    "span".into()
}

/// The variables made for one span.
#[derive(Default)]
struct SpanVars {
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    /// Where what flows into the span lands, when it has inputs.
    primary: Option<usize>,
    /// The main output (`output.value`, else the last output message).
    answer: Option<usize>,
    /// (input, output) pairs that replace the all-to-all rule for the
    /// inputs and outputs they name (an embedding's text and its vector, a
    /// reranker's document in and out).
    pairs: Vec<(usize, usize)>,
    paired: HashSet<usize>,
}

/// The export being built.
struct Builder<'s> {
    spans: &'s [Span],
    nodes: Vec<Value>,
    node_ids: Vec<String>,
    versions: HashMap<String, u32>,
    edges: Vec<Value>,
    edge_seen: HashSet<(usize, usize, usize)>,
    op_edges: Vec<usize>,
    span_session: Vec<String>,
    categories: Vec<String>,
}

impl Builder<'_> {
    #[allow(clippy::too_many_arguments)]
    fn var(
        &mut self,
        span: usize,
        class: &str,
        name: &str,
        value: Option<String>,
        category: &str,
        at: u64,
        mut meta: Map<String, Value>,
    ) -> usize {
        let full = format!("{class}:{name}");
        let version = self.versions.entry(full.clone()).or_insert(0);
        *version += 1;
        let version = *version;
        meta.insert("span_id".into(), self.spans[span].span_id.clone().into());
        self.node_ids.push(format!("{full}@{version}"));
        self.nodes.push(json!({
            "name": name,
            "class_name": class,
            "version": version,
            "value": value,
            "comment": null,
            "category": category,
            "session_id": self.span_session[span],
            "created_at": iso(at),
            "metadata": meta,
        }));
        self.nodes.len() - 1
    }

    /// An edge `source -> target` induced by `op`, once.
    fn edge(&mut self, op: usize, source: usize, target: usize, flow: &str, at: u64) {
        if source == target || !self.edge_seen.insert((op, source, target)) {
            return;
        }
        self.op_edges[op] += 1;
        let n = self.edges.len();
        self.edges.push(json!({
            "edge_id": format!("edge-{n}"),
            "op_id": op_id(&self.spans[op].span_id),
            "category": self.categories[op],
            "comment": null,
            "source_full_node_id": self.node_ids[source],
            "target_full_node_id": self.node_ids[target],
            "session_id": self.span_session[op],
            "created_at": iso(at),
            "metadata": {"flow": flow},
        }));
    }
}

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

/// Makes the variables of span `i`.
fn span_vars(b: &mut Builder<'_>, i: usize) -> SpanVars {
    let span = &b.spans[i];
    let a = &span.attrs;
    let (start, end) = (span.start, span.end.max(span.start));
    let name = span.name.clone();
    let mut v = SpanVars::default();
    let mime = |key: &str| {
        let mut m = Map::new();
        if let Some(t) = a.get(key) {
            m.insert("mime_type".into(), t.clone());
        }
        m
    };
    if let Some(x) = a.get("input.value") {
        let id = b.var(
            i,
            "input",
            &name,
            text(x),
            "input",
            start,
            mime("input.mime_type"),
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
    v.primary = v
        .primary
        .or(last_user)
        .or_else(|| v.inputs.first().copied());

    if let Some(x) = a.get("output.value") {
        let id = b.var(
            i,
            "output",
            &name,
            text(x),
            "output",
            end,
            mime("output.mime_type"),
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
    if v.outputs.is_empty() {
        // Every span has an output, so that its op has edges to induce:
        // how it ended.
        let status = match &span.status_message {
            Some(m) => format!("{}: {m}", span.status),
            None => span.status.to_string(),
        };
        let mut meta = Map::new();
        meta.insert("synthesized".into(), true.into());
        v.outputs
            .push(b.var(i, "status", &name, Some(status), "status", end, meta));
    }
    v
}

/// The earlier siblings whose outputs flow into each span of `group`
/// (positions into `spans`, in span order): for each span, the siblings
/// that ended before it started and that no other such sibling followed
/// (started after they ended), the last-ended `SIBLINGS` of them.
fn sibling_flows(spans: &[Span], group: &[usize]) -> Vec<(usize, Vec<usize>)> {
    let end = |i: usize| spans[i].end.max(spans[i].start);
    let mut out = Vec::new();
    // Spans already passed, by end time.
    let mut pending: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut frontier: Vec<usize> = Vec::new();
    // The latest (start, position) among spans that ended before the current one.
    let mut latest: Option<(u64, usize)> = None;
    for (pos, &c) in group.iter().enumerate() {
        let start = spans[c].start;
        while let Some(&Reverse((e, p))) = pending.peek() {
            if e > start {
                break;
            }
            pending.pop();
            frontier.push(p);
            let key = (spans[group[p]].start, p);
            if latest.is_none_or(|l| key > l) {
                latest = Some(key);
            }
        }
        if let Some((lstart, lpos)) = latest {
            // P is followed by Q when Q started at or after P ended (and Q
            // comes after P in span order).
            frontier.retain(|&p| {
                let s = &spans[group[p]];
                let pe = end(group[p]);
                !(lstart > pe || (lstart == pe && (s.start < pe || p < lpos)))
            });
        }
        let mut preds = frontier.clone();
        preds.sort_by_key(|&p| Reverse((end(group[p]), p)));
        preds.truncate(SIBLINGS);
        out.push((c, preds.into_iter().map(|p| group[p]).collect()));
        pending.push(Reverse((end(c), pos)));
    }
    out
}

/// Converts the spans of one trace (any order) into a smartcomment export.
pub(crate) fn trace(trace_id: &str, mut spans: Vec<Span>) -> Value {
    // Span order: by start, a longer span (a parent) before a shorter one
    // that starts with it, then by depth.
    let index: HashMap<String, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id.clone(), i))
        .collect();
    let depth = depths(&spans, &index);
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| (spans[i].start, Reverse(spans[i].end), depth[i].0, i));
    let mut sorted = Vec::with_capacity(spans.len());
    let mut broken = Vec::with_capacity(spans.len());
    {
        let mut taken: Vec<Option<Span>> = spans.drain(..).map(Some).collect();
        for &i in &order {
            if let Some(s) = taken[i].take() {
                sorted.push(s);
                broken.push(depth[i].1);
            }
        }
    }
    let spans = sorted;
    let n = spans.len();
    let index: HashMap<&str, usize> = spans
        .iter()
        .enumerate()
        .map(|(i, s)| (s.span_id.as_str(), i))
        .collect();
    // Parents in the trace; a parent that is missing (or in a cycle) makes
    // the span a root.
    let parent: Vec<Option<usize>> = (0..n)
        .map(|i| {
            let p = spans[i].parent.as_deref()?;
            (!broken[i])
                .then(|| index.get(p).copied())
                .flatten()
                .filter(|&p| p != i)
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut roots = Vec::new();
    for (i, p) in parent.iter().enumerate() {
        match *p {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }

    // The trace's ids and sessions.
    let first_str = |f: &dyn Fn(&Span) -> Option<&Value>| {
        spans
            .iter()
            .find_map(|s| f(s).and_then(Value::as_str).filter(|x| !x.is_empty()))
            .map(str::to_string)
    };
    let project = first_str(&|s| s.resource.get("openinference.project.name"))
        .or_else(|| first_str(&|s| s.resource.get("service.name")));
    let user = first_str(&|s| s.attrs.get("user.id"))
        .or_else(|| first_str(&|s| s.resource.get("user.id")));
    let mut session_names: Vec<String> = Vec::new();
    for s in &spans {
        if let Some(id) = s.attrs.get("session.id").and_then(text) {
            if !session_names.contains(&id) {
                session_names.push(id);
            }
        }
    }
    let default_session = match session_names.first() {
        Some(s) => format!("session-{s}"),
        None => format!("trace-{trace_id}"),
    };
    let span_session: Vec<String> = spans
        .iter()
        .map(|s| match s.attrs.get("session.id").and_then(text) {
            Some(id) => format!("session-{id}"),
            None => default_session.clone(),
        })
        .collect();
    let mut sessions: Vec<Value> = Vec::new();
    if session_names.is_empty() {
        sessions.push(json!({
            "session_id": default_session,
            "session_name": trace_id,
            "category": "otel_trace",
            "created_at": spans.first().map(|s| iso(s.start)),
            "metadata": {"trace_id": trace_id},
        }));
    }
    for name in &session_names {
        let sid = format!("session-{name}");
        let first = spans
            .iter()
            .zip(&span_session)
            .find(|(_, s)| **s == sid)
            .map(|(sp, _)| iso(sp.start));
        sessions.push(json!({
            "session_id": sid,
            "session_name": name,
            "category": "otel_session",
            "created_at": first,
            "metadata": {"session.id": name},
        }));
    }

    let categories: Vec<String> = spans.iter().map(category).collect();
    let mut b = Builder {
        spans: &spans,
        nodes: Vec::new(),
        node_ids: Vec::new(),
        versions: HashMap::new(),
        edges: Vec::new(),
        edge_seen: HashSet::new(),
        op_edges: vec![0; n],
        span_session,
        categories,
    };
    let vars: Vec<SpanVars> = (0..n).map(|i| span_vars(&mut b, i)).collect();

    // What each span hands down to its children: its primary input, else
    // what its parent handed down.
    let mut carrier: Vec<Option<usize>> = vec![None; n];
    for i in 0..n {
        carrier[i] = vars[i]
            .primary
            .or_else(|| parent[i].and_then(|p| (p < i).then(|| carrier[p]).flatten()));
    }
    // Earlier siblings, per parent and among the roots.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut received = vec![false; n];
    for group in children.iter().chain(std::iter::once(&roots)) {
        for (c, ps) in sibling_flows(&spans, group) {
            for &p in &ps {
                received[p] = true;
            }
            preds[c] = ps;
        }
    }

    for i in 0..n {
        let s = &spans[i];
        let (start, end) = (s.start, s.end.max(s.start));
        let v = &vars[i];
        // What flows in lands on the primary input, or else on every output.
        let mut incoming: Vec<(usize, &str)> = Vec::new();
        if let Some(c) = parent[i].and_then(|p| carrier[p]) {
            incoming.push((c, "parent"));
        }
        for &p in &preds[i] {
            incoming.extend(vars[p].outputs.iter().map(|&o| (o, "sibling")));
        }
        for l in &s.links {
            if l.trace_id != s.trace_id {
                continue;
            }
            if let Some(&li) = index.get(l.span_id.as_str()) {
                if li != i {
                    incoming.extend(vars[li].outputs.iter().map(|&o| (o, "link")));
                }
            }
        }
        match v.primary {
            Some(p) => {
                for (src, flow) in incoming {
                    b.edge(i, src, p, flow, start);
                }
            }
            None => {
                for (src, flow) in incoming {
                    for &o in &v.outputs {
                        b.edge(i, src, o, flow, end);
                    }
                }
            }
        }
        for &inp in &v.inputs {
            for &o in &v.outputs {
                let pair = v.pairs.contains(&(inp, o));
                if pair || !(v.paired.contains(&inp) && v.paired.contains(&o)) {
                    b.edge(i, inp, o, "span", end);
                }
            }
        }
    }
    // Children whose outputs no later sibling received pass them to their
    // parent's outputs.
    for p in 0..n {
        let end = spans[p].end.max(spans[p].start);
        for &c in &children[p] {
            if received[c] {
                continue;
            }
            for &o in &vars[c].outputs {
                for &po in &vars[p].outputs {
                    b.edge(p, o, po, "child", end);
                }
            }
        }
    }
    // An op with no edge at all reads smartcomment's NONE sentinel.
    let lonely: Vec<usize> = (0..n).filter(|&i| b.op_edges[i] == 0).collect();
    if !lonely.is_empty() {
        b.node_ids.push("COMMENT:NONE@1".into());
        b.nodes.push(json!({
            "name": "NONE", "class_name": "COMMENT", "version": 1, "value": "NONE",
            "comment": null, "category": "sentinel", "session_id": "__none__",
            "created_at": null, "metadata": {},
        }));
        let none = b.nodes.len() - 1;
        for i in lonely {
            for &o in &vars[i].outputs {
                b.edge(i, none, o, "none", spans[i].end.max(spans[i].start));
            }
        }
        sessions.push(json!({
            "session_id": "__none__", "session_name": "NONE sentinel",
            "category": "sentinel", "created_at": null, "metadata": {},
        }));
    }

    let ops: Vec<Value> = (0..n)
        .map(|i| {
            op_record(
                &spans[i],
                i,
                &b,
                parent[i].is_none() && spans[i].parent.is_some(),
            )
        })
        .collect();
    let root = roots.first().copied().unwrap_or(0);
    let annotations = cases(&spans, &vars, &b, &parent, &index, root);

    let mut meta = Map::new();
    meta.insert("source_format".into(), "otlp".into());
    meta.insert("trace_id".into(), trace_id.into());
    if let Some(s) = session_names.first() {
        meta.insert("session_id".into(), s.clone().into());
    }
    if session_names.len() > 1 {
        meta.insert("session_ids".into(), session_names.clone().into());
    }
    if let Some(root_span) = spans.get(root) {
        meta.insert("root_span_id".into(), root_span.span_id.clone().into());
        meta.insert("root_span_name".into(), root_span.name.clone().into());
        meta.insert(
            "resource".into(),
            Value::Object(nest(
                root_span
                    .resource
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone())),
            )),
        );
    }
    meta.insert("spans".into(), n.into());
    let missing: Vec<Value> = (0..n)
        .filter(|&i| parent[i].is_none() && spans[i].parent.is_some())
        .map(|i| spans[i].span_id.clone().into())
        .collect();
    if !missing.is_empty() {
        meta.insert("spans_without_parent".into(), missing.into());
    }
    let mut data = json!({
        "nodes": b.nodes,
        "edges": b.edges,
        "operations": ops,
        "sessions": sessions,
    });
    if !annotations.is_empty() {
        data["annotations"] = Value::Array(annotations);
    }
    json!({
        "graph_id": graph_id(trace_id),
        "user_id": user,
        "project_id": project,
        "created_at": spans.iter().map(|s| s.start).min().map(iso),
        "metadata": meta,
        "data": data,
    })
}

/// Each span's depth in the tree, and whether its parent chain is broken
/// by a cycle (the span is then read as a root).
fn depths(spans: &[Span], index: &HashMap<String, usize>) -> Vec<(usize, bool)> {
    let n = spans.len();
    let mut out: Vec<Option<(usize, bool)>> = vec![None; n];
    for i in 0..n {
        let mut path = Vec::new();
        let mut on_path = HashSet::new();
        let mut cur = i;
        let base = loop {
            if let Some(d) = out[cur] {
                break Some(d.0 + 1);
            }
            if !on_path.insert(cur) {
                // A cycle: the span where it closes becomes a root.
                out[cur] = Some((0, true));
                path.retain(|&p| p != cur);
                break Some(1);
            }
            path.push(cur);
            match spans[cur].parent.as_deref().and_then(|p| index.get(p)) {
                Some(&p) if p != cur => cur = p,
                _ => break None,
            }
        };
        // `path` runs from i up to the topmost span found.
        let base = base.unwrap_or(0);
        for (k, &p) in path.iter().rev().enumerate() {
            if out[p].is_none() {
                out[p] = Some((base + k, false));
            }
        }
    }
    out.into_iter().map(|d| d.unwrap_or((0, false))).collect()
}

fn op_record(s: &Span, i: usize, b: &Builder<'_>, parent_missing: bool) -> Value {
    let mut meta = Map::new();
    meta.insert("span_id".into(), s.span_id.clone().into());
    meta.insert("trace_id".into(), s.trace_id.clone().into());
    meta.insert("parent_span_id".into(), s.parent.clone().into());
    if parent_missing {
        meta.insert("parent_missing".into(), true.into());
    }
    meta.insert("kind".into(), s.kind.into());
    meta.insert("start_time".into(), iso(s.start).into());
    meta.insert("end_time".into(), iso(s.end).into());
    let ms = s.end.saturating_sub(s.start) as f64 / 1e6;
    meta.insert(
        "duration_ms".into(),
        serde_json::Number::from_f64(ms).map_or(Value::Null, Value::Number),
    );
    let mut status = Map::new();
    status.insert("code".into(), s.status.into());
    if let Some(m) = &s.status_message {
        status.insert("message".into(), m.clone().into());
    }
    meta.insert("status".into(), Value::Object(status));
    if let Some(ts) = &s.trace_state {
        meta.insert("trace_state".into(), ts.clone().into());
    }
    meta.insert("scope".into(), (*s.scope).clone());
    meta.insert(
        "attributes".into(),
        Value::Object(nest(
            s.attrs
                .iter()
                .filter(|(k, _)| !is_variable_key(k))
                .map(|(k, v)| (k.clone(), v.clone())),
        )),
    );
    if !s.events.is_empty() {
        let events: Vec<Value> = s
            .events
            .iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "time": iso(e.time),
                    "attributes": nest(e.attrs.iter().map(|(k, v)| (k.clone(), v.clone()))),
                })
            })
            .collect();
        meta.insert("events".into(), events.into());
    }
    if !s.links.is_empty() {
        let links: Vec<Value> = s
            .links
            .iter()
            .map(|l| {
                json!({
                    "trace_id": l.trace_id,
                    "span_id": l.span_id,
                    "in_trace": l.trace_id == s.trace_id && b.spans.iter().any(|x| x.span_id == l.span_id),
                    "attributes": nest(l.attrs.iter().map(|(k, v)| (k.clone(), v.clone()))),
                })
            })
            .collect();
        meta.insert("links".into(), links.into());
    }
    json!({
        "op_id": op_id(&s.span_id),
        "op_name": s.name,
        "category": b.categories[i],
        "comment": null,
        "session_id": b.span_session[i],
        "created_at": iso(s.start),
        "metadata": meta,
    })
}

/// An evaluation found: (the span evaluated, the evaluator span if any, the
/// evaluation, the span it was on).
type Found = (usize, Option<usize>, Evaluation, usize);

/// A failed case (a MemTraceBench annotation) per span that a failing
/// evaluation is about.
fn cases(
    spans: &[Span],
    vars: &[SpanVars],
    b: &Builder<'_>,
    parent: &[Option<usize>],
    index: &HashMap<&str, usize>,
    root: usize,
) -> Vec<Value> {
    let mut found: Vec<Found> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let is_evaluator = b.categories[i] == "evaluator";
        // An EVALUATOR span evaluates the span it links to in this trace,
        // else its parent, else itself.
        let target = if is_evaluator {
            s.links
                .iter()
                .filter(|l| l.trace_id == s.trace_id)
                .find_map(|l| index.get(l.span_id.as_str()).copied())
                .filter(|&t| t != i)
                .or(parent[i])
                .unwrap_or(i)
        } else {
            i
        };
        for e in eval::evaluations(s, is_evaluator) {
            let t = match e.scope {
                Scope::Span => target,
                Scope::Trace => root,
            };
            found.push((t, is_evaluator.then_some(i), e, i));
        }
    }
    let mut order: Vec<usize> = Vec::new();
    let mut by_target: HashMap<usize, Vec<&Found>> = HashMap::new();
    for f in found.iter().filter(|f| f.2.failed() == Some(true)) {
        if !by_target.contains_key(&f.0) {
            order.push(f.0);
        }
        by_target.entry(f.0).or_default().push(f);
    }
    order
        .into_iter()
        .map(|t| {
            let fs = &by_target[&t];
            let v = &vars[t];
            let evaluator = fs.iter().find_map(|f| f.1);
            let evaluator_input = evaluator.and_then(|e| spans[e].attrs.get("input.value"));
            let query_var = v.primary;
            let query = evaluator_input
                .and_then(|x| eval::lookup(x, eval::QUERY_KEYS))
                .and_then(|q| text(&q))
                .or_else(|| {
                    query_var.and_then(|q| b.nodes[q]["value"].as_str().map(str::to_string))
                });
            let prediction = v
                .answer
                .or_else(|| v.outputs.first().copied())
                .and_then(|o| b.nodes[o]["value"].as_str().map(str::to_string));
            let gold = fs
                .iter()
                .find_map(|f| {
                    f.2.metadata
                        .as_ref()
                        .and_then(|m| eval::lookup(m, eval::GOLD_KEYS))
                })
                .or_else(|| evaluator_input.and_then(|x| eval::lookup(x, eval::GOLD_KEYS)))
                .or_else(|| {
                    spans[t]
                        .attrs
                        .get("metadata")
                        .and_then(|m| eval::lookup(m, eval::GOLD_KEYS))
                });
            let mut a = Map::new();
            a.insert(
                "query_id".into(),
                query_var.map(|q| b.node_ids[q].clone()).into(),
            );
            a.insert("query".into(), query.into());
            a.insert("golden_answers".into(), gold.unwrap_or(Value::Null));
            a.insert("prediction".into(), prediction.into());
            a.insert("source_evidence_ids".into(), Value::Array(Vec::new()));
            a.insert("evaluated_op_id".into(), op_id(&spans[t].span_id).into());
            if let Some(e) = evaluator {
                a.insert("judge_op_id".into(), op_id(&spans[e].span_id).into());
            }
            a.insert(
                "evaluations".into(),
                Value::Array(
                    fs.iter()
                        .map(|f| f.2.to_json(&spans[f.3].span_id))
                        .collect(),
                ),
            );
            Value::Object(a)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn span(id: &str, parent: Option<&str>, start: u64, end: u64, attrs: Value) -> Span {
        let Value::Object(attrs) = attrs else {
            panic!()
        };
        Span {
            trace_id: "t1".into(),
            span_id: id.into(),
            parent: parent.map(str::to_string),
            name: id.into(),
            kind: "INTERNAL",
            start,
            end,
            attrs,
            events: Vec::new(),
            links: Vec::new(),
            status: "UNSET",
            status_message: None,
            trace_state: None,
            resource: Rc::default(),
            scope: Rc::new(json!({})),
            at: (Rc::from("x"), String::new()),
        }
    }

    fn edges(export: &Value) -> Vec<(String, String, String, String)> {
        export["data"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["op_id"].as_str().unwrap().to_string(),
                    e["source_full_node_id"].as_str().unwrap().to_string(),
                    e["target_full_node_id"].as_str().unwrap().to_string(),
                    e["metadata"]["flow"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    fn has(es: &[(String, String, String, String)], op: &str, src: &str, dst: &str) -> bool {
        es.iter().any(|e| e.0 == op && e.1 == src && e.2 == dst)
    }

    #[test]
    fn the_tree_and_the_order_of_siblings_become_edges() {
        let spans = vec![
            span(
                "llm",
                Some("root"),
                30,
                40,
                json!({
                    "openinference.span.kind": "LLM",
                    "llm.input_messages.0.message.role": "user",
                    "llm.input_messages.0.message.content": "q + docs",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "answer",
                }),
            ),
            span(
                "root",
                None,
                0,
                50,
                json!({
                    "openinference.span.kind": "CHAIN",
                    "input.value": "q", "output.value": "answer",
                }),
            ),
            span(
                "ret",
                Some("root"),
                10,
                20,
                json!({
                    "openinference.span.kind": "RETRIEVER",
                    "input.value": "q",
                    "retrieval.documents.0.document.id": "d1",
                    "retrieval.documents.0.document.content": "fact",
                }),
            ),
        ];
        let x = trace("t1", spans);
        let es = edges(&x);
        // The order is by start: root, ret, llm.
        let ops: Vec<&str> = x["data"]["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["op_id"].as_str().unwrap())
            .collect();
        assert_eq!(ops, ["span-root", "span-ret", "span-llm"]);
        assert_eq!(x["data"]["operations"][2]["category"], "llm");
        // Parent input to a child's primary input; own inputs to outputs.
        assert!(has(&es, "span-ret", "input:root@1", "input:ret@1"));
        assert!(has(&es, "span-ret", "input:ret@1", "document:d1@1"));
        // The retriever ended before the LLM started: its documents reach
        // the LLM's user message.
        assert!(has(&es, "span-llm", "document:d1@1", "message:llm:0@1"));
        assert!(has(
            &es,
            "span-llm",
            "message:llm:0@1",
            "output_message:llm:0@1"
        ));
        // Only the last child passes its outputs up (the retriever's
        // reached the LLM).
        assert!(has(
            &es,
            "span-root",
            "output_message:llm:0@1",
            "output:root@1"
        ));
        assert!(!has(&es, "span-root", "document:d1@1", "output:root@1"));
        assert_eq!(x["graph_id"], "otel-t1");
    }

    #[test]
    fn siblings_connect_to_the_latest_ones_only() {
        // a, then b and c in parallel, then d: d reads b and c, not a.
        let mk = |id: &str, s: u64, e: u64| span(id, Some("p"), s, e, json!({}));
        let spans = vec![
            span("p", None, 0, 100, json!({})),
            mk("a", 1, 10),
            mk("b", 11, 20),
            mk("c", 12, 30),
            mk("d", 31, 40),
        ];
        let flows = sibling_flows(&spans, &[1, 2, 3, 4]);
        let of = |i: usize| flows.iter().find(|f| f.0 == i).unwrap().1.clone();
        assert_eq!(of(1), Vec::<usize>::new());
        assert_eq!(of(2), vec![1]);
        assert_eq!(of(3), vec![1]);
        let mut d = of(4);
        d.sort();
        assert_eq!(d, vec![2, 3]);
    }

    #[test]
    fn a_thousand_children_make_a_linear_number_of_edges() {
        let mut spans = vec![span(
            "p",
            None,
            0,
            1_000_000,
            json!({"input.value": "q", "output.value": "a"}),
        )];
        // 500 in sequence, then 500 in parallel.
        for k in 0..500u64 {
            spans.push(span(
                &format!("s{k}"),
                Some("p"),
                10 + 2 * k,
                11 + 2 * k,
                json!({"output.value": "x"}),
            ));
        }
        for k in 0..500u64 {
            spans.push(span(
                &format!("q{k}"),
                Some("p"),
                5000,
                6000,
                json!({"output.value": "y"}),
            ));
        }
        spans.push(span(
            "last",
            Some("p"),
            7000,
            8000,
            json!({"input.value": "z"}),
        ));
        let x = trace("t1", spans);
        let n = x["data"]["edges"].as_array().unwrap().len();
        // parent -> child: 1001; sibling: 499 + 500 + 8 (capped); the
        // parallel ones not passed on reach the parent: 492; own: 1.
        assert!(n < 3 * 1002, "{n} edges");
        let last_preds = edges(&x)
            .iter()
            .filter(|e| e.0 == "span-last" && e.3 == "sibling")
            .count();
        assert_eq!(last_preds, SIBLINGS);
    }

    #[test]
    fn missing_parents_make_roots_and_cycles_do_not_hang() {
        let spans = vec![
            span("a", Some("gone"), 0, 5, json!({})),
            span("b", Some("c"), 1, 2, json!({})),
            span("c", Some("b"), 1, 3, json!({})),
        ];
        let x = trace("t1", spans);
        // b's parent chain is a cycle: b is read as a root.
        assert_eq!(x["metadata"]["spans_without_parent"], json!(["a", "b"]));
        let ops = x["data"]["operations"].as_array().unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[0]["metadata"]["parent_missing"], true);
        // Spans with nothing to read read the NONE sentinel.
        assert!(edges(&x).iter().any(|e| e.1 == "COMMENT:NONE@1"));
    }

    #[test]
    fn a_failing_evaluation_makes_a_case_and_a_passing_one_does_not() {
        let mut judge = span(
            "judge",
            Some("root"),
            30,
            40,
            json!({
                "openinference.span.kind": "EVALUATOR",
                "input.value": "{\"input\": \"Where?\", \"reference\": \"Paris\"}",
                "evaluations.0.evaluation.name": "correctness",
                "evaluations.0.evaluation.label": "incorrect",
            }),
        );
        judge.links.push(crate::otlp::read::Link {
            trace_id: "t1".into(),
            span_id: "llm".into(),
            attrs: Map::new(),
        });
        let spans = vec![
            span(
                "root",
                None,
                0,
                50,
                json!({"input.value": "Where?", "output.value": "Berlin",
                "trace.evaluations.0.evaluation.label": "correct"}),
            ),
            span(
                "llm",
                Some("root"),
                10,
                20,
                json!({
                "input.value": "prompt", "output.value": "Berlin"}),
            ),
            judge,
        ];
        let x = trace("t1", spans);
        let a = x["data"]["annotations"].as_array().unwrap();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0]["query_id"], "input:llm@1");
        assert_eq!(a[0]["query"], "Where?");
        assert_eq!(a[0]["golden_answers"], "Paris");
        assert_eq!(a[0]["prediction"], "Berlin");
        assert_eq!(a[0]["judge_op_id"], "span-judge");
        assert_eq!(a[0]["evaluated_op_id"], "span-llm");
    }

    #[test]
    fn attributes_nest_at_dots_and_clashes_stay_whole() {
        let m = nest([
            ("llm.model_name".to_string(), json!("m")),
            ("llm".to_string(), json!("x")),
            ("a..b".to_string(), json!(1)),
        ]);
        assert_eq!(m["llm"]["model_name"], "m");
        assert_eq!(m["_flat"]["llm"], "x");
        assert_eq!(m["_flat"]["a..b"], 1);
        assert_eq!(
            iso(1_772_442_000_003_000_500),
            "2026-03-02T09:00:00.003000Z"
        );
    }
}
