//! `kleinrock lab` and `kleinrock compare --engine`: refusals (no root
//! needed), and as root the results' layout, a CoDel queue's sojourn in
//! queues.csv, a comparison in both engines with both queue series, and
//! what a stopped or killed run leaves behind: nothing after SIGINT,
//! and nothing once the next run has swept a kill -9's namespaces and
//! ports. The root tests skip through kleinrock-testkit without root (a failure
//! where KLEINROCK_REQUIRE asks for root); run them with
//! the live-test lock held (`flock /tmp/kleinrock-live-tests.lock cargo
//! test -p kleinrock --test lab`).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{kleinrock, scenarios, text, tmpdir};

/// One lab at a time in this process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn root() -> bool {
    kleinrock_testkit::require(kleinrock_testkit::root())
}

/// A scenario file in `dir` running `cc` for `duration`, at the running
/// kernel's HZ.
fn scenario(dir: &Path, name: &str, cc: &str, duration: &str) -> PathBuf {
    let hz = kleinrock_kernel::trace::kernel_hz().unwrap_or(250);
    let path = dir.join(format!("{name}.toml"));
    fs::write(
        &path,
        format!(
            "duration = \"{duration}\"\n[tcp]\nhz = {hz}\n[link]\nrate = \"10Mbit\"\nqueue = 50\n\
             [[flow]]\ncc = \"{cc}\"\nrtt = \"20ms\"\n[[ping]]\nrtt = \"20ms\"\n"
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_key_the_lab_cannot_honour_is_refused_in_one_sentence_before_anything_runs() {
    let dir = tmpdir("lab-refuses");
    let s = scenario(&dir, "deep", "cubic", "2s");
    let text_of = fs::read_to_string(&s).unwrap();
    fs::write(&s, text_of.replace("queue = 50", "queue = 20000")).unwrap();
    let o = kleinrock(&[
        "lab",
        s.to_str().unwrap(),
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(
        err,
        format!(
            "error: {}: the lab cannot honour `queue` (a limit of 20000 packets on the up link) with its `rate` and paths: the queue and 9 packets in flight need more than the delay line's 16384 slots per direction; use a shorter queue, a lower rate or a shorter RTT\n",
            s.display()
        )
    );
    assert!(!dir.join("out").exists(), "nothing written");
    // compare refuses it too, naming the run, and a lab spelling with the
    // simulator alone.
    let o = kleinrock(&[
        "compare",
        s.to_str().unwrap(),
        "--cc",
        "cubic",
        "--engine",
        "lab",
    ]);
    let (_, err) = text(&o);
    assert!(
        err.starts_with(&format!(
            "error: {} with cubic: the lab cannot honour `queue`",
            s.display()
        )),
        "{err}"
    );
    // A shipped scenario at another HZ than the kernel's.
    if kleinrock_kernel::trace::kernel_hz().is_some_and(|hz| hz != 100) {
        let e2 = scenarios().join("e2-hz-loss-1G-500us.toml");
        let (_, err) = text(&kleinrock(&["lab", e2.to_str().unwrap()]));
        assert!(
            err.starts_with(&format!(
                "error: {}: the lab cannot honour `hz` = 100",
                e2.display()
            )),
            "{err}"
        );
    }
    let plain = scenario(&dir, "plain", "cubic", "2s");
    let o = kleinrock(&["compare", plain.to_str().unwrap(), "--cc", "port:cubic"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: `port:cubic` chooses which code runs the algorithm in the lab"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn without_root_the_lab_says_what_is_missing() {
    let dir = tmpdir("lab-unprivileged");
    let s = scenario(&dir, "s", "cubic", "2s");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut c = if root {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_kleinrock"),
        ]);
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_kleinrock"))
    };
    if root && !kleinrock_testkit::require(kleinrock_testkit::installed("setpriv", "util-linux")) {
        return;
    }
    let o = c
        .args(["lab", s.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: kleinrock lab needs root and this process is not: it lacks CAP_SYS_ADMIN (network namespaces), CAP_NET_ADMIN (devices, routes and rules); run it with sudo"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn lab_writes_what_sim_writes_for_each_seed() {
    if !root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("lab-out");
    let s = scenario(&dir, "s", "reno", "1s");
    let out = dir.join("out");
    let o = kleinrock(&[
        "lab",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--seeds",
        "1,2",
        "--quiet",
    ]);
    let (stdout, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for seed in [1, 2] {
        let run = out.join(format!("s-seed{seed}"));
        assert!(
            stdout.contains(&format!(
                "== s-seed{seed} (seed {seed}, 1.0 s on Linux TCP in the lab)"
            )),
            "{stdout}"
        );
        let mut files: Vec<String> = fs::read_dir(&run)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "flows.csv",
                "pings.csv",
                "queues.csv",
                "results.json",
                "summary.csv"
            ]
        );
        let flows = fs::read_to_string(run.join("flows.csv")).unwrap();
        assert_eq!(flows.lines().count(), 1 + 10, "a sample every 100 ms");
    }
}

/// `kleinrock lab` on `s` with `--out`, timed: its output directory, and
/// whether the host was quiet enough to judge accuracy (the lab's
/// StealMeter, as crates/live's tests judge it).
fn lab_run(s: &Path, out: &Path, what: &str) -> (PathBuf, bool) {
    let steal = kleinrock_lab::StealMeter::start().unwrap();
    let o = kleinrock(&[
        "lab",
        s.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let stolen = steal.share().unwrap();
    let quiet = stolen < kleinrock_lab::QUIET_STEAL;
    eprintln!(
        "host stole {:.1}% of the CPU: accuracy {}",
        stolen * 100.0,
        if quiet { "checked" } else { "not checked" }
    );
    kleinrock_testkit::timing(what, quiet);
    (out.join(s.file_stem().unwrap()), quiet)
}

/// queues.csv's rows of `link`: (t, packets, delay_us, drops, marks).
fn queue_rows(run: &Path, link: &str) -> Vec<(f64, u64, u64, u64, u64)> {
    let csv = fs::read_to_string(run.join("queues.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("t,link,packets,bytes,delay_us,drops,marks")
    );
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[1] == link)
        .map(|c| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            (c[0].parse().unwrap(), n(2), n(4), n(5), n(6))
        })
        .collect()
}

#[test]
fn codel_keeps_a_kernel_flows_sojourn_near_its_target_in_queues_csv() {
    if !root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("lab-codel");
    let hz = kleinrock_kernel::trace::kernel_hz().unwrap_or(250);
    let s = dir.join("codel.toml");
    fs::write(
        &s,
        format!(
            "duration = \"4s\"\nsample_interval = \"10ms\"\n[tcp]\nhz = {hz}\n\
             [link]\nrate = \"10Mbit\"\nqueue = {{ kind = \"codel\" }}\n\
             [[flow]]\ncc = \"cubic\"\nrtt = \"20ms\"\n"
        ),
    )
    .unwrap();
    let (run, quiet) = lab_run(&s, &dir.join("out"), "CoDel's sojourn in the lab");
    let up = queue_rows(&run, "up");
    assert_eq!(up.len(), 400, "a row every 10 ms");
    // The queue's delay at its rate, every 10 ms after the first second
    // (slow start's overshoot is CoDel's first interval).
    let mut delays: Vec<f64> = up
        .iter()
        .filter(|r| r.0 > 1.0)
        .map(|r| r.2 as f64 / 1000.0)
        .collect();
    delays.sort_by(f64::total_cmp);
    let (median, p95) = (delays[delays.len() / 2], delays[delays.len() * 95 / 100]);
    let drops: u64 = up.iter().map(|r| r.3).sum();
    eprintln!("queueing delay median {median:.1} ms, p95 {p95:.1} ms; CoDel dropped {drops}");
    // Nothing but CoDel drops here: its drops are the link's, and a
    // cubic flow that never stops growing its window meets them.
    let results: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let link = &results["links"]["up"];
    assert_eq!(link["queue_drops"].as_u64(), Some(drops), "{link}");
    assert_eq!(link["loss_drops"].as_u64(), Some(0), "{link}");
    assert!(drops > 0);
    if quiet {
        // CoDel's target is 5 ms: the queue stands near it, far below the
        // 1000 packets (1.2 s) it could hold.
        assert!((1.0..12.5).contains(&median), "{median}");
        assert!(p95 < 25.0, "{p95}");
    }
}

#[test]
fn compare_in_both_engines_sets_the_simulator_against_the_kernel() {
    if !root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("lab-both");
    let s = scenario(&dir, "s", "cubic", "2s");
    let out = dir.join("report");
    let o = kleinrock(&[
        "compare",
        s.to_str().unwrap(),
        "--cc",
        "cubic,reno",
        "--engine",
        "both",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let (stdout, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // The table: a row per engine for each algorithm.
    for (spec, engine) in [
        ("cubic", "sim"),
        ("cubic", "lab"),
        ("reno", "sim"),
        ("reno", "lab"),
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().take(2).eq([spec, engine])),
            "{spec} {engine}: {stdout}"
        );
    }
    let page = fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("<h2>Simulator against the real kernel</h2>"));
    assert!(page.contains("Throughput over time, both engines"));
    for run in [
        "cubic_seed1",
        "cubic_seed1_lab",
        "reno_seed1",
        "reno_seed1_lab",
    ] {
        assert!(
            out.join("runs").join(run).join("results.json").is_file(),
            "{run}"
        );
        assert!(
            out.join("runs").join(format!("{run}.flent.gz")).is_file(),
            "{run}"
        );
    }
    // Both engines' queue series, overlaid: the bottleneck's queue in
    // each run's results, and the figure that sets them side by side.
    assert!(page.contains("Queueing delay over time, both engines"));
    for run in ["cubic_seed1", "cubic_seed1_lab"] {
        let results: serde_json::Value = serde_json::from_str(
            &fs::read_to_string(out.join("runs").join(run).join("results.json")).unwrap(),
        )
        .unwrap();
        let up: Vec<&serde_json::Value> = results["queue_series"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|q| q["link"] == "up")
            .collect();
        assert_eq!(up.len(), 20, "{run}: a sample every 100 ms");
        let deepest = up.iter().filter_map(|q| q["delay_us"].as_u64()).max();
        assert!(deepest > Some(0), "{run}: no queue in {up:?}");
    }
    let csv = fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().ends_with(",run,engine"),
        "{csv}"
    );
    assert_eq!(
        csv.lines().filter(|l| l.ends_with(",lab")).count(),
        2,
        "{csv}"
    );
    assert_eq!(
        csv.lines().filter(|l| l.ends_with(",sim")).count(),
        2,
        "{csv}"
    );
}

/// The lab namespaces and ports a `kleinrock` process with `pid` made.
fn leftovers(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    let ns = format!("krlab-{pid}-");
    if let Ok(d) = fs::read_dir("/var/run/netns") {
        out.extend(
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&ns)),
        );
    }
    let port = format!("klab{}_", base36(pid));
    let available =
        fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    out.extend(
        available
            .split_whitespace()
            .filter(|n| n.starts_with(&port))
            .map(String::from),
    );
    if let Ok(d) = fs::read_dir("/sys/fs/bpf/kleinrock") {
        out.extend(
            d.flatten()
                .map(|e| format!("pin {}", e.file_name().to_string_lossy()))
                .filter(|n| n.starts_with(&format!("pin {port}"))),
        );
    }
    out
}

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

/// `kleinrock lab` on a 10-second scenario, once its lab and (with a BPF
/// build) its port exist: the child, and whether a port was loaded.
fn started(dir: &Path) -> (Child, bool) {
    // The port shows that a loaded algorithm is removed too; a build
    // without BPF (a skip of that part, or a failure where required) runs
    // the kernel's cubic.
    let cc = if kleinrock_testkit::require(kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD)) {
        "cdg"
    } else {
        "cubic"
    };
    let s = scenario(dir, cc, cc, "10s");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(["lab", s.to_str().unwrap(), "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let want = if cc == "cdg" { 5 } else { 3 };
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        // Three namespaces, and the port's name and its pin.
        if leftovers(pid).len() == want {
            // Into the run proper.
            std::thread::sleep(Duration::from_secs(1));
            return (child, cc == "cdg");
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("no lab appeared for kleinrock lab: {:?}", leftovers(pid));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    panic!(
        "kleinrock lab {cc} ended before its run: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn wait(mut child: Child) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn sigint_stops_the_run_and_leaves_nothing_behind() {
    if !root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("lab-sigint");
    let (child, port) = started(&dir);
    let pid = child.id();
    // SAFETY: kill has no memory preconditions; pid is our child's.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGINT);
    }
    let o = wait(child);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains(
            "stopped by SIGINT: the run was stopped; its lab and the ports it loaded were removed"
        ),
        "{err}"
    );
    assert_eq!(leftovers(pid), Vec::<String>::new(), "port loaded: {port}");
}

#[test]
fn the_next_run_sweeps_what_a_kill_9_left() {
    if !root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("lab-kill9");
    let (mut child, port) = started(&dir);
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    // SIGKILL cannot be caught: the lab's namespaces (and the port) stay.
    let left = leftovers(pid);
    assert_eq!(left.len(), if port { 5 } else { 3 }, "{left:?}");
    let s = scenario(&dir, "next", "reno", "1s");
    let o = kleinrock(&["lab", s.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(leftovers(pid), Vec::<String>::new());
}

#[test]
fn two_labs_at_once_do_not_collide() {
    if !root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tmpdir("lab-two");
    let runs: Vec<Child> = ["a", "b"]
        .iter()
        .map(|name| {
            let s = scenario(&dir, name, "reno", "1s");
            let out = dir.join(format!("out-{name}"));
            Command::new(env!("CARGO_BIN_EXE_kleinrock"))
                .args([
                    "lab",
                    s.to_str().unwrap(),
                    "--out",
                    out.to_str().unwrap(),
                    "--quiet",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let pids: Vec<u32> = runs.iter().map(Child::id).collect();
    for (run, name) in runs.into_iter().zip(["a", "b"]) {
        let o = wait(run);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let summary =
            fs::read_to_string(dir.join(format!("out-{name}/{name}/summary.csv"))).unwrap();
        assert_eq!(summary.lines().count(), 2, "{summary}");
    }
    for pid in pids {
        assert_eq!(leftovers(pid), Vec::<String>::new());
    }
}
