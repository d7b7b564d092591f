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
    Io {
        path: PathBuf,
        err: io::Error,
    },
    Csv {
        path: PathBuf,
        line: u64,
        msg: String,
    },
    MissingColumn {
        path: PathBuf,
        column: String,
        why: String,
    },
    BadCell {
        path: PathBuf,
        row: u64,
        line: u64,
        column: String,
        why: String,
    },
    UnknownHook {
        path: PathBuf,
        row: u64,
        line: u64,
        name: String,
    },
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

/// Where the current row is: its index (0-based, as `seq` counts) and
/// its line in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    pub index: u64,
    pub line: u64,
}

/// Parses a decimal integer cell, surrounding spaces allowed.
fn parse_int(cell: &[u8]) -> Option<i128> {
    let t = cell.trim_ascii();
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || digits.len() > 38 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    // Nineteen digits always fit a u64; only longer cells need i128.
    let v = if digits.len() <= 19 {
        digits.iter().fold(0u64, |v, &d| v * 10 + (d - b'0') as u64) as i128
    } else {
        digits
            .iter()
            .fold(0i128, |v, &d| v * 10 + (d - b'0') as i128)
    };
    Some(if neg { -v } else { v })
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
    header: Vec<String>,
    index: HashMap<String, usize>,
    numeric: Vec<usize>,
    rows: u64,
    record: csv::ByteRecord,
    cells: Vec<Option<i128>>,
}

impl TraceReader {
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let io_err = |err| TraceError::Io {
            path: path.to_path_buf(),
            err,
        };
        let mut file = BufReader::with_capacity(1 << 16, File::open(path).map_err(io_err)?);
        let gz = file.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
        let input: Box<dyn Read> = if gz {
            Box::new(MultiGzDecoder::new(file))
        } else {
            Box::new(file)
        };
        let mut csv = csv::ReaderBuilder::new()
            .buffer_capacity(1 << 16)
            .from_reader(input);
        let header: Vec<String> = csv
            .headers()
            .map_err(|e| Self::csv_error(path, e))?
            .iter()
            .map(|c| c.trim().to_string())
            .collect();
        if header.iter().all(String::is_empty) {
            return Err(TraceError::MissingColumn {
                path: path.to_path_buf(),
                column: "hook".into(),
                why: "the file is empty; a trace starts with a header row".into(),
            });
        }
        let index = header
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), i))
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
            cells: vec![None; header.len()],
            header,
            index,
            numeric,
            rows: 0,
            record: csv::ByteRecord::new(),
        })
    }

    fn csv_error(path: &Path, e: csv::Error) -> TraceError {
        let line = e.position().map_or(1, |p| p.line());
        match e.into_kind() {
            csv::ErrorKind::Io(err) => TraceError::Io {
                path: path.to_path_buf(),
                err,
            },
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => TraceError::Csv {
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

    pub fn bad_cell(&self, row: Row, column: &str, why: &str) -> TraceError {
        TraceError::BadCell {
            path: self.path.clone(),
            row: row.index,
            line: row.line,
            column: column.to_string(),
            why: why.to_string(),
        }
    }

    pub fn unknown_hook(&self, row: Row, name: &str) -> TraceError {
        TraceError::UnknownHook {
            path: self.path.clone(),
            row: row.index,
            line: row.line,
            name: name.to_string(),
        }
    }

    /// The numeric cells of the current row (`None`: empty, or a text or
    /// unknown column).
    pub fn cells(&self) -> &[Option<i128>] {
        &self.cells
    }

    /// The text of a cell of the current row.
    pub fn text(&self, i: usize) -> &str {
        self.record
            .get(i)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
            .trim()
    }

    /// Advances to the next row; `None` at the end of the file.
    pub fn next_row(&mut self) -> Result<Option<Row>, TraceError> {
        let more = self
            .csv
            .read_byte_record(&mut self.record)
            .map_err(|e| Self::csv_error(&self.path, e))?;
        if !more {
            return Ok(None);
        }
        let row = Row {
            index: self.rows,
            line: self.record.position().map_or(0, |p| p.line()),
        };
        self.rows += 1;
        for &i in &self.numeric {
            let cell = self.record.get(i).unwrap_or(b"");
            self.cells[i] = None;
            if cell.trim_ascii().is_empty() {
                continue;
            }
            match parse_int(cell) {
                Some(v) => self.cells[i] = Some(v),
                None => {
                    let text = String::from_utf8_lossy(cell.trim_ascii()).into_owned();
                    let why = format!("`{text}` is not an integer");
                    return Err(self.bad_cell(row, &self.header[i].clone(), &why));
                }
            }
        }
        Ok(Some(row))
    }
}
