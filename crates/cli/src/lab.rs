//! `kleinrock lab SCENARIO.toml...`: the simulator's scenario files on real
//! Linux TCP, in the live lab (crates/live, docs/LAB.md), one run at a time;
//! the same summaries on the terminal and, with `--out`, the same results
//! files as `kleinrock sim`. Each scenario is planned before anything runs,
//! so a key the lab cannot honour is refused before the first lab is built.
//! SIGINT and SIGTERM stop the run in progress, which removes its lab and
//! ports; the command then exits with 128 plus the signal's number.

use std::path::PathBuf;
use std::process::ExitCode;

use kleinrock_live::{signals, ErrorKind, Implementation, Plan, Results};

use crate::progress::Phase;
use crate::sim;
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario files (TOML, see docs/SCENARIOS.md; what the lab does with
    /// each key: docs/LAB.md).
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// Write each run's results.json, flows.csv, queues.csv, pings.csv and
    /// summary.csv in a directory of its own under this one, which must be
    /// new, empty or hold only such run directories.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run each scenario once per seed given (comma-separated), instead of
    /// once. The seed drives the link's loss and jitter, as in the
    /// simulator; the kernel's own randomness is not seeded.
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// No progress line, and no list of what runs each algorithm.
    #[arg(long)]
    quiet: bool,
    /// Capture the packets at one end of the bottleneck, from the delay
    /// line, in each run's results directory, as `kleinrock sim --pcap`
    /// does (docs/LAB.md, "Packet captures"). Needs --out.
    #[arg(long, value_name = "END[,KEY=VALUE...]")]
    pcap: Option<String>,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let (jobs, from) = {
        let _reading = Phase::start("reading scenarios", a.quiet);
        let (mut jobs, from) = sim::runs(&a.scenarios, &a.seeds, a.out.as_deref())?;
        sim::captures(&mut jobs, a.pcap.as_deref(), a.out.as_deref())?;
        (jobs, from)
    };
    let mut plans = Vec::new();
    for (job, path) in jobs.iter().zip(&from) {
        let plan = Plan::new(&job.cfg, Implementation::Auto)
            .map_err(|e| Failure(format!("{}: {e}", path.display())))?;
        for w in &plan.warnings {
            eprintln!("warning: {}: {w}", path.display());
        }
        plans.push(plan);
    }
    if let Some(out) = &a.out {
        sim::claim_out(out)?;
        sim::prepare_captures(&jobs, out)?;
    }
    signals::catch();
    for (job, plan) in jobs.iter().zip(&plans) {
        if !a.quiet {
            for (spec, code) in plan.algorithms() {
                eprintln!("{}: {spec} runs as {code}", job.name);
            }
        }
        let r = match run_one(&job.name, plan, a.quiet)? {
            Ok(r) => r,
            Err(code) => return Ok(code),
        };
        println!(
            "== {} (seed {}, {:.1} s on Linux TCP in the lab)",
            job.name, r.seed, r.duration_s
        );
        print!("{}", r.summary());
        if let Some(out) = &a.out {
            println!("results: {}", sim::write(out, &job.name, &r)?.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `plan` (named `name`) in a lab with a progress line; the exit
/// status to end with instead of results when a signal stopped it. The
/// caller has called [`signals::catch`].
pub(crate) fn run_one(
    name: &str,
    plan: &Plan,
    quiet: bool,
) -> Result<Result<Results, ExitCode>, Failure> {
    let total = plan.config.duration as f64 / 1e9;
    let phase = Phase::counting(
        &format!("running {name} in the lab"),
        quiet,
        Some(Box::new(move |f| {
            format!("{:.1} of {total:.1} s", f * total)
        })),
    );
    let result = kleinrock_live::run(plan, &|| signals::caught().is_some(), &mut |f| phase.set(f));
    drop(phase);
    match result {
        Ok(r) => Ok(Ok(r)),
        Err(e) if e.kind() == ErrorKind::Interrupted => Ok(Err(interrupted(&e))),
        // Not the run's fault: the same for every run.
        Err(e) if e.kind() == ErrorKind::Unprivileged => Err(Failure(e.to_string())),
        Err(e) => Err(Failure(format!("{name}: {e}"))),
    }
}

/// Says why the command stopped, and its exit status: 128 plus the
/// signal's number, as a shell reports a process the signal ended.
fn interrupted(e: &kleinrock_live::Error) -> ExitCode {
    let signal = signals::caught().unwrap_or(libc::SIGINT);
    eprintln!("stopped by {}: {e}", signals::name(signal));
    ExitCode::from((128 + signal).clamp(0, 255) as u8)
}
