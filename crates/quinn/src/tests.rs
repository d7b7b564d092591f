//! The adapter's translation, event by event: quinn's calls made by hand
//! (no connection), and the hooks and window they must produce. (quinn's
//! `RttEstimator` cannot be made outside quinn, so ACKs go through
//! `acked`, which `on_ack` calls with the estimator's smoothed RTT.)

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kleinrock_cc::ops::{CaEvent, Hook, Tap};
use kleinrock_cc::sock::TCP_INFINITE_SSTHRESH;
use kleinrock_cc::{Algorithm, CaState, Sock};
use quinn_proto::congestion::{Controller, ControllerFactory};

use crate::{ConfigError, Kleinrock, KleinrockConfig};

const MTU: u16 = 1200;
const MS: Duration = Duration::from_millis(1);

/// The hooks called, in order.
#[derive(Clone, Default)]
struct Hooks(Arc<Mutex<Vec<Hook>>>);

impl Hooks {
    fn take(&self) -> Vec<Hook> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl Tap<Algorithm> for Hooks {
    fn before(&mut self, hook: &Hook, _sk: &Sock, _cc: &Algorithm) {
        self.0.lock().unwrap().push(*hook);
    }
}

/// A `spec` controller built at `t0`, its concrete type kept.
fn build(spec: &str, t0: Instant) -> (Box<Kleinrock<Hooks>>, Hooks) {
    let hooks = Hooks::default();
    let config = Arc::new(KleinrockConfig::new(spec).unwrap().with_tap(hooks.clone()));
    let k = config.build(t0, MTU).into_any().downcast().unwrap();
    (k, hooks)
}

/// Sends `n` full-size packets numbered from `pn` at `now`, one per call.
fn send(k: &mut Kleinrock<Hooks>, now: Instant, pn: u64, n: u64) {
    for i in 0..n {
        k.on_sent(now, MTU as u64, pn + i);
    }
}

/// quinn's ACK of packets `pns`, all sent at `sent`, with `in_flight`
/// bytes left.
fn ack(k: &mut Kleinrock<Hooks>, now: Instant, sent: Instant, pns: std::ops::Range<u64>) {
    let largest = pns.end - 1;
    for _ in pns {
        k.acked(now, sent, MTU as u64, now - sent);
    }
    let in_flight = k.sock().packets_out as u64 * MTU as u64;
    k.on_end_acks(now, in_flight, false, Some(largest));
}

#[test]
fn the_window_is_cwnd_segments_of_the_mtu_plus_the_byte_quinn_needs() {
    let (k, hooks) = build("reno", Instant::now());
    assert_eq!(hooks.take(), [Hook::Init]);
    assert_eq!((k.sock().snd_cwnd, k.sock().mss_cache), (10, MTU as u32));
    assert_eq!(k.window(), 10 * MTU as u64 + 1);
    assert_eq!(k.initial_window(), k.window());
    let m = k.metrics();
    assert_eq!((m.congestion_window, m.ssthresh), (k.window(), None));
}

#[test]
fn an_ack_calls_the_hooks_in_tcp_acks_order_and_grows_cwnd() {
    let t0 = Instant::now();
    let (mut k, hooks) = build("reno", t0);
    hooks.take();
    send(&mut k, t0, 0, 10);
    // From an empty pipe: CA_EVENT_TX_START, once.
    assert_eq!(hooks.take(), [Hook::CwndEvent(CaEvent::TxStart)]);
    assert_eq!((k.sock().packets_out, k.sock().snd_nxt), (10, 10));
    assert!(k.sock().is_cwnd_limited, "10 out of a cwnd of 10");
    ack(&mut k, t0 + 5 * MS, t0, 0..2);
    let h = hooks.take();
    let names: Vec<_> = h.iter().map(Hook::name).collect();
    assert_eq!(names, ["pkts_acked", "in_ack_event", "cong_avoid"]);
    let Hook::PktsAcked(sample) = h[0] else {
        unreachable!()
    };
    // The RTT of the newest packet acknowledged, and both acknowledged.
    assert_eq!((sample.pkts_acked, sample.rtt_us), (2, 5_000));
    assert_eq!(h[2], Hook::CongAvoid { ack: 2, acked: 2 });
    // Reno's slow start: one segment per segment acknowledged.
    assert_eq!(k.sock().snd_cwnd, 12);
    assert_eq!((k.sock().snd_una, k.sock().delivered), (2, 2));
    // The first sample is srtt (quinn's estimator still reads its initial
    // RTT); later ones follow quinn's smoothed RTT.
    assert_eq!((k.sock().min_rtt_us, k.sock().srtt_us >> 3), (5_000, 5_000));
    k.acked(t0 + 9 * MS, t0, MTU as u64, 7 * MS);
    assert_eq!(k.sock().srtt_us >> 3, 7_000);
    assert_eq!(k.window(), 12 * MTU as u64 + 1);
    // The clocks: µs since the build (plus one), jiffies at 1000 Hz.
    assert_eq!(k.sock().tcp_mstamp, 9_001);
}

#[test]
fn a_loss_enters_recovery_once_per_window_and_an_ack_past_it_ends_it() {
    let t0 = Instant::now();
    let (mut k, hooks) = build("reno", t0);
    send(&mut k, t0, 0, 10);
    ack(&mut k, t0 + 10 * MS, t0, 1..4);
    assert_eq!(k.sock().snd_cwnd, 13);
    hooks.take();
    // Packet 0 was lost.
    let t1 = t0 + 10 * MS;
    k.on_congestion_event(t1, t0, false, MTU as u64);
    let names: Vec<_> = hooks.take().iter().map(Hook::name).collect();
    assert_eq!(names, ["ssthresh", "set_state"]);
    assert_eq!(k.sock().icsk_ca_state, CaState::Recovery);
    // tcp_reno_ssthresh(): half of cwnd; the window lands there at once.
    assert_eq!((k.sock().snd_ssthresh, k.sock().snd_cwnd), (6, 6));
    assert_eq!((k.sock().high_seq, k.sock().lost), (10, 1));
    assert_eq!(k.metrics().ssthresh, Some(6 * MTU as u64));
    // Another loss sent before the reduction began: the same episode.
    k.on_congestion_event(t1 + MS, t0, false, MTU as u64);
    assert!(hooks.take().is_empty());
    // ACKs of the window's other packets: still Recovery, no growth.
    ack(&mut k, t1 + MS, t0, 4..8);
    assert_eq!(k.sock().icsk_ca_state, CaState::Recovery);
    assert_eq!(k.sock().snd_cwnd, 6);
    hooks.take();
    // A packet sent after the loss is acknowledged: the reduction ends at
    // ssthresh (COMPLETE_CWR), Open, then congestion avoidance.
    send(&mut k, t1 + MS, 10, 2);
    ack(&mut k, t1 + 11 * MS, t1 + MS, 10..11);
    let h = hooks.take();
    let names: Vec<_> = h.iter().map(Hook::name).collect();
    assert_eq!(
        names,
        [
            "pkts_acked",
            "in_ack_event",
            "cwnd_event",
            "set_state",
            "cong_avoid"
        ]
    );
    assert_eq!(h[2], Hook::CwndEvent(CaEvent::CompleteCwr));
    assert_eq!(h[3], Hook::SetState(CaState::Open));
    assert_eq!(k.sock().icsk_ca_state, CaState::Open);
    assert_eq!((k.sock().snd_cwnd, k.sock().snd_cwnd_cnt), (6, 1));
}

#[test]
fn ce_enters_cwr_and_persistent_congestion_is_an_rto() {
    let t0 = Instant::now();
    let (mut k, hooks) = build("reno", t0);
    send(&mut k, t0, 0, 10);
    hooks.take();
    // No lost bytes: the peer's CE count rose. tcp_enter_cwr().
    k.on_congestion_event(t0 + 10 * MS, t0, false, 0);
    let names: Vec<_> = hooks.take().iter().map(Hook::name).collect();
    assert_eq!(names, ["ssthresh", "set_state"]);
    assert_eq!(k.sock().icsk_ca_state, CaState::Cwr);
    assert_eq!((k.sock().snd_ssthresh, k.sock().snd_cwnd), (5, 5));
    // Persistent congestion: tcp_enter_loss(), cwnd = in flight + 1.
    k.on_congestion_event(t0 + 1000 * MS, t0 + MS, true, 3 * MTU as u64);
    let h = hooks.take();
    assert_eq!(h[1], Hook::CwndEvent(CaEvent::Loss));
    assert_eq!(h[2], Hook::SetState(CaState::Loss));
    assert_eq!(k.sock().icsk_ca_state, CaState::Loss);
    assert_eq!((k.sock().snd_cwnd, k.sock().lost), (7 + 1, 3));
    assert!(k.sock().snd_ssthresh < TCP_INFINITE_SSTHRESH);
}

#[test]
fn bbr_gets_delivery_rate_samples_from_quinns_events() {
    let t0 = Instant::now();
    let (mut k, hooks) = build("bbr", t0);
    hooks.take();
    // Ten packets sent at t0, acknowledged 10 ms later: a sample of 10
    // segments over 10 ms, as tcp_rate.c would take it.
    send(&mut k, t0, 0, 10);
    ack(&mut k, t0 + 10 * MS, t0, 0..10);
    let h = hooks.take();
    let rs = h
        .iter()
        .find_map(|h| match h {
            Hook::CongControl { rs, .. } => Some(*rs),
            _ => None,
        })
        .expect("bbr has cong_control");
    assert_eq!(
        (rs.delivered, rs.interval_us, rs.acked_sacked),
        (10, 10_000, 10)
    );
    assert_eq!((rs.prior_in_flight, rs.rtt_us, rs.losses), (10, 10_000, 0));
    assert!(!h.iter().any(|h| matches!(h, Hook::CongAvoid { .. })));
}

#[test]
fn a_larger_mtu_keeps_the_windows_bytes() {
    let (mut k, _) = build("reno", Instant::now());
    k.on_mtu_update(1500);
    // tcp_mtup_probe_success(): 10 × 1200 / 1500 = 8 segments of 1500.
    assert_eq!((k.sock().snd_cwnd, k.sock().mss_cache), (8, 1500));
    // Smaller: the segments stay, as tcp_sync_mss() leaves them.
    k.on_mtu_update(1200);
    assert_eq!((k.sock().snd_cwnd, k.sock().mss_cache), (8, 1200));
}

#[test]
fn what_cannot_run_is_refused_in_one_sentence() {
    let err = KleinrockConfig::new("dctcp").unwrap_err();
    assert_eq!(err, ConfigError::NeedsEcnCounts("dctcp"));
    assert!(err
        .to_string()
        .contains("quinn tells a congestion controller only that the CE count rose"));
    assert!(matches!(
        KleinrockConfig::new("nope"),
        Err(ConfigError::Spec(_))
    ));
    let cubic = KleinrockConfig::new("cubic").unwrap();
    assert_eq!(cubic.clone().with_hz(0).unwrap_err(), ConfigError::Hz(0));
    assert!(cubic.with_hz(250).is_ok());
}
