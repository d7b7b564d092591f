//! `kleinrock tune` as a process (docs/TUNE.md): a bad configuration is
//! one sentence; without root, or without a daemon, one sentence; and, as
//! root with BPF in the build, the daemon killed with SIGKILL leaves the
//! connections it tuned working and new ones on the default, restarts
//! with its table as last saved, and `stop` saves, detaches and unloads
//! what it loaded. The live test attaches to a cgroup of its own (removed
//! after, even on failure) and marks its ports under a bpffs directory of
//! its own, so that it touches nothing an operator runs.

#[allow(dead_code)] // the helpers other test files use
mod common;

use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{kleinrock, text, tmpdir};
use kleinrock_kernel::tune::cgroup::Scratch;
use kleinrock_kernel::tune::names::TunePins;

#[test]
fn a_bad_configuration_is_refused_in_one_sentence() {
    let dir = tmpdir("tune-bad-config");
    let cfg = dir.join("tune.toml");
    for (body, expected) in [
        (
            "policy = \"kleinrock\"\nsave_interval = \"often\"\n",
            "line 2: `save_interval` = \"often\" is not a duration; write e.g. \"40ms\", \"1.5s\" or \"200us\"",
        ),
        (
            "candidates = [\"cubic\", \"nosuch\"]\n",
            "line 1: `candidates`: ",
        ),
        ("ecn_allow = [\"10.0.0.0/33\"]\n", "line 1: `ecn_allow`: "),
    ] {
        fs::write(&cfg, body).unwrap();
        let o = kleinrock(&["tune", "run", "--config", cfg.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{out}{err}");
        let prefix = format!("error: {} {expected}", cfg.display());
        assert!(err.starts_with(&prefix), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let o = kleinrock(&["tune", "run", "--config", "/nonexistent/tune.toml"]);
    let (_, err) = text(&o);
    assert!(
        err.starts_with("error: cannot read tune configuration /nonexistent/tune.toml"),
        "{err}"
    );
    let o = kleinrock(&["tune", "run", "--policy", "greedy", "--state-dir", "/tmp/x"]);
    let (_, err) = text(&o);
    assert_eq!(
        err,
        "error: --policy greedy is not a policy; give kleinrock or bpftune\n"
    );
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn status_and_stop_without_a_daemon_say_so() {
    let dir = tmpdir("tune-none");
    let o = kleinrock(&["tune", "status", "--state-dir", dir.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        err,
        format!(
            "error: no tuner has written a status in {}; start one with `kleinrock tune run`\n",
            dir.display()
        )
    );
    fs::remove_dir_all(dir).unwrap();
}

#[test]
fn without_root_the_tuner_says_what_is_missing() {
    // As root, drop to nobody for the call (setpriv, util-linux).
    let bin = env!("CARGO_BIN_EXE_kleinrock");
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut c = if root {
        kleinrock_testkit::require!(kleinrock_testkit::installed("setpriv", "util-linux"));
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    let state = std::env::temp_dir().join(format!("kleinrock-tune-nobody-{}", std::process::id()));
    let o = c
        .args(["tune", "run", "--state-dir"])
        .arg(&state)
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let hierarchy = kleinrock_kernel::tune::cgroup::hierarchy();
    let expected = if hierarchy.is_err() {
        "error: no cgroup v2 hierarchy is mounted"
    } else if kleinrock_kernel::CAN_LOAD {
        "error: tuning connections needs root"
    } else {
        "error: cannot tune connections: this kleinrock was built without"
    };
    assert!(err.starts_with(expected), "{err}");
    assert!(!state.exists(), "nothing written");
    // The sentence of a machine without cgroup v2, or of a build without
    // BPF, is checked above; the root check itself needs both.
    kleinrock_testkit::require(hierarchy.err().map(|e| {
        kleinrock_testkit::Missing::new("cgroup2", format!("the root check not reached: {e}"))
    }));
    kleinrock_testkit::require(kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD));
}

/// What the live test needs: root, BPF in the build, a cgroup v2.
fn live() -> Option<kleinrock_testkit::Missing> {
    kleinrock_testkit::bpf(kleinrock_kernel::CAN_LOAD).or_else(kleinrock_testkit::root)
}

/// Unloads, however the test ends, the ports its daemons loaded.
struct Ports(TunePins);

impl Drop for Ports {
    fn drop(&mut self) {
        let _ = self.0.unload_ports();
    }
}

/// The daemon, killed on drop if the test did not stop it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(cfg: &Path, cg: &Scratch, log: &Path) -> Running {
    let child = Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(["tune", "run", "--config"])
        .arg(cfg)
        .arg("--cgroup")
        .arg(cg.path())
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    Running(child)
}

fn status(state: &Path) -> Option<serde_json::Value> {
    let text = fs::read_to_string(state.join("status.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Waits up to 10 s for the status to satisfy `ok`.
fn wait_status(
    state: &Path,
    what: &str,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = Instant::now();
    loop {
        if let Some(s) = status(state).filter(|s| ok(s)) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what}: {:?}",
            status(state)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The connections the saved table counts for 127.0.0.1.
fn saved_conns(table: &Path) -> Option<u64> {
    let t = fs::read_to_string(table).ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("peer 127.0.0.1 "))
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
}

fn congestion_of(s: &TcpStream) -> String {
    use std::os::fd::AsRawFd;
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf and len are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A short connection from inside `cg`: 10 KB, then closed both ways.
fn short(cg: &Scratch, listener: &TcpListener) -> String {
    let mut tx = cg
        .run(|| TcpStream::connect(listener.local_addr().unwrap()))
        .unwrap()
        .unwrap();
    let (mut rx, _) = listener.accept().unwrap();
    let ran = congestion_of(&tx);
    tx.write_all(&[7u8; 10_000]).unwrap();
    tx.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    rx.read_to_end(&mut got).unwrap();
    assert_eq!(got.len(), 10_000);
    drop(rx);
    let _ = tx.read(&mut [0u8; 1]);
    ran
}

/// Sends and receives a little on an open connection: it still works.
fn still_works(a: &mut TcpStream, b: &mut TcpStream) {
    a.write_all(b"ping").unwrap();
    let mut buf = [0u8; 4];
    b.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ping");
}

#[test]
fn a_killed_daemon_leaves_connections_working_and_restarts_with_its_saved_table() {
    kleinrock_testkit::require!(live());
    let dir = tmpdir("tune-kill");
    let state = dir.join("state");
    let table = dir.join("table");
    let pins = PathBuf::from(format!(
        "/sys/fs/bpf/kleinrock-tune-clitest-{}",
        std::process::id()
    ));
    let cfg = dir.join("tune.toml");
    fs::write(
        &cfg,
        format!(
            "candidates = [\"reno\", \"cdg\"]\ntable = \"{}\"\nstate_dir = \"{}\"\npins = \"{}\"\nsave_interval = \"1s\"\n",
            table.display(),
            state.display(),
            pins.display()
        ),
    )
    .unwrap();
    let default = fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap()
        .trim()
        .to_string();
    let _ports = Ports(TunePins { root: pins.clone() });
    let cg = Scratch::new("clitest").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let log = dir.join("daemon.log");
    let mut daemon = start(&cfg, &cg, &log);
    wait_status(&state, "the daemon starts", |s| s["running"] == true);

    // Five connections, each seen to its end; then one kept open.
    let mut ran = Vec::new();
    for i in 1..=5 {
        ran.push(short(&cg, &listener));
        wait_status(&state, "the end is seen", |s| {
            s["connections"]["ended"] == i
        });
    }
    assert_eq!(ran[0], default, "nothing was held for the first");
    assert!(ran[1..].iter().all(|r| *r != default), "{ran:?}");
    let mut kept = cg
        .run(|| TcpStream::connect(listener.local_addr().unwrap()))
        .unwrap()
        .unwrap();
    let (mut kept_rx, _) = listener.accept().unwrap();
    let kept_cc = congestion_of(&kept);
    assert_ne!(kept_cc, default);
    // The table saved after the fifth close (every second): it learned
    // from the connections that ran a candidate (the default is none).
    let learned = ran.iter().filter(|r| **r != default).count() as u64;
    let start_wait = Instant::now();
    while saved_conns(&table) != Some(learned) {
        assert!(start_wait.elapsed() < Duration::from_secs(5), "not saved");
        std::thread::sleep(Duration::from_millis(50));
    }
    let saved = fs::read_to_string(&table).unwrap();

    // SIGKILL: no save, no detach but the kernel's.
    daemon.0.kill().unwrap();
    daemon.0.wait().unwrap();
    still_works(&mut kept, &mut kept_rx);
    assert_eq!(
        congestion_of(&kept),
        kept_cc,
        "a tuned connection keeps its algorithm"
    );
    assert_eq!(short(&cg, &listener), default, "a new one gets the default");
    assert_eq!(fs::read_to_string(&table).unwrap(), saved);
    let o = kleinrock(&["tune", "status", "--config", cfg.to_str().unwrap()]);
    let (out, _) = text(&o);
    assert!(
        out.starts_with("not running: the last status its daemon wrote follows\n"),
        "{out}"
    );
    let o = kleinrock(&[
        "tune",
        "status",
        "--json",
        "--config",
        cfg.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(
        v["running"], false,
        "a killed daemon is not running, whatever its last status said"
    );

    // Restarted: the table as saved, and its choice held at once.
    let mut daemon = start(&cfg, &cg, &log);
    let s = wait_status(&state, "the daemon restarts", |s| {
        s["running"] == true && s["connections"]["opened"] == 0
    });
    assert_eq!(s["peers"][0]["address"], "127.0.0.1", "{s}");
    assert!(fs::read_to_string(&log)
        .unwrap()
        .contains("restored 1 peers from"));
    assert_ne!(short(&cg, &listener), default, "the restored choice");
    wait_status(&state, "the end is seen", |s| {
        s["connections"]["ended"] == 1
    });

    // Stop: saved (one more connection), detached, the port it loaded unloaded;
    // the kept connection still works.
    let o = kleinrock(&["tune", "stop", "--config", cfg.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.starts_with("stopped the tuner (pid "), "{out}");
    let loaded_by_us = out.contains("unloaded kr_cdg");
    assert!(daemon.0.wait().unwrap().success());
    assert_eq!(saved_conns(&table), Some(learned + 1));
    assert_eq!(short(&cg, &listener), default, "detached");
    if loaded_by_us {
        let available =
            fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
        assert!(
            !available.split_whitespace().any(|n| n == "kr_cdg"),
            "{available}"
        );
    }
    assert!(!pins.exists());
    still_works(&mut kept, &mut kept_rx);
    let s = status(&state).unwrap();
    assert_eq!(s["running"], false);
    fs::remove_dir_all(dir).unwrap();
}
