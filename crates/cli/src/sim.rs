//! `kleinrock sim SCENARIO.toml...`: run scenarios (and seeds) on N cores,
//! print each run's summary, write results with `--out`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kleinrock_report::plan;
use kleinrock_sim::Results;

use crate::runner::{run_all, Job};
use crate::Failure;

#[derive(clap::Args)]
pub struct Args {
    /// Scenario files (TOML, see docs/SCENARIOS.md).
    #[arg(required = true)]
    scenarios: Vec<PathBuf>,
    /// Write each run's results.json, flows.csv, queues.csv and
    /// summary.csv under this directory.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run each scenario with each of these seeds (comma-separated),
    /// instead of the seed in the file.
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// Runs in parallel (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    jobs: Option<u32>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn jobs(a: &Args) -> Result<Vec<Job>, Failure> {
    let mut out = Vec::new();
    for path in &a.scenarios {
        // The whole file is checked, its `[compare]` table too (only
        // `kleinrock compare` reads it): a mistake there is one still.
        let cfg = plan::load_config(path)?;
        let stem = path
            .file_stem()
            .map_or("scenario".into(), |s| s.to_string_lossy().into_owned());
        if a.seeds.is_empty() {
            out.push(Job { name: stem, cfg });
        } else {
            for &seed in &a.seeds {
                let mut c = cfg.clone();
                c.seed = seed;
                out.push(Job {
                    name: format!("{stem}-seed{seed}"),
                    cfg: c,
                });
            }
        }
    }
    Ok(out)
}

fn write(out: &Path, name: &str, r: &Results) -> Result<PathBuf, Failure> {
    let dir = out.join(name);
    r.write(&dir).map_err(|e| {
        Failure(format!(
            "cannot write results to {}: {e}; choose a writable --out directory",
            dir.display()
        ))
    })?;
    Ok(dir)
}

pub fn run(a: Args) -> Result<ExitCode, Failure> {
    let jobs = jobs(&a)?;
    let results = run_all(&jobs, a.jobs, a.quiet)?;
    for (job, r) in jobs.iter().zip(results) {
        println!(
            "== {} (seed {}, {:.1} s simulated)",
            job.name, r.seed, r.duration_s
        );
        print!("{}", r.summary());
        if let Some(out) = &a.out {
            let dir = write(out, &job.name, &r)?;
            println!("results: {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
