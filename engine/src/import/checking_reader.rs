//! The checking reader of smartcomment exports and MemTraceBench files:
//! it reads any input, field by field, and names what is wrong at its JSON
//! path. Records become typed values as they are read, so a large file is
//! never held as a whole JSON tree.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::json_key::Key;
use super::records::{
    finish_common, full_name_of, is_name_at_version, json_kind, AbsentOrNull, DataParts, InCommon,
    InEdge, InOp, InSession, InVar, Invalid, ParsedTrace, Top,
};
use crate::timestamp;

/// The fields of one JSON object in their order, read without building a
/// map. Keys without escapes are borrowed from the input.
pub(crate) struct Fields<'de>(Vec<(Cow<'de, str>, Option<Value>)>);

impl<'de> serde::Deserialize<'de> for Fields<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Fields<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a record object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(20));
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    let v: Value = map.next_value()?;
                    out.push((k, Some(v)));
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Where an object is, for error messages: a path, or an item of a list
/// (formatted only when an error names it).
#[derive(Debug, Clone, Copy)]
pub(crate) enum JsonPlace<'a> {
    /// A JSON path (empty for the document itself).
    Path(&'a str),
    /// Item `n` of the list at a path.
    Item(&'static str, usize),
}

impl JsonPlace<'_> {
    fn is_root(&self) -> bool {
        matches!(self, JsonPlace::Path(p) if p.is_empty())
    }
}

impl fmt::Display for JsonPlace<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonPlace::Path(p) => f.write_str(p),
            JsonPlace::Item(list, n) => write!(f, "{list}[{n}]"),
        }
    }
}

/// A JSON object whose known fields are taken out one by one; what is left
/// are the extra keys, in their order.
pub(crate) struct Obj<'a> {
    fields: Vec<(Cow<'a, str>, Option<Value>)>,
    at: JsonPlace<'a>,
    duplicate: Option<String>,
}

impl<'a> Obj<'a> {
    pub(crate) fn new(map: Map<String, Value>, path: &'a str) -> Self {
        Obj {
            fields: map
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Some(v)))
                .collect(),
            at: JsonPlace::Path(path),
            duplicate: None,
        }
    }

    fn from_fields(fields: Fields<'a>, at: JsonPlace<'a>) -> Self {
        Obj {
            fields: fields.0,
            at,
            duplicate: None,
        }
    }

    /// What is left, as a map (for annotations, kept whole).
    fn into_map(self) -> Result<Map<String, Value>, Invalid> {
        let mut m = Map::new();
        for (k, v) in self.fields {
            if let Some(v) = v {
                if m.contains_key(k.as_ref()) {
                    return Err(Invalid::at(format!("{}.{k}", self.at), "appears twice"));
                }
                m.insert(k.into_owned(), v);
            }
        }
        Ok(m)
    }

    fn err(&self, key: &str, reason: impl Into<String>) -> Invalid {
        if self.at.is_root() {
            Invalid::at(key, reason)
        } else {
            Invalid::at(format!("{}.{key}", self.at), reason)
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        let mut found = None;
        for (k, v) in self.fields.iter_mut() {
            if k.as_ref() == key {
                if found.is_some() {
                    self.duplicate = Some(key.to_string());
                } else {
                    found = v.take();
                }
            }
        }
        found
    }

    pub(crate) fn req_str(&mut self, key: &str) -> Result<String, Invalid> {
        match self.take(key) {
            Some(Value::String(s)) => Ok(s),
            None => Err(self.err(key, "required field is missing")),
            Some(v) => Err(self.err(key, format!("must be a string, found {}", json_kind(&v)))),
        }
    }

    pub(crate) fn opt_str(&mut self, key: &str) -> Result<Option<String>, Invalid> {
        match self.take(key) {
            Some(Value::String(s)) => Ok(Some(s)),
            None | Some(Value::Null) => Ok(None),
            Some(v) => Err(self.err(
                key,
                format!("must be a string or null, found {}", json_kind(&v)),
            )),
        }
    }

    fn tri_str(&mut self, key: &str) -> Result<AbsentOrNull, Invalid> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(s)) => Ok(Some(Some(s))),
            Some(v) => Err(self.err(
                key,
                format!("must be a string or null, found {}", json_kind(&v)),
            )),
        }
    }

    fn opt_int(&mut self, key: &str) -> Result<Option<i64>, Invalid> {
        match self.take(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64()),
            Some(v) => Err(self.err(
                key,
                format!("must be an integer or null, found {}", describe(&v)),
            )),
        }
    }

    fn version(&mut self) -> Result<u32, Invalid> {
        match self.take("version") {
            None => Err(self.err("version", "required field is missing")),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if v >= 1 && v <= u32::MAX as u64 => Ok(v as u32),
                _ => Err(self.err("version", format!("must be an integer >= 1, found {n}"))),
            },
            Some(v) => Err(self.err(
                "version",
                format!("must be an integer >= 1, found {}", describe(&v)),
            )),
        }
    }

    pub(crate) fn timestamp(&mut self, key: &str) -> Result<Option<String>, Invalid> {
        let t = self.opt_str(key)?;
        if let Some(t) = &t {
            timestamp::check(t).map_err(|r| self.err(key, r))?;
        }
        Ok(t)
    }

    fn json_text(&mut self, key: &str) -> Option<String> {
        self.take(key).map(|v| v.to_string())
    }

    fn common(&mut self) -> Result<InCommon, Invalid> {
        Ok(InCommon {
            created_at: self.timestamp("created_at")?,
            filename: self.opt_str("filename")?,
            lineno: self.opt_int("lineno")?,
            graph_id: self.tri_str("graph_id")?,
            user_id: self.tri_str("user_id")?,
            project_id: self.tri_str("project_id")?,
            metadata: self.json_text("metadata"),
            trigger_point: self.opt_str("trigger_point")?,
            extra: None,
        })
    }

    fn rest(self) -> Result<Option<String>, Invalid> {
        if let Some(key) = &self.duplicate {
            return Err(self.err(key, "appears twice"));
        }
        let map = self.into_map()?;
        Ok((!map.is_empty()).then(|| Value::Object(map).to_string()))
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.len() < 40 => format!("the string {s:?}"),
        other => json_kind(other).to_string(),
    }
}

pub(crate) fn session(mut o: Obj<'_>) -> Result<InSession, Invalid> {
    let session_id = o.req_str("session_id")?;
    let session_name = o.opt_str("session_name")?;
    let comment = o.opt_str("comment")?;
    let category = o.opt_str("category")?;
    let common = o.common()?;
    Ok(InSession {
        session_id,
        session_name,
        comment,
        category,
        common: finish_common(common, o.rest()?),
    })
}

pub(crate) fn variable(mut o: Obj<'_>) -> Result<InVar, Invalid> {
    let name = o.req_str("name")?;
    let version = o.version()?;
    let value = o.opt_str("value")?;
    let comment = o.opt_str("comment")?;
    let category = o.opt_str("category")?;
    let class_name = o.opt_str("class_name")?;
    let session_id = o.opt_str("session_id")?;
    let common = o.common()?;
    let full_name = full_name_of(class_name.as_deref(), &name);
    let full_node_id = format!("{full_name}@{version}");
    if let Some(given) = o.opt_str("full_name")? {
        if given != full_name {
            return Err(o.err(
                "full_name",
                format!("is {given:?} but class_name and name make {full_name:?}"),
            ));
        }
    }
    if let Some(given) = o.opt_str("full_node_id")? {
        if given != full_node_id {
            return Err(o.err(
                "full_node_id",
                format!("is {given:?} but full_name and version make {full_node_id:?}"),
            ));
        }
    }
    let node_id = o
        .opt_str("node_id")?
        .filter(|n| !is_name_at_version(n, &name, version));
    Ok(InVar {
        name,
        class_name,
        version,
        value,
        comment,
        category,
        session_id,
        node_id,
        full_node_id,
        common: finish_common(common, o.rest()?),
    })
}

pub(crate) fn op(mut o: Obj<'_>) -> Result<InOp, Invalid> {
    let op_id = o.req_str("op_id")?;
    let op_name = o.opt_str("op_name")?;
    let comment = o.opt_str("comment")?;
    let category = o.opt_str("category")?;
    let session_id = o.opt_str("session_id")?;
    let common = o.common()?;
    Ok(InOp {
        op_id,
        op_name,
        comment,
        category,
        session_id,
        common: finish_common(common, o.rest()?),
    })
}

pub(crate) fn edge(mut o: Obj<'_>) -> Result<InEdge, Invalid> {
    let edge_id = o.req_str("edge_id")?;
    let op_id = o.req_str("op_id")?;
    let category = o.opt_str("category")?;
    let comment = o.opt_str("comment")?;
    let source = o.req_str("source_full_node_id")?;
    let target = o.req_str("target_full_node_id")?;
    let session_id = o.req_str("session_id")?;
    let common = o.common()?;
    Ok(InEdge {
        edge_id,
        op_id,
        category,
        comment,
        source,
        target,
        session_id,
        common: finish_common(common, o.rest()?),
    })
}

/// Shared state of one parse: where the reader is, and a validation error
/// raised inside the deserializer.
#[derive(Default)]
pub(crate) struct Ctx {
    path: RefCell<String>,
    /// The list item being read, when in a list (then it is the path).
    item: Cell<Option<(&'static str, usize)>>,
    /// The key whose value was read last, while the next key of its object
    /// is read (then the path is the object's).
    after: RefCell<Option<String>>,
    invalid: RefCell<Option<Invalid>>,
}

impl Ctx {
    fn set(&self, p: impl Into<String>) {
        *self.path.borrow_mut() = p.into();
        *self.after.borrow_mut() = None;
    }

    /// The value of `key` in the object at `object` is read: what fails
    /// next is in the object, after that key (a key not well formed).
    fn read(&self, object: &str, key: String) {
        *self.path.borrow_mut() = object.to_string();
        *self.after.borrow_mut() = Some(key);
    }

    fn fail<E: de::Error>(&self, inv: Invalid) -> E {
        let msg = format!("{}: {}", inv.path, inv.reason);
        *self.invalid.borrow_mut() = Some(inv);
        E::custom(msg)
    }

    /// Turns a deserializer error into an [`Invalid`] at the current path.
    /// `text` is what was parsed, to name bytes that are not UTF-8 and
    /// lone surrogates (see [`crate::sniff::explain`]).
    pub(crate) fn into_invalid(self, e: serde_json::Error, text: &[u8]) -> Invalid {
        if let Some(inv) = self.invalid.into_inner() {
            return inv;
        }
        let mut reason = if e.is_eof() {
            format!("the JSON ends too early ({e})")
        } else {
            crate::sniff::explain(&e, text)
        };
        let path = match self.item.get() {
            Some(item) => JsonPlace::Item(item.0, item.1).to_string(),
            None => {
                if let Some(key) = self.after.into_inner() {
                    reason = format!("{reason} (in the key after {key:?})");
                }
                self.path.into_inner()
            }
        };
        Invalid::at(path, reason)
    }
}

/// The document seed: returns the header and the parsed `data`.
pub(crate) struct TopSeed<'c>(pub &'c Ctx);

impl<'de, 'c> DeserializeSeed<'de> for TopSeed<'c> {
    type Value = Top;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Top, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c> Visitor<'de> for TopSeed<'c> {
    type Value = Top;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a smartcomment export object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut header = Map::new();
        let mut data = None;
        while let Some(key) = map.next_key::<String>()? {
            self.0.set(key.clone());
            if key == "data" {
                if data.is_some() {
                    return Err(self.0.fail(Invalid::at("data", "appears twice")));
                }
                data = Some(map.next_value_seed(DataSeed(self.0))?);
                header.insert(key.clone(), Value::Null);
            } else {
                let v: Value = map.next_value()?;
                if header.insert(key.clone(), v).is_some() {
                    return Err(self.0.fail(Invalid::at(key, "appears twice")));
                }
            }
            self.0.read("", key);
        }
        self.0.set("");
        Ok((header, data))
    }
}

struct DataSeed<'c>(&'c Ctx);

impl<'de, 'c> DeserializeSeed<'de> for DataSeed<'c> {
    type Value = DataParts;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<DataParts, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'c> Visitor<'de> for DataSeed<'c> {
    type Value = DataParts;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with nodes, edges, operations and sessions")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DataParts, A::Error> {
        let ctx = self.0;
        let mut parts = DataParts::default();
        while let Some(key) = map.next_key::<String>()? {
            let path = format!("data.{key}");
            ctx.set(path.clone());
            if parts.keys.contains(&key) {
                return Err(ctx.fail(Invalid::at(path, "appears twice")));
            }
            match key.as_str() {
                "nodes" => {
                    parts.nodes = map
                        .next_value_seed(ListSeed {
                            ctx,
                            name: "data.nodes",
                            conv: variable,
                        })?
                        .into()
                }
                "edges" => {
                    parts.edges = map
                        .next_value_seed(ListSeed {
                            ctx,
                            name: "data.edges",
                            conv: edge,
                        })?
                        .into()
                }
                "operations" => {
                    parts.ops = map
                        .next_value_seed(ListSeed {
                            ctx,
                            name: "data.operations",
                            conv: op,
                        })?
                        .into()
                }
                "sessions" => {
                    parts.sessions = map
                        .next_value_seed(ListSeed {
                            ctx,
                            name: "data.sessions",
                            conv: session,
                        })?
                        .into()
                }
                "annotations" => {
                    parts.annotations = Some(map.next_value_seed(ListSeed {
                        ctx,
                        name: "data.annotations",
                        conv: |o: Obj<'_>| o.into_map(),
                    })?)
                }
                _ => {
                    let v: Value = map.next_value()?;
                    parts.extra.insert(key.clone(), v);
                }
            }
            ctx.read("data", key.clone());
            parts.keys.push(key);
        }
        Ok(parts)
    }
}

struct ListSeed<'c, T> {
    ctx: &'c Ctx,
    name: &'static str,
    conv: fn(Obj<'_>) -> Result<T, Invalid>,
}

impl<'de, 'c, T> DeserializeSeed<'de> for ListSeed<'c, T> {
    type Value = Vec<T>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<T>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, 'c, T> Visitor<'de> for ListSeed<'c, T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of records for {}", self.name)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let n = out.len();
            self.ctx.item.set(Some((self.name, n)));
            match seq.next_element::<Fields<'de>>()? {
                None => break,
                Some(fields) => {
                    match (self.conv)(Obj::from_fields(fields, JsonPlace::Item(self.name, n))) {
                        Ok(t) => out.push(t),
                        Err(inv) => return Err(self.ctx.fail(inv)),
                    }
                }
            }
        }
        self.ctx.item.set(None);
        self.ctx.set(self.name);
        Ok(out)
    }
}

/// Checks the header and assembles the parsed trace.
pub(crate) fn assemble(
    header: Map<String, Value>,
    data: Option<DataParts>,
) -> Result<ParsedTrace, Invalid> {
    let data = data.ok_or_else(|| Invalid::at("data", "required field is missing"))?;
    let mut h = Obj::new(header.clone(), "");
    let graph_id = h.req_str("graph_id")?;
    let user_id = h.opt_str("user_id")?;
    let project_id = h.opt_str("project_id")?;
    let created_at = h.timestamp("created_at")?;
    Ok(ParsedTrace {
        header,
        graph_id,
        user_id,
        project_id,
        created_at,
        data_keys: data.keys,
        data_extra: data.extra,
        sessions: data.sessions,
        nodes: data.nodes,
        ops: data.ops,
        edges: data.edges,
        annotations: data.annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::validate::validate;

    fn parse(text: &str) -> Result<ParsedTrace, Invalid> {
        let ctx = Ctx::default();
        let mut de = serde_json::Deserializer::from_str(text);
        let top = TopSeed(&ctx).deserialize(&mut de);
        let (h, d) = match top {
            Ok(top) => top,
            Err(e) => return Err(ctx.into_invalid(e, text.as_bytes())),
        };
        let t = assemble(h, d)?;
        validate(&t)?;
        Ok(t)
    }

    const NODE: &str =
        r#"{"name":"42","class_name":"answer","version":1,"value":"'x'","session_id":"s1"}"#;

    fn doc(nodes: &str, edges: &str) -> String {
        format!(
            r#"{{"graph_id":"g","data":{{"nodes":[{nodes}],"edges":[{edges}],"operations":[{{"op_id":"op-1","session_id":"s1"}}],"sessions":[{{"session_id":"s1"}}]}}}}"#
        )
    }

    #[test]
    fn a_minimal_export_parses() {
        let t = parse(&doc(NODE, "")).unwrap();
        assert_eq!(t.nodes.iter().next().unwrap().full_node_id, "answer:42@1");
        assert_eq!(
            t.data_keys,
            vec!["nodes", "edges", "operations", "sessions"]
        );
    }

    #[test]
    fn errors_name_the_json_path() {
        let e = parse(&doc(r#"{"name":"a","version":"1"}"#, "")).unwrap_err();
        assert_eq!(e.path, "data.nodes[0].version");
        let e = parse(&doc(NODE, r#"{"edge_id":"e","op_id":"op-2","source_full_node_id":"answer:42@1","target_full_node_id":"answer:42@1","session_id":"s1"}"#)).unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.reason.contains("op-2")),
            ("data.edges[0].op_id", true)
        );
        let e = parse(&doc(&format!("{NODE},{NODE}"), "")).unwrap_err();
        assert_eq!(e.path, "data.nodes[1].full_node_id");
        let e = parse(r#"{"graph_id":"g","data":{"nodes":[{"name":"a","version":1,"created_at":"2026-02-30 00:00:00"}]}}"#).unwrap_err();
        assert_eq!(e.path, "data.nodes[0].created_at");
        let e = parse(r#"{"graph_id":"g","data":{"nodes":[{"name":"a","version":1}"#).unwrap_err();
        assert!(e.reason.contains("ends too early"), "{e:?}");
        let e = parse(r#"[1]"#).unwrap_err();
        assert_eq!(e.path, "$");
        let e = parse(r#"{"data":{}}"#).unwrap_err();
        assert_eq!(e.path, "graph_id");
    }

    #[test]
    fn computed_keys_are_checked() {
        let e = parse(&doc(
            r#"{"name":"42","class_name":"answer","version":1,"full_node_id":"answer:42@2"}"#,
            "",
        ))
        .unwrap_err();
        assert_eq!(e.path, "data.nodes[0].full_node_id");
        let t = parse(&doc(
            r#"{"name":"42","version":1,"node_id":"42@1","trigger_point":"None:None"}"#,
            "",
        ))
        .unwrap();
        assert!(t
            .nodes
            .iter()
            .all(|v| v.node_id.is_none() && v.common.trigger_point.is_none()));
    }
}
