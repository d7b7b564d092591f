//! Reading traces: CSV, optionally gzip-compressed (detected by content,
//! not by name), streamed row by row. Every error names the file, and where
//! it has one the row (0-based, as `seq` counts), the line, and the column;
//! what it quotes of the file is escaped and cut short
//! (`kleinrock_cc::echo`).
//!
//! A trace is read from a regular file only (a device, a FIFO or a
//! directory is refused before anything is read: `replay /dev/zero` once
//! read forever), and no line may be longer than [`MAX_LINE`]: a row of
//! every column the format defines is a few KiB, so a longer line is not a
//! trace, and memory stays bounded whatever the file holds.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use kleinrock_cc::echo::{name as show_name, show};
use kleinrock_cc::ops::Hook;

/// The longest line a trace may have, in bytes (decompressed): 16 times a
/// row of every column the format defines, with every algorithm's private
/// members. The CLI looks for a trace's header in as many bytes
/// (crates/cli/src/outputs.rs).
pub const MAX_LINE: u64 = 64 << 10;

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
    /// A line longer than [`MAX_LINE`].
    LongLine {
        path: PathBuf,
        line: u64,
    },
    MissingColumn {
        path: PathBuf,
        column: String,
        why: String,
    },
    /// A header naming one column twice: the replay would read one of the
    /// two and ignore the other.
    RepeatedColumn {
        path: PathBuf,
        column: String,
        first: usize,
        second: usize,
    },
    /// A header and no rows: nothing was replayed, which proves nothing.
    NoRows {
        path: PathBuf,
    },
    /// A jiffies clock rate outside [`crate::replay::HZ`].
    BadHz {
        hz: u32,
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

/// A path as a message shows it: whole, its control characters escaped.
fn at(path: &Path) -> String {
    show_name(&path.display().to_string())
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, err } => {
                write!(
                    f,
                    "cannot read trace {}: {}",
                    at(path),
                    kleinrock_files::reason(err)
                )
            }
            TraceError::Csv { path, line, msg } => write!(
                f,
                "{} line {line} is not valid CSV ({msg}); every row needs one cell per header column",
                at(path)
            ),
            TraceError::LongLine { path, line } => write!(
                f,
                "{} line {line} is longer than {} KiB, which no hook trace's line is (a row is a few KiB); is it a trace (docs/TRACE_FORMAT.md)?",
                at(path),
                MAX_LINE >> 10
            ),
            TraceError::MissingColumn { path, column, why } => write!(
                f,
                "{} has no column `{}` ({why}); add it to the trace (see docs/TRACE_FORMAT.md)",
                at(path),
                show(column)
            ),
            TraceError::RepeatedColumn {
                path,
                column,
                first,
                second,
            } => write!(
                f,
                "{} names the column `{}` twice in its header (columns {} and {}); a trace has each column once",
                at(path),
                show(column),
                first + 1,
                second + 1
            ),
            TraceError::NoRows { path } => write!(
                f,
                "{} has a header but no rows: an empty trace proves nothing; record one with \
                 `kleinrock kernel trace` or `kleinrock model --trace-dir`",
                at(path)
            ),
            TraceError::BadHz { hz } => write!(
                f,
                "HZ {hz} is not a clock rate; give HZ as an integer from {} to {} (Linux uses 100, 250, 300 or 1000)",
                crate::replay::HZ.start(),
                crate::replay::HZ.end()
            ),
            TraceError::BadCell { path, row, line, column, why } => write!(
                f,
                "{} row {row} (line {line}), column `{}`: {why}",
                at(path),
                show(column)
            ),
            TraceError::UnknownHook { path, row, line, name } => write!(
                f,
                "{} row {row} (line {line}), column `hook`: unknown hook `{}`; valid hooks are {}",
                at(path),
                show(name),
                Hook::NAMES.join(", ")
            ),
        }
    }
}

impl std::error::Error for TraceError {}

/// A reader that fails once a line grows past [`MAX_LINE`] bytes. It looks
/// for the last newline of each read only, from the end, so it costs
/// little more than the copy.
struct LineLimit<R> {
    inner: R,
    /// Bytes since the last newline.
    run: u64,
}

/// The error [`LineLimit`] fails with, told apart by its message.
const LONG_LINE: &str = "line longer than MAX_LINE";

impl<R: Read> Read for LineLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        match buf[..n].iter().rposition(|&b| b == b'\n') {
            Some(last) => self.run = (n - last - 1) as u64,
            None => self.run += n as u64,
        }
        if self.run > MAX_LINE {
            return Err(io::Error::other(LONG_LINE));
        }
        Ok(n)
    }
}

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
    csv: csv::Reader<LineLimit<Box<dyn Read>>>,
    header: Vec<String>,
    index: HashMap<String, usize>,
    numeric: Vec<usize>,
    rows: u64,
    record: csv::ByteRecord,
    cells: Vec<Option<i128>>,
}

impl TraceReader {
    /// Opens the trace at `path`, which must be a regular file.
    pub fn open(path: &Path) -> Result<TraceReader, TraceError> {
        let io_err = |err| TraceError::Io {
            path: path.to_path_buf(),
            err,
        };
        let file = kleinrock_files::open_file(path).map_err(io_err)?;
        TraceReader::from_reader(Box::new(file), path)
    }

    /// Reads a trace from `input` (gzip-compressed or not); `path` names it
    /// in errors.
    pub fn from_reader(input: Box<dyn Read>, path: &Path) -> Result<TraceReader, TraceError> {
        let io_err = |err| TraceError::Io {
            path: path.to_path_buf(),
            err,
        };
        let mut input = BufReader::with_capacity(1 << 16, input);
        let gz = input.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
        let input: Box<dyn Read> = if gz {
            Box::new(MultiGzDecoder::new(input))
        } else {
            Box::new(input)
        };
        let limited = LineLimit {
            inner: input,
            run: 0,
        };
        let mut csv = csv::ReaderBuilder::new()
            .buffer_capacity(1 << 16)
            .from_reader(limited);
        let header: Vec<String> = match csv.headers() {
            Ok(h) => h.iter().map(|c| c.trim().to_string()).collect(),
            Err(e) => return Err(Self::csv_error(path, 1, e)),
        };
        if header.iter().all(String::is_empty) {
            return Err(TraceError::MissingColumn {
                path: path.to_path_buf(),
                column: "hook".into(),
                why: "the file is empty; a trace starts with a header row".into(),
            });
        }
        let mut index = HashMap::new();
        for (i, c) in header.iter().enumerate() {
            if c.is_empty() {
                continue;
            }
            if let Some(first) = index.insert(c.clone(), i) {
                return Err(TraceError::RepeatedColumn {
                    path: path.to_path_buf(),
                    column: c.clone(),
                    first,
                    second: i,
                });
            }
        }
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

    /// `e` as a sentence; `at`: the line being read, for an error that has
    /// no position of its own.
    fn csv_error(path: &Path, at: u64, e: csv::Error) -> TraceError {
        let line = e.position().map_or(at, |p| p.line());
        let path = path.to_path_buf();
        let said = e.to_string();
        match e.into_kind() {
            csv::ErrorKind::Io(err) if err.to_string() == LONG_LINE => {
                TraceError::LongLine { path, line: at }
            }
            csv::ErrorKind::Io(err) => TraceError::Io { path, err },
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => TraceError::Csv {
                path,
                line,
                msg: format!("{len} cells where the header has {expected_len}"),
            },
            // Only the header is read as text; rows are bytes.
            csv::ErrorKind::Utf8 { err, .. } => TraceError::Csv {
                path,
                line,
                msg: format!(
                    "column {} of the header is not UTF-8 text; a header names its columns in ASCII",
                    err.field() + 1
                ),
            },
            _ => TraceError::Csv {
                path,
                line,
                msg: show(&said),
            },
        }
    }

    /// The path the trace is read from, or its name in errors.
    pub fn path(&self) -> &Path {
        &self.path
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
        // The line after the last record (the header's, before any row).
        let at = self.record.position().map_or(1, |p| p.line()) + 1;
        let more = match self.csv.read_byte_record(&mut self.record) {
            Ok(more) => more,
            Err(e) => return Err(Self::csv_error(&self.path, at, e)),
        };
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
                    let text = String::from_utf8_lossy(cell.trim_ascii());
                    let why = format!("`{}` is not an integer", show(&text));
                    return Err(self.bad_cell(row, &self.header[i].clone(), &why));
                }
            }
        }
        Ok(Some(row))
    }
}
