//! The sender's retransmission queue and SACK scoreboard: one record per
//! segment in flight, `[snd_una, snd_nxt)`, in a ring buffer that grows to
//! the largest window and is then reused (no allocation per packet).

use super::rate::TxStamp;
use kleinrock_link::ring::Ring;

pub const SACKED: u8 = 1 << 0;
pub const LOST: u8 = 1 << 1;
/// Retransmitted and that retransmission still in flight
/// (`TCPCB_SACKED_RETRANS`).
pub const RETRANS: u8 = 1 << 2;
/// Retransmitted at least once (`TCPCB_EVER_RETRANS`).
pub const EVER_RETRANS: u8 = 1 << 3;

/// A segment in flight. The rate sampler's stamp is kept flat, so that
/// the record is 32 bytes where a nested `TxStamp` pads it to 40: the
/// scoreboard holds a window's worth (some 700 records in ns-3's case A),
/// and with the pipes it must share the L1 cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seg {
    /// Time of the latest transmission, µs (`skb_mstamp`).
    pub tx_us: u64,
    first_tx_mstamp: u64,
    delivered_mstamp: u64,
    delivered: u32,
    is_app_limited: bool,
    pub flags: u8,
}

impl Seg {
    pub fn new(tx_us: u64, stamp: TxStamp) -> Seg {
        let mut s = Seg {
            tx_us,
            ..Seg::default()
        };
        s.set_stamp(stamp);
        s
    }

    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    /// What the connection was when this segment was last sent.
    pub fn stamp(&self) -> TxStamp {
        TxStamp {
            first_tx_mstamp: self.first_tx_mstamp,
            delivered_mstamp: self.delivered_mstamp,
            delivered: self.delivered,
            is_app_limited: self.is_app_limited,
        }
    }

    pub fn set_stamp(&mut self, st: TxStamp) {
        self.first_tx_mstamp = st.first_tx_mstamp;
        self.delivered_mstamp = st.delivered_mstamp;
        self.delivered = st.delivered;
        self.is_app_limited = st.is_app_limited;
    }
}

/// Segments in flight and the counts Linux keeps of them.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    /// Addressed by segment index, from `una`.
    segs: Ring<Seg>,
    /// Index of the first segment: `snd_una` in segments.
    pub una: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Segments ever marked lost, a lost retransmission again
    /// (`tp->lost`, wrapping).
    pub lost: u32,
    /// No segment below this needs retransmitting (Linux's
    /// `retransmit_skb_hint`): keeps the search amortised O(1).
    rtx_hint: u32,
    /// (segment, transmit time) in the order of transmission, Linux's
    /// `tsorted_sent_queue`, which RACK walks. An entry goes stale when its
    /// segment is SACKed, cumulatively ACKed, or sent again (a new entry at
    /// the tail); stale entries are skipped, dropped from the head before
    /// a walk, and compacted away once they outnumber the live ones.
    ///
    /// Kept only while a segment from `una` on has been retransmitted
    /// (`tsorted_listed`). Until then every segment in flight was sent
    /// once, in sequence order, so that order is the transmission order
    /// and the list would only repeat `segs`: most segments of most runs
    /// are never listed.
    tsorted: Ring<(u32, u64)>,
    tsorted_listed: bool,
    /// One past the highest segment ever retransmitted: the list is needed
    /// while `una` is below it.
    resent_end: u32,
}

impl Scoreboard {
    /// `snd_nxt` in segments.
    pub fn nxt(&self) -> u32 {
        self.segs.end()
    }

    pub fn packets_out(&self) -> u32 {
        self.segs.len()
    }

    /// `tcp_packets_in_flight()`: out - (sacked + lost) + retrans.
    pub fn in_flight(&self) -> u32 {
        self.packets_out() - (self.sacked_out + self.lost_out) + self.retrans_out
    }

    pub fn get(&self, seq: u32) -> &Seg {
        self.segs.get(seq)
    }

    pub fn get_mut(&mut self, seq: u32) -> &mut Seg {
        self.segs.get_mut(seq)
    }

    pub fn contains(&self, seq: u32) -> bool {
        seq >= self.una && seq < self.nxt()
    }

    /// Appends a new segment (the next `snd_nxt`).
    pub fn push(&mut self, seg: Seg) {
        if self.tsorted_listed {
            if self.una >= self.resent_end {
                // Every segment in flight has been sent once, in order.
                self.tsorted_listed = false;
                self.tsorted.clear();
            } else {
                self.tsorted.push_back((self.nxt(), seg.tx_us));
            }
        }
        self.segs.push_back(seg);
        if self.tsorted_listed {
            self.bound_tsorted();
        }
    }

    /// Starts listing `tsorted`: the segments not SACKed, in sequence
    /// order, which is their order of transmission so far.
    fn list_tsorted(&mut self) {
        debug_assert!(self.tsorted.is_empty());
        for seq in self.una..self.nxt() {
            let s = *self.get(seq);
            if !s.has(SACKED) {
                self.tsorted.push_back((seq, s.tx_us));
            }
        }
        self.tsorted_listed = true;
    }

    /// Is this `tsorted` entry its segment's latest transmission, still
    /// neither ACKed nor SACKed?
    fn is_live(&self, seq: u32, tx_us: u64) -> bool {
        self.contains(seq) && {
            let s = self.get(seq);
            !s.has(SACKED) && s.tx_us == tx_us
        }
    }

    /// Bounds `tsorted`: once stale entries outnumber the live ones (plus
    /// slack), keep only the live. Amortised O(1) per entry.
    #[inline(always)]
    fn bound_tsorted(&mut self) {
        let live = (self.packets_out() - self.sacked_out) as usize;
        if self.tsorted.len() as usize > 2 * live + 64 {
            let mut t = std::mem::take(&mut self.tsorted);
            t.retain(|&(seq, tx)| self.is_live(seq, tx));
            self.tsorted = t;
        }
    }

    /// Drops the stale entries at the head of `tsorted`, so that a walk
    /// starts at a live one. Done before RACK walks rather than on every
    /// transmission: walks are rare unless there is loss.
    pub fn trim_tsorted(&mut self) {
        while let Some(&(seq, tx)) = self.tsorted.front() {
            if self.is_live(seq, tx) {
                break;
            }
            self.tsorted.pop_front();
        }
    }

    /// Segments neither ACKed nor SACKed, with their latest transmit time,
    /// in the order they were (re)transmitted: RACK's walk, as the tests
    /// read it (RACK itself walks by position, marking as it goes).
    #[cfg(test)]
    fn tsorted(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let mut pos = self.tsorted_start();
        std::iter::from_fn(move || {
            let (at, seq, tx_us) = self.tsorted_next(pos)?;
            pos = at.wrapping_add(1);
            Some((seq, tx_us))
        })
    }

    /// Where the walk of [`Scoreboard::tsorted`] starts.
    pub fn tsorted_start(&self) -> u32 {
        if self.tsorted_listed {
            self.tsorted.end().wrapping_sub(self.tsorted.len())
        } else {
            self.una
        }
    }

    /// The walk's next segment at or after position `pos`: its position,
    /// sequence and latest transmit time. Positions are the list's while
    /// it is kept, else sequence numbers. By position, so that a walker
    /// may mark segments lost as it goes without collecting them first
    /// (marking leaves `tsorted`, whether it is kept, and every entry's
    /// liveness as they are).
    pub fn tsorted_next(&self, mut pos: u32) -> Option<(u32, u32, u64)> {
        if !self.tsorted_listed {
            while pos < self.nxt() {
                let s = self.get(pos);
                if !s.has(SACKED) {
                    return Some((pos, pos, s.tx_us));
                }
                pos += 1;
            }
            return None;
        }
        while self.tsorted.contains(pos) {
            let (seq, tx_us) = *self.tsorted.get(pos);
            if self.is_live(seq, tx_us) {
                return Some((pos, seq, tx_us));
            }
            pos = pos.wrapping_add(1);
        }
        None
    }

    /// Removes the head segment (cumulatively ACKed), fixing the counts.
    pub fn pop(&mut self) -> Seg {
        let s = self.segs.pop_front().expect("pop below snd_nxt");
        self.una += 1;
        while self.tsorted.front().is_some_and(|&(seq, _)| seq < self.una) {
            self.tsorted.pop_front();
        }
        self.rtx_hint = self.rtx_hint.max(self.una);
        if s.has(SACKED) {
            self.sacked_out -= 1;
        }
        if s.has(LOST) {
            self.lost_out -= 1;
        }
        if s.has(RETRANS) {
            self.retrans_out -= 1;
        }
        s
    }

    /// Marks `seq` SACKed; returns false if it already was.
    pub fn mark_sacked(&mut self, seq: u32) -> bool {
        let s = self.get_mut(seq);
        if s.has(SACKED) {
            return false;
        }
        let (was_lost, was_retrans) = (s.has(LOST), s.has(RETRANS));
        s.flags = (s.flags | SACKED) & !(LOST | RETRANS);
        self.sacked_out += 1;
        if was_lost {
            self.lost_out -= 1;
        }
        if was_retrans {
            self.retrans_out -= 1;
        }
        true
    }

    /// `tcp_mark_skb_lost()`: marks `seq` lost; returns true if it newly is.
    pub fn mark_lost(&mut self, seq: u32) -> bool {
        let s = self.get_mut(seq);
        if s.has(SACKED) {
            return false;
        }
        let (was_retrans, was_lost) = (s.has(RETRANS), s.has(LOST));
        s.flags = (s.flags & !RETRANS) | LOST;
        if was_retrans {
            self.retrans_out -= 1;
        }
        self.rtx_hint = self.rtx_hint.min(seq);
        if was_lost && !was_retrans {
            return false;
        }
        if !was_lost {
            self.lost_out += 1;
        }
        // tcp_notify_skb_loss_event()
        self.lost = self.lost.wrapping_add(1);
        true
    }

    /// Clears every loss mark (`tcp_undo_cwnd_reduction()` undoing an
    /// RTO or a partial recovery): the segments are in flight after all.
    /// Retransmissions stay in flight beside their originals.
    pub fn unmark_lost(&mut self) {
        if self.lost_out == 0 {
            return;
        }
        for seq in self.una..self.nxt() {
            self.get_mut(seq).flags &= !LOST;
        }
        self.lost_out = 0;
    }

    /// Records a retransmission of `seq` at `tx_us`.
    pub fn mark_retransmitted(&mut self, seq: u32, tx_us: u64, stamp: TxStamp) {
        if !self.tsorted_listed {
            self.list_tsorted();
        }
        self.resent_end = self.resent_end.max(seq + 1);
        let s = self.get_mut(seq);
        debug_assert!(!s.has(RETRANS));
        s.flags |= RETRANS | EVER_RETRANS;
        s.tx_us = tx_us;
        s.set_stamp(stamp);
        self.retrans_out += 1;
        self.tsorted.push_back((seq, tx_us));
        self.bound_tsorted();
    }

    /// The first segment marked lost and not being retransmitted.
    pub fn next_to_retransmit(&mut self) -> Option<u32> {
        if self.lost_out == 0 {
            return None;
        }
        let start = self.rtx_hint.max(self.una);
        let found = (start..self.nxt()).find(|&s| {
            let f = self.get(s).flags;
            f & LOST != 0 && f & (RETRANS | SACKED) == 0
        });
        self.rtx_hint = found.unwrap_or(self.nxt());
        found
    }

    /// Is any segment waiting to be retransmitted?
    pub fn has_lost(&self) -> bool {
        self.lost_out > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_marks() {
        let mut sb = Scoreboard::default();
        for i in 0..10 {
            sb.push(Seg {
                tx_us: i,
                ..Default::default()
            });
        }
        assert_eq!((sb.packets_out(), sb.in_flight()), (10, 10));
        assert!(sb.mark_sacked(3));
        assert!(!sb.mark_sacked(3));
        assert!(sb.mark_lost(1));
        assert!(!sb.mark_lost(3), "a SACKed segment is not lost");
        assert_eq!(sb.in_flight(), 8);
        assert_eq!(sb.next_to_retransmit(), Some(1));
        sb.mark_retransmitted(1, 100, TxStamp::default());
        assert_eq!((sb.retrans_out, sb.in_flight()), (1, 9));
        assert_eq!(sb.next_to_retransmit(), None);
        // The retransmission is lost too.
        assert!(sb.mark_lost(1));
        assert_eq!((sb.retrans_out, sb.lost_out), (0, 1));
        sb.pop();
        sb.pop();
        assert_eq!((sb.una, sb.lost_out, sb.sacked_out), (2, 0, 1));
    }

    #[test]
    fn tsorted_is_transmission_order_without_acked_or_sacked() {
        let mut sb = Scoreboard::default();
        for i in 0..6 {
            sb.push(Seg {
                tx_us: 10 * i,
                ..Default::default()
            });
        }
        sb.mark_sacked(2);
        sb.mark_lost(1);
        sb.mark_retransmitted(1, 100, TxStamp::default());
        sb.pop();
        let order: Vec<(u32, u64)> = sb.tsorted().collect();
        assert_eq!(order, [(3, 30), (4, 40), (5, 50), (1, 100)]);
        // Stale entries never pile up: a long run of SACKs and resends.
        for i in 6..10_000u64 {
            sb.push(Seg {
                tx_us: 10 * i,
                ..Default::default()
            });
            sb.mark_sacked(i as u32);
        }
        assert!(sb.tsorted.len() < 2 * 4 + 64 + 1, "{}", sb.tsorted.len());
    }

    proptest::proptest! {
        /// The walk is that of a list of every transmission ever made,
        /// each live while it is its segment's latest and the segment is
        /// neither ACKed nor SACKed, however sends, SACKs, losses,
        /// retransmissions (some in the microsecond of the original) and
        /// cumulative ACKs interleave.
        #[test]
        fn the_walk_is_every_live_transmission_in_order(
            ops in proptest::collection::vec((0u8..6, 0u32..64, 0u64..3), 1..400),
        ) {
            let mut sb = Scoreboard::default();
            let mut all: Vec<(u32, u64)> = Vec::new();
            let mut now = 0u64;
            for (op, k, dt) in ops {
                now += dt;
                let window = sb.nxt() - sb.una;
                let seq = sb.una + if window > 0 { k % window } else { 0 };
                match op {
                    0 | 1 => {
                        all.push((sb.nxt(), now));
                        sb.push(Seg { tx_us: now, ..Default::default() });
                    }
                    2 if window > 0 => {
                        sb.mark_sacked(seq);
                    }
                    3 if window > 0 => {
                        sb.mark_lost(seq);
                    }
                    4 => {
                        if let Some(seq) = sb.next_to_retransmit() {
                            all.push((seq, now));
                            sb.mark_retransmitted(seq, now, TxStamp::default());
                        }
                    }
                    5 => {
                        for _ in 0..(k % 4).min(window) {
                            sb.pop();
                        }
                        if k % 3 == 0 {
                            sb.trim_tsorted();
                        }
                    }
                    _ => {}
                }
                let want: Vec<(u32, u64)> = all
                    .iter()
                    .copied()
                    .filter(|&(seq, tx)| {
                        sb.contains(seq) && !sb.get(seq).has(SACKED) && sb.get(seq).tx_us == tx
                    })
                    .collect();
                proptest::prop_assert_eq!(sb.tsorted().collect::<Vec<_>>(), want);
            }
        }
    }
}
