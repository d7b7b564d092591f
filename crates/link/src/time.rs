//! Time as both engines give it to the queues: nanoseconds in a `u64`
//! (enough for 584 years), since the start of a simulated run or on the
//! lab's CLOCK_MONOTONIC. Nothing in this crate reads a clock; every
//! function that needs the time takes `now`.

/// A point in time, or a duration, in nanoseconds.
pub type Time = u64;

pub const US: Time = 1_000;
pub const MS: Time = 1_000_000;
pub const SEC: Time = 1_000_000_000;

/// Time to serialize `bytes` at `rate_bps`, rounded up to a nanosecond.
#[inline]
pub fn serialization(bytes: u32, rate_bps: u64) -> Time {
    // bytes * 8e9 fits a u64 for any packet (< 2^31 bytes); u128 beyond.
    match (bytes as u64).checked_mul(8 * SEC) {
        Some(bits_ns) => bits_ns.div_ceil(rate_bps.max(1)),
        None => ((bytes as u128 * 8 * SEC as u128).div_ceil(rate_bps.max(1) as u128)) as Time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_1500_byte_packet_at_10_mbit_takes_1_2_ms() {
        assert_eq!(serialization(1500, 10_000_000), 1_200_000);
        assert_eq!(serialization(1500, 1_000_000_000), 12_000);
        assert_eq!(serialization(1, 3), 2_666_666_667);
    }
}
