//! `kleinrock compare SCENARIO --cc cubic,bbr,...`: run a scenario once per
//! algorithm (every flow using it), per seed and per point of the swept
//! parameters, on every core; print a summary table and write a report
//! directory with `report.html`. `--engine lab` runs them on real Linux
//! TCP in the live lab instead (one at a time), `--engine both` in both
//! engines, and the report then sets the simulator against the kernel.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kleinrock_live::{signals, Implementation};
use kleinrock_report::layout;
use kleinrock_report::plan::{Engine, Scenario, Sweep};
use kleinrock_report::request::{self, Options, Request};
use kleinrock_report::{Comparison, Engines};

use crate::parquet::{self, Format};
use crate::progress::Phase;
use crate::runner::run_all;
use crate::Failure;
use kleinrock_report::outputs;

#[derive(clap::Args)]
pub struct Args {
    /// The scenario file (TOML, see docs/SCENARIOS.md); its `[compare]`
    /// table gives defaults for the options below.
    scenario: PathBuf,
    /// Algorithm specs to compare, comma-separated (`kleinrock algorithms`);
    /// in the lab, `kernel:NAME` or `port:SPEC` chooses which code runs one
    /// (docs/LAB.md).
    #[arg(long, value_delimiter = ',')]
    cc: Vec<String>,
    /// Run each point with each of these seeds (comma-separated).
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// Vary a scenario key: KEY=V1,V2,... (loss, rate, queue, rtt, hz, or a
    /// dotted key such as link.up.loss). Repeat for a grid.
    #[arg(long)]
    sweep: Vec<String>,
    /// The report directory (default: out/compare/SCENARIO).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Runs in parallel (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// The flent test named in the .flent.gz files (default: from the
    /// flows, tcp_nup or tcp_ndown).
    #[arg(long)]
    flent_test: Option<String>,
    /// Which engine runs the comparison: the simulator, real Linux TCP in
    /// the live lab (needs root), or both, side by side in the report
    /// (default: `engine` in [compare], else sim).
    #[arg(long, value_parser = Engine::NAMES)]
    engine: Option<String>,
    /// Also write the tables as Parquet: summary.parquet, and each run's
    /// in runs/RUN/ (a binary built with `--features parquet`;
    /// docs/PYTHON.md).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    parquet::check(a.format)?;
    let planning = Phase::start("reading and planning", a.quiet);
    let scn = Scenario::load(&a.scenario)?;
    let name = a
        .scenario
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    let sweeps = if a.sweep.is_empty() {
        None
    } else {
        Some(
            a.sweep
                .iter()
                .map(|s| Sweep::parse(s))
                .collect::<Result<Vec<_>, _>>()?,
        )
    };
    // Every run, checked before anything runs.
    let req = Request::new(
        scn,
        name.clone(),
        &Options {
            cc: a.cc.clone(),
            seeds: a.seeds.clone(),
            sweeps,
            flent_test: a.flent_test.clone(),
            engine: a.engine.clone(),
            any_number_of_sweeps: false,
        },
    )
    .map_err(Failure)?;
    let engine = req.engine;
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| Path::new("out").join("compare").join(&name));
    let warnings = req.plan.warnings.clone();
    let jobs = req.jobs();
    let labels: Vec<&str> = req.plan.runs.iter().map(|r| r.spec.as_str()).collect();
    outputs::check_traces(&jobs, request::TRACE_ADVICE)?;
    // The lab's runs planned before anything runs: a key it cannot honour
    // is refused now.
    let mut lab_plans = Vec::new();
    if engine.lab() {
        for (job, spec) in jobs.iter().zip(&labels) {
            let how = Implementation::split(spec).0;
            let plan = kleinrock_live::Plan::new(&job.cfg, how)
                .map_err(|e| Failure(format!("{} with {spec}: {e}", a.scenario.display())))?;
            for w in &plan.warnings {
                eprintln!("warning: {}: {w}", a.scenario.display());
            }
            lab_plans.push(plan);
        }
    }
    layout::claim_report_dir(&out).map_err(|e| {
        Failure(format!(
            "cannot write the report to {}: {}; choose a new or empty directory with --out",
            out.display(),
            kleinrock_files::reason(&e)
        ))
    })?;
    drop(planning);
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if !a.quiet {
        let what = match engine {
            Engine::Sim => "simulations",
            Engine::Lab => "lab runs",
            Engine::Both => "runs in the simulator and in the lab",
        };
        eprintln!(
            "running {} {what} ({} algorithms x {} seeds{})",
            jobs.len(),
            req.canonical.len(),
            req.seeds.len(),
            req.sweeps
                .iter()
                .map(|s| format!(" x {} values of {}", s.values.len(), s.key))
                .collect::<String>()
        );
    }
    let sim_results = if engine == Engine::Lab {
        Vec::new()
    } else {
        run_all(&jobs, a.jobs, a.quiet)?
    };
    let mut lab_results = Vec::new();
    if engine.lab() {
        signals::catch();
        for (job, plan) in jobs.iter().zip(&lab_plans) {
            match crate::lab::run_one(&job.name, plan, a.quiet)? {
                Ok(r) => lab_results.push(r),
                Err(code) => return Ok(code),
            }
        }
    }
    let (runs, lab_runs) = match engine {
        Engine::Lab => (req.runs_of(lab_results), Vec::new()),
        _ => (req.runs_of(sim_results), req.runs_of(lab_results)),
    };
    let cmp = req.comparison(runs);
    let lab_cmp = Comparison {
        scenario_text: String::new(),
        ..req.comparison(lab_runs)
    };
    let engines = match engine {
        Engine::Sim => Engines::Sim,
        Engine::Lab => Engines::Lab,
        Engine::Both => Engines::Both(&lab_cmp),
    };
    match engines {
        Engines::Both(lab) => print!("{}", kleinrock_report::engines::table(&cmp, lab)),
        _ => print!("{}", cmp.table()),
    }
    let writing = Phase::start("writing the report", a.quiet);
    let report = kleinrock_report::write_report_of(&cmp, engines, &out, &mut |f| writing.set(f));
    drop(writing);
    let report = report.map_err(|e| {
        Failure(format!(
            "cannot write the report to {}: {}; choose another directory with --out",
            out.display(),
            kleinrock_files::reason(&e)
        ))
    })?;
    if a.format == Format::Parquet {
        parquet::write_comparison(&out, &cmp)?;
    }
    println!("\nreport: {}", report.display());
    println!(
        "open it in a browser (it needs no network), e.g. xdg-open {}",
        report.display()
    );
    Ok(ExitCode::SUCCESS)
}
