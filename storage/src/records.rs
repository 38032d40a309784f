//! The stored record types, encoded with bincode (serde).
//!
//! Records keep every smartcomment field. Strings that repeat the trace's
//! own `graph_id`, `user_id` or `project_id` are stored as [`Shared::Same`];
//! computed keys are stored only when they differ from their recomputation.
//! JSON-valued fields (`metadata`, unknown extra keys) are kept as JSON text.

use serde::{Deserialize, Serialize};

use crate::error::StorageError;
use crate::ids::{LocalId, TraceId};

/// A per-record copy of a trace-level string (`graph_id`, `user_id`, `project_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Shared {
    /// Equal to the trace's own value (or absent in the input).
    #[default]
    Same,
    /// A value of its own (`None` is JSON null).
    Own(Option<String>),
}

impl Shared {
    /// Resolves against the trace's value.
    pub fn resolve<'a>(&'a self, trace_value: Option<&'a str>) -> Option<&'a str> {
        match self {
            Shared::Same => trace_value,
            Shared::Own(v) => v.as_deref(),
        }
    }
}

/// Fields every smartcomment record carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Common {
    /// `created_at` as written ("YYYY-MM-DD HH:MM:SS.sss").
    pub created_at: Option<String>,
    /// Source file that recorded it.
    pub filename: Option<String>,
    /// Source line that recorded it.
    pub lineno: Option<i64>,
    /// `graph_id` of the record.
    pub graph_id: Shared,
    /// `user_id` of the record.
    pub user_id: Shared,
    /// `project_id` of the record.
    pub project_id: Shared,
    /// `metadata` as JSON text; `None` when absent.
    pub metadata: Option<String>,
    /// `trigger_point`, only when it differs from `filename:lineno`.
    pub trigger_point: Option<String>,
    /// Keys smartcomment does not define, as a JSON object text.
    pub extra: Option<String>,
}

/// Per-trace record counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Counts {
    /// Sessions.
    pub sessions: u32,
    /// Variables (versions).
    pub variables: u32,
    /// Operations.
    pub ops: u32,
    /// Edges.
    pub edges: u32,
    /// Cases (MemTraceBench annotations).
    pub cases: u32,
}

/// One imported trace (a smartcomment graph).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// smartcomment's `graph_id`.
    pub graph_id: String,
    /// `user_id`.
    pub user_id: Option<String>,
    /// `project_id` (the memory system, in MemTraceBench).
    pub project_id: Option<String>,
    /// `created_at` as written.
    pub created_at: Option<String>,
    /// The top-level object without `data`, as JSON text in its original key order.
    pub header_json: String,
    /// The keys of `data` in their original order (lists and unknown keys).
    pub data_keys: Vec<String>,
    /// Unknown keys of `data`, as a JSON object text.
    pub data_extra: Option<String>,
    /// Record counts.
    pub counts: Counts,
    /// Where it was imported from.
    pub source: String,
    /// Bytes of JSON it was imported from.
    pub source_bytes: u64,
    /// Detected input format (`smartcomment`, `memtracebench`, ...).
    pub format: String,
    /// Import time, milliseconds since the Unix epoch (set by the store at commit).
    pub imported_at_ms: u64,
}

/// A reference to a stored value: its content hash and length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ValueRef {
    /// blake3 hash of the UTF-8 bytes.
    pub hash: [u8; 32],
    /// Length in bytes.
    pub len: u64,
}

/// A session record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// smartcomment's `session_id`.
    pub session_id: String,
    /// `session_name`.
    pub session_name: Option<String>,
    /// `comment`.
    pub comment: Option<String>,
    /// `category`.
    pub category: Option<String>,
    /// Shared fields.
    pub common: Common,
}

/// A variable (one version of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarRecord {
    /// `name`.
    pub name: String,
    /// `class_name`.
    pub class_name: Option<String>,
    /// `version`, at least 1.
    pub version: u32,
    /// The value (a string), stored once by content; `None` for JSON null.
    pub value: Option<ValueRef>,
    /// `comment`.
    pub comment: Option<String>,
    /// `category`.
    pub category: Option<String>,
    /// `session_id` as written.
    pub session_id: Option<String>,
    /// The session's local id, when the trace has that session.
    pub session: Option<LocalId>,
    /// `node_id`, only when it differs from `name@version`.
    pub node_id: Option<String>,
    /// Shared fields.
    pub common: Common,
}

impl VarRecord {
    /// `class_name:name`, or `name` without a (non-empty) class name.
    pub fn full_name(&self) -> String {
        let mut s = String::with_capacity(self.full_name_len() + 12);
        self.push_full_name(&mut s);
        s
    }

    /// `full_name@version`, the id edges reference.
    pub fn full_node_id(&self) -> String {
        let mut s = String::with_capacity(self.full_name_len() + 12);
        self.push_full_node_id(&mut s);
        s
    }

    /// Appends [`full_node_id`](Self::full_node_id) to `s`.
    pub fn push_full_node_id(&self, s: &mut String) {
        use std::fmt::Write;
        self.push_full_name(s);
        // Writing an integer to a String cannot fail.
        let _ = write!(s, "@{}", self.version);
    }

    fn class(&self) -> Option<&str> {
        self.class_name.as_deref().filter(|c| !c.is_empty())
    }

    fn full_name_len(&self) -> usize {
        self.class().map_or(0, |c| c.len() + 1) + self.name.len()
    }

    fn push_full_name(&self, s: &mut String) {
        if let Some(c) = self.class() {
            s.push_str(c);
            s.push(':');
        }
        s.push_str(&self.name);
    }
}

/// An operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRecord {
    /// smartcomment's `op_id`.
    pub op_id: String,
    /// `op_name`.
    pub op_name: Option<String>,
    /// `comment`.
    pub comment: Option<String>,
    /// `category` (what queries call the op's kind).
    pub category: Option<String>,
    /// `session_id` as written.
    pub session_id: Option<String>,
    /// The session's local id, when the trace has that session.
    pub session: Option<LocalId>,
    /// Shared fields.
    pub common: Common,
}

/// A dependency edge between two variables, induced by one op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeRecord {
    /// smartcomment's `edge_id`.
    pub edge_id: String,
    /// Local id of the op.
    pub op: LocalId,
    /// Local id of the source variable.
    pub source: LocalId,
    /// Local id of the target variable.
    pub target: LocalId,
    /// Local id of the session.
    pub session: LocalId,
    /// `category`.
    pub category: Option<String>,
    /// `comment`.
    pub comment: Option<String>,
    /// Shared fields.
    pub common: Common,
}

/// A case: one MemTraceBench annotation of a failed question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaseRecord {
    /// Local id of the query variable, when the annotation names one.
    pub query: Option<LocalId>,
    /// Local ids of the source-evidence variables.
    pub evidence: Vec<LocalId>,
    /// Local id of the labelled faulty op, when labelled.
    pub op: Option<LocalId>,
    /// The annotation object as JSON text, in its original key order.
    pub json: String,
}

/// An attribution verdict on a case, appended after import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributionRecord {
    /// When it was stored, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The verdict as JSON text (its shape belongs to the engine).
    pub json: String,
}

/// A saved pattern's record: a save or a drop, appended, never rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatternRecord {
    /// When it was stored, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The pattern's name.
    pub name: String,
    /// The record as JSON text (its shape belongs to the engine).
    pub json: String,
}

/// An entry of the database's append-only event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEvent {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What happened (`import`, `drop`).
    pub action: String,
    /// The trace concerned.
    pub trace: TraceId,
    /// Its graph id.
    pub graph_id: String,
    /// Free text: source, reason.
    pub detail: String,
}

fn config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes a record with bincode.
pub fn encode<T: Serialize>(what: &'static str, value: &T) -> Result<Vec<u8>, StorageError> {
    bincode::serde::encode_to_vec(value, config()).map_err(|e| StorageError::Encode {
        what,
        reason: e.to_string(),
    })
}

/// Encodes a record with bincode into `out`, which is cleared first: a
/// writer that reuses one buffer allocates nothing per record.
pub fn encode_into<T: Serialize>(
    what: &'static str,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), StorageError> {
    out.clear();
    bincode::serde::encode_into_std_write(value, out, config())
        .map(drop)
        .map_err(|e| StorageError::Encode {
            what,
            reason: e.to_string(),
        })
}

/// Decodes a record with bincode; trailing bytes are an error.
pub fn decode<T: serde::de::DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, StorageError> {
    // A damaged length must not make bincode reserve more than the value
    // can hold: its containers may claim at most a bound that grows with
    // the value's size (a string claims its bytes, a list 24 bytes or so
    // per item, and every item takes at least a byte of the value).
    fn limited<T: serde::de::DeserializeOwned, const L: usize>(
        bytes: &[u8],
    ) -> Result<(T, usize), bincode::error::DecodeError> {
        bincode::serde::decode_from_slice(bytes, config().with_limit::<L>())
    }
    let decoded = match bytes.len() {
        n if n <= 16 << 10 => limited::<T, { 1 << 20 }>(bytes),
        n if n <= 1 << 20 => limited::<T, { 64 << 20 }>(bytes),
        _ => limited::<T, { 1 << 32 }>(bytes),
    };
    let (v, used) = decoded.map_err(|e| StorageError::Decode {
        what,
        reason: e.to_string(),
    })?;
    if used != bytes.len() {
        return Err(StorageError::Decode {
            what,
            reason: format!("{} trailing bytes", bytes.len() - used),
        });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opt_str() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(".{0,12}")
    }

    fn shared() -> impl Strategy<Value = Shared> {
        prop_oneof![Just(Shared::Same), opt_str().prop_map(Shared::Own)]
    }

    prop_compose! {
        fn common()(created_at in opt_str(), filename in opt_str(), lineno in any::<Option<i64>>(),
                    g in shared(), u in shared(), p in shared(), metadata in opt_str(),
                    trigger_point in opt_str(), extra in opt_str()) -> Common {
            Common { created_at, filename, lineno, graph_id: g, user_id: u, project_id: p, metadata, trigger_point, extra }
        }
    }

    prop_compose! {
        fn var()(name in ".{0,12}", class_name in opt_str(), version in 1u32.., hash in any::<[u8; 32]>(),
                 len in any::<u64>(), has_value in any::<bool>(), comment in opt_str(), category in opt_str(),
                 session_id in opt_str(), session in any::<Option<u32>>(), node_id in opt_str(), common in common()) -> VarRecord {
            VarRecord { name, class_name, version, value: has_value.then_some(ValueRef { hash, len }), comment, category, session_id, session, node_id, common }
        }
    }

    proptest! {
        #[test]
        fn variable_records_round_trip(v in var()) {
            let bytes = encode("variable", &v).unwrap();
            prop_assert_eq!(decode::<VarRecord>("variable", &bytes).unwrap(), v);
        }

        #[test]
        fn encoding_into_a_used_buffer_gives_the_same_bytes(a in var(), b in var()) {
            // The buffer holds a's encoding (longer or shorter) before b's.
            let mut buf = Vec::new();
            encode_into("variable", &a, &mut buf).unwrap();
            encode_into("variable", &b, &mut buf).unwrap();
            prop_assert_eq!(&buf, &encode("variable", &b).unwrap());
            prop_assert_eq!(decode::<VarRecord>("variable", &buf).unwrap(), b);
        }

        #[test]
        fn edge_records_round_trip(edge_id in ".*", op: u32, source: u32, target: u32, session: u32,
                                   category in opt_str(), comment in opt_str(), common in common()) {
            let e = EdgeRecord { edge_id, op, source, target, session, category, comment, common };
            let bytes = encode("edge", &e).unwrap();
            prop_assert_eq!(decode::<EdgeRecord>("edge", &bytes).unwrap(), e);
        }
    }

    #[test]
    fn trailing_bytes_are_rejected() {
        let mut bytes = encode(
            "log",
            &LogEvent {
                at_ms: 1,
                action: "import".into(),
                trace: 1,
                graph_id: "g".into(),
                detail: String::new(),
            },
        )
        .unwrap();
        bytes.push(0);
        assert!(matches!(
            decode::<LogEvent>("log", &bytes),
            Err(StorageError::Decode { .. })
        ));
    }

    #[test]
    fn full_names_follow_smartcomment() {
        let mut v = VarRecord {
            name: "42".into(),
            class_name: Some("answer".into()),
            version: 3,
            value: None,
            comment: None,
            category: None,
            session_id: None,
            session: None,
            node_id: None,
            common: Common::default(),
        };
        assert_eq!(v.full_node_id(), "answer:42@3");
        v.class_name = Some(String::new());
        assert_eq!(v.full_name(), "42");
        v.class_name = None;
        v.name = "a@b".into();
        assert_eq!(v.full_node_id(), "a@b@3");
    }
}
