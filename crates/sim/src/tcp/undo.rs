//! The books Linux keeps to undo a congestion-window reduction that turns
//! out to have been spurious (`tcp_input.c`, 6.18): where the episode
//! began (`undo_marker`), how many of its retransmissions have not yet
//! been shown needless by a D-SACK (`undo_retrans`), whether anything has
//! been retransmitted since (`retrans_stamp`), the ssthresh to restore
//! (`prior_ssthresh`), and F-RTO's flag (RFC 5682, `tp->frto`).
//!
//! The sender's state machine decides when to undo (`tcp_try_undo_*`);
//! this module answers whether it may. Without TCP timestamps there is no
//! Eifel detection: `tcp_packet_delayed()` holds only while nothing has
//! been retransmitted in the episode.

/// Undo state for one connection. Sequence numbers are segment indexes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Undo {
    /// `tp->undo_marker`: `snd_una` when the reduction began; `None` (the
    /// kernel's 0) when there is nothing to undo.
    marker: Option<u32>,
    /// `tp->undo_retrans`: retransmissions not yet D-SACKed; -1 while
    /// the episode has none, since 0 means "all were needless".
    retrans: i32,
    /// `tp->retrans_stamp`: when the episode's first retransmission was
    /// sent, µs. The kernel reads it for Eifel detection and `ETIMEDOUT`;
    /// here only whether it is set matters.
    retrans_stamp: Option<u64>,
    /// `tp->prior_ssthresh`: what undo restores; 0 forbids restoring cwnd
    /// (ECN proved the congestion).
    pub prior_ssthresh: u32,
    /// `tp->frto`: the RTO episode is being checked by F-RTO.
    pub frto: bool,
    /// `tp->dsack_dups`: D-SACKed segments are believed only while they
    /// do not outnumber the retransmissions (`tp->total_retrans`, the
    /// sender's count).
    dsack_dups: u64,
}

impl Undo {
    /// `tcp_init_undo()`: a reduction starts at `una`. Retransmissions
    /// still in flight (and a loss probe's) may yet be D-SACKed.
    pub fn init(&mut self, una: u32, retrans_out: u32, probe_in_flight: bool) {
        self.marker = Some(una);
        self.retrans = retrans_out as i32 + probe_in_flight as i32;
        if self.retrans == 0 {
            self.retrans = -1;
        }
    }

    /// `tcp_enter_cwr()` and ECE: the reduction is proven, never undone.
    pub fn forbid(&mut self) {
        self.marker = None;
        self.prior_ssthresh = 0;
    }

    /// The reduction was undone (`tcp_undo_cwnd_reduction()`).
    pub fn undone(&mut self) {
        self.marker = None;
    }

    pub fn is_marked(&self) -> bool {
        self.marker.is_some()
    }

    /// `tcp_retransmit_skb()`: a retransmission of the episode (not a
    /// loss probe) at `tx_us`.
    pub fn on_retransmit(&mut self, tx_us: u64) {
        if self.retrans_stamp.is_none() {
            self.retrans_stamp = Some(tx_us);
        }
        self.retrans = self.retrans.max(0) + 1;
    }

    /// `tp->retrans_stamp = 0`, when no retransmission is outstanding.
    pub fn clear_stamp(&mut self) {
        self.retrans_stamp = None;
    }

    /// `tcp_dsack_seen()`: a D-SACK of `segs` segments; false if it is
    /// not believed (larger than the window, or more duplicates reported
    /// than the `total_retrans` segments ever retransmitted).
    pub fn dsack_seen(&mut self, segs: u32, max_window: u32, total_retrans: u64) -> bool {
        if segs == 0 || segs > max_window {
            return false;
        }
        self.dsack_dups += u64::from(segs);
        self.dsack_dups <= total_retrans
    }

    /// A D-SACK shows `segs` retransmissions ending at `end` needless
    /// (`tcp_check_dsack()` for data already ACKed, `tcp_sacktag_one()`
    /// for data still queued): they no longer stand in undo's way.
    pub fn on_dsacked(&mut self, end: u32, segs: u32) {
        if let Some(marker) = self.marker {
            if self.retrans > 0 && end > marker {
                self.retrans = (self.retrans - segs as i32).max(0);
            }
        }
    }

    /// `tcp_packet_delayed()` without timestamps: true while the episode
    /// has retransmitted nothing (a SACK connection past its handshake).
    pub fn packet_delayed(&self) -> bool {
        self.retrans_stamp.is_none()
    }

    /// `tcp_may_undo()`: every retransmission was D-SACKed, or none was
    /// made.
    pub fn may_undo(&self) -> bool {
        self.marker.is_some() && (self.retrans == 0 || self.packet_delayed())
    }

    /// `tcp_try_undo_dsack()`'s test: D-SACKs covered every retransmission.
    pub fn all_dsacked(&self) -> bool {
        self.marker.is_some() && self.retrans == 0
    }

    /// Does a D-SACK block `[start, end)` count for undo when the ACK
    /// moved `snd_una` to `una`? `tcp_is_sackblock_valid()` for a D-SACK
    /// still in (or reaching into) the retransmit queue.
    pub fn dsack_block_valid(
        &self,
        start: u32,
        end: u32,
        una: u32,
        nxt: u32,
        max_window: u32,
    ) -> bool {
        if end > nxt || start >= end {
            return false;
        }
        if start > una {
            return true;
        }
        let Some(marker) = self.marker else {
            return false;
        };
        if end > una {
            return false;
        }
        if start >= marker {
            return true;
        }
        if end <= marker {
            return false;
        }
        start >= end.saturating_sub(max_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_without_retransmissions_may_be_undone() {
        let mut u = Undo::default();
        assert!(!u.may_undo(), "nothing to undo before a reduction");
        u.init(100, 0, false);
        // undo_retrans is -1, not 0: only "nothing retransmitted" allows it.
        assert!(u.may_undo() && !u.all_dsacked());
        u.on_retransmit(5_000);
        assert!(!u.may_undo());
        u.clear_stamp();
        assert!(u.may_undo());
    }

    #[test]
    fn d_sacks_of_every_retransmission_allow_undo() {
        let mut u = Undo::default();
        u.init(100, 0, false);
        for _ in 0..3 {
            u.on_retransmit(5_000);
        }
        assert!(!u.may_undo());
        assert!(u.dsack_seen(1, 1000, 3));
        u.on_dsacked(101, 1);
        // A D-SACK of data sent before the episode does not count.
        u.on_dsacked(100, 1);
        assert!(!u.all_dsacked());
        u.on_dsacked(102, 1);
        u.on_dsacked(103, 1);
        assert!(u.all_dsacked() && u.may_undo());
        // Never below zero.
        u.on_dsacked(104, 5);
        assert!(u.all_dsacked());
        u.undone();
        assert!(!u.may_undo());
    }

    #[test]
    fn a_loss_probe_in_flight_counts_and_is_not_an_episode_retransmission() {
        let mut u = Undo::default();
        u.init(7, 2, true);
        assert_eq!(u.retrans, 3);
        assert!(u.packet_delayed(), "the probe set no retrans_stamp");
    }

    #[test]
    fn more_d_sacks_than_retransmissions_are_not_believed() {
        let mut u = Undo::default();
        // One segment retransmitted.
        assert!(u.dsack_seen(1, 1000, 1));
        assert!(!u.dsack_seen(1, 1000, 1));
        assert!(!u.dsack_seen(2000, 1000, 1), "larger than the window");
    }

    #[test]
    fn d_sack_blocks_below_snd_una_count_only_from_the_marker_on() {
        let mut u = Undo::default();
        assert!(u.dsack_block_valid(12, 13, 10, 20, 100), "in the window");
        assert!(!u.dsack_block_valid(5, 6, 10, 20, 100), "no marker");
        u.init(4, 0, false);
        assert!(u.dsack_block_valid(5, 6, 10, 20, 100));
        assert!(
            !u.dsack_block_valid(9, 11, 10, 20, 100),
            "straddles snd_una"
        );
        assert!(!u.dsack_block_valid(2, 4, 10, 20, 100), "too old");
        assert!(u.dsack_block_valid(2, 6, 10, 20, 100), "crosses the marker");
        assert!(!u.dsack_block_valid(12, 21, 10, 20, 100), "beyond snd_nxt");
    }
}
