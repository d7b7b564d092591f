//! The TCP receiver: cumulative ACKs with SACK blocks, Linux-like delayed
//! ACKs, D-SACK for duplicates, and ECN echo as the flow's algorithm asks
//! (`CongestionControl::ce_echo`): classic (RFC 3168, ECE latched until
//! CWR) or per packet (DCTCP's: ECE follows each packet's mark, RFC 8257
//! 3.2).
//!
//! ACK policy (`__tcp_ack_snd_check()`): quick-ACK every segment for the
//! first 16 ACKs of a connection; afterwards ACK once more than one full
//! segment is unacknowledged, else arm the 40 ms delayed-ACK timer; ACK at
//! once on out-of-order data, on a duplicate, and when a hole fills.
//! SACK compression (Linux's 1 ms dupack coalescing) is not modelled.

use kleinrock_cc::ops::CeEcho;

use crate::packet::{Ecn, Packet, Wire, HEADER_BYTES, MAX_SACK_BLOCKS};
use crate::time::{Time, MS};

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
    /// How CE is echoed, with the per-packet echo's state.
    echo: CeEcho,
    /// ECE on the ACKs sent now (`TCP_ECN_DEMAND_CWR`).
    ece: bool,
    /// An ECT or CE segment has arrived (`TCP_ECN_SEEN`).
    ecn_seen: bool,
    /// Segments delivered in order to the application.
    pub delivered: u64,
    pub acks_sent: u64,
}

impl Receiver {
    /// A receiver echoing CE as `echo` says (the flow's algorithm's
    /// `ce_echo()`); with `delayed_acks` false it ACKs every segment.
    pub fn new(flow: u32, delayed_acks: bool, echo: CeEcho) -> Receiver {
        Receiver {
            flow,
            rcv_nxt: 0,
            ooo: Vec::with_capacity(8),
            quick: if delayed_acks { QUICKACKS } else { u32::MAX },
            unacked: 0,
            delack_at: None,
            echo,
            ece: false,
            ecn_seen: false,
            delivered: 0,
            acks_sent: 0,
        }
    }

    pub fn delack_deadline(&self) -> Option<Time> {
        self.delack_at
    }

    /// An ACK of everything below `cum`, with the current SACK blocks.
    fn ack_packet(&self, cum: u32, ece: bool, dsack: Option<(u32, u32)>) -> Packet {
        let mut p = Packet::ack(self.flow, cum, HEADER_BYTES);
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
        p.ece = ece;
        p
    }

    /// Sends the ACK of `rcv_nxt`: `tcp_event_ack_sent()` clears the
    /// delayed-ACK state and spends a quick ACK.
    fn ack(&mut self, dsack: Option<(u32, u32)>) -> Packet {
        let p = self.ack_packet(self.rcv_nxt, self.ece, dsack);
        self.unacked = 0;
        self.delack_at = None;
        self.quick = self.quick.saturating_sub(1);
        self.acks_sent += 1;
        p
    }

    /// `tcp_enter_quickack_mode(sk, 2)`: ACK the next two segments at once.
    fn quickack(&mut self) {
        self.quick = self.quick.max(2);
    }

    /// `__tcp_ecn_check_ce()` for one ECN-capable (or not) data packet,
    /// after `rcv_nxt` has taken it in; true if it must be ACKed at once.
    /// The Not-ECT case, every packet of a run without ECN, is inlined.
    #[inline(always)]
    fn check_ce(&mut self, p: &Packet, out: &mut impl Wire) -> bool {
        if p.ecn == Ecn::NotEct {
            // After ECT has been seen, a Not-ECT segment is probably a
            // retransmission: ACK quickly.
            if self.ecn_seen {
                self.quickack();
            }
            return false;
        }
        self.check_ect(p, out)
    }

    /// `check_ce` for an ECT or CE packet.
    #[inline(never)]
    fn check_ect(&mut self, p: &Packet, out: &mut impl Wire) -> bool {
        self.ecn_seen = true;
        let ce = p.ecn == Ecn::Ce;
        match &mut self.echo {
            CeEcho::Latched => {
                if ce && !self.ece {
                    // The sender may have a tiny cwnd: do not delay.
                    self.quickack();
                    self.ece = true;
                }
                false
            }
            CeEcho::PerPacket(state) => {
                let r = state.update(self.rcv_nxt, ce, self.delack_at.is_some());
                if let Some((cum, ece)) = r.flush {
                    // Not `ack()`: an ACK below rcv_nxt leaves the delayed
                    // ACK state alone (`tcp_event_ack_sent()`).
                    out.send(self.ack_packet(cum, ece, None));
                    self.acks_sent += 1;
                    if cum == self.rcv_nxt {
                        self.unacked = 0;
                        self.delack_at = None;
                        self.quick = self.quick.saturating_sub(1);
                    }
                }
                self.ece = r.ece;
                r.ack_now
            }
        }
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
    /// Returns true if it armed the delayed-ACK timer: the one change of
    /// the receiver's deadline that can bring its flow's wakeup forward
    /// (sending an ACK only clears it).
    pub fn on_data(&mut self, now: Time, p: &Packet, out: &mut impl Wire) -> bool {
        // tcp_ecn_accept_cwr(): the sender has reduced; it may be down to
        // a packet or two, so ACK at once.
        let mut now_ack = false;
        if p.cwr {
            self.ece = false;
            now_ack = true;
        }
        let seq = p.seq;
        if seq < self.rcv_nxt {
            out.send(self.ack(Some((seq, seq + 1))));
            return false;
        }
        if seq > self.rcv_nxt {
            self.check_ce(p, out);
            if !self.add_ooo(seq) {
                out.send(self.ack(Some((seq, seq + 1))));
                return false;
            }
            out.send(self.ack(None));
            return false;
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
        now_ack |= self.check_ce(p, out);
        if had_ooo || self.quick > 0 || self.unacked > 1 || now_ack {
            out.send(self.ack(None));
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + DELACK);
            return true;
        }
        false
    }

    /// The delayed-ACK timer; true if it sent the ACK.
    pub fn on_timer(&mut self, now: Time, out: &mut impl Wire) -> bool {
        let due = self.delack_at.is_some_and(|t| t <= now);
        if due {
            out.send(self.ack(None));
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_cc::CongestionControl;

    fn data(seq: u32) -> Packet {
        Packet::data(0, seq, 1500)
    }

    #[test]
    fn quick_acks_then_every_second_segment() {
        let mut r = Receiver::new(0, true, CeEcho::Latched);
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
        let mut r = Receiver::new(0, true, CeEcho::Latched);
        r.quick = 0;
        let mut out = Vec::new();
        assert!(
            r.on_data(1000, &data(0), &mut out),
            "arming the delayed ACK is reported"
        );
        assert!(out.is_empty());
        assert_eq!(r.delack_deadline(), Some(1000 + DELACK));
        r.on_timer(1000 + DELACK - 1, &mut out);
        assert!(out.is_empty());
        r.on_timer(1000 + DELACK, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].seq, 1);
        // The next segment arms it again; the one after is ACKed at once,
        // which clears the deadline and is not reported.
        assert!(r.on_data(2000 + DELACK, &data(1), &mut out));
        assert!(!r.on_data(2000 + DELACK, &data(2), &mut out));
        assert_eq!(r.delack_deadline(), None);
        assert_eq!(out.last().unwrap().seq, 3);
    }

    #[test]
    fn holes_produce_sack_blocks_most_recent_first() {
        let mut r = Receiver::new(0, true, CeEcho::Latched);
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
        let mut r = Receiver::new(0, true, CeEcho::Latched);
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

    fn marked(seq: u32, ce: bool) -> Packet {
        let mut p = data(seq);
        p.ecn = if ce { Ecn::Ce } else { Ecn::Ect };
        p
    }

    #[test]
    fn classic_echo_acks_the_first_mark_quickly() {
        let mut r = Receiver::new(0, true, CeEcho::Latched);
        r.quick = 0;
        let mut out = Vec::new();
        r.on_data(0, &marked(0, false), &mut out);
        assert!(out.is_empty(), "an unmarked lone segment waits");
        r.on_data(0, &marked(1, true), &mut out);
        r.on_data(0, &marked(2, false), &mut out);
        // Quick-ACK mode for two segments: both ACKed at once, with ECE.
        assert_eq!(
            out.iter().map(|a| (a.seq, a.ece)).collect::<Vec<_>>(),
            [(2, true), (3, true)]
        );
        out.clear();
        // Later marks while ECE is latched change nothing.
        r.on_data(0, &marked(3, true), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn dctcp_echo_reports_each_packets_mark_and_flushes_on_a_flip() {
        let dctcp: kleinrock_cc::Algorithm = "dctcp".parse().unwrap();
        let mut r = Receiver::new(0, true, dctcp.ce_echo());
        r.quick = 0;
        let mut out = Vec::new();
        let acks = |out: &mut Vec<Packet>| {
            let v: Vec<(u32, bool)> = out.iter().map(|a| (a.seq, a.ece)).collect();
            out.clear();
            v
        };
        r.on_data(0, &marked(0, false), &mut out);
        assert_eq!(acks(&mut out), []);
        // Flip to CE with segment 0's ACK delayed: that ACK goes first
        // without ECE, then segment 1's with ECE.
        r.on_data(0, &marked(1, true), &mut out);
        assert_eq!(acks(&mut out), [(1, false), (2, true)]);
        // Still CE: ordinary delayed ACKs, every second segment, with ECE.
        r.on_data(0, &marked(2, true), &mut out);
        assert_eq!(acks(&mut out), []);
        r.on_data(0, &marked(3, true), &mut out);
        assert_eq!(acks(&mut out), [(4, true)]);
        // Flip back with nothing delayed: one immediate ACK without ECE.
        r.on_data(0, &marked(4, false), &mut out);
        assert_eq!(acks(&mut out), [(5, false)]);
        // CWR does not unlatch anything DCTCP did not latch.
        let mut c = marked(5, true);
        c.cwr = true;
        r.on_data(0, &c, &mut out);
        assert_eq!(acks(&mut out), [(6, true)]);
    }
}
