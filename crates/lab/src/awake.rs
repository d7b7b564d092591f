//! Keeping the CPUs from halting while a lab runs.
//!
//! On a virtual machine an idle vCPU executes HLT and leaves the physical
//! CPU to the hypervisor; the next interrupt for it (the delay line's
//! timerfd, a packet's softirq, tbf's watchdog) has to wait until the host
//! schedules the vCPU again. On a loaded host that wait is long: on the
//! 2-vCPU Firecracker machines this project runs on, a thread sleeping
//! 1 ms at a time woke more than 5 ms late 1.5% of the time and up to
//! 55 ms late, and the lab's 20 Mbit/s tbf link carried 2-15 Mbit/s.
//! A vCPU that never halts is never woken: with a busy thread on each
//! CPU, the same sleeps were never more than 4 ms late and 99% were
//! within 100 µs, and the link carried its rate.
//!
//! So while any lab of this process exists, one thread per CPU spins at
//! nice 19. It only takes time nothing else wants: every guest thread and
//! softirq preempts it when it wakes. It spins on a plain load, without
//! the PAUSE hint, because hypervisors treat a stream of PAUSEs as a
//! waiting spinlock (pause-loop exiting) and deschedule the vCPU, the
//! very thing it is there to prevent. Bare-metal machines lose nothing to
//! halting; `LabConfig::keep_cpus_awake = false` spares their power.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The spinners, shared by every lab of the process that wants them.
static SHARED: Mutex<Option<Spinners>> = Mutex::new(None);

/// Spinners between their start and their end, for the tests.
static SPINNING: AtomicUsize = AtomicUsize::new(0);

struct Spinners {
    holders: usize,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

/// While one exists, every CPU of the process's affinity mask has a
/// spinner; the last one dropped stops them.
pub(crate) struct Awake(());

impl Awake {
    pub(crate) fn hold() -> Awake {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        match shared.as_mut() {
            Some(s) => s.holders += 1,
            None => *shared = Some(Spinners::start()),
        }
        Awake(())
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let last = shared.as_mut().is_some_and(|s| {
            s.holders -= 1;
            s.holders == 0
        });
        if last {
            if let Some(s) = shared.take() {
                s.stop.store(true, Ordering::Relaxed);
                for t in s.threads {
                    let _ = t.join();
                }
            }
        }
    }
}

impl Spinners {
    fn start() -> Spinners {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let threads: Vec<_> = allowed_cpus()
            .into_iter()
            .filter_map(|cpu| {
                let stop = Arc::clone(&stop);
                let ready = ready_tx.clone();
                std::thread::Builder::new()
                    .name(format!("krlab-awake{cpu}"))
                    .spawn(move || spin(cpu, &stop, ready))
                    .ok()
            })
            .collect();
        // The lab's timing starts when every CPU has its spinner (and a
        // spinner that died before saying so ends the wait, not hangs it).
        drop(ready_tx);
        for _ in &threads {
            let _ = ready.recv();
        }
        Spinners {
            holders: 1,
            stop,
            threads,
        }
    }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills
    // the one we pass, of the size we pass.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: cpu is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

fn spin(cpu: usize, stop: &AtomicBool, ready: std::sync::mpsc::Sender<()>) {
    // Best effort: unpinned or at nice 0 it still keeps some CPU awake,
    // just less politely.
    // SAFETY: plain system calls on this thread, with a set we built.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
    SPINNING.fetch_add(1, Ordering::SeqCst);
    let _ = ready.send(());
    drop(ready);
    while !stop.load(Ordering::Relaxed) {}
    SPINNING.fetch_sub(1, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads of this process named as spinners are.
    fn named_spinners() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter(|t| {
                let comm = t.as_ref().unwrap().path().join("comm");
                std::fs::read_to_string(comm).is_ok_and(|c| c.starts_with("krlab-awake"))
            })
            .count()
    }

    #[test]
    fn one_spinner_per_cpu_while_anyone_holds_them() {
        assert_eq!(SPINNING.load(Ordering::SeqCst), 0);
        let a = Awake::hold();
        let b = Awake::hold();
        let cpus = allowed_cpus().len();
        assert!(cpus > 0);
        assert_eq!(
            SPINNING.load(Ordering::SeqCst),
            cpus,
            "a second holder shares the first's"
        );
        assert_eq!(named_spinners(), cpus);
        drop(a);
        assert_eq!(SPINNING.load(Ordering::SeqCst), cpus);
        drop(b);
        // The last holder stops them and joins them: each has left its
        // loop (its task may linger in /proc a moment after the join).
        assert_eq!(SPINNING.load(Ordering::SeqCst), 0);
    }
}
