//! What a choice gives up: the goodput an algorithm delivers at a peer
//! short of another's that delivers more, and the RTT it saves for it.
//!
//! Kleinrock's cost adds RTT above the best algorithm's to rate short of
//! the best's, as fractions, so it trades one for the other at par: an
//! algorithm that halves a bloated buffer's queue (RTT -50%) for a quarter
//! of the rate (-25%) is the cheaper. On a deep cellular buffer CDG keeps
//! the RTT near the base at a quarter of CUBIC's goodput, and is chosen.
//! That is the policy's objective, but an operator who wants the bytes
//! should be told, so the status says it: "-76% goodput for -69% RTT
//! against cubic".
//!
//! The comparison is over the peer's own connections, bucket by bucket
//! ([`crate::evidence`]), weighted by the peer's demand, over the buckets
//! where both algorithms have evidence; a trade is reported only where the
//! difference in goodput is beyond noise: a ratio whose logarithm is more
//! than [`TRADE_Z`] standard errors of the difference, each algorithm's
//! spread its own shrunk towards the path's as the policy's estimates are.

use std::fmt;

use crate::evidence::Entry;

/// Standard errors of the difference of log goodputs beyond which one
/// algorithm's goodput is taken to exceed another's.
pub const TRADE_Z: f64 = 2.0;

/// What `choice` gives up against `rival`, the algorithm that delivers
/// most at the peer beyond noise: relative changes of goodput (negative)
/// and RTT (negative when it saves RTT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trade {
    pub choice: usize,
    pub rival: usize,
    pub goodput: f64,
    pub rtt: f64,
}

impl fmt::Display for Trade {
    /// "-12% goodput for -40% RTT" (the rival is the caller's to name).
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{:+.0}% goodput for {:+.0}% RTT",
            100.0 * self.goodput,
            100.0 * self.rtt
        )
    }
}

/// Weighted sums over buckets of one algorithm's mean rate and RTT, and
/// the variance of the rate sum.
#[derive(Clone, Copy, Default)]
struct Mix {
    rate: f64,
    rtt: f64,
    rate_var: f64,
}

/// What `choice` gives up at the peer of `entry` against the candidate that
/// delivers the most more than it, beyond noise; `None` when none does.
/// `prior` and `weight` shrink each algorithm's spread towards the path's,
/// as [`Entry::estimates`] does.
pub fn trade(entry: &Entry, choice: usize, prior: f64, weight: f64) -> Option<Trade> {
    let spread = entry.spread(prior, weight);
    let total: f64 = entry.buckets.iter().map(|b| b.demand).sum();
    let mut best: Option<(f64, Trade)> = None;
    for rival in (0..entry.arms()).filter(|&r| r != choice) {
        let (mut ours, mut theirs) = (Mix::default(), Mix::default());
        for b in &entry.buckets {
            let (c, r) = (&b.arms[choice], &b.arms[rival]);
            if b.demand <= 0.0 || total <= 0.0 || !c.has_evidence() || !r.has_evidence() {
                continue;
            }
            let w = b.demand / total;
            for (m, a) in [(&mut ours, c), (&mut theirs, r)] {
                // The arm's squared coefficient of variation of rate, shrunk
                // towards the path's, over its connections.
                let cv2 =
                    (a.relative_ss()[1] + weight * spread[1]) / ((a.n - 1.0).max(0.0) + weight);
                m.rate += w * a.mean_rate();
                m.rtt += w * a.mean_rtt();
                m.rate_var += w * w * a.mean_rate().powi(2) * cv2 / a.n;
            }
        }
        if ours.rate <= 0.0 || theirs.rtt <= 0.0 {
            continue;
        }
        // Rates differ by factors: the gap and its noise in logarithms (the
        // variance of a log is the squared coefficient of variation).
        let gap = (theirs.rate / ours.rate).ln();
        let noise = ours.rate_var / ours.rate.powi(2) + theirs.rate_var / theirs.rate.powi(2);
        if gap <= TRADE_Z * noise.sqrt() {
            continue;
        }
        let t = Trade {
            choice,
            rival,
            goodput: ours.rate / theirs.rate - 1.0,
            rtt: ours.rtt / theirs.rtt - 1.0,
        };
        if best.is_none_or(|(g, _)| t.goodput < g) {
            best = Some((t.goodput, t));
        }
    }
    best.map(|b| b.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Seen;

    fn seen(rtt_ms: f64, mbps: f64) -> Seen {
        Seen {
            rtt_us: rtt_ms * 1000.0,
            rate: mbps * 1e6 / 8.0,
            loss: 0.0,
        }
    }

    /// A peer's table from `n` connections of each algorithm, algorithm
    /// `a` showing `rows[a]` (RTT ms, Mbit/s) give or take `jitter` of the
    /// rate, all bulk connections of 3 s.
    fn table(rows: &[(f64, f64)], n: usize, jitter: f64) -> Entry {
        let mut e = Entry::new(rows.len());
        let bucket = crate::evidence::time_bucket(3_000_000);
        for i in 0..n {
            for (a, &(rtt, rate)) in rows.iter().enumerate() {
                let wobble = if i % 2 == 0 {
                    1.0 + jitter
                } else {
                    1.0 - jitter
                };
                e.learn(a, &[(bucket, seen(rtt, rate * wobble))], 1.0);
            }
        }
        e
    }

    #[test]
    fn a_choice_that_gives_up_goodput_for_rtt_says_so() {
        // The deep cellular buffer: CDG (1) at 63 ms and 3 Mbit/s, CUBIC
        // (0) at 208 ms and 12.6, BBR (2) at 285 ms and 11.7.
        let e = table(&[(208.0, 12.6), (63.0, 3.0), (285.0, 11.7)], 6, 0.1);
        let t = trade(&e, 1, 0.01, 2.0).expect("a trade");
        assert_eq!((t.choice, t.rival), (1, 0), "{t:?}");
        assert_eq!(t.to_string(), "-76% goodput for -70% RTT");
        // CUBIC, the one that delivers most, gives nothing up.
        assert_eq!(trade(&e, 0, 0.01, 2.0), None);
    }

    #[test]
    fn a_goodput_gap_within_noise_is_no_trade() {
        // 5% less goodput, each algorithm's rate varying by 30% from one
        // connection to the next, three connections each: noise.
        let e = table(&[(100.0, 10.0), (60.0, 9.5)], 3, 0.3);
        assert_eq!(trade(&e, 1, 0.01, 2.0), None);
        // The same gap, steady and seen 20 times: a trade.
        let e = table(&[(100.0, 10.0), (60.0, 9.5)], 20, 0.0);
        let t = trade(&e, 1, 0.0001, 2.0).expect("beyond noise");
        assert_eq!(t.to_string(), "-5% goodput for -40% RTT");
    }
}
