//! Deterministic randomness for drivers, simulators and the algorithms that
//! draw random numbers (CDG's backoff, BBR's gain-cycle phase): never the
//! OS's, always a seeded generator passed in, so runs repeat exactly.

/// SplitMix64 (Steele, Lea and Flood, 2014): a small, fast, well-mixed
/// generator; the same seed gives the same sequence everywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose draws are all determined by `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `ppm` / 1,000,000.
    pub fn chance_ppm(&mut self, ppm: u32) -> bool {
        (self.next_u64() % 1_000_000) < ppm as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence_for_seed_zero() {
        // The reference SplitMix64 output for seed 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn chance_ppm_is_close_to_its_rate() {
        let mut r = SplitMix64::new(7);
        let hits = (0..1_000_000).filter(|_| r.chance_ppm(10_000)).count();
        assert!((9_500..10_500).contains(&hits), "{hits}");
        assert!(!SplitMix64::new(1).chance_ppm(0));
    }
}
