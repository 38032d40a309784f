//! The fast reader of a well-formed export: a first pass finds where each
//! record of `data`'s lists is, a second reads the records straight into
//! their typed form, half of each list on a second thread when the lists
//! are large. It reads what the sequential reader of [`crate::parse`] reads
//! and nothing else: at anything it does not expect (a syntax error, a
//! wrong type, a key twice, a missing field) it gives up, and the input is
//! read again by the sequential reader, which names the error.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::parse::{
    finish_common, full_name_of, is_name_at_version, DataParts, InCommon, InEdge, InOp, InSession,
    InVar, Key, Parts, Top, Tri,
};
use crate::timestamp;

/// Exports whose lists hold fewer bytes than this are read on the calling
/// thread only.
const SPLIT_BYTES: usize = 1 << 20;

/// The lists of `data`, each item as its text, and its other members.
#[derive(Default)]
struct RawData<'de> {
    keys: Vec<String>,
    extra: Map<String, Value>,
    sessions: Vec<&'de RawValue>,
    nodes: Vec<&'de RawValue>,
    ops: Vec<&'de RawValue>,
    edges: Vec<&'de RawValue>,
    annotations: Option<Vec<&'de RawValue>>,
}

/// The top-level object, its header as the sequential reader makes it,
/// with `data`'s list items kept as their text.
struct RawTop<'de> {
    header: Map<String, Value>,
    data: Option<RawData<'de>>,
}

/// Something the fast reader does not read; the sequential one names it.
fn unexpected<E: de::Error>() -> E {
    E::custom("left to the sequential reader")
}

impl<'de> serde::Deserialize<'de> for RawData<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<RawData<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawData<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawData<'de>, A::Error> {
                let mut out = RawData::default();
                while let Some(key) = map.next_key::<String>()? {
                    if out.keys.contains(&key) {
                        return Err(unexpected());
                    }
                    match key.as_str() {
                        "nodes" => out.nodes = map.next_value()?,
                        "edges" => out.edges = map.next_value()?,
                        "operations" => out.ops = map.next_value()?,
                        "sessions" => out.sessions = map.next_value()?,
                        "annotations" => out.annotations = Some(map.next_value()?),
                        _ => {
                            let v: Value = map.next_value()?;
                            out.extra.insert(key.clone(), v);
                        }
                    }
                    out.keys.push(key);
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> serde::Deserialize<'de> for RawTop<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<RawTop<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawTop<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a smartcomment export object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawTop<'de>, A::Error> {
                let mut header = Map::new();
                let mut data = None;
                while let Some(key) = map.next_key::<String>()? {
                    let again = if key == "data" {
                        let again = data.is_some();
                        data = Some(map.next_value()?);
                        header.insert(key, Value::Null);
                        again
                    } else {
                        let v: Value = map.next_value()?;
                        header.insert(key, v).is_some()
                    };
                    if again {
                        return Err(unexpected());
                    }
                }
                Ok(RawTop { header, data })
            }
        }
        d.deserialize_map(V)
    }
}

/// Which kind of record a typed reader reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Session,
    Var,
    Op,
    Edge,
}

/// The string fields records have, as indexes into [`Slots::strs`].
mod field {
    pub const NAME: usize = 0;
    pub const VALUE: usize = 1;
    pub const COMMENT: usize = 2;
    pub const CATEGORY: usize = 3;
    pub const CLASS_NAME: usize = 4;
    pub const SESSION_ID: usize = 5;
    pub const CREATED_AT: usize = 6;
    pub const FILENAME: usize = 7;
    pub const GRAPH_ID: usize = 8;
    pub const USER_ID: usize = 9;
    pub const PROJECT_ID: usize = 10;
    pub const TRIGGER_POINT: usize = 11;
    pub const FULL_NAME: usize = 12;
    pub const FULL_NODE_ID: usize = 13;
    pub const NODE_ID: usize = 14;
    pub const EDGE_ID: usize = 15;
    pub const OP_ID: usize = 16;
    pub const SOURCE: usize = 17;
    pub const TARGET: usize = 18;
    pub const OP_NAME: usize = 19;
    pub const SESSION_NAME: usize = 20;
    pub const COUNT: usize = 21;
}

/// The string field `key` is in a record of `kind`, if it is one (the
/// fields the sequential reader's `session`, `variable`, `op` and `edge`
/// take as strings; every other key is kept as an extra).
fn string_field(kind: Kind, key: &str) -> Option<usize> {
    use field::*;
    let common = match key {
        "created_at" => Some(CREATED_AT),
        "filename" => Some(FILENAME),
        "graph_id" => Some(GRAPH_ID),
        "user_id" => Some(USER_ID),
        "project_id" => Some(PROJECT_ID),
        "trigger_point" => Some(TRIGGER_POINT),
        _ => None,
    };
    common.or(match (kind, key) {
        (Kind::Var, "name") => Some(NAME),
        (Kind::Var, "value") => Some(VALUE),
        (Kind::Var, "class_name") => Some(CLASS_NAME),
        (Kind::Var, "full_name") => Some(FULL_NAME),
        (Kind::Var, "full_node_id") => Some(FULL_NODE_ID),
        (Kind::Var, "node_id") => Some(NODE_ID),
        (Kind::Edge, "edge_id") => Some(EDGE_ID),
        (Kind::Edge, "source_full_node_id") => Some(SOURCE),
        (Kind::Edge, "target_full_node_id") => Some(TARGET),
        (Kind::Edge | Kind::Op, "op_id") => Some(OP_ID),
        (Kind::Op, "op_name") => Some(OP_NAME),
        (Kind::Session, "session_name") => Some(SESSION_NAME),
        (_, "comment") => Some(COMMENT),
        (_, "category") => Some(CATEGORY),
        (_, "session_id") => Some(SESSION_ID),
        _ => None,
    })
}

/// One record's fields as read: each string field absent (`None`), null
/// (`Some(None)`) or a string; `version`, `lineno` and `metadata`; and the
/// other keys in their order.
struct Slots {
    strs: [Tri; field::COUNT],
    version: Option<u64>,
    lineno: Option<Option<i64>>,
    metadata: Option<String>,
    extra: Map<String, Value>,
}

impl Slots {
    /// A required string field.
    fn req(&mut self, i: usize) -> Option<String> {
        self.strs[i].take().flatten()
    }

    /// An optional string field (absent or null: `None`).
    fn opt(&mut self, i: usize) -> Option<String> {
        self.strs[i].take().flatten()
    }

    /// A field that may be absent, null or a string.
    fn tri(&mut self, i: usize) -> Tri {
        self.strs[i].take()
    }

    /// The fields every record carries, as the sequential reader's
    /// `common` reads them; `None` when the time is not one it accepts.
    fn common(&mut self) -> Option<InCommon> {
        let created_at = self.opt(field::CREATED_AT);
        if let Some(t) = &created_at {
            timestamp::check(t).ok()?;
        }
        Some(InCommon {
            created_at,
            filename: self.opt(field::FILENAME),
            lineno: self.lineno.take().flatten(),
            graph_id: self.tri(field::GRAPH_ID),
            user_id: self.tri(field::USER_ID),
            project_id: self.tri(field::PROJECT_ID),
            metadata: self.metadata.take(),
            trigger_point: self.opt(field::TRIGGER_POINT),
            extra: None,
        })
    }

    /// The extra keys as one JSON object's text, as the sequential reader
    /// keeps them.
    fn rest(self) -> Option<String> {
        (!self.extra.is_empty()).then(|| Value::Object(self.extra).to_string())
    }
}

/// Reads one record of a kind into [`Slots`].
struct RecordSeed(Kind);

impl<'de> DeserializeSeed<'de> for RecordSeed {
    type Value = Slots;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Slots, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RecordSeed {
    type Value = Slots;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a record object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Slots, A::Error> {
        let mut s = Slots {
            strs: Default::default(),
            version: None,
            lineno: None,
            metadata: None,
            extra: Map::new(),
        };
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let twice = match (string_field(self.0, &key), key.as_ref()) {
                (Some(i), _) => s.strs[i]
                    .replace(map.next_value::<Option<String>>()?)
                    .is_some(),
                (None, "version") if self.0 == Kind::Var => {
                    s.version.replace(map.next_value::<u64>()?).is_some()
                }
                (None, "lineno") => s.lineno.replace(map.next_value::<Option<i64>>()?).is_some(),
                (None, "metadata") => s
                    .metadata
                    .replace(map.next_value::<Value>()?.to_string())
                    .is_some(),
                (None, _) => {
                    let v: Value = map.next_value()?;
                    s.extra.insert(key.into_owned(), v).is_some()
                }
            };
            if twice {
                return Err(unexpected());
            }
        }
        Ok(s)
    }
}

fn session(mut s: Slots) -> Option<InSession> {
    let session_id = s.req(field::SESSION_ID)?;
    let session_name = s.opt(field::SESSION_NAME);
    let comment = s.opt(field::COMMENT);
    let category = s.opt(field::CATEGORY);
    let common = s.common()?;
    Some(InSession {
        session_id,
        session_name,
        comment,
        category,
        common: finish_common(common, s.rest()),
    })
}

fn variable(mut s: Slots) -> Option<InVar> {
    let name = s.req(field::NAME)?;
    let version = u32::try_from(s.version.take()?).ok().filter(|v| *v >= 1)?;
    let value = s.opt(field::VALUE);
    let comment = s.opt(field::COMMENT);
    let category = s.opt(field::CATEGORY);
    let class_name = s.opt(field::CLASS_NAME);
    let session_id = s.opt(field::SESSION_ID);
    let common = s.common()?;
    let full_name = full_name_of(class_name.as_deref(), &name);
    let full_node_id = format!("{full_name}@{version}");
    if s.opt(field::FULL_NAME)
        .is_some_and(|given| given != full_name)
    {
        return None;
    }
    if s.opt(field::FULL_NODE_ID)
        .is_some_and(|given| given != full_node_id)
    {
        return None;
    }
    let node_id = s
        .opt(field::NODE_ID)
        .filter(|n| !is_name_at_version(n, &name, version));
    Some(InVar {
        name,
        class_name,
        version,
        value,
        comment,
        category,
        session_id,
        node_id,
        full_node_id,
        common: finish_common(common, s.rest()),
    })
}

fn op(mut s: Slots) -> Option<InOp> {
    let op_id = s.req(field::OP_ID)?;
    let op_name = s.opt(field::OP_NAME);
    let comment = s.opt(field::COMMENT);
    let category = s.opt(field::CATEGORY);
    let session_id = s.opt(field::SESSION_ID);
    let common = s.common()?;
    Some(InOp {
        op_id,
        op_name,
        comment,
        category,
        session_id,
        common: finish_common(common, s.rest()),
    })
}

fn edge(mut s: Slots) -> Option<InEdge> {
    let edge_id = s.req(field::EDGE_ID)?;
    let op_id = s.req(field::OP_ID)?;
    let category = s.opt(field::CATEGORY);
    let comment = s.opt(field::COMMENT);
    let source = s.req(field::SOURCE)?;
    let target = s.req(field::TARGET)?;
    let session_id = s.req(field::SESSION_ID)?;
    let common = s.common()?;
    Some(InEdge {
        edge_id,
        op_id,
        category,
        comment,
        source,
        target,
        session_id,
        common: finish_common(common, s.rest()),
    })
}

/// An annotation, kept whole as its object (a key twice is left to the
/// sequential reader).
struct Annotation(Map<String, Value>);

impl<'de> serde::Deserialize<'de> for Annotation {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Annotation, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Annotation;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an annotation object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Annotation, A::Error> {
                let mut out = Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    let v: Value = map.next_value()?;
                    if out.insert(key, v).is_some() {
                        return Err(unexpected());
                    }
                }
                Ok(Annotation(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Reads records `items` of a list with `read`; `None` at the first one
/// it does not read.
fn read_items<T>(items: &[&RawValue], read: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(items.len());
    for raw in items {
        out.push(read(raw.get())?);
    }
    Some(out)
}

/// Reads one record of `kind` from its text and makes it with `make`.
fn record<T>(kind: Kind, make: fn(Slots) -> Option<T>) -> impl Fn(&str) -> Option<T> {
    move |text| {
        let mut de = serde_json::Deserializer::from_str(text);
        let slots = RecordSeed(kind).deserialize(&mut de).ok()?;
        de.end().ok()?;
        make(slots)
    }
}

/// The records of one share of every list.
struct Share {
    sessions: Vec<InSession>,
    nodes: Vec<InVar>,
    ops: Vec<InOp>,
    edges: Vec<InEdge>,
    annotations: Vec<Map<String, Value>>,
}

/// Reads share `part` of `parts` of every list (item ranges of about
/// equal length, so every share has about the same work).
fn read_share(d: &RawData<'_>, part: usize, parts: usize) -> Option<Share> {
    let share = |items: &[&RawValue]| -> std::ops::Range<usize> {
        items.len() * part / parts..items.len() * (part + 1) / parts
    };
    fn list<T>(items: &[&RawValue], kind: Kind, make: fn(Slots) -> Option<T>) -> Option<Vec<T>> {
        read_items(items, record(kind, make))
    }
    Some(Share {
        sessions: list(&d.sessions[share(&d.sessions)], Kind::Session, session)?,
        nodes: list(&d.nodes[share(&d.nodes)], Kind::Var, variable)?,
        ops: list(&d.ops[share(&d.ops)], Kind::Op, op)?,
        edges: list(&d.edges[share(&d.edges)], Kind::Edge, edge)?,
        annotations: match &d.annotations {
            Some(items) => read_items(&items[share(items)], |text| {
                serde_json::from_str::<Annotation>(text).ok().map(|a| a.0)
            })?,
            None => Vec::new(),
        },
    })
}

/// Reads an export as the sequential reader does, in two passes: the
/// first finds where each record of `data`'s lists is, the second reads
/// the records, half of each list on a second thread when the lists are
/// large. `None` when anything is not as expected: the sequential reader
/// then reads the input again and names the first error exactly.
pub(crate) fn parse_split(text: &[u8]) -> Option<Top> {
    let top: RawTop<'_> = serde_json::from_slice(text).ok()?;
    let Some(raw) = top.data else {
        return Some((top.header, None));
    };
    let bytes: usize = [&raw.nodes, &raw.edges, &raw.ops]
        .iter()
        .flat_map(|l| l.first().zip(l.last()))
        .map(|(a, b)| b.get().as_ptr() as usize + b.get().len() - a.get().as_ptr() as usize)
        .sum();
    let shares = if bytes >= SPLIT_BYTES {
        let (first, second) = std::thread::scope(|scope| {
            let second = scope.spawn(|| read_share(&raw, 1, 2));
            let first = read_share(&raw, 0, 2);
            (first, second.join().ok().flatten())
        });
        vec![first?, second?]
    } else {
        vec![read_share(&raw, 0, 1)?]
    };
    let mut data = DataParts {
        keys: raw.keys,
        extra: raw.extra,
        annotations: raw.annotations.map(|_| Vec::new()),
        ..DataParts::default()
    };
    let (mut sessions, mut nodes, mut ops, mut edges) = (vec![], vec![], vec![], vec![]);
    for share in shares {
        sessions.push(share.sessions);
        nodes.push(share.nodes);
        ops.push(share.ops);
        edges.push(share.edges);
        if let Some(a) = data.annotations.as_mut() {
            a.extend(share.annotations);
        }
    }
    data.sessions = Parts::new(sessions);
    data.nodes = Parts::new(nodes);
    data.ops = Parts::new(ops);
    data.edges = Parts::new(edges);
    Some((top.header, Some(data)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{assemble, validate, Ctx, Invalid, TopSeed};

    const NODE: &str =
        r#"{"name":"42","class_name":"answer","version":1,"value":"'x'","session_id":"s1"}"#;

    fn doc(nodes: &str, edges: &str) -> String {
        format!(
            r#"{{"graph_id":"g","data":{{"nodes":[{nodes}],"edges":[{edges}],"operations":[{{"op_id":"op-1","session_id":"s1"}}],"sessions":[{{"session_id":"s1"}}]}}}}"#
        )
    }

    /// The sequential reader's result, or its error.
    fn sequential(text: &str) -> Result<Top, Invalid> {
        let ctx = Ctx::default();
        let mut de = serde_json::Deserializer::from_str(text);
        TopSeed(&ctx)
            .deserialize(&mut de)
            .map_err(|e| ctx.into_invalid(e))
    }

    /// An export of `n` variables in a chain, each with `pad` escaped
    /// newlines of value, a recorded trigger point, an extra key and, for
    /// the first, a key written with an escape; annotations and an extra
    /// member of `data` too.
    fn chain(n: usize, pad: usize) -> String {
        let value = "x\\n".repeat(pad);
        let nodes: Vec<String> = (0..n)
            .map(|i| {
                let class = if i == 0 { r#""class_\u006eame""# } else { r#""class_name""# };
                format!(
                    r#"{{"name":"v{i}",{class}:"c","version":1,"value":"{value}","session_id":"s1","filename":"a.py","lineno":{i},"trigger_point":"a.py:{i}","node_id":"v{i}@1","more":[1,2.50,{{"k":null}}],"comment":null,"category":"fact","created_at":"2025-01-02T03:04:05.123456","graph_id":null,"user_id":"u{i}","metadata":{{"a":[1e3,"\u00e9"]}},"full_name":"c:v{i}","full_node_id":"c:v{i}@1","op_id":"not a var field"}}"#
                )
            })
            .collect();
        let edges: Vec<String> = (1..n)
            .map(|i| {
                format!(
                    r#"{{"edge_id":"e{i}","op_id":"op-{}","source_full_node_id":"c:v{}@1","target_full_node_id":"c:v{i}@1","session_id":"s1","category":"flow","comment":"c","project_id":"p","metadata":null,"name":"kept as extra"}}"#,
                    i % 7,
                    i - 1
                )
            })
            .collect();
        let ops: Vec<String> = (0..7)
            .map(|i| format!(r#"{{"op_id":"op-{i}","op_name":"step","session_id":"s1","lineno":3,"trigger_point":"None:3","version":7,"category":null,"node_id":"x"}}"#))
            .collect();
        format!(
            r#"{{"graph_id":"g","user_id":null,"data":{{"nodes":[{}],"edges":[{}],"version":2,"operations":[{}],"sessions":[{{"session_id":"s1","session_name":"first","comment":null,"filename":null,"lineno":null,"extra":{{}}}}],"annotations":[{{"query_id":"c:v1@1","final_op_id":"op-1","golden_answers":["a",1]}}]}},"tail":true}}"#,
            nodes.join(","),
            edges.join(","),
            ops.join(",")
        )
    }

    #[test]
    fn the_split_reader_reads_what_the_sequential_one_reads() {
        // Small (one thread) and large (two threads: over SPLIT_BYTES).
        for (n, pad) in [(3, 1), (40, 0), (3000, 200)] {
            let text = chain(n, pad);
            assert_eq!(text.len() >= SPLIT_BYTES, n == 3000, "{}", text.len());
            let split = parse_split(text.as_bytes()).expect("a valid export");
            let seq = sequential(&text).unwrap();
            assert_eq!(format!("{split:?}"), format!("{seq:?}"));
            let t = assemble(split.0, split.1).unwrap();
            validate(&t).unwrap();
            assert_eq!((t.nodes.len(), t.edges.len()), (n, n - 1));
            assert_eq!(
                t.nodes.iter().last().unwrap().full_node_id,
                format!("c:v{}@1", n - 1)
            );
            // The recorded trigger point and node id are what smartcomment
            // computes, so they are not kept.
            assert!(t
                .nodes
                .iter()
                .nth(1)
                .unwrap()
                .common
                .trigger_point
                .is_none());
            assert!(t.nodes.iter().nth(1).unwrap().node_id.is_none());
        }
        let text = doc(NODE, "");
        let split = parse_split(text.as_bytes()).unwrap();
        assert_eq!(
            format!("{split:?}"),
            format!("{:?}", sequential(&text).unwrap())
        );
        // No `data` at all.
        let split = parse_split(br#"{"graph_id":"g"}"#).unwrap();
        assert!(split.1.is_none());
    }

    #[test]
    fn the_split_reader_leaves_every_error_to_the_sequential_one() {
        let big = chain(3000, 200);
        let cases = [
            // A wrong type deep in the second half of a large list.
            (
                big.replacen(
                    r#""edge_id":"e2900","op_id":"op-2""#,
                    r#""edge_id":"e2900","op_id":2"#,
                    1,
                ),
                "data.edges[2899].op_id",
            ),
            // A syntax error in a record.
            (
                big.replacen(r#""name":"v2500","#, r#""name":"v2500",,"#, 1),
                "data.nodes[2500]",
            ),
            // A key twice: in a record, in `data`, at the top.
            (
                big.replacen(r#""name":"v7","#, r#""name":"v7","name":"v7","#, 1),
                "data.nodes[7].name",
            ),
            (
                big.replacen(r#""version":2,"#, r#""nodes":[],"#, 1),
                "data.nodes",
            ),
            (
                big.replacen(r#""tail":true"#, r#""graph_id":"h""#, 1),
                "graph_id",
            ),
            (
                doc(r#"{"name":"a","version":"1"}"#, ""),
                "data.nodes[0].version",
            ),
            (doc(NODE, "").replace('}', ""), "data.nodes[0]"),
            ("[]".to_string(), "$"),
        ];
        for (text, path) in cases {
            assert!(parse_split(text.as_bytes()).is_none(), "{path}");
            let e = sequential(&text)
                .map_err(|e| e.path)
                .and_then(|(h, d)| assemble(h, d).map_err(|e| e.path))
                .map(|_| ())
                .unwrap_err();
            assert_eq!(e, path);
        }
    }

    #[test]
    fn records_that_differ_from_what_is_computed_are_left_to_the_sequential_reader() {
        let node = |extra: &str| {
            doc(
                &format!(r#"{{"name":"a","class_name":"c","version":2,"session_id":"s1"{extra}}}"#),
                "",
            )
        };
        // Read by both the same way.
        for extra in [
            "",
            r#","full_name":"c:a""#,
            r#","node_id":"a@2""#,
            r#","node_id":"b@2""#,
        ] {
            let text = node(extra);
            let split = parse_split(text.as_bytes()).expect(extra);
            assert_eq!(
                format!("{split:?}"),
                format!("{:?}", sequential(&text).unwrap())
            );
        }
        // Left to the sequential reader, which rejects them.
        for extra in [
            r#","full_name":"c:b""#,
            r#","full_node_id":"c:a@3""#,
            r#","created_at":"yesterday""#,
            r#","version":0"#,
            r#","lineno":1.5"#,
            r#","comment":7"#,
            r#","session_name":"x","session_name":"y""#,
        ] {
            let text = node(extra);
            assert!(parse_split(text.as_bytes()).is_none(), "{extra}");
            let seq = sequential(&text).and_then(|(h, d)| assemble(h, d));
            assert!(seq.is_err(), "{extra}");
        }
    }
}
