//! The `[link]` table: the bottleneck's rate or mahimahi trace, delay,
//! queue, loss and ECN marking, for both directions, with `[link.up]` and
//! `[link.down]` overriding per direction; and the jitter after it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned as S;

use super::queue::{queue, QueueSize};
use super::units::{parse_percent_ppm, parse_rate, Source};
use super::ScenarioError;
use crate::time::{serialization, Time};
use crate::world::{bdp_packets, data_packet_bytes, LinkConfig, QueueConfig};
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

/// Both directions' links ([up, down]) and the jitter after them. `min_rtt`
/// (the shortest flow's) sizes BDP queues; `dir` resolves relative trace
/// paths.
pub(super) fn links(
    src: &Source,
    l: &LinkSection,
    mss: u32,
    min_rtt: Time,
    dir: Option<&Path>,
) -> Result<([LinkConfig; 2], Time), ScenarioError> {
    let both = LinkDir {
        rate: l.rate.clone(),
        trace: l.trace.clone(),
        delay: l.delay.clone(),
        queue: l.queue.clone(),
        loss: l.loss.clone(),
        ecn_mark_at: l.ecn_mark_at.clone(),
    };
    let up = merge(&both, l.up.as_ref());
    let down = merge(&both, l.down.as_ref());
    let links = [
        link(src, &up, "link.up", mss, min_rtt, dir)?,
        link(src, &down, "link.down", mss, min_rtt, dir)?,
    ];
    let jitter = match &l.jitter {
        Some(j) if j.get_ref() != "auto" => src.duration(j, "jitter")?,
        _ => serialization(
            data_packet_bytes(mss),
            links[0].rate_bps.min(links[1].rate_bps),
        ),
    };
    Ok((links, jitter))
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
    min_rtt: Time,
    dir: Option<&Path>,
) -> Result<LinkConfig, ScenarioError> {
    let trace = trace(src, d, dir)?;
    let rate_bps = rate(src, d, section, trace.as_ref())?;
    let delay = match &d.delay {
        Some(v) => src.duration(v, "delay")?,
        None => 0,
    };
    let bdp = bdp_packets(rate_bps, min_rtt, mss).max(1);
    let mark_at = match &d.ecn_mark_at {
        Some(k) => Some(src.int(k, "ecn_mark_at", 1, u32::MAX as i64)? as u32),
        None => None,
    };
    let queue = match &d.queue {
        None => QueueConfig::Fifo {
            limit: Limit::Packets(bdp as u32),
            mark_at,
        },
        Some(q) => queue(
            src,
            q,
            &QueueSize {
                bdp,
                packet_bytes: data_packet_bytes(mss),
                mark_at,
                trace_link: trace.is_some(),
            },
        )?,
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
    })
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
    match Trace::load(&p) {
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
        (_, Some(t)) => Ok(t.mean_rate_bps()),
        (None, None) => Err(ScenarioError(format!(
            "{}: [{section}] has no `rate`; give the bottleneck's rate in [link], e.g. rate = \"100Mbit\", or a mahimahi `trace`",
            src.file
        ))),
        (Some(rate), None) => match parse_rate(rate.get_ref()) {
            Some(r) => Ok(r),
            None => src.err(
                rate.span(),
                format!("`rate` = \"{}\" is not a positive rate; write e.g. \"100Mbit\", \"1.5Gbit\" or \"128kbit\"", rate.get_ref()),
            ),
        },
    }
}

/// `loss = "1%"` (Bernoulli) or a Gilbert-Elliott table.
fn loss(src: &Source, l: &S<toml::Value>) -> Result<LossModel, ScenarioError> {
    let pct = |v: &toml::Value, key: &str| -> Result<u32, ScenarioError> {
        match v.as_str().and_then(parse_percent_ppm) {
            Some(p) => Ok(p),
            None => src.err(
                l.span(),
                format!("`{key}` = {v} is not a probability; write a percentage such as \"1%\""),
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
                return src.err(l.span(), format!("unknown key `{k}` in a Gilbert-Elliott loss; valid keys are p, r, loss_bad, loss_good"));
            }
            let get = |k: &str, default: &str| -> Result<u32, ScenarioError> {
                match t.get(k) {
                    Some(v) => pct(v, k),
                    None if default.is_empty() => src.err(l.span(), format!("a Gilbert-Elliott loss needs `{k}`")),
                    None => Ok(parse_percent_ppm(default).unwrap()),
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
            format!("`loss` = {other} is not a loss; write \"1%\" or {{ p = \"0.1%\", r = \"10%\" }} for Gilbert-Elliott bursts"),
        ),
    }
}
