//! `kleinrock sim SCENARIO.toml...`: run scenarios (and seeds) on N cores,
//! print each run's summary, write results with `--out`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use kleinrock_sim::scenario;
use kleinrock_sim::{Config, Results, Sim};

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

struct Job {
    name: String,
    cfg: Config,
}

fn jobs(a: &Args) -> Result<Vec<Job>, Failure> {
    let mut out = Vec::new();
    for path in &a.scenarios {
        let cfg = scenario::load(path)?;
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
    let total_sim_ns: u64 = jobs.iter().map(|j| j.cfg.duration).sum();
    let done_ns = AtomicU64::new(0);
    let start = Instant::now();
    let shown = Mutex::new(false);
    let threads = if jobs.len() == 1 {
        1
    } else {
        a.jobs
            .map(|j| j as usize)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .min(jobs.len())
    };
    let next = AtomicU64::new(0);
    let results: Mutex<Vec<Option<Result<Results, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let progress = |delta: u64| {
        let d = done_ns.fetch_add(delta, Ordering::Relaxed) + delta;
        if a.quiet || start.elapsed().as_secs_f64() < 1.0 {
            return;
        }
        let frac = d as f64 / total_sim_ns.max(1) as f64;
        let width = 30;
        let filled = ((frac * width as f64) as usize).min(width);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {:>3.0}%  {:.1} s simulated, {:.1} s elapsed",
            "=".repeat(filled),
            " ".repeat(width - filled),
            frac * 100.0,
            d as f64 / 1e9,
            start.elapsed().as_secs_f64()
        );
        let _ = err.flush();
        *shown.lock().unwrap() = true;
    };
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
        if i >= jobs.len() {
            break;
        }
        let cfg = jobs[i].cfg.clone();
        let dur = cfg.duration;
        let mut last = 0.0;
        let r = Sim::new(cfg)
            .and_then(|sim| {
                sim.run(&mut |frac| {
                    progress(((frac - last) * dur as f64) as u64);
                    last = frac;
                })
            })
            .map_err(|e| format!("{}: cannot write a hook trace: {e}", jobs[i].name));
        progress(((1.0 - last) * dur as f64) as u64);
        results.lock().unwrap()[i] = Some(r);
    };
    if threads == 1 {
        // One run: no thread to start.
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(worker);
            }
        });
    }
    if *shown.lock().unwrap() {
        eprintln!();
    }
    let results = results.into_inner().unwrap();
    for (job, r) in jobs.iter().zip(results) {
        let r = r.expect("every job ran").map_err(Failure)?;
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
