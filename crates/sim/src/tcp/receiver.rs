//! The TCP receiver: cumulative ACKs with SACK blocks, Linux-like delayed
//! ACKs, D-SACK for duplicates, and the classic ECN echo (RFC 3168).
//!
//! ACK policy (`__tcp_ack_snd_check()`): quick-ACK every segment for the
//! first 16 ACKs of a connection; afterwards ACK once more than one full
//! segment is unacknowledged, else arm the 40 ms delayed-ACK timer; ACK at
//! once on out-of-order data, on a duplicate, and when a hole fills.
//! SACK compression (Linux's 1 ms dupack coalescing) is not modelled.

use crate::packet::{Ecn, Packet, MAX_SACK_BLOCKS};
use crate::time::{Time, MS};

use super::sender::HEADER_BYTES;

/// `TCP_MAX_QUICKACKS`.
pub const QUICKACKS: u32 = 16;
/// `TCP_DELACK_MIN`: the delayed-ACK timer.
pub const DELACK: Time = 40 * MS;

#[derive(Clone, Debug)]
pub struct Receiver {
    pub flow: u32,
    /// Next in-order segment expected.
    pub rcv_nxt: u32,
    /// Out-of-order ranges [start, end), most recently changed first.
    ooo: Vec<(u32, u32)>,
    quick: u32,
    /// In-order segments received since the last ACK.
    unacked: u32,
    delack_at: Option<Time>,
    /// Echo ECE until the sender says CWR.
    ece: bool,
    /// Segments delivered in order to the application.
    pub delivered: u64,
    pub acks_sent: u64,
}

impl Receiver {
    /// A receiver; with `delayed_acks` false it ACKs every segment.
    pub fn new(flow: u32, delayed_acks: bool) -> Receiver {
        Receiver {
            flow,
            rcv_nxt: 0,
            ooo: Vec::with_capacity(8),
            quick: if delayed_acks { QUICKACKS } else { u32::MAX },
            unacked: 0,
            delack_at: None,
            ece: false,
            delivered: 0,
            acks_sent: 0,
        }
    }

    pub fn delack_deadline(&self) -> Option<Time> {
        self.delack_at
    }

    fn ack(&mut self, dsack: Option<(u32, u32)>) -> Packet {
        let mut p = Packet::ack(self.flow, self.rcv_nxt, HEADER_BYTES);
        let mut n = 0;
        if let Some(d) = dsack {
            p.sack[0] = d;
            p.dsack = true;
            n = 1;
        }
        for &b in self.ooo.iter().take(MAX_SACK_BLOCKS - n) {
            p.sack[n] = b;
            n += 1;
        }
        p.nsack = n as u8;
        if n > 0 {
            p.bytes += 4 + 8 * n as u32;
        }
        p.ece = self.ece;
        self.unacked = 0;
        self.delack_at = None;
        self.quick = self.quick.saturating_sub(1);
        self.acks_sent += 1;
        p
    }

    /// Adds `seq` to the out-of-order ranges, merging neighbours, and moves
    /// its range to the front. Returns false if it was already there.
    fn add_ooo(&mut self, seq: u32) -> bool {
        if self.ooo.iter().any(|&(s, e)| seq >= s && seq < e) {
            return false;
        }
        let mut block = (seq, seq + 1);
        self.ooo.retain(|&(s, e)| {
            if e == block.0 || s == block.1 {
                block = (block.0.min(s), block.1.max(e));
                false
            } else {
                true
            }
        });
        self.ooo.insert(0, block);
        true
    }

    /// A data segment arrives; any ACK to send now is pushed to `out`.
    pub fn on_data(&mut self, now: Time, p: &Packet, out: &mut Vec<Packet>) {
        if p.ecn == Ecn::Ce {
            self.ece = true;
        }
        if p.cwr {
            self.ece = p.ecn == Ecn::Ce;
        }
        let seq = p.seq;
        if seq < self.rcv_nxt {
            out.push(self.ack(Some((seq, seq + 1))));
            return;
        }
        if seq > self.rcv_nxt {
            if !self.add_ooo(seq) {
                out.push(self.ack(Some((seq, seq + 1))));
                return;
            }
            out.push(self.ack(None));
            return;
        }
        // In order: advance over any ranges it joins.
        self.rcv_nxt += 1;
        let mut advanced = 1;
        let had_ooo = !self.ooo.is_empty();
        while let Some(i) = self.ooo.iter().position(|&(s, _)| s == self.rcv_nxt) {
            let (s, e) = self.ooo.remove(i);
            advanced += e - s;
            self.rcv_nxt = e;
        }
        self.delivered += advanced as u64;
        self.unacked += advanced;
        if had_ooo || self.quick > 0 || self.unacked > 1 || p.ecn == Ecn::Ce {
            out.push(self.ack(None));
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + DELACK);
        }
    }

    /// The delayed-ACK timer.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.delack_at.is_some_and(|t| t <= now) {
            out.push(self.ack(None));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u32) -> Packet {
        Packet::data(0, seq, 1500)
    }

    #[test]
    fn quick_acks_then_every_second_segment() {
        let mut r = Receiver::new(0, true);
        let mut out = Vec::new();
        for s in 0..16 {
            r.on_data(0, &data(s), &mut out);
        }
        assert_eq!(out.len(), 16);
        out.clear();
        for s in 16..36 {
            r.on_data(0, &data(s), &mut out);
        }
        assert_eq!(out.len(), 10, "delayed ACKs halve the ACK count");
        assert_eq!(out.last().unwrap().seq, 36);
    }

    #[test]
    fn a_lone_segment_waits_for_the_delack_timer() {
        let mut r = Receiver::new(0, true);
        r.quick = 0;
        let mut out = Vec::new();
        r.on_data(1000, &data(0), &mut out);
        assert!(out.is_empty());
        assert_eq!(r.delack_deadline(), Some(1000 + DELACK));
        r.on_timer(1000 + DELACK - 1, &mut out);
        assert!(out.is_empty());
        r.on_timer(1000 + DELACK, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 1);
    }

    #[test]
    fn holes_produce_sack_blocks_most_recent_first() {
        let mut r = Receiver::new(0, true);
        let mut out = Vec::new();
        r.on_data(0, &data(0), &mut out);
        r.on_data(0, &data(2), &mut out);
        r.on_data(0, &data(3), &mut out);
        r.on_data(0, &data(6), &mut out);
        let last = out.last().unwrap();
        assert_eq!(last.seq, 1);
        assert_eq!(last.sack_blocks(), &[(6, 7), (2, 4)]);
        // The hole fills: ACK at once, up to the first range's end.
        r.on_data(0, &data(1), &mut out);
        let last = out.last().unwrap();
        assert_eq!(last.seq, 4);
        assert_eq!(last.sack_blocks(), &[(6, 7)]);
        // A duplicate is D-SACKed.
        r.on_data(0, &data(2), &mut out);
        let last = out.last().unwrap();
        assert!(last.dsack);
        assert_eq!(last.sack_blocks()[0], (2, 3));
    }

    #[test]
    fn ce_is_echoed_until_cwr() {
        let mut r = Receiver::new(0, true);
        let mut out = Vec::new();
        let mut p = data(0);
        p.ecn = Ecn::Ce;
        r.on_data(0, &p, &mut out);
        assert!(out.last().unwrap().ece);
        r.on_data(0, &data(1), &mut out);
        assert!(out.last().unwrap().ece);
        let mut c = data(2);
        c.cwr = true;
        r.on_data(0, &c, &mut out);
        assert!(!out.last().unwrap().ece);
    }
}
