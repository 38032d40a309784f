//! Rows handed out many at a time, column by column ([`Batch`]): what
//! [`Engine::query_batches`](crate::Engine::query_batches) hands to its
//! sink. A walk that returns nodes or ops hands out batches whose text columns
//! point into the trace's stored labels, each text looked up when read;
//! every other statement's rows are gathered into batches of owned values.

use memtrace_query::Value;
use memtrace_storage::{TextKind, TextRun, TextTable, TraceTexts};

use super::value::Cell;
use crate::error::Result;

/// Where batches go. Returning `false` stops the query early.
pub type BatchSink<'s> = dyn FnMut(&Batch<'_>) -> Result<bool> + 's;

/// One column of a [`Batch`].
#[derive(Debug, Clone, PartialEq)]
pub enum Column<'a> {
    /// Text borrowed from the trace (see [`TextColumn`]).
    Text(TextColumn<'a>),
    /// The same cell in every row.
    Same(Cell<'a>),
    /// A value per row, owned by the batch.
    Values(Vec<Value>),
    /// An integer per row, owned by the batch.
    Ints(Vec<i64>),
}

impl Column<'_> {
    /// Row `row`'s text, when it holds text (`None` for `NULL`, for any
    /// other value, and past the batch's rows).
    pub fn str(&self, row: usize) -> Option<&str> {
        match self {
            Column::Text(t) => t.str(row),
            Column::Same(cell) => cell.as_str(),
            Column::Values(values) => match values.get(row)? {
                Value::Str(s) => Some(s),
                _ => None,
            },
            Column::Ints(_) => None,
        }
    }

    /// Row `row`'s value (borrowed text is copied; `Null` past the batch's
    /// rows).
    pub fn value(&self, row: usize) -> Value {
        match self {
            Column::Text(t) => t
                .str(row)
                .map_or(Value::Null, |s| Value::Str(s.to_string())),
            Column::Same(cell) => cell.to_value(),
            Column::Values(values) => values.get(row).cloned().unwrap_or(Value::Null),
            Column::Ints(ints) => ints.get(row).map_or(Value::Null, |&n| Value::Int(n)),
        }
    }

    /// A text column's texts as one run (see [`TextColumn::joined`]);
    /// `None` for any other column.
    pub fn joined(&self) -> Option<TextRun<'_>> {
        match self {
            Column::Text(t) => t.joined(),
            _ => None,
        }
    }
}

/// A column of text borrowed from a trace's labels, one text or `NULL` a row.
/// The rows of a run of records (the ops of a level recorded one after the
/// other) are the run itself: making the column costs nothing per row, and
/// their ids, which follow each other in the labels, are one slice
/// ([`joined`](Self::joined)). Other rows are their records, each looked
/// up when read.
#[derive(Debug, Clone, PartialEq)]
pub struct TextColumn<'a> {
    /// The labels' texts of this column's kind.
    kind: TextKind<'a>,
    /// The rows: records `run.0..run.0 + run.1` of `table`, when a run;
    /// else `records`.
    run: Option<(u32, u32)>,
    records: Vec<u32>,
    /// The place of a row whose record has no text of this kind, or is
    /// past the labels (`None`: `NULL`). A row of [`NO_RECORD`] is `NULL`.
    absent: Option<[u32; 2]>,
}

/// The record of a [`TextColumn`] row that has none (a node reached by an
/// edge without an op): its text is `NULL`.
pub(super) const NO_RECORD: u32 = u32::MAX;

impl<'a> TextColumn<'a> {
    /// An empty column of texts of `kind`, a row whose record has no such
    /// text having the text `""` when `empty`, else `NULL`.
    fn new(kind: TextKind<'a>, empty: bool) -> Self {
        TextColumn {
            kind,
            run: None,
            records: Vec::new(),
            absent: empty.then_some([0, 0]),
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        match self.run {
            Some((_, n)) => n as usize,
            None => self.records.len(),
        }
    }

    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record of row `row`.
    #[inline]
    fn record(&self, row: usize) -> Option<u32> {
        match self.run {
            Some((first, n)) => u32::try_from(row)
                .ok()
                .filter(|&r| r < n)
                .map(|r| first + r),
            None => self.records.get(row).copied(),
        }
    }

    /// Where record `id`'s text lies in the labels' text of this kind.
    #[inline]
    fn place(&self, id: u32) -> Option<[u32; 2]> {
        if id == NO_RECORD {
            return None;
        }
        self.kind.range(id).flatten().or(self.absent)
    }

    /// Row `row`'s text (`None` for `NULL` and past the last row).
    pub fn str(&self, row: usize) -> Option<&'a str> {
        let [a, b] = self.place(self.record(row)?)?;
        self.kind.text().get(a as usize..b as usize)
    }

    /// Every row's text in order (`None` for `NULL`): what
    /// [`str`](Self::str) gives for each row.
    pub fn iter(&self) -> impl Iterator<Item = Option<&'a str>> + use<'_, 'a> {
        let text = self.kind.text();
        let (run, records) = match self.run {
            Some((lo, n)) => (lo..lo + n, &[][..]),
            None => (0..0, self.records.as_slice()),
        };
        run.chain(records.iter().copied()).map(move |id| {
            self.place(id)
                .and_then(|[a, b]| text.get(a as usize..b as usize))
        })
    }

    /// The column's texts as one run of the labels (one slice, and where
    /// each row's text ends in it), when the column holds ids (the labels'
    /// first kind) and its rows are consecutive records that each have
    /// one, as a level's run of ops is: a reader that copies the column
    /// then copies one slice and one list of ends. `None` otherwise (then
    /// read the rows one by one); an empty column of ids gives an empty
    /// run.
    pub fn joined(&self) -> Option<TextRun<'a>> {
        let (lo, n) = match self.run {
            Some(run) => run,
            None => {
                let consecutive = self
                    .records
                    .windows(2)
                    .all(|w| w[0].checked_add(1) == Some(w[1]));
                if !consecutive {
                    return None;
                }
                let lo = self.records.first().copied().unwrap_or(0);
                (lo, u32::try_from(self.records.len()).ok()?)
            }
        };
        self.kind.run(lo, lo.checked_add(n)?)
    }

    /// Makes the column the texts of records `lo..lo + n` of the labels,
    /// at no cost per row.
    fn set_run(&mut self, lo: u32, n: u32) {
        self.records.clear();
        self.run = Some((lo, n));
    }

    /// Makes the column the texts of records `ids`.
    fn set_records(&mut self, ids: &[u32]) {
        self.run = None;
        self.records.clear();
        self.records.extend_from_slice(ids);
    }
}

/// Rows borrowed many at a time, column by column: every column holds a cell
/// for each of [`len`](Self::len) rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch<'a> {
    len: usize,
    columns: Vec<Column<'a>>,
}

impl<'a> Batch<'a> {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The columns, in the statement's column order.
    pub fn columns(&self) -> &[Column<'a>] {
        &self.columns
    }

    /// Row `row`'s text in column `col` (see [`Column::str`]).
    pub fn str(&self, row: usize, col: usize) -> Option<&str> {
        self.columns.get(col)?.str(row)
    }

    /// Row `row` as owned values (borrowed text copied); `None` past the last
    /// row.
    pub fn row(&self, row: usize) -> Option<Vec<Value>> {
        (row < self.len).then(|| self.columns.iter().map(|c| c.value(row)).collect())
    }

    /// A batch of `width` columns gathering owned rows.
    fn owned(width: usize) -> Batch<'static> {
        Batch {
            len: 0,
            columns: (0..width).map(|_| Column::Values(Vec::new())).collect(),
        }
    }

    /// A `RETURN ops` batch: the graph id, then the ops' ids, names and
    /// kinds borrowed from `ops`, then their depth.
    pub(super) fn ops(gid: &'a str, ops: &'a TextTable<3>) -> Batch<'a> {
        // An op's id is `""` when it has none, as in an op row.
        let text = |k| match ops.kind(k) {
            Some(kind) => Column::Text(TextColumn::new(kind, k == 0)),
            None => Column::Same(Cell::Value(Value::Null)),
        };
        Batch {
            len: 0,
            columns: vec![
                Column::Same(Cell::Text(gid)),
                text(0),
                text(1),
                text(2),
                Column::Same(Cell::Value(Value::Int(0))),
            ],
        }
    }

    /// A `RETURN nodes` batch: the graph id, then the nodes' full ids and
    /// categories borrowed from `labels`, their depths, and the ids of the ops
    /// that reached them.
    pub(super) fn nodes(gid: &'a str, labels: &'a TraceTexts) -> Batch<'a> {
        // As in a node row: a node without an id has `""`, an op without
        // an id `""`, and a node reached by an edge without an op `NULL`.
        let text = |kind: Option<TextKind<'a>>, empty| match kind {
            Some(kind) => Column::Text(TextColumn::new(kind, empty)),
            None => Column::Same(Cell::Value(Value::Null)),
        };
        Batch {
            len: 0,
            columns: vec![
                Column::Same(Cell::Text(gid)),
                text(labels.vars.kind(0), true),
                text(labels.vars.kind(1), false),
                Column::Ints(Vec::new()),
                text(labels.ops.kind(0), true),
            ],
        }
    }

    /// Makes a [`nodes`](Self::nodes) batch the rows of `nodes`, node
    /// `nodes[i]` at depth `depths[i]` reached by op `via[i]` (or
    /// [`NO_RECORD`]).
    pub(super) fn set_nodes(&mut self, nodes: &[u32], depths: &[u32], via: &[u32]) {
        for (k, column) in self.columns.iter_mut().enumerate() {
            match column {
                Column::Text(t) if k == 4 => t.set_records(via),
                Column::Text(t) => t.set_records(nodes),
                Column::Ints(ints) => {
                    ints.clear();
                    ints.extend(depths.iter().map(|&d| i64::from(d)));
                }
                _ => {}
            }
        }
        self.len = nodes.len();
    }

    /// Makes an [`ops`](Self::ops) batch the rows of the `n` ops from
    /// `first` (see [`ops_run`]), all at `depth`, when the labels hold
    /// them: the rows cost nothing each. False, and the batch unchanged,
    /// otherwise.
    pub(super) fn set_ops_run(&mut self, first: u32, n: u32, depth: u32) -> bool {
        let in_labels = self.columns.iter().any(|c| match c {
            Column::Text(t) => first
                .checked_add(n)
                .is_some_and(|end| end as usize <= t.kind.len()),
            _ => false,
        });
        if n == 0 || !in_labels {
            return false;
        }
        for (k, column) in self.columns.iter_mut().enumerate() {
            match column {
                Column::Text(t) => t.set_run(first, n),
                at if k == 4 => *at = Column::Same(Cell::Value(Value::from(depth))),
                _ => {}
            }
        }
        self.len = n as usize;
        true
    }

    /// Makes an [`ops`](Self::ops) batch the rows of `ops`, op `ops[i]`
    /// at depth `depths[i]`, each looked up in the labels: the same cells
    /// as an op row (an op without labels has the id `""` and no name or
    /// kind).
    pub(super) fn set_ops(&mut self, ops: &[u32], depths: &[u32]) {
        for (k, column) in self.columns.iter_mut().enumerate() {
            match column {
                Column::Text(t) => t.set_records(ops),
                Column::Ints(ints) if k == 4 => {
                    ints.clear();
                    ints.extend(depths.iter().map(|&d| i64::from(d)));
                }
                _ if k == 4 => {
                    *column = Column::Ints(depths.iter().map(|&d| i64::from(d)).collect());
                }
                _ => {}
            }
        }
        self.len = ops.len();
    }
}

/// `ops` (distinct, in order) as a run of records, `(first, count)`, when
/// they are every id from the first to the last (a level's new ops often
/// are: recorded one after the other); `None` otherwise, and for no ops.
pub(super) fn ops_run(ops: &[u32]) -> Option<(u32, u32)> {
    let (&first, &last) = (ops.first()?, ops.last()?);
    let n = u32::try_from(ops.len()).ok()?;
    (last.wrapping_sub(first).wrapping_add(1) == n).then_some((first, n))
}

/// Where an executor that hands out batches sends them: its rows, gathered
/// into owned batches, and batches made whole by a walk.
pub(super) trait BatchOut {
    /// One row, gathered into the next owned batch; false once the sink
    /// wants no more.
    fn row(&mut self, row: &mut [Cell<'_>]) -> Result<bool>;
    /// A whole batch, after the rows gathered before it; false once the
    /// sink wants no more.
    fn batch(&mut self, batch: &Batch<'_>) -> Result<bool>;
}

/// Rows gathered into owned batches of up to [`Gather::ROWS`] for a
/// [`BatchSink`].
pub(super) struct Gather<'s, 'k> {
    held: Batch<'static>,
    sink: &'s mut BatchSink<'k>,
    /// The sink answered false.
    stopped: bool,
}

impl<'s, 'k> Gather<'s, 'k> {
    /// Rows an owned batch holds before it goes to the sink.
    pub(super) const ROWS: usize = 1024;

    /// Gathers rows of `width` columns for `sink`.
    pub(super) fn new(width: usize, sink: &'s mut BatchSink<'k>) -> Self {
        Gather {
            held: Batch::owned(width),
            sink,
            stopped: false,
        }
    }

    /// Hands the rows gathered so far to the sink.
    pub(super) fn flush(&mut self) -> Result<bool> {
        if self.stopped {
            return Ok(false);
        }
        if self.held.is_empty() {
            return Ok(true);
        }
        let go_on = (self.sink)(&self.held)?;
        for c in &mut self.held.columns {
            if let Column::Values(v) = c {
                v.clear();
            }
        }
        self.held.len = 0;
        self.stopped = !go_on;
        Ok(go_on)
    }
}

impl BatchOut for Gather<'_, '_> {
    fn row(&mut self, row: &mut [Cell<'_>]) -> Result<bool> {
        if self.stopped {
            return Ok(false);
        }
        if row.len() != self.held.columns.len() {
            // A row of another width (no statement makes one) starts a
            // batch of its own width.
            self.flush()?;
            self.held = Batch::owned(row.len());
        }
        for (cell, column) in row.iter_mut().zip(&mut self.held.columns) {
            if let Column::Values(v) = column {
                v.push(cell.take());
            }
        }
        self.held.len += 1;
        if self.held.len >= Self::ROWS {
            return self.flush();
        }
        Ok(true)
    }

    fn batch(&mut self, batch: &Batch<'_>) -> Result<bool> {
        if !self.flush()? {
            return Ok(false);
        }
        let go_on = (self.sink)(batch)?;
        self.stopped = !go_on;
        Ok(go_on)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int_row(i: i64) -> Vec<Cell<'static>> {
        vec![Cell::Value(Value::Int(i)), Cell::Text("lent")]
    }

    #[test]
    fn rows_are_gathered_into_full_batches_then_the_rest() {
        let mut seen: Vec<(usize, Vec<Value>)> = Vec::new();
        let mut sink = |b: &Batch<'_>| -> Result<bool> {
            for i in 0..b.len() {
                seen.push((b.len(), b.row(i).unwrap()));
            }
            assert!(b.row(b.len()).is_none());
            Ok(true)
        };
        let mut g = Gather::new(2, &mut sink);
        let n = Gather::ROWS + 3;
        for i in 0..n {
            assert!(g.row(&mut int_row(i as i64)).unwrap());
        }
        assert!(g.flush().unwrap());
        assert_eq!(seen.len(), n);
        for (i, (len, row)) in seen.iter().enumerate() {
            let expected = if i < Gather::ROWS { Gather::ROWS } else { 3 };
            assert_eq!(*len, expected);
            assert_eq!(row, &vec![Value::Int(i as i64), Value::Str("lent".into())]);
        }
    }

    #[test]
    fn a_sink_that_wants_no_more_gets_no_more() {
        let mut calls = 0;
        let mut sink = |_: &Batch<'_>| -> Result<bool> {
            calls += 1;
            Ok(false)
        };
        let mut g = Gather::new(2, &mut sink);
        for i in 0..Gather::ROWS - 1 {
            assert!(g.row(&mut int_row(i as i64)).unwrap());
        }
        // The row that fills the batch sends it, and the sink says stop.
        assert!(!g.row(&mut int_row(0)).unwrap());
        assert!(!g.row(&mut int_row(0)).unwrap());
        let whole = Batch::owned(2);
        assert!(!g.batch(&whole).unwrap());
        assert!(!g.flush().unwrap());
        drop(g);
        assert_eq!(calls, 1);
    }

    #[test]
    fn gathered_rows_go_before_a_whole_batch() {
        let mut order = Vec::new();
        let mut sink = |b: &Batch<'_>| -> Result<bool> {
            order.push(b.str(0, 1).map(str::to_string));
            Ok(true)
        };
        let mut table = TextTable::<3>::default();
        assert!(table.push([Some("op-a"), Some("name"), None]));
        assert!(table.push([Some("op-b"), None, Some("kind")]));
        let mut ops = Batch::ops("g", &table);
        assert!(ops.set_ops_run(0, 2, 2));
        let mut g = Gather::new(5, &mut sink);
        let mut row = [
            Cell::Text("g"),
            Cell::Text("row"),
            Cell::Value(Value::Null),
            Cell::Value(Value::Null),
            Cell::Value(Value::Int(1)),
        ];
        assert!(g.row(&mut row).unwrap());
        assert!(g.batch(&ops).unwrap());
        assert!(g.flush().unwrap());
        drop(g);
        assert_eq!(order, [Some("row".to_string()), Some("op-a".to_string())]);
    }

    #[test]
    fn a_nodes_batch_lends_ids_and_categories_and_the_op_that_reached_each() {
        let mut labels = TraceTexts::default();
        assert!(labels.vars.push([Some("v:a@1"), Some("query")]));
        assert!(labels.vars.push([Some("v:b@1"), None]));
        assert!(labels.ops.push([Some("op-1"), Some("n"), Some("k")]));
        let mut b = Batch::nodes("g", &labels);
        b.set_nodes(&[1, 0, 9], &[1, 2, 3], &[0, NO_RECORD, 5]);
        let rows: Vec<Vec<Value>> = (0..b.len()).map(|i| b.row(i).unwrap()).collect();
        let text = |s: &str| Value::Str(s.into());
        assert_eq!(
            rows,
            [
                vec![
                    text("g"),
                    text("v:b@1"),
                    Value::Null,
                    Value::Int(1),
                    text("op-1")
                ],
                // Reached by an edge without an op: no via.
                vec![
                    text("g"),
                    text("v:a@1"),
                    text("query"),
                    Value::Int(2),
                    Value::Null
                ],
                // A node and an op past the labels: empty ids, no category.
                vec![text("g"), text(""), Value::Null, Value::Int(3), text("")],
            ]
        );
        b.set_nodes(&[0], &[4], &[0]);
        assert_eq!(b.len(), 1);
        assert_eq!(b.str(0, 1), Some("v:a@1"));
        assert_eq!(b.columns()[3], Column::Ints(vec![4]));
    }

    #[test]
    fn an_ops_batch_lends_the_labels_and_joins_a_run_of_ids() {
        let mut table = TextTable::<3>::default();
        for (id, name) in [("a", Some("n0")), ("bb", None), ("ccc", Some("n2"))] {
            assert!(table.push([Some(id), name, Some("k")]));
        }
        let mut b = Batch::ops("g1", &table);
        // Past the labels: not a run, looked up one by one.
        assert!(!b.set_ops_run(0, 8, 3));
        assert!(!b.set_ops_run(u32::MAX, 2, 3));
        assert!(!b.set_ops_run(0, 0, 3));
        assert!(b.is_empty());
        b.set_ops(&[0, 1, 2, 7], &[3; 4]);
        assert_eq!(b.len(), 4);
        assert_eq!(
            b.row(1).unwrap(),
            [
                Value::Str("g1".into()),
                Value::Str("bb".into()),
                Value::Null,
                Value::Str("k".into()),
                Value::Int(3),
            ]
        );
        // An op past the labels: id "", no name or kind.
        assert_eq!(b.str(3, 1), Some(""));
        assert_eq!(b.str(3, 2), None);
        // The unknown op's empty id is not where the run ends: not joined.
        assert!(b.columns()[1].joined().is_none());
        let looked_up: Vec<_> = (0..3).map(|i| b.row(i).unwrap()).collect();
        // The same ops as a run: the same rows.
        assert!(b.set_ops_run(0, 3, 3));
        assert_eq!(
            (0..3).map(|i| b.row(i).unwrap()).collect::<Vec<_>>(),
            looked_up
        );
        assert!(b.row(3).is_none() && b.str(3, 1).is_none());
        let run = b.columns()[1].joined().unwrap();
        assert_eq!(
            (run.text(), run.ends().collect::<Vec<_>>()),
            ("abbccc", vec![1, 3, 6])
        );
        let Column::Text(names) = &b.columns()[2] else {
            panic!("names are not text")
        };
        assert_eq!(
            names.iter().collect::<Vec<_>>(),
            [Some("n0"), None, Some("n2")]
        );
        // Names are looked up one by one: only ids are borrowed as a run.
        assert!(b.columns()[2].joined().is_none());
        assert!(b.columns()[0].joined().is_none());
        // Ops with a gap are no run; looked up, the ids are still one run
        // when each op follows the one before.
        assert_eq!(ops_run(&[0, 2]), None);
        assert_eq!(ops_run(&[]), None);
        assert_eq!(ops_run(&[4, 5, 6]), Some((4, 3)));
        b.set_ops(&[0, 2], &[1, 1]);
        assert!(b.columns()[1].joined().is_none());
        assert_eq!((b.str(0, 1), b.str(1, 1)), (Some("a"), Some("ccc")));
        assert_eq!((b.str(0, 2), b.str(1, 2)), (Some("n0"), Some("n2")));
        assert_eq!(b.str(2, 1), None);
        assert_eq!(b.row(0).unwrap()[4], Value::Int(1));
        b.set_ops(&[1, 2], &[1, 2]);
        let run = b.columns()[1].joined().unwrap();
        assert_eq!(
            (run.text(), run.ends().collect::<Vec<_>>()),
            ("bbccc", vec![2, 5])
        );
        // No rows: an empty run.
        b.set_ops(&[], &[]);
        let run = b.columns()[1].joined().unwrap();
        assert_eq!((run.text(), run.len()), ("", 0));
        for k in 1..4 {
            let Column::Text(t) = &b.columns()[k] else {
                panic!("column {k} is not text")
            };
            let by_row: Vec<_> = (0..b.len()).map(|i| t.str(i)).collect();
            assert_eq!(t.iter().collect::<Vec<_>>(), by_row);
            assert_eq!(t.len(), b.len());
        }
        // Rows looked up after a run, each at its depth.
        assert!(b.set_ops_run(0, 2, 4));
        assert_eq!(b.columns()[4], Column::Same(Cell::Value(Value::Int(4))));
        b.set_ops(&[0, 1, 2], &[4, 4, 5]);
        let rows: Vec<(Option<&str>, Value)> = (0..b.len())
            .map(|i| (b.str(i, 1), b.columns()[4].value(i)))
            .collect();
        assert_eq!(
            rows,
            [
                (Some("a"), Value::Int(4)),
                (Some("bb"), Value::Int(4)),
                (Some("ccc"), Value::Int(5))
            ]
        );
    }
}
