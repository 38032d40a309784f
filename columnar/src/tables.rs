//! The seven tables and how one trace's records become an Arrow batch of
//! each. A table's schema is the schema of its batch, so the columns and
//! their types are written down once, in the builder functions below.

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use memtrace_analysis::attrib::{CaseOrigin, FailedCase, StoredVerdict};
use memtrace_engine::{Case, Edge, Operation, Session, TraceInfo, Variable};
use serde_json::Value;

use crate::error::{ColumnarError, Result};

/// One of the exported tables; each is a folder of Parquet files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// One row per trace.
    Traces,
    /// One row per session.
    Sessions,
    /// One row per variable version (the graph's nodes).
    Nodes,
    /// One row per dependency edge.
    Edges,
    /// One row per operation.
    Ops,
    /// One row per failed case (what `FIND cases` lists).
    Cases,
    /// One row per stored verdict (what `FIND attributions` lists).
    Verdicts,
}

impl Table {
    /// Every table, in the order they are written.
    pub const ALL: [Table; 7] = [
        Table::Traces,
        Table::Sessions,
        Table::Nodes,
        Table::Edges,
        Table::Ops,
        Table::Cases,
        Table::Verdicts,
    ];

    /// The table's name, which is also its folder's.
    pub fn name(self) -> &'static str {
        match self {
            Table::Traces => "traces",
            Table::Sessions => "sessions",
            Table::Nodes => "nodes",
            Table::Edges => "edges",
            Table::Ops => "ops",
            Table::Cases => "cases",
            Table::Verdicts => "verdicts",
        }
    }

    /// The table's full schema (before a partition column is moved into
    /// folder names).
    pub fn schema(self) -> SchemaRef {
        let empty = TraceRecords::default();
        let info = TraceInfo::default();
        // Building from no records cannot fail; the schema is the batch's.
        match empty.batch(self, &info) {
            Ok(b) => b.schema(),
            Err(_) => Arc::new(Schema::empty()),
        }
    }
}

/// Everything exported of one trace, read from the database.
#[derive(Debug, Default)]
pub struct TraceRecords {
    /// Its sessions.
    pub sessions: Vec<Session>,
    /// Its variable versions, with their values.
    pub variables: Vec<Variable>,
    /// Its edges.
    pub edges: Vec<Edge>,
    /// Its operations.
    pub ops: Vec<Operation>,
    /// Its failed cases.
    pub failed: Vec<FailedCase>,
    /// Its stored annotations (for the labels of the failed cases that
    /// come from them).
    pub annotations: Vec<Case>,
    /// Its stored verdicts, oldest first.
    pub verdicts: Vec<StoredVerdict>,
    /// The trace's header as stored (JSON text).
    pub header: String,
}

/// Columns gathered one at a time, each with its field.
struct Columns {
    table: Table,
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl Columns {
    fn new(table: Table) -> Columns {
        Columns {
            table,
            fields: Vec::new(),
            arrays: Vec::new(),
        }
    }

    fn push(mut self, name: &str, nullable: bool, array: ArrayRef) -> Columns {
        self.fields
            .push(Field::new(name, array.data_type().clone(), nullable));
        self.arrays.push(array);
        self
    }

    /// A text column that is never null.
    fn text<'a>(self, name: &str, values: impl Iterator<Item = &'a str>) -> Columns {
        let a = StringArray::from_iter_values(values);
        self.push(name, false, Arc::new(a))
    }

    /// A text column that may be null.
    fn opt_text<'a>(self, name: &str, values: impl Iterator<Item = Option<&'a str>>) -> Columns {
        let a: StringArray = values.collect();
        self.push(name, true, Arc::new(a))
    }

    /// A text column of owned strings that is never null.
    fn owned_text(self, name: &str, values: impl Iterator<Item = String>) -> Columns {
        let a = StringArray::from_iter_values(values);
        self.push(name, false, Arc::new(a))
    }

    /// A 64-bit integer column that is never null.
    fn int(self, name: &str, values: impl Iterator<Item = i64>) -> Columns {
        let a = Int64Array::from_iter_values(values);
        self.push(name, false, Arc::new(a))
    }

    /// A 64-bit integer column that may be null.
    fn opt_int(self, name: &str, values: impl Iterator<Item = Option<i64>>) -> Columns {
        let a: Int64Array = values.collect();
        self.push(name, true, Arc::new(a))
    }

    /// A float column that may be null.
    fn opt_float(self, name: &str, values: impl Iterator<Item = Option<f64>>) -> Columns {
        let a: Float64Array = values.collect();
        self.push(name, true, Arc::new(a))
    }

    /// A float column that is never null.
    fn float(self, name: &str, values: impl Iterator<Item = f64>) -> Columns {
        let a = Float64Array::from_iter_values(values);
        self.push(name, false, Arc::new(a))
    }

    /// A boolean column that may be null.
    fn opt_bool(self, name: &str, values: impl Iterator<Item = Option<bool>>) -> Columns {
        let a: BooleanArray = values.collect();
        self.push(name, true, Arc::new(a))
    }

    /// A UTC timestamp column in milliseconds, never null.
    fn time_ms(self, name: &str, values: impl Iterator<Item = i64>) -> Columns {
        let a = TimestampMillisecondArray::from_iter_values(values).with_timezone("UTC");
        self.push(name, false, Arc::new(a))
    }

    /// A column of lists of text, never null (an empty list instead).
    fn text_lists<'a, L>(self, name: &str, lists: impl Iterator<Item = L>) -> Columns
    where
        L: IntoIterator<Item = &'a String>,
    {
        let mut b = ListBuilder::new(StringBuilder::new()).with_field(Field::new(
            "item",
            DataType::Utf8,
            false,
        ));
        for list in lists {
            for s in list {
                b.values().append_value(s);
            }
            b.append(true);
        }
        self.push(name, false, Arc::new(b.finish()))
    }

    fn finish(self) -> Result<RecordBatch> {
        let table = self.table.name();
        let schema = Arc::new(Schema::new(self.fields));
        RecordBatch::try_new(schema, self.arrays)
            .map_err(|source| ColumnarError::Arrow { table, source })
    }
}

/// A JSON value as compact JSON text.
fn json_text(v: &Value) -> String {
    v.to_string()
}

/// The trace id as the tables store it.
fn trace_col(c: Columns, info: &TraceInfo, rows: usize) -> Columns {
    c.int("trace", std::iter::repeat_n(i64::from(info.id), rows))
        .text(
            "graph_id",
            std::iter::repeat_n(info.graph_id.as_str(), rows),
        )
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl TraceRecords {
    /// The batch of `table` for this trace.
    pub fn batch(&self, table: Table, info: &TraceInfo) -> Result<RecordBatch> {
        match table {
            Table::Traces => self.traces(info),
            Table::Sessions => self.sessions(info),
            Table::Nodes => self.nodes(info),
            Table::Edges => self.edges(info),
            Table::Ops => self.ops(info),
            Table::Cases => self.cases(info),
            Table::Verdicts => self.verdicts(info),
        }
    }

    fn traces(&self, info: &TraceInfo) -> Result<RecordBatch> {
        // The empty records (for the schema) give no trace row.
        let rows = usize::from(!info.graph_id.is_empty());
        fn one<T: Clone>(rows: usize) -> impl Fn(T) -> std::iter::RepeatN<T> {
            move |x| std::iter::repeat_n(x, rows)
        }
        let c = &info.counts;
        trace_col(Columns::new(Table::Traces), info, rows)
            .opt_text("user_id", one(rows)(info.user_id.as_deref()))
            .opt_text("project_id", one(rows)(info.project_id.as_deref()))
            .opt_text("created_at", one(rows)(info.created_at.as_deref()))
            .text("format", one(rows)(info.format.as_str()))
            .text("source", one(rows)(info.source.as_str()))
            .int("source_bytes", one(rows)(clamp(info.source_bytes)))
            .time_ms("imported_at", one(rows)(clamp(info.imported_at_ms)))
            .int("sessions", one(rows)(i64::from(c.sessions)))
            .int("variables", one(rows)(i64::from(c.variables)))
            .int("ops", one(rows)(i64::from(c.ops)))
            .int("edges", one(rows)(i64::from(c.edges)))
            .int("cases", one(rows)(i64::from(c.cases)))
            .text("header", one(rows)(self.header.as_str()))
            .finish()
    }

    fn sessions(&self, info: &TraceInfo) -> Result<RecordBatch> {
        let s = &self.sessions;
        trace_col(Columns::new(Table::Sessions), info, s.len())
            .int("id", s.iter().map(|x| i64::from(x.id)))
            .text("session_id", s.iter().map(|x| x.session_id.as_str()))
            .opt_text("session_name", s.iter().map(|x| x.session_name.as_deref()))
            .opt_text("category", s.iter().map(|x| x.category.as_deref()))
            .opt_text("comment", s.iter().map(|x| x.comment.as_deref()))
            .opt_text("created_at", s.iter().map(|x| x.created_at.as_deref()))
            .owned_text("metadata", s.iter().map(|x| json_text(&x.metadata)))
            .finish()
    }

    fn nodes(&self, info: &TraceInfo) -> Result<RecordBatch> {
        let v = &self.variables;
        trace_col(Columns::new(Table::Nodes), info, v.len())
            .int("id", v.iter().map(|x| i64::from(x.id)))
            .text("full_node_id", v.iter().map(|x| x.full_node_id.as_str()))
            .text("full_name", v.iter().map(|x| x.full_name.as_str()))
            .opt_text("class_name", v.iter().map(|x| x.class_name.as_deref()))
            .text("name", v.iter().map(|x| x.name.as_str()))
            .int("version", v.iter().map(|x| i64::from(x.version)))
            .opt_text("category", v.iter().map(|x| x.category.as_deref()))
            .opt_text("value", v.iter().map(|x| x.value.as_deref()))
            .opt_text("comment", v.iter().map(|x| x.comment.as_deref()))
            .opt_text("session_id", v.iter().map(|x| x.session_id.as_deref()))
            .opt_text("created_at", v.iter().map(|x| x.created_at.as_deref()))
            .opt_text("filename", v.iter().map(|x| x.filename.as_deref()))
            .opt_int("lineno", v.iter().map(|x| x.lineno))
            .owned_text("metadata", v.iter().map(|x| json_text(&x.metadata)))
            .finish()
    }

    fn edges(&self, info: &TraceInfo) -> Result<RecordBatch> {
        let e = &self.edges;
        trace_col(Columns::new(Table::Edges), info, e.len())
            .int("id", e.iter().map(|x| i64::from(x.id)))
            .text("edge_id", e.iter().map(|x| x.edge_id.as_str()))
            .int("source", e.iter().map(|x| i64::from(x.source)))
            .int("target", e.iter().map(|x| i64::from(x.target)))
            .text(
                "source_full_node_id",
                e.iter().map(|x| x.source_full_node_id.as_str()),
            )
            .text(
                "target_full_node_id",
                e.iter().map(|x| x.target_full_node_id.as_str()),
            )
            .int("op", e.iter().map(|x| i64::from(x.op)))
            .text("op_id", e.iter().map(|x| x.op_id.as_str()))
            .opt_text("category", e.iter().map(|x| x.category.as_deref()))
            .opt_text("comment", e.iter().map(|x| x.comment.as_deref()))
            .text("session_id", e.iter().map(|x| x.session_id.as_str()))
            .owned_text("metadata", e.iter().map(|x| json_text(&x.metadata)))
            .finish()
    }

    fn ops(&self, info: &TraceInfo) -> Result<RecordBatch> {
        let o = &self.ops;
        trace_col(Columns::new(Table::Ops), info, o.len())
            .int("id", o.iter().map(|x| i64::from(x.id)))
            .text("op_id", o.iter().map(|x| x.op_id.as_str()))
            .opt_text("op_name", o.iter().map(|x| x.op_name.as_deref()))
            .opt_text("category", o.iter().map(|x| x.category.as_deref()))
            .opt_text("comment", o.iter().map(|x| x.comment.as_deref()))
            .opt_text("session_id", o.iter().map(|x| x.session_id.as_deref()))
            .opt_text("created_at", o.iter().map(|x| x.created_at.as_deref()))
            .owned_text("metadata", o.iter().map(|x| json_text(&x.metadata)))
            .finish()
    }

    /// The annotation a failed case came from, when it came from one.
    fn annotation(&self, case: &FailedCase) -> Option<&Case> {
        match case.origin {
            CaseOrigin::Annotation(i) => self.annotations.get(i),
            CaseOrigin::Judge(_) => None,
        }
    }

    fn cases(&self, info: &TraceInfo) -> Result<RecordBatch> {
        let f = &self.failed;
        fn origin(c: &FailedCase) -> &'static str {
            match &c.origin {
                CaseOrigin::Annotation(_) => "annotation",
                CaseOrigin::Judge(_) => "judge",
            }
        }
        fn judge(c: &FailedCase) -> Option<&str> {
            match &c.origin {
                CaseOrigin::Judge(op) => Some(op.as_str()),
                CaseOrigin::Annotation(_) => None,
            }
        }
        let label = |c: &FailedCase, error: bool| {
            self.annotation(c).and_then(|a| {
                if error {
                    a.final_error_type.as_deref()
                } else {
                    a.final_op_id.as_deref()
                }
            })
        };
        trace_col(Columns::new(Table::Cases), info, f.len())
            .text("case_id", f.iter().map(|c| c.id.as_str()))
            .text("origin", f.iter().map(origin))
            .opt_text("judge_op_id", f.iter().map(judge))
            .opt_text("query_id", f.iter().map(|c| c.query_node.as_deref()))
            .text("query", f.iter().map(|c| c.query.as_str()))
            .text_lists("golden_answers", f.iter().map(|c| &c.gold))
            .text("prediction", f.iter().map(|c| c.prediction.as_str()))
            .opt_text(
                "judge_response",
                f.iter().map(|c| c.judge_response.as_deref()),
            )
            .text_lists("source_evidence_ids", f.iter().map(|c| &c.source_evidence))
            .opt_text("final_error_type", f.iter().map(|c| label(c, true)))
            .opt_text("final_op_id", f.iter().map(|c| label(c, false)))
            .finish()
    }

    fn verdicts(&self, info: &TraceInfo) -> Result<RecordBatch> {
        let s = &self.verdicts;
        fn cost(x: &StoredVerdict) -> Option<&memtrace_analysis::attrib::Cost> {
            x.verdict.cost.as_ref()
        }
        let chain = |x: &StoredVerdict| serde_json::to_string(&x.verdict.chain);
        let chains = s.iter().map(chain).collect::<Result<Vec<_>, _>>()?;
        trace_col(Columns::new(Table::Verdicts), info, s.len())
            .int("seq", s.iter().map(|x| clamp(x.seq)))
            .time_ms("stored_at", s.iter().map(|x| clamp(x.at_ms)))
            .text("author", s.iter().map(|x| x.author.as_str()))
            .text("case_id", s.iter().map(|x| x.verdict.case.as_str()))
            .text("query", s.iter().map(|x| x.verdict.query.as_str()))
            .text("method", s.iter().map(|x| x.verdict.method.as_str()))
            .text("version", s.iter().map(|x| x.verdict.version.as_str()))
            .opt_text("model", s.iter().map(|x| x.verdict.model.as_deref()))
            .opt_text(
                "error_type",
                s.iter().map(|x| x.verdict.error_type.map(|e| e.name())),
            )
            .opt_text("op_id", s.iter().map(|x| x.verdict.op_id.as_deref()))
            .opt_text("op_name", s.iter().map(|x| x.verdict.op_name.as_deref()))
            .float("confidence", s.iter().map(|x| x.verdict.confidence))
            .text("reason", s.iter().map(|x| x.verdict.reason.as_str()))
            .owned_text("chain", chains.into_iter())
            .int("micros", s.iter().map(|x| clamp(x.verdict.micros)))
            .opt_int(
                "llm_calls",
                s.iter().map(|x| cost(x).map(|c| i64::from(c.calls))),
            )
            .opt_int(
                "cached_calls",
                s.iter().map(|x| cost(x).map(|c| i64::from(c.cached_calls))),
            )
            .opt_int(
                "tokens_in",
                s.iter().map(|x| cost(x).map(|c| clamp(c.tokens_in))),
            )
            .opt_int(
                "tokens_out",
                s.iter().map(|x| cost(x).map(|c| clamp(c.tokens_out))),
            )
            .opt_bool(
                "cost_estimated",
                s.iter().map(|x| cost(x).map(|c| c.estimated)),
            )
            .opt_float("llm_seconds", s.iter().map(|x| cost(x).map(|c| c.seconds)))
            .finish()
    }
}

/// `batch` without the column `name` (a partition column, which the folder
/// names carry instead), or as it is when it has none.
pub(crate) fn without(batch: &RecordBatch, name: &str) -> Result<RecordBatch> {
    let schema = batch.schema();
    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| schema.field(i).name() != name)
        .collect();
    batch.project(&keep).map_err(|source| ColumnarError::Arrow {
        table: "partition",
        source,
    })
}

/// The data type name of a field, as the README's schema table writes it.
pub fn type_name(t: &DataType) -> String {
    match t {
        DataType::Utf8 => "string".into(),
        DataType::Int64 => "int64".into(),
        DataType::Float64 => "double".into(),
        DataType::Boolean => "bool".into(),
        DataType::Timestamp(TimeUnit::Millisecond, _) => "timestamp(ms, UTC)".into(),
        DataType::List(f) => format!("list<{}>", type_name(f.data_type())),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, ListArray};
    use memtrace_analysis::attrib::{Cost, ErrorType, Verdict};
    use serde_json::json;

    fn info() -> TraceInfo {
        TraceInfo {
            id: 7,
            graph_id: "g-7".into(),
            project_id: Some("mem0".into()),
            format: "memtracebench".into(),
            source: "t.json".into(),
            imported_at_ms: 1_700_000_000_123,
            ..TraceInfo::default()
        }
    }

    fn variable(id: u32, name: &str, value: Option<&str>) -> Variable {
        Variable {
            trace: 7,
            id,
            name: name.into(),
            class_name: Some("message".into()),
            version: id + 1,
            value: value.map(str::to_string),
            comment: None,
            category: Some("message & query".into()),
            session_id: Some("s1".into()),
            created_at: None,
            filename: Some("app.py".into()),
            lineno: if id == 0 { Some(12) } else { None },
            metadata: json!({"k": [1, 2]}),
            full_name: format!("message:{name}"),
            full_node_id: format!("message:{name}@{}", id + 1),
        }
    }

    fn strings(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
        let a = b.column_by_name(col).expect(col);
        let a = a.as_any().downcast_ref::<StringArray>().expect("string");
        (0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
            .collect()
    }

    fn ints(b: &RecordBatch, col: &str) -> Vec<Option<i64>> {
        let a = b.column_by_name(col).expect(col);
        let a = a.as_any().downcast_ref::<Int64Array>().expect("int64");
        (0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i)))
            .collect()
    }

    #[test]
    fn nodes_keep_every_field_with_nulls_where_missing_and_metadata_as_json() {
        let r = TraceRecords {
            variables: vec![variable(0, "q", Some("'hi'")), variable(1, "a", None)],
            ..Default::default()
        };
        let b = r.batch(Table::Nodes, &info()).unwrap();
        assert_eq!(b.num_rows(), 2);
        assert_eq!(ints(&b, "trace"), vec![Some(7), Some(7)]);
        assert_eq!(strings(&b, "graph_id")[1].as_deref(), Some("g-7"));
        assert_eq!(ints(&b, "id"), vec![Some(0), Some(1)]);
        assert_eq!(ints(&b, "version"), vec![Some(1), Some(2)]);
        assert_eq!(strings(&b, "value"), vec![Some("'hi'".into()), None]);
        assert_eq!(ints(&b, "lineno"), vec![Some(12), None]);
        assert_eq!(
            strings(&b, "full_node_id"),
            vec![Some("message:q@1".into()), Some("message:a@2".into())]
        );
        let meta = strings(&b, "metadata");
        let back: Value = serde_json::from_str(meta[0].as_deref().unwrap()).unwrap();
        assert_eq!(back, json!({"k": [1, 2]}));
        let schema = b.schema();
        assert!(!schema
            .field_with_name("full_node_id")
            .unwrap()
            .is_nullable());
        assert!(schema.field_with_name("comment").unwrap().is_nullable());
    }

    #[test]
    fn each_table_has_its_documented_columns_in_order() {
        let names = |t: Table| -> Vec<String> {
            t.schema()
                .fields()
                .iter()
                .map(|f| format!("{}:{}", f.name(), type_name(f.data_type())))
                .collect()
        };
        assert_eq!(
            names(Table::Edges),
            [
                "trace:int64",
                "graph_id:string",
                "id:int64",
                "edge_id:string",
                "source:int64",
                "target:int64",
                "source_full_node_id:string",
                "target_full_node_id:string",
                "op:int64",
                "op_id:string",
                "category:string",
                "comment:string",
                "session_id:string",
                "metadata:string"
            ]
        );
        assert_eq!(
            names(Table::Cases)[7..11],
            [
                "golden_answers:list<string>",
                "prediction:string",
                "judge_response:string",
                "source_evidence_ids:list<string>"
            ]
        );
        assert!(names(Table::Traces).contains(&"imported_at:timestamp(ms, UTC)".to_string()));
        for t in Table::ALL {
            let n = names(t);
            assert_eq!(n[..2], ["trace:int64", "graph_id:string"], "{t:?}");
        }
        // The empty records give no trace row, but the traces table of a
        // real trace has exactly one.
        let r = TraceRecords::default();
        assert_eq!(r.batch(Table::Traces, &info()).unwrap().num_rows(), 1);
    }

    #[test]
    fn cases_carry_labels_from_their_annotation_and_lists_of_gold_and_evidence() {
        let case = |id: &str, origin: CaseOrigin, gold: &[&str]| FailedCase {
            trace: 7,
            graph_id: "g-7".into(),
            system: Some("mem0".into()),
            id: id.into(),
            query_node: Some(format!("{id}@1")),
            query: "when?".into(),
            gold: gold.iter().map(|s| s.to_string()).collect(),
            prediction: "never".into(),
            judge_response: None,
            source_evidence: vec!["message:m1@1".into(), "message:m2@1".into()],
            origin,
        };
        let annotation = Case {
            trace: 7,
            id: 0,
            query_id: Some("q@1".into()),
            query: Some("when?".into()),
            golden_answers: json!("May"),
            prediction: Some("never".into()),
            source_evidence_ids: vec![],
            final_error_type: Some("RetrievalError".into()),
            final_op_id: Some("op-3".into()),
            raw: json!({}),
        };
        let r = TraceRecords {
            failed: vec![
                case("q", CaseOrigin::Annotation(0), &["May"]),
                case("j", CaseOrigin::Judge("judge-1".into()), &["a", "b"]),
            ],
            annotations: vec![annotation],
            ..Default::default()
        };
        let b = r.batch(Table::Cases, &info()).unwrap();
        assert_eq!(
            strings(&b, "origin"),
            vec![Some("annotation".into()), Some("judge".into())]
        );
        assert_eq!(
            strings(&b, "judge_op_id"),
            vec![None, Some("judge-1".into())]
        );
        assert_eq!(
            strings(&b, "final_error_type"),
            vec![Some("RetrievalError".into()), None]
        );
        assert_eq!(strings(&b, "final_op_id"), vec![Some("op-3".into()), None]);
        let gold = b.column_by_name("golden_answers").unwrap();
        let gold = gold.as_any().downcast_ref::<ListArray>().unwrap();
        assert_eq!(gold.value_length(0), 1);
        assert_eq!(gold.value_length(1), 2);
        let second = gold.value(1);
        let second = second.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(second.value(1), "b");
    }

    #[test]
    fn verdicts_carry_author_time_and_cost_only_when_there_is_one() {
        let verdict = |method: &str, cost: Option<Cost>| StoredVerdict {
            seq: 3,
            at_ms: 1_700_000_000_000,
            author: "memtrace".into(),
            verdict: Verdict {
                trace: 7,
                graph_id: "g-7".into(),
                system: None,
                case: "q@1".into(),
                query: "when?".into(),
                error_type: (method == "evidence").then_some(ErrorType::RetrievalError),
                op_id: Some("op-3".into()),
                op_name: Some("retrieve".into()),
                confidence: 0.75,
                reason: "left out".into(),
                chain: vec![],
                method: method.into(),
                version: "1".into(),
                micros: 42,
                model: cost.map(|_| "m".to_string()),
                cost,
                setting: None,
            },
        };
        let cost = Cost {
            calls: 2,
            tokens_in: 100,
            seconds: 1.5,
            ..Default::default()
        };
        let r = TraceRecords {
            verdicts: vec![verdict("evidence", None), verdict("llm", Some(cost))],
            ..Default::default()
        };
        let b = r.batch(Table::Verdicts, &info()).unwrap();
        assert_eq!(
            strings(&b, "error_type"),
            vec![Some("RetrievalError".into()), None]
        );
        assert_eq!(ints(&b, "llm_calls"), vec![None, Some(2)]);
        assert_eq!(ints(&b, "tokens_in"), vec![None, Some(100)]);
        assert_eq!(strings(&b, "chain")[0].as_deref(), Some("[]"));
        let at = b.column_by_name("stored_at").unwrap();
        assert_eq!(
            at.data_type(),
            &DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
        );
    }

    #[test]
    fn a_partition_column_is_left_out_of_the_files() {
        let r = TraceRecords {
            variables: vec![variable(0, "q", None)],
            ..Default::default()
        };
        let b = r.batch(Table::Nodes, &info()).unwrap();
        let cut = without(&b, "trace").unwrap();
        assert_eq!(cut.num_columns(), b.num_columns() - 1);
        assert!(cut.column_by_name("trace").is_none());
        assert!(cut.column_by_name("graph_id").is_some());
        // A table without the column is left as it is.
        assert_eq!(
            without(&b, "project_id").unwrap().num_columns(),
            b.num_columns()
        );
    }
}
