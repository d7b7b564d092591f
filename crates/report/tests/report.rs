//! The report directory holds the runs' numbers: `summary.csv` and
//! `comparison.json` give each run's metrics, `runs/RUN/` its results, and
//! `report.html`'s tables and plots show the runs' series and medians
//! (read back from the page and its SVG).

mod svg;

use std::path::{Path, PathBuf};

use kleinrock_report::palette::{colour, hex};
use kleinrock_report::plan::{value_label, Scenario, Sweep};
use kleinrock_report::run::data_link;
use kleinrock_report::{write_report, Comparison, Metrics, Run};
use kleinrock_sim::Sim;
use svg::Plot;

const SCENARIO: &str = r#"
name = "one upload and a ping"
duration = "4s"
[link]
rate = "10Mbit"
queue = 84
[[flow]]
cc = "cubic"
rtt = "40ms"
[[ping]]
rtt = "40ms"
"#;

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kleinrock-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// cubic and reno, at 0% and 1% loss, seeds 1 and 2: eight runs, as
/// `kleinrock compare` makes them.
fn comparison(dir: &Path) -> Comparison {
    let path = dir.join("up.toml");
    std::fs::write(&path, SCENARIO).unwrap();
    let scn = Scenario::load(&path).unwrap();
    let specs = vec!["cubic".to_string(), "reno".to_string()];
    let sweeps = vec![Sweep::parse("loss=0%,1%").unwrap()];
    let seeds = vec![1, 2];
    let runs = scn
        .plan(&specs, &sweeps, &seeds)
        .unwrap()
        .runs
        .into_iter()
        .map(|p| {
            let results = Sim::new(p.config.clone())
                .unwrap()
                .run(&mut |_| {})
                .unwrap();
            Run::new(p, results)
        })
        .collect();
    Comparison {
        name: "up".into(),
        scenario_path: path.display().to_string(),
        scenario_text: scn.text().to_string(),
        specs,
        sweeps: sweeps
            .iter()
            .map(|s| (s.key.clone(), s.values.iter().map(value_label).collect()))
            .collect(),
        seeds,
        runs,
        flent_test: String::new(),
    }
}

/// `x` as written with `decimals` places equals `want` to that precision.
fn written(x: &str, want: f64, decimals: i32) -> bool {
    let x: f64 = x.parse().unwrap_or(f64::NAN);
    (x - want).abs() <= 0.5 * 10f64.powi(-decimals) * (1.0 + 1e-9)
}

#[test]
fn the_files_hold_each_runs_metrics_and_results() {
    let dir = tmpdir("files");
    let cmp = comparison(&dir);
    let out = dir.join("report");
    write_report(&cmp, &out, &mut |_| {}).unwrap();

    // summary.csv: a row per run, its metrics at the written precision.
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("algorithm,loss,seed,goodput_bps,rtt_p50_ms,rtt_p95_ms,queue_p95_ms,retransmits,jain,completion_s,run")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), cmp.runs.len());
    for (row, run) in rows.iter().zip(&cmp.runs) {
        let m = run.metrics();
        assert_eq!(
            row[..3],
            [run.spec.as_str(), &run.point[0].1, &run.seed.to_string()]
        );
        for (cell, want, places) in [
            (row[3], m.goodput_bps, 0),
            (row[4], m.rtt_p50_ms, 3),
            (row[5], m.rtt_p95_ms, 3),
            (row[6], m.queue_p95_ms, 3),
            (row[8], m.jain, 4),
        ] {
            assert!(written(cell, want, places), "{row:?}: {cell} vs {m:?}");
        }
        assert_eq!(row[7], m.retransmits.to_string());
        assert_eq!((row[9], row[10]), ("", run.slug().as_str()));
        // The run's own files are its results.
        let json = std::fs::read_to_string(out.join("runs").join(run.slug()).join("results.json"))
            .unwrap();
        assert_eq!(json, run.results.to_json(), "{}", run.slug());
    }
    // Some of the runs lost packets: the retransmission column is not all 0.
    assert!(rows.iter().any(|r| r[7] != "0"));

    // comparison.json: the same metrics, unrounded.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("comparison.json")).unwrap())
            .unwrap();
    let runs = j["runs"].as_array().unwrap();
    assert_eq!(runs.len(), cmp.runs.len());
    for (r, run) in runs.iter().zip(&cmp.runs) {
        let m = run.metrics();
        assert_eq!(r["run"], run.slug());
        for (key, want) in [
            ("goodput_bps", m.goodput_bps),
            ("rtt_p50_ms", m.rtt_p50_ms),
            ("rtt_p95_ms", m.rtt_p95_ms),
            ("queue_p95_ms", m.queue_p95_ms),
            ("jain", m.jain),
            ("power", m.power()),
        ] {
            assert_eq!(r[key].as_f64(), Some(want), "{} {key}", run.slug());
        }
        assert_eq!(r["retransmits"].as_u64(), Some(m.retransmits));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The plot titled `title`.
fn plot<'a>(plots: &'a [Plot], title: &str) -> &'a Plot {
    plots
        .iter()
        .find(|p| p.title() == title)
        .unwrap_or_else(|| panic!("no plot titled {title}"))
}

#[test]
fn the_page_shows_the_runs_series_and_medians() {
    let dir = tmpdir("page");
    let cmp = comparison(&dir);
    let html =
        std::fs::read_to_string(write_report(&cmp, &dir.join("report"), &mut |_| {}).unwrap())
            .unwrap();
    let plots = svg::plots(&html);
    let first = &cmp.points()[0];
    for (i, spec) in cmp.specs.iter().enumerate() {
        let c = hex(colour(i));
        // The time series show seed 1 at the first point (0% loss).
        let shown = cmp.runs_at(spec, first).next().unwrap();
        assert_eq!((shown.seed, shown.point[0].1.as_str()), (1, "0%"));
        let r = &shown.results;
        let throughput: Vec<(f64, f64)> = r
            .flow_series
            .iter()
            .map(|s| (s.t, s.throughput_bps / 1e6))
            .collect();
        plot(&plots, "Throughput over time").assert_line(spec, &c, false, &throughput);
        let pings: Vec<(f64, f64)> = r.ping_series.iter().map(|p| (p.t, p.rtt_ms)).collect();
        assert!(pings.len() > 10);
        plot(&plots, "RTT over time").assert_line(spec, &c, false, &pings);
        let link = data_link(r);
        let queue: Vec<(f64, f64)> = r
            .queue_series
            .iter()
            .filter(|q| q.link == link)
            .map(|q| (q.t, q.delay_us as f64 / 1000.0))
            .collect();
        plot(&plots, "Queue delay over time").assert_line(spec, &c, false, &queue);
        let cwnd: Vec<(f64, f64)> = r.flow_series.iter().map(|s| (s.t, s.cwnd as f64)).collect();
        plot(&plots, "Congestion window over time").assert_line(spec, &c, false, &cwnd);

        // The sweep: the median over seeds at each loss rate (0 and 1%,
        // a linear axis since 0 has no logarithm).
        let medians = |get: fn(&Metrics) -> f64| -> Vec<(f64, f64)> {
            cmp.points()
                .iter()
                .map(|p| {
                    let x: f64 = p[0].1.trim_end_matches('%').parse().unwrap();
                    (x, get(&cmp.median_metrics(spec, p)))
                })
                .collect()
        };
        plot(&plots, "Goodput against loss").assert_line(
            spec,
            &c,
            false,
            &medians(|m| m.goodput_bps / 1e6),
        );
        plot(&plots, "95th-percentile RTT against loss").assert_line(
            spec,
            &c,
            false,
            &medians(|m| m.rtt_p95_ms),
        );

        // Throughput against delay: a dot per seed at the first point.
        let scatter = plot(&plots, "Throughput against delay");
        let (x, y) = (scatter.x_axis(false), scatter.y_axis());
        let dots = scatter.circles(&c, 3);
        let runs: Vec<&Run> = cmp.runs_at(spec, first).collect();
        assert_eq!(dots.len(), runs.len());
        for (&(px, py), run) in dots.iter().zip(&runs) {
            let m = run.metrics();
            assert!(
                (px - x.at(m.rtt_p95_ms)).abs() <= 1.0
                    && (py - y.at(m.goodput_bps / 1e6)).abs() <= 1.0,
                "{spec} seed {}",
                run.seed
            );
        }

        // The summary table's row: the medians as the page writes them.
        for p in cmp.points() {
            let m = cmp.median_metrics(spec, &p);
            let row = format!(
                "<td>{}</td><td class=\"alg\">{spec}</td><td>{:.2}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{:.3}</td><td>-</td></tr>",
                p[0].1,
                m.goodput_bps / 1e6,
                m.rtt_p50_ms,
                m.rtt_p95_ms,
                m.queue_p95_ms,
                m.retransmits,
                m.jain,
            );
            assert!(html.contains(&row), "summary row {row}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
