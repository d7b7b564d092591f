//! The link's rate: tc tbf as the root qdisc of the router's egress veth
//! toward a direction's destination.
//!
//! The bucket (`burst`) holds one millisecond of the rate, and never less
//! than one full-size frame (which tbf needs to pass such a frame at all).
//! A millisecond is long against the watchdog timer's lateness on a busy
//! machine (tens to hundreds of microseconds), so a late wakeup does not
//! cost the link tokens and the long-run rate stays the configured one; it
//! is short against any RTT the lab is for, so the largest burst the link
//! can emit at line rate after an idle spell is a millisecond's worth.
//! tbf counts frames as veth carries them: the IP packet plus a 14-byte
//! Ethernet header.
//!
//! A packet limit is a pfifo grafted inside tbf (tbf's own limit is in
//! bytes). Packets reach tbf after the delay line, which the TUN's
//! segmentation has already cut to at most 1500-byte IP packets, so a
//! packet is a frame here, never a 64 KB GSO aggregate.

use crate::config::{Link, Queue, FRAME};

/// tbf's bucket for `rate_bps`: one millisecond of it, at least one frame.
pub(crate) fn burst_bytes(rate_bps: u64) -> u64 {
    (rate_bps / 8 / 1000).max(u64::from(FRAME))
}

/// The `tc` argument lists that give `dev` the link's rate and queue (an
/// empty list when the link has no rate).
pub(crate) fn tc_commands(dev: &str, link: &Link) -> Vec<Vec<String>> {
    let Some(rate) = link.rate_bps else {
        return Vec::new();
    };
    let limit_bytes = match link.queue {
        Queue::Bytes(n) => u64::from(n),
        Queue::Packets(n) => u64::from(n) * u64::from(FRAME),
    };
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let mut commands = vec![words(&format!(
        "qdisc replace dev {dev} root handle 1: tbf rate {rate}bit burst {} limit {limit_bytes}",
        burst_bytes(rate)
    ))];
    if let Queue::Packets(n) = link.queue {
        commands.push(words(&format!(
            "qdisc replace dev {dev} parent 1:1 handle 10: pfifo limit {n}"
        )));
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_is_a_millisecond_of_the_rate_and_at_least_a_frame() {
        assert_eq!(burst_bytes(1_000_000), 1514);
        assert_eq!(burst_bytes(20_000_000), 2500);
        assert_eq!(burst_bytes(100_000_000), 12_500);
        assert_eq!(burst_bytes(10_000_000_000), 1_250_000);
    }

    #[test]
    fn a_packet_limit_is_a_pfifo_inside_tbf() {
        let link = Link {
            rate_bps: Some(20_000_000),
            queue: Queue::Packets(100),
            ..Link::default()
        };
        let joined: Vec<String> = tc_commands("rtr-rcv", &link)
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert_eq!(
            joined,
            [
                "qdisc replace dev rtr-rcv root handle 1: tbf rate 20000000bit burst 2500 limit 151400",
                "qdisc replace dev rtr-rcv parent 1:1 handle 10: pfifo limit 100",
            ]
        );
        let bytes = Link {
            queue: Queue::Bytes(64_000),
            ..link
        };
        let joined: Vec<String> = tc_commands("rtr-snd", &bytes)
            .iter()
            .map(|c| c.join(" "))
            .collect();
        assert_eq!(
            joined,
            ["qdisc replace dev rtr-snd root handle 1: tbf rate 20000000bit burst 2500 limit 64000"]
        );
        assert!(tc_commands("rtr-snd", &Link::default()).is_empty());
    }
}
