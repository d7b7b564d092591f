//! How late the delay line writes packets back: a histogram of each
//! packet's lateness (the time it was written minus its release time), for
//! quantiles such as the 99th percentile a capacity measurement reports.
//!
//! Buckets are log-linear, as HdrHistogram's with three significant bits:
//! eight per power of two, so a quantile is given to within 12.5% (its
//! bucket's upper end), from nanoseconds to seconds in 512 counters. The
//! delay line's thread counts with relaxed atomic adds; readers copy the
//! counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const BUCKETS: usize = 512;

/// The bucket of a lateness of `ns`: 0-7 ns exactly, then eight per
/// power of two.
fn bucket(ns: u64) -> usize {
    if ns < 8 {
        return ns as usize;
    }
    let exp = 63 - u64::from(ns.leading_zeros());
    let sub = (ns >> (exp - 3)) & 7;
    ((exp - 2) * 8 + sub) as usize
}

/// The smallest lateness in bucket `b` (for b = BUCKETS, past the last).
fn lower(b: usize) -> u64 {
    if b < 8 {
        return b as u64;
    }
    let (exp, sub) = (b as u32 / 8 + 2, b as u128 % 8);
    u64::try_from((8 + sub) << (exp - 3)).unwrap_or(u64::MAX)
}

/// The counters the delay line's thread adds to.
#[derive(Debug)]
pub(crate) struct Recorder {
    counts: Box<[AtomicU64]>,
}

impl Default for Recorder {
    fn default() -> Recorder {
        Recorder {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Recorder {
    pub(crate) fn record(&self, late_ns: u64) {
        self.counts[bucket(late_ns)].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> Lateness {
        Lateness {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

/// The lateness of the packets a direction wrote back, as counts per
/// bucket: [`Lateness::since`] an earlier copy gives a measurement's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lateness {
    counts: Box<[u64]>,
}

impl Lateness {
    /// Packets counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// What was counted after `earlier` was read.
    pub fn since(&self, earlier: &Lateness) -> Lateness {
        Lateness {
            counts: self
                .counts
                .iter()
                .zip(earlier.counts.iter())
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        }
    }

    /// Both directions as one.
    pub(crate) fn merge(&self, other: &Lateness) -> Lateness {
        Lateness {
            counts: self
                .counts
                .iter()
                .zip(other.counts.iter())
                .map(|(a, b)| a + b)
                .collect(),
        }
    }

    /// The lateness that a share `q` (0 to 1) of the packets did not
    /// exceed, rounded up to its bucket's end (at most 12.5% over); zero
    /// when nothing was counted.
    pub fn quantile(&self, q: f64) -> Duration {
        let total = self.count();
        if total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Duration::from_nanos(lower(b + 1).saturating_sub(1).max(lower(b)));
            }
        }
        Duration::from_nanos(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_eight_per_power_of_two_and_cover_every_value() {
        for ns in [
            0,
            1,
            7,
            8,
            9,
            15,
            16,
            17,
            1000,
            123_456,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let b = bucket(ns);
            assert!(b < BUCKETS, "{ns}");
            assert!(lower(b) <= ns, "{ns}: bucket {b} starts at {}", lower(b));
            assert!(ns < lower(b + 1) || lower(b + 1) == u64::MAX, "{ns}");
        }
        // Within 12.5% of the value above 8 ns.
        for ns in [100u64, 1000, 199_999, 10_000_000] {
            let b = bucket(ns);
            assert!((lower(b + 1) - lower(b)) * 8 <= lower(b), "{ns}");
        }
    }

    #[test]
    fn quantiles_are_read_from_the_counts() {
        let r = Recorder::default();
        for us in 1..=100 {
            r.record(us * 1000);
        }
        let l = r.read();
        assert_eq!(l.count(), 100);
        let p99 = l.quantile(0.99);
        assert!(
            p99 >= Duration::from_micros(99) && p99 < Duration::from_micros(112),
            "{p99:?}"
        );
        let p50 = l.quantile(0.5);
        assert!(
            p50 >= Duration::from_micros(50) && p50 < Duration::from_micros(57),
            "{p50:?}"
        );
        let before = r.read();
        r.record(5_000_000);
        let only = r.read().since(&before);
        assert_eq!(only.count(), 1);
        assert!(only.quantile(0.5) >= Duration::from_millis(5));
        assert_eq!(Recorder::default().read().quantile(0.99), Duration::ZERO);
    }
}
