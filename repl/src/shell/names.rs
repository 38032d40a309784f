//! The names in the open database that the shell completes: trace ids,
//! users and systems, class names, variable categories, op names and kinds,
//! and the patterns whose hits are failed cases.

use std::collections::BTreeSet;

use memtrace::attrib::{ErrorType, Method};
use memtrace::engine::Engine;
use memtrace::prelude::*;
use memtrace::{Cancel, Params, Result};

/// Distinct names found in the database, each list sorted. A name that holds
/// a control character is left out: it could not be typed, and completing it
/// would put the character into the line being edited.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Names {
    /// Graph ids of the traces.
    pub traces: Vec<String>,
    /// `user_id`s and `project_id`s (the memory systems) of the traces.
    pub owners: Vec<String>,
    /// Class names of variables (`message`, `prediction`, ...).
    pub classes: Vec<String>,
    /// Categories of variables (`memory_entry`, ...).
    pub categories: Vec<String>,
    /// Names of ops (`rag.answer`, ...).
    pub op_names: Vec<String>,
    /// Kinds (categories) of ops (`extraction`, `retrieval`, ...).
    pub op_kinds: Vec<String>,
    /// Patterns whose hits are failed cases, which `ATTRIBUTE (RUN PATTERN
    /// ...)` takes: the built-in ones that follow the evidence, and the
    /// saved ones whose statement is a FIND cases.
    pub case_patterns: Vec<String>,
}

/// Which list a completion draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// Trace graph ids.
    Traces,
    /// Users and systems.
    Owners,
    /// Class names.
    Classes,
    /// Variable categories.
    Categories,
    /// Op names.
    OpNames,
    /// Op kinds.
    OpKinds,
    /// Patterns whose hits are failed cases (not part of `Any`).
    CasePatterns,
    /// The error types of the taxonomy (not from the database).
    ErrorTypes,
    /// The attribution methods (not from the database).
    Methods,
    /// All the names from the database.
    Any,
}

impl Names {
    /// Reads the names from `db`; stops with `Cancelled` when `cancel` is set.
    pub fn load(db: &Engine, cancel: &Cancel) -> Result<Names> {
        let mut names = Names::default();
        let mut owners = BTreeSet::new();
        for t in db.traces()? {
            names.traces.push(t.graph_id);
            owners.extend(t.user_id);
            owners.extend(t.project_id);
        }
        names.owners = owners.into_iter().collect();
        names.traces.sort();
        let pairs = |text: &str| -> Result<(Vec<String>, Vec<String>)> {
            let r = db.query_with(text, &Params::new(), cancel)?;
            let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
            for row in r.rows {
                if let Some(s) = row.first().and_then(|v| v.as_str()) {
                    a.insert(s.to_string());
                }
                if let Some(s) = row.get(1).and_then(|v| v.as_str()) {
                    b.insert(s.to_string());
                }
            }
            Ok((a.into_iter().collect(), b.into_iter().collect()))
        };
        (names.classes, names.categories) =
            pairs("FIND vars GROUP BY var.class, var.category RETURN var.class, var.category")?;
        (names.op_names, names.op_kinds) =
            pairs("FIND ops GROUP BY op.name, op.kind RETURN op.name, op.kind")?;
        // A saved statement is stored in its canonical form.
        names.case_patterns = db
            .patterns()?
            .into_iter()
            .filter(|p| {
                if p.builtin {
                    p.error_type.is_some()
                } else {
                    p.definition.starts_with("FIND cases")
                }
            })
            .map(|p| p.name)
            .collect();
        for list in [
            &mut names.traces,
            &mut names.owners,
            &mut names.classes,
            &mut names.categories,
            &mut names.op_names,
            &mut names.op_kinds,
            &mut names.case_patterns,
        ] {
            list.retain(|n| !n.chars().any(memtrace_table::is_hidden));
        }
        Ok(names)
    }

    /// The names of one list (`Any`: every list, without repeats).
    pub fn list(&self, which: List) -> Vec<&str> {
        let all = [
            &self.traces,
            &self.owners,
            &self.classes,
            &self.categories,
            &self.op_names,
            &self.op_kinds,
        ];
        let pick: Vec<&Vec<String>> = match which {
            List::Traces => vec![&self.traces],
            List::Owners => vec![&self.owners],
            List::Classes => vec![&self.classes],
            List::Categories => vec![&self.categories],
            List::OpNames => vec![&self.op_names],
            List::OpKinds => vec![&self.op_kinds],
            List::CasePatterns => vec![&self.case_patterns],
            List::ErrorTypes => {
                return ErrorType::ALL.iter().map(|t| t.name()).collect();
            }
            List::Methods => return Method::ALL.iter().map(|m| m.name()).collect(),
            List::Any => all.to_vec(),
        };
        let set: BTreeSet<&str> = pick.into_iter().flatten().map(String::as_str).collect();
        set.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::opening::open(dir.path().join("db")).unwrap();
        db.import_reader(
            crate::transfer::SAMPLE.as_bytes(),
            memtrace::InputFormat::Json,
            "sample",
            &Default::default(),
        )
        .unwrap();
        db.save_pattern("mine", "FIND cases LIMIT 1", &[], "test")
            .unwrap();
        db.save_pattern(
            "judges",
            "FIND ops WHERE op.name = 'llm-judge'",
            &[],
            "test",
        )
        .unwrap();
        let n = Names::load(&db, &Cancel::new()).unwrap();
        assert_eq!(
            n.list(List::CasePatterns),
            [
                "evidence_deleted",
                "evidence_never_stored",
                "mine",
                "retrieved_answered_wrong",
                "stored_not_retrieved",
                "stored_then_overwritten"
            ]
        );
        assert_eq!(n.traces, vec!["graph-e02a1f3b041740d5b82569831ef2d06e"]);
        assert!(n.owners.contains(&"memtrace-demo".to_string()));
        assert!(n.classes.contains(&"prompt".to_string()), "{:?}", n.classes);
        assert!(n.op_names.contains(&"rag.answer".to_string()));
        assert!(!n.op_kinds.is_empty() && !n.categories.is_empty());
        let any = n.list(List::Any);
        assert!(any.contains(&"rag.answer") && any.contains(&"prompt"));
        assert!(any.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
        let cancel = Cancel::new();
        cancel.cancel();
        assert!(Names::load(&db, &cancel).is_err());
    }
}
