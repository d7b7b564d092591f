//! The lab against real Linux: namespaces, veths, tbf, iptables and the
//! delay line, measured with ping and TCP. Needs root; otherwise each test
//! says why and skips.
//!
//! The tests that measure rates or delays take a lock, so that they do not
//! share this machine's two cores with each other. What they measure is
//! split in two: invariants (never early, nothing lost, never above the
//! configured rate), asserted always, and accuracy (at the rate, on
//! time), asserted when the hypervisor left the machine alone while it
//! was measured; see [`timed`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kleinrock_lab::{
    Direction, ErrorKind, Lab, LabConfig, Limit, Link, LinkConfig, Node, Queue, QueueConfig,
    StealMeter, TcpInfo, QUIET_STEAL, RECEIVER_ADDR,
};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A lab, or `None` (said on stderr) when this process is not root.
fn lab(config: &LabConfig) -> Option<Lab> {
    match Lab::new(config) {
        Ok(lab) => Some(lab),
        Err(e) if e.is_unprivileged() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Runs a timing measurement until the host was quiet during it, at most
/// three times. Returns the last result, and whether the host was quiet
/// for it: the caller asserts accuracy only then, invariants always.
fn timed<T>(what: &str, mut measure: impl FnMut() -> T) -> (T, bool) {
    let mut shares = Vec::new();
    loop {
        let meter = StealMeter::start().unwrap();
        let result = measure();
        let share = meter.share().unwrap();
        shares.push(format!("{:.1}%", share * 100.0));
        if share < QUIET_STEAL {
            eprintln!(
                "{what}: the hypervisor took {} of the CPU time",
                shares.join(", then ")
            );
            return (result, true);
        }
        if shares.len() == 3 {
            eprintln!(
                "{what}: the hypervisor took {} of the CPU time in three attempts, more than \
                 {:.0}%: accuracy not asserted, invariants only",
                shares.join(", "),
                QUIET_STEAL * 100.0
            );
            return (result, false);
        }
    }
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
    let (mut tx, mut rx) = connect(lab);
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
    // A fresh lab per attempt, so that the delay line's counters are the
    // attempt's own.
    let (run, quiet) = timed("100 Mbit/s under a 10 ms delay", || {
        let lab = lab(&delay_both_ways(10))?;
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
        Some((t, p, lab.delay_stats(Direction::Both)))
    });
    let Some((t, p, stats)) = run else {
        return;
    };
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

#[test]
fn a_blackhole_during_a_transfer_forces_an_rto_and_the_transfer_completes() {
    let _serial = serial();
    let Some(lab) = lab(&delay_both_ways(10)) else {
        return;
    };
    // From another thread: the sender blocks in write() while nothing
    // comes back.
    let t = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            lab.set_blackhole(Direction::Both, true).unwrap();
            std::thread::sleep(Duration::from_secs(1));
            lab.set_blackhole(Direction::Both, false).unwrap();
        });
        bulk(&lab, 2.0, Some(20e6))
    });
    eprintln!("blackhole 1 s: {:?}", t.sender);
    assert_eq!(t.received(), t.sent);
    assert!(t.sender.total_retrans > 0, "{:?}", t.sender);
    if let Some(rtos) = t.sender.total_rto {
        assert!(rtos >= 1, "{:?}", t.sender);
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
    // The marks of the attempt whose connection is checked: on a busy
    // host an attempt is repeated on the same lab.
    let ((t, marked), quiet) = timed("ECN at K=10", || {
        let before = lab.delay_stats(Direction::Forward).ce_marked;
        let t = bulk(&lab, 2.0, None);
        (t, lab.delay_stats(Direction::Forward).ce_marked - before)
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
    // A sender the host starved may never fill the queue past K: marks
    // are asserted on a quiet host, and their echo whenever there were any.
    assert!(!quiet || marked > 0, "{marks:?}");
    assert!(marked == 0 || t.sender.delivered_ce > 0, "{:?}", t.sender);
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
    let before = host_interfaces();
    let names = Mutex::new(Vec::new());
    let server = Mutex::new(None);
    let result = std::panic::catch_unwind(|| {
        let Some(lab) = lab(&delay_both_ways(1)) else {
            return;
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
    let names = names.into_inner().unwrap();
    if names.is_empty() {
        return; // skipped: not root
    }
    assert!(result.is_err());
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
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root");
        return;
    }
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
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "without_root_a_lab_is_refused_in_one_sentence",
            "--exact",
            "--nocapture",
        ])
        .env(UNPRIVILEGED, "1")
        .output();
    let Ok(out) = out else {
        eprintln!("skipped: setpriv is not installed");
        return;
    };
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
