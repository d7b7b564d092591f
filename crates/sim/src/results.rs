//! What a run produces: per-flow and per-queue time series at the sample
//! interval, per-flow summaries, link counters; written as JSON and CSV,
//! and summarised for a terminal.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use crate::decimal::{push_fixed, push_int};
use crate::json::{record_key, JsonWriter};
use crate::link::LinkStats;
use crate::time::Time;

/// A log-linear histogram of microsecond values (64 sub-buckets per power
/// of two, under 1.6% error), for RTT percentiles without storing samples.
/// Its 17 KB of buckets are allocated with the first sample: a flow has
/// two (RTTs and response times), and 100,000 flows' unused ones would be
/// gigabytes.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Histogram {
    /// Empty until the first sample, then `BUCKETS` long.
    buckets: Vec<u64>,
    count: u64,
}

const SUB_BITS: u32 = 6;
const BUCKETS: usize = 33 << SUB_BITS;

impl Histogram {
    fn bucket(v: u32) -> usize {
        let v = v.max(1);
        let exp = 31 - v.leading_zeros();
        if exp < SUB_BITS {
            return v as usize;
        }
        let mantissa = (v >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
        (((exp - SUB_BITS + 1) << SUB_BITS) | mantissa) as usize
    }

    /// The smallest value of bucket `b`, and its width.
    fn bucket_range(b: usize) -> (u64, u64) {
        let b = b as u64;
        if b < (1 << SUB_BITS) {
            return (b, 1);
        }
        let exp = (b >> SUB_BITS) + SUB_BITS as u64 - 1;
        let mantissa = b & ((1 << SUB_BITS) - 1);
        let width = 1u64 << (exp - SUB_BITS as u64);
        ((1u64 << exp) + mantissa * width, width)
    }

    pub fn add(&mut self, v: u32) {
        // The bounds check indexing needs anyway finds the empty histogram:
        // the first sample costs nothing more than the others.
        match self.buckets.get_mut(Self::bucket(v)) {
            Some(n) => *n += 1,
            None => self.first(v),
        }
        self.count += 1;
    }

    /// Allocates the buckets, with `v` in them.
    #[cold]
    #[inline(never)]
    fn first(&mut self, v: u32) {
        self.allocate();
        self.buckets[Self::bucket(v)] += 1;
    }

    fn allocate(&mut self) {
        self.buckets = vec![0; BUCKETS];
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        if other.buckets.is_empty() {
            return;
        }
        if self.buckets.is_empty() {
            self.allocate();
        }
        // Only the buckets `other` uses are written: the rest of a fresh
        // histogram's 17 KB stays untouched (no page faults for zeros).
        for (a, &b) in self.buckets.iter_mut().zip(&other.buckets) {
            if b != 0 {
                *a += b;
            }
        }
        self.count += other.count;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The distribution as (bucket midpoint, fraction of samples at or
    /// below it), one point per non-empty bucket.
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let mut seen = 0;
        let mut out = Vec::new();
        for (i, &n) in self.buckets.iter().enumerate() {
            if n > 0 {
                seen += n;
                let (lo, w) = Self::bucket_range(i);
                out.push((lo + w / 2, seen as f64 / self.count as f64));
            }
        }
        out
    }

    /// The value below which a fraction `q` of samples fall (bucket
    /// midpoint), 0 with no samples.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let target = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= target {
                let (lo, w) = Self::bucket_range(i);
                return lo + w / 2;
            }
        }
        0
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowSample {
    pub t: f64,
    pub flow: u32,
    /// Payload the receiver took in order over the interval, bits/s: what
    /// the application got (bursty after a loss, when a hole fills).
    pub goodput_bps: f64,
    /// Payload delivered to the receiver, ACKed or SACKed, over the
    /// interval, bits/s: the sender's view, as netperf reports it.
    pub throughput_bps: f64,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    pub inflight: u32,
    pub pacing_rate_bps: u64,
    /// The rate sampler's latest delivery rate (payload), bits/s.
    pub delivery_rate_bps: f64,
    pub retransmits: u64,
    /// Segments sent so far, retransmissions included (`tp->segs_out`).
    pub segs_out: u64,
    #[serde(deserialize_with = "known_name")]
    pub ca_state: Name,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueueSample {
    pub t: f64,
    #[serde(deserialize_with = "known_name")]
    pub link: Name,
    pub packets: u32,
    pub bytes: u64,
    pub delay_us: u64,
    pub drops: u64,
    pub marks: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowSummary {
    pub flow: u32,
    pub cc: String,
    #[serde(deserialize_with = "known_name")]
    pub direction: Name,
    pub rtt_ms: f64,
    pub goodput_bps: f64,
    pub bytes: u64,
    pub segments_sent: u64,
    pub retransmits: u64,
    pub rtos: u64,
    pub tlps: u64,
    pub recoveries: u64,
    pub rtt_p50_ms: f64,
    pub rtt_p95_ms: f64,
    pub rtt_p99_ms: f64,
    /// Request/response flows: responses completed and their times.
    pub responses: u64,
    pub response_p50_ms: f64,
    pub response_p95_ms: f64,
    pub completion_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingSample {
    pub t: f64,
    pub ping: u32,
    pub rtt_ms: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PingSummary {
    pub ping: u32,
    /// Base RTT of the ping path.
    pub rtt_ms: f64,
    pub sent: u64,
    pub received: u64,
    pub rtt_p50_ms: f64,
    pub rtt_p95_ms: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UdpSummary {
    pub udp: u32,
    pub sent: u64,
    pub goodput_bps: f64,
    /// Fraction of bytes lost.
    pub loss: f64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct LinkSummary {
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub marks: u64,
}

impl From<LinkSummary> for LinkStats {
    fn from(s: LinkSummary) -> Self {
        LinkStats {
            tx_packets: s.tx_packets,
            tx_bytes: s.tx_bytes,
            queue_drops: s.queue_drops,
            loss_drops: s.loss_drops,
            marks: s.marks,
        }
    }
}

/// A name a results record holds, one of [`NAMES`]: `&'static str`
/// under another name, since serde's derive takes a field written
/// `&'static str` to borrow from its input, which would then have to live
/// forever.
pub type Name = &'static str;

/// Every name a results record holds in a `&'static str` (a link, a
/// flow's direction, a congestion-avoidance state, as either engine
/// writes them): results read back (`Deserialize`, which carries runs
/// between processes) name the same static strings.
const NAMES: [Name; 10] = [
    "up", "down", "upload", "download", "Open", "Disorder", "CWR", "Recovery", "Loss", "?",
];

fn known_name<'de, D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
    let s = String::deserialize(d)?;
    NAMES
        .iter()
        .find(|n| **n == s)
        .copied()
        .ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not a name results hold")))
}

/// The links' counters as [`LinkSummary`]s, which serde reads and writes.
mod links {
    use super::{LinkStats, LinkSummary};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(l: &[LinkStats; 2], s: S) -> Result<S::Ok, S::Error> {
        [LinkSummary::from(l[0]), LinkSummary::from(l[1])].serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[LinkStats; 2], D::Error> {
        let [up, down] = <[LinkSummary; 2]>::deserialize(d)?;
        Ok([up.into(), down.into()])
    }
}

impl From<LinkStats> for LinkSummary {
    fn from(s: LinkStats) -> Self {
        LinkSummary {
            tx_packets: s.tx_packets,
            tx_bytes: s.tx_bytes,
            queue_drops: s.queue_drops,
            loss_drops: s.loss_drops,
            marks: s.marks,
        }
    }
}

// The JSON of each record, fields in declaration order (as serde's derive
// writes them; `json_matches_serde_json` holds the two together).

impl FlowSummary {
    fn json(&self, j: &mut JsonWriter) {
        j.begin_object();
        j.at_u64(record_key!("flow"), self.flow.into());
        j.at_str(record_key!("cc"), &self.cc);
        j.at_str(record_key!("direction"), self.direction);
        j.at_f64(record_key!("rtt_ms"), self.rtt_ms);
        j.at_f64(record_key!("goodput_bps"), self.goodput_bps);
        j.at_u64(record_key!("bytes"), self.bytes);
        j.at_u64(record_key!("segments_sent"), self.segments_sent);
        j.at_u64(record_key!("retransmits"), self.retransmits);
        j.at_u64(record_key!("rtos"), self.rtos);
        j.at_u64(record_key!("tlps"), self.tlps);
        j.at_u64(record_key!("recoveries"), self.recoveries);
        j.at_f64(record_key!("rtt_p50_ms"), self.rtt_p50_ms);
        j.at_f64(record_key!("rtt_p95_ms"), self.rtt_p95_ms);
        j.at_f64(record_key!("rtt_p99_ms"), self.rtt_p99_ms);
        j.at_u64(record_key!("responses"), self.responses);
        j.at_f64(record_key!("response_p50_ms"), self.response_p50_ms);
        j.at_f64(record_key!("response_p95_ms"), self.response_p95_ms);
        j.key_prefixed(record_key!("completion_s"));
        j.opt_f64(self.completion_s);
        j.end_object();
    }
}

impl FlowSample {
    fn json(&self, j: &mut JsonWriter) {
        j.begin_object();
        j.at_f64(record_key!("t"), self.t);
        j.at_u64(record_key!("flow"), self.flow.into());
        j.at_f64(record_key!("goodput_bps"), self.goodput_bps);
        j.at_f64(record_key!("throughput_bps"), self.throughput_bps);
        j.at_u64(record_key!("cwnd"), self.cwnd.into());
        j.at_u64(record_key!("ssthresh"), self.ssthresh.into());
        j.at_u64(record_key!("srtt_us"), self.srtt_us.into());
        j.at_u64(record_key!("min_rtt_us"), self.min_rtt_us.into());
        j.at_u64(record_key!("inflight"), self.inflight.into());
        j.at_u64(record_key!("pacing_rate_bps"), self.pacing_rate_bps);
        j.at_f64(record_key!("delivery_rate_bps"), self.delivery_rate_bps);
        j.at_u64(record_key!("retransmits"), self.retransmits);
        j.at_u64(record_key!("segs_out"), self.segs_out);
        j.at_str(record_key!("ca_state"), self.ca_state);
        j.end_object();
    }
}

impl QueueSample {
    fn json(&self, j: &mut JsonWriter) {
        j.begin_object();
        j.at_f64(record_key!("t"), self.t);
        j.at_str(record_key!("link"), self.link);
        j.at_u64(record_key!("packets"), self.packets.into());
        j.at_u64(record_key!("bytes"), self.bytes);
        j.at_u64(record_key!("delay_us"), self.delay_us);
        j.at_u64(record_key!("drops"), self.drops);
        j.at_u64(record_key!("marks"), self.marks);
        j.end_object();
    }
}

impl PingSample {
    fn json(&self, j: &mut JsonWriter) {
        j.begin_object();
        j.at_f64(record_key!("t"), self.t);
        j.at_u64(record_key!("ping"), self.ping.into());
        j.at_f64(record_key!("rtt_ms"), self.rtt_ms);
        j.end_object();
    }
}

impl PingSummary {
    fn json(&self, j: &mut JsonWriter) {
        j.begin_object();
        j.at_u64(record_key!("ping"), self.ping.into());
        j.at_f64(record_key!("rtt_ms"), self.rtt_ms);
        j.at_u64(record_key!("sent"), self.sent);
        j.at_u64(record_key!("received"), self.received);
        j.at_f64(record_key!("rtt_p50_ms"), self.rtt_p50_ms);
        j.at_f64(record_key!("rtt_p95_ms"), self.rtt_p95_ms);
        j.end_object();
    }
}

impl UdpSummary {
    fn json(&self, j: &mut JsonWriter) {
        j.begin_object();
        j.at_u64(record_key!("udp"), self.udp.into());
        j.at_u64(record_key!("sent"), self.sent);
        j.at_f64(record_key!("goodput_bps"), self.goodput_bps);
        j.at_f64(record_key!("loss"), self.loss);
        j.end_object();
    }
}

impl LinkSummary {
    fn json(&self, j: &mut JsonWriter) {
        j.begin_object();
        j.field_u64("tx_packets", self.tx_packets);
        j.field_u64("tx_bytes", self.tx_bytes);
        j.field_u64("queue_drops", self.queue_drops);
        j.field_u64("loss_drops", self.loss_drops);
        j.field_u64("marks", self.marks);
        j.end_object();
    }
}

/// Appends one results file's bytes to a buffer, calling the spill
/// function on the buffer after each record.
type Fill = fn(&Results, &mut Vec<u8>, &mut dyn FnMut(&mut Vec<u8>));

/// A results file is written whenever its buffer holds this much: writing
/// touches (and the kernel zeroes) no more memory than this for any run,
/// and a small run's file still goes out in a write or two.
const SPILL: usize = 64 << 10;

/// Creates the file at `path`, replacing a regular file there
/// (`kleinrock_files::replace`): the directory was checked before the run,
/// and a link, device or FIFO put there since is refused, not written
/// through or removed.
///
/// Removed and created anew rather than truncated: on ext4, a file
/// truncated to zero and rewritten gets its blocks allocated when it is
/// closed (`auto_da_alloc`, which guards the replace-by-truncate pattern),
/// and freeing those blocks when the next run overwrites it cost about
/// 0.5 ms per 200 KB file on the machine of docs/PERFORMANCE.md; a new
/// file's blocks stay unallocated until writeback, so removing it before
/// then frees nothing.
fn replace_file(path: &Path) -> io::Result<std::fs::File> {
    kleinrock_files::replace(path)
}

/// The records a series is reserved for before a run (6 MB of flow
/// samples): 30 s of samples every 100 ms for 200 flows.
const RESERVED_SAMPLES: usize = 1 << 16;

/// A run's results. Serde's forms hold every field (the RTT histogram's
/// buckets too), for carrying a run to another process; the files a run
/// writes are [`Results::write`]'s.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    pub duration_s: f64,
    pub seed: u64,
    pub flows: Vec<FlowSummary>,
    /// Every flow's RTT samples together (µs).
    pub rtt: Histogram,
    pub flow_series: Vec<FlowSample>,
    pub queue_series: Vec<QueueSample>,
    pub pings: Vec<PingSummary>,
    pub ping_series: Vec<PingSample>,
    pub udp: Vec<UdpSummary>,
    #[serde(with = "links")]
    pub links: [LinkStats; 2],
    pub events: u64,
}

impl Results {
    /// Empty results of a run of `duration` with `flows` TCP flows sampled
    /// every `sample_interval`. Their series are reserved up to
    /// [`RESERVED_SAMPLES`] records each (no growth, so no copying, while
    /// an ordinary run samples), and grow beyond: what a run holds comes
    /// from its input, and is never allocated from it in one piece.
    pub fn new(duration: Time, sample_interval: Time, seed: u64, flows: usize) -> Results {
        let samples = (duration / sample_interval.max(1)).saturating_add(1);
        let reserve = |per_sample: usize| {
            samples
                .saturating_mul(per_sample as u64)
                .min(RESERVED_SAMPLES as u64) as usize
        };
        Results {
            duration_s: duration as f64 / 1e9,
            seed,
            flows: Vec::with_capacity(flows.min(RESERVED_SAMPLES)),
            rtt: Histogram::default(),
            flow_series: Vec::with_capacity(reserve(flows)),
            queue_series: Vec::with_capacity(reserve(2)),
            pings: Vec::new(),
            ping_series: Vec::new(),
            udp: Vec::new(),
            links: [LinkStats::default(); 2],
            events: 0,
        }
    }

    /// Jain's fairness index of the flows' goodputs.
    pub fn jain(&self) -> f64 {
        let x: Vec<f64> = self.flows.iter().map(|f| f.goodput_bps).collect();
        let sum: f64 = x.iter().sum();
        let sq: f64 = x.iter().map(|v| v * v).sum();
        if sq == 0.0 {
            return 1.0;
        }
        sum * sum / (x.len() as f64 * sq)
    }

    /// The whole run as JSON.
    pub fn to_json(&self) -> String {
        let mut v = Vec::new();
        self.json_into(&mut v);
        String::from_utf8(v).expect("JSON is UTF-8")
    }

    /// Streams the whole run as JSON into `w`.
    pub fn write_json<W: Write>(&self, mut w: W) -> io::Result<()> {
        let mut v = Vec::new();
        self.json_into(&mut v);
        w.write_all(&v)
    }

    /// Appends the whole run as pretty-printed JSON (what serde_json's
    /// `to_writer_pretty` would write for these structs, in their field
    /// order).
    pub fn json_into(&self, out: &mut Vec<u8>) {
        out.reserve(
            4096 + 1024 * (self.flows.len() + self.pings.len() + self.udp.len())
                + 450 * self.flow_series.len()
                + 220 * self.queue_series.len()
                + 90 * self.ping_series.len(),
        );
        self.json_spilled(out, &mut |_| {});
    }

    fn json_spilled(&self, out: &mut Vec<u8>, spill: &mut dyn FnMut(&mut Vec<u8>)) {
        let mut j = JsonWriter::new(out);
        j.begin_object();
        j.field_f64("duration_s", self.duration_s);
        j.field_u64("seed", self.seed);
        j.field_u64("events", self.events);
        j.field_array("flows", &self.flows, |j, f| f.json(j));
        j.key("links");
        j.begin_object();
        for (name, l) in [("up", self.links[0]), ("down", self.links[1])] {
            j.key(name);
            LinkSummary::from(l).json(&mut j);
        }
        j.end_object();
        j.field_array("pings", &self.pings, |j, p| p.json(j));
        j.field_array("udp", &self.udp, |j, u| u.json(j));
        j.field_array("flow_series", &self.flow_series, |j, s| {
            s.json(j);
            spill(j.buf());
        });
        j.field_array("queue_series", &self.queue_series, |j, s| {
            s.json(j);
            spill(j.buf());
        });
        j.field_array("ping_series", &self.ping_series, |j, s| {
            s.json(j);
            spill(j.buf());
        });
        j.end_object();
    }

    /// flows.csv.
    fn flows_csv(&self, out: &mut Vec<u8>, spill: &mut dyn FnMut(&mut Vec<u8>)) {
        out.extend_from_slice(b"t,flow,goodput_bps,throughput_bps,cwnd,ssthresh,srtt_us,min_rtt_us,inflight,pacing_rate_bps,delivery_rate_bps,retransmits,segs_out,ca_state\n");
        for s in &self.flow_series {
            push_fixed(out, s.t, 6);
            out.push(b',');
            push_int(out, s.flow);
            out.push(b',');
            push_fixed(out, s.goodput_bps, 0);
            out.push(b',');
            push_fixed(out, s.throughput_bps, 0);
            for v in [s.cwnd, s.ssthresh, s.srtt_us, s.min_rtt_us, s.inflight] {
                out.push(b',');
                push_int(out, v);
            }
            out.push(b',');
            push_int(out, s.pacing_rate_bps);
            out.push(b',');
            push_fixed(out, s.delivery_rate_bps, 0);
            out.push(b',');
            push_int(out, s.retransmits);
            out.push(b',');
            push_int(out, s.segs_out);
            out.push(b',');
            out.extend_from_slice(s.ca_state.as_bytes());
            out.push(b'\n');
            spill(out);
        }
    }

    /// queues.csv.
    fn queues_csv(&self, out: &mut Vec<u8>, spill: &mut dyn FnMut(&mut Vec<u8>)) {
        out.extend_from_slice(b"t,link,packets,bytes,delay_us,drops,marks\n");
        for s in &self.queue_series {
            push_fixed(out, s.t, 6);
            out.push(b',');
            out.extend_from_slice(s.link.as_bytes());
            out.push(b',');
            push_int(out, s.packets);
            for v in [s.bytes, s.delay_us, s.drops, s.marks] {
                out.push(b',');
                push_int(out, v);
            }
            out.push(b'\n');
            spill(out);
        }
    }

    /// pings.csv.
    fn pings_csv(&self, out: &mut Vec<u8>, spill: &mut dyn FnMut(&mut Vec<u8>)) {
        out.extend_from_slice(b"t,ping,rtt_ms\n");
        for s in &self.ping_series {
            push_fixed(out, s.t, 6);
            out.push(b',');
            push_int(out, s.ping);
            out.push(b',');
            push_fixed(out, s.rtt_ms, 3);
            out.push(b'\n');
            spill(out);
        }
    }

    /// summary.csv (one row per flow).
    fn summary_csv(&self, out: &mut Vec<u8>, _spill: &mut dyn FnMut(&mut Vec<u8>)) {
        out.extend_from_slice(b"flow,cc,direction,rtt_ms,goodput_bps,bytes,retransmits,rtos,tlps,rtt_p50_ms,rtt_p95_ms,rtt_p99_ms,completion_s\n");
        for x in &self.flows {
            // One row per flow: core::fmt's shortest floats are fine here.
            let _ = writeln!(
                out,
                "{},{},{},{},{:.0},{},{},{},{},{},{},{},{}",
                x.flow,
                x.cc,
                x.direction,
                x.rtt_ms,
                x.goodput_bps,
                x.bytes,
                x.retransmits,
                x.rtos,
                x.tlps,
                x.rtt_p50_ms,
                x.rtt_p95_ms,
                x.rtt_p99_ms,
                x.completion_s.map_or(String::new(), |c| c.to_string())
            );
        }
    }

    /// Writes results.json, flows.csv, queues.csv, pings.csv and
    /// summary.csv through one reused buffer of about [`SPILL`] bytes.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut buf = Vec::with_capacity(SPILL + (8 << 10));
        let files: [(&str, Fill); 5] = [
            ("results.json", Results::json_spilled),
            ("flows.csv", Results::flows_csv),
            ("queues.csv", Results::queues_csv),
            ("pings.csv", Results::pings_csv),
            ("summary.csv", Results::summary_csv),
        ];
        for (name, fill) in files {
            let mut file = replace_file(&dir.join(name))?;
            let mut status = Ok(());
            buf.clear();
            fill(self, &mut buf, &mut |b| {
                if b.len() >= SPILL {
                    if status.is_ok() {
                        status = file.write_all(b);
                    }
                    b.clear();
                }
            });
            status?;
            file.write_all(&buf)?;
        }
        Ok(())
    }

    /// A short table for the terminal.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:>4} {:<28} {:>6} {:>12} {:>8} {:>5} {:>9} {:>9} {:>9}",
            "flow", "cc", "dir", "goodput", "retrans", "RTOs", "RTT p50", "RTT p95", "done"
        );
        for f in &self.flows {
            let _ = writeln!(
                s,
                "{:>4} {:<28} {:>6} {:>7.2} Mb/s {:>8} {:>5} {:>6.1} ms {:>6.1} ms {:>9}",
                f.flow,
                f.cc,
                if f.direction == "upload" {
                    "up"
                } else {
                    "down"
                },
                f.goodput_bps / 1e6,
                f.retransmits,
                f.rtos,
                f.rtt_p50_ms,
                f.rtt_p95_ms,
                f.completion_s
                    .map_or("-".to_string(), |c| format!("{c:.3} s"))
            );
        }
        for p in &self.pings {
            let _ = writeln!(
                s,
                "ping {} (base {:.1} ms): RTT p50 {:.1} ms, p95 {:.1} ms, {} of {} answered",
                p.ping, p.rtt_ms, p.rtt_p50_ms, p.rtt_p95_ms, p.received, p.sent
            );
        }
        for u in &self.udp {
            let _ = writeln!(
                s,
                "udp {}: {:.2} Mb/s delivered, {:.2}% lost",
                u.udp,
                u.goodput_bps / 1e6,
                u.loss * 100.0
            );
        }
        for f in self.flows.iter().filter(|f| f.responses > 0) {
            let _ = writeln!(
                s,
                "flow {}: {} responses, time p50 {:.1} ms, p95 {:.1} ms",
                f.flow, f.responses, f.response_p50_ms, f.response_p95_ms
            );
        }
        let up = self.links[0];
        let _ = writeln!(
            s,
            "bottleneck up: {} packets sent, {} dropped by the queue, {} by loss, {} marked; Jain fairness {:.3}",
            up.tx_packets,
            up.queue_drops,
            up.loss_drops,
            up.marks,
            self.jain()
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_within_one_percent() {
        let mut h = Histogram::default();
        for v in 1..=10_000u32 {
            h.add(v);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((p50 / 5000.0 - 1.0).abs() < 0.016, "{p50}");
        assert!((p99 / 9900.0 - 1.0).abs() < 0.016, "{p99}");
        let mut h = Histogram::default();
        h.add(7);
        h.add(u32::MAX);
        assert_eq!(h.quantile(0.5), 7);
        assert!(h.quantile(1.0) > 4_000_000_000);
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }

    #[test]
    fn a_histogram_allocates_with_its_first_sample() {
        let mut h = Histogram::default();
        assert_eq!(h.buckets.capacity(), 0);
        h.merge(&Histogram::default());
        assert_eq!(
            (h.buckets.capacity(), h.cdf(), h.quantile(0.5)),
            (0, vec![], 0)
        );
        h.add(1000);
        assert_eq!(h.buckets.len(), BUCKETS);
        let mut g = Histogram::default();
        g.merge(&h);
        assert_eq!((g.count(), g.quantile(0.5)), (1, h.quantile(0.5)));
    }

    #[test]
    fn series_are_reserved_within_a_bound_whatever_the_input() {
        // A year in nanosecond samples for 100,000 flows: what would have
        // been reserved aborted on allocation; now a bounded start.
        let r = Results::new(u64::MAX, 1, 1, 100_000);
        assert!(r.flow_series.capacity() <= RESERVED_SAMPLES);
        assert!(r.queue_series.capacity() <= RESERVED_SAMPLES);
        // An ordinary run is reserved in full.
        let r = Results::new(30_000_000_000, 100_000_000, 1, 10);
        assert_eq!(r.flow_series.capacity(), 3010);
        assert_eq!(r.queue_series.capacity(), 602);
    }

    /// Issue 16: results were written with `File::create`, protected only
    /// by the check of the directory before the run: a link or FIFO put in
    /// its place since was written through, or blocked the writer.
    #[test]
    fn results_replace_files_and_never_write_through_what_replaced_one() {
        let dir = std::env::temp_dir().join(format!("kleinrock-results-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let r = Results::new(1_000_000_000, 100_000_000, 1, 1);
        r.write(&dir).unwrap();
        r.write(&dir).unwrap();
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::remove_file(dir.join("flows.csv")).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("flows.csv")).unwrap();
        let e = r.write(&dir).unwrap_err().to_string();
        assert!(
            e.ends_with("flows.csv is a symbolic link, not a regular file"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        std::fs::remove_file(dir.join("flows.csv")).unwrap();
        let mkfifo = std::process::Command::new("mkfifo")
            .arg(dir.join("flows.csv"))
            .status();
        assert!(mkfifo.unwrap().success());
        let e = r.write(&dir).unwrap_err().to_string();
        assert!(
            e.ends_with("flows.csv is a named pipe (FIFO), not a regular file"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn merged_histograms_and_their_cdf() {
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        for v in 1..=50u32 {
            a.add(v);
            b.add(v + 50);
        }
        a.merge(&b);
        assert_eq!(a.count(), 100);
        assert_eq!(a.quantile(0.5), 50);
        let cdf = a.cdf();
        assert_eq!(cdf.first(), Some(&(1, 0.01)));
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!(cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
    }
}
