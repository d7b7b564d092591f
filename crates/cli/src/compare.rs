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
use kleinrock_report::plan::{value_label, Engine, Scenario, Sweep};
use kleinrock_report::run::Offered;
use kleinrock_report::{Comparison, Engines, Run};
use kleinrock_sim::Results;

use crate::outputs;
use crate::progress::Phase;
use crate::runner::{run_all, Job};
use crate::Failure;

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
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let planning = Phase::start("reading and planning", a.quiet);
    let scn = Scenario::load(&a.scenario)?;
    let defaults = &scn.compare;
    let specs: Vec<String> = if a.cc.is_empty() {
        defaults.cc.clone()
    } else {
        a.cc.clone()
    };
    if specs.is_empty() {
        return Err(Failure(format!(
            "nothing to compare: give algorithms with --cc (e.g. --cc cubic,bbr,cdg,reno) or a `cc` list in the [compare] table of {}",
            a.scenario.display()
        )));
    }
    let mut canonical = Vec::new();
    for s in &specs {
        let (_, _, label) = kleinrock_cc::implementation::canonical(s)
            .map_err(|e| Failure(format!("--cc {s}: {e}")))?;
        canonical.push(label);
    }
    let engine = match &a.engine {
        Some(e) => Engine::parse(e).unwrap_or_default(),
        None => defaults.engine.unwrap_or_default(),
    };
    engine.check_specs(&specs).map_err(Failure)?;
    let seeds = if !a.seeds.is_empty() {
        a.seeds.clone()
    } else if !defaults.seeds.is_empty() {
        defaults.seeds.clone()
    } else {
        vec![scn.config.seed]
    };
    let sweeps: Vec<Sweep> = if a.sweep.is_empty() {
        defaults.sweeps.clone()
    } else {
        a.sweep
            .iter()
            .map(|s| Sweep::parse(s))
            .collect::<Result<_, _>>()?
    };
    if sweeps.len() > 2 {
        return Err(Failure(format!(
            "{} sweeps make a grid too large to plot; sweep at most two keys at a time",
            sweeps.len()
        )));
    }
    let name = a
        .scenario
        .file_stem()
        .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| Path::new("out").join("compare").join(&name));

    // Every run, checked before anything runs, and what they write.
    let plan = scn.plan(&specs, &sweeps, &seeds)?;
    let warnings = plan.warnings.clone();
    let mut jobs = Vec::new();
    let mut labels = Vec::new();
    for run in plan.runs {
        let point: String = run.point.iter().map(|(k, v)| format!(" {k}={v}")).collect();
        labels.push((
            run.spec.clone(),
            run.point,
            run.seed,
            Offered::of(&run.config),
        ));
        jobs.push(Job {
            name: format!("{name} {}{point} seed {}", run.spec, run.seed),
            cfg: run.config,
        });
    }
    outputs::check_traces(
        &jobs,
        "compare runs the scenario once per algorithm, seed and swept value: trace one run with `kleinrock sim`, or remove `trace` from the scenario",
    )?;
    if jobs.iter().any(|j| j.cfg.capture.is_some()) {
        return Err(Failure(format!(
            "{}: compare writes no packet captures (it runs the scenario once per algorithm, seed and swept value); capture one run with `kleinrock sim {} --out DIR`, or remove [capture] from the scenario",
            a.scenario.display(),
            a.scenario.display()
        )));
    }
    // The lab's runs planned before anything runs: a key it cannot honour
    // is refused now.
    let mut lab_plans = Vec::new();
    if engine.lab() {
        for (job, (spec, ..)) in jobs.iter().zip(&labels) {
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
            canonical.len(),
            seeds.len(),
            sweeps
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
    let runs_of = |results: Vec<Results>| -> Vec<Run> {
        labels
            .iter()
            .cloned()
            .zip(results)
            .map(|((spec, point, seed, offered), results)| Run {
                spec,
                point,
                seed,
                results,
                offered,
            })
            .collect()
    };
    let (runs, lab_runs) = match engine {
        Engine::Lab => (runs_of(lab_results), Vec::new()),
        _ => (runs_of(sim_results), runs_of(lab_results)),
    };
    let cmp = Comparison {
        name,
        scenario_path: a.scenario.display().to_string(),
        scenario_text: scn.text().to_string(),
        specs: canonical,
        sweeps: sweeps
            .iter()
            .map(|s| (s.key.clone(), s.values.iter().map(value_label).collect()))
            .collect(),
        seeds,
        runs,
        flent_test: a
            .flent_test
            .clone()
            .or_else(|| defaults.flent_test.clone())
            .unwrap_or_default(),
    };
    let lab_cmp = Comparison {
        name: cmp.name.clone(),
        scenario_path: cmp.scenario_path.clone(),
        scenario_text: String::new(),
        specs: cmp.specs.clone(),
        sweeps: cmp.sweeps.clone(),
        seeds: cmp.seeds.clone(),
        runs: lab_runs,
        flent_test: cmp.flent_test.clone(),
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
    println!("\nreport: {}", report.display());
    println!(
        "open it in a browser (it needs no network), e.g. xdg-open {}",
        report.display()
    );
    Ok(ExitCode::SUCCESS)
}
