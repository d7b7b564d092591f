//! What a choice is worth: the oracle's expectations of every algorithm on
//! every network, which algorithms count as best, and when a destination's
//! choices have converged.
//!
//! An algorithm's cost on a network is the policies' own objective, from
//! the mean outcomes over the simulated seeds: its RTT above the best
//! algorithm's plus its goodput short of the best's, as fractions. The
//! oracle of a path is the cheapest algorithm the host can set there over
//! the path's size mix. Two sets of algorithms count as best:
//!
//! - **strict**: within [`BEST_MARGIN`] (0.05) of the oracle's cost, the
//!   margin within which the policy itself counts costs as equal;
//! - **tie-aware**: also those whose cost the oracle cannot tell from its
//!   own, given how much each algorithm's outcome varies from one
//!   connection to the next. The oracle's costs are means of
//!   `outcome_seeds` simulated connections, as a host's would be means of
//!   the connections it made; where the gap between two of them is within
//!   [`TIE_Z`] standard errors of their difference, which of them is "the
//!   best" is not established by the evidence there is, and a policy that
//!   settles on either has not failed. With the fleets' four outcomes,
//!   two standard errors of the difference of two means of four are one
//!   standard deviation of the difference between one connection of each:
//!   a host comparing a connection of each would order them wrongly at
//!   least one time in six.
//!
//! A destination has converged from the first connection after which at
//! least [`CONVERGED_SHARE`] of its choices are best, by either set.

use std::collections::HashMap;

use crate::outcomes::Outcomes;
use crate::workload::Workload;

/// What the oracle knows about one network: each algorithm's expected
/// goodput, RTT and cost, and the best.
#[derive(Clone, Debug)]
pub struct Expectation {
    pub goodput_bps: Vec<f64>,
    pub rtt_ms: Vec<f64>,
    /// How long its connections last, s (shorter than the workload's
    /// duration for transfers that complete).
    pub lifetime_s: Vec<f64>,
    pub cost: Vec<f64>,
    /// How much its cost varies from one connection to the next here: the
    /// standard deviation over the simulated outcomes (0 with one).
    pub cost_sd: Vec<f64>,
    /// The best fixed algorithm on the path (over its size mix), and those
    /// within [`BEST_MARGIN`] of it there.
    pub oracle: usize,
    pub best: Vec<bool>,
    /// The best, and those the oracle cannot tell from it within the noise
    /// of its outcomes ([`tied`]).
    pub tied: Vec<bool>,
}

/// Within this much cost of the oracle, an algorithm counts as best.
pub const BEST_MARGIN: f64 = 0.05;
/// The share of best choices that marks convergence.
pub const CONVERGED_SHARE: f64 = 0.8;
/// Standard errors of the difference of two algorithms' mean costs within
/// which the oracle cannot tell them apart.
pub const TIE_Z: f64 = 2.0;

/// The algorithms that count as best when the tie-aware reading is taken:
/// settable ones within [`BEST_MARGIN`] of the oracle's `cost`, or within
/// [`TIE_Z`] standard errors of the difference, where `mean_var[a]` is the
/// variance of algorithm `a`'s mean cost (its connections' variance over
/// the number of outcomes behind the mean).
pub fn tied(cost: &[f64], mean_var: &[f64], settable: &[bool], oracle: usize) -> Vec<bool> {
    (0..cost.len())
        .map(|a| {
            let band = TIE_Z * (mean_var[a] + mean_var[oracle]).sqrt();
            settable[a] && cost[a] <= cost[oracle] + BEST_MARGIN.max(band)
        })
        .collect()
}

/// The connection from which at least [`CONVERGED_SHARE`] of `good`
/// choices are good, and that share (`None` and 0 if there is none).
pub fn convergence(good: &[bool]) -> (Option<u32>, f64) {
    // Good choices from each connection on, counted from the end.
    let mut good_from = vec![0usize; good.len() + 1];
    for c in (0..good.len()).rev() {
        good_from[c] = good_from[c + 1] + good[c] as usize;
    }
    let at =
        (0..good.len()).find(|&c| good_from[c] as f64 >= CONVERGED_SHARE * (good.len() - c) as f64);
    let share = at.map_or(0.0, |c| good_from[c] as f64 / (good.len() - c) as f64);
    (at.map(|c| c as u32), share)
}

/// The expectations of every network, the oracle knowing which algorithms
/// each path cannot set.
pub fn expectations(w: &Workload, o: &Outcomes) -> Vec<Expectation> {
    expectations_and_work(w, o).0
}

/// [`expectations`], and the networks it looked at to find each path's
/// oracle (for [`crate::Report::work`]).
pub(crate) fn expectations_and_work(w: &Workload, o: &Outcomes) -> (Vec<Expectation>, u64) {
    let seeds = o.seeds().max(1);
    let mut exp: Vec<Expectation> = o
        .networks
        .iter()
        .enumerate()
        .map(|(n, _)| {
            let k = o.algorithms.len();
            let mean = |f: &dyn Fn(usize, u32) -> f64, a: usize| {
                (0..seeds).map(|s| f(a, s)).sum::<f64>() / seeds as f64
            };
            let goodput: Vec<f64> = (0..k)
                .map(|a| mean(&|a, s| o.get(n, a, s).goodput_bps, a))
                .collect();
            let rtt: Vec<f64> = (0..k)
                .map(|a| mean(&|a, s| o.get(n, a, s).rtt_ms, a))
                .collect();
            let lifetime: Vec<f64> = (0..k)
                .map(|a| mean(&|a, s| o.get(n, a, s).lifetime_s, a))
                .collect();
            let g_best = goodput.iter().copied().fold(0.0, f64::max);
            let r_best = rtt
                .iter()
                .copied()
                .filter(|r| *r > 0.0)
                .fold(f64::MAX, f64::min);
            let cost_of = |rtt: f64, goodput: f64| {
                let mut c = 0.0;
                if r_best > 0.0 && r_best < f64::MAX {
                    c += (rtt - r_best) / r_best;
                }
                if g_best > 0.0 {
                    c += (g_best - goodput) / g_best;
                }
                c
            };
            let cost: Vec<f64> = (0..k).map(|a| cost_of(rtt[a], goodput[a])).collect();
            // Each outcome's cost against the same bests: their mean is
            // the cost (it is linear in RTT and goodput), their spread
            // the connection-to-connection noise around it.
            let cost_sd: Vec<f64> = (0..k)
                .map(|a| {
                    if seeds < 2 {
                        return 0.0;
                    }
                    let ss: f64 = (0..seeds)
                        .map(|s| {
                            let x = o.get(n, a, s);
                            (cost_of(x.rtt_ms, x.goodput_bps) - cost[a]).powi(2)
                        })
                        .sum();
                    (ss / (seeds - 1) as f64).sqrt()
                })
                .collect();
            Expectation {
                goodput_bps: goodput,
                rtt_ms: rtt,
                lifetime_s: lifetime,
                cost,
                cost_sd,
                // Set below, per path.
                oracle: 0,
                best: Vec::new(),
                tied: Vec::new(),
            }
        })
        .collect();
    // The oracle knows the best fixed algorithm per path, not per
    // connection size: the cheapest settable one over the size mix. The
    // networks of one path and phase, each size class's, are grouped once.
    let total: f64 = w.sizes.iter().map(|z| z.weight).sum();
    let k = o.algorithms.len();
    let mut phases: HashMap<(usize, bool), Vec<usize>> = HashMap::new();
    for (n, &(p, c, _)) in o.networks.iter().enumerate() {
        phases.entry((p, c)).or_default().push(n);
    }
    let mut work = 0;
    for n in 0..exp.len() {
        let (path, changed, _) = o.networks[n];
        let mut path_cost = vec![0.0; k];
        // The variance of the mix's mean cost: each size class's mean is
        // of `seeds` outcomes.
        let mut mean_var = vec![0.0; k];
        for &m in &phases[&(path, changed)] {
            work += 1;
            let class = o.networks[m].2;
            let share = w.sizes[class].weight / total;
            for (a, pc) in path_cost.iter_mut().enumerate() {
                *pc += exp[m].cost[a] * share;
                mean_var[a] += share * share * exp[m].cost_sd[a].powi(2) / seeds as f64;
            }
        }
        let unavailable = &w.paths[path].unavailable;
        let settable: Vec<bool> = o
            .algorithms
            .iter()
            .map(|a| !unavailable.contains(a))
            .collect();
        let oracle = (0..k)
            .filter(|&a| settable[a])
            .min_by(|&a, &b| path_cost[a].total_cmp(&path_cost[b]))
            .unwrap_or(0);
        exp[n].oracle = oracle;
        exp[n].best = (0..k)
            .map(|a| settable[a] && path_cost[a] <= path_cost[oracle] + BEST_MARGIN)
            .collect();
        exp[n].tied = tied(&path_cost, &mean_var, &settable, oracle);
    }
    (exp, work)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_tie_counts_as_best_and_a_clear_loser_does_not() {
        // The oracle (0) at 0.30; algorithm 1 at 0.40, each with a
        // connection-to-connection spread of 0.15 over four outcomes: the
        // gap, 0.10, is within two standard errors of the difference
        // (2 x sqrt(2 x 0.15^2 / 4) = 0.21), so 1 is tied. Algorithm 2, at
        // 0.80 with the same spread, is not; nor is 3, as close as 1 but
        // not settable. Algorithm 4, steady at 0.34, is within the strict
        // margin whatever the spreads.
        let cost = [0.30, 0.40, 0.80, 0.40, 0.34];
        let var = |sd: f64| sd * sd / 4.0;
        let mean_var = [var(0.15), var(0.15), var(0.15), var(0.15), 0.0];
        let settable = [true, true, true, false, true];
        assert_eq!(
            tied(&cost, &mean_var, &settable, 0),
            [true, true, false, false, true]
        );
        // Without spread the band is the strict margin: 1 is not best.
        assert_eq!(
            tied(&cost, &[0.0; 5], &settable, 0),
            [true, false, false, false, true]
        );
    }

    #[test]
    fn alternating_between_near_ties_converges_only_when_ties_count() {
        // A destination that tries a clear loser for its first 10
        // connections, then alternates between the oracle and a near tie
        // for 30: half of those are strictly best, all of them are best or
        // tied. From the fourth connection on, 30 of the 37 choices left
        // (81%) are.
        let picks: Vec<usize> = [2; 10].into_iter().chain((0..30).map(|i| i % 2)).collect();
        let strict = [true, false, false];
        let ties = [true, true, false];
        let good = |set: &[bool]| picks.iter().map(|&a| set[a]).collect::<Vec<_>>();
        assert_eq!(convergence(&good(&strict)).0, None);
        assert_eq!(convergence(&good(&ties)), (Some(3), 30.0 / 37.0));
        // Ties do not hide a clear loser chosen every third connection:
        // two good choices in three are not 80%.
        let picks: Vec<usize> = (0..30)
            .map(|i| if i % 3 == 2 { 2 } else { i % 2 })
            .collect();
        let (at, share) = convergence(&picks.iter().map(|&a| ties[a]).collect::<Vec<_>>());
        assert_eq!(at, None, "two in three is below 80%: {share}");
    }
}
