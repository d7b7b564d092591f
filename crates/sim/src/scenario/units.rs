//! The values people write in TOML files (durations, rates, sizes,
//! percentages), reading such a file, and [`Source`], which turns a bad
//! value into one sentence naming the file, the line, the key and what is
//! valid. Scenario files and the selector's workload files
//! (kleinrock-fleet) both read through here.

use std::io::Read;
use std::path::Path;

use kleinrock_cc::Algorithm;
use serde::de::DeserializeOwned;
use toml::Spanned;

use super::limits::Within;
use super::wording::{self, parser_error, quoted};
use super::ScenarioError;
use crate::time::{Time, MS, SEC, US};

/// The longest algorithm spec: every parameter of the richest algorithm
/// fits in well under it.
const MAX_SPEC_CHARS: usize = 256;

/// A number and the unit after it: `1.5s`, `1e3ms`, `100 Mbit`. The unit
/// is the trailing run of letters, so an exponent stays with the number.
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let unit_len = s
        .chars()
        .rev()
        .take_while(char::is_ascii_alphabetic)
        .count();
    let (num, unit) = s.split_at(s.len() - unit_len);
    let v: f64 = num.trim().parse().ok()?;
    v.is_finite().then_some((v, unit))
}

/// A duration in nanoseconds, unrounded: `40ms`, `1.5s`, `200us`, `2min`.
fn duration_ns(s: &str) -> Option<f64> {
    let (v, unit) = number_and_unit(s)?;
    let mult = match unit {
        "ns" => 1.0,
        "us" => US as f64,
        "ms" => MS as f64,
        "s" => SEC as f64,
        "min" => 60.0 * SEC as f64,
        _ => return None,
    };
    (v >= 0.0).then_some(v * mult)
}

/// A rate in bits/s, unrounded: `100Mbit`, `1.5Gbit`, `128kbit/s`, `10Mbps`.
fn rate_bps(s: &str) -> Option<f64> {
    let (v, unit) = number_and_unit(s.trim().trim_end_matches("/s"))?;
    let mult = match unit {
        "bit" | "bps" => 1.0,
        "kbit" | "Kbit" | "kbps" => 1e3,
        "Mbit" | "mbit" | "Mbps" => 1e6,
        "Gbit" | "gbit" | "Gbps" => 1e9,
        "Tbit" | "tbit" | "Tbps" => 1e12,
        _ => return None,
    };
    Some(v * mult)
}

/// A size in bytes, unrounded: `1500B`, `64KB`, `30MB`, `1GB` (powers of
/// 1000) and `KiB`/`MiB`/`GiB`.
fn size_bytes(s: &str) -> Option<f64> {
    let (v, unit) = number_and_unit(s)?;
    let mult = match unit {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(v * mult)
}

/// `x` rounded, if it is a `u64` (no silent saturation).
fn whole(x: f64) -> Option<u64> {
    let r = x.round();
    (0.0..18_446_744_073_709_551_616.0)
        .contains(&r)
        .then_some(r as u64)
}

/// Parses durations: `40ms`, `1.5s`, `200us`, `2min`.
pub fn parse_duration(s: &str) -> Option<Time> {
    duration_ns(s).and_then(whole)
}

/// Parses rates of at least 1 bit/s: `100Mbit`, `1.5Gbit`, `64kbit`,
/// `128kbit/s`, `10Mbps`.
pub fn parse_rate(s: &str) -> Option<u64> {
    rate_bps(s).filter(|r| *r >= 1.0).and_then(whole)
}

/// Parses sizes of at least one byte: `1500B`, `64KB`, `30MB`, `1GB`
/// (powers of 1000) and `KiB`/`MiB`/`GiB`.
pub fn parse_bytes(s: &str) -> Option<u64> {
    size_bytes(s).filter(|b| *b >= 1.0).and_then(whole)
}

/// Parses a probability written as a percentage: `1%`, `0.01%`.
pub fn parse_percent_ppm(s: &str) -> Option<u32> {
    let v: f64 = s.trim().strip_suffix('%')?.trim().parse().ok()?;
    (0.0..=100.0)
        .contains(&v)
        .then(|| (v * 10_000.0).round() as u32)
}

/// `t` in the largest unit that writes it whole: `86400s`, `1ms`.
pub fn fmt_duration(t: Time) -> String {
    match t {
        0 => "0s".into(),
        t if t % SEC == 0 => format!("{}s", t / SEC),
        t if t % MS == 0 => format!("{}ms", t / MS),
        t if t % US == 0 => format!("{}us", t / US),
        t => format!("{t}ns"),
    }
}

/// A rate in the largest unit that writes it whole: `1000Gbit`.
pub fn fmt_rate(bps: u64) -> String {
    for (unit, div) in [("Gbit", 1_000_000_000), ("Mbit", 1_000_000), ("kbit", 1000)] {
        if bps % div == 0 && bps > 0 {
            return format!("{}{unit}", bps / div);
        }
    }
    format!("{bps}bit")
}

/// A size in the largest unit that writes it whole: `15GB`, `1MiB`,
/// `1073725440B`.
pub fn fmt_bytes(b: u64) -> String {
    let units = [
        ("GB", 1_000_000_000),
        ("MB", 1_000_000),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KB", 1000),
    ];
    for (unit, div) in units {
        if b % div == 0 && b > 0 {
            return format!("{}{unit}", b / div);
        }
    }
    format!("{b}B")
}

/// ` (why)`, or nothing when there is no why.
fn because(why: &str) -> String {
    if why.is_empty() {
        String::new()
    } else {
        format!(" ({why})")
    }
}

/// The text of a file a person wrote, read only if it is a regular file of
/// at most `max_bytes` and UTF-8: a path to a device, a pipe or an endless
/// file is refused before anything is read from it, and a file in another
/// encoding is named with the line where it stops being UTF-8. `what`
/// names the file in errors ("scenario", "workload", "link trace").
pub fn read_text(path: &Path, what: &str, max_bytes: u64) -> Result<String, ScenarioError> {
    let name = wording::name(&path.display().to_string());
    let cannot = |e: std::io::Error| {
        ScenarioError(format!(
            "cannot read {what} {name}: {}",
            kleinrock_files::reason(&e)
        ))
    };
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if !meta.is_file() {
        return Err(ScenarioError(format!(
            "{what} {name} is not a regular file (it is a {}); give the path of a {what} file",
            if meta.is_dir() {
                "directory"
            } else {
                "device, pipe or socket"
            }
        )));
    }
    let too_big = || {
        ScenarioError(format!(
            "{what} {name} is larger than {}, the limit for a {what} file; is it the right file?",
            fmt_bytes(max_bytes)
        ))
    };
    if meta.len() > max_bytes {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max_bytes + 1).read_to_end(&mut bytes))
        .map_err(cannot)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = good.len() - good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) + 1;
        ScenarioError(format!(
            "{name} line {line}: byte {column} of the line is not UTF-8 text; save the {what} as UTF-8"
        ))
    })
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
        self.text.as_bytes()[..offset.min(self.text.len())]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    /// Did a person write the text (rather than a program, from values it
    /// was given)? Only a person's file can contradict itself.
    pub fn by_a_person(&self) -> bool {
        self.lines
    }

    /// `msg` about the value at `span`, as an error.
    pub fn err<T>(&self, span: std::ops::Range<usize>, msg: String) -> Result<T, ScenarioError> {
        Err(ScenarioError(self.place(span.start, &msg)))
    }

    /// `msg` prefixed with the file, and the line of `offset` when lines
    /// mean something.
    pub fn place(&self, offset: usize, msg: &str) -> String {
        if self.lines {
            format!(
                "{} line {}: {msg}",
                wording::name(self.file),
                self.line(offset)
            )
        } else {
            format!("{}: {msg}", wording::name(self.file))
        }
    }

    /// The value at `span` as the file writes it, as a message shows it.
    pub fn literal(&self, span: std::ops::Range<usize>) -> String {
        wording::show(self.text.get(span).unwrap_or_default())
    }

    /// The whole text into `T`, what the parser refuses said in words
    /// (see `wording`).
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, ScenarioError> {
        toml::from_str(self.text).map_err(|e| {
            let (at, msg) = parser_error(self.text, e.message(), e.span());
            ScenarioError(self.place(at, &msg))
        })
    }

    /// A duration within `w`.
    pub fn duration(
        &self,
        v: &Spanned<String>,
        key: &str,
        w: &Within<Time>,
    ) -> Result<Time, ScenarioError> {
        let shown = quoted(v.get_ref());
        let Some(ns) = duration_ns(v.get_ref()) else {
            return self.err(
                v.span(),
                format!("`{key}` = {shown} is not a duration; write e.g. \"40ms\", \"1.5s\" or \"200us\""),
            );
        };
        if ns > w.max as f64 {
            return self.err(
                v.span(),
                format!(
                    "`{key}` = {shown} is longer than {}, the limit{}",
                    fmt_duration(w.max),
                    because(w.why)
                ),
            );
        }
        let t = ns.round() as Time;
        if t < w.min {
            let msg = if w.min == 1 {
                format!("`{key}` must be longer than zero")
            } else {
                format!(
                    "`{key}` = {shown} is shorter than {}, the limit{}",
                    fmt_duration(w.min),
                    because(w.why)
                )
            };
            return self.err(v.span(), msg);
        }
        Ok(t)
    }

    /// A rate within `w`, bits/s.
    pub fn rate(
        &self,
        v: &Spanned<String>,
        key: &str,
        w: &Within<u64>,
    ) -> Result<u64, ScenarioError> {
        let shown = quoted(v.get_ref());
        match rate_bps(v.get_ref()) {
            Some(r) if r > w.max as f64 => self.err(
                v.span(),
                format!("`{key}` = {shown} is faster than {}, the limit{}", fmt_rate(w.max), because(w.why)),
            ),
            Some(r) if r >= w.min as f64 && r >= 1.0 => Ok(r.round() as u64),
            _ => self.err(
                v.span(),
                format!("`{key}` = {shown} is not a positive rate; write e.g. \"100Mbit\", \"1.5Gbit\" or \"128kbit\""),
            ),
        }
    }

    /// A size within `w`, bytes; `example` is how the key is written.
    pub fn bytes(
        &self,
        v: &Spanned<String>,
        key: &str,
        w: &Within<u64>,
        example: &str,
    ) -> Result<u64, ScenarioError> {
        let shown = quoted(v.get_ref());
        match size_bytes(v.get_ref()) {
            None => self.err(
                v.span(),
                format!("`{key}` = {shown} is not a size; write e.g. {example}"),
            ),
            Some(b) if b > w.max as f64 => self.err(
                v.span(),
                format!(
                    "`{key}` = {shown} is larger than {}, the limit{}",
                    fmt_bytes(w.max),
                    because(w.why)
                ),
            ),
            Some(b) if b < w.min.max(1) as f64 => self.err(
                v.span(),
                format!(
                    "`{key}` = {shown} is smaller than {}, the limit{}",
                    fmt_bytes(w.min.max(1)),
                    // The reason is the upper end's, unless the lower end
                    // is more than a byte.
                    if w.min > 1 {
                        because(w.why)
                    } else {
                        String::new()
                    }
                ),
            ),
            Some(b) => Ok(b.round() as u64),
        }
    }

    /// An algorithm spec (`cubic:hystart=off`). Checked for length and
    /// control characters first: the algorithms' own errors quote the
    /// spec, and a message must stay one short line.
    pub fn algorithm(&self, v: &Spanned<String>, key: &str) -> Result<Algorithm, ScenarioError> {
        let spec = v.get_ref();
        if spec.chars().count() > MAX_SPEC_CHARS || spec.chars().any(|c| c.is_control()) {
            return self.err(
                v.span(),
                format!(
                    "`{key}` = {} is not an algorithm spec (at most {MAX_SPEC_CHARS} characters, no control characters); write e.g. \"cubic\" or \"cubic:hystart=off\"",
                    quoted(spec)
                ),
            );
        }
        spec.parse()
            .or_else(|e| self.err(v.span(), format!("`{key}`: {e}")))
    }

    /// An integer from `lo` to `hi`.
    pub fn int(&self, v: &Spanned<i64>, key: &str, lo: i64, hi: i64) -> Result<i64, ScenarioError> {
        self.int_within(
            v,
            key,
            &Within {
                min: lo,
                max: hi,
                why: "",
            },
        )
    }

    /// An integer within `w`.
    pub fn int_within(
        &self,
        v: &Spanned<i64>,
        key: &str,
        w: &Within<i64>,
    ) -> Result<i64, ScenarioError> {
        let x = *v.get_ref();
        if x < w.min || x > w.max {
            return self.err(
                v.span(),
                format!(
                    "`{key}` = {x} is out of range; it must be from {} to {}{}",
                    w.min,
                    w.max,
                    because(w.why)
                ),
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

    #[test]
    fn exponents_are_numbers_and_nothing_saturates() {
        // "1e12s" and "1000000000000s" are the same value, read alike.
        assert_eq!(parse_duration("1e3ms"), Some(SEC));
        assert_eq!(parse_duration("1e12s"), parse_duration("1000000000000s"));
        // Beyond 2^64 ns: not a value, rather than u64::MAX.
        assert_eq!(parse_duration("1e12min"), None);
        assert_eq!(parse_bytes("1e30GB"), None);
        for s in [
            "NaNs", "infs", "inf", "s", "", "1", "1.5.3s", "5m3s", "0x10s", "1 e3s",
        ] {
            assert_eq!(parse_duration(s), None, "{s}");
        }
        // A multi-byte character before the unit does not split a char.
        assert_eq!(parse_duration("5€s"), None);
        assert_eq!(fmt_duration(86_400 * SEC), "86400s");
        assert_eq!(fmt_duration(US), "1us");
        assert_eq!(fmt_rate(1_000_000_000_000), "1000Gbit");
        assert_eq!(fmt_bytes(65_535 << 14), "1073725440B");
        assert_eq!(fmt_bytes(1 << 20), "1MiB");
    }
}
