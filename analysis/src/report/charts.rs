//! The SVG charts of the HTML report: horizontal bars, one stacked bar per
//! system, and the legend of the error types' colours.

use std::fmt::Write as _;

use super::text::{cut, esc, MAX_CHARS};
use super::types::Summary;
use crate::attrib::ErrorType;

/// Fill and text colour of an error type (Okabe–Ito, safe for colour-blind readers).
pub(super) fn colours(t: ErrorType) -> (&'static str, &'static str) {
    match t {
        ErrorType::ExtractionError => ("#E69F00", "#000000"),
        ErrorType::UpdateError => ("#56B4E9", "#000000"),
        ErrorType::DeletionError => ("#D55E00", "#FFFFFF"),
        ErrorType::RetrievalError => ("#0072B2", "#FFFFFF"),
        ErrorType::ResponseError => ("#CC79A7", "#000000"),
    }
}

pub(super) const UNDECIDED: (&str, &str) = ("#999999", "#000000");
pub(super) const NOT_ATTRIBUTED: (&str, &str) = ("#E8E8E8", "#000000");
pub(super) const OP_BAR: (&str, &str) = ("#4D4D4D", "#FFFFFF");

/// One bar or bar segment: label, count, fill and text colour.
pub(super) struct Bar {
    pub(super) label: String,
    pub(super) count: usize,
    pub(super) colour: (&'static str, &'static str),
}

const CHART_W: f64 = 720.0;
const LABEL_W: f64 = 210.0;
const BAR_W: f64 = 400.0;

/// A horizontal bar chart, one bar per row, each labelled with its count.
pub(super) fn bar_chart(title: &str, bars: &[Bar]) -> String {
    let row = 24.0;
    let height = bars.len() as f64 * row + 8.0;
    let max = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {CHART_W} {height}\" width=\"{CHART_W}\" height=\"{height}\" role=\"img\" aria-label=\"{t}\"><title>{t}</title>",
        t = esc(title)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = 4.0 + i as f64 * row;
        let w = (b.count as f64 / max * BAR_W).max(if b.count > 0 { 1.0 } else { 0.0 });
        let _ = write!(
            out,
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{label}</text>\
             <rect x=\"{LABEL_W}\" y=\"{ry}\" width=\"{w:.1}\" height=\"{h}\" fill=\"{fill}\" stroke=\"#555\" stroke-width=\"0.5\"><title>{full}: {n}</title></rect>\
             <text x=\"{cx:.1}\" y=\"{ty}\">{n}</text>",
            lx = LABEL_W - 8.0,
            ty = y + 15.0,
            label = esc(&cut(&b.label, 30)),
            ry = y + 3.0,
            h = row - 8.0,
            fill = b.colour.0,
            full = esc(&cut(&b.label, MAX_CHARS)),
            n = b.count,
            cx = LABEL_W + w + 6.0,
        );
    }
    out.push_str("</svg>");
    out
}

/// One stacked bar per system: its failed cases by error type, undecided
/// and not attributed, with the counts written out under each bar.
pub(super) fn stacked_chart(systems: &[Summary]) -> String {
    let row = 44.0;
    let height = systems.len() as f64 * row + 8.0;
    let max = systems.iter().map(|s| s.failed).max().unwrap_or(0).max(1) as f64;
    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {CHART_W} {height}\" width=\"{CHART_W}\" height=\"{height}\" role=\"img\" aria-label=\"Failed cases per system by error type\"><title>Failed cases per system by error type</title>"
    );
    for (i, s) in systems.iter().enumerate() {
        let y = 4.0 + i as f64 * row;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            LABEL_W - 8.0,
            y + 15.0,
            esc(&cut(&s.system, 30))
        );
        let mut parts: Vec<Bar> = s
            .by_error_type
            .iter()
            .map(|c| Bar {
                label: c.error_type.name().into(),
                count: c.cases,
                colour: colours(c.error_type),
            })
            .collect();
        parts.push(Bar {
            label: "undecided".into(),
            count: s.undecided,
            colour: UNDECIDED,
        });
        parts.push(Bar {
            label: "not attributed".into(),
            count: s.not_attributed,
            colour: NOT_ATTRIBUTED,
        });
        let mut x = LABEL_W;
        let mut words = Vec::new();
        for p in parts.iter().filter(|p| p.count > 0) {
            let w = p.count as f64 / max * BAR_W;
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"16\" fill=\"{}\" stroke=\"#555\" stroke-width=\"0.5\"><title>{}: {}</title></rect>",
                y + 3.0,
                p.colour.0,
                esc(&p.label),
                p.count
            );
            if w >= 22.0 {
                let _ = write!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{}\" class=\"in\">{}</text>",
                    x + w / 2.0,
                    y + 15.0,
                    p.colour.1,
                    p.count
                );
            }
            x += w;
            words.push(format!("{} {}", p.label, p.count));
        }
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{} failed</text>",
            x + 6.0,
            y + 15.0,
            s.failed
        );
        let words = if words.is_empty() {
            "no failed cases".to_string()
        } else {
            words.join(" · ")
        };
        let _ = write!(
            out,
            "<text x=\"{LABEL_W}\" y=\"{:.1}\" class=\"small\">{}</text>",
            y + 32.0,
            esc(&words)
        );
    }
    out.push_str("</svg>");
    out
}

pub(super) fn legend() -> String {
    let mut out = String::from("<p class=\"legend\">");
    let mut item = |name: &str, fill: &str| {
        let _ = write!(
            out,
            "<span><i class=\"sw\" style=\"background:{fill}\"></i>{}</span>",
            esc(name)
        );
    };
    for t in ErrorType::ALL {
        item(t.name(), colours(t).0);
    }
    item("undecided", UNDECIDED.0);
    item("not attributed", NOT_ATTRIBUTED.0);
    out.push_str("</p>");
    out
}
