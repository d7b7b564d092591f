//! The congestion-control interface: Linux's `struct tcp_congestion_ops`.
//!
//! The TCP core (the simulator, or the kernel when a trace is replayed)
//! calls these hooks; the algorithm keeps its private state in `self` (the
//! kernel's `inet_csk_ca()` area) and reads or writes the connection through
//! [`Sock`]. The hooks, their arguments and the order the core calls them in
//! are the kernel's, so an algorithm written here ports line for line to BPF
//! struct_ops and replays a kernel trace.

use crate::dctcp::EceState;
use crate::sock::{CaState, Sock};

/// `enum tcp_ca_event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CaEvent {
    /// First transmit when no packets are in flight.
    TxStart = 0,
    /// Congestion window restart after idle.
    CwndRestart = 1,
    /// End of congestion recovery (CWR) with cwnd reduced.
    CompleteCwr = 2,
    /// Loss timeout (RTO).
    Loss = 3,
    /// ECT set, but not CE marked.
    EcnNoCe = 4,
    /// Received CE marked IP packet.
    EcnIsCe = 5,
}

impl CaEvent {
    /// Every event, in the kernel's numbering.
    pub const ALL: [CaEvent; 6] = [
        CaEvent::TxStart,
        CaEvent::CwndRestart,
        CaEvent::CompleteCwr,
        CaEvent::Loss,
        CaEvent::EcnNoCe,
        CaEvent::EcnIsCe,
    ];

    /// The event the kernel numbers `v`, if any (a trace's column).
    pub fn from_u8(v: u8) -> Option<CaEvent> {
        Self::ALL.get(v as usize).copied()
    }
}

/// `in_ack_event` flag: the ACK took the slow path.
pub const CA_ACK_SLOWPATH: u32 = 1 << 0;
/// `in_ack_event` flag: the ACK updated the receive window.
pub const CA_ACK_WIN_UPDATE: u32 = 1 << 1;
/// `in_ack_event` flag: the ACK carried ECE.
pub const CA_ACK_ECE: u32 = 1 << 2;

/// `struct ack_sample`, the argument of `pkts_acked`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSample {
    /// Segments this ACK cumulatively acknowledged, including any SACKed
    /// earlier (0 for an ACK that only SACKs).
    pub pkts_acked: u32,
    /// RTT of this ACK in microseconds (from the newest segment it SACKed,
    /// else the newest it cumulatively ACKed that was never retransmitted
    /// or SACKed), or -1 when it gave no sample.
    pub rtt_us: i32,
    /// As Linux 6.18 fills it: `mss_cache` times the segments delivered
    /// since the rate sample's `prior_delivered` (bytes, u32 arithmetic).
    pub in_flight: u32,
}

/// `struct rate_sample`, the argument of `cong_control` (from `tcp_rate.c`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// Starting timestamp of the interval, microseconds.
    pub prior_mstamp: u64,
    /// `delivered` at `prior_mstamp`.
    pub prior_delivered: u32,
    /// `delivered_ce` at `prior_mstamp`.
    pub prior_delivered_ce: u32,
    /// Segments delivered over the interval (-1 if no sample).
    pub delivered: i32,
    /// Segments delivered with CE marks over the interval.
    pub delivered_ce: i32,
    /// Length of the interval, microseconds (-1 if no sample).
    pub interval_us: i64,
    /// Send interval of the delivered segments, microseconds.
    pub snd_interval_us: u32,
    /// Receive interval of the delivered segments, microseconds.
    pub rcv_interval_us: u32,
    /// RTT of the last (S)ACKed segment, microseconds, or -1.
    pub rtt_us: i64,
    /// Segments marked lost upon this ACK.
    pub losses: i32,
    /// Segments newly (S)ACKed upon this ACK.
    pub acked_sacked: u32,
    /// Segments in flight before this ACK.
    pub prior_in_flight: u32,
    /// `end_seq` of the most recently ACKed segment.
    pub last_end_seq: u32,
    /// Was the sample taken with a bubble in the pipe?
    pub is_app_limited: bool,
    /// Was the sample from a retransmission?
    pub is_retrans: bool,
    /// Is this (likely) a delayed ACK?
    pub is_ack_delayed: bool,
}

/// How the receiving end echoes CE marks back to the algorithm. In Linux
/// the receiver runs the same algorithm, and `__tcp_ecn_check_ce()` gives
/// one that needs ECN every data packet's mark (`CA_EVENT_ECN_IS_CE`,
/// `CA_EVENT_ECN_NO_CE`); the others get RFC 3168's latch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CeEcho {
    /// RFC 3168 6.1.3: ECE on every ACK from the first CE until the
    /// sender's CWR.
    #[default]
    Latched,
    /// Each ACK's ECE is the mark of the packets it covers, and a change
    /// of mark is ACKed at once (DCTCP, RFC 8257 3.2): this state machine,
    /// run for every ECN-capable data packet.
    PerPacket(EceState),
}

/// Visits the algorithm's private state as (kernel member name, value).
pub type CaVisitor<'a> = &'a mut dyn FnMut(&'static str, i64);

/// A congestion-control algorithm: Linux's `struct tcp_congestion_ops`.
///
/// Required hooks are those the kernel requires (`ssthresh`, `undo_cwnd`,
/// and one of `cong_avoid` / `cong_control`); the others default to doing
/// nothing, as a NULL pointer does in the kernel.
pub trait CongestionControl {
    /// The name the algorithm registers under (`"cubic"`).
    fn name(&self) -> &'static str;

    /// Called when the algorithm is attached to a connection.
    fn init(&mut self, _sk: &mut Sock) {}

    /// Called when the algorithm is detached.
    fn release(&mut self, _sk: &mut Sock) {}

    /// Returns the slow-start threshold to use after a loss.
    fn ssthresh(&mut self, sk: &mut Sock) -> u32;

    /// Grows cwnd on an ACK (`ack` is the new snd_una, `acked` the segments
    /// it newly delivered). Not called while cwnd is being reduced.
    fn cong_avoid(&mut self, _sk: &mut Sock, _ack: u32, _acked: u32) {}

    /// Called before the core changes `icsk_ca_state`.
    fn set_state(&mut self, _sk: &mut Sock, _new_state: CaState) {}

    /// Called on the events of [`CaEvent`].
    fn cwnd_event(&mut self, _sk: &mut Sock, _ev: CaEvent) {}

    /// Called on every ACK with `CA_ACK_*` flags, before cwnd is touched.
    fn in_ack_event(&mut self, _sk: &mut Sock, _flags: u32) {}

    /// Called for every ACK that arrives with data outstanding, with its
    /// RTT sample (`tcp_clean_rtx_queue()`).
    fn pkts_acked(&mut self, _sk: &mut Sock, _sample: &AckSample) {}

    /// Returns the cwnd to restore when a reduction proves spurious.
    fn undo_cwnd(&mut self, sk: &mut Sock) -> u32;

    /// Does this algorithm implement `cong_control` (and so replace the
    /// core's PRR and `cong_avoid` calls)?
    fn has_cong_control(&self) -> bool {
        false
    }

    /// Model-based control on every ACK, with the delivery-rate sample.
    fn cong_control(&mut self, _sk: &mut Sock, _ack: u32, _flag: u32, _rs: &RateSample) {}

    /// `TCP_CONG_NEEDS_ECN`: the connection must negotiate ECN, and ECT
    /// is set on every segment (retransmissions too).
    fn needs_ecn(&self) -> bool {
        false
    }

    /// How a receiver running this algorithm echoes CE (what its
    /// `cwnd_event` does there with `CA_EVENT_ECN_IS_CE` / `_NO_CE`).
    fn ce_echo(&self) -> CeEcho {
        CeEcho::Latched
    }

    /// Walks the private state, named as the kernel's private struct names
    /// its members, for traces (`pre_ca_<name>`, `post_ca_<name>`).
    fn visit_ca(&self, _visit: CaVisitor<'_>) {}

    /// Overwrites one private member by name; false if there is no such
    /// member. Replay uses this to take the values the kernel drew at random.
    fn set_ca(&mut self, _name: &str, _value: i64) -> bool {
        false
    }

    /// Seeds the generator behind the algorithm's random draws (the kernel
    /// uses its own; simulations must repeat).
    fn set_random_seed(&mut self, _seed: u64) {}

    /// A replay tells the algorithm that the member `name`, which it draws
    /// at random, ends the coming hook call at `value`: any draw in that
    /// call must produce it.
    fn expect_random(&mut self, _name: &str, _value: i64) {}

    /// A replay's second try at a row that diverged: a draw forced by
    /// [`CongestionControl::expect_random`] whose outcome the trace's value
    /// could not decide (CDG's `state` when it was backing off already)
    /// is taken the other way in the coming call. False if no forced draw
    /// is undecided, and nothing is worth retrying.
    fn expect_other_draw(&mut self) -> bool {
        false
    }

    /// Private members the kernel fills from a random draw (BBR's
    /// `cycle_idx`): a replay copies them from the trace instead of
    /// expecting to reproduce them.
    fn drawn_at_random(&self) -> &'static [&'static str] {
        &[]
    }

    /// The [`Sock`] fields this algorithm reads, so that a replayer can tell
    /// a trace that lacks one of them apart from one that merely diverges.
    fn reads(&self) -> &'static [crate::sock::Field];
}

/// One call of a hook with its arguments: what a trace row records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// `init`.
    Init,
    /// `release`.
    Release,
    /// `ssthresh`.
    Ssthresh,
    /// `cong_avoid`.
    CongAvoid {
        /// The new `snd_una`.
        ack: u32,
        /// Segments newly delivered.
        acked: u32,
    },
    /// `pkts_acked` with its sample.
    PktsAcked(AckSample),
    /// `set_state` with the state being entered.
    SetState(CaState),
    /// `cwnd_event`.
    CwndEvent(CaEvent),
    /// `in_ack_event` with its `CA_ACK_*` flags.
    InAckEvent(u32),
    /// `undo_cwnd`.
    UndoCwnd,
    /// `cong_control` with the ACK's delivery-rate sample.
    CongControl {
        /// The new `snd_una`.
        ack: u32,
        /// The ACK's `FLAG_*` bits.
        flag: u32,
        /// The delivery-rate sample.
        rs: RateSample,
    },
}

impl Hook {
    /// The hook's name as in `struct tcp_congestion_ops` and trace files.
    pub fn name(&self) -> &'static str {
        match self {
            Hook::Init => "init",
            Hook::Release => "release",
            Hook::Ssthresh => "ssthresh",
            Hook::CongAvoid { .. } => "cong_avoid",
            Hook::PktsAcked(_) => "pkts_acked",
            Hook::SetState(_) => "set_state",
            Hook::CwndEvent(_) => "cwnd_event",
            Hook::InAckEvent(_) => "in_ack_event",
            Hook::UndoCwnd => "undo_cwnd",
            Hook::CongControl { .. } => "cong_control",
        }
    }

    /// Every hook's name, in `struct tcp_congestion_ops` order.
    pub const NAMES: [&'static str; 10] = [
        "init",
        "release",
        "ssthresh",
        "cong_avoid",
        "pkts_acked",
        "set_state",
        "cwnd_event",
        "in_ack_event",
        "undo_cwnd",
        "cong_control",
    ];

    /// Calls the hook; returns what it returns (ssthresh and undo_cwnd) or 0.
    ///
    /// Only the hook runs: the TCP core's reaction to the result (assigning
    /// ssthresh, restoring cwnd) belongs to the caller, exactly as the
    /// kernel separates them.
    /// Inlined everywhere: a caller names one hook, and the match folds to
    /// that hook's call.
    #[inline(always)]
    pub fn call<C: CongestionControl + ?Sized>(&self, cc: &mut C, sk: &mut Sock) -> u32 {
        match *self {
            Hook::Init => cc.init(sk),
            Hook::Release => cc.release(sk),
            Hook::Ssthresh => return cc.ssthresh(sk),
            Hook::CongAvoid { ack, acked } => cc.cong_avoid(sk, ack, acked),
            Hook::PktsAcked(ref s) => cc.pkts_acked(sk, s),
            Hook::SetState(s) => cc.set_state(sk, s),
            Hook::CwndEvent(e) => cc.cwnd_event(sk, e),
            Hook::InAckEvent(f) => cc.in_ack_event(sk, f),
            Hook::UndoCwnd => return cc.undo_cwnd(sk),
            Hook::CongControl { ack, flag, ref rs } => cc.cong_control(sk, ack, flag, rs),
        }
        0
    }
}

/// Watches hook calls as they happen: the trace recorder and any other
/// instrument implement it, and drivers (the ACK clock, the simulator) call
/// every hook through [`Tap::call`] so that nothing escapes it.
pub trait Tap<C: CongestionControl + ?Sized> {
    /// Just before `hook` runs, with the state it will see.
    fn before(&mut self, _hook: &Hook, _sk: &Sock, _cc: &C) {}

    /// Just after, with the state it left and its return value.
    fn after(&mut self, _hook: &Hook, _sk: &Sock, _cc: &C, _ret: u32) {}

    /// Runs `hook` between `before` and `after`.
    fn call(&mut self, hook: &Hook, cc: &mut C, sk: &mut Sock) -> u32 {
        self.before(hook, sk, cc);
        let ret = hook.call(cc, sk);
        self.after(hook, sk, cc, ret);
        ret
    }
}

/// A tap that watches nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoTap;

impl<C: CongestionControl + ?Sized> Tap<C> for NoTap {
    #[inline]
    fn call(&mut self, hook: &Hook, cc: &mut C, sk: &mut Sock) -> u32 {
        hook.call(cc, sk)
    }
}
