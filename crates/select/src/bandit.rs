//! Kleinrock's selector: a discounted UCB bandit per peer.
//!
//! Each (peer, algorithm) keeps discounted sums of the connections' RTT (the
//! mean smoothed RTT they saw, which shows the queue they built; their
//! minimum RTT when that is all a sample has) and delivery rate (what they
//! delivered over their age; their best rate sample if that is all there
//! is). An algorithm's cost at a peer is bpftune's,
//! computed from those means when a choice is made: how far its RTT lies
//! above the best algorithm's, plus how far its rate falls short of the
//! best, as fractions. The choice minimises cost minus an exploration bonus
//! `explore * sqrt(ln N / n)` (UCB1 with discounting, Garivier and Moulines,
//! "On Upper-Confidence Bound Policies for Switching Bandit Problems", ALT
//! 2011): every connection to a peer first multiplies its evidence by
//! `gamma`, so old evidence fades, untried or long-untried algorithms earn
//! a growing bonus, and a path that changes is relearned within about
//! 1/(1 - gamma) connections.
//!
//! Where bpftune's policy learns only at close, keyed by address, with four
//! candidates, this one also:
//! - counts open connections' latest samples in the choices made meanwhile;
//! - borrows from the peer's prefix (/24, /48): what other peers there
//!   showed counts for up to `prefix_weight` connections, so a new peer in
//!   a known network starts nearly converged; and a peer with no evidence
//!   at all tries algorithms in the order of their average cost elsewhere;
//! - records an algorithm that could not be set as unavailable at that peer
//!   (retried after `retry_unavailable` connections) and learns from what
//!   actually ran;
//! - keeps peers and prefixes in bounded LRU tables.

use std::collections::HashMap;

use crate::lru::Lru;
use crate::{Peer, Sample};

/// The candidates by default: Linux's and Kleinrock's algorithms.
pub const DEFAULT_CANDIDATES: [&str; 9] = [
    "cubic",
    "cubic:hystart=hspp",
    "cubic:friendly=newreno",
    "reno",
    "bbr",
    "htcp",
    "dctcp",
    "cdg",
    "vegas",
];

/// The policy's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Algorithm specs, by index.
    pub candidates: Vec<String>,
    /// Peers remembered (and, a quarter as many, prefixes).
    pub capacity: usize,
    /// Weight of the past at each new connection to the peer.
    pub gamma: f64,
    /// Exploration bonus scale, in cost units (1.0: a 100% deviation).
    pub explore: f64,
    /// Prefix lengths that group peers (IPv4, IPv6).
    pub prefix_v4: u8,
    pub prefix_v6: u8,
    /// Connections' worth of weight the prefix's evidence carries.
    pub prefix_weight: f64,
    /// Connections to a peer before an unavailable algorithm is tried again.
    pub retry_unavailable: u64,
    /// A closing connection surprises when its RTT, rate or retransmitted
    /// share (plus [`LOSS_FLOOR`]) lies more than this factor from (above or
    /// below) its algorithm's geometric mean at the peer, and more than
    /// three of their standard deviations.
    pub change_factor: f64,
    /// Consecutive surprises that mean the path changed; one surprise of
    /// the factor cubed is enough.
    pub change_after: u32,
    /// Connections shorter than this many minimum RTTs are not learned
    /// from: they end in or near slow start, and show the transfer's size
    /// more than the algorithm's behaviour on the path.
    pub min_rtts: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            candidates: DEFAULT_CANDIDATES.iter().map(|s| s.to_string()).collect(),
            capacity: 65_536,
            gamma: 0.99,
            explore: 0.02,
            prefix_v4: 24,
            prefix_v6: 48,
            prefix_weight: 2.0,
            retry_unavailable: 50,
            change_factor: 1.3,
            change_after: 2,
            min_rtts: 16,
        }
    }
}

/// Discounted evidence about one algorithm at one key.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Arm {
    /// Discounted number of connections.
    pub n: f64,
    /// Discounted sums of their RTT (µs), delivery rate (bytes/s) and
    /// share of segments retransmitted.
    pub rtt_sum: f64,
    pub rate_sum: f64,
    pub loss_sum: f64,
    /// Discounted sums of the logarithms of RTT, rate and retransmitted
    /// share (plus [`LOSS_FLOOR`]), and of their squares: how much they
    /// vary, to tell a changed path from a noisy one.
    pub log_sum: [f64; 3],
    pub log_sq: [f64; 3],
    /// Could not be set until this connection count of the key.
    pub unavailable_until: u64,
}

impl Arm {
    fn add(&mut self, seen: &Seen) {
        self.n += 1.0;
        self.rtt_sum += seen.rtt_us;
        self.rate_sum += seen.rate;
        self.loss_sum += seen.loss;
        for (i, l) in seen.logs().into_iter().enumerate() {
            self.log_sum[i] += l;
            self.log_sq[i] += l * l;
        }
    }

    fn fade(&mut self, gamma: f64) {
        self.n *= gamma;
        self.rtt_sum *= gamma;
        self.rate_sum *= gamma;
        self.loss_sum *= gamma;
        for i in 0..3 {
            self.log_sum[i] *= gamma;
            self.log_sq[i] *= gamma;
        }
    }
}

/// Everything known about one peer (or prefix).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub arms: Vec<Arm>,
    /// Connections closed.
    pub conns: u64,
    /// Consecutive connections that surprised (see [`Config::change_factor`]).
    pub surprises: u32,
    /// Times the path was found changed and the evidence dropped; a peer
    /// that has changed no longer borrows from its prefix.
    pub resets: u32,
}

/// What one closed connection showed: RTT (µs), rate (bytes/s) and the
/// share of its segments retransmitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seen {
    pub rtt_us: f64,
    pub rate: f64,
    pub loss: f64,
}

/// Added to the retransmitted share before taking its logarithm: below
/// half a percent, losses are noise to this test.
pub const LOSS_FLOOR: f64 = 0.005;

impl Seen {
    fn logs(&self) -> [f64; 3] {
        [
            self.rtt_us.max(1.0).ln(),
            self.rate.max(1.0).ln(),
            (self.loss + LOSS_FLOOR).ln(),
        ]
    }
}

/// Evidence weight an arm needs before a deviation from it is a surprise.
const SURPRISE_MIN_WEIGHT: f64 = 2.0;
/// Standard deviations (of the arm's own spread) a surprise must exceed.
const SURPRISE_SIGMAS: f64 = 3.0;

impl Entry {
    pub fn new(arms: usize) -> Entry {
        Entry {
            arms: vec![Arm::default(); arms],
            conns: 0,
            surprises: 0,
            resets: 0,
        }
    }

    fn learn(&mut self, alg: usize, seen: Seen, gamma: f64) {
        for a in &mut self.arms {
            a.fade(gamma);
        }
        self.arms[alg].add(&seen);
        self.conns += 1;
    }

    /// How far `seen` lies from what `alg` has shown here before, over RTT,
    /// rate and retransmitted share, in log-ratios: in units of the larger of
    /// ln(`change_factor`) and three of the arm's standard deviations, the
    /// worst of the three; `None` if `alg` has too little evidence here.
    fn surprise(&self, alg: usize, seen: Seen, cfg: &Config) -> Option<f64> {
        let a = &self.arms[alg];
        if a.n < SURPRISE_MIN_WEIGHT {
            return None;
        }
        let floor = cfg.change_factor.ln();
        let worst = seen
            .logs()
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mean = a.log_sum[i] / a.n;
                let sd = (a.log_sq[i] / a.n - mean * mean).max(0.0).sqrt();
                (l - mean).abs() / floor.max(SURPRISE_SIGMAS * sd)
            })
            .fold(0.0, f64::max);
        Some(worst)
    }

    /// The path changed: forget everything but `seen`.
    fn reset(&mut self, alg: usize, seen: Seen) {
        let k = self.arms.len();
        let unavailable: Vec<u64> = self.arms.iter().map(|a| a.unavailable_until).collect();
        self.arms = vec![Arm::default(); k];
        for (a, u) in self.arms.iter_mut().zip(unavailable) {
            a.unavailable_until = u;
        }
        self.arms[alg].add(&seen);
        self.surprises = 0;
        self.resets += 1;
    }

    /// Each arm's (cost, weight), `None` without evidence: cost relative to
    /// the best mean RTT and the best mean rate among the arms.
    pub fn costs(&self) -> Vec<Option<(f64, f64)>> {
        costs(&self.means())
    }

    /// Each arm's mean RTT, mean rate and weight, `None` without evidence.
    pub fn means(&self) -> Vec<Option<Mean>> {
        const TINY: f64 = 1e-9;
        self.arms
            .iter()
            .map(|a| {
                (a.n > TINY).then(|| Mean {
                    rtt: a.rtt_sum / a.n,
                    rate: a.rate_sum / a.n,
                    n: a.n,
                })
            })
            .collect()
    }
}

/// An arm's mean RTT (µs) and rate (bytes/s) over `n` connections' worth of
/// evidence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mean {
    pub rtt: f64,
    pub rate: f64,
    pub n: f64,
}

/// Each arm's (cost, weight): its RTT above the best arm's and its rate
/// short of the best arm's, as fractions.
pub fn costs(means: &[Option<Mean>]) -> Vec<Option<(f64, f64)>> {
    let best_rtt = means
        .iter()
        .flatten()
        .map(|m| m.rtt)
        .fold(f64::MAX, f64::min);
    let best_rate = means.iter().flatten().map(|m| m.rate).fold(0.0, f64::max);
    means
        .iter()
        .map(|m| {
            m.map(|m| {
                let mut c = 0.0;
                if best_rtt > 0.0 {
                    c += (m.rtt - best_rtt) / best_rtt;
                }
                if best_rate > 0.0 {
                    c += (best_rate - m.rate) / best_rate;
                }
                (c, m.n)
            })
        })
        .collect()
}

/// `own` and `theirs` (a prefix's) blended per arm, theirs weighing at most
/// `cap` connections. Their RTTs and rates are first scaled to this peer's:
/// by the geometric mean of own/theirs over the arms both have tried, so a
/// neighbour farther away or on a faster link still ranks the algorithms
/// for it.
fn blend(own: &[Option<Mean>], theirs: &[Option<Mean>], cap: f64) -> Vec<Option<Mean>> {
    let (mut lr, mut lq, mut k) = (0.0, 0.0, 0.0);
    for (o, t) in own.iter().zip(theirs) {
        if let (Some(o), Some(t)) = (o, t) {
            if o.rtt > 0.0 && t.rtt > 0.0 && o.rate > 0.0 && t.rate > 0.0 {
                lr += (o.rtt / t.rtt).ln();
                lq += (o.rate / t.rate).ln();
                k += 1.0;
            }
        }
    }
    let (sr, sq) = if k > 0.0 {
        ((lr / k).exp(), (lq / k).exp())
    } else {
        (1.0, 1.0)
    };
    own.iter()
        .zip(theirs)
        .map(|(o, t)| {
            let t = t.map(|t| Mean {
                rtt: t.rtt * sr,
                rate: t.rate * sq,
                n: t.n.min(cap),
            });
            match (o, t) {
                (Some(o), Some(t)) => {
                    let n = o.n + t.n;
                    Some(Mean {
                        rtt: (o.rtt * o.n + t.rtt * t.n) / n,
                        rate: (o.rate * o.n + t.rate * t.n) / n,
                        n,
                    })
                }
                (o, t) => o.or(t),
            }
        })
        .collect()
}

/// The RTT a sample stands for: the smoothed RTT the connection saw, or
/// its minimum if that is all there is.
fn rtt_of(s: &Sample) -> f64 {
    if s.srtt_us > 0 {
        s.srtt_us as f64
    } else {
        s.min_rtt_us as f64
    }
}

/// The share of segments a sample's connection retransmitted.
fn loss_of(s: &Sample) -> f64 {
    if s.segs_out > 0 {
        s.total_retrans as f64 / s.segs_out as f64
    } else {
        0.0
    }
}

fn seen(s: &Sample) -> Seen {
    Seen {
        rtt_us: rtt_of(s),
        rate: rate_of(s),
        loss: loss_of(s),
    }
}

/// The delivery rate a sample stands for, bytes/s.
fn rate_of(s: &Sample) -> f64 {
    if s.mean_rate_bps > 0 {
        s.mean_rate_bps as f64
    } else {
        s.max_rate_bps as f64
    }
}

/// A connection the policy chose for and has not seen close.
#[derive(Clone, Copy, Debug)]
struct Open {
    peer: Peer,
    /// The algorithm it runs (after any failure to set the chosen one).
    alg: usize,
    latest: Option<Sample>,
}

/// The policy.
#[derive(Clone, Debug)]
pub struct Bandit {
    pub cfg: Config,
    peers: Lru<Entry>,
    prefixes: Lru<Entry>,
    /// Average cost of each algorithm over every peer's choices, and its
    /// weight: the order in which a stranger is explored.
    global: Vec<(f64, f64)>,
    open: HashMap<u64, Open>,
    next_conn: u64,
}

/// A connection, as the policy knows it.
pub type Conn = u64;

/// Most connections kept open at once; beyond, the oldest are forgotten.
const MAX_OPEN: usize = 1 << 16;

impl Bandit {
    /// The policy is deterministic: the same connections and samples give
    /// the same choices.
    pub fn new(cfg: Config) -> Bandit {
        let n = cfg.candidates.len();
        Bandit {
            peers: Lru::new(cfg.capacity),
            prefixes: Lru::new((cfg.capacity / 4).max(1)),
            global: vec![(0.0, 0.0); n],
            open: HashMap::new(),
            next_conn: 0,
            cfg,
        }
    }

    /// The prefix a peer belongs to, as a key of the prefix table.
    pub fn prefix(&self, peer: Peer) -> Peer {
        let v4 = peer >> 32 == 0xffff;
        let len = if v4 {
            96 + self.cfg.prefix_v4 as u32
        } else {
            self.cfg.prefix_v6 as u32
        };
        if len == 0 {
            return 0;
        }
        peer & (u128::MAX << (128 - len.min(128)))
    }

    pub fn peer_entry(&self, peer: Peer) -> Option<&Entry> {
        self.peers.peek(peer)
    }

    pub fn peers_len(&self) -> usize {
        self.peers.len()
    }

    /// The per-arm estimate at `peer`: (cost, weight) from its own evidence
    /// (open connections' latest samples included) and its prefix's.
    pub fn estimates(&self, peer: Peer) -> Vec<Option<(f64, f64)>> {
        let k = self.cfg.candidates.len();
        let mut own = self
            .peers
            .peek(peer)
            .cloned()
            .unwrap_or_else(|| Entry::new(k));
        for o in self.open.values().filter(|o| o.peer == peer) {
            if let Some(s) = o.latest {
                own.arms[o.alg].add(&seen(&s));
            }
        }
        let changed = own.resets > 0;
        let own = own.means();
        // A peer whose path changed has left its neighbours' evidence behind.
        let pre = if changed {
            None
        } else {
            self.prefixes.peek(self.prefix(peer)).map(|e| e.means())
        };
        match pre {
            Some(pre) => costs(&blend(&own, &pre, self.cfg.prefix_weight)),
            None => costs(&own),
        }
    }

    /// A connection to `peer` starts: the algorithm (index into the
    /// candidates) to set, and the connection's handle.
    pub fn choose(&mut self, peer: Peer) -> (Conn, usize) {
        let est = self.estimates(peer);
        let conns = self.peers.peek(peer).map_or(0, |e| e.conns);
        let unavailable = |i: usize| {
            self.peers
                .peek(peer)
                .is_some_and(|e| e.arms[i].unavailable_until > conns)
        };
        let usable: Vec<usize> = (0..est.len()).filter(|&i| !unavailable(i)).collect();
        let pick = if usable.is_empty() {
            0
        } else if let Some(&i) = usable
            .iter()
            .filter(|&&i| est[i].is_none())
            .min_by(|&&a, &&b| {
                // Untried here: in order of cost elsewhere (unknown last).
                let g = |i: usize| {
                    if self.global[i].1 > 0.0 {
                        self.global[i].0
                    } else {
                        f64::MAX
                    }
                };
                g(a).total_cmp(&g(b)).then(a.cmp(&b))
            })
        {
            i
        } else {
            let total: f64 = usable.iter().filter_map(|&i| est[i]).map(|(_, n)| n).sum();
            let ln = (total.max(1.0)).ln().max(0.0);
            let mut best = (f64::MAX, usable[0]);
            for &i in &usable {
                let (c, n) = est[i].expect("tried");
                let index = c - self.cfg.explore * (ln / n).sqrt();
                if index < best.0 - 1e-12 {
                    best = (index, i);
                }
            }
            best.1
        };
        self.next_conn += 1;
        let id = self.next_conn;
        if self.open.len() >= MAX_OPEN {
            let oldest = *self.open.keys().min().expect("non-empty");
            self.open.remove(&oldest);
        }
        self.open.insert(
            id,
            Open {
                peer,
                alg: pick,
                latest: None,
            },
        );
        (id, pick)
    }

    /// The chosen algorithm could not be set on `conn`; it runs `running`
    /// (the system's default) instead, which is what its samples will be
    /// counted for.
    pub fn set_failed(&mut self, conn: Conn, running: usize) {
        let Some(o) = self.open.get_mut(&conn) else {
            return;
        };
        let (peer, chosen) = (o.peer, o.alg);
        o.alg = running;
        let k = self.cfg.candidates.len();
        let retry = self.cfg.retry_unavailable;
        let e = self.peers.get_or_insert_with(peer, || Entry::new(k));
        e.arms[chosen].unavailable_until = e.conns + retry;
    }

    /// A sample while `conn` runs.
    pub fn sample(&mut self, conn: Conn, s: &Sample) {
        if let Some(o) = self.open.get_mut(&conn) {
            o.latest = Some(*s);
        }
    }

    /// `conn` closed with `s` as its final sample: learn from it.
    pub fn close(&mut self, conn: Conn, s: &Sample) {
        let Some(o) = self.open.remove(&conn) else {
            return;
        };
        if s.min_rtt_us == 0 && s.srtt_us == 0 {
            return; // no RTT measured: nothing to learn
        }
        let base_rtt = if s.min_rtt_us > 0 {
            s.min_rtt_us
        } else {
            s.srtt_us
        };
        if s.age_us > 0 && s.age_us < self.cfg.min_rtts as u64 * base_rtt as u64 {
            return; // too short to show the path
        }
        let seen = seen(s);
        let (k, gamma) = (self.cfg.candidates.len(), self.cfg.gamma);
        let cfg = &self.cfg;
        let e = self.peers.get_or_insert_with(o.peer, || Entry::new(k));
        // Only connections that could be tested count, surprising or not: a
        // change shows in whichever algorithm has the evidence to show it.
        let gross = match e.surprise(o.alg, seen, cfg) {
            Some(x) if x > 1.0 => {
                e.surprises += 1;
                x > 3.0
            }
            Some(_) => {
                e.surprises = 0;
                false
            }
            None => false,
        };
        if gross || e.surprises >= cfg.change_after {
            // The path changed (monitored bandits: Cao et al., "Nearly
            // Optimal Adaptive Procedure with Change Detection for
            // Piecewise-Stationary Bandit", AISTATS 2019): what the other
            // algorithms showed no longer holds, so they are tried afresh.
            e.conns += 1;
            e.reset(o.alg, seen);
        } else {
            e.learn(o.alg, seen, gamma);
        }
        let costs = e.costs();
        let prefix = self.prefix(o.peer);
        self.prefixes
            .get_or_insert_with(prefix, || Entry::new(k))
            .learn(o.alg, seen, gamma);
        // The stranger's exploration order: average cost per algorithm.
        for (g, c) in self.global.iter_mut().zip(costs) {
            if let Some((c, _)) = c {
                g.1 += 1.0;
                g.0 += (c - g.0) / g.1.min(1000.0);
            }
        }
    }

    /// Per peer (in address order) and algorithm with evidence: its cost,
    /// its (discounted) connections, and the RTT and rate it showed.
    pub fn status(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:>16} {:>24} {:>8} {:>8} {:>10} {:>12}",
            "IPAddress", "CongAlg", "Cost", "Weight", "RTT (us)", "Rate (B/s)"
        );
        let mut peers: Vec<(Peer, &Entry)> = self.peers.iter().collect();
        peers.sort_by_key(|p| p.0);
        for (p, e) in peers {
            for ((i, a), c) in e.arms.iter().enumerate().zip(e.costs()) {
                if let Some((cost, n)) = c {
                    let _ = writeln!(
                        s,
                        "{:>16} {:>24} {:>8.3} {:>8.2} {:>10.0} {:>12.0}",
                        crate::addr(p).to_string(),
                        self.cfg.candidates[i],
                        cost,
                        n,
                        a.rtt_sum / a.n,
                        a.rate_sum / a.n
                    );
                }
            }
        }
        s
    }

    /// Path changes detected, over the peers remembered.
    pub fn resets(&self) -> u64 {
        self.peers.iter().map(|(_, e)| e.resets as u64).sum()
    }

    /// The learned tables, for saving: (peers, prefixes, global).
    pub fn tables(&self) -> (&Lru<Entry>, &Lru<Entry>, &[(f64, f64)]) {
        (&self.peers, &self.prefixes, &self.global)
    }

    /// Restores learned tables (from [`crate::persist`]); entries beyond
    /// the capacity are dropped, least recent first.
    pub fn restore(
        &mut self,
        peers: Vec<(Peer, Entry)>,
        prefixes: Vec<(Peer, Entry)>,
        global: Vec<(f64, f64)>,
    ) {
        // Oldest first, so the most recent end up most recently used.
        for (p, e) in peers.into_iter().rev() {
            let k = e.arms.len();
            *self.peers.get_or_insert_with(p, || Entry::new(k)) = e;
        }
        for (p, e) in prefixes.into_iter().rev() {
            let k = e.arms.len();
            *self.prefixes.get_or_insert_with(p, || Entry::new(k)) = e;
        }
        if global.len() == self.global.len() {
            self.global = global;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(cands: &[&str]) -> Config {
        Config {
            candidates: cands.iter().map(|s| s.to_string()).collect(),
            ..Config::default()
        }
    }

    fn done(rtt: u32, rate: u64) -> Sample {
        Sample {
            min_rtt_us: rtt,
            max_rate_bps: rate,
            ..Sample::default()
        }
    }

    #[test]
    fn costs_are_fractions_from_the_best_arm() {
        let mut e = Entry::new(3);
        let seen = |rtt_us, rate| Seen {
            rtt_us,
            rate,
            loss: 0.0,
        };
        e.learn(0, seen(1000.0, 100.0), 1.0);
        e.learn(1, seen(1500.0, 50.0), 1.0);
        let c = e.costs();
        assert_eq!(c[0], Some((0.0, 1.0)));
        assert_eq!(c[1], Some((0.5 + 0.5, 1.0)));
        assert_eq!(c[2], None);
        // Discounting: after learning arm 0 again with gamma 0.5, arm 1's
        // weight halves.
        e.learn(0, seen(1000.0, 100.0), 0.5);
        assert_eq!(e.costs()[1].unwrap().1, 0.5);
        assert_eq!(e.conns, 3);
    }

    /// Plays `n` connections to `peer` where algorithm `i` shows `truth[i]`.
    fn play(b: &mut Bandit, peer: Peer, truth: &[(u32, u64)], n: usize) -> Vec<usize> {
        (0..n)
            .map(|_| {
                let (c, alg) = b.choose(peer);
                let (rtt, rate) = truth[alg];
                b.close(c, &done(rtt, rate));
                alg
            })
            .collect()
    }

    #[test]
    fn tries_each_then_settles_on_the_cheapest() {
        let mut b = Bandit::new(cfg(&["cubic", "bbr", "reno"]));
        let truth = [(1300, 80), (1000, 95), (1400, 60)];
        let picks = play(&mut b, 7, &truth, 40);
        assert_eq!(&picks[..3], &[0, 1, 2], "each tried once, in index order");
        let late = picks[10..].iter().filter(|&&a| a == 1).count();
        assert!(late >= 27, "bbr chosen {late} of 30: {picks:?}");
    }

    #[test]
    fn follows_a_path_that_changes() {
        let mut b = Bandit::new(cfg(&["cubic", "bbr"]));
        play(&mut b, 9, &[(1000, 100), (1300, 70)], 30);
        // Now bbr is the better one.
        let picks = play(&mut b, 9, &[(1300, 30), (1000, 95)], 40);
        let first = picks.iter().position(|&a| a == 1).expect("switches");
        assert!(first < 20, "{picks:?}");
        assert!(
            picks[20..].iter().filter(|&&a| a == 1).count() >= 18,
            "{picks:?}"
        );
    }

    fn lossy(rtt: u32, rate: u64, loss_per_mille: u32) -> Sample {
        Sample {
            min_rtt_us: rtt,
            max_rate_bps: rate,
            segs_out: 1000,
            total_retrans: loss_per_mille,
            ..Sample::default()
        }
    }

    #[test]
    fn a_change_seen_only_in_retransmissions_is_detected() {
        // 5% loss: bbr is far ahead. Then the loss goes away: bbr's own
        // rate and RTT hardly move, but cubic is now the better one, which
        // only trying cubic again can show.
        let mut b = Bandit::new(cfg(&["cubic", "bbr"]));
        let run = |b: &mut Bandit, truth: [(u32, u64, u32); 2], n: usize| -> Vec<usize> {
            (0..n)
                .map(|_| {
                    let (c, alg) = b.choose(11);
                    let (rtt, rate, loss) = truth[alg];
                    b.close(c, &lossy(rtt, rate, loss));
                    alg
                })
                .collect()
        };
        let before = run(&mut b, [(30_000, 2, 50), (41_000, 40, 50)], 40);
        assert!(before[5..].iter().all(|&a| a == 1), "{before:?}");
        assert_eq!(b.resets(), 0);
        let after = run(&mut b, [(31_000, 45, 2), (43_000, 46, 5)], 40);
        assert_eq!(b.resets(), 1, "{after:?}");
        let first = after
            .iter()
            .position(|&a| a == 0)
            .expect("cubic tried again");
        assert!(first <= 3, "{after:?}");
        assert!(
            after[first..].iter().filter(|&&a| a == 0).count() >= 30,
            "{after:?}"
        );
    }

    #[test]
    fn noise_within_the_margin_is_not_a_change() {
        let mut b = Bandit::new(cfg(&["cubic", "bbr", "reno"]));
        let mut rng = kleinrock_rng(3);
        for _ in 0..2000 {
            let (c, alg) = b.choose(12);
            // Each within +-25% of its mean, loss 1-2%.
            let jitter = |r: &mut u64| 0.75 + 0.5 * next_unit(r);
            let base = [(20_000.0, 50.0), (25_000.0, 60.0), (22_000.0, 30.0)][alg];
            let rtt = (base.0 * jitter(&mut rng)) as u32;
            let rate = (base.1 * 1e6 * jitter(&mut rng)) as u64;
            let loss = 10 + (10.0 * next_unit(&mut rng)) as u32;
            b.close(c, &lossy(rtt, rate, loss));
        }
        assert_eq!(b.resets(), 0);
    }

    fn kleinrock_rng(seed: u64) -> u64 {
        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// SplitMix64 to a uniform in [0, 1).
    fn next_unit(state: &mut u64) -> f64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn a_million_peers_keep_the_tables_within_their_capacity() {
        let mut b = Bandit::new(Config {
            capacity: 4096,
            ..cfg(&["cubic", "bbr"])
        });
        for k in 0..1_000_000u128 {
            // Spread over many /24s (and so many prefixes).
            let p = crate::peer(std::net::IpAddr::V4(std::net::Ipv4Addr::from(
                (k as u32).wrapping_mul(2_654_435_761),
            )));
            let (c, a) = b.choose(p);
            b.close(c, &done(1000 + a as u32, 100));
        }
        let (peers, prefixes, _) = b.tables();
        assert_eq!(peers.len(), 4096);
        assert_eq!(prefixes.len(), 1024);
        assert!(b.open.is_empty());
    }

    #[test]
    fn a_connection_shorter_than_sixteen_rtts_is_not_learned_from() {
        let mut b = Bandit::new(cfg(&["cubic", "bbr"]));
        let (c, _) = b.choose(4);
        let short = Sample {
            age_us: 15 * 1000,
            ..done(1000, 100)
        };
        b.close(c, &short);
        assert!(b.peer_entry(4).is_none());
        let (c, _) = b.choose(4);
        b.close(
            c,
            &Sample {
                age_us: 16 * 1000,
                ..done(1000, 100)
            },
        );
        assert_eq!(b.peer_entry(4).unwrap().conns, 1);
    }

    #[test]
    fn a_new_peer_borrows_from_its_prefix() {
        let mut b = Bandit::new(cfg(&["cubic", "bbr", "reno", "htcp"]));
        let truth = [(1300, 80), (1000, 95), (1400, 60), (1350, 70)];
        let a = crate::peer("10.1.2.3".parse().unwrap());
        play(&mut b, a, &truth, 20);
        // A neighbour starts with bbr: the prefix says so.
        let n = crate::peer("10.1.2.99".parse().unwrap());
        assert_eq!(b.choose(n).1, 1);
        // A stranger elsewhere explores, untried first, cheapest-elsewhere
        // first.
        let s = crate::peer("192.0.2.1".parse().unwrap());
        assert_eq!(b.choose(s).1, 1);
    }

    #[test]
    fn open_connections_count_before_they_close() {
        let mut b = Bandit::new(cfg(&["cubic", "bbr"]));
        let (c1, a1) = b.choose(5);
        assert_eq!(a1, 0);
        b.sample(c1, &done(1000, 100));
        // Meanwhile another connection: cubic has evidence now, bbr none.
        let (_, a2) = b.choose(5);
        assert_eq!(a2, 1);
    }

    #[test]
    fn an_algorithm_that_cannot_be_set_is_avoided_and_its_fallback_learned() {
        let mut b = Bandit::new(cfg(&["cubic", "dctcp"]));
        let (c, a) = b.choose(3);
        assert_eq!(a, 0);
        b.close(c, &done(1000, 100));
        let (c, a) = b.choose(3);
        assert_eq!(a, 1);
        b.set_failed(c, 0);
        b.close(c, &done(1000, 100));
        let e = b.peer_entry(3).unwrap();
        assert_eq!((e.arms[0].n > 1.5, e.arms[1].n), (true, 0.0));
        for _ in 0..10 {
            let (c, a) = b.choose(3);
            assert_eq!(a, 0, "dctcp is not retried yet");
            b.close(c, &done(1000, 100));
        }
    }
}
