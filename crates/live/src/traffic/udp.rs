//! Constant-rate UDP flows: datagrams of `size` bytes on the wire (the
//! payload less 28 bytes of IPv4 and UDP headers), one every `size` over
//! `rate`, from `start` until `stop` (or the run's end), upload from the
//! sender's namespace or download from the receiver's. The receiver's
//! end is bound to the flow's port ([`crate::plan::udp_port`]) in the
//! receiver's namespace. A sender that falls behind (off the CPU) sends
//! what is due at once, so the rate holds over the run.

use std::net::{SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kleinrock_lab::{Lab, RECEIVER_ADDR, SENDER_ADDR};
use kleinrock_sim::time::serialization;
use kleinrock_sim::world::UdpConfig;

use super::{setup_error, spawn, Clock, POLL};
use crate::plan::{udp_port, Plan, UDP_HEADERS};
use crate::Error;

/// What a UDP flow counted.
#[derive(Default)]
pub struct Tally {
    pub sent: AtomicU64,
    /// Bytes on the wire (payload and headers) received before the end.
    pub received_bytes: AtomicU64,
}

/// One UDP flow's two sockets.
pub struct Udp {
    index: usize,
    cfg: UdpConfig,
    sender: UdpSocket,
    receiver: UdpSocket,
    pub tally: Arc<Tally>,
}

/// Makes and connects every UDP flow's sockets.
pub fn open_all(lab: &Lab, plan: &Plan) -> Result<Vec<Udp>, Error> {
    let mut flows = Vec::new();
    for (i, cfg) in plan.config.udp.iter().enumerate() {
        let what = format!("UDP flow {i}");
        let near = SocketAddrV4::new(RECEIVER_ADDR, udp_port(i));
        let far = lab
            .receiver()
            .run(move || UdpSocket::bind(near))?
            .map_err(|e| setup_error(&what, e))?;
        let other = lab
            .sender()
            .run(|| UdpSocket::bind(SocketAddrV4::new(SENDER_ADDR, 0)))?
            .map_err(|e| setup_error(&what, e))?;
        let pair = other
            .local_addr()
            .and_then(|a| far.connect(a))
            .and_then(|()| other.connect(near))
            .map_err(|e| setup_error(&what, e));
        pair?;
        let (sender, receiver) = if cfg.upload {
            (other, far)
        } else {
            (far, other)
        };
        receiver
            .set_read_timeout(Some(POLL))
            .map_err(|e| setup_error(&what, e))?;
        flows.push(Udp {
            index: i,
            cfg: cfg.clone(),
            sender,
            receiver,
            tally: Arc::default(),
        });
    }
    Ok(flows)
}

impl Udp {
    pub fn start(&self, clock: &Arc<Clock>) -> Result<Vec<JoinHandle<()>>, Error> {
        let what = format!("UDP flow {}", self.index);
        let tx = self.sender.try_clone().map_err(|e| setup_error(&what, e))?;
        let rx = self
            .receiver
            .try_clone()
            .map_err(|e| setup_error(&what, e))?;
        let (c1, c2) = (Arc::clone(clock), Arc::clone(clock));
        let (t1, t2) = (Arc::clone(&self.tally), Arc::clone(&self.tally));
        let cfg = self.cfg.clone();
        let i = self.index;
        Ok(vec![
            spawn(format!("kl-udptx{i}"), move || send(&tx, &cfg, &c1, &t1))?,
            spawn(format!("kl-udprx{i}"), move || receive(&rx, &c2, &t2))?,
        ])
    }
}

fn send(s: &UdpSocket, cfg: &UdpConfig, clock: &Clock, tally: &Tally) {
    let gap = Duration::from_nanos(serialization(cfg.bytes, cfg.rate_bps));
    let payload = vec![0u8; cfg.bytes.saturating_sub(UDP_HEADERS) as usize];
    // As the simulator: datagrams before the flow's stop, up to and at the
    // run's end.
    let due = |t: Instant| t <= clock.end && cfg.stop.is_none_or(|s| t < clock.at(s));
    let mut next = clock.at(cfg.start);
    while due(next) {
        if !clock.sleep_until(next) {
            return;
        }
        // A datagram the kernel refuses (a full queue) counts as sent and
        // lost, as a queue's drop would.
        let _ = s.send(&payload);
        tally.sent.fetch_add(1, Ordering::Relaxed);
        next += gap;
    }
}

fn receive(s: &UdpSocket, clock: &Clock, tally: &Tally) {
    let mut buf = vec![0u8; 1 << 16];
    while !clock.finished() {
        match s.recv(&mut buf) {
            Ok(n) if Instant::now() <= clock.end => {
                tally
                    .received_bytes
                    .fetch_add((n as u32 + UDP_HEADERS) as u64, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(_) => {}
        }
    }
}
