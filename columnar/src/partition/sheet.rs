//! The four result tables of a partition and the batch builder they share:
//! each table's columns are written down once, here, and its schema is
//! made from that list.

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{ColumnarError, Result};

/// The type of a result column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// UTF-8 text.
    Text,
    /// A 64-bit integer.
    Int,
    /// A 64-bit float.
    Float,
    /// A list of UTF-8 texts.
    TextList,
}

/// The columns every table starts with: where the row came from, its trace
/// and its memory system.
const HEAD: [(&str, Kind); 3] = [
    ("source", Kind::Text),
    ("graph_id", Kind::Text),
    ("project_id", Kind::Text),
];

/// The column every table ends with: why the trace has no results.
const ERROR: (&str, Kind) = ("error", Kind::Text);

/// The columns of the verdicts table, between the head and `error`.
const VERDICTS: &[(&str, Kind)] = &[
    ("case_id", Kind::Text),
    ("query", Kind::Text),
    ("prediction", Kind::Text),
    ("method", Kind::Text),
    ("version", Kind::Text),
    ("model", Kind::Text),
    ("setting", Kind::Text),
    ("error_type", Kind::Text),
    ("op_id", Kind::Text),
    ("op_name", Kind::Text),
    ("op_kind", Kind::Text),
    ("confidence", Kind::Float),
    ("reason", Kind::Text),
    ("chain", Kind::Text),
    ("llm_calls", Kind::Int),
    ("tokens_in", Kind::Int),
    ("tokens_out", Kind::Int),
];

/// The columns of the pattern hits table, between the head and `error`.
const HITS: &[(&str, Kind)] = &[
    ("pattern", Kind::Text),
    ("pattern_error_type", Kind::Text),
    ("hit", Kind::Int),
    ("row", Kind::Text),
];

/// The columns of the cases table, between the head and `error`.
const CASES: &[(&str, Kind)] = &[
    ("case_id", Kind::Text),
    ("origin", Kind::Text),
    ("judge_op_id", Kind::Text),
    ("query_id", Kind::Text),
    ("query", Kind::Text),
    ("golden_answers", Kind::TextList),
    ("prediction", Kind::Text),
    ("judge_response", Kind::Text),
    ("source_evidence_ids", Kind::TextList),
    ("final_error_type", Kind::Text),
    ("final_op_id", Kind::Text),
];

/// The columns of the per-trace statistics table, between the head and `error`.
const STATS: &[(&str, Kind)] = &[
    ("user_id", Kind::Text),
    ("created_at", Kind::Text),
    ("format", Kind::Text),
    ("source_bytes", Kind::Int),
    ("sessions", Kind::Int),
    ("variables", Kind::Int),
    ("ops", Kind::Int),
    ("edges", Kind::Int),
    ("cases", Kind::Int),
    ("failed_cases", Kind::Int),
];

/// One of the tables a partition function gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Output {
    /// One row per failed case: its verdict.
    Verdicts,
    /// One row per hit of a failure pattern.
    PatternHits,
    /// One row per failed case, as `FIND cases` lists it.
    Cases,
    /// One row per trace: what it holds.
    Stats,
}

impl Output {
    /// Every table.
    pub const ALL: [Output; 4] = [
        Output::Verdicts,
        Output::PatternHits,
        Output::Cases,
        Output::Stats,
    ];

    /// The table's name.
    pub fn name(self) -> &'static str {
        match self {
            Output::Verdicts => "verdicts",
            Output::PatternHits => "pattern_hits",
            Output::Cases => "cases",
            Output::Stats => "stats",
        }
    }

    /// The columns between the head and `error`.
    fn body(self) -> &'static [(&'static str, Kind)] {
        match self {
            Output::Verdicts => VERDICTS,
            Output::PatternHits => HITS,
            Output::Cases => CASES,
            Output::Stats => STATS,
        }
    }

    /// Every column, in order.
    fn columns(self) -> impl Iterator<Item = (&'static str, Kind)> {
        HEAD.into_iter()
            .chain(self.body().iter().copied())
            .chain(std::iter::once(ERROR))
    }

    /// The table's schema. Only `source` is never null: an error row holds
    /// no more than its source, maybe its trace, and the error.
    pub fn schema(self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns()
            .map(|(name, kind)| Field::new(name, data_type(kind), name != "source"))
            .collect();
        Arc::new(Schema::new(fields))
    }
}

impl std::str::FromStr for Output {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Output, String> {
        Output::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Output::ALL.iter().map(|o| o.name()).collect();
                format!("no result table {s} (one of {})", names.join(", "))
            })
    }
}

fn data_type(kind: Kind) -> DataType {
    match kind {
        Kind::Text => DataType::Utf8,
        Kind::Int => DataType::Int64,
        Kind::Float => DataType::Float64,
        Kind::TextList => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
    }
}

/// One value of a row.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cell<'a> {
    /// No value.
    Null,
    /// Text.
    Text(&'a str),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A list of texts.
    List(&'a [String]),
}

impl<'a> From<Option<&'a str>> for Cell<'a> {
    fn from(v: Option<&'a str>) -> Cell<'a> {
        v.map_or(Cell::Null, Cell::Text)
    }
}

impl<'a> From<&'a str> for Cell<'a> {
    fn from(v: &'a str) -> Cell<'a> {
        Cell::Text(v)
    }
}

impl From<i64> for Cell<'_> {
    fn from(v: i64) -> Self {
        Cell::Int(v)
    }
}

impl From<u64> for Cell<'_> {
    fn from(v: u64) -> Self {
        Cell::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<u32> for Cell<'_> {
    fn from(v: u32) -> Self {
        Cell::Int(i64::from(v))
    }
}

/// Whether a value can go in a column of `kind` (null goes anywhere).
fn fits(kind: Kind, cell: Cell<'_>) -> bool {
    matches!(
        (kind, cell),
        (_, Cell::Null)
            | (Kind::Text, Cell::Text(_))
            | (Kind::Int, Cell::Int(_))
            | (Kind::Float, Cell::Float(_))
            | (Kind::TextList, Cell::List(_))
    )
}

/// A column being built.
enum Builder {
    Text(StringBuilder),
    Int(Int64Builder),
    Float(Float64Builder),
    TextList(ListBuilder<StringBuilder>),
}

impl Builder {
    fn new(kind: Kind) -> Builder {
        match kind {
            Kind::Text => Builder::Text(StringBuilder::new()),
            Kind::Int => Builder::Int(Int64Builder::new()),
            Kind::Float => Builder::Float(Float64Builder::new()),
            Kind::TextList => Builder::TextList(ListBuilder::new(StringBuilder::new())),
        }
    }

    /// Appends a value of the column's type (see [`fits`]).
    fn append(&mut self, cell: Cell<'_>) {
        match (self, cell) {
            (Builder::Text(b), Cell::Null) => b.append_null(),
            (Builder::Int(b), Cell::Null) => b.append_null(),
            (Builder::Float(b), Cell::Null) => b.append_null(),
            (Builder::TextList(b), Cell::Null) => b.append(false),
            (Builder::Text(b), Cell::Text(s)) => b.append_value(s),
            (Builder::Int(b), Cell::Int(n)) => b.append_value(n),
            (Builder::Float(b), Cell::Float(x)) => b.append_value(x),
            (Builder::TextList(b), Cell::List(items)) => {
                for s in items {
                    b.values().append_value(s);
                }
                b.append(true);
            }
            // `fits` refused it before; nothing is appended.
            _ => {}
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Text(b) => Arc::new(b.finish()),
            Builder::Int(b) => Arc::new(b.finish()),
            Builder::Float(b) => Arc::new(b.finish()),
            Builder::TextList(b) => Arc::new(b.finish()),
        }
    }
}

/// The rows of one result table, built a row at a time.
pub(crate) struct Sheet {
    output: Output,
    builders: Vec<Builder>,
}

impl Sheet {
    /// An empty table.
    pub(crate) fn new(output: Output) -> Sheet {
        Sheet {
            output,
            builders: output.columns().map(|(_, k)| Builder::new(k)).collect(),
        }
    }

    /// Appends a row: the head's three cells, the body's, and no error.
    pub(crate) fn row(&mut self, head: [Cell<'_>; 3], body: &[Cell<'_>]) -> Result<()> {
        let body_len = self.output.body().len();
        if body.len() != body_len {
            return Err(self.mismatch(format!(
                "a row of {} value(s) for {body_len} column(s)",
                body.len()
            )));
        }
        let cells = head
            .into_iter()
            .chain(body.iter().copied())
            .chain(std::iter::once(Cell::Null));
        self.append(cells)
    }

    /// Appends an error row: its source, its trace and system when known,
    /// and the error; every other column null.
    pub(crate) fn error(
        &mut self,
        source: &str,
        graph_id: Option<&str>,
        project_id: Option<&str>,
        message: &str,
    ) -> Result<()> {
        let body = vec![Cell::Null; self.output.body().len()];
        let cells = [Cell::Text(source), graph_id.into(), project_id.into()]
            .into_iter()
            .chain(body)
            .chain(std::iter::once(Cell::Text(message)));
        self.append(cells)
    }

    fn append<'a>(&mut self, cells: impl Iterator<Item = Cell<'a>>) -> Result<()> {
        let cells: Vec<Cell<'a>> = cells.collect();
        // Checked before anything is appended, so a refused row leaves no column longer.
        for ((name, kind), cell) in self.output.columns().zip(&cells) {
            if !fits(kind, *cell) {
                return Err(self.mismatch(format!(
                    "column {name} got a value of another type ({cell:?})"
                )));
            }
        }
        for (b, cell) in self.builders.iter_mut().zip(cells) {
            b.append(cell);
        }
        Ok(())
    }

    fn mismatch(&self, what: String) -> ColumnarError {
        ColumnarError::BadInput(format!("table {}: {what}", self.output.name()))
    }

    /// The rows as one batch of the table's schema.
    pub(crate) fn finish(mut self) -> Result<RecordBatch> {
        let arrays: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect();
        RecordBatch::try_new(self.output.schema(), arrays).map_err(|source| ColumnarError::Arrow {
            table: self.output.name(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    #[test]
    fn every_table_starts_with_its_source_trace_and_system_and_ends_with_the_error() {
        for o in Output::ALL {
            let s = o.schema();
            let names: Vec<&str> = s.fields().iter().map(|f| f.name().as_str()).collect();
            assert_eq!(&names[..3], ["source", "graph_id", "project_id"], "{o:?}");
            assert_eq!(names.last(), Some(&"error"), "{o:?}");
            assert_eq!(o.name().parse::<Output>(), Ok(o));
            let mut seen = std::collections::HashSet::new();
            assert!(
                names.iter().all(|n| seen.insert(*n)),
                "{o:?}: a column twice"
            );
        }
        assert!("verdict"
            .parse::<Output>()
            .unwrap_err()
            .contains("verdicts"));
    }

    #[test]
    fn rows_and_error_rows_fill_their_columns() {
        let mut sheet = Sheet::new(Output::PatternHits);
        sheet
            .row(
                ["a.json".into(), Some("g").into(), Cell::Null],
                &["p".into(), Cell::Null, 3_i64.into(), "{}".into()],
            )
            .unwrap();
        sheet
            .error("b.json", None, None, "b.json: not JSON")
            .unwrap();
        let b = sheet.finish().unwrap();
        assert_eq!(b.num_rows(), 2);
        let text = |c: &str, i: usize| {
            let a = b.column_by_name(c).unwrap().as_string::<i32>();
            a.is_valid(i).then(|| a.value(i).to_string())
        };
        assert_eq!(text("graph_id", 0).as_deref(), Some("g"));
        assert_eq!(text("project_id", 0), None);
        assert_eq!(text("error", 0), None);
        assert_eq!(text("source", 1).as_deref(), Some("b.json"));
        assert_eq!(text("pattern", 1), None);
        assert_eq!(text("error", 1).as_deref(), Some("b.json: not JSON"));
        let hit = b.column_by_name("hit").unwrap().as_primitive::<Int64Type>();
        assert_eq!((hit.value(0), hit.is_null(1)), (3, true));
    }

    #[test]
    fn a_row_of_the_wrong_shape_is_an_error_not_a_panic() {
        let mut sheet = Sheet::new(Output::PatternHits);
        let short = sheet.row(["a".into(), Cell::Null, Cell::Null], &["p".into()]);
        assert!(short.unwrap_err().to_string().contains("1 value(s) for 4"));
        let typed = sheet.row(
            ["a".into(), Cell::Null, Cell::Null],
            &["p".into(), Cell::Null, "not a number".into(), Cell::Null],
        );
        assert!(typed.unwrap_err().to_string().contains("column hit"));
    }
}
