//! Simulated time: nanoseconds since the start of the run, in a `u64`
//! (enough for 584 years). The unit and the serialization time are the
//! link models' (`kleinrock_link::time`), shared with the lab; what only
//! the simulated TCP needs is here.

pub use kleinrock_link::time::{serialization, Time, MS, SEC, US};

/// A deadline that never comes: stands for "none" where a plain time is
/// cheaper to compare than an `Option`.
pub const NEVER: Time = Time::MAX;

/// Nanoseconds to microseconds, the unit of the TCP stack's clock.
pub fn to_us(t: Time) -> u64 {
    t / US
}
