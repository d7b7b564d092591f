//! A link's `queue` value: a FIFO sized in packets (`84`), bytes
//! (`"64KB"`) or bandwidth-delay products (`"1.5bdp"`), or an AQM table
//! (`{ kind = "codel" | "fq_codel" | "red", ... }`) with Linux's defaults.

use toml::Spanned as S;

use super::limits::{self, MAX_PACKETS, MAX_QUEUE_BYTES};
use super::units::{fmt_bytes, parse_bytes, parse_duration, parse_percent_ppm, Source};
use super::wording::{quoted, show, show_value};
use super::ScenarioError;
use crate::time::{Time, MS};
use kleinrock_link::codel::CodelParams;
use kleinrock_link::config::QueueConfig;
use kleinrock_link::queue::Limit;
use kleinrock_link::red::RedParams;

/// What a queue is sized against.
pub(super) struct QueueSize {
    /// The link's bandwidth-delay product, in data packets (at least 1).
    pub bdp: u64,
    /// A data packet on the wire: the smallest byte limit.
    pub packet_bytes: u32,
    /// A mahimahi trace link, which takes only a FIFO for now.
    pub trace_link: bool,
}

/// The queue `q` describes; a FIFO comes without ECN marking, which the
/// link adds.
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
    let too_many = |what: String| {
        src.err(
            q.span(),
            format!(
                "`queue` = {what} more than {MAX_PACKETS} packets, the limit ({})",
                limits::QUEUE_PACKETS.why
            ),
        )
    };
    let limit = match q.get_ref() {
        toml::Value::Integer(n) if *n < 1 => {
            return bad(&format!("= {n} is smaller than one packet"))
        }
        toml::Value::Integer(n) if *n as u64 > MAX_PACKETS => return too_many(format!("{n} is")),
        toml::Value::Integer(n) => Limit::Packets(*n as u32),
        toml::Value::String(s) if s.ends_with("bdp") => {
            match s.trim_end_matches("bdp").trim().parse::<f64>() {
                Ok(x) if x > 0.0 && x.is_finite() => {
                    let packets = (bdp as f64 * x).round();
                    if packets > MAX_PACKETS as f64 {
                        return too_many(format!(
                            "{} is {packets:.0} packets at a BDP of {bdp},",
                            quoted(s)
                        ));
                    }
                    Limit::Packets((packets as u32).max(1))
                }
                _ => {
                    return bad(&format!(
                        "= {} is not a positive multiple of the BDP",
                        quoted(s)
                    ))
                }
            }
        }
        toml::Value::String(s) => match parse_bytes(s) {
            Some(b) if b > MAX_QUEUE_BYTES => {
                return bad(&format!(
                    "= {} is larger than {}, the limit ({})",
                    quoted(s),
                    fmt_bytes(MAX_QUEUE_BYTES),
                    limits::QUEUE_PACKETS.why
                ))
            }
            Some(b) if b >= pkt as u64 => Limit::Bytes(b),
            Some(_) => {
                return bad(&format!(
                    "= {} is smaller than one {pkt}-byte packet",
                    quoted(s)
                ))
            }
            None => return bad(&format!("= {} is not a size", quoted(s))),
        },
        toml::Value::Table(_) if size.trace_link => {
            return bad("is an AQM, but a trace link supports only a FIFO for now")
        }
        toml::Value::Table(t) => return aqm(src, q.span(), t, bdp),
        other => return bad(&format!("= {} is not a queue size", show_value(other))),
    };
    Ok(QueueConfig::Fifo {
        limit,
        mark_at: None,
    })
}

/// `queue = { kind = "codel" | "fq_codel" | "red", ... }`.
fn aqm(
    src: &Source,
    span: std::ops::Range<usize>,
    t: &toml::Table,
    bdp: u64,
) -> Result<QueueConfig, ScenarioError> {
    let kind = match t.get("kind") {
        Some(toml::Value::String(k)) => k.as_str(),
        Some(other) => {
            return src.err(
                span,
                format!("queue `kind` = {} is not a queue; valid kinds are codel, fq_codel, red (a FIFO is written as a size)", show_value(other)),
            )
        }
        None => {
            return src.err(
                span,
                "a queue table needs `kind`; valid kinds are codel, fq_codel, red (a FIFO is written as a size)".into(),
            )
        }
    };
    let allowed: &[&str] = match kind {
        "codel" | "fq_codel" => &["kind", "target", "interval", "limit", "ecn"],
        "red" => &["kind", "min", "max", "probability", "weight", "limit", "ecn"],
        _ => {
            return src.err(
                span,
                format!("queue `kind` = {} is not a queue; valid kinds are codel, fq_codel, red (a FIFO is written as a size)", quoted(kind)),
            )
        }
    };
    if let Some(k) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
        return src.err(
            span,
            format!(
                "unknown key `{}` in a {kind} queue; valid keys are {}",
                show(k),
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
    /// `k`'s value, as a message echoes it.
    fn shown(v: &toml::Value) -> String {
        show_value(v)
    }

    fn dur(&self, k: &str, default: Time) -> Result<Time, ScenarioError> {
        let w = &limits::AQM_TIME;
        match self.t.get(k) {
            None => Ok(default),
            Some(v) => match v.as_str().and_then(parse_duration) {
                Some(d) if d > w.max => self.src.err(
                    self.span.clone(),
                    format!(
                        "`{k}` = {} is longer than {}, the limit ({})",
                        Self::shown(v),
                        super::units::fmt_duration(w.max),
                        w.why
                    ),
                ),
                Some(d) if d > 0 => Ok(d),
                _ => self.src.err(
                    self.span.clone(),
                    format!(
                        "`{k}` = {} is not a positive duration; write e.g. \"5ms\"",
                        Self::shown(v)
                    ),
                ),
            },
        }
    }

    fn count(&self, k: &str, default: u32) -> Result<u32, ScenarioError> {
        match self.t.get(k) {
            None => Ok(default),
            Some(toml::Value::Integer(n)) if *n >= 1 && *n as u64 <= MAX_PACKETS => Ok(*n as u32),
            Some(v) => self.src.err(
                self.span.clone(),
                format!(
                    "`{k}` = {} is not a packet count from 1 to {MAX_PACKETS} ({})",
                    Self::shown(v),
                    limits::QUEUE_PACKETS.why
                ),
            ),
        }
    }

    fn flag(&self, k: &str, default: bool) -> Result<bool, ScenarioError> {
        match self.t.get(k) {
            None => Ok(default),
            Some(toml::Value::Boolean(b)) => Ok(*b),
            Some(v) => self.src.err(
                self.span.clone(),
                format!("`{k}` = {} is not true or false", Self::shown(v)),
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
    // Defaults from the BDP, within the limit on packets.
    let of_bdp = |x: u64| x.min(MAX_PACKETS) as u32;
    let min = k.count("min", of_bdp((bdp / 4).max(1)))? as f64;
    let max = k.count("max", of_bdp((bdp * 3 / 4).max(3)))? as f64;
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
                    format!(
                        "`probability` = {} is not a percentage above 0, e.g. \"10%\"",
                        AqmKeys::shown(v)
                    ),
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
                format!("`weight` = {} is not a weight in (0, 1]", AqmKeys::shown(v)),
            )
        }
    };
    let limit = k.count("limit", of_bdp((bdp * 2).max(max as u64 + 1)))?;
    if limit as f64 <= max {
        return k.src.err(
            k.span.clone(),
            format!("RED's `limit` ({limit}) must be above its `max` ({max}): a queue that tail-drops first never reaches RED's full probability"),
        );
    }
    Ok(QueueConfig::Red(RedParams {
        limit,
        min,
        max,
        max_p,
        wq,
        ecn: k.flag("ecn", false)?,
    }))
}
