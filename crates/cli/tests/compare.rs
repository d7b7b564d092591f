//! `kleinrock compare`: the runs it makes, the report directory it writes,
//! and one sentence for each kind of mistake.

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{kleinrock, scenarios, text, tmpdir};

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
        n += 1;
    }
    assert!(n >= 15, "{n} scenarios");
}
