//! A link's `queue` value: a FIFO sized in packets (`84`), bytes
//! (`"64KB"`) or bandwidth-delay products (`"1.5bdp"`), or an AQM table
//! (`{ kind = "codel" | "fq_codel" | "red", ... }`) with Linux's defaults.

use toml::Spanned as S;

use super::units::{parse_bytes, parse_duration, parse_percent_ppm, Source};
use super::ScenarioError;
use crate::time::{Time, MS};
use crate::world::QueueConfig;
use kleinrock_link::codel::CodelParams;
use kleinrock_link::queue::Limit;
use kleinrock_link::red::RedParams;

/// What a queue is sized against.
pub(super) struct QueueSize {
    /// The link's bandwidth-delay product, in data packets (at least 1).
    pub bdp: u64,
    /// A data packet on the wire: the smallest byte limit.
    pub packet_bytes: u32,
    /// The link's `ecn_mark_at`, for a FIFO.
    pub mark_at: Option<u32>,
    /// A mahimahi trace link, which takes only a FIFO for now.
    pub trace_link: bool,
}

pub(super) fn queue(
    src: &Source,
    q: &S<toml::Value>,
    size: &QueueSize,
) -> Result<QueueConfig, ScenarioError> {
    let (bdp, pkt) = (size.bdp, size.packet_bytes);
    let bad = |why: &str| {
        src.err(
            q.span(),
            format!("`queue` {why}; write a packet count (84), a size (\"64KB\"), a multiple of the BDP (\"1.5bdp\") or a table such as {{ kind = \"codel\" }}"),
        )
    };
    let limit = match q.get_ref() {
        toml::Value::Integer(n) if *n >= 1 && *n <= u32::MAX as i64 => Limit::Packets(*n as u32),
        toml::Value::Integer(n) => return bad(&format!("= {n} is smaller than one packet")),
        toml::Value::String(s) if s.ends_with("bdp") => {
            match s.trim_end_matches("bdp").trim().parse::<f64>() {
                Ok(x) if x > 0.0 && x.is_finite() => {
                    Limit::Packets(((bdp as f64 * x).round() as u32).max(1))
                }
                _ => return bad(&format!("= \"{s}\" is not a positive multiple of the BDP")),
            }
        }
        toml::Value::String(s) => match parse_bytes(s) {
            Some(b) if b >= pkt as u64 => Limit::Bytes(b),
            Some(_) => return bad(&format!("= \"{s}\" is smaller than one {pkt}-byte packet")),
            None => return bad(&format!("= \"{s}\" is not a size")),
        },
        toml::Value::Table(_) if size.trace_link => {
            return bad("is an AQM, but a trace link supports only a FIFO for now")
        }
        toml::Value::Table(t) => return aqm(src, q.span(), t, bdp),
        other => return bad(&format!("= {other} is not a queue size")),
    };
    Ok(QueueConfig::Fifo {
        limit,
        mark_at: size.mark_at,
    })
}

/// `queue = { kind = "codel" | "fq_codel" | "red", ... }`.
fn aqm(
    src: &Source,
    span: std::ops::Range<usize>,
    t: &toml::Table,
    bdp: u64,
) -> Result<QueueConfig, ScenarioError> {
    let kind = t.get("kind").and_then(|k| k.as_str()).unwrap_or("");
    let allowed: &[&str] = match kind {
        "codel" | "fq_codel" => &["kind", "target", "interval", "limit", "ecn"],
        "red" => &["kind", "min", "max", "probability", "weight", "limit", "ecn"],
        _ => {
            return src.err(
                span,
                format!("queue `kind` = \"{kind}\" is not a queue; valid kinds are codel, fq_codel, red (a FIFO is written as a size)"),
            )
        }
    };
    if let Some(k) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
        return src.err(
            span,
            format!(
                "unknown key `{k}` in a {kind} queue; valid keys are {}",
                allowed.join(", ")
            ),
        );
    }
    let keys = AqmKeys { src, span, t };
    if kind == "red" {
        red(&keys, bdp)
    } else {
        codel(&keys, kind == "fq_codel")
    }
}

/// An AQM table's keys, each checked against its kind of value.
struct AqmKeys<'a> {
    src: &'a Source<'a>,
    span: std::ops::Range<usize>,
    t: &'a toml::Table,
}

impl AqmKeys<'_> {
    fn dur(&self, k: &str, default: Time) -> Result<Time, ScenarioError> {
        match self.t.get(k) {
            None => Ok(default),
            Some(v) => match v.as_str().and_then(parse_duration) {
                Some(d) if d > 0 => Ok(d),
                _ => self.src.err(
                    self.span.clone(),
                    format!("`{k}` = {v} is not a positive duration; write e.g. \"5ms\""),
                ),
            },
        }
    }

    fn count(&self, k: &str, default: u32) -> Result<u32, ScenarioError> {
        match self.t.get(k) {
            None => Ok(default),
            Some(toml::Value::Integer(n)) if *n >= 1 && *n <= u32::MAX as i64 => Ok(*n as u32),
            Some(v) => self.src.err(
                self.span.clone(),
                format!("`{k}` = {v} is not a packet count of at least 1"),
            ),
        }
    }

    fn flag(&self, k: &str, default: bool) -> Result<bool, ScenarioError> {
        match self.t.get(k) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => self.src.err(
                self.span.clone(),
                format!("`{k}` = {v} is not true or false"),
            ),
        }
    }
}

fn codel(k: &AqmKeys, fq: bool) -> Result<QueueConfig, ScenarioError> {
    let p = CodelParams {
        target: k.dur("target", 5 * MS)?,
        interval: k.dur("interval", 100 * MS)?,
        limit: k.count("limit", if fq { 10_240 } else { 1000 })?,
        // Linux: fq_codel marks by default, codel does not.
        ecn: k.flag("ecn", fq)?,
    };
    Ok(if fq {
        QueueConfig::FqCodel(p)
    } else {
        QueueConfig::Codel(p)
    })
}

fn red(k: &AqmKeys, bdp: u64) -> Result<QueueConfig, ScenarioError> {
    let min = k.count("min", (bdp / 4).max(1) as u32)? as f64;
    let max = k.count("max", (bdp * 3 / 4).max(3) as u32)? as f64;
    if max <= min {
        return k.src.err(
            k.span.clone(),
            format!("RED needs `max` ({max}) above `min` ({min})"),
        );
    }
    let max_p = match k.t.get("probability") {
        None => 0.1,
        Some(v) => match v.as_str().and_then(parse_percent_ppm) {
            Some(p) if p > 0 => p as f64 / 1e6,
            _ => {
                return k.src.err(
                    k.span.clone(),
                    format!("`probability` = {v} is not a percentage above 0, e.g. \"10%\""),
                )
            }
        },
    };
    let wq = match k.t.get("weight") {
        None => 0.002,
        Some(toml::Value::Float(w)) if *w > 0.0 && *w <= 1.0 => *w,
        Some(v) => {
            return k.src.err(
                k.span.clone(),
                format!("`weight` = {v} is not a weight in (0, 1]"),
            )
        }
    };
    Ok(QueueConfig::Red(RedParams {
        limit: k.count("limit", (bdp * 2).max(max as u64 + 1) as u32)?,
        min,
        max,
        max_p,
        wq,
        ecn: k.flag("ecn", false)?,
    }))
}
