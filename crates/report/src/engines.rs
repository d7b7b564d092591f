//! The simulator against the real kernel: a comparison whose every
//! algorithm and seed ran in both engines (`kleinrock compare --engine
//! both`), shown side by side. Per algorithm and sweep point, each metric
//! of `Run::metrics` in the simulator and in the lab and their difference;
//! over time, the two engines' throughput, cwnd, RTT and queueing delay
//! overlaid. Also the terminal's table of both, and which engine ran a
//! report's runs.

use std::fmt::Write as _;

use plotters::style::RGBColor;

use crate::html::esc;
use crate::palette::{colour, hex};
use crate::plots::{lines, Series};
use crate::run::{data_link, Comparison, Metrics, Run};

/// Which engines ran a report's runs.
#[derive(Clone, Copy)]
pub enum Engines<'a> {
    /// The simulator (the report as it always was).
    Sim,
    /// The lab: the comparison's runs are the lab's.
    Lab,
    /// Both: the comparison's runs are the simulator's, these the lab's,
    /// one for each of them, in the same order.
    Both(&'a Comparison),
}

impl Engines<'_> {
    /// The name `summary.csv` and `comparison.json` give the engine of a
    /// report's own runs; `None` for the simulator, whose files are as
    /// they were.
    pub fn label(&self) -> Option<&'static str> {
        match self {
            Engines::Sim => None,
            Engines::Lab => Some("lab"),
            Engines::Both(_) => Some("sim"),
        }
    }
}

/// The file name of a lab run beside the simulator's run `slug`.
pub fn lab_slug(slug: &str) -> String {
    format!("{slug}_lab")
}

/// One metric: its name, unit, and how to read it.
struct Measure {
    name: &'static str,
    unit: &'static str,
    get: fn(&Metrics) -> Option<f64>,
}

const MEASURES: [Measure; 6] = [
    Measure {
        name: "goodput",
        unit: "Mbit/s",
        get: |m| Some(m.goodput_bps / 1e6),
    },
    Measure {
        name: "RTT p50",
        unit: "ms",
        get: |m| Some(m.rtt_p50_ms),
    },
    Measure {
        name: "RTT p95",
        unit: "ms",
        get: |m| Some(m.rtt_p95_ms),
    },
    Measure {
        name: "queue delay p95",
        unit: "ms",
        get: |m| Some(m.queue_p95_ms),
    },
    Measure {
        name: "retransmits",
        unit: "",
        get: |m| Some(m.retransmits as f64),
    },
    Measure {
        name: "completion",
        unit: "s",
        get: |m| m.completion_s,
    },
];

/// `lab - sim`, and relative to the simulator's value.
fn difference(sim: f64, lab: f64) -> String {
    let d = lab - sim;
    if sim.abs() > 1e-12 {
        format!("{d:+.2} ({:+.1}%)", d / sim * 100.0)
    } else {
        format!("{d:+.2}")
    }
}

fn cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// The terminal's table with both engines: per point and algorithm a row
/// of each, medians over seeds, and the lab's difference.
pub fn table(sim: &Comparison, lab: &Comparison) -> String {
    let mut s = String::new();
    let spec_w = sim.specs.iter().map(|x| x.len()).max().unwrap_or(4).max(9);
    for (k, _) in &sim.sweeps {
        let _ = write!(s, "{k:>8} ");
    }
    let _ = writeln!(
        s,
        "{:<spec_w$} {:<6} {:>12} {:>10} {:>10} {:>10} {:>8} {:>6} {:>10}",
        "algorithm",
        "engine",
        "goodput",
        "RTT p50",
        "RTT p95",
        "queue p95",
        "retrans",
        "Jain",
        "done"
    );
    for p in sim.points() {
        for spec in &sim.specs {
            for (engine, cmp) in [("sim", sim), ("lab", lab)] {
                let m = cmp.median_metrics(spec, &p);
                for (_, v) in &p {
                    let _ = write!(s, "{v:>8} ");
                }
                let _ = writeln!(
                    s,
                    "{:<spec_w$} {engine:<6} {:>7.2} Mb/s {:>7.1} ms {:>7.1} ms {:>7.1} ms {:>8} {:>6.3} {:>10}",
                    spec,
                    m.goodput_bps / 1e6,
                    m.rtt_p50_ms,
                    m.rtt_p95_ms,
                    m.queue_p95_ms,
                    m.retransmits,
                    m.jain,
                    m.completion_s.map_or("-".to_string(), |c| format!("{c:.2} s"))
                );
            }
        }
    }
    s
}

/// The report's section: a table per point of every metric in both
/// engines, then the time series of the first seed at the first point.
pub fn section(sim: &Comparison, lab: &Comparison) -> String {
    let mut h = String::from("<h2>Simulator against the real kernel</h2>");
    h.push_str("<p>Every algorithm and seed ran in both engines: the packet-level simulator, and real Linux TCP in the live lab (network namespaces and an emulated link, docs/LAB.md). Medians over seeds; the difference is the lab's value less the simulator's, and relative to the simulator's.</p>");
    for p in sim.points() {
        if !p.is_empty() {
            let at: Vec<String> = p.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let _ = write!(h, "<h3>At {}</h3>", esc(&at.join(", ")));
        }
        h.push_str("<table><tr><th></th><th class=\"alg\">algorithm</th><th class=\"alg\">metric</th><th>simulator</th><th>kernel</th><th>difference</th></tr>");
        for (i, spec) in sim.specs.iter().enumerate() {
            let (ms, ml) = (sim.median_metrics(spec, &p), lab.median_metrics(spec, &p));
            for m in &MEASURES {
                let (a, b) = ((m.get)(&ms), (m.get)(&ml));
                let unit = if m.unit.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", m.unit)
                };
                let _ = write!(
                    h,
                    "<tr><td><span class=\"sw\" style=\"background:{}\"></span></td><td class=\"alg\">{}</td><td class=\"alg\">{}{unit}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    hex(colour(i)),
                    esc(spec),
                    m.name,
                    cell(a),
                    cell(b),
                    match (a, b) {
                        (Some(a), Some(b)) => difference(a, b),
                        _ => "-".into(),
                    }
                );
            }
        }
        h.push_str("</table>");
    }
    let first = sim.points().into_iter().next().unwrap_or_default();
    let seed = sim.seeds.first().copied().unwrap_or(1);
    let pairs: Vec<(usize, &Run, &Run)> = sim
        .specs
        .iter()
        .enumerate()
        .filter_map(|(i, spec)| {
            let pick = |c: &'_ Comparison| -> Option<usize> {
                c.runs
                    .iter()
                    .position(|r| r.spec == *spec && r.point == first && r.seed == seed)
            };
            Some((i, &sim.runs[pick(sim)?], &lab.runs[pick(lab)?]))
        })
        .collect();
    for (title, y, caption, value) in SERIES {
        let series: Vec<Series> = pairs
            .iter()
            .flat_map(|&(i, s, l)| {
                [
                    ("simulator", s, colour(i)),
                    ("kernel", l, lighter(colour(i))),
                ]
                .map(|(engine, run, c)| Series {
                    label: Some(format!("{} ({engine})", run.spec)),
                    colour: c,
                    points: value(run),
                })
            })
            .collect();
        let _ = writeln!(
            h,
            "<figure>{}<figcaption>{} Seed {seed}; the lab's lines are the lighter shade.</figcaption></figure>",
            lines(title, "time (s)", y, &series, false, false),
            esc(caption)
        );
    }
    h
}

type Values = fn(&Run) -> Vec<(f64, f64)>;

/// The series the section overlays: title, axis, caption, values.
const SERIES: [(&str, &str, &str, Values); 4] = [
    (
        "Throughput over time, both engines",
        "throughput (Mbit/s)",
        "All flows' data delivered (ACKed or SACKed) per sample interval, summed.",
        |r| summed(r, |s| s.throughput_bps / 1e6),
    ),
    (
        "Congestion window over time, both engines",
        "cwnd (segments)",
        "Flow 0's congestion window at each sample.",
        |r| flow0(r, |s| s.cwnd as f64),
    ),
    (
        "RTT over time, both engines",
        "RTT (ms)",
        "The ping's RTT when the scenario has pings, else flow 0's smoothed RTT.",
        |r| {
            if r.results.ping_series.is_empty() {
                flow0(r, |s| s.srtt_us as f64 / 1000.0)
            } else {
                r.results
                    .ping_series
                    .iter()
                    .filter(|p| p.ping == 0)
                    .map(|p| (p.t, p.rtt_ms))
                    .collect()
            }
        },
    ),
    (
        "Queueing delay over time, both engines",
        "queue delay (ms)",
        "At the bottleneck the data crosses.",
        |r| {
            let link = data_link(&r.results);
            r.results
                .queue_series
                .iter()
                .filter(|q| q.link == link)
                .map(|q| (q.t, q.delay_us as f64 / 1000.0))
                .collect()
        },
    ),
];

fn flow0(r: &Run, v: fn(&kleinrock_sim::results::FlowSample) -> f64) -> Vec<(f64, f64)> {
    r.results
        .flow_series
        .iter()
        .filter(|s| s.flow == 0)
        .map(|s| (s.t, v(s)))
        .collect()
}

/// Each sample time's sum over the flows (samples of one time are
/// adjacent in the series).
fn summed(r: &Run, v: fn(&kleinrock_sim::results::FlowSample) -> f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for s in &r.results.flow_series {
        match out.last_mut() {
            Some(last) if last.0 == s.t => last.1 += v(s),
            _ => out.push((s.t, v(s))),
        }
    }
    out
}

/// `c` halfway to white.
fn lighter(c: RGBColor) -> RGBColor {
    let mix = |x: u8| x + (255 - x) / 2;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_the_labs_less_the_simulators() {
        assert_eq!(difference(10.0, 9.5), "-0.50 (-5.0%)");
        assert_eq!(difference(0.0, 2.0), "+2.00");
        assert_eq!(lighter(RGBColor(0, 100, 255)), RGBColor(127, 177, 255));
        assert_eq!(lab_slug("cubic_seed1"), "cubic_seed1_lab");
    }
}
