//! Writing traces: a [`Recorder`] is a [`Tap`] that turns every hook call
//! it sees into one row, with the connection state before and after, the
//! arguments, the return value and the algorithm's private state.
//!
//! The simulator records through the same tap, so a simulated connection's
//! trace replays like a kernel's.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;
use kleinrock_cc::ops::Tap;
use kleinrock_cc::{CongestionControl, Field, Hook, Sock};

use crate::format::{self, OUTPUTS, RET, RS_COLUMNS};

/// Column layout of the traces Kleinrock writes: every column the format
/// defines, plus the algorithm's private members.
fn columns(ca_names: &[&'static str]) -> Vec<String> {
    let mut c: Vec<String> = [
        format::SEQ,
        format::TS_NS,
        format::HOOK,
        format::JIFFIES_IN,
        format::JIFFIES_OUT,
        format::ARG_ACK,
        format::ARG_ACKED,
        format::ARG_U,
        format::ARG_FLAG,
        format::AS_PKTS_ACKED,
        format::AS_RTT_US,
        format::AS_IN_FLIGHT,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    c.extend(RS_COLUMNS.iter().map(|s| s.to_string()));
    c.extend(
        Field::ALL
            .iter()
            .filter(|&&f| f != Field::jiffies)
            .map(|&f| format::pre_column(f)),
    );
    c.extend(OUTPUTS.iter().map(|(name, _)| name.to_string()));
    c.push(RET.to_string());
    c.extend(ca_names.iter().map(|n| format!("pre_ca_{n}")));
    c.extend(ca_names.iter().map(|n| format!("post_ca_{n}")));
    c
}

/// The private member names an algorithm reports, in its order.
pub fn ca_names<C: CongestionControl + ?Sized>(cc: &C) -> Vec<&'static str> {
    let mut names = Vec::new();
    cc.visit_ca(&mut |n, _| names.push(n));
    names
}

fn ca_values<C: CongestionControl + ?Sized>(cc: &C) -> Vec<u64> {
    let mut v = Vec::new();
    cc.visit_ca(&mut |_, x| v.push(x));
    v
}

/// A CSV trace writer, gzip-compressed when asked.
pub struct TraceWriter {
    out: csv::Writer<Box<dyn Write>>,
    width: usize,
    index: std::collections::HashMap<String, usize>,
    row: Vec<String>,
    seq: u64,
}

impl TraceWriter {
    /// Writes to `path`; gzip if it ends in `.gz`.
    pub fn create(path: &Path, ca_names: &[&'static str]) -> io::Result<TraceWriter> {
        let file = BufWriter::new(File::create(path)?);
        let sink: Box<dyn Write> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(GzEncoder::new(file, Compression::default()))
        } else {
            Box::new(file)
        };
        TraceWriter::new(sink, ca_names)
    }

    /// Writes to any sink (uncompressed).
    pub fn new(sink: Box<dyn Write>, ca_names: &[&'static str]) -> io::Result<TraceWriter> {
        let cols = columns(ca_names);
        let mut out = csv::Writer::from_writer(sink);
        out.write_record(&cols)?;
        Ok(TraceWriter {
            width: cols.len(),
            index: cols.iter().enumerate().map(|(i, c)| (c.clone(), i)).collect(),
            row: vec![String::new(); cols.len()],
            out,
            seq: 0,
        })
    }

    fn put(&mut self, col: &str, v: impl ToString) {
        let i = self.index[col];
        self.row[i] = v.to_string();
    }

    /// Writes one row.
    #[allow(clippy::too_many_arguments)]
    pub fn write_row(
        &mut self,
        hook: &Hook,
        pre: &Sock,
        post: &Sock,
        ret: u32,
        ca_names: &[&'static str],
        pre_ca: &[u64],
        post_ca: &[u64],
    ) -> io::Result<()> {
        self.row.iter_mut().for_each(String::clear);
        self.put(format::SEQ, self.seq);
        self.put(format::TS_NS, pre.tcp_clock_cache);
        self.put(format::HOOK, hook.name());
        self.put(format::JIFFIES_IN, pre.jiffies);
        self.put(format::JIFFIES_OUT, post.jiffies);
        for (col, v) in format::hook_args(hook) {
            self.put(col, v);
        }
        for &f in Field::ALL {
            if f != Field::jiffies {
                self.put(&format::pre_column(f), pre.get(f));
            }
        }
        for (col, f) in OUTPUTS {
            self.put(col, post.get(f));
        }
        self.put(RET, ret);
        for (i, n) in ca_names.iter().enumerate() {
            self.put(&format!("pre_ca_{n}"), pre_ca[i]);
            self.put(&format!("post_ca_{n}"), post_ca[i]);
        }
        debug_assert_eq!(self.row.len(), self.width);
        self.out.write_record(&self.row)?;
        self.seq += 1;
        Ok(())
    }

    /// Flushes everything, finishing the gzip stream.
    pub fn finish(self) -> io::Result<()> {
        let sink = self
            .out
            .into_inner()
            .map_err(|e| io::Error::other(e.to_string()))?;
        // Dropping a GzEncoder finishes it, but silently; flush first so an
        // I/O error surfaces here.
        let mut sink = sink;
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
    ca_names: Vec<&'static str>,
    pre: Option<(Sock, Vec<u64>)>,
    error: Option<io::Error>,
    rows: u64,
}

impl Recorder {
    pub fn new(writer: TraceWriter, ca_names: Vec<&'static str>) -> Recorder {
        Recorder {
            writer,
            ca_names,
            pre: None,
            error: None,
            rows: 0,
        }
    }

    /// Records `cc`'s calls into `path` (gzip if it ends in `.gz`).
    pub fn create<C: CongestionControl + ?Sized>(path: &Path, cc: &C) -> io::Result<Recorder> {
        let names = ca_names(cc);
        Ok(Recorder::new(TraceWriter::create(path, &names)?, names))
    }

    /// Rows recorded so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flushes the file; returns the first error met while recording.
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
        self.pre = Some((sk.clone(), ca_values(cc)));
    }

    fn after(&mut self, hook: &Hook, sk: &Sock, cc: &C, ret: u32) {
        let Some((pre, pre_ca)) = self.pre.take() else {
            return;
        };
        if self.error.is_some() {
            return;
        }
        let post_ca = ca_values(cc);
        match self
            .writer
            .write_row(hook, &pre, sk, ret, &self.ca_names, &pre_ca, &post_ca)
        {
            Ok(()) => self.rows += 1,
            Err(e) => self.error = Some(e),
        }
    }
}
