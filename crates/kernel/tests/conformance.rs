//! Conformance through the lab's emulated link: real kernel TCP flows under
//! each ported algorithm, and the kernel's own reno, cubic and bbr through
//! their wrappers, traced hook by hook and replayed into the Rust
//! reference with zero divergence, on paths that make every hook work:
//!
//! - random loss (1% each way, iptables) for fast recovery, with the
//!   forward path blackholed for 1.2 s midway to force an RTO and its
//!   backoff;
//! - a loss-free path with a deep queue for HyStart's exits and
//!   HyStart++'s conservative slow start (cubic);
//! - the delay line's DCTCP-style marking bottleneck for dctcp's ECN.
//!
//! Each run checks that the trace holds what the path should have caused
//! (a recovery, an RTO, a HyStart exit, ECE-flagged ACKs), so a run that
//! silently missed the event cannot pass. Loopback runs (tests/trace.rs)
//! cover the rest.
//!
//! Needs root, bpffs, iperf3 and the lab's tools; otherwise it says why and
//! skips, or fails where that is required (kleinrock_testkit). Namespaces
//! are the lab's and go with it, even on failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use kleinrock_cc::hystart_pp::Phase;
use kleinrock_cc::Algorithm;
use kleinrock_kernel::pins::Paths;
use kleinrock_kernel::plan::plan;
use kleinrock_kernel::trace::{run, Request};
use kleinrock_lab::{
    Direction, Lab, LabConfig, Limit, Link, LinkConfig, Queue, QueueConfig, RECEIVER_ADDR,
    SENDER_ADDR,
};
use kleinrock_trace::TraceReader;

/// `in_ack_event` flag: the ACK carried ECE.
const CA_ACK_ECE: i128 = 4;
/// `icsk_ca_state` in Loss: after an RTO.
const TCP_CA_LOSS: i128 = 4;

/// What a run's emulated path does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Net {
    /// 1% loss each way and an RTO midway.
    LossAndRto,
    /// No loss, a queue deep enough for HyStart to see the delay rise and
    /// for HyStart++ to complete its CSS rounds.
    DeepQueue,
    /// The delay line's marking bottleneck, no loss.
    Marking,
}

fn lab_for(path: Net) -> Lab {
    let delay = Duration::from_millis(10);
    let config = match path {
        Net::LossAndRto => LabConfig::symmetric(Link {
            delay,
            rate_bps: Some(20_000_000),
            queue: Queue::Packets(100),
            loss: 0.01,
            ..Link::default()
        }),
        Net::DeepQueue => LabConfig::symmetric(Link {
            delay,
            rate_bps: Some(20_000_000),
            // HyStart++ enters CSS near 170 packets in flight here and
            // grows a quarter a round for six rounds (to about 650) before
            // it may leave for congestion avoidance: the queue must hold
            // that without a loss, which would end CSS instead.
            queue: Queue::Packets(1000),
            ..Link::default()
        }),
        Net::Marking => LabConfig {
            forward: Link {
                delay,
                bottleneck: Some(LinkConfig::new(
                    20_000_000,
                    QueueConfig::Fifo {
                        limit: Limit::Packets(200),
                        mark_at: Some(20),
                    },
                )),
                ..Link::default()
            },
            reverse: Link {
                delay,
                ..Link::default()
            },
            ..LabConfig::default()
        },
    };
    Lab::new(&config).unwrap_or_else(|e| panic!("lab: {e}"))
}

/// An iperf3 server in the receiver's namespace, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The hook and a few columns of every row of a trace, to check that the
/// path caused what it should have.
struct Rows {
    rows: Vec<(String, Vec<Option<i128>>)>,
    columns: Vec<String>,
}

impl Rows {
    fn read(path: &Path) -> Rows {
        let mut r = TraceReader::open(path).unwrap();
        let hook = r.column("hook").unwrap();
        let columns: Vec<String> = [
            "arg_u",
            "pre_snd_ssthresh",
            "post_snd_ssthresh",
            "pre_icsk_ca_state",
            "post_snd_cwnd",
            "pre_ca_hspp_phase",
            "post_ca_hspp_phase",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let idx: Vec<Option<usize>> = columns.iter().map(|c| r.column(c)).collect();
        let mut rows = Vec::new();
        while r.next_row().unwrap().is_some() {
            let cells = r.cells();
            let vals = idx.iter().map(|i| i.and_then(|i| cells[i])).collect();
            rows.push((r.text(hook).to_string(), vals));
        }
        Rows { rows, columns }
    }

    fn count(&self, hook: &str, column: &str, pred: impl Fn(i128) -> bool) -> usize {
        let c = self.columns.iter().position(|x| x == column).unwrap();
        self.rows
            .iter()
            .filter(|(h, v)| h == hook && v[c].is_some_and(&pred))
            .count()
    }

    /// Rows of any hook whose `column` satisfies `pred`.
    fn count_any(&self, column: &str, pred: impl Fn(i128) -> bool) -> usize {
        let c = self.columns.iter().position(|x| x == column).unwrap();
        self.rows
            .iter()
            .filter(|(_, v)| v[c].is_some_and(&pred))
            .count()
    }

    fn calls(&self, hook: &str) -> usize {
        self.rows.iter().filter(|(h, _)| h == hook).count()
    }

    /// Rows of `hook` during which ssthresh changed (HyStart's exit sets
    /// it from `pkts_acked`).
    fn ssthresh_set_by(&self, hook: &str) -> usize {
        self.rows
            .iter()
            .filter(|(h, v)| h == hook && v[1] != v[2])
            .count()
    }

    /// Rows in which HyStart++ went from phase `from` to `to`, as its
    /// private state (`hspp_phase`) shows them.
    fn hspp_phase_changes(
        &self,
        from: Phase,
        to: Phase,
    ) -> impl Iterator<Item = &(String, Vec<Option<i128>>)> {
        let c = |name: &str| self.columns.iter().position(|x| x == name).unwrap();
        let (pre, post) = (c("pre_ca_hspp_phase"), c("post_ca_hspp_phase"));
        self.rows
            .iter()
            .filter(move |(_, v)| v[pre] == Some(from as i128) && v[post] == Some(to as i128))
    }

    /// (times HyStart++ entered CSS, times it left CSS for congestion
    /// avoidance with its rounds done: in `pkts_acked`, ssthresh set to
    /// cwnd).
    fn css_entered_and_completed(&self) -> (usize, usize) {
        let c = |name: &str| self.columns.iter().position(|x| x == name).unwrap();
        let (ssthresh, cwnd) = (c("post_snd_ssthresh"), c("post_snd_cwnd"));
        let entered = self
            .hspp_phase_changes(Phase::SlowStart, Phase::Css)
            .count();
        let completed = self
            .hspp_phase_changes(Phase::Css, Phase::Done)
            .filter(|(h, v)| h == "pkts_acked" && v[ssthresh].is_some() && v[ssthresh] == v[cwnd])
            .count();
        (entered, completed)
    }
}

/// Traces `cc` (a loaded name, or `cubic`/`reno`/`bbr` for the kernel's
/// own) over `path` for `secs`; replays every connection's trace and
/// returns the rows of the sender's busiest.
fn trace_over(cc: &str, path: Net, secs: u32, dir: &Path) -> Rows {
    let lab = lab_for(path);
    let port = common::free_port();
    let traced = kleinrock_kernel::plan::Native::from_kernel_name(cc)
        .map(|_| format!("kn_{cc}"))
        .unwrap_or_else(|| cc.to_string());
    if path == Net::Marking {
        // DCTCP asks for ECN in the SYN only if it runs before connect, and
        // is granted it only by a listener that also needs ECN: name it on
        // both ends' routes, which connecting and accepted sockets take.
        for (node, via) in [
            (lab.sender(), kleinrock_lab::ROUTER_SENDER_SIDE_ADDR),
            (lab.receiver(), kleinrock_lab::ROUTER_RECEIVER_SIDE_ADDR),
        ] {
            let out = node
                .command("ip")
                .args(["route", "replace", "default", "via"])
                .arg(via.to_string())
                .args(["congctl", &traced])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{err}");
        }
    }
    let _server = Server(
        lab.receiver()
            .command("iperf3")
            .args(["-s", "-1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(300));
    let out: PathBuf = dir.join(format!("{cc}-{path:?}.csv.gz"));
    let netns = format!("--net=/var/run/netns/{}", lab.sender().name());
    let command: Vec<String> = [
        "nsenter",
        &netns,
        "iperf3",
        "-c",
        &RECEIVER_ADDR.to_string(),
        "-p",
        &port.to_string(),
        "-t",
        &secs.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut command = command;
    if path != Net::Marking {
        // iperf3 -C switches an established socket, which for DCTCP is too
        // late to ask for ECN in the SYN: there the route names it.
        command.extend(["-C".to_string(), traced.clone()]);
    }
    let req = Request {
        cc,
        out: &out,
        command: Some(&command),
    };
    let report = std::thread::scope(|s| {
        if path == Net::LossAndRto {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(2500));
                lab.set_blackhole(Direction::Forward, true).unwrap();
                std::thread::sleep(Duration::from_millis(1200));
                lab.set_blackhole(Direction::Forward, false).unwrap();
            });
        }
        run(&req, &mut |_, _| {}).unwrap_or_else(|e| panic!("trace {cc}: {e}"))
    });
    common::busiest_of(&report, &format!("{cc} over {path:?}"));
    // Every connection replays: the data sender's, and the receiver's
    // (whose hooks run DCTCP's CE state machine) and iperf3's control
    // connection.
    for f in &report.summary.files {
        let reference: Algorithm = report.replay_spec.parse().unwrap();
        let replayed = kleinrock_trace::replay(&f.path, reference, report.hz, &mut |_| {})
            .unwrap_or_else(|e| panic!("{cc}: {e}"));
        assert!(
            replayed.agrees(),
            "{cc} over {path:?}, {}, diverges from {}:\n{replayed}",
            f.conn,
            report.replay_spec
        );
    }
    let sender = report
        .summary
        .files
        .iter()
        .filter(|f| f.conn.saddr == SENDER_ADDR.octets())
        .max_by_key(|f| f.rows)
        .unwrap_or_else(|| panic!("{cc}: the sender was not traced: {:?}", report.summary));
    Rows::read(&sender.path)
}

/// What every test here needs: a kernel that loads ports, and iperf3.
/// (The lab needs root, which that includes; any error making one is a
/// failure.)
fn missing() -> Option<kleinrock_testkit::Missing> {
    common::skip_reason().or_else(common::iperf3)
}

struct Loaded(Vec<&'static str>);

impl Drop for Loaded {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = Paths::system().unload(name, Duration::from_secs(2));
        }
    }
}

fn load(ports: &[(&str, &'static str)]) -> Loaded {
    for (spec, name) in ports {
        let _ = Paths::system().unload(name, Duration::from_secs(2));
        kleinrock_kernel::load(&plan(spec, Some(name)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    }
    Loaded(ports.iter().map(|(_, n)| *n).collect())
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kleinrock-conf-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Loss recovery and an RTO, replayed with zero divergence, for every
/// window-based port and the kernel's reno and cubic.
#[test]
fn loss_recovery_and_rto_replay_exactly() {
    kleinrock_testkit::require!(missing());
    let dir = scratch("loss");
    let ports = [
        ("reno", "krc_reno"),
        ("cubic", "krc_cubic"),
        ("cubic:friendly=newreno", "krc_cubic_nr"),
        ("cubic:friendly=eq4", "krc_cubic_eq4"),
        ("htcp", "krc_htcp"),
        ("vegas", "krc_vegas"),
        ("cdg", "krc_cdg"),
    ];
    let _loaded = load(&ports);
    let names = ports.iter().map(|(_, n)| *n).chain(["reno", "cubic"]);
    for cc in names {
        // Not every algorithm has set_state (reno has not), so the evidence
        // is the TCP core's state as the hooks saw it: rows after an RTO
        // find it in Loss; each recovery, and the RTO, called ssthresh
        // once (the RTO's backoffs do not call it again).
        let in_loss = |rows: &Rows| rows.count_any("pre_icsk_ca_state", |s| s == TCP_CA_LOSS);
        // The 1% loss is drawn at random and the delay line and the
        // blackhole's timer run in user space: on a host stealing a
        // quarter of the CPU a run can crawl (0.3 Mbit/s of 20), lose too
        // few packets for a recovery besides the RTO, or start its data
        // after the blackhole. Such a run is no evidence either way (each
        // attempt's replay is still checked), so it is traced again, up
        // to three times.
        let mut rows = trace_over(cc, Net::LossAndRto, 6, &dir);
        for _ in 1..3 {
            if in_loss(&rows) > 0 && rows.calls("ssthresh") >= 3 {
                break;
            }
            eprintln!("{cc}: the run missed the RTO or a fast recovery; tracing again");
            rows = trace_over(cc, Net::LossAndRto, 6, &dir);
        }
        let in_loss = in_loss(&rows);
        assert!(in_loss > 0, "{cc}: no hook ran after an RTO");
        assert!(
            rows.calls("ssthresh") >= 3,
            "{cc}: {} ssthresh calls, so hardly a fast recovery besides the RTO",
            rows.calls("ssthresh")
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// BBR under loss and an RTO: our port and the kernel's, replayed with the
/// kernel's random draws taken from the trace.
#[test]
fn bbr_under_loss_and_rto_replays_exactly() {
    kleinrock_testkit::require!(missing());
    let dir = scratch("bbr");
    let _loaded = load(&[("bbr", "krc_bbr")]);
    for cc in ["krc_bbr", "bbr"] {
        let rows = trace_over(cc, Net::LossAndRto, 6, &dir);
        assert!(
            rows.count("set_state", "arg_u", |s| s == TCP_CA_LOSS) > 0,
            "{cc}: no RTO in the trace"
        );
        assert!(rows.calls("cong_control") > 1000, "{cc}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// HyStart's exit from slow start, ours and the kernel's, and HyStart++'s
/// entry into CSS and its exit to congestion avoidance.
#[test]
fn hystart_exits_replay_exactly() {
    kleinrock_testkit::require!(missing());
    let dir = scratch("hystart");
    let _loaded = load(&[("cubic", "krc_hs"), ("cubic:hystart=hspp", "krc_hspp")]);
    for cc in ["krc_hs", "cubic"] {
        let rows = trace_over(cc, Net::DeepQueue, 3, &dir);
        assert!(
            rows.ssthresh_set_by("pkts_acked") > 0,
            "{cc}: HyStart never set ssthresh"
        );
    }
    // HyStart++ must enter CSS on the queue's rising RTT and, its rounds
    // done, leave it for congestion avoidance. A host that delays ACKs
    // can make the RTT fall back below CSS's baseline each time, which
    // (rightly) sends it back to slow start: such a run is traced again,
    // up to three times, each attempt's replay checked.
    let mut rows = trace_over("krc_hspp", Net::DeepQueue, 3, &dir);
    for _ in 1..3 {
        let (entered, completed) = rows.css_entered_and_completed();
        if entered > 0 && completed > 0 {
            break;
        }
        eprintln!("krc_hspp: CSS entered {entered} times, completed {completed}; tracing again");
        rows = trace_over("krc_hspp", Net::DeepQueue, 3, &dir);
    }
    let (entered, completed) = rows.css_entered_and_completed();
    assert!(entered > 0, "krc_hspp: HyStart++ never entered CSS");
    // The initial slow start ends once: later ones are plain.
    assert_eq!(
        completed, 1,
        "krc_hspp: CSS entered {entered} times, left for congestion avoidance {completed} times"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// DCTCP through the marking bottleneck: ECE-flagged ACKs drive alpha and
/// the window, replayed with zero divergence.
#[test]
fn dctcp_ecn_replays_exactly() {
    kleinrock_testkit::require!(missing());
    let dir = scratch("dctcp");
    let _loaded = load(&[("dctcp", "krc_dctcp")]);
    let rows = trace_over("krc_dctcp", Net::Marking, 4, &dir);
    let ece = rows.count("in_ack_event", "arg_u", |f| f & CA_ACK_ECE != 0);
    assert!(ece > 10, "only {ece} ACKs carried ECE");
    assert!(rows.calls("ssthresh") > 0);
    std::fs::remove_dir_all(&dir).ok();
}
