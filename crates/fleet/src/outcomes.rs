//! Every algorithm simulated on every network of a workload, a few times:
//! the table the policies are played against.

use std::collections::HashMap;

use kleinrock_cc::Algorithm;
use kleinrock_select::Sample;
use kleinrock_sim::{Results, Sim};

use crate::workload::Workload;

/// One simulated connection, as the policies and the scoring see it.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub goodput_bps: f64,
    /// The mean smoothed RTT the connection saw, ms.
    pub rtt_ms: f64,
    /// How long it lasted, s: until its transfer completed, or the
    /// workload's duration.
    pub lifetime_s: f64,
    /// What the connection had shown at each sample time (s from its
    /// start) before it closed.
    pub samples: Vec<(f64, Sample)>,
    /// What it showed at its close.
    pub close: Sample,
    /// The first sample time at which its retransmissions exceeded 1/64 of
    /// its segments (bpftune's rule for BBR).
    pub retrans_rule_at: Option<f64>,
}

impl Outcome {
    fn from(r: &Results, duration_s: f64) -> Outcome {
        let f = &r.flows[0];
        let lifetime = f.completion_s.unwrap_or(duration_s).min(duration_s);
        let mut samples = Vec::new();
        let (mut max_rate, mut srtt_sum, mut srtt_n) = (0u64, 0.0, 0u32);
        let mut delivered_bits = 0.0;
        let interval = r
            .flow_series
            .iter()
            .find(|s| s.flow == 0)
            .map_or(1.0, |s| s.t);
        let mut retrans_rule_at = None;
        let mut close = None;
        for s in r.flow_series.iter().filter(|s| s.flow == 0) {
            let bytes_per_s = (s.delivery_rate_bps / 8.0) as u64;
            delivered_bits += s.throughput_bps * interval;
            max_rate = max_rate.max(bytes_per_s);
            if s.srtt_us > 0 {
                srtt_sum += s.srtt_us as f64;
                srtt_n += 1;
            }
            let segs = s.segs_out.min(u32::MAX as u64) as u32;
            let retrans = s.retransmits.min(u32::MAX as u64) as u32;
            if retrans_rule_at.is_none() && retrans > segs >> kleinrock_select::bpftune::DROP_SHIFT
            {
                retrans_rule_at = Some(s.t);
            }
            let at_close = s.t >= lifetime - 1e-9;
            let sample = Sample {
                min_rtt_us: s.min_rtt_us,
                // The last rate sample, in bytes per second over one
                // second: bpftune's bytes per µs after its division.
                rate_delivered: bytes_per_s.min(u32::MAX as u64) as u32,
                rate_interval_us: 1_000_000,
                mss: 1,
                max_rate_bps: max_rate,
                mean_rate_bps: if at_close {
                    (f.goodput_bps / 8.0) as u64
                } else {
                    (delivered_bits / 8.0 / s.t.max(1e-9)) as u64
                },
                srtt_us: if srtt_n > 0 {
                    (srtt_sum / srtt_n as f64) as u32
                } else {
                    0
                },
                segs_out: segs,
                total_retrans: retrans,
                age_us: (s.t.min(lifetime) * 1e6) as u64,
                bytes_acked: if at_close {
                    f.bytes
                } else {
                    (delivered_bits / 8.0) as u64
                },
                complete: at_close && f.completion_s.is_some_and(|c| c <= duration_s),
            };
            if at_close {
                close = Some(sample);
                break;
            }
            samples.push((s.t, sample));
        }
        Outcome {
            goodput_bps: f.goodput_bps,
            rtt_ms: if srtt_n > 0 {
                srtt_sum / srtt_n as f64 / 1000.0
            } else {
                0.0
            },
            lifetime_s: lifetime,
            close: close.or(samples.last().map(|s| s.1)).unwrap_or_default(),
            samples,
            retrans_rule_at: retrans_rule_at.filter(|&t| t < lifetime + interval),
        }
    }

    /// The sample at the connection's close.
    pub fn last(&self) -> Sample {
        self.close
    }
}

/// Outcomes by (network, algorithm spec, seed index).
#[derive(Clone, Debug, Default)]
pub struct Outcomes {
    /// The algorithm specs simulated, by index.
    pub algorithms: Vec<String>,
    table: HashMap<(usize, usize, u32), Outcome>,
    /// The networks, by (path, changed, size class).
    pub networks: Vec<(usize, bool, usize)>,
    /// Each network's index in `networks`, looked up at every connection's
    /// start (a search of the list made a fleet of many path types
    /// quadratic).
    index: HashMap<(usize, bool, usize), usize>,
}

impl Outcomes {
    /// Simulates `algorithms` on every network of `w`, `w.outcome_seeds`
    /// times each, on `threads` threads; `progress` gets the fraction done.
    pub fn simulate(
        w: &Workload,
        algorithms: &[String],
        threads: usize,
        progress: &(dyn Fn(f64) + Sync),
    ) -> Outcomes {
        let mut nets = Vec::new();
        for (p, changed, net) in w.networks() {
            for (c, class) in w.sizes.iter().enumerate() {
                nets.push(((p, changed, c), net, class.bytes));
            }
        }
        let duration_s = w.duration as f64 / kleinrock_sim::time::SEC as f64;
        let mut jobs = Vec::new();
        for (n, (_, net, bytes)) in nets.iter().enumerate() {
            for (a, spec) in algorithms.iter().enumerate() {
                let alg: Algorithm = spec.parse().expect("validated spec");
                for k in 0..w.outcome_seeds {
                    let mut cfg = net.config.clone();
                    cfg.flows[0].cc = alg.clone();
                    cfg.flows[0].size_segments = bytes.map(|b| b.div_ceil(cfg.mss as u64));
                    cfg.seed = w.seed.wrapping_mul(1_000_003).wrapping_add(k as u64 + 1);
                    jobs.push(((n, a, k), cfg));
                }
            }
        }
        let total = jobs.len();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let out = std::sync::Mutex::new(HashMap::new());
        let work = || loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some((key, cfg)) = jobs.get(i) else { break };
            let r = Sim::new(cfg.clone())
                .expect("no traces")
                .run(&mut |_| {})
                .expect("no traces");
            out.lock()
                .unwrap()
                .insert(*key, Outcome::from(&r, duration_s));
            let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress(d as f64 / total as f64);
        };
        std::thread::scope(|s| {
            for _ in 0..threads.max(1) {
                s.spawn(work);
            }
        });
        let networks: Vec<(usize, bool, usize)> = nets.iter().map(|n| n.0).collect();
        Outcomes {
            algorithms: algorithms.to_vec(),
            table: out.into_inner().unwrap(),
            index: networks.iter().enumerate().map(|(i, &n)| (n, i)).collect(),
            networks,
        }
    }

    pub fn network_index(&self, path: usize, changed: bool, class: usize) -> usize {
        self.index[&(path, changed, class)]
    }

    pub fn algorithm_index(&self, spec: &str) -> Option<usize> {
        self.algorithms.iter().position(|a| a == spec)
    }

    pub fn get(&self, network: usize, alg: usize, seed: u32) -> &Outcome {
        &self.table[&(network, alg, seed)]
    }

    pub fn seeds(&self) -> u32 {
        self.table.keys().map(|k| k.2 + 1).max().unwrap_or(0)
    }
}
