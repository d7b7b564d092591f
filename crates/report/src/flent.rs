//! flent's data format (version 4), so that flent's own plotter opens
//! Kleinrock's runs: `flent -i RUN.flent.gz -p totals -o totals.png`.
//!
//! A data file is gzipped JSON with `version`, `x_values` (seconds from T0,
//! one per step), `results` (series name to one value or null per x value),
//! `raw_values` (series name to samples with absolute times `t`) and
//! `metadata` (the test's NAME and TEST_PARAMETERS, TITLE, HOST,
//! LOCAL_HOST, LENGTH, TOTAL_LENGTH, STEP_SIZE, TIME and T0, SERIES_META
//! with units). Series are named as flent's own tests name them, so its
//! plot definitions find them: `TCP upload::1` (tcp_nup), `TCP download::1`
//! (tcp_ndown), `TCP upload BE`... (rrul_be), `Ping (ms) ICMP`. flent
//! computes sums, averages and fairness itself when it loads a file.
//!
//! Like flent's netperf tests, the measurement sits between DELAY = 5 s of
//! idle on either side (TOTAL_LENGTH = LENGTH + 10 s), because flent's box
//! and CDF plots cut that much off each end.

use std::io::{self, Write};
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;
use serde_json::{json, Map, Value};

use crate::run::{Comparison, Run};

/// Simulated time zero, as wall-clock time: 2000-01-01T00:00:00Z. Fixed, so
/// the same run always writes the same file.
pub const T0_UNIX: f64 = 946_684_800.0;
const T0_ISO: &str = "2000-01-01T00:00:00.000000Z";

/// flent's default idle time before and after the flows, s.
pub const DELAY_S: f64 = 5.0;

/// The flent test a run resembles, from its flows' directions:
/// `tcp_nup` for uploads only, `tcp_ndown` for downloads only, `rrul_be`
/// (four each way at most; further flows are left out) for both.
pub fn test_for(run: &Run) -> String {
    let up = run
        .results
        .flows
        .iter()
        .filter(|f| f.direction == "upload")
        .count();
    let down = run.results.flows.len() - up;
    match (up, down) {
        (_, 0) => "tcp_nup".into(),
        (0, _) => "tcp_ndown".into(),
        _ => "rrul_be".into(),
    }
}

/// The `n`-th (from 1) flow of a direction, as `test` names it.
fn series_name(test: &str, direction: &str, n: usize) -> Option<String> {
    let dir = if direction == "upload" {
        "upload"
    } else {
        "download"
    };
    if test.starts_with("rrul") {
        return match n {
            1 => Some(format!("TCP {dir} BE")),
            2..=4 => Some(format!("TCP {dir} BE{n}")),
            _ => None,
        };
    }
    Some(format!("TCP {dir}::{n}"))
}

/// The run as a flent data document.
pub fn document(cmp: &Comparison, run: &Run) -> Value {
    let r = &run.results;
    let test = if cmp.flent_test.is_empty() {
        test_for(run)
    } else {
        cmp.flent_test.clone()
    };
    // The step is the sample interval: the spacing of the flow series.
    let first: Vec<f64> = r
        .flow_series
        .iter()
        .filter(|s| s.flow == 0)
        .map(|s| s.t)
        .take(2)
        .collect();
    let step = match first[..] {
        [a, b] => b - a,
        [a] => a,
        _ => r.duration_s.max(1e-3),
    };
    let total = r.duration_s + 2.0 * DELAY_S;
    let n = (total / step).round() as usize + 1;
    let x: Vec<f64> = (0..n)
        .map(|i| (i as f64 * step * 1e6).round() / 1e6)
        .collect();
    let slot = |t: f64| ((t + DELAY_S) / step).round() as usize;
    let mut results = Map::new();
    let mut raw = Map::new();
    let mut meta = Map::new();
    let (mut ups, mut downs) = (0, 0);
    for f in &r.flows {
        let k = if f.direction == "upload" {
            ups += 1;
            ups
        } else {
            downs += 1;
            downs
        };
        let Some(name) = series_name(&test, f.direction, k) else {
            continue;
        };
        let mut values = vec![Value::Null; n];
        let mut samples = Vec::new();
        for s in r.flow_series.iter().filter(|s| s.flow == f.flow) {
            let i = slot(s.t);
            if i < n {
                let mbit = (s.throughput_bps / 1e6 * 1e6).round() / 1e6;
                values[i] = json!(mbit);
                samples.push(json!({ "t": T0_UNIX + x[i], "dur": step, "val": mbit }));
            }
        }
        let mean = f.goodput_bps / 1e6;
        results.insert(name.clone(), Value::Array(values));
        raw.insert(name.clone(), Value::Array(samples));
        meta.insert(name, json!({ "UNITS": "Mbits/s", "MEAN_VALUE": mean, "RUNNER": "KleinrockFlow", "COMMAND": format!("kleinrock flow {} ({})", f.flow, f.cc) }));
    }
    if !r.ping_series.is_empty() {
        let name = "Ping (ms) ICMP".to_string();
        let mut values = vec![Value::Null; n];
        let mut samples = Vec::new();
        let (mut sum, mut count, mut lo, mut hi) = (0.0, 0u64, f64::MAX, f64::MIN);
        for (seq, p) in r.ping_series.iter().filter(|p| p.ping == 0).enumerate() {
            let i = slot(p.t);
            if i < n {
                values[i] = json!(p.rtt_ms);
            }
            samples.push(
                json!({ "t": T0_UNIX + DELAY_S + p.t, "seq": (seq + 1) as f64, "val": p.rtt_ms }),
            );
            sum += p.rtt_ms;
            count += 1;
            lo = lo.min(p.rtt_ms);
            hi = hi.max(p.rtt_ms);
        }
        results.insert(name.clone(), Value::Array(values));
        raw.insert(name.clone(), Value::Array(samples));
        meta.insert(name, json!({ "UNITS": "ms", "MEAN_VALUE": if count > 0 { sum / count as f64 } else { 0.0 }, "MIN_VALUE": lo, "MAX_VALUE": hi, "RUNNER": "KleinrockPing", "COMMAND": "kleinrock ping 0" }));
    }
    let mut params = Map::new();
    if test.starts_with("rrul") {
        // rrul_be names its four flows each way; it takes no counts.
    } else if ups > 0 {
        params.insert("upload_streams".into(), json!(ups.to_string()));
    }
    if downs > 0 && !test.starts_with("rrul") {
        params.insert("download_streams".into(), json!(downs.to_string()));
    }
    let point: Vec<String> = run.point.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let title = format!(
        "{} {} {}seed {}",
        cmp.name,
        run.spec,
        if point.is_empty() {
            String::new()
        } else {
            format!("{} ", point.join(" "))
        },
        run.seed
    );
    let length = r.duration_s;
    json!({
        "version": 4,
        "x_values": x,
        "results": results,
        "raw_values": raw,
        "metadata": {
            "NAME": test,
            "TITLE": title,
            "NOTE": format!("simulated by kleinrock {} from {}", env!("CARGO_PKG_VERSION"), cmp.scenario_path),
            "TIME": T0_ISO,
            "T0": T0_ISO,
            "HOST": "kleinrock-sim",
            "HOSTS": ["kleinrock-sim"],
            "LOCAL_HOST": "kleinrock",
            "LENGTH": length.round() as i64,
            "TOTAL_LENGTH": total,
            "STEP_SIZE": step,
            "IP_VERSION": 4,
            "TEST_PARAMETERS": params,
            "SERIES_META": meta,
            "FAILED_RUNNERS": 0,
            "KLEINROCK_ALGORITHM": run.spec,
            "KLEINROCK_SEED": run.seed,
        }
    })
}

/// Writes the run as gzipped flent data to `path`.
pub fn write(cmp: &Comparison, run: &Run, path: &Path) -> io::Result<()> {
    let f = kleinrock_files::create(path)?;
    let mut gz = GzEncoder::new(io::BufWriter::new(f), Compression::fast());
    serde_json::to_writer(&mut gz, &document(cmp, run)).map_err(io::Error::other)?;
    gz.finish()?.flush()
}
