//! What a lab's link is: per direction a propagation delay, the
//! simulator's bottleneck in the delay line (`kleinrock-link`'s
//! [`LinkConfig`]: rate or trace, queue discipline, loss model, its own
//! delay and jitter), or the kernel's tbf with iptables loss; and the flows
//! that have paths of their own through it. Checked before anything is
//! created, each bad value refused in one sentence. The sizes the link is
//! built to (MTU, frame, the delay line's slots) are here too, since the
//! checks are made against them; the shaper and the delay line read them
//! from here.

use std::time::Duration;

use kleinrock_link::config::{LinkConfig, QueueConfig};
use kleinrock_link::loss::LossModel;
use kleinrock_link::queue::Limit;
use kleinrock_link::time::Time;

use crate::capture::LabCapture;
use crate::classify::{self, FlowPath};
use crate::Error;

/// The longest one-way delay a lab accepts. The delay line holds every
/// packet in flight, so this bounds its memory with the ring size.
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// The MTU of the lab's veths and TUN devices: the largest IP packet that
/// crosses the router (the kernel segments GSO packets to it before it
/// hands them to a TUN without offloads).
pub(crate) const MTU: u32 = 1500;

/// What veth adds to each IP packet: tbf counts frames (the delay line's
/// bottleneck, like the simulator's, counts IP packets).
pub(crate) const ETHERNET_HEADER: u32 = 14;

/// A full-size frame on the lab's veths.
pub(crate) const FRAME: u32 = MTU + ETHERNET_HEADER;

/// Slots per direction of the delay line: 16384 packets of up to an MTU,
/// 1 Gbit/s for 190 ms. Arrivals beyond it are dropped and counted.
pub const DELAY_LINE_SLOTS: usize = 16384;

/// A lab's two directions, the flows with paths of their own, and how it
/// treats the machine's CPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct LabConfig {
    /// Sender to receiver (data).
    pub forward: Link,
    /// Receiver to sender (ACKs).
    pub reverse: Link,
    /// Flows with extra delays of their own after the bottleneck, found by
    /// protocol and server port (docs/LAB.md, "Flows"); other packets get
    /// only the link's delays.
    pub flows: Vec<FlowPath>,
    /// Seeds the delay line's random draws (loss, RED, jitter), one
    /// generator per direction.
    pub seed: u64,
    /// Let the router merge consecutive segments of a flow (GRO) as it
    /// forwards what the delay line releases, as a NIC with GRO would:
    /// faster (docs/PERFORMANCE.md), but the receiver then sees merged
    /// packets and acknowledges per merged packet, not every second
    /// segment as the simulator's does. False by default.
    pub gro: bool,
    /// Keep every CPU busy at nice 19 while the lab exists, so that no
    /// vCPU halts and waits for the hypervisor to wake it (on a loaded
    /// host, milliseconds of timer and packet latency). True by default;
    /// on bare metal it only costs power. See docs/LAB.md.
    pub keep_cpus_awake: bool,
    /// A packet capture the delay line writes (docs/LAB.md, "Packet
    /// captures"); none by default.
    pub capture: Option<LabCapture>,
}

impl Default for LabConfig {
    fn default() -> LabConfig {
        LabConfig {
            forward: Link::default(),
            reverse: Link::default(),
            flows: Vec::new(),
            seed: 1,
            gro: false,
            keep_cpus_awake: true,
            capture: None,
        }
    }
}

impl LabConfig {
    /// The same link both ways.
    pub fn symmetric(link: Link) -> LabConfig {
        LabConfig {
            forward: link.clone(),
            reverse: link,
            ..LabConfig::default()
        }
    }

    /// Checks the configuration as [`crate::Lab::new`] does before it
    /// builds anything, so that a caller can refuse a bad one before it
    /// needs root: each bad value is one sentence naming it.
    pub fn validate(&self) -> Result<(), Error> {
        self.forward.validate("forward")?;
        self.reverse.validate("reverse")?;
        classify::validate(&self.flows)
    }
}

/// One direction of the link. `Link::default()` is a link with no delay, no
/// rate limit and no loss.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// One-way propagation delay, added by the delay line with microsecond
    /// precision (changed at run time by [`crate::Lab::set_delay`]); the
    /// bottleneck's own `delay`, if any, adds to it.
    pub delay: Duration,
    /// The rate of tc tbf on the router's egress toward this direction's
    /// destination, in bits per second; `None` leaves it unlimited.
    pub rate_bps: Option<u64>,
    /// The tbf queue's limit (used only with `rate_bps`).
    pub queue: Queue,
    /// Probability in [0, 1] that a packet is dropped as it enters the
    /// router (iptables `statistic`).
    pub loss: f64,
    /// The simulator's bottleneck, run by the delay line ahead of the
    /// propagation delay: its rate or mahimahi trace, queue discipline,
    /// loss model, delay and jitter (`kleinrock-link`'s, as a scenario's
    /// `[link]` describes it); `None` for a plain delay line.
    pub bottleneck: Option<LinkConfig>,
}

impl Link {
    /// A direction whose bottleneck is `link`, run by the delay line: the
    /// simulator's link, the lab's default (docs/LAB.md says why).
    pub fn emulating(link: LinkConfig) -> Link {
        Link {
            bottleneck: Some(link),
            ..Link::default()
        }
    }

    /// A direction whose bottleneck is the kernel's own tbf, standing for
    /// `link` as closely as tbf can: its rate (raised by 1514/1500, since
    /// tbf counts frames and `link` IP packets: the same rate for
    /// full-size packets), its FIFO's limit (pfifo or tbf's byte limit,
    /// likewise raised), Bernoulli loss by iptables (as packets enter the
    /// router, before the queue, where the simulator drops after it), and
    /// its delay in the delay line (before the queue: the same total).
    /// What tbf cannot do is refused in one sentence: a trace, an AQM, ECN
    /// marking, bursty loss, jitter (which after tbf's queue would have to
    /// be in front of it, where a FIFO absorbs it).
    pub fn tbf(link: &LinkConfig) -> Result<Link, Error> {
        let refuse = |what: &str| {
            Err(Error::invalid(format!(
                "tbf cannot {what}; run this link in the delay line (Link::emulating)"
            )))
        };
        if link.trace.is_some() {
            return refuse("follow a mahimahi trace");
        }
        if link.jitter > 0 {
            return refuse("add jitter after its queue (give a jitter of 0 for tbf)");
        }
        let frames = |bytes: u64| {
            bytes
                .saturating_mul(u64::from(FRAME))
                .div_ceil(u64::from(MTU))
        };
        let queue = match link.queue {
            QueueConfig::Fifo {
                mark_at: Some(_), ..
            } => return refuse("mark ECN (this kernel has no marking qdisc)"),
            QueueConfig::Fifo {
                limit: Limit::Packets(n),
                ..
            } => Queue::Packets(n),
            QueueConfig::Fifo {
                limit: Limit::Bytes(b),
                ..
            } => match u32::try_from(frames(b)) {
                Ok(b) => Queue::Bytes(b),
                Err(_) => return refuse("hold more than 4 GB (tbf's limit is 32 bits)"),
            },
            _ => return refuse(&format!("run a {} queue", link.queue.kind())),
        };
        let loss = match link.loss {
            LossModel::None => 0.0,
            LossModel::Bernoulli { ppm } => f64::from(ppm) / 1e6,
            _ => return refuse("drop in bursts or by index (iptables' loss is Bernoulli)"),
        };
        if link.rate_bps == 0 {
            return refuse("carry a rate of 0 bit/s");
        }
        Ok(Link {
            delay: Duration::from_nanos(link.delay),
            rate_bps: Some(frames(link.rate_bps)),
            queue,
            loss,
            bottleneck: None,
        })
    }
}

impl Default for Link {
    fn default() -> Link {
        Link {
            delay: Duration::ZERO,
            rate_bps: None,
            queue: Queue::Packets(1000),
            loss: 0.0,
            bottleneck: None,
        }
    }
}

impl Link {
    fn validate(&self, which: &str) -> Result<(), Error> {
        if self.delay > MAX_DELAY {
            return Err(Error::invalid(format!(
                "the {which} delay of {:?} is longer than the lab's limit of {:?}; \
                 give a shorter one-way delay",
                self.delay, MAX_DELAY
            )));
        }
        if self.rate_bps == Some(0) {
            return Err(Error::invalid(format!(
                "a {which} rate of 0 bit/s would carry nothing; leave rate_bps as None \
                 for an unlimited link"
            )));
        }
        check_loss(which, self.loss)?;
        match self.queue {
            Queue::Packets(0) | Queue::Bytes(0) => {
                return Err(Error::invalid(format!(
                    "the {which} queue limit is 0, so tbf would drop every packet; \
                     give at least one packet"
                )))
            }
            Queue::Bytes(n) if n < FRAME => {
                return Err(Error::invalid(format!(
                    "the {which} queue limit of {n} bytes cannot hold one full-size frame \
                     ({FRAME} bytes); give at least that"
                )))
            }
            _ => {}
        }
        if let Some(b) = &self.bottleneck {
            check_bottleneck(which, b)?;
        }
        Ok(())
    }
}

/// Refuses a loss probability outside [0, 1] (NaN included).
pub(crate) fn check_loss(which: &str, loss: f64) -> Result<(), Error> {
    if !(0.0..=1.0).contains(&loss) {
        return Err(Error::invalid(format!(
            "the {which} loss probability {loss} is outside [0, 1]; give a probability \
             such as 0.01 for 1%"
        )));
    }
    Ok(())
}

/// A tbf queue limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// At most this many packets wait (a pfifo inside tbf).
    Packets(u32),
    /// At most this many bytes wait (tbf's own limit).
    Bytes(u32),
}

/// Refuses a bottleneck the delay line cannot run as the simulator would:
/// a rate of 0, a queue or loss out of range, more packets than it has
/// slots for, a trace under anything but a FIFO.
fn check_bottleneck(which: &str, b: &LinkConfig) -> Result<(), Error> {
    let refuse = |what: String| Err(Error::invalid(format!("the {which} bottleneck's {what}")));
    let slots = DELAY_LINE_SLOTS as u32;
    if b.rate_bps == 0 && b.trace.is_none() {
        return refuse("rate is 0 bit/s, so it would carry nothing; give a rate or a trace".into());
    }
    if b.trace.is_some() && !matches!(b.queue, QueueConfig::Fifo { .. }) {
        return refuse(format!(
            "trace link has a {} queue, and a trace link takes only a FIFO, as in the \
             simulator; give a FIFO or a constant rate",
            b.queue.kind()
        ));
    }
    for (what, d) in [("delay", b.delay), ("jitter", b.jitter)] {
        if d > nanos(MAX_DELAY) {
            return refuse(format!(
                "{what} of {:?} is longer than the lab's limit of {MAX_DELAY:?}; give a \
                 shorter one",
                Duration::from_nanos(d)
            ));
        }
    }
    let limit = match &b.queue {
        QueueConfig::Fifo { limit, mark_at } => {
            if let (Limit::Packets(n), Some(k)) = (limit, mark_at) {
                if k >= n {
                    return refuse(format!(
                        "ECN threshold K={k} is not below its queue limit {n}, so it would \
                         drop before it marks; lower K or raise the limit"
                    ));
                }
            }
            match *limit {
                Limit::Packets(n) => n,
                Limit::Bytes(b) if b < u64::from(MTU) => {
                    return refuse(format!(
                        "queue limit of {b} bytes cannot hold one full-size packet ({MTU} \
                         bytes); give at least that"
                    ))
                }
                Limit::Bytes(b) => u32::try_from(b / u64::from(MTU)).unwrap_or(u32::MAX),
            }
        }
        QueueConfig::Codel(p) | QueueConfig::FqCodel(p) => {
            if p.target == 0 || p.interval == 0 {
                return refuse(format!(
                    "{} target and interval must be longer than 0; CoDel's defaults are 5 ms \
                     and 100 ms",
                    b.queue.kind()
                ));
            }
            p.limit
        }
        QueueConfig::Red(p) => {
            if !(p.min < p.max && p.min >= 0.0) {
                return refuse(format!(
                    "RED thresholds min {} and max {} are not 0 <= min < max; give a min below \
                     the max",
                    p.min, p.max
                ));
            }
            if !((0.0..=1.0).contains(&p.max_p) && p.wq > 0.0 && p.wq <= 1.0) {
                return refuse(format!(
                    "RED probability {} or weight {} is outside [0, 1] (a weight of 0 never \
                     moves the average); give e.g. 0.1 and 0.002",
                    p.max_p, p.wq
                ));
            }
            p.limit
        }
    };
    if limit == 0 {
        return refuse(
            "queue limit is 0, so it would drop every packet that finds the link busy; give \
             at least one packet"
                .into(),
        );
    }
    if limit > slots {
        return refuse(format!(
            "queue limit of {limit} packets is more than the delay line's {slots} slots per \
             direction; give at most {slots}"
        ));
    }
    let ppm = |p: u32| p > 1_000_000;
    let bad_loss = match &b.loss {
        LossModel::Bernoulli { ppm: p } => ppm(*p),
        LossModel::GilbertElliott {
            p_ppm,
            r_ppm,
            loss_good_ppm,
            loss_bad_ppm,
            ..
        } => [p_ppm, r_ppm, loss_good_ppm, loss_bad_ppm]
            .into_iter()
            .any(|p| ppm(*p)),
        LossModel::None | LossModel::Indices(_) => false,
    };
    if bad_loss {
        return refuse(
            "loss has a probability above 100% (1000000 ppm); give parts per million up to \
             1000000"
                .into(),
        );
    }
    Ok(())
}

fn nanos(d: Duration) -> Time {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Which way a change applies, or which way's counters to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Sender to receiver.
    Forward,
    /// Receiver to sender.
    Reverse,
    /// Both ways (counters are summed).
    Both,
}

impl Direction {
    /// The lane indices (0 forward, 1 reverse) this direction covers.
    pub(crate) fn lanes(self) -> &'static [usize] {
        match self {
            Direction::Forward => &[0],
            Direction::Reverse => &[1],
            Direction::Both => &[0, 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(link: Link) -> String {
        let e = LabConfig::symmetric(link).validate().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
        e.to_string()
    }

    #[test]
    fn the_default_link_is_valid() {
        LabConfig::default().validate().unwrap();
    }

    #[test]
    fn bad_values_are_refused_in_one_sentence_naming_the_direction() {
        let long = Link {
            delay: Duration::from_secs(11),
            ..Link::default()
        };
        assert_eq!(
            refused(long),
            "the forward delay of 11s is longer than the lab's limit of 10s; \
             give a shorter one-way delay"
        );
        let bad_loss = LabConfig {
            reverse: Link {
                loss: 1.5,
                ..Link::default()
            },
            ..LabConfig::default()
        };
        assert_eq!(
            bad_loss.validate().unwrap_err().to_string(),
            "the reverse loss probability 1.5 is outside [0, 1]; give a probability \
             such as 0.01 for 1%"
        );
        assert!(refused(Link {
            loss: f64::NAN,
            ..Link::default()
        })
        .contains("loss probability NaN"));
        assert!(refused(Link {
            rate_bps: Some(0),
            ..Link::default()
        })
        .starts_with("a forward rate of 0 bit/s"));
        assert!(refused(Link {
            queue: Queue::Packets(0),
            ..Link::default()
        })
        .contains("queue limit is 0"));
        assert!(refused(Link {
            queue: Queue::Bytes(1000),
            ..Link::default()
        })
        .contains("cannot hold one full-size frame (1514 bytes)"));
        let fifo = |limit, k| {
            LinkConfig::new(
                10_000_000,
                QueueConfig::Fifo {
                    limit: Limit::Packets(limit),
                    mark_at: k,
                },
            )
        };
        assert_eq!(
            refused(Link::emulating(fifo(20_000, None))),
            "the forward bottleneck's queue limit of 20000 packets is more than the delay \
             line's 16384 slots per direction; give at most 16384"
        );
        assert_eq!(
            refused(Link::emulating(fifo(100, Some(100)))),
            "the forward bottleneck's ECN threshold K=100 is not below its queue limit 100, \
             so it would drop before it marks; lower K or raise the limit"
        );
        let mut zero = fifo(100, None);
        zero.rate_bps = 0;
        assert!(refused(Link::emulating(zero)).contains("rate is 0 bit/s"));
        let mut traced = LinkConfig::new(0, QueueConfig::Codel(Default::default()));
        traced.trace = Some(kleinrock_link::mahimahi::Trace::parse("1\n", "t").unwrap());
        assert_eq!(
            refused(Link::emulating(traced)),
            "the forward bottleneck's trace link has a codel queue, and a trace link takes \
             only a FIFO, as in the simulator; give a FIFO or a constant rate"
        );
        let mut lossy = fifo(100, None);
        lossy.loss = LossModel::Bernoulli { ppm: 2_000_000 };
        assert!(refused(Link::emulating(lossy)).contains("loss has a probability above 100%"));
        let mut jittery = fifo(100, None);
        jittery.jitter = 11_000_000_000;
        assert!(refused(Link::emulating(jittery))
            .starts_with("the forward bottleneck's jitter of 11s is longer"));
        let bytes = LinkConfig::new(
            10_000_000,
            QueueConfig::Fifo {
                limit: Limit::Bytes(1000),
                mark_at: None,
            },
        );
        assert!(refused(Link::emulating(bytes)).contains("cannot hold one full-size packet"));
        let red = LinkConfig::new(
            10_000_000,
            QueueConfig::Red(kleinrock_link::red::RedParams {
                limit: 100,
                min: 30.0,
                max: 20.0,
                max_p: 0.1,
                wq: 0.002,
                ecn: false,
            }),
        );
        assert!(refused(Link::emulating(red)).contains("min 30 and max 20"));
        LabConfig::symmetric(Link::emulating(fifo(100, Some(10))))
            .validate()
            .unwrap();
    }

    #[test]
    fn tbf_stands_for_a_fifo_link_and_refuses_the_rest() {
        let mut link = LinkConfig::new(
            15_000_000,
            QueueConfig::Fifo {
                limit: Limit::Packets(84),
                mark_at: None,
            },
        );
        link.delay = 20_000_000;
        link.loss = LossModel::Bernoulli { ppm: 10_000 };
        assert_eq!(
            Link::tbf(&link).unwrap(),
            Link {
                delay: Duration::from_millis(20),
                rate_bps: Some(15_140_000),
                queue: Queue::Packets(84),
                loss: 0.01,
                bottleneck: None,
            }
        );
        link.queue = QueueConfig::Fifo {
            limit: Limit::Bytes(150_000),
            mark_at: None,
        };
        assert_eq!(Link::tbf(&link).unwrap().queue, Queue::Bytes(151_400));
        link.jitter = 1;
        assert_eq!(
            Link::tbf(&link).unwrap_err().to_string(),
            "tbf cannot add jitter after its queue (give a jitter of 0 for tbf); run this link \
             in the delay line (Link::emulating)"
        );
        link.jitter = 0;
        link.queue = QueueConfig::Codel(Default::default());
        assert!(Link::tbf(&link)
            .unwrap_err()
            .to_string()
            .starts_with("tbf cannot run a codel queue"));
    }

    #[test]
    fn both_covers_both_lanes() {
        assert_eq!(Direction::Forward.lanes(), &[0]);
        assert_eq!(Direction::Reverse.lanes(), &[1]);
        assert_eq!(Direction::Both.lanes(), &[0, 1]);
    }
}
