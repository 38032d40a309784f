//! What the database holds and what the query language says, for `describe`.

use super::params::DescribeArgs;
use super::results::Described;

/// What the database holds, for `describe`.
const SCHEMA: &str = "memtrace stores execution traces of LLM memory systems and agents.
A trace (graph id; #ID by number) holds sessions; variables (full node id name@version: each write
of a variable is a new version) with a category, a value, a comment and metadata; ops (op id, name,
kind/category, metadata) that read variables and write variables; and edges source -> target, each
made by one op. An OpenTelemetry trace (otel-<trace id>) maps each span to an op (its span kind as
the op's kind), its inputs and outputs to variables (input:, output:, message:, document:, ...).
Failed cases are wrong answers: MemTraceBench annotations, llm-judge ops that scored 0, or failing
OpenTelemetry evaluations; a case has a query, gold answers, a prediction and evidence.
Verdicts (FIND attributions) are stored attributions of cases: error_type, op_id, confidence,
reason, method, author, time.
Records to FIND: vars, ops, edges, sessions, traces, cases, attributions. Fields: var.* (full_name,
name, version, category, value, class, meta.*), op.* (id, name, kind, meta.*), trace.* (graph_id,
project_id, user_id, created_at, source, meta.*); describe with topic fields lists them all.";

/// The description of `a`'s topic: the schema, a topic of the language, or both in short.
pub fn describe(a: DescribeArgs) -> Result<Described, String> {
    let mut topics = vec!["schema".to_string()];
    topics.extend(crate::shell::help::topics().into_iter().map(String::from));
    let topic = a.topic.unwrap_or_default().trim().to_ascii_lowercase();
    let text = match topic.as_str() {
        "" => format!(
            "{SCHEMA}\n\nThe query language (describe with a topic for more):\n{}",
            crate::shell::help::text(None).unwrap_or_default()
        ),
        "schema" => SCHEMA.to_string(),
        t => crate::shell::help::text(Some(t))?,
    };
    Ok(Described {
        topic: if topic.is_empty() {
            "overview".into()
        } else {
            topic
        },
        text,
        topics,
    })
}
