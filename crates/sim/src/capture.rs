//! Packet captures of the simulated dumbbell (docs/SCENARIOS.md, "Packet
//! captures"): each packet crossing the chosen end of the bottleneck,
//! written as the frame a host would have put on the wire, at its
//! simulated time (nanoseconds from the run's start).
//!
//! The simulator's packets are metadata: a data segment carries its index
//! and an ACK the next index expected, in segments of `mss` bytes. The
//! wire fields follow from them, per TCP flow:
//!
//! - sequence numbers in bytes from an initial sequence number per end
//!   (drawn from the flow's index, so the same in every run): segment `s`
//!   starts at `isn + 1 + s * mss`, wrapping as TCP's do; an ACK's number
//!   and its SACK blocks' edges are the same mapping of its indexes;
//! - the receiver's own sequence space holds the requests of a
//!   request/response flow (each `request` bytes of payload), counted as
//!   they pass the capture; a request acknowledges the data's receiver's
//!   last ACK seen, the data segments acknowledge the requests seen;
//! - window: the scenario's `rwnd` (at most 65535 << 14, what TCP can
//!   advertise), scaled by the smallest shift that fits 16 bits; ECT or CE
//!   in IP as the packet carries them, ECE on ACKs and CWR on data;
//! - the simulator has no handshake (a flow's first segment leaves at its
//!   start): so that readers learn the MSS, the window scale, SACK and ECN
//!   as negotiated, each flow begins with a SYN, SYN-ACK and ACK at its
//!   start instant, taking no time. The left host is the client.
//!
//! No timestamps option: the simulator keeps no TSval a receiver could
//! echo. Its 52 bytes of headers per segment include those 12 bytes, so a
//! frame here is 12 bytes shorter than the simulator counts it on the
//! link; an ACK with SACK blocks is longer by its option (the simulator
//! charges every ACK 52 bytes).

use std::io;
use std::path::Path;

use kleinrock_capture::frame::{Builder, Ecn as WireEcn, Packet as Frame, Tcp, Transport};
use kleinrock_capture::{CaptureSpec, Writer};
use kleinrock_cc::rand::SplitMix64;
use kleinrock_cc::CongestionControl;

use crate::packet::{Ecn, Kind, Packet, HEADER_BYTES};
use crate::time::Time;
use crate::world::Config;

/// The right host's port of TCP flow `i` is `TCP_PORT + i % PORTS`, the
/// left's `CLIENT_PORT + i / PORTS` (UDP flows likewise from `UDP_PORT`):
/// the lab's server ports for the first 30000 flows of each kind, and a
/// distinct pair for each of the simulator's up to 100000.
const TCP_PORT: u16 = 20_000;
const UDP_PORT: u16 = 30_000;
const PORTS: usize = 30_000;
const CLIENT_PORT: u16 = 50_000;

/// What a TCP flow's frames need to know.
struct TcpFlow {
    /// Data left to right.
    upload: bool,
    /// Initial sequence numbers of the data's sender and receiver.
    isn_tx: u32,
    isn_rx: u32,
    ecn: bool,
    /// Request payload of a request/response flow (0 otherwise).
    request: u32,
    /// Requests seen here so far, and the last cumulative ACK seen from
    /// the data's receiver (a segment index).
    requests: u32,
    last_ack: u32,
}

/// A run's capture: the file, and what turns the run's packets into
/// frames.
pub struct Capture {
    spec: CaptureSpec,
    writer: Writer,
    frames: Builder,
    mss: u32,
    window: u16,
    window_scale: u8,
    tcp: Vec<TcpFlow>,
    pings: usize,
    /// UDP flows' directions (true: upload).
    udp: Vec<bool>,
    /// The first error writing the file: reported when the run ends.
    failed: Option<io::Error>,
}

impl Capture {
    /// Creates the capture file at `path` for a run of `cfg`.
    pub fn create(path: &Path, spec: &CaptureSpec, cfg: &Config) -> io::Result<Capture> {
        let comment = format!(
            "kleinrock sim, seed {}: {spec}; simulated time from 0",
            cfg.seed
        );
        let writer = Writer::create(path, spec, &comment)?;
        let rwnd = (cfg.rwnd_segments as u64 * cfg.mss as u64).min(65_535 << 14);
        let window_scale = (0..=14u8).find(|s| rwnd >> s <= 65_535).unwrap_or(14);
        let tcp = cfg
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut draw = SplitMix64::new(0x6b72_6361_7074 ^ i as u64);
                let (left, right) = (draw.next_u64() as u32, draw.next_u64() as u32);
                TcpFlow {
                    upload: f.upload,
                    isn_tx: if f.upload { left } else { right },
                    isn_rx: if f.upload { right } else { left },
                    ecn: (cfg.ecn || f.cc.needs_ecn()) && cfg.peer_ecn,
                    request: f
                        .request_response
                        .map_or(0, |r| r.request_bytes.saturating_sub(HEADER_BYTES)),
                    requests: 0,
                    last_ack: 0,
                }
            })
            .collect();
        Ok(Capture {
            spec: *spec,
            writer,
            frames: Builder::default(),
            mss: cfg.mss,
            window: (rwnd >> window_scale) as u16,
            window_scale,
            tcp,
            pings: cfg.pings.len(),
            udp: cfg.udp.iter().map(|u| u.upload).collect(),
            failed: None,
        })
    }

    /// Which link `p` crosses: 0 up, 1 down.
    fn link(&self, p: &Packet) -> usize {
        let f = p.flow as usize;
        let forward = match p.kind {
            Kind::PingRequest => return 0,
            Kind::PingReply => return 1,
            Kind::Udp => self.udp[f - self.tcp.len() - self.pings],
            Kind::Data => self.tcp[f].upload,
            Kind::Ack | Kind::Request => !self.tcp[f].upload,
        };
        usize::from(!forward)
    }

    /// A packet offered to `link` at `now` (its sender's end).
    pub fn entering(&mut self, now: Time, link: usize, p: &Packet) {
        if self.spec.sees(link) && self.spec.at_entry(link) {
            self.write(now, link, p);
        }
    }

    /// A packet that reached its receiver at `now` (the far end of its
    /// link and pipe).
    pub fn arriving(&mut self, now: Time, p: &Packet) {
        let link = self.link(p);
        if self.spec.sees(link) && !self.spec.at_entry(link) {
            self.write(now, link, p);
        }
    }

    /// TCP flow `flow` starts at `now`: its handshake, as far as this
    /// capture sees it.
    pub fn open(&mut self, now: Time, flow: usize) {
        let f = &self.tcp[flow];
        let (client, server) = if f.upload {
            (f.isn_tx, f.isn_rx)
        } else {
            (f.isn_rx, f.isn_tx)
        };
        let (cport, sport) = ports(flow, TCP_PORT);
        let syn = Tcp {
            src_port: cport,
            dst_port: sport,
            seq: client,
            syn: true,
            ece: f.ecn,
            cwr: f.ecn,
            // A SYN's window is never scaled (RFC 7323, 2.2).
            window: self.unscaled_window(),
            mss: Some(self.mss.min(u16::MAX as u32) as u16),
            window_scale: Some(self.window_scale),
            sack_permitted: true,
            ..Tcp::default()
        };
        let syn_ack = Tcp {
            src_port: sport,
            dst_port: cport,
            seq: server,
            ack: Some(client.wrapping_add(1)),
            cwr: false,
            ..syn
        };
        let ack = Tcp {
            src_port: cport,
            dst_port: sport,
            seq: client.wrapping_add(1),
            ack: Some(server.wrapping_add(1)),
            syn: false,
            ece: false,
            cwr: false,
            window: self.window,
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack: &[],
        };
        for (link, t) in [(0, syn), (1, syn_ack), (0, ack)] {
            if self.spec.sees(link) {
                self.emit(now, link == 0, WireEcn::NotEct, Transport::Tcp(t), 0);
            }
        }
    }

    fn unscaled_window(&self) -> u16 {
        ((self.window as u32) << self.window_scale).min(65_535) as u16
    }

    /// Writes `p`, seen at `now` on `link`.
    fn write(&mut self, now: Time, link: usize, p: &Packet) {
        let up = link == 0;
        let ecn = match p.ecn {
            Ecn::NotEct => WireEcn::NotEct,
            Ecn::Ect => WireEcn::Ect0,
            Ecn::Ce => WireEcn::Ce,
        };
        let f = p.flow as usize;
        let ip_payload = |transport: u32| p.bytes.saturating_sub(20 + transport);
        match p.kind {
            Kind::PingRequest | Kind::PingReply => {
                let id = (1 + (f - self.tcp.len()) % 65_535) as u16;
                let seq = p.seq as u16;
                let t = if p.kind == Kind::PingRequest {
                    Transport::EchoRequest { id, seq }
                } else {
                    Transport::EchoReply { id, seq }
                };
                self.emit(now, up, ecn, t, ip_payload(8));
            }
            Kind::Udp => {
                let (client, server) = ports(f - self.tcp.len() - self.pings, UDP_PORT);
                let (src_port, dst_port) = if up {
                    (client, server)
                } else {
                    (server, client)
                };
                let t = Transport::Udp { src_port, dst_port };
                self.emit(now, up, ecn, t, ip_payload(8));
            }
            Kind::Data | Kind::Ack | Kind::Request => self.tcp_segment(now, up, ecn, p),
        }
    }

    fn tcp_segment(&mut self, now: Time, up: bool, ecn: WireEcn, p: &Packet) {
        let i = p.flow as usize;
        let mss = self.mss;
        let f = &mut self.tcp[i];
        let (isn_tx, isn_rx, request) = (f.isn_tx, f.isn_rx, f.request);
        let tx = |index: u32| isn_tx.wrapping_add(1).wrapping_add(index.wrapping_mul(mss));
        let rx = |requests: u32| {
            isn_rx
                .wrapping_add(1)
                .wrapping_add(requests.wrapping_mul(request))
        };
        let (cport, sport) = ports(i, TCP_PORT);
        let (src_port, dst_port) = if up { (cport, sport) } else { (sport, cport) };
        let mut sack = [(0u32, 0u32); 3];
        let mut t = Tcp {
            src_port,
            dst_port,
            window: self.window,
            ..Tcp::default()
        };
        let payload = match p.kind {
            Kind::Data => {
                t.seq = tx(p.seq);
                t.ack = Some(rx(f.requests));
                t.cwr = p.cwr;
                mss
            }
            Kind::Ack => {
                f.last_ack = p.seq;
                t.seq = rx(f.requests);
                t.ack = Some(tx(p.seq));
                t.ece = p.ece;
                let blocks = p.sack_blocks();
                for (to, &(a, b)) in sack.iter_mut().zip(blocks) {
                    *to = (tx(a), tx(b));
                }
                t.sack = &sack[..blocks.len()];
                0
            }
            _ => {
                // A request: `seq` is its index in the flow.
                f.requests = f.requests.max(p.seq + 1);
                t.seq = rx(p.seq);
                t.ack = Some(tx(f.last_ack));
                request
            }
        };
        self.emit(now, up, ecn, Transport::Tcp(t), payload);
    }

    fn emit(&mut self, now: Time, up: bool, ecn: WireEcn, transport: Transport, payload: u32) {
        if self.failed.is_some() {
            return;
        }
        let frame = Frame {
            up,
            ecn,
            transport,
            payload,
        };
        let result = match self.frames.build(&frame, self.spec.snaplen as usize) {
            Ok((bytes, len)) => self.writer.write(now, bytes, len),
            Err(e) => Err(io::Error::other(e.0)),
        };
        if let Err(e) = result {
            self.failed = Some(e);
        }
    }

    /// Closes the file; the first error met while writing, if any.
    pub fn finish(self) -> io::Result<()> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        self.writer.finish(0)
    }
}

/// The (left, right) ports of flow `i` of a kind whose servers listen
/// from `base`.
fn ports(i: usize, base: u16) -> (u16, u16) {
    (CLIENT_PORT + (i / PORTS) as u16, base + (i % PORTS) as u16)
}
