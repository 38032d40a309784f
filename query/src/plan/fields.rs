//! What a field path names: its [`Subject`] and [`Field`], the field names
//! each subject has as written (`var.full_name`, `op.kind`, ...), and the
//! names of the subjects themselves.

/// What a field path names a field of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// `var.`: a variable (in TRACE, the node reached).
    Var,
    /// `op.`: an operation (in TRACE, the op of the edge that reached the node).
    Op,
    /// `edge.`: an edge.
    Edge,
    /// `session.`: the session of the row's record.
    Session,
    /// `trace.`: the trace.
    Trace,
    /// `case.`: a failed case.
    Case,
    /// `attribution.`: a stored attribution verdict.
    Attribution,
    /// `source.`: an edge's source variable.
    Source,
    /// `target.`: an edge's target variable.
    Target,
    /// A MATCH pattern variable, by its index in
    /// [`MatchPlan::vars`](crate::plan::MatchPlan::vars).
    Bound(usize),
}

/// A field of a subject.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Field {
    /// `full_name` (`class:name`).
    FullName,
    /// `name`.
    Name,
    /// `class`.
    Class,
    /// `version`.
    Version,
    /// `category` (an op's category is also its `kind`).
    Category,
    /// `comment`.
    Comment,
    /// `value` (a variable's value text).
    Value,
    /// `created_at`.
    CreatedAt,
    /// `session`: the session id.
    Session,
    /// `node_id`: the full node id (`full_name@version`).
    NodeId,
    /// `filename`.
    Filename,
    /// `lineno`.
    Lineno,
    /// `id`: op id, edge id, session id, trace (graph) id.
    Id,
    /// `name` of an op, session.
    OpName,
    /// `source`: an edge's source node id; a trace's import source.
    Source,
    /// `target`: an edge's target node id.
    Target,
    /// `op`: an edge's op id.
    Op,
    /// `user_id`.
    UserId,
    /// `project_id`.
    ProjectId,
    /// `query_id` of a case.
    QueryId,
    /// `query` of a case.
    Query,
    /// `golden_answers` of a case.
    GoldenAnswers,
    /// `prediction` of a case.
    Prediction,
    /// `evidence`: a case's source evidence ids.
    Evidence,
    /// `error_type`: a case's labelled error type.
    ErrorType,
    /// `op_id`: a case's labelled faulty op.
    OpId,
    /// `kind` of an edge: the category of the op that made it.
    Kind,
    /// `origin` of a case: `annotation` or `judge`.
    Origin,
    /// `case` of a verdict: the case's name (query node id or judge op id).
    Case,
    /// `confidence` of a verdict, from 0 to 1.
    Confidence,
    /// `reason` of a verdict.
    Reason,
    /// `method` of a verdict.
    Method,
    /// `author` of a stored verdict.
    Author,
    /// `at`: when a verdict was stored (ISO-8601, UTC).
    At,
    /// `seq`: a stored verdict's place among its trace's verdicts, from 1.
    Seq,
    /// `micros`: microseconds the attributor spent on a case.
    Micros,
    /// `model`: the LLM that made a verdict.
    Model,
    /// `calls`: requests an LLM verdict sent to its endpoint.
    Calls,
    /// `cached_calls`: answers an LLM verdict replayed from the cache.
    CachedCalls,
    /// `tokens_in`: prompt tokens of an LLM verdict.
    TokensIn,
    /// `tokens_out`: completion tokens of an LLM verdict.
    TokensOut,
    /// `seconds`: wall-clock seconds an LLM verdict took.
    Seconds,
    /// `setting`: what the case showed the attributor (`benchmark`,
    /// `evaluation`, `production`).
    Setting,
    /// `meta.<key>...`: a path into the JSON metadata.
    Meta(Vec<String>),
    /// Where a record is, for the engine's own use (a statement cannot name
    /// it): a trace's dense id; a failed case's origin in its trace (the
    /// position of its annotation, or the id of its judge op). An ATTRIBUTE
    /// reads it from the rows of its `FIND cases` subquery.
    Key,
}

/// A variable's fields (also an edge's source and target).
const VAR_FIELDS: &[(&str, Field)] = &[
    ("full_name", Field::FullName),
    ("name", Field::Name),
    ("class", Field::Class),
    ("class_name", Field::Class),
    ("version", Field::Version),
    ("category", Field::Category),
    ("comment", Field::Comment),
    ("value", Field::Value),
    ("created_at", Field::CreatedAt),
    ("session", Field::Session),
    ("node_id", Field::NodeId),
    ("full_node_id", Field::NodeId),
    ("filename", Field::Filename),
    ("lineno", Field::Lineno),
];

/// An operation's fields.
const OP_FIELDS: &[(&str, Field)] = &[
    ("id", Field::Id),
    ("op_id", Field::Id),
    ("name", Field::OpName),
    ("op_name", Field::OpName),
    ("kind", Field::Category),
    ("category", Field::Category),
    ("comment", Field::Comment),
    ("session", Field::Session),
    ("created_at", Field::CreatedAt),
];

/// An edge's fields.
const EDGE_FIELDS: &[(&str, Field)] = &[
    ("id", Field::Id),
    ("edge_id", Field::Id),
    ("category", Field::Category),
    ("comment", Field::Comment),
    ("source", Field::Source),
    ("target", Field::Target),
    ("op", Field::Op),
    ("op_id", Field::Op),
    ("op_name", Field::OpName),
    ("kind", Field::Kind),
    ("session", Field::Session),
    ("created_at", Field::CreatedAt),
];

/// A session's fields.
const SESSION_FIELDS: &[(&str, Field)] = &[
    ("id", Field::Id),
    ("session_id", Field::Id),
    ("name", Field::Name),
    ("category", Field::Category),
    ("comment", Field::Comment),
    ("created_at", Field::CreatedAt),
];

/// A trace's fields.
const TRACE_FIELDS: &[(&str, Field)] = &[
    ("id", Field::Id),
    ("graph_id", Field::Id),
    ("user_id", Field::UserId),
    ("project_id", Field::ProjectId),
    ("created_at", Field::CreatedAt),
    ("source", Field::Source),
];

/// A failed case's fields.
const CASE_FIELDS: &[(&str, Field)] = &[
    ("query_id", Field::QueryId),
    ("query", Field::Query),
    ("golden_answers", Field::GoldenAnswers),
    ("prediction", Field::Prediction),
    ("evidence", Field::Evidence),
    ("source_evidence_ids", Field::Evidence),
    ("error_type", Field::ErrorType),
    ("final_error_type", Field::ErrorType),
    ("op_id", Field::OpId),
    ("final_op_id", Field::OpId),
    ("origin", Field::Origin),
];

/// A stored attribution verdict's fields.
const ATTRIBUTION_FIELDS: &[(&str, Field)] = &[
    ("case", Field::Case),
    ("query", Field::Query),
    ("error_type", Field::ErrorType),
    ("op_id", Field::OpId),
    ("op_name", Field::OpName),
    ("confidence", Field::Confidence),
    ("reason", Field::Reason),
    ("method", Field::Method),
    ("version", Field::Version),
    ("author", Field::Author),
    ("at", Field::At),
    ("seq", Field::Seq),
    ("micros", Field::Micros),
    ("model", Field::Model),
    ("calls", Field::Calls),
    ("cached_calls", Field::CachedCalls),
    ("tokens_in", Field::TokensIn),
    ("tokens_out", Field::TokensOut),
    ("seconds", Field::Seconds),
    ("setting", Field::Setting),
];

/// The fields each subject has: (name as written, field).
pub(super) fn fields_of(subject: Subject) -> &'static [(&'static str, Field)] {
    match subject {
        Subject::Var | Subject::Source | Subject::Target => VAR_FIELDS,
        Subject::Op => OP_FIELDS,
        Subject::Edge => EDGE_FIELDS,
        Subject::Session => SESSION_FIELDS,
        Subject::Trace => TRACE_FIELDS,
        Subject::Case => CASE_FIELDS,
        Subject::Attribution => ATTRIBUTION_FIELDS,
        Subject::Bound(_) => &[],
    }
}

/// What a subject written alone stands for: its identifier (a trace's
/// graph id, a variable's full node id, an op's id, a case's query id, a
/// verdict's case name).
pub(super) fn id_field(subject: Subject) -> Field {
    match subject {
        Subject::Var | Subject::Source | Subject::Target | Subject::Bound(_) => Field::NodeId,
        Subject::Case => Field::QueryId,
        Subject::Attribution => Field::Case,
        Subject::Op | Subject::Edge | Subject::Session | Subject::Trace => Field::Id,
    }
}

/// The subjects a field path may start with, as written (`var`, `op`, ...).
pub const SUBJECTS: &[&str] = &[
    "var",
    "op",
    "edge",
    "session",
    "trace",
    "case",
    "attribution",
    "source",
    "target",
];

/// The field names of a subject as written after its dot (`var` -> `full_name`,
/// `name`, ...), for completion and help; `None` for a name that is not a subject.
/// `meta.` paths are open-ended and not listed.
pub fn field_names(subject: &str) -> Option<Vec<&'static str>> {
    let s = subject_named(subject)?;
    Some(fields_of(s).iter().map(|(name, _)| *name).collect())
}

/// The subject a field path's first name stands for.
pub(super) fn subject_named(name: &str) -> Option<Subject> {
    Some(match name {
        "var" => Subject::Var,
        "op" => Subject::Op,
        "edge" => Subject::Edge,
        "session" => Subject::Session,
        "trace" => Subject::Trace,
        "case" => Subject::Case,
        "attribution" => Subject::Attribution,
        "source" => Subject::Source,
        "target" => Subject::Target,
        _ => return None,
    })
}

pub(super) fn subject_name(s: Subject) -> &'static str {
    match s {
        Subject::Var => "var",
        Subject::Op => "op",
        Subject::Edge => "edge",
        Subject::Session => "session",
        Subject::Trace => "trace",
        Subject::Case => "case",
        Subject::Attribution => "attribution",
        Subject::Source => "source",
        Subject::Target => "target",
        Subject::Bound(_) => "",
    }
}
