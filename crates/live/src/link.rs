//! The scenario's link and paths on the lab's, and the link's counters
//! read back: the one place where the lab's link emulation meets the
//! scenario format.
//!
//! The lab's delay line runs the simulator's bottleneck (`kleinrock-link`,
//! docs/LAB.md), so each direction's [`LinkConfig`] is passed as the
//! scenario gives it: rate or mahimahi trace, queue discipline, loss
//! model, the link's own delay and jitter. The simulator's dumbbell gives
//! every flow, ping and UDP flow pipes of its own after the bottlenecks
//! (`crates/sim/src/world.rs`): half of its `rtt` after the bottleneck its
//! data crosses, the rest after the other; here those are the lab's
//! [`FlowPath`]s, found by protocol and the port (or echo id) at the
//! receiver's end ([`crate::plan::tcp_port`] and friends). The lab's loss
//! and jitter draw from the scenario's seed, and GRO stays off, so that
//! the receiver sees each segment as the simulator's does.

use std::time::Duration;

use kleinrock_lab::{
    Direction, FlowPath, Lab, LabCapture, LabConfig, Link, Proto, QueueSample as LabSample,
    DELAY_LINE_SLOTS,
};
use kleinrock_sim::link::LinkStats;
use kleinrock_sim::results::QueueSample;
use kleinrock_sim::time::{Time, SEC};
use kleinrock_sim::world::{data_packet_bytes, QueueConfig};
use kleinrock_sim::{Config, Limit};

use crate::plan::{ping_id, tcp_port, udp_port};
use crate::Error;

/// The two directions' names in messages and in queues.csv: the
/// simulator's, "up" from sender to receiver.
pub const NAMES: [&str; 2] = ["up", "down"];

/// The lab for `cfg`: both directions of its link emulated as they are,
/// a path of its own for every flow, ping and UDP flow, the seed, no GRO,
/// and the scenario's packet capture from the delay line.
pub fn lab_config(cfg: &Config) -> Result<LabConfig, Error> {
    let flows = paths(cfg);
    for (lane, name) in NAMES.iter().enumerate() {
        fits(cfg, &flows, lane, name)?;
    }
    let lab = LabConfig {
        forward: Link::emulating(cfg.links[0].clone()),
        reverse: Link::emulating(cfg.links[1].clone()),
        flows,
        seed: cfg.seed,
        gro: false,
        capture: cfg
            .capture
            .zip(cfg.capture_file.clone())
            .map(|(spec, path)| LabCapture {
                spec,
                path,
                comment: format!("kleinrock lab, seed {}: {spec}; wall-clock time", cfg.seed),
            }),
        ..LabConfig::default()
    };
    // What the lab refuses beyond the checks above (a delay past its
    // limit, say), refused now rather than once a run has started.
    lab.validate()
        .map_err(|e| Error::refused(format!("the lab cannot honour this scenario's link: {e}")))?;
    Ok(lab)
}

/// Every flow's, ping's and UDP flow's pipes, as the simulator splits
/// its `rtt`: `rtt / 2` after the bottleneck its data crosses, `rtt - rtt
/// / 2` after the other (the link's own `delay` is the link's, added by
/// it). A ping's requests go up.
fn paths(cfg: &Config) -> Vec<FlowPath> {
    let path = |proto, port, rtt: Time, upload: bool| {
        let (there, back) = (rtt / 2, rtt - rtt / 2);
        let (forward, reverse) = if upload { (there, back) } else { (back, there) };
        FlowPath {
            proto,
            port,
            forward: Duration::from_nanos(forward),
            reverse: Duration::from_nanos(reverse),
        }
    };
    let tcp = cfg.flows.iter().enumerate();
    let tcp = tcp.map(|(i, f)| path(Proto::Tcp, tcp_port(i), f.rtt, f.upload));
    let pings = cfg.pings.iter().enumerate();
    let pings = pings.map(|(i, p)| path(Proto::Icmp, ping_id(i), p.rtt, true));
    let udp = cfg.udp.iter().enumerate();
    let udp = udp.map(|(i, u)| path(Proto::Udp, udp_port(i), u.rtt, u.upload));
    tcp.chain(pings).chain(udp).collect()
}

/// Refuses a direction whose queue and packets in flight after it (at its
/// rate, over its longest path) need more of the delay line's slots than
/// it has: each packet the router holds takes one.
fn fits(cfg: &Config, flows: &[FlowPath], lane: usize, name: &str) -> Result<(), Error> {
    let l = &cfg.links[lane];
    let packet = u64::from(data_packet_bytes(cfg.mss));
    let limit = match &l.queue {
        QueueConfig::Fifo {
            limit: Limit::Packets(n),
            ..
        } => u64::from(*n),
        QueueConfig::Fifo {
            limit: Limit::Bytes(b),
            ..
        } => b / packet,
        QueueConfig::Codel(p) | QueueConfig::FqCodel(p) => u64::from(p.limit),
        QueueConfig::Red(p) => u64::from(p.limit),
    };
    let longest = flows
        .iter()
        .map(|f| [f.forward, f.reverse][lane])
        .max()
        .unwrap_or_default();
    let delay = l.delay + l.jitter + u64::try_from(longest.as_nanos()).unwrap_or(u64::MAX);
    let in_flight = (u128::from(l.rate_bps) * u128::from(delay)
        / (u128::from(SEC) * 8 * u128::from(packet)))
    .min(u128::from(u64::MAX)) as u64;
    let slots = DELAY_LINE_SLOTS as u64;
    if limit.saturating_add(in_flight).saturating_add(1) > slots {
        return Err(Error::refused(format!(
            "the lab cannot honour `queue` (a limit of {limit} packets on the {name} link) with its `rate` and paths: the queue and {in_flight} packets in flight need more than the delay line's {slots} slots per direction; use a shorter queue, a lower rate or a shorter RTT"
        )));
    }
    Ok(())
}

/// The link's counters as the results hold them: the bottlenecks' own
/// (the delay line's [`LinkStats`]), with the packets the delay line
/// dropped for want of a slot counted as queue drops (they found the
/// router full). Taken from the moment the connections were made: the
/// handshakes are not the run's.
pub struct Counters {
    /// Each direction's rate, for a queue's delay.
    rates: [u64; 2],
    base: [LinkStats; 2],
    last: [LinkStats; 2],
}

impl Counters {
    /// The counters now, the run's baseline.
    pub fn start(lab: &Lab, cfg: &Config) -> Result<Counters, Error> {
        let (_, base) = read(lab)?;
        Ok(Counters {
            rates: [cfg.links[0].rate_bps, cfg.links[1].rate_bps],
            base,
            last: base,
        })
    }

    /// One queues.csv row per direction, at `t` seconds: what waits in
    /// the queue now, its delay at the link's rate (the simulator's
    /// `bytes * 8 / rate`), and the drops and marks since the last row.
    pub fn sample(&mut self, lab: &Lab, t: f64) -> Result<[QueueSample; 2], Error> {
        let (queues, now) = read(lab)?;
        Ok([0, 1].map(|i| {
            let (q, last) = (queues[i], self.last[i]);
            self.last[i] = now[i];
            QueueSample {
                t,
                link: NAMES[i],
                packets: u32::try_from(q.packets).unwrap_or(u32::MAX),
                bytes: q.bytes,
                delay_us: q.bytes * 8 * 1_000_000 / self.rates[i].max(1),
                drops: (now[i].queue_drops - last.queue_drops)
                    + (now[i].loss_drops - last.loss_drops),
                marks: now[i].marks - last.marks,
            }
        }))
    }

    /// Each direction's counters since the baseline.
    pub fn since_start(&self, lab: &Lab) -> Result<[LinkStats; 2], Error> {
        let (_, now) = read(lab)?;
        Ok([0, 1].map(|i| {
            let (n, b) = (now[i], self.base[i]);
            LinkStats {
                tx_packets: n.tx_packets - b.tx_packets,
                tx_bytes: n.tx_bytes - b.tx_bytes,
                queue_drops: n.queue_drops - b.queue_drops,
                loss_drops: n.loss_drops - b.loss_drops,
                marks: n.marks - b.marks,
            }
        }))
    }
}

/// Both bottlenecks at one moment, and their counters with the delay
/// line's overflows as queue drops.
fn read(lab: &Lab) -> Result<([LabSample; 2], [LinkStats; 2]), Error> {
    let queues = lab.queue_samples()?;
    let lanes = [Direction::Forward, Direction::Reverse];
    let stats = [0, 1].map(|i| {
        let mut s = queues[i].link;
        s.queue_drops += lab.delay_stats(lanes[i]).overflow_drops;
        s
    });
    Ok((queues, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_lab::LossModel;

    /// A scenario of `top` keys, then `[link]` with `link` (10 Mbit/s
    /// unless it gives a rate), then `rest`.
    fn config(top: &str, link: &str, rest: &str) -> Config {
        let rate = if link.starts_with("rate") {
            ""
        } else {
            "rate = \"10Mbit\""
        };
        let text = format!("duration = \"2s\"\n{top}\n[link]\n{rate}\n{link}\n{rest}\n");
        kleinrock_sim::scenario::parse(&text, "l.toml", None).unwrap()
    }

    const FLOW: &str = "[[flow]]\ncc = \"cubic\"\nrtt = \"40ms\"";

    #[test]
    fn the_links_are_emulated_as_the_scenario_gives_them() {
        let cfg = config(
            "seed = 7",
            "queue = { kind = \"codel\" }\nloss = { p = \"1%\", r = \"10%\" }\ndelay = \"5ms\"\njitter = \"1ms\"\n[link.down]\nrate = \"2Mbit\"",
            FLOW,
        );
        let lab = lab_config(&cfg).unwrap();
        assert_eq!(lab.forward, Link::emulating(cfg.links[0].clone()));
        assert_eq!(lab.reverse, Link::emulating(cfg.links[1].clone()));
        let up = lab.forward.bottleneck.unwrap();
        assert_eq!(up.queue.kind(), "codel");
        assert!(matches!(up.loss, LossModel::GilbertElliott { .. }));
        assert_eq!((up.delay, up.jitter), (5_000_000, 1_000_000));
        assert_eq!(lab.reverse.bottleneck.unwrap().rate_bps, 2_000_000);
        // Nothing in the lab's own delay, rate or iptables loss.
        assert_eq!(lab.forward.delay, Duration::ZERO);
        assert_eq!((lab.forward.rate_bps, lab.forward.loss), (None, 0.0));
        assert_eq!((lab.seed, lab.gro), (cfg.seed, false));
    }

    #[test]
    fn each_flow_ping_and_udp_flow_has_the_simulators_pipes() {
        let cfg = config(
            "",
            "",
            "[[flow]]\ncc = \"cubic\"\nrtt = \"40ms\"\n\
             [[flow]]\ncc = \"reno\"\nrtt = \"81ms\"\ndirection = \"download\"\n\
             [[ping]]\nrtt = \"10ms\"\n\
             [[udp]]\nrate = \"1Mbit\"\nrtt = \"20ms\"\ndirection = \"download\"\n",
        );
        let ms = |n: f64| Duration::from_secs_f64(n / 1e3);
        let want = [
            (Proto::Tcp, 20_000, 20.0, 20.0),
            // A download's data comes back: half its RTT after the down
            // link, the odd nanosecond on the way there.
            (Proto::Tcp, 20_001, 40.500_001, 40.5),
            (Proto::Icmp, 1, 5.0, 5.0),
            (Proto::Udp, 30_000, 10.0, 10.0),
        ];
        let got = lab_config(&cfg).unwrap().flows;
        assert_eq!(got.len(), want.len());
        for (g, (proto, port, f, r)) in got.iter().zip(want) {
            assert_eq!((g.proto, g.port), (proto, port));
            assert!(g.forward.abs_diff(ms(f)) < Duration::from_nanos(2), "{g:?}");
            assert!(g.reverse.abs_diff(ms(r)) < Duration::from_nanos(2), "{g:?}");
        }
    }

    #[test]
    fn more_than_the_delay_line_holds_is_refused_naming_the_key() {
        for (link, rest, start) in [
            (
                "queue = 16000\n[link.down]\nrate = \"10Gbit\"",
                FLOW.to_string(),
                "the lab cannot honour `queue` (a limit of 16000 packets on the down link)",
            ),
            (
                "rate = \"1Gbit\"\nqueue = 100",
                format!("{FLOW}\n[[ping]]\nrtt = \"1s\""),
                "the lab cannot honour `queue` (a limit of 100 packets on the up link)",
            ),
        ] {
            let e = lab_config(&config("", link, &rest)).unwrap_err();
            assert!(e.to_string().starts_with(start), "{e}");
            assert_eq!(e.kind(), crate::ErrorKind::Refused);
        }
        // A path longer than the lab's 10 s each way, at a rate it holds.
        let e = lab_config(&config(
            "",
            "rate = \"1Mbit\"\nqueue = 10",
            &format!("{FLOW}\n[[ping]]\nrtt = \"30s\""),
        ))
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the lab cannot honour this scenario's link: "),
            "{e}"
        );
    }
}
