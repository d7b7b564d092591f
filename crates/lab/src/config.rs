//! What a lab's link is: per direction a propagation delay, a rate with its
//! queue, random loss, and optionally the delay line's own marking
//! bottleneck. Checked before anything is created, each bad value refused
//! in one sentence. The sizes the link is built to (MTU, frame, the delay
//! line's slots) are here too, since the checks are made against them;
//! the shaper and the delay line read them from here.

use std::time::Duration;

use crate::Error;

/// The longest one-way delay a lab accepts. The delay line holds every
/// packet in flight, so this bounds its memory with the ring size.
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// The MTU of the lab's veths and TUN devices: the largest IP packet that
/// crosses the router (the kernel segments GSO packets to it before it
/// hands them to a TUN without offloads).
pub(crate) const MTU: u32 = 1500;

/// What veth adds to each IP packet: tbf counts frames, and so does the
/// delay line's bottleneck, so that both rate limits agree.
pub(crate) const ETHERNET_HEADER: u32 = 14;

/// A full-size frame on the lab's veths.
pub(crate) const FRAME: u32 = MTU + ETHERNET_HEADER;

/// Slots per direction of the delay line: 16384 packets of up to an MTU,
/// 1 Gbit/s for 190 ms. Arrivals beyond it are dropped and counted.
pub(crate) const DELAY_LINE_SLOTS: usize = 16384;

/// A lab's two directions, and how it treats the machine's CPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct LabConfig {
    /// Sender to receiver (data).
    pub forward: Link,
    /// Receiver to sender (ACKs).
    pub reverse: Link,
    /// Keep every CPU busy at nice 19 while the lab exists, so that no
    /// vCPU halts and waits for the hypervisor to wake it (on a loaded
    /// host, milliseconds of timer and packet latency). True by default;
    /// on bare metal it only costs power. See docs/LAB.md.
    pub keep_cpus_awake: bool,
}

impl Default for LabConfig {
    fn default() -> LabConfig {
        LabConfig {
            forward: Link::default(),
            reverse: Link::default(),
            keep_cpus_awake: true,
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

    pub(crate) fn validate(&self) -> Result<(), Error> {
        self.forward.validate("forward")?;
        self.reverse.validate("reverse")
    }
}

/// One direction of the link. `Link::default()` is a link with no delay, no
/// rate limit and no loss.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// One-way propagation delay, added by the delay line with microsecond
    /// precision.
    pub delay: Duration,
    /// The rate of tc tbf on the router's egress toward this direction's
    /// destination, in bits per second; `None` leaves it unlimited.
    pub rate_bps: Option<u64>,
    /// The tbf queue's limit (used only with `rate_bps`).
    pub queue: Queue,
    /// Probability in [0, 1] that a packet is dropped as it enters the
    /// router (iptables `statistic`).
    pub loss: f64,
    /// The delay line's own rate-limited FIFO with ECN marking, ahead of
    /// the propagation delay; `None` for a plain delay line.
    pub bottleneck: Option<Bottleneck>,
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
            b.validate(which)?;
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

/// The delay line's own bottleneck: a FIFO served at `rate_bps`, tail drop
/// at `limit` packets, and DCTCP's step marking: an ECN-capable packet
/// that arrives to find at least `ecn_threshold` packets waiting (more
/// than that many in the bottleneck, the one being sent included) leaves
/// with CE set. It is `kleinrock-link`'s FIFO, the simulator's, so a limit
/// and a K mean here what they mean in a scenario. This kernel has no red
/// or codel qdisc, so this is where DCTCP's marks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bottleneck {
    /// Service rate in bits per second, counting each IP packet plus a
    /// 14-byte Ethernet header, as tbf counts frames on veth.
    pub rate_bps: u64,
    /// Packets that may wait (the one being sent not counted, as a Linux
    /// qdisc's limit and the simulator's FIFO count them); an arrival that
    /// finds this many waiting is dropped.
    pub limit: u32,
    /// DCTCP's K in packets waiting; `None` never marks.
    pub ecn_threshold: Option<u32>,
}

impl Bottleneck {
    fn validate(&self, which: &str) -> Result<(), Error> {
        if self.rate_bps == 0 {
            return Err(Error::invalid(format!(
                "the {which} bottleneck's rate is 0 bit/s, so it would carry nothing; \
                 give a rate or no bottleneck"
            )));
        }
        if self.limit == 0 {
            return Err(Error::invalid(format!(
                "the {which} bottleneck's queue limit is 0, so it would drop every packet \
                 that finds the link busy; give at least one packet"
            )));
        }
        let slots = DELAY_LINE_SLOTS;
        if self.limit as usize > slots {
            return Err(Error::invalid(format!(
                "the {which} bottleneck's queue limit of {} packets is more than the delay \
                 line's {slots} slots per direction; give at most {slots}",
                self.limit
            )));
        }
        if let Some(k) = self.ecn_threshold {
            if k >= self.limit {
                return Err(Error::invalid(format!(
                    "the {which} bottleneck's ECN threshold K={k} is not below its queue \
                     limit {}, so it would drop before it marks; lower K or raise the limit",
                    self.limit
                )));
            }
        }
        Ok(())
    }
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
        let k_at_limit = Bottleneck {
            rate_bps: 10_000_000,
            limit: 100,
            ecn_threshold: Some(100),
        };
        let huge = Bottleneck {
            limit: 20_000,
            ..k_at_limit
        };
        assert_eq!(
            refused(Link {
                bottleneck: Some(huge),
                ..Link::default()
            }),
            "the forward bottleneck's queue limit of 20000 packets is more than the delay \
             line's 16384 slots per direction; give at most 16384"
        );
        assert_eq!(
            refused(Link {
                bottleneck: Some(k_at_limit),
                ..Link::default()
            }),
            "the forward bottleneck's ECN threshold K=100 is not below its queue limit 100, \
             so it would drop before it marks; lower K or raise the limit"
        );
    }

    #[test]
    fn both_covers_both_lanes() {
        assert_eq!(Direction::Forward.lanes(), &[0]);
        assert_eq!(Direction::Reverse.lanes(), &[1]);
        assert_eq!(Direction::Both.lanes(), &[0, 1]);
    }
}
