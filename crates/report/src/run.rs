//! A comparison's runs and the metrics its tables and plots are made of.
//! docs/COMPARE.md defines each metric; this is where they are computed.

use kleinrock_sim::time::{Time, SEC};
use kleinrock_sim::{Config, Results};

use crate::plan::PlannedRun;

/// One simulation of a comparison: an algorithm spec, a point of the swept
/// parameters, a seed.
#[derive(Clone, Debug)]
pub struct Run {
    pub spec: String,
    /// (key, value as written) for each swept parameter, in sweep order.
    pub point: Vec<(String, String)>,
    pub seed: u64,
    pub results: Results,
    /// When each flow was offered data, from its configuration.
    pub offered: Vec<Offered>,
}

/// When a flow was offered data, ns: from its `start` to its `stop` or the
/// run's end, whichever is first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offered {
    pub start: Time,
    pub end: Time,
}

impl Offered {
    /// Each flow's, in the order of `cfg.flows` (and of the results').
    pub fn of(cfg: &Config) -> Vec<Offered> {
        cfg.flows
            .iter()
            .map(|f| Offered {
                start: f.start,
                end: f.stop.unwrap_or(cfg.duration).min(cfg.duration),
            })
            .collect()
    }
}

/// Everything `kleinrock compare` ran.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The scenario's name (file stem).
    pub name: String,
    /// The scenario file, as given.
    pub scenario_path: String,
    /// The scenario text, shown in the report.
    pub scenario_text: String,
    pub specs: Vec<String>,
    /// (key, values as written) per swept parameter.
    pub sweeps: Vec<(String, Vec<String>)>,
    pub seeds: Vec<u64>,
    pub runs: Vec<Run>,
    /// The flent test the `.flent.gz` files claim to be.
    pub flent_test: String,
}

/// A run's headline numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    /// All flows' goodput together, bit/s: the payload their receivers
    /// took in order, over [`Run::interval`].
    pub goodput_bps: f64,
    /// RTT percentiles, ms: of the pings if the scenario has any (RTT under
    /// load as flent measures it), else of every flow's RTT samples.
    pub rtt_p50_ms: f64,
    pub rtt_p95_ms: f64,
    /// 95th percentile of the bottleneck queue's delay, ms.
    pub queue_p95_ms: f64,
    pub retransmits: u64,
    /// Jain's index of the flows' goodputs.
    pub jain: f64,
    /// The slowest transfer's completion time, s, if every flow is a
    /// transfer that completed.
    pub completion_s: Option<f64>,
}

impl Metrics {
    /// Kleinrock's power: throughput over delay (Mbit/s per ms of p95 RTT),
    /// the quantity his optimal operating point maximises.
    pub fn power(&self) -> f64 {
        if self.rtt_p95_ms <= 0.0 {
            return 0.0;
        }
        self.goodput_bps / 1e6 / self.rtt_p95_ms
    }
}

/// The link that carried the most bytes: the bottleneck of the data.
pub fn data_link(r: &Results) -> &'static str {
    if r.links[1].tx_bytes > r.links[0].tx_bytes {
        "down"
    } else {
        "up"
    }
}

/// The `q`-quantile of `v` (nearest rank), 0 for none.
pub fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

impl Run {
    /// The run of `planned` that gave `results`.
    pub fn new(planned: PlannedRun, results: Results) -> Run {
        Run {
            offered: Offered::of(&planned.config),
            spec: planned.spec,
            point: planned.point,
            seed: planned.seed,
            results,
        }
    }

    /// What the aggregate goodput is measured over, ns: from the first
    /// flow's start to the last flow's end, a flow ending when its transfer
    /// completed, else when it stopped being offered data (its `stop` or
    /// the run's end); `None` without flows. One interval for all flows:
    /// summing each flow's rate over its own lifetime counted staggered
    /// flows' capacity over and over (1,000 staggered flows on a 1 Gbit/s
    /// link summed to 1,600 Mbit/s).
    pub fn interval(&self) -> Option<(Time, Time)> {
        let ends = self.offered.iter().zip(&self.results.flows).map(|(o, f)| {
            // completion_s is (done - start) in seconds from integer ns:
            // rounding recovers the nanosecond.
            match f.completion_s {
                Some(c) => o.start + (c * SEC as f64).round() as Time,
                None => o.end,
            }
        });
        let start = self.offered.iter().map(|o| o.start).min()?;
        let end = ends.max()?;
        Some((start, end.max(start)))
    }

    pub fn metrics(&self) -> Metrics {
        let r = &self.results;
        let (rtt_p50_ms, rtt_p95_ms) = if r.ping_series.is_empty() {
            (
                r.rtt.quantile(0.5) as f64 / 1000.0,
                r.rtt.quantile(0.95) as f64 / 1000.0,
            )
        } else {
            let mut p: Vec<f64> = r.ping_series.iter().map(|s| s.rtt_ms).collect();
            (quantile(&mut p, 0.5), quantile(&mut p, 0.95))
        };
        let link = data_link(r);
        let mut q: Vec<f64> = r
            .queue_series
            .iter()
            .filter(|s| s.link == link)
            .map(|s| s.delay_us as f64 / 1000.0)
            .collect();
        let completion_s = r
            .flows
            .iter()
            .map(|f| f.completion_s)
            .try_fold(0.0f64, |m, c| c.map(|c| m.max(c)));
        // Each flow's bytes over the one interval, summed: where every flow
        // spans it, exactly the sum of the flows' own goodputs as the
        // simulator computes them.
        let goodput_bps = match self.interval() {
            Some((start, end)) => {
                let t = end.saturating_sub(start).max(1);
                r.flows
                    .iter()
                    .map(|f| f.bytes as f64 * 8.0 * SEC as f64 / t as f64)
                    .sum()
            }
            None => 0.0,
        };
        Metrics {
            goodput_bps,
            rtt_p50_ms,
            rtt_p95_ms,
            queue_p95_ms: quantile(&mut q, 0.95),
            retransmits: r.flows.iter().map(|f| f.retransmits).sum(),
            jain: r.jain(),
            completion_s: if r.flows.is_empty() {
                None
            } else {
                completion_s
            },
        }
    }

    /// A file-name-safe label: spec, point and seed ([`slug`]).
    pub fn slug(&self) -> String {
        slug(&self.spec, &self.point, self.seed)
    }
}

/// A run's file-name-safe label, the name of its files in the report:
/// `SPEC_KEY-VALUE..._seedN`, anything but letters, digits, `-`, `_` and
/// `.` replaced by `-`.
pub fn slug(spec: &str, point: &[(String, String)], seed: u64) -> String {
    let mut s = spec.to_string();
    for (k, v) in point {
        s.push_str(&format!("_{k}-{v}"));
    }
    s.push_str(&format!("_seed{seed}"));
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl Comparison {
    /// The runs of `spec` at sweep point `point`, one per seed.
    pub fn runs_at<'a>(
        &'a self,
        spec: &'a str,
        point: &'a [(String, String)],
    ) -> impl Iterator<Item = &'a Run> {
        self.runs
            .iter()
            .filter(move |r| r.spec == spec && r.point == point)
    }

    /// Every sweep point, in order (one empty point without sweeps).
    pub fn points(&self) -> Vec<Vec<(String, String)>> {
        let mut points = vec![Vec::new()];
        for (key, values) in &self.sweeps {
            let mut next = Vec::new();
            for p in &points {
                for v in values {
                    let mut q = p.clone();
                    q.push((key.clone(), v.clone()));
                    next.push(q);
                }
            }
            points = next;
        }
        points
    }

    /// The median over seeds of each metric for `spec` at `point`.
    pub fn median_metrics(&self, spec: &str, point: &[(String, String)]) -> Metrics {
        let m: Vec<Metrics> = self.runs_at(spec, point).map(Run::metrics).collect();
        let med = |f: &dyn Fn(&Metrics) -> f64| {
            let mut v: Vec<f64> = m.iter().map(f).collect();
            quantile(&mut v, 0.5)
        };
        Metrics {
            goodput_bps: med(&|x| x.goodput_bps),
            rtt_p50_ms: med(&|x| x.rtt_p50_ms),
            rtt_p95_ms: med(&|x| x.rtt_p95_ms),
            queue_p95_ms: med(&|x| x.queue_p95_ms),
            retransmits: med(&|x| x.retransmits as f64) as u64,
            jain: med(&|x| x.jain),
            completion_s: if m.iter().all(|x| x.completion_s.is_some()) && !m.is_empty() {
                Some(med(&|x| x.completion_s.unwrap_or(0.0)))
            } else {
                None
            },
        }
    }

    /// A terminal table: one row per sweep point and algorithm, medians over
    /// seeds.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let keys: Vec<&str> = self.sweeps.iter().map(|(k, _)| k.as_str()).collect();
        let point_w = keys.iter().map(|k| k.len().max(8)).sum::<usize>() + keys.len();
        let spec_w = self.specs.iter().map(|x| x.len()).max().unwrap_or(4).max(9);
        for k in &keys {
            s.push_str(&format!("{k:>8} "));
        }
        let _ = point_w;
        s.push_str(&format!(
            "{:<spec_w$} {:>12} {:>10} {:>10} {:>10} {:>8} {:>6} {:>10}\n",
            "algorithm", "goodput", "RTT p50", "RTT p95", "queue p95", "retrans", "Jain", "done"
        ));
        for p in self.points() {
            for spec in &self.specs {
                let m = self.median_metrics(spec, &p);
                for (_, v) in &p {
                    s.push_str(&format!("{v:>8} "));
                }
                s.push_str(&format!(
                    "{:<spec_w$} {:>7.2} Mb/s {:>7.1} ms {:>7.1} ms {:>7.1} ms {:>8} {:>6.3} {:>10}\n",
                    spec,
                    m.goodput_bps / 1e6,
                    m.rtt_p50_ms,
                    m.rtt_p95_ms,
                    m.queue_p95_ms,
                    m.retransmits,
                    m.jain,
                    m.completion_s.map_or("-".to_string(), |c| format!("{c:.2} s"))
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_sim::Sim;

    const MBIT: f64 = 1e6;

    /// The run of a scenario's text with cubic, seed 1.
    fn run(text: &str) -> Run {
        let config = kleinrock_sim::scenario::parse(text, "g.toml", None).unwrap();
        let results = Sim::new(config.clone()).unwrap().run(&mut |_| {}).unwrap();
        Run::new(
            PlannedRun {
                spec: "cubic".into(),
                point: Vec::new(),
                seed: 1,
                config,
            },
            results,
        )
    }

    /// The old figure: each flow's goodput over its own lifetime, summed.
    fn per_flow_sum(r: &Run) -> f64 {
        r.results.flows.iter().map(|f| f.goodput_bps).sum()
    }

    fn bytes(r: &Run) -> f64 {
        r.results.flows.iter().map(|f| f.bytes as f64).sum()
    }

    #[test]
    fn goodput_is_the_bytes_delivered_over_one_interval_with_staggered_starts_and_stops() {
        // Five flows starting a second apart that stop at 8 s, five more
        // starting from 6 s that run to the end (16 s), on 10 Mbit/s.
        let r = run(
            "duration = \"16s\"\n[link]\nrate = \"10Mbit\"\nqueue = 84\n\
             [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\ncount = 5\nstagger = \"1s\"\nstop = \"8s\"\n\
             [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\ncount = 5\nstart = \"6s\"\nstagger = \"1s\"\n",
        );
        assert_eq!(r.interval(), Some((0, 16 * SEC)));
        let m = r.metrics();
        assert!((m.goodput_bps - bytes(&r) * 8.0 / 16.0).abs() < 1e-6 * m.goodput_bps);
        assert!(
            m.goodput_bps < 10.0 * MBIT && m.goodput_bps > 8.0 * MBIT,
            "{}",
            m.goodput_bps
        );
        // Each flow's own rate, summed, counts the link over and over.
        assert!(per_flow_sum(&r) > 10.0 * MBIT, "{}", per_flow_sum(&r));
    }

    /// The issue's own example (issue 16): 1,000 CUBIC flows staggered
    /// 9 ms on 1 Gbit/s for 10 s (10 ms RTT) reported 1,576 Mb/s, each
    /// flow's rate over its own lifetime summed; the bytes delivered over
    /// the run give 960.
    #[test]
    fn a_thousand_staggered_flows_on_a_gigabit_deliver_less_than_a_gigabit() {
        let r = run("duration = \"10s\"\n[link]\nrate = \"1Gbit\"\n\
             [[flow]]\ncc = \"cubic\"\nrtt = \"10ms\"\ncount = 1000\nstagger = \"9ms\"\n");
        assert_eq!(r.interval(), Some((0, 10 * SEC)));
        let m = r.metrics();
        assert!((m.goodput_bps - bytes(&r) * 8.0 / 10.0).abs() < 1e-9 * m.goodput_bps);
        // 960.27 Mb/s (1,200,342,768 bytes) when written; tight rather
        // than exact, so that the simulator's TCP may change a little.
        assert!(
            (955.0 * MBIT..965.0 * MBIT).contains(&m.goodput_bps),
            "{}",
            m.goodput_bps
        );
        // The old figure, 1,576.4 Mb/s, counted the link over and over.
        let old = per_flow_sum(&r);
        assert!((1_550.0 * MBIT..1_600.0 * MBIT).contains(&old), "{old}");
    }

    #[test]
    fn transfers_end_the_interval_when_the_last_one_completes() {
        let r = run(
            "duration = \"20s\"\n[link]\nrate = \"10Mbit\"\nqueue = 84\n\
             [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\nsize = \"2MB\"\ncount = 2\nstagger = \"1s\"\n",
        );
        let done: Vec<f64> = r
            .results
            .flows
            .iter()
            .map(|f| f.completion_s.unwrap())
            .collect();
        let end = (SEC as f64 * (1.0 + done[1]).max(done[0])).round() as Time;
        assert_eq!(r.interval(), Some((0, end)));
        assert!(end < 5 * SEC, "long before the run's end");
        let m = r.metrics();
        let want = bytes(&r) * 8.0 * SEC as f64 / end as f64;
        assert!(
            (m.goodput_bps - want).abs() < 1e-9 * want,
            "{} {want}",
            m.goodput_bps
        );
        assert!(m.goodput_bps < 10.0 * MBIT);
    }

    #[test]
    fn flows_that_share_their_interval_keep_the_sum_of_their_goodputs() {
        // Bit for bit: every report of flows that start and stop together
        // is unchanged.
        let r = run("duration = \"5s\"\n[link]\nrate = \"10Mbit\"\nqueue = 84\n\
             [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\ncount = 3\n[[ping]]\nrtt = \"20ms\"\n");
        assert_eq!(r.metrics().goodput_bps, per_flow_sum(&r));
        // Without flows there is no interval, and no goodput.
        let p = run("duration = \"1s\"\n[link]\nrate = \"10Mbit\"\n[[ping]]\nrtt = \"20ms\"\n");
        assert_eq!((p.interval(), p.metrics().goodput_bps), (None, 0.0));
    }
}
