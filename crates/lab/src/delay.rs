//! The delay line: a userspace forwarder that holds each packet crossing
//! the router for the configured one-way delay, and can be a rate-limited
//! FIFO that marks ECN as DCTCP's switches do (`kleinrock-link`'s FIFO,
//! the simulator's; see `lane.rs`).
//!
//! The router has one TUN device per direction (`dly-fwd`, `dly-rev`).
//! Policy routing sends every packet that arrives on a veth into that
//! direction's TUN (`ip rule add iif rtr-snd lookup 100`, table 100 a
//! default route via `dly-fwd`); this thread reads it, keeps it in the
//! direction's [`Lane`] until its release time, and writes it back into the
//! same TUN, where the kernel receives it as if it had arrived on that
//! device and forwards it by the main table to the other veth. Only IP
//! packets are carried (TUN in `IFF_TUN | IFF_NO_PI` mode), at most the
//! TUN's 1500-byte MTU each: the kernel segments GSO packets before it
//! hands them to a device without offloads.
//!
//! One thread serves both directions. It sleeps in poll(2) on both TUNs, a
//! stop eventfd and a timerfd armed at the earliest release, an absolute
//! CLOCK_MONOTONIC deadline: a poll timeout would be relative, in whole
//! milliseconds, and padded by the kernel's timer slack (50 µs, or 0.1% to
//! 0.5% of the timeout), while a timerfd's hrtimer fires when it is due.
//! Packets live in slots allocated when the lab starts; nothing is
//! allocated per packet.
//!
//! The thread runs in the calling process, not as a helper binary: there
//! is nothing to find on disk, delay changes and counters are plain
//! atomics, and the forwarder cannot outlive the process that owns the lab
//! (when the process dies its TUN descriptors close, the devices vanish,
//! and traffic through the orphaned router stops). The TUNs are created
//! by a short-lived thread inside the router namespace (a TUN belongs to
//! the namespace of whoever creates it); the descriptors keep working from
//! this thread, which stays in the host namespace.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::config::{Link, DELAY_LINE_SLOTS};
use kleinrock_link::queue::Verdict;

use crate::lane::{Lane, SLOT};
use crate::Error;

/// The TUN devices, forward (sender to receiver) then reverse.
pub(crate) const TUNS: [&str; 2] = ["dly-fwd", "dly-rev"];

/// Packets read from one TUN before the thread looks at the other and at
/// its releases, so that a flood one way cannot stall the other.
const READ_BUDGET: usize = 64;

/// A direction's counters since the lab started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DelayStats {
    /// Packets written back out after their delay.
    pub forwarded: u64,
    /// Packets the bottleneck marked CE (one that arrived with CE
    /// already set counts, as in Linux's qdiscs).
    pub ce_marked: u64,
    /// Packets the bottleneck dropped because its queue was at its limit.
    pub queue_drops: u64,
    /// Packets dropped because every slot of the delay line was taken.
    pub overflow_drops: u64,
    /// Packets the kernel refused when they were written back.
    pub write_errors: u64,
    /// How long after its release time the latest packet was written
    /// back: the delay line's own error, on top of the configured delay.
    pub late_max: Duration,
    /// The same, summed over every packet forwarded (divide by
    /// `forwarded` for the mean).
    pub late_total: Duration,
}

impl DelayStats {
    /// Both directions' counters as one (`late_max` the larger).
    pub(crate) fn merge(self, o: DelayStats) -> DelayStats {
        DelayStats {
            forwarded: self.forwarded + o.forwarded,
            ce_marked: self.ce_marked + o.ce_marked,
            queue_drops: self.queue_drops + o.queue_drops,
            overflow_drops: self.overflow_drops + o.overflow_drops,
            write_errors: self.write_errors + o.write_errors,
            late_max: self.late_max.max(o.late_max),
            late_total: self.late_total + o.late_total,
        }
    }
}

#[derive(Default)]
struct Counters {
    forwarded: AtomicU64,
    ce_marked: AtomicU64,
    queue_drops: AtomicU64,
    overflow_drops: AtomicU64,
    write_errors: AtomicU64,
    late_max_ns: AtomicU64,
    late_total_ns: AtomicU64,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self) -> DelayStats {
        DelayStats {
            forwarded: self.forwarded.load(Ordering::Relaxed),
            ce_marked: self.ce_marked.load(Ordering::Relaxed),
            queue_drops: self.queue_drops.load(Ordering::Relaxed),
            overflow_drops: self.overflow_drops.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
            late_max: Duration::from_nanos(self.late_max_ns.load(Ordering::Relaxed)),
            late_total: Duration::from_nanos(self.late_total_ns.load(Ordering::Relaxed)),
        }
    }
}

/// What the thread and the lab share.
#[derive(Default)]
struct Shared {
    delay_ns: [AtomicU64; 2],
    counters: [Counters; 2],
    /// Why the thread stopped, if it stopped on its own.
    failure: Mutex<Option<String>>,
}

/// The running delay line; dropping it stops and joins the thread (the
/// TUN devices go with their descriptors).
pub(crate) struct DelayLine {
    shared: Arc<Shared>,
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl DelayLine {
    /// Starts forwarding between the two TUNs (forward, reverse).
    pub(crate) fn start(tuns: [OwnedFd; 2], links: [&Link; 2]) -> Result<DelayLine, Error> {
        let shared = Arc::new(Shared::default());
        for (lane, link) in links.iter().enumerate() {
            shared.delay_ns[lane].store(nanos(link.delay), Ordering::Relaxed);
        }
        let lanes = links.map(|link| Lane::new(DELAY_LINE_SLOTS, link.bottleneck.as_ref()));
        // SAFETY: eventfd has no memory preconditions.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(Error::failed(format!(
                "cannot create the delay line's eventfd: {e}"
            )));
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let stop = unsafe { OwnedFd::from_raw_fd(raw) };
        let stop_raw = stop.as_raw_fd();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("krlab-delay".into())
            .spawn(move || {
                raise_priority();
                if let Err(why) = forward(&tuns, lanes, &thread_shared, stop_raw) {
                    *thread_shared
                        .failure
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = Some(why);
                }
            })
            .map_err(|e| Error::failed(format!("cannot start the delay line's thread: {e}")))?;
        Ok(DelayLine {
            shared,
            stop,
            thread: Some(thread),
        })
    }

    pub(crate) fn set_delay(&self, lane: usize, delay: Duration) {
        self.shared.delay_ns[lane].store(nanos(delay), Ordering::Relaxed);
    }

    pub(crate) fn stats(&self, lane: usize) -> DelayStats {
        self.shared.counters[lane].read()
    }

    /// Why the thread stopped, if it has.
    pub(crate) fn failure(&self) -> Option<String> {
        let failure = self
            .shared
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        failure.clone().or_else(|| {
            self.thread
                .as_ref()
                .is_some_and(|t| t.is_finished())
                .then(|| "the delay line's thread has stopped".to_string())
        })
    }
}

impl Drop for DelayLine {
    fn drop(&mut self) {
        let one: u64 = 1;
        // SAFETY: writes eight bytes from a live u64 to our eventfd.
        unsafe {
            libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Creates TUN device `name` in the calling thread's network namespace and
/// returns its descriptor (non-blocking, close-on-exec).
pub(crate) fn open_tun(name: &str) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated constant path.
    let raw = unsafe {
        libc::open(
            c"/dev/net/tun".as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.len() >= ifr.ifr_name.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name too long",
        ));
    }
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes the ifreq we pass.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut ifr) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// SCHED_FIFO at the lowest real-time priority: above every ordinary
/// thread of the machine, so that a build or a benchmark running beside
/// the lab does not hold a release back for a scheduler slice (with two
/// busy processes at nice 10 and 19, pings through a 20 ms delay line
/// came back 4-8 ms late on average at normal priority). Packets written
/// back are forwarded by the kernel in this thread's context, so the
/// forwarding gains too. The thread sleeps whenever nothing is due, and
/// the kernel's real-time throttling keeps 5% of each second for others.
/// Best effort: without CAP_SYS_NICE the thread stays at normal priority.
fn raise_priority() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: applies to the calling thread; reads the param we pass.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// The thread's loop: release what is due, read what has arrived, sleep
/// until the next release or arrival. Returns only on error or when the
/// stop eventfd becomes readable.
fn forward(
    tuns: &[OwnedFd; 2],
    mut lanes: [Lane; 2],
    shared: &Shared,
    stop: RawFd,
) -> Result<(), String> {
    let timer =
        Timer::new().map_err(|e| format!("the delay line cannot create its timerfd: {e}"))?;
    let mut scratch = vec![0u8; SLOT];
    loop {
        let mut backlog = false;
        for (lane, (queue, tun)) in lanes.iter_mut().zip(tuns).enumerate() {
            let counters = &shared.counters[lane];
            release_due(queue, tun.as_raw_fd(), counters);
            let delay = shared.delay_ns[lane].load(Ordering::Relaxed);
            backlog |= read_arrivals(queue, tun.as_raw_fd(), &mut scratch, delay, counters)
                .map_err(|e| format!("the delay line cannot read {}: {e}", TUNS[lane]))?;
        }
        if backlog {
            continue;
        }
        let next = lanes.iter().filter_map(Lane::next_release).min();
        timer
            .arm(next)
            .map_err(|e| format!("the delay line cannot arm its timerfd: {e}"))?;
        if wait(tuns, stop, &timer).map_err(|e| format!("the delay line cannot wait: {e}"))? {
            return Ok(());
        }
    }
}

fn release_due(lane: &mut Lane, tun: RawFd, counters: &Counters) {
    let mut at = now();
    while let Some(packet) = lane.due(at) {
        // SAFETY: writes the packet's bytes, which live across the call.
        let n = unsafe { libc::write(tun, packet.as_ptr().cast(), packet.len()) };
        if n == packet.len() as isize {
            Counters::bump(&counters.forwarded);
            let late = at - lane.next_release().unwrap_or(at);
            counters.late_max_ns.fetch_max(late, Ordering::Relaxed);
            counters.late_total_ns.fetch_add(late, Ordering::Relaxed);
        } else {
            Counters::bump(&counters.write_errors);
        }
        lane.pop();
        at = now();
    }
}

/// Reads up to [`READ_BUDGET`] packets; true if the budget ran out (more
/// may be waiting).
fn read_arrivals(
    lane: &mut Lane,
    tun: RawFd,
    scratch: &mut [u8],
    delay: u64,
    counters: &Counters,
) -> io::Result<bool> {
    for _ in 0..READ_BUDGET {
        let slot = lane.free_slot();
        let has_slot = slot.is_some();
        let buf = slot.unwrap_or(&mut *scratch);
        // SAFETY: reads into a buffer of buf.len() writable bytes.
        let n = unsafe { libc::read(tun, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(false),
                io::ErrorKind::Interrupted => continue,
                _ => Err(e),
            };
        }
        if !has_slot {
            Counters::bump(&counters.overflow_drops);
            continue;
        }
        match lane.admit(n as usize, now(), delay) {
            Verdict::Queued => {}
            Verdict::Marked => Counters::bump(&counters.ce_marked),
            Verdict::Dropped => Counters::bump(&counters.queue_drops),
        }
    }
    Ok(true)
}

/// Sleeps until a TUN is readable, the timer fires, or the stop eventfd
/// is readable (then true).
fn wait(tuns: &[OwnedFd; 2], stop: RawFd, timer: &Timer) -> io::Result<bool> {
    let mut fds = [
        tuns[0].as_raw_fd(),
        tuns[1].as_raw_fd(),
        stop,
        timer.fd.as_raw_fd(),
    ]
    .map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: four pollfds, live across the call.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    if fds[3].revents != 0 {
        timer.clear();
    }
    Ok(fds[2].revents != 0)
}

/// CLOCK_MONOTONIC in nanoseconds: the clock release times are on, and
/// the one the timerfd's absolute deadlines are read against.
fn now() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we pass.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A timerfd on CLOCK_MONOTONIC, armed at absolute deadlines.
struct Timer {
    fd: OwnedFd,
    armed: std::cell::Cell<Option<u64>>,
}

impl Timer {
    fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create has no memory preconditions.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Timer {
            // SAFETY: a fresh descriptor nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
            armed: std::cell::Cell::new(None),
        })
    }

    /// Fires at `deadline` (a [`now`] value), or never for `None`.
    fn arm(&self, deadline: Option<u64>) -> io::Result<()> {
        if self.armed.get() == deadline {
            return Ok(());
        }
        // Zero disarms; a deadline of 0 would be long past anyway.
        let at = deadline.unwrap_or(0).max(u64::from(deadline.is_some()));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: settime reads the itimerspec we pass; the old value is not wanted.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed.set(deadline);
        Ok(())
    }

    /// Consumes an expiry, so that poll sleeps until the next one.
    fn clear(&self) {
        let mut ticks = 0u64;
        // SAFETY: reads eight bytes into a live u64.
        unsafe {
            libc::read(self.fd.as_raw_fd(), (&mut ticks as *mut u64).cast(), 8);
        }
        self.armed.set(None);
    }
}
