//! Loads the ports into the running kernel, runs loopback TCP through them,
//! and unloads them. Needs root, bpffs (mounted here if missing) and a
//! kernel with BTF and struct_ops; otherwise it says why and skips, or
//! fails where that is required (kleinrock_testkit).
//!
//! Two cubic instances with different parameters run side by side.
//!
//! The instances are registered as `krt_reno` and `krt_cubic` rather than
//! the default `kr_reno` and `kr_cubic`, so the test neither trips over nor
//! unloads what an operator has loaded on the same machine.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use kleinrock_lab::{Lab, LabConfig, Link, StealMeter, QUIET_STEAL, RECEIVER_ADDR};

use common::{
    available, congestion_of, connect_to, connect_with, iperf3, iperf3_with, json_says,
    skip_reason, tcp_info, transfer,
};
use kleinrock_kernel::pins::{Paths, Unloaded};
use kleinrock_kernel::plan::plan;
use kleinrock_testkit::require;

const RENO: &str = "krt_reno";
const CUBIC: &str = "krt_cubic";
/// A second cubic, with other parameters, beside the first.
const CUBIC_VARIANT: &str = "krt_cubic_var";
const VARIANT_SPEC: &str = "cubic:hystart=hspp:friendly=newreno:beta=768";
const TRANSFER: usize = 50 << 20;

/// The tbf comparison measures time, so it runs alone: the other tests
/// here move traffic too, and on two cores an iperf3 run beside it delays
/// its ACKs and wakes its sender late. BBR's bandwidth filter keeps the
/// bursts that follow (the kernel's own bbr was seen pacing at 7.9 times
/// the bottleneck with the other tests running). Those take the lock
/// shared, and run together.
static TRAFFIC: RwLock<()> = RwLock::new(());

fn with_others() -> RwLockReadGuard<'static, ()> {
    TRAFFIC.read().unwrap_or_else(|e| e.into_inner())
}

fn alone() -> RwLockWriteGuard<'static, ()> {
    TRAFFIC.write().unwrap_or_else(|e| e.into_inner())
}

fn unload_leftovers() {
    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        let _ = Paths::system().unload(name, Duration::from_secs(2));
    }
}

#[test]
fn reno_and_cubic_carry_loopback_traffic_and_unload() {
    let _traffic = with_others();
    require!(skip_reason());
    unload_leftovers();
    for (spec, name) in [
        ("reno", RENO),
        ("cubic", CUBIC),
        (VARIANT_SPEC, CUBIC_VARIANT),
    ] {
        let p = plan(spec, Some(name)).unwrap();
        let loaded = kleinrock_kernel::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(loaded.link.exists());
    }
    let listed = available();
    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        assert!(listed.iter().any(|n| n == name), "{name} in {listed:?}");
    }
    let pinned: Vec<_> = Paths::system().list().unwrap();
    let cubic = pinned.iter().find(|p| p.name == CUBIC).unwrap();
    assert_eq!(cubic.spec.as_deref(), Some("cubic"));
    assert!(cubic.registered && cubic.linked);
    let variant = pinned.iter().find(|p| p.name == CUBIC_VARIANT).unwrap();
    assert_eq!(
        variant.spec.as_deref(),
        Some("cubic:hystart=hspp:friendly=newreno:beta=768")
    );

    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        let (got, tx) = transfer(name, TRANSFER);
        assert_eq!(got, TRANSFER, "{name}");
        assert_eq!(congestion_of(&tx), name);
    }

    // Unloading while a socket still runs the algorithm: the name leaves the
    // kernel's list at once, the socket keeps its ops (and keeps sending)
    // until it closes.
    let (_, mut busy) = transfer(CUBIC, 1 << 20);
    for name in [RENO, CUBIC, CUBIC_VARIANT] {
        let gone = Paths::system()
            .unload(name, Duration::from_secs(2))
            .unwrap();
        assert_eq!(gone, Unloaded::Gone, "{name}");
    }
    let listed = available();
    assert!(
        !listed
            .iter()
            .any(|n| [RENO, CUBIC, CUBIC_VARIANT].contains(&n.as_str())),
        "{listed:?}"
    );
    assert_eq!(congestion_of(&busy), CUBIC);
    busy.write_all(&[1u8; 1 << 16]).unwrap();
}

/// iperf3 -C through the port, when iperf3 is installed.
#[test]
fn iperf3_runs_over_the_cubic_port() {
    let _traffic = with_others();
    iperf3_through("cubic", "krt_cubic_ip");
}

/// Loads `spec` as `name`, runs a one-second iperf3 over loopback with
/// `-C name`, checks iperf3 reports it, and unloads.
fn iperf3_through(spec: &str, name: &str) {
    require!(skip_reason().or_else(iperf3));
    let _ = Paths::system().unload(name, Duration::from_secs(2));
    kleinrock_kernel::load(&plan(spec, Some(name)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let json = iperf3_with(name);
    let unloaded = Paths::system().unload(name, Duration::from_secs(2));
    assert!(
        json_says(&json, "sender_tcp_congestion", name),
        "iperf3 did not report {name}: {json}"
    );
    assert_eq!(unloaded.unwrap(), Unloaded::Gone);
}

/// The pacing rate bbr_init() sets, high_gain * cwnd / srtt at 99%, as the
/// Rust reference computes it from the socket's TCP_INFO: tcpi_rtt is
/// srtt_us >> 3, which is all of srtt that init reads (and srtt_us is at
/// least 1 once the handshake gave an RTT sample).
fn bbr_init_pacing_rate(info: &libc::tcp_info) -> u64 {
    use kleinrock_cc::bbr::Bbr;
    use kleinrock_cc::{CongestionControl, Sock};

    let mut sk = Sock::new(250);
    sk.snd_cwnd = info.tcpi_snd_cwnd;
    sk.mss_cache = info.tcpi_snd_mss;
    sk.srtt_us = (info.tcpi_rtt << 3).max(1);
    sk.max_pacing_rate = info.tcpi_max_pacing_rate;
    Bbr::new().init(&mut sk);
    sk.pacing_rate
}

const BBR: &str = "krt_bbr";

/// The BBR port asks for pacing from init and paces at the rate the
/// kernel's bbr and the Rust reference compute; it carries 50 MB over
/// loopback and unloads.
///
/// Right after connect, before any data, the pacing rate is what
/// bbr_init() left: 2.89 * cwnd * mss / srtt at 99%. The kernel's `bbr`
/// and `krt_bbr` must both equal the reference on their own TCP_INFO;
/// `cubic`, which paces nothing and whose rate the core sets to
/// 2 * cwnd * mss / srtt, must not. (sk_pacing_status, which user space
/// cannot see, is checked in a trace: bbr_trace_shows_init_asking_for_pacing.)
#[test]
fn bbr_paces_from_init_as_the_kernels_bbr_and_carries_loopback_traffic() {
    let _traffic = with_others();
    require!(skip_reason());
    let _ = Paths::system().unload(BBR, Duration::from_secs(2));
    let loaded =
        kleinrock_kernel::load(&plan("bbr", Some(BBR)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.link.exists());
    assert!(available().iter().any(|n| n == BBR));
    let pinned = Paths::system().list().unwrap();
    let entry = pinned.iter().find(|p| p.name == BBR).unwrap();
    assert_eq!(entry.spec.as_deref(), Some("bbr"));

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    for ca in ["bbr", BBR, "cubic"] {
        let s = connect_with(ca, &listener);
        let _peer = listener.accept().unwrap();
        let info = tcp_info(&s);
        assert_eq!(congestion_of(&s), ca);
        assert!(info.tcpi_pacing_rate > 0, "{ca}");
        let reference = bbr_init_pacing_rate(&info);
        if ca == "cubic" {
            assert_ne!(info.tcpi_pacing_rate, reference, "cubic is not BBR");
        } else {
            assert_eq!(info.tcpi_pacing_rate, reference, "{ca}: {info:?}");
        }
    }

    let (got, tx) = transfer(BBR, TRANSFER);
    assert_eq!(got, TRANSFER);
    assert_eq!(congestion_of(&tx), BBR);
    let info = tcp_info(&tx);
    assert!(
        info.tcpi_pacing_rate > 0 && info.tcpi_pacing_rate != u64::MAX,
        "{info:?}"
    );
    drop(tx);
    assert_eq!(
        Paths::system().unload(BBR, Duration::from_secs(2)).unwrap(),
        Unloaded::Gone
    );
    assert!(!available().iter().any(|n| n == BBR));
}

/// iperf3 -C through the BBR port.
#[test]
fn iperf3_runs_over_the_bbr_port() {
    let _traffic = with_others();
    iperf3_through("bbr", "krt_bbr_ip");
}

/// The rate of the tbf bottleneck the BBR comparison runs through, bit/s.
const TBF_RATE: u64 = 40_000_000;

/// A lab whose forward link is a 40 Mbit/s tbf (no delay, no loss): the
/// lab's namespaces go with it, even when a test fails or is killed.
fn tbf_lab() -> LabConfig {
    LabConfig::symmetric(Link {
        rate_bps: Some(TBF_RATE),
        ..Link::default()
    })
}

/// Sends `bytes` through `ca` from the lab's sender to its receiver: the
/// rate the receiver saw (bytes/s, from connect to its end of file) and
/// the sender, whose FIN is sent.
fn transfer_through(lab: &Lab, ca: &str, bytes: usize) -> (f64, TcpStream) {
    let listener = lab
        .receiver()
        .run(|| TcpListener::bind(SocketAddrV4::new(RECEIVER_ADDR, 0)))
        .unwrap()
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let receiver = std::thread::spawn(move || {
        let (mut rx, _) = listener.accept().unwrap();
        let mut got = 0;
        let mut buf = vec![0u8; 1 << 20];
        while let Ok(n @ 1..) = rx.read(&mut buf) {
            got += n;
        }
        (got, std::time::Instant::now())
    });
    let ca = ca.to_string();
    let mut tx = lab
        .sender()
        .run(move || connect_to(&ca, SocketAddrV4::new(RECEIVER_ADDR, port)))
        .unwrap();
    let start = std::time::Instant::now();
    let chunk = vec![0x5au8; 1 << 16];
    let mut sent = 0;
    while sent < bytes {
        let n = chunk.len().min(bytes - sent);
        tx.write_all(&chunk[..n]).unwrap();
        sent += n;
    }
    tx.shutdown(std::net::Shutdown::Write).unwrap();
    let (got, end) = receiver.join().unwrap();
    assert_eq!(got, bytes);
    (got as f64 / (end - start).as_secs_f64(), tx)
}

/// Behind a 40 Mbit/s tbf bottleneck between two namespaces, the BBR port
/// moves data as fast as the kernel's bbr on the same path, near the
/// bottleneck rate, and ends pacing near it: BBR's pacing rate is its gain
/// (0.34 to 2.89) times its estimate of the bottleneck, at 99%. The bounds
/// are generous (throughput is a measurement of time on a shared machine):
/// each flow above half the bottleneck, the two within 1.5x of each other,
/// the final pacing rate within a quarter and 3.5 times the bottleneck;
/// the lower bounds only when the host was quiet.
#[test]
fn bbr_port_fills_a_tbf_bottleneck_as_the_kernels_bbr_does() {
    let _alone = alone();
    require!(skip_reason());
    const NAME: &str = "krt_bbr_tbf";
    const BYTES: usize = 8 << 20;
    let Some(lab) = common::lab(&tbf_lab()) else {
        return;
    };
    let _ = Paths::system().unload(NAME, Duration::from_secs(2));
    kleinrock_kernel::load(&plan("bbr", Some(NAME)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let bottleneck = (TBF_RATE / 8) as f64; // bytes/s
    let mut rates = Vec::new();
    let steal = StealMeter::start().unwrap();
    for ca in ["bbr", NAME] {
        let (rate, tx) = transfer_through(&lab, ca, BYTES);
        let info = tcp_info(&tx);
        assert_eq!(congestion_of(&tx), ca);
        eprintln!(
            "{ca}: {:.1} Mbit/s through a {} Mbit/s tbf, pacing at {:.1} Mbit/s",
            rate * 8e-6,
            TBF_RATE / 1_000_000,
            info.tcpi_pacing_rate as f64 * 8e-6
        );
        // What a busy host cannot change: the rate stays under the
        // bottleneck's, and BBR paces. How fast it paces is its bandwidth
        // filter's largest sample, which a host that delays packets can
        // inflate: compared below, on a quiet host only.
        assert!(rate < 1.05 * bottleneck, "{ca}: {rate} bytes/s");
        let pacing = info.tcpi_pacing_rate as f64;
        assert!(pacing > 0.0, "{ca}: pacing at {pacing} bytes/s");
        rates.push((rate, pacing));
    }
    // How close to the bottleneck, and to each other, is a measurement of
    // time: asserted when the hypervisor left the machine alone (see the
    // lab's tests and docs/LAB.md).
    let stolen = steal.share().unwrap();
    kleinrock_testkit::timing(
        "bbr and its port through a 40 Mbit/s tbf",
        stolen < QUIET_STEAL,
    );
    if stolen < QUIET_STEAL {
        for (ca, (rate, pacing)) in ["bbr", NAME].iter().zip(&rates) {
            assert!(*rate > 0.5 * bottleneck, "{ca}: {rate} bytes/s");
            // Under BBR's highest gain (2.89) on the bottleneck, with room.
            assert!(
                (0.25 * bottleneck..3.5 * bottleneck).contains(pacing),
                "{ca}: pacing at {pacing} bytes/s"
            );
        }
        let ratio = rates[1].0 / rates[0].0;
        assert!((1.0 / 1.5..1.5).contains(&ratio), "port/kernel = {ratio}");
    } else {
        eprintln!(
            "the hypervisor took {:.1}% of the CPU time: rates not compared",
            stolen * 100.0
        );
    }
    drop(lab);
    assert_eq!(
        Paths::system()
            .unload(NAME, Duration::from_secs(2))
            .unwrap(),
        Unloaded::Gone
    );
}

/// The trace of a `krt_bbr` connection shows bbr_init() turn
/// sk_pacing_status from SK_PACING_NONE (0) to SK_PACING_NEEDED (1), and
/// the connection keep it; the trace replays into the Rust reference with
/// zero divergence.
///
/// iperf3 -C switches the congestion control after connect, when init runs
/// on a socket that began with the namespace's default; the host's default
/// here is the kernel's bbr, which would have asked for pacing already. So
/// the connection runs in a namespace of its own whose default is reno
/// (a namespace may choose only unrestricted ones: reno, bbr),
/// which does not; and without -b, iperf3 sets no SO_MAX_PACING_RATE.
#[test]
fn bbr_trace_shows_init_asking_for_pacing() {
    let _traffic = with_others();
    use kleinrock_kernel::trace::{run, Request};
    use kleinrock_trace::TraceReader;

    require!(skip_reason().or_else(iperf3));
    let Some(lab) = common::lab(&LabConfig::default()) else {
        return;
    };
    for node in [lab.sender(), lab.receiver()] {
        node.sysctl("net.ipv4.tcp_congestion_control", "reno")
            .unwrap_or_else(|e| panic!("{e}"));
    }
    const NAME: &str = "krt_bbr_tr";
    let _ = Paths::system().unload(NAME, Duration::from_secs(2));
    kleinrock_kernel::load(&plan("bbr", Some(NAME)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("kleinrock-bbr-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = lab
        .receiver()
        .command("iperf3")
        .args(["-s", "-1"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let command: Vec<String> = [
        "nsenter".to_string(),
        format!("--net=/var/run/netns/{}", lab.sender().name()),
        "sh".to_string(),
        "-c".to_string(),
        format!("iperf3 -c {RECEIVER_ADDR} -n 4M -C \"$KLEINROCK_CC\" >/dev/null"),
    ]
    .into();
    let out = dir.join("bbr.csv");
    let report = run(
        &Request {
            cc: NAME,
            out: &out,
            command: Some(&command),
        },
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let _ = server.wait();
    let _ = Paths::system().unload(NAME, Duration::from_secs(2));
    assert!(report.command_status.is_some_and(|s| s.success()));
    assert_eq!(report.lost, 0);
    // The sender: the connection with the most hook calls.
    let sender = report.summary.files.iter().max_by_key(|f| f.rows).unwrap();
    let mut trace = TraceReader::open(&sender.path).unwrap();
    let col = |t: &TraceReader, name: &str| t.column(name).unwrap_or_else(|| panic!("{name}"));
    let (hook, pre, post) = (
        col(&trace, "hook"),
        col(&trace, "pre_pacing_status"),
        col(&trace, "post_pacing_status"),
    );
    let mut rows = 0;
    while trace.next_row().unwrap().is_some() {
        let (before, after) = (trace.cells()[pre], trace.cells()[post]);
        if rows == 0 {
            assert_eq!(trace.text(hook), "init");
            assert_eq!((before, after), (Some(0), Some(1)), "init");
        } else {
            assert_eq!(after, Some(1), "row {rows}: {}", trace.text(hook));
        }
        rows += 1;
    }
    assert!(rows > 10, "{rows} rows");
    let reference = report.replay_spec.parse().unwrap();
    let replayed = kleinrock_trace::replay(&sender.path, reference, report.hz, &mut |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(replayed.agrees(), "{replayed}");
    std::fs::remove_dir_all(&dir).unwrap();
}
