//! Time-varying links from mahimahi traces (Netravali et al., "Mahimahi:
//! Accurate Record-and-Replay for HTTP", USENIX ATC 2015).
//!
//! A trace is a text file with one integer per line: a millisecond at which
//! the link may deliver one packet of up to 1500 bytes. Several lines may
//! name the same millisecond (several packets then). The trace repeats with
//! the period of its last timestamp, as mahimahi's `mm-link` replays it.
//!
//! Only the text is parsed here: a file is read by the scenario reader
//! (`kleinrock_sim::scenario::units::read_text`: a regular file of at most
//! 64 MiB, UTF-8, errors without OS internals), the one place Kleinrock
//! reads a file a person wrote.

use crate::time::{Time, MS};

/// Delivery opportunities, looping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Opportunity times within one period, ns, non-decreasing.
    opportunities: Vec<Time>,
    period: Time,
}

/// Why a trace file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkTraceError(pub String);

impl std::fmt::Display for LinkTraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LinkTraceError {}

/// A line as an error quotes it: its first 40 characters, control
/// characters escaped as TOML writes them (`\u001B`, as scenario errors
/// do), so that a message stays one short line whatever the
/// file holds.
fn shown(line: &str) -> String {
    let mut out: String = line
        .chars()
        .take(40)
        .map(|c| {
            if c.is_control() {
                format!("\\u{:04X}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    if line.chars().nth(40).is_some() {
        out.push_str("...");
    }
    out
}

impl Trace {
    /// Parses a trace's text; `name` (a file name, say) is what errors
    /// call it.
    pub fn parse(text: &str, name: &str) -> Result<Trace, LinkTraceError> {
        let mut opportunities = Vec::new();
        let mut last = 0u64;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let ms: u64 = line.parse().map_err(|_| {
                LinkTraceError(format!(
                    "{name} line {}: `{}` is not a millisecond timestamp; a mahimahi trace has one integer per line",
                    i + 1,
                    shown(line)
                ))
            })?;
            if ms.checked_mul(MS).is_none() {
                return Err(LinkTraceError(format!(
                    "{name} line {}: {ms} ms is beyond what 64 bits of nanoseconds hold (584 years)",
                    i + 1
                )));
            }
            if ms < last {
                return Err(LinkTraceError(format!(
                    "{name} line {}: {ms} comes after {last}; timestamps must not decrease",
                    i + 1
                )));
            }
            last = ms;
            opportunities.push(ms * MS);
        }
        if opportunities.is_empty() || last == 0 {
            return Err(LinkTraceError(format!(
                "{name} has no delivery opportunity after time 0; a mahimahi trace needs at least one positive timestamp"
            )));
        }
        Ok(Trace {
            opportunities,
            period: last * MS,
        })
    }

    /// Opportunity `idx`'s time, or `Time::MAX` (never) past what 64 bits
    /// of nanoseconds hold: a trace whose period is centuries long reaches
    /// that in its second period (found by fuzzing, issue 16).
    fn time(&self, idx: u64) -> Time {
        let n = self.opportunities.len() as u64;
        (idx / n)
            .checked_mul(self.period)
            .and_then(|t| t.checked_add(self.opportunities[(idx % n) as usize]))
            .unwrap_or(Time::MAX)
    }

    /// The first opportunity at or after `t`, not before index `from`;
    /// returns its index and time, the time `Time::MAX` (never) if it lies
    /// beyond what 64 bits of nanoseconds hold.
    pub fn next(&self, from: u64, t: Time) -> (u64, Time) {
        let n = self.opportunities.len() as u64;
        let mut idx = from;
        if self.time(idx) < t {
            // Jump whole periods, then search within one.
            let loops = t / self.period;
            let within = t - loops * self.period;
            let i = self.opportunities.partition_point(|&o| o < within) as u64;
            idx = idx.max(loops.saturating_mul(n).saturating_add(i));
        }
        while self.time(idx) < t {
            if idx == u64::MAX {
                return (idx, Time::MAX);
            }
            idx += 1;
        }
        (idx, self.time(idx))
    }

    /// Average rate in bits per second for 1500-byte packets.
    pub fn mean_rate_bps(&self) -> u64 {
        (self.opportunities.len() as u128 * 1500 * 8 * 1_000_000_000 / self.period as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opportunities_loop_with_the_last_timestamp_as_period() {
        let t = Trace::parse("1\n1\n3\n4\n", "t").unwrap();
        assert_eq!(t.next(0, 0), (0, MS));
        assert_eq!(t.next(1, 0), (1, MS));
        assert_eq!(t.next(2, 0), (2, 3 * MS));
        // Second period: 5, 5, 7, 8 ms.
        assert_eq!(t.next(4, 0), (4, 5 * MS));
        assert_eq!(t.next(0, 6 * MS), (6, 7 * MS));
        assert_eq!(t.next(0, 4_000 * MS + 1), (4000, 4001 * MS));
        assert_eq!(t.next(0, 4_002 * MS), (4002, 4003 * MS));
        assert_eq!(t.mean_rate_bps(), 4 * 12_000 * 1000 / 4);
    }

    #[test]
    fn opportunities_beyond_64_bits_of_nanoseconds_are_never() {
        // A period of 584 years: its second period is past u64 ns, which
        // overflowed (fuzz/regressions/mahimahi/).
        let t = Trace::parse("12222222226222\n", "t").unwrap();
        let period = 12_222_222_226_222 * MS;
        assert_eq!(t.next(0, 0), (0, period));
        assert_eq!(t.next(1, 0), (1, Time::MAX));
        assert_eq!(t.next(0, period + 1), (1, Time::MAX));
        assert_eq!(t.next(u64::MAX, 0), (u64::MAX, Time::MAX));
        let short = Trace::parse("1\n3\n", "t").unwrap();
        assert_eq!(short.next(0, Time::MAX).1, Time::MAX);
        assert_eq!(short.next(u64::MAX - 1, 0).1, Time::MAX);
    }

    #[test]
    fn bad_traces_are_refused_with_the_line() {
        assert_eq!(
            Trace::parse("1\nx\n", "t.trace").unwrap_err().0,
            "t.trace line 2: `x` is not a millisecond timestamp; a mahimahi trace has one integer per line"
        );
        assert!(Trace::parse("5\n3\n", "t")
            .unwrap_err()
            .0
            .contains("line 2: 3 comes after 5"));
        assert!(Trace::parse("0\n0\n", "t")
            .unwrap_err()
            .0
            .contains("no delivery opportunity"));
        // Found through a scenario's `trace` (issue 16): a timestamp that
        // overflowed nanoseconds (a panic, or a wrong trace in release),
        // and a long line echoed whole.
        assert_eq!(
            Trace::parse("1\n18446744073709551\n", "t").unwrap_err().0,
            "t line 2: 18446744073709551 ms is beyond what 64 bits of nanoseconds hold (584 years)"
        );
        let long = format!("{}\u{1b}", "x".repeat(100_000));
        assert_eq!(
            Trace::parse(&long, "t").unwrap_err().0,
            format!("t line 1: `{}...` is not a millisecond timestamp; a mahimahi trace has one integer per line", "x".repeat(40))
        );
        assert_eq!(
            Trace::parse("1\u{1b}[2J\n", "t").unwrap_err().0,
            "t line 1: `1\\u001B[2J` is not a millisecond timestamp; a mahimahi trace has one integer per line"
        );
    }
}
