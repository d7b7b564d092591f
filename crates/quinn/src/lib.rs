//! Kleinrock's algorithms inside quinn's QUIC connections.
//!
//! quinn-proto asks a congestion controller ([`Controller`]) for one
//! number, the bytes that may be in flight, and tells it what happened:
//! packets sent, packets acknowledged (one call each, then one for the
//! batch), congestion events (loss, or a rise of the peer's ECN-CE count)
//! and MTU changes. Kleinrock's algorithms ([`kleinrock_cc`]) are written
//! against the other side of that line: Linux's `tcp_congestion_ops`
//! hooks, called by a TCP core in a fixed order, on a [`Sock`] in
//! segments, microseconds and jiffies. This crate is the TCP core between
//! them. It keeps a [`Sock`] current from quinn's events and calls the
//! hooks where `tcp_ack()`, `tcp_enter_recovery()`, `tcp_enter_cwr()` and
//! `tcp_enter_loss()` call them; it copies no algorithm's arithmetic (the
//! window quinn reads is the algorithm's `snd_cwnd`, times the MTU).
//!
//! ```
//! use std::sync::Arc;
//! use kleinrock_quinn::KleinrockConfig;
//!
//! let mut transport = quinn::TransportConfig::default();
//! transport.congestion_controller_factory(Arc::new(
//!     KleinrockConfig::new("cubic:hystart=hspp")?.with_hz(250)?,
//! ));
//! // Then server_config.transport_config(Arc::new(transport)), or the
//! // client's.
//! # Ok::<(), kleinrock_quinn::ConfigError>(())
//! ```
//!
//! What maps to what:
//!
//! | quinn | Linux, as the adapter drives it |
//! | --- | --- |
//! | `build(now, mtu)` | `tcp_init_sock()`'s [`Sock`] (10 segments, infinite ssthresh), `mss_cache` = the MTU, the clocks' zero at `now`, `init` |
//! | `on_sent(now, bytes, pn)` | `tcp_event_data_sent()`: `CA_EVENT_TX_START` from an empty pipe, `lsndtime`; `tcp_rate_skb_sent()`; `packets_out` += ⌈bytes / MTU⌉; `snd_nxt` = pn + 1; `tcp_cwnd_validate()` |
//! | `on_ack(now, sent, bytes, ..)` per packet | `tcp_clean_rtx_queue()`'s per-segment work: `packets_out`, `delivered`, `tcp_rate_skb_delivered()`; srtt and min RTT from quinn's estimator |
//! | `on_end_acks(now, in_flight, app_limited, largest)` | the rest of `tcp_ack()`: `snd_una` = largest + 1, `pkts_acked` with the RTT of the newest packet acknowledged, `in_ack_event`, the end of CWR, Recovery or Loss once `snd_una` passes `high_seq`, `tcp_rate_gen()`, then `cong_control` or `cong_avoid` and `tcp_update_pacing_rate()`; quinn's `app_limited` marks the rate sampler's bubble |
//! | `on_congestion_event(.., lost_bytes > 0)` | `tcp_enter_recovery()`: `ssthresh`, `set_state(Recovery)`, once per window of data (RFC 9002 7.3.2: packets sent before the reduction began do not start another) |
//! | `on_congestion_event(.., lost_bytes == 0)` | the peer's CE count rose: `tcp_enter_cwr()`, as an ACK with ECE does |
//! | `on_congestion_event(.., persistent = true, ..)` | RFC 9002's persistent congestion is TCP's RTO: `tcp_enter_loss()` (`ssthresh`, `CA_EVENT_LOSS`, cwnd = in flight + 1, `set_state(Loss)`) |
//! | `on_mtu_update(mtu)` | `mss_cache`; a larger MTU rescales cwnd to the same bytes, as `tcp_mtup_probe_success()` does |
//! | `window()` | `snd_cwnd` × MTU + 1: quinn refuses to send when in flight + MTU ≥ window, Linux when in flight ≥ cwnd, and the extra byte makes the two agree |
//! | `metrics()` | cwnd, ssthresh (bytes) and `sk_pacing_rate` (bits/s) for qlog |
//!
//! What does not map, and what the adapter does instead:
//!
//! - Bytes and packets. Linux counts segments of `mss_cache` bytes; quinn
//!   counts bytes. A datagram (or the bytes of one `on_sent`, which can be
//!   a GSO batch) counts ⌈bytes / MTU⌉ segments, and lost bytes likewise.
//! - Sequence numbers are quinn's packet numbers: `snd_nxt` is the next
//!   packet number, `snd_una` one past the largest acknowledged, so the
//!   algorithms' round ends (HyStart, Vegas, CDG compare them with
//!   `after()`) fall where Linux's do: when the first packet sent after the
//!   round began is acknowledged.
//! - No SACK scoreboard, no PRR, no undo. QUIC acknowledges ranges and
//!   never retransmits a packet, so `sacked_out`, `retrans_out` and
//!   `lost_out` stay 0. A reduction takes cwnd to ssthresh at once (as
//!   RFC 9002 and quinn's own controllers do) rather than by PRR over the
//!   recovery round; quinn reports no spurious loss, so `undo_cwnd` is
//!   never called.
//! - Loss after acknowledgements. quinn reports the losses an ACK reveals
//!   after that ACK's acknowledgements, so the adapter has already run
//!   that ACK's `cong_avoid` (or `cong_control`) when it asks for
//!   `ssthresh`; Linux enters Recovery first. The segments lost reach
//!   `cong_control` as the next ACK's `rs.losses`.
//! - Delivery-rate samples for BBR are `tcp_rate.c`'s
//!   ([`kleinrock_cc::rate`], the simulator's too), stamped at each
//!   `on_sent` and looked up by send time at each `on_ack`.
//! - RTTs. `pkts_acked` gets the RTT of the newest packet the ACK
//!   acknowledged (`now - sent`, as Linux's `ca_rtt_us`), and the min RTT
//!   is the least of those (Linux's window is 300 s). `srtt_us` starts at
//!   the first sample, then follows quinn's smoothed RTT, which quinn
//!   updates after the ACK's events, so it lags by one ACK.
//! - Pacing. quinn paces by its own pacer (1.25 × window / RTT); the
//!   pacing rate an algorithm sets (BBR's) reaches quinn only as qlog's
//!   metric.
//! - ECN. quinn tells a controller only that the CE count rose, not how
//!   many packets were marked, so DCTCP (which needs every ACK's count of
//!   CE marks) is refused; the others reduce once per window on CE, as
//!   Linux's classic ECN does.
//! - Time. The [`Instant`]s quinn passes are the only clock: `tcp_mstamp`
//!   is microseconds since the connection's controller was built (plus
//!   one: `tcp_rate.c` reads a stamp of 0 as none), `jiffies` ticks at
//!   [`KleinrockConfig::with_hz`] (1000 by default) from `INITIAL_JIFFIES`.
//!
//! docs/LIBRARY.md walks through using `kleinrock-cc` from another stack
//! with this crate as the example.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kleinrock_cc::ops::{CaEvent, Hook, NoTap, Tap, CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};
use kleinrock_cc::rate::{RateSampler, TxStamp};
use kleinrock_cc::sock::{before, jiffies_to_usecs, TCP_INFINITE_SSTHRESH};
use kleinrock_cc::tcp::{
    tcp_cong_control_without_prr, tcp_ecn_queue_cwr, tcp_end_cwnd_reduction, tcp_enter_cwr,
    tcp_init_cwnd_reduction, tcp_set_ca_state,
};
use kleinrock_cc::{AckSample, Algorithm, CaState, CongestionControl, RateSample, Sock, SpecError};
use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

/// `tcp_rate.c` takes a stamp of 0 for "never stamped", and Linux's clock
/// never reads 0: the adapter's reads 1 µs when the controller is built.
const CLOCK_START_US: u64 = 1;

/// How long a send-time stamp is kept once a newer one exists, at least:
/// longer than quinn waits before calling an unacknowledged packet lost.
const STAMP_HORIZON_US: u64 = 1_000_000;

/// A Kleinrock algorithm as quinn's [`ControllerFactory`]: give it to
/// `TransportConfig::congestion_controller_factory`, and every connection
/// (and every path of a migrating one) gets its own controller.
///
/// `T` watches every hook call ([`Tap`]): [`NoTap`] by default, which
/// costs nothing; a log, a counter or a test's checks otherwise. Each
/// controller gets a clone, so a tap that gathers shares its store.
#[derive(Clone, Debug)]
pub struct KleinrockConfig<T = NoTap> {
    algorithm: Algorithm,
    hz: u32,
    tap: T,
}

/// Why a configuration was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The spec did not parse ([`SpecError`] says why).
    Spec(SpecError),
    /// The algorithm needs the count of CE marks each ACK covers, which
    /// quinn does not give a controller.
    NeedsEcnCounts(&'static str),
    /// The jiffies clock's rate is out of range.
    Hz(u32),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Spec(e) => write!(f, "{e}"),
            ConfigError::NeedsEcnCounts(name) => write!(
                f,
                "{name} needs the number of CE-marked packets each ACK covers, and quinn tells a \
                 congestion controller only that the CE count rose; use an algorithm that does \
                 not need ECN (cubic, reno, bbr, cdg, vegas, htcp)"
            ),
            ConfigError::Hz(hz) => write!(
                f,
                "a jiffies clock of {hz} Hz is out of range; give 1 to 1000000 (Linux uses 100, \
                 250, 300 or 1000)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl KleinrockConfig {
    /// The algorithm a spec names (`cubic`, `cubic:hystart=hspp`, `bbr`,
    /// `cdg:backoff_beta=700`: `kleinrock algorithms` lists them all).
    pub fn new(spec: &str) -> Result<KleinrockConfig, ConfigError> {
        let algorithm: Algorithm = spec.parse().map_err(ConfigError::Spec)?;
        KleinrockConfig::from_algorithm(algorithm)
    }

    /// An algorithm already configured.
    pub fn from_algorithm(algorithm: Algorithm) -> Result<KleinrockConfig, ConfigError> {
        if algorithm.needs_ecn() {
            return Err(ConfigError::NeedsEcnCounts(algorithm.name()));
        }
        Ok(KleinrockConfig {
            algorithm,
            hz: 1000,
            tap: NoTap,
        })
    }
}

impl<T> KleinrockConfig<T> {
    /// The rate of the jiffies clock (the kernel's `HZ`) that algorithms
    /// reading `jiffies` (CUBIC's epoch, H-TCP, CDG) see; 1000 by default.
    pub fn with_hz(mut self, hz: u32) -> Result<Self, ConfigError> {
        if hz == 0 || hz > 1_000_000 {
            return Err(ConfigError::Hz(hz));
        }
        self.hz = hz;
        Ok(self)
    }

    /// Every hook call of every controller built goes through a clone of
    /// `tap`.
    pub fn with_tap<U>(self, tap: U) -> KleinrockConfig<U> {
        KleinrockConfig {
            algorithm: self.algorithm,
            hz: self.hz,
            tap,
        }
    }

    /// The algorithm each controller starts from.
    pub fn algorithm(&self) -> &Algorithm {
        &self.algorithm
    }
}

impl<T: Tap<Algorithm> + Clone + Send + Sync + 'static> ControllerFactory for KleinrockConfig<T> {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Kleinrock::new(
            self.algorithm.clone(),
            self.hz,
            self.tap.clone(),
            now,
            current_mtu,
        ))
    }
}

/// The ACK being processed: what quinn's per-packet `on_ack` calls add up
/// to before `on_end_acks` ends the batch.
#[derive(Clone, Debug, Default)]
struct AckBatch {
    /// Segments acknowledged.
    pkts: u32,
    /// Send time of the newest packet acknowledged, µs.
    newest_sent_us: Option<u64>,
    /// `tcp_packets_in_flight()` before the ACK.
    prior_in_flight: u32,
    /// The rate sample being built (`tcp_rate_skb_delivered()`).
    rs: RateSample,
}

/// One connection's controller: an algorithm, the [`Sock`] it reads and
/// writes, and the TCP core's state that quinn does not keep for it.
#[derive(Clone, Debug)]
pub struct Kleinrock<T = NoTap> {
    cc: Algorithm,
    sk: Sock,
    tap: T,
    epoch: Instant,
    rate: RateSampler,
    /// `tcp_skb_cb.tx` of the packets in flight, by send time (µs): one
    /// entry per change, since every packet sent between two changes
    /// carries the same stamp.
    stamps: VecDeque<(u64, TxStamp)>,
    ack: AckBatch,
    /// Counts acknowledged packets: the order `tcp_rate.c` breaks ties of
    /// send time by (Linux uses `end_seq`).
    acked_order: u32,
    /// Segments declared lost since the last ACK, for its `rs.losses`.
    losses: u32,
    /// `max_packets_seq` of `tcp_cwnd_validate()`.
    max_packets_seq: u32,
    /// When the current or last reduction began (µs): losses of packets
    /// sent before it belong to it.
    reduction_start_us: Option<u64>,
    initial_window: u64,
}

/// ⌈bytes / mss⌉: the segments a datagram (or a batch of them) counts as.
fn segments(bytes: u64, mss: u32) -> u32 {
    bytes.div_ceil(mss.max(1) as u64).min(u32::MAX as u64) as u32
}

impl<T: Tap<Algorithm>> Kleinrock<T> {
    /// A controller for a connection whose path carries datagrams of
    /// `mtu` bytes, its clocks starting at `now`, the algorithm
    /// initialised.
    pub fn new(cc: Algorithm, hz: u32, tap: T, now: Instant, mtu: u16) -> Kleinrock<T> {
        let mut sk = Sock::new(hz);
        sk.mss_cache = mtu.max(1) as u32;
        sk.set_clock(CLOCK_START_US);
        let mut k = Kleinrock {
            cc,
            sk,
            tap,
            epoch: now,
            rate: RateSampler::default(),
            stamps: VecDeque::new(),
            ack: AckBatch::default(),
            acked_order: 0,
            losses: 0,
            max_packets_seq: 0,
            reduction_start_us: None,
            initial_window: 0,
        };
        k.call(Hook::Init);
        k.initial_window = k.window_bytes();
        k
    }

    /// The connection as the algorithm sees it.
    pub fn sock(&self) -> &Sock {
        &self.sk
    }

    /// The algorithm and its private state.
    pub fn algorithm(&self) -> &Algorithm {
        &self.cc
    }

    /// The tap every hook call went through.
    pub fn tap(&self) -> &T {
        &self.tap
    }

    fn call(&mut self, hook: Hook) -> u32 {
        self.tap.call(&hook, &mut self.cc, &mut self.sk)
    }

    /// Microseconds on the adapter's clock at `t`.
    fn micros(&self, t: Instant) -> u64 {
        let since = t.saturating_duration_since(self.epoch).as_micros();
        CLOCK_START_US.saturating_add(since.min(u64::MAX as u128) as u64)
    }

    fn set_clock(&mut self, now: Instant) -> u64 {
        let now_us = self.micros(now);
        self.sk.set_clock(now_us);
        now_us
    }

    fn window_bytes(&self) -> u64 {
        (self.sk.snd_cwnd as u64)
            .saturating_mul(self.sk.mss_cache as u64)
            .saturating_add(1)
    }

    /// One packet of the ACK being processed (quinn's `on_ack`), with
    /// quinn's smoothed RTT: `tcp_clean_rtx_queue()`'s work per segment.
    fn acked(&mut self, now: Instant, sent: Instant, bytes: u64, srtt: Duration) {
        self.set_clock(now);
        let sent_us = self.micros(sent);
        let segs = segments(bytes, self.sk.mss_cache);
        if self.ack.pkts == 0 {
            self.ack = AckBatch {
                prior_in_flight: self.sk.packets_in_flight(),
                ..AckBatch::default()
            };
        }
        self.ack.pkts = self.ack.pkts.saturating_add(segs);
        self.ack.newest_sent_us = self.ack.newest_sent_us.max(Some(sent_us));
        self.sk.packets_out = self.sk.packets_out.saturating_sub(segs);
        self.sk.delivered = self.sk.delivered.wrapping_add(segs);
        if let Some(mut tx) = self.stamp_at(sent_us) {
            self.acked_order = self.acked_order.wrapping_add(1);
            let order = self.acked_order;
            self.rate
                .on_delivered(&mut self.ack.rs, &mut tx, sent_us, order, false, false);
        }
        // Before its first sample quinn's estimator reads its configured
        // initial RTT, where Linux's srtt is 0 (BBR tells the two apart):
        // the first sample is this ACK's own, set in `on_end_acks`.
        if self.sk.srtt_us != 0 {
            let srtt_us = srtt.as_micros().clamp(1, (u32::MAX >> 3) as u128) as u32;
            self.sk.srtt_us = srtt_us << 3;
        }
    }

    /// `tcp_cwnd_validate()`: remember whether this window was limited by
    /// cwnd, or how much of it was used.
    fn validate_cwnd(&mut self) {
        let sk = &mut self.sk;
        let cwnd_limited = sk.packets_in_flight() >= sk.snd_cwnd;
        if !before(sk.snd_una, self.max_packets_seq)
            || cwnd_limited
            || (!sk.is_cwnd_limited && sk.packets_out > sk.max_packets_out)
        {
            sk.is_cwnd_limited = cwnd_limited;
            sk.max_packets_out = sk.packets_out;
            self.max_packets_seq = sk.snd_nxt;
        }
    }

    /// The stamp a packet sent at `sent_us` carries: the last change at
    /// or before it.
    fn stamp_at(&self, sent_us: u64) -> Option<TxStamp> {
        let i = self.stamps.partition_point(|&(t, _)| t <= sent_us);
        i.checked_sub(1).map(|i| self.stamps[i].1)
    }

    /// Drops the stamps no packet still in flight can carry.
    fn prune_stamps(&mut self, now_us: u64) {
        if self.sk.packets_out == 0 {
            let last = self.stamps.len().saturating_sub(1);
            self.stamps.drain(..last);
            return;
        }
        let horizon = STAMP_HORIZON_US.max(8 * (self.sk.srtt_us >> 3) as u64);
        while self.stamps.len() > 1 && self.stamps[1].0.saturating_add(horizon) < now_us {
            self.stamps.pop_front();
        }
    }

    /// Takes cwnd to ssthresh at once where Linux's PRR would walk it
    /// there over the round (not for an algorithm that sets cwnd itself).
    fn reduce_now(&mut self) {
        if self.cc.has_cong_control() || self.sk.snd_ssthresh >= TCP_INFINITE_SSTHRESH {
            return;
        }
        self.sk.snd_cwnd = self.sk.snd_ssthresh.max(1);
        self.sk.snd_cwnd_stamp = self.sk.jiffies;
    }

    /// The part of `tcp_fastretrans_alert()` that ends a reduction: once
    /// `snd_una` passes `high_seq`, CWR and Recovery end at ssthresh
    /// (nothing was undone), Loss simply ends, and the state is Open.
    fn end_reduction(&mut self) {
        let state = self.sk.icsk_ca_state;
        if state < CaState::Cwr || before(self.sk.snd_una, self.sk.high_seq) {
            return;
        }
        if state != CaState::Loss {
            tcp_end_cwnd_reduction(&mut self.tap, &mut self.cc, &mut self.sk, true);
        }
        tcp_set_ca_state(&mut self.tap, &mut self.cc, &mut self.sk, CaState::Open);
    }

    /// `tcp_enter_loss()` on persistent congestion (TCP's RTO).
    fn enter_loss(&mut self, now_us: u64, in_flight: u32) {
        if self.sk.icsk_ca_state != CaState::Loss {
            self.sk.prior_cwnd = self.sk.snd_cwnd;
            self.sk.snd_ssthresh = self.call(Hook::Ssthresh);
            self.call(Hook::CwndEvent(CaEvent::Loss));
        }
        self.sk.snd_cwnd = in_flight.saturating_add(1);
        self.sk.snd_cwnd_cnt = 0;
        self.sk.snd_cwnd_stamp = self.sk.jiffies;
        tcp_set_ca_state(&mut self.tap, &mut self.cc, &mut self.sk, CaState::Loss);
        self.sk.high_seq = self.sk.snd_nxt;
        tcp_ecn_queue_cwr(&mut self.sk);
        self.reduction_start_us = Some(now_us);
    }

    /// `tcp_enter_recovery()`: from CWR the threshold CWR set stands.
    fn enter_recovery(&mut self, now_us: u64) {
        if self.sk.icsk_ca_state < CaState::Cwr {
            let (tap, cc) = (&mut self.tap, &mut self.cc);
            tcp_init_cwnd_reduction(&mut self.sk, |sk| tap.call(&Hook::Ssthresh, cc, sk));
        }
        tcp_set_ca_state(&mut self.tap, &mut self.cc, &mut self.sk, CaState::Recovery);
        self.reduce_now();
        self.reduction_start_us = Some(now_us);
    }

    /// What the ACK's growth hook leaves: an algorithm that entered CWR
    /// itself (CDG's backoff) is reduced at once, as any CWR here is.
    fn after_hooks(&mut self, state_before: CaState, now_us: u64) {
        if state_before < CaState::Cwr && self.sk.icsk_ca_state == CaState::Cwr {
            self.reduce_now();
            self.reduction_start_us = Some(now_us);
        }
    }
}

impl<T: Tap<Algorithm> + Clone + Send + Sync + 'static> Controller for Kleinrock<T> {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        let now_us = self.set_clock(now);
        if self.sk.packets_in_flight() == 0 {
            self.call(Hook::CwndEvent(CaEvent::TxStart));
        }
        let packets_out = self.sk.packets_out;
        let stamp = self.rate.on_send(&mut self.sk, now_us, packets_out);
        if self.stamps.back().map(|&(_, s)| s) != Some(stamp) {
            self.stamps.push_back((now_us, stamp));
        }
        let sk = &mut self.sk;
        sk.packets_out = sk.packets_out.saturating_add(segments(bytes, sk.mss_cache));
        sk.snd_nxt = (last_packet_number as u32).wrapping_add(1);
        sk.lsndtime = sk.jiffies;
        self.validate_cwnd();
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        _app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.acked(now, sent, bytes, rtt.get());
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        let now_us = self.set_clock(now);
        if in_flight == 0 {
            self.sk.packets_out = 0;
        }
        let batch = std::mem::take(&mut self.ack);
        if batch.pkts == 0 {
            return;
        }
        let prior_una = self.sk.snd_una;
        if let Some(pn) = largest_packet_num_acked {
            self.sk.snd_una = (pn as u32).wrapping_add(1);
        }
        let rtt_us = batch
            .newest_sent_us
            .map_or(-1, |s| now_us.saturating_sub(s).min(i32::MAX as u64) as i32);
        if rtt_us >= 0 {
            // tcp_update_rtt_min(): a 0 µs sample counts as one jiffy.
            let m = match rtt_us as u32 {
                0 => jiffies_to_usecs(1, self.sk.hz).min(u32::MAX as u64) as u32,
                m => m,
            };
            self.sk.min_rtt_us = self.sk.min_rtt_us.min(m);
            if self.sk.srtt_us == 0 {
                // tcp_rtt_estimator()'s first sample: srtt = m.
                self.sk.srtt_us = (rtt_us.max(1) as u32) << 3;
            }
        }
        if app_limited {
            let in_flight = self.sk.packets_in_flight();
            RateSampler::mark_app_limited(&mut self.sk, in_flight);
        }
        let mut rs = batch.rs;
        rs.rtt_us = rtt_us as i64;
        rs.prior_in_flight = batch.prior_in_flight;
        let sample = AckSample {
            pkts_acked: batch.pkts,
            rtt_us,
            in_flight: self
                .sk
                .mss_cache
                .wrapping_mul(self.sk.delivered.wrapping_sub(rs.prior_delivered)),
        };
        self.call(Hook::PktsAcked(sample));
        let mut flags = CA_ACK_SLOWPATH;
        if self.sk.snd_una != prior_una {
            flags |= CA_ACK_WIN_UPDATE;
        }
        self.call(Hook::InAckEvent(flags));
        self.end_reduction();
        let losses = std::mem::take(&mut self.losses);
        self.rate
            .generate(&mut self.sk, &mut rs, now_us, batch.pkts, losses);
        let ack = self.sk.snd_una;
        let state_before = self.sk.icsk_ca_state;
        tcp_cong_control_without_prr(
            &mut self.tap,
            &mut self.cc,
            &mut self.sk,
            ack,
            batch.pkts,
            |_| rs,
        );
        self.after_hooks(state_before, now_us);
        self.prune_stamps(now_us);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        let now_us = self.set_clock(now);
        let sent_us = self.micros(sent);
        let lost = segments(lost_bytes, self.sk.mss_cache);
        self.sk.lost = self.sk.lost.wrapping_add(lost);
        self.sk.packets_out = self.sk.packets_out.saturating_sub(lost);
        self.losses = self.losses.saturating_add(lost);
        if is_persistent_congestion {
            let in_flight = self.sk.packets_in_flight();
            return self.enter_loss(now_us, in_flight);
        }
        if self
            .reduction_start_us
            .is_some_and(|start| sent_us <= start)
        {
            return;
        }
        if lost_bytes == 0 {
            if tcp_enter_cwr(&mut self.tap, &mut self.cc, &mut self.sk) {
                self.reduce_now();
                self.reduction_start_us = Some(now_us);
            }
            return;
        }
        if self.sk.icsk_ca_state < CaState::Recovery {
            self.enter_recovery(now_us);
        }
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        let old = self.sk.mss_cache;
        let new = new_mtu.max(1) as u32;
        if new > old {
            // tcp_mtup_probe_success(): the same bytes in flight, in
            // fewer, larger segments.
            let sk = &mut self.sk;
            let cwnd = (sk.snd_cwnd as u64 * old as u64 / new as u64).max(1);
            sk.snd_cwnd = cwnd as u32;
            sk.snd_cwnd_cnt = 0;
            sk.snd_cwnd_stamp = sk.jiffies;
            sk.snd_ssthresh = sk.current_ssthresh();
        }
        self.sk.mss_cache = new;
    }

    fn window(&self) -> u64 {
        self.window_bytes()
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.window_bytes();
        m.ssthresh = (self.sk.snd_ssthresh < TCP_INFINITE_SSTHRESH)
            .then(|| self.sk.snd_ssthresh as u64 * self.sk.mss_cache as u64);
        m.pacing_rate = (self.sk.pacing_rate != 0).then(|| self.sk.pacing_rate.saturating_mul(8));
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests;
