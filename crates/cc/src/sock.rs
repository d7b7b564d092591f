//! The connection state a congestion-control algorithm sees.
//!
//! Linux hands an algorithm a `struct sock *` and lets it reach into
//! `struct tcp_sock` and `struct inet_connection_sock`. [`Sock`] is the subset
//! of those fields that the kernel's algorithms read or write, under the
//! kernel's names and in the kernel's units (segments, microseconds, jiffies),
//! so that a trace recorded in the kernel maps onto it column for column and a
//! BPF port reads the same field it does here.
//!
//! Time is an input. `tcp_mstamp` (microseconds) and `jiffies` (ticks of a
//! clock running at `hz`) are set by whoever drives the algorithm; nothing in
//! this crate reads a real clock.

/// `TCP_INFINITE_SSTHRESH`: the ssthresh of a connection that has not yet
/// seen congestion.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// `TCP_INIT_CWND` (RFC 6928): ten segments.
pub const TCP_INIT_CWND: u32 = 10;

/// `GSO_LEGACY_MAX_SIZE`: the default `sk_gso_max_size` in bytes.
pub const GSO_LEGACY_MAX_SIZE: u32 = 65_536;

/// `ecn_flags` bits: ECN was negotiated.
pub const TCP_ECN_OK: u8 = 1;
/// Set CWR on the next data segment sent.
pub const TCP_ECN_QUEUE_CWR: u8 = 2;
/// Echo ECE on ACKs (the receiver saw CE).
pub const TCP_ECN_DEMAND_CWR: u8 = 4;
/// An ECT or CE segment has been seen.
pub const TCP_ECN_SEEN: u8 = 8;

/// Microseconds in a second.
pub const USEC_PER_SEC: u64 = 1_000_000;
/// Microseconds in a millisecond.
pub const USEC_PER_MSEC: u64 = 1_000;

/// `icsk_ca_state`: where the TCP core's loss-recovery state machine is.
/// Ordered as the kernel compares them (`state >= TCP_CA_Recovery`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum CaState {
    #[default]
    /// No loss seen: growing normally.
    Open = 0,
    /// Something odd (SACKs, duplicate ACKs) but no loss yet.
    Disorder = 1,
    /// Reducing cwnd on an ECN signal (or an algorithm's own).
    Cwr = 2,
    /// Fast recovery after a loss.
    Recovery = 3,
    /// After a retransmission timeout.
    Loss = 4,
}

impl CaState {
    /// Every state, in the kernel's numbering.
    pub const ALL: [CaState; 5] = [
        CaState::Open,
        CaState::Disorder,
        CaState::Cwr,
        CaState::Recovery,
        CaState::Loss,
    ];

    /// The state the kernel numbers `v`, if any (a trace's column).
    pub fn from_u8(v: u8) -> Option<CaState> {
        Self::ALL.get(v as usize).copied()
    }

    /// The kernel's name of the state, as `ss -i` prints it.
    pub fn name(self) -> &'static str {
        match self {
            CaState::Open => "Open",
            CaState::Disorder => "Disorder",
            CaState::Cwr => "CWR",
            CaState::Recovery => "Recovery",
            CaState::Loss => "Loss",
        }
    }
}

/// `sk_pacing_status`: whether the stack paces this socket, and how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacingStatus {
    /// `SK_PACING_NONE`: no pacing.
    #[default]
    None = 0,
    /// `SK_PACING_NEEDED`: TCP's internal pacing (an algorithm asked for it).
    Needed = 1,
    /// `SK_PACING_FQ`: the fq qdisc paces.
    Fq = 2,
}

impl PacingStatus {
    /// The status the kernel numbers `v`, if any (a trace's column).
    pub fn from_u8(v: u8) -> Option<PacingStatus> {
        match v {
            0 => Some(PacingStatus::None),
            1 => Some(PacingStatus::Needed),
            2 => Some(PacingStatus::Fq),
            _ => None,
        }
    }
}

/// Jiffies start 5 minutes before wrapping, as in Linux (`INITIAL_JIFFIES`),
/// so that code comparing jiffies without `after()`/`before()` is caught early.
pub fn initial_jiffies(hz: u32) -> u32 {
    (300u32.wrapping_mul(hz)).wrapping_neg()
}

/// `usecs_to_jiffies()`: microseconds to jiffies, rounding up.
///
/// For every HZ that divides one million (100, 250, 1000, 10000, ...) this is
/// the kernel's `(u + USEC_PER_SEC / HZ - 1) / (USEC_PER_SEC / HZ)` exactly.
/// For other HZ (300) the kernel uses a 32-bit reciprocal that can differ in
/// the last jiffy; see docs/ALGORITHMS.md.
pub fn usecs_to_jiffies(us: u32, hz: u32) -> u64 {
    (us as u64 * hz as u64).div_ceil(USEC_PER_SEC)
}

/// `msecs_to_jiffies()`: milliseconds to jiffies, rounding up (the
/// kernel's formula for every HZ that divides 1000).
pub fn msecs_to_jiffies(ms: u32, hz: u32) -> u32 {
    (ms as u64 * hz as u64).div_ceil(1000) as u32
}

/// `jiffies_to_usecs()`.
pub fn jiffies_to_usecs(j: u32, hz: u32) -> u64 {
    j as u64 * USEC_PER_SEC / hz as u64
}

/// `after(seq1, seq2)`: is `a` later than `b` in 32-bit wrapping order.
#[inline]
pub fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `before(seq1, seq2)`.
#[inline]
pub fn before(a: u32, b: u32) -> bool {
    after(b, a)
}

macro_rules! sock_fields {
    ($( $(#[$doc:meta])* $field:ident : $ty:ident ),* $(,)?) => {
        /// The fields of Linux's `struct sock`, `struct inet_connection_sock`
        /// and `struct tcp_sock` that congestion control reads or writes.
        ///
        /// Windows are in segments, `srtt_us` is microseconds shifted left by
        /// 3 as the kernel keeps it, `tcp_mstamp` is microseconds, `jiffies`
        /// and `lsndtime` are ticks of a `hz` clock, pacing rates are bytes
        /// per second.
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct Sock {
            $( $(#[$doc])* pub $field: $ty, )*
            /// The clock rate of `jiffies` (the kernel's `HZ`).
            pub hz: u32,
        }

        /// A [`Sock`] field, named as in a trace's `pre_` columns.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        pub enum Field { $( $(#[$doc])* $field, )* }

        impl Field {
            /// Every field, in trace column order.
            pub const ALL: &'static [Field] = &[ $( Field::$field, )* ];

            /// The kernel's name of the field (`snd_cwnd`, `srtt_us`, ...).
            pub fn name(self) -> &'static str {
                match self { $( Field::$field => stringify!($field), )* }
            }

            /// The field the kernel calls `name`, if any.
            pub fn from_name(name: &str) -> Option<Field> {
                match name { $( stringify!($field) => Some(Field::$field), )* _ => None }
            }
        }

        impl Sock {
            /// Reads a field widened to `u64` (booleans are 0 or 1).
            pub fn get(&self, f: Field) -> u64 {
                match f { $( Field::$field => FieldValue::to_u64(self.$field), )* }
            }

            /// Writes a field from a `u64`. Returns false, leaving the field
            /// alone, for a value out of its range or domain (a cwnd above
            /// 2^32 - 1, an unknown `icsk_ca_state`).
            pub fn set(&mut self, f: Field, v: u64) -> bool {
                match f { $( Field::$field => match FieldValue::from_u64(v) {
                    Some(x) => { self.$field = x; true }
                    None => false,
                }, )* }
            }
        }
    };
}

trait FieldValue: Sized {
    fn to_u64(self) -> u64;
    fn from_u64(v: u64) -> Option<Self>;
}

impl FieldValue for u8 {
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn from_u64(v: u64) -> Option<Self> {
        u8::try_from(v).ok()
    }
}
impl FieldValue for u32 {
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn from_u64(v: u64) -> Option<Self> {
        u32::try_from(v).ok()
    }
}
impl FieldValue for u64 {
    fn to_u64(self) -> u64 {
        self
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v)
    }
}
impl FieldValue for bool {
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn from_u64(v: u64) -> Option<Self> {
        Some(v != 0)
    }
}
impl FieldValue for CaState {
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn from_u64(v: u64) -> Option<Self> {
        u8::try_from(v).ok().and_then(CaState::from_u8)
    }
}
impl FieldValue for PacingStatus {
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn from_u64(v: u64) -> Option<Self> {
        u8::try_from(v).ok().and_then(PacingStatus::from_u8)
    }
}

sock_fields! {
    /// Congestion window, segments.
    snd_cwnd: u32,
    /// Slow-start threshold, segments.
    snd_ssthresh: u32,
    /// Linear-increase counter: ACKed segments not yet turned into cwnd.
    snd_cwnd_cnt: u32,
    /// Upper bound on `snd_cwnd`.
    snd_cwnd_clamp: u32,
    /// `tcp_jiffies32` when cwnd last changed or was validated.
    snd_cwnd_stamp: u32,
    /// cwnd before the last reduction, for undo.
    prior_cwnd: u32,
    /// Smoothed RTT, microseconds << 3.
    srtt_us: u32,
    /// Windowed minimum RTT (`tcp_min_rtt()`), microseconds.
    min_rtt_us: u32,
    /// Segments sent and not yet cumulatively ACKed.
    packets_out: u32,
    /// Segments SACKed.
    sacked_out: u32,
    /// Segments marked lost.
    lost_out: u32,
    /// Retransmitted segments in flight.
    retrans_out: u32,
    /// Largest `packets_out` in the last window (`tcp_is_cwnd_limited`).
    max_packets_out: u32,
    /// Was the last flight limited by cwnd rather than the application?
    is_cwnd_limited: bool,
    /// Oldest unacknowledged sequence number.
    snd_una: u32,
    /// Next sequence number to send.
    snd_nxt: u32,
    /// Receiver: next sequence number expected.
    rcv_nxt: u32,
    /// `snd_nxt` when loss recovery started.
    high_seq: u32,
    /// The loss-recovery state.
    icsk_ca_state: CaState,
    /// `tcp_jiffies32` of the last data sent.
    lsndtime: u32,
    /// Time of the current event, microseconds (the kernel's `tcp_mstamp`).
    tcp_mstamp: u64,
    /// Time of the current event, nanoseconds (`tcp_clock_cache`).
    tcp_clock_cache: u64,
    /// Earliest departure time of the next packet, nanoseconds.
    tcp_wstamp_ns: u64,
    /// Segments delivered (ACKed or SACKed) so far.
    delivered: u32,
    /// Segments delivered on ACKs that echoed ECE (classic ECN).
    delivered_ce: u32,
    /// `tcp_mstamp` when `delivered` last changed.
    delivered_mstamp: u64,
    /// Segments lost so far.
    lost: u32,
    /// Non-zero while the application limits sending (`delivered` mark).
    app_limited: u32,
    /// Was the last rate sample application-limited?
    rate_app_limited: bool,
    /// Current effective MSS, bytes.
    mss_cache: u32,
    /// `sk_pacing_rate`, bytes per second.
    pacing_rate: u64,
    /// `sk_max_pacing_rate`, bytes per second.
    max_pacing_rate: u64,
    /// `sk_pacing_status`.
    pacing_status: PacingStatus,
    /// `sk_pacing_shift`: TSQ budget as a fraction (1/2^shift) of a second.
    pacing_shift: u8,
    /// `sk_gso_max_size`, bytes.
    gso_max_size: u32,
    /// `sk_gso_max_segs`.
    gso_max_segs: u32,
    /// `ecn_flags` (TCP_ECN_OK, TCP_ECN_QUEUE_CWR, ...).
    ecn_flags: u8,
    /// `icsk_ack.pending`: ICSK_ACK_SCHED, ICSK_ACK_TIMER, ICSK_ACK_NOW, ...
    icsk_ack_pending: u8,
    /// `tcp_jiffies32`: the coarse clock, in ticks of `hz`.
    jiffies: u32,
}

impl Sock {
    /// A freshly connected socket as `tcp_init_sock()` leaves it: ten
    /// segments of cwnd, infinite ssthresh, no clamp, clocks at zero time.
    pub fn new(hz: u32) -> Sock {
        Sock {
            snd_cwnd: TCP_INIT_CWND,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX,
            snd_cwnd_stamp: 0,
            prior_cwnd: 0,
            srtt_us: 0,
            min_rtt_us: u32::MAX,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            max_packets_out: 0,
            is_cwnd_limited: false,
            snd_una: 0,
            snd_nxt: 0,
            rcv_nxt: 0,
            high_seq: 0,
            icsk_ca_state: CaState::Open,
            lsndtime: initial_jiffies(hz),
            tcp_mstamp: 0,
            tcp_clock_cache: 0,
            tcp_wstamp_ns: 0,
            delivered: 0,
            delivered_ce: 0,
            delivered_mstamp: 0,
            lost: 0,
            app_limited: 0,
            rate_app_limited: false,
            mss_cache: 1448,
            pacing_rate: 0,
            max_pacing_rate: u64::MAX,
            pacing_status: PacingStatus::None,
            pacing_shift: 10,
            gso_max_size: GSO_LEGACY_MAX_SIZE,
            gso_max_segs: 65_535,
            ecn_flags: 0,
            icsk_ack_pending: 0,
            jiffies: initial_jiffies(hz),
            hz,
        }
    }

    /// Sets both clocks from one microsecond timestamp: `tcp_mstamp` to it,
    /// `jiffies` to `INITIAL_JIFFIES` plus the ticks of `hz` elapsed.
    pub fn set_clock(&mut self, now_us: u64) {
        self.tcp_mstamp = now_us;
        self.tcp_clock_cache = now_us.saturating_mul(1000);
        let ticks = match now_us.checked_mul(self.hz as u64) {
            Some(x) => x / USEC_PER_SEC,
            None => (now_us as u128 * self.hz as u128 / USEC_PER_SEC as u128) as u64,
        } as u32;
        self.jiffies = initial_jiffies(self.hz).wrapping_add(ticks);
    }

    /// `tcp_packets_in_flight()`.
    pub fn packets_in_flight(&self) -> u32 {
        (self
            .packets_out
            .wrapping_sub(self.sacked_out.wrapping_add(self.lost_out)))
        .wrapping_add(self.retrans_out)
    }

    /// `tcp_in_slow_start()`.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// `tcp_is_cwnd_limited()`: may the window grow? In slow start it may
    /// while cwnd is below twice what was recently in flight, so that it
    /// grows to twice what was ACKed.
    pub fn is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.in_slow_start() {
            return self.snd_cwnd < 2u32.wrapping_mul(self.max_packets_out);
        }
        false
    }

    /// `tcp_current_ssthresh()`: during a reduction, ssthresh; otherwise
    /// at least three quarters of cwnd.
    pub fn current_ssthresh(&self) -> u32 {
        if matches!(self.icsk_ca_state, CaState::Cwr | CaState::Recovery) {
            self.snd_ssthresh
        } else {
            self.snd_ssthresh
                .max((self.snd_cwnd >> 1) + (self.snd_cwnd >> 2))
        }
    }

    /// `tcp_enter_cwr()`, as far as it touches the fields an algorithm
    /// sees: an algorithm that reduces on a signal of its own (CDG's
    /// backoff) calls it from a hook, passing its `ssthresh`. Once per
    /// reduction: nothing happens in CWR, Recovery or Loss. No `set_state`
    /// hook is called (the caller is the algorithm). The core's own pieces
    /// (PRR counters, TLP and undo markers) are for the core to reset when
    /// it sees `icsk_ca_state` turn to CWR across the hook.
    pub fn enter_cwr(&mut self, ssthresh: impl FnOnce(&mut Sock) -> u32) {
        if self.icsk_ca_state >= CaState::Cwr {
            return;
        }
        crate::tcp::tcp_init_cwnd_reduction(self, ssthresh);
        self.icsk_ca_state = CaState::Cwr;
    }

    /// Is the socket paced (by TCP itself or by fq)?
    pub fn is_paced(&self) -> bool {
        self.pacing_status != PacingStatus::None
    }
}

impl Default for Sock {
    fn default() -> Sock {
        Sock::new(1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usecs_to_jiffies_rounds_up_like_the_kernel() {
        // HZ=250: one jiffy is 4000 us.
        assert_eq!(usecs_to_jiffies(0, 250), 0);
        assert_eq!(usecs_to_jiffies(1, 250), 1);
        assert_eq!(usecs_to_jiffies(4000, 250), 1);
        assert_eq!(usecs_to_jiffies(4001, 250), 2);
        assert_eq!(usecs_to_jiffies(100_000, 100), 10);
        assert_eq!(usecs_to_jiffies(999, 1000), 1);
        assert_eq!(usecs_to_jiffies(u32::MAX, 1000), 4_294_968);
    }

    #[test]
    fn initial_jiffies_is_five_minutes_before_wrap() {
        assert_eq!(initial_jiffies(250), (-75_000i32) as u32);
        let mut sk = Sock::new(250);
        sk.set_clock(300 * 1_000_000);
        assert_eq!(sk.jiffies, 0);
        sk.set_clock(300 * 1_000_000 + 3_999);
        assert_eq!(sk.jiffies, 0);
        sk.set_clock(300 * 1_000_000 + 4_000);
        assert_eq!(sk.jiffies, 1);
    }

    #[test]
    fn after_and_before_wrap() {
        assert!(after(1, 0));
        assert!(after(0, u32::MAX));
        assert!(before(u32::MAX, 0));
        assert!(!after(5, 5));
    }

    #[test]
    fn fields_round_trip_by_name() {
        let mut sk = Sock::new(1000);
        for &f in Field::ALL {
            assert_eq!(Field::from_name(f.name()), Some(f));
        }
        assert!(sk.set(Field::snd_cwnd, 77));
        assert_eq!(sk.snd_cwnd, 77);
        assert!(sk.set(Field::icsk_ca_state, 3));
        assert_eq!(sk.icsk_ca_state, CaState::Recovery);
        assert!(!sk.set(Field::icsk_ca_state, 9));
        assert!(!sk.set(Field::pacing_status, 3));
        assert!(!sk.set(Field::snd_cwnd, 1 << 32));
        assert_eq!(sk.snd_cwnd, 77);
    }

    #[test]
    fn enter_cwr_reduces_once() {
        let mut sk = Sock::new(1000);
        sk.snd_cwnd = 40;
        sk.snd_cwnd_cnt = 7;
        sk.snd_nxt = 5000;
        sk.ecn_flags = TCP_ECN_OK;
        sk.enter_cwr(|sk| sk.snd_cwnd * 7 / 10);
        assert_eq!(sk.icsk_ca_state, CaState::Cwr);
        assert_eq!(
            (sk.snd_ssthresh, sk.prior_cwnd, sk.snd_cwnd_cnt),
            (28, 40, 0)
        );
        assert_eq!(
            (sk.high_seq, sk.ecn_flags),
            (5000, TCP_ECN_OK | TCP_ECN_QUEUE_CWR)
        );
        sk.snd_cwnd = 30;
        sk.enter_cwr(|_| unreachable!("already reducing"));
        assert_eq!(sk.snd_ssthresh, 28);
    }

    #[test]
    fn cwnd_limited_in_slow_start_until_twice_the_flight() {
        let mut sk = Sock::new(1000);
        sk.snd_cwnd = 10;
        sk.max_packets_out = 5;
        assert!(!sk.is_cwnd_limited());
        sk.max_packets_out = 6;
        assert!(sk.is_cwnd_limited());
        sk.snd_ssthresh = 10;
        assert!(!sk.is_cwnd_limited());
        sk.is_cwnd_limited = true;
        assert!(sk.is_cwnd_limited());
    }
}
