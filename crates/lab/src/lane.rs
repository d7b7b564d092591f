//! One direction of the delay line, without I/O: a ring of packet slots in
//! arrival order, each with the time it is to be released.
//!
//! A packet's stay is decided when it arrives. With a bottleneck, the
//! packet first waits in a FIFO served at a fixed rate; since the server
//! is work-conserving and first-come first-served, its departure is
//! `max(arrival, previous departure) + size / rate`, known at arrival. The
//! propagation delay follows: release = departure + delay. Releases never
//! go backwards (a delay shortened at run time makes later packets wait
//! behind earlier ones rather than overtake them), so one ring in arrival
//! order holds both the bottleneck's queue and the packets "on the wire",
//! and the next event is always the head's release.
//!
//! Whether the bottleneck takes a packet is decided by `kleinrock-link`'s
//! FIFO, the one the simulator's FIFO links run, with the same arithmetic:
//! an arrival that finds the link busy and `limit` packets waiting (the one
//! being sent not counted) is dropped, and an ECN-capable one that finds
//! at least K waiting is marked CE (DCTCP's step marking: more than K in
//! the switch, the one being sent included; Alizadeh et al., "Data Center
//! TCP", SIGCOMM 2010, section 3.1); an arrival that finds the link idle
//! is sent at once. The one difference from the simulator is the size the
//! rate serves: the frame on veth (IP packet plus Ethernet header), as tbf
//! counts it, where the simulator's link serves the IP packet.

use kleinrock_link::queue::{Fifo, Limit, Verdict};
use kleinrock_link::time::serialization;

use crate::config::{Bottleneck, ETHERNET_HEADER, MTU};
use crate::ecn::IpPacket;

/// Bytes per slot: the TUN devices' MTU rounded up to a power of two, so
/// that every packet fits.
pub(crate) const SLOT: usize = (MTU as usize).next_power_of_two();

#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    len: u16,
    release: u64,
}

/// The bottleneck: the link models' FIFO in front of a serializer of fixed
/// rate.
#[derive(Debug)]
struct Server {
    rate_bps: u64,
    fifo: Fifo,
    /// When the last admitted packet leaves the bottleneck.
    busy_until: u64,
}

impl Server {
    fn new(b: &Bottleneck) -> Server {
        Server {
            rate_bps: b.rate_bps,
            fifo: Fifo::new(Limit::Packets(b.limit), b.ecn_threshold),
            busy_until: 0,
        }
    }

    /// Time to send a `len`-byte IP packet as a frame on veth.
    fn service_ns(&self, len: usize) -> u64 {
        serialization(len as u32 + ETHERNET_HEADER, self.rate_bps)
    }

    /// A packet arrives at `now`: the FIFO decides (and may set CE on it);
    /// if it is taken, its departure is then [`Server::busy_until`].
    fn admit(&mut self, now: u64, packet: &mut [u8]) -> Verdict {
        self.fifo.advance(now, self.busy_until);
        let start = self.busy_until.max(now);
        let verdict = self.fifo.admit(now, &mut IpPacket(packet), start);
        if verdict != Verdict::Dropped {
            self.busy_until = start + self.service_ns(packet.len());
        }
        verdict
    }
}

/// Slots and their metadata, indexed by absolute packet numbers.
#[derive(Debug)]
struct Ring {
    buf: Box<[u8]>,
    meta: Box<[Meta]>,
    mask: usize,
    /// The next packet to release, and the next free slot.
    head: u64,
    tail: u64,
}

impl Ring {
    fn is_full(&self) -> bool {
        self.tail - self.head == self.meta.len() as u64
    }

    fn meta(&self, n: u64) -> &Meta {
        &self.meta[n as usize & self.mask]
    }

    fn bytes_mut(&mut self, n: u64, len: usize) -> &mut [u8] {
        let at = (n as usize & self.mask) * SLOT;
        &mut self.buf[at..at + len]
    }
}

/// All times are nanoseconds on one monotonic clock.
#[derive(Debug)]
pub(crate) struct Lane {
    ring: Ring,
    last_release: u64,
    server: Option<Server>,
}

impl Lane {
    /// A lane of `capacity` slots (a power of two), allocated here once;
    /// the pages are touched only as packets fill them.
    pub(crate) fn new(capacity: usize, bottleneck: Option<&Bottleneck>) -> Lane {
        assert!(capacity.is_power_of_two(), "lane capacity {capacity}");
        Lane {
            ring: Ring {
                buf: vec![0; capacity * SLOT].into_boxed_slice(),
                meta: vec![Meta::default(); capacity].into_boxed_slice(),
                mask: capacity - 1,
                head: 0,
                tail: 0,
            },
            last_release: 0,
            server: bottleneck.map(Server::new),
        }
    }

    /// The slot the next arrival is to be read into, or `None` when every
    /// slot holds a packet not yet released.
    pub(crate) fn free_slot(&mut self) -> Option<&mut [u8]> {
        if self.ring.is_full() {
            return None;
        }
        Some(self.ring.bytes_mut(self.ring.tail, SLOT))
    }

    /// Commits the `len` bytes just read into [`Lane::free_slot`], which
    /// arrived at `now` and are to cross a propagation delay of `delay`:
    /// queued (perhaps marked CE by the bottleneck) or dropped by it.
    pub(crate) fn admit(&mut self, len: usize, now: u64, delay: u64) -> Verdict {
        debug_assert!(len <= SLOT && !self.ring.is_full());
        let ring = &mut self.ring;
        let mut verdict = Verdict::Queued;
        let mut departure = now;
        if let Some(server) = self.server.as_mut() {
            verdict = server.admit(now, ring.bytes_mut(ring.tail, len));
            if verdict == Verdict::Dropped {
                return verdict;
            }
            departure = server.busy_until;
        }
        let release = (departure + delay).max(self.last_release);
        self.last_release = release;
        let i = ring.tail as usize & ring.mask;
        ring.meta[i] = Meta {
            len: len as u16,
            release,
        };
        ring.tail += 1;
        verdict
    }

    /// When the head packet is to be released, if there is one.
    pub(crate) fn next_release(&self) -> Option<u64> {
        let ring = &self.ring;
        (ring.head < ring.tail).then(|| ring.meta(ring.head).release)
    }

    /// The head packet, if its release time has come by `now`.
    pub(crate) fn due(&self, now: u64) -> Option<&[u8]> {
        let ring = &self.ring;
        let meta = ring.meta(ring.head);
        if ring.head == ring.tail || meta.release > now {
            return None;
        }
        let at = (ring.head as usize & ring.mask) * SLOT;
        Some(&ring.buf[at..at + usize::from(meta.len)])
    }

    /// Forgets the head packet (after [`Lane::due`] handed it out).
    pub(crate) fn pop(&mut self) {
        debug_assert!(self.ring.head < self.ring.tail);
        self.ring.head += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    /// A 1486-byte IPv4 packet (1500 bytes as a frame: 12000 bits) with the
    /// given ECN bits and a tag in its last byte.
    fn packet(ecn: u8, tag: u8) -> Vec<u8> {
        let mut p = vec![0u8; 1486];
        p[0] = 0x45;
        p[1] = ecn;
        p[1485] = tag;
        p
    }

    fn offer(lane: &mut Lane, p: &[u8], now: u64, delay: u64) -> Verdict {
        lane.free_slot().unwrap()[..p.len()].copy_from_slice(p);
        lane.admit(p.len(), now, delay)
    }

    /// Every packet with its release time, in release order.
    fn drain(lane: &mut Lane) -> Vec<(u64, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(at) = lane.next_release() {
            assert_eq!(lane.due(at - 1), None, "released early");
            out.push((at, lane.due(at).unwrap().to_vec()));
            lane.pop();
        }
        out
    }

    /// 12 Mbit/s serves a 1500-byte frame in exactly 1 ms.
    fn bottleneck(limit: u32, k: Option<u32>) -> Bottleneck {
        Bottleneck {
            rate_bps: 12_000_000,
            limit,
            ecn_threshold: k,
        }
    }

    #[test]
    fn each_packet_is_held_exactly_the_delay_in_order() {
        let mut lane = Lane::new(8, None);
        for (i, t) in [0, US, 5 * US, 5 * US, 7 * MS].into_iter().enumerate() {
            assert_eq!(
                offer(&mut lane, &packet(0, i as u8), t, 20 * MS),
                Verdict::Queued
            );
        }
        let out = drain(&mut lane);
        let releases: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            releases,
            [
                20 * MS,
                20 * MS + US,
                20 * MS + 5 * US,
                20 * MS + 5 * US,
                27 * MS
            ]
        );
        let tags: Vec<u8> = out.iter().map(|(_, p)| p[1485]).collect();
        assert_eq!(tags, [0, 1, 2, 3, 4]);
        assert!(out.iter().all(|(_, p)| p.len() == 1486));
    }

    #[test]
    fn a_shortened_delay_does_not_reorder() {
        let mut lane = Lane::new(8, None);
        offer(&mut lane, &packet(0, 0), 0, 20 * MS);
        offer(&mut lane, &packet(0, 1), MS, 5 * MS);
        offer(&mut lane, &packet(0, 2), 30 * MS, 5 * MS);
        let releases: Vec<u64> = drain(&mut lane).iter().map(|(t, _)| *t).collect();
        assert_eq!(releases, [20 * MS, 20 * MS, 35 * MS]);
    }

    #[test]
    fn the_bottleneck_serves_back_to_back_at_its_rate_then_the_delay_follows() {
        let mut lane = Lane::new(16, Some(&bottleneck(100, None)));
        for i in 0..3 {
            offer(&mut lane, &packet(0, i), 0, 10 * MS);
        }
        // Idle again by then: served from its own arrival.
        offer(&mut lane, &packet(0, 3), 50 * MS, 10 * MS);
        // Arrives while the fourth is being sent.
        offer(&mut lane, &packet(0, 4), 50 * MS + 300 * US, 10 * MS);
        let releases: Vec<u64> = drain(&mut lane).iter().map(|(t, _)| *t).collect();
        assert_eq!(releases, [11 * MS, 12 * MS, 13 * MS, 61 * MS, 62 * MS]);
    }

    #[test]
    fn ect_arrivals_finding_more_than_k_queued_are_marked_and_the_limit_drops() {
        // At most 4 waiting, 5 with the one being sent.
        let mut lane = Lane::new(16, Some(&bottleneck(4, Some(2))));
        let verdicts: Vec<Verdict> = (0..7)
            .map(|i| offer(&mut lane, &packet(0b10, i), 0, 0))
            .collect();
        use Verdict::*;
        // In the bottleneck at arrival, the one being sent included: 0 1 2
        // 3 4 5 5; waiting: none (sent at once), 0 1 2 3 4 4.
        assert_eq!(
            verdicts,
            [Queued, Queued, Queued, Marked, Marked, Dropped, Dropped]
        );
        // At 2.5 ms two have left: the arrival finds 3 in the bottleneck,
        // more than K (2 waiting, at least K).
        assert_eq!(offer(&mut lane, &packet(0b01, 7), 2500 * US, 0), Marked);
        // By 5.5 ms the first five have left; only the one that arrived at
        // 2.5 ms (departing at 6 ms) is still queued.
        assert_eq!(offer(&mut lane, &packet(0b10, 8), 5500 * US, 0), Queued);
        let out = drain(&mut lane);
        let marks: Vec<(u8, u8)> = out.iter().map(|(_, p)| (p[1485], p[1] & 3)).collect();
        assert_eq!(
            marks,
            [(0, 2), (1, 2), (2, 2), (3, 3), (4, 3), (7, 3), (8, 2)]
        );
        let releases: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
        assert_eq!(
            releases,
            [MS, 2 * MS, 3 * MS, 4 * MS, 5 * MS, 6 * MS, 7 * MS]
        );
    }

    #[test]
    fn not_ect_packets_are_never_marked_but_are_dropped_at_the_limit() {
        let mut lane = Lane::new(16, Some(&bottleneck(3, Some(1))));
        let verdicts: Vec<Verdict> = (0..5)
            .map(|i| offer(&mut lane, &packet(0, i), 0, 0))
            .collect();
        use Verdict::*;
        assert_eq!(verdicts, [Queued, Queued, Queued, Queued, Dropped]);
        assert!(drain(&mut lane).iter().all(|(_, p)| p[1] == 0));
    }

    #[test]
    fn a_packet_released_before_the_queue_is_next_looked_at_is_not_counted() {
        // Release (departure + 0 delay) pops packets before the bottleneck
        // next looks at its queue: what it counts must not depend on what
        // the ring has released.
        let mut lane = Lane::new(4, Some(&bottleneck(10, Some(0))));
        offer(&mut lane, &packet(0b10, 0), 0, 0);
        offer(&mut lane, &packet(0b10, 1), 0, 0);
        while lane.due(10 * MS).is_some() {
            lane.pop();
        }
        for i in 0..4 {
            assert_eq!(
                offer(&mut lane, &packet(0b10, i), 10 * MS, 0),
                if i == 0 {
                    Verdict::Queued
                } else {
                    Verdict::Marked
                }
            );
        }
    }

    #[test]
    fn a_full_ring_has_no_free_slot_until_the_head_is_released() {
        let mut lane = Lane::new(4, None);
        for i in 0..4 {
            offer(&mut lane, &packet(0, i), 0, MS);
        }
        assert!(lane.free_slot().is_none());
        assert_eq!(lane.due(MS - 1), None);
        assert_eq!(lane.due(MS).unwrap()[1485], 0);
        lane.pop();
        assert!(lane.free_slot().is_some());
        offer(&mut lane, &packet(0, 4), 2 * MS, MS);
        let tags: Vec<u8> = drain(&mut lane).iter().map(|(_, p)| p[1485]).collect();
        assert_eq!(tags, [1, 2, 3, 4]);
    }

    #[test]
    fn service_time_counts_the_ethernet_header() {
        let server = Server::new(&Bottleneck {
            rate_bps: 10_000_000,
            limit: 1,
            ecn_threshold: None,
        });
        // (1500 + 14) * 8 bits at 10 Mbit/s.
        assert_eq!(server.service_ns(1500), 1_211_200);
        // 40-byte ACK: 54 * 8 bits.
        assert_eq!(server.service_ns(40), 43_200);
    }
}
