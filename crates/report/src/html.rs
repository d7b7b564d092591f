//! The report directory: `report.html` (self-contained: inline SVG and CSS,
//! nothing fetched), `summary.csv`, `comparison.json`, and per run its
//! results (`runs/<run>/results.json` and CSV series) and a flent data file
//! (`runs/<run>.flent.gz`).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use plotters::style::RGBColor;

use crate::engines::{lab_slug, Engines};
use crate::palette::{colour, hex};
use crate::plots::{boxes, lines, scatter, Group, Series};
use crate::run::{data_link, Comparison, Metrics, Run};

/// Writes the report directory (which [`crate::layout::claim_report_dir`]
/// has accepted); returns the path of `report.html`. `progress` is told
/// the fraction written.
pub fn write_report(
    cmp: &Comparison,
    dir: &Path,
    progress: &mut dyn FnMut(f64),
) -> io::Result<PathBuf> {
    write_report_of(cmp, Engines::Sim, dir, progress)
}

/// [`write_report`] for the runs of `engines`: with both, the lab's runs
/// are written beside the simulator's (`runs/RUN_lab/`), listed in
/// `summary.csv` and `comparison.json` with an `engine`, and the page
/// gains the section "Simulator against the real kernel".
pub fn write_report_of(
    cmp: &Comparison,
    engines: Engines,
    dir: &Path,
    progress: &mut dyn FnMut(f64),
) -> io::Result<PathBuf> {
    crate::layout::claim_report_dir(dir)?;
    std::fs::create_dir_all(dir.join("runs"))?;
    let mut sets: Vec<(&Comparison, &Run, String)> =
        cmp.runs.iter().map(|r| (cmp, r, r.slug())).collect();
    if let Engines::Both(lab) = engines {
        sets.extend(lab.runs.iter().map(|r| (lab, r, lab_slug(&r.slug()))));
    }
    // The page's plots count as much as all the runs' files.
    let steps = 2 * sets.len().max(1);
    for (i, (owner, run, slug)) in sets.iter().enumerate() {
        run.results.write(&dir.join("runs").join(slug))?;
        crate::flent::write(
            owner,
            run,
            &dir.join("runs").join(format!("{slug}.flent.gz")),
        )?;
        progress((i + 1) as f64 / steps as f64);
    }
    write_summary_csv(cmp, engines, &dir.join("summary.csv"))?;
    write_json(cmp, engines, &dir.join("comparison.json"))?;
    let page = page(cmp, engines);
    let path = dir.join("report.html");
    kleinrock_files::create(&path)?.write_all(page.as_bytes())?;
    progress(1.0);
    Ok(path)
}

/// Every run's metrics, one row each; with the lab, an `engine` column
/// last (the simulator's own reports keep their columns).
fn write_summary_csv(cmp: &Comparison, engines: Engines, path: &Path) -> io::Result<()> {
    let mut f = io::BufWriter::new(kleinrock_files::create(path)?);
    write!(f, "algorithm,")?;
    for (k, _) in &cmp.sweeps {
        write!(f, "{k},")?;
    }
    write!(
        f,
        "seed,goodput_bps,rtt_p50_ms,rtt_p95_ms,queue_p95_ms,retransmits,jain,completion_s,run"
    )?;
    writeln!(
        f,
        "{}",
        if engines.label().is_some() {
            ",engine"
        } else {
            ""
        }
    )?;
    let mut rows: Vec<(&Run, String, Option<&str>)> = cmp
        .runs
        .iter()
        .map(|r| (r, r.slug(), engines.label()))
        .collect();
    if let Engines::Both(lab) = engines {
        rows.extend(
            lab.runs
                .iter()
                .map(|r| (r, lab_slug(&r.slug()), Some("lab"))),
        );
    }
    for (r, slug, engine) in rows {
        let m = r.metrics();
        write!(f, "{},", r.spec)?;
        for (_, v) in &r.point {
            write!(f, "{v},")?;
        }
        write!(
            f,
            "{},{:.0},{:.3},{:.3},{:.3},{},{:.4},{},{slug}",
            r.seed,
            m.goodput_bps,
            m.rtt_p50_ms,
            m.rtt_p95_ms,
            m.queue_p95_ms,
            m.retransmits,
            m.jain,
            m.completion_s.map_or(String::new(), |c| format!("{c:.3}")),
        )?;
        writeln!(f, "{}", engine.map_or(String::new(), |e| format!(",{e}")))?;
    }
    f.flush()
}

#[derive(serde::Serialize)]
struct RunJson<'a> {
    algorithm: &'a str,
    point: &'a [(String, String)],
    seed: u64,
    run: String,
    goodput_bps: f64,
    rtt_p50_ms: f64,
    rtt_p95_ms: f64,
    queue_p95_ms: f64,
    retransmits: u64,
    jain: f64,
    completion_s: Option<f64>,
    power: f64,
}

fn runs_json(runs: &[Run], slug: fn(&Run) -> String) -> Vec<RunJson<'_>> {
    runs.iter()
        .map(|r| {
            let m = r.metrics();
            RunJson {
                algorithm: &r.spec,
                point: &r.point,
                seed: r.seed,
                run: slug(r),
                goodput_bps: m.goodput_bps,
                rtt_p50_ms: m.rtt_p50_ms,
                rtt_p95_ms: m.rtt_p95_ms,
                queue_p95_ms: m.queue_p95_ms,
                retransmits: m.retransmits,
                jain: m.jain,
                completion_s: m.completion_s,
                power: m.power(),
            }
        })
        .collect()
}

/// Every run's metrics; with the lab, which engine ran `runs`, and with
/// both engines the lab's as `lab_runs`.
fn write_json(cmp: &Comparison, engines: Engines, path: &Path) -> io::Result<()> {
    let mut j = serde_json::json!({
        "scenario": cmp.scenario_path,
        "algorithms": cmp.specs,
        "sweeps": cmp.sweeps,
        "seeds": cmp.seeds,
        "runs": runs_json(&cmp.runs, Run::slug),
    });
    if let Some(engine) = engines.label() {
        j["engine"] = serde_json::json!(engine);
    }
    if let Engines::Both(lab) = engines {
        j["lab_runs"] = serde_json::json!(runs_json(&lab.runs, |r| lab_slug(&r.slug())));
    }
    let mut f = io::BufWriter::new(kleinrock_files::create(path)?);
    serde_json::to_writer_pretty(&mut f, &j).map_err(io::Error::other)?;
    f.flush()
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A swept value as a number, and whether its axis should be logarithmic.
fn numeric(label: &str) -> Option<f64> {
    let t = label.trim();
    let (num, scale) = [
        ("Gbit", 1e3),
        ("Mbit", 1.0),
        ("kbit", 1e-3),
        ("ms", 1.0),
        ("us", 1e-3),
        ("s", 1e3),
        ("%", 1.0),
        ("bdp", 1.0),
    ]
    .iter()
    .find_map(|(u, k)| t.strip_suffix(u).map(|n| (n, *k)))
    .unwrap_or((t, 1.0));
    num.trim().parse::<f64>().ok().map(|v| v * scale)
}

fn unit(label: &str) -> &'static str {
    let t = label.trim();
    if t.ends_with('%') {
        " (%)"
    } else if t.ends_with("bit") {
        " (Mbit/s)"
    } else if t.ends_with("ms") || t.ends_with("us") || t.ends_with('s') {
        " (ms)"
    } else if t.ends_with("bdp") {
        " (BDPs)"
    } else {
        ""
    }
}

struct Ctx<'a> {
    cmp: &'a Comparison,
    /// The point the time-series plots show: the first.
    first: Vec<(String, String)>,
}

impl Ctx<'_> {
    fn colour_of(&self, spec: &str) -> RGBColor {
        colour(self.cmp.specs.iter().position(|s| s == spec).unwrap_or(0))
    }

    /// Each algorithm's run at the first point with the first seed.
    fn shown(&self) -> Vec<&Run> {
        self.cmp
            .specs
            .iter()
            .filter_map(|s| self.cmp.runs_at(s, &self.first).next())
            .collect()
    }

    fn max_flows(&self) -> usize {
        self.cmp
            .runs
            .iter()
            .map(|r| r.results.flows.len())
            .max()
            .unwrap_or(0)
    }
}

/// A time series per algorithm (flow 0 of multi-flow runs is not enough
/// for throughput: those get one plot per algorithm).
fn flow_series(
    ctx: &Ctx,
    title: &str,
    y_desc: &str,
    value: fn(&kleinrock_sim::results::FlowSample) -> f64,
) -> Vec<String> {
    let runs = ctx.shown();
    if ctx.max_flows() <= 1 {
        let series: Vec<Series> = runs
            .iter()
            .map(|r| Series {
                label: Some(r.spec.clone()),
                colour: ctx.colour_of(&r.spec),
                points: r
                    .results
                    .flow_series
                    .iter()
                    .map(|s| (s.t, value(s)))
                    .collect(),
            })
            .collect();
        return vec![lines(title, "time (s)", y_desc, &series, false, false)];
    }
    runs.iter()
        .map(|r| {
            let n = r.results.flows.len();
            let series: Vec<Series> = (0..n as u32)
                .map(|f| {
                    let base = ctx.colour_of(&r.spec);
                    // Flows of one algorithm: its colour, darker to lighter.
                    let k = if n > 1 {
                        f as f64 / (n - 1) as f64 * 0.6
                    } else {
                        0.0
                    };
                    let mix = |c: u8| (c as f64 + (255.0 - c as f64) * k) as u8;
                    Series {
                        label: if n <= 6 {
                            Some(format!("{} flow {f}", r.spec))
                        } else {
                            (f == 0)
                                .then(|| format!("{} (flows 0-{}, darker first)", r.spec, n - 1))
                        },
                        colour: RGBColor(mix(base.0), mix(base.1), mix(base.2)),
                        points: r
                            .results
                            .flow_series
                            .iter()
                            .filter(|s| s.flow == f)
                            .map(|s| (s.t, value(s)))
                            .collect(),
                    }
                })
                .collect();
            lines(
                &format!("{title}: {}", r.spec),
                "time (s)",
                y_desc,
                &series,
                false,
                false,
            )
        })
        .collect()
}

/// The algorithm to use at `point`: within 10% of the best goodput, the
/// lowest 95th-percentile RTT.
fn pick(cmp: &Comparison, point: &[(String, String)]) -> Option<(String, Metrics)> {
    let m: Vec<(String, Metrics)> = cmp
        .specs
        .iter()
        .map(|s| (s.clone(), cmp.median_metrics(s, point)))
        .collect();
    let best = m.iter().map(|x| x.1.goodput_bps).fold(0.0, f64::max);
    m.into_iter()
        .filter(|x| x.1.goodput_bps >= 0.9 * best)
        .min_by(|a, b| a.1.rtt_p95_ms.total_cmp(&b.1.rtt_p95_ms))
}

/// With sweeps: the pick at every point.
fn picks(ctx: &Ctx) -> String {
    let points = ctx.cmp.points();
    if points.len() < 2 {
        return String::new();
    }
    let mut s = String::from("<p>Across the sweep, the same rule picks:</p><table><tr>");
    for (k, _) in &ctx.cmp.sweeps {
        let _ = write!(s, "<th>{}</th>", esc(k));
    }
    s.push_str(
        "<th></th><th class=\"alg\">use</th><th>goodput (Mbit/s)</th><th>RTT p95 (ms)</th></tr>",
    );
    for p in points {
        if let Some((spec, m)) = pick(ctx.cmp, &p) {
            s.push_str("<tr>");
            for (_, v) in &p {
                let _ = write!(s, "<td>{}</td>", esc(v));
            }
            let _ = write!(
                s,
                "<td><span class=\"sw\" style=\"background:{}\"></span></td><td class=\"alg\">{}</td><td>{:.2}</td><td>{:.1}</td></tr>",
                hex(ctx.colour_of(&spec)),
                esc(&spec),
                m.goodput_bps / 1e6,
                m.rtt_p95_ms
            );
        }
    }
    s.push_str("</table>");
    s
}

fn verdict(ctx: &Ctx) -> String {
    let cmp = ctx.cmp;
    let m: Vec<(String, Metrics)> = cmp
        .specs
        .iter()
        .map(|s| (s.clone(), cmp.median_metrics(s, &ctx.first)))
        .collect();
    if m.is_empty() {
        return String::new();
    }
    let best_g = m.iter().map(|x| x.1.goodput_bps).fold(0.0, f64::max);
    let by_goodput = m
        .iter()
        .max_by(|a, b| a.1.goodput_bps.total_cmp(&b.1.goodput_bps))
        .unwrap();
    let by_delay = m
        .iter()
        .min_by(|a, b| a.1.rtt_p95_ms.total_cmp(&b.1.rtt_p95_ms))
        .unwrap();
    let by_power = m
        .iter()
        .max_by(|a, b| a.1.power().total_cmp(&b.1.power()))
        .unwrap();
    let pick = pick(cmp, &ctx.first).expect("some algorithm");
    let pick = (&pick.0, &pick.1);
    let mut s = String::new();
    let at = if ctx.first.is_empty() {
        String::new()
    } else {
        format!(
            " (at {})",
            ctx.first
                .iter()
                .map(|(k, v)| format!("{k} = {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let _ = write!(
        s,
        "<p class=\"verdict\"><b>Use {}</b>{at}: within 10% of the best goodput ({:.2} of {:.2} Mbit/s), it has the lowest 95th-percentile RTT among those that are ({:.1} ms).</p>",
        esc(pick.0),
        pick.1.goodput_bps / 1e6,
        best_g / 1e6,
        pick.1.rtt_p95_ms
    );
    let _ = write!(
        s,
        "<ul><li>Highest goodput: <b>{}</b>, {:.2} Mbit/s.</li><li>Lowest 95th-percentile RTT: <b>{}</b>, {:.1} ms.</li><li>Highest power (goodput / p95 RTT, the operating point Kleinrock showed to be optimal): <b>{}</b>.</li>",
        esc(&by_goodput.0),
        by_goodput.1.goodput_bps / 1e6,
        esc(&by_delay.0),
        by_delay.1.rtt_p95_ms,
        esc(&by_power.0)
    );
    if ctx.max_flows() > 1 {
        for (spec, x) in &m {
            if x.jain < 0.8 {
                let _ = write!(
                    s,
                    "<li>{} shares unfairly between its flows (Jain index {:.2}).</li>",
                    esc(spec),
                    x.jain
                );
            }
        }
    }
    s.push_str("</ul>");
    s.push_str(&picks(ctx));
    s
}

fn summary_table(ctx: &Ctx) -> String {
    let cmp = ctx.cmp;
    let mut s = String::from("<table><tr><th></th>");
    for (k, _) in &cmp.sweeps {
        let _ = write!(s, "<th>{}</th>", esc(k));
    }
    s.push_str("<th class=\"alg\">algorithm</th><th>goodput (Mbit/s)</th><th>RTT p50 (ms)</th><th>RTT p95 (ms)</th><th>queue delay p95 (ms)</th><th>retransmits</th><th>Jain</th><th>completion (s)</th></tr>");
    for p in cmp.points() {
        for spec in &cmp.specs {
            let m = cmp.median_metrics(spec, &p);
            let _ = write!(
                s,
                "<tr><td><span class=\"sw\" style=\"background:{}\"></span></td>",
                hex(ctx.colour_of(spec))
            );
            for (_, v) in &p {
                let _ = write!(s, "<td>{}</td>", esc(v));
            }
            let _ = write!(
                s,
                "<td class=\"alg\">{}</td><td>{:.2}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{:.3}</td><td>{}</td></tr>",
                esc(spec),
                m.goodput_bps / 1e6,
                m.rtt_p50_ms,
                m.rtt_p95_ms,
                m.queue_p95_ms,
                m.retransmits,
                m.jain,
                m.completion_s.map_or("-".into(), |c| format!("{c:.2}"))
            );
        }
    }
    s.push_str("</table>");
    s
}

fn sweep_plots(ctx: &Ctx) -> Vec<String> {
    let cmp = ctx.cmp;
    let Some((key, values)) = cmp.sweeps.first() else {
        return Vec::new();
    };
    let xs: Vec<Option<f64>> = values.iter().map(|v| numeric(v)).collect();
    let categorical = xs.iter().any(Option::is_none);
    let x_of = |i: usize| {
        if categorical {
            i as f64
        } else {
            xs[i].unwrap()
        }
    };
    let positive: Vec<f64> = xs.iter().flatten().copied().filter(|v| *v > 0.0).collect();
    let log_x = !categorical
        && positive.len() == xs.len()
        && (key.contains("loss")
            || positive.iter().copied().fold(0.0, f64::max)
                / positive.iter().copied().fold(f64::MAX, f64::min)
                >= 100.0);
    let x_desc = if categorical {
        format!("{key} (index: {})", values.join(", "))
    } else {
        format!("{key}{}", unit(&values[0]))
    };
    // Facets: one plot per combination of the other sweeps' values.
    let rest: Vec<Vec<(String, String)>> = {
        let sub = Comparison {
            sweeps: cmp.sweeps[1..].to_vec(),
            ..cmp.clone_shallow()
        };
        sub.points()
    };
    let mut out = Vec::new();
    for facet in rest {
        let label = facet
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let suffix = if label.is_empty() {
            String::new()
        } else {
            format!(", {label}")
        };
        for (what, y_desc, get) in [
            (
                "Goodput",
                "goodput (Mbit/s)",
                (|m: &Metrics| m.goodput_bps / 1e6) as fn(&Metrics) -> f64,
            ),
            ("95th-percentile RTT", "RTT p95 (ms)", |m: &Metrics| {
                m.rtt_p95_ms
            }),
        ] {
            let series: Vec<Series> = cmp
                .specs
                .iter()
                .map(|spec| Series {
                    label: Some(spec.clone()),
                    colour: ctx.colour_of(spec),
                    points: values
                        .iter()
                        .enumerate()
                        .map(|(i, v)| {
                            let mut p = vec![(key.clone(), v.clone())];
                            p.extend(facet.iter().cloned());
                            (x_of(i), get(&cmp.median_metrics(spec, &p)))
                        })
                        .collect(),
                })
                .collect();
            out.push(lines(
                &format!("{what} against {key}{suffix}"),
                &x_desc,
                y_desc,
                &series,
                log_x,
                true,
            ));
        }
    }
    out
}

impl Comparison {
    /// A copy without the runs (for views over the sweep structure).
    fn clone_shallow(&self) -> Comparison {
        Comparison {
            runs: Vec::new(),
            ..self.clone_meta()
        }
    }

    fn clone_meta(&self) -> Comparison {
        Comparison {
            name: self.name.clone(),
            scenario_path: self.scenario_path.clone(),
            scenario_text: String::new(),
            specs: self.specs.clone(),
            sweeps: self.sweeps.clone(),
            seeds: self.seeds.clone(),
            runs: Vec::new(),
            flent_test: self.flent_test.clone(),
        }
    }
}

fn cdf_points(mut v: Vec<f64>) -> Vec<(f64, f64)> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    v.iter()
        .enumerate()
        .map(|(i, &x)| (x, (i + 1) as f64 / n))
        .collect()
}

fn page(cmp: &Comparison, engines: Engines) -> String {
    let ctx = Ctx {
        cmp,
        first: cmp.points().into_iter().next().unwrap_or_default(),
    };
    let runs = ctx.shown();
    let has_pings = runs.iter().any(|r| !r.results.ping_series.is_empty());
    let mut figs: Vec<(String, String)> = Vec::new();
    let shown_note = if cmp.sweeps.is_empty() && cmp.seeds.len() <= 1 {
        String::new()
    } else {
        format!(
            " Time series show seed {}{}.",
            cmp.seeds.first().copied().unwrap_or(1),
            if ctx.first.is_empty() {
                String::new()
            } else {
                format!(
                    " at {}",
                    ctx.first
                        .iter()
                        .map(|(k, v)| format!("{k} = {v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )
    };

    for svg in sweep_plots(&ctx) {
        figs.push(("Medians over seeds.".into(), svg));
    }
    for svg in flow_series(&ctx, "Throughput over time", "throughput (Mbit/s)", |s| {
        s.throughput_bps / 1e6
    }) {
        figs.push((format!("Each flow's data delivered to the receiver (ACKed or SACKed) per sample interval, as netperf measures it at the sender.{shown_note}"), svg));
    }
    let rtt_series: Vec<Series> = runs
        .iter()
        .map(|r| Series {
            label: Some(r.spec.clone()),
            colour: ctx.colour_of(&r.spec),
            points: if has_pings {
                r.results
                    .ping_series
                    .iter()
                    .filter(|p| p.ping == 0)
                    .map(|p| (p.t, p.rtt_ms))
                    .collect()
            } else {
                r.results
                    .flow_series
                    .iter()
                    .filter(|s| s.flow == 0)
                    .map(|s| (s.t, s.srtt_us as f64 / 1000.0))
                    .collect()
            },
        })
        .collect();
    figs.push((
        if has_pings {
            "Ping RTT under load (flent's ping).".into()
        } else {
            "Smoothed RTT of flow 0 (no pings in this scenario).".into()
        },
        lines(
            "RTT over time",
            "time (s)",
            "RTT (ms)",
            &rtt_series,
            false,
            false,
        ),
    ));
    let queue_series: Vec<Series> = runs
        .iter()
        .map(|r| {
            let link = data_link(&r.results);
            Series {
                label: Some(r.spec.clone()),
                colour: ctx.colour_of(&r.spec),
                points: r
                    .results
                    .queue_series
                    .iter()
                    .filter(|q| q.link == link)
                    .map(|q| (q.t, q.delay_us as f64 / 1000.0))
                    .collect(),
            }
        })
        .collect();
    figs.push((
        "Queueing delay at the bottleneck the data crosses: the queue's length divided by the link's rate.".into(),
        lines("Queue delay over time", "time (s)", "queue delay (ms)", &queue_series, false, false),
    ));
    for svg in flow_series(
        &ctx,
        "Congestion window over time",
        "cwnd (segments)",
        |s| s.cwnd as f64,
    ) {
        figs.push((String::new(), svg));
    }
    let groups: Vec<Group<(f64, f64)>> = cmp
        .specs
        .iter()
        .map(|spec| {
            let pts = cmp
                .runs_at(spec, &ctx.first)
                .map(|r| {
                    let m = r.metrics();
                    (m.rtt_p95_ms, m.goodput_bps / 1e6)
                })
                .collect();
            (spec.clone(), ctx.colour_of(spec), pts)
        })
        .collect();
    figs.push((
        "Each small point is one run (seed); the large point is the algorithm's median. Up and to the left is better.".into(),
        scatter("Throughput against delay", "RTT p95 (ms)", "goodput (Mbit/s)", &groups),
    ));
    let per_flow: Vec<Group<f64>> = cmp
        .specs
        .iter()
        .map(|spec| {
            let v = cmp
                .runs_at(spec, &ctx.first)
                .flat_map(|r| r.results.flows.iter().map(|f| f.goodput_bps / 1e6))
                .collect();
            (spec.clone(), ctx.colour_of(spec), v)
        })
        .collect();
    figs.push((
        "Every flow of every seed; boxes from the 25th to the 75th percentile, bars at the median, whiskers at the 5th and 95th.".into(),
        boxes("Per-flow throughput", "goodput (Mbit/s)", &per_flow),
    ));
    let rtt_samples = |r: &Run| -> Vec<f64> {
        if has_pings {
            r.results.ping_series.iter().map(|p| p.rtt_ms).collect()
        } else {
            r.results
                .flow_series
                .iter()
                .map(|s| s.srtt_us as f64 / 1000.0)
                .collect()
        }
    };
    let rtt_box: Vec<Group<f64>> = cmp
        .specs
        .iter()
        .map(|spec| {
            (
                spec.clone(),
                ctx.colour_of(spec),
                cmp.runs_at(spec, &ctx.first)
                    .flat_map(rtt_samples)
                    .collect(),
            )
        })
        .collect();
    figs.push((
        if has_pings {
            "Ping RTT samples of every seed.".into()
        } else {
            "Flows' smoothed RTT at each sample, every seed.".into()
        },
        boxes(
            if has_pings { "Ping RTT" } else { "RTT" },
            "RTT (ms)",
            &rtt_box,
        ),
    ));
    let rtt_cdf: Vec<Series> = cmp
        .specs
        .iter()
        .map(|spec| {
            let pts = if has_pings {
                cdf_points(
                    cmp.runs_at(spec, &ctx.first)
                        .flat_map(rtt_samples)
                        .collect(),
                )
            } else {
                let mut h = kleinrock_sim::results::Histogram::default();
                for r in cmp.runs_at(spec, &ctx.first) {
                    h.merge(&r.results.rtt);
                }
                h.cdf()
                    .into_iter()
                    .map(|(us, f)| (us as f64 / 1000.0, f))
                    .collect()
            };
            Series {
                label: Some(spec.clone()),
                colour: ctx.colour_of(spec),
                points: pts,
            }
        })
        .collect();
    figs.push((
        if has_pings {
            "Distribution of ping RTTs, every seed.".into()
        } else {
            "Distribution of every RTT sample the flows took, every seed.".into()
        },
        lines(
            "RTT distribution",
            "RTT (ms)",
            "fraction of samples",
            &rtt_cdf,
            false,
            false,
        ),
    ));
    let q_cdf: Vec<Series> = cmp
        .specs
        .iter()
        .map(|spec| {
            let v = cmp
                .runs_at(spec, &ctx.first)
                .flat_map(|r| {
                    let link = data_link(&r.results);
                    r.results
                        .queue_series
                        .iter()
                        .filter(move |q| q.link == link)
                        .map(|q| q.delay_us as f64 / 1000.0)
                })
                .collect();
            Series {
                label: Some(spec.clone()),
                colour: ctx.colour_of(spec),
                points: cdf_points(v),
            }
        })
        .collect();
    figs.push((
        "Distribution of the bottleneck's queueing delay at each sample, every seed.".into(),
        lines(
            "Queueing delay distribution",
            "queue delay (ms)",
            "fraction of samples",
            &q_cdf,
            false,
            false,
        ),
    ));

    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Kleinrock: {name}</title><style>{CSS}</style></head><body>\n<h1>Which congestion control for <code>{name}</code>?</h1>\n",
        name = esc(&cmp.name)
    );
    let _ = write!(
        h,
        "<p class=\"meta\">Scenario <code>{}</code>; algorithms {}; seeds {}{}. Made by <code>kleinrock compare</code> {}.</p>",
        esc(&cmp.scenario_path),
        cmp.specs.iter().map(|s| format!("<span class=\"sw\" style=\"background:{}\"></span><code>{}</code>", hex(ctx.colour_of(s)), esc(s))).collect::<Vec<_>>().join(", "),
        cmp.seeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "),
        cmp.sweeps.iter().map(|(k, v)| format!("; {} in {}", esc(k), esc(&v.join(", ")))).collect::<String>(),
        env!("CARGO_PKG_VERSION")
    );
    h.push_str(match engines {
        Engines::Sim => "",
        Engines::Lab => "<p class=\"meta\">Every run is real Linux TCP in the live lab (<code>--engine lab</code>: network namespaces and an emulated link, docs/LAB.md).</p>",
        Engines::Both(_) => "<p class=\"meta\">Every run ran in the simulator and in the live lab (<code>--engine both</code>); the verdict, the summary and the plots are the simulator's, and the section <a href=\"#engines\">Simulator against the real kernel</a> sets the two side by side.</p>",
    });
    h.push_str("<h2>Verdict</h2>");
    h.push_str(&verdict(&ctx));
    h.push_str("<h2>Summary</h2><p>Medians over seeds. RTT is the ping's under load when the scenario has pings, else every RTT sample of every flow.</p>");
    h.push_str(&summary_table(&ctx));
    h.push_str("<h2>Plots</h2>");
    for (caption, svg) in &figs {
        let _ = writeln!(
            h,
            "<figure>{svg}<figcaption>{}</figcaption></figure>",
            esc(caption)
        );
    }
    if let Engines::Both(lab) = engines {
        h.push_str("<div id=\"engines\">");
        h.push_str(&crate::engines::section(cmp, lab));
        h.push_str("</div>");
    }
    let _ = write!(
        h,
        "<h2>Files</h2><p><code>summary.csv</code> and <code>comparison.json</code>: every run's metrics. <code>runs/RUN/</code>: each run's <code>results.json</code> and its series as CSV (<code>flows.csv</code>, <code>queues.csv</code>, <code>pings.csv</code>). <code>runs/RUN.flent.gz</code>: the run in flent's format (test <code>{}</code>), for <code>flent -i FILE -p PLOT</code>.</p>",
        esc(&cmp.flent_test)
    );
    let _ = write!(
        h,
        "<details><summary>The scenario</summary><pre>{}</pre></details>",
        esc(&cmp.scenario_text)
    );
    h.push_str("</body></html>\n");
    h
}

const CSS: &str = "body{font-family:sans-serif;max-width:820px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}\
.meta{color:#555}.verdict{font-size:1.15em;background:#f3f7fb;padding:.6em .8em;border-left:4px solid #1f77b4}\
table{border-collapse:collapse;font-size:.9em}td,th{padding:.25em .6em;border-bottom:1px solid #eee;text-align:right}\
td.alg,th.alg{text-align:left}\
.sw{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin-right:.3em;vertical-align:middle}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}figcaption{color:#555;font-size:.9em}\
pre{background:#f6f6f6;padding:.8em;overflow-x:auto}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swept_values_become_numbers_with_units() {
        assert_eq!(numeric("1%"), Some(1.0));
        assert_eq!(numeric("0.001%"), Some(0.001));
        assert_eq!(numeric("40ms"), Some(40.0));
        assert_eq!(numeric("1.5s"), Some(1500.0));
        assert_eq!(numeric("100Mbit"), Some(100.0));
        assert_eq!(numeric("1000"), Some(1000.0));
        assert_eq!(numeric("cubic"), None);
        assert_eq!(unit("10Mbit"), " (Mbit/s)");
        assert_eq!(unit("2bdp"), " (BDPs)");
    }
}
