//! The report as Markdown: an overall table, then a section per system with
//! its tables and its failure patterns with examples.

use std::fmt::{self, Write as _};

use super::text::{
    golds, label_text, md, md_cut, percent, scope, score, utc, CASES_NOTE, MAX_STEPS,
};
use super::types::{Example, Pattern, Report, Summary, NO_OP};
use crate::attrib::ErrorType;

impl Report {
    /// The report as Markdown: an overall table, then a section per system
    /// with its tables and its failure patterns with examples.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = self.write_markdown(&mut out);
        out
    }

    fn write_markdown(&self, out: &mut String) -> fmt::Result {
        writeln!(out, "# memtrace diagnostic report\n")?;
        writeln!(out, "- Database: {}", md(&self.database))?;
        writeln!(
            out,
            "- Method: {} (version {})",
            md(&self.method),
            md(&self.method_version)
        )?;
        writeln!(out, "- Traces: {}", md(&scope(self)))?;
        writeln!(out, "- Generated: {}\n", utc(self.generated_at_ms))?;
        writeln!(out, "{CASES_NOTE}\n")?;

        writeln!(out, "## Overall\n")?;
        write!(
            out,
            "| system | traces | failed | attributed | undecided | not attributed |"
        )?;
        for t in ErrorType::ALL {
            write!(out, " {t} |")?;
        }
        writeln!(out, " error-type accuracy | op-id match |")?;
        writeln!(out, "|---|{}", "---:|".repeat(12))?;
        let rows = self.systems.iter().map(|s| (md(&s.system), s));
        for (name, s) in rows.chain(std::iter::once(("**all**".into(), &self.overall))) {
            write!(
                out,
                "| {name} | {} | {} | {} | {} | {} |",
                s.traces, s.failed, s.attributed, s.undecided, s.not_attributed
            )?;
            for c in &s.by_error_type {
                write!(out, " {} |", c.cases)?;
            }
            writeln!(
                out,
                " {} | {} |",
                score(s.accuracy.type_correct, s.accuracy.scored),
                score(s.accuracy.op_correct, s.accuracy.op_labelled)
            )?;
        }
        writeln!(out)?;
        writeln!(out, "### Top failure patterns (all systems)\n")?;
        md_patterns_table(out, &self.overall)?;
        if !self.overall.patterns.is_empty() {
            writeln!(out, "Examples are under each system.\n")?;
        }
        for s in &self.systems {
            md_system(out, s, self.written_by.as_deref())?;
        }
        Ok(())
    }
}

fn md_patterns_table(out: &mut String, s: &Summary) -> fmt::Result {
    if s.patterns.is_empty() {
        return writeln!(out, "No attributed case names an error type.\n");
    }
    writeln!(
        out,
        "| # | error type | faulty op | cases | share of decided |"
    )?;
    writeln!(out, "|---:|---|---|---:|---:|")?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            i + 1,
            p.error_type,
            md(&p.op_name),
            p.cases,
            percent(p.cases, s.decided())
        )?;
    }
    writeln!(out)
}

fn md_system(out: &mut String, s: &Summary, written_by: Option<&str>) -> fmt::Result {
    writeln!(out, "## System: {}\n", md(&s.system))?;
    if let Some(text) = &s.written {
        writeln!(
            out,
            "### Written summary\n\n*Written by the model {}, from the figures and examples \
             below; check it against them.*\n",
            md(written_by.unwrap_or("?"))
        )?;
        for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
            writeln!(out, "> {}\n", md_cut(&para.replace('\n', " "), 4000))?;
        }
    }
    writeln!(out, "| measure | value |\n|---|---:|")?;
    writeln!(out, "| traces | {} |", s.traces)?;
    writeln!(out, "| failed cases | {} |", s.failed)?;
    writeln!(
        out,
        "| attributed | {} ({}) |",
        s.attributed,
        percent(s.attributed, s.failed)
    )?;
    writeln!(out, "| undecided | {} |", s.undecided)?;
    writeln!(out, "| not attributed | {} |\n", s.not_attributed)?;

    md_error_types(out, s)?;
    md_faulty_ops(out, s)?;
    md_accuracy(out, s)?;
    md_patterns(out, s)
}

/// The table of the system's decided cases by error type.
fn md_error_types(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "### Error types\n")?;
    writeln!(
        out,
        "| error type | cases | share of decided |\n|---|---:|---:|"
    )?;
    for c in &s.by_error_type {
        writeln!(
            out,
            "| {} | {} | {} |",
            c.error_type,
            c.cases,
            percent(c.cases, s.decided())
        )?;
    }
    writeln!(out)
}

/// The table of the system's decided cases by faulty op.
fn md_faulty_ops(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "### Faulty ops\n")?;
    if s.by_op.is_empty() {
        writeln!(out, "No attributed case names an error type.\n")?;
    } else {
        writeln!(out, "| op | cases | share of decided |\n|---|---:|---:|")?;
        for o in &s.by_op {
            writeln!(
                out,
                "| {} | {} | {} |",
                md(&o.op_name),
                o.cases,
                percent(o.cases, s.decided())
            )?;
        }
        if s.other_ops > 0 {
            writeln!(
                out,
                "| (other ops) | {} | {} |",
                s.other_ops,
                percent(s.other_ops, s.decided())
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// How well the verdicts match the labels the traces carry.
fn md_accuracy(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "### Accuracy against labels\n")?;
    let a = &s.accuracy;
    if a.labelled == 0 {
        write!(
            out,
            "No case of this system is labelled with a memory error type."
        )?;
    } else {
        writeln!(out, "| measure | value |\n|---|---:|")?;
        writeln!(out, "| labelled cases | {} |", a.labelled)?;
        writeln!(out, "| labelled and attributed | {} |", a.scored)?;
        writeln!(
            out,
            "| error-type accuracy | {} |",
            score(a.type_correct, a.scored)
        )?;
        write!(
            out,
            "| op-id exact match | {} |",
            score(a.op_correct, a.op_labelled)
        )?;
    }
    if a.non_memory > 0 {
        write!(
            out,
            "\n\n{} case(s) with a label that is not a memory error type are left out.",
            a.non_memory
        )?;
    }
    writeln!(out, "\n")
}

/// The most common failure patterns, each with its examples.
fn md_patterns(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "### Top failure patterns\n")?;
    md_patterns_table(out, s)?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "#### {}. {} at {}: {} case(s)\n",
            i + 1,
            p.error_type,
            md(&p.op_name),
            p.cases
        )?;
        for (j, ex) in p.examples.iter().enumerate() {
            md_example(out, p, j, ex)?;
        }
    }
    Ok(())
}

fn md_example(out: &mut String, p: &Pattern, j: usize, ex: &Example) -> fmt::Result {
    writeln!(out, "Example {} of {}:\n", j + 1, p.examples.len())?;
    writeln!(out, "| field | value |\n|---|---|")?;
    writeln!(out, "| trace | {} (#{}) |", md(&ex.graph_id), ex.trace)?;
    writeln!(out, "| case | {} |", md(&ex.case))?;
    writeln!(out, "| query | {} |", md(&ex.query))?;
    writeln!(out, "| gold | {} |", md(&golds(&ex.gold)))?;
    writeln!(out, "| prediction | {} |", md(&ex.prediction))?;
    writeln!(
        out,
        "| verdict | {} at {} ({}), confidence {:.2} |",
        p.error_type,
        md(ex.op_id.as_deref().unwrap_or(NO_OP)),
        md(&ex.op_name),
        ex.confidence
    )?;
    writeln!(out, "| reason | {} |", md(&ex.reason))?;
    if let Some(label) = &ex.label {
        writeln!(
            out,
            "| label | {} |",
            md(&label_text(label, ex, p.error_type))
        )?;
    }
    writeln!(out)?;
    if ex.chain.is_empty() {
        return writeln!(out, "The verdict records no evidence chain.\n");
    }
    writeln!(out, "Evidence chain:\n")?;
    writeln!(
        out,
        "| step | op id | op | variable | what |\n|---:|---|---|---|---|"
    )?;
    for (k, step) in ex.chain.iter().take(MAX_STEPS).enumerate() {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            k + 1,
            md(&step.op_id),
            md(&step.op_name),
            md(&step.var),
            md(&step.what)
        )?;
    }
    if ex.chain.len() > MAX_STEPS {
        writeln!(
            out,
            "| … | {} more steps | | | |",
            ex.chain.len() - MAX_STEPS
        )?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use crate::attrib::Method;
    use crate::prelude::*;
    use crate::report::test_support::fixture;

    #[test]
    fn markdown_has_the_tables_and_examples_with_cells_escaped() {
        let (_dir, db) = fixture();
        let text = db.report(Method::Evidence, None).unwrap().markdown();
        assert!(text.starts_with("# memtrace diagnostic report\n"), "{text}");
        assert!(text.contains("- Method: evidence (version 2)"), "{text}");
        assert!(
            text.contains("| mem0 | 1 | 4 | 4 | 1 | 0 | 2 | 1 | 0 | 0 | 0 | – | – |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| rag | 1 | 4 | 3 | 0 | 1 | 0 | 0 | 0 | 3 | 0 | 66.7% (2/3) | 66.7% (2/3) |"
            ),
            "{text}"
        );
        assert!(text.contains("| **all** | 2 | 8 | 7 | 1 | 1 |"), "{text}");
        assert!(text.contains("## System: rag"), "{text}");
        assert!(
            text.contains("| 1 | RetrievalError | memory.search | 3 | 100% |"),
            "{text}"
        );
        assert!(
            text.contains("#### 1. RetrievalError at memory.search: 3 case(s)"),
            "{text}"
        );
        assert!(
            text.contains("| reason | held \\| then<br>lost |"),
            "{text}"
        );
        assert!(text.contains("| 2 | "), "{text}");
        assert!(text.contains("| left out |"), "{text}");
        assert!(text.contains("RetrievalError at"), "{text}");
        assert!(text.contains("(type agrees, op agrees)"), "{text}");
        assert!(text.contains("(type differs, op differs)"), "{text}");
        assert!(
            text.contains("1 case(s) with a label that is not a memory error type"),
            "{text}"
        );
        assert!(
            text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{text}"
        );
        assert!(!text.contains("<script"), "{text}");
        // Every table row has as many cells as its header.
        for block in text.split("\n\n") {
            let rows: Vec<&str> = block.lines().filter(|l| l.starts_with('|')).collect();
            if let Some(head) = rows.first() {
                let cells = |l: &str| l.replace("\\|", "").matches('|').count();
                assert!(rows.iter().all(|r| cells(r) == cells(head)), "{block}");
            }
        }
    }
}
