//! DCTCP: Data Center TCP, window reduction in proportion to marking.
//!
//! Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010; RFC 8257; a
//! port of Linux 6.18 `net/ipv4/tcp_dctcp.c` and `tcp_dctcp.h`.
//!
//! Switches mark CE on every packet that finds the queue above a threshold
//! K (step marking, no averaging). The receiver echoes the CE state of
//! each packet exactly rather than latching it, and the sender keeps, once
//! per window of data, an estimate of the marked fraction F:
//!
//! ```text
//!     alpha = (1 - g) * alpha + g * F         (g = 1/16, alpha in 1/1024)
//!     ssthresh = cwnd * (1 - alpha / 2)       (on the first ECE per window)
//! ```
//!
//! so a lightly marked flow backs off a little and a fully marked one
//! halves, like Reno. Growth is Reno's; a real loss halves as Reno does.
//!
//! Receiver side: [`ece_ack_update`] is the CE state machine both ends run
//! (`dctcp_ece_ack_update()`). When the CE state flips, a delayed ACK that
//! covers packets of the old state goes out first, with the old ECE, so
//! every byte is echoed with the mark it carried. A receiver that asks
//! [`CongestionControl::ce_echo`] gets it as an [`EceState`].
//!
//! Without negotiated ECN (no `TCP_ECN_OK` at `init`) the kernel swaps the
//! connection to `dctcp-reno`; this port does the same through a flag.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::aimd::{reads, tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd, AIMD_READS};
use crate::minmax::min_not_zero;
use crate::ops::{CaEvent, CaVisitor, CeEcho, CongestionControl};
use crate::params::{params, Token};
use crate::registry::Declared;
use crate::sock::{before, CaState, Field, Sock, TCP_ECN_DEMAND_CWR, TCP_ECN_OK};
use crate::state::{private_state, PrivateState};

/// `DCTCP_MAX_ALPHA`: alpha is a fraction in units of 1/1024.
pub const DCTCP_MAX_ALPHA: u32 = 1024;

/// `ICSK_ACK_TIMER`: a delayed ACK is scheduled.
pub const ICSK_ACK_TIMER: u8 = 2;
/// `ICSK_ACK_NOW`: send the next ACK at once (`enum inet_csk_ack_state_t`;
/// 8 is `ICSK_ACK_PUSHED2`).
pub const ICSK_ACK_NOW: u8 = 16;

params! {
    /// DCTCP's module parameters.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct DctcpParams {
        /// `dctcp_shift_g`: g = 1/2^shift_g (default 4, the kernel allows 0..10).
        shift_g: u32 {
            default: 4,
            range: 0..=10,
            help: "EWMA gain of alpha is 1/2^shift_g (default 4)",
            token: Token::Prefix("g"),
        },
        /// `dctcp_alpha_on_init`: alpha of a new connection, 1/1024 (default
        /// 1024, so the first marks halve the window until alpha has learnt).
        alpha_on_init: u32 {
            default: DCTCP_MAX_ALPHA,
            help: "initial alpha in 1/1024, capped at 1024 (default 1024)",
            token: Token::Prefix("a"),
        },
    }
}

private_state! {
    /// `struct dctcp`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct DctcpState {
        /// `delivered` when the current window began.
        pub old_delivered: u32,
        /// `delivered_ce` when the current window began.
        pub old_delivered_ce: u32,
        /// Receiver: `rcv_nxt` after the last data packet.
        pub prior_rcv_nxt: u32,
        /// Estimated fraction of marked packets, 1/1024.
        pub dctcp_alpha: u32,
        /// The window ends when `snd_una` reaches this.
        pub next_seq: u32,
        /// Receiver: was the last data packet CE-marked (0 or 1)?
        pub ce_state: u32,
        /// cwnd before the last reduction, for undo.
        pub loss_cwnd: u32,
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
/// DCTCP (RFC 8257), as `tcp_dctcp.c`.
pub struct Dctcp {
    params: DctcpParams,
    st: DctcpState,
    /// ECN was not negotiated: behave as `dctcp-reno`.
    fallback: bool,
}

/// The AIMD helpers' fields (prior_cwnd among them: without ECN, DCTCP
/// falls back to reno's undo), then DCTCP's own.
const DCTCP_READS: &[Field] = reads!(
    AIMD_READS,
    &[
        Field::snd_una,
        Field::snd_nxt,
        Field::delivered,
        Field::delivered_ce,
        Field::rcv_nxt,
        Field::ecn_flags,
        Field::icsk_ack_pending,
        Field::icsk_ca_state,
    ]
);

/// What the receiver's TCP must do after [`ece_ack_update`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EceAck {
    /// Send this ACK first: (`rcv_nxt` to acknowledge, ECE), the delayed ACK
    /// of the packets received in the old CE state.
    pub flush: Option<(u32, bool)>,
    /// Acknowledge the current packet at once.
    pub ack_now: bool,
    /// ECE for the ACKs that follow (`TCP_ECN_DEMAND_CWR`).
    pub ece: bool,
}

/// `dctcp_ece_ack_update()`: the receiver's CE state machine, run for every
/// ECN-capable data packet after `rcv_nxt` has taken it in. `ce_state` is
/// 0 or 1; `ack_delayed` says a delayed ACK is pending.
pub fn ece_ack_update(
    ce_state: &mut u32,
    prior_rcv_nxt: &mut u32,
    rcv_nxt: u32,
    is_ce: bool,
    ack_delayed: bool,
) -> EceAck {
    let new_ce_state = is_ce as u32;
    let mut out = EceAck::default();
    if *ce_state != new_ce_state {
        // Flipped: the pending ACK must still report the old state.
        if ack_delayed {
            out.flush = Some((*prior_rcv_nxt, *ce_state == 1));
        }
        out.ack_now = true;
    }
    *prior_rcv_nxt = rcv_nxt;
    *ce_state = new_ce_state;
    out.ece = new_ce_state == 1;
    out
}

/// The receiving end's half of DCTCP (its `ce_state` and `prior_rcv_nxt`),
/// for a receiver that keeps no `Dctcp` of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EceState {
    ce_state: u32,
    prior_rcv_nxt: u32,
}

impl EceState {
    /// [`ece_ack_update`] for one ECN-capable data packet.
    pub fn update(&mut self, rcv_nxt: u32, is_ce: bool, ack_delayed: bool) -> EceAck {
        ece_ack_update(
            &mut self.ce_state,
            &mut self.prior_rcv_nxt,
            rcv_nxt,
            is_ce,
            ack_delayed,
        )
    }
}

impl Dctcp {
    /// DCTCP with parameters `params`.
    pub fn new(params: DctcpParams) -> Dctcp {
        Dctcp {
            params,
            ..Dctcp::default()
        }
    }

    /// The private state, as a trace names its members.
    pub fn state(&self) -> &DctcpState {
        &self.st
    }

    /// Did `init` fall back to Reno for want of ECN?
    pub fn is_fallback(&self) -> bool {
        self.fallback
    }

    /// `dctcp_reset()`: start a new observation window.
    fn reset(&mut self, sk: &Sock) {
        self.st.next_seq = sk.snd_nxt;
        self.st.old_delivered = sk.delivered;
        self.st.old_delivered_ce = sk.delivered_ce;
    }

    /// `dctcp_update_alpha()`: once per window of data, fold the fraction
    /// of CE-echoed deliveries into alpha.
    fn update_alpha(&mut self, sk: &Sock) {
        if before(sk.snd_una, self.st.next_seq) {
            return;
        }
        let mut delivered_ce = sk.delivered_ce.wrapping_sub(self.st.old_delivered_ce);
        let mut alpha = self.st.dctcp_alpha;
        alpha -= min_not_zero(alpha, alpha >> self.params.shift_g);
        if delivered_ce != 0 {
            let delivered = sk.delivered.wrapping_sub(self.st.old_delivered);
            // u32 as in the kernel: with shift_g = 1 this overflows after
            // 8 M marked packets in one window.
            delivered_ce = delivered_ce.wrapping_shl(10 - self.params.shift_g);
            delivered_ce /= delivered.max(1);
            alpha = alpha.wrapping_add(delivered_ce).min(DCTCP_MAX_ALPHA);
        }
        self.st.dctcp_alpha = alpha;
        self.reset(sk);
    }

    /// `dctcp_react_to_loss()`: a real loss halves, whatever alpha says.
    fn react_to_loss(&mut self, sk: &mut Sock) {
        self.st.loss_cwnd = sk.snd_cwnd;
        sk.snd_ssthresh = (sk.snd_cwnd >> 1).max(2);
    }
}

/// `dctcp_ece_ack_cwr()`: ECE on outgoing ACKs follows the CE state.
fn set_demand_cwr(sk: &mut Sock, on: bool) {
    if on {
        sk.ecn_flags |= TCP_ECN_DEMAND_CWR;
    } else {
        sk.ecn_flags &= !TCP_ECN_DEMAND_CWR;
    }
}

impl Declared for Dctcp {
    const NAME: &'static str = "dctcp";
    const SUMMARY: &'static str =
        "Linux DCTCP (RFC 8257): reduce in proportion to the fraction of CE marks";
    type Params = DctcpParams;

    fn with_params(params: DctcpParams) -> Dctcp {
        Dctcp::new(params)
    }

    fn params(&self) -> &DctcpParams {
        &self.params
    }

    /// `dctcp_init()` takes `min(dctcp_alpha_on_init, DCTCP_MAX_ALPHA)`.
    fn warnings(p: &DctcpParams) -> Vec<String> {
        if p.alpha_on_init <= DCTCP_MAX_ALPHA {
            return Vec::new();
        }
        vec![format!(
            "dctcp's alpha_on_init={} is above {DCTCP_MAX_ALPHA} (alpha = 1): it starts at \
             {DCTCP_MAX_ALPHA}, as the kernel caps it",
            p.alpha_on_init
        )]
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn needs_ecn(&self) -> bool {
        true
    }

    fn ce_echo(&self) -> CeEcho {
        CeEcho::PerPacket(EceState::default())
    }

    fn init(&mut self, sk: &mut Sock) {
        if sk.ecn_flags & TCP_ECN_OK == 0 {
            self.fallback = true;
            return;
        }
        self.fallback = false;
        self.st.prior_rcv_nxt = sk.rcv_nxt;
        self.st.dctcp_alpha = self.params.alpha_on_init.min(DCTCP_MAX_ALPHA);
        self.st.loss_cwnd = 0;
        self.st.ce_state = 0;
        self.reset(sk);
    }

    fn ssthresh(&mut self, sk: &mut Sock) -> u32 {
        if self.fallback {
            return tcp_reno_ssthresh(sk);
        }
        let cwnd = sk.snd_cwnd;
        self.st.loss_cwnd = cwnd;
        cwnd.wrapping_sub(cwnd.wrapping_mul(self.st.dctcp_alpha) >> 11)
            .max(2)
    }

    fn cong_avoid(&mut self, sk: &mut Sock, ack: u32, acked: u32) {
        tcp_reno_cong_avoid(sk, ack, acked);
    }

    fn in_ack_event(&mut self, sk: &mut Sock, _flags: u32) {
        if !self.fallback {
            self.update_alpha(sk);
        }
    }

    fn set_state(&mut self, sk: &mut Sock, new_state: CaState) {
        // An RTO is handled in cwnd_event, so one loss reacts once.
        if !self.fallback && new_state == CaState::Recovery && new_state != sk.icsk_ca_state {
            self.react_to_loss(sk);
        }
    }

    fn cwnd_event(&mut self, sk: &mut Sock, ev: CaEvent) {
        if self.fallback {
            return;
        }
        match ev {
            CaEvent::EcnIsCe | CaEvent::EcnNoCe => {
                // The ACKs this asks for (`flush`, `ack_now`) are the
                // receiver's TCP's to send; the hook records the request.
                let r = ece_ack_update(
                    &mut self.st.ce_state,
                    &mut self.st.prior_rcv_nxt,
                    sk.rcv_nxt,
                    ev == CaEvent::EcnIsCe,
                    sk.icsk_ack_pending & ICSK_ACK_TIMER != 0,
                );
                // The flushed ACK is an ordinary one when the packet that
                // flipped the state did not move rcv_nxt (out of order):
                // then tcp_event_ack_sent() runs and clears the pending
                // delayed ACK. One for an older rcv_nxt leaves it.
                if r.flush.is_some_and(|(nxt, _)| nxt == sk.rcv_nxt) {
                    sk.icsk_ack_pending = 0;
                }
                if r.ack_now {
                    sk.icsk_ack_pending |= ICSK_ACK_NOW;
                }
                set_demand_cwr(sk, r.ece);
            }
            CaEvent::Loss => self.react_to_loss(sk),
            _ => {}
        }
    }

    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32 {
        if self.fallback {
            return tcp_reno_undo_cwnd(sk);
        }
        sk.snd_cwnd.max(self.st.loss_cwnd)
    }

    fn visit_ca(&self, visit: CaVisitor<'_>) {
        self.st.visit(visit)
    }

    fn set_ca(&mut self, name: &str, cell: i64) -> bool {
        self.st.set(name, cell)
    }

    fn reads(&self) -> &'static [Field] {
        DCTCP_READS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Harness, Setup};

    /// `d` on a connection that negotiated ECN, not yet initialised.
    fn dctcp(d: Dctcp) -> Harness<Dctcp> {
        Harness::new(d, Sock::new(1000).ecn())
    }

    /// Ends a window in which `delivered` segments arrived, `ce` of them
    /// echoed with ECE.
    fn window(h: &mut Harness<Dctcp>, delivered: u32, ce: u32) {
        h.sk.delivered += delivered;
        h.sk.delivered_ce += ce;
        h.sk.snd_una = h.cc.st.next_seq;
        h.sk.snd_nxt = h.sk.snd_una + 100 * 1448;
        h.in_ack_event(0);
    }

    #[test]
    fn alpha_is_an_ewma_of_the_marked_fraction_with_gain_one_sixteenth() {
        let mut h = dctcp(Dctcp::default());
        h.init();
        assert_eq!(h.cc.st.dctcp_alpha, 1024);
        // No marks: alpha -= alpha >> 4 each window.
        window(&mut h, 100, 0);
        assert_eq!(h.cc.st.dctcp_alpha, 960);
        window(&mut h, 100, 0);
        assert_eq!(h.cc.st.dctcp_alpha, 900);
        // 25 of 100 marked: 900 - 56 + (25 << 6) / 100 = 844 + 16 = 860.
        window(&mut h, 100, 25);
        assert_eq!(h.cc.st.dctcp_alpha, 860);
        // All marked: 860 - 53 + 64 = 871.
        window(&mut h, 100, 100);
        assert_eq!(h.cc.st.dctcp_alpha, 871);
        // Below 16, alpha >> 4 is zero and min_not_zero takes all of it.
        h.cc.st.dctcp_alpha = 15;
        window(&mut h, 100, 0);
        assert_eq!(h.cc.st.dctcp_alpha, 0);
        // A single marked packet in ten: 0 + (1 << 6) / 10 = 6.
        window(&mut h, 10, 1);
        assert_eq!(h.cc.st.dctcp_alpha, 6);
    }

    #[test]
    fn alpha_only_moves_once_per_window() {
        let mut h = dctcp(Dctcp::default());
        h.sk.snd_nxt = 50 * 1448;
        h.init();
        h.sk.snd_una = 10 * 1448;
        h.sk.delivered = 10;
        h.sk.delivered_ce = 10;
        h.in_ack_event(0);
        assert_eq!(h.cc.st.dctcp_alpha, 1024);
        assert_eq!(h.cc.st.old_delivered, 0);
        h.sk.snd_una = 50 * 1448;
        h.sk.delivered = 50;
        h.in_ack_event(0);
        // 1024 - 64 + (10 << 6) / 50 = 960 + 12.
        assert_eq!(h.cc.st.dctcp_alpha, 972);
        assert_eq!((h.cc.st.old_delivered, h.cc.st.old_delivered_ce), (50, 10));
    }

    #[test]
    fn shift_g_sets_the_gain() {
        let mut h = dctcp(Dctcp::new(DctcpParams {
            shift_g: 0,
            alpha_on_init: 300,
        }));
        h.init();
        assert_eq!(h.cc.st.dctcp_alpha, 300);
        // g = 1: alpha becomes F exactly. 3 of 4 marked: (3 << 10) / 4.
        window(&mut h, 4, 3);
        assert_eq!(h.cc.st.dctcp_alpha, 768);
        h.cc = Dctcp::new(DctcpParams {
            shift_g: 4,
            alpha_on_init: 5000,
        });
        h.init();
        assert_eq!(h.cc.st.dctcp_alpha, 1024, "capped at DCTCP_MAX_ALPHA");
    }

    #[test]
    fn ssthresh_backs_off_by_half_alpha_and_loss_halves() {
        let mut h = dctcp(Dctcp::default());
        h.init();
        h.sk.snd_cwnd = 100;
        // alpha = 1024: 100 - 100 * 1024 / 2048 = 50.
        assert_eq!(h.ssthresh(), 50);
        h.cc.st.dctcp_alpha = 100;
        // 100 - (10000 >> 11) = 100 - 4.
        assert_eq!(h.ssthresh(), 96);
        assert_eq!(h.cc.st.loss_cwnd, 100);
        h.cc.st.dctcp_alpha = 0;
        h.sk.snd_cwnd = 2;
        assert_eq!(h.ssthresh(), 2);
        // Entering Recovery from Open halves regardless of alpha.
        h.sk.snd_cwnd = 80;
        h.sk.snd_ssthresh = 79;
        h.set_state(CaState::Recovery);
        assert_eq!(h.sk.snd_ssthresh, 40);
        // Already in Recovery: no second reaction.
        h.sk.icsk_ca_state = CaState::Recovery;
        h.sk.snd_cwnd = 60;
        h.set_state(CaState::Recovery);
        assert_eq!(h.sk.snd_ssthresh, 40);
        // RTO.
        h.event(CaEvent::Loss);
        assert_eq!((h.sk.snd_ssthresh, h.cc.st.loss_cwnd), (30, 60));
        h.sk.snd_cwnd = 1;
        assert_eq!(h.undo(), 60);
    }

    #[test]
    fn without_ecn_it_is_reno() {
        let mut h = Harness::new(Dctcp::default(), Sock::new(1000));
        h.init();
        assert!(h.cc.is_fallback());
        h.sk.snd_cwnd = 100;
        assert_eq!(h.ssthresh(), 50);
        h.event(CaEvent::EcnIsCe);
        assert_eq!(h.sk.ecn_flags, 0);
        h.sk.prior_cwnd = 70;
        h.sk.snd_ssthresh = 10;
        assert_eq!(h.undo(), 100);
    }

    #[test]
    fn the_receiver_echoes_each_flip_and_flushes_the_delayed_ack_first() {
        let (mut ce, mut prior) = (0u32, 0u32);
        // Unmarked packet, no flip.
        let r = ece_ack_update(&mut ce, &mut prior, 1, false, false);
        assert_eq!(r, EceAck::default());
        // A marked packet while a delayed ACK covers seq < 1: that ACK goes
        // first without ECE, then an immediate ACK with ECE.
        let r = ece_ack_update(&mut ce, &mut prior, 2, true, true);
        assert_eq!(
            r,
            EceAck {
                flush: Some((1, false)),
                ack_now: true,
                ece: true
            }
        );
        // Marked again: no flip, ECE stays.
        let r = ece_ack_update(&mut ce, &mut prior, 3, true, true);
        assert_eq!(
            r,
            EceAck {
                flush: None,
                ack_now: false,
                ece: true
            }
        );
        // Back to unmarked with nothing delayed: immediate ACK, no flush.
        let r = ece_ack_update(&mut ce, &mut prior, 4, false, false);
        assert_eq!(
            r,
            EceAck {
                flush: None,
                ack_now: true,
                ece: false
            }
        );
        assert_eq!((ce, prior), (0, 4));

        // The hook form keeps the same state in the socket.
        let mut h = dctcp(Dctcp::default());
        h.init();
        h.sk.rcv_nxt = 7;
        h.sk.icsk_ack_pending = ICSK_ACK_TIMER;
        h.event(CaEvent::EcnIsCe);
        assert_eq!(h.sk.ecn_flags, TCP_ECN_OK | TCP_ECN_DEMAND_CWR);
        assert_eq!(h.sk.icsk_ack_pending, ICSK_ACK_TIMER | ICSK_ACK_NOW);
        assert_eq!((h.cc.st.ce_state, h.cc.st.prior_rcv_nxt), (1, 7));
        // Flipped back by a packet that left rcv_nxt at 7: the delayed
        // ACK flushed for rcv_nxt 7 is an ordinary ACK, which clears what
        // was pending; then the flip asks for an ACK now.
        h.event(CaEvent::EcnNoCe);
        assert_eq!(h.sk.ecn_flags, TCP_ECN_OK);
        assert_eq!(h.sk.icsk_ack_pending, ICSK_ACK_NOW);
    }

    #[test]
    fn a_receiver_asks_dctcp_for_its_per_packet_echo() {
        let CeEcho::PerPacket(mut echo) = Dctcp::default().ce_echo() else {
            panic!("DCTCP echoes each packet's mark");
        };
        let r = echo.update(1, true, true);
        assert_eq!((r.flush, r.ack_now, r.ece), (Some((0, false)), true, true));
        let reno: crate::Algorithm = "reno".parse().unwrap();
        assert_eq!(reno.ce_echo(), CeEcho::Latched);
    }
}
