//! Runs simulations on N cores with one progress line: the shared engine
//! of `kleinrock sim` and `kleinrock compare`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use kleinrock_sim::{Config, Results, Sim};

use crate::progress::Phase;
use crate::Failure;

/// One simulation to run, named for messages.
pub struct Job {
    pub name: String,
    pub cfg: Config,
}

/// Runs every job, `threads` at a time (default: one per core), and returns
/// their results in order, after warning of what their algorithms' specs
/// will not do as written. The progress line (simulated seconds done of the
/// total) appears once the runs have taken a second, unless `quiet`.
pub fn run_all(jobs: &[Job], threads: Option<u32>, quiet: bool) -> Result<Vec<Results>, Failure> {
    crate::replay::warn_specs(jobs.iter().flat_map(|j| j.cfg.flows.iter().map(|f| &f.cc)));
    let total_sim_ns: u64 = jobs.iter().map(|j| j.cfg.duration).sum();
    let total_s = total_sim_ns as f64 / 1e9;
    let phase = Phase::counting(
        "simulating",
        quiet,
        Some(Box::new(move |f| format!("{:.1} s simulated", f * total_s))),
    );
    let done_ns = AtomicU64::new(0);
    let threads = if jobs.len() <= 1 {
        1
    } else {
        threads
            .map(|j| j as usize)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .min(jobs.len())
    };
    let next = AtomicU64::new(0);
    let results: Mutex<Vec<Option<Result<Results, String>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let progress = |delta: u64| {
        let d = done_ns.fetch_add(delta, Ordering::Relaxed) + delta;
        phase.set(d as f64 / total_sim_ns.max(1) as f64);
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
            .map_err(|e| {
                let traces: Vec<String> = jobs[i]
                    .cfg
                    .flows
                    .iter()
                    .filter_map(|f| f.trace.as_ref().map(|t| t.display().to_string()))
                    .collect();
                format!(
                    "{}: cannot write the hook trace {}: {}",
                    jobs[i].name,
                    if traces.len() == 1 {
                        traces[0].clone()
                    } else {
                        format!("(one of {})", traces.join(", "))
                    },
                    kleinrock_files::reason(&e)
                )
            });
        progress(((1.0 - last) * dur as f64) as u64);
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
    drop(phase);
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every job ran").map_err(Failure))
        .collect()
}
