//! The lab against real Linux: namespaces, veths, tbf, iptables and the
//! delay line, measured with ping and TCP. Needs root; otherwise each test
//! says why and skips, or fails where that is required (kleinrock_testkit);
//! as root, any error making a lab is a failure.
//!
//! The tests that measure rates or delays take a lock, so that they do not
//! share this machine's two cores with each other. What they measure is
//! split in two: invariants (never early, nothing lost, never above the
//! configured rate), asserted always, and accuracy (at the rate, on
//! time), asserted when the hypervisor left the machine alone while it
//! was measured; see [`timed`], which records whether each measurement
//! was judged so that the suite can fail when none was.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kleinrock_lab::{
    Direction, ErrorKind, Lab, LabConfig, Limit, Link, LinkConfig, Node, Queue, QueueConfig,
    TcpInfo, RECEIVER_ADDR,
};
use kleinrock_testkit::{installed, require, root};

mod common;
use common::{lab, serial};

/// A measurement that always makes its result (its lab is made before):
/// see [`common::timed`].
fn timed<T>(what: &str, mut measure: impl FnMut() -> T) -> (T, bool) {
    common::timed(what, || Some(measure())).expect("the measurement ran")
}

fn delay_both_ways(ms: u64) -> LabConfig {
    LabConfig::symmetric(Link {
        delay: Duration::from_millis(ms),
        ..Link::default()
    })
}

fn netns_exists(name: &str) -> bool {
    Path::new("/var/run/netns").join(name).exists()
}

/// The host's interfaces, by name.
fn host_interfaces() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[derive(Debug)]
struct Ping {
    sent: u32,
    received: u32,
    min_ms: f64,
    avg_ms: f64,
    max_ms: f64,
}

/// Runs ping in `from` with `args` (count, interval...) and reads its
/// summary.
fn ping(from: &Node, to: Ipv4Addr, args: &[&str]) -> Ping {
    let out = ping_command(from, to, args)
        .output()
        .expect("ping is installed (apt-get install iputils-ping)");
    parse_ping(&String::from_utf8_lossy(&out.stdout))
}

fn ping_command(from: &Node, to: Ipv4Addr, args: &[&str]) -> Command {
    let mut cmd = from.command("ping");
    cmd.args(["-q", "-n", "-W", "1"])
        .args(args)
        .arg(to.to_string());
    cmd
}

/// ping's closing lines: "N packets transmitted, M received, ..." and
/// "rtt min/avg/max/mdev = a/b/c/d ms" (absent when nothing came back).
fn parse_ping(text: &str) -> Ping {
    let counts = text
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .unwrap_or_else(|| panic!("no summary from ping: {text}"));
    let words: Vec<&str> = counts.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let number_before = |word: &str| -> u32 {
        let at = words.iter().position(|w| *w == word).unwrap();
        words[at - 1].parse().unwrap()
    };
    let mut ping = Ping {
        sent: number_before("packets"),
        received: number_before("received"),
        min_ms: f64::NAN,
        avg_ms: f64::NAN,
        max_ms: f64::NAN,
    };
    if let Some(rtt) = text.lines().find(|l| l.starts_with("rtt ")) {
        let values: Vec<f64> = rtt
            .split(" = ")
            .nth(1)
            .unwrap()
            .split([' ', '/'])
            .take(3)
            .map(|v| v.parse().unwrap())
            .collect();
        (ping.min_ms, ping.avg_ms, ping.max_ms) = (values[0], values[1], values[2]);
    }
    ping
}

/// What a bulk transfer saw.
struct Transfer {
    /// (time since the first byte, bytes received by then), per read.
    progress: Vec<(Duration, u64)>,
    sent: u64,
    sender: TcpInfo,
}

impl Transfer {
    /// Goodput in bit/s between `from` and the last byte.
    fn goodput_after(&self, from: Duration) -> f64 {
        let start = self.progress.iter().find(|(t, _)| *t >= from).unwrap();
        let end = self.progress.last().unwrap();
        (end.1 - start.1) as f64 * 8.0 / (end.0 - start.0).as_secs_f64()
    }

    fn received(&self) -> u64 {
        self.progress.last().map_or(0, |p| p.1)
    }
}

/// A TCP connection from the sender to the receiver, made in the lab.
fn connect(lab: &Lab) -> (TcpStream, TcpStream) {
    let listener = lab
        .receiver()
        .run(|| TcpListener::bind((RECEIVER_ADDR, 0)))
        .unwrap()
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let tx = lab
        .sender()
        .run(|| TcpStream::connect((RECEIVER_ADDR, port)))
        .unwrap()
        .unwrap();
    let (rx, _) = listener.accept().unwrap();
    // A lab that stops carrying packets fails the test rather than hang it.
    tx.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    (tx, rx)
}

/// Sends from the sender for `seconds`, at most at `pace_bps` of payload
/// if given; then closes and waits for the receiver to read everything.
fn bulk(lab: &Lab, seconds: f64, pace_bps: Option<f64>) -> Transfer {
    let (tx, rx) = connect(lab);
    bulk_over(tx, rx, seconds, pace_bps)
}

/// [`bulk`] over the connection `tx` to `rx`.
fn bulk_over(
    mut tx: TcpStream,
    mut rx: TcpStream,
    seconds: f64,
    pace_bps: Option<f64>,
) -> Transfer {
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0u64;
        let mut progress = Vec::new();
        let mut first = None;
        loop {
            let n = rx.read(&mut buf).unwrap();
            if n == 0 {
                return progress;
            }
            let first = *first.get_or_insert_with(Instant::now);
            total += n as u64;
            progress.push((first.elapsed(), total));
        }
    });
    let chunk = vec![0x5au8; 1 << 14];
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed().as_secs_f64() < seconds {
        if let Some(rate) = pace_bps {
            let ahead = sent as f64 * 8.0 / rate - start.elapsed().as_secs_f64();
            if ahead > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(ahead.min(0.01)));
                continue;
            }
        }
        tx.write_all(&chunk).unwrap();
        sent += chunk.len() as u64;
    }
    tx.shutdown(Shutdown::Write).unwrap();
    let progress = reader.join().unwrap();
    Transfer {
        progress,
        sent,
        sender: TcpInfo::of(&tx).unwrap(),
    }
}

/// TCP payload per frame on the lab's veths: 1448 bytes of a 1514-byte
/// frame (20 IP + 32 TCP with timestamps + 14 Ethernet).
const PAYLOAD_PER_FRAME: f64 = 1448.0 / 1514.0;

#[test]
fn ping_rtt_is_twice_the_one_way_delay() {
    let _serial = serial();
    let Some(lab) = lab(&delay_both_ways(20)) else {
        return;
    };
    let (p, quiet) = timed("20 ms each way", || {
        ping(lab.sender(), RECEIVER_ADDR, &["-c", "40", "-i", "0.02"])
    });
    eprintln!("20 ms each way: {p:?}");
    assert_eq!(p.received, p.sent, "{p:?}");
    // Never early: each packet is held at least its delay both ways.
    assert!(p.min_ms >= 40.0, "{p:?}");
    assert!(!quiet || p.avg_ms < 41.5, "{p:?}");

    // A changed delay applies to the packets that follow.
    lab.set_delay(Direction::Both, Duration::from_millis(5))
        .unwrap();
    lab.set_delay(Direction::Reverse, Duration::from_millis(15))
        .unwrap();
    let (p, quiet) = timed("5 ms forward, 15 ms back", || {
        ping(lab.sender(), RECEIVER_ADDR, &["-c", "20", "-i", "0.02"])
    });
    eprintln!("5 ms forward, 15 ms back: {p:?}");
    assert_eq!(p.received, p.sent, "{p:?}");
    // Not the old 40 ms: a late packet is late by a stall, not by 20 ms
    // on every packet.
    assert!(p.min_ms >= 20.0 && p.min_ms < 30.0, "{p:?}");
    assert!(!quiet || p.avg_ms < 21.5, "{p:?}");
    lab.check().unwrap();
}

#[test]
fn the_delay_holds_under_a_100_mbit_flow() {
    let _serial = serial();
    require!(root());
    // A fresh lab per attempt, so that the delay line's counters are the
    // attempt's own.
    let ((t, p, stats), quiet) = timed("100 Mbit/s under a 10 ms delay", || {
        let lab = Lab::new(&delay_both_ways(10)).unwrap_or_else(|e| panic!("{e}"));
        // `-w`: wait for all 40 replies (up to 10 s), not 1 s past the last
        // request: a reply that a stalled host delays is late, not lost.
        let pinger = ping_command(
            lab.sender(),
            RECEIVER_ADDR,
            &["-c", "40", "-i", "0.04", "-w", "10"],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
        let t = bulk(&lab, 2.0, Some(100e6));
        let p = parse_ping(&String::from_utf8_lossy(
            &pinger.wait_with_output().unwrap().stdout,
        ));
        lab.check().unwrap();
        (t, p, lab.delay_stats(Direction::Both))
    });
    let goodput = t.goodput_after(Duration::from_millis(500));
    let mean_late = stats.late_total / stats.forwarded as u32;
    eprintln!(
        "100 Mbit/s paced: goodput {:.1} Mbit/s, {p:?}, delay line late by {mean_late:?} on average, \
         {stats:?}",
        goodput / 1e6
    );
    assert_eq!(t.received(), t.sent);
    assert_eq!(p.received, p.sent, "{p:?}");
    assert!(p.min_ms >= 20.0, "{p:?}");
    assert!(goodput < 110e6, "{goodput}");
    assert_eq!(
        (stats.overflow_drops, stats.write_errors),
        (0, 0),
        "{stats:?}"
    );
    if quiet {
        assert!((goodput - 100e6).abs() < 10e6, "{goodput}");
        assert!(p.avg_ms < 22.0, "{p:?}");
        assert!(mean_late < Duration::from_millis(1), "{stats:?}");
    }
}

#[test]
fn tbf_carries_tcp_at_the_configured_rate() {
    let _serial = serial();
    let forward = Link {
        delay: Duration::from_millis(5),
        rate_bps: Some(20_000_000),
        queue: Queue::Packets(100),
        ..Link::default()
    };
    let reverse = Link {
        delay: Duration::from_millis(5),
        ..Link::default()
    };
    let Some(lab) = lab(&LabConfig {
        forward,
        reverse,
        ..LabConfig::default()
    }) else {
        return;
    };
    let (t, quiet) = timed("tbf 20 Mbit/s", || bulk(&lab, 3.0, None));
    let goodput = t.goodput_after(Duration::from_secs(1));
    let expected = 20e6 * PAYLOAD_PER_FRAME;
    eprintln!(
        "tbf 20 Mbit/s: goodput {:.2} Mbit/s (expected {:.2})",
        goodput / 1e6,
        expected / 1e6
    );
    assert_eq!(t.received(), t.sent);
    // A busy host can slow the flow down, never speed the link up.
    assert!(goodput < 1.1 * expected, "{goodput}");
    assert!(
        !quiet || (goodput - expected).abs() < 0.1 * expected,
        "{goodput}"
    );
    lab.check().unwrap();
}

#[test]
fn random_loss_drops_the_configured_share_of_pings() {
    let _serial = serial();
    let link = Link {
        loss: 0.05,
        ..Link::default()
    };
    let Some(lab) = lab(&LabConfig::symmetric(link)) else {
        return;
    };
    let p = ping(lab.sender(), RECEIVER_ADDR, &["-f", "-c", "1000"]);
    // A ping survives 5% both ways with probability 0.95^2: 9.75% lost,
    // with a standard deviation of 0.94% over 1000; four of them either way.
    let lost = 1.0 - f64::from(p.received) / f64::from(p.sent);
    eprintln!("5% each way: {p:?}, {:.2}% lost", lost * 100.0);
    assert_eq!(p.sent, 1000);
    assert!((0.06..0.14).contains(&lost), "{lost}");

    lab.set_loss(Direction::Both, 0.0).unwrap();
    let p = ping(lab.sender(), RECEIVER_ADDR, &["-f", "-c", "200"]);
    assert_eq!(p.received, 200, "{p:?}");
    let e = lab.set_loss(Direction::Forward, 2.0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert_eq!(
        e.to_string(),
        "the forward loss probability 2 is outside [0, 1]; give a probability such as 0.01 for 1%"
    );
}

#[test]
fn the_blackhole_stops_traffic_and_lifting_it_restores_it() {
    let _serial = serial();
    let Some(lab) = lab(&delay_both_ways(5)) else {
        return;
    };
    let five = ["-c", "5", "-i", "0.05"];
    assert_eq!(ping(lab.sender(), RECEIVER_ADDR, &five).received, 5);
    for direction in [Direction::Both, Direction::Forward, Direction::Reverse] {
        lab.set_blackhole(direction, true).unwrap();
        let p = ping(lab.sender(), RECEIVER_ADDR, &five);
        assert_eq!((p.sent, p.received), (5, 0), "{direction:?}");
        lab.set_blackhole(direction, false).unwrap();
        assert_eq!(
            ping(lab.sender(), RECEIVER_ADDR, &five).received,
            5,
            "{direction:?}"
        );
    }
    // Loss and the blackhole are separate switches of one chain.
    lab.set_loss(Direction::Forward, 0.01).unwrap();
    lab.set_blackhole(Direction::Forward, true).unwrap();
    lab.set_blackhole(Direction::Forward, false).unwrap();
    let rules = lab
        .router()
        .command("iptables")
        .args(["-S", "krlab-fwd"])
        .output()
        .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout);
    assert!(
        rules.contains("-m statistic") && !rules.contains("-A krlab-fwd -j DROP"),
        "{rules}"
    );
}

/// `tcpi_ca_state` after an RTO: the retransmission timer's
/// tcp_enter_loss() sets it (the only other way in, tcp_simple_retransmit()
/// on a smaller path MTU, cannot happen on the lab's fixed MTU).
const TCP_CA_LOSS: u8 = 4;

/// getsockopt(TCP_INFO), all of it: the RTO test reads the timer's own
/// fields (`tcpi_rto`, `tcpi_backoff`, `tcpi_retransmits`), which
/// [`TcpInfo`] leaves out.
fn raw_tcp_info(s: &TcpStream) -> libc::tcp_info {
    use std::os::fd::AsRawFd;
    // SAFETY: tcp_info is plain data; the kernel fills at most len bytes.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        assert_eq!(rc, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
        info
    }
}

/// What the sender showed of its retransmission timer while a blackhole
/// swallowed everything.
struct RtoWatch {
    /// Its last poll before it entered Loss: when the sender last sent
    /// data, counted from the blackhole's start (it goes on sending new
    /// data into the blackhole until cwnd is full, then probes the tail),
    /// and its RTO then, in µs.
    last_sent: Duration,
    rto_us: u32,
    /// When the sender was first seen in Loss, counted from the
    /// blackhole's start, and its TCP_INFO then.
    loss: Option<(Duration, libc::tcp_info)>,
}

/// Blackholes the lab both ways for a second, 300 ms into the transfer
/// `watch` (a clone of the sender's socket) carries, and polls the
/// sender's TCP_INFO every millisecond meanwhile.
fn blackhole_and_watch(lab: &Lab, watch: &TcpStream) -> RtoWatch {
    std::thread::sleep(Duration::from_millis(300));
    lab.set_blackhole(Direction::Both, true).unwrap();
    let start = Instant::now();
    let mut w = RtoWatch {
        last_sent: Duration::ZERO,
        rto_us: 0,
        loss: None,
    };
    while start.elapsed() < Duration::from_secs(1) {
        let info = raw_tcp_info(watch);
        let now = start.elapsed();
        if info.tcpi_ca_state == TCP_CA_LOSS {
            w.loss.get_or_insert((now, info));
        } else if w.loss.is_none() {
            // tcpi_last_data_sent: milliseconds since then.
            let ago = Duration::from_millis(u64::from(info.tcpi_last_data_sent));
            w.last_sent = now.saturating_sub(ago);
            w.rto_us = info.tcpi_rto;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    lab.set_blackhole(Direction::Both, false).unwrap();
    w
}

/// A blackhole of a second in the middle of a transfer: the sender's
/// retransmission timer fires (a tail loss probe, which also retransmits,
/// does not count), it enters Loss with its RTO counted and backed off,
/// at the time its RTO said, and the transfer completes once the path is
/// back.
///
/// When: the sender goes on sending new data into the blackhole until
/// cwnd is full, then sends a tail loss probe, after which
/// tcp_send_loss_probe() restarts the retransmission timer from that
/// moment. So the RTO fires its RTO after the last transmission: on a
/// quiet host within [-8 ms, +30 ms] of that (jiffies of 4 ms on both
/// readings, and a timer that may fire a little late).
#[test]
fn a_blackhole_during_a_transfer_forces_an_rto_and_the_transfer_completes() {
    let _serial = serial();
    let Some(lab) = lab(&delay_both_ways(10)) else {
        return;
    };
    let ((t, w), quiet) = timed("an RTO under a 1 s blackhole", || {
        let (tx, rx) = connect(&lab);
        let watch = tx.try_clone().unwrap();
        std::thread::scope(|s| {
            // From another thread: the sender blocks in write() while
            // nothing comes back.
            let watcher = s.spawn(|| blackhole_and_watch(&lab, &watch));
            let t = bulk_over(tx, rx, 2.0, Some(20e6));
            (t, watcher.join().unwrap())
        })
    });
    assert_eq!(t.received(), t.sent);
    let (after, info) = w
        .loss
        .unwrap_or_else(|| panic!("the sender never entered Loss: no RTO; {:?}", t.sender));
    let rto = Duration::from_micros(u64::from(w.rto_us));
    eprintln!(
        "last sent {:?} into the blackhole with an RTO of {rto:?}; Loss after {after:?}, with {} \
         RTOs unanswered, backoff {}, {} segments retransmitted and out; at the end {:?}",
        w.last_sent, info.tcpi_retransmits, info.tcpi_backoff, info.tcpi_retrans, t.sender
    );
    // The timer's own doing: it counted the timeout, backed off, and
    // retransmitted from the head (tcp_retransmit_timer() after
    // tcp_enter_loss()).
    assert!(info.tcpi_retransmits >= 1, "no RTO counted");
    assert!(info.tcpi_backoff >= 1, "the RTO did not back off");
    assert!(info.tcpi_retrans >= 1, "nothing retransmitted in Loss");
    // Linux 6.7 and later count RTOs and the recoveries they began.
    if let (Some(rtos), Some(recoveries)) = (t.sender.total_rto, t.sender.total_rto_recoveries) {
        assert!(rtos >= 1 && recoveries >= 1, "{:?}", t.sender);
    }
    // A host that stalls the watcher or the sender's timer skews the
    // times: judged on a quiet host.
    if quiet {
        let waited = after.saturating_sub(w.last_sent);
        assert!(
            waited + Duration::from_millis(8) >= rto && waited <= rto + Duration::from_millis(30),
            "Loss {waited:?} after the last transmission, with an RTO of {rto:?}"
        );
    }
}

#[test]
fn the_delay_lines_bottleneck_marks_ect_packets_and_tcp_sees_ece() {
    let _serial = serial();
    let forward = Link {
        delay: Duration::from_millis(5),
        bottleneck: Some(LinkConfig::new(
            10_000_000,
            QueueConfig::Fifo {
                limit: Limit::Packets(100),
                mark_at: Some(10),
            },
        )),
        ..Link::default()
    };
    let reverse = Link {
        delay: Duration::from_millis(5),
        ..Link::default()
    };
    let Some(lab) = lab(&LabConfig {
        forward,
        reverse,
        ..LabConfig::default()
    }) else {
        return;
    };
    lab.sender().sysctl("net.ipv4.tcp_ecn", "1").unwrap();
    // The marks of each attempt: on a busy host an attempt is repeated
    // on the same lab.
    let mut marked_per_attempt = Vec::new();
    let ((t, marked), quiet) = timed("ECN at K=10", || {
        let before = lab.delay_stats(Direction::Forward).ce_marked;
        let t = bulk(&lab, 2.0, None);
        let marked = lab.delay_stats(Direction::Forward).ce_marked - before;
        marked_per_attempt.push((marked, t.sender.delivered_ce));
        (t, marked)
    });
    let marks = lab.delay_stats(Direction::Forward);
    let goodput = t.goodput_after(Duration::from_millis(500));
    eprintln!(
        "ECN, K=10: {marked} marked in the last attempt, {marks:?}; sender {:?}; goodput {:.2} Mbit/s",
        t.sender,
        goodput / 1e6
    );
    assert_eq!(t.received(), t.sent);
    assert!(t.sender.ecn, "{:?}", t.sender);
    // An unpaced flow into 10 Mbit/s fills the queue past K=10 packets
    // within its first round trips, so it must mark: on a quiet host the
    // attempt judged, on a busy one (which can starve a sender for a
    // while, not for three attempts of 2 s) at least one of them. The
    // marks come back as ECE.
    assert!(
        if quiet {
            marked > 0
        } else {
            marked_per_attempt.iter().any(|&(m, _)| m > 0)
        },
        "no CE marks in {} attempts ((marks, delivered_ce): {marked_per_attempt:?}): {marks:?}",
        marked_per_attempt.len()
    );
    // Every attempt's marks came back as ECE, the last one's or not.
    for &(m, ce) in &marked_per_attempt {
        assert!(m == 0 || ce > 0, "{marked_per_attempt:?}");
    }
    // The bottleneck's own rate, counting IP packets as the simulator does.
    let expected = 10e6 * 1448.0 / 1500.0;
    assert!(goodput < 1.1 * expected, "{goodput}");
    assert!(
        !quiet || (goodput - expected).abs() < 0.1 * expected,
        "{goodput}"
    );
    assert_eq!(lab.delay_stats(Direction::Reverse).ce_marked, 0);

    // Without ECN the same flow's packets are Not-ECT: never marked.
    lab.sender().sysctl("net.ipv4.tcp_ecn", "0").unwrap();
    let t = bulk(&lab, 1.0, None);
    assert!(!t.sender.ecn);
    assert_eq!(
        lab.delay_stats(Direction::Forward).ce_marked,
        marks.ce_marked
    );
    lab.check().unwrap();
}

#[test]
fn threads_and_commands_run_inside_the_namespace() {
    let Some(lab) = lab(&LabConfig::default()) else {
        return;
    };
    let inode = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
            .unwrap()
    };
    let node = lab.receiver();
    let expected = format!(
        "net:[{}]",
        inode(&Path::new("/var/run/netns").join(node.name()))
    );
    let own = || {
        std::fs::read_link("/proc/thread-self/ns/net")
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    assert_eq!(node.run(own).unwrap(), expected);
    assert_eq!(node.spawn(own).unwrap().join().unwrap(), expected);
    assert_ne!(own(), expected);
    let out = node
        .command("readlink")
        .arg("/proc/self/ns/net")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expected);
    // A panic inside run() is this thread's panic.
    let caught = std::panic::catch_unwind(|| node.run(|| panic!("inside")));
    assert_eq!(*caught.unwrap_err().downcast::<&str>().unwrap(), "inside");
    let e = node.sysctl("net.ipv4.no_such_knob", "1").unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "cannot set net.ipv4.no_such_knob to 1 in {}: ",
            node.name()
        )),
        "{e}"
    );
}

#[test]
fn a_panicking_test_leaves_no_namespace_behind() {
    use std::os::unix::process::ExitStatusExt;
    require!(root());
    let before = host_interfaces();
    let names = Mutex::new(Vec::new());
    let server = Mutex::new(None);
    let made = Mutex::new(Ok(()));
    let result = std::panic::catch_unwind(|| {
        // An error here is the test's failure, not the panic it expects.
        let lab = match Lab::new(&delay_both_ways(1)) {
            Ok(lab) => lab,
            Err(e) => {
                *made.lock().unwrap() = Err(e);
                return;
            }
        };
        *names.lock().unwrap() = lab.namespaces().map(str::to_string).to_vec();
        assert!(lab.namespaces().iter().all(|n| netns_exists(n)));
        assert_eq!(
            host_interfaces(),
            before,
            "the lab touched the host's interfaces"
        );
        // A server (iperf3 -s, say) the test never stops.
        *server.lock().unwrap() = Some(lab.receiver().command("sleep").arg("600").spawn().unwrap());
        panic!("a test fails while its lab is up");
    });
    made.into_inner().unwrap().unwrap_or_else(|e| panic!("{e}"));
    let names = names.into_inner().unwrap();
    assert!(result.is_err());
    assert_eq!(names.len(), 3, "{names:?}");
    for name in &names {
        assert!(!netns_exists(name), "{name} survived the panic");
    }
    assert_eq!(host_interfaces(), before);
    let status = server.into_inner().unwrap().unwrap().wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "the server outlived its lab"
    );
}

#[test]
fn a_lab_that_fails_half_way_removes_what_it_built() {
    require!(root());
    let before = host_interfaces();
    // Valid to the lab, refused by tc: tbf cannot hold a millisecond of it.
    let absurd = Link {
        rate_bps: Some(u64::MAX),
        ..Link::default()
    };
    let e = Lab::new(&LabConfig::symmetric(absurd)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Failed);
    let message = e.to_string();
    assert!(
        message.starts_with(
            "`tc qdisc replace dev rtr-rcv root handle 1: tbf rate 18446744073709551615bit"
        ),
        "{message}"
    );
    assert!(
        message.contains("failed: tbf: illegal value for \"burst\""),
        "{message}"
    );
    // The sentence names the router's namespace, which is gone with the
    // other two.
    let router = message
        .split_whitespace()
        .find(|w| w.starts_with("krlab-"))
        .unwrap();
    let id = router.strip_suffix("-rtr").unwrap();
    for role in ["snd", "rtr", "rcv"] {
        assert!(
            !netns_exists(&format!("{id}-{role}")),
            "{id}-{role} survived"
        );
    }
    assert_eq!(host_interfaces(), before);
}

#[test]
fn two_labs_at_once_have_their_own_names_and_links() {
    let _serial = serial();
    let before = host_interfaces();
    let Some(short) = lab(&delay_both_ways(5)) else {
        return;
    };
    let long = lab(&delay_both_ways(15)).unwrap();
    let mut all: Vec<&str> = short
        .namespaces()
        .into_iter()
        .chain(long.namespaces())
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(all
        .iter()
        .all(|n| n.starts_with("krlab-") && netns_exists(n)));
    let ((a, b), quiet) = timed("two labs at once", || {
        std::thread::scope(|s| {
            let a = s.spawn(|| ping(short.sender(), RECEIVER_ADDR, &["-c", "20", "-i", "0.02"]));
            let b = s.spawn(|| ping(long.sender(), RECEIVER_ADDR, &["-c", "20", "-i", "0.02"]));
            (a.join().unwrap(), b.join().unwrap())
        })
    });
    assert!(a.min_ms >= 10.0 && a.min_ms < 20.0, "{a:?}");
    assert!(b.min_ms >= 30.0, "{b:?}");
    assert!(
        !quiet || (a.avg_ms < 11.5 && b.avg_ms < 31.5),
        "{a:?} {b:?}"
    );
    assert_eq!(host_interfaces(), before);
}

/// The child's half of the sweep test: makes a lab, says its names, and
/// waits to be killed.
const HOLD: &str = "KLEINROCK_LAB_TEST_HOLD";
const HOLDING: &str = "holding lab:";

/// Kills the child when the test ends, however it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_lab_of_a_killed_process_is_swept() {
    if std::env::var_os(HOLD).is_some() {
        let lab = Lab::new(&delay_both_ways(1)).unwrap();
        let mut orphan = lab.receiver().command("sleep").arg("600").spawn().unwrap();
        println!("{HOLDING} {} {}", orphan.id(), lab.namespaces().join(" "));
        std::io::stdout().flush().unwrap();
        // Until the parent kills this process.
        orphan.wait().unwrap();
        unreachable!("the orphan ended before this process");
    }
    let Some(mine) = lab(&LabConfig::default()) else {
        return;
    };
    let mut child = Killed(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "the_lab_of_a_killed_process_is_swept",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(HOLD, "1")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // libtest may print "test ... " on the same line before ours.
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut names: Vec<String> = loop {
        let line = lines
            .next()
            .expect("the child ended without a lab")
            .unwrap();
        if let Some((_, names)) = line.split_once(HOLDING) {
            break names.split_whitespace().map(str::to_string).collect();
        }
    };
    let orphan = names.remove(0);
    assert_eq!(names.len(), 3);
    assert!(names.iter().all(|n| netns_exists(n)));
    drop(child);
    assert!(
        names.iter().all(|n| netns_exists(n)),
        "nothing removes them but the sweep"
    );

    let swept = kleinrock_lab::sweep().unwrap();
    for name in &names {
        assert!(swept.contains(name), "{name} not in {swept:?}");
        assert!(!netns_exists(name));
    }
    // What the dead process left running in its lab is killed (and, now
    // init's child, reaped).
    let gone = || {
        std::fs::read_to_string(format!("/proc/{orphan}/stat")).map_or(true, |stat| {
            !stat.contains("(sleep)") || stat.contains(") Z ")
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(gone(), "the orphan {orphan} outlived the sweep");
    // This process is alive: its lab stays.
    assert!(mine
        .namespaces()
        .iter()
        .all(|n| netns_exists(n) && !swept.iter().any(|s| s == n)));
}

/// The child's half of the privilege test.
const UNPRIVILEGED: &str = "KLEINROCK_LAB_TEST_UNPRIVILEGED";

#[test]
fn without_root_a_lab_is_refused_in_one_sentence() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if std::env::var_os(UNPRIVILEGED).is_some() || !root {
        let e = Lab::new(&LabConfig::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unprivileged);
        assert!(e.is_unprivileged());
        println!("refused: {e}");
        return;
    }
    // As root, run this test again as nobody.
    require!(installed("setpriv", "util-linux"));
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "without_root_a_lab_is_refused_in_one_sentence",
            "--exact",
            "--nocapture",
        ])
        .env(UNPRIVILEGED, "1")
        .output()
        .expect("setpriv runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let refusal = text
        .lines()
        .find_map(|l| l.strip_prefix("refused: "))
        .unwrap();
    assert_eq!(
        refusal,
        "a lab needs root (network namespaces, veth pairs, tc and iptables need CAP_SYS_ADMIN and \
         CAP_NET_ADMIN); run it as root or with sudo"
    );
}
