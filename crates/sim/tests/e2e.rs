//! End-to-end behaviour of the simulated TCP: each test runs the simulator
//! on a small dumbbell and asserts a mechanism (loss recovery, timers,
//! ACK policy, AQMs, pacing) or an algorithm's published behaviour.
//!
//! Where a run's value is exact for its seed, the tests assert it exactly
//! or derive it; ranges are left where a test is meant to survive changes
//! of the model (an algorithm's published behaviour), and say so. Tests
//! whose names say `round_trip` replay a trace the simulator recorded into
//! the same Rust algorithm: they test recording and replay, not Linux.

use kleinrock_cc::Algorithm;
use kleinrock_sim::time::{MS, SEC};
use kleinrock_sim::world::QueueConfig;
use kleinrock_sim::Limit;
use kleinrock_sim::LossModel;
use kleinrock_sim::{Config, FlowConfig, LinkConfig, Results, Sim};

fn link(rate_bps: u64, packets: u32, loss_ppm: u32) -> LinkConfig {
    LinkConfig {
        rate_bps,
        trace: None,
        delay: 0,
        queue: QueueConfig::Fifo {
            limit: Limit::Packets(packets),
            mark_at: None,
        },
        loss: if loss_ppm == 0 {
            LossModel::None
        } else {
            LossModel::Bernoulli { ppm: loss_ppm }
        },
        jitter: kleinrock_sim::time::serialization(1500, rate_bps),
    }
}

fn flow(cc: &str, rtt_ms: u64) -> FlowConfig {
    FlowConfig {
        cc: cc.parse::<Algorithm>().unwrap(),
        rtt: rtt_ms * MS,
        start: 0,
        stop: None,
        upload: true,
        size_segments: None,
        trace: None,
        request_response: None,
    }
}

pub fn dumbbell(
    rate_bps: u64,
    queue: u32,
    loss_ppm: u32,
    secs: u64,
    flows: Vec<FlowConfig>,
) -> Config {
    Config {
        duration: secs * SEC,
        seed: 1,
        sample_interval: 100 * MS,
        hz: 250,
        mss: 1448,
        init_cwnd: 10,
        rwnd_segments: 1 << 20,
        pace_all: false,
        ecn: false,
        peer_ecn: true,
        slow_start_after_idle: true,
        delayed_acks: true,
        links: [link(rate_bps, queue, loss_ppm), link(rate_bps, 1000, 0)],
        flows,
        pings: vec![],
        udp: vec![],
        capture: None,
        capture_file: None,
    }
}

pub fn run(cfg: Config) -> Results {
    Sim::new(cfg).unwrap().run(&mut |_| {}).unwrap()
}

fn with_loss(mut c: Config, drops: Vec<u64>) -> Config {
    c.links[0].loss = LossModel::Indices(drops);
    c
}

#[test]
fn a_single_drop_is_repaired_by_rack_fast_retransmit_and_prr() {
    let mut c = with_loss(
        dumbbell(10_000_000, 1000, 0, 10, vec![flow("reno", 40)]),
        vec![200],
    );
    c.sample_interval = 5 * MS;
    let r = run(c);
    let f = &r.flows[0];
    assert_eq!((f.retransmits, f.rtos, f.recoveries), (1, 0, 1));
    // PRR: through recovery inflight falls from the prior window towards
    // ssthresh, never below it, and cwnd ends at ssthresh.
    let rec: Vec<_> = r
        .flow_series
        .iter()
        .filter(|s| s.ca_state == "Recovery")
        .collect();
    assert!(rec.len() > 10);
    let ssthresh = rec[0].ssthresh;
    let prior = rec[0].inflight + 2;
    assert!(rec
        .iter()
        .all(|s| s.inflight >= ssthresh && s.inflight <= prior));
    let lowest = rec.iter().map(|s| s.inflight).min().unwrap();
    assert!(
        lowest <= ssthresh + ssthresh / 10,
        "inflight reached {lowest}, ssthresh {ssthresh}"
    );
    let after = r
        .flow_series
        .iter()
        .find(|s| s.t > rec.last().unwrap().t)
        .unwrap();
    assert_eq!((after.ca_state, after.cwnd), ("Open", ssthresh));
}

/// The `pkts_acked` rows of a flow's recorded trace: `as_pkts_acked`, and
/// `snd_una`, `sacked_out` and `high_seq` (in segments) as the hook saw
/// them.
fn pkts_acked_rows(mut f: FlowConfig, drops: Vec<u64>, name: &str) -> Vec<[u32; 4]> {
    let path =
        std::env::temp_dir().join(format!("kleinrock-acked-{name}-{}.csv", std::process::id()));
    f.trace = Some(path.clone());
    run(with_loss(dumbbell(10_000_000, 1000, 0, 2, vec![f]), drops));
    let columns = [
        "as_pkts_acked",
        "pre_snd_una",
        "pre_sacked_out",
        "pre_high_seq",
    ];
    let rows = trace_rows(&path, &columns);
    std::fs::remove_file(&path).ok();
    rows.into_iter()
        .filter(|(hook, _)| hook == "pkts_acked")
        .map(|(_, c)| {
            [
                c[0] as u32,
                (c[1] / 1448) as u32,
                c[2] as u32,
                (c[3] / 1448) as u32,
            ]
        })
        .collect()
}

#[test]
fn pkts_acked_counts_cumulative_acks_as_the_kernel_does() {
    // tcp_clean_rtx_queue() hands pkts_acked the segments the cumulative
    // ACK took off the retransmission queue, those SACKed earlier
    // included; an ACK that only SACKs reports 0 (and is still reported,
    // for its RTT sample).
    //
    // A 20-segment transfer that loses segment 3, worked by hand:
    // - 0-9 leave at once (initial window 10).
    // - 0, 1 and 2 arrive in order and the receiver, in quick-ACK mode,
    //   ACKs each: 1, 1, 1. Slow start sends two segments per ACK: 10-15.
    // - Every later arrival is out of order and ACKed at once with its
    //   SACK: 0 each. The first SACK (of 4) puts the sender in Disorder,
    //   where it and the second (of 5) each let a new segment out (16,
    //   17); the third brings sacked_out to the reordering threshold of 3:
    //   RACK marks 3 lost, Recovery starts at snd_nxt 18, and 3 is
    //   retransmitted behind 0-17. PRR sends 18 and 19 after it.
    // - So 4-17 arrive before the retransmission: 14 SACK-only ACKs.
    // - The retransmission fills the hole: its ACK covers 3-17, the hole
    //   and the 14 segments SACKed above it: 15. Not 18 and 19, which
    //   left after it.
    // - 18 and 19 arrive in order; the receiver has spent its 16 quick
    //   ACKs (TCP_MAX_QUICKACKS) and ACKs the two together: 2.
    let mut transfer = flow("reno", 40);
    transfer.size_segments = Some(20);
    let rows = pkts_acked_rows(transfer, vec![3], "transfer");
    let counts: Vec<u32> = rows.iter().map(|r| r[0]).collect();
    let mut want = vec![1, 1, 1];
    want.extend([0; 14]);
    want.extend([15, 2]);
    assert_eq!(counts, want);
    // The hook sees the socket after the clean-up: the ACK before found
    // snd_una at the hole with 14 segments SACKed above it; the filling
    // ACK leaves snd_una at Recovery's high_seq, 18, nothing SACKed.
    assert_eq!(rows[16][1..3], [3, 14]);
    assert_eq!(rows[17][1..], [18, 0, 18]);

    // The same on a bulk flow that loses its 201st segment deep in slow
    // start: every segment sent before the retransmission (up to
    // high_seq, snd_nxt when Recovery began) arrives first and is SACKed,
    // one SACK-only ACK each; the retransmission's ACK then covers the hole
    // and all of them at once, and nothing PRR sent after it.
    let rows = pkts_acked_rows(flow("reno", 40), vec![200], "bulk");
    let fill = rows
        .iter()
        .position(|r| r[1] > 200)
        .expect("an ACK moves snd_una past the hole");
    let ([_, una, sacked, _], [acked, una_after, _, high_seq]) = (rows[fill - 1], rows[fill]);
    assert_eq!((una, sacked, una_after, high_seq), (200, 211, 412, 412));
    assert_eq!(acked, high_seq - una);
    assert_eq!(acked, 1 + sacked);
    let sack_only = rows.iter().filter(|r| r[0] == 0).count();
    assert_eq!(sack_only, sacked as usize);
}

#[test]
fn a_tail_drop_is_repaired_by_the_loss_probe() {
    let mut f = flow("reno", 40);
    f.size_segments = Some(50);
    let r = run(with_loss(
        dumbbell(10_000_000, 1000, 0, 10, vec![f]),
        vec![49],
    ));
    let f = &r.flows[0];
    assert_eq!((f.retransmits, f.tlps, f.rtos), (1, 1, 0));
    // Slow start delivers 0-48 by about 0.19 s. With one segment out, the
    // probe waits 2 srtt + 200 ms for a delayed ACK
    // (tcp_schedule_loss_probe()), capped at the RTO's deadline (srtt +
    // 200 ms, ~0.26 s): it fires instead of the RTO, and the receiver
    // ACKs the lone segment an RTT and its 40 ms delayed-ACK timer later.
    let done = f.completion_s.unwrap();
    assert!((0.5..0.55).contains(&done), "{done}");
}

#[test]
fn a_burst_loss_times_out_and_backs_off() {
    let path = std::env::temp_dir().join(format!("kleinrock-burst-{}.csv", std::process::id()));
    let mut f = flow("reno", 40);
    f.size_segments = Some(100);
    f.trace = Some(path.clone());
    // Segments 60-99, the loss probe (packet 100, a new copy of 99) and
    // the first RTO's retransmission (packet 101) are all lost: two RTOs,
    // the second after twice the first's timeout.
    let r = run(with_loss(
        dumbbell(10_000_000, 1000, 0, 10, vec![f]),
        (60..=101).collect(),
    ));
    let f = &r.flows[0];
    // 60 at each RTO, 99 by the probe, 61-99 in Loss's slow start.
    assert_eq!((f.rtos, f.tlps, f.retransmits), (2, 1, 1 + 1 + 1 + 39));
    let rows = trace_rows(
        &path,
        &[
            "ts_ns",
            "arg_u",
            "as_pkts_acked",
            "pre_snd_una",
            "pre_srtt_us",
            "ret",
            "post_snd_cwnd",
        ],
    );
    std::fs::remove_file(&path).ok();
    let una = |c: &[i128]| c[3] / 1448;
    // Each timeout enters Loss (set_state 4) with snd_una at the hole, 60.
    let losses: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].0 == "set_state" && rows[i].1[1] == 4)
        .collect();
    assert_eq!(losses.len(), 2, "{rows:?}");
    for &i in &losses {
        assert_eq!((una(&rows[i].1), rows[i].1[6]), (60, 1), "cwnd 1 at 60");
    }
    // The first reduces (tcp_enter_loss(): ssthresh, CA_EVENT_LOSS), from
    // cwnd 70 to ssthresh 35; the second, already in Loss with
    // icsk_retransmits set, does not: no hook runs between the two.
    let first = losses[0];
    let hooks = [&rows[first - 2].0, &rows[first - 1].0];
    assert_eq!(hooks, ["ssthresh", "cwnd_event"]);
    assert_eq!((rows[first - 2].1[5], rows[first - 1].1[1]), (35, 3));
    assert_eq!(losses[1], first + 1);

    // The times, from the kernel's arithmetic at HZ=250 (4 ms jiffies,
    // usecs_to_jiffies() rounding up): the last ACK before the burst
    // (snd_una to 60) arms the loss probe at 2 srtt + 2 jiffies
    // (tcp_schedule_loss_probe()); the probe re-arms the RTO a full
    // srtt + rttvar from its own time, rttvar at its 200 ms floor
    // (slow start's RTT samples vary far less); the second RTO comes at
    // twice that (icsk_backoff).
    let jiffies = |us: i128| (us + 3999) / 4000 * 4_000_000;
    let srtt_x8 = rows[first].1[4];
    let rto_us = (srtt_x8 >> 3) + 200_000;
    let last_ack = rows[..first]
        .iter()
        .rev()
        .find(|(h, c)| h == "pkts_acked" && una(c) == 60)
        .expect("the ACK of 0-59")
        .1[0];
    let probe = last_ack + jiffies(srtt_x8 >> 2) + 2 * 4_000_000;
    let rto1 = rows[first].1[0];
    let rto2 = rows[losses[1]].1[0];
    assert_eq!(rto1, probe + jiffies(rto_us), "first RTO");
    assert_eq!(rto2, rto1 + jiffies(2 * rto_us), "second RTO");
    // The next ACK covers snd_una's segment alone: each timeout
    // retransmitted it, and only it.
    let next = rows[losses[1]..]
        .iter()
        .find(|(h, _)| h == "pkts_acked")
        .unwrap();
    assert_eq!((next.1[2], una(&next.1)), (1, 61));
    // Then slow start from cwnd 1 over the other 39 segments: the lone
    // retransmission's delayed ACK and about seven rounds of ~45 ms.
    let done = f.completion_s.unwrap() - rto2 as f64 / 1e9;
    assert!((0.3..0.4).contains(&done), "{done} s after the second RTO");
}

#[test]
fn the_rate_sampler_reads_the_bottleneck_rate() {
    let r = run(dumbbell(10_000_000, 1000, 0, 10, vec![flow("cubic", 40)]));
    let payload_rate = 10e6 * 1448.0 / 1500.0;
    for s in r.flow_series.iter().filter(|s| s.t > 3.0) {
        assert!(
            (s.delivery_rate_bps / payload_rate - 1.0).abs() < 0.01,
            "{}",
            s.delivery_rate_bps
        );
    }
}

#[test]
fn delayed_acks_halve_the_ack_count() {
    // One ACK per two segments, and a few more: the first 16 segments'
    // quick ACKs and the immediate ACKs of out-of-order segments after
    // each drop of the 84-packet FIFO (0.8% of the segments).
    let r = run(dumbbell(10_000_000, 84, 0, 20, vec![flow("reno", 40)]));
    let (data, acks) = (r.links[0].tx_packets as f64, r.links[1].tx_packets as f64);
    assert!(
        (0.5..0.53).contains(&(acks / data)),
        "{acks} ACKs for {data} segments"
    );
    let mut c = dumbbell(10_000_000, 84, 0, 20, vec![flow("reno", 40)]);
    c.delayed_acks = false;
    let r = run(c);
    // One per segment that arrives; the FIFO's drops never do.
    let (data, acks) = (r.links[0].tx_packets as f64, r.links[1].tx_packets as f64);
    assert!(
        (0.99..=1.0).contains(&(acks / data)),
        "{acks} ACKs for {data} segments"
    );
}

#[test]
fn link_delay_adds_to_every_flows_rtt() {
    let mut c = dumbbell(100_000_000, 1000, 0, 5, vec![flow("cubic", 10)]);
    c.links[0].delay = 5 * MS;
    c.links[1].delay = 10 * MS;
    let r = run(c);
    let f = &r.flows[0];
    assert_eq!(f.rtt_ms, 25.0);
    // 10 + 5 + 10 ms, plus the serialization and jitter of a packet.
    let min = r
        .flow_series
        .iter()
        .map(|s| s.min_rtt_us)
        .filter(|&m| m > 0)
        .min()
        .unwrap();
    assert!((25_000..25_300).contains(&min), "{min}");
}

#[test]
fn reno_fills_a_10_mbit_link_and_its_buffer() {
    let r = run(dumbbell(10_000_000, 84, 0, 30, vec![flow("reno", 40)]));
    let f = &r.flows[0];
    // The link: 99% of its payload rate (1448 of every 1500 bytes).
    let payload_bps = 10e6 * 1448.0 / 1500.0;
    assert!(f.goodput_bps > 0.99 * payload_bps, "{}", f.goodput_bps);
    // The buffer: 84 packets of 1.2 ms, 100.8 ms of queue on a 40 ms path;
    // the RTT's 95th percentile is within two packets of a full buffer.
    let full_ms = 40.0 + 84.0 * 1.2;
    assert!(
        (full_ms - 2.4..=full_ms).contains(&f.rtt_p95_ms),
        "{}",
        f.rtt_p95_ms
    );
    let q_max = r
        .queue_series
        .iter()
        .filter(|q| q.link == "up")
        .map(|q| q.packets)
        .max()
        .unwrap();
    assert_eq!(q_max, 84);
}

#[test]
fn reno_goodput_falls_with_loss_as_the_square_root_law_says() {
    // Mathis, Semke, Mahdavi and Ott (CCR 1997): goodput = MSS / RTT *
    // C / sqrt(p), with C = sqrt(3 / (2b)) for a window that halves on a
    // loss and grows by 1/cwnd on each ACK, an ACK covering b segments:
    // one ACK per segment, C = sqrt(3/2) = 1.22; delayed ACKs of every
    // second segment, sqrt(3/4) = 0.87. These runs use delayed ACKs, but
    // Linux Reno grows by the segments an ACK covers (tcp_cong_avoid_ai()
    // adds `acked`, RFC 3465's counting), so cwnd still grows one segment
    // per RTT: b = 1 in effect, C = sqrt(3/2). (Runs without delayed ACKs
    // give a C at most 6% higher.)
    //
    // The model is an approximation: over seeds 1-8 and loss rates 0.1%,
    // 0.2%, 0.5% and 1%, the mean C (with the loss rate each run saw) was
    // 1.34, 1.27, 1.23 and 1.17: random rather than periodic losses raise
    // it at low rates, recovery's cost in small windows lowers it at high
    // ones. So the mean of four seeds must lie within 12% of sqrt(3/2),
    // 1.08 to 1.37; a wrong beta (0.7: C = sqrt((1 + b) / (2 (1 - b))) =
    // 1.68) or growth per ACK under delayed ACKs (0.87) falls outside.
    let c_and_goodput = |ppm: u32| {
        let runs: Vec<(f64, f64)> = std::thread::scope(|s| {
            let runs: Vec<_> = (1..=4)
                .map(|seed| {
                    s.spawn(move || {
                        let mut c = dumbbell(100_000_000, 2000, ppm, 60, vec![flow("reno", 40)]);
                        c.seed = seed;
                        let r = run(c);
                        let p = r.links[0].loss_drops as f64 / r.links[0].tx_packets as f64;
                        let f = &r.flows[0];
                        let mathis = 1448.0 * 8.0 / (f.rtt_p50_ms / 1e3) / p.sqrt();
                        (f.goodput_bps / mathis, f.goodput_bps)
                    })
                })
                .collect();
            runs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mean = |i: usize| runs.iter().map(|r| [r.0, r.1][i]).sum::<f64>() / 4.0;
        (mean(0), mean(1))
    };
    let c_law = 1.5f64.sqrt();
    let (c_hi, hi) = c_and_goodput(1_000);
    let (c_lo, lo) = c_and_goodput(10_000);
    for (p, c) in [("0.1%", c_hi), ("1%", c_lo)] {
        assert!(
            (c / c_law - 1.0).abs() < 0.12,
            "at {p} loss C = {c:.3}, Mathis's is {c_law:.3}"
        );
    }
    // Ten times the loss, a third of the goodput: sqrt(10) = 3.16, a
    // little more as C drifts down with the loss rate.
    let ratio = hi / lo;
    assert!(
        (10f64.sqrt()..1.2 * 10f64.sqrt()).contains(&ratio),
        "{hi} / {lo} = {ratio}"
    );
}

#[test]
fn two_identical_flows_share_within_ten_percent() {
    // A single run's split wanders by +-15% with the few losses of a
    // 10 Mbit/s drop-tail path; over four seeds neither flow is favoured.
    let (mut a, mut b) = (0.0, 0.0);
    for seed in 1..=4 {
        let mut c = dumbbell(
            10_000_000,
            84,
            0,
            120,
            vec![flow("reno", 40), flow("reno", 40)],
        );
        c.seed = seed;
        let r = run(c);
        assert!(r.jain() > 0.98, "seed {seed}: Jain {}", r.jain());
        a += r.flows[0].goodput_bps;
        b += r.flows[1].goodput_bps;
    }
    assert!((a / b - 1.0).abs() < 0.1, "{a} vs {b}");
    assert!((a + b) / 4.0 > 9e6);
}

#[test]
fn same_seed_same_bytes_other_seed_other_losses() {
    let cfg = |seed| {
        let mut c = dumbbell(
            20_000_000,
            100,
            5_000,
            10,
            vec![flow("cubic", 30), flow("reno", 50)],
        );
        c.seed = seed;
        c
    };
    let a = run(cfg(1)).to_json();
    assert_eq!(a, run(cfg(1)).to_json());
    let (x, y) = (run(cfg(1)), run(cfg(2)));
    assert_ne!(x.links[0].loss_drops, 0);
    assert_ne!(x.to_json(), y.to_json());
}

#[test]
fn round_trip_simulated_flows_traces_replay_exactly() {
    // A round-trip, not evidence of Linux: the simulator records the trace
    // through the Rust algorithm and the replayer runs the same Rust
    // algorithm over it, so agreement shows that recording and replay lose
    // nothing. crates/kernel's conformance tests replay the kernel's own
    // traces.
    const SPECS: [&str; 3] = [
        "cubic",
        "reno:hystart=hspp",
        "cubic:friendly=eq4:hystart=hspp",
    ];
    let dir = std::env::temp_dir().join(format!("kleinrock-sim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut flows = Vec::new();
    for (i, spec) in SPECS.iter().enumerate() {
        let mut f = flow(spec, 20 + 20 * i as u64);
        f.trace = Some(dir.join(format!("f{i}.csv.gz")));
        flows.push(f);
    }
    let mut c = dumbbell(20_000_000, 60, 2_000, 10, flows);
    c.hz = 100;
    let r = run(c);
    assert!(r.flows.iter().all(|f| f.retransmits > 0));
    for (i, spec) in SPECS.iter().enumerate() {
        let report = kleinrock_trace::replay(
            &dir.join(format!("f{i}.csv.gz")),
            spec.parse().unwrap(),
            100,
            &mut |_| {},
        )
        .unwrap();
        assert!(report.rows > 1000, "{spec}: {} rows", report.rows);
        assert!(report.agrees(), "{spec}:\n{report}");
        for hook in [
            "init",
            "cong_avoid",
            "pkts_acked",
            "ssthresh",
            "set_state",
            "in_ack_event",
            "cwnd_event",
        ] {
            assert!(
                report.per_hook.contains_key(hook),
                "{spec} has no {hook} rows"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A CUBIC and a Reno flow on 10 Mbit/s, 40 ms, through `queue`.
fn aqm_config(queue: QueueConfig, ecn: bool) -> Config {
    let mut c = dumbbell(
        10_000_000,
        1000,
        0,
        30,
        vec![flow("cubic", 40), flow("reno", 40)],
    );
    c.links[0].queue = queue;
    c.ecn = ecn;
    c
}

fn aqm_run(queue: QueueConfig, ecn: bool) -> Results {
    run(aqm_config(queue, ecn))
}

fn median_queue_delay_ms(r: &Results) -> f64 {
    let mut d: Vec<u64> = r
        .queue_series
        .iter()
        .filter(|q| q.link == "up" && q.t > 5.0)
        .map(|q| q.delay_us)
        .collect();
    d.sort();
    d[d.len() / 2] as f64 / 1000.0
}

/// Every datagram offered to a link either leaves it or is dropped by its
/// queue, once: counted once, whichever discipline drops it. (RED's drops
/// were counted twice.)
#[test]
fn each_queue_drop_is_counted_once_in_every_discipline() {
    use kleinrock_sim::world::UdpConfig;
    use kleinrock_sim::{CodelParams, RedParams};
    let codel = CodelParams {
        limit: 50,
        ..CodelParams::default()
    };
    for queue in [
        QueueConfig::Fifo {
            limit: Limit::Packets(50),
            mark_at: None,
        },
        QueueConfig::Codel(codel),
        QueueConfig::FqCodel(codel),
        QueueConfig::Red(RedParams {
            limit: 50,
            min: 5.0,
            max: 15.0,
            max_p: 0.1,
            wq: 0.002,
            ecn: false,
        }),
    ] {
        let mut c = dumbbell(10_000_000, 50, 0, 3, vec![]);
        c.links[0].queue = queue.clone();
        // Twice the link's rate for a second; the queue drains by the end.
        c.udp.push(UdpConfig {
            rate_bps: 20_000_000,
            bytes: 1500,
            rtt: 20 * MS,
            upload: true,
            start: 0,
            stop: Some(SEC),
        });
        let r = run(c);
        let (up, sent) = (r.links[0], r.udp[0].sent);
        assert!(up.queue_drops > 0, "{queue:?}: {up:?}");
        assert_eq!(up.tx_packets + up.queue_drops, sent, "{queue:?}: {up:?}");
    }
}

#[test]
fn codel_holds_a_standing_queue_near_its_target() {
    use kleinrock_sim::CodelParams;
    let fifo = aqm_run(
        QueueConfig::Fifo {
            limit: Limit::Packets(1000),
            mark_at: None,
        },
        false,
    );
    let f = median_queue_delay_ms(&fifo);
    assert!(f > 300.0, "FIFO median queue delay {f} ms");

    // The queue's delay (its bytes over the link rate) sampled every
    // millisecond; its resolution is one 1500-byte packet, 1.2 ms.
    const PACKET_MS: f64 = 1.2;
    let prm = CodelParams::default();
    let (target_ms, interval_ms) = (prm.target as f64 / 1e6, prm.interval as f64 / 1e6);
    for (name, queue) in [
        ("CoDel", QueueConfig::Codel(prm)),
        ("FQ-CoDel", QueueConfig::FqCodel(prm)),
    ] {
        let mut c = aqm_config(queue, false);
        c.sample_interval = MS;
        let r = run(c);
        let up: Vec<_> = r.queue_series.iter().filter(|q| q.link == "up").collect();
        // The dropping state begins only after the sojourn has stayed above
        // target for a whole interval (codel_should_drop(): the first
        // packet to leave with a sojourn above target sets
        // first_above_time an interval ahead). That packet arrived when the
        // queue's delay passed target, and left target later: the first
        // drop comes interval + target after the queue's delay last rose
        // past target, to within a packet and the 1 ms sampling. A target
        // or interval other than 5 and 100 ms moves it by more than that
        // (2 ms: 101 ms, 7 ms: 144 ms, interval 50 ms: 56 ms).
        let first_drop = up.iter().find(|q| q.drops > 0).unwrap().t;
        let rose = up
            .iter()
            .rev()
            .find(|q| q.t < first_drop && (q.delay_us as f64) <= target_ms * 1e3)
            .unwrap()
            .t;
        let waited_ms = (first_drop - rose) * 1e3;
        assert!(
            (waited_ms - (interval_ms + target_ms)).abs() <= 2.0 * PACKET_MS,
            "{name}: first drop {waited_ms:.1} ms after the queue passed {target_ms} ms"
        );
        // Then the standing queue: CoDel holds the FIFO's median at its
        // target, within the packet's resolution (measured 6.0 ms; a
        // target of 3 or 7 ms gives 3.6 or 7.2, an interval of 50 or 200
        // ms 3.6 or 8.4). FQ-CoDel controls each flow's queue on its own,
        // and their sum sits lower (3.6 ms measured): at most target plus
        // a packet, at least two packets.
        let median = median_queue_delay_ms(&r);
        let band = if name == "CoDel" {
            target_ms - PACKET_MS..=target_ms + PACKET_MS
        } else {
            2.0 * PACKET_MS..=target_ms + PACKET_MS
        };
        assert!(
            band.contains(&median),
            "{name}: median queue delay {median} ms, target {target_ms} ms"
        );
        // At little cost in throughput: 93% of the 9.65 Mbit/s of payload.
        let total: f64 = r.flows.iter().map(|f| f.goodput_bps).sum();
        assert!(total > 9.0e6, "{name}: utilisation {total}");
    }
}

#[test]
fn with_ecn_aqms_mark_instead_of_dropping() {
    use kleinrock_sim::CodelParams;
    use kleinrock_sim::RedParams;
    let marking = [
        QueueConfig::Codel(CodelParams {
            ecn: true,
            ..Default::default()
        }),
        QueueConfig::FqCodel(CodelParams {
            ecn: true,
            ..Default::default()
        }),
        QueueConfig::Red(RedParams {
            limit: 1000,
            min: 10.0,
            max: 30.0,
            max_p: 0.1,
            wq: 0.002,
            ecn: true,
        }),
        QueueConfig::Fifo {
            limit: Limit::Packets(1000),
            mark_at: Some(20),
        },
    ];
    for q in marking {
        let r = aqm_run(q.clone(), true);
        let up = r.links[0];
        assert!(up.marks > 10, "{q:?}: {} marks", up.marks);
        assert_eq!(up.queue_drops, 0, "{q:?} dropped");
        // Nothing lost, so nothing recovered: every reduction was ECN's.
        for f in &r.flows {
            assert_eq!((f.recoveries, f.retransmits), (0, 0), "{q:?}: {f:?}");
        }
        let total: f64 = r.flows.iter().map(|f| f.goodput_bps).sum();
        assert!(total > 8.5e6, "{q:?}: utilisation {total}");
    }
}

#[test]
fn ping_measures_the_queue_a_bulk_flow_builds() {
    use kleinrock_sim::world::{PingConfig, UdpConfig};
    let mut bulk = flow("cubic", 40);
    bulk.start = SEC;
    let mut c = dumbbell(10_000_000, 84, 0, 20, vec![bulk]);
    c.pings.push(PingConfig {
        rtt: 40 * MS,
        interval: 200 * MS,
        start: 0,
        stop: None,
    });
    c.udp.push(UdpConfig {
        rate_bps: 1_000_000,
        bytes: 1000,
        rtt: 40 * MS,
        upload: true,
        start: 0,
        stop: None,
    });
    let r = run(c);
    let p = &r.pings[0];
    // One every 200 ms from 0 to 20 s inclusive; the last is still out
    // when the run ends.
    assert_eq!((p.sent, p.received), (101, 100), "{p:?}");
    // Idle path 40 ms; under CUBIC the 84-packet FIFO adds up to 100.8
    // ms, and CUBIC's cut to 0.7 of its window (84 packets of queue plus
    // a 33-packet BDP) leaves about 49 packets, 59 ms, queued.
    let full_ms = 40.0 + 84.0 * 1.2 + 0.2;
    assert!(
        p.rtt_p50_ms > 40.0 + 49.0 * 1.2 && p.rtt_p95_ms < full_ms,
        "{p:?}"
    );
    // Before the flow starts the queue is empty: the path and the 84-byte
    // ping's serialization on both links (67.2 us each).
    let first = r.ping_series.first().unwrap();
    assert!(
        (first.rtt_ms - 40.1344).abs() < 0.001,
        "before the flow starts the queue is empty: {}",
        first.rtt_ms
    );
    let u = &r.udp[0];
    assert!(
        (u.goodput_bps / 1e6 - 1.0).abs() < 0.05 && u.loss < 0.05,
        "{u:?}"
    );
}

#[test]
fn a_trace_link_delivers_at_its_opportunities() {
    use kleinrock_sim::Trace;
    // 4 packets per ms for 500 ms, then 1 per ms for 500 ms: 48 then 12
    // Mbit/s, looping each second.
    let mut text = String::new();
    for ms in 1..=1000 {
        let n = if ms <= 500 { 4 } else { 1 };
        for _ in 0..n {
            text.push_str(&format!("{ms}\n"));
        }
    }
    let trace = Trace::parse(&text, "t").unwrap();
    let mut c = dumbbell(trace.mean_rate_bps(), 200, 0, 20, vec![flow("cubic", 20)]);
    c.links[0].trace = Some(trace);
    c.sample_interval = 250 * MS;
    let r = run(c);
    // The mean is 30 Mbit/s of 1500-byte packets, 28.96 of payload; the
    // 200-packet queue never empties and CUBIC gets 98% of it.
    let g = r.flows[0].goodput_bps / 1e6;
    assert!((0.98 * 28.96..28.96).contains(&g), "{g}");
    // Goodput follows the trace's fast and slow halves.
    let half = |fast: bool| -> f64 {
        r.flow_series
            .iter()
            .filter(|s| s.t > 5.0)
            .filter(|s| {
                let f = s.t.fract();
                (f > 0.001 && f < 0.501) == fast
            })
            .map(|s| s.goodput_bps)
            .sum()
    };
    // 4 to 1, as the trace, less the ACK clock's lag (an RTT and the
    // queue) that carries some of each half into the next sample.
    let ratio = half(true) / half(false);
    assert!(
        (3.5..=4.0).contains(&ratio),
        "fast {} slow {}",
        half(true),
        half(false)
    );
}

#[test]
fn request_response_flows_complete_responses_and_restart_from_idle() {
    use kleinrock_sim::world::RequestResponse;
    let mut f = flow("cubic", 40);
    // 100 KB responses (70 segments), 1 s apart: idle longer than the RTO,
    // so each response restarts slow start; about 4 RTTs each.
    f.request_response = Some(RequestResponse {
        request_bytes: 152,
        response_segments: 70,
        think: SEC,
    });
    let r = run(dumbbell(100_000_000, 1000, 0, 20, vec![f]));
    let s = &r.flows[0];
    // Every response restarts from the same idle state, so all take the
    // same time: the request's half RTT, then 10, 20 and 40 segments in
    // three rounds of slow start, about 125 ms. With the 1 s think time a
    // cycle is about 1.125 s: 18 responses end within the 20 s.
    assert_eq!(s.response_p50_ms, s.response_p95_ms, "{s:?}");
    assert!(
        s.response_p50_ms > 120.0 && s.response_p50_ms < 130.0,
        "{s:?}"
    );
    assert_eq!(s.responses, 18, "{s:?}");
    // Everything delivered belongs to completed responses, plus at most the
    // one in progress when the run ended.
    let per = 70 * 1448;
    assert!(
        s.bytes >= s.responses * per && s.bytes < (s.responses + 1) * per,
        "{s:?}"
    );
}

#[test]
fn pacing_spreads_slow_start_bursts() {
    let max_queue = |pace_all: bool| {
        let mut c = dumbbell(100_000_000, 5000, 0, 3, vec![flow("cubic:hystart=off", 40)]);
        c.pace_all = pace_all;
        c.sample_interval = MS;
        let r = run(c);
        let q = r
            .queue_series
            .iter()
            .filter(|q| q.link == "up" && q.t < 0.2)
            .map(|q| q.packets)
            .max()
            .unwrap();
        (q, r.flows[0].goodput_bps)
    };
    let (burst, g1) = max_queue(false);
    let (paced, g2) = max_queue(true);
    // Unpaced, each slow-start round leaves as a line-rate burst twice the
    // last, and the queue grows by tens of packets (77); paced at 200% of
    // cwnd/srtt, below the link's rate in the first 0.2 s, packets find
    // at most one ahead of them.
    assert!(
        paced <= 1 && burst > 60,
        "paced {paced} vs unpaced {burst} packets"
    );
    assert!(
        (g2 / g1 - 1.0).abs() < 0.01,
        "pacing costs no throughput: {g2} vs {g1}"
    );
}

#[test]
fn round_trip_a_simulated_bbr_flows_trace_replays_exactly_random_phase_included() {
    // A round-trip, not evidence of Linux: the simulator records the trace
    // through the Rust algorithm and the replayer runs the same Rust
    // algorithm over it, so agreement shows that recording and replay lose
    // nothing (BBR's random draws included). crates/kernel's conformance
    // tests replay the kernel's own traces.
    let dir = std::env::temp_dir().join(format!("kleinrock-sim-bbr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut f = flow("bbr", 40);
    f.trace = Some(dir.join("bbr.csv.gz"));
    let mut c = dumbbell(20_000_000, 100, 2_000, 15, vec![f]);
    c.seed = 11;
    run(c);
    let report = kleinrock_trace::replay(
        &dir.join("bbr.csv.gz"),
        "bbr".parse().unwrap(),
        250,
        &mut |_| {},
    )
    .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(report.rows > 1000);
    assert!(report.agrees(), "{report}");
    assert!(report.per_hook.contains_key("cong_control"));
}

#[test]
fn bbr_keeps_a_deep_buffer_short_and_probes_rtt_every_ten_seconds() {
    // 20 Mbit/s, 40 ms: BDP 67 packets; a buffer of 10 BDPs.
    let run_one = |cc: &str| {
        let mut c = dumbbell(20_000_000, 670, 0, 60, vec![flow(cc, 40)]);
        c.sample_interval = 50 * MS;
        run(c)
    };
    let (bbr, cubic) = (run_one("bbr"), run_one("cubic"));
    let queue_ms = |r: &Results| median_queue_delay_ms(r);
    // CUBIC fills the buffer (~400 ms of queue); BBR keeps about a BDP or
    // less (40 ms).
    assert!(
        queue_ms(&cubic) > 250.0,
        "CUBIC queue {} ms",
        queue_ms(&cubic)
    );
    assert!(queue_ms(&bbr) < 45.0, "BBR queue {} ms", queue_ms(&bbr));
    assert!(
        bbr.flows[0].goodput_bps > 18e6,
        "{}",
        bbr.flows[0].goodput_bps
    );
    // PROBE_RTT episodes: cwnd at 4, 10 s after the min RTT was last
    // refreshed (a lower sample, from the path's jitter, can push the next
    // one back a little).
    let mut episodes = Vec::new();
    let mut inside = false;
    for s in bbr.flow_series.iter().filter(|s| s.t > 1.0) {
        if s.cwnd <= 4 && !inside {
            episodes.push(s.t);
        }
        inside = s.cwnd <= 4;
    }
    assert!((4..=6).contains(&episodes.len()), "{episodes:?}");
    // Never sooner than the 10 s window; later when a jittered sample
    // equal to the minimum renewed it; about every 10 s on average.
    let gaps: Vec<f64> = episodes.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|&g| g >= 10.0), "{episodes:?}");
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!(mean < 14.0, "{episodes:?}");
}

#[test]
fn vegas_keeps_a_few_packets_queued_and_the_link_full() {
    // 10 Mbit/s, 40 ms, a 1000-packet FIFO that loss-based flows fill.
    let mut c = dumbbell(10_000_000, 1000, 0, 30, vec![flow("vegas", 40)]);
    c.sample_interval = 50 * MS;
    let r = run(c);
    assert!(r.flows[0].goodput_bps > 9e6, "{}", r.flows[0].goodput_bps);
    assert_eq!(r.links[0].queue_drops, 0);
    // alpha..beta = 2..4 packets queued (plus delayed-ACK bursts).
    let mut q: Vec<u32> = r
        .queue_series
        .iter()
        .filter(|q| q.link == "up" && q.t > 5.0)
        .map(|q| q.packets)
        .collect();
    q.sort();
    assert!(
        q[q.len() / 2] <= 6,
        "median queue {} packets",
        q[q.len() / 2]
    );
}

#[test]
fn two_htcp_flows_converge_to_a_fair_share() {
    // Shorten and Leith: H-TCP keeps Reno's fairness between flows of equal
    // RTT, the second flow starting 5 s after the first.
    let (a, b) = late_start_shares("htcp", 20_000_000, 67, 5);
    let jain = jain2(a, b);
    assert!(jain >= 0.95, "Jain {jain}: {a} vs {b}");
}

/// Two flows on 1 Gbit/s with a 500 us base RTT (a BDP of 42 packets)
/// through a deep FIFO that marks CE at or above `k` packets; the second
/// flow starts half a second after the first.
fn step_marking_run(cc: &str, k: u32) -> Results {
    let flows = (0..2)
        .map(|i| FlowConfig {
            rtt: 500 * kleinrock_sim::time::US,
            start: i * SEC / 2,
            ..flow(cc, 0)
        })
        .collect();
    let mut c = dumbbell(1_000_000_000, 1000, 0, 3, flows);
    c.links[0].queue = QueueConfig::Fifo {
        limit: Limit::Packets(1000),
        mark_at: Some(k),
    };
    c.ecn = true;
    c.sample_interval = MS;
    run(c)
}

/// The 5th, 50th and 95th percentiles of the bottleneck queue after `from_s`.
fn queue_quantiles(r: &Results, from_s: f64) -> [u32; 3] {
    let mut q: Vec<u32> = r
        .queue_series
        .iter()
        .filter(|q| q.link == "up" && q.t > from_s)
        .map(|q| q.packets)
        .collect();
    q.sort();
    [5, 50, 95].map(|p| q[(q.len() - 1) * p / 100])
}

/// Goodput of each flow, and Jain's index, over samples after `from_s`.
fn shares_after(r: &Results, from_s: f64) -> (Vec<f64>, f64) {
    let mut g = vec![0.0; r.flows.len()];
    for s in r.flow_series.iter().filter(|s| s.t > from_s) {
        g[s.flow as usize] += s.goodput_bps;
    }
    let sum: f64 = g.iter().sum();
    let sq: f64 = g.iter().map(|x| x * x).sum();
    let jain = sum * sum / (g.len() as f64 * sq);
    let n = r
        .flow_series
        .iter()
        .filter(|s| s.t > from_s && s.flow == 0)
        .count() as f64;
    (g.iter().map(|x| x / n).collect(), jain)
}

#[test]
fn dctcp_holds_the_queue_near_the_marking_threshold_at_full_rate() {
    // Alizadeh et al. (SIGCOMM 2010), figure 1 and section 3: with step
    // marking at K = 20 on 1 Gbit/s, DCTCP keeps the queue around K with
    // the link full, where ECN-Reno halves on every marked window and
    // drains the queue, losing throughput.
    const K: u32 = 20;
    // Payload share of a full-sized packet: the goodput of a full link.
    let full = 1e9 * 1448.0 / 1500.0;
    let dctcp = step_marking_run("dctcp", K);
    let [p5, p50, p95] = queue_quantiles(&dctcp, 1.0);
    let (shares, jain) = shares_after(&dctcp, 1.5);
    let total: f64 = shares.iter().sum();
    assert!(total > 0.97 * full, "DCTCP goodput {total}");
    assert!(
        p5 >= K / 2 && (K - 4..=K + 4).contains(&p50) && p95 <= K + 6,
        "DCTCP queue p5/p50/p95 {p5}/{p50}/{p95}"
    );
    assert_eq!(dctcp.links[0].queue_drops, 0);
    assert!(dctcp.flows.iter().all(|f| f.retransmits == 0));
    assert!(jain >= 0.95, "DCTCP shares {shares:?}, Jain {jain}");

    let reno = step_marking_run("reno", K);
    let [r5, _, _] = queue_quantiles(&reno, 1.0);
    let (shares, _) = shares_after(&reno, 1.5);
    let reno_total: f64 = shares.iter().sum();
    assert!(
        reno_total < 0.93 * total,
        "ECN-Reno goodput {reno_total} vs DCTCP {total}"
    );
    assert_eq!(r5, 0, "ECN-Reno's queue should drain");
}

#[test]
fn round_trip_a_simulated_dctcp_flows_trace_replays_exactly_and_only_with_its_gain() {
    // A round-trip, not evidence of Linux: the simulator records the trace
    // through the Rust algorithm and the replayer runs the same Rust
    // algorithm over it, so agreement shows that recording and replay lose
    // nothing and that the gain leaves a mark. crates/kernel's conformance
    // tests replay the kernel's own traces.
    let path = std::env::temp_dir().join(format!("kleinrock-dctcp-{}.csv.gz", std::process::id()));
    let mut f = FlowConfig {
        rtt: 500 * kleinrock_sim::time::US,
        ..flow("dctcp:shift_g=3", 0)
    };
    f.trace = Some(path.clone());
    let mut c = dumbbell(1_000_000_000, 1000, 0, 1, vec![f, flow("dctcp", 1)]);
    c.links[0].queue = QueueConfig::Fifo {
        limit: Limit::Packets(1000),
        mark_at: Some(20),
    };
    let r = run(c);
    assert!(r.links[0].marks > 1000, "{} marks", r.links[0].marks);
    let report =
        kleinrock_trace::replay(&path, "dctcp:shift_g=3".parse().unwrap(), 250, &mut |_| {})
            .unwrap();
    // The gain matters: replaying with another one diverges.
    let other = kleinrock_trace::replay(&path, "dctcp".parse().unwrap(), 250, &mut |_| {}).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(report.agrees(), "{report}");
    assert!(!other.agrees(), "alpha never moved");
    for hook in ["in_ack_event", "ssthresh", "set_state", "cong_avoid"] {
        assert!(report.per_hook.contains_key(hook), "no {hook} rows");
    }
}

/// The slow-start exit of one CDG flow: ssthresh when it first becomes
/// finite.
fn cdg_exit_window(spec: &str, paced: bool) -> u32 {
    let mut c = dumbbell(100_000_000, 1000, 0, 3, vec![flow(spec, 40)]);
    c.pace_all = paced;
    c.sample_interval = 10 * MS;
    let r = run(c);
    r.flow_series
        .iter()
        .map(|s| s.ssthresh)
        .find(|&s| s < u32::MAX >> 1)
        .unwrap_or(u32::MAX)
}

#[test]
fn paced_cdg_needs_hystart_delay_detection_only() {
    // Seed 002 ("Hybrid Slow start with pacing"): paced segments return
    // evenly spaced ACKs, which the ACK-train test reads as a train as
    // long as the RTT: it ends slow start far too early. The delay test
    // (hystart_detect=2) is unaffected.
    let train_paced = cdg_exit_window("cdg", true);
    let delay_paced = cdg_exit_window("cdg:hystart_detect=2", true);
    let unpaced = cdg_exit_window("cdg", false);
    // 100 Mbit/s x 40 ms is a BDP of 345 packets.
    assert!(
        train_paced < 345 / 3,
        "paced, both tests: exit at {train_paced}"
    );
    assert!(
        delay_paced > 345 / 2,
        "paced, delay test only: exit at {delay_paced}"
    );
    assert!(unpaced > 345 / 2, "unpaced, both tests: exit at {unpaced}");
}

#[test]
fn round_trip_a_simulated_cdg_flows_trace_replays_exactly_backoff_draws_included() {
    // A round-trip, not evidence of Linux: the simulator records the trace
    // through the Rust algorithm and the replayer runs the same Rust
    // algorithm over it, so agreement shows that recording and replay lose
    // nothing (CDG's backoff draws included) and that backoff_beta leaves a
    // mark. crates/kernel's conformance tests replay the kernel's own
    // traces.
    let path = std::env::temp_dir().join(format!("kleinrock-cdg-{}.csv.gz", std::process::id()));
    let mut f = flow("cdg", 40);
    f.trace = Some(path.clone());
    let mut c = dumbbell(10_000_000, 84, 0, 30, vec![f]);
    c.sample_interval = 10 * MS;
    let r = run(c);
    let backoffs = r
        .flow_series
        .windows(2)
        .filter(|w| w[0].ca_state == "Open" && w[1].ca_state == "CWR")
        .count();
    assert!(backoffs > 5, "{backoffs} backoffs");
    let replay = |spec: &str| {
        kleinrock_trace::replay(&path, spec.parse().unwrap(), 250, &mut |_| {}).unwrap()
    };
    let report = replay("cdg");
    let other = replay("cdg:backoff_beta=512");
    std::fs::remove_file(&path).ok();
    assert!(report.agrees(), "{report}");
    assert!(!other.agrees(), "backoff_beta left no mark");
}

/// Rows of a CDG trace where the BPF port's own CWR begins (`in_cwr` 0 to
/// 1) and where it ends (1 to 0).
fn own_cwr_edges(path: &std::path::Path) -> (u32, u32) {
    let mut t = kleinrock_trace::TraceReader::open(path).unwrap();
    let (pre, post) = (
        t.column("pre_ca_in_cwr").expect("pre_ca_in_cwr"),
        t.column("post_ca_in_cwr").expect("post_ca_in_cwr"),
    );
    let (mut began, mut ended) = (0, 0);
    while t.next_row().unwrap().is_some() {
        match (t.cells()[pre], t.cells()[post]) {
            (Some(0), Some(1)) => began += 1,
            (Some(1), Some(0)) => ended += 1,
            _ => {}
        }
    }
    (began, ended)
}

#[test]
fn cdg_with_the_ports_own_cwr_backs_off_without_the_cores_cwr_and_round_trips() {
    // A round-trip, not evidence of Linux: the simulator records the trace
    // through the Rust algorithm and the replayer runs the same Rust
    // algorithm over it, so agreement shows that recording and replay lose
    // nothing and that the two CWRs differ. crates/kernel's conformance
    // tests replay the kernel's own traces.
    //
    // cwr=own is the BPF port's CWR: the window is cut at the backoff and
    // the core stays Open. Seed 002's testbed: 10 Mbit/s, 40 ms, an
    // 84-packet FIFO.
    let path =
        std::env::temp_dir().join(format!("kleinrock-cdg-own-{}.csv.gz", std::process::id()));
    let mut f = flow("cdg:cwr=own", 40);
    f.trace = Some(path.clone());
    let mut c = dumbbell(10_000_000, 84, 0, 30, vec![f]);
    c.sample_interval = 10 * MS;
    let r = run(c);
    assert!(
        r.flow_series.iter().all(|s| s.ca_state == "Open"),
        "the core reduced"
    );
    assert_eq!(r.flows[0].retransmits, 0);
    assert!(
        r.flows[0].goodput_bps > 7e6,
        "{} bit/s",
        r.flows[0].goodput_bps
    );
    let (began, ended) = own_cwr_edges(&path);
    assert!(began > 5, "{began} backoffs");
    assert!(began - ended <= 1, "{began} begun, {ended} ended");
    let replay = |spec: &str| {
        kleinrock_trace::replay(&path, spec.parse().unwrap(), 250, &mut |_| {}).unwrap()
    };
    let report = replay("cdg:cwr=own");
    let kernel = replay("cdg");
    std::fs::remove_file(&path).ok();
    assert!(report.agrees(), "{report}");
    assert!(!kernel.agrees(), "the two CWRs left the same trace");
}

#[test]
fn both_cdg_cwrs_run_through_loss_ecn_and_idle() {
    // Random loss, CE marks and responses after think time take each CWR
    // through the core's own reductions, ECN's CWR flag and restarts after
    // idle, beside a bulk flow.
    use kleinrock_sim::world::RequestResponse;
    for spec in ["cdg", "cdg:cwr=own", "cdg:cwr=own:window=1:use_tolerance=1"] {
        let mut rr = flow(spec, 20);
        rr.request_response = Some(RequestResponse {
            request_bytes: 152,
            response_segments: 200,
            think: 300 * MS,
        });
        let mut c = dumbbell(20_000_000, 60, 2_000, 20, vec![flow(spec, 40), rr]);
        c.ecn = true;
        c.links[0].queue = QueueConfig::Fifo {
            limit: Limit::Packets(60),
            mark_at: Some(8),
        };
        let r = run(c);
        let (bulk, rr) = (&r.flows[0], &r.flows[1]);
        assert!(bulk.goodput_bps > 2e6, "{spec}: {} bit/s", bulk.goodput_bps);
        assert!(bulk.recoveries > 0, "{spec}: no loss recovery");
        assert!(rr.responses > 20, "{spec}: {} responses", rr.responses);
        assert!(r.links[0].marks > 0, "{spec}: no marks");
    }
}

/// Jain's fairness index of two shares.
fn jain2(a: f64, b: f64) -> f64 {
    (a + b) * (a + b) / (2.0 * (a * a + b * b))
}

/// Goodput of a first flow and of a second one started `gap` later, summed
/// over seeds 1-3, from 30 s to the end of a 60 s run.
fn late_start_shares(cc: &str, rate_bps: u64, queue: u32, gap: u64) -> (f64, f64) {
    let (mut a, mut b) = (0.0, 0.0);
    for seed in 1..=3 {
        let mut late = flow(cc, 40);
        late.start = gap * SEC;
        let mut c = dumbbell(rate_bps, queue, 0, 60, vec![flow(cc, 40), late]);
        c.seed = seed;
        let r = run(c);
        for s in r.flow_series.iter().filter(|s| s.t > 30.0) {
            if s.flow == 0 {
                a += s.goodput_bps;
            } else {
                b += s.goodput_bps;
            }
        }
    }
    (a, b)
}

#[test]
fn two_bbr_flows_converge_to_a_fair_share() {
    // Cardwell et al. (ACM Queue 2016): flows sharing a bottleneck converge
    // as each one's bandwidth probing drains the other's excess; 100 Mbit/s,
    // 40 ms, a one-BDP buffer, the second flow 5 s late.
    let (a, b) = late_start_shares("bbr", 100_000_000, 345, 5);
    let jain = jain2(a, b);
    assert!(jain >= 0.95, "Jain {jain}: {a} vs {b}");
}

#[test]
fn a_late_vegas_flow_takes_the_larger_share() {
    // Vegas is not fair to flows that start first: a late flow measures its
    // base RTT with the first flow's packets already queued, takes that
    // queue for propagation delay, and keeps a larger window (Low, Peterson
    // and Wang, "Understanding TCP Vegas", J. ACM 2002, "persistent
    // congestion"). Its published behaviour, so no Jain test for Vegas.
    let (a, b) = late_start_shares("vegas", 10_000_000, 1000, 5);
    assert!(b > 1.2 * a, "first {a} vs late {b}");
}

#[test]
fn dctcp_without_a_peer_that_negotiates_ecn_is_reno() {
    let r = |peer_ecn: bool, cc: &str| {
        let mut c = dumbbell(100_000_000, 200, 0, 5, vec![flow(cc, 10)]);
        c.links[0].queue = QueueConfig::Fifo {
            limit: Limit::Packets(200),
            mark_at: Some(20),
        };
        c.peer_ecn = peer_ecn;
        run(c)
    };
    let with = r(true, "dctcp");
    let without = r(false, "dctcp");
    let reno = r(false, "reno");
    assert!(with.links[0].marks > 100 && with.links[0].queue_drops == 0);
    assert_eq!(without.links[0].marks, 0);
    assert!(without.links[0].queue_drops > 0);
    // dctcp-reno: exactly Reno's arithmetic.
    assert_eq!(without.flows[0].bytes, reno.flows[0].bytes);
}

/// A paced sender whose data is all sent and whose lost segments are all
/// retransmitted has nothing to send: it must wait for ACKs, not wake at
/// its (past) pacing time over and over. BBR finishing a 1 MB transfer
/// after queue drops once spun here forever; the run is in a thread so a
/// return of that bug fails the test rather than hanging it.
#[test]
fn a_paced_transfer_with_retransmissions_in_flight_finishes() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut f = flow("bbr", 30);
        f.size_segments = Some(691); // 1 MB
                                     // A 50 Mbit/s path with a one-BDP queue: BBR's startup overflows it.
        let r = run(dumbbell(50_000_000, 125, 0, 3, vec![f]));
        let _ = tx.send(r);
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the simulation ends");
    let f = &r.flows[0];
    assert!(f.retransmits > 0, "the queue dropped some of the burst");
    let done = f.completion_s.expect("the transfer completes");
    assert!(done < 1.0, "{done}");
}

/// The rows of a recorded trace: each hook with its numeric cells, by
/// column name.
fn trace_rows(path: &std::path::Path, columns: &[&str]) -> Vec<(String, Vec<i128>)> {
    let mut r = kleinrock_trace::read::TraceReader::open(path).unwrap();
    let hook = r.column("hook").unwrap();
    let idx: Vec<usize> = columns.iter().map(|c| r.column(c).unwrap()).collect();
    let mut rows = Vec::new();
    while r.next_row().unwrap().is_some() {
        let cells = idx.iter().map(|&i| r.cells()[i].unwrap_or(-1)).collect();
        rows.push((r.text(hook).to_string(), cells));
    }
    rows
}

/// A 12 Mbit/s trace link (one packet per ms) that stops delivering for a
/// second at 0.3 s, and a transfer of 500 segments that its queue of 1000
/// holds whole: every packet is only delayed, so the timeouts the gap
/// causes are spurious.
fn delay_spike(cc: &str, path: &std::path::Path) -> Results {
    use kleinrock_sim::Trace;
    let text: String = (1..=3000)
        .filter(|ms| !(301..=1300).contains(ms))
        .map(|ms| format!("{ms}\n"))
        .collect();
    let trace = Trace::parse(&text, "spike").unwrap();
    let mut f = flow(cc, 40);
    f.trace = Some(path.to_path_buf());
    f.size_segments = Some(500);
    let mut c = dumbbell(12_000_000, 1000, 0, 3, vec![f]);
    c.links[0].trace = Some(trace);
    run(c)
}

#[test]
fn f_rto_undoes_the_timeouts_of_a_delay_spike() {
    let path = std::env::temp_dir().join(format!("kleinrock-spike-{}.csv", std::process::id()));
    let r = delay_spike("reno", &path);
    let f = &r.flows[0];
    assert_eq!((r.links[0].loss_drops, r.links[0].queue_drops), (0, 0));
    // All 500 segments are out before the gap; it outlasts the loss probe
    // (a new copy of the last segment) and one RTO (snd_una's segment;
    // the backed-off second would come after the gap ends); nothing more
    // is retransmitted before the undo.
    assert_eq!((f.tlps, f.rtos, f.retransmits), (1, 1, 2));
    let rows = trace_rows(
        &path,
        &[
            "arg_u",
            "pre_snd_cwnd",
            "pre_prior_cwnd",
            "pre_snd_ssthresh",
            "ret",
            "pre_icsk_ca_state",
        ],
    );
    // The RTO's reduction: ssthresh, CA_EVENT_LOSS, Loss.
    let loss = rows
        .iter()
        .position(|(h, c)| h == "set_state" && c[0] == 4)
        .unwrap();
    let (h, c) = &rows[loss - 2];
    assert_eq!(h, "ssthresh");
    let (cwnd_at_rto, ssthresh_before) = (c[1], c[3]);
    // One undo, in Loss, of that reduction: tcp_reno_undo_cwnd() returns
    // max(cwnd, prior_cwnd), prior_cwnd being the cwnd at the RTO.
    let undos: Vec<_> = rows
        .iter()
        .enumerate()
        .filter(|(_, (h, _))| h == "undo_cwnd")
        .collect();
    assert_eq!(undos.len(), 1, "{undos:?}");
    let (at, (_, c)) = undos[0];
    assert_eq!(c[5], 4, "undone in Loss");
    assert_eq!(c[2], cwnd_at_rto);
    assert_eq!(c[4], c[1].max(cwnd_at_rto));
    // Then Open, with ssthresh what it was before the RTO
    // (tcp_current_ssthresh(): still infinite in slow start).
    let (h, c) = &rows[at + 1];
    assert_eq!((h.as_str(), c[0]), ("set_state", 0));
    assert_eq!(c[3], ssthresh_before.max(cwnd_at_rto * 3 / 4));
    // The trace replays exactly, undo_cwnd rows included: a round-trip
    // through the Rust algorithm (recording and replay agree), not
    // evidence of Linux; the undo arithmetic above is checked against
    // tcp_reno_undo_cwnd() and tcp_undo_cwnd_reduction() by hand.
    let report = kleinrock_trace::replay(&path, "reno".parse().unwrap(), 250, &mut |_| {}).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(report.agrees(), "{report}");
    assert!(report.per_hook.contains_key("undo_cwnd"));
}

#[test]
fn real_losses_are_not_undone() {
    // A single drop (fast recovery) and a burst that times out: the
    // retransmissions repair real holes, no D-SACK comes back.
    for (drops, recoveries, rtos) in [(vec![200], 1, 0), ((60..=101).collect(), 0, 2)] {
        let path = std::env::temp_dir().join(format!(
            "kleinrock-real-loss-{}-{rtos}.csv",
            std::process::id()
        ));
        let mut f = flow("reno", 40);
        f.trace = Some(path.clone());
        f.size_segments = Some(if rtos > 0 { 100 } else { 400 });
        let r = run(with_loss(dumbbell(10_000_000, 1000, 0, 10, vec![f]), drops));
        assert_eq!((r.flows[0].recoveries, r.flows[0].rtos), (recoveries, rtos));
        let rows = trace_rows(&path, &["arg_u"]);
        std::fs::remove_file(&path).ok();
        assert!(rows.iter().all(|(h, _)| h != "undo_cwnd"));
    }
}
