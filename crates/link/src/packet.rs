//! What a queue sees of a packet, and may do to it: the traits each engine
//! implements for its own packets. The simulator's packets are plain
//! metadata; the lab's are IP packets in the slots of its delay line. The
//! queues are generic over these traits and monomorphised, so a queue costs
//! the simulator what it did when it knew the simulator's packet type.

use crate::time::Time;

/// What every queue discipline reads of a packet and may do to it.
pub trait Packet {
    /// Bytes the queue counts against a byte limit and in its backlog:
    /// the IP packet.
    fn bytes(&self) -> u32;

    /// Is its ECN field ECT(0), ECT(1) or CE (RFC 3168)? Only such a
    /// packet is ever marked instead of dropped. An already-CE packet
    /// counts as marked when a queue marks it, as in Linux, whose
    /// `INET_ECN_set_ce()` reports success for it.
    fn ecn_capable(&self) -> bool;

    /// Sets its ECN field to CE; called only when [`Packet::ecn_capable`].
    fn set_ce(&mut self);
}

/// A packet a queue holds and hands out later (CoDel, FQ-CoDel): it
/// carries the time it was queued, for the sojourn time at dequeue, and
/// the flow it belongs to, for flow queueing.
pub trait HeldPacket: Packet {
    /// When it entered the queue (what [`HeldPacket::set_enqueued`] left).
    fn enqueued(&self) -> Time;

    fn set_enqueued(&mut self, now: Time);

    /// Its flow, as a classifier's key: equal for the packets of one flow
    /// (FQ-CoDel takes it modulo its number of queues).
    fn flow(&self) -> u32;
}

/// Where a queue puts the packets it drops, as a Linux qdisc puts them on
/// the `to_free` list its caller frees (`qdisc_drop()`): a packet that
/// owns storage (a slot of the lab's delay line) must be given back, and
/// a queue that drops one would otherwise lose it. The simulator's packets
/// are plain values and need nothing ([`Forget`]).
pub trait ToFree<P> {
    fn free(&mut self, p: P);
}

/// Lets dropped packets go: for packets that own nothing.
pub struct Forget;

impl<P> ToFree<P> for Forget {
    #[inline(always)]
    fn free(&mut self, _: P) {}
}

/// Keeps dropped packets, in the order they were dropped (tests).
impl<P> ToFree<P> for Vec<P> {
    fn free(&mut self, p: P) {
        self.push(p);
    }
}

/// A packet for the crate's own tests.
#[cfg(test)]
pub(crate) mod test {
    use super::*;

    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub enum Ecn {
        #[default]
        NotEct,
        Ect,
        Ce,
    }

    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct TestPacket {
        pub flow: u32,
        pub seq: u32,
        pub bytes: u32,
        pub ecn: Ecn,
        pub at: Time,
    }

    impl TestPacket {
        pub fn data(flow: u32, seq: u32, bytes: u32) -> TestPacket {
            TestPacket {
                flow,
                seq,
                bytes,
                ..TestPacket::default()
            }
        }
    }

    impl Packet for TestPacket {
        fn bytes(&self) -> u32 {
            self.bytes
        }

        fn ecn_capable(&self) -> bool {
            self.ecn != Ecn::NotEct
        }

        fn set_ce(&mut self) {
            self.ecn = Ecn::Ce;
        }
    }

    impl HeldPacket for TestPacket {
        fn enqueued(&self) -> Time {
            self.at
        }

        fn set_enqueued(&mut self, now: Time) {
            self.at = now;
        }

        fn flow(&self) -> u32 {
            self.flow
        }
    }
}
