//! Traces real kernel connections and replays them into the Rust
//! reference: our BPF ports (kr_*) and the kernel's own algorithms through
//! their wrappers (kn_*) must agree with crates/cc bit for bit.
//!
//! Loopback, paced by iperf3 so that the trace ring never overflows: this
//! covers slow start, congestion avoidance, HyStart and idle restarts. Loss
//! recovery, RTO and ECN need a lossy, marking path: those cases run in the
//! lab (tests/conformance.rs).
//!
//! Needs root, bpffs and iperf3; otherwise it says why and skips, or fails
//! where that is required (kleinrock_testkit).

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kleinrock_cc::Algorithm;
use kleinrock_kernel::pins::Paths;
use kleinrock_kernel::plan::plan;
use kleinrock_kernel::trace::{run, Request};
use kleinrock_trace::TraceReader;

/// An `iperf3 -s -1`, killed when dropped so that a failing test leaves no
/// server behind.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn iperf3_server(port: u16) -> Server {
    let child = Command::new("iperf3")
        .args(["-s", "-1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 -s");
    // iperf3 listens within milliseconds; give it a moment.
    std::thread::sleep(Duration::from_millis(300));
    Server(child)
}

/// Traces `cc` while iperf3 sends for `secs` at `rate`, replays the busiest
/// connection's trace and returns the rows replayed per hook.
fn trace_and_replay(cc: &str, dir: &Path, secs: u32, rate: &str) -> Vec<(String, u64)> {
    let port = common::free_port();
    let _server = iperf3_server(port);
    let out = dir.join(format!("{cc}.csv.gz"));
    let command: Vec<String> = [
        "sh",
        "-c",
        &format!(
            "iperf3 -c 127.0.0.1 -p {port} -t {secs} -b {rate} -C \"$KLEINROCK_CC\" >/dev/null"
        ),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let req = Request {
        cc,
        out: &out,
        command: Some(&command),
    };
    let report = run(&req, &mut |_, _| {}).unwrap_or_else(|e| panic!("trace {cc}: {e}"));
    let busiest = common::busiest_of(&report, cc);
    assert!(busiest.rows > 200, "{cc}: only {} rows", busiest.rows);
    let reference: Algorithm = report.replay_spec.parse().unwrap();
    let replayed = kleinrock_trace::replay(&busiest.path, reference, report.hz, &mut |_| {})
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(
        replayed.agrees(),
        "{cc} diverges from {}:\n{replayed}",
        report.replay_spec
    );
    replayed
        .per_hook
        .iter()
        .map(|(h, c)| (h.to_string(), c.rows))
        .collect()
}

fn rows_of(per_hook: &[(String, u64)], hook: &str) -> u64 {
    per_hook
        .iter()
        .find(|(h, _)| h == hook)
        .map_or(0, |(_, n)| *n)
}

/// The hook that carries an algorithm's window: BBR runs through
/// cong_control, the others through cong_avoid.
fn main_hook(spec: &str) -> &'static str {
    if spec.starts_with("bbr") {
        "cong_control"
    } else {
        "cong_avoid"
    }
}

#[test]
fn kernel_traces_replay_into_the_rust_reference_with_zero_divergence() {
    kleinrock_testkit::require!(common::skip_reason().or_else(common::iperf3));
    let dir = std::env::temp_dir().join(format!("kleinrock-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ports = [
        ("reno", "krt_tr_reno"),
        ("cubic", "krt_tr_cubic"),
        ("cubic:hystart=hspp", "krt_tr_hspp"),
        ("cubic:friendly=newreno", "krt_tr_nr"),
        ("cubic:friendly=eq4", "krt_tr_eq4"),
        ("cubic:hystart=off", "krt_tr_nohs"),
        ("reno:hystart=hspp", "krt_tr_rhspp"),
        ("bbr", "krt_tr_bbr"),
        ("htcp", "krt_tr_htcp"),
        ("vegas", "krt_tr_vegas"),
        ("cdg", "krt_tr_cdg"),
    ];
    for (spec, name) in ports {
        let _ = Paths::system().unload(name, Duration::from_secs(2));
        kleinrock_kernel::load(&plan(spec, Some(name)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    }
    for (spec, name) in ports {
        let hooks = trace_and_replay(name, &dir, 2, "200M");
        assert_eq!(rows_of(&hooks, "init"), 1, "{spec}: {hooks:?}");
        assert!(rows_of(&hooks, main_hook(spec)) > 100, "{spec}: {hooks:?}");
    }
    // The kernel's own algorithms, through wrappers loaded for the trace.
    for cc in ["reno", "cubic", "bbr"] {
        let hooks = trace_and_replay(cc, &dir, 2, "200M");
        assert!(rows_of(&hooks, main_hook(cc)) > 100, "{cc}: {hooks:?}");
    }
    for (_, name) in ports {
        let _ = Paths::system().unload(name, Duration::from_secs(2));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Unloads a test instance when dropped, so that a failing test leaves
/// nothing loaded.
struct Loaded(&'static str);

impl Drop for Loaded {
    fn drop(&mut self) {
        let _ = Paths::system().unload(self.0, Duration::from_secs(2));
    }
}

/// What a kr_cdg trace shows of the port's own CWR.
#[derive(Debug, Default)]
struct OwnCwr {
    /// Rows where it begins (`in_cwr` 0 to 1 within a `cong_avoid`).
    began: u32,
    /// Of those, the backoffs that lowered cwnd: at a cwnd of 2 the
    /// threshold is 2 as well, and the window stays.
    cut: u32,
    /// Rows where it ends (1 to 0).
    ended: u32,
}

/// Reads the port's own CWR from a kr_cdg trace, checking that each
/// backoff sets ssthresh to `max(2, cwnd * beta >> 10)` and cwnd to it.
fn own_cwr_edges(path: &Path) -> OwnCwr {
    let mut t = TraceReader::open(path).unwrap();
    let col = |t: &TraceReader, name: &str| t.column(name).unwrap_or_else(|| panic!("{name}"));
    let [hook, pre, post, pre_cwnd, cwnd, ssthresh] = [
        "hook",
        "pre_ca_in_cwr",
        "post_ca_in_cwr",
        "pre_snd_cwnd",
        "post_snd_cwnd",
        "post_snd_ssthresh",
    ]
    .map(|c| col(&t, c));
    // The default instance's: a backoff's threshold is
    // `max(2, cwnd * backoff_beta >> 10)`.
    let beta = i128::from(kleinrock_cc::cdg::CdgParams::default().backoff_beta);
    let mut seen = OwnCwr::default();
    while let Some(row) = t.next_row().unwrap() {
        let c = t.cells();
        match (c[pre], c[post]) {
            (Some(0), Some(1)) => {
                assert_eq!(t.text(hook), "cong_avoid", "row {}", row.index);
                let before = c[pre_cwnd].unwrap();
                let threshold = ((before * beta) >> 10).max(2);
                assert_eq!(c[ssthresh], Some(threshold), "row {}: ssthresh", row.index);
                assert_eq!(
                    c[cwnd],
                    Some(before.min(threshold)),
                    "row {}: cwnd not cut to ssthresh",
                    row.index
                );
                seen.began += 1;
                seen.cut += u32::from(threshold < before);
            }
            (Some(1), Some(0)) => seen.ended += 1,
            _ => {}
        }
    }
    seen
}

/// A kr_cdg connection through a queue that only grows (a 50 Mbit/s tbf on
/// loopback, in a network namespace of the test's own that vanishes with
/// its thread) backs off on the delay gradient, running the port's own
/// CWR; its trace replays with zero divergence against `cdg:cwr=own`, the
/// spec the trace session names, and diverges from the kernel's CWR
/// (`cdg`).
///
/// A host that stalls the sender can leave a run whose backoffs all came
/// at a cwnd of 2 (after a timeout), which cut nothing: such a run is
/// traced again, up to three times, and each attempt's replay is checked.
#[test]
fn a_cdg_backoff_replays_against_the_ports_own_cwr() {
    kleinrock_testkit::require!(common::skip_reason()
        .or_else(common::missing_tools)
        .or_else(common::iperf3));
    const NAME: &str = "krt_tr_cdgq";
    const ATTEMPTS: u32 = 3;
    let _ = Paths::system().unload(NAME, Duration::from_secs(2));
    kleinrock_kernel::load(&plan("cdg", Some(NAME)).unwrap()).unwrap_or_else(|e| panic!("{e}"));
    let _loaded = Loaded(NAME);
    let dir = std::env::temp_dir().join(format!("kleinrock-cdg-backoff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for attempt in 1..=ATTEMPTS {
        let out = dir.join(format!("cdg-{attempt}.csv.gz"));
        // The struct_ops algorithm is global; the path, the server and the
        // traced command (spawned from this thread) are the namespace's.
        let report = common::in_new_netns(&[], move || {
            common::bottleneck_loopback(50);
            let port = common::free_port();
            let _server = iperf3_server(port);
            // -w keeps the queue below the smallest RTO, so no timer fires.
            let command: Vec<String> = [
                "sh".to_string(),
                "-c".to_string(),
                format!(
                    "iperf3 -c 127.0.0.1 -p {port} -t 3 -w 256K -C \"$KLEINROCK_CC\" >/dev/null"
                ),
            ]
            .into();
            run(
                &Request {
                    cc: NAME,
                    out: &out,
                    command: Some(&command),
                },
                &mut |_, _| {},
            )
        })
        .unwrap_or_else(|e| panic!("trace {NAME}: {e}"));
        assert_eq!(report.replay_spec, "cdg:cwr=own");
        let sender = common::busiest_of(&report, NAME);
        let seen = own_cwr_edges(&sender.path);
        eprintln!(
            "{NAME} attempt {attempt}: {} rows, {seen:?} backoffs into the port's CWR",
            sender.rows
        );
        assert!(seen.began >= 1, "no backoff in {} rows", sender.rows);
        assert!(
            seen.ended + 1 >= seen.began,
            "{} begun, {} ended",
            seen.began,
            seen.ended
        );
        let replay = |spec: &str| {
            kleinrock_trace::replay(&sender.path, spec.parse().unwrap(), report.hz, &mut |_| {})
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let own = replay(&report.replay_spec);
        assert!(own.agrees(), "{own}");
        if seen.cut == 0 {
            assert!(attempt < ATTEMPTS, "no backoff cut cwnd in {ATTEMPTS} runs");
            continue;
        }
        let kernel = replay("cdg");
        assert!(
            !kernel.agrees(),
            "the kernel's CWR replays a backoff of the port's"
        );
        break;
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
