//! The policies on a host's own connections: what a daemon hands them and
//! what it gets back (`kleinrock tune`, docs/TUNE.md).
//!
//! In the kernel a sockops program sets, as each connection is
//! established, the algorithm a map holds for its peer, and reports what
//! the connection showed while it runs and when it ends. The daemon feeds
//! those reports to a [`Tuner`] and writes back the [`Decision`]s it
//! returns: the algorithm the *next* connection to a peer (or to a peer
//! not yet seen in a prefix) should get. A policy chooses per connection
//! (Thompson draws, bpftune's epsilon-greedy draws), but the kernel cannot
//! wait for userspace at establishment, so the Tuner draws ahead, after
//! every connection to the peer opens or closes ([`Bandit::propose`],
//! [`Bpftune::propose`]); a connection that opens before the map was
//! updated gets the previous draw, as a connection would that drew first.
//!
//! What the Tuner adds to the policies, and why it is here and not in
//! them:
//!
//! - **Safety.** An algorithm that needs ECN (DCTCP) is proposed only for
//!   a peer whose last connection negotiated ECN, or one the operator's
//!   allow-list names; the program also refuses to set it on a
//!   connection without ECN. A set that failed, or was refused for want
//!   of ECN, makes the algorithm unavailable at that peer for the
//!   policy's retry interval (both policies: bpftune's own behaviour
//!   poisons the host, [`Bpftune::set_failed`]).
//! - **What the status shows**, per peer and algorithm, beside each
//!   policy's own numbers ([`Tally`]): bpftune's columns for Kleinrock's
//!   policy too, and what the connections delivered (RTT, goodput,
//!   retransmissions, CE marks, failed sets), so that an operator sees
//!   what a choice gives up, and says it where the cheapest algorithm
//!   delivers less than another beyond noise ([`crate::trade`]).
//!
//! No I/O and no clock: times are passed in (milliseconds of any epoch),
//! and only [`Tuner::save`] and [`Tuner::load`] touch a file.

use std::net::IpAddr;
use std::path::Path;

use crate::bandit::{Bandit, Config as BanditConfig, Conn};
use crate::bpftune::{Bpftune, BBR, CONGS};
use crate::lru::Lru;
use crate::persist::{self, LoadError};
use crate::trade::Trade;
use crate::{Mask, Peer, Sample, ALL};

/// Which policy a daemon runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// bpftune's (crate::bpftune): its four candidates, learning at close.
    Bpftune,
    /// Kleinrock's (crate::bandit).
    Kleinrock,
}

impl PolicyKind {
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Bpftune => "bpftune",
            PolicyKind::Kleinrock => "kleinrock",
        }
    }
}

/// A block of addresses in the [`Peer`] space: IPv4 is mapped, so
/// 10.0.0.0/8 has a length of 104.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub addr: Peer,
    pub len: u8,
}

impl Prefix {
    /// A single peer.
    pub fn peer(p: Peer) -> Prefix {
        Prefix { addr: p, len: 128 }
    }

    /// Parses `10.0.0.0/8`, `2001:db8::/32` or a single address; host bits
    /// are refused, since they usually mean a mistyped length.
    pub fn parse(s: &str) -> Result<Prefix, String> {
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let ip: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not an address or prefix such as 10.0.0.0/8"))?;
        let (max, base) = match ip {
            IpAddr::V4(_) => (32, 96),
            IpAddr::V6(_) => (128, 0),
        };
        let len: u32 = match len {
            None => max,
            Some(l) => l
                .trim()
                .parse()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| format!("`{s}` has a prefix length that is not 0 to {max}"))?,
        };
        let p = Prefix {
            addr: crate::peer(ip),
            len: (base + len) as u8,
        };
        if p.addr & !mask(p.len) != 0 {
            return Err(format!(
                "`{s}` has host bits set beyond its length; write the network address"
            ));
        }
        Ok(p)
    }

    pub fn contains(&self, p: Peer) -> bool {
        p & mask(self.len) == self.addr
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = crate::addr(self.addr);
        let len = match a {
            IpAddr::V4(_) => self.len.saturating_sub(96),
            IpAddr::V6(_) => self.len,
        };
        write!(f, "{a}/{len}")
    }
}

/// The bits of a prefix of `len`.
fn mask(len: u8) -> u128 {
    match len {
        0 => 0,
        l if l >= 128 => u128::MAX,
        l => u128::MAX << (128 - l as u32),
    }
}

/// A daemon's settings for its policy.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub policy: PolicyKind,
    /// Kleinrock's policy (its candidates are the daemon's, its capacity
    /// bounds the peers remembered); bpftune's has its own four candidates
    /// and 1,024 hosts.
    pub kleinrock: BanditConfig,
    /// Per candidate: needs ECN (DCTCP): set only on connections that
    /// negotiated it, proposed only for peers whose last connection did or
    /// that `ecn_allow` names.
    pub needs_ecn: Vec<bool>,
    pub ecn_allow: Vec<Prefix>,
}

impl Config {
    /// The candidates the policy chooses among, by index.
    pub fn candidates(&self) -> Vec<String> {
        match self.policy {
            PolicyKind::Bpftune => CONGS.iter().map(|c| c.to_string()).collect(),
            PolicyKind::Kleinrock => self.kleinrock.candidates.clone(),
        }
    }
}

/// What became of the algorithm the map held for a connection, as the
/// program reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing was held for its peer (or its prefix): it runs the default.
    Unchosen,
    /// Set.
    Set,
    /// `bpf_setsockopt` refused it (the errno).
    Failed(i32),
    /// Not set: it needs ECN and the connection did not negotiate it.
    NoEcn,
    /// Not set: advise mode never sets.
    Advised,
}

/// A connection established (active or passive), as the program saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opened {
    /// The socket's cookie: the connection's name in later reports.
    pub cookie: u64,
    pub peer: Peer,
    /// The candidate the map held for it.
    pub chosen: Option<usize>,
    pub outcome: Outcome,
    /// The candidate it runs after that, if it runs one.
    pub running: Option<usize>,
    /// It negotiated ECN.
    pub ecn: bool,
}

/// A connection's end (its data acknowledged, or reset), as the program
/// saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Closed {
    pub cookie: u64,
    pub peer: Peer,
    /// The candidate it ran at the end, if one.
    pub running: Option<usize>,
    /// bpftune's retransmission rule switched it to BBR.
    pub switched: bool,
    pub sample: Sample,
    /// Segments delivered with a CE mark echoed (`tp->delivered_ce`).
    pub ce: u32,
}

/// What a peer's (or a prefix's) next connection should get: a candidate,
/// or `None` for the system's default. `was` is what the map held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub key: Prefix,
    pub alg: Option<usize>,
    pub was: Option<usize>,
}

/// What the connections of one algorithm at one peer showed, for the
/// status: bpftune's columns and ours.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    /// Connections that ended running it.
    pub conns: u64,
    /// Of those, how many ran what the policy estimated cheapest when
    /// they opened (bpftune: its own count).
    pub greedy: u64,
    /// The least minimum RTT, µs (0: none yet).
    pub min_rtt_us: u64,
    /// The most delivery rate at close, bytes/µs, as bpftune computes it.
    pub max_rt_dlvr: u64,
    /// Sums over the connections: mean smoothed RTT (µs), goodput
    /// (bytes/s), segments sent and retransmitted, CE marks echoed.
    pub rtt_sum_us: f64,
    pub goodput_sum: f64,
    pub segs: u64,
    pub retrans: u64,
    pub ce: u64,
    /// Connections on which setting it failed or was refused for want of
    /// ECN.
    pub failed: u64,
}

impl Tally {
    fn add(&mut self, s: &Sample, ce: u32, greedy: bool) {
        self.conns += 1;
        self.greedy += greedy as u64;
        let rtt = s.min_rtt_us as u64;
        if rtt > 0 && (self.min_rtt_us == 0 || rtt < self.min_rtt_us) {
            self.min_rtt_us = rtt;
        }
        self.max_rt_dlvr = self.max_rt_dlvr.max(s.rate_bytes_per_us());
        self.rtt_sum_us += if s.srtt_us > 0 {
            s.srtt_us
        } else {
            s.min_rtt_us
        } as f64;
        self.goodput_sum += s.mean_rate_bps as f64;
        self.segs += s.segs_out as u64;
        self.retrans += s.total_retrans as u64;
        self.ce += ce as u64;
    }
}

/// What the Tuner keeps of a peer beyond the policy's table.
#[derive(Clone, Debug, Default)]
struct Facts {
    /// Its last connection negotiated ECN.
    ecn: bool,
    /// The map's entry for it: what its next connection gets.
    next: Option<usize>,
    /// When a connection to it last opened or closed (the caller's ms).
    seen_ms: u64,
    /// Tallies of the algorithms its connections ran.
    tallies: Vec<(usize, Tally)>,
}

impl Facts {
    fn tally(&mut self, alg: usize) -> &mut Tally {
        let at = match self.tallies.iter().position(|t| t.0 == alg) {
            Some(at) => at,
            None => {
                self.tallies.push((alg, Tally::default()));
                self.tallies.len() - 1
            }
        };
        &mut self.tallies[at].1
    }
}

/// A connection the Tuner saw open and has not seen end.
#[derive(Clone, Copy, Debug)]
struct Live {
    running: Option<usize>,
    /// Kleinrock's handle.
    handle: Option<Conn>,
    /// bpftune learns only from connections it set an algorithm on.
    learned: Option<usize>,
    /// It runs what the policy estimated cheapest.
    greedy: bool,
}

/// Most connections followed at once; beyond, the least recently heard
/// of is forgotten (its end then teaches nothing).
const MAX_LIVE: usize = 1 << 16;

enum Policy {
    Bpftune(Bpftune),
    Kleinrock(Box<Bandit>),
}

/// Counts over the daemon's life.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Connections opened and ended.
    pub opened: u64,
    pub closed: u64,
    /// Connections set, per candidate.
    pub set: Vec<u64>,
    /// Sets that failed, and refusals for want of ECN.
    pub failed: u64,
    pub no_ecn: u64,
    /// Switched to BBR by bpftune's retransmission rule.
    pub switched: u64,
    /// Decisions that changed a map entry.
    pub decisions: u64,
}

/// The policy, fed by a daemon.
pub struct Tuner {
    cfg: Config,
    candidates: Vec<String>,
    policy: Policy,
    facts: Lru<Facts>,
    /// The map's entry for each prefix (Kleinrock's priors), and the
    /// candidates that failed at one of its peers, which new peers there
    /// are not offered.
    prefixes: Lru<(Option<usize>, Mask)>,
    live: Lru<Live>,
    pub counts: Counts,
}

/// One algorithm's row in a peer's status.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlgStatus {
    pub alg: usize,
    /// bpftune's columns: its metric (Kleinrock's cost × 10^6), Count,
    /// Greedy, MinRtt (µs), MaxRtDlvr (bytes/µs).
    pub metric: Option<u64>,
    pub count: u64,
    pub greedy: u64,
    pub min_rtt_us: u64,
    pub max_rt_dlvr: u64,
    /// The policy's cost (bpftune: its metric / 10^6).
    pub cost: Option<f64>,
    /// What its connections here showed, since the daemon started.
    pub tally: Tally,
    /// Not proposed here for now (a failed set).
    pub unavailable: bool,
}

/// One peer's status.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerStatus {
    pub peer: Peer,
    /// What its next connection gets, and the least estimated cost.
    pub next: Option<usize>,
    pub best: Option<usize>,
    pub ecn: bool,
    pub seen_ms: u64,
    pub algs: Vec<AlgStatus>,
    /// What the cheapest algorithm gives up in goodput for RTT against one
    /// that delivers more here, beyond noise (Kleinrock's policy only:
    /// bpftune's keeps no spread to judge noise by).
    pub trade: Option<Trade>,
}

impl Tuner {
    pub fn new(cfg: Config) -> Tuner {
        let candidates = cfg.candidates();
        let capacity = cfg.kleinrock.capacity.max(1);
        let policy = match cfg.policy {
            PolicyKind::Bpftune => Policy::Bpftune(Bpftune::new(cfg.kleinrock.seed)),
            PolicyKind::Kleinrock => {
                Policy::Kleinrock(Box::new(Bandit::new(cfg.kleinrock.clone())))
            }
        };
        Tuner {
            counts: Counts {
                set: vec![0; candidates.len()],
                ..Counts::default()
            },
            facts: Lru::new(capacity),
            prefixes: Lru::new((capacity / 4).max(1)),
            live: Lru::new(MAX_LIVE),
            candidates,
            policy,
            cfg,
        }
    }

    pub fn candidates(&self) -> &[String] {
        &self.candidates
    }

    pub fn policy(&self) -> PolicyKind {
        self.cfg.policy
    }

    /// The prefix a peer's priors come from (Kleinrock's policy), if the
    /// policy has priors.
    pub fn prefix_of(&self, peer: Peer) -> Option<Prefix> {
        match &self.policy {
            Policy::Kleinrock(b) => {
                let addr = b.prefix(peer);
                let v4 = peer >> 32 == 0xffff;
                let len = if v4 {
                    96 + b.cfg.prefix_v4
                } else {
                    b.cfg.prefix_v6
                };
                Some(Prefix { addr, len })
            }
            Policy::Bpftune(_) => None,
        }
    }

    /// The candidates that may be proposed for `key`: those that need ECN
    /// only where its connections showed it or the allow-list names it.
    fn allowed(&self, key: Prefix, ecn: bool) -> Mask {
        let listed = self
            .cfg
            .ecn_allow
            .iter()
            .any(|a| a.len <= key.len && a.contains(key.addr));
        if ecn || listed {
            return ALL;
        }
        let mut m = ALL;
        for (i, needs) in self.cfg.needs_ecn.iter().enumerate() {
            if *needs && i < 64 {
                m &= !(1 << i);
            }
        }
        m
    }

    fn note_failure(&mut self, peer: Peer, alg: usize) {
        match &mut self.policy {
            Policy::Bpftune(b) => b.set_failed(peer, alg),
            Policy::Kleinrock(b) => b.mark_unavailable(peer, alg),
        }
    }

    /// A connection opened: counts it, records what it runs and what
    /// became of the choice, and returns the decisions that changed.
    pub fn opened(&mut self, now_ms: u64, o: &Opened) -> Vec<Decision> {
        self.counts.opened += 1;
        let f = self.facts.get_or_insert_with(o.peer, Facts::default);
        f.ecn = o.ecn;
        f.seen_ms = now_ms;
        if let (Outcome::Failed(_) | Outcome::NoEcn, Some(c)) = (o.outcome, o.chosen) {
            f.tally(c).failed += 1;
            match o.outcome {
                Outcome::NoEcn => self.counts.no_ecn += 1,
                _ => self.counts.failed += 1,
            }
            self.note_failure(o.peer, c);
            if let (Some(p), true) = (self.prefix_of(o.peer), c < 64) {
                self.prefixes.get_or_insert_with(p.addr, || (None, 0)).1 |= 1 << c;
            }
        }
        if let (Outcome::Set, Some(c)) = (o.outcome, o.chosen) {
            if let Some(n) = self.counts.set.get_mut(c) {
                *n += 1;
            }
        }
        let live = match &mut self.policy {
            Policy::Bpftune(b) => {
                b.count(o.peer);
                let learned = match o.outcome {
                    Outcome::Set => o.chosen,
                    _ => None,
                };
                if let Some(s) = learned {
                    b.choices[s & 3] += 1;
                }
                Live {
                    running: o.running,
                    handle: None,
                    learned,
                    greedy: false,
                }
            }
            Policy::Kleinrock(b) => {
                let best = b.best(o.peer);
                let handle = o.running.map(|r| b.open(o.peer, r));
                Live {
                    running: o.running,
                    handle,
                    learned: None,
                    greedy: o.running.is_some() && o.running == best,
                }
            }
        };
        self.live.get_or_insert_with(o.cookie as u128, || live);
        self.refresh(o.peer)
    }

    /// A report while `cookie` runs.
    pub fn sampled(&mut self, cookie: u64, s: &Sample) {
        let Some(l) = self.live.get_mut(cookie as u128).copied() else {
            return;
        };
        if let (Policy::Kleinrock(b), Some(h)) = (&mut self.policy, l.handle) {
            b.sample(h, s);
        }
    }

    /// A connection ended: learns from it and returns the decisions that
    /// changed. One whose opening was not seen (the report was lost) is
    /// taken to have opened running what it ran at the end.
    pub fn closed(&mut self, now_ms: u64, c: &Closed) -> Vec<Decision> {
        self.counts.closed += 1;
        let l = match self.live.remove(c.cookie as u128) {
            Some(l) => l,
            None => {
                let handle = match &mut self.policy {
                    Policy::Kleinrock(b) => c.running.map(|r| b.open(c.peer, r)),
                    Policy::Bpftune(_) => None,
                };
                Live {
                    running: c.running,
                    handle,
                    learned: None,
                    greedy: false,
                }
            }
        };
        let s = &c.sample;
        let f = self.facts.get_or_insert_with(c.peer, Facts::default);
        f.seen_ms = now_ms;
        if let Some(r) = c.running {
            f.tally(r).add(s, c.ce, l.greedy);
        }
        match &mut self.policy {
            Policy::Bpftune(b) => {
                let learned = if c.switched {
                    self.counts.switched += 1;
                    b.choices[BBR] += 1;
                    Some(BBR)
                } else {
                    l.learned
                };
                b.close(c.peer, learned, s);
            }
            Policy::Kleinrock(b) => {
                if let Some(h) = l.handle {
                    // A connection that sent nothing shows nothing of its
                    // algorithm (a receiver's, or one reset at once).
                    if s.bytes_acked == 0 || c.running != l.running {
                        b.forget(h);
                    } else {
                        b.close(h, s);
                    }
                }
            }
        }
        let mut d = self.refresh(c.peer);
        if let Some(prefix) = self.prefix_of(c.peer) {
            d.extend(self.refresh_prefix(prefix));
        }
        d
    }

    /// Draws the next proposal for `peer`; a decision if it changed.
    fn refresh(&mut self, peer: Peer) -> Vec<Decision> {
        let key = Prefix::peer(peer);
        let ecn = self.facts.peek(peer).is_some_and(|f| f.ecn);
        let allowed = self.allowed(key, ecn);
        let alg = match &mut self.policy {
            Policy::Bpftune(b) => b.propose(peer, allowed),
            Policy::Kleinrock(b) => b.propose(peer, allowed),
        };
        let f = self.facts.get_or_insert_with(peer, Facts::default);
        let was = f.next;
        if was == alg {
            return Vec::new();
        }
        f.next = alg;
        self.counts.decisions += 1;
        vec![Decision { key, alg, was }]
    }

    /// Draws the proposal for a peer not yet seen in `prefix` (Kleinrock's
    /// priors); a decision if it changed.
    fn refresh_prefix(&mut self, prefix: Prefix) -> Vec<Decision> {
        let failed = self.prefixes.peek(prefix.addr).map_or(0, |p| p.1);
        let allowed = self.allowed(prefix, false) & !failed;
        let Policy::Kleinrock(b) = &mut self.policy else {
            return Vec::new();
        };
        if b.tables().1.peek(prefix.addr).is_none() {
            return Vec::new();
        }
        let alg = b.propose(prefix.addr, allowed);
        let slot = self.prefixes.get_or_insert_with(prefix.addr, || (None, 0));
        let was = slot.0;
        if was == alg {
            return Vec::new();
        }
        slot.0 = alg;
        self.counts.decisions += 1;
        vec![Decision {
            key: prefix,
            alg,
            was,
        }]
    }

    /// Proposals for every peer and prefix the policy remembers, most
    /// recent first: what a fresh map should hold after a restore.
    pub fn decisions(&mut self) -> Vec<Decision> {
        let (peers, prefixes): (Vec<Peer>, Vec<Prefix>) = match &self.policy {
            Policy::Bpftune(b) => (b.hosts().map(|h| h.0).collect(), Vec::new()),
            Policy::Kleinrock(b) => {
                let (peers, prefixes, _) = b.tables();
                let prefixes = prefixes
                    .iter()
                    .filter_map(|(p, _)| self.prefix_of(p))
                    .collect();
                (peers.iter().map(|(p, _)| p).collect(), prefixes)
            }
        };
        let mut d = Vec::new();
        for p in peers.into_iter().rev() {
            d.extend(self.refresh(p));
        }
        for p in prefixes.into_iter().rev() {
            d.extend(self.refresh_prefix(p));
        }
        d.reverse();
        d
    }

    /// The status of the `limit` peers heard of most recently (by the
    /// policy's table), in address order; and how many more there are.
    pub fn status(&self, limit: usize) -> (Vec<PeerStatus>, usize) {
        let peers: Vec<Peer> = match &self.policy {
            Policy::Bpftune(b) => b.hosts().map(|h| h.0).collect(),
            Policy::Kleinrock(b) => b.tables().0.iter().map(|(p, _)| p).collect(),
        };
        let more = peers.len().saturating_sub(limit);
        let mut out: Vec<PeerStatus> = peers
            .into_iter()
            .take(limit)
            .map(|p| self.peer_status(p))
            .collect();
        out.sort_by_key(|s| s.peer);
        (out, more)
    }

    fn peer_status(&self, peer: Peer) -> PeerStatus {
        let facts = self.facts.peek(peer);
        let tally = |i: usize| {
            facts
                .and_then(|f| f.tallies.iter().find(|t| t.0 == i))
                .map(|t| t.1)
                .unwrap_or_default()
        };
        let k = self.candidates.len();
        let (algs, best, trade) = match &self.policy {
            Policy::Bpftune(b) => {
                let h = b.host(peer).copied().unwrap_or_default();
                let best = (0..k)
                    .filter(|&i| h.metrics[i].metric_count > 0)
                    .min_by_key(|&i| h.metrics[i].metric_value);
                let algs = (0..k)
                    .map(|i| {
                        let m = h.metrics[i];
                        AlgStatus {
                            alg: i,
                            metric: Some(m.metric_value),
                            count: m.metric_count,
                            greedy: m.greedy_count,
                            min_rtt_us: m.min_rtt,
                            max_rt_dlvr: m.max_rate_delivered,
                            cost: Some(m.metric_value as f64 / 1e6),
                            tally: tally(i),
                            unavailable: h.unavailable_until[i] > h.instances,
                        }
                    })
                    .collect();
                (algs, best, None)
            }
            Policy::Kleinrock(b) => {
                let (est, _) = b.estimates(peer);
                let entry = b.peer_entry(peer);
                let algs = (0..k)
                    .filter(|&i| est[i].is_some() || tally(i) != Tally::default())
                    .map(|i| {
                        let t = tally(i);
                        let cost = est[i].map(|e| e.cost);
                        AlgStatus {
                            alg: i,
                            metric: cost.map(|c| (c.max(0.0) * 1e6).round() as u64),
                            count: t.conns,
                            greedy: t.greedy,
                            min_rtt_us: t.min_rtt_us,
                            max_rt_dlvr: t.max_rt_dlvr,
                            cost,
                            tally: t,
                            unavailable: entry.is_some_and(|e| e.unavailable_until[i] > e.conns),
                        }
                    })
                    .collect();
                (algs, b.best(peer), b.trade(peer))
            }
        };
        PeerStatus {
            peer,
            next: facts.and_then(|f| f.next),
            best,
            ecn: facts.is_some_and(|f| f.ecn),
            seen_ms: facts.map_or(0, |f| f.seen_ms),
            algs,
            trade,
        }
    }

    /// Saves the policy's table atomically (crate::persist).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        match &self.policy {
            Policy::Bpftune(b) => persist::bpftune::save(b, path),
            Policy::Kleinrock(b) => persist::save(b, path),
        }
    }

    /// Restores the policy's table; `Ok(false)` if there was none. A table
    /// of the other policy is refused without being read, so that it is
    /// not replaced by the next save.
    pub fn load(&mut self, path: &Path) -> Result<bool, LoadError> {
        let refused = |e: std::io::Error| {
            LoadError::Refused(format!(
                "cannot read {}: {}",
                path.display(),
                kleinrock_files::reason(&e)
            ))
        };
        let theirs = persist::bpftune::is_bpftune_table(path).map_err(refused)?;
        let mismatch = match (&self.policy, theirs) {
            (Policy::Bpftune(_), Some(false)) => Some("Kleinrock's policy"),
            (Policy::Kleinrock(_), Some(true)) => Some("bpftune's policy"),
            _ => None,
        };
        if let Some(other) = mismatch {
            return Err(LoadError::Refused(format!(
                "{} holds a table of {other}, which this daemon ({} policy) would replace; \
                 give it another table path or remove the file",
                path.display(),
                self.cfg.policy.name()
            )));
        }
        match &mut self.policy {
            Policy::Bpftune(b) => persist::bpftune::load(b, path),
            Policy::Kleinrock(b) => persist::load(b, path),
        }
    }

    /// Connections followed now (opened, not yet ended).
    pub fn live(&self) -> usize {
        self.live.len()
    }

    /// Peers the policy remembers.
    pub fn peers(&self) -> usize {
        match &self.policy {
            Policy::Bpftune(b) => b.hosts().count(),
            Policy::Kleinrock(b) => b.peers_len(),
        }
    }
}

#[cfg(test)]
mod tests;
