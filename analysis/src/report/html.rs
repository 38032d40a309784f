//! The report as one self-contained HTML page: inline CSS and SVG charts, no
//! scripts, nothing loaded from elsewhere, every value escaped.

use std::fmt::{self, Write as _};

use super::charts::{
    bar_chart, colours, legend, stacked_chart, Bar, NOT_ATTRIBUTED, OP_BAR, UNDECIDED,
};
use super::text::{
    cut, esc, golds, hv, label_text, percent, scope, score, utc, CASES_NOTE, MAX_STEPS,
};
use super::types::{Example, Pattern, Report, Summary, NO_OP};
use crate::attrib::ErrorType;

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#1a1a1a;line-height:1.4}\
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}\
table{border-collapse:collapse;margin:.6em 0 1.2em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}\
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}\
.meta{color:#444}.note{color:#555;font-size:.9em}\
svg.chart{display:block;max-width:100%;height:auto;margin:.4em 0 1em;font-size:12px}svg.chart{fill:#1a1a1a}svg.chart text.in{font-size:11px}svg.chart text.small{font-size:11px;fill:#444}\
.legend span{display:inline-block;margin-right:1.2em}i.sw{display:inline-block;width:.9em;height:.9em;margin-right:.35em;border:1px solid #555;vertical-align:-.1em}\
details{border:1px solid #ddd;border-radius:4px;padding:.4em .8em;margin:.4em 0}summary{cursor:pointer}\
dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dt{font-weight:600}dd{margin:0;white-space:pre-wrap;word-break:break-word}\
code{background:#f3f3f3;padding:0 .2em}ol.chain li{margin:.15em 0}";

impl Report {
    /// The report as one self-contained HTML page: inline CSS and SVG
    /// charts, no scripts, nothing loaded from elsewhere. Every value from
    /// the data is escaped.
    pub fn html(&self) -> String {
        let mut out = String::new();
        // Writing to a String does not fail.
        let _ = self.write_html(&mut out);
        out
    }

    fn write_html(&self, out: &mut String) -> fmt::Result {
        writeln!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
        )?;
        writeln!(
            out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        )?;
        writeln!(
            out,
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        )?;
        writeln!(out, "<title>memtrace report: {}</title>", esc(&self.method))?;
        writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>")?;
        writeln!(out, "<h1>memtrace diagnostic report</h1>")?;
        writeln!(
            out,
            "<p class=\"meta\">Database <code>{}</code> · method <b>{}</b> (version {}) · traces: {} · generated {}</p>",
            hv(&self.database),
            esc(&self.method),
            esc(&self.method_version),
            hv(&scope(self)),
            utc(self.generated_at_ms)
        )?;
        writeln!(out, "<p class=\"note\">{}</p>", esc(CASES_NOTE))?;
        if !self.systems.is_empty() {
            write!(out, "<p>Systems:")?;
            for (i, s) in self.systems.iter().enumerate() {
                write!(out, " <a href=\"#system-{}\">{}</a>", i + 1, hv(&s.system))?;
            }
            writeln!(out, "</p>")?;
        }

        writeln!(out, "<h2>Overall</h2>")?;
        writeln!(out, "{}", legend())?;
        writeln!(out, "{}", stacked_chart(&self.systems))?;
        self.html_overview(out)?;
        writeln!(out, "<h3>Top failure patterns (all systems)</h3>")?;
        html_patterns_table(out, &self.overall)?;
        for (i, s) in self.systems.iter().enumerate() {
            html_system(out, i + 1, s, self.written_by.as_deref())?;
        }
        writeln!(out, "</body>\n</html>")
    }

    fn html_overview(&self, out: &mut String) -> fmt::Result {
        write!(
            out,
            "<table>\n<tr><th>system</th><th class=\"n\">traces</th><th class=\"n\">failed</th><th class=\"n\">attributed</th><th class=\"n\">undecided</th><th class=\"n\">not attributed</th>"
        )?;
        for t in ErrorType::ALL {
            write!(out, "<th class=\"n\">{t}</th>")?;
        }
        writeln!(
            out,
            "<th class=\"n\">error-type accuracy</th><th class=\"n\">op-id match</th></tr>"
        )?;
        let rows = self.systems.iter().map(|s| (hv(&s.system), s));
        for (name, s) in rows.chain(std::iter::once(("<b>all</b>".into(), &self.overall))) {
            write!(
                out,
                "<tr><td>{name}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                s.traces, s.failed, s.attributed, s.undecided, s.not_attributed
            )?;
            for c in &s.by_error_type {
                write!(out, "<td class=\"n\">{}</td>", c.cases)?;
            }
            writeln!(
                out,
                "<td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                score(s.accuracy.type_correct, s.accuracy.scored),
                score(s.accuracy.op_correct, s.accuracy.op_labelled)
            )?;
        }
        writeln!(out, "</table>")
    }
}

fn html_patterns_table(out: &mut String, s: &Summary) -> fmt::Result {
    if s.patterns.is_empty() {
        return writeln!(out, "<p>No attributed case names an error type.</p>");
    }
    writeln!(
        out,
        "<table>\n<tr><th class=\"n\">#</th><th>error type</th><th>faulty op</th><th class=\"n\">cases</th><th class=\"n\">share of decided</th></tr>"
    )?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "<tr><td class=\"n\">{}</td><td><i class=\"sw\" style=\"background:{}\"></i>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            i + 1,
            colours(p.error_type).0,
            p.error_type,
            hv(&p.op_name),
            p.cases,
            percent(p.cases, s.decided())
        )?;
    }
    writeln!(out, "</table>")
}

fn html_system(out: &mut String, n: usize, s: &Summary, written_by: Option<&str>) -> fmt::Result {
    writeln!(out, "<h2 id=\"system-{n}\">System: {}</h2>", hv(&s.system))?;
    if let Some(text) = &s.written {
        writeln!(
            out,
            "<h3>Written summary</h3>\n<p class=\"note\">Written by the model {}, from the \
             figures and examples below; check it against them.</p>",
            hv(written_by.unwrap_or("?"))
        )?;
        for para in text.split("\n\n").filter(|p| !p.trim().is_empty()) {
            writeln!(out, "<blockquote>{}</blockquote>", esc(&cut(para, 4000)))?;
        }
    }
    writeln!(
        out,
        "<table>\n<tr><th>traces</th><th>failed cases</th><th>attributed</th><th>undecided</th><th>not attributed</th></tr>\n<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} ({})</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n</table>",
        s.traces,
        s.failed,
        s.attributed,
        percent(s.attributed, s.failed),
        s.undecided,
        s.not_attributed
    )?;

    html_error_types(out, s)?;
    html_faulty_ops(out, s)?;
    html_accuracy(out, s)?;
    html_patterns(out, s)
}

/// The chart of the system's cases by error type, with the cases left without one.
fn html_error_types(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "<h3>Error types</h3>")?;
    let mut bars: Vec<Bar> = s
        .by_error_type
        .iter()
        .map(|c| Bar {
            label: c.error_type.name().into(),
            count: c.cases,
            colour: colours(c.error_type),
        })
        .collect();
    if s.undecided > 0 {
        bars.push(Bar {
            label: "undecided".into(),
            count: s.undecided,
            colour: UNDECIDED,
        });
    }
    if s.not_attributed > 0 {
        bars.push(Bar {
            label: "not attributed".into(),
            count: s.not_attributed,
            colour: NOT_ATTRIBUTED,
        });
    }
    writeln!(
        out,
        "{}",
        bar_chart(&format!("Error types of {}", cut(&s.system, 60)), &bars)
    )
}

/// The chart of the system's cases by faulty op.
fn html_faulty_ops(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "<h3>Faulty ops</h3>")?;
    if s.by_op.is_empty() {
        writeln!(out, "<p>No attributed case names an error type.</p>")?;
    } else {
        let mut bars: Vec<Bar> = s
            .by_op
            .iter()
            .map(|o| Bar {
                label: o.op_name.clone(),
                count: o.cases,
                colour: OP_BAR,
            })
            .collect();
        if s.other_ops > 0 {
            bars.push(Bar {
                label: "(other ops)".into(),
                count: s.other_ops,
                colour: OP_BAR,
            });
        }
        writeln!(
            out,
            "{}",
            bar_chart(&format!("Faulty ops of {}", cut(&s.system, 60)), &bars)
        )?;
    }
    Ok(())
}

/// How well the verdicts match the labels the traces carry.
fn html_accuracy(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "<h3>Accuracy against labels</h3>")?;
    let a = &s.accuracy;
    if a.labelled == 0 {
        writeln!(
            out,
            "<p>No case of this system is labelled with a memory error type.</p>"
        )?;
    } else {
        writeln!(
            out,
            "<table>\n<tr><th>labelled cases</th><th>labelled and attributed</th><th>error-type accuracy</th><th>op-id exact match</th></tr>\n<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n</table>",
            a.labelled,
            a.scored,
            score(a.type_correct, a.scored),
            score(a.op_correct, a.op_labelled)
        )?;
    }
    if a.non_memory > 0 {
        writeln!(
            out,
            "<p class=\"note\">{} case(s) with a label that is not a memory error type are left out.</p>",
            a.non_memory
        )?;
    }
    Ok(())
}

/// The most common failure patterns, each with its examples.
fn html_patterns(out: &mut String, s: &Summary) -> fmt::Result {
    writeln!(out, "<h3>Top failure patterns</h3>")?;
    html_patterns_table(out, s)?;
    for (i, p) in s.patterns.iter().enumerate() {
        writeln!(
            out,
            "<h4>{}. {} at {}: {} case(s)</h4>",
            i + 1,
            p.error_type,
            hv(&p.op_name),
            p.cases
        )?;
        for ex in &p.examples {
            html_example(out, p, ex)?;
        }
    }
    Ok(())
}

fn html_example(out: &mut String, p: &Pattern, ex: &Example) -> fmt::Result {
    writeln!(
        out,
        "<details>\n<summary>{} <span class=\"note\">({} #{}, {})</span></summary>\n<dl>",
        esc(&cut(&ex.query, 120)),
        hv(&ex.graph_id),
        ex.trace,
        hv(&ex.case)
    )?;
    let mut field = |name: &str, value: &str| writeln!(out, "<dt>{name}</dt><dd>{value}</dd>");
    field("query", &hv(&ex.query))?;
    field("gold", &hv(&golds(&ex.gold)))?;
    field("prediction", &hv(&ex.prediction))?;
    field(
        "verdict",
        &format!(
            "{} at <code>{}</code> ({}), confidence {:.2}",
            p.error_type,
            hv(ex.op_id.as_deref().unwrap_or(NO_OP)),
            hv(&ex.op_name),
            ex.confidence
        ),
    )?;
    field("reason", &hv(&ex.reason))?;
    if let Some(label) = &ex.label {
        field("label", &hv(&label_text(label, ex, p.error_type)))?;
    }
    writeln!(out, "</dl>")?;
    if ex.chain.is_empty() {
        writeln!(
            out,
            "<p class=\"note\">The verdict records no evidence chain.</p>"
        )?;
    } else {
        writeln!(out, "<p>Evidence chain:</p>\n<ol class=\"chain\">")?;
        for step in ex.chain.iter().take(MAX_STEPS) {
            writeln!(
                out,
                "<li><b>{}</b> by <code>{}</code> ({}) on <code>{}</code></li>",
                hv(&step.what),
                hv(&step.op_id),
                hv(&step.op_name),
                hv(&step.var)
            )?;
        }
        if ex.chain.len() > MAX_STEPS {
            writeln!(out, "<li>… {} more steps</li>", ex.chain.len() - MAX_STEPS)?;
        }
        writeln!(out, "</ol>")?;
    }
    writeln!(out, "</details>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrib::Method;
    use crate::prelude::*;
    use crate::report::test_support::fixture;

    #[test]
    fn html_is_self_contained_with_every_value_escaped() {
        let (_dir, db) = fixture();
        let html = db.report(Method::Evidence, None).unwrap().html();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(
            !html.contains("http://") && !html.contains("https://"),
            "{html}"
        );
        assert!(
            !html.contains("src=") && !html.contains("@import"),
            "{html}"
        );
        // Charts: the stacked overview and two per system, with counts in text.
        assert_eq!(html.matches("<svg").count(), 5, "{html}");
        assert!(
            html.contains("RetrievalError 3 · not attributed 1"),
            "{html}"
        );
        assert!(html.contains(">memory.search</text>"), "{html}");
        // The same colour for an error type everywhere, and in the legend.
        let retrieval = colours(ErrorType::RetrievalError).0;
        assert!(html.contains(&format!(
            "<span><i class=\"sw\" style=\"background:{retrieval}\"></i>RetrievalError</span>"
        )));
        assert!(html.contains(&format!(
            "<td><i class=\"sw\" style=\"background:{retrieval}\"></i>RetrievalError</td>"
        )));
        assert!(html.matches(&format!("fill=\"{retrieval}\"")).count() >= 3);
        // Examples fold out, with their chain as a list.
        assert_eq!(html.matches("<details>").count(), 6, "{html}");
        assert!(
            html.contains("<ol class=\"chain\">\n<li><b>held</b> by <code>"),
            "{html}"
        );
        assert!(html.contains("held | then\nlost"), "{html}");
    }
}
