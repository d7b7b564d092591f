//! The sender driven by hand, ACK by ACK: undo and F-RTO, with the hooks
//! they call as a recorded trace shows them.

use std::path::{Path, PathBuf};

use kleinrock_cc::sock::TCP_INFINITE_SSTHRESH;
use kleinrock_cc::{Algorithm, CaState};
use kleinrock_trace::Recorder;

use super::{Sender, SenderConfig};
use crate::packet::{Packet, HEADER_BYTES};
use crate::time::{Time, MS};

fn reno(trace: Option<&Path>) -> Sender {
    let cc: Algorithm = "reno".parse().unwrap();
    let recorder = trace.map(|p| Recorder::create(p, &cc).unwrap());
    let cfg = SenderConfig {
        mss: 1000,
        init_cwnd: 10,
        hz: 1000,
        pace_all: false,
        ecn: false,
        limit_segments: None,
        rwnd_segments: 1 << 20,
        slow_start_after_idle: false,
        seed: 1,
    };
    Sender::new(0, cc, cfg, recorder)
}

fn ack(cum: u32, blocks: &[(u32, u32)], dsack: bool) -> Packet {
    let mut p = Packet::ack(0, cum, HEADER_BYTES);
    p.sack[..blocks.len()].copy_from_slice(blocks);
    p.nsack = blocks.len() as u8;
    p.dsack = dsack;
    p
}

fn seqs(out: &[Packet]) -> Vec<u32> {
    out.iter().map(|p| p.seq).collect()
}

fn trace_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("kleinrock-undo-{name}-{}.csv", std::process::id()))
}

/// The hooks a recorded sender called, in order.
fn hooks(s: &mut Sender, path: &Path) -> Vec<String> {
    s.take_recorder().unwrap().finish().unwrap();
    let mut r = kleinrock_trace::read::TraceReader::open(path).unwrap();
    let hook = r.column("hook").unwrap();
    let mut names = Vec::new();
    while r.next_row().unwrap().is_some() {
        names.push(r.text(hook).to_string());
    }
    std::fs::remove_file(path).ok();
    names
}

/// Ten segments out at 0; at 40 ms segments 0-1 are ACKed (cwnd 12,
/// segments 10-13 sent); then nothing until the loss probe (new
/// segment 14) and the RTO, which retransmits segment 2 with cwnd 1.
///
/// The times, from the kernel's arithmetic at HZ=1000: the ACK's RTT
/// sample of 40 ms gives srtt 40 ms and rttvar at its 200 ms floor, an RTO
/// of 240 ms (`__tcp_set_rto()`). The ACK arms the probe at two srtt plus
/// two jiffies (`tcp_schedule_loss_probe()`): 122 ms. The probe re-arms
/// the RTO a full RTO from its own time (`tcp_rearm_rto()` with no timer
/// pending): 362 ms.
fn until_rto(s: &mut Sender) -> Time {
    let mut out = Vec::new();
    s.start(0, &mut out);
    assert_eq!(seqs(&out), (0..10).collect::<Vec<_>>());
    out.clear();
    s.on_ack(40 * MS, &ack(2, &[], false), &mut out);
    assert_eq!((s.sk.snd_cwnd, seqs(&out)), (12, vec![10, 11, 12, 13]));
    out.clear();
    let probe = s.next_wakeup().unwrap();
    assert_eq!(probe, 122 * MS);
    s.on_timer(probe, &mut out);
    assert_eq!((s.stats.tlps, s.stats.rtos, seqs(&out)), (1, 0, vec![14]));
    out.clear();
    let rto = s.next_wakeup().unwrap();
    assert_eq!(rto, 362 * MS);
    s.on_timer(rto, &mut out);
    // tcp_retransmit_timer(): the timeout's retransmission is snd_una's
    // segment, alone, in Loss with cwnd 1 and ssthresh half of 12.
    assert_eq!((s.stats.rtos, s.sb.una, seqs(&out)), (1, 2, vec![2]));
    assert_eq!((s.sk.snd_cwnd, s.sk.snd_ssthresh), (1, 6));
    assert_eq!(s.sk.icsk_ca_state, CaState::Loss);
    rto
}

#[test]
fn the_rto_retransmits_snd_una_and_backs_off_twice_as_long_each_time() {
    let mut s = reno(None);
    let first = until_rto(&mut s);
    // The RTO doubled to 480 ms (icsk_backoff); the second timeout
    // retransmits snd_una again, and as the first has reduced already
    // (icsk_retransmits is 1), tcp_enter_loss() leaves ssthresh alone.
    let mut out = Vec::new();
    let second = s.next_wakeup().unwrap();
    assert_eq!(second - first, 480 * MS);
    s.on_timer(second, &mut out);
    assert_eq!((s.stats.rtos, seqs(&out)), (2, vec![2]));
    assert_eq!((s.sk.snd_cwnd, s.sk.snd_ssthresh), (1, 6));
    assert_eq!(s.sk.icsk_ca_state, CaState::Loss);
    assert_eq!(s.next_wakeup().unwrap() - second, 960 * MS);
}

#[test]
fn f_rto_undoes_a_timeout_whose_originals_were_only_delayed() {
    let path = trace_path("frto");
    let mut s = reno(Some(&path));
    let rto = until_rto(&mut s);
    // The originals of 2 and 3 arrive: the ACK covers segment 3,
    // never retransmitted (RFC 5682 3.1 step 3.b).
    let mut out = Vec::new();
    s.on_ack(rto + 5 * MS, &ack(4, &[], false), &mut out);
    assert_eq!(s.stats.undos, 1);
    assert_eq!(s.sk.icsk_ca_state, CaState::Open);
    assert_eq!((s.sb.lost_out, s.retransmits_in_row), (0, 0));
    // tcp_reno_undo_cwnd(): max(cwnd 1, prior_cwnd 12); ssthresh back
    // to tcp_current_ssthresh() before the RTO, still infinite in
    // slow start; then slow start adds the two segments ACKed.
    assert_eq!(
        (s.sk.snd_cwnd, s.sk.snd_ssthresh),
        (14, TCP_INFINITE_SSTHRESH)
    );
    // Nothing more is retransmitted: new data fills the window
    // (11 in flight, 14 allowed).
    assert_eq!(seqs(&out), vec![15, 16, 17]);
    let h = hooks(&mut s, &path);
    let at = h.iter().position(|n| n == "undo_cwnd").unwrap();
    assert_eq!(
        h[at - 2..],
        [
            "pkts_acked",
            "in_ack_event",
            "undo_cwnd",
            "set_state",
            "cong_avoid"
        ]
    );
    assert_eq!(h.iter().filter(|n| *n == "undo_cwnd").count(), 1);
}

#[test]
fn f_rto_sends_new_data_then_keeps_a_real_loss() {
    let mut s = reno(None);
    let rto = until_rto(&mut s);
    // Only the retransmission of 2 arrives (step 2.b): new data, not
    // retransmissions, with the slow-start cwnd of 2.
    let mut out = Vec::new();
    s.on_ack(rto + 40 * MS, &ack(3, &[], false), &mut out);
    assert_eq!((s.sk.snd_cwnd, seqs(&out)), (2, vec![15, 16]));
    assert!(s.undo.frto);
    // The new data is SACKed over the hole at 3: the loss was real
    // (step 3.a); recovery goes on with retransmissions.
    out.clear();
    s.on_ack(rto + 80 * MS, &ack(3, &[(15, 16)], false), &mut out);
    assert!(!s.undo.frto);
    assert_eq!(s.sk.icsk_ca_state, CaState::Loss);
    assert_eq!((s.stats.undos, s.sk.snd_ssthresh), (0, 6));
    assert_eq!(seqs(&out), vec![3]);
    // Its ACK: una advances, but a retransmission is what arrived.
    out.clear();
    s.on_ack(rto + 120 * MS, &ack(4, &[(15, 16)], false), &mut out);
    assert_eq!((s.stats.undos, s.sk.icsk_ca_state), (0, CaState::Loss));
}

/// Ten segments out at 0; at 40 ms 1-3 are SACKed: RACK marks 0
/// lost, Recovery (ssthresh 5, prior cwnd 10) retransmits it and
/// PRR sends new segment 10.
fn into_recovery(s: &mut Sender) {
    let mut out = Vec::new();
    s.start(0, &mut out);
    out.clear();
    s.on_ack(40 * MS, &ack(0, &[(1, 4)], false), &mut out);
    assert_eq!(s.sk.icsk_ca_state, CaState::Recovery);
    assert_eq!((s.sk.snd_ssthresh, s.sk.prior_cwnd), (5, 10));
    assert_eq!((s.sk.snd_cwnd, seqs(&out)), (8, vec![0, 10]));
}

#[test]
fn a_recovery_whose_retransmission_is_d_sacked_is_undone() {
    let path = trace_path("dsack");
    let mut s = reno(Some(&path));
    into_recovery(&mut s);
    // The original of 0 arrived after all: the ACK of 0-9 reports the
    // retransmission as a duplicate.
    let mut out = Vec::new();
    s.on_ack(60 * MS, &ack(10, &[(0, 1)], true), &mut out);
    assert_eq!(s.stats.undos, 1);
    assert_eq!(s.sk.icsk_ca_state, CaState::Open);
    // cwnd max(PRR's 8, prior 10), ssthresh infinite again; then slow
    // start over the 7 segments newly delivered.
    assert_eq!(
        (s.sk.snd_cwnd, s.sk.snd_ssthresh),
        (17, TCP_INFINITE_SSTHRESH)
    );
    let h = hooks(&mut s, &path);
    let at = h.iter().position(|n| n == "undo_cwnd").unwrap();
    // tcp_try_undo_recovery() then tcp_end_cwnd_reduction(), which
    // leaves the undone cwnd alone.
    assert_eq!(
        h[at..],
        ["undo_cwnd", "set_state", "cwnd_event", "cong_avoid"]
    );
}

#[test]
fn without_the_d_sack_the_recovery_ends_at_ssthresh() {
    let mut s = reno(None);
    into_recovery(&mut s);
    let mut out = Vec::new();
    s.on_ack(60 * MS, &ack(10, &[], false), &mut out);
    assert_eq!((s.stats.undos, s.sk.icsk_ca_state), (0, CaState::Open));
    // cwnd = ssthresh 5, then congestion avoidance: 7 ACKed over a
    // window of 5 adds one.
    assert_eq!((s.sk.snd_cwnd, s.sk.snd_ssthresh), (6, 5));
    // A D-SACK arriving after the episode still undoes it
    // (tcp_try_undo_dsack() in Open): cwnd back to prior_cwnd.
    s.on_ack(70 * MS, &ack(10, &[(0, 1)], true), &mut out);
    assert_eq!(s.stats.undos, 1);
    assert_eq!(
        (s.sk.snd_cwnd, s.sk.snd_ssthresh),
        (10, TCP_INFINITE_SSTHRESH)
    );
    // Only one D-SACK per retransmission is believed: nothing more.
    s.on_ack(80 * MS, &ack(10, &[(0, 1)], true), &mut out);
    assert_eq!(s.stats.undos, 1);
}

#[test]
fn a_d_sack_of_data_never_retransmitted_in_the_episode_does_not_count() {
    let mut s = reno(None);
    into_recovery(&mut s);
    let mut out = Vec::new();
    // A D-SACK of segment 5 (never retransmitted) is not one of the
    // episode's retransmissions; the recovery ends at ssthresh.
    s.on_ack(60 * MS, &ack(10, &[(5, 6)], true), &mut out);
    assert_eq!((s.stats.undos, s.sk.snd_ssthresh), (0, 5));
}

#[test]
fn ece_forbids_restoring_cwnd() {
    let mut s = reno(None);
    into_recovery(&mut s);
    let mut out = Vec::new();
    let mut a = ack(10, &[(0, 1)], true);
    a.ece = true;
    s.cfg.ecn = true;
    s.on_ack(60 * MS, &a, &mut out);
    // Undone (the marker is gone) but with prior_ssthresh 0: no
    // undo_cwnd, cwnd stays at PRR's 8 and ssthresh is not restored;
    // then the ECE itself starts a CWR from there (ssthresh 8 / 2).
    assert_eq!(s.stats.undos, 1);
    assert_eq!(s.sk.icsk_ca_state, CaState::Cwr);
    assert_eq!((s.sk.prior_cwnd, s.sk.snd_ssthresh), (8, 4));
}
