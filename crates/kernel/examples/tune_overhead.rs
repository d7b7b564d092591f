//! What the tuner costs a host that opens many short connections:
//! connections per second of a loop (connect over loopback, send 100
//! bytes, close, the server reading to the end and closing), run in a
//! cgroup of its own, with the tuner attached to it and without,
//! alternating in one run. docs/PERFORMANCE.md records the figures.
//!
//! The daemon runs in this process, on a thread of its own, as
//! `kleinrock tune run` would beside the application; its only candidate
//! is the namespace's default algorithm, so that what is measured is the
//! mechanism (the program at establishment, at each RTT sample and at the
//! end, the reports, the policy's work, the map updates), not one
//! algorithm against another. Both ends of each connection are in the
//! cgroup, so both are tuned: the worst case for a host talking to
//! itself. The loop (client and server) is pinned to one CPU and the
//! daemon to the other, as the scheduler would spread them, so that the
//! rate measures what the tuner costs the application's CPU; beside it,
//! the loop's CPU's busy time per connection (/proc/stat: the program's
//! runs, in the sockets' contexts and softirqs, included) and the
//! daemon's own CPU time. Untuned, a thread wakes on the daemon's CPU as
//! often as the daemon does (see below). The host's steal is reported
//! too. (The kernel's BPF run-time statistics were tried for the
//! program's own cost and found to count the time a run was preempted by
//! the loop's other thread: 15 us per connection, where the loop's CPU
//! shows 1.4.)
//!
//! ```sh
//! sudo cargo run --release -p kleinrock-kernel --example tune_overhead -- [ROUNDS] [SECONDS] [REPORT_MS]
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use kleinrock_kernel::pins::Paths;
use kleinrock_kernel::tune::cgroup::Scratch;
use kleinrock_kernel::tune::daemon::{Daemon, Options};
use kleinrock_kernel::tune::names::{resolve, TunePins};
use kleinrock_lab::StealMeter;
use kleinrock_select::bandit::Config as BanditConfig;
use kleinrock_select::live::{self, PolicyKind};

fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET and sched_setaffinity
    // get valid pointers.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Connections completed in `secs` by the loop.
fn short_connections(listener: &TcpListener, secs: f64) -> u64 {
    let to = listener.local_addr().unwrap();
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed().as_secs_f64() < secs {
        let mut s = TcpStream::connect(to).unwrap();
        s.write_all(&[1u8; 100]).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let _ = s.read(&mut [0u8; 1]);
        n += 1;
    }
    n
}

/// The daemon on its own thread until `stop`; `ready` once attached.
fn daemon(
    cg: std::path::PathBuf,
    default: String,
    report_ms: u64,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<()>,
) -> std::thread::JoinHandle<(u64, Duration)> {
    std::thread::spawn(move || {
        pin_to(1);
        let specs = vec![default];
        let candidates = resolve(&specs, &[], &Paths::system().available().unwrap()).unwrap();
        let opts = Options {
            tuner: live::Config {
                policy: PolicyKind::Kleinrock,
                kleinrock: BanditConfig {
                    candidates: specs,
                    ..BanditConfig::default()
                },
                needs_ecn: vec![false],
                ecn_allow: Vec::new(),
            },
            candidates,
            cgroup: cg,
            advise: false,
            report_every: Duration::from_millis(report_ms),
            table: None,
            save_every: Duration::from_secs(3600),
            state_dir: None,
            pins: TunePins::system(),
            status_peers: 10,
        };
        let mut d = Daemon::start(opts, Box::new(|_: &str| {})).unwrap();
        ready.send(()).unwrap();
        while !stop.load(Ordering::Relaxed) {
            d.step(Duration::from_millis(100)).unwrap();
        }
        let ended = d.tuner().counts.closed;
        let s = d.program().stats();
        assert_eq!(
            s.lost, 0,
            "reports lost: the ring is too small for this loop"
        );
        d.finish().unwrap();
        (ended, thread_cpu())
    })
}

/// CPU 0's (busy, total) time so far, in clock ticks (/proc/stat): the
/// loop's CPU, softirqs and the program's runs included.
fn cpu0() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = stat
        .lines()
        .find(|l| l.starts_with("cpu0 "))
        .map(|l| {
            l.split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    // user nice system idle iowait irq softirq steal ...
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    let total: u64 = v.iter().take(8).sum();
    (total - idle, total)
}

/// The CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru
    };
    let t = |tv: libc::timeval| Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let arg = |i: usize, d: f64| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (rounds, secs, report_ms) = (arg(1, 10.0) as usize, arg(2, 3.0), arg(3, 1000.0) as u64);
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap()
        .trim()
        .to_string();
    let cg = Scratch::new("overhead").unwrap_or_else(|e| panic!("{e}"));
    let steal = StealMeter::start().ok();
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let (mut daemon_cpu, mut per_end) = (Vec::new(), Vec::new());
    let (mut cpu_with, mut cpu_without) = (Vec::new(), Vec::new());
    cg.run(|| {
        pin_to(0);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.try_clone().unwrap();
        std::thread::spawn(move || {
            pin_to(0);
            for s in server.incoming() {
                let mut s = s.unwrap();
                let mut buf = [0u8; 256];
                while s.read(&mut buf).is_ok_and(|n| n > 0) {}
            }
        });
        short_connections(&listener, 1.0); // warm up
        for round in 0..rounds {
            let attached = round % 2 == 0;
            let stop = Arc::new(AtomicBool::new(false));
            let handle = attached.then(|| {
                let (tx, rx) = mpsc::channel();
                let h = daemon(
                    cg.path().into(),
                    default.clone(),
                    report_ms,
                    stop.clone(),
                    tx,
                );
                rx.recv().unwrap();
                h
            });
            // Untuned, a thread wakes on the other CPU as often as the
            // daemon does, so that both kinds of round find it awake: on
            // this VM an idle CPU made the loop 4% slower than one the
            // daemon kept busy, which showed the tuner as a speed-up.
            let control = (!attached).then(|| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    pin_to(1);
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                })
            });
            let (busy0, total0) = cpu0();
            let n = short_connections(&listener, secs);
            let (busy1, total1) = cpu0();
            let rate = n as f64 / secs;
            let tick = 1e6 / 100.0; // us per clock tick (USER_HZ)
            let per_conn = (busy1 - busy0) as f64 * tick / n.max(1) as f64;
            let busy = (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64;
            stop.store(true, Ordering::Relaxed);
            let seen = handle.map(|h| h.join().unwrap());
            if let Some(c) = control {
                c.join().unwrap();
            }
            if attached {
                cpu_with.push(per_conn);
            } else {
                cpu_without.push(per_conn);
            }
            println!(
                "round {round:2}: {:8} {rate:9.0} connections/s, CPU 0 {:3.0}% busy, {per_conn:5.1} us of it per connection{}",
                if attached { "tuned" } else { "untuned" },
                100.0 * busy,
                seen.map_or(String::new(), |(ends, cpu)| {
                    daemon_cpu.push(cpu.as_secs_f64() / secs);
                    per_end.push(cpu.as_secs_f64() * 1e6 / ends.max(1) as f64);
                    format!(
                        " (the daemon saw {ends} ends, {:.1} us of CPU each, {:.0}% of a CPU)",
                        cpu.as_secs_f64() * 1e6 / ends.max(1) as f64,
                        100.0 * cpu.as_secs_f64() / secs
                    )
                })
            );
            if attached {
                with.push(rate);
            } else {
                without.push(rate);
            }
        }
    })
    .unwrap();
    let (w, wo) = (median(&mut with), median(&mut without));
    let (cw, cwo) = (median(&mut cpu_with), median(&mut cpu_without));
    println!(
        "CPU 0 per connection: {cwo:.1} us untuned, {cw:.1} us tuned: {:.1}% more",
        100.0 * (cw - cwo) / cwo
    );
    println!(
        "median: {wo:.0} connections/s untuned, {w:.0} tuned: {:.1}% fewer; the daemon: {:.0}% of a CPU, {:.1} us per connection end; report interval {report_ms} ms{}",
        100.0 * (wo - w) / wo,
        100.0 * median(&mut daemon_cpu),
        median(&mut per_end),
        steal
            .and_then(|s| s.share().ok())
            .map_or(String::new(), |s| format!("; the host stole {:.1}% of the CPU", 100.0 * s))
    );
}
