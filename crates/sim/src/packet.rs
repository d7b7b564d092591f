//! Packets: plain metadata, copied by value through queues and pipes. No
//! payload, no allocation.

use crate::time::Time;

/// The ECN field of the IP header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect,
    Ce,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A TCP segment carrying data.
    Data,
    /// A pure TCP ACK.
    Ack,
    /// An ICMP echo request (left to right) and its reply.
    PingRequest,
    PingReply,
    /// A UDP datagram of constant-rate cross traffic.
    Udp,
    /// A request of a request/response flow, receiver to sender.
    Request,
}

impl Kind {
    /// Does this packet travel in its flow's reverse direction (and so use
    /// its flow's second pipe)?
    pub fn is_reverse(self) -> bool {
        matches!(self, Kind::Ack | Kind::PingReply | Kind::Request)
    }
}

/// Where an endpoint's packets go as it sends them: onto the world's link,
/// or into a `Vec` (tests).
pub trait Wire {
    fn send(&mut self, p: Packet);
}

impl Wire for Vec<Packet> {
    fn send(&mut self, p: Packet) {
        self.push(p);
    }
}

/// Header bytes on a data segment or ACK: IPv4 20 + TCP 20 + timestamps 12.
pub const HEADER_BYTES: u32 = 52;

/// Up to three SACK blocks, as fit in a header with timestamps.
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub flow: u32,
    pub kind: Kind,
    /// Data: the segment's index. ACK: the next segment expected
    /// (cumulative ACK).
    pub seq: u32,
    /// Bytes on the wire (IP packet).
    pub bytes: u32,
    pub ecn: Ecn,
    /// ACK: ECN-Echo.
    pub ece: bool,
    /// Data: Congestion Window Reduced.
    pub cwr: bool,
    /// ACK: the first SACK block reports a duplicate (D-SACK, RFC 2883).
    pub dsack: bool,
    /// ACK: SACK blocks as [start, end) segment indexes.
    pub sack: [(u32, u32); MAX_SACK_BLOCKS],
    pub nsack: u8,
    /// A time kept by the packet's current holder: when it entered its
    /// queue (a queue's sojourn times), or when it reaches the end of its
    /// pipe. Carried in the packet so that a pipe's record is the packet.
    pub at: Time,
    /// When its sender sent it (pings measure their RTT with it).
    pub sent: Time,
}

/// An empty data packet: what a ring buffer's unused slots hold.
impl Default for Packet {
    fn default() -> Packet {
        Packet::data(0, 0, 0)
    }
}

/// What the link models' queues read and change: the IP bytes, the ECN
/// field, and the time field, which holds the enqueue time while a queue
/// has the packet (a packet is never in a queue and a pipe at once).
impl kleinrock_link::packet::Packet for Packet {
    #[inline(always)]
    fn bytes(&self) -> u32 {
        self.bytes
    }

    #[inline(always)]
    fn ecn_capable(&self) -> bool {
        self.ecn != Ecn::NotEct
    }

    #[inline(always)]
    fn set_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }
}

impl kleinrock_link::packet::HeldPacket for Packet {
    #[inline(always)]
    fn enqueued(&self) -> Time {
        self.at
    }

    #[inline(always)]
    fn set_enqueued(&mut self, now: Time) {
        self.at = now;
    }

    #[inline(always)]
    fn flow(&self) -> u32 {
        self.flow
    }
}

impl Packet {
    pub fn data(flow: u32, seq: u32, bytes: u32) -> Packet {
        Packet {
            flow,
            kind: Kind::Data,
            seq,
            bytes,
            ecn: Ecn::NotEct,
            ece: false,
            cwr: false,
            dsack: false,
            sack: [(0, 0); MAX_SACK_BLOCKS],
            nsack: 0,
            at: 0,
            sent: 0,
        }
    }

    pub fn ack(flow: u32, cum: u32, bytes: u32) -> Packet {
        Packet {
            kind: Kind::Ack,
            ..Packet::data(flow, cum, bytes)
        }
    }

    pub fn other(flow: u32, kind: Kind, bytes: u32, sent: Time) -> Packet {
        Packet {
            kind,
            sent,
            ..Packet::data(flow, 0, bytes)
        }
    }

    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.nsack as usize]
    }
}
