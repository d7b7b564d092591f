//! Ping flows: ICMP echo requests from the sender's namespace to the
//! receiver every `interval`, from `start` until `stop` (or the run's
//! end), as flent's ping measures RTT under load. Each ping flow has its
//! own echo id ([`crate::plan::ping_id`]) and raw socket, and takes only
//! the replies carrying its id. A request is 84 bytes of IP, ping's
//! default and the simulator's: 20 of IPv4, 8 of ICMP, 56 of payload.
//! The RTT is from just before the request's send to the moment the
//! kernel received the reply (its socket timestamp, as iputils' ping
//! measures), both on the real-time clock, the socket timestamp's: a
//! thread woken late (by up to a scheduler tick, 4 ms at HZ=250, while a
//! lower-priority thread finishes its slice) reads late, but its reply
//! came when it came.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use kleinrock_lab::{Lab, RECEIVER_ADDR};
use kleinrock_sim::results::{Histogram, PingSample};
use kleinrock_sim::time::SEC;
use kleinrock_sim::world::PingConfig;

use super::{setup_error, spawn, Clock, POLL};
use crate::plan::ping_id;
use crate::socket;
use crate::Error;

/// ICMP echo request and reply types.
const ECHO_REQUEST: u8 = 8;
const ECHO_REPLY: u8 = 0;

/// ICMP payload bytes: ping's default.
const PAYLOAD: usize = 56;

/// What a ping flow measured.
#[derive(Default)]
pub struct Tally {
    pub sent: u64,
    pub received: u64,
    pub hist: Histogram,
    pub series: Vec<PingSample>,
}

/// One ping flow's socket.
pub struct Ping {
    index: usize,
    cfg: PingConfig,
    socket: Arc<OwnedFd>,
    pub tally: Arc<Mutex<Tally>>,
}

/// A raw ICMP socket in the sender's namespace per ping flow.
pub fn open_all(lab: &Lab, plan: &crate::plan::Plan) -> Result<Vec<Ping>, Error> {
    let mut pings = Vec::new();
    for (i, cfg) in plan.config.pings.iter().enumerate() {
        let socket = lab
            .sender()
            .run(socket::icmp)?
            .map_err(|e| setup_error(&format!("ping {i}"), e))?;
        pings.push(Ping {
            index: i,
            cfg: cfg.clone(),
            socket: Arc::new(socket),
            tally: Arc::default(),
        });
    }
    Ok(pings)
}

impl Ping {
    pub fn start(&self, clock: &Arc<Clock>) -> Result<JoinHandle<()>, Error> {
        let (clock, socket, tally) = (
            Arc::clone(clock),
            Arc::clone(&self.socket),
            Arc::clone(&self.tally),
        );
        let (i, cfg) = (self.index, self.cfg.clone());
        spawn(format!("kl-ping{i}"), move || {
            pinger(i, &cfg, &clock, &socket, &tally)
        })
    }
}

fn pinger(i: usize, cfg: &PingConfig, clock: &Clock, s: &OwnedFd, tally: &Mutex<Tally>) {
    let id = ping_id(i);
    // As the simulator: requests before the ping's stop, up to and at the
    // run's end.
    let due = |t: Instant| t <= clock.end && cfg.stop.is_none_or(|s| t < clock.at(s));
    let interval = Duration::from_nanos(cfg.interval);
    let mut next = Some(clock.at(cfg.start)).filter(|&t| due(t));
    // Each request's send, on both clocks: the real-time one to measure
    // against the reply's stamp, the monotonic one for the run's time.
    let mut sent_at: Vec<(Instant, SystemTime)> = Vec::new();
    let mut buf = [0u8; 1500];
    loop {
        let now = Instant::now();
        // A request whose time has come is sent even once the run is
        // over: the one due at the very end, by a thread woken late.
        if let Some(t) = next.filter(|&t| now >= t) {
            let seq = sent_at.len() as u16;
            let when = (Instant::now(), SystemTime::now());
            if socket::send_to(s, &echo(id, seq), RECEIVER_ADDR).is_ok() {
                sent_at.push(when);
                if let Ok(mut t) = tally.lock() {
                    t.sent += 1;
                }
            }
            next = Some(t + interval).filter(|&t| due(t));
            continue;
        }
        if clock.finished() {
            return;
        }
        let wait = next.map_or(POLL, |t| t.saturating_duration_since(now).min(POLL));
        let wait_ms = (wait.as_micros() as i32 + 999) / 1000;
        if !socket::readable(s, wait_ms).unwrap_or(false) {
            continue;
        }
        while let Ok(Some((n, stamp))) = socket::recv_stamped(s, &mut buf) {
            let read = (Instant::now(), SystemTime::now());
            let Some(seq) = reply_seq(&buf[..n], id) else {
                continue;
            };
            let Some(&sent) = sent_at.get(index_of(seq, sent_at.len())) else {
                continue;
            };
            // Without a stamp (the kernel gives one to every packet once
            // asked), the read's own time.
            let rtt = stamp
                .unwrap_or(read.1)
                .duration_since(sent.1)
                .unwrap_or(read.0 - sent.0);
            let got = sent.0 + rtt;
            if got > clock.end {
                continue;
            }
            let rtt_us = rtt.as_micros().min(u32::MAX as u128) as u32;
            if let Ok(mut t) = tally.lock() {
                t.received += 1;
                t.hist.add(rtt_us);
                t.series.push(PingSample {
                    t: clock.time(got) as f64 / SEC as f64,
                    ping: i as u32,
                    rtt_ms: rtt_us as f64 / 1000.0,
                });
            }
        }
    }
}

/// Which of `sent` requests a reply with sequence number `seq` answers:
/// the latest with that number (numbers wrap at 2^16).
fn index_of(seq: u16, sent: usize) -> usize {
    let Some(last) = sent.checked_sub(1) else {
        return usize::MAX;
    };
    let back = (last as u16).wrapping_sub(seq) as usize;
    last.checked_sub(back).unwrap_or(usize::MAX)
}

/// An echo request with `id` and `seq`.
fn echo(id: u16, seq: u16) -> Vec<u8> {
    let mut p = vec![0u8; 8 + PAYLOAD];
    p[0] = ECHO_REQUEST;
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    for (k, b) in p[8..].iter_mut().enumerate() {
        *b = k as u8;
    }
    let sum = checksum(&p);
    p[2..4].copy_from_slice(&sum.to_be_bytes());
    p
}

/// The Internet checksum (RFC 1071).
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The sequence number of an echo reply to `id` in a raw socket's read
/// (the IP header first), if it is one.
fn reply_seq(packet: &[u8], id: u16) -> Option<u16> {
    let ihl = (*packet.first()? & 0x0f) as usize * 4;
    let icmp = packet.get(ihl..ihl + 8)?;
    let ours = icmp[0] == ECHO_REPLY && u16::from_be_bytes([icmp[4], icmp[5]]) == id;
    ours.then(|| u16::from_be_bytes([icmp[6], icmp[7]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_echo_request_sums_to_zero_and_its_reply_is_recognised() {
        let p = echo(7, 300);
        assert_eq!(p.len(), 64);
        assert_eq!(checksum(&p), 0);
        let mut reply = vec![0x45u8];
        reply.resize(20, 0);
        reply.extend_from_slice(&p);
        reply[20] = ECHO_REPLY;
        assert_eq!(reply_seq(&reply, 7), Some(300));
        assert_eq!(reply_seq(&reply, 8), None);
        reply[20] = ECHO_REQUEST;
        assert_eq!(reply_seq(&reply, 7), None);
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert_eq!(index_of(3, 10), 3);
        assert_eq!(index_of(9, 10), 9);
        assert_eq!(index_of(3, 0), usize::MAX);
        assert_eq!(index_of(1, 65_540), 65_537);
        assert_eq!(index_of(65_535, 65_540), 65_535);
        assert_eq!(index_of(20, 10), usize::MAX);
    }
}
