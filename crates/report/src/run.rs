//! A comparison's runs and the metrics its tables and plots are made of.

use kleinrock_sim::Results;

/// One simulation of a comparison: an algorithm spec, a point of the swept
/// parameters, a seed.
#[derive(Clone, Debug)]
pub struct Run {
    pub spec: String,
    /// (key, value as written) for each swept parameter, in sweep order.
    pub point: Vec<(String, String)>,
    pub seed: u64,
    pub results: Results,
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
    /// All flows' goodput together, bit/s.
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
        Metrics {
            goodput_bps: r.flows.iter().map(|f| f.goodput_bps).sum(),
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
