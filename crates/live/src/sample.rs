//! What a lab run records, in the simulator's results format: every flow's
//! `TCP_INFO` at each sample, the link's counters, and at the end each
//! flow's, ping's and UDP flow's summary. docs/LAB.md says what each
//! column means in the lab, and which the kernel has no counterpart for.
//!
//! Counters are taken from the moment the connections were made: the
//! handshake's segment and byte (which `tcpi_bytes_acked` and
//! `tcpi_delivered` count) are not the run's.

use std::sync::atomic::Ordering;
use std::time::Instant;

use kleinrock_cc::CaState;
use kleinrock_lab::Lab;
use kleinrock_sim::link::LinkStats;
use kleinrock_sim::results::{FlowSample, FlowSummary, Histogram, PingSummary, UdpSummary};
use kleinrock_sim::time::{Time, SEC};
use kleinrock_sim::Results;

use crate::link::Counters;
use crate::plan::Plan;
use crate::traffic::Traffic;
use crate::Error;
use kleinrock_lab::TcpInfo as Info;

/// One flow's counters at a moment: the data's sender and receiver.
#[derive(Clone, Copy)]
struct Snapshot {
    at: Instant,
    tx: Info,
    rx: Info,
}

struct Flow {
    base: Snapshot,
    last: Snapshot,
    /// The smoothed RTT at each sample while the flow was active, µs.
    rtt: Histogram,
}

/// Samples a run's flows and link, and summarises them at the end.
pub struct Sampler<'a> {
    plan: &'a Plan,
    traffic: &'a Traffic,
    flows: Vec<Flow>,
    counters: Counters,
    /// The flows' counters and the link's at the run's end.
    end: Option<(Vec<Snapshot>, [LinkStats; 2])>,
    results: Results,
}

fn snapshot(traffic: &Traffic, i: usize) -> Result<Snapshot, Error> {
    let (tx, rx) = traffic.tcp[i]
        .info()
        .map_err(|e| Error::failed(format!("cannot read TCP_INFO of flow {i}: {e}")))?;
    Ok(Snapshot {
        at: Instant::now(),
        tx,
        rx,
    })
}

/// Bits per second of `bytes` over `from`..`to`.
fn rate(bytes: u64, from: Instant, to: Instant) -> f64 {
    let s = to.saturating_duration_since(from).as_secs_f64();
    if s <= 0.0 {
        0.0
    } else {
        bytes as f64 * 8.0 / s
    }
}

impl<'a> Sampler<'a> {
    /// Takes every counter's starting value, before the run's clock starts.
    pub fn new(plan: &'a Plan, traffic: &'a Traffic, lab: &Lab) -> Result<Sampler<'a>, Error> {
        let mut flows = Vec::new();
        for i in 0..traffic.tcp.len() {
            let base = snapshot(traffic, i)?;
            flows.push(Flow {
                base,
                last: base,
                rtt: Histogram::default(),
            });
        }
        let c = &plan.config;
        let counters = Counters::start(lab, c)?;
        Ok(Sampler {
            plan,
            traffic,
            flows,
            counters,
            end: None,
            results: Results::new(c.duration, c.sample_interval, c.seed, c.flows.len()),
        })
    }

    /// When flow `i` stops counting as active (its transfer done, its
    /// `stop`, or the run's end), ns.
    fn end_of(&self, i: usize) -> Time {
        let c = &self.plan.config;
        let f = &c.flows[i];
        let done = self.traffic.tcp[i].outcome.done_at.load(Ordering::SeqCst);
        match (f.request_response, done) {
            (None, d) if d != u64::MAX => d,
            _ => f.stop.unwrap_or(c.duration),
        }
        .min(c.duration)
    }

    /// The samples at run time `t`, ns.
    pub fn sample(&mut self, t: Time, lab: &Lab) -> Result<(), Error> {
        let secs = t as f64 / SEC as f64;
        for i in 0..self.flows.len() {
            let now = snapshot(self.traffic, i)?;
            let active = t >= self.plan.config.flows[i].start && t <= self.end_of(i);
            let f = &mut self.flows[i];
            let (tx, rx, last, base) = (now.tx, now.rx, f.last, f.base);
            if active && tx.rtt_us > 0 {
                f.rtt.add(tx.rtt_us);
            }
            let delivered = tx.delivered.wrapping_sub(last.tx.delivered) as u64;
            self.results.flow_series.push(FlowSample {
                t: secs,
                flow: i as u32,
                goodput_bps: rate(rx.bytes_received - last.rx.bytes_received, last.at, now.at),
                throughput_bps: rate(delivered * tx.snd_mss as u64, last.at, now.at),
                cwnd: tx.snd_cwnd,
                ssthresh: tx.snd_ssthresh,
                srtt_us: tx.rtt_us,
                min_rtt_us: if tx.min_rtt_us == u32::MAX {
                    0
                } else {
                    tx.min_rtt_us
                },
                inflight: tx.in_flight,
                pacing_rate_bps: tx.pacing_rate.saturating_mul(8),
                delivery_rate_bps: tx.delivery_rate as f64 * 8.0,
                retransmits: tx.total_retrans.wrapping_sub(base.tx.total_retrans) as u64,
                segs_out: tx.data_segs_out.wrapping_sub(base.tx.data_segs_out) as u64,
                ca_state: CaState::from_u8(tx.ca_state).map_or("?", CaState::name),
            });
            f.last = now;
        }
        let queues = self.counters.sample(lab, secs)?;
        self.results.queue_series.extend(queues);
        Ok(())
    }

    /// Takes the flows' and the link's counters at the run's end, before
    /// its threads stop (what they do after the end is not the run's).
    pub fn close(&mut self, lab: &Lab) -> Result<(), Error> {
        let flows = (0..self.flows.len())
            .map(|i| snapshot(self.traffic, i))
            .collect::<Result<_, _>>()?;
        self.end = Some((flows, self.counters.since_start(lab)?));
        Ok(())
    }

    /// The run's results, once its threads have stopped.
    pub fn finish(mut self) -> Result<Results, Error> {
        let c = &self.plan.config;
        let delays = c.links[0].delay + c.links[1].delay;
        let (ends, links) = self
            .end
            .take()
            .ok_or_else(|| Error::failed("a run was summarised before it ended"))?;
        for (i, end) in ends.iter().enumerate() {
            let f = &self.flows[i];
            let cfg = &c.flows[i];
            let active = self.end_of(i).saturating_sub(cfg.start).max(1);
            let bytes = end.rx.bytes_received - f.base.rx.bytes_received;
            let outcome = &self.traffic.tcp[i].outcome;
            let done = outcome.done_at.load(Ordering::SeqCst);
            let responses = outcome
                .responses
                .lock()
                .map(|h| h.clone())
                .unwrap_or_default();
            let since = |now: u32, then: u32| now.wrapping_sub(then) as u64;
            self.results.flows.push(FlowSummary {
                flow: i as u32,
                cc: cfg.cc.spec(),
                direction: if cfg.upload { "upload" } else { "download" },
                rtt_ms: (cfg.rtt + delays) as f64 / 1e6,
                goodput_bps: bytes as f64 * 8.0 * SEC as f64 / active as f64,
                bytes,
                segments_sent: since(end.tx.data_segs_out, f.base.tx.data_segs_out),
                retransmits: since(end.tx.total_retrans, f.base.tx.total_retrans),
                rtos: match (end.tx.total_rto, f.base.tx.total_rto) {
                    (Some(now), Some(then)) => now.wrapping_sub(then) as u64,
                    _ => 0,
                },
                // No per-connection count of tail loss probes or
                // recoveries reaches user space (docs/LAB.md).
                tlps: 0,
                recoveries: 0,
                rtt_p50_ms: f.rtt.quantile(0.50) as f64 / 1000.0,
                rtt_p95_ms: f.rtt.quantile(0.95) as f64 / 1000.0,
                rtt_p99_ms: f.rtt.quantile(0.99) as f64 / 1000.0,
                responses: responses.count(),
                response_p50_ms: responses.quantile(0.5) as f64 / 1000.0,
                response_p95_ms: responses.quantile(0.95) as f64 / 1000.0,
                completion_s: (cfg.request_response.is_none() && done != u64::MAX)
                    .then(|| done.saturating_sub(cfg.start) as f64 / SEC as f64),
            });
            self.results.rtt.merge(&f.rtt);
        }
        for (i, p) in self.traffic.pings.iter().enumerate() {
            let mut t = p
                .tally
                .lock()
                .map_err(|_| Error::failed("a ping thread panicked"))?;
            let cfg = &c.pings[i];
            self.results.pings.push(PingSummary {
                ping: i as u32,
                rtt_ms: (cfg.rtt + delays) as f64 / 1e6,
                sent: t.sent,
                received: t.received,
                rtt_p50_ms: t.hist.quantile(0.5) as f64 / 1000.0,
                rtt_p95_ms: t.hist.quantile(0.95) as f64 / 1000.0,
            });
            self.results.ping_series.append(&mut t.series);
        }
        self.results.ping_series.sort_by(|a, b| a.t.total_cmp(&b.t));
        for (i, u) in self.traffic.udp.iter().enumerate() {
            let cfg = &c.udp[i];
            let active = cfg
                .stop
                .unwrap_or(c.duration)
                .min(c.duration)
                .saturating_sub(cfg.start)
                .max(1);
            let sent = u.tally.sent.load(Ordering::Relaxed);
            let received = u.tally.received_bytes.load(Ordering::Relaxed);
            self.results.udp.push(UdpSummary {
                udp: i as u32,
                sent,
                goodput_bps: received as f64 * 8.0 * SEC as f64 / active as f64,
                loss: if sent == 0 {
                    0.0
                } else {
                    1.0 - received as f64 / (sent as f64 * cfg.bytes as f64)
                },
            });
        }
        self.results.links = links;
        Ok(self.results)
    }
}
