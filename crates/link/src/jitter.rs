//! Per-packet jitter: up to `max` of random extra delay, drawn uniformly
//! for each packet from the caller's seeded generator. Keeping packets in
//! order despite it (a packet is never released before the one ahead of
//! it) is the caller's: the simulator's pipes and the lab's delay line
//! both release each flow's packets in the order they left the
//! bottleneck.
//!
//! The jitter breaks the phase effects of a perfectly deterministic
//! network (Floyd and Jacobson, "On Traffic Phase Effects in
//! Packet-Switched Gateways", 1992): without it, identical flows on a
//! drop-tail queue can lock into patterns where one always loses.

use kleinrock_cc::rand::SplitMix64;

use crate::time::Time;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Jitter {
    /// How many extra delays a packet draws from (0 to `max` ns:
    /// `max + 1`, saturating at a jitter of 584 years); 0: no jitter.
    /// Kept as a `u64` so that the draw is one 64-by-64-bit multiply.
    values: u64,
}

impl Jitter {
    /// Up to `max` ns of extra delay per packet; 0 for none.
    pub fn new(max: Time) -> Jitter {
        Jitter {
            values: if max > 0 { max.saturating_add(1) } else { 0 },
        }
    }

    /// The next packet's extra delay (no draw without jitter, so that a
    /// jitter-free link leaves the generator's sequence alone).
    #[inline]
    pub fn draw(&self, rng: &mut SplitMix64) -> Time {
        if self.values > 0 {
            // Uniform in [0, max] by a multiply, not a division.
            ((rng.next_u64() as u128 * self.values as u128) >> 64) as Time
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_within_max_and_reach_both_ends() {
        let mut rng = SplitMix64::new(5);
        assert_eq!(Jitter::new(0).draw(&mut rng), 0);
        let j = Jitter::new(3);
        let draws: Vec<Time> = (0..1000).map(|_| j.draw(&mut rng)).collect();
        assert!(draws.iter().all(|&d| d <= 3));
        for v in 0..=3 {
            let n = draws.iter().filter(|&&d| d == v).count();
            assert!((200..300).contains(&n), "{v}: {n}");
        }
        // No draw without jitter: the generator is where it was.
        let mut a = SplitMix64::new(9);
        let mut b = a.clone();
        Jitter::default().draw(&mut a);
        assert_eq!(a.next_u64(), b.next_u64());
        // The largest jitter saturates rather than wrapping to none.
        assert!(Jitter::new(Time::MAX).values > 0);
    }
}
