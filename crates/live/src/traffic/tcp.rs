//! TCP flows: bulk data, a transfer of `size`, or requests and responses,
//! each over one connection whose listener is in the receiver's namespace
//! on the flow's port ([`crate::plan::tcp_port`]). An upload's data leaves
//! the sender's namespace, a download's the receiver's.
//!
//! Both ends run the flow's algorithm, as in the simulator (DCTCP's
//! receiver echoes CE by its own rules, and its listener must need ECN
//! for ECN to be granted); with `peer_ecn = false` the data's receiver
//! runs the kernel's reno, which with `tcp_ecn=0` neither asks for ECN nor
//! grants it. Writes are whole segments (a multiple of the MSS), so the
//! kernel sends full segments as the simulator does and Nagle never holds
//! one back.

use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kleinrock_cc::CongestionControl;
use kleinrock_lab::{Lab, RECEIVER_ADDR};
use kleinrock_sim::results::Histogram;
use kleinrock_sim::world::{FlowConfig, RequestResponse};

use super::{setup_error, spawn, Clock, POLL};
use crate::plan::{tcp_port, Plan};
use crate::socket::{self, TcpOptions};
use crate::Error;
use kleinrock_lab::TcpInfo as Info;

/// Connections made at once while setting up (each waits a round trip).
const CONNECT_BATCH: usize = 64;

/// How often a finished transfer's sender asks whether its last byte was
/// acknowledged: the completion time's resolution.
const ACK_POLL: Duration = Duration::from_micros(500);

/// At least this much unsent data a writer may queue (`TCP_NOTSENT_LOWAT`);
/// more on fast links, [`LOWAT_TIME`] of the link's rate.
const LOWAT_MIN: u64 = 64 << 10;

/// Unsent data a writer may queue, in time at the link's rate: enough for
/// the writer to be off the CPU this long without the flow going short of
/// data, little enough that a flow told to stop sends little more.
const LOWAT_TIME: Duration = Duration::from_millis(20);

/// What a flow's threads report.
#[derive(Default)]
pub struct Outcome {
    /// Run time (ns) at which a transfer's last byte was acknowledged;
    /// `u64::MAX` until then.
    pub done_at: AtomicU64,
    /// Response times of completed responses, µs.
    pub responses: Mutex<Histogram>,
}

/// One TCP flow's connection.
pub struct Flow {
    index: usize,
    cfg: FlowConfig,
    mss: u32,
    /// The data's sender and receiver (both ends' sockets, in this
    /// process; `TCP_INFO` is read from them).
    pub sender: TcpStream,
    pub receiver: TcpStream,
    pub outcome: Arc<Outcome>,
    /// The receive window the data's receiver holds to (`rwnd`).
    window: Option<u32>,
}

/// The options of a flow's two ends: (data sender, data receiver).
fn options(plan: &Plan, i: usize) -> (TcpOptions, TcpOptions) {
    let cfg = &plan.config;
    let name = plan.codes[i].name().to_string();
    let lowat = (cfg.links[0].rate_bps.max(cfg.links[1].rate_bps) / 8)
        .saturating_mul(LOWAT_TIME.as_micros() as u64)
        / 1_000_000;
    let sender = TcpOptions {
        congestion: name.clone(),
        maxseg: Some(plan.maxseg()),
        notsent_lowat: Some(lowat.max(LOWAT_MIN).min(u32::MAX as u64) as u32),
        pace: cfg.pace_all,
        ..TcpOptions::default()
    };
    // The simulator's default window is 2^24 segments: no limit.
    let unlimited = cfg.rwnd_segments >= 1 << 24;
    let receiver = TcpOptions {
        congestion: if cfg.peer_ecn { name } else { "reno".into() },
        maxseg: Some(plan.maxseg()),
        window_clamp: (!unlimited).then(|| cfg.rwnd_segments.saturating_mul(cfg.mss)),
        ..TcpOptions::default()
    };
    (sender, receiver)
}

/// Connects every TCP flow, [`CONNECT_BATCH`] at a time.
pub fn connect_all(lab: &Lab, plan: &Plan) -> Result<Vec<Flow>, Error> {
    let mut flows = Vec::with_capacity(plan.config.flows.len());
    let indices: Vec<usize> = (0..plan.config.flows.len()).collect();
    for batch in indices.chunks(CONNECT_BATCH) {
        let mut pending = Vec::new();
        for &i in batch {
            let upload = plan.config.flows[i].upload;
            let (data_tx, data_rx) = options(plan, i);
            let (client, server) = if upload {
                (data_tx, data_rx)
            } else {
                (data_rx, data_tx)
            };
            let addr = SocketAddrV4::new(RECEIVER_ADDR, tcp_port(i));
            let what = || format!("TCP flow {i}");
            let listener = lab
                .receiver()
                .run(|| socket::listen(addr, &server))?
                .map_err(|e| setup_error(&what(), e))?;
            let connecting = lab.sender().spawn(move || socket::connect(addr, &client))?;
            pending.push((i, listener, connecting, server));
        }
        for (i, listener, connecting, server) in pending {
            let what = format!("TCP flow {i}");
            let client = connecting
                .join()
                .map_err(|_| setup_error(&what, "the connecting thread panicked"))?
                .map_err(|e| setup_error(&what, e))?;
            let (accepted, _) = listener.accept().map_err(|e| setup_error(&what, e))?;
            // Pacing is the socket's own state, not copied from a listener.
            socket::apply_pacing(&accepted, &server).map_err(|e| setup_error(&what, e))?;
            let cfg = plan.config.flows[i].clone();
            let (sender, receiver) = if cfg.upload {
                (client, accepted)
            } else {
                (accepted, client)
            };
            check_congestion(i, &cfg, &sender, &data_sender_name(plan, i))?;
            let window = options(plan, i).1.window_clamp;
            flows.push(Flow {
                index: i,
                cfg,
                window,
                mss: plan.config.mss,
                sender,
                receiver,
                outcome: Arc::new(Outcome {
                    done_at: AtomicU64::new(u64::MAX),
                    ..Outcome::default()
                }),
            });
        }
    }
    Ok(flows)
}

fn data_sender_name(plan: &Plan, i: usize) -> String {
    options(plan, i).0.congestion
}

/// Checks that the data's sender runs the algorithm asked for: a socket
/// the kernel quietly gave another (a port unloaded meanwhile, say) would
/// make the run measure the wrong code. An algorithm that needs ECN runs
/// as the kernel's reno without it, as DCTCP does (and the simulator's
/// DCTCP does with `peer_ecn = false`).
fn check_congestion(i: usize, cfg: &FlowConfig, s: &TcpStream, want: &str) -> Result<(), Error> {
    let got = socket::congestion(s).map_err(|e| setup_error(&format!("TCP flow {i}"), e))?;
    if got == want || (cfg.cc.needs_ecn() && got == "reno") {
        return Ok(());
    }
    Err(Error::failed(format!(
        "TCP flow {i} asked for the congestion control {want} and its socket runs {got}; is another program changing the lab's sockets?"
    )))
}

impl Flow {
    /// Starts the flow's two threads.
    pub fn start(&self, clock: &Arc<Clock>) -> Result<Vec<JoinHandle<()>>, Error> {
        let what = format!("TCP flow {}", self.index);
        let clone = |s: &TcpStream| -> Result<TcpStream, Error> {
            let c = s.try_clone().map_err(|e| setup_error(&what, e))?;
            c.set_read_timeout(Some(POLL))
                .and_then(|()| c.set_write_timeout(Some(POLL)))
                .map_err(|e| setup_error(&what, e))?;
            Ok(c)
        };
        let (tx, rx) = (clone(&self.sender)?, clone(&self.receiver)?);
        let end = End {
            clock: Arc::clone(clock),
            start: clock.at(self.cfg.start),
            stop: self.cfg.stop.map(|s| clock.at(s)),
            chunk: chunk(self.mss),
            window: self.window,
        };
        let (e1, e2) = (end.clone(), end);
        let i = self.index;
        let outcome = Arc::clone(&self.outcome);
        let limit = self.cfg.size_segments.map(|s| s * self.mss as u64);
        Ok(match self.cfg.request_response {
            None => vec![
                spawn(format!("kl-tx{i}"), move || e1.send(tx, limit, &outcome))?,
                spawn(format!("kl-rx{i}"), move || e2.drain(rx))?,
            ],
            Some(rr) => {
                let response = rr.response_segments * self.mss as u64;
                vec![
                    spawn(format!("kl-srv{i}"), move || e1.serve(tx, &rr, response))?,
                    spawn(format!("kl-cli{i}"), move || {
                        e2.ask(rx, &rr, response, &outcome)
                    })?,
                ]
            }
        })
    }

    /// `TCP_INFO` of the data's sender and receiver.
    pub fn info(&self) -> io::Result<(Info, Info)> {
        Ok((Info::of(&self.sender)?, Info::of(&self.receiver)?))
    }
}

/// The largest write that is whole segments and at most 64 KiB.
fn chunk(mss: u32) -> usize {
    ((64 << 10) / mss as usize).max(1) * mss as usize
}

/// What a flow's thread knows of its run.
#[derive(Clone)]
struct End {
    clock: Arc<Clock>,
    start: Instant,
    stop: Option<Instant>,
    chunk: usize,
    window: Option<u32>,
}

impl End {
    fn stopped(&self) -> bool {
        self.clock.finished() || self.stop.is_some_and(|s| Instant::now() >= s)
    }

    /// Bulk data, or `limit` bytes, from the flow's start until its stop;
    /// a transfer then waits for its last byte's acknowledgement.
    fn send(&self, mut s: TcpStream, limit: Option<u64>, outcome: &Outcome) {
        if !self.clock.sleep_until(self.start) {
            return;
        }
        let Ok(base) = Info::of(&s) else {
            return;
        };
        let buf = vec![0u8; self.chunk];
        let mut sent = 0u64;
        while !self.stopped() && limit.is_none_or(|l| sent < l) {
            let n = limit.map_or(buf.len() as u64, |l| (l - sent).min(buf.len() as u64));
            match s.write(&buf[..n as usize]) {
                Ok(k) => sent += k as u64,
                Err(e) if retry(&e) => {}
                Err(_) => return,
            }
        }
        if let Some(l) = limit.filter(|&l| sent == l) {
            self.await_acked(&s, base.bytes_acked + l, outcome);
        }
    }

    /// Polls until the socket's peer has acknowledged `target` bytes (the
    /// count includes the handshake's), and records when.
    fn await_acked(&self, s: &TcpStream, target: u64, outcome: &Outcome) {
        while !self.clock.finished() {
            match Info::of(s) {
                Ok(i) if i.bytes_acked >= target => {
                    let t = self.clock.time(Instant::now());
                    outcome.done_at.store(t, Ordering::SeqCst);
                    return;
                }
                Ok(_) => std::thread::sleep(ACK_POLL),
                Err(_) => return,
            }
        }
    }

    /// Reads and discards until the run ends (the window stays open).
    fn drain(&self, mut s: TcpStream) {
        let mut buf = vec![0u8; 1 << 16];
        while !self.clock.finished() {
            match s.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => self.hold_window(&s),
                Err(e) if retry(&e) => {}
                Err(_) => return,
            }
        }
    }

    /// The server: answers each request with `response` bytes.
    fn serve(&self, mut s: TcpStream, rr: &RequestResponse, response: u64) {
        let mut request = vec![0u8; rr.request_bytes as usize];
        let buf = vec![0u8; self.chunk];
        while self.read_exact(&mut s, &mut request) {
            let mut left = response;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                if !self.write_all(&mut s, &buf[..n]) {
                    return;
                }
                left -= n as u64;
            }
        }
    }

    /// The client: a request at the flow's start, each next one `think`
    /// after the last response arrived in full, none after the flow's
    /// stop; records each response's time.
    fn ask(&self, mut s: TcpStream, rr: &RequestResponse, response: u64, outcome: &Outcome) {
        if !self.clock.sleep_until(self.start) {
            return;
        }
        let request = vec![0u8; rr.request_bytes as usize];
        let mut buf = vec![0u8; 1 << 16];
        while !self.stopped() {
            let asked = Instant::now();
            if !self.write_all(&mut s, &request) {
                return;
            }
            let mut left = response;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                if !self.read_exact(&mut s, &mut buf[..n]) {
                    return;
                }
                self.hold_window(&s);
                left -= n as u64;
            }
            let answered = Instant::now();
            if answered > self.clock.end {
                return;
            }
            let us = (answered - asked).as_micros().min(u32::MAX as u128) as u32;
            if let Ok(mut h) = outcome.responses.lock() {
                h.add(us);
            }
            if !self
                .clock
                .sleep_until(answered + std::time::Duration::from_nanos(rr.think))
            {
                return;
            }
        }
    }

    /// Sets the receive window back to the scenario's `rwnd`, which the
    /// kernel may have raised ([`socket::clamp_window`]).
    fn hold_window(&self, s: &TcpStream) {
        if let Some(w) = self.window {
            let _ = socket::clamp_window(s, w);
        }
    }

    /// Reads `buf` whole; false if the run ended or the connection failed
    /// first.
    fn read_exact(&self, s: &mut TcpStream, buf: &mut [u8]) -> bool {
        let mut got = 0;
        while got < buf.len() {
            if self.clock.finished() {
                return false;
            }
            match s.read(&mut buf[got..]) {
                Ok(0) => return false,
                Ok(n) => got += n,
                Err(e) if retry(&e) => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// Writes `buf` whole; false if the run ended or the connection failed
    /// first.
    fn write_all(&self, s: &mut TcpStream, buf: &[u8]) -> bool {
        let mut put = 0;
        while put < buf.len() {
            if self.clock.finished() {
                return false;
            }
            match s.write(&buf[put..]) {
                Ok(0) => return false,
                Ok(n) => put += n,
                Err(e) if retry(&e) => {}
                Err(_) => return false,
            }
        }
        true
    }
}

/// A timeout (the thread looks at the clock and tries again) or a signal.
fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}
