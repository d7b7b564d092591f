//! Runs simulations on N threads, in order of the jobs, telling a
//! progress callback the fraction of simulated time done: the one engine
//! behind `kleinrock sim`, `kleinrock compare` and the Python package's
//! `compare` and local sweeps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kleinrock_sim::{Config, Results, Sim};

/// One simulation to run, named for messages.
pub struct Job {
    pub name: String,
    pub cfg: Config,
}

/// Runs every job, `threads` at a time (default: one per core), and
/// returns their results in order: each a run's results or the sentence
/// saying why it could not run (its hook trace could not be written).
/// `progress` is told the fraction of all the jobs' simulated time done,
/// from whichever thread ran it.
pub fn run_all(
    jobs: &[Job],
    threads: Option<usize>,
    progress: &(dyn Fn(f64) + Sync),
) -> Vec<Result<Results, String>> {
    let total_sim_ns: u64 = jobs.iter().map(|j| j.cfg.duration).sum();
    let done_ns = AtomicU64::new(0);
    let threads = if jobs.len() <= 1 {
        1
    } else {
        threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .clamp(1, jobs.len())
    };
    let next = AtomicU64::new(0);
    let results: Mutex<Vec<Option<Result<Results, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let advance = |delta: u64| {
        let d = done_ns.fetch_add(delta, Ordering::Relaxed) + delta;
        progress(d as f64 / total_sim_ns.max(1) as f64);
    };
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
        if i >= jobs.len() {
            break;
        }
        let r = run_one(&jobs[i], &mut |delta| advance(delta));
        results.lock().unwrap()[i] = Some(r);
    };
    if threads == 1 {
        worker();
    } else {
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(worker);
            }
        });
    }
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// Runs one job on this thread; `advance` is told the simulated
/// nanoseconds done since it was last told, ending at the run's duration.
pub fn run_one(job: &Job, advance: &mut dyn FnMut(u64)) -> Result<Results, String> {
    let cfg = job.cfg.clone();
    let dur = cfg.duration;
    let mut last = 0.0;
    let r = Sim::new(cfg)
        .and_then(|sim| {
            sim.run(&mut |frac| {
                advance(((frac - last) * dur as f64) as u64);
                last = frac;
            })
        })
        .map_err(|e| {
            let traces: Vec<String> = job
                .cfg
                .flows
                .iter()
                .filter_map(|f| f.trace.as_ref().map(|t| t.display().to_string()))
                .collect();
            format!(
                "{}: cannot write the hook trace {}: {}",
                job.name,
                if traces.len() == 1 {
                    traces[0].clone()
                } else {
                    format!("(one of {})", traces.join(", "))
                },
                kleinrock_files::reason(&e)
            )
        });
    advance(((1.0 - last) * dur as f64) as u64);
    r
}
