//! Reading traces: CSV, optionally gzip-compressed (detected by content,
//! not by name), streamed row by row. Every error names the file, and where
//! it has one the row (0-based, as `seq` counts), the line, and the column.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use kleinrock_cc::ops::Hook;

/// What went wrong reading a trace. `Display` is one sentence that names
/// the place and what to do.
#[derive(Debug)]
pub enum TraceError {
    Io { path: PathBuf, err: io::Error },
    Csv { path: PathBuf, line: u64, msg: String },
    MissingColumn { path: PathBuf, column: String, why: String },
    BadCell { path: PathBuf, row: u64, line: u64, column: String, why: String },
    UnknownHook { path: PathBuf, row: u64, line: u64, name: String },
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, err } => {
                write!(f, "cannot read trace {}: {err}", path.display())
            }
            TraceError::Csv { path, line, msg } => write!(
                f,
                "{} line {line} is not valid CSV ({msg}); every row needs one cell per header column",
                path.display()
            ),
            TraceError::MissingColumn { path, column, why } => write!(
                f,
                "{} has no column `{column}` ({why}); add it to the trace (see docs/TRACE_FORMAT.md)",
                path.display()
            ),
            TraceError::BadCell { path, row, line, column, why } => write!(
                f,
                "{} row {row} (line {line}), column `{column}`: {why}",
                path.display()
            ),
            TraceError::UnknownHook { path, row, line, name } => write!(
                f,
                "{} row {row} (line {line}), column `hook`: unknown hook `{name}`; valid hooks are {}",
                path.display(),
                Hook::NAMES.join(", ")
            ),
        }
    }
}

impl std::error::Error for TraceError {}

/// One data row: its index, its file line, and its numeric cells parsed
/// (`None` for empty cells and for text or unknown columns).
pub struct Row {
    pub index: u64,
    pub line: u64,
    pub cells: Vec<Option<i128>>,
    record: csv::StringRecord,
}

impl Row {
    /// The raw text of a cell.
    pub fn text(&self, i: usize) -> String {
        self.record.get(i).unwrap_or("").to_string()
    }
}

/// Is this a column holding integers (one the format defines)?
fn is_numeric(name: &str) -> bool {
    ["pre_", "post_", "arg_", "as_", "rs_"]
        .iter()
        .any(|p| name.starts_with(p))
        || matches!(name, "seq" | "ts_ns" | "jiffies_in" | "jiffies_out" | "ret")
}

/// A streaming trace reader.
pub struct TraceReader {
    path: PathBuf,
    csv: csv::Reader<Box<dyn Read>>,
    index: HashMap<String, usize>,
    numeric: Vec<usize>,
    width: usize,
    rows: u64,
    record: csv::StringRecord,
}

impl TraceReader {
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let io_err = |err| TraceError::Io {
            path: path.to_path_buf(),
            err,
        };
        let mut file = BufReader::new(File::open(path).map_err(io_err)?);
        let gz = file.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
        let input: Box<dyn Read> = if gz {
            Box::new(MultiGzDecoder::new(file))
        } else {
            Box::new(file)
        };
        let mut csv = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(input);
        let header = csv
            .headers()
            .map_err(|e| Self::csv_error(path, e))?
            .clone();
        if header.iter().all(str::is_empty) {
            return Err(TraceError::MissingColumn {
                path: path.to_path_buf(),
                column: "hook".into(),
                why: "the file is empty; a trace starts with a header row".into(),
            });
        }
        let index: HashMap<String, usize> = header
            .iter()
            .enumerate()
            .map(|(i, c)| (c.to_string(), i))
            .collect();
        let numeric = header
            .iter()
            .enumerate()
            .filter(|(_, c)| is_numeric(c))
            .map(|(i, _)| i)
            .collect();
        Ok(TraceReader {
            path: path.to_path_buf(),
            csv,
            width: header.len(),
            index,
            numeric,
            rows: 0,
            record: csv::StringRecord::new(),
        })
    }

    fn csv_error(path: &Path, e: csv::Error) -> TraceError {
        let line = e.position().map_or(1, |p| p.line());
        match e.into_kind() {
            csv::ErrorKind::Io(err) => TraceError::Io {
                path: path.to_path_buf(),
                err,
            },
            csv::ErrorKind::UnequalLengths { expected_len, len, .. } => TraceError::Csv {
                path: path.to_path_buf(),
                line,
                msg: format!("{len} cells where the header has {expected_len}"),
            },
            kind => TraceError::Csv {
                path: path.to_path_buf(),
                line,
                msg: format!("{kind:?}"),
            },
        }
    }

    /// The index of a column, if the header has it.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// The index of a column the caller cannot do without.
    pub fn require(&self, name: &str, why: &str) -> Result<usize, TraceError> {
        self.column(name).ok_or_else(|| self.missing(name, why))
    }

    pub fn missing(&self, column: &str, why: &str) -> TraceError {
        TraceError::MissingColumn {
            path: self.path.clone(),
            column: column.to_string(),
            why: why.to_string(),
        }
    }

    pub fn bad_cell(&self, row: &Row, column: &str, why: &str) -> TraceError {
        TraceError::BadCell {
            path: self.path.clone(),
            row: row.index,
            line: row.line,
            column: column.to_string(),
            why: why.to_string(),
        }
    }

    pub fn unknown_hook(&self, row: &Row, name: &str) -> TraceError {
        TraceError::UnknownHook {
            path: self.path.clone(),
            row: row.index,
            line: row.line,
            name: name.to_string(),
        }
    }

    /// The next row, or `None` at the end of the file.
    pub fn next_row(&mut self) -> Result<Option<Row>, TraceError> {
        let more = self
            .csv
            .read_record(&mut self.record)
            .map_err(|e| Self::csv_error(&self.path, e))?;
        if !more {
            return Ok(None);
        }
        let line = self.record.position().map_or(0, |p| p.line());
        let mut row = Row {
            index: self.rows,
            line,
            cells: vec![None; self.width],
            record: self.record.clone(),
        };
        self.rows += 1;
        for &i in &self.numeric {
            let text = row.record.get(i).unwrap_or("");
            if text.is_empty() {
                continue;
            }
            match text.parse::<i128>() {
                Ok(v) => row.cells[i] = Some(v),
                Err(_) => {
                    let name = self
                        .index
                        .iter()
                        .find(|(_, &j)| j == i)
                        .map_or("?", |(n, _)| n.as_str())
                        .to_string();
                    let why = format!("`{text}` is not an integer");
                    return Err(self.bad_cell(&row, &name, &why));
                }
            }
        }
        Ok(Some(row))
    }
}
