//! `:help` and `:help TOPIC`: every statement with an example, and the
//! shell's own commands.

/// The shell's commands with what they take (shown as a hint).
pub const META: &[(&str, &str)] = &[
    (":help", "[topic]"),
    (":format", "table|json|csv|tree|dot|mermaid"),
    (":timing", "on|off"),
    (":open", "PATH"),
    (":import", "PATH..."),
    (":export", "TRACE FILE"),
    (":param", "NAME=VALUE"),
    (":unset", "NAME"),
    (":quit", ""),
];

/// The names of the output formats, as `:format` takes them.
pub const QUERY_FORMATS: &[&str] = &["table", "json", "csv", "tree", "dot", "mermaid"];

/// The topics `:help` knows, with their text. The first line of each is its
/// summary in the overview.
const TOPICS: &[(&str, &str)] = &[
    (
        "trace",
        "TRACE: what a variable was derived from (walks edges backwards)
  TRACE <starts> [IN TRACE 'id'] [DEPTH n | DEPTH m..n] [UNTIL p] [WHILE p] [WHERE p]
        [RETURN nodes|ops|edges|subgraph|paths|count] [LIMIT n];
  A start is a full name (answer:42, its latest version), a version (answer:42@2), a quoted
  full node id, an op id, a $parameter, or several separated by commas. Without IN TRACE every
  trace holding a start answers. UNTIL stops at what matches (returned, not expanded); WHILE
  crosses only edges whose far end matches; WHERE filters rows.
  Examples:
    TRACE prediction:Q7 DEPTH 3;
    TRACE prediction:Q7 UNTIL op.kind = 'extraction' RETURN ops;
    TRACE prediction:Q7 IN TRACE '#2' RETURN paths LIMIT 5;",
    ),
    (
        "forward",
        "FORWARD: where a variable went (walks edges forwards); the same clauses as TRACE
  Examples:
    FORWARD message:D1:3 WHERE var.category = 'memory_entry';
    FORWARD message:D1:3 DEPTH 1..4 RETURN count;",
    ),
    (
        "match",
        "MATCH: Cypher-style patterns in each trace
  MATCH <pattern>[, <pattern>...] [WHERE p] RETURN [DISTINCT] expr [AS name], ...
        [ORDER BY expr [ASC|DESC]] [LIMIT n];
  (a:class {field: value}) is a variable, -[:kind]-> an edge made by an op of that kind,
  <-[...]- the other way, --> any edge, -[e:kind]-> a named edge, -[*1..20]-> a path.
  Examples:
    MATCH (m:message)-[:extraction]->(f) RETURN m, f LIMIT 10;
    MATCH (m:message)-[*1..20]->(p:prediction) WHERE m.value CONTAINS 'Paris' RETURN DISTINCT p;",
    ),
    (
        "find",
        "FIND: records across all traces, filtered, grouped and counted
  FIND vars|ops|edges|sessions|traces|cases|attributions [IN TRACE 'id'] [WHERE p]
       [GROUP BY e, ...] [RETURN ...] [ORDER BY ...] [LIMIT n];
  Aggregates: count(*), count(x), count(DISTINCT x), min, max, sum, avg; functions lower,
  upper, length. cases are a trace's annotations, else its llm-judge ops that scored 0
  (case.origin says which); attributions are the stored verdicts (:help attribute).
  Examples:
    FIND ops WHERE op.kind = 'retrieval' GROUP BY op.name RETURN op.name, count(*);
    FIND cases GROUP BY trace.project_id, case.error_type ORDER BY count(*) DESC;
    FIND cases WHERE case.origin = 'judge' RETURN trace.id, case.query_id, case.prediction;
    FIND vars WHERE var.category = 'memory_entry' AND var.value =~ '(?i)paris' LIMIT 5;",
    ),
    (
        "attribute",
        "ATTRIBUTE: find the earliest faulty op of failed cases, store and list the verdicts
  ATTRIBUTE CASES [IN TRACE 'id'] USING method [SETTING name]
  ATTRIBUTE <case>[, <case>...] [IN TRACE 'id'] USING method [SETTING name]
  ATTRIBUTE (FIND cases [IN TRACE 'id'] [WHERE ...] [ORDER BY ...] [LIMIT n]) USING method [SETTING name]
  ATTRIBUTE (RUN PATTERN name [OVER TRACES WHERE ...] [WITH $p = value, ...]) USING method [SETTING name]
  CASES is every failed case (FIND cases lists them). A case is named by its query variable
  (query:Q8, 'query:Q8@1'), by the judge op id of a case taken from an llm-judge op, or by a
  $parameter. A subquery in parentheses picks the cases across any number of traces, each
  attributed in its own trace, in the subquery's order: the rows of a FIND cases (no GROUP BY,
  aggregates or DISTINCT), or the hits of a pattern whose hits are cases (the five built-in
  patterns of the evidence, or a saved FIND cases). USING names the method: evidence follows the evidence through the trace,
  deterministically; llm has the configured LLM explore the trace with tools; hybrid gives
  the LLM the evidence verdict to confirm or refute (LLM endpoint: OPENAI_* / MEMTRACE_LLM_*
  variables or the config file); an unknown name lists the methods there are. SETTING hides part of
  each case, to see how a method does without it: benchmark (the default) hides nothing, evaluation
  hides the annotated evidence, production hides the evidence and the gold answer. Each verdict is stored
  with its trace (author 'query'; a finding already stored is not stored twice) and returned:
  trace, case, error_type, op_id, op_name, confidence, reason.
  FIND attributions lists the stored verdicts; their fields (:help fields) may be written
  without attribution. in front.
  Examples:
    ATTRIBUTE CASES IN TRACE 'mem0-0002-s7' USING evidence;
    ATTRIBUTE query:Q8, 'query:Q9@1' USING evidence;
    ATTRIBUTE query:Q8 IN TRACE 'mem0-0002-s7' USING hybrid;
    ATTRIBUTE CASES IN TRACE 'mem0-0002-s7' USING evidence SETTING production;
    ATTRIBUTE (FIND cases WHERE trace.project_id = 'mem0' AND case.query CONTAINS 'When') USING hybrid;
    ATTRIBUTE (RUN PATTERN stored_not_retrieved OVER TRACES WHERE trace.project_id = 'rag') USING llm;
    FIND attributions GROUP BY error_type RETURN error_type, count(*);
    FIND attributions WHERE confidence >= 0.5 AND method = 'evidence' ORDER BY at DESC LIMIT 10;",
    ),
    (
        "patterns",
        "PATTERNS: failure questions saved by name, run over every trace
  SAVE PATTERN name [WITH $p = value, ...] AS <TRACE|FORWARD|MATCH|FIND statement>
  RUN PATTERN name [OVER TRACES WHERE <condition on trace.>] [WITH $p = value, ...]
  SHOW PATTERNS;   SHOW PATTERN name HISTORY;   DROP PATTERN name
  Every $parameter of a saved statement needs a default (WITH before AS); RUN overrides it.
  A save appends a new version, a drop appends a tombstone: the history keeps both. RUN runs
  the statement in each trace, in parallel; each row is a hit, with its trace first. The
  built-in patterns (evidence_never_stored, stored_then_overwritten, evidence_deleted,
  stored_not_retrieved, retrieved_answered_wrong, noop_update, empty_retrieval,
  unbounded_growth, shared_failing_prompt) run the same way; SHOW PATTERNS describes them.
  From the command line: memtrace patterns, and memtrace check for CI.
  Examples:
    SAVE PATTERN lost WITH $k = 'extraction' AS FIND ops WHERE op.kind = $k RETURN op.id;
    RUN PATTERN unbounded_growth OVER TRACES WHERE trace.project_id = 'mem0' WITH $factor = 2;
    RUN PATTERN empty_retrieval;
    SHOW PATTERNS;
    SHOW PATTERN lost HISTORY;",
    ),
    (
        "show",
        "SHOW TRACES: the stored traces with their counts (SHOW PATTERNS: :help patterns)
  Example:
    SHOW TRACES;",
    ),
    (
        "describe",
        "DESCRIBE: a variable's incoming edges grouped by category, or an op's edges
  Examples:
    DESCRIBE prediction:Q7;
    DESCRIBE prediction:Q7 IN TRACE 'mem0-0002-s7';",
    ),
    (
        "explain",
        "EXPLAIN: the plan of a statement, without running it
  Examples:
    EXPLAIN MATCH (m:message)-[*1..20]->(p:prediction) RETURN m, p;
    EXPLAIN ATTRIBUTE CASES IN TRACE 'mem0-0002-s7' USING evidence;",
    ),
    (
        "where",
        "Predicates (UNTIL, WHILE, WHERE)
  = != < <= > >=, CONTAINS, STARTS WITH, =~ (a regular expression), IN [..], NOT IN,
  IS [NOT] NULL, combined with AND, OR, NOT and parentheses. Strings are 'single-quoted'
  ('it''s'); text that reads as a number compares as one; comparisons with NULL are unknown.
  Example:
    FIND vars WHERE var.class IN ['message', 'prediction'] AND NOT var.value CONTAINS 'x';",
    ),
    (
        "fields",
        "Fields, by prefix
  var.      full_name name class version category comment value created_at session node_id
            filename lineno meta.<key>
  op.       id name kind comment session created_at meta.<key>
  edge.     id category comment source target op op_name kind session created_at meta.<key>
  session.  id name category comment created_at meta.<key>
  trace.    id user_id project_id created_at source meta.<key>
  case.     query_id query golden_answers prediction evidence error_type op_id origin
  attribution.  case query error_type op_id op_name confidence reason method version
            author at seq micros (FIND attributions)
  source., target.  the variable fields of an edge's two ends (FIND edges)
  In a FIND the listed records' fields may be written bare (FIND cases RETURN query_id); a
  prefix alone is its record's id (trace is trace.id, var a full node id, op an op id).",
    ),
    (
        "params",
        "Parameters: $name in a statement takes the value set with :param
  :param start=prediction:Q7     numbers, true, false and null are typed; the rest is text
  :param                         lists them;  :unset start  removes one
  Example:
    TRACE $start DEPTH 2;",
    ),
    (
        "formats",
        "Output formats (:format NAME)
  table    aligned columns; long values are cut with … to fit the terminal
  json     {\"columns\": [...], \"rows\": [[...], ...]}
  csv      RFC 4180, with a header line
  tree     TRACE and FORWARD drawn as the provenance tree, op names on the branches
  dot      TRACE and FORWARD subgraph as Graphviz DOT
  mermaid  TRACE and FORWARD subgraph as a Mermaid flowchart
  (with tree, dot and mermaid, the other statements print tables)",
    ),
    (
        "commands",
        "Shell commands (one line each, no ';')
  :help [topic]        this help, or one topic
  :format [NAME]       table, json, csv, tree, dot or mermaid (without NAME: the current one)
  :timing [on|off]     print how long each statement took
  :open PATH           use another database (created by the first :import when missing)
  :import PATH...      import files and folders (*.json, *.jsonl) into the open database
  :export TRACE FILE   write a trace to FILE: .dot and .mmd draw it, anything else is JSON
  :param NAME=VALUE    set a $parameter (:param alone lists them, :unset NAME removes one)
  :quit                leave (so do Ctrl-D, :q and :exit)
  Keys: Tab completes keywords, fields and names from the database; Up and Down walk the
  history (kept across runs); Ctrl-R searches it; Ctrl-C cancels a running statement or
  clears the line.",
    ),
];

/// The names `:help` accepts.
pub fn topics() -> Vec<&'static str> {
    TOPICS.iter().map(|(name, _)| *name).collect()
}

/// The overview (`topic` = None) or one topic's text; an unknown topic is
/// an error that lists the known ones.
pub fn text(topic: Option<&str>) -> Result<String, String> {
    let Some(topic) = topic else {
        let mut out =
            String::from("Statements end with ';' and may span lines. :help TOPIC tells more.\n\n");
        for (name, body) in TOPICS {
            let summary = body.lines().next().unwrap_or_default();
            let example = body
                .lines()
                .skip_while(|l| !l.trim_start().starts_with("Example"))
                .nth(1)
                .map(str::trim);
            out.push_str(&format!("  {name:<9} {summary}\n"));
            if let Some(e) = example {
                out.push_str(&format!("            {e}\n"));
            }
        }
        return Ok(out);
    };
    let want = topic.trim().trim_start_matches(':').to_ascii_lowercase();
    // A statement's second keyword, or a command name, leads to its topic.
    let want = match want.as_str() {
        "traces" => "show",
        "attributions" | "attribution" | "verdicts" | "using" => "attribute",
        "predicates" | "until" | "while" => "where",
        "format" | "output" => "formats",
        "param" | "parameters" | "unset" => "params",
        "help" | "timing" | "open" | "import" | "export" | "quit" | "meta" => "commands",
        other => other,
    };
    TOPICS
        .iter()
        .find(|(name, _)| *name == want)
        .map(|(_, body)| format!("{body}\n"))
        .ok_or_else(|| {
            format!(
                "no help on '{}'; topics: {}",
                topic.trim(),
                topics().join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_has_a_topic_with_an_example() {
        for kw in [
            "trace",
            "forward",
            "match",
            "find",
            "show",
            "describe",
            "attribute",
            "explain",
        ] {
            let t = text(Some(kw)).unwrap();
            assert!(t.contains("Example"), "{kw}");
            assert!(t.contains(&kw.to_uppercase()), "{kw}");
        }
        let all = text(None).unwrap();
        for name in topics() {
            assert!(all.contains(name), "{name} missing from the overview");
        }
        assert!(all.contains("TRACE prediction:Q7 DEPTH 3;"));
    }

    #[test]
    fn every_example_parses_and_plans() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::opening::open(dir.path().join("db")).unwrap();
        let params: memtrace::Params =
            [("start".to_string(), memtrace::Value::Str("x".into()))].into();
        let mut seen = 0;
        for (name, body) in TOPICS {
            for line in body.lines().map(str::trim) {
                let statement = line.ends_with(';') && !line.starts_with(':');
                if !statement || line.starts_with('[') {
                    continue;
                }
                let stmts = db
                    .parse_script(line)
                    .unwrap_or_else(|e| panic!("{name}: {line}: {e}"));
                for s in &stmts {
                    db.plan(s, &params, line)
                        .unwrap_or_else(|e| panic!("{name}: {line}: {e}"));
                }
                seen += 1;
            }
        }
        assert!(seen >= 15, "only {seen} examples found");
    }

    #[test]
    fn topics_are_found_by_their_other_names_and_unknown_ones_listed() {
        assert_eq!(text(Some("TRACES")), text(Some("show")));
        assert_eq!(text(Some(":format")), text(Some("formats")));
        assert_eq!(text(Some("attributions")), text(Some("attribute")));
        let e = text(Some("nosuch")).unwrap_err();
        assert!(e.contains("topics: trace, forward"), "{e}");
    }
}
