//! The fast reader of a well-formed export: a first pass finds where each
//! record of `data`'s lists is and hands them out a few thousand at a
//! time; they are read straight into their typed form as they come, on a
//! second thread when the input is large, and by the first once its pass
//! is done. It reads what the checking reader (`checking_reader`) reads
//! and nothing else: at anything it does not expect (a syntax error, a
//! wrong type, a key twice, a missing field) it gives up, and the input is
//! read again by the checking reader, which names the error.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::json_key::Key;
use super::records::{
    finish_common, full_name_of, is_name_at_version, AbsentOrNull, DataParts, InCommon, InEdge,
    InOp, InSession, InVar, Parts, Top,
};
use crate::timestamp;

/// Exports of fewer bytes than this are read on the calling thread only.
const SPLIT_BYTES: usize = 1 << 20;

/// How many records the first pass hands out at a time.
const JOB_RECORDS: usize = 2048;

/// The members of `data` other than its lists, and its keys in order.
#[derive(Default)]
struct RawData {
    keys: Vec<String>,
    extra: Map<String, Value>,
    /// Whether it has `annotations`.
    annotations: bool,
}

/// The top-level object: its header as the checking reader makes it,
/// and `data`, whose lists' records went out as jobs.
type RawTop = (Map<String, Value>, Option<RawData>);

/// Something the fast reader does not read; the checking one names it.
fn unexpected<E: de::Error>() -> E {
    E::custom("left to the checking reader")
}

/// Which list of `data` records come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    Sessions,
    Nodes,
    Ops,
    Edges,
    Annotations,
}

impl List {
    fn of(key: &str) -> Option<List> {
        Some(match key {
            "sessions" => List::Sessions,
            "nodes" => List::Nodes,
            "operations" => List::Ops,
            "edges" => List::Edges,
            "annotations" => List::Annotations,
            _ => return None,
        })
    }
}

/// Some records of one list, as their text, to be read.
struct Job<'de> {
    list: List,
    items: Vec<&'de RawValue>,
}

/// The records a job read.
enum Read {
    Sessions(Vec<InSession>),
    Nodes(Vec<InVar>),
    Ops(Vec<InOp>),
    Edges(Vec<InEdge>),
    Annotations(Vec<Map<String, Value>>),
}

/// The jobs the first pass hands out as it goes, taken by the readers
/// (the second thread from the start, the first pass's thread once it is
/// done), so that reading records overlaps finding them.
#[derive(Default)]
struct Jobs<'de> {
    state: Mutex<JobState<'de>>,
    more: Condvar,
}

#[derive(Default)]
struct JobState<'de> {
    /// Jobs not taken yet, each with its number (jobs are numbered in the
    /// order handed out, which is the records' order within each list).
    waiting: VecDeque<(usize, Job<'de>)>,
    /// How many jobs were handed out.
    handed: usize,
    /// The first pass is over: no more jobs come.
    closed: bool,
    /// The first pass or a job found what the fast reader does not read.
    failed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<'de> Jobs<'de> {
    fn push(&self, job: Job<'de>) {
        let mut s = lock(&self.state);
        let n = s.handed;
        s.handed += 1;
        s.waiting.push_back((n, job));
        drop(s);
        self.more.notify_one();
    }

    /// No more jobs come; `failed` when the first pass gave up.
    fn close(&self, failed: bool) {
        let mut s = lock(&self.state);
        s.closed = true;
        s.failed |= failed;
        drop(s);
        self.more.notify_all();
    }

    fn fail(&self) {
        lock(&self.state).failed = true;
        self.more.notify_all();
    }

    /// The next job, waiting for one while the first pass goes on; `None`
    /// when there are no more, or once anything failed.
    fn next(&self) -> Option<(usize, Job<'de>)> {
        let mut s = lock(&self.state);
        loop {
            if s.failed {
                return None;
            }
            if let Some(job) = s.waiting.pop_front() {
                return Some(job);
            }
            if s.closed {
                return None;
            }
            s = self.more.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Reads jobs until there are no more: what each read, with its
    /// number. `None` when anything failed (here or elsewhere).
    fn work(&self) -> Option<Vec<(usize, Read)>> {
        let mut out = Vec::new();
        while let Some((n, job)) = self.next() {
            match read_job(&job) {
                Some(read) => out.push((n, read)),
                None => {
                    self.fail();
                    return None;
                }
            }
        }
        (!lock(&self.state).failed).then_some(out)
    }
}

/// Reads the top-level object, handing `data`'s records out as jobs.
struct RawTopSeed<'j, 'de> {
    jobs: &'j Jobs<'de>,
}

impl<'de> DeserializeSeed<'de> for RawTopSeed<'_, 'de> {
    type Value = RawTop;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<RawTop, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RawTopSeed<'_, 'de> {
    type Value = RawTop;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a smartcomment export object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawTop, A::Error> {
        let mut header = Map::new();
        let mut data = None;
        while let Some(key) = map.next_key::<String>()? {
            let again = if key == "data" {
                let again = data.is_some();
                data = Some(map.next_value_seed(DataSeed { jobs: self.jobs })?);
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
        Ok((header, data))
    }
}

/// Reads `data`, handing its lists' records out as jobs.
struct DataSeed<'j, 'de> {
    jobs: &'j Jobs<'de>,
}

impl<'de> DeserializeSeed<'de> for DataSeed<'_, 'de> {
    type Value = RawData;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<RawData, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for DataSeed<'_, 'de> {
    type Value = RawData;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawData, A::Error> {
        let mut out = RawData::default();
        while let Some(key) = map.next_key::<String>()? {
            if out.keys.contains(&key) {
                return Err(unexpected());
            }
            match List::of(&key) {
                Some(list) => {
                    map.next_value_seed(ListSeed {
                        list,
                        jobs: self.jobs,
                    })?;
                    out.annotations |= list == List::Annotations;
                }
                None => {
                    let v: Value = map.next_value()?;
                    out.extra.insert(key.clone(), v);
                }
            }
            out.keys.push(key);
        }
        Ok(out)
    }
}

/// Reads one list, handing its records out [`JOB_RECORDS`] at a time.
struct ListSeed<'j, 'de> {
    list: List,
    jobs: &'j Jobs<'de>,
}

impl<'de> DeserializeSeed<'de> for ListSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut items = Vec::with_capacity(JOB_RECORDS);
        while let Some(raw) = seq.next_element::<&'de RawValue>()? {
            items.push(raw);
            if items.len() == JOB_RECORDS {
                let full = std::mem::replace(&mut items, Vec::with_capacity(JOB_RECORDS));
                self.jobs.push(Job {
                    list: self.list,
                    items: full,
                });
            }
        }
        if !items.is_empty() {
            self.jobs.push(Job {
                list: self.list,
                items,
            });
        }
        Ok(())
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
/// fields the checking reader's `session`, `variable`, `op` and `edge`
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
    strs: [AbsentOrNull; field::COUNT],
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
    fn tri(&mut self, i: usize) -> AbsentOrNull {
        self.strs[i].take()
    }

    /// The fields every record carries, as the checking reader's
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

    /// The extra keys as one JSON object's text, as the checking reader
    /// keeps them.
    fn rest(self) -> Option<String> {
        (!self.extra.is_empty()).then(|| Value::Object(self.extra).to_string())
    }
}

/// An object of more keys than this is left to [`compact_json`]'s caller
/// (its keys are compared with each other to find one given twice).
const COMPACT_KEYS: usize = 32;

/// The text `Value::to_string` gives for the JSON value `text` (valid
/// JSON, as a [`RawValue`] holds), made without building the value: the
/// whitespace between tokens dropped, a number's exponent written `e` and
/// signed, everything else as written (the value keeps a number's digits
/// as written, and writes a string without escapes back as it was read).
/// `None` when that may not be so and the value has to be built: a string
/// holds an escape (written back, it may be spelled otherwise), an object
/// has a key twice (the value keeps the last at the first's place) or
/// more keys than [`COMPACT_KEYS`].
fn compact_json(text: &str) -> Option<String> {
    /// An open array or object: for an object, where its keys start in
    /// `keys` and whether a key comes next.
    struct Open {
        object: bool,
        keys_from: usize,
        key_next: bool,
    }
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut open: Vec<Open> = Vec::new();
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'"' => {
                let body = b.get(i + 1..)?;
                let len = memchr::memchr2(b'"', b'\\', body)?;
                if body[len] != b'"' {
                    return None;
                }
                if let Some(o) = open.last_mut().filter(|o| o.object && o.key_next) {
                    o.key_next = false;
                    let key = &body[..len];
                    let mine = &keys[o.keys_from..];
                    if mine.len() >= COMPACT_KEYS || mine.contains(&key) {
                        return None;
                    }
                    keys.push(key);
                }
                out.extend_from_slice(&b[i..i + len + 2]);
                i += len + 2;
            }
            b'{' | b'[' => {
                open.push(Open {
                    object: c == b'{',
                    keys_from: keys.len(),
                    key_next: c == b'{',
                });
                out.push(c);
                i += 1;
            }
            b'}' | b']' => {
                keys.truncate(open.pop()?.keys_from);
                out.push(c);
                i += 1;
            }
            b',' => {
                if let Some(o) = open.last_mut() {
                    o.key_next = o.object;
                }
                out.push(c);
                i += 1;
            }
            // A number's exponent, written as the value writes it: `e`,
            // then its sign, `+` when it has none.
            b'e' | b'E' if out.last().is_some_and(u8::is_ascii_digit) => {
                out.push(b'e');
                if !matches!(b.get(i + 1), Some(b'+' | b'-')) {
                    out.push(b'+');
                }
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
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
                (None, "metadata") => {
                    let raw = map.next_value::<&'de RawValue>()?;
                    let text = match compact_json(raw.get()) {
                        Some(text) => text,
                        None => serde_json::from_str::<Value>(raw.get())
                            .map_err(de::Error::custom)?
                            .to_string(),
                    };
                    s.metadata.replace(text).is_some()
                }
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
/// checking reader).
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

/// Reads a job's records; `None` at the first one the fast reader does
/// not read.
fn read_job(job: &Job<'_>) -> Option<Read> {
    fn list<T>(items: &[&RawValue], kind: Kind, make: fn(Slots) -> Option<T>) -> Option<Vec<T>> {
        read_items(items, record(kind, make))
    }
    let items = &job.items;
    Some(match job.list {
        List::Sessions => Read::Sessions(list(items, Kind::Session, session)?),
        List::Nodes => Read::Nodes(list(items, Kind::Var, variable)?),
        List::Ops => Read::Ops(list(items, Kind::Op, op)?),
        List::Edges => Read::Edges(list(items, Kind::Edge, edge)?),
        List::Annotations => Read::Annotations(read_items(items, |text| {
            serde_json::from_str::<Annotation>(text).ok().map(|a| a.0)
        })?),
    })
}

/// The first pass: the header and `data`'s other members, its lists'
/// records handed out as jobs. `None` at anything not as expected.
fn first_pass<'de>(text: &'de [u8], jobs: &Jobs<'de>) -> Option<RawTop> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let top = RawTopSeed { jobs }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(top)
}

/// Reads an export as the checking reader does, in two passes that
/// overlap: the first finds where each record of `data`'s lists is and
/// hands them out a few thousand at a time; the records are read into
/// their typed form by a second thread as they come (for inputs of at
/// least [`SPLIT_BYTES`]) and by the first once it is done. `None` when
/// anything is not as expected: the checking reader then reads the
/// input again and names the first error exactly.
pub(crate) fn parse_split(text: &[u8]) -> Option<Top> {
    let jobs = Jobs::default();
    let (top, reads) = std::thread::scope(|scope| {
        let helper = (text.len() >= SPLIT_BYTES).then(|| scope.spawn(|| jobs.work()));
        let top = first_pass(text, &jobs);
        jobs.close(top.is_none());
        let mine = jobs.work();
        let theirs = match helper {
            Some(h) => h.join().ok().flatten(),
            None => Some(Vec::new()),
        };
        (top, mine.zip(theirs))
    });
    let (header, raw) = top?;
    let (mut reads, theirs) = reads?;
    reads.extend(theirs);
    reads.sort_unstable_by_key(|r| r.0);
    let Some(raw) = raw else {
        return Some((header, None));
    };
    let mut data = DataParts {
        keys: raw.keys,
        extra: raw.extra,
        annotations: raw.annotations.then(Vec::new),
        ..DataParts::default()
    };
    let (mut sessions, mut nodes, mut ops, mut edges) = (vec![], vec![], vec![], vec![]);
    for (_, read) in reads {
        match read {
            Read::Sessions(v) => sessions.push(v),
            Read::Nodes(v) => nodes.push(v),
            Read::Ops(v) => ops.push(v),
            Read::Edges(v) => edges.push(v),
            Read::Annotations(v) => data.annotations.get_or_insert_with(Vec::new).extend(v),
        }
    }
    data.sessions = Parts::new(sessions);
    data.nodes = Parts::new(nodes);
    data.ops = Parts::new(ops);
    data.edges = Parts::new(edges);
    Some((header, Some(data)))
}

#[cfg(test)]
mod tests;
