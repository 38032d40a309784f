//! Reading a batch of traces: each row's content (text or binary) and the
//! name it goes by.

use std::borrow::Cow;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;

use crate::error::{ColumnarError, Result};

/// One row of the input: its name and its trace file's bytes (`None` when
/// the content is null).
#[derive(Debug)]
pub(crate) struct Row<'a> {
    pub(crate) source: Cow<'a, str>,
    pub(crate) content: Option<&'a [u8]>,
}

/// The column `name` of `batch`, or an error that lists the columns there are.
fn column<'b>(batch: &'b RecordBatch, name: &str, what: &str) -> Result<&'b dyn Array> {
    batch
        .column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| {
            let have: Vec<&str> = batch
                .schema_ref()
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            ColumnarError::BadInput(format!(
                "the input has no {what} column {name} (its columns: {})",
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ))
        })
}

/// The values of a text or binary column as bytes, row by row.
fn bytes_of<'b>(a: &'b dyn Array, name: &str) -> Result<Vec<Option<&'b [u8]>>> {
    Ok(match a.data_type() {
        DataType::Utf8 => a
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::as_bytes))
            .collect(),
        DataType::LargeUtf8 => a
            .as_string::<i64>()
            .iter()
            .map(|v| v.map(str::as_bytes))
            .collect(),
        DataType::Utf8View => a
            .as_string_view()
            .iter()
            .map(|v| v.map(str::as_bytes))
            .collect(),
        DataType::Binary => a.as_binary::<i32>().iter().collect(),
        DataType::LargeBinary => a.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => a.as_binary_view().iter().collect(),
        other => {
            return Err(ColumnarError::BadInput(format!(
                "column {name} is of type {other}; it must hold text or binary"
            )))
        }
    })
}

/// The rows of a batch: content from the column `content`, names from the
/// text column `source`, or `row N` without one.
pub(crate) fn rows<'b>(
    batch: &'b RecordBatch,
    content: &str,
    source: Option<&str>,
) -> Result<Vec<Row<'b>>> {
    let content = bytes_of(column(batch, content, "content")?, content)?;
    let names: Vec<Option<&'b [u8]>> = match source {
        Some(name) => {
            let a = column(batch, name, "source")?;
            if !matches!(
                a.data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            ) {
                return Err(ColumnarError::BadInput(format!(
                    "column {name} is of type {}; the source column must hold text",
                    a.data_type()
                )));
            }
            bytes_of(a, name)?
        }
        None => vec![None; batch.num_rows()],
    };
    Ok(content
        .into_iter()
        .zip(names)
        .enumerate()
        .map(|(i, (content, name))| Row {
            source: match name {
                Some(n) => String::from_utf8_lossy(n),
                None => Cow::Owned(format!("row {i}")),
            },
            content,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{BinaryArray, Int64Array, LargeStringArray, StringArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    fn batch(columns: Vec<(&str, Arc<dyn Array>)>) -> RecordBatch {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns.into_iter().map(|(_, a)| a).collect(),
        )
        .unwrap()
    }

    #[test]
    fn text_and_binary_content_read_alike_and_rows_without_a_name_are_numbered() {
        let text = batch(vec![
            (
                "content",
                Arc::new(LargeStringArray::from(vec![Some("{}"), None])),
            ),
            (
                "path",
                Arc::new(StringArray::from(vec![Some("a.json"), None])),
            ),
        ]);
        let got = rows(&text, "content", Some("path")).unwrap();
        assert_eq!(got[0].source, "a.json");
        assert_eq!(got[0].content, Some(&b"{}"[..]));
        assert_eq!((got[1].source.as_ref(), got[1].content), ("row 1", None));

        let binary = batch(vec![(
            "bytes",
            Arc::new(BinaryArray::from(vec![Some(&b"{\"a\":1}"[..])])),
        )]);
        let got = rows(&binary, "bytes", None).unwrap();
        assert_eq!(got[0].source, "row 0");
        assert_eq!(got[0].content, Some(&b"{\"a\":1}"[..]));
    }

    #[test]
    fn a_missing_or_mistyped_column_is_named() {
        let b = batch(vec![("n", Arc::new(Int64Array::from(vec![1])))]);
        let err = rows(&b, "content", Some("path")).unwrap_err().to_string();
        assert!(
            err.contains("no content column content (its columns: n)"),
            "{err}"
        );
        let err = rows(&b, "n", None).unwrap_err().to_string();
        assert!(err.contains("column n is of type Int64"), "{err}");
        let b = batch(vec![
            ("content", Arc::new(StringArray::from(vec!["{}"]))),
            ("path", Arc::new(Int64Array::from(vec![1]))),
        ]);
        let err = rows(&b, "content", Some("path")).unwrap_err().to_string();
        assert!(err.contains("source column must hold text"), "{err}");
    }
}
