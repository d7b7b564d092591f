//! `kleinrock compare`: the runs it makes, the report directory it writes,
//! and one sentence for each kind of mistake.

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{kleinrock, scenarios, text, tmpdir};

// Reads back the plots' SVG; the report's own tests use it too.
#[path = "../../report/tests/svg/mod.rs"]
mod svg;

const SCENARIO: &str = r#"
name = "two uploads and a ping"
duration = "12s"
[link]
rate = "10Mbit"
queue = 84
[[flow]]
cc = "cubic"
rtt = "40ms"
count = 2
stagger = "1s"
[[ping]]
rtt = "40ms"
[compare]
cc = ["cubic", "cdg"]
"#;

fn scenario(dir: &Path) -> PathBuf {
    let p = dir.join("two-up.toml");
    fs::write(&p, SCENARIO).unwrap();
    p
}

#[test]
fn compare_writes_a_report_with_every_run() {
    let dir = tmpdir("report");
    let s = scenario(&dir);
    let out = dir.join("report");
    let o = kleinrock(&[
        "compare",
        s.to_str().unwrap(),
        "--cc",
        "cubic,cdg,bbr",
        "--seeds",
        "1,2",
        "--sweep",
        "loss=0%,1%",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    // The table: one row per point and algorithm.
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" Mb/s ")).count(),
        6,
        "{stdout}"
    );
    assert!(stdout.contains("report: "), "{stdout}");
    let html = fs::read_to_string(out.join("report.html")).unwrap();
    for needle in [
        "<h2>Verdict</h2>",
        "<b>Use ",
        "Throughput against delay",
        "Goodput against loss",
        "Ping RTT",
        "RTT distribution",
        "Queueing delay distribution",
        "cdg",
        "bbr",
    ] {
        assert!(html.contains(needle), "report lacks {needle}");
    }
    assert!(
        !html.contains("http://")
            || html.matches("http://").count()
                == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "nothing fetched from the network"
    );
    // 3 algorithms x 2 seeds x 2 loss rates.
    let csv = fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 12, "{csv}");
    assert!(csv.starts_with("algorithm,loss,seed,goodput_bps"), "{csv}");
    let runs: Vec<_> = fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.iter().filter(|p| p.is_dir()).count(), 12);
    report_shows_the_runs(&out, &html);
    let flent: Vec<_> = runs
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".flent.gz"))
        .collect();
    assert_eq!(flent.len(), 12);
    let mut text = String::new();
    flate2::read::GzDecoder::new(fs::File::open(flent[0]).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(j["version"], 4);
    assert_eq!(j["metadata"]["NAME"], "tcp_nup");
    assert_eq!(j["metadata"]["TEST_PARAMETERS"]["upload_streams"], "2");
    let n = j["x_values"].as_array().unwrap().len();
    for series in ["TCP upload::1", "TCP upload::2", "Ping (ms) ICMP"] {
        assert_eq!(
            j["results"][series].as_array().unwrap().len(),
            n,
            "{series}"
        );
        assert!(
            !j["raw_values"][series].as_array().unwrap().is_empty(),
            "{series}"
        );
    }
    for f in &flent {
        flent_holds_the_run(f);
    }
    // Deterministic: the same command writes the same summary.
    let again = dir.join("again");
    let o = kleinrock(&[
        "compare",
        s.to_str().unwrap(),
        "--cc",
        "cubic,cdg,bbr",
        "--seeds",
        "1,2",
        "--sweep",
        "loss=0%,1%",
        "--out",
        again.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success());
    assert_eq!(csv, fs::read_to_string(again.join("summary.csv")).unwrap());
}

/// A flent file `runs/RUN.flent.gz` holds its run's series as
/// `runs/RUN/` has them: each upload's throughput (Mbit/s) and the ping's
/// RTTs, in order.
fn flent_holds_the_run(path: &Path) {
    let mut text = String::new();
    flate2::read::GzDecoder::new(fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let name = path.file_name().unwrap().to_string_lossy();
    let dir = path.with_file_name(name.trim_end_matches(".flent.gz"));
    let vals = |series: &str| -> Vec<f64> {
        j["raw_values"][series]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["val"].as_f64().unwrap())
            .collect()
    };
    let flows = csv_rows(&dir.join("flows.csv"));
    for (flow, series) in [("0", "TCP upload::1"), ("1", "TCP upload::2")] {
        let want: Vec<f64> = flows
            .iter()
            .filter(|s| s["flow"] == flow)
            .map(|s| s["throughput_bps"].parse::<f64>().unwrap() / 1e6)
            .collect();
        let got = vals(series);
        assert_eq!(got.len(), want.len(), "{name} {series}");
        // flows.csv rounds to a bit/s, flent to a micro-Mbit/s.
        assert!(
            got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-6),
            "{name} {series}"
        );
    }
    let pings: Vec<f64> = csv_rows(&dir.join("pings.csv"))
        .iter()
        .map(|p| p["rtt_ms"].parse().unwrap())
        .collect();
    let got = vals("Ping (ms) ICMP");
    assert_eq!(got.len(), pings.len(), "{name} pings");
    // pings.csv rounds to a microsecond.
    assert!(
        got.iter().zip(&pings).all(|(g, w)| (g - w).abs() <= 5e-4),
        "{name} pings"
    );
}

/// A CSV file's rows, each cell by its column's name.
fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Each summary.csv row is its run's: the run's files (its flows'
/// retransmissions, the quantiles of its ping and queue series) and
/// comparison.json agree with it. Returns the rows.
fn summary_is_the_runs(out: &Path) -> Vec<std::collections::HashMap<String, String>> {
    use kleinrock_report::run::quantile;
    let summary = csv_rows(&out.join("summary.csv"));
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("comparison.json")).unwrap()).unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), summary.len());
    let column = |rows: &[std::collections::HashMap<String, String>], key: &str| -> Vec<f64> {
        rows.iter().map(|r| r[key].parse().unwrap()).collect()
    };
    for (row, j) in summary.iter().zip(runs) {
        let dir = out.join("runs").join(&row["run"]);
        assert_eq!(j["run"], row["run"].as_str());
        assert_eq!(
            row["goodput_bps"],
            format!("{:.0}", j["goodput_bps"].as_f64().unwrap())
        );
        let flows = csv_rows(&dir.join("summary.csv"));
        let retransmits: u64 = flows
            .iter()
            .map(|f| f["retransmits"].parse::<u64>().unwrap())
            .sum();
        assert_eq!(row["retransmits"], retransmits.to_string(), "{row:?}");
        // RTT: the pings' when there are any.
        let mut pings = column(&csv_rows(&dir.join("pings.csv")), "rtt_ms");
        if !pings.is_empty() {
            for (key, q) in [("rtt_p50_ms", 0.5), ("rtt_p95_ms", 0.95)] {
                assert_eq!(row[key], format!("{:.3}", quantile(&mut pings, q)), "{key}");
            }
        }
        // The queue of the link that carried the most bytes.
        let results: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
        let bytes = |l: &str| results["links"][l]["tx_bytes"].as_u64().unwrap();
        let link = if bytes("down") > bytes("up") {
            "down"
        } else {
            "up"
        };
        let samples: Vec<_> = csv_rows(&dir.join("queues.csv"))
            .into_iter()
            .filter(|q| q["link"] == link)
            .collect();
        let mut queue: Vec<f64> = column(&samples, "delay_us")
            .iter()
            .map(|d| d / 1e3)
            .collect();
        assert_eq!(
            row["queue_p95_ms"],
            format!("{:.3}", quantile(&mut queue, 0.95)),
            "{row:?}"
        );
    }
    summary
}

/// The report's numbers are its runs' (see [`summary_is_the_runs`]), and
/// its throughput and RTT plots draw the shown runs' series (seed 1, loss
/// 0%) as the runs' files hold them.
fn report_shows_the_runs(out: &Path, html: &str) {
    let summary = summary_is_the_runs(out);
    let plots = svg::plots(html);
    let plot = |title: &str| {
        plots
            .iter()
            .find(|p| p.title() == title)
            .unwrap_or_else(|| panic!("no plot titled {title}"))
    };
    for spec in ["cubic", "cdg", "bbr"] {
        let shown = summary
            .iter()
            .find(|r| r["algorithm"] == spec && r["loss"] == "0%" && r["seed"] == "1")
            .unwrap();
        let dir = out.join("runs").join(&shown["run"]);
        let flows = csv_rows(&dir.join("flows.csv"));
        let throughput = plot(&format!("Throughput over time: {spec}"));
        for f in ["0", "1"] {
            let series: Vec<(f64, f64)> = flows
                .iter()
                .filter(|s| s["flow"] == f)
                .map(|s| {
                    (
                        s["t"].parse().unwrap(),
                        s["throughput_bps"].parse::<f64>().unwrap() / 1e6,
                    )
                })
                .collect();
            let colour = throughput.colour_of(&format!("{spec} flow {f}"));
            throughput.assert_line(&format!("{spec} flow {f}"), &colour, false, &series);
        }
        let pings: Vec<(f64, f64)> = csv_rows(&dir.join("pings.csv"))
            .iter()
            .map(|p| (p["t"].parse().unwrap(), p["rtt_ms"].parse().unwrap()))
            .collect();
        let rtt = plot("RTT over time");
        rtt.assert_line(spec, &rtt.colour_of(spec), false, &pings);
    }
}

#[test]
fn the_compare_table_in_the_scenario_is_the_default() {
    let dir = tmpdir("table");
    let s = scenario(&dir);
    let out = dir.join("r");
    let o = kleinrock(&[
        "compare",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" Mb/s ")).count(),
        2,
        "{stdout}"
    );
}

#[test]
fn compare_mistakes_get_one_sentence() {
    let dir = tmpdir("errors");
    let s = scenario(&dir);
    let s = s.to_str().unwrap();
    let out = dir.join("o");
    let out = out.to_str().unwrap();
    let blocker = dir.join("file");
    fs::write(&blocker, "not a directory").unwrap();
    for (args, want) in [
        (
            vec!["compare", s, "--cc", "cubik", "--out", out],
            "--cc cubik: unknown algorithm `cubik`; valid algorithms are",
        ),
        (
            vec!["compare", s, "--sweep", "loss", "--out", out],
            "`--sweep loss` is not KEY=VALUES",
        ),
        (
            vec!["compare", s, "--sweep", "loss=lots", "--out", out],
            "`loss` = \"lots\" is not a probability",
        ),
        (
            vec!["compare", s, "--sweep", "colour=red", "--out", out],
            "unknown key `colour`",
        ),
        (
            vec!["compare", s, "--out", blocker.join("x").to_str().unwrap()],
            "cannot write the report to",
        ),
        (
            vec!["compare", "missing.toml"],
            "cannot read scenario missing.toml",
        ),
    ] {
        let o = kleinrock(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(want),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "one sentence: {stderr}"
        );
    }
}

#[test]
fn flent_renders_our_files() {
    // scripts/test.sh installs flent 2.3 from PyPI, says where, and
    // requires it.
    let flent = std::env::var_os("KLEINROCK_FLENT");
    kleinrock_testkit::require!(flent.is_none().then(|| {
        kleinrock_testkit::Missing::new(
            "flent",
            "set KLEINROCK_FLENT to a flent 2.3 binary (scripts/test.sh installs one)",
        )
    }));
    let flent = flent.unwrap();
    let dir = tmpdir("flent");
    let s = scenario(&dir);
    let out = dir.join("r");
    let o = kleinrock(&[
        "compare",
        s.to_str().unwrap(),
        "--cc",
        "cubic",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success());
    let data = out.join("runs").join("cubic_seed1.flent.gz");
    for plot in ["totals", "box_totals", "ping_cdf", "upload"] {
        let png = dir.join(format!("{plot}.png"));
        let o = Command::new(&flent)
            .args([
                "-i",
                data.to_str().unwrap(),
                "-p",
                plot,
                "-o",
                png.to_str().unwrap(),
            ])
            .output()
            .expect("flent runs");
        let stderr = String::from_utf8_lossy(&o.stderr);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "flent -p {plot}: {stdout}\n{stderr}");
        assert!(
            !stderr.contains("Traceback") && !stdout.contains("ERROR"),
            "flent -p {plot}: {stdout}\n{stderr}"
        );
        // flent can exit 0 and leave an empty file when a plot fails.
        let size = fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(size > 10_000, "flent -p {plot} wrote {size} bytes");
    }
}

#[test]
fn compare_works_on_every_shipped_scenario() {
    // Two simulated seconds each (a `duration` override), every scenario
    // in scenarios/, with its own [compare] table or cubic.
    let dir = tmpdir("shipped");
    let root = scenarios();
    let mut n = 0;
    for entry in fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        // select-*.toml are `kleinrock select` workloads (fleets of paths),
        // not simulator scenarios; tests/cli.rs runs them.
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("select-"))
        {
            continue;
        }
        let out = dir.join(path.file_stem().unwrap());
        let mut args = vec![
            "compare",
            path.to_str().unwrap(),
            "--sweep",
            "duration=2s",
            "--seeds",
            "1",
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ];
        if !text.contains("[compare]") {
            args.extend(["--cc", "cubic"]);
        }
        let o = kleinrock(&args);
        assert!(
            o.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(out.join("report.html").exists(), "{}", path.display());
        let rows = summary_is_the_runs(&out);
        let dirs = fs::read_dir(out.join("runs"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count();
        assert_eq!(rows.len(), dirs, "{}", path.display());
        n += 1;
    }
    assert!(n >= 15, "{n} scenarios");
}

#[test]
fn compare_refuses_runs_that_cannot_differ_and_warns_of_a_partial_sweep() {
    let dir = tmpdir("no-effect");
    let s = scenario(&dir);
    let s = s.to_str().unwrap();
    let out = dir.join("o");
    let out = out.to_str().unwrap();
    for (args, want) in [
        (
            vec!["compare", s, "--sweep", "seed=1,2", "--out", out],
            "the sweep of `seed` changes nothing: each run's seed is one of --seeds",
        ),
        (
            vec![
                "compare",
                s,
                "--cc",
                "cubic",
                "--sweep",
                "cc=cubic,nosuch",
                "--out",
                out,
            ],
            "a sweep of `cc` cannot vary the algorithm",
        ),
        (
            vec![
                "compare", s, "--sweep", "loss=1%", "--sweep", "loss=2%", "--out", out,
            ],
            "`loss` is swept twice",
        ),
        (
            vec!["compare", s, "--cc", "cubic,cdg,cubic", "--out", out],
            "`cubic` is compared twice",
        ),
        (
            vec!["compare", s, "--seeds", "1,1", "--out", out],
            "seed 1 is listed twice",
        ),
        (
            vec!["compare", s, "--sweep", "loss=1%,1%", "--out", out],
            "the sweep of `loss` lists 1% twice",
        ),
    ] {
        let o = kleinrock(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(want),
            "{args:?}: {stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
    assert!(
        !Path::new(out).exists(),
        "nothing written for a refused run"
    );
    // [link.up] loss wins over the swept [link] loss upstream: said.
    let up = dir.join("up.toml");
    fs::write(
        &up,
        SCENARIO
            .replace("duration = \"12s\"", "duration = \"2s\"")
            .replace("queue = 84\n", "queue = 84\n[link.up]\nloss = \"1%\"\n"),
    )
    .unwrap();
    let o = kleinrock(&[
        "compare",
        up.to_str().unwrap(),
        "--cc",
        "cubic",
        "--sweep",
        "loss=0%,2%",
        "--out",
        out,
        "--quiet",
    ]);
    let (_, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(
        stderr,
        "warning: the sweep of `loss` changes one direction only: [link.up] sets `loss` itself, which wins over [link], so only [link.down] varies; sweep link.up.loss to vary the up direction\n"
    );
}
