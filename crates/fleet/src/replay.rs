//! Playing a workload's connections, in time order, against a policy, and
//! scoring its choices.
//!
//! Each destination's connections arrive at exponentially distributed gaps
//! (mean `gap`) and last `duration`; connections to one destination may
//! overlap. At a connection's start the policy chooses; if the host cannot
//! set that algorithm there, the connection runs the system default
//! (cubic). While it runs the policy sees its samples, and at its end the
//! final one. bpftune's retransmission rule is checked at each sample of a
//! connection it did not choose for (a host it knows too little about, as
//! the seed's document has it); when it fires the connection counts as a
//! BBR connection from its start (its samples and outcome are BBR's), a
//! simplification: where it fires, it does so within a sample or two.
//!
//! Scoring is against expected outcomes ([`crate::score`]): the oracle is
//! the cheapest algorithm the host can set on the path, and the algorithms
//! within 0.05 of its cost count as "best" (strictly), or also those
//! within the noise of its outcomes (tie-aware). Regret sums, over
//! connections, what the chosen algorithm's expectation lacks against the
//! oracle's, and, in goodput, against the algorithm that delivers most.

use std::collections::BinaryHeap;
use std::net::IpAddr;

use kleinrock_cc::rand::SplitMix64;
use kleinrock_select::bandit::{Bandit, Config as BanditConfig};
use kleinrock_select::bpftune::{Bpftune, BBR, CONGS};
use kleinrock_select::{peer, Sample};
use kleinrock_sim::time::SEC;

use crate::outcomes::Outcomes;
use crate::score::{self, expectations_and_work};
use crate::workload::Workload;

pub use crate::score::{expectations, Expectation, BEST_MARGIN, CONVERGED_SHARE};

/// A policy under test.
pub enum Policy {
    Bpftune(Bpftune),
    Kleinrock(Box<Bandit>),
}

impl Policy {
    pub fn bpftune(seed: u64) -> Policy {
        Policy::Bpftune(Bpftune::new(seed))
    }

    /// Kleinrock's policy over `candidates`, its draws seeded by `seed`.
    pub fn kleinrock(candidates: &[String], seed: u64) -> Policy {
        Policy::Kleinrock(Box::new(Bandit::new(BanditConfig {
            candidates: candidates.to_vec(),
            seed,
            ..BanditConfig::default()
        })))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Policy::Bpftune(_) => "bpftune",
            Policy::Kleinrock(_) => "kleinrock",
        }
    }

    /// The algorithms this policy can choose.
    pub fn candidates(&self) -> Vec<String> {
        match self {
            Policy::Bpftune(_) => CONGS.iter().map(|s| s.to_string()).collect(),
            Policy::Kleinrock(b) => b.cfg.candidates.clone(),
        }
    }

    /// Open connections the policy's choices looked at (Kleinrock's
    /// only: bpftune keeps none).
    pub fn looked_at(&self) -> u64 {
        match self {
            Policy::Bpftune(_) => 0,
            Policy::Kleinrock(b) => b.looked_at(),
        }
    }

    /// Path changes the policy detected (Kleinrock's only).
    pub fn changes_detected(&self) -> u64 {
        match self {
            Policy::Bpftune(_) => 0,
            Policy::Kleinrock(b) => b.resets(),
        }
    }

    /// The policy's own table, as it would print it.
    pub fn status(&self) -> String {
        match self {
            Policy::Bpftune(b) => b.status(),
            Policy::Kleinrock(b) => b.status(),
        }
    }
}

/// One connection as played.
#[derive(Clone, Debug)]
pub struct Played {
    pub dest: usize,
    /// Its number among its destination's connections.
    pub index: u32,
    /// After the path changed?
    pub changed: bool,
    pub network: usize,
    /// Its size class (an index into the workload's sizes).
    pub class: usize,
    /// The algorithm that ran (an index into the outcomes' algorithms).
    pub alg: usize,
    pub goodput_bps: f64,
    pub rtt_ms: f64,
}

/// Per destination and phase (before or after a change).
#[derive(Clone, Debug)]
pub struct Phase {
    pub dest: usize,
    pub address: IpAddr,
    pub path: String,
    pub changed: bool,
    pub connections: u32,
    /// Connections until the share of best choices from there on reaches
    /// 80%, or `None` if it never does.
    pub convergence: Option<u32>,
    /// The share of best choices after convergence (0 without).
    pub share_best: f64,
    /// The same when algorithms the oracle cannot tell from the best count
    /// as best ([`crate::score`]).
    pub tie_convergence: Option<u32>,
    pub tie_share_best: f64,
    pub oracle: String,
}

/// A policy's result on a workload.
#[derive(Clone, Debug)]
pub struct Report {
    pub policy: String,
    pub played: Vec<Played>,
    pub phases: Vec<Phase>,
    /// Sums over connections of the expected shortfall against the oracle:
    /// payload bytes, RTT (ms, per connection), and cost.
    pub regret_bytes: f64,
    pub regret_rtt_ms: f64,
    pub regret_cost: f64,
    /// Payload bytes behind the algorithm with the most expected goodput
    /// on each network (not the oracle's, which may give goodput up for
    /// RTT).
    pub regret_bytes_most: f64,
    /// The same against an oracle limited to the policy's own candidates:
    /// how well it learned, apart from what it could choose from.
    pub own_regret_bytes: f64,
    pub own_regret_cost: f64,
    pub status: String,
    /// Path changes the policy detected (and so relearned).
    pub changes_detected: u64,
    /// Records the replay looked at: networks to find the oracles, events
    /// handled, connections grouped into phases, and the open connections
    /// the policy's choices looked at. Linear in the connections played; a
    /// test holds it so.
    pub work: u64,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    End,
    Sample(u32),
    Start,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    /// Negated time (ns) for a min-heap, then order of kinds.
    at: std::cmp::Reverse<u64>,
    kind: std::cmp::Reverse<Kind>,
    conn: std::cmp::Reverse<usize>,
}

struct Live {
    dest: usize,
    index: u32,
    network: usize,
    seed: u32,
    /// The algorithm running (outcomes index).
    alg: usize,
    /// bpftune: the algorithm recorded on the socket; Kleinrock: its handle.
    learned: Option<usize>,
    handle: u64,
    switched: bool,
}

/// Plays the workload's connections against `policy`; `progress` is told
/// the fraction of connections played, now and then.
pub fn run_policy(
    w: &Workload,
    o: &Outcomes,
    policy: &mut Policy,
    progress: &mut dyn FnMut(f64),
) -> Report {
    let dests = w.destinations();
    let (exp, mut work) = expectations_and_work(w, o);
    let cubic = o.algorithm_index("cubic").expect("cubic simulated");
    let cands = policy.candidates();
    let cand_index: Vec<usize> = cands
        .iter()
        .map(|c| o.algorithm_index(c).expect("every candidate simulated"))
        .collect();
    let kleinrock_cubic = cands.iter().position(|c| c == "cubic").unwrap_or(0);
    let seeds = o.seeds().max(1);
    let unit = |rng: &mut SplitMix64| ((rng.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;

    // Arrivals, and each connection's size class.
    let total_weight: f64 = w.sizes.iter().map(|z| z.weight).sum();
    let mut conns: Vec<(u64, usize, u32, usize)> = Vec::new();
    for (d, _) in dests.iter().enumerate() {
        let mut rng = SplitMix64::new(w.seed ^ (d as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut sizes =
            SplitMix64::new(w.seed ^ (d as u64 + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
        let mut t = 0u64;
        for i in 0..w.connections {
            t += (-unit(&mut rng).ln() * w.gap as f64) as u64;
            let mut class = 0;
            if w.sizes.len() > 1 {
                let mut x = unit(&mut sizes) * total_weight;
                while class + 1 < w.sizes.len() && x > w.sizes[class].weight {
                    x -= w.sizes[class].weight;
                    class += 1;
                }
            }
            conns.push((t, d, i, class));
        }
    }
    // Each destination's first start; each start queues the destination's
    // next (its arrivals are in time order), so the queue holds what is
    // live rather than every connection of the fleet. Events pop in the
    // same order: a start is queued before any event that could follow it.
    let start = |c: usize| Ev {
        at: std::cmp::Reverse(conns[c].0),
        kind: std::cmp::Reverse(Kind::Start),
        conn: std::cmp::Reverse(c),
    };
    let mut heap: BinaryHeap<Ev> = (0..conns.len())
        .filter(|&c| conns[c].2 == 0)
        .map(start)
        .collect();
    let mut live: Vec<Option<Live>> = (0..conns.len()).map(|_| None).collect();
    let mut played = Vec::with_capacity(conns.len());
    let mut rng = SplitMix64::new(w.seed ^ 0x5eed);

    while let Some(ev) = heap.pop() {
        work += 1;
        if work % 4096 == 0 {
            progress(played.len() as f64 / conns.len().max(1) as f64);
        }
        let c = ev.conn.0;
        let t = ev.at.0;
        match ev.kind.0 {
            Kind::Start => {
                let (_, d, i, class) = conns[c];
                if c + 1 < conns.len() && conns[c + 1].1 == d {
                    heap.push(start(c + 1));
                }
                let (path_i, addr) = dests[d];
                let path = &w.paths[path_i];
                let changed = path.after.as_ref().is_some_and(|(after, _)| i >= *after);
                let network = o.network_index(path_i, changed, class);
                let seed = (rng.next_u64() % seeds as u64) as u32;
                let unavailable = |spec: &str| path.unavailable.iter().any(|u| u == spec);
                let p = peer(addr);
                let (alg, learned, handle) = match &mut *policy {
                    Policy::Bpftune(b) => match b.established(p) {
                        Some(s) if !unavailable(CONGS[s]) => (cand_index[s], Some(s), 0),
                        _ => (cubic, None, 0),
                    },
                    Policy::Kleinrock(b) => {
                        let (h, idx) = b.choose(p);
                        if unavailable(&cands[idx]) {
                            b.set_failed(h, kleinrock_cubic);
                            (cubic, None, h)
                        } else {
                            (cand_index[idx], None, h)
                        }
                    }
                };
                live[c] = Some(Live {
                    dest: d,
                    index: i,
                    network,
                    seed,
                    alg,
                    learned,
                    handle,
                    switched: false,
                });
                // Samples strictly before the end, whose sample is the close.
                let out = o.get(network, alg, seed);
                for (j, &(at, _)) in out.samples.iter().enumerate() {
                    heap.push(Ev {
                        at: std::cmp::Reverse(t + (at * SEC as f64) as u64),
                        kind: std::cmp::Reverse(Kind::Sample(j as u32)),
                        conn: std::cmp::Reverse(c),
                    });
                }
                heap.push(Ev {
                    at: std::cmp::Reverse(t + (out.lifetime_s * SEC as f64) as u64),
                    kind: std::cmp::Reverse(Kind::End),
                    conn: std::cmp::Reverse(c),
                });
            }
            Kind::Sample(j) => {
                let Some(l) = live[c].as_mut() else {
                    continue;
                };
                let path = &w.paths[dests[l.dest].0];
                let out = o.get(l.network, l.alg, l.seed);
                let s = out.samples.get(j as usize).map(|s| s.1).unwrap_or_default();
                match &mut *policy {
                    Policy::Bpftune(b) => {
                        let at = (j as f64 + 1.0) * w.sample as f64 / SEC as f64;
                        // As the seed's document describes it, the rule is the
                        // only selection for hosts bpftune knows too little
                        // about: connections it chose for are left alone.
                        // (bpftune since 2025 applies it to every connection.)
                        if !l.switched
                            && l.learned.is_none()
                            && out.retrans_rule_at.is_some_and(|r| r <= at + 1e-9)
                            && b.retransmit(l.learned, s.segs_out, s.total_retrans)
                                .is_some()
                            && !path.unavailable.iter().any(|u| u == "bbr")
                        {
                            l.alg = o.algorithm_index("bbr").expect("bbr simulated");
                            l.learned = Some(BBR);
                            l.switched = true;
                        }
                    }
                    Policy::Kleinrock(b) => b.sample(l.handle, &s),
                }
            }
            Kind::End => {
                let l = live[c].take().expect("started");
                let (_, addr) = dests[l.dest];
                let out = o.get(l.network, l.alg, l.seed);
                let last: Sample = out.last();
                match &mut *policy {
                    Policy::Bpftune(b) => b.close(peer(addr), l.learned, &last),
                    Policy::Kleinrock(b) => b.close(l.handle, &last),
                }
                played.push(Played {
                    dest: l.dest,
                    index: l.index,
                    changed: o.networks[l.network].1,
                    network: l.network,
                    class: o.networks[l.network].2,
                    alg: l.alg,
                    goodput_bps: out.goodput_bps,
                    rtt_ms: out.rtt_ms,
                });
            }
        }
    }
    played.sort_by_key(|p| (p.dest, p.index));

    let mut report = Report {
        policy: policy.name().to_string(),
        played: Vec::new(),
        phases: Vec::new(),
        regret_bytes: 0.0,
        regret_rtt_ms: 0.0,
        regret_cost: 0.0,
        regret_bytes_most: 0.0,
        own_regret_bytes: 0.0,
        own_regret_cost: 0.0,
        status: policy.status(),
        changes_detected: policy.changes_detected(),
        work,
    };
    // The best of the policy's own candidates on each network, where the
    // host can set it.
    let own_oracle: Vec<usize> = exp
        .iter()
        .enumerate()
        .map(|(n, e)| {
            let path = &w.paths[o.networks[n].0];
            cand_index
                .iter()
                .copied()
                .filter(|&a| !path.unavailable.contains(&o.algorithms[a]))
                .min_by(|&a, &b| e.cost[a].total_cmp(&e.cost[b]))
                .unwrap_or(e.oracle)
        })
        .collect();
    for p in &played {
        let e = &exp[p.network];
        let own = own_oracle[p.network];
        // Bytes behind the oracle by the time the oracle's connection ends.
        let bytes_short =
            |best: usize| (e.goodput_bps[best] - e.goodput_bps[p.alg]) * e.lifetime_s[best] / 8.0;
        report.own_regret_bytes += bytes_short(own);
        report.own_regret_cost += e.cost[p.alg] - e.cost[own];
        report.regret_bytes += bytes_short(e.oracle);
        report.regret_rtt_ms += e.rtt_ms[p.alg] - e.rtt_ms[e.oracle];
        report.regret_cost += e.cost[p.alg] - e.cost[e.oracle];
        let most = (0..e.goodput_bps.len())
            .max_by(|&a, &b| e.goodput_bps[a].total_cmp(&e.goodput_bps[b]))
            .unwrap_or(e.oracle);
        report.regret_bytes_most += bytes_short(most);
    }
    // `played` is in destination order: each destination's connections are
    // one run of it (looking them up per destination was quadratic).
    let mut at = 0;
    for (d, &(path_i, address)) in dests.iter().enumerate() {
        let first = at;
        while at < played.len() && played[at].dest == d {
            at += 1;
        }
        let of_dest = &played[first..at];
        for changed in [false, true] {
            report.work += of_dest.len() as u64;
            let mine: Vec<&Played> = of_dest.iter().filter(|p| p.changed == changed).collect();
            if mine.is_empty() {
                continue;
            }
            let e = &exp[mine[0].network];
            let good: Vec<bool> = mine.iter().map(|p| e.best[p.alg]).collect();
            let (convergence, share_best) = score::convergence(&good);
            let tied: Vec<bool> = mine.iter().map(|p| e.tied[p.alg]).collect();
            let (tie_convergence, tie_share_best) = score::convergence(&tied);
            report.phases.push(Phase {
                dest: d,
                address,
                path: w.paths[path_i].name.clone(),
                changed,
                connections: mine.len() as u32,
                convergence,
                share_best,
                tie_convergence,
                tie_share_best,
                oracle: o.algorithms[e.oracle].clone(),
            });
        }
    }
    report.played = played;
    report.work += policy.looked_at();
    progress(1.0);
    report
}

impl Report {
    /// Median and worst convergence over the phases of `changed`, in
    /// connections (`None` counts as all of them).
    pub fn convergence(&self, changed: bool) -> (f64, u32) {
        self.median_and_worst(changed, |p| p.convergence)
    }

    /// [`Report::convergence`] with near ties counting as best
    /// ([`crate::score`]).
    pub fn tie_convergence(&self, changed: bool) -> (f64, u32) {
        self.median_and_worst(changed, |p| p.tie_convergence)
    }

    fn median_and_worst(&self, changed: bool, of: fn(&Phase) -> Option<u32>) -> (f64, u32) {
        let mut v: Vec<u32> = self
            .phases
            .iter()
            .filter(|p| p.changed == changed)
            .map(|p| of(p).unwrap_or(p.connections))
            .collect();
        if v.is_empty() {
            return (0.0, 0);
        }
        v.sort();
        let median = if v.len() % 2 == 1 {
            v[v.len() / 2] as f64
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) as f64 / 2.0
        };
        (median, *v.last().unwrap())
    }

    /// Mean share of best choices after convergence, over phases.
    pub fn share_best(&self) -> f64 {
        if self.phases.is_empty() {
            return 0.0;
        }
        self.phases.iter().map(|p| p.share_best).sum::<f64>() / self.phases.len() as f64
    }
}
