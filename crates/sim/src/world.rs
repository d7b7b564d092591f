//! The simulated world: a dumbbell of two bottleneck links (left to right,
//! "up", and right to left, "down"), flows whose data and ACKs cross them,
//! per-flow propagation pipes, and the event loop that drives it all.
//!
//! A flow's base RTT is split evenly between its two pipes (data after the
//! data-direction bottleneck, ACKs after the other). Hosts and access links
//! are ideal (no delay, no queue): the bottlenecks are where the queues are.

use std::path::PathBuf;

use kleinrock_capture::CaptureSpec;
use kleinrock_cc::rand::SplitMix64;
use kleinrock_cc::{Algorithm, CaState, CongestionControl};
use kleinrock_trace::Recorder;

pub use kleinrock_link::config::{LinkConfig, QueueConfig};

use crate::capture::Capture;
use crate::event::{Event, EventQueue};
use crate::link::{Arrival, Link, LinkStats, Pipe, Qdisc};
use crate::packet::{Kind, Packet, Wire, HEADER_BYTES};
use crate::results::{
    FlowSample, FlowSummary, Histogram, PingSample, PingSummary, QueueSample, Results, UdpSummary,
};
use crate::tcp::receiver::Receiver;
use crate::tcp::sender::{Sender, SenderConfig};
use crate::time::{serialization, Time, NEVER, SEC};

/// The simulator's link for one direction of the dumbbell.
fn build_link(cfg: &LinkConfig, mss: u32) -> Link {
    // RED's idle time is counted in data packets' transmissions.
    let qdisc = Qdisc::new(
        &cfg.queue,
        serialization(data_packet_bytes(mss), cfg.rate_bps),
    );
    let mut link = Link::new(cfg.rate_bps, qdisc, cfg.loss.clone());
    link.trace = cfg.trace.clone().map(|t| (t, 0));
    link
}

/// One TCP flow.
#[derive(Clone, Debug)]
pub struct FlowConfig {
    pub cc: Algorithm,
    pub rtt: Time,
    pub start: Time,
    pub stop: Option<Time>,
    /// Data left to right (upload) or right to left (download).
    pub upload: bool,
    /// A transfer of this many segments; `None`: bulk.
    pub size_segments: Option<u64>,
    /// Record the flow's hook calls here.
    pub trace: Option<PathBuf>,
    /// Requests and responses instead of bulk data.
    pub request_response: Option<RequestResponse>,
}

/// A request/response workload: the client (the flow's receiver side)
/// sends a one-packet request; the server answers with `response_segments`;
/// after the whole response arrives and `think` passes, the next request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestResponse {
    pub request_bytes: u32,
    pub response_segments: u64,
    pub think: Time,
}

/// A ping flow: echo requests left to right, replies right to left,
/// measuring RTT under load as flent's ping does.
#[derive(Clone, Debug)]
pub struct PingConfig {
    pub rtt: Time,
    pub interval: Time,
    pub start: Time,
    pub stop: Option<Time>,
}

/// Constant-rate UDP cross traffic.
#[derive(Clone, Debug)]
pub struct UdpConfig {
    pub rate_bps: u64,
    /// Datagram size on the wire, bytes.
    pub bytes: u32,
    pub rtt: Time,
    pub upload: bool,
    pub start: Time,
    pub stop: Option<Time>,
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub duration: Time,
    pub seed: u64,
    pub sample_interval: Time,
    pub hz: u32,
    pub mss: u32,
    pub init_cwnd: u32,
    pub rwnd_segments: u32,
    pub pace_all: bool,
    pub ecn: bool,
    /// Does the receiving end negotiate ECN? A peer that does not leaves
    /// every flow without it, DCTCP included (which then runs as Reno).
    pub peer_ecn: bool,
    pub slow_start_after_idle: bool,
    /// Linux's delayed ACKs (quick ACKs, then every second segment, 40 ms
    /// timer); false: ACK every segment.
    pub delayed_acks: bool,
    /// [up, down]; each link's `jitter` applies to the data packets that
    /// cross it, in their flow's pipe (see [`Pipe`]).
    pub links: [LinkConfig; 2],
    pub flows: Vec<FlowConfig>,
    pub pings: Vec<PingConfig>,
    pub udp: Vec<UdpConfig>,
    /// A packet capture the scenario asks for (`[capture]`)...
    pub capture: Option<CaptureSpec>,
    /// ...written here: the program running the scenario chooses where
    /// (`kleinrock sim` in the run's results directory). Both, or no
    /// capture.
    pub capture_file: Option<PathBuf>,
}

struct Ping {
    hist: Histogram,
    sent: u64,
    received: u64,
}

struct Udp {
    sent: u64,
    received_bytes: u64,
    gap: Time,
}

struct Flow {
    sender: Sender,
    receiver: Receiver,
    /// Index of the link the data crosses.
    data_link: usize,
    stop: Option<Time>,
    /// When the flow's pending timer event fires ([`NEVER`]: none).
    wake_at: Time,
    /// The sender's `next_wakeup()` after its last change ([`NEVER`] for
    /// none): only the sender's own calls change it, so the receiver's
    /// calls reuse it.
    sender_wakeup: Time,
    rtt_hist: Histogram,
    last_delivered: u64,
    /// The sender's count of delivered (ACKed or SACKed) segments at the
    /// last sample.
    last_acked: u64,
    /// Request/response: segments delivered when the current response is
    /// complete, when its request left, and the response times.
    rr_target: u64,
    rr_sent_at: Option<Time>,
    responses: Histogram,
    responses_done: u64,
}

/// What packets cross: the two links, the flows' pipes after them, the
/// event queue their arrivals go on, and the random draws of loss and
/// jitter.
struct Net {
    events: EventQueue,
    rng: SplitMix64,
    links: [Link; 2],
    /// Two per flow: `2 * flow` carries data, `2 * flow + 1` ACKs.
    pipes: Vec<Pipe>,
    /// Sees each packet as it enters a link and as it arrives.
    capture: Option<Box<Capture>>,
}

impl Net {
    /// Offers a packet to a link at `now`; if it gets through, it is on
    /// its way.
    #[inline(always)]
    fn put_on_link(&mut self, now: Time, link: usize, p: &mut Packet) {
        if let Some(c) = &mut self.capture {
            entering(c, now, link, p);
        }
        match self.links[link].arrive(now, p, &mut self.rng) {
            Arrival::Departs(done) => self.propagate(done, p),
            Arrival::Started(done) => self.events.schedule(done, Event::LinkTxDone(link as u16)),
            Arrival::Queued | Arrival::Dropped => {}
        }
    }

    /// Puts a packet that leaves its link at `at` into its pipe.
    #[inline(always)]
    fn propagate(&mut self, at: Time, p: &Packet) {
        let pipe = 2 * p.flow as usize + usize::from(p.kind.is_reverse());
        if let Some(t) = self.pipes[pipe].push(at, p, &mut self.rng) {
            self.events.schedule(t, Event::PipeArrival(pipe as u32));
        }
    }
}

/// One of a flow's two directions: its endpoint's packets go onto the
/// link the moment they are sent. Nothing an endpoint does reads the
/// network or the event queue, so the events come out in the order the
/// packets were sent, as from a buffer flushed after the call.
struct Onto<'a> {
    net: &'a mut Net,
    now: Time,
    link: usize,
}

impl<'a> Onto<'a> {
    fn new(net: &'a mut Net, now: Time, link: usize) -> Onto<'a> {
        Onto { net, now, link }
    }
}

impl Wire for Onto<'_> {
    #[inline(always)]
    fn send(&mut self, mut p: Packet) {
        self.net.put_on_link(self.now, self.link, &mut p);
    }
}

/// A run in progress.
pub struct Sim {
    now: Time,
    net: Net,
    flows: Vec<Flow>,
    pings: Vec<Ping>,
    udps: Vec<Udp>,
    cfg: Config,
    results: Results,
    last_link_stats: [LinkStats; 2],
    pub events_processed: u64,
}

impl Sim {
    /// Builds the world. Fails only if a trace or capture file cannot be
    /// created.
    pub fn new(cfg: Config) -> std::io::Result<Sim> {
        let capture = match (&cfg.capture, &cfg.capture_file) {
            (Some(spec), Some(path)) => Some(Box::new(Capture::create(path, spec, &cfg)?)),
            _ => None,
        };
        let links = [0, 1].map(|i| build_link(&cfg.links[i], cfg.mss));
        let mut flows = Vec::with_capacity(cfg.flows.len());
        let mut pipes = Vec::with_capacity(cfg.flows.len() * 2);
        let mut events = EventQueue::new();
        for (i, f) in cfg.flows.iter().enumerate() {
            let recorder = match &f.trace {
                Some(path) => Some(Recorder::create(path, &f.cc)?),
                None => None,
            };
            let scfg = SenderConfig {
                mss: cfg.mss,
                init_cwnd: cfg.init_cwnd,
                hz: cfg.hz,
                pace_all: cfg.pace_all,
                // An algorithm that needs ECN (DCTCP) negotiates it whatever
                // the scenario says, as Linux does for TCP_CONG_NEEDS_ECN.
                ecn: (cfg.ecn || f.cc.needs_ecn()) && cfg.peer_ecn,
                limit_segments: if f.request_response.is_some() {
                    Some(0)
                } else {
                    f.size_segments
                },
                rwnd_segments: cfg.rwnd_segments,
                slow_start_after_idle: cfg.slow_start_after_idle,
                seed: cfg.seed,
            };
            flows.push(Flow {
                sender: Sender::new(i as u32, f.cc.clone(), scfg, recorder),
                // Both ends run the flow's algorithm: the receiver echoes
                // CE as the algorithm asks (DCTCP's per-packet echo).
                receiver: Receiver::new(i as u32, cfg.delayed_acks, f.cc.ce_echo()),
                data_link: if f.upload { 0 } else { 1 },
                stop: f.stop,
                wake_at: NEVER,
                sender_wakeup: NEVER,
                rtt_hist: Histogram::default(),
                last_delivered: 0,
                last_acked: 0,
                rr_target: 0,
                rr_sent_at: None,
                responses: Histogram::default(),
                responses_done: 0,
            });
            let (data, ack) = if f.upload { (0, 1) } else { (1, 0) };
            let (d_data, d_ack) = (cfg.links[data].delay, cfg.links[ack].delay);
            pipes.push(Pipe::new(f.rtt / 2 + d_data, cfg.links[data].jitter));
            pipes.push(Pipe::new(f.rtt - f.rtt / 2 + d_ack, 0));
            events.schedule(f.start, Event::FlowStart(i as u32));
            if let Some(stop) = f.stop {
                events.schedule(stop, Event::FlowStop(i as u32));
            }
        }
        let n = cfg.flows.len() as u32;
        for (i, p) in cfg.pings.iter().enumerate() {
            pipes.push(Pipe::new(p.rtt / 2 + cfg.links[0].delay, 0));
            pipes.push(Pipe::new(p.rtt - p.rtt / 2 + cfg.links[1].delay, 0));
            events.schedule(p.start, Event::PingSend(n + i as u32));
        }
        let np = n + cfg.pings.len() as u32;
        for (i, u) in cfg.udp.iter().enumerate() {
            let (fwd, rev) = if u.upload { (0, 1) } else { (1, 0) };
            pipes.push(Pipe::new(u.rtt / 2 + cfg.links[fwd].delay, 0));
            pipes.push(Pipe::new(u.rtt - u.rtt / 2 + cfg.links[rev].delay, 0));
            events.schedule(u.start, Event::UdpSend(np + i as u32));
        }
        let pings = cfg
            .pings
            .iter()
            .map(|_| Ping {
                hist: Histogram::default(),
                sent: 0,
                received: 0,
            })
            .collect();
        let udps = cfg
            .udp
            .iter()
            .map(|u| Udp {
                sent: 0,
                received_bytes: 0,
                gap: serialization(u.bytes, u.rate_bps),
            })
            .collect();
        events.schedule(cfg.sample_interval, Event::Sample);
        Ok(Sim {
            now: 0,
            net: Net {
                events,
                rng: SplitMix64::new(cfg.seed),
                links,
                pipes,
                capture,
            },
            flows,
            pings,
            udps,
            results: Results::new(cfg.duration, cfg.sample_interval, cfg.seed, cfg.flows.len()),
            last_link_stats: [LinkStats::default(); 2],
            cfg,
            events_processed: 0,
        })
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Runs to the end; `progress` is called with the fraction done about
    /// every 1% of simulated time.
    pub fn run(mut self, progress: &mut dyn FnMut(f64)) -> std::io::Result<Results> {
        let end = self.cfg.duration;
        let step = (end / 100).max(1);
        let mut next_report = step;
        while let Some((t, ev)) = self.net.events.peek() {
            if t > end {
                break;
            }
            self.now = t;
            self.events_processed += 1;
            // A pipe may go on serving its own arrivals up to the next
            // progress report and the end.
            self.dispatch(ev, next_report.min(end.saturating_add(1)));
            if t >= next_report {
                progress(t as f64 / end as f64);
                next_report = t + step;
            }
        }
        self.now = end;
        self.finish()
    }

    /// Runs `ev`, the next event, and takes it off the queue: a pipe's
    /// arrival stays on it until the pipe is served and is then replaced by
    /// the pipe's next arrival, if any (see [`Sim::pipe_arrival`] for
    /// `until`).
    fn dispatch(&mut self, ev: Event, until: Time) {
        if let Event::PipeArrival(p) = ev {
            return self.pipe_arrival(p as usize, until);
        }
        self.net.events.pop();
        match ev {
            Event::LinkTxDone(l) => self.link_done(l as usize),
            Event::PipeArrival(_) => {}
            Event::FlowTimer(f) => self.flow_timer(f as usize),
            Event::FlowStart(f) => {
                let now = self.now;
                if let Some(c) = &mut self.net.capture {
                    c.open(now, f as usize);
                }
                let fl = &mut self.flows[f as usize];
                fl.sender
                    .start(now, &mut Onto::new(&mut self.net, now, fl.data_link));
                self.arm_flow(f as usize, true);
                if self.cfg.flows[f as usize].request_response.is_some() {
                    self.send_request(f);
                }
            }
            Event::RequestSend(f) => self.send_request(f),
            Event::FlowStop(f) => {
                let fl = &mut self.flows[f as usize];
                fl.sender.stop();
                fl.sender_wakeup = fl.sender.next_wakeup().unwrap_or(NEVER);
            }
            Event::PingSend(id) => self.ping_send(id),
            Event::UdpSend(id) => self.udp_send(id),
            Event::Sample => self.sample(),
        }
    }

    /// Schedules the flow's timer event for the earlier of its sender's
    /// and its receiver's deadlines, unless one is pending before it.
    #[inline(always)]
    fn arm_flow(&mut self, f: usize, sender_changed: bool) {
        let fl = &mut self.flows[f];
        if sender_changed {
            fl.sender_wakeup = fl.sender.next_wakeup().unwrap_or(NEVER);
        }
        // The earlier deadline by a `min` over plain times, without a
        // branch on which of the two exist.
        let want = fl
            .sender_wakeup
            .min(fl.receiver.delack_deadline().unwrap_or(NEVER));
        if want == NEVER {
            return;
        }
        let t = want.max(self.now);
        // With no timer pending, `wake_at` is NEVER, after any `t`.
        if t < fl.wake_at || fl.wake_at < self.now {
            fl.wake_at = t;
            self.net.events.schedule(t, Event::FlowTimer(f as u32));
        }
    }

    fn flow_timer(&mut self, f: usize) {
        let now = self.now;
        let fl = &mut self.flows[f];
        if fl.wake_at == now {
            fl.wake_at = NEVER;
        }
        if fl
            .receiver
            .on_timer(now, &mut Onto::new(&mut self.net, now, 1 - fl.data_link))
        {
            self.arm_flow(f, false);
        }
        let fl = &mut self.flows[f];
        fl.sender
            .on_timer(now, &mut Onto::new(&mut self.net, now, fl.data_link));
        self.arm_flow(f, true);
    }

    fn link_done(&mut self, l: usize) {
        let net = &mut self.net;
        let (p, next) = net.links[l].complete(self.now, &mut net.rng);
        if let Some(done) = next {
            net.events.schedule(done, Event::LinkTxDone(l as u16));
        }
        if let Some(p) = p {
            net.propagate(self.now, &p);
        }
    }

    fn put_on_link(&mut self, link: usize, p: &mut Packet) {
        self.net.put_on_link(self.now, link, p);
    }

    fn send_request(&mut self, f: u32) {
        let Some(rr) = self.cfg.flows[f as usize].request_response else {
            return;
        };
        if self.cfg.flows[f as usize]
            .stop
            .is_some_and(|s| self.now >= s)
        {
            return;
        }
        let fl = &mut self.flows[f as usize];
        fl.rr_target += rr.response_segments;
        fl.rr_sent_at = Some(self.now);
        let link = 1 - fl.data_link;
        let mut request = Packet::other(f, Kind::Request, rr.request_bytes, self.now);
        // Its index in the flow, for a capture's sequence numbers.
        request.seq = (fl.rr_target / rr.response_segments.max(1)).saturating_sub(1) as u32;
        self.put_on_link(link, &mut request);
    }

    /// A request/response flow's receiver got data: is the response whole?
    /// Asks the flow first: a request is outstanding only on a
    /// request/response flow, and the flow's record is the one the data
    /// packet has just touched, where the scenario's is not.
    #[inline(always)]
    fn check_response(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        let Some(sent) = fl.rr_sent_at else {
            return;
        };
        if fl.receiver.delivered < fl.rr_target {
            return;
        }
        let Some(rr) = self.cfg.flows[f].request_response else {
            return;
        };
        fl.rr_sent_at = None;
        fl.responses_done += 1;
        fl.responses
            .add(((self.now - sent) / 1000).min(u32::MAX as u64) as u32);
        self.net
            .events
            .schedule(self.now + rr.think, Event::RequestSend(f as u32));
    }

    fn ping_send(&mut self, id: u32) {
        let i = id as usize - self.flows.len();
        let cfg = &self.cfg.pings[i];
        if cfg.stop.is_some_and(|s| self.now >= s) {
            return;
        }
        let next = self.now + cfg.interval;
        // 84 bytes: IPv4 20 + ICMP 8 + 56 bytes of payload, ping's default;
        // `seq` is the echo's sequence number (a capture shows it).
        let mut request = Packet::other(id, Kind::PingRequest, 84, self.now);
        request.seq = self.pings[i].sent as u32;
        self.pings[i].sent += 1;
        self.put_on_link(0, &mut request);
        self.net.events.schedule(next, Event::PingSend(id));
    }

    fn udp_send(&mut self, id: u32) {
        let i = id as usize - self.flows.len() - self.pings.len();
        let cfg = &self.cfg.udp[i];
        if cfg.stop.is_some_and(|s| self.now >= s) {
            return;
        }
        let (link, bytes) = (if cfg.upload { 0 } else { 1 }, cfg.bytes);
        let next = self.now + self.udps[i].gap;
        self.udps[i].sent += 1;
        self.put_on_link(link, &mut Packet::other(id, Kind::Udp, bytes, self.now));
        self.net.events.schedule(next, Event::UdpSend(id));
    }

    /// Serves a pipe whose head has arrived, one packet at a time. Packets
    /// arriving at the same instant belong to this event. While the next
    /// arrival comes before `until` and before every other event, it is
    /// the next event: it is counted and served here, without a round trip
    /// through the event queue.
    fn pipe_arrival(&mut self, pipe: usize, until: Time) {
        loop {
            if let Some(p) = self.net.pipes[pipe].pop() {
                self.deliver(p);
            }
            match self.net.pipes[pipe].head_time() {
                Some(at) if at <= self.now => {}
                Some(at) if at < until && self.net.events.stays_next(at) => {
                    self.now = at;
                    self.events_processed += 1;
                }
                Some(at) => {
                    return self
                        .net
                        .events
                        .replace_next(at, Event::PipeArrival(pipe as u32))
                }
                None => {
                    self.net.events.pop();
                    return;
                }
            }
        }
    }

    /// Hands a packet that has reached the end of its pipe to its
    /// receiver.
    #[inline(always)]
    fn deliver(&mut self, p: Packet) {
        if let Some(c) = &mut self.net.capture {
            arriving(c, self.now, p);
        }
        let f = p.flow as usize;
        match p.kind {
            Kind::PingRequest => {
                let mut reply = Packet::other(p.flow, Kind::PingReply, p.bytes, p.sent);
                reply.seq = p.seq;
                self.put_on_link(1, &mut reply);
            }
            Kind::PingReply => {
                let i = f - self.flows.len();
                let rtt_us = ((self.now - p.sent) / 1000).min(u32::MAX as u64) as u32;
                self.pings[i].received += 1;
                self.pings[i].hist.add(rtt_us);
                self.results.ping_series.push(PingSample {
                    t: self.now as f64 / SEC as f64,
                    ping: i as u32,
                    rtt_ms: rtt_us as f64 / 1000.0,
                });
            }
            Kind::Request => {
                let segments = self.cfg.flows[f]
                    .request_response
                    .map_or(0, |r| r.response_segments);
                let fl = &mut self.flows[f];
                let wire = &mut Onto::new(&mut self.net, self.now, fl.data_link);
                fl.sender.offer(self.now, segments, wire);
                self.arm_flow(f, true);
            }
            Kind::Udp => {
                let i = f - self.flows.len() - self.pings.len();
                self.udps[i].received_bytes += p.bytes as u64;
            }
            Kind::Data => {
                let fl = &mut self.flows[f];
                let wire = &mut Onto::new(&mut self.net, self.now, 1 - fl.data_link);
                // Only a newly armed delayed-ACK timer can want the flow
                // woken sooner: the sender's wakeup has not changed since
                // the flow's last `arm_flow` (a stop only defers it), and
                // an ACK sent clears the receiver's deadline, which leaves
                // the pending timer early enough.
                if fl.receiver.on_data(self.now, &p, wire) {
                    self.arm_flow(f, false);
                }
                self.check_response(f);
            }
            Kind::Ack => {
                let fl = &mut self.flows[f];
                let wire = &mut Onto::new(&mut self.net, self.now, fl.data_link);
                fl.sender.on_ack(self.now, &p, wire);
                if let Some(r) = fl.sender.last_rtt_sample.take() {
                    fl.rtt_hist.add(r);
                }
                self.arm_flow(f, true);
            }
        }
    }

    fn sample(&mut self) {
        let now = self.now;
        let interval = self.cfg.sample_interval;
        for (i, fl) in self.flows.iter_mut().enumerate() {
            let s = &fl.sender;
            let delivered = fl.receiver.delivered;
            let bytes = (delivered - fl.last_delivered) * self.cfg.mss as u64;
            fl.last_delivered = delivered;
            let acked = s.stats.delivered;
            let acked_bytes = (acked - fl.last_acked) * self.cfg.mss as u64;
            fl.last_acked = acked;
            self.results.flow_series.push(FlowSample {
                t: now as f64 / SEC as f64,
                flow: i as u32,
                goodput_bps: bytes as f64 * 8.0 * SEC as f64 / interval as f64,
                throughput_bps: acked_bytes as f64 * 8.0 * SEC as f64 / interval as f64,
                cwnd: s.sk.snd_cwnd,
                ssthresh: s.sk.snd_ssthresh,
                srtt_us: s.sk.srtt_us >> 3,
                min_rtt_us: if s.sk.min_rtt_us == u32::MAX {
                    0
                } else {
                    s.sk.min_rtt_us
                },
                inflight: s.sb.in_flight(),
                pacing_rate_bps: s.sk.pacing_rate.saturating_mul(8),
                delivery_rate_bps: if s.rate.rate_interval_us == 0 {
                    0.0
                } else {
                    s.rate.rate_delivered as f64 * self.cfg.mss as f64 * 8e6
                        / s.rate.rate_interval_us as f64
                },
                retransmits: s.stats.retransmits,
                segs_out: s.stats.segments_sent,
                ca_state: ca_state_name(s.sk.icsk_ca_state),
            });
        }
        for (l, link) in self.net.links.iter_mut().enumerate() {
            let (pkts, bytes) = link.backlog(now);
            let st = link.stats;
            let last = self.last_link_stats[l];
            self.results.queue_series.push(QueueSample {
                t: now as f64 / SEC as f64,
                link: if l == 0 { "up" } else { "down" },
                packets: pkts as u32,
                bytes,
                delay_us: bytes * 8 * 1_000_000 / link.rate_bps.max(1),
                drops: (st.queue_drops - last.queue_drops) + (st.loss_drops - last.loss_drops),
                marks: st.marks - last.marks,
            });
            self.last_link_stats[l] = st;
        }
        self.net.events.schedule(now + interval, Event::Sample);
    }

    fn finish(mut self) -> std::io::Result<Results> {
        for (i, fl) in self.flows.iter_mut().enumerate() {
            let cfg = &self.cfg.flows[i];
            let start = cfg.start;
            // A transfer's goodput is over its completion time; a bulk
            // flow's over the time it was offered data.
            let end = match (&cfg.request_response, fl.sender.done_at) {
                (None, Some(done)) => done,
                _ => fl.stop.unwrap_or(self.cfg.duration),
            }
            .min(self.cfg.duration);
            let active = end.saturating_sub(start).max(1);
            let bytes = fl.receiver.delivered * self.cfg.mss as u64;
            let s = &fl.sender;
            self.results.flows.push(FlowSummary {
                flow: i as u32,
                cc: cfg.cc.spec(),
                direction: if cfg.upload { "upload" } else { "download" },
                rtt_ms: (cfg.rtt + self.cfg.links[0].delay + self.cfg.links[1].delay) as f64 / 1e6,
                goodput_bps: bytes as f64 * 8.0 * SEC as f64 / active as f64,
                bytes,
                segments_sent: s.stats.segments_sent,
                retransmits: s.stats.retransmits,
                rtos: s.stats.rtos,
                tlps: s.stats.tlps,
                recoveries: s.stats.recoveries,
                rtt_p50_ms: fl.rtt_hist.quantile(0.50) as f64 / 1000.0,
                rtt_p95_ms: fl.rtt_hist.quantile(0.95) as f64 / 1000.0,
                rtt_p99_ms: fl.rtt_hist.quantile(0.99) as f64 / 1000.0,
                responses: fl.responses_done,
                response_p50_ms: fl.responses.quantile(0.5) as f64 / 1000.0,
                response_p95_ms: fl.responses.quantile(0.95) as f64 / 1000.0,
                completion_s: if cfg.request_response.is_some() {
                    None
                } else {
                    s.done_at.map(|t| (t - start) as f64 / SEC as f64)
                },
            });
            self.results.rtt.merge(&fl.rtt_hist);
            if let Some(r) = fl.sender.take_recorder() {
                r.finish()?;
            }
        }
        for (i, (p, cfg)) in self.pings.iter().zip(&self.cfg.pings).enumerate() {
            self.results.pings.push(PingSummary {
                ping: i as u32,
                rtt_ms: (cfg.rtt + self.cfg.links[0].delay + self.cfg.links[1].delay) as f64 / 1e6,
                sent: p.sent,
                received: p.received,
                rtt_p50_ms: p.hist.quantile(0.5) as f64 / 1000.0,
                rtt_p95_ms: p.hist.quantile(0.95) as f64 / 1000.0,
            });
        }
        for (i, (u, cfg)) in self.udps.iter().zip(&self.cfg.udp).enumerate() {
            let active = cfg
                .stop
                .unwrap_or(self.cfg.duration)
                .min(self.cfg.duration)
                .saturating_sub(cfg.start)
                .max(1);
            self.results.udp.push(UdpSummary {
                udp: i as u32,
                sent: u.sent,
                goodput_bps: u.received_bytes as f64 * 8.0 * SEC as f64 / active as f64,
                loss: if u.sent == 0 {
                    0.0
                } else {
                    1.0 - u.received_bytes as f64 / (u.sent as f64 * cfg.bytes as f64)
                },
            });
        }
        for (l, link) in self.net.links.iter().enumerate() {
            self.results.links[l] = link.stats;
        }
        if let Some(c) = self.net.capture.take() {
            c.finish()?;
        }
        self.results.events = self.events_processed;
        Ok(self.results)
    }
}

/// The capture's calls, out of the packet's way: a packet passed by value
/// on the cold path only, so that a run without a capture keeps its
/// packets in registers (taking `&p` on the hot path cost 1% of the
/// instructions of the ns-3 cases).
#[cold]
#[inline(never)]
fn arriving(c: &mut Capture, now: Time, p: Packet) {
    c.arriving(now, &p);
}

#[cold]
#[inline(never)]
fn entering(c: &mut Capture, now: Time, link: usize, p: &Packet) {
    c.entering(now, link, p);
}

fn ca_state_name(s: CaState) -> &'static str {
    s.name()
}

/// Bytes of a data packet on the wire.
pub fn data_packet_bytes(mss: u32) -> u32 {
    mss + HEADER_BYTES
}

/// The bandwidth-delay product in data packets.
pub fn bdp_packets(rate_bps: u64, rtt: Time, mss: u32) -> u64 {
    (rate_bps as u128 * rtt as u128 / (SEC as u128 * 8 * data_packet_bytes(mss) as u128)) as u64
}
