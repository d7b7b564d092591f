//! `kleinrock model`: every algorithm spec x HZ over one modelled path, in
//! parallel, as a table; optionally recording each run as a hook trace and
//! replaying it to prove the recording is exact.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kleinrock_cc::driver::{Driver, Path as NetPath, Totals};
use kleinrock_cc::ops::NoTap;
use kleinrock_cc::Algorithm;
use kleinrock_trace::Recorder;

use crate::replay::{parse_hz, parse_spec};
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// Algorithm specs, comma-separated (see `kleinrock algorithms`).
    #[arg(long = "cc", value_delimiter = ',', value_parser = parse_spec, default_value = "reno,cubic")]
    cc: Vec<Algorithm>,
    /// Jiffies clock rates to run each spec at, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_hz, default_value = "250")]
    hz: Vec<u32>,
    /// Bottleneck rate, Mbit/s.
    #[arg(long, default_value_t = 100.0, value_parser = parse_positive)]
    rate_mbps: f64,
    /// Base round-trip time, microseconds.
    #[arg(long, default_value_t = 40_000, value_parser = clap::value_parser!(u32).range(1..))]
    rtt_us: u32,
    /// Bottleneck buffer, segments (default: one bandwidth-delay product).
    #[arg(long)]
    buffer_pkts: Option<u32>,
    /// Random loss per segment, percent (e.g. 1 or 0.01).
    #[arg(long, default_value = "0", value_parser = parse_percent)]
    loss: u32,
    /// Segments per ACK (2: delayed ACKs).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    ack_every: u32,
    /// Segment size, bytes.
    #[arg(long, default_value_t = 1448, value_parser = clap::value_parser!(u32).range(64..=65_535))]
    mss: u32,
    /// Model time per run, seconds.
    #[arg(long, default_value_t = 10.0, value_parser = parse_positive)]
    seconds: f64,
    /// Seed of the loss process.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record each run's hook trace here (gzip CSV) and replay it.
    #[arg(long)]
    trace_dir: Option<PathBuf>,
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a positive number")),
    }
}

/// Percent to parts per million.
fn parse_percent(s: &str) -> Result<u32, String> {
    let t = s.trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok((v * 10_000.0).round() as u32),
        _ => Err(format!(
            "`{s}` is not a loss rate; give a percentage from 0 to 100, e.g. 1 or 0.01"
        )),
    }
}

struct Run {
    spec: String,
    hz: u32,
    totals: Totals,
    trace: Option<(PathBuf, u64)>,
}

fn trace_name(spec: &str, hz: u32) -> String {
    let clean: String = spec
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{clean}-hz{hz}.csv.gz")
}

/// Whether `name` is one [`trace_name`] gives.
fn is_trace_name(name: &str) -> bool {
    name.strip_suffix(".csv.gz")
        .and_then(|n| n.rsplit_once("-hz"))
        .is_some_and(|(spec, hz)| {
            !spec.is_empty()
                && spec.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !hz.is_empty()
                && hz.chars().all(|c| c.is_ascii_digit())
        })
}

/// Checks, before any run, that each run writes a trace of its own (a
/// spec or HZ given twice, or two specs named alike, would write one file
/// from two threads) into a directory that is new, empty or holds only
/// traces `model` writes.
fn check_trace_dir(dir: &Path, jobs: &[(Algorithm, u32)]) -> Result<(), Failure> {
    let names: Vec<(String, String)> = jobs
        .iter()
        .map(|(cc, hz)| {
            (
                trace_name(&cc.spec(), *hz),
                format!("{} at HZ {hz}", cc.spec()),
            )
        })
        .collect();
    for (i, (name, run)) in names.iter().enumerate() {
        if let Some((_, other)) = names[..i].iter().find(|(n, _)| n == name) {
            let what = if other == run {
                format!("{run} is asked for twice")
            } else {
                format!("{other} and {run} are both traced as {name}")
            };
            return Err(Failure(format!(
                "{what}; give each spec and HZ once with --trace-dir"
            )));
        }
    }
    let ours = |e: &kleinrock_files::Entry| {
        Ok(e.kind == kleinrock_files::Kind::File && e.name.is_some_and(is_trace_name))
    };
    kleinrock_files::check_dir(dir, &ours).map_err(|e| {
        Failure(format!(
            "cannot write traces to {}: {e}; choose a new or empty --trace-dir",
            dir.display()
        ))
    })?;
    kleinrock_files::claim_dir(dir, &ours).map_err(|e| {
        Failure(format!(
            "cannot create trace directory {}: {e}; choose a writable --trace-dir",
            dir.display()
        ))
    })
}

fn run_one(
    cc: Algorithm,
    path: NetPath,
    hz: u32,
    micros: u64,
    dir: Option<&Path>,
) -> Result<Run, String> {
    let spec = cc.spec();
    match dir {
        None => {
            let mut d = Driver::new(cc, path, hz, NoTap);
            Ok(Run {
                spec,
                hz,
                totals: d.run_for(micros),
                trace: None,
            })
        }
        Some(dir) => {
            let file = dir.join(trace_name(&spec, hz));
            let rec = Recorder::create(&file, &cc)
                .map_err(|e| format!("cannot write trace {}: {e}", file.display()))?;
            let mut d = Driver::new(cc, path, hz, rec);
            let totals = d.run_for(micros);
            let rows = d
                .tap
                .finish()
                .map_err(|e| format!("cannot write trace {}: {e}", file.display()))?;
            Ok(Run {
                spec,
                hz,
                totals,
                trace: Some((file, rows)),
            })
        }
    }
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let rate_pps = (a.rate_mbps * 1e6 / (a.mss as f64 * 8.0)).round().max(1.0) as u64;
    let bdp = rate_pps * a.rtt_us as u64 / 1_000_000;
    let path = NetPath {
        rtt_us: a.rtt_us,
        rate_pps,
        buffer_pkts: a.buffer_pkts.unwrap_or(bdp.max(1) as u32),
        loss_ppm: a.loss,
        ack_every: a.ack_every,
        seed: a.seed,
    };
    let micros = (a.seconds * 1e6) as u64;
    let jobs: Vec<(Algorithm, u32)> =
        a.cc.iter()
            .flat_map(|cc| a.hz.iter().map(move |&hz| (cc.clone(), hz)))
            .collect();
    if let Some(dir) = &a.trace_dir {
        check_trace_dir(dir, &jobs)?;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut results: Vec<Option<Result<Run, String>>> = (0..jobs.len()).map(|_| None).collect();
    for chunk in jobs.iter().enumerate().collect::<Vec<_>>().chunks(threads) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&(i, (cc, hz))| {
                    let dir = a.trace_dir.as_deref();
                    (
                        i,
                        s.spawn(move || run_one(cc.clone(), path, *hz, micros, dir)),
                    )
                })
                .collect();
            for (i, h) in handles {
                results[i] = Some(
                    h.join()
                        .unwrap_or_else(|_| Err("a model run panicked".into())),
                );
            }
        });
    }
    let runs = results
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect::<Result<Vec<Run>, String>>()?;

    println!(
        "path: {} Mbit/s, RTT {} us, buffer {} segments (BDP {bdp}), loss {}%, {} segments per ACK, {} s per run, seed {}",
        a.rate_mbps,
        a.rtt_us,
        path.buffer_pkts,
        a.loss as f64 / 10_000.0,
        a.ack_every,
        a.seconds,
        a.seed
    );
    println!(
        "{:<36} {:>7} {:>12} {:>10} {:>9} {:>8} {:>7}",
        "algorithm", "HZ", "goodput", "mean cwnd", "lost", "recover", "RTOs"
    );
    for r in &runs {
        let t = &r.totals;
        println!(
            "{:<36} {:>7} {:>7.1} Mb/s {:>10} {:>9} {:>8} {:>7}",
            r.spec,
            r.hz,
            t.goodput_bps(a.mss) as f64 / 1e6,
            t.mean_cwnd(),
            t.lost_pkts,
            t.recoveries,
            t.timeouts
        );
    }
    let mut code = ExitCode::SUCCESS;
    if a.trace_dir.is_some() {
        println!("\nhook traces, each replayed into the same spec:");
        for r in &runs {
            let (file, rows) = r.trace.as_ref().expect("traced");
            let spec: Algorithm = r.spec.parse().map_err(Failure::from)?;
            let report = kleinrock_trace::replay(file, spec, r.hz, &mut |_| {})?;
            if !report.agrees() {
                code = ExitCode::from(1);
            }
            println!(
                "  {} ({rows} rows): {} divergent",
                file.display(),
                report.divergent
            );
        }
        println!("replay one yourself: kleinrock replay FILE --cc SPEC --hz HZ");
    }
    Ok(code)
}
