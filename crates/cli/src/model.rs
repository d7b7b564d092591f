//! `kleinrock model`: every algorithm spec x HZ over one modelled path, in
//! parallel, as a table; optionally recording each run as a hook trace and
//! replaying it to prove the recording is exact. Every option, and a run's
//! work, has a limit checked before any run (docs/MODEL.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use kleinrock_cc::driver::{Driver, Path as NetPath, Totals};
use kleinrock_cc::echo::{name, show};
use kleinrock_cc::ops::{NoTap, Tap};
use kleinrock_cc::Algorithm;
use kleinrock_trace::Recorder;

use crate::progress::Phase;
use crate::replay::{parse_hz, parse_spec, warn_specs};
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// Algorithm specs, comma-separated (see `kleinrock algorithms`).
    #[arg(long = "cc", value_delimiter = ',', value_parser = parse_spec, default_value = "reno,cubic")]
    cc: Vec<Algorithm>,
    /// Jiffies clock rates to run each spec at, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_hz, default_value = "250")]
    hz: Vec<u32>,
    /// Bottleneck rate, Mbit/s (at most 100000).
    #[arg(long, default_value_t = 100.0, value_parser = parse_rate)]
    rate_mbps: f64,
    /// Base round-trip time, microseconds (10 to 10000000).
    #[arg(long, default_value_t = 40_000, value_parser = parse_rtt)]
    rtt_us: u32,
    /// Bottleneck buffer, segments (default: one bandwidth-delay product;
    /// BDP + buffer at most 16777216).
    #[arg(long, value_parser = parse_buffer)]
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
    /// Model time per run, seconds (at most 3600).
    #[arg(long, default_value_t = 10.0, value_parser = parse_seconds)]
    seconds: f64,
    /// Seed of the loss process.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Record each run's hook trace here (gzip CSV) and replay it.
    #[arg(long)]
    trace_dir: Option<PathBuf>,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
}

// The limits of a run, each with its reason (docs/MODEL.md). A run's work
// is a few hook calls per segment and per round: what bounds it is the
// segments it sends and the rounds it lasts, besides each option's own
// range.

/// Model time per run: an hour. `model` shows how an algorithm's
/// arithmetic behaves in seconds; longer runs are experiments for `sim`.
const MAX_SECONDS: f64 = 3600.0;
/// The fastest bottleneck, Mbit/s: 100 Gbit/s, the fastest interfaces
/// hosts run TCP over.
const MAX_RATE_MBPS: f64 = 100_000.0;
/// The shortest round trip, µs: the model's clock counts whole
/// microseconds, and a round that drains a fraction of one longer than
/// the RTT is counted short by it, which overstates the rate; below 10 µs
/// by more than a tenth (at 1 µs a 100 Gbit/s path "delivered" 157).
const MIN_RTT_US: u32 = 10;
/// The longest round trip, µs: 10 s, far beyond any path (a geostationary
/// hop is 0.6 s); srtt is kept in µs << 3 in a u32 as the kernel keeps
/// it, which wraps past 536 s.
const MAX_RTT_US: u32 = 10_000_000;
/// Segments in the path, BDP plus buffer: 2^24. A round holds its window,
/// a byte per segment, and the window grows to about twice what the path
/// holds; 2^24 segments of 1448 bytes is 24 GB in flight.
const MAX_PATH_PKTS: u64 = 1 << 24;
/// Segments a run may send: 10^9, about ten seconds of computing.
const MAX_SEGMENTS: f64 = 1e9;
/// Segments a traced run may send: 10^7, a trace of about 600 MB (a row
/// takes about 40 bytes compressed, and a segment about 1.4 rows).
const MAX_TRACED_SEGMENTS: f64 = 1e7;
/// Round trips a run may last: 10^8, about ten seconds of computing.
const MAX_ROUNDS: f64 = 1e8;
/// Runs (specs x HZ) in one table: more is a sweep, for `compare`.
const MAX_RUNS: usize = 1024;

/// A number in (0, `max`], or a sentence naming the limit and its reason.
fn positive_at_most(s: &str, what: &str, max: f64, why: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= max => Ok(v),
        Ok(v) if v > max => Err(format!(
            "`{}` is more than {max} {what} ({why}); give at most {max}",
            show(s)
        )),
        _ => Err(format!(
            "`{}` is not a positive number of {what}; give one up to {max}",
            show(s)
        )),
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let v = positive_at_most(
        s,
        "seconds",
        MAX_SECONDS,
        "a model run shows an algorithm's behaviour in seconds; experiments are for `sim`",
    )?;
    if v < 1e-6 {
        return Err(format!(
            "`{}` seconds is less than a microsecond, the model clock's tick; give at least 0.000001",
            show(s)
        ));
    }
    Ok(v)
}

fn parse_rate(s: &str) -> Result<f64, String> {
    positive_at_most(
        s,
        "Mbit/s",
        MAX_RATE_MBPS,
        "100 Gbit/s, the fastest interfaces hosts run TCP over",
    )
}

fn parse_rtt(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(v) if (MIN_RTT_US..=MAX_RTT_US).contains(&v) => Ok(v),
        _ => Err(format!(
            "`{}` is not a round-trip time the model runs; give whole microseconds from \
             {MIN_RTT_US} (rounds last whole microseconds, which shorter round trips would \
             misstate) to {MAX_RTT_US} (10 s, beyond any path)",
            show(s)
        )),
    }
}

fn parse_buffer(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(v) if u64::from(v) <= MAX_PATH_PKTS => Ok(v),
        _ => Err(format!(
            "`{}` is not a buffer the model runs; give whole segments from 0 to {MAX_PATH_PKTS} \
             (a round holds the window it sends, which grows to about twice the path)",
            show(s)
        )),
    }
}

/// The limits no one option sets: the path's segments, and a run's
/// segments and rounds (see the constants above).
fn check_limits(a: &Args, rate_pps: f64, bdp: u64, runs: usize) -> Result<(), Failure> {
    if rate_pps < 1.0 {
        return Err(Failure(format!(
            "{} Mbit/s is less than one {}-byte segment per second, the slowest the model's \
             bottleneck sends; give at least {} Mbit/s or a smaller --mss",
            a.rate_mbps,
            a.mss,
            a.mss as f64 * 8.0 / 1e6
        )));
    }
    let buffer = a.buffer_pkts.map_or(bdp, u64::from);
    if bdp + buffer > MAX_PATH_PKTS {
        return Err(Failure(format!(
            "the path holds {bdp} segments in flight (BDP) and {buffer} in the buffer, more than \
             the {MAX_PATH_PKTS} a run may (a round holds its window, which grows to about twice \
             that); lower --rate-mbps, --rtt-us or --buffer-pkts, or raise --mss"
        )));
    }
    let (limit, traced) = match a.trace_dir {
        Some(_) => (
            MAX_TRACED_SEGMENTS,
            " traced (about 60 bytes of trace each)",
        ),
        None => (MAX_SEGMENTS, ""),
    };
    let segments = a.seconds * rate_pps;
    if segments > limit {
        return Err(Failure(format!(
            "{} s at {} Mbit/s in {}-byte segments is {segments:.1e} segments, more than the \
             {limit:.0e} a run may send{traced}; shorten --seconds or lower --rate-mbps",
            a.seconds, a.rate_mbps, a.mss
        )));
    }
    let rounds = a.seconds * 1e6 / a.rtt_us as f64;
    if rounds > MAX_ROUNDS {
        return Err(Failure(format!(
            "{} s of {} us round trips is {rounds:.1e} rounds, more than the {MAX_ROUNDS:.0e} a \
             run may last; shorten --seconds or lengthen --rtt-us",
            a.seconds, a.rtt_us
        )));
    }
    if runs > MAX_RUNS {
        return Err(Failure(format!(
            "{} specs at {} HZ values are {runs} runs, more than the {MAX_RUNS} of one table; \
             give fewer, or sweep with `kleinrock compare`",
            a.cc.len(),
            a.hz.len()
        )));
    }
    Ok(())
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

/// Checks, before any run, that each run is asked for once (a spec or HZ
/// given twice would print one run twice) and, traced, writes a trace of
/// its own (two specs named alike would write one file from two threads).
fn check_runs(jobs: &[(Algorithm, u32)], traced: bool) -> Result<(), Failure> {
    let names: Vec<(String, String)> = jobs
        .iter()
        .map(|(cc, hz)| {
            let run = format!("{} at HZ {hz}", cc.spec());
            let file = if traced {
                trace_name(&cc.spec(), *hz)
            } else {
                run.clone()
            };
            (file, run)
        })
        .collect();
    for (i, (name, run)) in names.iter().enumerate() {
        if let Some((_, other)) = names[..i].iter().find(|(n, _)| n == name) {
            let what = if other == run {
                format!("{run} is asked for twice")
            } else {
                format!("{other} and {run} are both traced as {name}")
            };
            return Err(Failure(format!("{what}; give each spec and HZ once")));
        }
    }
    Ok(())
}

/// Checks, before any run, that the traces go into a directory that is
/// new, empty or holds only traces `model` writes.
fn check_trace_dir(dir: &Path) -> Result<(), Failure> {
    let ours = |e: &kleinrock_files::Entry| {
        Ok(e.kind == kleinrock_files::Kind::File && e.name.is_some_and(is_trace_name))
    };
    kleinrock_files::check_dir(dir, &ours).map_err(|e| {
        Failure(format!(
            "cannot write traces to {}: {}; choose a new or empty --trace-dir",
            name(&dir.display().to_string()),
            kleinrock_files::reason(&e)
        ))
    })?;
    kleinrock_files::claim_dir(dir, &ours).map_err(|e| {
        Failure(format!(
            "cannot create trace directory {}: {}; choose a writable --trace-dir",
            name(&dir.display().to_string()),
            kleinrock_files::reason(&e)
        ))
    })
}

/// Runs `d` for `micros` of model time, as `Driver::run_for` does, adding
/// the model time done to `done` every hundredth of the run.
fn drive<T: Tap<Algorithm>>(d: &mut Driver<Algorithm, T>, micros: u64, done: &AtomicU64) -> Totals {
    let end = d.now_us() + micros;
    let step = (micros / 100).max(1);
    let mut told = d.now_us();
    while d.now_us() < end {
        d.run_round();
        let now = d.now_us().min(end);
        if now - told >= step {
            done.fetch_add(now - told, Ordering::Relaxed);
            told = now;
        }
    }
    done.fetch_add(end - told, Ordering::Relaxed);
    // Runs nothing more: the totals.
    d.run_for(0)
}

fn run_one(
    cc: Algorithm,
    path: NetPath,
    hz: u32,
    micros: u64,
    dir: Option<&Path>,
    done: &AtomicU64,
) -> Result<Run, String> {
    let spec = cc.spec();
    match dir {
        None => {
            let mut d = Driver::new(cc, path, hz, NoTap);
            Ok(Run {
                spec,
                hz,
                totals: drive(&mut d, micros, done),
                trace: None,
            })
        }
        Some(dir) => {
            let file = dir.join(trace_name(&spec, hz));
            let cannot = |e: std::io::Error| {
                format!(
                    "cannot write trace {}: {}",
                    name(&file.display().to_string()),
                    kleinrock_files::reason(&e)
                )
            };
            let rec = Recorder::create(&file, &cc).map_err(cannot)?;
            let mut d = Driver::new(cc, path, hz, rec);
            let totals = drive(&mut d, micros, done);
            let rows = d.tap.finish().map_err(cannot)?;
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
    let exact_pps = a.rate_mbps * 1e6 / (a.mss as f64 * 8.0);
    let rate_pps = exact_pps.round().max(1.0) as u64;
    let bdp = rate_pps * a.rtt_us as u64 / 1_000_000;
    check_limits(&a, exact_pps, bdp, a.cc.len() * a.hz.len())?;
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
    check_runs(&jobs, a.trace_dir.is_some())?;
    if let Some(dir) = &a.trace_dir {
        check_trace_dir(dir)?;
    }
    warn_specs(a.cc.iter());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut results: Vec<Option<Result<Run, String>>> = (0..jobs.len()).map(|_| None).collect();
    // Model time done over all runs, shown once the runs take a second.
    let total_us = micros * jobs.len() as u64;
    let running = Phase::counting(
        &match jobs.len() {
            1 => "running 1 model".to_string(),
            n => format!("running {n} models"),
        },
        a.quiet,
        Some(Box::new(move |f| {
            format!("{:.1} s of model time", f * total_us as f64 / 1e6)
        })),
    );
    let done = AtomicU64::new(0);
    for chunk in jobs.iter().enumerate().collect::<Vec<_>>().chunks(threads) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&(i, (cc, hz))| {
                    let dir = a.trace_dir.as_deref();
                    let done = &done;
                    (
                        i,
                        s.spawn(move || run_one(cc.clone(), path, *hz, micros, dir, done)),
                    )
                })
                .collect();
            // The main thread redraws the fraction while the runs go on.
            while handles.iter().any(|(_, h)| !h.is_finished()) {
                running.set(done.load(Ordering::Relaxed) as f64 / total_us.max(1) as f64);
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            for (i, h) in handles {
                results[i] = Some(
                    h.join()
                        .unwrap_or_else(|_| Err("a model run panicked".into())),
                );
            }
        });
    }
    running.set(1.0);
    drop(running);
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
        let mut lines = Vec::new();
        {
            let replaying = Phase::start("replaying the traces", a.quiet);
            for (k, r) in runs.iter().enumerate() {
                replaying.set(k as f64 / runs.len() as f64);
                let (file, rows) = r.trace.as_ref().expect("traced");
                let spec: Algorithm = r.spec.parse().map_err(Failure::from)?;
                let report = kleinrock_trace::replay(file, spec, r.hz, &mut |_| {})?;
                if !report.agrees() {
                    code = ExitCode::from(1);
                }
                lines.push(format!(
                    "  {} ({rows} rows): {} divergent",
                    file.display(),
                    report.divergent
                ));
            }
        }
        println!("\nhook traces, each replayed into the same spec:");
        for l in lines {
            println!("{l}");
        }
        println!("replay one yourself: kleinrock replay FILE --cc SPEC --hz HZ");
    }
    Ok(code)
}
