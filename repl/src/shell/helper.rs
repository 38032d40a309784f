//! The line editor's helper: completion, hints, highlighting, and the check
//! that a statement is finished (it ends with `;`).

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use memtrace::attrib::{Method, Setting};
use memtrace::engine::{field_names, FIND_KINDS, KEYWORDS, OUTPUTS, SUBJECTS};
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::{Hinter, HistoryHinter};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};

use super::help::{META, QUERY_FORMATS};
use super::lex::{self, Kind};
use super::names::{List, Names};

/// What the helper knows of the session: the names in the open database
/// and the parameters that are set.
#[derive(Debug, Default)]
pub struct Known {
    /// Names in the open database.
    pub names: Names,
    /// Names of the `$parameters` that are set.
    pub params: Vec<String>,
    /// Whether the names are still being read.
    pub loading: bool,
}

/// The rustyline helper of the shell.
pub struct ShellHelper {
    known: Arc<RwLock<Known>>,
    files: FilenameCompleter,
    history: HistoryHinter,
}

impl ShellHelper {
    /// A helper that completes from `known`.
    pub fn new(known: Arc<RwLock<Known>>) -> ShellHelper {
        ShellHelper {
            known,
            files: FilenameCompleter::new(),
            history: HistoryHinter::new(),
        }
    }
}

/// The words of `before` that are not comments, strings or punctuation,
/// upper-cased: the keywords and names typed so far.
fn words_before(before: &str) -> Vec<String> {
    lex::tokens(before)
        .iter()
        .filter(|t| matches!(t.kind, Kind::Keyword | Kind::Word | Kind::Semicolon))
        .map(|t| before[t.start..t.end].to_ascii_uppercase())
        .collect()
}

/// Whether the statement being typed (after the last `;`) is a
/// `FIND attributions`, whose fields may be written bare.
fn in_find_attributions(before: &str) -> bool {
    let words = words_before(before);
    let current = match words.iter().rposition(|w| w == ";") {
        Some(i) => &words[i + 1..],
        None => &words[..],
    };
    current
        .windows(2)
        .any(|w| w[0] == "FIND" && w[1] == "ATTRIBUTIONS")
}

/// What may come next in an ATTRIBUTE's subquery, given the text `before`
/// the word being typed: after `ATTRIBUTE (` the statements a subquery may
/// be; after `(FIND` the one kind it may list; after `(RUN` PATTERN; after
/// `(RUN PATTERN` the patterns whose hits are cases; after the parenthesis
/// that closes the subquery, USING. `None` anywhere else. Keywords come in
/// the case of `word`, or of ATTRIBUTE while `word` is empty.
fn subquery_next(before: &str, word: &str, known: &Known) -> Option<Vec<String>> {
    let toks: Vec<(Kind, &str)> = lex::tokens(before)
        .iter()
        .filter(|t| t.kind != Kind::Comment)
        .map(|t| (t.kind, &before[t.start..t.end]))
        .collect();
    // The statement being typed.
    let from = toks
        .iter()
        .rposition(|(k, _)| *k == Kind::Semicolon)
        .map_or(0, |i| i + 1);
    let toks = &toks[from..];
    let upper: Vec<String> = toks.iter().map(|(_, t)| t.to_ascii_uppercase()).collect();
    let words: Vec<&str> = upper.iter().map(String::as_str).collect();
    let at = words.iter().rposition(|w| *w == "ATTRIBUTE")?;
    let typed = if word.is_empty() { toks[at].1 } else { word };
    let lower = typed.chars().any(|c| c.is_ascii_lowercase());
    let kw = |k: &str| {
        if lower {
            k.to_ascii_lowercase()
        } else {
            k.to_string()
        }
    };
    let own = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
    Some(match &words[at..] {
        ["ATTRIBUTE", "("] => vec![kw("FIND"), kw("RUN")],
        ["ATTRIBUTE", "(", "FIND"] => own(&["cases"]),
        ["ATTRIBUTE", "(", "RUN"] => vec![kw("PATTERN")],
        ["ATTRIBUTE", "(", "RUN", "PATTERN"] => own(&known.names.list(List::CasePatterns)),
        ["ATTRIBUTE", "(", rest @ ..] if rest.last() == Some(&")") => {
            // Closed when the parentheses balance again at the end.
            let mut depth = 1i32;
            for w in rest {
                match *w {
                    "(" => depth += 1,
                    ")" => depth -= 1,
                    _ => {}
                }
            }
            if depth != 0 {
                return None;
            }
            vec![kw("USING")]
        }
        _ => return None,
    })
}

/// Functions, completed with their opening parenthesis.
const FUNCTIONS: &[&str] = &[
    "count(", "min(", "max(", "sum(", "avg(", "lower(", "upper(", "length(",
];

/// A completion: what the list shows (control characters shown escaped)
/// and what is put into the line.
fn pair(display: impl Into<String>, replacement: impl Into<String>) -> Pair {
    Pair {
        display: memtrace_table::visible(&display.into()).into_owned(),
        replacement: replacement.into(),
    }
}

fn starts_with_ci(name: &str, prefix: &str) -> bool {
    name.len() >= prefix.len()
        && name
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
}

/// Which list of names a string being typed after `before` draws from:
/// `var.category = '` completes categories, `IN TRACE '` trace ids.
fn list_for_string(before: &str) -> List {
    let toks = lex::tokens(before);
    let mut it = toks.iter().rev().filter(|t| t.kind != Kind::Comment);
    for t in it.by_ref() {
        let text = &before[t.start..t.end];
        match t.kind {
            // Operators and list brackets between the field and the string.
            Kind::Punct | Kind::Str { .. } => continue,
            Kind::Keyword => {
                let k = text.to_ascii_uppercase();
                if k == "TRACE" {
                    return List::Traces;
                }
                if ["IN", "NOT", "CONTAINS", "STARTS", "WITH"].contains(&k.as_str()) {
                    continue;
                }
                return List::Any;
            }
            Kind::Word => {
                let (subject, field) = match text.rsplit_once('.') {
                    Some((s, f)) => (s.split('.').next().unwrap_or(s), f),
                    // A field written bare (FIND attributions).
                    None => ("", text),
                };
                let op_side = matches!(subject, "op" | "edge");
                return match field {
                    "error_type" | "final_error_type" => List::ErrorTypes,
                    "method" if matches!(subject, "" | "attribution") => List::Methods,
                    _ if subject.is_empty() => List::Any,
                    "category" | "kind" if op_side => List::OpKinds,
                    "category" => List::Categories,
                    "op_name" => List::OpNames,
                    "name" if op_side => List::OpNames,
                    "class" | "class_name" => List::Classes,
                    "id" | "graph_id" if subject == "trace" => List::Traces,
                    "user_id" | "project_id" => List::Owners,
                    _ => List::Any,
                };
            }
            _ => return List::Any,
        }
    }
    List::Any
}

/// Completes a statement at byte `pos` of `line`: keywords, field paths,
/// class names in patterns and node references, op kinds in edge patterns,
/// `$parameters`, and quoted names from the database inside strings.
pub fn complete_statement(line: &str, pos: usize, known: &Known) -> (usize, Vec<Pair>) {
    let before = &line[..pos];
    let toks = lex::tokens(before);
    // Inside a string: names from the database, closed with a quote.
    if let Some(t) = toks.last() {
        if t.kind == (Kind::Str { closed: false }) && t.end == pos {
            let prefix = &before[t.start + 1..];
            let list = list_for_string(&before[..t.start]);
            let found = known
                .names
                .list(list)
                .into_iter()
                .filter(|n| starts_with_ci(n, prefix))
                .map(|n| pair(n, format!("{}'", n.replace('\'', "''"))))
                .collect();
            return (t.start + 1, found);
        }
        if t.kind == Kind::Comment && t.end == pos {
            return (pos, Vec::new());
        }
    }
    let start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| lex::word_char(*c))
        .last()
        .map_or(pos, |(i, _)| i);
    let word = &before[start..];
    let opener = before[..start].chars().next_back();
    // `(m:mes` and `-[:ext`: a class name or an op kind after the colon.
    if let Some(colon) = word.rfind(':') {
        let list = match opener {
            Some('(') => List::Classes,
            Some('[') => List::OpKinds,
            _ => return (pos, Vec::new()),
        };
        let prefix = &word[colon + 1..];
        let found = known
            .names
            .list(list)
            .into_iter()
            .filter(|n| starts_with_ci(n, prefix) && n.chars().all(lex::word_char))
            .map(|n| pair(n, n))
            .collect();
        return (start + colon + 1, found);
    }
    if let Some(name) = word.strip_prefix('$') {
        let found = known
            .params
            .iter()
            .filter(|p| starts_with_ci(p, name))
            .map(|p| pair(format!("${p}"), format!("${p}")))
            .collect();
        return (start, found);
    }
    if let Some((subject, field)) = word.split_once('.') {
        return (start, complete_field(subject, field));
    }
    // In an ATTRIBUTE's subquery: what may come next there.
    if let Some(next) = subquery_next(&before[..start], word, known) {
        let found = next
            .into_iter()
            .filter(|w| starts_with_ci(w, word))
            .map(|w| pair(w.clone(), w))
            .collect();
        return (start, found);
    }
    // After SETTING: the settings.
    if words_before(&before[..start]).last().map(String::as_str) == Some("SETTING") {
        let found = Setting::ALL
            .iter()
            .map(|s| s.name())
            .filter(|s| starts_with_ci(s, word))
            .map(|s| pair(s, s))
            .collect();
        return (start, found);
    }
    // After USING: the attribution methods.
    if words_before(&before[..start]).last().map(String::as_str) == Some("USING") {
        let found = Method::ALL
            .iter()
            .map(|m| m.name())
            .filter(|m| starts_with_ci(m, word))
            .map(|m| pair(m, m))
            .collect();
        return (start, found);
    }
    (start, complete_bare_word(&before[..start], word, known))
}

/// Completes the field after `subject.`; a MATCH variable has a variable's fields.
fn complete_field(subject: &str, field: &str) -> Vec<Pair> {
    let fields = field_names(subject).unwrap_or_else(|| field_names("var").unwrap_or_default());
    // Every record but a verdict has metadata.
    let meta: &[&str] = if subject == "attribution" {
        &[]
    } else {
        &["meta."]
    };
    let mut found: Vec<Pair> = fields
        .into_iter()
        .chain(meta.iter().copied())
        .filter(|f| starts_with_ci(f, field))
        .map(|f| pair(f, format!("{subject}.{f}")))
        .collect();
    found.dedup_by(|a, b| a.replacement == b.replacement);
    found
}

/// Completes a bare word: keywords (in the case being typed), words, functions, subjects, the
/// fields of a FIND attributions written bare, and class names that start a node reference.
fn complete_bare_word(before: &str, word: &str, known: &Known) -> Vec<Pair> {
    let lower = word.chars().any(|c| c.is_ascii_lowercase());
    let mut found: Vec<Pair> = Vec::new();
    if in_find_attributions(before) {
        for f in field_names("attribution").unwrap_or_default() {
            if starts_with_ci(f, word) {
                found.push(pair(f, f));
            }
        }
    }
    for k in KEYWORDS {
        if starts_with_ci(k, word) {
            let k = if lower {
                k.to_ascii_lowercase()
            } else {
                k.to_string()
            };
            found.push(pair(k.clone(), k));
        }
    }
    // Words that are not keywords but follow them: FIND's targets, RETURN's outputs.
    for w in FIND_KINDS.iter().chain(&OUTPUTS).chain(FUNCTIONS) {
        // A word that is also a keyword (TRACES, CASES) came in the case typed.
        let keyword = KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w));
        if starts_with_ci(w, word) && !keyword {
            found.push(pair(*w, *w));
        }
    }
    for s in SUBJECTS {
        if starts_with_ci(s, word) {
            found.push(pair(format!("{s}."), format!("{s}.")));
        }
    }
    for c in known.names.list(List::Classes) {
        if starts_with_ci(c, word) && c.chars().all(lex::word_char) {
            found.push(pair(format!("{c}:"), format!("{c}:")));
        }
    }
    found.sort_by(|a, b| a.display.cmp(&b.display));
    found.dedup_by(|a, b| a.replacement == b.replacement);
    found
}

/// Completes a `:command` line: command names, then their arguments.
fn complete_meta(
    line: &str,
    pos: usize,
    known: &Known,
    files: &FilenameCompleter,
) -> rustyline::Result<(usize, Vec<Pair>)> {
    let before = &line[..pos];
    let Some(space) = before.find(char::is_whitespace) else {
        let found = META
            .iter()
            .filter(|(name, _)| name.starts_with(before.trim_start()))
            .map(|(name, _)| pair(*name, *name))
            .collect();
        return Ok((line.len() - line.trim_start().len(), found));
    };
    let command = before[..space].trim();
    let args = &before[space..];
    let arg_start = pos - args.len() + (args.len() - args.trim_start().len());
    let word_start = before
        .rfind(char::is_whitespace)
        .map_or(arg_start, |i| i + 1)
        .max(arg_start);
    let word = &before[word_start..];
    let pick = |options: Vec<&str>| {
        options
            .into_iter()
            .filter(|o| o.starts_with(word))
            .map(|o| pair(o, o))
            .collect::<Vec<_>>()
    };
    let first_arg = word_start == arg_start;
    Ok(match command {
        ":format" => (word_start, pick(QUERY_FORMATS.to_vec())),
        ":timing" => (word_start, pick(vec!["on", "off"])),
        ":help" => (word_start, pick(super::help::topics())),
        ":unset" => (
            word_start,
            pick(known.params.iter().map(String::as_str).collect()),
        ),
        ":export" if first_arg => (word_start, pick(known.names.list(List::Traces))),
        ":open" | ":import" | ":export" => files.complete_path(line, pos)?,
        _ => (pos, Vec::new()),
    })
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        // Right after the database opens its names may still be on their
        // way; wait a moment for them rather than complete without them.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while self.known.read().is_ok_and(|k| k.loading) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let known = self.known.read().unwrap_or_else(|p| p.into_inner());
        if line.trim_start().starts_with(':') {
            complete_meta(line, pos, &known, &self.files)
        } else {
            Ok(complete_statement(line, pos, &known))
        }
    }
}

impl Hinter for ShellHelper {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, ctx: &Context<'_>) -> Option<String> {
        if pos < line.len() {
            return None;
        }
        // A command typed in full: what it takes.
        if let Some((_, usage)) = META.iter().find(|(name, _)| *name == line.trim()) {
            if !usage.is_empty() && !line.ends_with(' ') {
                return Some(format!(" {usage}"));
            }
        }
        self.history.hint(line, pos, ctx)
    }
}

const RESET: &str = "\x1b[0m";

/// The colour of a token kind (ANSI select graphic rendition).
fn colour(kind: Kind) -> Option<&'static str> {
    match kind {
        Kind::Keyword => Some("\x1b[1;34m"),
        Kind::Str { .. } => Some("\x1b[32m"),
        Kind::Number => Some("\x1b[36m"),
        Kind::Param => Some("\x1b[35m"),
        Kind::Comment => Some("\x1b[2m"),
        Kind::Word | Kind::Semicolon | Kind::Punct => None,
    }
}

/// `line` with ANSI colours: keywords, strings, numbers, parameters,
/// comments, and the name of a `:command`.
pub fn highlight_line(line: &str) -> String {
    if line.trim_start().starts_with(':') {
        let end = line
            .trim_start()
            .find(char::is_whitespace)
            .map_or(line.len(), |i| i + line.len() - line.trim_start().len());
        return format!("\x1b[33m{}{RESET}{}", &line[..end], &line[end..]);
    }
    let mut out = String::with_capacity(line.len() + 32);
    let mut at = 0;
    for t in lex::tokens(line) {
        if let Some(c) = colour(t.kind) {
            out.push_str(&line[at..t.start]);
            out.push_str(c);
            out.push_str(&line[t.start..t.end]);
            out.push_str(RESET);
            at = t.end;
        }
    }
    out.push_str(&line[at..]);
    out
}

impl Highlighter for ShellHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        Cow::Owned(highlight_line(line))
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        Cow::Owned(format!("\x1b[2m{hint}{RESET}"))
    }

    fn highlight_char(&self, _line: &str, _pos: usize, _kind: CmdKind) -> bool {
        true
    }
}

impl Validator for ShellHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        Ok(
            if input.trim_start().starts_with(':') || lex::is_complete(input) {
                ValidationResult::Valid(None)
            } else {
                ValidationResult::Incomplete
            },
        )
    }
}

impl Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Known {
        Known {
            names: Names {
                traces: vec!["graph-1".into(), "mem0-0002-s7".into()],
                owners: vec!["mem0".into()],
                classes: vec!["message".into(), "prediction".into()],
                categories: vec!["memory_entry".into(), "message".into()],
                op_names: vec!["rag.answer".into()],
                op_kinds: vec!["extraction".into(), "retrieval".into()],
                case_patterns: vec!["evidence_deleted".into(), "stored_not_retrieved".into()],
            },
            params: vec!["start".into()],
            loading: false,
        }
    }

    fn done(line: &str) -> Vec<String> {
        let (start, found) = complete_statement(line, line.len(), &known());
        found
            .into_iter()
            .map(|p| format!("{}{}", &line[..start], p.replacement))
            .collect()
    }

    #[test]
    fn strings_complete_from_the_list_their_field_names() {
        assert_eq!(
            done("FIND vars WHERE var.category = 'mem"),
            vec!["FIND vars WHERE var.category = 'memory_entry'"]
        );
        assert_eq!(
            done("FIND ops WHERE op.kind IN ['ext"),
            vec!["FIND ops WHERE op.kind IN ['extraction'"]
        );
        assert_eq!(
            done("TRACE x IN TRACE 'me"),
            vec!["TRACE x IN TRACE 'mem0-0002-s7'"]
        );
        assert_eq!(
            done("FIND traces WHERE trace.project_id = '"),
            vec!["FIND traces WHERE trace.project_id = 'mem0'"]
        );
        // No field to go by: every name.
        assert!(done("FIND vars WHERE var.value CONTAINS 'r")
            .contains(&"FIND vars WHERE var.value CONTAINS 'rag.answer'".to_string()));
    }

    #[test]
    fn words_complete_keywords_fields_classes_and_parameters() {
        assert_eq!(done("tra"), vec!["trace", "trace.", "traces"]);
        assert_eq!(done("FIND vars WHE"), vec!["FIND vars WHERE"]);
        assert_eq!(
            done("FIND vars WHERE var.cat"),
            vec!["FIND vars WHERE var.category"]
        );
        assert_eq!(done("MATCH (m:mes"), vec!["MATCH (m:message"]);
        assert_eq!(done("MATCH (m)-[:re"), vec!["MATCH (m)-[:retrieval"]);
        assert_eq!(
            done("MATCH (m) RETURN m.full"),
            vec![
                "MATCH (m) RETURN m.full_name",
                "MATCH (m) RETURN m.full_node_id"
            ]
        );
        assert_eq!(done("TRACE pred"), vec!["TRACE prediction:"]);
        assert_eq!(
            done("ATTRIB"),
            vec!["ATTRIBUTE", "attribution.", "attributions"]
        );
        assert_eq!(
            done("ATTRIBUTE CA"),
            vec!["ATTRIBUTE CASES", "ATTRIBUTE case."]
        );
        assert_eq!(done("ATTRIBUTE CASES US"), vec!["ATTRIBUTE CASES USING"]);
        assert_eq!(
            done("attribute cases using ev"),
            vec!["attribute cases using evidence"]
        );
        assert_eq!(
            done("FIND attr"),
            vec!["FIND attribute", "FIND attribution.", "FIND attributions"]
        );
        assert_eq!(
            done("FIND attributions WHERE attribution.conf"),
            vec!["FIND attributions WHERE attribution.confidence"]
        );
        // A verdict has no meta. fields.
        assert_eq!(
            done("FIND attributions RETURN attribution.m"),
            vec![
                "FIND attributions RETURN attribution.method",
                "FIND attributions RETURN attribution.micros",
                "FIND attributions RETURN attribution.model"
            ]
        );
        assert_eq!(
            done("FIND attributions GROUP BY error_t"),
            vec!["FIND attributions GROUP BY error_type"]
        );
        assert_eq!(
            done("FIND attributions WHERE au"),
            vec!["FIND attributions WHERE author"]
        );
        // Elsewhere, attribution fields are not offered bare.
        assert!(done("FIND cases; FIND vars WHERE au").is_empty());
        assert_eq!(
            done("FIND attributions WHERE error_type = 'Ret"),
            vec!["FIND attributions WHERE error_type = 'RetrievalError'"]
        );
        assert_eq!(
            done("FIND cases WHERE case.error_type = 'Upd"),
            vec!["FIND cases WHERE case.error_type = 'UpdateError'"]
        );
        assert_eq!(
            done("FIND attributions WHERE attribution.method = '"),
            vec![
                "FIND attributions WHERE attribution.method = 'evidence'",
                "FIND attributions WHERE attribution.method = 'llm'",
                "FIND attributions WHERE attribution.method = 'hybrid'"
            ]
        );
        assert_eq!(done("TRACE $st"), vec!["TRACE $start"]);
        assert!(done("TRACE prediction:Q").is_empty());
        assert!(done("SHOW TRACES -- tra").is_empty());
    }

    #[test]
    fn an_attribute_subquery_completes_what_may_come_next_there() {
        assert_eq!(
            done("ATTRIBUTE ("),
            vec!["ATTRIBUTE (FIND", "ATTRIBUTE (RUN"]
        );
        assert_eq!(done("attribute (f"), vec!["attribute (find"]);
        assert_eq!(done("ATTRIBUTE (FIND "), vec!["ATTRIBUTE (FIND cases"]);
        assert_eq!(done("ATTRIBUTE (FIND ca"), vec!["ATTRIBUTE (FIND cases"]);
        assert!(done("ATTRIBUTE (FIND o").is_empty());
        assert_eq!(done("ATTRIBUTE (RUN "), vec!["ATTRIBUTE (RUN PATTERN"]);
        assert_eq!(
            done("ATTRIBUTE (RUN PATTERN "),
            vec![
                "ATTRIBUTE (RUN PATTERN evidence_deleted",
                "ATTRIBUTE (RUN PATTERN stored_not_retrieved"
            ]
        );
        assert_eq!(
            done("attribute (run pattern st"),
            vec!["attribute (run pattern stored_not_retrieved"]
        );
        // Inside the FIND, its own clauses and fields.
        assert_eq!(
            done("ATTRIBUTE (FIND cases WHE"),
            vec!["ATTRIBUTE (FIND cases WHERE"]
        );
        assert_eq!(
            done("ATTRIBUTE (FIND cases WHERE case.que"),
            vec![
                "ATTRIBUTE (FIND cases WHERE case.query_id",
                "ATTRIBUTE (FIND cases WHERE case.query"
            ]
        );
        assert_eq!(
            done("ATTRIBUTE (FIND cases WHERE trace.project_id = 'm"),
            vec!["ATTRIBUTE (FIND cases WHERE trace.project_id = 'mem0'"]
        );
        // Once the subquery is closed: USING, then the methods.
        assert_eq!(
            done("ATTRIBUTE (FIND cases WHERE (case.query CONTAINS 'a)') LIMIT 2) "),
            vec!["ATTRIBUTE (FIND cases WHERE (case.query CONTAINS 'a)') LIMIT 2) USING"]
        );
        assert_eq!(
            done("attribute (run pattern p) us"),
            vec!["attribute (run pattern p) using"]
        );
        assert_eq!(
            done("ATTRIBUTE (RUN PATTERN p) USING hy"),
            vec!["ATTRIBUTE (RUN PATTERN p) USING hybrid"]
        );
        // Not yet closed: anything that may go on inside.
        assert!(done("ATTRIBUTE (FIND cases WHERE (case.query = 'x') ")
            .contains(&"ATTRIBUTE (FIND cases WHERE (case.query = 'x') AND".to_string()));
        // In a later statement, nothing changes.
        assert_eq!(
            done("ATTRIBUTE (FIND cases) USING evidence; FIND ca"),
            vec![
                "ATTRIBUTE (FIND cases) USING evidence; FIND case.",
                "ATTRIBUTE (FIND cases) USING evidence; FIND cases"
            ]
        );
        assert_eq!(done("MATCH (m:mes"), vec!["MATCH (m:message"]);
    }

    #[test]
    fn commands_complete_their_names_and_arguments() {
        let files = FilenameCompleter::new();
        let k = known();
        let names = |line: &str| -> Vec<String> {
            let (start, found) = complete_meta(line, line.len(), &k, &files).unwrap();
            found
                .into_iter()
                .map(|p| format!("{}{}", &line[..start], p.replacement))
                .collect()
        };
        assert_eq!(names(":fo"), vec![":format"]);
        assert_eq!(names(":format j"), vec![":format json"]);
        assert_eq!(names(":timing o"), vec![":timing on", ":timing off"]);
        assert_eq!(names(":export gr"), vec![":export graph-1"]);
        assert_eq!(names(":help ma"), vec![":help match"]);
    }

    #[test]
    fn highlighting_colours_tokens_and_keeps_the_text() {
        let line = "TRACE answer:42 WHERE var.value = 'x' -- c";
        let h = highlight_line(line);
        assert!(h.contains("\x1b[1;34mTRACE\x1b[0m"));
        assert!(h.contains("\x1b[32m'x'\x1b[0m"));
        assert!(h.contains("\x1b[2m-- c\x1b[0m"));
        let plain = h
            .split('\x1b')
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part
                } else {
                    &part[part.find('m').map_or(0, |m| m + 1)..]
                }
            })
            .collect::<String>();
        assert_eq!(plain, line);
        assert!(highlight_line(":format json").starts_with("\x1b[33m:format\x1b[0m"));
    }
}
