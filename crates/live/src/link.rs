//! The scenario's link on the lab's, and the link's counters read back:
//! the one place where the lab's link emulation meets the scenario format.
//!
//! Today's lab (crates/lab) carries, per direction, a delay, iptables'
//! random loss and the delay line's bottleneck: a FIFO in packets with
//! DCTCP step marking, `kleinrock-link`'s, the simulator's. So a
//! scenario's FIFO in packets, its `ecn_mark_at`, its Bernoulli loss and
//! its delays run here as written, and the rest of `[link]` is refused in
//! one sentence naming the key: CoDel, FQ-CoDel and RED queues, byte
//! limits, Gilbert-Elliott loss, jitter, trace links.
//!
//! TODO(link emulation): when the delay line runs crates/link's queues,
//! loss models, jitter and traces (`LabConfig` per direction taking the
//! scenario's `QueueConfig`, `LossModel`, rate or trace, delay and jitter,
//! and `LabConfig.flows` the per-flow delays keyed by protocol and
//! server-side port, [`crate::plan::tcp_port`] and friends), [`lab_config`]
//! passes them through instead of refusing, and [`Counters`] reads the
//! lab's per-direction queue statistics instead of leaving the queue's
//! length at zero.

use std::time::Duration;

use kleinrock_lab::{Bottleneck, DelayStats, Direction, Lab, LabConfig, Link};
use kleinrock_sim::link::LinkStats;
use kleinrock_sim::results::QueueSample;
use kleinrock_sim::time::Time;
use kleinrock_sim::world::{data_packet_bytes, LinkConfig, QueueConfig};
use kleinrock_sim::{Config, Limit, LossModel};

use crate::Error;

/// The bytes a veth adds to an IP packet, which the lab's bottleneck
/// serves (as tbf does) and the simulator's link does not.
const ETHERNET_HEADER: u64 = 14;

/// The delay line's slots per direction (crates/lab's `DELAY_LINE_SLOTS`):
/// every packet queued or in flight through the router holds one.
const SLOTS: u64 = 16384;

/// The two directions' names in messages and in queues.csv: the
/// simulator's, "up" from sender to receiver.
pub const NAMES: [&str; 2] = ["up", "down"];

/// The lab for `cfg`, whose every flow, ping and UDP flow has the base
/// RTT `rtt`: each direction's delay is half of it (the simulator's split:
/// the rounding goes to the way back) plus the link's own `delay`.
pub fn lab_config(cfg: &Config, rtt: Time) -> Result<LabConfig, Error> {
    let halves = [rtt / 2, rtt - rtt / 2];
    let [up, down] = [0, 1].map(|i| {
        let delay = halves[i] + cfg.links[i].delay;
        direction(&cfg.links[i], NAMES[i], delay, cfg.mss)
    });
    Ok(LabConfig {
        forward: up?,
        reverse: down?,
        ..LabConfig::default()
    })
}

/// One direction of the link on the lab's.
fn direction(l: &LinkConfig, name: &str, delay: Time, mss: u32) -> Result<Link, Error> {
    let cannot = |key: &str, what: &str| {
        Err(Error::refused(format!(
            "the lab cannot honour `{key}` ({what} on the {name} link) until its delay line runs crates/link's models; run this scenario with `kleinrock sim`, or give the lab a FIFO in packets, Bernoulli loss and no jitter or trace"
        )))
    };
    if l.trace.is_some() {
        return cannot("trace", "a mahimahi trace");
    }
    let (limit, mark_at) = match &l.queue {
        QueueConfig::Fifo {
            limit: Limit::Packets(n),
            mark_at,
        } => (*n, *mark_at),
        QueueConfig::Fifo { .. } => return cannot("queue", "a FIFO limited in bytes"),
        QueueConfig::Codel(_) => return cannot("queue", "CoDel"),
        QueueConfig::FqCodel(_) => return cannot("queue", "FQ-CoDel"),
        QueueConfig::Red(_) => return cannot("queue", "RED"),
    };
    let loss = match l.loss {
        LossModel::None => 0.0,
        LossModel::Bernoulli { ppm } => ppm as f64 / 1e6,
        _ => return cannot("loss", "Gilbert-Elliott loss"),
    };
    // The lab's bottleneck serves a frame (the IP packet and veth's 14
    // bytes) where the simulator's link serves the IP packet: at this
    // rate a full-sized data packet takes the simulator's time.
    let packet = data_packet_bytes(mss) as u64;
    let rate_bps = ((l.rate_bps as u128 * (packet + ETHERNET_HEADER) as u128)
        .div_ceil(packet as u128))
    .min(u64::MAX as u128) as u64;
    // Packets the delay line holds at once: the queue, and a full link's
    // worth in flight over the delay.
    let frame_bits = (packet + ETHERNET_HEADER) * 8;
    let in_flight = (rate_bps as u128 * delay as u128 / (1_000_000_000 * frame_bits as u128))
        .min(u64::MAX as u128) as u64;
    if limit as u64 + in_flight + 1 > SLOTS {
        return Err(Error::refused(format!(
            "the lab cannot honour `queue` = {limit} with `rate` and the delays of the {name} link: the queue and {in_flight} packets in flight need more than the delay line's {SLOTS} slots per direction; use a shorter queue, a lower rate or a shorter RTT"
        )));
    }
    Ok(Link {
        delay: Duration::from_nanos(delay),
        rate_bps: None,
        loss,
        bottleneck: Some(Bottleneck {
            rate_bps,
            limit,
            ecn_threshold: mark_at,
        }),
        ..Link::default()
    })
}

/// The link's counters since the run's start: the delay line's, and the
/// router's interfaces' (what crossed the link).
pub struct Counters {
    delay: [DelayStats; 2],
    sent: [(u64, u64); 2],
}

/// The router's veth toward each direction's destination: what it sends
/// is what that direction carried.
const EGRESS: [&str; 2] = [
    kleinrock_lab::ROUTER_RECEIVER_SIDE_IF,
    kleinrock_lab::ROUTER_SENDER_SIDE_IF,
];

impl Counters {
    /// The counters now, the run's baseline.
    pub fn read(lab: &Lab) -> Counters {
        Counters {
            delay: [Direction::Forward, Direction::Reverse].map(|d| lab.delay_stats(d)),
            sent: sent(lab),
        }
    }

    /// One queues.csv row per direction, at `t` seconds: the drops and
    /// marks since `last`, which becomes now.
    ///
    /// TODO(link emulation): the queue's length, bytes and delay at the
    /// sample come from the lab's queue statistics; today's delay line does
    /// not report them, so they are 0 (docs/LAB.md).
    pub fn sample(lab: &Lab, t: f64, last: &mut [DelayStats; 2]) -> [QueueSample; 2] {
        [0, 1].map(|i| {
            let now = lab.delay_stats([Direction::Forward, Direction::Reverse][i]);
            let s = QueueSample {
                t,
                link: NAMES[i],
                packets: 0,
                bytes: 0,
                delay_us: 0,
                drops: (now.queue_drops + now.overflow_drops)
                    - (last[i].queue_drops + last[i].overflow_drops),
                marks: now.ce_marked - last[i].ce_marked,
            };
            last[i] = now;
            s
        })
    }

    /// The delay line's counters, to start [`Counters::sample`] from.
    pub fn delay(&self) -> [DelayStats; 2] {
        self.delay
    }

    /// Each direction's totals since `self` was read. `tx_bytes` counts IP
    /// packets, as the simulator's link does.
    ///
    /// TODO(link emulation): `loss_drops` comes from the delay line's loss
    /// model; iptables' random loss is not counted, so it is 0.
    pub fn since(&self, lab: &Lab) -> [LinkStats; 2] {
        let now = Counters::read(lab);
        [0, 1].map(|i| {
            let (d, d0) = (now.delay[i], self.delay[i]);
            let packets = now.sent[i].1.saturating_sub(self.sent[i].1);
            let frames = now.sent[i].0.saturating_sub(self.sent[i].0);
            LinkStats {
                tx_packets: packets,
                tx_bytes: frames.saturating_sub(packets * ETHERNET_HEADER),
                queue_drops: (d.queue_drops + d.overflow_drops)
                    - (d0.queue_drops + d0.overflow_drops),
                loss_drops: 0,
                marks: d.ce_marked - d0.ce_marked,
            }
        })
    }
}

/// (bytes, packets) each egress veth has sent, from the router's
/// /proc/net/dev (its own: a thread in the namespace reads
/// /proc/thread-self/net).
fn sent(lab: &Lab) -> [(u64, u64); 2] {
    let text = lab
        .router()
        .run(|| std::fs::read_to_string("/proc/thread-self/net/dev"))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    EGRESS.map(|dev| tx_of(&text, dev).unwrap_or((0, 0)))
}

/// An interface's transmitted (bytes, packets) in /proc/net/dev's format:
/// `name: ` then 8 receive counters, then bytes and packets sent.
fn tx_of(text: &str, dev: &str) -> Option<(u64, u64)> {
    let line = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(dev)?.strip_prefix(':'))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    Some((*v.get(8)?, *v.get(9)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(link: &str) -> Config {
        let text = format!(
            "duration = \"2s\"\n[link]\nrate = \"10Mbit\"\n{link}\n[[flow]]\ncc = \"cubic\"\nrtt = \"40ms\"\n"
        );
        kleinrock_sim::scenario::parse(&text, "l.toml", None).unwrap()
    }

    #[test]
    fn a_fifo_link_becomes_the_delay_lines_bottleneck() {
        let cfg = config("queue = 84\necn_mark_at = 20\nloss = \"1%\"\ndelay = \"5ms\"");
        let lab = lab_config(&cfg, 40_000_000).unwrap();
        let b = lab.forward.bottleneck.unwrap();
        assert_eq!((b.limit, b.ecn_threshold), (84, Some(20)));
        // 10 Mbit/s of 1500-byte packets is 10 x 1514 / 1500 of frames.
        assert_eq!(b.rate_bps, 10_093_334);
        assert_eq!(lab.forward.delay, Duration::from_millis(25));
        assert_eq!(lab.reverse.delay, Duration::from_millis(25));
        assert_eq!(lab.forward.loss, 0.01);
        assert_eq!(lab.forward.rate_bps, None);
    }

    #[test]
    fn what_the_lab_cannot_do_is_refused_naming_the_key() {
        for (link, key) in [
            (
                "queue = { kind = \"codel\" }",
                "`queue` (CoDel on the up link)",
            ),
            (
                "queue = \"64KB\"",
                "`queue` (a FIFO limited in bytes on the up link)",
            ),
            (
                "loss = { p = \"1%\", r = \"10%\" }",
                "`loss` (Gilbert-Elliott loss on the up link)",
            ),
            (
                "queue = 16000\n[link.down]\nrate = \"10Gbit\"",
                "`queue` = 16000",
            ),
        ] {
            let e = lab_config(&config(link), 40_000_000).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("the lab cannot honour {key}")),
                "{e}"
            );
            assert_eq!(e.kind(), crate::ErrorKind::Refused);
        }
    }

    #[test]
    fn proc_net_dev_gives_what_an_interface_sent() {
        let text = "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets\n    lo: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\nrtr-rcv: 100 2 0 0 0 0 0 0 3028 2 0 0 0 0 0 0\n";
        assert_eq!(tx_of(text, "rtr-rcv"), Some((3028, 2)));
        assert_eq!(tx_of(text, "rtr-snd"), None);
    }
}
