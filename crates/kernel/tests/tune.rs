//! The tuner in the running kernel (`kleinrock tune`, docs/TUNE.md): its
//! sockops program attached to a cgroup of the test's own (created under
//! the cgroup v2 mount, removed after, even on failure; never the root),
//! and its daemon driven in-process, step by step.
//!
//! - the program sets the map's algorithm on a connection made from
//!   inside the cgroup (IPv4 and IPv6) and not on one made from outside;
//!   once detached (what the daemon's death does) the tuned connection
//!   keeps its algorithm and a new one gets the default;
//! - reports arrive while a long connection runs and at its end, with
//!   what it showed: bytes acknowledged equal to those sent, a minimum
//!   RTT at the lab path's;
//! - a set the kernel refuses (its own `cdg`, which no BPF program may
//!   set: ENOTSUPP) is recorded, and the daemon does not try it again for
//!   the peer; the port `kr_cdg`, which the daemon loads, is set, and
//!   `stop` unloads it;
//! - advise mode learns and proposes but sets nothing;
//! - the choices map is an LRU: full, it evicts instead of refusing.
//!
//! Tests run one at a time: putting this process into the cgroup (which
//! holds processes, not threads) would put any other test's sockets there
//! too. Needs root, BPF in the build and BTF (common::skip_reason).

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{congestion_of, skip_reason};
use kleinrock_kernel::pins::Paths;
use kleinrock_kernel::tune::cgroup::Scratch;
use kleinrock_kernel::tune::daemon::{peer_key, Daemon, Options};
use kleinrock_kernel::tune::names::{resolve, Candidate, TunePins};
use kleinrock_kernel::tune::program::Program;
use kleinrock_kernel::tune::record::{flag, Kind, Report};
use kleinrock_kernel::tune::Settings;
use kleinrock_lab::{LabConfig, Link, RECEIVER_ADDR};
use kleinrock_select::bandit::Config as BanditConfig;
use kleinrock_select::live::{self, PolicyKind};
use kleinrock_testkit::require;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn settings() -> Settings {
    Settings {
        advise: false,
        priors: None,
        report_ms: 0,
        capacity: 1024,
        lossy_shift: 6,
    }
}

/// The namespace's default, and a built-in algorithm that is not it.
fn default_and_other() -> (String, &'static str) {
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap()
        .trim()
        .to_string();
    let other = if default == "reno" { "cubic" } else { "reno" };
    (default, other)
}

/// Reports until `done` says enough, or 5 s.
fn reports_until(p: &Program, done: impl Fn(&[Report]) -> bool) -> Vec<Report> {
    let mut got = Vec::new();
    let start = Instant::now();
    while !done(&got) && start.elapsed() < Duration::from_secs(5) {
        for r in p.poll(Duration::from_millis(50)).unwrap() {
            got.push(r.unwrap());
        }
    }
    got
}

fn closed(rs: &[Report]) -> Vec<&Report> {
    rs.iter().filter(|r| r.kind == Kind::Closed).collect()
}

/// A connection from this process to `to`, its socket created while the
/// process is in `cg`.
fn connect_inside(cg: &Scratch, to: SocketAddr) -> TcpStream {
    cg.run(|| TcpStream::connect(to)).unwrap().unwrap()
}

/// Sends `bytes`, half-closes, and waits for the peer's close: when it
/// returns, everything was acknowledged.
fn send_and_close(mut s: TcpStream, rx: TcpStream, bytes: usize) {
    let sink = std::thread::spawn(move || {
        let mut rx = rx;
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0;
        while let Ok(n) = rx.read(&mut buf) {
            if n == 0 {
                break;
            }
            got += n;
        }
        drop(rx);
        got
    });
    let chunk = vec![0x5au8; 1 << 16];
    let mut sent = 0;
    while sent < bytes {
        let n = chunk.len().min(bytes - sent);
        s.write_all(&chunk[..n]).unwrap();
        sent += n;
    }
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(sink.join().unwrap(), bytes);
    let mut end = [0u8; 1];
    assert_eq!(s.read(&mut end).unwrap(), 0);
}

#[test]
fn the_program_sets_the_maps_algorithm_in_its_cgroup_only() {
    let _serial = serial();
    require!(skip_reason());
    let (default, other) = default_and_other();
    let cg = Scratch::new("test").unwrap();
    let mut p = Program::load(&settings()).unwrap();
    for a in [
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ] {
        p.set(peer_key(a), Some((other, 3, false))).unwrap();
    }
    p.attach(cg.path()).unwrap();
    for listen_on in ["127.0.0.1:0", "[::1]:0"] {
        let listener = TcpListener::bind(listen_on).unwrap();
        let to = listener.local_addr().unwrap();
        let inside = connect_inside(&cg, to);
        let outside = TcpStream::connect(to).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        let (accepted2, _) = listener.accept().unwrap();
        assert_eq!(
            congestion_of(&inside),
            other,
            "{listen_on}: inside the cgroup"
        );
        assert_eq!(
            congestion_of(&outside),
            default,
            "{listen_on}: outside the cgroup"
        );
        for a in [&accepted, &accepted2] {
            assert_eq!(congestion_of(a), default, "accepted by a listener outside");
        }
        let rs = reports_until(&p, |r| !r.is_empty());
        let opened: Vec<&Report> = rs.iter().filter(|r| r.kind == Kind::Opened).collect();
        assert_eq!(opened.len(), 1, "{listen_on}: only the inside one: {rs:?}");
        let r = opened[0];
        assert_eq!(
            (r.cc.as_str(), r.alg, r.set_err),
            (other, Some(3), 0),
            "{r:?}"
        );
        assert!(r.has(flag::ACTIVE) && r.has(flag::CHOSEN) && r.has(flag::SET));
        assert_eq!(kleinrock_select::addr(r.peer), to.ip());
        if listen_on.starts_with("127") {
            // Detached, as when the daemon dies: the tuned connection
            // keeps its algorithm, a new one gets the default.
            p.detach();
            let after = connect_inside(&cg, to);
            let _ = listener.accept().unwrap();
            assert_eq!(congestion_of(&after), default, "detached");
            assert_eq!(congestion_of(&inside), other, "kept");
            p.attach(cg.path()).unwrap();
        }
    }
    let s = p.stats();
    assert_eq!((s.lost, s.no_storage), (0, 0));
}

#[test]
fn reports_arrive_while_a_connection_runs_and_at_its_end_with_what_it_showed() {
    let _serial = serial();
    require!(skip_reason());
    let Some(lab) = common::lab(&LabConfig::symmetric(Link {
        delay: Duration::from_millis(10),
        rate_bps: Some(20_000_000),
        ..Link::default()
    })) else {
        return;
    };
    let cg = Scratch::new("test").unwrap();
    let mut p = Program::load(&Settings {
        report_ms: 100,
        ..settings()
    })
    .unwrap();
    p.attach(cg.path()).unwrap();
    let listener = lab
        .receiver()
        .run(|| TcpListener::bind((RECEIVER_ADDR, 0)))
        .unwrap()
        .unwrap();
    let to = listener.local_addr().unwrap();
    let tx = cg
        .run(|| lab.sender().run(move || TcpStream::connect(to)))
        .unwrap()
        .unwrap()
        .unwrap();
    let (rx, _) = listener.accept().unwrap();
    let bytes = 2_000_000;
    send_and_close(tx, rx, bytes);
    let rs = reports_until(&p, |r| !closed(r).is_empty());
    let end = closed(&rs);
    assert_eq!(end.len(), 1, "{rs:?}");
    let end = end[0];
    assert_eq!(end.bytes_acked, bytes as u64, "{end:?}");
    assert!(end.has(flag::COMPLETE), "{end:?}");
    // 10 ms each way: the minimum RTT is 20 ms plus the delay line's
    // lateness and the serialisation of a segment at 20 Mbit/s.
    assert!(
        (20_000..26_000).contains(&end.min_rtt_us),
        "min RTT {} us",
        end.min_rtt_us
    );
    assert!(end.srtt_us >= end.min_rtt_us, "{end:?}");
    assert!(end.segs_out as usize >= bytes / 1448, "{end:?}");
    // 2 MB at 20 Mbit/s (19.1 of goodput) take at least 0.8 s.
    assert!(end.age_us >= 800_000, "{end:?}");
    let rate = end.sample().mean_rate_bps;
    assert!((1_000_000..2_500_000).contains(&rate), "{rate} B/s");
    assert!(
        end.max_rate > 1_000_000 && end.max_rate <= 3_000_000,
        "{end:?}"
    );
    let samples: Vec<&Report> = rs.iter().filter(|r| r.kind == Kind::Sample).collect();
    assert!(samples.len() >= 4, "one per 100 ms: {}", samples.len());
    assert!(samples
        .windows(2)
        .all(|w| w[0].bytes_acked <= w[1].bytes_acked && w[0].age_us < w[1].age_us));
    assert!(samples.iter().all(|s| s.bytes_acked < bytes as u64));
    eprintln!(
        "tune: {} reports; at the end {} bytes acked, min RTT {} us, mean RTT {} us, {} segments, {} retransmitted",
        rs.len(),
        end.bytes_acked,
        end.min_rtt_us,
        end.srtt_us,
        end.segs_out,
        end.total_retrans
    );
}

/// The tests' own bpffs directory for the ports their daemons load.
fn test_pins() -> TunePins {
    TunePins {
        root: Paths::system()
            .bpffs
            .join(format!("kleinrock-tune-test-{}", std::process::id())),
    }
}

/// Unloads, when the test ends however it ends, the ports its daemons
/// loaded (as `kleinrock tune stop` does).
struct Ports;

impl Ports {
    /// The names unloaded.
    fn unload(&self) -> Vec<String> {
        let stopped = kleinrock_kernel::tune::daemon::stop(
            &std::env::temp_dir().join("kleinrock-tune-test-none"),
            &test_pins(),
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(stopped.daemon, None);
        stopped.unloaded.into_iter().map(|u| u.0).collect()
    }
}

impl Drop for Ports {
    fn drop(&mut self) {
        let _ = test_pins().unload_ports();
    }
}

fn options(candidates: Vec<Candidate>, cg: &Scratch) -> Options {
    let specs = candidates.iter().map(|c| c.spec.clone()).collect();
    let needs_ecn = candidates.iter().map(|c| c.needs_ecn).collect();
    Options {
        tuner: live::Config {
            policy: PolicyKind::Kleinrock,
            kleinrock: BanditConfig {
                candidates: specs,
                capacity: 1024,
                ..BanditConfig::default()
            },
            needs_ecn,
            ecn_allow: Vec::new(),
        },
        candidates,
        cgroup: cg.path().to_path_buf(),
        advise: false,
        report_every: Duration::ZERO,
        table: None,
        save_every: Duration::from_secs(3600),
        state_dir: None,
        pins: test_pins(),
        status_peers: 100,
    }
}

fn quiet() -> Box<dyn FnMut(&str)> {
    Box::new(|line: &str| eprintln!("tune: {line}"))
}

/// One short connection from inside `cg` to `listener`, stepped until the
/// daemon has seen it end; what it ran.
fn one_connection(d: &mut Daemon, cg: &Scratch, listener: &TcpListener) -> String {
    let ended = d.tuner().counts.closed;
    let tx = connect_inside(cg, listener.local_addr().unwrap());
    let (rx, _) = listener.accept().unwrap();
    let ran = congestion_of(&tx);
    send_and_close(tx, rx, 20_000);
    let start = Instant::now();
    while d.tuner().counts.closed == ended && start.elapsed() < Duration::from_secs(5) {
        d.step(Duration::from_millis(20)).unwrap();
    }
    assert_eq!(d.tuner().counts.closed, ended + 1, "the end was reported");
    ran
}

#[test]
fn a_set_the_kernel_refuses_is_recorded_and_not_retried_and_the_cdg_port_can_be_set() {
    let _serial = serial();
    require!(skip_reason());
    let (default, other) = default_and_other();
    let cg = Scratch::new("test").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let key = peer_key(IpAddr::V4(Ipv4Addr::LOCALHOST));
    // The kernel's own cdg, by name: no BPF program may set it.
    let specs = vec!["cdg".to_string(), other.to_string()];
    let mut cands = resolve(&specs, &[], &common::available()).unwrap();
    cands[0].name = "cdg".into();
    cands[0].port = None;
    let lines = std::rc::Rc::new(std::cell::RefCell::new(Vec::<String>::new()));
    let kept = lines.clone();
    let log = Box::new(move |l: &str| kept.borrow_mut().push(l.to_string()));
    let mut d = Daemon::start(options(cands, &cg), log).unwrap();
    let mut ran = Vec::new();
    let mut held = Vec::new();
    for _ in 0..6 {
        ran.push(one_connection(&mut d, &cg, &listener));
        held.push(d.program().get(key).map(|h| h.0));
    }
    // The first runs the default (nothing held); the daemon then proposes
    // cdg, untried; the kernel refuses it (the second runs the default
    // too), and from then on the other candidate is held and run.
    assert_eq!(ran[0], default);
    assert_eq!(held[0].as_deref(), Some("cdg"), "{held:?}");
    assert_eq!(ran[1], default, "{ran:?}");
    assert!(ran[2..].iter().all(|r| r == other), "{ran:?}");
    assert!(
        held[1..].iter().all(|h| h.as_deref() == Some(other)),
        "{held:?}"
    );
    assert_eq!(d.tuner().counts.failed, 1);
    let refused: Vec<String> = lines
        .borrow()
        .iter()
        .filter(|l| l.contains("was not set"))
        .cloned()
        .collect();
    assert_eq!(
        refused,
        ["127.0.0.1: cdg was not set (the kernel answered ENOTSUPP, 524); not proposed there for a while"]
    );
    let (status, _) = d.tuner().status(10);
    let cdg = status[0].algs.iter().find(|a| a.alg == 0).unwrap();
    assert!(cdg.unavailable && cdg.tally.failed == 1, "{cdg:?}");
    d.finish().unwrap();

    // The port, which the daemon loads (unless loaded already).
    let was_loaded = common::available().iter().any(|n| n == "kr_cdg");
    let cands = resolve(&["cdg".to_string()], &[], &common::available()).unwrap();
    assert_eq!(cands[0].name, "kr_cdg");
    let ports = Ports;
    let mut d = Daemon::start(options(cands, &cg), quiet()).unwrap();
    assert_eq!(d.loaded.is_empty(), was_loaded);
    one_connection(&mut d, &cg, &listener);
    assert_eq!(one_connection(&mut d, &cg, &listener), "kr_cdg");
    assert_eq!(d.tuner().counts.failed, 0);
    d.finish().unwrap();
    assert_eq!(ports.unload().len(), usize::from(!was_loaded));
    assert_eq!(
        common::available().iter().any(|n| n == "kr_cdg"),
        was_loaded,
        "stop unloads what the tuner loaded, and only that"
    );
    assert!(!test_pins().root.exists());
}

#[test]
fn advise_mode_learns_and_proposes_but_sets_nothing() {
    let _serial = serial();
    require!(skip_reason());
    let (default, other) = default_and_other();
    let cg = Scratch::new("test").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let key = peer_key(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let specs = vec![other.to_string(), default.clone()];
    let cands = resolve(&specs, &[], &common::available()).unwrap();
    let mut opts = options(cands, &cg);
    opts.advise = true;
    let mut d = Daemon::start(opts, quiet()).unwrap();
    for _ in 0..4 {
        assert_eq!(one_connection(&mut d, &cg, &listener), default);
    }
    assert!(d.program().get(key).is_some(), "a proposal is held");
    let c = &d.tuner().counts;
    assert_eq!((c.opened, c.closed), (4, 4));
    assert_eq!(c.set.iter().sum::<u64>(), 0);
    let (status, _) = d.tuner().status(10);
    // It learned what ran (the default, a candidate here).
    let learned = status[0].algs.iter().find(|a| a.alg == 1).unwrap();
    assert_eq!(learned.tally.conns, 4, "{status:?}");
    d.finish().unwrap();
}

#[test]
fn the_choices_map_is_an_lru_that_evicts_when_full() {
    let _serial = serial();
    require!(skip_reason());
    let p = Program::load(&Settings {
        capacity: 256,
        ..settings()
    })
    .unwrap();
    for i in 0..1000u32 {
        let a = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i));
        p.set(peer_key(a), Some(("reno", 0, false))).unwrap();
    }
    let last = peer_key(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + 999)));
    assert_eq!(p.get(last), Some(("reno".into(), 0)));
    let first = peer_key(IpAddr::V4(Ipv4Addr::from(0x0a00_0000)));
    assert_eq!(p.get(first), None, "evicted");
    for capacity in [65_536, 1 << 20] {
        let p = Program::load(&Settings {
            capacity,
            ..settings()
        })
        .unwrap();
        eprintln!(
            "tune: the program's maps with a capacity of {capacity} peers are charged {} bytes",
            p.map_memory()
        );
    }
}

#[test]
fn bpftunes_retransmission_rule_switches_a_lossy_connection_to_bbr() {
    let _serial = serial();
    require!(skip_reason());
    let Some(lab) = common::lab(&LabConfig {
        forward: Link {
            delay: Duration::from_millis(5),
            loss: 0.1,
            ..Link::default()
        },
        reverse: Link {
            delay: Duration::from_millis(5),
            ..Link::default()
        },
        ..LabConfig::symmetric(Link::default())
    }) else {
        return;
    };
    let cg = Scratch::new("test").unwrap();
    let cands = resolve(
        &kleinrock_select::bpftune::CONGS.map(String::from),
        &["dctcp".to_string()],
        &common::available(),
    )
    .unwrap();
    let ports = Ports;
    let mut opts = options(cands, &cg);
    opts.tuner.policy = PolicyKind::Bpftune;
    let mut d = Daemon::start(opts, quiet()).unwrap();
    let listener = lab
        .receiver()
        .run(|| TcpListener::bind((RECEIVER_ADDR, 0)))
        .unwrap()
        .unwrap();
    let to = match listener.local_addr().unwrap() {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => unreachable!(),
    };
    // A host bpftune has not seen: nothing is chosen, the connection runs
    // what it asked for (reno), until its retransmissions pass 1/64 of
    // its segments.
    let tx = cg
        .run(|| lab.sender().run(move || common::connect_to("reno", to)))
        .unwrap()
        .unwrap();
    let (rx, _) = listener.accept().unwrap();
    send_and_close(tx, rx, 1_000_000);
    let start = Instant::now();
    while d.tuner().counts.closed == 0 && start.elapsed() < Duration::from_secs(5) {
        d.step(Duration::from_millis(20)).unwrap();
    }
    let c = &d.tuner().counts;
    assert_eq!((c.opened, c.closed, c.switched), (1, 1, 1), "{c:?}");
    let (status, _) = d.tuner().status(10);
    let bbr = &status[0].algs[kleinrock_select::bpftune::BBR];
    assert_eq!(bbr.tally.conns, 1, "it ended on BBR: {status:?}");
    assert!(bbr.tally.retrans > 0);
    let mut loaded = d.loaded.clone();
    loaded.sort();
    d.finish().unwrap();
    let unloaded = ports.unload();
    assert_eq!(unloaded, loaded, "stop unloads what the daemon loaded");
}

#[test]
fn an_algorithm_that_needs_ecn_is_set_only_where_ecn_was_negotiated() {
    let _serial = serial();
    require!(skip_reason());
    let Some(lab) = common::lab(&LabConfig::symmetric(Link::default())) else {
        return;
    };
    let (default, other) = default_and_other();
    let cg = Scratch::new("test").unwrap();
    let mut p = Program::load(&settings()).unwrap();
    // Entries that need ECN (as DCTCP's do), for both ends, naming an
    // algorithm whose being set is plain to see.
    for a in [RECEIVER_ADDR, kleinrock_lab::SENDER_ADDR] {
        p.set(peer_key(IpAddr::V4(a)), Some((other, 6, true)))
            .unwrap();
    }
    p.attach(cg.path()).unwrap();
    let listen = || {
        lab.receiver()
            .run(|| TcpListener::bind((RECEIVER_ADDR, 0)))
            .unwrap()
            .unwrap()
    };
    let connect = |to: SocketAddr| {
        cg.run(|| lab.sender().run(move || TcpStream::connect(to)))
            .unwrap()
            .unwrap()
            .unwrap()
    };
    // The program asks for ECN as DCTCP does, with an ECT SYN, which only
    // a listener that needs ECN too accepts: here one in the cgroup, whose
    // entry for the sender needs it.
    let tuned = cg.run(listen).unwrap();
    let both = connect(tuned.local_addr().unwrap());
    let (accepted, _) = tuned.accept().unwrap();
    assert!(common::tcp_info(&both).tcpi_options & common::TCPI_OPT_ECN != 0);
    assert_eq!(congestion_of(&both), other, "ECN negotiated: set");
    assert_eq!(congestion_of(&accepted), other, "and at the passive end");
    let rs = reports_until(&p, |r| r.len() >= 2);
    assert!(
        rs.iter().all(|r| r.has(flag::ECN) && r.has(flag::SET)),
        "{rs:?}"
    );
    // A listener outside, as any host's that does not run DCTCP: it
    // refuses ECN for an ECT SYN, and nothing is set.
    let plain = listen();
    let refused = connect(plain.local_addr().unwrap());
    let _b = plain.accept().unwrap();
    assert_eq!(congestion_of(&refused), default, "no ECN: not set");
    let rs = reports_until(&p, |r| !r.is_empty());
    assert_eq!(rs.len(), 1, "{rs:?}");
    assert!(!rs[0].has(flag::ECN) && !rs[0].has(flag::SET) && rs[0].has(flag::NO_ECN));
    assert_eq!(rs[0].outcome(), kleinrock_select::live::Outcome::NoEcn);
}
