//! Streaming parse and validation of smartcomment exports and MemTraceBench
//! files. The reader is consumed once; records become typed values as they
//! are read, so a large file is never held as a whole JSON tree.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::timestamp;

/// Why an input is invalid, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// JSON path of the offending value (`$` is the whole document).
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

impl Invalid {
    fn at(path: impl Into<String>, reason: impl Into<String>) -> Invalid {
        let path = path.into();
        Invalid {
            path: if path.is_empty() { "$".into() } else { path },
            reason: reason.into(),
        }
    }
}

/// A string field that may be absent, null or a string.
pub(crate) type Tri = Option<Option<String>>;

/// Fields every record carries.
#[derive(Debug, Default)]
pub(crate) struct InCommon {
    pub created_at: Option<String>,
    pub filename: Option<String>,
    pub lineno: Option<i64>,
    pub graph_id: Tri,
    pub user_id: Tri,
    pub project_id: Tri,
    pub metadata: Option<String>,
    pub trigger_point: Option<String>,
    pub extra: Option<String>,
}

#[derive(Debug)]
pub(crate) struct InSession {
    pub session_id: String,
    pub session_name: Option<String>,
    pub comment: Option<String>,
    pub category: Option<String>,
    pub common: InCommon,
}

#[derive(Debug)]
pub(crate) struct InVar {
    pub name: String,
    pub class_name: Option<String>,
    pub version: u32,
    pub value: Option<String>,
    pub comment: Option<String>,
    pub category: Option<String>,
    pub session_id: Option<String>,
    pub node_id: Option<String>,
    pub full_node_id: String,
    pub common: InCommon,
}

#[derive(Debug)]
pub(crate) struct InOp {
    pub op_id: String,
    pub op_name: Option<String>,
    pub comment: Option<String>,
    pub category: Option<String>,
    pub session_id: Option<String>,
    pub common: InCommon,
}

#[derive(Debug)]
pub(crate) struct InEdge {
    pub edge_id: String,
    pub op_id: String,
    pub category: Option<String>,
    pub comment: Option<String>,
    pub source: String,
    pub target: String,
    pub session_id: String,
    pub common: InCommon,
}

/// A list of records read in parts, in order (the fast reader reads a long
/// list a few thousand records at a time, on two threads; the parts are
/// kept as they are instead of being copied into one vector).
pub(crate) struct Parts<T>(Vec<Vec<T>>);

impl<T> Parts<T> {
    /// The parts, each in order, in order.
    pub(crate) fn new(parts: Vec<Vec<T>>) -> Parts<T> {
        Parts(parts)
    }

    /// How many records.
    pub(crate) fn len(&self) -> usize {
        self.0.iter().map(Vec::len).sum()
    }

    /// The records in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter().flatten()
    }

    /// The parts.
    pub(crate) fn parts(&self) -> &[Vec<T>] {
        &self.0
    }
}

impl<T> Default for Parts<T> {
    fn default() -> Self {
        Parts(Vec::new())
    }
}

impl<T> From<Vec<T>> for Parts<T> {
    fn from(v: Vec<T>) -> Self {
        Parts(vec![v])
    }
}

impl<T> IntoIterator for Parts<T> {
    type Item = T;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<T>>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().flatten()
    }
}

/// Shown as one list, however it was read.
impl<T: fmt::Debug> fmt::Debug for Parts<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A parsed, not yet validated, trace.
#[derive(Debug)]
pub(crate) struct ParsedTrace {
    /// The top-level object with `data` as a null placeholder, in order.
    pub header: Map<String, Value>,
    pub graph_id: String,
    pub user_id: Option<String>,
    pub project_id: Option<String>,
    pub created_at: Option<String>,
    pub data_keys: Vec<String>,
    pub data_extra: Map<String, Value>,
    pub sessions: Parts<InSession>,
    pub nodes: Parts<InVar>,
    pub ops: Parts<InOp>,
    pub edges: Parts<InEdge>,
    pub annotations: Option<Vec<Map<String, Value>>>,
}

/// Local ids resolved by validation.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub var_sessions: Vec<Option<u32>>,
    pub op_sessions: Vec<Option<u32>>,
    /// (op, source, target, session) per edge.
    pub edges: Vec<(u32, u32, u32, u32)>,
    /// (query, evidence, labelled op) per annotation.
    pub cases: Vec<(Option<u32>, Vec<u32>, Option<u32>)>,
}

/// What a JSON value is, in words for error messages ("a string", "an array", ...).
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The fields of one JSON object in their order, read without building a
/// map. Keys without escapes are borrowed from the input.
pub(crate) struct Fields<'de>(Vec<(Cow<'de, str>, Option<Value>)>);

/// An object key, borrowed from the input when it can be.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

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
pub(crate) enum At<'a> {
    /// A JSON path (empty for the document itself).
    Path(&'a str),
    /// Item `n` of the list at a path.
    Item(&'static str, usize),
}

impl At<'_> {
    fn is_root(&self) -> bool {
        matches!(self, At::Path(p) if p.is_empty())
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Path(p) => f.write_str(p),
            At::Item(list, n) => write!(f, "{list}[{n}]"),
        }
    }
}

/// A JSON object whose known fields are taken out one by one; what is left
/// are the extra keys, in their order.
pub(crate) struct Obj<'a> {
    fields: Vec<(Cow<'a, str>, Option<Value>)>,
    at: At<'a>,
    duplicate: Option<String>,
}

impl<'a> Obj<'a> {
    pub(crate) fn new(map: Map<String, Value>, path: &'a str) -> Self {
        Obj {
            fields: map
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Some(v)))
                .collect(),
            at: At::Path(path),
            duplicate: None,
        }
    }

    fn from_fields(fields: Fields<'a>, at: At<'a>) -> Self {
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

    fn tri_str(&mut self, key: &str) -> Result<Tri, Invalid> {
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

/// `filename:lineno`, as smartcomment computes `trigger_point`.
pub(crate) fn trigger_point(filename: Option<&str>, lineno: Option<i64>) -> String {
    let l = lineno.map(|l| l.to_string());
    format!(
        "{}:{}",
        filename.unwrap_or("None"),
        l.as_deref().unwrap_or("None")
    )
}

/// Whether `text` is what [`trigger_point`] makes of `filename` and
/// `lineno` (compared without building it: this runs once per record).
fn is_trigger_point(text: &str, filename: Option<&str>, lineno: Option<i64>) -> bool {
    let Some((f, l)) = text.rsplit_once(':') else {
        return false;
    };
    f == filename.unwrap_or("None")
        && match lineno {
            None => l == "None",
            Some(n) => is_decimal(l, n),
        }
}

/// Whether `text` is `n` written in decimal, as `n.to_string()` writes it.
fn is_decimal(text: &str, n: i64) -> bool {
    use std::io::Write;
    let mut buf = [0u8; 24];
    let mut w = &mut buf[..];
    // 24 bytes hold any i64 in decimal.
    let _ = write!(w, "{n}");
    let len = 24 - w.len();
    text.as_bytes() == &buf[..len]
}

/// Whether `node_id` is `{name}@{version}` (compared without building it).
pub(crate) fn is_name_at_version(node_id: &str, name: &str, version: u32) -> bool {
    node_id
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('@'))
        .is_some_and(|v| is_decimal(v, i64::from(version)))
}

pub(crate) fn finish_common(mut c: InCommon, extra: Option<String>) -> InCommon {
    if c.trigger_point
        .as_deref()
        .is_some_and(|t| is_trigger_point(t, c.filename.as_deref(), c.lineno))
    {
        c.trigger_point = None;
    }
    c.extra = extra;
    c
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

/// A variable's full name as smartcomment makes it: `class:name`, or the
/// name alone when the class is absent or empty.
pub(crate) fn full_name_of(class_name: Option<&str>, name: &str) -> String {
    match class_name {
        Some(c) if !c.is_empty() => format!("{c}:{name}"),
        _ => name.to_string(),
    }
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
            Some(item) => At::Item(item.0, item.1).to_string(),
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

/// What the top-level visit yields.
pub(crate) type Top = (Map<String, Value>, Option<DataParts>);

#[derive(Debug, Default)]
pub(crate) struct DataParts {
    pub keys: Vec<String>,
    pub extra: Map<String, Value>,
    pub sessions: Parts<InSession>,
    pub nodes: Parts<InVar>,
    pub ops: Parts<InOp>,
    pub edges: Parts<InEdge>,
    pub annotations: Option<Vec<Map<String, Value>>>,
}

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
                Some(fields) => match (self.conv)(Obj::from_fields(fields, At::Item(self.name, n)))
                {
                    Ok(t) => out.push(t),
                    Err(inv) => return Err(self.ctx.fail(inv)),
                },
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

/// A map from a list's ids to their positions.
type IdIndex<'a> = HashMap<&'a str, u32, foldhash::fast::RandomState>;

fn index<'a, I: Iterator<Item = &'a str>>(
    ids: I,
    len: usize,
    list: &str,
    field: &str,
) -> Result<IdIndex<'a>, Invalid> {
    let mut map = IdIndex::with_capacity_and_hasher(len, Default::default());
    for (i, id) in ids.enumerate() {
        if let Some(first) = map.insert(id, i as u32) {
            return Err(Invalid::at(
                format!("{list}[{i}].{field}"),
                format!("duplicate id {id:?} (first at {list}[{first}])"),
            ));
        }
    }
    Ok(map)
}

/// Validates references as smartcomment does (unique ids; every edge's
/// session, op, source and target exist) and the annotations' references.
pub(crate) fn validate(t: &ParsedTrace) -> Result<Resolved, Invalid> {
    let sessions = index(
        t.sessions.iter().map(|s| s.session_id.as_str()),
        t.sessions.len(),
        "data.sessions",
        "session_id",
    )?;
    let vars = index(
        t.nodes.iter().map(|v| v.full_node_id.as_str()),
        t.nodes.len(),
        "data.nodes",
        "full_node_id",
    )?;
    let ops = index(
        t.ops.iter().map(|o| o.op_id.as_str()),
        t.ops.len(),
        "data.operations",
        "op_id",
    )?;
    index(
        t.edges.iter().map(|e| e.edge_id.as_str()),
        t.edges.len(),
        "data.edges",
        "edge_id",
    )?;
    let var_sessions = t
        .nodes
        .iter()
        .map(|v| {
            v.session_id
                .as_deref()
                .and_then(|s| sessions.get(s).copied())
        })
        .collect();
    let op_sessions = t
        .ops
        .iter()
        .map(|o| {
            o.session_id
                .as_deref()
                .and_then(|s| sessions.get(s).copied())
        })
        .collect();
    let mut edges = Vec::with_capacity(t.edges.len());
    for (i, e) in t.edges.iter().enumerate() {
        let at = |field: &str| format!("data.edges[{i}].{field}");
        let op = *ops.get(e.op_id.as_str()).ok_or_else(|| {
            Invalid::at(
                at("op_id"),
                format!("no operation {:?} in the trace", e.op_id),
            )
        })?;
        let source = *vars.get(e.source.as_str()).ok_or_else(|| {
            Invalid::at(
                at("source_full_node_id"),
                format!("no node {:?} in the trace", e.source),
            )
        })?;
        let target = *vars.get(e.target.as_str()).ok_or_else(|| {
            Invalid::at(
                at("target_full_node_id"),
                format!("no node {:?} in the trace", e.target),
            )
        })?;
        let session = *sessions.get(e.session_id.as_str()).ok_or_else(|| {
            Invalid::at(
                at("session_id"),
                format!("no session {:?} in the trace", e.session_id),
            )
        })?;
        edges.push((op, source, target, session));
    }
    let mut cases = Vec::new();
    for (i, a) in t.annotations.iter().flatten().enumerate() {
        let at = |field: &str| format!("data.annotations[{i}].{field}");
        let node = |field: &str, v: &Value| -> Result<u32, Invalid> {
            match v {
                Value::String(s) => vars
                    .get(s.as_str())
                    .copied()
                    .ok_or_else(|| Invalid::at(at(field), format!("no node {s:?} in the trace"))),
                other => Err(Invalid::at(
                    at(field),
                    format!("must be a full node id string, found {}", json_kind(other)),
                )),
            }
        };
        let query = match a.get("query_id") {
            None | Some(Value::Null) => None,
            Some(v) => Some(node("query_id", v)?),
        };
        let mut evidence = Vec::new();
        match a.get("source_evidence_ids") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (j, v) in items.iter().enumerate() {
                    evidence.push(node(&format!("source_evidence_ids[{j}]"), v)?);
                }
            }
            Some(other) => {
                return Err(Invalid::at(
                    at("source_evidence_ids"),
                    format!(
                        "must be a list of full node ids, found {}",
                        json_kind(other)
                    ),
                ))
            }
        }
        let op = match a.get("final_op_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(*ops.get(s.as_str()).ok_or_else(|| {
                Invalid::at(
                    at("final_op_id"),
                    format!("no operation {s:?} in the trace"),
                )
            })?),
            Some(other) => {
                return Err(Invalid::at(
                    at("final_op_id"),
                    format!(
                        "must be an op id string or null, found {}",
                        json_kind(other)
                    ),
                ))
            }
        };
        for field in ["query", "prediction", "final_error_type"] {
            match a.get(field) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(Invalid::at(
                        at(field),
                        format!("must be a string or null, found {}", json_kind(other)),
                    ))
                }
            }
        }
        match a.get("golden_answers") {
            None | Some(Value::Null) | Some(Value::String(_)) | Some(Value::Array(_)) => {}
            Some(other) => {
                return Err(Invalid::at(
                    at("golden_answers"),
                    format!("must be a string or a list, found {}", json_kind(other)),
                ))
            }
        }
        cases.push((query, evidence, op));
    }
    Ok(Resolved {
        var_sessions,
        op_sessions,
        edges,
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn trigger_points_and_node_ids_are_compared_without_being_built() {
        for (file, line) in [
            (Some("a.py"), Some(12)),
            (None, None),
            (Some("C:\\x:y.py"), Some(-3)),
            (Some("b"), None),
        ] {
            let made = trigger_point(file, line);
            assert!(is_trigger_point(&made, file, line), "{made}");
            assert!(!is_trigger_point(&format!("{made}0"), file, line));
            assert!(!is_trigger_point(&format!("x{made}"), file, line));
        }
        assert!(!is_trigger_point("a.py:012", Some("a.py"), Some(12)));
        assert!(!is_trigger_point("a.py", Some("a.py"), None));
        assert!(is_decimal("-9223372036854775808", i64::MIN));
        assert!(is_decimal("0", 0) && !is_decimal("", 0) && !is_decimal("+1", 1));
        assert!(is_name_at_version("x@3", "x", 3));
        assert!(is_name_at_version("a@b@10", "a@b", 10));
        assert!(!is_name_at_version("x@3", "x", 30));
        assert!(!is_name_at_version("x3", "x", 3));
        assert!(!is_name_at_version("y@3", "x", 3));
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
