//! The delay line: a userspace forwarder that holds each packet crossing
//! the router for its one-way delay, after the simulator's bottleneck when
//! the link has one (the lanes, `lane.rs`, run `kleinrock-link`'s queues,
//! loss and jitter on the packets).
//!
//! The router has one TUN device per direction (`dly-fwd`, `dly-rev`,
//! `tun.rs`). Policy routing sends every packet that arrives on a veth into
//! that direction's TUN (`ip rule add iif rtr-snd lookup 100`, table 100 a
//! default route via `dly-fwd`); this thread reads it, keeps it in the
//! direction's [`Lane`] until its release time, and writes it back into the
//! same TUN, where the kernel receives it as if it had arrived on that
//! device and forwards it by the main table to the other veth. Only IP
//! packets are carried, at most the TUN's 1500-byte MTU each: the kernel
//! segments GSO packets before it hands them to a device without offloads.
//!
//! One thread serves both directions. It sleeps in poll(2) on both TUNs, a
//! stop eventfd, a sample eventfd and a timerfd armed at the lanes' next
//! deadline (a release, or a departure from a bottleneck that cannot wait
//! longer), an absolute CLOCK_MONOTONIC deadline: a poll timeout would be
//! relative, in whole milliseconds, and padded by the kernel's timer slack
//! (50 µs, or 0.1% to 0.5% of the timeout), while a timerfd's hrtimer fires
//! when it is due. Packets live in slots allocated when the lab starts;
//! nothing is allocated per packet.
//!
//! The thread runs in the calling process, not as a helper binary: there
//! is nothing to find on disk, delay changes and counters are plain
//! atomics, and the forwarder cannot outlive the process that owns the lab
//! (when the process dies its TUN descriptors close, the devices vanish,
//! and traffic through the orphaned router stops). The descriptors, made
//! inside the router's namespace, keep working from this thread, which
//! stays in the host's.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kleinrock_capture::background::Outcome;
use kleinrock_link::config::LinkStats;

use crate::capture::Tap;
use crate::classify::Classifier;
use crate::config::{LabConfig, DELAY_LINE_SLOTS};
use crate::lane::{Lane, SLOT};
use crate::lateness::{Lateness, Recorder};
use crate::tun::TUNS;
use crate::Error;

/// Packets read from one TUN before the thread looks at the other and at
/// its releases, so that a flood one way cannot stall the other. A read
/// takes about a microsecond here: eight keep a release waiting behind
/// reads for under 10 us (with 64, releases at a short delay waited a
/// median 37 us), and cost nothing in throughput.
const READ_BUDGET: usize = 8;

/// How long [`DelayLine::sample`] waits for the thread to answer: it
/// answers within its next pass, microseconds unless the host stalls it.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(1);

/// A direction's counters since the lab started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DelayStats {
    /// Packets written back out after their delay.
    pub forwarded: u64,
    /// Packets the bottleneck marked CE (one that arrived with CE
    /// already set counts, as in Linux's qdiscs).
    pub ce_marked: u64,
    /// Packets the bottleneck's queue dropped (at its limit, or an AQM's
    /// decision).
    pub queue_drops: u64,
    /// Packets the bottleneck's loss model took as they left it.
    pub loss_drops: u64,
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
            loss_drops: self.loss_drops + o.loss_drops,
            overflow_drops: self.overflow_drops + o.overflow_drops,
            write_errors: self.write_errors + o.write_errors,
            late_max: self.late_max.max(o.late_max),
            late_total: self.late_total + o.late_total,
        }
    }
}

/// A direction's bottleneck at one moment, in the simulator's terms: what
/// waits in its queue, and its counters since the lab started. The
/// simulator's queues.csv row for an interval is `packets`, `bytes`, the
/// queueing delay `bytes * 8 / rate` and, from the difference of two
/// samples' `link`, the drops (`queue_drops + loss_drops`) and `marks`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueSample {
    /// Packets waiting, the one being sent not counted.
    pub packets: u64,
    /// Their IP bytes.
    pub bytes: u64,
    pub link: LinkStats,
}

#[derive(Default)]
struct Counters {
    forwarded: AtomicU64,
    overflow_drops: AtomicU64,
    write_errors: AtomicU64,
    late_max_ns: AtomicU64,
    late_total_ns: AtomicU64,
    late: Recorder,
    /// The lane's [`LinkStats`], copied after each pass.
    tx_packets: AtomicU64,
    tx_bytes: AtomicU64,
    queue_drops: AtomicU64,
    loss_drops: AtomicU64,
    marks: AtomicU64,
    /// The bottleneck's backlog, written when a sample is asked for.
    backlog_packets: AtomicU64,
    backlog_bytes: AtomicU64,
}

impl Counters {
    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn publish(&self, s: LinkStats) {
        for (to, v) in [
            (&self.tx_packets, s.tx_packets),
            (&self.tx_bytes, s.tx_bytes),
            (&self.queue_drops, s.queue_drops),
            (&self.loss_drops, s.loss_drops),
            (&self.marks, s.marks),
        ] {
            to.store(v, Ordering::Relaxed);
        }
    }

    fn link(&self) -> LinkStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LinkStats {
            tx_packets: load(&self.tx_packets),
            tx_bytes: load(&self.tx_bytes),
            queue_drops: load(&self.queue_drops),
            loss_drops: load(&self.loss_drops),
            marks: load(&self.marks),
        }
    }

    fn read(&self) -> DelayStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let link = self.link();
        DelayStats {
            forwarded: load(&self.forwarded),
            ce_marked: link.marks,
            queue_drops: link.queue_drops,
            loss_drops: link.loss_drops,
            overflow_drops: load(&self.overflow_drops),
            write_errors: load(&self.write_errors),
            late_max: Duration::from_nanos(load(&self.late_max_ns)),
            late_total: Duration::from_nanos(load(&self.late_total_ns)),
        }
    }
}

/// What the thread and the lab share.
#[derive(Default)]
struct Shared {
    delay_ns: [AtomicU64; 2],
    counters: [Counters; 2],
    /// Samples asked for, and the last one answered: the lab bumps the
    /// first and pokes the thread, which takes the sample and sets the
    /// second to what it found in the first.
    samples_asked: AtomicU64,
    samples_taken: AtomicU64,
    /// Why the thread stopped, if it stopped on its own.
    failure: Mutex<Option<String>>,
    /// The lab asks the thread to hand its capture over (to be finished
    /// off the thread), and the thread puts it here.
    capture_stop: AtomicBool,
    capture_done: Mutex<Option<Tap>>,
}

/// The running delay line; dropping it stops and joins the thread (the
/// TUN devices go with their descriptors).
pub(crate) struct DelayLine {
    shared: Arc<Shared>,
    stop: OwnedFd,
    poke: OwnedFd,
    thread: Option<JoinHandle<()>>,
    /// The thread is capturing (until [`DelayLine::finish_capture`]).
    capturing: AtomicBool,
}

impl DelayLine {
    /// Starts forwarding between the two TUNs (forward, reverse).
    pub(crate) fn start(tuns: [OwnedFd; 2], config: &LabConfig) -> Result<DelayLine, Error> {
        let shared = Arc::new(Shared::default());
        let links = [&config.forward, &config.reverse];
        let classifier = Arc::new(Classifier::new(&config.flows));
        let mut lanes = Vec::with_capacity(2);
        for (lane, link) in links.iter().enumerate() {
            let own = link.bottleneck.as_ref().map_or(0, |b| b.delay);
            shared.delay_ns[lane].store(nanos(link.delay) + own, Ordering::Relaxed);
            let extras: Vec<u64> = config.flows.iter().map(|f| nanos(f.extra(lane))).collect();
            lanes.push(Lane::new(
                DELAY_LINE_SLOTS,
                link.bottleneck.as_ref(),
                Arc::clone(&classifier),
                &extras,
                // One generator per direction, each its own sequence.
                config.seed ^ (lane as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ));
        }
        let lanes: [Lane; 2] = lanes.try_into().expect("two lanes");
        let mut tap = config.capture.as_ref().map(Tap::start).transpose()?;
        let capturing = tap.is_some();
        let stop = eventfd("stop")?;
        let poke = eventfd("sample")?;
        let fds = Fds {
            tuns,
            stop: stop.as_raw_fd(),
            poke: poke.as_raw_fd(),
        };
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("krlab-delay".into())
            .spawn(move || {
                raise_priority();
                if let Err(why) = forward(&fds, lanes, &thread_shared, &mut tap) {
                    *thread_shared
                        .failure
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = Some(why);
                }
                // A capture nobody asked for: its file completed here.
                if let Some(tap) = tap.take() {
                    let _ = tap.finish();
                }
            })
            .map_err(|e| Error::failed(format!("cannot start the delay line's thread: {e}")))?;
        Ok(DelayLine {
            shared,
            stop,
            poke,
            thread: Some(thread),
            capturing: AtomicBool::new(capturing),
        })
    }

    /// Stops the capture, if there is one, and completes its file: the
    /// thread hands it over at its next pass, and the writer is waited
    /// for here, off the thread. `None` without a capture.
    pub(crate) fn finish_capture(&self) -> Result<Option<Outcome>, Error> {
        if !self.capturing.swap(false, Ordering::AcqRel) {
            return Ok(None);
        }
        self.shared.capture_stop.store(true, Ordering::Release);
        write_eventfd(self.poke.as_raw_fd());
        let start = Instant::now();
        loop {
            if let Some(tap) = lock(&self.shared.capture_done).take() {
                return tap.finish().map(Some);
            }
            if let Some(why) = self.failure() {
                return Err(Error::failed(why));
            }
            if start.elapsed() > SAMPLE_TIMEOUT {
                return Err(Error::failed(format!(
                    "the delay line did not hand its capture over within {SAMPLE_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }

    /// Sets the link delay of `lane` (its bottleneck's own delay
    /// replaced too: `delay` is the whole of it).
    pub(crate) fn set_delay(&self, lane: usize, delay: Duration) {
        self.shared.delay_ns[lane].store(nanos(delay), Ordering::Relaxed);
    }

    pub(crate) fn stats(&self, lane: usize) -> DelayStats {
        self.shared.counters[lane].read()
    }

    pub(crate) fn lateness(&self, lane: usize) -> Lateness {
        self.shared.counters[lane].late.read()
    }

    /// Both bottlenecks' queues and counters at one moment: the thread
    /// takes the sample in its next pass.
    pub(crate) fn sample(&self) -> Result<[QueueSample; 2], Error> {
        let asked = self.shared.samples_asked.fetch_add(1, Ordering::AcqRel) + 1;
        write_eventfd(self.poke.as_raw_fd());
        let start = Instant::now();
        while self.shared.samples_taken.load(Ordering::Acquire) < asked {
            if let Some(why) = self.failure() {
                return Err(Error::failed(why));
            }
            if start.elapsed() > SAMPLE_TIMEOUT {
                return Err(Error::failed(format!(
                    "the delay line did not take a queue sample within {SAMPLE_TIMEOUT:?}; \
                     the machine is too busy for its timing to mean anything"
                )));
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        Ok([0, 1].map(|lane| {
            let c = &self.shared.counters[lane];
            QueueSample {
                packets: c.backlog_packets.load(Ordering::Relaxed),
                bytes: c.backlog_bytes.load(Ordering::Relaxed),
                link: c.link(),
            }
        }))
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
        write_eventfd(self.stop.as_raw_fd());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn eventfd(what: &str) -> Result<OwnedFd, Error> {
    // SAFETY: eventfd has no memory preconditions.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw < 0 {
        let e = io::Error::last_os_error();
        return Err(Error::failed(format!(
            "cannot create the delay line's {what} eventfd: {e}"
        )));
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

fn write_eventfd(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes eight bytes from a live u64 to an eventfd.
    unsafe {
        libc::write(fd, (&one as *const u64).cast(), 8);
    }
}

/// Empties an eventfd, so that poll sleeps until the next write.
fn read_eventfd(fd: RawFd) {
    let mut n = 0u64;
    // SAFETY: reads eight bytes into a live u64.
    unsafe {
        libc::read(fd, (&mut n as *mut u64).cast(), 8);
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
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
pub(crate) fn raise_priority() {
    set_fifo(0);
}

/// Puts thread `tid` (0: the calling thread) at SCHED_FIFO priority 1, if
/// this process may.
pub(crate) fn set_fifo(tid: libc::pid_t) {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: reads the param we pass; a bad tid is an error, not UB.
    unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) };
}

/// The descriptors the thread waits on.
struct Fds {
    tuns: [OwnedFd; 2],
    stop: RawFd,
    poke: RawFd,
}

/// The thread's loop: release what is due, read what has arrived, take a
/// sample if one was asked for, sleep until the next deadline or arrival.
/// Returns only on error or when the stop eventfd becomes readable.
fn forward(
    fds: &Fds,
    mut lanes: [Lane; 2],
    shared: &Shared,
    tap: &mut Option<Tap>,
) -> Result<(), String> {
    let timer =
        Timer::new().map_err(|e| format!("the delay line cannot create its timerfd: {e}"))?;
    let mut scratch = vec![0u8; SLOT];
    loop {
        let mut backlog = false;
        for (lane, (queue, tun)) in lanes.iter_mut().zip(&fds.tuns).enumerate() {
            let counters = &shared.counters[lane];
            let delay = shared.delay_ns[lane].load(Ordering::Relaxed);
            release_due(queue, tun.as_raw_fd(), delay, counters, lane, &mut *tap);
            let mut ends = Ends {
                scratch: &mut scratch,
                lane,
                tap: &mut *tap,
            };
            backlog |= read_arrivals(queue, tun.as_raw_fd(), delay, counters, &mut ends)
                .map_err(|e| format!("the delay line cannot read {}: {e}", TUNS[lane]))?;
            counters.publish(queue.stats());
        }
        if tap.is_some() && shared.capture_stop.load(Ordering::Acquire) {
            *lock(&shared.capture_done) = tap.take();
        }
        // Asked for a sample: looked at on every pass, not only when the
        // eventfd woke the thread, which a busy delay line never sleeps
        // long enough for.
        if shared.samples_asked.load(Ordering::Acquire)
            > shared.samples_taken.load(Ordering::Relaxed)
        {
            take_sample(&mut lanes, shared);
        }
        if backlog {
            continue;
        }
        let next = lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.next_deadline(shared.delay_ns[i].load(Ordering::Relaxed)))
            .min();
        // Due already (a short delay, or time spent reading): no sleep.
        if next.is_some_and(|at| at <= now()) {
            continue;
        }
        // With nothing to wait for, a timer left armed at an old deadline
        // costs one spurious pass; disarming it would cost a system call
        // every time the lanes empty, which at a short delay is every
        // few packets.
        if let Some(at) = next {
            timer
                .arm(at)
                .map_err(|e| format!("the delay line cannot arm its timerfd: {e}"))?;
        }
        if wait(fds, &timer).map_err(|e| format!("the delay line cannot wait: {e}"))? {
            return Ok(());
        }
    }
}

/// Both lanes' queues as they are now, for [`DelayLine::sample`].
fn take_sample(lanes: &mut [Lane; 2], shared: &Shared) {
    let asked = shared.samples_asked.load(Ordering::Acquire);
    let at = now();
    for (lane, queue) in lanes.iter_mut().enumerate() {
        let c = &shared.counters[lane];
        queue.advance(at, shared.delay_ns[lane].load(Ordering::Relaxed));
        let (packets, bytes) = queue.backlog(at);
        c.backlog_packets.store(packets as u64, Ordering::Relaxed);
        c.backlog_bytes.store(bytes, Ordering::Relaxed);
        c.publish(queue.stats());
    }
    shared.samples_taken.store(asked, Ordering::Release);
}

fn release_due(
    lane: &mut Lane,
    tun: RawFd,
    delay: u64,
    counters: &Counters,
    index: usize,
    tap: &mut Option<Tap>,
) {
    let mut at = now();
    lane.advance(at, delay);
    while let Some(packet) = lane.due(at) {
        // SAFETY: writes the packet's bytes, which live across the call.
        let n = unsafe { libc::write(tun, packet.as_ptr().cast(), packet.len()) };
        if let Some(tap) = tap {
            tap.released(index, at, packet);
        }
        if n == packet.len() as isize {
            Counters::bump(&counters.forwarded);
            let late = at - lane.next_release().unwrap_or(at);
            counters.late_max_ns.fetch_max(late, Ordering::Relaxed);
            counters.late_total_ns.fetch_add(late, Ordering::Relaxed);
            counters.late.record(late);
        } else {
            Counters::bump(&counters.write_errors);
        }
        lane.pop();
        at = now();
        lane.advance(at, delay);
    }
}

/// What a lane's reads need beyond the lane: a buffer for a packet with
/// no free slot, and the capture with the lane's index.
struct Ends<'a> {
    scratch: &'a mut [u8],
    lane: usize,
    tap: &'a mut Option<Tap>,
}

/// Reads up to [`READ_BUDGET`] packets; true if the budget ran out (more
/// may be waiting).
fn read_arrivals(
    lane: &mut Lane,
    tun: RawFd,
    delay: u64,
    counters: &Counters,
    ends: &mut Ends,
) -> io::Result<bool> {
    for _ in 0..READ_BUDGET {
        let slot = lane.free_slot();
        let has_slot = slot.is_some();
        let buf = slot.unwrap_or(&mut *ends.scratch);
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
        let at = now();
        if let Some(tap) = ends.tap {
            tap.arrived(ends.lane, at, &buf[..n as usize]);
        }
        if !has_slot {
            Counters::bump(&counters.overflow_drops);
            continue;
        }
        lane.admit(n as usize, at, delay);
    }
    Ok(true)
}

/// Sleeps until a TUN is readable, the timer fires, or an eventfd is
/// written; true if it was the stop eventfd.
fn wait(fds: &Fds, timer: &Timer) -> io::Result<bool> {
    let mut pollfds = [
        fds.tuns[0].as_raw_fd(),
        fds.tuns[1].as_raw_fd(),
        fds.stop,
        timer.fd.as_raw_fd(),
        fds.poke,
    ]
    .map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: five pollfds, live across the call.
    let rc = unsafe { libc::poll(pollfds.as_mut_ptr(), pollfds.len() as libc::nfds_t, -1) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    if pollfds[3].revents != 0 {
        timer.clear();
    }
    // The sample itself is taken when the loop sees it was asked for.
    if pollfds[4].revents != 0 {
        read_eventfd(fds.poke);
    }
    Ok(pollfds[2].revents != 0)
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

    /// Fires at `at` (a [`now`] value, after it).
    fn arm(&self, at: u64) -> io::Result<()> {
        if self.armed.get() == Some(at) {
            return Ok(());
        }
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
        self.armed.set(Some(at));
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
