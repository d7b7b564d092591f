//! How much of Kleinrock's result on a workload is the luck of its draws:
//! bpftune's and Kleinrock's policies on WORKLOAD with the workload's seed
//! replaced by SEED, then Kleinrock's again with four other seeds for its
//! own draws alone (the outcomes and arrivals stay), each scored against
//! the targets (docs/SELECTOR.md):
//!
//! cargo run --release -p kleinrock-fleet --example select_draws -- \
//!     scenarios/select-mixed.toml@1 scenarios/select-mixed-sizes.toml@2

use std::process::ExitCode;

use kleinrock_fleet::{run_policy, Outcomes, Policy, Workload};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: select_draws WORKLOAD.toml@SEED ...");
        return ExitCode::FAILURE;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("workload seed draws  targets  cost  goodput  convergence  recovery  changes");
    for arg in &args {
        let Some((name, Ok(seed))) = arg.split_once('@').map(|(n, s)| (n, s.parse::<u64>())) else {
            eprintln!(
                "`{arg}` is not WORKLOAD.toml@SEED; write e.g. scenarios/select-mixed.toml@2"
            );
            return ExitCode::FAILURE;
        };
        let mut w = match Workload::load(std::path::Path::new(name)) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        w.seed = seed;
        let o = Outcomes::simulate(&w, &w.algorithms(), threads, &|_| {});
        let b = run_policy(&w, &o, &mut Policy::bpftune(w.seed), &mut |_| {});
        for draws in [seed, 11, 12, 13, 14] {
            let k = run_policy(
                &w,
                &o,
                &mut Policy::kleinrock(&w.candidates, draws),
                &mut |_| {},
            );
            let (_, converged) = k.convergence(false);
            let (_, recovered) = k.convergence(true);
            let share = k.phases.iter().map(|p| p.share_best).fold(1.0, f64::min);
            let (cost, goodput) = (
                k.regret_cost / b.regret_cost,
                k.regret_bytes / b.regret_bytes,
            );
            let held =
                cost <= 0.5 && goodput <= 0.5 && converged <= 10 && share >= 0.8 && recovered <= 20;
            println!(
                "{:<24} {seed:>4} {draws:>5}  {:<7}  {:>3.0}%  {:>6.0}%  {converged:>11}  {recovered:>8}  {:>7}",
                name.rsplit('/').next().unwrap_or(name),
                if held { "hold" } else { "do not" },
                100.0 * cost,
                100.0 * goodput,
                k.changes_detected
            );
        }
    }
    ExitCode::SUCCESS
}
