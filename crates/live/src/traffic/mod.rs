//! The traffic generator: Rust sockets inside the lab's namespaces, one
//! thread per sending or receiving end (two per TCP or UDP flow, one per
//! ping), blocking calls with short timeouts so that every thread notices
//! the end of the run within [`POLL`].
//!
//! Threads rather than an event loop: at the lab's scale (at most
//! [`crate::plan::MAX_FLOWS`] flows, a few in practice) a thread per end
//! costs nothing that matters, keeps each workload's code a straight line
//! (write until told to stop, read what comes, send a request and wait for
//! its response), and leaves scheduling to the kernel, below the delay
//! line's real-time thread. Connections are made before the run's clock
//! starts, so that a flow's first data leaves at its `start`, as in the
//! simulator, which has no handshake.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kleinrock_lab::Lab;
use kleinrock_sim::time::Time;

use crate::plan::Plan;
use crate::Error;

pub mod ping;
pub mod tcp;
pub mod udp;

/// How long a blocked thread waits before it looks at the run's end.
pub const POLL: Duration = Duration::from_millis(50);

/// The run's clock: time zero, the end, and whether the run is over.
pub struct Clock {
    pub t0: Instant,
    pub end: Instant,
    finished: AtomicBool,
}

impl Clock {
    /// A run of `duration` ns starting `lead` from now, time for the
    /// threads to be waiting when it starts.
    pub fn new(lead: Duration, duration: Time) -> Clock {
        let t0 = Instant::now() + lead;
        Clock {
            t0,
            end: t0 + Duration::from_nanos(duration),
            finished: AtomicBool::new(false),
        }
    }

    /// The instant of run time `t`.
    pub fn at(&self, t: Time) -> Instant {
        self.t0 + Duration::from_nanos(t)
    }

    /// The run time of `i`, ns (0 before the start).
    pub fn time(&self, i: Instant) -> Time {
        i.saturating_duration_since(self.t0).as_nanos() as Time
    }

    /// Tells every thread the run is over.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::SeqCst);
    }

    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }

    /// Sleeps until `when`, or until the run is over (false then). A
    /// moment already come is true even once the run is over, so that
    /// what was due by the end (a ping at the very end, a datagram a late
    /// thread owes) is sent as the simulator sends it.
    pub fn sleep_until(&self, when: Instant) -> bool {
        loop {
            let now = Instant::now();
            if now >= when {
                return true;
            }
            if self.finished() {
                return false;
            }
            std::thread::sleep((when - now).min(POLL));
        }
    }
}

/// Every flow's sockets, connected and waiting for the run.
pub struct Traffic {
    pub tcp: Vec<tcp::Flow>,
    pub pings: Vec<ping::Ping>,
    pub udp: Vec<udp::Udp>,
}

impl Traffic {
    /// Makes every flow's sockets in `lab` and connects the TCP flows.
    pub fn connect(lab: &Lab, plan: &Plan) -> Result<Traffic, Error> {
        Ok(Traffic {
            tcp: tcp::connect_all(lab, plan)?,
            pings: ping::open_all(lab, plan)?,
            udp: udp::open_all(lab, plan)?,
        })
    }

    /// Starts every thread; they wait for their flow's start.
    pub fn start(&self, clock: &Arc<Clock>) -> Result<Vec<JoinHandle<()>>, Error> {
        let mut threads = Vec::new();
        for f in &self.tcp {
            threads.extend(f.start(clock)?);
        }
        for p in &self.pings {
            threads.push(p.start(clock)?);
        }
        for u in &self.udp {
            threads.extend(u.start(clock)?);
        }
        Ok(threads)
    }
}

/// A thread named for what it does.
pub fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, Error> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| Error::failed(format!("cannot start a traffic thread: {e}")))
}

/// An I/O failure while making a flow's sockets, as one sentence.
pub fn setup_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::failed(format!("cannot set up {what} in the lab: {e}"))
}
