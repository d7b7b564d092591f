//! One run in the lab, from the privileges it needs to its results, and
//! the order in which what it builds is taken down again: on success, on
//! an error, on a stop request and on a panic alike (each piece is a
//! guard, dropped in reverse order of making: the flows' threads told to
//! stop, their sockets closed, the lab's namespaces removed, the ports
//! unloaded).

use std::sync::Arc;
use std::time::{Duration, Instant};

use kleinrock_lab::Lab;
use kleinrock_sim::time::Time;
use kleinrock_sim::Results;

use crate::algorithms::{self, Code, Loaded};
use crate::plan::Plan;
use crate::sample::Sampler;
use crate::traffic::{Clock, Traffic};
use crate::{stack, Error, ErrorKind};

/// Time for the flows' threads to be waiting when the run's clock starts.
const LEAD: Duration = Duration::from_millis(50);

/// How often a waiting run looks at the stop request and reports progress.
const TICK: Duration = Duration::from_millis(100);

/// Tells the flows' threads the run is over when dropped: a panic on the
/// run's thread stops them too.
struct FinishOnDrop(Arc<Clock>);

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        self.0.finish();
    }
}

fn interrupted() -> Error {
    Error::new(
        ErrorKind::Interrupted,
        "the run was stopped; its lab and the ports it loaded were removed",
    )
}

pub fn run(
    plan: &Plan,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(f64),
) -> Result<Results, Error> {
    check_privileges(plan)?;
    let check = || if stop() { Err(interrupted()) } else { Ok(()) };
    // What killed runs left: their ports (their labs go with Lab::new's
    // own sweep).
    algorithms::sweep();
    check()?;
    let loaded = Loaded::load(&plan.codes)?;
    check()?;
    let lab = Lab::new(&plan.lab)?;
    check()?;
    stack::configure(&lab, plan)?;
    let traffic = Traffic::connect(&lab, plan)?;
    check()?;
    let results = measure(plan, &lab, &traffic, stop, progress)?;
    lab.check()?;
    drop(traffic);
    // After the sockets closed, so that their FINs are in it.
    if let Some(c) = lab.finish_capture()? {
        if c.dropped > 0 {
            eprintln!(
                "warning: the packet capture kept {} packets and could not keep {} more: its writer fell behind the delay line (a pcapng capture records them in its statistics)",
                c.written, c.dropped
            );
        }
    }
    drop(lab);
    drop(loaded);
    Ok(results)
}

/// Runs the traffic for the scenario's duration, sampling as it goes.
fn measure(
    plan: &Plan,
    lab: &Lab,
    traffic: &Traffic,
    stop: &dyn Fn() -> bool,
    progress: &mut dyn FnMut(f64),
) -> Result<Results, Error> {
    let c = &plan.config;
    let mut sampler = Sampler::new(plan, traffic, lab)?;
    let clock = Arc::new(Clock::new(LEAD, c.duration));
    let finish = FinishOnDrop(Arc::clone(&clock));
    let threads = traffic.start(&clock)?;
    let mut wait = |until: Instant| -> Result<(), Error> {
        loop {
            let now = Instant::now();
            progress(clock.time(now) as f64 / c.duration.max(1) as f64);
            if stop() {
                return Err(interrupted());
            }
            if now >= until {
                return Ok(());
            }
            std::thread::sleep((until - now).min(TICK));
        }
    };
    let mut k: Time = 1;
    let outcome = loop {
        let t = k.saturating_mul(c.sample_interval);
        if t > c.duration {
            break wait(clock.end).and_then(|()| sampler.close(lab));
        }
        if let Err(e) = wait(clock.at(t)).and_then(|()| sampler.sample(t, lab)) {
            break Err(e);
        }
        k += 1;
    };
    drop(finish);
    for t in threads {
        let _ = t.join();
    }
    outcome?;
    progress(1.0);
    sampler.finish()
}

/// Capabilities, by number (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// Refuses, in one sentence naming what is missing, a process that cannot
/// build a lab (and load the plan's ports).
fn check_privileges(plan: &Plan) -> Result<(), Error> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let has = effective_capabilities();
    let ports = plan.codes.iter().any(|c| matches!(c, Code::Port(_)));
    let mut need = vec![
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN (network namespaces)"),
        (CAP_NET_ADMIN, "CAP_NET_ADMIN (devices, routes and rules)"),
    ];
    if ports {
        need.push((CAP_BPF, "CAP_BPF (loading the BPF ports)"));
    }
    let missing: Vec<&str> = need
        .iter()
        .filter(|(cap, _)| has & (1 << cap) == 0)
        .map(|(_, what)| *what)
        .collect();
    let lacks = if missing.is_empty() {
        "it has the capabilities, but the lab's tools (ip, tc, iptables) run as root".to_string()
    } else {
        format!("it lacks {}", missing.join(", "))
    };
    Err(Error::new(
        ErrorKind::Unprivileged,
        format!("kleinrock lab needs root and this process is not: {lacks}; run it with sudo"),
    ))
}

/// The effective capability set (`CapEff` of /proc/self/status).
fn effective_capabilities() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}
