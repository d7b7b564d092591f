//! How much of Kleinrock's result on a workload is the luck of its draws:
//! bpftune's and Kleinrock's policies on WORKLOAD with the workload's seed
//! replaced by SEED, then Kleinrock's again with four other seeds for its
//! own draws alone (the outcomes and arrivals stay), each scored against
//! the targets (docs/SELECTOR.md), with convergence judged
//! strictly and with near ties counting as best (`kleinrock_fleet::score`),
//! and again without the goodput target (`w/o goodput`: the cost regret,
//! convergence and recovery). Convergence and recovery are the worst over
//! the destinations, strict / with ties (`never`: not within the phase,
//! `-`: no path changes), and below a row the paths where a destination
//! missed even with ties, with the worst one's convergence.
//! Regret is Kleinrock's as a share of bpftune's: in cost, in goodput
//! against the oracle (GB, Kleinrock's then bpftune's, where bpftune's is
//! not positive: it got more bytes than the oracle, which gives bytes up
//! for RTT), in goodput against the algorithm that delivers most, and in
//! RTT against the oracle:
//!
//! cargo run --release -p kleinrock-fleet --example select_draws -- \
//!     scenarios/select-mixed.toml@1 scenarios/select-mixed-sizes.toml@2

use std::process::ExitCode;

use kleinrock_fleet::replay::Phase;
use kleinrock_fleet::{run_policy, Outcomes, Policy, Workload};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: select_draws WORKLOAD.toml@SEED ...");
        return ExitCode::FAILURE;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{:<24} {:>4} {:>5}  {:<14}  {:<14}  {:>5}  {:>13}  {:>5}  {:>5}  {:>13}  {:>13}  changes",
        "workload",
        "seed",
        "draws",
        "targets",
        "w/o goodput",
        "cost",
        "goodput",
        "most",
        "RTT",
        "convergence",
        "recovery"
    );
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
            // Worst convergence before and after a change, strict and with
            // ties, `None` where a destination never converged; and whether
            // every destination converged in time with 80% best after it.
            // `-` where there is no such phase (a workload whose paths do
            // not change).
            let worst = |changed: bool, of: fn(&Phase) -> (Option<u32>, f64)| {
                let limit = if changed { 20 } else { 10 };
                let mut worst = Some(0);
                let mut held = true;
                let mut phases = 0;
                for p in k.phases.iter().filter(|p| p.changed == changed) {
                    let (c, share) = of(p);
                    worst = worst.zip(c).map(|(w, c)| w.max(c));
                    held &= c.is_some_and(|c| c <= limit) && share >= 0.8;
                    phases += 1;
                }
                let shown = match worst {
                    _ if phases == 0 => "-".to_string(),
                    Some(w) => w.to_string(),
                    None => "never".to_string(),
                };
                (shown, held)
            };
            let strict = |p: &Phase| (p.convergence, p.share_best);
            let ties = |p: &Phase| (p.tie_convergence, p.tie_share_best);
            let (converged, c1) = worst(false, strict);
            let (recovered, r1) = worst(true, strict);
            let (tie_converged, c2) = worst(false, ties);
            let (tie_recovered, r2) = worst(true, ties);
            let cost = k.regret_cost <= 0.5 * b.regret_cost;
            let regret = cost && k.regret_bytes <= 0.5 * b.regret_bytes;
            let verdict = |strict: bool, ties: bool| match (strict, ties) {
                (true, _) => "hold",
                (false, true) => "hold with ties",
                (false, false) => "do not",
            };
            let share_of = |k: f64, b: f64| {
                if b > 0.0 {
                    format!("{:.0}%", 100.0 * k / b)
                } else {
                    format!("{:.2}/{:.2}", k / 1e9, b / 1e9)
                }
            };
            println!(
                "{:<24} {seed:>4} {draws:>5}  {:<14}  {:<14}  {:>5}  {:>13}  {:>5}  {:>5}  {:>13}  {:>13}  {:>7}",
                name.rsplit('/').next().unwrap_or(name),
                verdict(regret && c1 && r1, regret && c2 && r2),
                verdict(cost && c1 && r1, cost && c2 && r2),
                share_of(k.regret_cost, b.regret_cost),
                share_of(k.regret_bytes, b.regret_bytes),
                share_of(k.regret_bytes_most, b.regret_bytes_most),
                share_of(k.regret_rtt_ms, b.regret_rtt_ms),
                format!("{converged} / {tie_converged}"),
                format!("{recovered} / {tie_recovered}"),
                k.changes_detected
            );
            // Where convergence or recovery missed even with ties: each
            // path and phase once, with its worst destination.
            let mut missed: Vec<(String, Option<u32>)> = Vec::new();
            for p in &k.phases {
                let limit = if p.changed { 20 } else { 10 };
                let (c, share) = ties(p);
                if c.is_some_and(|c| c <= limit) && share >= 0.8 {
                    continue;
                }
                let name = format!("{}{}", p.path, if p.changed { ", after" } else { "" });
                match missed.iter_mut().find(|m| m.0 == name) {
                    Some(m) => m.1 = m.1.zip(c).map(|(a, b)| a.max(b)),
                    None => missed.push((name, c)),
                }
            }
            if !missed.is_empty() {
                let list: Vec<String> = missed
                    .iter()
                    .map(|(n, c)| format!("{n} ({})", c.map_or("never".into(), |c| c.to_string())))
                    .collect();
                println!("    missed with ties: {}", list.join("; "));
            }
        }
    }
    ExitCode::SUCCESS
}
