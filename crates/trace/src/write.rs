//! Writing traces: a [`Recorder`] is a [`Tap`] that turns every hook call
//! it sees into one row, with the connection state before and after, the
//! arguments, the return value and the algorithm's private state.
//!
//! The simulator records through the same tap, so a simulated connection's
//! trace replays like a kernel's.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;
use kleinrock_cc::ops::Tap;
use kleinrock_cc::{CongestionControl, Field, Hook, Sock};

use crate::format::{self, OUTPUTS, RET};

/// Column layout of the traces Kleinrock writes: every column the format
/// defines, plus the algorithm's private members. [`TraceWriter::write_row`]
/// writes cells in exactly this order.
fn columns<S: AsRef<str>>(ca_names: &[S]) -> Vec<String> {
    let mut c: Vec<String> = [
        format::SEQ,
        format::TS_NS,
        format::HOOK,
        format::JIFFIES_IN,
        format::JIFFIES_OUT,
    ]
    .iter()
    .chain(format::ARG_COLUMNS.iter())
    .map(|s| s.to_string())
    .collect();
    c.extend(pre_fields().map(format::pre_column));
    c.extend(OUTPUTS.iter().map(|(name, _)| name.to_string()));
    c.push(RET.to_string());
    c.extend(ca_names.iter().map(|n| format!("pre_ca_{}", n.as_ref())));
    c.extend(ca_names.iter().map(|n| format!("post_ca_{}", n.as_ref())));
    c
}

/// The connection fields written as `pre_` columns (jiffies has its own).
fn pre_fields() -> impl Iterator<Item = Field> {
    Field::ALL.iter().copied().filter(|&f| f != Field::jiffies)
}

/// The private member names an algorithm reports, in its order.
pub fn ca_names<C: CongestionControl + ?Sized>(cc: &C) -> Vec<&'static str> {
    let mut names = Vec::new();
    cc.visit_ca(&mut |n, _| names.push(n));
    names
}

/// A CSV trace writer, gzip-compressed when asked.
pub struct TraceWriter {
    out: csv::Writer<Box<dyn Write>>,
    seq: u64,
    num: itoa::Buffer,
}

impl TraceWriter {
    /// Writes to `path`; gzip if it ends in `.gz` (fast compression: traces
    /// are large and written while a simulation runs). Opened with
    /// `kleinrock_files::create`: a symbolic link, a device, a FIFO or a
    /// directory at `path` is refused, even one put there after the
    /// caller's checks, never written through.
    pub fn create<S: AsRef<str>>(path: &Path, ca_names: &[S]) -> io::Result<TraceWriter> {
        let file = BufWriter::new(kleinrock_files::create(path)?);
        let sink: Box<dyn Write> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(GzEncoder::new(file, Compression::fast()))
        } else {
            Box::new(file)
        };
        TraceWriter::new(sink, ca_names)
    }

    /// Writes to any sink (uncompressed).
    pub fn new<S: AsRef<str>>(sink: Box<dyn Write>, ca_names: &[S]) -> io::Result<TraceWriter> {
        let mut out = csv::WriterBuilder::new()
            .buffer_capacity(1 << 16)
            .from_writer(sink);
        out.write_record(columns(ca_names))?;
        Ok(TraceWriter {
            out,
            seq: 0,
            num: itoa::Buffer::new(),
        })
    }

    fn int(&mut self, v: impl itoa::Integer) -> io::Result<()> {
        let s = self.num.format(v);
        self.out.write_field(s)?;
        Ok(())
    }

    /// Writes one row: the call, the state around it, the private members
    /// before and after (in the order of the names given at creation).
    pub fn write_row(
        &mut self,
        hook: &Hook,
        pre: &Sock,
        post: &Sock,
        ret: u32,
        pre_ca: &[i64],
        post_ca: &[i64],
    ) -> io::Result<()> {
        self.int(self.seq)?;
        self.int(pre.tcp_clock_cache)?;
        self.out.write_field(hook.name())?;
        self.int(pre.jiffies)?;
        self.int(post.jiffies)?;
        for cell in format::arg_cells(hook) {
            match cell {
                Some(v) => self.int(v)?,
                None => self.out.write_field("")?,
            }
        }
        for f in pre_fields() {
            self.int(pre.get(f))?;
        }
        for (_, f) in OUTPUTS {
            self.int(post.get(f))?;
        }
        self.int(ret)?;
        for &v in pre_ca.iter().chain(post_ca) {
            self.int(v)?;
        }
        self.out.write_record(None::<&[u8]>)?;
        self.seq += 1;
        Ok(())
    }

    /// Flushes everything, finishing the gzip stream.
    pub fn finish(self) -> io::Result<()> {
        let mut sink = self
            .out
            .into_inner()
            .map_err(|e| io::Error::other(e.to_string()))?;
        // Dropping a GzEncoder finishes it, but silently; flush first so an
        // I/O error surfaces here.
        sink.flush()?;
        drop(sink);
        Ok(())
    }
}

/// A tap that records every hook call into a [`TraceWriter`].
///
/// I/O errors do not interrupt the connection being recorded; the first
/// one is kept and returned by [`Recorder::finish`], so none is lost.
pub struct Recorder {
    writer: TraceWriter,
    pre: Option<Sock>,
    pre_ca: Vec<i64>,
    post_ca: Vec<i64>,
    error: Option<io::Error>,
    rows: u64,
}

fn ca_values_into<C: CongestionControl + ?Sized>(cc: &C, out: &mut Vec<i64>) {
    out.clear();
    cc.visit_ca(&mut |_, x| out.push(x));
}

impl Recorder {
    /// Records into `writer`, created with the algorithm's [`ca_names`].
    pub fn new(writer: TraceWriter) -> Recorder {
        Recorder {
            writer,
            pre: None,
            pre_ca: Vec::new(),
            post_ca: Vec::new(),
            error: None,
            rows: 0,
        }
    }

    /// Records `cc`'s calls into `path` (gzip if it ends in `.gz`).
    pub fn create<C: CongestionControl + ?Sized>(path: &Path, cc: &C) -> io::Result<Recorder> {
        Ok(Recorder::new(TraceWriter::create(path, &ca_names(cc))?))
    }

    /// Rows recorded so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flushes the file; returns the rows written, or the first error met
    /// while recording.
    pub fn finish(self) -> io::Result<u64> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.writer.finish()?;
        Ok(self.rows)
    }
}

impl<C: CongestionControl + ?Sized> Tap<C> for Recorder {
    fn before(&mut self, _hook: &Hook, sk: &Sock, cc: &C) {
        self.pre = Some(sk.clone());
        ca_values_into(cc, &mut self.pre_ca);
    }

    fn after(&mut self, hook: &Hook, sk: &Sock, cc: &C, ret: u32) {
        let Some(pre) = self.pre.take() else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        ca_values_into(cc, &mut self.post_ca);
        match self
            .writer
            .write_row(hook, &pre, sk, ret, &self.pre_ca, &self.post_ca)
        {
            Ok(()) => self.rows += 1,
            Err(e) => self.error = Some(e),
        }
    }
}
