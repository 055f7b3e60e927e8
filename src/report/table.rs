//! A typed table (named columns of text, integers, floats or booleans, any cell may be null)
//! and its two files: CSV, and Parquet through the Arrow crates, which pandas, polars, DuckDB and
//! Hugging Face `datasets` read with their types. `report::frames` fills tables from the store.

use anyhow::{bail, Result};
use std::sync::Arc;

/// A column's type: Arrow's `Utf8`, `Int64`, `Float64` or `Boolean`, always nullable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    Float,
    Bool,
}

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
}

impl Cell {
    fn fits(&self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (Cell::Null, _)
                | (Cell::Text(_), Kind::Text)
                | (Cell::Int(_), Kind::Int)
                | (Cell::Float(_), Kind::Float)
                | (Cell::Bool(_), Kind::Bool)
        )
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<usize> for Cell {
    fn from(n: usize) -> Cell {
        Cell::Int(i64::try_from(n).expect("a count fits in i64"))
    }
}

impl From<f64> for Cell {
    fn from(x: f64) -> Cell {
        Cell::Float(x)
    }
}

impl From<bool> for Cell {
    fn from(b: bool) -> Cell {
        Cell::Bool(b)
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Null, Into::into)
    }
}

/// Rows under a fixed schema.
#[derive(Clone, Debug)]
pub struct Table {
    schema: Vec<(String, Kind)>,
    rows: Vec<Vec<Cell>>,
}

/// The file formats of a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Parquet,
    Csv,
}

impl Table {
    pub fn new(schema: &[(&str, Kind)]) -> Table {
        Table {
            schema: schema.iter().map(|(n, k)| (n.to_string(), *k)).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row, whose cells must follow the schema.
    pub fn push(&mut self, row: Vec<Cell>) -> Result<()> {
        if row.len() != self.schema.len() {
            bail!(
                "a row of {} cells in a table of {} columns",
                row.len(),
                self.schema.len()
            );
        }
        if let Some(((name, kind), cell)) = self.schema.iter().zip(&row).find(|(c, v)| !v.fits(c.1))
        {
            bail!("column `{name}` holds {kind:?}, not {cell:?}");
        }
        self.rows.push(row);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The columns' names and types.
    pub fn schema(&self) -> &[(String, Kind)] {
        &self.schema
    }

    pub fn render(&self, format: Format) -> Result<Vec<u8>> {
        match format {
            Format::Csv => self.csv(),
            Format::Parquet => self.parquet(),
        }
    }

    /// CSV with a header; null is the empty field, booleans `true`/`false`, floats the shortest
    /// text that reads back as the same bits.
    fn csv(&self) -> Result<Vec<u8>> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.schema.iter().map(|(n, _)| n))?;
        for row in &self.rows {
            w.write_record(row.iter().map(|c| match c {
                Cell::Text(s) => s.clone(),
                Cell::Int(n) => n.to_string(),
                Cell::Float(x) => x.to_string(),
                Cell::Bool(b) => b.to_string(),
                Cell::Null => String::new(),
            }))?;
        }
        Ok(w.into_inner()?)
    }

    /// One Parquet file of one row group, uncompressed (no codec compiled in); the Arrow
    /// schema travels in its metadata, so readers get the same column types.
    fn parquet(&self) -> Result<Vec<u8>> {
        use arrow_array::{
            ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
        };
        use arrow_schema::{DataType, Field, Schema};

        let fields: Vec<Field> = self
            .schema
            .iter()
            .map(|(name, kind)| {
                let t = match kind {
                    Kind::Text => DataType::Utf8,
                    Kind::Int => DataType::Int64,
                    Kind::Float => DataType::Float64,
                    Kind::Bool => DataType::Boolean,
                };
                Field::new(name, t, true)
            })
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let column = |i: usize| -> ArrayRef {
            let cells = self.rows.iter().map(|r| &r[i]);
            match self.schema[i].1 {
                Kind::Text => Arc::new(StringArray::from_iter(cells.map(|c| match c {
                    Cell::Text(s) => Some(s.as_str()),
                    _ => None,
                }))),
                Kind::Int => Arc::new(Int64Array::from_iter(cells.map(|c| match c {
                    Cell::Int(n) => Some(*n),
                    _ => None,
                }))),
                Kind::Float => Arc::new(Float64Array::from_iter(cells.map(|c| match c {
                    Cell::Float(x) => Some(*x),
                    _ => None,
                }))),
                Kind::Bool => Arc::new(BooleanArray::from_iter(cells.map(|c| match c {
                    Cell::Bool(b) => Some(*b),
                    _ => None,
                }))),
            }
        };
        let batch =
            RecordBatch::try_new(schema.clone(), (0..self.schema.len()).map(column).collect())?;
        let mut out = Vec::new();
        let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, schema, None)?;
        writer.write(&batch)?;
        writer.close()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new(&[
            ("name", Kind::Text),
            ("n", Kind::Int),
            ("x", Kind::Float),
            ("ok", Kind::Bool),
        ]);
        t.push(vec!["a,b".into(), 3usize.into(), 0.1.into(), true.into()])
            .unwrap();
        t.push(vec![Cell::Null, Cell::Null, (-1e-7).into(), Cell::Null])
            .unwrap();
        t
    }

    #[test]
    fn csv_quotes_text_and_leaves_nulls_empty() {
        let csv = String::from_utf8(table().render(Format::Csv).unwrap()).unwrap();
        assert_eq!(csv, "name,n,x,ok\n\"a,b\",3,0.1,true\n,,-0.0000001,\n");
    }

    #[test]
    fn rows_that_break_the_schema_are_refused() {
        let mut t = table();
        let err = t
            .push(vec![1usize.into(), 3usize.into(), 0.1.into(), true.into()])
            .unwrap_err();
        assert!(err.to_string().contains("column `name`"), "{err}");
        assert!(t.push(vec![Cell::Null]).is_err());
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn parquet_files_read_back_with_their_types_and_values() {
        use arrow_array::{Array, BooleanArray, Float64Array, StringArray};
        use std::io::{Seek, Write};
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&table().render(Format::Parquet).unwrap())
            .unwrap();
        file.rewind().unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<_> = reader.map(Result::unwrap).collect();
        assert_eq!(batches.len(), 1);
        let b = &batches[0];
        assert_eq!(b.num_rows(), 2);
        let names = b.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(names.value(0), "a,b");
        assert!(names.is_null(1));
        let x = b.column(2).as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(x.value(1).to_bits(), (-1e-7f64).to_bits());
        let ok = b.column(3).as_any().downcast_ref::<BooleanArray>().unwrap();
        assert!(ok.value(0) && ok.is_null(1));
        // The same table gives the same bytes.
        assert_eq!(
            table().render(Format::Parquet).unwrap(),
            table().render(Format::Parquet).unwrap()
        );
    }
}
