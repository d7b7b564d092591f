//! Kleinrock's results as Arrow tables: a run's series and summaries, and
//! a comparison's metrics, one row per run. The Python package hands these
//! to pyarrow (as Arrow IPC), sweeps write them as Parquet datasets, and
//! `kleinrock sim|compare --format parquet` writes them as Parquet files
//! (feature `parquet`). One home for the columns: their names, types and
//! order are docs/PYTHON.md's "Schemas", and `tests` holds them to it.

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use kleinrock_report::run::{data_link, Run};
use kleinrock_sim::Results;

#[cfg(feature = "parquet")]
mod parquet_files;
#[cfg(feature = "parquet")]
pub use parquet_files::{write_parquet, write_run};

/// A run's tables, by name: its series (`flows`, `queues`, `pings`), as
/// the CSV files of a run hold them, and its summaries (`summary`, one row
/// per flow as summary.csv, with every field; `ping_summary`, `udp`,
/// `links`).
pub const RUN_TABLES: [&str; 7] = [
    "flows",
    "queues",
    "pings",
    "summary",
    "ping_summary",
    "udp",
    "links",
];

/// Columns being built: (name, type, nullable, values).
#[derive(Default)]
struct Columns(Vec<(String, DataType, bool, ArrayRef)>);

impl Columns {
    fn f64(mut self, name: &str, v: impl Iterator<Item = f64>) -> Self {
        let mut b = Float64Builder::new();
        b.extend(v.map(Some));
        self.0.push((
            name.to_string(),
            DataType::Float64,
            false,
            Arc::new(b.finish()),
        ));
        self
    }

    fn opt_f64(mut self, name: &str, v: impl Iterator<Item = Option<f64>>) -> Self {
        let mut b = Float64Builder::new();
        b.extend(v);
        self.0.push((
            name.to_string(),
            DataType::Float64,
            true,
            Arc::new(b.finish()),
        ));
        self
    }

    fn u64(mut self, name: &str, v: impl Iterator<Item = u64>) -> Self {
        let mut b = UInt64Builder::new();
        b.extend(v.map(Some));
        self.0.push((
            name.to_string(),
            DataType::UInt64,
            false,
            Arc::new(b.finish()),
        ));
        self
    }

    fn u32(mut self, name: &str, v: impl Iterator<Item = u32>) -> Self {
        let mut b = UInt32Builder::new();
        b.extend(v.map(Some));
        self.0.push((
            name.to_string(),
            DataType::UInt32,
            false,
            Arc::new(b.finish()),
        ));
        self
    }

    fn str<S: AsRef<str>>(mut self, name: &str, v: impl Iterator<Item = S>) -> Self {
        let mut b = StringBuilder::new();
        for s in v {
            b.append_value(s);
        }
        self.0.push((
            name.to_string(),
            DataType::Utf8,
            false,
            Arc::new(b.finish()),
        ));
        self
    }

    fn done(self) -> RecordBatch {
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = self
            .0
            .into_iter()
            .map(|(name, ty, nullable, a)| (Field::new(name, ty, nullable), a))
            .unzip();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .expect("columns of one length, as declared")
    }
}
/// The flows' series: flows.csv's columns, one row per flow per sample.
pub fn flows(r: &Results) -> RecordBatch {
    let s = &r.flow_series;
    Columns::default()
        .f64("t", s.iter().map(|x| x.t))
        .u32("flow", s.iter().map(|x| x.flow))
        .f64("goodput_bps", s.iter().map(|x| x.goodput_bps))
        .f64("throughput_bps", s.iter().map(|x| x.throughput_bps))
        .u32("cwnd", s.iter().map(|x| x.cwnd))
        .u32("ssthresh", s.iter().map(|x| x.ssthresh))
        .u32("srtt_us", s.iter().map(|x| x.srtt_us))
        .u32("min_rtt_us", s.iter().map(|x| x.min_rtt_us))
        .u32("inflight", s.iter().map(|x| x.inflight))
        .u64("pacing_rate_bps", s.iter().map(|x| x.pacing_rate_bps))
        .f64("delivery_rate_bps", s.iter().map(|x| x.delivery_rate_bps))
        .u64("retransmits", s.iter().map(|x| x.retransmits))
        .u64("segs_out", s.iter().map(|x| x.segs_out))
        .str("ca_state", s.iter().map(|x| x.ca_state))
        .done()
}

/// The bottleneck queues' series: queues.csv's columns.
pub fn queues(r: &Results) -> RecordBatch {
    let s = &r.queue_series;
    Columns::default()
        .f64("t", s.iter().map(|x| x.t))
        .str("link", s.iter().map(|x| x.link))
        .u32("packets", s.iter().map(|x| x.packets))
        .u64("bytes", s.iter().map(|x| x.bytes))
        .u64("delay_us", s.iter().map(|x| x.delay_us))
        .u64("drops", s.iter().map(|x| x.drops))
        .u64("marks", s.iter().map(|x| x.marks))
        .done()
}

/// The pings' series: pings.csv's columns.
pub fn pings(r: &Results) -> RecordBatch {
    let s = &r.ping_series;
    Columns::default()
        .f64("t", s.iter().map(|x| x.t))
        .u32("ping", s.iter().map(|x| x.ping))
        .f64("rtt_ms", s.iter().map(|x| x.rtt_ms))
        .done()
}

/// One row per flow: every field of results.json's `flows`.
pub fn summary(r: &Results) -> RecordBatch {
    let s = &r.flows;
    Columns::default()
        .u32("flow", s.iter().map(|x| x.flow))
        .str("cc", s.iter().map(|x| x.cc.as_str()))
        .str("direction", s.iter().map(|x| x.direction))
        .f64("rtt_ms", s.iter().map(|x| x.rtt_ms))
        .f64("goodput_bps", s.iter().map(|x| x.goodput_bps))
        .u64("bytes", s.iter().map(|x| x.bytes))
        .u64("segments_sent", s.iter().map(|x| x.segments_sent))
        .u64("retransmits", s.iter().map(|x| x.retransmits))
        .u64("rtos", s.iter().map(|x| x.rtos))
        .u64("tlps", s.iter().map(|x| x.tlps))
        .u64("recoveries", s.iter().map(|x| x.recoveries))
        .f64("rtt_p50_ms", s.iter().map(|x| x.rtt_p50_ms))
        .f64("rtt_p95_ms", s.iter().map(|x| x.rtt_p95_ms))
        .f64("rtt_p99_ms", s.iter().map(|x| x.rtt_p99_ms))
        .u64("responses", s.iter().map(|x| x.responses))
        .f64("response_p50_ms", s.iter().map(|x| x.response_p50_ms))
        .f64("response_p95_ms", s.iter().map(|x| x.response_p95_ms))
        .opt_f64("completion_s", s.iter().map(|x| x.completion_s))
        .done()
}

/// One row per ping: results.json's `pings`.
pub fn ping_summary(r: &Results) -> RecordBatch {
    let s = &r.pings;
    Columns::default()
        .u32("ping", s.iter().map(|x| x.ping))
        .f64("rtt_ms", s.iter().map(|x| x.rtt_ms))
        .u64("sent", s.iter().map(|x| x.sent))
        .u64("received", s.iter().map(|x| x.received))
        .f64("rtt_p50_ms", s.iter().map(|x| x.rtt_p50_ms))
        .f64("rtt_p95_ms", s.iter().map(|x| x.rtt_p95_ms))
        .done()
}

/// One row per UDP flow: results.json's `udp`.
pub fn udp(r: &Results) -> RecordBatch {
    let s = &r.udp;
    Columns::default()
        .u32("udp", s.iter().map(|x| x.udp))
        .u64("sent", s.iter().map(|x| x.sent))
        .f64("goodput_bps", s.iter().map(|x| x.goodput_bps))
        .f64("loss", s.iter().map(|x| x.loss))
        .done()
}

/// The two bottleneck links' counters, `up` then `down`.
pub fn links(r: &Results) -> RecordBatch {
    let l = &r.links;
    Columns::default()
        .str("link", ["up", "down"].into_iter())
        .u64("tx_packets", l.iter().map(|x| x.tx_packets))
        .u64("tx_bytes", l.iter().map(|x| x.tx_bytes))
        .u64("queue_drops", l.iter().map(|x| x.queue_drops))
        .u64("loss_drops", l.iter().map(|x| x.loss_drops))
        .u64("marks", l.iter().map(|x| x.marks))
        .done()
}

/// The table of [`RUN_TABLES`] named `name`.
pub fn run_table(r: &Results, name: &str) -> Option<RecordBatch> {
    Some(match name {
        "flows" => flows(r),
        "queues" => queues(r),
        "pings" => pings(r),
        "summary" => summary(r),
        "ping_summary" => ping_summary(r),
        "udp" => udp(r),
        "links" => links(r),
        _ => return None,
    })
}

/// The series table `name` (`flows`, `queues` or `pings`) of several
/// runs, one after another, each row led by its run's `run_id`: a sweep's
/// time series.
pub fn series(name: &str, runs: &[(u64, &Results)]) -> Option<RecordBatch> {
    if !["flows", "queues", "pings"].contains(&name) {
        return None;
    }
    let mut schema = None;
    let mut batches = Vec::with_capacity(runs.len());
    for (id, r) in runs {
        let t = run_table(r, name)?;
        let ids: ArrayRef = Arc::new(arrow_array::UInt64Array::from(vec![*id; t.num_rows()]));
        let mut fields = vec![Arc::new(Field::new("run_id", DataType::UInt64, false))];
        fields.extend(t.schema().fields().iter().cloned());
        let mut columns = vec![ids];
        columns.extend(t.columns().iter().cloned());
        let s = schema
            .get_or_insert_with(|| Arc::new(Schema::new(fields)))
            .clone();
        batches.push(RecordBatch::try_new(s, columns).expect("one more column of the same length"));
    }
    let schema = match schema {
        Some(s) => s,
        None => {
            let empty = run_table(&Results::new(0, 1, 0, 0), name)?;
            let mut fields = vec![Arc::new(Field::new("run_id", DataType::UInt64, false))];
            fields.extend(empty.schema().fields().iter().cloned());
            Arc::new(Schema::new(fields))
        }
    };
    Some(arrow_select::concat::concat_batches(&schema, &batches).expect("batches of one schema"))
}

/// A comparison's metrics, one row per run (numbered `id`: its place in
/// the comparison's plan): the algorithm, the swept values as written
/// (one column per key of `sweeps`, named for it), the seed, every metric
/// of summary.csv (docs/COMPARE.md) at full precision, power, the data
/// link's drops and marks, and the run's name in the report.
pub fn metrics(sweeps: &[String], runs: &[(u64, &Run)]) -> RecordBatch {
    let m: Vec<_> = runs.iter().map(|(_, r)| r.metrics()).collect();
    let data = |r: &Run| {
        let i = usize::from(data_link(&r.results) == "down");
        r.results.links[i]
    };
    let mut c = Columns::default()
        .u64("run_id", runs.iter().map(|(id, _)| *id))
        .str("algorithm", runs.iter().map(|(_, r)| r.spec.as_str()));
    for (k, key) in sweeps.iter().enumerate() {
        let values = runs
            .iter()
            .map(|(_, r)| r.point.get(k).map_or("", |(_, v)| v.as_str()));
        c = c.str(key, values);
    }
    c.u64("seed", runs.iter().map(|(_, r)| r.seed))
        .f64("goodput_bps", m.iter().map(|x| x.goodput_bps))
        .f64("rtt_p50_ms", m.iter().map(|x| x.rtt_p50_ms))
        .f64("rtt_p95_ms", m.iter().map(|x| x.rtt_p95_ms))
        .f64("queue_p95_ms", m.iter().map(|x| x.queue_p95_ms))
        .u64("retransmits", m.iter().map(|x| x.retransmits))
        .f64("jain", m.iter().map(|x| x.jain))
        .opt_f64("completion_s", m.iter().map(|x| x.completion_s))
        .f64("power", m.iter().map(|x| x.power()))
        .u64("queue_drops", runs.iter().map(|(_, r)| data(r).queue_drops))
        .u64("loss_drops", runs.iter().map(|(_, r)| data(r).loss_drops))
        .u64("marks", runs.iter().map(|(_, r)| data(r).marks))
        .str("run", runs.iter().map(|(_, r)| r.slug()))
        .done()
}

#[cfg(test)]
mod tests;
