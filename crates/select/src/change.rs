//! Has the path to a peer changed? A CUSUM test (Page, "Continuous
//! inspection schemes", Biometrika 1954) on how surprising each closing
//! connection is, as CUSUM-UCB does for bandits (Liu, Lee and Shroff, "A
//! Change-Detection based Framework for Piecewise-stationary Multi-Armed
//! Bandit Problem", AAAI 2018).
//!
//! A connection's surprise is how far its RTT, rate or retransmitted share
//! lies from what its algorithm showed there before, in log-ratios, in
//! units of the larger of ln(factor) and three standard deviations of
//! where the next connection should lie. The statistic accumulates
//! surprises beyond half a unit and forgets ordinary ones; the path has
//! changed when it reaches 2. No single connection can reach it (its
//! surprise counts at most 2, less the half unit of drift): one algorithm's
//! outlier, such as a CDG connection that backed off early and never
//! recovered, is not a change of path, while two clearly surprising
//! connections, or three moderately surprising ones, are. A change shows in
//! whichever algorithm runs: a path whose loss goes away is found through
//! BBR, which hardly notices, by its retransmissions.

use crate::evidence::{Arm, Seen};

/// Evidence an algorithm needs in a bucket before a connection can be
/// tested against it.
const MIN_WEIGHT: f64 = 2.0;
/// Standard deviations (of where the next connection should lie) that one
/// surprise unit spans.
const SIGMAS: f64 = 3.0;
/// Surprise below this is ordinary variation and lowers the statistic.
const DRIFT: f64 = 0.5;
/// Most surprise one connection contributes.
const CAP: f64 = 2.0;
/// The statistic at which the path has changed (so a peer's statistic,
/// reset then, is always below it).
pub const THRESHOLD: f64 = 2.0;

/// How surprising `seen` is against `arm`: the worst of RTT, rate and
/// retransmitted share, in units of the larger of ln(`factor`) and three
/// standard deviations of the posterior predictive (the arm's own spread
/// of logs shrunk towards ln(`factor`) as if that were `weight`
/// connections' worth, widened by the uncertainty of its mean, `1 + 1/n`),
/// so that two or three connections that happened to agree do not make the
/// next one's ordinary variation look like a change. `None` if the arm has
/// too little evidence.
pub fn surprise(arm: &Arm, seen: &Seen, factor: f64, weight: f64) -> Option<f64> {
    if arm.n < MIN_WEIGHT {
        return None;
    }
    let floor = factor.ln();
    let dof = arm.n - 1.0;
    let worst = seen
        .logs()
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let var = (arm.log_ss(i) + weight * floor * floor) / (dof + weight);
            let sd = (var * (1.0 + 1.0 / arm.n)).sqrt();
            (l - arm.log_mean(i)).abs() / floor.max(SIGMAS * sd)
        })
        .fold(0.0, f64::max);
    Some(worst)
}

/// The statistic after a connection of surprise `x` (`None`: untested,
/// which leaves it as it was); and whether the path has changed.
pub fn step(statistic: f64, x: Option<f64>) -> (f64, bool) {
    let s = match x {
        Some(x) => (statistic + x.min(CAP) - DRIFT).max(0.0),
        None => statistic,
    };
    (s, s >= THRESHOLD)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(rtt_us: f64, rate: f64, loss: f64) -> Seen {
        Seen { rtt_us, rate, loss }
    }

    fn arm(of: &[Seen]) -> Arm {
        let mut a = Arm::default();
        for s in of {
            a.add(s);
        }
        a
    }

    #[test]
    fn surprise_is_in_units_of_the_factor_until_the_spread_is_wider() {
        let one = arm(&[seen(1000.0, 100.0, 0.0)]);
        assert_eq!(surprise(&one, &seen(1.0, 1.0, 0.0), 1.3, 2.0), None);
        // 30 identical connections: the prior spread, ln 1.3 weighing 2 of
        // 31 degrees of freedom, times 3 and the mean's uncertainty, is
        // below ln 1.3, which is the unit then.
        let a = arm(&[seen(1000.0, 100.0, 0.0); 30]);
        let sd = ((2.0 * 1.3f64.ln().powi(2) / 31.0) * (1.0 + 1.0 / 30.0)).sqrt();
        assert!(3.0 * sd < 1.3f64.ln());
        let x = surprise(&a, &seen(1300.0, 100.0, 0.0), 1.3, 2.0).unwrap();
        assert!((x - 1.0).abs() < 1e-9, "{x}");
        // Retransmissions count through their share plus half a percent.
        let x = surprise(&a, &seen(1000.0, 100.0, 0.005), 1.3, 2.0).unwrap();
        assert!((x - 2f64.ln() / 1.3f64.ln()).abs() < 1e-9, "{x}");
        // Two connections that agreed: the next one's spread is the prior's.
        let two = arm(&[seen(1000.0, 100.0, 0.0); 2]);
        let x = surprise(&two, &seen(1300.0, 100.0, 0.0), 1.3, 2.0).unwrap();
        let sd = (1.3f64.ln().powi(2) * 2.0 / 3.0 * 1.5).sqrt();
        assert!((x - 1.3f64.ln() / (3.0 * sd)).abs() < 1e-9, "{x}");
    }

    #[test]
    fn one_outlier_is_not_a_change_two_surprises_are() {
        let (s, changed) = step(0.0, Some(50.0));
        assert_eq!((s, changed), (1.5, false));
        // Ordinary connections wear it down...
        let (s, _) = step(s, Some(0.2));
        assert!((s - 1.2).abs() < 1e-12);
        let (s, _) = step(s, None);
        assert!((s - 1.2).abs() < 1e-12, "untested leaves it");
        // ... a second clear surprise completes it.
        assert!(step(s, Some(1.5)).1);
        // Three moderate surprises in a row.
        let (s, c1) = step(0.0, Some(1.2));
        let (s, c2) = step(s, Some(1.2));
        let (_, c3) = step(s, Some(1.2));
        assert_eq!((c1, c2, c3), (false, false, true));
        // Noise never accumulates.
        let mut s = 0.0;
        for _ in 0..1000 {
            s = step(s, Some(0.49)).0;
        }
        assert_eq!(s, 0.0);
    }
}
