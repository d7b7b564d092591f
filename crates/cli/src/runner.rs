//! Runs simulations on N cores with one progress line: the shared engine
//! of `kleinrock sim` and `kleinrock compare` (kleinrock_report::runner),
//! with the terminal's progress and warnings.

use kleinrock_report::runner::{self, Job};
use kleinrock_sim::Results;

use crate::progress::Phase;
use crate::Failure;

/// Runs every job, `threads` at a time (default: one per core), and returns
/// their results in order, after warning of what their algorithms' specs
/// will not do as written. The progress line (simulated seconds done of the
/// total) appears once the runs have taken a second, unless `quiet`.
pub fn run_all(jobs: &[Job], threads: Option<u32>, quiet: bool) -> Result<Vec<Results>, Failure> {
    crate::replay::warn_specs(jobs.iter().flat_map(|j| j.cfg.flows.iter().map(|f| &f.cc)));
    let total_s = jobs.iter().map(|j| j.cfg.duration).sum::<u64>() as f64 / 1e9;
    let phase = Phase::counting(
        "simulating",
        quiet,
        Some(Box::new(move |f| format!("{:.1} s simulated", f * total_s))),
    );
    let results = runner::run_all(jobs, threads.map(|t| t as usize), &|f| phase.set(f));
    drop(phase);
    results.into_iter().map(|r| r.map_err(Failure)).collect()
}
