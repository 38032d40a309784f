//! Export of a stored trace: back to the smartcomment export object (the
//! same records, fields and values, lists in their original order), or drawn
//! as DOT or Mermaid.

use std::io::Write;
use std::str::FromStr;

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use memtrace_storage::records::{Common, EdgeRecord, OpRecord, SessionRecord, VarRecord};

use crate::error::{EngineError, Result};
use crate::import::records::trigger_point;
use crate::view::{Names, TraceView};

/// Output formats of `export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The smartcomment export object (with `data.annotations` when the trace had them).
    Smartcomment,
    /// Graphviz DOT: variables as nodes, edges labelled with op name and category.
    Dot,
    /// A Mermaid flowchart of the same graph.
    Mermaid,
}

impl FromStr for ExportFormat {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "smartcomment" | "json" => Ok(ExportFormat::Smartcomment),
            "dot" => Ok(ExportFormat::Dot),
            "mermaid" => Ok(ExportFormat::Mermaid),
            other => Err(format!(
                "unknown export format {other:?} (smartcomment, dot, mermaid)"
            )),
        }
    }
}

struct Ctx<'a, 'db> {
    t: &'a TraceView<'db>,
    names: Names,
}

fn collect<T, I: Iterator<Item = memtrace_storage::Result<(u32, T)>>>(
    it: I,
    f: impl Fn(T) -> String,
) -> Result<Vec<String>> {
    it.map(|r| r.map(|(_, x)| f(x)).map_err(EngineError::from))
        .collect()
}

fn opt(s: &Option<String>) -> Value {
    s.as_ref()
        .map(|s| Value::String(s.clone()))
        .unwrap_or(Value::Null)
}

impl<'a, 'db> Ctx<'a, 'db> {
    fn new(t: &'a TraceView<'db>) -> Result<Self> {
        Ok(Ctx {
            t,
            names: t.names()?,
        })
    }

    fn shared(&self, m: &mut Map<String, Value>, key: &str, c: &Common) {
        let r = self.t.record();
        let v = match key {
            "graph_id" => c.graph_id.resolve(Some(&r.graph_id)),
            "user_id" => c.user_id.resolve(r.user_id.as_deref()),
            _ => c.project_id.resolve(r.project_id.as_deref()),
        };
        m.insert(
            key.into(),
            v.map(|s| Value::String(s.into())).unwrap_or(Value::Null),
        );
    }

    fn head(&self, c: &Common) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("created_at".into(), opt(&c.created_at));
        m.insert("filename".into(), opt(&c.filename));
        m.insert(
            "lineno".into(),
            c.lineno.map(Value::from).unwrap_or(Value::Null),
        );
        m
    }

    fn tail(&self, m: &mut Map<String, Value>, c: &Common) -> Result<()> {
        let meta = match &c.metadata {
            Some(text) => serde_json::from_str(text)?,
            None => Value::Object(Map::new()),
        };
        m.insert("metadata".into(), meta);
        let tp = c
            .trigger_point
            .clone()
            .unwrap_or_else(|| trigger_point(c.filename.as_deref(), c.lineno));
        m.insert("trigger_point".into(), Value::String(tp));
        Ok(())
    }

    fn extra(&self, m: &mut Map<String, Value>, c: &Common) -> Result<()> {
        if let Some(text) = &c.extra {
            if let Value::Object(extra) = serde_json::from_str(text)? {
                m.extend(extra);
            }
        }
        Ok(())
    }

    fn node(&self, v: VarRecord) -> Result<Map<String, Value>> {
        let c = &v.common;
        let mut m = self.head(c);
        m.insert("name".into(), Value::String(v.name.clone()));
        m.insert("version".into(), Value::from(v.version));
        let value = v
            .value
            .as_ref()
            .map(|r| self.t.store().value(r))
            .transpose()?;
        m.insert(
            "value".into(),
            value.map(Value::String).unwrap_or(Value::Null),
        );
        m.insert("comment".into(), opt(&v.comment));
        m.insert("category".into(), opt(&v.category));
        self.shared(&mut m, "graph_id", c);
        self.shared(&mut m, "user_id", c);
        m.insert("class_name".into(), opt(&v.class_name));
        self.shared(&mut m, "project_id", c);
        m.insert("session_id".into(), opt(&v.session_id));
        self.tail(&mut m, c)?;
        m.insert("full_name".into(), Value::String(v.full_name()));
        let node_id = v
            .node_id
            .clone()
            .unwrap_or_else(|| format!("{}@{}", v.name, v.version));
        m.insert("node_id".into(), Value::String(node_id));
        m.insert("full_node_id".into(), Value::String(v.full_node_id()));
        self.extra(&mut m, c)?;
        Ok(m)
    }

    fn name(list: &[String], i: u32) -> Value {
        Value::String(list.get(i as usize).cloned().unwrap_or_default())
    }

    fn edge(&self, e: EdgeRecord) -> Result<Map<String, Value>> {
        let c = &e.common;
        let mut m = self.head(c);
        m.insert("edge_id".into(), Value::String(e.edge_id.clone()));
        self.shared(&mut m, "graph_id", c);
        self.shared(&mut m, "user_id", c);
        self.shared(&mut m, "project_id", c);
        m.insert(
            "session_id".into(),
            Self::name(&self.names.session_ids, e.session),
        );
        m.insert("op_id".into(), Self::name(&self.names.op_ids, e.op));
        m.insert("category".into(), opt(&e.category));
        m.insert(
            "source_full_node_id".into(),
            Self::name(&self.names.node_ids, e.source),
        );
        m.insert(
            "target_full_node_id".into(),
            Self::name(&self.names.node_ids, e.target),
        );
        m.insert("comment".into(), opt(&e.comment));
        self.tail(&mut m, c)?;
        self.extra(&mut m, c)?;
        Ok(m)
    }

    fn op(&self, o: OpRecord) -> Result<Map<String, Value>> {
        let c = &o.common;
        let mut m = self.head(c);
        m.insert("op_id".into(), Value::String(o.op_id.clone()));
        m.insert("op_name".into(), opt(&o.op_name));
        m.insert("comment".into(), opt(&o.comment));
        m.insert("category".into(), opt(&o.category));
        self.shared(&mut m, "graph_id", c);
        self.shared(&mut m, "user_id", c);
        self.shared(&mut m, "project_id", c);
        m.insert("session_id".into(), opt(&o.session_id));
        self.tail(&mut m, c)?;
        self.extra(&mut m, c)?;
        Ok(m)
    }

    fn session(&self, s: SessionRecord) -> Result<Map<String, Value>> {
        let c = &s.common;
        let mut m = self.head(c);
        m.insert("session_id".into(), Value::String(s.session_id.clone()));
        m.insert("session_name".into(), opt(&s.session_name));
        self.shared(&mut m, "graph_id", c);
        self.shared(&mut m, "user_id", c);
        self.shared(&mut m, "project_id", c);
        m.insert("comment".into(), opt(&s.comment));
        m.insert("category".into(), opt(&s.category));
        self.tail(&mut m, c)?;
        self.extra(&mut m, c)?;
        Ok(m)
    }
}

struct Doc<'c, 'a, 'db>(&'c Ctx<'a, 'db>);
struct Data<'c, 'a, 'db>(&'c Ctx<'a, 'db>);
#[derive(Clone, Copy)]
enum ListKind {
    Nodes,
    Edges,
    Ops,
    Sessions,
    Cases,
}
struct List<'c, 'a, 'db>(&'c Ctx<'a, 'db>, ListKind);

impl Serialize for Doc<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let header: Map<String, Value> =
            serde_json::from_str(&self.0.t.record().header_json).map_err(S::Error::custom)?;
        let mut m = s.serialize_map(Some(header.len()))?;
        for (k, v) in &header {
            if k == "data" {
                m.serialize_entry(k, &Data(self.0))?;
            } else {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

impl Serialize for Data<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let r = self.0.t.record();
        let extra: Map<String, Value> = match &r.data_extra {
            Some(text) => serde_json::from_str(text).map_err(S::Error::custom)?,
            None => Map::new(),
        };
        let mut m = s.serialize_map(Some(r.data_keys.len()))?;
        for key in &r.data_keys {
            let kind = match key.as_str() {
                "nodes" => Some(ListKind::Nodes),
                "edges" => Some(ListKind::Edges),
                "operations" => Some(ListKind::Ops),
                "sessions" => Some(ListKind::Sessions),
                "annotations" => Some(ListKind::Cases),
                _ => None,
            };
            match kind {
                Some(kind) => m.serialize_entry(key, &List(self.0, kind))?,
                None => m.serialize_entry(key, extra.get(key).unwrap_or(&Value::Null))?,
            }
        }
        m.end()
    }
}

impl Serialize for List<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let ctx = self.0;
        let (v, id) = (ctx.t.store(), ctx.t.id());
        let c = ctx.t.record().counts;
        let len = match self.1 {
            ListKind::Nodes => c.variables,
            ListKind::Edges => c.edges,
            ListKind::Ops => c.ops,
            ListKind::Sessions => c.sessions,
            ListKind::Cases => c.cases,
        };
        let mut seq = s.serialize_seq(Some(len as usize))?;
        fn emit<S: SerializeSeq, T>(
            seq: &mut S,
            it: impl Iterator<Item = memtrace_storage::Result<(u32, T)>>,
            f: impl Fn(T) -> Result<Map<String, Value>>,
        ) -> std::result::Result<(), S::Error> {
            for item in it {
                let (_, rec) = item.map_err(S::Error::custom)?;
                seq.serialize_element(&f(rec).map_err(S::Error::custom)?)?;
            }
            Ok(())
        }
        match self.1 {
            ListKind::Nodes => emit(&mut seq, v.variables(id), |r| ctx.node(r))?,
            ListKind::Edges => emit(&mut seq, v.edges(id), |r| ctx.edge(r))?,
            ListKind::Ops => emit(&mut seq, v.ops(id), |r| ctx.op(r))?,
            ListKind::Sessions => emit(&mut seq, v.sessions(id), |r| ctx.session(r))?,
            ListKind::Cases => emit(&mut seq, v.cases(id), |r| {
                match serde_json::from_str(&r.json)? {
                    Value::Object(m) => Ok(m),
                    _ => Err(EngineError::Json(serde_json::Error::custom(
                        "stored annotation is not an object",
                    ))),
                }
            })?,
        }
        seq.end()
    }
}

/// Text escaped for a double-quoted DOT string: backslashes and quotes
/// escaped, a line break as DOT's `\n`, and every other control character
/// (see [`memtrace_table::is_hidden`]) as the text `\u{…}` that the label
/// shows, so that neither the file nor the drawing holds a raw one.
pub fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if memtrace_table::is_hidden(c) => {
                // The backslash of `\u{…}` is escaped, so DOT shows it.
                out.push('\\');
                memtrace_table::push_escaped(&mut out, c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text escaped for a double-quoted Mermaid label: quotes as `#quot;`, a
/// line break as a space, and every other control character as the text
/// `\u{…}`.
pub fn mermaid_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '\n' => out.push(' '),
            c if memtrace_table::is_hidden(c) => memtrace_table::push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

fn op_label(o: &OpRecord) -> String {
    match (&o.op_name, &o.category) {
        (Some(n), Some(c)) => format!("{n} ({c})"),
        (Some(n), None) => n.clone(),
        (None, Some(c)) => format!("({c})"),
        (None, None) => o.op_id.clone(),
    }
}

impl TraceView<'_> {
    /// Writes the trace in `format` (smartcomment JSON, DOT or Mermaid).
    pub fn export(&self, format: ExportFormat, out: &mut dyn Write) -> Result<()> {
        write(self, format, out)
    }
}

fn write(t: &TraceView<'_>, format: ExportFormat, out: &mut dyn Write) -> Result<()> {
    let io = |e: std::io::Error| EngineError::Io {
        path: "output".into(),
        source: e,
    };
    match format {
        ExportFormat::Smartcomment => {
            let ctx = Ctx::new(t)?;
            let mut ser = serde_json::Serializer::with_formatter(
                &mut *out,
                serde_json::ser::PrettyFormatter::with_indent(b"  "),
            );
            Doc(&ctx).serialize(&mut ser)?;
            out.write_all(b"\n").map_err(io)?;
        }
        ExportFormat::Dot | ExportFormat::Mermaid => {
            let v = t.store();
            let id = t.id();
            let ops = collect(v.ops(id), |o: OpRecord| op_label(&o))?;
            let dot = format == ExportFormat::Dot;
            if dot {
                writeln!(
                    out,
                    "digraph \"{}\" {{\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];",
                    dot_escape(&t.record().graph_id)
                )
                .map_err(io)?;
            } else {
                writeln!(out, "flowchart LR").map_err(io)?;
            }
            for item in v.variables(id) {
                let (local, var) = item?;
                let label = match &var.category {
                    Some(c) => format!("{}\n[{c}]", var.full_node_id()),
                    None => var.full_node_id(),
                };
                if dot {
                    writeln!(out, "  n{local} [label=\"{}\"];", dot_escape(&label)).map_err(io)?;
                } else {
                    writeln!(
                        out,
                        "  n{local}[\"{}\"]",
                        mermaid_escape(&label.replace('\n', " "))
                    )
                    .map_err(io)?;
                }
            }
            for item in v.edges(id) {
                let (_, e) = item?;
                let label = ops.get(e.op as usize).cloned().unwrap_or_default();
                if dot {
                    writeln!(
                        out,
                        "  n{} -> n{} [label=\"{}\"];",
                        e.source,
                        e.target,
                        dot_escape(&label)
                    )
                    .map_err(io)?;
                } else {
                    writeln!(
                        out,
                        "  n{} -->|\"{}\"| n{}",
                        e.source,
                        mermaid_escape(&label),
                        e.target
                    )
                    .map_err(io)?;
                }
            }
            if dot {
                writeln!(out, "}}").map_err(io)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawings_hold_no_raw_control_character() {
        let id = "\u{1b}]0;pwned\u{7}\"q\"\\\n\u{1b}[31m\0\u{202e}";
        let dot = dot_escape(id);
        assert_eq!(
            dot,
            "\\\\u{1b}]0;pwned\\\\u{7}\\\"q\\\"\\\\\\n\\\\u{1b}[31m\\\\u{0}\\\\u{202e}"
        );
        let mermaid = mermaid_escape(id);
        assert_eq!(
            mermaid,
            "\\u{1b}]0;pwned\\u{7}#quot;q#quot;\\ \\u{1b}[31m\\u{0}\\u{202e}"
        );
        for text in [dot, mermaid] {
            assert!(!text.chars().any(memtrace_table::is_hidden), "{text:?}");
        }
    }
}
