//! The `[link]` table: the bottleneck's rate or mahimahi trace, delay,
//! queue, loss and ECN marking, for both directions, with `[link.up]` and
//! `[link.down]` overriding per direction; and the jitter after it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned as S;

use super::limits::{self, MAX_FLOW_SEGMENTS, MAX_PACKETS, MAX_TRACE_BYTES};
use super::queue::{queue, QueueSize};
use super::units::{fmt_duration, parse_percent_ppm, read_text, Source};
use super::wording::{name, show, show_value};
use super::ScenarioError;
use crate::packet::HEADER_BYTES;
use crate::time::{serialization, Time};
use crate::world::{bdp_packets, data_packet_bytes};
use kleinrock_link::config::{LinkConfig, QueueConfig};
use kleinrock_link::loss::LossModel;
use kleinrock_link::mahimahi::Trace;
use kleinrock_link::queue::Limit;

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkDir {
    rate: Option<S<String>>,
    trace: Option<S<String>>,
    delay: Option<S<String>>,
    queue: Option<S<toml::Value>>,
    loss: Option<S<toml::Value>>,
    ecn_mark_at: Option<S<i64>>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct LinkSection {
    rate: Option<S<String>>,
    trace: Option<S<String>>,
    delay: Option<S<String>>,
    queue: Option<S<toml::Value>>,
    loss: Option<S<toml::Value>>,
    ecn_mark_at: Option<S<i64>>,
    jitter: Option<S<String>>,
    up: Option<LinkDir>,
    down: Option<LinkDir>,
}

/// What the links are sized and checked against: the traffic's paths.
pub(super) struct Paths {
    /// The shortest and the longest base RTT of any flow, ping or UDP
    /// flow: the first sizes BDP queues, the second bounds what the links
    /// keep in flight.
    pub min_rtt: Time,
    pub max_rtt: Time,
    pub duration: Time,
    /// The smallest UDP datagram, if any (else a pure ACK is the smallest
    /// packet a queue holds).
    pub smallest_packet: Option<u32>,
    /// Do TCP flows send data over [up, down]?
    pub tcp_data: [bool; 2],
}

/// Both directions' links ([up, down]), each with the jitter after it
/// (one value for both); `dir` resolves relative trace paths.
pub(super) fn links(
    src: &Source,
    l: &LinkSection,
    mss: u32,
    paths: &Paths,
    dir: Option<&Path>,
) -> Result<[LinkConfig; 2], ScenarioError> {
    let both = LinkDir {
        rate: l.rate.clone(),
        trace: l.trace.clone(),
        delay: l.delay.clone(),
        queue: l.queue.clone(),
        loss: l.loss.clone(),
        ecn_mark_at: l.ecn_mark_at.clone(),
    };
    one_kind_of_link(src, &both, "link")?;
    for (d, section) in [(&l.up, "link.up"), (&l.down, "link.down")] {
        if let Some(d) = d {
            one_kind_of_link(src, d, section)?;
        }
    }
    let dirs = [
        (merge(&both, l.up.as_ref()), "link.up"),
        (merge(&both, l.down.as_ref()), "link.down"),
    ];
    let mut links = [
        link(src, &dirs[0].0, dirs[0].1, mss, paths, dir)?,
        link(src, &dirs[1].0, dirs[1].1, mss, paths, dir)?,
    ];
    let longest = paths.max_rtt + links[0].delay + links[1].delay;
    for (i, (d, section)) in dirs.iter().enumerate() {
        let fits = Fits {
            section,
            rate_bps: links[i].rate_bps,
            mss,
        };
        fits.in_flight(src, d, longest)?;
        if paths.tcp_data[i] {
            fits.segments(src, d, paths.duration)?;
        }
    }
    let jitter = match &l.jitter {
        Some(j) if j.get_ref() != "auto" => src.duration(j, "jitter", &limits::LINK_DELAY)?,
        _ => serialization(
            data_packet_bytes(mss),
            links[0].rate_bps.min(links[1].rate_bps),
        ),
    };
    for l in &mut links {
        l.jitter = jitter;
    }
    Ok(links)
}

/// A table gives a link either a `rate` or a mahimahi `trace`, whose rate
/// is its own: both is a contradiction (the trace used to win silently).
fn one_kind_of_link(src: &Source, d: &LinkDir, section: &str) -> Result<(), ScenarioError> {
    match (&d.rate, &d.trace) {
        (Some(r), Some(_)) => src.err(
            r.span(),
            format!("[{section}] sets both `rate` and `trace`; a trace link's rate is the trace's own (its mean stands for `rate` in BDPs and reports), so remove one of them"),
        ),
        _ => Ok(()),
    }
}

/// What a link carries must fit the simulator's counts.
struct Fits<'a> {
    section: &'a str,
    rate_bps: u64,
    mss: u32,
}

impl Fits<'_> {
    /// The key that set the link's rate, for errors: `rate` or `trace`.
    fn rate_key(d: &LinkDir) -> (std::ops::Range<usize>, &'static str) {
        match (&d.rate, &d.trace) {
            (_, Some(t)) => (t.span(), "trace"),
            (Some(r), None) => (r.span(), "rate"),
            (None, None) => (0..0, "rate"),
        }
    }

    /// The bandwidth-delay product over the longest path (`rtt` plus the
    /// links' delays) is at most [`MAX_PACKETS`].
    fn in_flight(&self, src: &Source, d: &LinkDir, longest: Time) -> Result<(), ScenarioError> {
        let packets = bdp_packets(self.rate_bps, longest, self.mss);
        if packets <= MAX_PACKETS {
            return Ok(());
        }
        let (span, key) = Self::rate_key(d);
        src.err(
            span,
            format!(
                "[{}]'s `{key}` with the longest path's RTT, {}, keeps {packets} packets in flight (the bandwidth-delay product), more than {MAX_PACKETS}, the limit (the simulator keeps every packet in flight in memory); lower the rate or the RTTs",
                self.section,
                fmt_duration(longest),
            ),
        )
    }

    /// A flow over this link can send fewer than [`MAX_FLOW_SEGMENTS`]
    /// segments in `duration`.
    fn segments(&self, src: &Source, d: &LinkDir, duration: Time) -> Result<(), ScenarioError> {
        let segments = bdp_packets(self.rate_bps, duration, self.mss);
        if segments < MAX_FLOW_SEGMENTS {
            return Ok(());
        }
        let (span, key) = Self::rate_key(d);
        src.err(
            span,
            format!(
                "[{}]'s `{key}` lets a flow send {segments} segments in {}, and the simulated TCP numbers segments in 32 bits (compared without wrap-around), so a flow must send fewer than {MAX_FLOW_SEGMENTS}; make the run shorter",
                self.section,
                fmt_duration(duration),
            ),
        )
    }
}

/// `[link]` with one direction's table over it: a direction that names a
/// rate or a trace replaces both.
fn merge(both: &LinkDir, dir: Option<&LinkDir>) -> LinkDir {
    let mut m = both.clone();
    if let Some(d) = dir {
        if d.rate.is_some() || d.trace.is_some() {
            m.rate = d.rate.clone();
            m.trace = d.trace.clone();
        }
        if d.queue.is_some() {
            m.queue = d.queue.clone();
        }
        if d.delay.is_some() {
            m.delay = d.delay.clone();
        }
        if d.loss.is_some() {
            m.loss = d.loss.clone();
        }
        if d.ecn_mark_at.is_some() {
            m.ecn_mark_at = d.ecn_mark_at.clone();
        }
    }
    m
}

fn link(
    src: &Source,
    d: &LinkDir,
    section: &str,
    mss: u32,
    paths: &Paths,
    dir: Option<&Path>,
) -> Result<LinkConfig, ScenarioError> {
    let trace = trace(src, d, dir)?;
    let rate_bps = rate(src, d, section, trace.as_ref())?;
    let delay = match &d.delay {
        Some(v) => src.duration(v, "delay", &limits::LINK_DELAY)?,
        None => 0,
    };
    let bdp = bdp_packets(rate_bps, paths.min_rtt, mss).max(1);
    let mark_at = match &d.ecn_mark_at {
        Some(k) => Some(src.int_within(k, "ecn_mark_at", &limits::QUEUE_PACKETS)? as u32),
        None => None,
    };
    let queue = match &d.queue {
        None => QueueConfig::Fifo {
            limit: Limit::Packets(bdp.min(MAX_PACKETS) as u32),
            mark_at,
        },
        Some(q) => queue(
            src,
            q,
            &QueueSize {
                bdp,
                packet_bytes: data_packet_bytes(mss),
                trace_link: trace.is_some(),
            },
        )?,
    };
    if let (Some(k), Some(written)) = (&d.ecn_mark_at, mark_at) {
        let smallest = paths
            .smallest_packet
            .map_or(HEADER_BYTES, |u| u.min(HEADER_BYTES));
        marks(src, k, written, &queue, section, smallest)?;
    }
    let queue = match queue {
        QueueConfig::Fifo { limit, .. } => QueueConfig::Fifo { limit, mark_at },
        aqm => aqm,
    };
    let loss = match &d.loss {
        None => LossModel::None,
        Some(l) => loss(src, l)?,
    };
    Ok(LinkConfig {
        rate_bps,
        trace,
        delay,
        queue,
        loss,
        // Set by `links`, which knows both directions' rates.
        jitter: 0,
    })
}

/// `ecn_mark_at = K` marks in a FIFO once K packets wait: on an AQM it
/// would do nothing (the AQM marks by its own `ecn`), and a FIFO that
/// never holds K packets (`smallest`: the smallest packet's bytes) never
/// marks. Both used to be accepted and ignored.
fn marks(
    src: &Source,
    k: &S<i64>,
    mark_at: u32,
    queue: &QueueConfig,
    section: &str,
    smallest: u32,
) -> Result<(), ScenarioError> {
    let never = match queue {
        QueueConfig::Fifo {
            limit: Limit::Packets(n),
            ..
        } if mark_at >= *n => format!(
            "the queue holds at most {n} packets, so it would never mark; make it smaller than {n}"
        ),
        QueueConfig::Fifo {
            limit: Limit::Bytes(b),
            ..
        } if (mark_at as u64 + 1) * smallest as u64 > *b => format!(
            "the queue's {b} bytes never hold {mark_at} packets and one more, even of the smallest, {smallest} bytes, so it would never mark; make it smaller"
        ),
        QueueConfig::Fifo { .. } => return Ok(()),
        aqm => format!(
            "it marks in a FIFO, and [{section}]'s queue is {}, which marks by its own `ecn = true`; remove `ecn_mark_at`, or set it in the direction whose queue is a FIFO ([link.up] or [link.down])",
            match aqm {
                QueueConfig::Codel(_) => "codel",
                QueueConfig::FqCodel(_) => "fq_codel",
                _ => "red",
            }
        ),
    };
    src.err(
        k.span(),
        format!("`ecn_mark_at` = {mark_at} in [{section}]: {never}"),
    )
}

fn trace(src: &Source, d: &LinkDir, dir: Option<&Path>) -> Result<Option<Trace>, ScenarioError> {
    let Some(t) = &d.trace else {
        return Ok(None);
    };
    let p = PathBuf::from(t.get_ref());
    let p = match dir {
        Some(d) if p.is_relative() => d.join(p),
        _ => p,
    };
    let parsed = read_text(&p, "link trace", MAX_TRACE_BYTES).and_then(|text| {
        Trace::parse(&text, &name(&p.display().to_string())).map_err(|e| ScenarioError(e.0))
    });
    match parsed {
        Ok(tr) => Ok(Some(tr)),
        Err(e) => src.err(t.span(), format!("`trace`: {}", e.0)),
    }
}

/// The link's rate: a trace's mean rate stands for `rate`.
fn rate(
    src: &Source,
    d: &LinkDir,
    section: &str,
    trace: Option<&Trace>,
) -> Result<u64, ScenarioError> {
    match (&d.rate, trace) {
        (_, Some(t)) => {
            let r = t.mean_rate_bps();
            if r > limits::RATE.max {
                let span = d.trace.as_ref().map_or(0..0, |t| t.span());
                return src.err(span, format!("`trace`: the trace's mean rate, {r} bit/s, is faster than {}, the limit ({})", super::units::fmt_rate(limits::RATE.max), limits::RATE.why));
            }
            Ok(r)
        }
        (None, None) => Err(ScenarioError(format!(
            "{}: [{section}] has no `rate`; give the bottleneck's rate in [link], e.g. rate = \"100Mbit\", or a mahimahi `trace`",
            name(src.file)
        ))),
        (Some(rate), None) => src.rate(rate, "rate", &limits::RATE),
    }
}

/// `loss = "1%"` (Bernoulli) or a Gilbert-Elliott table.
fn loss(src: &Source, l: &S<toml::Value>) -> Result<LossModel, ScenarioError> {
    let pct = |v: &toml::Value, key: &str| -> Result<u32, ScenarioError> {
        match v.as_str().and_then(parse_percent_ppm) {
            Some(p) => Ok(p),
            None => src.err(
                l.span(),
                format!(
                    "`{key}` = {} is not a probability; write a percentage such as \"1%\"",
                    show_value(v)
                ),
            ),
        }
    };
    match l.get_ref() {
        toml::Value::String(_) => {
            let ppm = pct(l.get_ref(), "loss")?;
            Ok(if ppm == 0 { LossModel::None } else { LossModel::Bernoulli { ppm } })
        }
        toml::Value::Table(t) => {
            let keys = ["p", "r", "loss_bad", "loss_good"];
            if let Some(k) = t.keys().find(|k| !keys.contains(&k.as_str())) {
                return src.err(l.span(), format!("unknown key `{}` in a Gilbert-Elliott loss; valid keys are p, r, loss_bad, loss_good", show(k)));
            }
            let get = |k: &str, default: &str| -> Result<u32, ScenarioError> {
                match t.get(k) {
                    Some(v) => pct(v, k),
                    None if default.is_empty() => src.err(l.span(), format!("a Gilbert-Elliott loss needs `{k}`")),
                    None => Ok(parse_percent_ppm(default).unwrap_or(0)),
                }
            };
            Ok(LossModel::GilbertElliott {
                p_ppm: get("p", "")?,
                r_ppm: get("r", "")?,
                loss_bad_ppm: get("loss_bad", "100%")?,
                loss_good_ppm: get("loss_good", "0%")?,
                bad: false,
            })
        }
        other => src.err(
            l.span(),
            format!("`loss` = {} is not a loss; write \"1%\" or {{ p = \"0.1%\", r = \"10%\" }} for Gilbert-Elliott bursts", show_value(other)),
        ),
    }
}
