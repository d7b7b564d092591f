//! The lab as Kleinrock's second engine, end to end: scenarios run on real
//! Linux TCP, each feature of the format the runner honours checked in
//! the simulator's results it returns. As root only: without root each test
//! skips through kleinrock-testkit (a failure where KLEINROCK_REQUIRE asks
//! for root, as scripts/test.sh does when run as root). Run them with the
//! live-test lock held (`flock /tmp/kleinrock-live-tests.lock cargo test -p kleinrock-live`),
//! so that no other lab shares the machine's cores.
//!
//! Each test separates what must hold on any host (invariants: nothing
//! early, nothing above the link's rate, every count consistent) from
//! accuracy (rates and RTTs near the configured ones), asserted only when
//! the host stole less than [`QUIET_STEAL`] of the CPU during the run, as
//! the lab's own tests do (docs/LAB.md).

use std::sync::Mutex;
use std::time::Duration;

use kleinrock_lab::{StealMeter, QUIET_STEAL};
use kleinrock_live::{Implementation, Plan, Results};

/// One lab at a time in this process: timing needs the cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn root() -> bool {
    kleinrock_testkit::require(kleinrock_testkit::root())
}

/// The scenario `top` (its top-level keys), then `[tcp]` with `hz` at the
/// running kernel's HZ, then `text` (more of `[tcp]`, and the other
/// tables), run in the lab as `how`; the results, and whether the host was quiet enough to judge
/// accuracy.
fn run(top: &str, text: &str, how: Implementation) -> (Results, bool) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let hz = kleinrock_kernel::trace::kernel_hz().unwrap_or(250);
    let text = format!("{top}\n[tcp]\nhz = {hz}\n{text}");
    let cfg = kleinrock_sim::scenario::parse(&text, "live.toml", None).unwrap();
    let plan = Plan::new(&cfg, how).unwrap();
    let steal = StealMeter::start().unwrap();
    let r = kleinrock_live::run(&plan, &|| false, &mut |_| {}).unwrap();
    let stolen = steal.share().unwrap();
    let quiet = stolen < QUIET_STEAL;
    eprintln!(
        "host stole {:.1}% of the CPU: accuracy {}",
        stolen * 100.0,
        if quiet { "checked" } else { "not checked" }
    );
    kleinrock_testkit::timing("a live scenario's rates and RTTs", quiet);
    (r, quiet)
}

const MBIT: f64 = 1e6;

/// A link's rate as goodput: 1448 bytes of payload in each 1500.
fn payload(rate: f64) -> f64 {
    rate * 1448.0 / 1500.0
}

#[test]
fn a_bulk_cubic_flow_fills_the_link() {
    if !root() {
        return;
    }
    let (r, quiet) = run(
        "duration = \"3s\"",
        "[link]\nrate = \"10Mbit\"\nqueue = 50\n[[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\n",
        Implementation::Auto,
    );
    let f = &r.flows[0];
    eprintln!("goodput {:.2} Mbit/s of 9.65", f.goodput_bps / MBIT);
    assert_eq!((f.cc.as_str(), f.direction), ("cubic", "upload"));
    // A sample of the flow every 100 ms, and of both directions' queues.
    assert_eq!(r.flow_series.len(), 30);
    assert_eq!(r.queue_series.len(), 60);
    assert!(
        r.flow_series
            .iter()
            .all(|s| s.cwnd >= 1 && s.min_rtt_us >= 20_000),
        "{:?}",
        r.flow_series
    );
    let valid = ["Open", "Disorder", "CWR", "Recovery", "Loss"];
    assert!(r.flow_series.iter().all(|s| valid.contains(&s.ca_state)));
    // Nothing faster than the link, and the link carried the flow's bytes.
    assert!(
        f.goodput_bps <= payload(10.0 * MBIT) * 1.01,
        "{}",
        f.goodput_bps
    );
    assert!(r.links[0].tx_bytes >= f.bytes, "{:?} {}", r.links, f.bytes);
    assert_eq!(
        f.segments_sent,
        r.flow_series.last().unwrap().segs_out.max(f.segments_sent)
    );
    if quiet {
        assert!(
            f.goodput_bps >= 0.85 * payload(10.0 * MBIT),
            "{}",
            f.goodput_bps
        );
    }
}

#[test]
fn a_transfer_requests_and_responses_and_a_download_with_three_algorithms() {
    if !root() {
        return;
    }
    let (r, quiet) = run(
        "duration = \"4s\"",
        "[link]\nrate = \"20Mbit\"\nqueue = 100\n\
         [[flow]]\ncc = \"reno\"\nrtt = \"40ms\"\nsize = \"1MB\"\n\
         [[flow]]\ncc = \"cubic\"\nrtt = \"40ms\"\ndirection = \"download\"\nstop = \"3s\"\n\
         [[flow]]\ncc = \"bbr\"\nrtt = \"40ms\"\nrequest = \"100B\"\nresponse = \"20KB\"\nthink = \"100ms\"\n",
        Implementation::Auto,
    );
    // The runner checked each data sender's socket runs its algorithm.
    let cc: Vec<&str> = r.flows.iter().map(|f| f.cc.as_str()).collect();
    assert_eq!(cc, ["reno", "cubic", "bbr"]);
    // The transfer: every byte, in no less than the link's time and two
    // round trips.
    let t = &r.flows[0];
    assert_eq!(t.bytes, 691 * 1448, "1 MB is 691 segments of 1448 bytes");
    let done = t.completion_s.expect("the transfer completed");
    let q = &r.flows[2];
    eprintln!(
        "transfer done in {done:.3} s; {} responses, p50 {:.1} ms",
        q.responses, q.response_p50_ms
    );
    let least = t.bytes as f64 * 8.0 / payload(20.0 * MBIT) + 0.08;
    assert!(done >= least, "{done} < {least}");
    // The download's data came back over the down link.
    let d = &r.flows[1];
    assert_eq!((d.direction, d.completion_s), ("download", None));
    assert!(
        d.bytes > 0 && r.links[1].tx_bytes >= d.bytes,
        "{:?} {}",
        r.links,
        d.bytes
    );
    // Requests and responses: each response takes at least a round trip;
    // the next request leaves 100 ms after it.
    assert!(q.responses >= 1 && q.responses <= 40, "{}", q.responses);
    assert!(q.response_p50_ms >= 40.0, "{}", q.response_p50_ms);
    assert_eq!(q.completion_s, None);
    if quiet {
        assert!(done < 2.0, "{done}");
        assert!(q.responses >= 10, "{}", q.responses);
    }
}

#[test]
fn a_ping_sees_the_configured_rtt_and_udp_its_rate_on_an_idle_path() {
    if !root() {
        return;
    }
    let (r, quiet) = run(
        "duration = \"3s\"",
        "[link]\nrate = \"20Mbit\"\nqueue = 100\n\
         [[ping]]\nrtt = \"40ms\"\ninterval = \"100ms\"\n\
         [[udp]]\nrate = \"5Mbit\"\nrtt = \"40ms\"\nsize = \"1000B\"\n",
        Implementation::Auto,
    );
    let (p, u) = (&r.pings[0], &r.udp[0]);
    eprintln!(
        "ping p50 {:.2} ms, {} of {}; udp {:.3} Mbit/s, {} sent, {:.2}% lost",
        p.rtt_p50_ms,
        p.received,
        p.sent,
        u.goodput_bps / MBIT,
        u.sent,
        u.loss * 100.0
    );
    // 31 requests (0 s to 3 s); the last reply comes after the end.
    assert_eq!(p.sent, 31);
    assert!(p.received <= 30 && p.received >= 1, "{p:?}");
    assert_eq!(r.ping_series.len() as u64, p.received);
    assert!(
        r.ping_series.iter().all(|s| s.rtt_ms >= 40.0),
        "{:?}",
        r.ping_series
    );
    // A datagram every 1.6 ms from 0 s to 3 s.
    assert!(u.sent <= 1876, "{u:?}");
    assert!(u.goodput_bps <= 5.0 * MBIT * 1.001, "{u:?}");
    if quiet {
        assert_eq!((p.received, u.sent), (30, 1876));
        assert!((p.rtt_p50_ms - 40.0).abs() < 1.5, "{p:?}");
        assert!(u.goodput_bps >= 0.95 * 5.0 * MBIT && u.loss < 0.02, "{u:?}");
    }
}

#[test]
fn each_ping_and_flow_sees_its_own_rtt() {
    if !root() {
        return;
    }
    // Two pings and a short transfer with RTTs of their own over one
    // link, whose 2 ms each way add to each.
    let (r, quiet) = run(
        "duration = \"3s\"",
        "[link]\nrate = \"20Mbit\"\nqueue = 100\ndelay = \"2ms\"\n\
         [[ping]]\nrtt = \"20ms\"\ninterval = \"100ms\"\n\
         [[ping]]\nrtt = \"60ms\"\ninterval = \"100ms\"\n\
         [[flow]]\ncc = \"cubic\"\nrtt = \"100ms\"\nsize = \"100KB\"\n",
        Implementation::Auto,
    );
    for (i, base) in [(0u32, 24.0), (1, 64.0)] {
        let p = &r.pings[i as usize];
        let rtts: Vec<f64> = r
            .ping_series
            .iter()
            .filter(|s| s.ping == i)
            .map(|s| s.rtt_ms)
            .collect();
        eprintln!(
            "ping {i}: base {base} ms, p50 {:.2} ms, {} of {}",
            p.rtt_p50_ms, p.received, p.sent
        );
        assert_eq!(p.rtt_ms, base);
        assert!(!rtts.is_empty() && rtts.len() as u64 == p.received, "{p:?}");
        assert!(rtts.iter().all(|&t| t >= base), "ping {i}: {rtts:?}");
        if quiet {
            assert!((p.rtt_p50_ms - base).abs() < 1.5, "{p:?}");
        }
    }
    let f = &r.flows[0];
    assert_eq!(f.rtt_ms, 104.0);
    let min_rtt = r.flow_series.iter().map(|s| s.min_rtt_us).max().unwrap();
    eprintln!(
        "flow 0: base 104 ms, min RTT {:.2} ms",
        min_rtt as f64 / 1e3
    );
    assert!(min_rtt >= 104_000, "{min_rtt}");
    if quiet {
        assert!(min_rtt < 105_500, "{min_rtt}");
    }
}

#[test]
fn gilbert_elliott_losses_are_counted_at_the_models_rate() {
    if !root() {
        return;
    }
    // Bursts: into the bad state with p = 1% a packet, out with r = 25%,
    // every packet lost there: 1% / 26% = 3.85% lost, 4 at a time. The
    // UDP flow (200-byte datagrams, 6250 a second) stops half a second
    // before the end, so that none is in flight when the counters are
    // read; the queue never fills.
    let (r, _) = run(
        "duration = \"3s\"",
        "[link]\nrate = \"50Mbit\"\nqueue = 1000\nloss = { p = \"1%\", r = \"25%\" }\n\
         [[udp]]\nrate = \"10Mbit\"\nrtt = \"20ms\"\nsize = \"200B\"\nstop = \"2.5s\"\n",
        Implementation::Auto,
    );
    let (u, up) = (&r.udp[0], r.links[0]);
    let received = ((1.0 - u.loss) * u.sent as f64).round() as u64;
    let share = up.loss_drops as f64 / up.tx_packets as f64;
    eprintln!(
        "{} sent, {} left the queue, {} lost by the model ({:.2}%), {received} received",
        u.sent,
        up.tx_packets,
        up.loss_drops,
        share * 100.0
    );
    // What left the queue was lost by the model or arrived: the counted
    // losses are the ones the receiver missed.
    assert_eq!(up.queue_drops, 0, "{up:?}");
    assert!(up.tx_packets <= u.sent, "{up:?} {u:?}");
    assert_eq!(received + up.loss_drops, up.tx_packets, "{up:?} {u:?}");
    // queues.csv's drops are the same losses, sample by sample.
    let drops: u64 = r
        .queue_series
        .iter()
        .filter(|q| q.link == "up")
        .map(|q| q.drops)
        .sum();
    assert_eq!(drops, up.loss_drops);
    // The model's rate, within four standard deviations of a count whose
    // losses come in bursts: the variance of a two-state chain's count is
    // (1 + rho) / (1 - rho) times a Bernoulli count's, rho = 1 - p - r.
    let (pi, rho) = (0.01 / 0.26, 1.0 - 0.01 - 0.25);
    let n = up.tx_packets as f64;
    let sd = (pi * (1.0 - pi) * (1.0 + rho) / (1.0 - rho) / n).sqrt();
    assert!(n > 10_000.0, "{up:?}");
    assert!((share - pi).abs() < 4.0 * sd, "{share} vs {pi} +- {sd}");
}

/// A mahimahi trace in a file of its own: `opportunities[i]` delivery
/// opportunities in millisecond i + 1, looping.
fn trace(name: &str, opportunities: &[u32]) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("live-{}-{name}.up", std::process::id()));
    let mut text = String::new();
    for (i, n) in opportunities.iter().enumerate() {
        for _ in 0..*n {
            text.push_str(&format!("{}\n", i + 1));
        }
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_mahimahi_trace_delivers_its_rate() {
    if !root() {
        return;
    }
    // 12 opportunities of 1500 bytes every 4 ms, unevenly: 36 Mbit/s.
    let path = trace("36M", &[5, 1, 3, 3]);
    let (r, quiet) = run(
        "duration = \"3s\"",
        &format!(
            "[link]\nqueue = 200\n[link.up]\ntrace = {:?}\n[link.down]\nrate = \"36Mbit\"\n\
             [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\n",
            path.display().to_string()
        ),
        Implementation::Auto,
    );
    let _ = std::fs::remove_file(&path);
    // Goodput after the first second, when slow start is over.
    let late: Vec<f64> = r
        .flow_series
        .iter()
        .filter(|s| s.t > 1.0)
        .map(|s| s.goodput_bps)
        .collect();
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    let f = &r.flows[0];
    eprintln!(
        "goodput {:.2} Mbit/s over the run, {:.2} after 1 s, of {:.2}",
        f.goodput_bps / MBIT,
        mean / MBIT,
        payload(36.0 * MBIT) / MBIT
    );
    assert!(f.goodput_bps <= payload(36.0 * MBIT) * 1.01, "{f:?}");
    // Every packet the link sent was an opportunity's.
    let up = r.links[0];
    assert!(up.tx_bytes <= up.tx_packets * 1500, "{up:?}");
    if quiet {
        assert!((mean / payload(36.0 * MBIT) - 1.0).abs() < 0.05, "{mean}");
    }
}

#[test]
fn a_download_crosses_the_down_link_of_an_asymmetric_path() {
    if !root() {
        return;
    }
    // 2 Mbit/s up, 20 down: the download's data comes back at the down
    // link's rate, its ACKs go up.
    let (r, quiet) = run(
        "duration = \"3s\"",
        "[link]\nqueue = 100\n[link.up]\nrate = \"2Mbit\"\n[link.down]\nrate = \"20Mbit\"\n\
         [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\ndirection = \"download\"\n",
        Implementation::Auto,
    );
    let f = &r.flows[0];
    let [up, down] = r.links;
    eprintln!(
        "download {:.2} Mbit/s of {:.2}; up {up:?}, down {down:?}",
        f.goodput_bps / MBIT,
        payload(20.0 * MBIT) / MBIT
    );
    assert_eq!(f.direction, "download");
    assert!(down.tx_bytes >= f.bytes, "{down:?} {}", f.bytes);
    // ACKs up: fewer packets, and small ones.
    assert!(up.tx_packets < down.tx_packets && up.tx_bytes < down.tx_bytes / 10);
    assert!(f.goodput_bps <= payload(20.0 * MBIT) * 1.01, "{f:?}");
    // The queue that built is the down link's.
    let deepest = |link: &str| {
        r.queue_series
            .iter()
            .filter(|q| q.link == link)
            .map(|q| q.packets)
            .max()
            .unwrap()
    };
    assert!(deepest("down") > deepest("up"), "{:?}", r.queue_series);
    if quiet {
        // Far more than the up link could carry.
        assert!(f.goodput_bps >= 0.85 * payload(20.0 * MBIT), "{f:?}");
    }
}

/// The base-36 digits run names carry a pid in.
fn base36(mut v: u32) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(v % 36) as usize]);
        v /= 36;
        if v == 0 {
            break;
        }
    }
    s.reverse();
    String::from_utf8(s).unwrap()
}

fn available() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap()
}

#[test]
fn a_port_chosen_by_spec_is_registered_for_the_run_only() {
    if !root() {
        return;
    }
    if !kleinrock_testkit::require(kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD)) {
        return;
    }
    let prefix = format!("klab{}_", base36(std::process::id()));
    let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let w = watching.clone();
    let p = prefix.clone();
    let watcher = std::thread::spawn(move || {
        let mut seen: Vec<String> = Vec::new();
        while w.load(std::sync::atomic::Ordering::SeqCst) {
            for n in available().split_whitespace().filter(|n| n.starts_with(&p)) {
                if !seen.iter().any(|s| s == n) {
                    seen.push(n.to_string());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        seen
    });
    let (r, _) = run(
        "duration = \"2s\"",
        "[link]\nrate = \"10Mbit\"\nqueue = 50\n[[flow]]\ncc = \"cdg\"\nrtt = \"20ms\"\n",
        Implementation::Auto,
    );
    watching.store(false, std::sync::atomic::Ordering::SeqCst);
    let seen = watcher.join().unwrap();
    assert_eq!(seen.len(), 1, "one port, under this run's name: {seen:?}");
    let name = &seen[0];
    assert!(r.flows[0].bytes > 0);
    // Unloaded and unpinned once the run returned.
    assert!(
        !available().split_whitespace().any(|n| n == name),
        "{name} still registered"
    );
    assert!(!std::path::Path::new("/sys/fs/bpf/kleinrock")
        .join(name)
        .exists());
}

#[test]
fn the_scenarios_tcp_settings_reach_the_kernel() {
    if !root() {
        return;
    }
    let (r, _) = run(
        "duration = \"2s\"\nsample_interval = \"10ms\"",
        "mss = 1000\ninit_cwnd = 4\ndelayed_ack = \"off\"\nrwnd = \"30KB\"\n\
         [link]\nrate = \"50Mbit\"\nqueue = 200\n\
         [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\n",
        Implementation::Auto,
    );
    let f = &r.flows[0];
    // Segments of the scenario's MSS (a window-limited sender sends a
    // smaller one now and then to fill the window).
    assert_eq!(f.retransmits, 0);
    assert!(f.segments_sent * 1000 >= f.bytes, "{f:?}");
    assert!(
        f.bytes as f64 >= 0.97 * (f.segments_sent * 1000) as f64,
        "{f:?}"
    );
    // The initial window, from the first sample: in slow start with an
    // ACK per segment, each ACK adds one segment to cwnd (tcp_slow_start),
    // so cwnd less the segments delivered (sent and no longer in flight)
    // is the initial window whenever the sample is taken, before the first
    // ACK (cwnd 4, 4 sent) or, on a host that stalled the sampling thread
    // past the 20 ms round trip, after some (cwnd 8, 12 sent, 8 in flight).
    let first = &r.flow_series[0];
    assert_eq!(
        first.ssthresh,
        u32::MAX >> 1,
        "still in slow start: {first:?}"
    );
    assert_eq!(
        first.cwnd as i64 - (first.segs_out as i64 - first.inflight as i64),
        4,
        "{first:?}"
    );
    // The receive window: at most 30 KB, 30 segments, in flight, so at
    // most 30 KB each 20 ms round trip (12 Mbit/s of the link's 50).
    let most = r.flow_series.iter().map(|s| s.inflight).max().unwrap();
    assert!(most <= 30, "{most} segments in flight");
    assert!(f.goodput_bps <= 12.0 * MBIT, "{}", f.goodput_bps);
    // An ACK for every segment: as many packets back as forward.
    let (up, down) = (r.links[0].tx_packets, r.links[1].tx_packets);
    assert!(down as f64 >= 0.9 * up as f64, "{up} data, {down} ACKs");
}

#[test]
fn ecn_capable_flows_are_marked_at_the_bottleneck_instead_of_dropped() {
    if !root() {
        return;
    }
    let (r, _) = run(
        "duration = \"2s\"",
        "ecn = true\n[link]\nrate = \"10Mbit\"\nqueue = 100\necn_mark_at = 10\n\
         [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\n",
        Implementation::Auto,
    );
    let up = r.links[0];
    eprintln!(
        "{} packets, {} marked, {} dropped",
        up.tx_packets, up.marks, up.queue_drops
    );
    assert!(up.marks > 0, "{up:?}");
    // CUBIC answers the marks, so the queue stays far from its limit.
    assert_eq!((up.queue_drops, r.flows[0].retransmits), (0, 0), "{up:?}");
    let marks: u64 = r
        .queue_series
        .iter()
        .filter(|q| q.link == "up")
        .map(|q| q.marks)
        .sum();
    assert_eq!(marks, up.marks);
}

#[test]
fn a_panic_during_a_run_leaves_nothing_behind() {
    if !root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let hz = kleinrock_kernel::trace::kernel_hz().unwrap_or(250);
    // The port shows that a loaded algorithm is removed too; a build
    // without BPF (a skip of that part, or a failure where required) runs
    // the kernel's cubic.
    let cc = if kleinrock_testkit::require(kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD)) {
        "cdg"
    } else {
        "cubic"
    };
    let text = format!(
        "duration = \"5s\"\n[tcp]\nhz = {hz}\n[link]\nrate = \"10Mbit\"\nqueue = 50\n[[flow]]\ncc = \"{cc}\"\nrtt = \"20ms\"\n"
    );
    let cfg = kleinrock_sim::scenario::parse(&text, "panic.toml", None).unwrap();
    let plan = Plan::new(&cfg, Implementation::Auto).unwrap();
    let pid = std::process::id();
    let (ns, port) = (format!("krlab-{pid}-"), format!("klab{}_", base36(pid)));
    let ours = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir("/var/run/netns")
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(&ns))
                    .collect()
            })
            .unwrap_or_default();
        v.extend(
            available()
                .split_whitespace()
                .filter(|n| n.starts_with(&port))
                .map(String::from),
        );
        v
    };
    let mut during = Vec::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        kleinrock_live::run(&plan, &|| false, &mut |f| {
            if f > 0.2 {
                during = ours();
                panic!("a panic in the middle of a run");
            }
        })
    }));
    assert!(outcome.is_err(), "the panic reached the caller");
    let want = if cc == "cdg" { 4 } else { 3 };
    assert_eq!(during.len(), want, "the lab (and port) existed: {during:?}");
    assert_eq!(ours(), Vec::<String>::new(), "all removed by unwinding");
}
