//! Traces real kernel connections and replays them into the Rust
//! reference: our BPF ports (kr_*) and the kernel's own algorithms through
//! their wrappers (kn_*) must agree with crates/cc bit for bit.
//!
//! Loopback, paced by iperf3 so that the trace ring never overflows: this
//! covers slow start, congestion avoidance, HyStart and idle restarts. Loss
//! recovery, RTO and ECN need a lossy, marking path: those cases run in the
//! lab (tests/conformance.rs).
//!
//! Needs root, bpffs and iperf3; otherwise it says why and skips.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use kleinrock_cc::Algorithm;
use kleinrock_kernel::pins::Paths;
use kleinrock_kernel::plan::plan;
use kleinrock_kernel::trace::{run, Request};

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
    assert!(
        report.command_status.is_some_and(|s| s.success()),
        "{cc}: iperf3 failed"
    );
    assert_eq!(report.lost, 0, "{cc}: records lost");
    assert_eq!(report.summary.undecodable, 0, "{cc}: {:?}", report.summary);
    let busiest = report
        .summary
        .files
        .iter()
        .max_by_key(|f| f.rows)
        .unwrap_or_else(|| panic!("{cc}: no connection traced: {:?}", report.summary));
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
    if let Some(why) = common::skip_reason() {
        eprintln!("trace test skipped: {why}");
        return;
    }
    if Command::new("iperf3").arg("--version").output().is_err() {
        eprintln!("trace test skipped: iperf3 is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("kleinrock-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ports = [
        ("reno", "krt_tr_reno"),
        ("cubic", "krt_tr_cubic"),
        ("cubic:hystart=hspp", "krt_tr_hspp"),
        ("cubic:friendly=newreno", "krt_tr_nr"),
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
