//! The values people write in TOML files (durations, rates, sizes,
//! percentages) and [`Source`], which turns a bad one into one sentence
//! naming the file, the line and the key. Scenario files and the
//! selector's workload files (kleinrock-fleet) both read through here.

use serde::de::DeserializeOwned;
use toml::Spanned;

use super::ScenarioError;
use crate::time::{Time, MS, SEC, US};

/// Parses durations: `40ms`, `1.5s`, `200us`, `2min`.
pub fn parse_duration(s: &str) -> Option<Time> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let mult = match unit.trim() {
        "ns" => 1.0,
        "us" => US as f64,
        "ms" => MS as f64,
        "s" => SEC as f64,
        "min" => 60.0 * SEC as f64,
        _ => return None,
    };
    (v.is_finite() && v >= 0.0).then(|| (v * mult).round() as Time)
}

/// Parses rates: `100Mbit`, `1.5Gbit`, `64kbit`, `128kbit/s`, `10Mbps`.
pub fn parse_rate(s: &str) -> Option<u64> {
    let s = s.trim().trim_end_matches("/s");
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let mult = match unit.trim() {
        "bit" | "bps" => 1.0,
        "kbit" | "Kbit" | "kbps" => 1e3,
        "Mbit" | "mbit" | "Mbps" => 1e6,
        "Gbit" | "gbit" | "Gbps" => 1e9,
        _ => return None,
    };
    let r = v * mult;
    (r.is_finite() && r >= 1.0).then_some(r.round() as u64)
}

/// Parses sizes in bytes: `1500B`, `64KB`, `30MB`, `1GB` (powers of 1000)
/// and `KiB`/`MiB`/`GiB`.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.trim().parse().ok()?;
    let mult = match unit.trim() {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let b = v * mult;
    (b.is_finite() && b >= 1.0).then_some(b.round() as u64)
}

/// Parses a probability written as a percentage: `1%`, `0.01%`.
pub fn parse_percent_ppm(s: &str) -> Option<u32> {
    let v: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (0.0..=100.0)
        .contains(&v)
        .then(|| (v * 10_000.0).round() as u32)
}

/// A TOML text being read: errors name its file and the line of the bad
/// value, from the value's span.
pub struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
    /// Are line numbers meaningful? Not for text a program wrote (a
    /// workload's path, a comparison's override), whose errors can only
    /// come from values it was given: a line of that text would mean
    /// nothing to the person who wrote the original.
    pub lines: bool,
}

impl Source<'_> {
    fn line(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }

    /// `msg` about the value at `span`, as an error.
    pub fn err<T>(&self, span: std::ops::Range<usize>, msg: String) -> Result<T, ScenarioError> {
        Err(ScenarioError(self.place(span.start, &msg)))
    }

    /// `msg` prefixed with the file, and the line of `offset` when lines
    /// mean something.
    pub fn place(&self, offset: usize, msg: &str) -> String {
        if self.lines {
            format!("{} line {}: {msg}", self.file, self.line(offset))
        } else {
            format!("{}: {msg}", self.file)
        }
    }

    /// The whole text into `T`; serde's "field" is a "key" to the person
    /// who wrote the file.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, ScenarioError> {
        toml::from_str(self.text).map_err(|e| {
            let msg = e
                .message()
                .replace("unknown field", "unknown key")
                .replace("missing field", "missing key");
            ScenarioError(self.place(e.span().map_or(0, |s| s.start), &msg))
        })
    }

    pub fn duration(&self, v: &Spanned<String>, key: &str) -> Result<Time, ScenarioError> {
        match parse_duration(v.get_ref()) {
            Some(t) => Ok(t),
            None => self.err(
                v.span(),
                format!("`{key}` = \"{}\" is not a duration; write e.g. \"40ms\", \"1.5s\" or \"200us\"", v.get_ref()),
            ),
        }
    }

    pub fn positive_duration(&self, v: &Spanned<String>, key: &str) -> Result<Time, ScenarioError> {
        let t = self.duration(v, key)?;
        if t == 0 {
            return self.err(v.span(), format!("`{key}` must be longer than zero"));
        }
        Ok(t)
    }

    /// An integer from `lo` to `hi`.
    pub fn int(&self, v: &Spanned<i64>, key: &str, lo: i64, hi: i64) -> Result<i64, ScenarioError> {
        let x = *v.get_ref();
        if x < lo || x > hi {
            return self.err(
                v.span(),
                format!("`{key}` = {x} is out of range; it must be from {lo} to {hi}"),
            );
        }
        Ok(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_duration("200us"), Some(200_000));
        assert_eq!(parse_duration("-1s"), None);
        assert_eq!(parse_rate("128kbit"), Some(128_000));
        assert_eq!(parse_rate("1Gbit/s"), Some(1_000_000_000));
        assert_eq!(parse_rate("0Mbit"), None);
        assert_eq!(parse_bytes("30MB"), Some(30_000_000));
        assert_eq!(parse_bytes("64KiB"), Some(65_536));
        assert_eq!(parse_percent_ppm("0.001%"), Some(10));
        assert_eq!(parse_percent_ppm("1"), None);
    }
}
